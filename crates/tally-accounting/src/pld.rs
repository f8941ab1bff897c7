//! Privacy-loss-distribution (PLD) accounting: the exact `δ(ε)` of a composition, up to a
//! pessimistic discretisation of the privacy loss.
//!
//! For a dominating pair `(P, Q)` of a mechanism (every pair of neighbouring inputs is at most
//! as distinguishable as `P` from `Q`), the privacy loss is `L = ln(P(o)/Q(o))` with `o ~ P`,
//! and the hockey-stick divergence is
//!
//! `δ(ε) = Pr[L = ∞] + E[(1 − e^{ε − L})₊]`.
//!
//! Under composition the losses of the rounds add, so the `k`-fold composition's loss is the
//! `k`-fold convolution of one round's. The `δ(ε)` of the composition of mechanisms dominated
//! by `(P_i, Q_i)` is at most that of `(Π P_i, Π Q_i)` (adaptive composition included), which
//! is what [`PrivacyLossDistribution::compose`] computes.
//!
//! # Pessimistic discretisation
//!
//! A [`PrivacyLossDistribution`] keeps the loss on a grid `{j·h}` and rounds every loss **up** to
//! the grid, keeping its probability under `P`. The integrand `(1 − e^{ε − ℓ₁ − … − ℓ_k})₊` is
//! non-decreasing in every `ℓ_i`, so rounding each round's loss up can only increase the
//! computed `δ(ε)` of the composition: the result is an upper bound whatever the grid. (No valid
//! pair needs to have the rounded loss distribution; the bound is on the expectation itself.)
//! Truncating the tails after each convolution is pessimistic too: mass in the low tail is
//! moved up to the lowest kept loss, mass in the high tail to the infinite-loss bucket.
//!
//! # Directions
//!
//! The loss of `P` against `Q` bounds the distinguishability in one direction only. For the
//! pairs of pure and approximate DP built here ([`PrivacyLossDistribution::pure`],
//! [`PrivacyLossDistribution::approximate`]) swapping `P` and `Q` is a relabelling of outcomes,
//! so both directions have the same loss distribution and one suffices. For a general pair
//! ([`PrivacyLossDistribution::from_pair`]) compose both `from_pair(p, q)` and `from_pair(q, p)`
//! and report the larger `δ` (the smaller of the two `ε`s is not valid).
//!
//! # Rounding
//!
//! Convolutions are computed directly (no FFT): every term is a non-negative product, so each
//! entry carries a relative rounding error of at most `(terms + 1)·u`, which is tracked and
//! added before the final inflation by [`crate::numeric::DELTA_MARGIN`]. Grid losses are
//! evaluated rounded up, and solved `ε` are the upper end of a bisection over the doubles.
//! Repeated squaring needs `O(log k)` convolutions; for `k` rounds of an `(ε, δ)` pair on the
//! grid `h = ε` the distribution has `O(√k)` entries after truncation.

use crate::Error;
use crate::composition::{add_up, check_round, mul_up};
use crate::numeric::delta_upper;

/// Probability mass below which a tail is truncated after each convolution (moved
/// pessimistically, so it still counts towards `δ`).
pub const TAIL_MASS: f64 = 1e-30;

/// The largest number of grid points one distribution may span.
pub const MAX_GRID_POINTS: u64 = 1 << 24;

/// The largest number of rounds [`compose_pld_homogeneous`] and [`pld_homogeneous_delta`]
/// accept (their cost grows like `k log k`).
pub const MAX_PLD_ROUNDS: u64 = 1_000_000;

/// The unit roundoff of `f64`.
const UNIT: f64 = f64::EPSILON / 2.0;

/// A discretised privacy-loss distribution: the probability (under `P`) of each loss `j·h` on a
/// grid of width `h`, rounded up from the true loss, plus the probability of an infinite loss.
#[derive(Clone, Debug, PartialEq)]
pub struct PrivacyLossDistribution {
    /// The grid width `h`.
    step: f64,
    /// The grid index of `mass[0]`: its loss is `offset·h`.
    offset: i64,
    /// Probabilities of consecutive grid losses.
    mass: Vec<f64>,
    /// Probability of an infinite loss (an upper bound).
    infinite: f64,
    /// A bound on the relative rounding error of every entry of `mass`.
    relative_error: f64,
}

