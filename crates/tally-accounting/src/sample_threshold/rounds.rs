//! Tight accounting and calibration of `K` identical S&T rounds over the same clients (the
//! levels of TrieHH++, the rounds of the quantile searches), through the loss pair of
//! [`SampleThresholdParams::loss_pair`].

use super::SampleThresholdParams;
use super::plan::bracketed_root_from;
use crate::Error;

/// The loss grid of the tight accountant. Every loss of the connect-the-dots pair sits on it, so
/// it only sets where the curve is sampled; at `p_s = 0.142`, `τ = 26`, ten rounds compose to
/// `ε = 0.6346` at `δ = 1e-8` on this grid against `0.6325` on a grid four times finer.
pub const TIGHT_STEP: f64 = 0.01;

/// The largest number of rounds the tight accountant composes.
pub const MAX_TIGHT_ROUNDS: u64 = 10_000;

/// The smallest `ε` (rounded up) at which `rounds` runs of `params` are jointly
/// `(ε, target_delta)`-DP under add/remove neighbours, by the tight accountant.
///
/// # Privacy
///
/// The composed pair dominates the adaptive composition of the rounds (see
/// `docs/privacy/composition.md`), and `ε` is the larger of the two directions'.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `1 ≤ rounds ≤` [`MAX_TIGHT_ROUNDS`] and
/// `target_delta ∈ (0, 1)`; [`Error::Infeasible`] if the infinite-loss mass alone exceeds the
/// target or the worst group is too large to evaluate.
pub fn tight_rounds_epsilon(
    params: &SampleThresholdParams,
    rounds: u64,
    target_delta: f64,
) -> Result<f64, Error> {
    check_rounds(rounds)?;
    params
        .loss_pair(TIGHT_STEP)?
        .self_compose(rounds)?
        .epsilon(target_delta)
}

/// The largest sampling rate (to a relative `1e-4`, rounded down) at which `rounds` runs at
/// threshold `threshold` are jointly `(epsilon, delta)`-DP by the tight accountant.
///
/// The composed `ε` grows with the rate, so a bracketed search finds it (regula falsi, on a
/// variable in which `ε` is close to linear); the returned rate was checked to meet the
/// target.
///
/// # Errors
///
/// As [`tight_rounds_epsilon`]; [`Error::Infeasible`] if even a rate of `1e-12` fails.
pub fn tight_max_sampling_rate(
    epsilon: f64,
    delta: f64,
    rounds: u64,
    threshold: u64,
) -> Result<f64, Error> {
    super::check_epsilon(epsilon)?;
    super::check_delta(delta)?;
    check_rounds(rounds)?;
    // Every rate from `bound` up fails (its infinite-loss mass alone exceeds δ), and the
    // composed ε climbs steeply towards it, about linearly in z = −ln(1 − rate/bound): the
    // search runs on z, where the secant steps of `bracketed_root_from` land close to the
    // root.
    let bound = necessary_rate_bound(delta, rounds, threshold);
    let rate_at = |z: f64| -bound * (-z).exp_m1();
    let z_at = |rate: f64| -(-rate / bound).ln_1p();
    let excess = |z: f64| -> Result<f64, Error> {
        let params = SampleThresholdParams::new(rate_at(z), threshold)?;
        match tight_rounds_epsilon(&params, rounds, delta) {
            Ok(e) => Ok(e / epsilon - 1.0),
            Err(Error::Infeasible { .. }) => Ok(INFEASIBLE_EXCESS),
            Err(e) => Err(e),
        }
    };
    // The per-round cap of a single round at ε is a safe start when it meets the target.
    let mut lo = (-(-epsilon / rounds as f64).exp_m1()).min(bound / 2.0);
    let mut hi = bound;
    let mut f_lo = excess(z_at(lo))?;
    while f_lo > 0.0 {
        hi = lo;
        lo /= 4.0;
        if lo < 1e-12 {
            return Err(Error::infeasible(
                "sampling rate",
                format!(
                    "no rate above 1e-12 meets (ε, δ) = ({epsilon}, {delta}) over {rounds} rounds \
                     at threshold {threshold}"
                ),
            ));
        }
        f_lo = excess(z_at(lo))?;
    }
    // Above the last failing rate, or just below `bound` (a rate that close to it fails or
    // needs an ε far above any target, so it counts as failing without being evaluated).
    let top = if hi < bound {
        (z_at(hi), INFEASIBLE_EXCESS)
    } else {
        (MAX_Z, INFEASIBLE_EXCESS)
    };
    // The bracket is narrow once its rates are: [z_lo, z_hi] spans the rates
    // [rate_at(z_lo), rate_at(z_hi)], which near `bound` (large z) are far closer together
    // than the z themselves.
    let narrow = |z_lo: f64, z_hi: f64| {
        let (lo, hi) = (rate_at(z_lo), rate_at(z_hi));
        hi - lo <= lo * RATE_TOLERANCE
    };
    let z = bracketed_root_from((z_at(lo), f_lo), top, narrow, excess)?;
    Ok(rate_at(z))
}

