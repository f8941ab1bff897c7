//! Composition of differentially private releases, and splitting a total budget over rounds
//! (docs/algorithms.md §0 item 5, §3.2, §8.5).
//!
//! | [`Composition`] | `k` releases, release `i` being `(ε_i, δ_i)`-DP, are jointly … |
//! | --- | --- |
//! | `basic` | `(Σ ε_i, Σ δ_i)`-DP |
//! | `advanced` | `(ε √(2k ln(1/δ̃)) + k ε (e^ε − 1), k δ + δ̃)`-DP for every `δ̃ > 0` (all `(ε, δ)` equal; Dwork–Rothblum–Vadhan, [Dwork–Roth Thm 3.20][DR14]) |
//! | `optimal` | `(ε_tot, δ(ε_tot))`-DP with the exact curve of [Kairouz–Oh–Viswanath Thm 3.3][KOV15] (all `(ε, δ)` equal) |
//! | `pld` | `(ε_tot, δ(ε_tot))`-DP with `δ` from the privacy-loss-distribution accountant of [`crate::pld`] (all `(ε, δ)` equal): the same curve as `optimal`, computed by convolution, rounded up |
//!
//! All three hold under adaptive composition and for either neighbour relation, as long as
//! every release uses the same one.
//!
//! # The optimal composition
//!
//! KOV's Theorem 3.3 says that for `i ∈ {0, …, ⌊k/2⌋}` the `k`-fold composition of
//! `(ε, δ)`-DP mechanisms is `((k−2i)ε, 1 − (1−δ)^k (1 − δ_i))`-DP with
//! `δ_i = Σ_{ℓ<i} C(k,ℓ) (e^{(k−ℓ)ε} − e^{(k−2i+ℓ)ε}) / (1+e^ε)^k`, and that nothing better
//! holds. docs/algorithms.md recalls it from memory (MEMORY); the paper text was not read here, so
//! it was checked numerically instead, by `tools/reference/composition.py` on every run. The
//! argument behind the theorem is that every `(ε, δ)`-DP mechanism is a post-processing of the
//! canonical pair
//! `P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0)`, `Q = (0, (1−δ)/(1+e^ε), (1−δ)e^ε/(1+e^ε), δ)`,
//! so the `k`-fold composition is at most as distinguishable as `(P^k, Q^k)`, whose
//! hockey-stick divergence is
//!
//! `δ(ε_tot) = 1 − (1−δ)^k + (1−δ)^k Σ_{j : (k−2j)ε > ε_tot} C(k,j) (p^{k−j} q^j − e^{ε_tot} p^j q^{k−j})`
//!
//! with `p = e^ε/(1+e^ε)`, `q = 1 − p`. At `ε_tot = (k−2i)ε` this is exactly the theorem's
//! `δ`, which the reference confirms symbolically on a grid, by enumerating every outcome of
//! `(P^k, Q^k)` for `k ≤ 6` (and of `k`-fold randomized response for `δ = 0`, `k ≤ 12`), and by
//! composing 60 random `(ε, δ)`-DP mechanisms up to `k = 5` and checking that none exceeds the
//! curve. Between the theorem's points the curve is linear in `e^{ε_tot}`; using it there
//! (instead of rounding `ε_tot` up to the next point) keeps the result never worse than basic
//! or advanced composition, which the reference also checks on a grid.
//!
//! # Rounding
//!
//! Sums and products of the inputs (basic `ε` and `δ`, advanced `δ`) are rounded up exactly,
//! with error-free transformations, so `compose_basic(&[(0.25, 0.0); 4])` is exactly `(1, 0)`.
//! Results that go through `exp`, `ln` or `sqrt` are inflated: an `ε` by [`EPSILON_MARGIN`],
//! the optimal curve's privacy-loss tail by [`crate::numeric::DELTA_MARGIN`] (its floor
//! `1 − (1−δ)^k`, three elementary operations, by [`EPSILON_MARGIN`]). Split budgets are rounded down and checked by
//! composing them forward with the functions of this module.
//!
//! [DR14]: https://www.cis.upenn.edu/~aaroth/Papers/privacybook.pdf
//! [KOV15]: https://arxiv.org/abs/1311.0776

use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::numeric::{delta_upper, ln_choose};
use crate::pld::{check_pld, pld_homogeneous_delta};