impl PrivacyLossDistribution {
    /// The loss distribution of the randomized-response pair, which dominates every pure
    /// `ε`-DP mechanism: loss `+ε` with probability `e^ε/(1+e^ε)`, `−ε` with `1/(1+e^ε)`.
    /// Losses are rounded up to multiples of `step` (exact when `ε` is a multiple of it).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `ε > 0` and `step > 0` are finite and `ε/step` is at
    /// most [`MAX_GRID_POINTS`].
    pub fn pure(epsilon: f64, step: f64) -> Result<Self, Error> {
        Self::approximate(epsilon, 0.0, step)
    }

    /// The loss distribution of the canonical pair that dominates every `(ε, δ)`-DP mechanism
    /// (Kairouz–Oh–Viswanath; see [`crate::composition`]):
    /// `P = (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0)` against `Q`, its mirror image. The loss is
    /// infinite with probability `δ`, `+ε` with `(1−δ)e^ε/(1+e^ε)` and `−ε` with
    /// `(1−δ)/(1+e^ε)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `ε > 0` and `step > 0` are finite, `δ ∈ [0, 1)`, and
    /// `ε/step` is at most [`MAX_GRID_POINTS`].
    pub fn approximate(epsilon: f64, delta: f64, step: f64) -> Result<Self, Error> {
        check_round(epsilon, delta, 1)?;
        // p = 1/(1+e^{−ε}), q = 1/(1+e^ε), each within 2 ulps.
        let keep = 1.0 - delta;
        let p = keep / (1.0 + (-epsilon).exp());
        let q = keep / (1.0 + epsilon.exp());
        Self::from_losses(&[(epsilon, p), (-epsilon, q)], delta, step, 4.0 * UNIT)
    }

    /// The loss distribution of `P` against `Q` for a discrete pair given as probability
    /// vectors over the same outcomes: loss `ln(p_i/q_i)` with probability `p_i`, infinite where
    /// `q_i = 0 < p_i`. Outcomes with `p_i = 0` are dropped (their loss is `−∞`).
    ///
    /// This is one direction only; see the module docs.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `step > 0` is finite, the vectors have the same
    /// length, every entry is finite and non-negative, each vector sums to 1 within `1e-9`, and
    /// the losses span at most [`MAX_GRID_POINTS`] grid points.
    pub fn from_pair(p: &[f64], q: &[f64], step: f64) -> Result<Self, Error> {
        check_pair(p, q)?;
        let mut losses = Vec::with_capacity(p.len());
        let mut infinite = 0.0;
        for (&pi, &qi) in p.iter().zip(q) {
            if pi == 0.0 {
                continue;
            }
            if qi == 0.0 {
                infinite += pi;
                continue;
            }
            let (lp, lq) = (pi.ln(), qi.ln());
            // ln p − ln q, plus a bound on the error of the two logarithms and the difference.
            let loss = (lp - lq) + 4.0 * f64::EPSILON * (lp.abs() + lq.abs());
            losses.push((loss, pi));
        }
        let infinite = (infinite * (1.0 + p.len() as f64 * f64::EPSILON)).min(1.0);
        Self::from_losses(&losses, infinite, step, 0.0)
    }