/// The relative width in the rate at which the tight rate search stops.
const RATE_TOLERANCE: f64 = 1e-4;

/// The top of the search in z: a rate within `e^{−30}` (relative) of the bound.
const MAX_Z: f64 = 30.0;

/// The excess given to a failing end, and to a rate at which no `ε` bounds the rounds: positive,
/// so the rate counts as failing, and finite, so the secant steps stay defined.
const INFEASIBLE_EXCESS: f64 = 1.0;

/// A rate above which `rounds` runs at `threshold` cannot be `(ε, delta)`-DP for any `ε`.
///
/// A lone group of `τ` all sampled is an infinite loss of probability `p_s^τ` in every round,
/// so the composed pair's infinite-loss mass is at least `1 − (1 − p_s^τ)^K`, and `δ(ε)` is
/// never below it: the rates where it exceeds `delta` fail. The bound, where it equals `delta`
/// (`p_s = (1 − (1 − δ)^{1/K})^{1/τ}`), is rounded up by a relative `1e-9` so that it lies
/// on the failing side, and kept below 1: near `p_s = 1` the loss pair spans ever more
/// counts and takes seconds to build, for rates that fail anyway.
fn necessary_rate_bound(delta: f64, rounds: u64, threshold: u64) -> f64 {
    let per_round = -((-delta).ln_1p() / rounds as f64).exp_m1();
    (per_round.powf(1.0 / threshold as f64) * (1.0 + 1e-9)).min(1.0_f64.next_down())
}

/// The smallest threshold at which `rounds` runs at sampling rate `rate` are jointly
/// `(epsilon, delta)`-DP by the tight accountant (the composed `ε` falls as the threshold
/// grows).
///
/// # Errors
///
/// As [`tight_rounds_epsilon`]; [`Error::Infeasible`] if no threshold up to `2^20` suffices.
pub fn tight_min_threshold(epsilon: f64, delta: f64, rounds: u64, rate: f64) -> Result<u64, Error> {
    super::check_epsilon(epsilon)?;
    super::check_delta(delta)?;
    check_rounds(rounds)?;
    let meets = |tau: u64| -> Result<bool, Error> {
        let params = SampleThresholdParams::new(rate, tau)?;
        match tight_rounds_epsilon(&params, rounds, delta) {
            Ok(e) => Ok(e <= epsilon),
            Err(Error::Infeasible { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    };
    let mut hi = 1;
    while !meets(hi)? {
        if hi >= 1 << 20 {
            return Err(Error::infeasible(
                "threshold",
                format!("none up to 2^20 at sampling rate {rate} over {rounds} rounds"),
            ));
        }
        hi *= 2;
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

fn check_rounds(rounds: u64) -> Result<(), Error> {
    if (1..=MAX_TIGHT_ROUNDS).contains(&rounds) {
        Ok(())
    } else {
        Err(Error::invalid(
            "rounds",
            rounds,
            format!("an integer in [1, {MAX_TIGHT_ROUNDS}]"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_14_acceptance_triehh_levels() {
        // Ten levels at (4, 1e-8) with τ = 26 allow a per-level rate of at least 0.40 (basic
        // composition allows 0.142).
        let rate = tight_max_sampling_rate(4.0, 1e-8, 10, 26).unwrap();
        assert!(rate >= 0.40, "{rate}");
        let params = SampleThresholdParams::new(rate, 26).unwrap();
        assert!(tight_rounds_epsilon(&params, 10, 1e-8).unwrap() <= 4.0);
        // And the threshold solve inverts it.
        let tau = tight_min_threshold(4.0, 1e-8, 10, rate).unwrap();
        assert!(tau <= 26, "{tau}");
    }

    #[test]
    fn rates_past_the_infinite_loss_bound_fail_and_are_never_tried() {
        // δ = 1e-4 over 10 rounds at τ = 26: the bound is about 0.642, where the search used
        // to start at a rate a hair below 1 (whose loss pair never finished building).
        for (epsilon, delta, rounds, threshold) in [
            (1.0, 1e-4, 10, 26),
            (0.1, 1e-3, 10, 26),
            (4.0, 1e-3, 3, 8),
            (1.0, 1e-6, 1, 1),
        ] {
            let bound = necessary_rate_bound(delta, rounds, threshold);
            let params = SampleThresholdParams::new(bound, threshold).unwrap();
            assert!(
                tight_rounds_epsilon(&params, rounds, delta).is_err(),
                "{bound} should fail"
            );
            let rate = tight_max_sampling_rate(epsilon, delta, rounds, threshold).unwrap();
            assert!(rate < bound, "{rate} vs {bound}");
            let params = SampleThresholdParams::new(rate, threshold).unwrap();
            assert!(tight_rounds_epsilon(&params, rounds, delta).unwrap() <= epsilon);
        }
    }

    #[test]
    fn rejects_bad_rounds() {
        let params = SampleThresholdParams::new(0.1, 20).unwrap();
        assert!(tight_rounds_epsilon(&params, 0, 1e-8).is_err());
        assert!(tight_rounds_epsilon(&params, MAX_TIGHT_ROUNDS + 1, 1e-8).is_err());
    }
}