/// Relative safety margin added to every `ε` computed through `exp`, `ln` or `sqrt`.
///
/// Those results come from a handful of correctly rounded operations and libm calls (each
/// within one ulp), a relative error below `1e-14`; inflating by `1e-12` keeps the reported `ε`
/// an upper bound on the exact one.
pub const EPSILON_MARGIN: f64 = 1e-12;

/// The largest number of rounds [`Composition::Optimal`] accepts. Its curve costs `O(k)` per
/// evaluation and `O(k)` memory.
pub const MAX_OPTIMAL_ROUNDS: u64 = 1_000_000;

/// A composition theorem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Composition {
    /// `(Σ ε_i, Σ δ_i)`.
    Basic,
    /// Dwork–Rothblum–Vadhan advanced composition (Dwork–Roth Thm 3.20).
    Advanced,
    /// Kairouz–Oh–Viswanath optimal composition of identical `(ε, δ)` releases.
    Optimal,
    /// The privacy-loss-distribution accountant ([`crate::pld`]) on identical `(ε, δ)`
    /// releases.
    Pld,
    /// The tight accountant of S&T rounds: the rounds' own privacy-loss distribution
    /// ([`crate::sample_threshold::tight_rounds_epsilon`]), composed. It needs the mechanism,
    /// not only its `(ε, δ)`, so [`split_budget`] and [`crate::compose_rounds`] refuse it;
    /// multi-round S&T tasks plan and compose with it directly.
    Tight,
}

impl Composition {
    /// Every rule, loosest first.
    pub const ALL: [Self; 5] = [
        Self::Basic,
        Self::Advanced,
        Self::Optimal,
        Self::Pld,
        Self::Tight,
    ];

    /// The default rule of a multi-round S&T task: [`Self::Tight`] for add/remove neighbours
    /// (its loss pair is add/remove), [`Self::Basic`] for replace-one.
    pub fn default_for_rounds(neighbours: crate::Neighbours) -> Self {
        match neighbours {
            crate::Neighbours::AddRemove => Self::Tight,
            crate::Neighbours::ReplaceOne => Self::Basic,
        }
    }

    /// The rules that compose plain `(ε, δ)` guarantees (all but [`Self::Tight`]).
    pub const FOR_PAIRS: [Self; 4] = [Self::Basic, Self::Advanced, Self::Optimal, Self::Pld];

    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Basic => "basic",
            Self::Advanced => "advanced",
            Self::Optimal => "optimal",
            Self::Pld => "pld",
            Self::Tight => "tight",
        }
    }
}

impl fmt::Display for Composition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Composition {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                Error::invalid("composition", s, "basic, advanced, optimal, pld or tight")
            })
    }
}

/// Basic composition: releases that are `(ε_i, δ_i)`-DP are jointly `(Σ ε_i, Σ δ_i)`-DP.
///
/// Both sums are rounded up exactly (the result is the smallest double at or above the exact
/// sum, up to one ulp when the inputs span very different magnitudes), and `δ` is capped at 1.
/// An empty slice gives `(0, 0)`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if some `ε_i` is negative or not finite, or some `δ_i` is
/// outside `[0, 1]`.
pub fn compose_basic(costs: &[(f64, f64)]) -> Result<(f64, f64), Error> {
    for &(epsilon, delta) in costs {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        if !(0.0..=1.0).contains(&delta) {
            return Err(Error::invalid("delta", delta, "a number in [0, 1]"));
        }
    }
    let epsilon = sum_up(costs.iter().map(|c| c.0));
    let delta = sum_up(costs.iter().map(|c| c.1)).min(1.0);
    Ok((epsilon, delta))
}

/// Advanced composition (Dwork–Rothblum–Vadhan; Dwork–Roth Thm 3.20): `k` releases that are
/// each `(ε, δ)`-DP are jointly `(ε √(2k ln(1/δ̃)) + k ε (e^ε − 1), k δ + δ̃)`-DP.
///
/// `ε_total` is inflated by [`EPSILON_MARGIN`]; `δ_total` is rounded up exactly and capped at 1.
/// For small `k` or large `ε` this can be worse than [`compose_basic`]; it does not take the
/// minimum.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ [0, 1)`, `k ≥ 1` and
/// `δ̃ ∈ (0, 1)`.
pub fn compose_advanced(
    epsilon: f64,
    delta: f64,
    k: u64,
    delta_slack: f64,
) -> Result<(f64, f64), Error> {
    check_round(epsilon, delta, k)?;
    if !(delta_slack > 0.0 && delta_slack < 1.0) {
        return Err(Error::invalid(
            "delta slack",
            delta_slack,
            "a number in (0, 1)",
        ));
    }
    Ok((
        advanced_epsilon(epsilon, k, delta_slack),
        advanced_delta(delta, k, delta_slack),
    ))
}