    /// Puts `(loss, probability)` pairs on the grid, every loss rounded up.
    pub(crate) fn from_losses(
        losses: &[(f64, f64)],
        infinite: f64,
        step: f64,
        relative_error: f64,
    ) -> Result<Self, Error> {
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::invalid("step", step, "a finite number > 0"));
        }
        let limit = MAX_GRID_POINTS as f64;
        let mut indexed = Vec::with_capacity(losses.len());
        for &(loss, probability) in losses {
            let ratio = (loss / step).ceil();
            if ratio.abs() > limit {
                return Err(Error::invalid(
                    "step",
                    step,
                    format!("at least |loss|/{MAX_GRID_POINTS} for the loss {loss}"),
                ));
            }
            let mut index = ratio as i64;
            // The sign of index·h − loss is exact through a fused multiply-add.
            while (index as f64).mul_add(step, -loss) < 0.0 {
                index += 1;
            }
            indexed.push((index, probability));
        }
        let Some(lowest) = indexed.iter().map(|&(j, _)| j).min() else {
            return Ok(Self {
                step,
                offset: 0,
                mass: Vec::new(),
                infinite,
                relative_error,
            });
        };
        let highest = indexed.iter().map(|&(j, _)| j).max().unwrap_or(lowest);
        if (highest - lowest) as u64 >= MAX_GRID_POINTS {
            return Err(Error::invalid(
                "step",
                step,
                format!("a grid of at most {MAX_GRID_POINTS} points over the losses"),
            ));
        }
        let mut mass = vec![0.0; (highest - lowest + 1) as usize];
        for (index, probability) in indexed {
            mass[(index - lowest) as usize] += probability;
        }
        Ok(Self {
            step,
            offset: lowest,
            mass,
            infinite,
            // One rounding per accumulated entry.
            relative_error: relative_error + losses.len() as f64 * UNIT,
        })
    }

    /// The grid width `h`.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// The probability of an infinite privacy loss (an upper bound).
    pub fn infinite_mass(&self) -> f64 {
        self.infinite
    }

    /// The number of grid points between the smallest and largest finite loss kept.
    pub fn len(&self) -> usize {
        self.mass.len()
    }

    /// Whether no finite loss has positive probability.
    pub fn is_empty(&self) -> bool {
        self.mass.is_empty()
    }

    /// The loss distribution of running both mechanisms (losses add), truncated pessimistically
    /// at [`TAIL_MASS`] on each side.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the grids differ or the result would span more than
    /// [`MAX_GRID_POINTS`].
    pub fn compose(&self, other: &Self) -> Result<Self, Error> {
        if self.step.to_bits() != other.step.to_bits() {
            return Err(Error::invalid(
                "step",
                other.step,
                format!("the same grid as the other distribution ({})", self.step),
            ));
        }
        // Pr[some loss infinite] = a + b − ab ≤ a + b(1 − a), rounded up by a few ulps.
        let infinite = ((self.infinite + other.infinite * (1.0 - self.infinite))
            * (1.0 + 4.0 * f64::EPSILON))
            .min(1.0);
        if self.is_empty() || other.is_empty() {
            return Ok(Self {
                step: self.step,
                offset: 0,
                mass: Vec::new(),
                infinite,
                relative_error: 0.0,
            });
        }
        let len = self.mass.len() + other.mass.len() - 1;
        if len as u64 > MAX_GRID_POINTS {
            return Err(Error::invalid(
                "step",
                self.step,
                format!("a grid of at most {MAX_GRID_POINTS} points after composition"),
            ));
        }
        // The outer loop skips the zero entries (the pairs here are often supported on every
        // other grid point); the inner one runs over the whole other distribution as one
        // slice, which the compiler vectorises. Its zero entries add exact zeros, so the
        // result and its rounding error are those of the sum over non-zero pairs alone.
        let mut mass = vec![0.0; len];
        for (i, &x) in self.mass.iter().enumerate().filter(|&(_, &x)| x > 0.0) {
            let row = &mut mass[i..i + other.mass.len()];
            for (out, &y) in row.iter_mut().zip(&other.mass) {
                *out += x * y;
            }
        }
        let non_zero = |m: &[f64]| m.iter().filter(|&&x| x > 0.0).count();
        let terms = non_zero(&self.mass).min(non_zero(&other.mass)) as f64;
        let mut out = Self {
            step: self.step,
            offset: self.offset + other.offset,
            mass,
            infinite,
            relative_error: self.relative_error
                + other.relative_error
                + (terms + 2.0) * UNIT * 1.01,
        };
        out.truncate();
        Ok(out)
    }

    /// The loss distribution of `k ≥ 1` independent runs, by repeated squaring.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `k = 0` or a composition fails (see
    /// [`PrivacyLossDistribution::compose`]).
    pub fn self_compose(&self, k: u64) -> Result<Self, Error> {
        if k == 0 {
            return Err(Error::invalid("rounds", 0, "an integer ≥ 1"));
        }
        let mut result: Option<Self> = None;
        let mut base = self.clone();
        let mut k = k;
        loop {
            if k & 1 == 1 {
                result = Some(match result {
                    None => base.clone(),
                    Some(r) => r.compose(&base)?,
                });
            }
            k >>= 1;
            if k == 0 {
                break;
            }
            base = base.compose(&base)?;
        }
        Ok(result.unwrap_or(base))
    }

    /// An upper bound on `δ(ε) = Pr[L = ∞] + Σ_{ℓ > ε} (1 − e^{ε−ℓ}) Pr[L = ℓ]` of this
    /// distribution, for `ε ≥ 0`. It is non-increasing in `ε`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `ε` is finite and `≥ 0`.
    pub fn delta(&self, epsilon: f64) -> Result<f64, Error> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        Ok(self.delta_at(epsilon))
    }

    /// [`PrivacyLossDistribution::delta`] without the check.
    fn delta_at(&self, epsilon: f64) -> f64 {
        let mut sum = 0.0;
        for (i, &m) in self.mass.iter().enumerate().rev() {
            let loss = self.loss(i);
            if loss <= epsilon {
                break;
            }
            sum += m * -(epsilon - loss).exp_m1();
        }
        // The entries' rounding, the sum's, then the shared margin for exp.
        let bound = sum * (1.0 + self.relative_error + (self.mass.len() as f64 + 2.0) * UNIT);
        add_up(self.infinite, delta_upper(bound)).min(1.0)
    }

    /// The grid loss of entry `i`, rounded up.
    fn loss(&self, i: usize) -> f64 {
        mul_up((self.offset + i as i64) as f64, self.step)
    }

    /// The smallest `ε ≥ 0` (the upper end of a bisection over the doubles) with
    /// [`PrivacyLossDistribution::delta`]`(ε) ≤ target_delta`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `target_delta ∈ (0, 1)`; [`Error::Infeasible`] if the
    /// infinite-loss mass alone exceeds it.
    pub fn epsilon(&self, target_delta: f64) -> Result<f64, Error> {
        if !(target_delta > 0.0 && target_delta < 1.0) {
            return Err(Error::invalid(
                "target delta",
                target_delta,
                "a number in (0, 1)",
            ));
        }
        let ok = |e: f64| self.delta_at(e) <= target_delta;
        // Above the largest finite loss only the infinite mass remains.
        let hi = self
            .mass
            .len()
            .checked_sub(1)
            .map_or(0.0, |i| self.loss(i).max(0.0));
        if !ok(hi) {
            return Err(Error::infeasible(
                "epsilon",
                format!(
                    "target δ = {target_delta} is below the infinite-loss mass {}",
                    self.infinite
                ),
            ));
        }
        if ok(0.0) {
            return Ok(0.0);
        }
        // Positive doubles are ordered like their bit patterns.
        let (mut lo_bits, mut hi_bits) = (0_u64, hi.to_bits());
        while hi_bits - lo_bits > 1 {
            let mid = lo_bits + (hi_bits - lo_bits) / 2;
            if ok(f64::from_bits(mid)) {
                hi_bits = mid;
            } else {
                lo_bits = mid;
            }
        }
        Ok(f64::from_bits(hi_bits))
    }

    /// Moves the low tail (total mass ≤ [`TAIL_MASS`]) up to the lowest kept loss and the high
    /// tail to the infinite-loss bucket; both only increase `δ(ε)`.
    fn truncate(&mut self) {
        let mut low = 0;
        let mut low_mass = 0.0;
        while low + 1 < self.mass.len() && low_mass + self.mass[low] <= TAIL_MASS {
            low_mass += self.mass[low];
            low += 1;
        }
        let mut high = self.mass.len();
        let mut high_mass = 0.0;
        while high > low + 1 && high_mass + self.mass[high - 1] <= TAIL_MASS {
            high_mass += self.mass[high - 1];
            high -= 1;
        }
        self.mass.truncate(high);
        self.mass.drain(..low);
        self.mass[0] += low_mass;
        self.offset += low as i64;
        self.infinite = add_up(self.infinite, high_mass * (1.0 + f64::EPSILON)).min(1.0);
    }
}

