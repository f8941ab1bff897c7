//! The privacy-loss distribution of the shuffle model's dominating pair (FMT21, Theorem 3.2), so
//! that rounds of shuffled (or summed) local reports compose tightly.
//!
//! # The pair
//!
//! `n` users each apply an `ε₀`-LDP randomizer and their reports are shuffled. Feldman,
//! McMillan and Talwar (FOCS 2021, "Hiding among the clones", Theorem 3.2) show that for
//! replace-one neighbours the shuffled output is a post-processing of one draw from
//!
//! * `P = (A + Δ, C − A + 1 − Δ)` if the differing user holds `x₀`, and
//! * `Q = (A + 1 − Δ, C − A + Δ)` if it holds `x₁`,
//!
//! where `C ~ Bin(n − 1, p_clone)` counts the other users who are "clones" of the differing
//! one, `A ~ Bin(C, 1/2)` and `Δ ~ Bern(e^{ε₀}/(e^{ε₀} + 1))`, with `p_clone = e^{−ε₀}` for every
//! `ε₀`-LDP randomizer ([`ShuffleBound::Fmt21`]); [`ShuffleBound::Fmt23`]'s `2/(e^{ε₀} + 1)` is
//! offered only where its premise is accepted (see [`crate::shuffle`]). The post-processing
//! depends on the randomizers only, not on the pair, so the pair dominates the shuffled
//! output at **every** `α = e^ε` at once, and since it depends on `ε₀` and `n` alone, it
//! dominates every round of an adaptive composition whose randomizers are chosen from earlier
//! releases (each is `ε₀`-LDP): the product of the rounds' pairs dominates the composition
//! ([`crate::pld::PrivacyLossPair`]).
//!
//! Given `C = c`, the second coordinate `t` determines the outcome (the first is `c + 1 − t`):
//! `P_c(t) = a·b_c(t) + (1 − a)·b_c(t − 1)` and `Q_c(t) = (1 − a)·b_c(t) + a·b_c(t − 1)`, where
//! `b_c` is the `Bin(c, 1/2)` pmf and `a = e^{ε₀}/(e^{ε₀} + 1)`. The loss is
//! `ln(P_c(t)/Q_c(t)) = ln((a + (1 − a)ρ)/((1 − a) + aρ))` with `ρ = t/(c − t + 1)`, between
//! `−ε₀` and `ε₀`. Relabelling `t ↦ c + 1 − t` swaps `P` and `Q`, so both directions have the
//! same loss distribution.
//!
//! # Rigour
//!
//! Clone counts are grouped in buckets of about `σ_C/32` consecutive values (one value while
//! `σ_C < 32`, as at `n = 20,000`, `ε₀ ≥ 4`), and a bucket's whole mass is given the pair of its
//! lowest count `c'`. That pair, with the count observed, still dominates: the pair given `c`
//! clones is a post-processing of the pair given `c' ≤ c` (draw `c` from the bucket's
//! conditional law and add `c − c'` fair coins to `A`), independently of which of `P`, `Q` was
//! drawn. It bounds the work by about `540` clone counts whatever `n`.
//!
//! The loss is rounded up to the grid (pessimistic discretisation, [`crate::pld`]) after a
//! margin for its floating-point evaluation. Clone counts and coordinates far in the tails
//! (beyond where Bernstein's inequality leaves at most `e^{−70}` on either side) are not
//! enumerated: a bound on their mass is put on the infinite loss, which only raises `δ`. The
//! masses come from `lgamma` and a ratio recurrence; their relative error is covered by the
//! distribution's error bound [`MASS_RELATIVE_ERROR`].

use crate::Error;
use crate::numeric::{
    BINOMIAL_TAIL_EXPONENT, binomial_window as window, ln_binomial_pmf, ln_choose,
};
use crate::pld::{PrivacyLossDistribution, PrivacyLossPair};
use crate::shuffle::{MAX_USERS, ShuffleBound, clone_probability};