/// Optimal composition (Kairouz–Oh–Viswanath 2015, Thm 3.3) of `k` releases that are each
/// `(ε, δ)`-DP: the smallest `ε_total ≥ 0` at which the composition is
/// `(ε_total, target_delta)`-DP. Returns `(ε_total, target_delta)`.
///
/// `ε_total` is the smallest double whose [`optimal_homogeneous_delta`] (inflated by
/// [`crate::numeric::DELTA_MARGIN`]) is at most `target_delta`, so it is never below the exact
/// value. With `k = 1` and `target_delta = δ` it gives back exactly `ε`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ [0, 1)`,
/// `1 ≤ k ≤` [`MAX_OPTIMAL_ROUNDS`] and `target_delta ∈ (0, 1)`. [`Error::Infeasible`] if
/// `target_delta < 1 − (1−δ)^k`, the `δ` that no `ε_total` avoids.
pub fn compose_optimal_homogeneous(
    epsilon: f64,
    delta: f64,
    k: u64,
    target_delta: f64,
) -> Result<(f64, f64), Error> {
    check_optimal(epsilon, delta, k)?;
    if !(target_delta > 0.0 && target_delta < 1.0) {
        return Err(Error::invalid(
            "target delta",
            target_delta,
            "a number in (0, 1)",
        ));
    }
    let curve = OptimalCurve::new(k);
    let ok = |e: f64| curve.delta_at(epsilon, delta, e) <= target_delta;
    // Above k·ε every privacy-loss value is covered: δ(ε_tot) = 1 − (1−δ)^k.
    let hi = epsilon_upper(k as f64 * epsilon);
    if !ok(hi) {
        return Err(Error::infeasible(
            "epsilon",
            format!(
                "target δ = {target_delta} is below 1 − (1−δ)^k = {} for δ = {delta}, k = {k}",
                curve.delta_at(epsilon, delta, hi)
            ),
        ));
    }
    if ok(0.0) {
        return Ok((0.0, target_delta));
    }
    // δ(ε_tot) is non-increasing; positive f64s are ordered like their bit patterns.
    let (mut lo_bits, mut hi_bits) = (0_u64, hi.to_bits());
    while hi_bits - lo_bits > 1 {
        let mid = lo_bits + (hi_bits - lo_bits) / 2;
        if ok(f64::from_bits(mid)) {
            hi_bits = mid;
        } else {
            lo_bits = mid;
        }
    }
    Ok((f64::from_bits(hi_bits), target_delta))
}

