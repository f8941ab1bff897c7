//! The privacy-loss distribution of one S&T release, for tight composition of several rounds.
//!
//! A round with sampling rate `p_s` and threshold `τ` is, for a group of `k` clients holding an
//! item (the one added or removed among them), the pair `P_k` = "`Bin(k, p_s)` released if it
//! reaches `τ`, else ⊥" against `Q_k`, the same with `k − 1`. No single `k` is the worst at every
//! `ε`, so the round is described by its worst-case privacy profile over all `k` and both
//! directions,
//!
//! `δ(ε) = sup_k max(H_{e^ε}(P_k‖Q_k), H_{e^ε}(Q_k‖P_k))`,
//!
//! a supremum of functions convex in `e^ε`, hence convex. It is evaluated on a grid and turned
//! into a symmetric dominating pair by
//! [`PrivacyLossDistribution::from_symmetric_profile`](crate::pld::PrivacyLossDistribution::from_symmetric_profile)
//! (connect-the-dots, exact at the grid points and pessimistic between them).
//!
//! - Adding the client (`P_k` against `Q_k`) is the hockey-stick divergence of
//!   [`super::Analysis::Tight`], evaluated for every `ε ≥ 0` (the cap on `p_s` only matters for
//!   the other direction).
//! - Removing it (`Q_k` against `P_k`): the ratio `b(v;k−1)/b(v;k) = (k−v)/(k(1−p_s))` falls
//!   with `v` and ⊥ averages the ratios below `τ`, so the best sets are `{⊥} ∪ [τ, m)`, and
//!   `H = sup_{m≥τ} sup_k G(m,k)` with `G(m,k) = Pr[X_{k−1} < m] − e^ε Pr[X_k < m]`. As
//!   `G(m,k+1) − G(m,k) = p_s(e^ε b(m−1;k) − b(m−1;k−1))`, positive exactly when
//!   `k < (m−1)/q'` with `q' = 1 − e^ε(1−p_s)`, the peak is at `k* = ⌊(m−1)/q'⌋ + 1`, where
//!   `G = Σ_{v<m} b(v;k)(kq' − v)/(k(1−p_s))` is a sum of positive terms. Every `G(m', ·)` with
//!   `m' ≥ m` is at most `Pr[X_n ≤ m'−1]` at its peak `n = k* − 1 ≥ (m−1)/q' − 1`, below the
//!   lower-tail Chernoff bound `exp(−n D(q'(1 + 1/n)‖p_s))`, which ends the scan. The ratio is
//!   at most `1/(1−p_s)`, so the divergence vanishes from `ε_d = ln(1/(1−p_s))` on.
//! - The total variation distance is `sup_k sup_{m≥τ} p_s·b(m−1; k−1, p_s)`, since
//!   `Pr[Bin(k) ≥ m] − Pr[Bin(k−1) ≥ m] = p_s·b(m−1; k−1)`. Writing `M(j) = max_n b(j; n, p_s)`,
//!   `b(j+1; n) = b(j; n−1)·n p_s/(j+1)` and the maximiser of `b(j+1; ·)` is `n = ⌊(j+1)/p_s⌋`,
//!   so `M(j+1) ≤ M(j)`: the supremum is `p_s·M(τ−1)`, attained at `n = ⌊(τ−1)/p_s⌋`.
//!
//! Replace-one is not covered here: its profile is not a single cell's.

use super::SampleThresholdParams;
use super::analysis::{Charge, cutoff_divergence, group_too_large, ratio_cutoff, sup_over_cutoffs};
use crate::Error;
use crate::numeric::{
    MAX_SCAN, delta_upper, kl_bernoulli, ln_binomial_pmf, ln_lower_tail_weighted,
};
use crate::pld::PrivacyLossPair;

/// The upper bound on the worst-case total variation distance of one round, rounded up.
///
/// # Errors
///
/// [`Error::Infeasible`] if the worst group exceeds [`MAX_SCAN`] clients.
pub fn total_variation(params: &SampleThresholdParams) -> Result<f64, Error> {
    let p = params.sampling_rate();
    let j = params.threshold() - 1;
    let centre = (j as f64 / p).floor();
    if centre + 1.0 > MAX_SCAN as f64 {
        return Err(group_too_large(centre, params.threshold(), p));
    }
    let centre = centre as u64;
    // The maximiser and its neighbours, so that rounding in j/p cannot miss it.
    let ln_max = (centre.saturating_sub(1).max(j)..=centre + 1)
        .map(|n| ln_binomial_pmf(j, n, p))
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(delta_upper(p * ln_max.exp()))
}