/// A bound on the relative error of every enumerated probability: a few ulps of the
/// log-factorials and of `c·ln p` behind it (together below `1e-6` for
/// `n ≤` [`crate::shuffle::MAX_USERS`], the margin of [`crate::numeric::DELTA_MARGIN`]) and of
/// the ratio recurrence.
pub const MASS_RELATIVE_ERROR: f64 = 1e-6;

/// Clone counts are grouped in buckets of about `σ_C / BUCKETS_PER_SIGMA` consecutive values
/// (one value while `σ_C < 32`), each charged as its lowest count (see the module docs).
const BUCKETS_PER_SIGMA: f64 = 32.0;

/// Entries below this are not enumerated (their mass goes on the infinite loss): far above the
/// subnormal range, where the relative error bound would fail.
const TINY: f64 = 1e-280;

/// The privacy-loss pair (both directions) of one round in which `users` reports of an
/// `eps0`-LDP randomizer are shuffled or summed, for replace-one neighbours, by the clone pair
/// of `bound` (see the module docs), on the grid `step`.
///
/// # Privacy
///
/// The pair dominates the round at every `ε`, so [`PrivacyLossPair::self_compose`] of it
/// dominates `k` adaptively chosen rounds; its `δ(ε)` is an upper bound (pessimistic
/// discretisation, tails on the infinite loss).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `eps0 ∉ (0, 50]`, `users ∉ [2, MAX_USERS]`, `step` is not a
/// finite number `> 0` that puts `[−ε₀, ε₀]` on at most
/// [`crate::pld::MAX_GRID_POINTS`] points, or `bound` is [`ShuffleBound::ClosedForm`] (a
/// closed form, not a pair).
pub fn shuffle_loss_pair(
    eps0: f64,
    users: u64,
    bound: ShuffleBound,
    step: f64,
) -> Result<PrivacyLossPair, Error> {
    if !(eps0.is_finite() && eps0 > 0.0 && eps0 <= 50.0) {
        return Err(Error::invalid("local epsilon", eps0, "a number in (0, 50]"));
    }
    if !(2..=MAX_USERS).contains(&users) {
        return Err(Error::invalid(
            "users",
            users,
            format!("an integer in [2, {MAX_USERS}]"),
        ));
    }
    if bound == ShuffleBound::ClosedForm {
        return Err(Error::invalid(
            "bound",
            bound,
            "a numerical clone bound (fmt21, or fmt23 where its premise holds)",
        ));
    }
    let p_clone = clone_probability(eps0, bound);
    // a = e^{ε₀}/(e^{ε₀}+1) and 1 − a, without cancellation.
    let a = 1.0 / (1.0 + (-eps0).exp());
    let one_minus_a = 1.0 / (1.0 + eps0.exp());
    let loss_at = |t: u64, c: u64| -> f64 {
        if t == 0 {
            return eps0;
        }
        if t == c + 1 {
            return -eps0;
        }
        let rho = t as f64 / (c - t + 1) as f64;
        let (num, den) = (a + one_minus_a * rho, one_minus_a + a * rho);
        let (ln_num, ln_den) = (num.ln(), den.ln());
        // A few ulps for the quotient's operands and the logarithms, rounded up.
        (ln_num - ln_den) + 16.0 * f64::EPSILON * (1.0 + ln_num.abs() + ln_den.abs())
    };
    let others = users - 1;
    let (c_lo, c_hi) = window(others, p_clone);
    let sd = (others as f64 * p_clone * (1.0 - p_clone)).sqrt();
    let width = ((sd / BUCKETS_PER_SIGMA).floor() as u64).max(1);
    let mut losses = Vec::new();
    let mut skipped = 0_u64;
    let mut b = Vec::new();
    let mut first = c_lo;
    while first <= c_hi {
        // The bucket [first, last] of clone counts, all charged as `first` clones.
        let last = first.saturating_add(width - 1).min(c_hi);
        let weight: f64 = (first..=last)
            .map(|c| ln_binomial_pmf(c, others, p_clone).exp())
            .sum();
        let c = first;
        first = last + 1;
        let ln_weight = weight.ln();
        // w_c·b_c(t) over the window [t_lo, t_hi], from lgamma at the mode, then outward by
        // the ratio recurrence (so no entry is computed from an underflowed one).
        let (t_lo, t_hi) = window(c, 0.5);
        let mode = (c / 2).clamp(t_lo, t_hi);
        b.clear();
        b.resize((t_hi - t_lo + 1) as usize, 0.0);
        let at = |t: u64| (t - t_lo) as usize;
        b[at(mode)] = (ln_weight + ln_choose(c, mode) - c as f64 * std::f64::consts::LN_2).exp();
        for t in (t_lo..mode).rev() {
            b[at(t)] = b[at(t + 1)] * (t + 1) as f64 / (c - t) as f64;
        }
        for t in mode + 1..=t_hi {
            b[at(t)] = b[at(t - 1)] * (c - t + 1) as f64 / t as f64;
        }
        // Outcomes t ∈ [t_lo, t_hi + 1]: P_c(t) = a·b(t) + (1 − a)·b(t − 1), with b(t_lo − 1)
        // and b(t_hi + 1) left out (in the tails).
        for t in t_lo..=t_hi + 1 {
            let current = if t <= t_hi { b[at(t)] } else { 0.0 };
            let previous = if t > t_lo { b[at(t - 1)] } else { 0.0 };
            let mass = a * current + one_minus_a * previous;
            if mass >= TINY {
                losses.push((loss_at(t, c), mass));
            } else {
                skipped += 1;
            }
        }
    }
    // What is not enumerated goes on the infinite loss: the tails of C (both sides), the tails
    // of A given C (at most the largest over c, both sides), and the entries too small to
    // carry their relative error.
    let infinite = 4.0 * (-BINOMIAL_TAIL_EXPONENT).exp() + (skipped as f64 + 1.0) * TINY;
    let distribution =
        PrivacyLossDistribution::from_losses(&losses, infinite, step, MASS_RELATIVE_ERROR)?;
    Ok(PrivacyLossPair::symmetric(distribution))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shuffle::shuffle_delta;

    #[test]
    fn one_round_matches_the_clone_bound() {
        // One round's δ(ε) is the FMT21 divergence the shuffle accountant computes (bucketed
        // and inflated there, discretised here): within a few percent, never far below.
        // The last has σ_C ≈ 153: clone counts in buckets of 4.
        for (eps0, n, eps) in [
            (3.0, 1000, 0.8),
            (6.0, 20_000, 1.5),
            (1.0, 500, 0.3),
            (1.0, 100_000, 0.01),
        ] {
            let pair = shuffle_loss_pair(eps0, n, ShuffleBound::Fmt21, 1e-3).unwrap();
            let here = pair.delta(eps).unwrap();
            let there = shuffle_delta(eps0, n, eps, ShuffleBound::Fmt21).unwrap();
            assert!(
                here >= there * 0.97 && here <= there * 1.5,
                "{eps0} {n} {eps}: {here} vs {there}"
            );
        }
    }

    #[test]
    fn the_loss_stays_within_the_local_epsilon() {
        let pair = shuffle_loss_pair(2.0, 50, ShuffleBound::Fmt21, 0.01).unwrap();
        // Pure ε₀-LDP: nothing beyond ε₀ (up to the grid) and no infinite loss but rounding.
        assert!(pair.forward.infinite_mass() < 1e-8);
        assert_eq!(
            pair.delta(2.0 + 0.02).unwrap().to_bits(),
            pair.forward.infinite_mass().to_bits()
        );
        assert!(shuffle_loss_pair(2.0, 50, ShuffleBound::ClosedForm, 0.01).is_err());
        assert!(shuffle_loss_pair(0.0, 50, ShuffleBound::Fmt21, 0.01).is_err());
        assert!(shuffle_loss_pair(2.0, 1, ShuffleBound::Fmt21, 0.01).is_err());
    }
}