/// The `δ` at which `k` releases, each `(ε, δ)`-DP, are jointly `(ε_total, δ)`-DP by the
/// optimal composition theorem (Kairouz–Oh–Viswanath 2015, Thm 3.3; see the module docs):
///
/// `1 − (1−δ)^k + (1−δ)^k Σ_{j : (k−2j)ε > ε_total} C(k,j) (p^{k−j} q^j − e^{ε_total} p^j q^{k−j})`,
/// `p = e^ε/(1+e^ε)`, `q = 1 − p`. At `ε_total = (k−2i)ε` this is the theorem's
/// `1 − (1−δ)^k (1 − δ_i)`; it is the smallest valid `δ` for every `ε_total`.
///
/// The result is an upper bound: the floor `1 − (1−δ)^k` is inflated by [`EPSILON_MARGIN`]
/// (and never exceeds the exact `k·δ` rounded up, so `k = 1` gives back exactly `δ`), and the
/// sum, whose terms carry the rounding of `lgamma` and `exp` (relative `1e-8` at
/// `k = 10^6`), by [`crate::numeric::DELTA_MARGIN`].
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ [0, 1)`,
/// `1 ≤ k ≤` [`MAX_OPTIMAL_ROUNDS`] and `ε_total ≥ 0` is finite.
pub fn optimal_homogeneous_delta(
    epsilon: f64,
    delta: f64,
    k: u64,
    epsilon_total: f64,
) -> Result<f64, Error> {
    check_optimal(epsilon, delta, k)?;
    if !(epsilon_total.is_finite() && epsilon_total >= 0.0) {
        return Err(Error::invalid(
            "epsilon",
            epsilon_total,
            "a finite number ≥ 0",
        ));
    }
    Ok(OptimalCurve::new(k).delta_at(epsilon, delta, epsilon_total))
}

/// The error of a rule for `(ε, δ)` pairs asked to apply [`Composition::Tight`].
pub(crate) fn tight_needs_the_mechanism() -> Error {
    Error::invalid(
        "composition",
        "tight",
        "a rule for plain (ε, δ) guarantees (basic, advanced, optimal or pld); tight composes \
         S&T rounds' own loss distribution",
    )
}

/// A per-round budget `(ε', δ')` such that `k` rounds, each `(ε', δ')`-DP, compose by `method`
/// to at most `(ε_total, δ_total)`. Both are rounded down and checked by composing forward.
///
/// * `Basic`: `ε' = ε_total/k`, `δ' = δ_total/k` (the S&T and TrieHH++ split of docs/algorithms.md
///   §3.2). Checked with exact rounding, so [`compose_basic`] of `k` copies gives back at most
///   the totals.
/// * `Advanced`: the slack is fixed at `δ̃ = δ_total/2` (exact in binary) and
///   `δ' = (δ_total/2)/k`; `ε'` is the largest double with
///   [`compose_advanced`]`(ε', δ', k, δ_total/2)` within `ε_total`. Splitting `δ_total` evenly
///   is a choice, not an optimum: a smaller `δ'` makes each round costlier to run (a larger S&T
///   threshold, say), which composition alone cannot weigh.
/// * `Optimal`: the same `δ' = (δ_total/2)/k`, which leaves at least `δ_total/2` for the
///   privacy-loss tail; `ε'` is (up to bisection) the largest double with
///   [`optimal_homogeneous_delta`]`(ε', δ', k, ε_total) ≤ δ_total`. It is never below the basic
///   `ε_total/k`.
/// * `Pld`: as `Optimal`, with [`crate::pld::pld_homogeneous_delta`] as the check.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε_total > 0` is finite, `k ≥ 1` (and at most
/// [`MAX_OPTIMAL_ROUNDS`] for `Optimal`, [`crate::pld::MAX_PLD_ROUNDS`] for `Pld`), and
/// `δ_total ∈ [0, 1)` for `Basic` or `(0, 1)` for the others; for [`Composition::Tight`].
pub fn split_budget(
    epsilon_total: f64,
    delta_total: f64,
    k: u64,
    method: Composition,
) -> Result<(f64, f64), Error> {
    if !(epsilon_total.is_finite() && epsilon_total > 0.0) {
        return Err(Error::invalid(
            "epsilon",
            epsilon_total,
            "a finite number > 0",
        ));
    }
    if k == 0 {
        return Err(Error::invalid("rounds", 0, "an integer ≥ 1"));
    }
    let delta_ok = match method {
        Composition::Basic => (0.0..1.0).contains(&delta_total),
        Composition::Advanced | Composition::Optimal | Composition::Pld => {
            delta_total > 0.0 && delta_total < 1.0
        }
        Composition::Tight => return Err(tight_needs_the_mechanism()),
    };
    if !delta_ok {
        let expected = if method == Composition::Basic {
            "a number in [0, 1)"
        } else {
            "a number in (0, 1)"
        };
        return Err(Error::invalid("delta total", delta_total, expected));
    }
    let kf = k as f64;
    let split = match method {
        Composition::Tight => return Err(tight_needs_the_mechanism()),
        Composition::Basic => {
            let eps = div_down(epsilon_total, kf);
            let delta = div_down(delta_total, kf);
            debug_assert!(mul_up(kf, eps) <= epsilon_total && mul_up(kf, delta) <= delta_total);
            (eps, delta)
        }
        Composition::Advanced => {
            let slack = delta_total / 2.0;
            let delta = div_down(slack, kf);
            // The advanced ε is 0 at ε' = 0 and increasing.
            let eps = largest_passing(0.0, epsilon_total, |e| {
                advanced_epsilon(e, k, slack) <= epsilon_total
            });
            debug_assert!(advanced_delta(delta, k, slack) <= delta_total);
            (eps, delta)
        }
        Composition::Optimal | Composition::Pld => {
            let delta = div_down(delta_total / 2.0, kf);
            let curve_delta: Box<dyn Fn(f64) -> f64> = if method == Composition::Optimal {
                check_optimal(epsilon_total, 0.0, k)?;
                let curve = OptimalCurve::new(k);
                Box::new(move |e| curve.delta_at(e, delta, epsilon_total))
            } else {
                check_pld(epsilon_total, 0.0, k)?;
                // A failed PLD (a grid too fine for ε') counts as not passing.
                Box::new(move |e| {
                    pld_homogeneous_delta(e, delta, k, epsilon_total).unwrap_or(f64::INFINITY)
                })
            };
            let ok = |e: f64| curve_delta(e) <= delta_total;
            let lo = div_down(epsilon_total, kf);
            if !ok(lo) {
                // Unreachable in exact arithmetic: at ε' = ε_total/k the curve is
                // 1 − (1−δ')^k ≤ δ_total/2.
                return Err(Error::infeasible(
                    "epsilon",
                    format!("the basic split does not pass the {method} check"),
                ));
            }
            // δ(ε_total) grows with ε' and reaches 1 as ε' → ∞: bracket by doubling.
            let mut hi = lo * 2.0;
            let mut lo = lo;
            while ok(hi) {
                lo = hi;
                hi *= 2.0;
                if !hi.is_finite() {
                    return Err(Error::infeasible(
                        "epsilon",
                        format!("the {method} check passes for every ε'"),
                    ));
                }
            }
            (largest_passing(lo, hi, ok), delta)
        }
    };
    Ok(split)
}