/// `sup_k H_{e^ε}(Q_k‖P_k)`, the divergence of removing the client (see the module docs),
/// before rounding.
pub(super) fn removal_divergence(epsilon: f64, p: f64, threshold: u64) -> f64 {
    // q' = 1 − e^ε(1 − p) = p e^ε − (e^ε − 1).
    let q = p * epsilon.exp() - epsilon.exp_m1();
    if q <= 0.0 {
        return 0.0;
    }
    let scale = 1.0 / (1.0 - p);
    // The Chernoff bound on every cutoff from m on, as a log.
    let ln_beyond = |m: u64| {
        let n = (m - 1) as f64 / q - 1.0;
        let x = q * (1.0 + 1.0 / n);
        if n < 1.0 || x >= p {
            0.0
        } else {
            -n * kl_bernoulli(x, p) * (1.0 - 1e-9)
        }
    };
    let mut ln_max = f64::NEG_INFINITY;
    let mut m = threshold;
    loop {
        let centre = ((m - 1) as f64 / q).floor() + 1.0;
        if centre + 1.0 > MAX_SCAN as f64 {
            // Far beyond every precise group: charge the bound for all remaining cutoffs.
            return ln_max.max(ln_beyond(m)).exp();
        }
        // The first k with k·q' > m − 1, checked in floating point.
        let mut centre = centre as u64;
        while centre > 1 && (centre - 1) as f64 * q > (m - 1) as f64 {
            centre -= 1;
        }
        while centre as f64 * q <= (m - 1) as f64 {
            centre += 1;
        }
        // The peak alone (see `analysis::sup_over_cutoffs` for why a rounding slip is
        // harmless); at k* every term below m is positive, so ⊥ needs no special care.
        for k in centre.max(m)..=centre.max(m) {
            let ln_term = ln_lower_tail_weighted(m - 1, k, p, |v| {
                (scale * (k as f64 * q - v as f64) / k as f64).clamp(0.0, 1.0)
            });
            ln_max = ln_max.max(ln_term);
        }
        if ln_beyond(m + 1) <= ln_max {
            return ln_max.exp();
        }
        m += 1;
    }
}

/// An upper bound on the worst-case privacy profile of one round (add/remove, both
/// directions) at `epsilon ≥ 0`, rounded up.
///
/// # Errors
///
/// [`Error::Infeasible`] if the worst group exceeds [`MAX_SCAN`] clients.
pub fn privacy_profile(params: &SampleThresholdParams, epsilon: f64) -> Result<f64, Error> {
    let p = params.sampling_rate();
    let tau = params.threshold();
    let tv = total_variation(params)?;
    if epsilon <= 0.0 {
        return Ok(tv);
    }
    let add = delta_upper(sup_over_cutoffs(epsilon, p, tau, Charge::HockeyStick)?);
    let removal = delta_upper(removal_divergence(epsilon, p, tau));
    Ok(add.max(removal).min(tv))
}

/// The `δ` below which a curve is cut: its last value is kept as the infinite-loss mass.
const NEGLIGIBLE_DELTA: f64 = 1e-30;