/// The loss distributions of a pair `(P, Q)` in both directions: `forward` is the loss of `P`
/// against `Q`, `backward` of `Q` against `P`.
///
/// Composing pairs composes each direction (a product pair's loss in one direction is the sum
/// of its factors' losses in that direction), and the composition is `(ε, δ)`-DP for
/// neighbours in either order with `δ` the larger of the two directions'. For an adaptive
/// composition of mechanisms, each dominated by its pair for every `α = e^ε ≥ 0` (Zhu, Dong and
/// Wang, AISTATS 2022, Theorem 10), the product of the pairs dominates the composition.
#[derive(Clone, Debug, PartialEq)]
pub struct PrivacyLossPair {
    /// The loss of `P` against `Q`.
    pub forward: PrivacyLossDistribution,
    /// The loss of `Q` against `P`.
    pub backward: PrivacyLossDistribution,
}

impl PrivacyLossPair {
    /// A pair that is its own mirror image (swapping `P` and `Q` relabels outcomes), such as
    /// [`PrivacyLossDistribution::pure`] and [`PrivacyLossDistribution::approximate`].
    pub fn symmetric(distribution: PrivacyLossDistribution) -> Self {
        Self {
            backward: distribution.clone(),
            forward: distribution,
        }
    }

    /// The dominating pair of a hockey-stick curve given on a grid, by connect-the-dots.
    ///
    /// `curve[j]` bounds `h(α) = sup H_α(M(D)‖M(D'))` from above at `α = e^{(lowest + j)·step}`
    /// (with `lowest ≤ 0`), over the mechanism's neighbouring pairs in one fixed order; for
    /// `α < 1` this is `1 − α + α·H_{1/α}` of the other order. The last entry also bounds `h` at
    /// every larger `α`, and `h(0) = 1`. Such a curve is convex in `α`, so between grid points
    /// it lies below the chord, and the piecewise-linear interpolation of the points through
    /// `(0, 1)` is itself the curve of a discrete pair with losses on the grid: on the segment
    /// ending at `α_i` its slope is `−s_i`, the outcome at loss `ln α_i` has `Q`-mass
    /// `s_i − s_{i+1}` and `P`-mass `α_i(s_i − s_{i+1})`, the last value is the mass of an
    /// infinite loss and `1 − s_first` the `Q`-mass where `P` is 0. That pair dominates the
    /// mechanism for every `α ≥ 0`.
    ///
    /// Rounding is made safe by a final check: both directions' own `δ` at every grid point
    /// are computed (rounded up), and any shortfall against `curve` is added to that
    /// direction's infinite-loss mass, which raises its `δ` at every `ε`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `step > 0` is finite, `lowest ≤ 0`, `curve` covers
    /// `α = 1` with entries in `[0, 1]` and spans at most [`MAX_GRID_POINTS`] points.
    pub fn from_curve(step: f64, lowest: i64, curve: &[f64]) -> Result<Self, Error> {
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::invalid("step", step, "a finite number > 0"));
        }
        let n = curve.len();
        if lowest > 0 || (n as i64) <= -lowest || n as u64 > MAX_GRID_POINTS {
            return Err(Error::invalid(
                "curve",
                format!("{n} points from index {lowest}"),
                format!("points covering α = 1, at most {MAX_GRID_POINTS}"),
            ));
        }
        if let Some(&bad) = curve.iter().find(|h| !(**h >= 0.0 && **h <= 1.0)) {
            return Err(Error::invalid("curve", bad, "values in [0, 1]"));
        }
        let alpha = |j: usize| ((lowest + j as i64) as f64 * step).exp();
        // slope[j]: the magnitude of the slope on the segment ending at point j (from α = 0
        // for j = 0); slope[n] = 0 beyond the last point.
        let mut slope = vec![0.0; n + 1];
        slope[0] = ((1.0 - curve[0]) / alpha(0)).clamp(0.0, 1.0);
        for j in 1..n {
            slope[j] = ((curve[j - 1] - curve[j]) / (alpha(j) - alpha(j - 1))).max(0.0);
        }
        let mut forward_mass = vec![0.0; n];
        let mut backward_mass = vec![0.0; n];
        for j in 0..n {
            let q = (slope[j] - slope[j + 1]).max(0.0);
            forward_mass[j] = alpha(j) * q;
            // The backward loss is −ln α_j, with probability Q-mass.
            backward_mass[n - 1 - j] = q;
        }
        let highest = lowest + n as i64 - 1;
        let mut pair = Self {
            forward: PrivacyLossDistribution {
                step,
                offset: lowest,
                mass: forward_mass,
                infinite: curve[n - 1],
                relative_error: 8.0 * UNIT,
            },
            backward: PrivacyLossDistribution {
                step,
                offset: -highest,
                mass: backward_mass,
                infinite: (1.0 - slope[0]).max(0.0),
                relative_error: 8.0 * UNIT,
            },
        };
        let mut forward_short = 0.0_f64;
        let mut backward_short = 0.0_f64;
        for (j, &h) in curve.iter().enumerate() {
            let index = lowest + j as i64;
            let epsilon = index as f64 * step;
            if index >= 0 {
                forward_short = forward_short.max(h - pair.forward.delta_at(epsilon));
            } else {
                // H_{1/α}(Q‖P) = (h(α) − 1 + α)/α.
                let a = alpha(j);
                let target = (h - 1.0 + a) / a;
                backward_short = backward_short.max(target - pair.backward.delta_at(-epsilon));
            }
        }
        for (distribution, short) in [
            (&mut pair.forward, forward_short),
            (&mut pair.backward, backward_short),
        ] {
            if short > 0.0 {
                distribution.infinite = add_up(distribution.infinite, short).min(1.0);
            }
        }
        Ok(pair)
    }

    /// Both directions composed with `other`'s (see [`PrivacyLossDistribution::compose`]).
    ///
    /// # Errors
    ///
    /// As [`PrivacyLossDistribution::compose`].
    pub fn compose(&self, other: &Self) -> Result<Self, Error> {
        Ok(Self {
            forward: self.forward.compose(&other.forward)?,
            backward: self.backward.compose(&other.backward)?,
        })
    }

    /// Both directions of `k ≥ 1` independent runs.
    ///
    /// # Errors
    ///
    /// As [`PrivacyLossDistribution::self_compose`].
    pub fn self_compose(&self, k: u64) -> Result<Self, Error> {
        Ok(Self {
            forward: self.forward.self_compose(k)?,
            backward: self.backward.self_compose(k)?,
        })
    }

    /// The larger of the two directions' `δ(ε)`, an upper bound.
    ///
    /// # Errors
    ///
    /// As [`PrivacyLossDistribution::delta`].
    pub fn delta(&self, epsilon: f64) -> Result<f64, Error> {
        Ok(self
            .forward
            .delta(epsilon)?
            .max(self.backward.delta(epsilon)?))
    }

    /// The larger of the two directions' `ε(δ)`, rounded up.
    ///
    /// # Errors
    ///
    /// As [`PrivacyLossDistribution::epsilon`].
    pub fn epsilon(&self, target_delta: f64) -> Result<f64, Error> {
        Ok(self
            .forward
            .epsilon(target_delta)?
            .max(self.backward.epsilon(target_delta)?))
    }
}