/// Checks the per-round `(ε, δ, k)` shared by the homogeneous theorems.
pub(crate) fn check_round(epsilon: f64, delta: f64, k: u64) -> Result<(), Error> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    if !(0.0..1.0).contains(&delta) {
        return Err(Error::invalid("delta", delta, "a number in [0, 1)"));
    }
    if k == 0 {
        return Err(Error::invalid("rounds", 0, "an integer ≥ 1"));
    }
    Ok(())
}

/// [`check_round`] plus the size limit of the optimal curve.
fn check_optimal(epsilon: f64, delta: f64, k: u64) -> Result<(), Error> {
    check_round(epsilon, delta, k)?;
    if k > MAX_OPTIMAL_ROUNDS {
        return Err(Error::invalid(
            "rounds",
            k,
            format!("at most {MAX_OPTIMAL_ROUNDS} for the optimal composition"),
        ));
    }
    Ok(())
}

/// `ε √(2k ln(1/δ̃)) + k ε (e^ε − 1)`, inflated by [`EPSILON_MARGIN`].
fn advanced_epsilon(epsilon: f64, k: u64, delta_slack: f64) -> f64 {
    let k = k as f64;
    let raw = epsilon * (2.0 * k * -delta_slack.ln()).sqrt() + k * epsilon * epsilon.exp_m1();
    epsilon_upper(raw)
}

/// `k δ + δ̃` rounded up exactly, capped at 1.
fn advanced_delta(delta: f64, k: u64, delta_slack: f64) -> f64 {
    add_up(mul_up(k as f64, delta), delta_slack).min(1.0)
}

/// Inflates an `ε` computed through `exp`, `ln` or `sqrt` by [`EPSILON_MARGIN`].
pub(crate) fn epsilon_upper(epsilon: f64) -> f64 {
    epsilon * (1.0 + EPSILON_MARGIN)
}

/// The rounding error of `a + b`, given `s = fl(a + b)` (Knuth's TwoSum, exact).
fn two_sum_error(a: f64, b: f64, s: f64) -> f64 {
    let b_virtual = s - a;
    (a - (s - b_virtual)) + (b - b_virtual)
}

/// `a + b` rounded up: the smallest double at or above the exact sum.
pub(crate) fn add_up(a: f64, b: f64) -> f64 {
    let s = a + b;
    if s.is_finite() && two_sum_error(a, b, s) > 0.0 {
        s.next_up()
    } else {
        s
    }
}