impl SampleThresholdParams {
    /// The dominating pair of one round on the grid `step`, under add/remove neighbours, in
    /// the order "with the client" against "without" (see this module's docs).
    ///
    /// The curve is `sup_k H_α(P_k‖Q_k)`: for `α ≥ 1` the adding divergence, for `α < 1`
    /// `1 − α + α·sup_k H_{1/α}(Q_k‖P_k)` from the removing one (exactly `1 − α` from
    /// `α ≤ 1 − p_s` down). It is cut where it falls below `1e-30` or to within a relative `1e-6`
    /// of `p_s^τ` (the infinite loss of a lone group of `τ` all sampled), keeping the last value
    /// as the infinite-loss mass.
    ///
    /// # Privacy
    ///
    /// The pair dominates the round for every neighbouring pair of datasets, in either order,
    /// and every `α ≥ 0`, so composing it with other rounds' pairs bounds the adaptive
    /// composition.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `step > 0` is finite; [`Error::Infeasible`] if the
    /// worst group exceeds [`MAX_SCAN`] clients or the curve needs more than
    /// [`crate::pld::MAX_GRID_POINTS`] points.
    pub fn loss_pair(&self, step: f64) -> Result<PrivacyLossPair, Error> {
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::invalid("step", step, "a finite number > 0"));
        }
        let p = self.sampling_rate();
        let tau = self.threshold();
        let tv = total_variation(self)?;
        // Below −ε_d the removing divergence is 0 and the curve the line 1 − α.
        let removal_end = -(-p).ln_1p();
        let lowest = -((removal_end / step).ceil() as i64);
        let near = near_zero_points(p, tv, step).min(-lowest);
        let mut curve = Vec::new();
        for index in lowest..0 {
            if index > -near {
                curve.push(f64::NAN);
                continue;
            }
            let epsilon = -(index as f64) * step;
            let alpha = (-epsilon).exp();
            let removal = delta_upper(removal_divergence(epsilon, p, tau)).min(tv);
            // 1 − α = −expm1(−ε) is accurate; the sum is rounded up by a few ulps only, as
            // the relative margin of a δ would be a large absolute error next to 1.
            let value = (-(-epsilon).exp_m1() + alpha * removal) * (1.0 + 4.0 * f64::EPSILON);
            curve.push(value.min(1.0));
        }
        curve.push(tv);
        let floor = (tau as f64 * p.ln()).exp();
        let stop = NEGLIGIBLE_DELTA.max(floor * (1.0 + 1e-6));
        for index in 1.. {
            if curve.len() as u64 >= crate::pld::MAX_GRID_POINTS {
                return Err(Error::infeasible(
                    "loss distribution",
                    format!("the curve needs more grid points than allowed at step {step}"),
                ));
            }
            if index < near {
                curve.push(f64::NAN);
                continue;
            }
            let epsilon = index as f64 * step;
            let add = delta_upper(sup_over_cutoffs(epsilon, p, tau, Charge::HockeyStick)?);
            let value = add.min(tv);
            curve.push(value);
            if value <= stop {
                break;
            }
        }
        let centre = (-lowest) as usize;
        chord_fill(&mut curve[..=centre], lowest, step);
        chord_fill(&mut curve[centre..], 0, step);
        PrivacyLossPair::from_curve(step, lowest, &curve)
    }
}

/// The largest number of cutoffs a curve point near `ε = 0` may cost (see
/// [`near_zero_points`]).
const CUTOFF_BUDGET: f64 = 2000.0;

/// How many grid points on each side of `ε = 0` are left to the chord between `α = 1` and the
/// first computed point. A point's scan visits about `q·ln(1/δ)/D(q‖p_s)` cutoffs, which grows
/// like `1/ε²` as `ε → 0`; the first point whose estimate is within [`CUTOFF_BUDGET`] is
/// computed, and those before it are interpolated, which keeps the curve an upper bound (a
/// convex function lies below its chords) at a bounded cost.
fn near_zero_points(p: f64, tv: f64, step: f64) -> i64 {
    let log_scale = (1.0 / tv).ln().max(1.0) + 5.0;
    let mut index = 1;
    while index < 1_000 {
        let epsilon = index as f64 * step;
        let q = ratio_cutoff(epsilon, p);
        if q * log_scale <= CUTOFF_BUDGET * cutoff_divergence(epsilon, p, q) {
            break;
        }
        index += 1;
    }
    index
}