/// Checks a discrete pair: equal lengths, finite non-negative entries, sums of 1 within `1e-9`.
pub(crate) fn check_pair(p: &[f64], q: &[f64]) -> Result<(), Error> {
    if p.len() != q.len() {
        return Err(Error::invalid(
            "pair",
            format!("lengths {} and {}", p.len(), q.len()),
            "two vectors of the same length",
        ));
    }
    for (name, v) in [("P", p), ("Q", q)] {
        if let Some(&bad) = v.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
            return Err(Error::invalid(
                "pair",
                format!("{name} entry {bad}"),
                "finite probabilities ≥ 0",
            ));
        }
        let total: f64 = v.iter().sum();
        if (total - 1.0).abs() > 1e-9 {
            return Err(Error::invalid(
                "pair",
                format!("{name} summing to {total}"),
                "probability vectors summing to 1",
            ));
        }
    }
    Ok(())
}

/// Checks the per-round `(ε, δ, k)` of the homogeneous PLD functions.
pub(crate) fn check_pld(epsilon: f64, delta: f64, k: u64) -> Result<(), Error> {
    check_round(epsilon, delta, k)?;
    if k > MAX_PLD_ROUNDS {
        return Err(Error::invalid(
            "rounds",
            k,
            format!("at most {MAX_PLD_ROUNDS} for the PLD accountant"),
        ));
    }
    Ok(())
}