/// `a · b` rounded up, exact through a fused multiply-add (no underflow in the inputs here).
pub(crate) fn mul_up(a: f64, b: f64) -> f64 {
    let p = a * b;
    if p.is_finite() && a.mul_add(b, -p) > 0.0 {
        p.next_up()
    } else {
        p
    }
}

/// `a / b` rounded down for `a ≥ 0`, `b > 0`: the residual `q·b − a` is exact through a fused
/// multiply-add.
fn div_down(a: f64, b: f64) -> f64 {
    let q = a / b;
    if q > 0.0 && q.mul_add(b, -a) > 0.0 {
        q.next_down()
    } else {
        q
    }
}

/// `Σ values` rounded up. The running sum `s` and an upward-rounded correction `c` keep
/// `s + c ≥` the exact partial sum; `c` collects the exact TwoSum errors, so it is exact too
/// whenever they fit in 53 bits (for example for `k` copies of one value).
fn sum_up(values: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0_f64, 0.0_f64);
    for x in values {
        let t = s + x;
        c = add_up(c, two_sum_error(s, x, t));
        s = t;
    }
    add_up(s, c)
}

/// The largest double in `[lo, hi]` passing `ok`, for `ok` monotone (true then false) with
/// `ok(lo)` true; `lo, hi ≥ 0`.
pub(crate) fn largest_passing(lo: f64, hi: f64, ok: impl Fn(f64) -> bool) -> f64 {
    if ok(hi) {
        return hi;
    }
    let (mut lo_bits, mut hi_bits) = (lo.to_bits(), hi.to_bits());
    while hi_bits - lo_bits > 1 {
        let mid = lo_bits + (hi_bits - lo_bits) / 2;
        if ok(f64::from_bits(mid)) {
            lo_bits = mid;
        } else {
            hi_bits = mid;
        }
    }
    f64::from_bits(lo_bits)
}

/// `ε_total − m·ε` with a relative error of a few ulps: `m·ε = p + e` and
/// `ε_total − p = s + r` exactly (FMA and TwoSum), so only `s + (r − e)` is rounded. Its sign
/// is exact unless `r − e` and the result are both within an ulp of zero.
fn loss_gap(epsilon_total: f64, m: f64, epsilon: f64) -> f64 {
    let p = m * epsilon;
    let e = m.mul_add(epsilon, -p);
    let s = epsilon_total - p;
    let r = two_sum_error(epsilon_total, -p, s);
    s + (r - e)
}

/// The optimal-composition curve for `k` rounds: `ln C(k, j)` for `j < k/2`, the only indices
/// whose privacy loss `(k−2j)ε` is positive.
struct OptimalCurve {
    k: u64,
    ln_choose: Vec<f64>,
}

impl OptimalCurve {
    fn new(k: u64) -> Self {
        let ln_choose = (0..k.div_ceil(2)).map(|j| ln_choose(k, j)).collect();
        Self { k, ln_choose }
    }