/// Replaces the `NaN` entries of `points` (grid indices from `first`) by the chord, linear in
/// `α = e^{index·step}`, between the computed entries on either side, rounded up.
fn chord_fill(points: &mut [f64], first: i64, step: f64) {
    let alpha = |i: usize| ((first + i as i64) as f64 * step).exp();
    let known: Vec<usize> = (0..points.len()).filter(|&i| !points[i].is_nan()).collect();
    for pair in known.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        for i in a + 1..b {
            let t = (alpha(i) - alpha(a)) / (alpha(b) - alpha(a));
            let value = points[a] * (1.0 - t) + points[b] * t;
            points[i] = (value * (1.0 + 8.0 * f64::EPSILON)).min(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One round's pair for a group of `k`: outcome 0 is ⊥, outcome `1 + v − τ` the count `v`.
    fn pair(k: u64, p: f64, tau: u64) -> (Vec<f64>, Vec<f64>) {
        let cells = (k + 2 - tau) as usize;
        let (mut with, mut without) = (vec![0.0; cells], vec![0.0; cells]);
        for v in 0..=k {
            let cell = if v < tau { 0 } else { (v - tau + 1) as usize };
            with[cell] += ln_binomial_pmf(v, k, p).exp();
            if v < k {
                without[cell] += ln_binomial_pmf(v, k - 1, p).exp();
            }
        }
        (with, without)
    }

    /// The product of independent pairs, outcome by outcome.
    fn product(pairs: &[(Vec<f64>, Vec<f64>)]) -> (Vec<f64>, Vec<f64>) {
        pairs.iter().fold((vec![1.0], vec![1.0]), |(a, b), (p, q)| {
            let outer = |x: &[f64], y: &[f64]| -> Vec<f64> {
                x.iter()
                    .flat_map(|u| y.iter().map(move |w| u * w))
                    .collect()
            };
            (outer(&a, p), outer(&b, q))
        })
    }

    /// `H_{e^ε}(P‖Q) = Σ (P − e^ε Q)_+`, exactly as defined.
    fn hockey_stick(p: &[f64], q: &[f64], epsilon: f64) -> f64 {
        let x = epsilon.exp();
        p.iter().zip(q).map(|(a, b)| (a - x * b).max(0.0)).sum()
    }

    #[test]
    fn total_variation_is_the_worst_group() {
        let params = SampleThresholdParams::new(0.3, 4).unwrap();
        let tv = total_variation(&params).unwrap();
        let worst = (4..200)
            .map(|k| {
                let (a, b) = pair(k, 0.3, 4);
                hockey_stick(&a, &b, 0.0)
            })
            .fold(0.0, f64::max);
        assert!(tv >= worst && tv <= worst * (1.0 + 2e-6), "{tv} vs {worst}");
    }

    #[test]
    fn profile_is_the_sup_over_groups_in_both_directions() {
        for (p, tau) in [(0.3, 4), (0.1, 3), (0.6, 5)] {
            let params = SampleThresholdParams::new(p, tau).unwrap();
            for epsilon in [0.0, 0.05, 0.2, 0.5, 1.0, 2.5] {
                let worst = (tau..400)
                    .map(|k| {
                        let (a, b) = pair(k, p, tau);
                        hockey_stick(&a, &b, epsilon).max(hockey_stick(&b, &a, epsilon))
                    })
                    .fold(0.0, f64::max);
                let profile = privacy_profile(&params, epsilon).unwrap();
                assert!(
                    profile >= worst && profile <= worst * (1.0 + 1e-5) + 1e-300,
                    "p = {p}, τ = {tau}, ε = {epsilon}: {profile} vs {worst}"
                );
            }
        }
    }

    #[test]
    fn composition_bounds_exact_enumeration_of_two_and_three_rounds() {
        // Every choice of group size per round (an adaptive adversary may vary it), both
        // directions, against the composed distribution.
        let (p, tau) = (0.3, 3);
        let params = SampleThresholdParams::new(p, tau).unwrap();
        let pld = params.loss_pair(0.01).unwrap();
        let sizes = [3_u64, 5, 8, 11];
        for rounds in [2_usize, 3] {
            let composed = pld.self_compose(rounds as u64).unwrap();
            let mut choice = vec![0_usize; rounds];
            let mut worst_gap = f64::INFINITY;
            loop {
                let pairs: Vec<_> = choice.iter().map(|&i| pair(sizes[i], p, tau)).collect();
                let (a, b) = product(&pairs);
                for epsilon in [0.0, 0.1, 0.4, 0.9, 1.6] {
                    let exact = hockey_stick(&a, &b, epsilon).max(hockey_stick(&b, &a, epsilon));
                    let bound = composed.delta(epsilon).unwrap();
                    assert!(
                        bound >= exact,
                        "{choice:?} ε = {epsilon}: {bound} < {exact}"
                    );
                    worst_gap = worst_gap.min(bound / exact);
                }
                // Next choice, odometer style.
                let Some(digit) = choice.iter().rposition(|&i| i + 1 < sizes.len()) else {
                    break;
                };
                choice[digit] += 1;
                choice[digit + 1..].fill(0);
            }
            // Tight: some choice comes within a modest factor of the bound.
            assert!(
                worst_gap < 1.5,
                "{rounds} rounds: closest ratio {worst_gap}"
            );
        }
    }

    #[test]
    fn ten_rounds_cost_far_less_than_basic_composition() {
        // The TrieHH++ level of issue 14: p_s = 0.1420227, τ = 26 is (0.4, 1e-9) per round.
        let params = SampleThresholdParams::new(0.142_022_7, 26).unwrap();
        let composed = params.loss_pair(0.01).unwrap().self_compose(10).unwrap();
        let epsilon = composed.epsilon(1e-8).unwrap();
        assert!(epsilon > 0.4 && epsilon < 0.7, "{epsilon}");
    }
}