/// The `k`-fold composition of the canonical `(ε, δ)` pair, on the grid `h = ε` (so the losses
/// `±ε` are exact and only truncation and rounding separate the result from the exact curve).
fn homogeneous(epsilon: f64, delta: f64, k: u64) -> Result<PrivacyLossDistribution, Error> {
    check_pld(epsilon, delta, k)?;
    PrivacyLossDistribution::approximate(epsilon, delta, epsilon)?.self_compose(k)
}

/// The `δ` at which `k` releases, each `(ε, δ)`-DP, are jointly `(ε_total, δ)`-DP by the PLD
/// accountant (an upper bound on the optimal curve of
/// [`crate::composition::optimal_homogeneous_delta`], equal to it up to rounding).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ [0, 1)`,
/// `1 ≤ k ≤` [`MAX_PLD_ROUNDS`] and `ε_total ≥ 0` is finite.
pub fn pld_homogeneous_delta(
    epsilon: f64,
    delta: f64,
    k: u64,
    epsilon_total: f64,
) -> Result<f64, Error> {
    homogeneous(epsilon, delta, k)?.delta(epsilon_total)
}

/// The smallest `ε_total` (rounded up) at which `k` releases, each `(ε, δ)`-DP, are jointly
/// `(ε_total, target_delta)`-DP by the PLD accountant. Returns `(ε_total, target_delta)`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ [0, 1)`,
/// `1 ≤ k ≤` [`MAX_PLD_ROUNDS`] and `target_delta ∈ (0, 1)`; [`Error::Infeasible`] if
/// `target_delta` is below the infinite-loss mass `1 − (1−δ)^k`.
pub fn compose_pld_homogeneous(
    epsilon: f64,
    delta: f64,
    k: u64,
    target_delta: f64,
) -> Result<(f64, f64), Error> {
    let epsilon_total = homogeneous(epsilon, delta, k)?.epsilon(target_delta)?;
    Ok((epsilon_total, target_delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composition::{compose_optimal_homogeneous, optimal_homogeneous_delta};

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn one_round_is_the_randomized_response_curve() {
        // δ(0) of randomized response is (e^ε − 1)/(e^ε + 1).
        let eps = 0.7_f64;
        let pld = PrivacyLossDistribution::pure(eps, eps).unwrap();
        let d = pld.delta(0.0).unwrap();
        let exact = eps.exp_m1() / (eps.exp() + 1.0);
        assert!(d >= exact && rel(d, exact) < 2e-6, "{d} vs {exact}");
        assert_eq!(pld.delta(eps).unwrap().to_bits(), 0.0_f64.to_bits());
    }

    #[test]
    fn matches_the_optimal_curve_on_its_own_grid() {
        for (eps, delta, k) in [(0.5, 0.0, 10), (0.1, 1e-7, 300), (1.0, 1e-9, 1000)] {
            let pld = homogeneous(eps, delta, k).unwrap();
            for e_tot in [0.0, 0.3, 1.7, 4.0] {
                let a = pld.delta(e_tot).unwrap();
                let b = optimal_homogeneous_delta(eps, delta, k, e_tot).unwrap();
                assert!(rel(a, b) < 1e-5, "{eps} {delta} {k} {e_tot}: {a} vs {b}");
            }
            let (pe, _) = compose_pld_homogeneous(eps, delta, k, 1e-4).unwrap();
            let (oe, _) = compose_optimal_homogeneous(eps, delta, k, 1e-4).unwrap();
            assert!(rel(pe, oe) < 1e-6, "{pe} vs {oe}");
        }
    }

    #[test]
    fn a_coarse_off_grid_step_is_pessimistic() {
        // ε = 0.5 on a grid of 0.03: every +ε becomes 0.51, every −ε becomes −0.48.
        let (eps, k) = (0.5_f64, 50);
        let p = [1.0 / (1.0 + (-eps).exp()), 1.0 / (1.0 + eps.exp())];
        let q = [p[1], p[0]];
        let pld = PrivacyLossDistribution::from_pair(&p, &q, 0.03)
            .unwrap()
            .self_compose(k)
            .unwrap();
        for e_tot in [0.5, 2.0, 5.0] {
            let exact = optimal_homogeneous_delta(eps, 0.0, k, e_tot).unwrap();
            assert!(pld.delta(e_tot).unwrap() >= exact);
        }
        let e = pld.epsilon(1e-6).unwrap();
        let (exact, _) = compose_optimal_homogeneous(eps, 0.0, k, 1e-6).unwrap();
        assert!(e >= exact && e <= exact + k as f64 * 0.03, "{e} vs {exact}");
    }

    #[test]
    fn infinite_mass_composes_like_the_delta_floor() {
        let pld = homogeneous(1.0, 1e-3, 10).unwrap();
        let floor = 1.0 - (1.0 - 1e-3_f64).powi(10);
        assert!(pld.infinite_mass() >= floor && rel(pld.infinite_mass(), floor) < 1e-12);
        assert!(matches!(pld.epsilon(9e-3), Err(Error::Infeasible { .. })));
    }

    #[test]
    fn pairs_with_zero_entries() {
        // P puts 0.1 where Q has nothing: infinite loss 0.1; Q has 0.2 where P has nothing.
        let p = [0.1, 0.6, 0.3, 0.0];
        let q = [0.0, 0.3, 0.5, 0.2];
        let pld = PrivacyLossDistribution::from_pair(&p, &q, 1e-3).unwrap();
        assert!(rel(pld.infinite_mass(), 0.1) < 1e-12);
        // δ(0) = Σ (p − q)₊ = 0.1 + 0.3.
        assert!(rel(pld.delta(0.0).unwrap(), 0.4) < 2e-3);
        assert!(pld.delta(0.0).unwrap() >= 0.4);
        assert!(PrivacyLossDistribution::from_pair(&p, &q[..3], 1e-3).is_err());
        assert!(PrivacyLossDistribution::from_pair(&[0.5, 0.6], &[0.5, 0.5], 1e-3).is_err());
        assert!(PrivacyLossDistribution::from_pair(&p, &q, 0.0).is_err());
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(compose_pld_homogeneous(0.0, 0.0, 10, 1e-6).is_err());
        assert!(compose_pld_homogeneous(1.0, 0.0, 0, 1e-6).is_err());
        assert!(compose_pld_homogeneous(1.0, 0.0, MAX_PLD_ROUNDS + 1, 1e-6).is_err());
        assert!(compose_pld_homogeneous(1.0, 0.0, 10, 0.0).is_err());
        assert!(pld_homogeneous_delta(1.0, 0.0, 10, -1.0).is_err());
        let a = PrivacyLossDistribution::pure(1.0, 0.1).unwrap();
        let b = PrivacyLossDistribution::pure(1.0, 0.2).unwrap();
        assert!(a.compose(&b).is_err());
        assert!(a.self_compose(0).is_err());
    }
}