    /// An upper bound on `δ(ε_total)` for per-round `(ε, δ)`.
    fn delta_at(&self, epsilon: f64, delta: f64, epsilon_total: f64) -> f64 {
        let k = self.k as f64;
        // ln p = −ln(1 + e^{−ε}), ln q = ln p − ε.
        let ln_p = -(-epsilon).exp().ln_1p();
        let ln_q = ln_p - epsilon;
        let mut sum = 0.0;
        for (j, &ln_c) in self.ln_choose.iter().enumerate() {
            let j_f = j as f64;
            // ε_total − (k−2j)ε, to a few ulps even when the two nearly cancel.
            let gap = loss_gap(epsilon_total, k - 2.0 * j_f, epsilon);
            if gap >= 0.0 {
                // This and every later privacy loss is at most ε_total.
                break;
            }
            let weight = (ln_c + (k - j_f) * ln_p + j_f * ln_q).exp();
            sum += weight * -gap.exp_m1();
        }
        // The floor 1 − (1−δ)^k (three elementary operations, inflated by the ε margin, and
        // never above the exact k·δ), plus (1−δ)^k times the tail (inflated by the δ margin).
        let ln_keep = k * (-delta).ln_1p();
        let floor = mul_up(k, delta).min(epsilon_upper(-ln_keep.exp_m1()));
        add_up(floor, delta_upper(ln_keep.exp() * sum)).min(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    /// Exact comparisons go through the bit patterns (clippy's `float_cmp`).
    fn bits(x: f64) -> u64 {
        x.to_bits()
    }

    fn bits2((a, b): (f64, f64)) -> (u64, u64) {
        (a.to_bits(), b.to_bits())
    }

    #[test]
    fn test_vec_basic_is_exact_when_the_sum_is() {
        assert_eq!(
            bits2(compose_basic(&[(0.25, 0.0); 4]).unwrap()),
            bits2((1.0, 0.0)),
            "0.25·4 is exact"
        );
        // Ten copies of the double 0.1 sum to 1 + 5.55e-17: rounded up, not to nearest.
        let (eps, _) = compose_basic(&[(0.1, 0.0); 10]).unwrap();
        assert_eq!(bits(eps), bits(1.0_f64.next_up()));
        assert_eq!(bits2(compose_basic(&[]).unwrap()), bits2((0.0, 0.0)));
        assert_eq!(
            bits(compose_basic(&[(1.0, 0.7), (1.0, 0.7)]).unwrap().1),
            bits(1.0)
        );
    }

    #[test]
    fn test_vec_advanced_dwork_roth() {
        // ε √(2k ln(1/δ̃)) + kε(e^ε − 1) at ε = 0.1, k = 100, δ̃ = 1e-6: √(200 ln 1e6) = 52.565…
        let (eps, delta) = compose_advanced(0.1, 1e-8, 100, 1e-6).unwrap();
        let expected = 0.1 * (200.0 * 1e6_f64.ln()).sqrt() + 10.0 * 0.1_f64.exp_m1();
        assert!(eps >= expected && close(eps, expected, 2e-12), "{eps}");
        // 100 · 1e-8 + 1e-6 in the doubles given, rounded up (the vectors check the direction).
        assert!(close(delta, 2e-6, 1e-15), "{delta}");
    }

    #[test]
    fn test_vec_optimal_one_round_gives_back_the_guarantee() {
        for (eps, delta) in [(0.1, 1e-6), (1.0, 1e-9), (3.0, 0.2), (0.5, 0.0)] {
            // At ε_total ≥ ε only the 1 − (1−δ)^1 = δ floor remains, and it is exact for k = 1.
            let d = optimal_homogeneous_delta(eps, delta, 1, eps).unwrap();
            assert_eq!(bits(d), bits(delta));
            if delta > 0.0 {
                let (total, _) = compose_optimal_homogeneous(eps, delta, 1, delta).unwrap();
                assert_eq!(bits(total), bits(eps), "{eps}: {total}");
            }
            // Just below ε the privacy-loss tail costs a little more δ.
            let below = optimal_homogeneous_delta(eps, delta, 1, eps * 0.99).unwrap();
            assert!(below > delta);
        }
    }

    #[test]
    fn test_vec_optimal_theorem_3_3_grid_point() {
        // k = 2, δ = 0, i = 1: (0, C(2,0)(e^{2ε} − 1)/(1+e^ε)^2) = (0, (e^ε − 1)/(e^ε + 1)).
        let eps = 0.7_f64;
        let d = optimal_homogeneous_delta(eps, 0.0, 2, 0.0).unwrap();
        let expected = eps.exp_m1() / (eps.exp() + 1.0);
        assert!(d >= expected && close(d, expected, 2e-6));
        // i = 0: (kε, 1 − (1−δ)^k).
        let d = optimal_homogeneous_delta(eps, 0.01, 3, 3.0 * eps).unwrap();
        assert!(close(d, 1.0 - 0.99_f64.powi(3), 2e-6));
    }

    #[test]
    fn optimal_beats_basic_and_advanced() {
        for (eps, delta, k) in [(0.1, 1e-8, 100), (1.0, 0.0, 10), (0.01, 1e-10, 5000)] {
            let (adv_eps, adv_delta) = compose_advanced(eps, delta, k, 1e-6).unwrap();
            let (opt_eps, _) = compose_optimal_homogeneous(eps, delta, k, adv_delta).unwrap();
            assert!(opt_eps <= adv_eps && opt_eps <= k as f64 * eps);
        }
    }

    #[test]
    fn optimal_needs_target_above_the_delta_floor() {
        // 1 − (1 − 1e-3)^10 ≈ 9.96e-3.
        assert!(matches!(
            compose_optimal_homogeneous(1.0, 1e-3, 10, 9e-3),
            Err(Error::Infeasible { .. })
        ));
        assert!(compose_optimal_homogeneous(1.0, 1e-3, 10, 1.1e-2).is_ok());
    }

    #[test]
    fn split_composes_back_within_the_totals() {
        for method in Composition::FOR_PAIRS {
            for (eps, delta, k) in [(1.0, 1e-6, 10), (4.0, 1e-8, 100), (0.5, 1e-5, 1)] {
                let (e, d) = split_budget(eps, delta, k, method).unwrap();
                match method {
                    Composition::Basic => {
                        let (te, td) = compose_basic(&vec![(e, d); k as usize]).unwrap();
                        assert!(te <= eps && td <= delta);
                    }
                    Composition::Advanced => {
                        let (te, td) = compose_advanced(e, d, k, delta / 2.0).unwrap();
                        assert!(te <= eps && td <= delta);
                        assert!(compose_advanced(e.next_up(), d, k, delta / 2.0).unwrap().0 > eps);
                    }
                    Composition::Tight => unreachable!("not a rule for pairs"),
                    Composition::Optimal | Composition::Pld => {
                        let (te, _) = if method == Composition::Optimal {
                            compose_optimal_homogeneous(e, d, k, delta).unwrap()
                        } else {
                            crate::pld::compose_pld_homogeneous(e, d, k, delta).unwrap()
                        };
                        assert!(te <= eps);
                        assert!(e >= eps / k as f64 * (1.0 - 1e-15));
                    }
                }
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for c in Composition::ALL {
            assert_eq!(c.name().parse::<Composition>().unwrap(), c);
        }
        assert!("kov".parse::<Composition>().is_err());
        // Tight needs the mechanism: the rules for plain pairs refuse it.
        assert!(split_budget(1.0, 1e-6, 10, Composition::Tight).is_err());
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(compose_basic(&[(-1.0, 0.0)]).is_err());
        assert!(compose_basic(&[(f64::INFINITY, 0.0)]).is_err());
        assert!(compose_basic(&[(1.0, 1.5)]).is_err());
        assert!(compose_advanced(0.0, 1e-6, 10, 1e-6).is_err());
        assert!(compose_advanced(1.0, 1.0, 10, 1e-6).is_err());
        assert!(compose_advanced(1.0, 1e-6, 0, 1e-6).is_err());
        assert!(compose_advanced(1.0, 1e-6, 10, 0.0).is_err());
        assert!(compose_optimal_homogeneous(1.0, 1e-6, MAX_OPTIMAL_ROUNDS + 1, 1e-3).is_err());
        assert!(compose_optimal_homogeneous(1.0, 1e-6, 10, 1.0).is_err());
        assert!(optimal_homogeneous_delta(1.0, 1e-6, 10, -1.0).is_err());
        assert!(split_budget(0.0, 1e-6, 10, Composition::Basic).is_err());
        assert!(split_budget(1.0, 1e-6, 0, Composition::Basic).is_err());
        assert!(split_budget(1.0, 0.0, 10, Composition::Advanced).is_err());
        assert!(split_budget(1.0, 0.0, 10, Composition::Basic).is_ok());
    }

    #[test]
    fn directed_rounding_helpers() {
        assert_eq!(bits(add_up(1.0, 2.0)), bits(3.0));
        assert_eq!(bits(add_up(1.0, 1e-20)), bits(1.0_f64.next_up()));
        // 3 × 0.1 rounds to nearest 0.30000000000000004, already above the exact product.
        assert_eq!(bits(mul_up(3.0, 0.1)), bits(3.0 * 0.1));
        // (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104 rounds to nearest 1 + 2^-51, below it.
        let a = 1.0_f64.next_up();
        assert_eq!(bits(mul_up(a, a)), bits((a * a).next_up()));
        // 1/3 rounds to nearest below 1/3; 1/10 rounds to nearest above 0.1.
        assert_eq!(bits(div_down(1.0, 3.0)), bits(1.0 / 3.0));
        assert_eq!(bits(div_down(1.0, 10.0)), bits(0.1_f64.next_down()));
    }
}
