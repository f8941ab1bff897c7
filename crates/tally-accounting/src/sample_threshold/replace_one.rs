//! The two-cell analysis of replace-one neighbours for one S&T release.
//!
//! Replacing one client's item moves it from cell A to cell B. With `k` clients in A counting
//! the changed one and `n` in B counting it, the release is the pair of thresholded counts, so
//! the pair of output distributions is `P_k ⊗ Q_n` against `Q_k ⊗ P_n`, where `P_j` is "`Bin(j,
//! p_s)` released if it reaches `τ`, else ⊥" and `Q_j` the same with `j − 1`. Swapping A and B
//! gives the other direction, so `δ = sup_{k,n} F(k, n)` covers both, with, conditioning on A's
//! output `x` and writing `ℓ(x) = ln(P_k(x)/Q_k(x))`,
//!
//! `F(k, n) = H_{e^ε}(P_k ⊗ Q_n ‖ Q_k ⊗ P_n) = Σ_x P_k(x)·H_{e^{ε−ℓ(x)}}(Q_n‖P_n)`.
//!
//! `H_α(Q_n‖P_n)` is `0` from `α = 1/(1−p_s)` on (the ratio `Q_n/P_n` never exceeds it), so only
//! the counts `v ≥ τ` of A with `ℓ > ε − ε_d`, `ε_d = ln(1/(1−p_s))`, that is `v > k·q_r` with
//! `q_r = 1 − e^{−(ε−ε_d)}(1−p_s)`, are charged, and group `k` is charged at most
//! `Pr[Bin(k,p_s) > k q_r] ≤ exp(−k D(q_r‖p_s))`, which ends the scan over `k`.
//!
//! **Bounding each left group.** With `R(α) = sup_n H_α(Q_n‖P_n)`, the removing divergence of one
//! cell, `sup_n F(k, n) ≤ U(k) = Σ_x P_k(x)·R(e^{ε−ℓ(x)})`. `R` is a supremum of functions convex
//! in `α`, hence convex: it is evaluated (rounded up) at grid points and bounded between them by
//! chords; it is the worst-case total variation at `α = 1` and `1` at `α = 0`. `U(k)` lets every
//! outcome of A pick its own worst `n`, and the chords add their own excess: it is up to 5.8
//! times the exact value on the dense grid of `tests/replace_one_vectors.rs`.
//!
//! **The exact value.** Then every joined group `n` from `τ` on is evaluated against every left
//! group whose bound could still be the largest, exactly: with `x = n(1 − α(1 − p_s))`, B's
//! outcome `w` has `Q_n(w) − α P_n(w) = b(w; n)(x − w)/(n(1 − p_s))`, so `H_α(Q_n‖P_n)` charges
//! the released counts `τ ≤ w < x` and ⊥ with `(Σ_{w<τ} b(w; n)(x − w))_+`, both read from prefix
//! sums of `b(w; n)` and `w·b(w; n)`. Now and then each left group's bound is lowered to the
//! larger of its largest value so far and a bound on all larger joined groups (Chernoff, the
//! total variation, and `R`), and a left group is dropped once its bound is within a relative
//! `10⁻³` of the largest value found. Every term evaluated is charged against a budget; when it
//! runs out, the left groups keep the bounds they have, which is safe but not tight.

use std::cell::OnceCell;

use super::SampleThresholdParams;
use super::analysis::{Charge, cutoff_divergence, ratio_cutoff, sup_over_cutoffs};
use super::loss_distribution::{removal_divergence, total_variation};
use crate::Error;
use crate::numeric::{BINOMIAL_TAIL_EXPONENT, binomial_window, delta_upper, ln_binomial_pmf};

/// Grid points of `R` over `ε ∈ [ε_d/4, ε_d)`; below `ε_d/4` the chord to `α = 1` is used, as
/// the removing divergence is slow to evaluate close to `ε = 0`.
const GRID_POINTS: u32 = 24;

/// The most group sizes scanned; a release needing more keeps the one-cell bound, so that the
/// cost stays bounded as `ε` shrinks.
const MAX_GROUPS: u64 = 4_000;

/// How the value of `R` at one grid point is obtained.
#[derive(Clone, Copy)]
enum Point {
    /// A value known in advance.
    Known(f64),
    /// `1 − α + α·sup_n H_{e^ε}(P_n‖Q_n)` at `α = e^{−ε}`.
    Adding(f64),
    /// `sup_n H_{e^ε}(Q_n‖P_n)` at `α = e^ε`.
    Removing(f64),
}

/// The chord upper bound on `R(α) = sup_n H_α(Q_n‖P_n)` through points `(α_i, R_i)`, increasing in
/// `α`, from `(0, 1)` to `(1/(1−p_s), 0)`. The values are computed when a chord first needs them.
struct RemovalCurve {
    p: f64,
    threshold: u64,
    tv: f64,
    alphas: Vec<f64>,
    points: Vec<Point>,
    values: Vec<OnceCell<f64>>,
}

impl RemovalCurve {
    fn new(p: f64, threshold: u64) -> Result<Self, Error> {
        let params = SampleThresholdParams::new(p, threshold)?;
        let tv = total_variation(&params)?;
        let removal_end = -(-p).ln_1p();
        // Each α is rounded up: its value R(α) is then at least R there, as R falls with α,
        // so every chord stays above the curve.
        let up = |alpha: f64| alpha.next_up().next_up();
        let mut grid = vec![(0.0, Point::Known(1.0))];
        // Below α = 1: R(α) = 1 − α + α·sup_n H_{1/α}(P_n‖Q_n), the adding divergence at
        // ln(1/α), on a grid of ln(1/α) from 6·ε_d down to ε_d/4.
        let step = removal_end / f64::from(GRID_POINTS);
        for j in (GRID_POINTS / 4..=6 * GRID_POINTS).rev() {
            let epsilon = step * f64::from(j);
            grid.push((up((-epsilon).exp()), Point::Adding(epsilon)));
        }
        grid.push((1.0, Point::Known(tv)));
        for j in GRID_POINTS / 4..GRID_POINTS {
            let epsilon = step * f64::from(j);
            grid.push((up(epsilon.exp()), Point::Removing(epsilon)));
        }
        grid.push((up(1.0 / (1.0 - p)), Point::Known(0.0)));
        Ok(Self {
            p,
            threshold,
            tv,
            values: grid.iter().map(|_| OnceCell::new()).collect(),
            alphas: grid.iter().map(|&(alpha, _)| alpha).collect(),
            points: grid.into_iter().map(|(_, point)| point).collect(),
        })
    }

    /// The value at grid point `index`, rounded up; a point that cannot be evaluated precisely
    /// is charged its trivial bound (`1` below `α = 1`, the total variation from it on).
    fn value(&self, index: usize) -> f64 {
        *self.values[index].get_or_init(|| match self.points[index] {
            Point::Known(value) => value,
            Point::Adding(epsilon) => {
                match sup_over_cutoffs(epsilon, self.p, self.threshold, Charge::HockeyStick) {
                    Ok(add) => {
                        let alpha = (-epsilon).exp();
                        let add = delta_upper(add).min(self.tv);
                        ((-(-epsilon).exp_m1() + alpha * add) * (1.0 + 4.0 * f64::EPSILON)).min(1.0)
                    }
                    Err(_) => 1.0,
                }
            }
            Point::Removing(epsilon) => {
                delta_upper(removal_divergence(epsilon, self.p, self.threshold)).min(self.tv)
            }
        })
    }

    /// An upper bound on `R(α)` for `α ≥ 0`.
    fn at(&self, alpha: f64) -> f64 {
        let after = self.alphas.partition_point(|&a| a <= alpha);
        if after == 0 {
            return 1.0;
        }
        if after == self.alphas.len() {
            return 0.0;
        }
        let (a0, r0) = (self.alphas[after - 1], self.value(after - 1));
        let (a1, r1) = (self.alphas[after], self.value(after));
        // The chord, rounded up by a few ulps.
        let t = ((alpha - a0) / (a1 - a0)).clamp(0.0, 1.0);
        ((r0 + (r1 - r0) * t) * (1.0 + 8.0 * f64::EPSILON)).min(r0.max(r1))
    }
}

/// The charged outcomes of the cell the client leaves, for a group of `k`: the released counts
/// `v ≥ max(τ, ⌊k q_r⌋ + 1)`, each with its probability `b(v; k, p_s)` relative to the first and
/// its `α = e^{ε − ℓ(v)}`, rounded down (every bound used falls with `α`). Terms too small to
/// matter are merged into one last term at `α = 0`, the worst.
struct LeftOutcomes {
    /// `ln b(start; k, p_s)`, the scale of the weights.
    ln_scale: f64,
    weights: Vec<f64>,
    alphas: Vec<f64>,
}

impl LeftOutcomes {
    /// `None` if no count of group `k` is charged.
    fn new(k: u64, p: f64, threshold: u64, q: f64, scale: f64) -> Option<Self> {
        // ⌊kq⌋ + 1, rounded so that it can only include more counts.
        let start =
            (((k as f64 * q) * (1.0 - 4.0 * f64::EPSILON)).floor() as u64 + 1).max(threshold);
        if start > k {
            return None;
        }
        let odds = p / (1.0 - p);
        let (mut weights, mut alphas) = (Vec::new(), Vec::new());
        let (mut relative, mut total) = (1.0, 0.0);
        for v in start..=k {
            // α = e^ε (k − v)/(k(1 − p)), rounded down.
            alphas.push((scale * (k - v) as f64 / k as f64) * (1.0 - 4.0 * f64::EPSILON));
            weights.push(relative);
            total += relative;
            relative *= (k - v) as f64 / (v + 1) as f64 * odds;
            // The terms fall from `start ≥ kp` on: the rest is at most (k − v) times the next.
            if relative <= total * 1e-16 && v < k {
                weights.push(relative * (k - v) as f64);
                alphas.push(0.0);
                break;
            }
        }
        Some(Self {
            ln_scale: ln_binomial_pmf(start, k, p),
            weights,
            alphas,
        })
    }

    /// `ln Σ_v b(v; k)·f(α_v)`.
    fn ln_mixture(&self, f: impl Fn(f64) -> f64) -> f64 {
        let sum: f64 = self
            .weights
            .iter()
            .zip(&self.alphas)
            .map(|(&w, &alpha)| w * f(alpha))
            .sum();
        self.ln_scale + sum.ln()
    }
}

/// The outcomes of the cell the client joins, for a group of `n`: the pmf of `Bin(n, p_s)` on
/// the window of [`binomial_window`] (each tail beyond holds at most `e^{−70}`), as prefix sums
/// of `b(w)` and `(w − lo)·b(w)`, from which `H_α(Q_n‖P_n)` is read for any `α`.
struct JoinedOutcomes {
    /// `n` and `n(1 − p_s)`.
    n: f64,
    n_kept: f64,
    p: f64,
    threshold: u64,
    lo: u64,
    /// `Σ_{lo ≤ w < lo + i} b(w)` at index `i`.
    mass: Vec<f64>,
    /// `Σ_{lo ≤ w < lo + i} (w − lo)·b(w)` at index `i`.
    moment: Vec<f64>,
    /// Both sums over the counts below `τ`, those that show as ⊥.
    suppressed: (f64, f64),
    /// The largest probability of `Bin(n, p_s)`, rounded up.
    mode: f64,
}

impl JoinedOutcomes {
    fn new(n: u64, p: f64, threshold: u64) -> Self {
        let (lo, hi) = binomial_window(n, p);
        let mode = (((n + 1) as f64 * p).floor() as u64).clamp(lo, hi);
        let mut pmf = vec![0.0; (hi - lo + 1) as usize];
        let at = |w: u64| (w - lo) as usize;
        pmf[at(mode)] = ln_binomial_pmf(mode, n, p).exp();
        let odds = p / (1.0 - p);
        for w in mode + 1..=hi {
            pmf[at(w)] = pmf[at(w - 1)] * (n - w + 1) as f64 / w as f64 * odds;
        }
        for w in (lo..mode).rev() {
            pmf[at(w)] = pmf[at(w + 1)] * (w + 1) as f64 / (n - w) as f64 / odds;
        }
        let (mut mass, mut moment) = (vec![0.0], vec![0.0]);
        for (i, &b) in pmf.iter().enumerate() {
            mass.push(mass[i] + b);
            moment.push(moment[i] + i as f64 * b);
        }
        let below_tau = (threshold.saturating_sub(lo) as usize).min(mass.len() - 1);
        Self {
            n: n as f64,
            n_kept: n as f64 * (1.0 - p),
            p,
            threshold,
            lo,
            suppressed: (mass[below_tau], moment[below_tau]),
            mode: pmf[at(mode)] * (1.0 + 1e-6),
            mass,
            moment,
        }
    }

    /// An upper bound on `H_α(Q_n‖P_n)`, the removing divergence of this group at `α ≥ 0`
    /// (`Q_n`: `n − 1` clients). With `x = n(1 − α(1 − p_s))`, the outcome `w` of the count has
    /// `Q_n(w) − α P_n(w) = b(w)(x − w)/(n(1 − p_s))`, so the released counts charged are `τ ≤
    /// w < x` and ⊥ is charged `(Σ_{w<τ} b(w)(x − w))_+/(n(1 − p_s))`. Each sum `Σ b(w)(x − w)`
    /// is read as `t·mass − moment` at `t = x − lo`; every pmf entry and prefix sum carries a
    /// relative error of a few ulps per term, so the difference is off by at most that much of
    /// `|t|·mass + moment`, which is added. Outside the window there is at most `e^{−70}` of mass
    /// on either side, each weighed by at most `n`, which is added too.
    fn removing(&self, alpha: f64) -> f64 {
        // x = n(1 − α(1 − p)), rounded up (the divergence grows with x).
        let x = (self.n * (1.0 - alpha * (1.0 - self.p))) * (1.0 + 4.0 * f64::EPSILON);
        let t = x - self.lo as f64;
        let error = 8.0 * self.mass.len() as f64 * f64::EPSILON;
        let (mass_tau, moment_tau) = self.suppressed;
        let bottom = t * mass_tau - moment_tau + error * (t.abs() * mass_tau + moment_tau);
        let last = x.floor() as u64;
        let released = if last >= self.threshold.max(self.lo) {
            let index = ((last + 1 - self.lo) as usize).min(self.mass.len() - 1);
            let (mass, moment) = (self.mass[index], self.moment[index]);
            t * (mass - mass_tau) - (moment - moment_tau) + error * (t.abs() * mass + moment)
        } else {
            0.0
        };
        let tails = 2.0 * self.n * (-BINOMIAL_TAIL_EXPONENT).exp();
        let numerator = bottom.max(0.0) + released.max(0.0) + tails;
        (numerator / self.n_kept * (1.0 + 4.0 * f64::EPSILON)).min(1.0)
    }
}

/// `D(q‖p_s)` at `q = 1 − α(1 − p_s)`, lowered by far more than its rounding error: `q − p_s =
/// (1 − α)(1 − p_s)` is free of cancellation, but the two terms of the divergence nearly cancel
/// close to `α = 1`.
fn kl_from_gap(alpha: f64, p: f64) -> f64 {
    let q = 1.0 - alpha * (1.0 - p);
    let gap = (1.0 - alpha) * (1.0 - p);
    let above = q * (gap / p).ln_1p();
    let below = (1.0 - q) * (-gap / (1.0 - p)).ln_1p();
    (above + below - 1e-12 * (above.abs() + below.abs())).max(0.0)
}

/// An upper bound on `sup_{n' ≥ n} H_α(Q_{n'}‖P_{n'})`, `q = 1 − α(1 − p_s)`, given the largest
/// probability `mode` of `Bin(n − 1, p_s)`, by the smaller of two bounds, both falling with `n'`:
///
/// - Chernoff. For `α ≥ 1` the charged outcomes are counts `w < n'q` (⊥ at most those of them
///   below `τ`), each charged at most `q/(1 − p_s)`, and `Pr[Bin(n', p_s) < n'q] ≤ e^{−n'
///   D(q‖p_s)}` as `q ≤ p_s`; for `α < 1` the divergence is `1 − α + α·H_{1/α}(P_{n'}‖Q_{n'})`,
///   whose charged outcomes are counts `w > n'q`, each at most `1`, with `Pr[Bin(n', p_s) > n'q]
///   ≤ e^{−n' D(q‖p_s)}` as `q > p_s`.
/// - Total variation. `H_β ≤ H_1` for `β ≥ 1`, and the total variation of group `n'` is `p_s·
///   max_{j ≥ τ−1} b(j; n'−1)` (see `total_variation`), at most `p_s·mode`: the largest
///   probability of a binomial never grows with its trials, as adding a trial mixes shifted
///   copies of the law.
fn removing_from(n: u64, alpha: f64, p: f64, mode: f64) -> f64 {
    let tail = (-(n as f64) * kl_from_gap(alpha, p)).exp() * (1.0 + 1e-12);
    let variation = p * mode * (1.0 + 1e-12);
    if alpha < 1.0 {
        (1.0 - alpha + alpha * tail.min(variation)).min(1.0)
    } else {
        (((1.0 - alpha * (1.0 - p)) / (1.0 - p)).max(0.0) * tail).min(variation)
    }
}

/// A left group in the joint scan over joined groups: its charged outcomes, the largest value
/// found so far, `ln max_{n' ≤ n} F(k, n')`, and an upper bound on `ln sup_n F(k, n)`.
struct LeftGroup {
    outcomes: LeftOutcomes,
    ln_max: f64,
    ln_bound: f64,
}

/// The exact two-cell divergence, maximised over the left groups `groups` (each starting with its
/// bound `U(k)`) and every joined group `n`, as a log, or an upper bound on it (see
/// [`two_cell_delta`]).
///
/// Groups `n < τ` never release and give `F(k, n) = Σ_v b(v; k)(1 − α_v)_+`. From `n = τ` on,
/// every joined group is evaluated against every left group still open, one `n` at a time; now
/// and then each open left group's bound is lowered to the larger of its maximum so far and the
/// bound of [`removing_from`] (capped by the curve) on all larger joined groups. A left group is
/// closed once its bound is within [`SETTLED`] of the largest value found, as the result is at
/// least that value. Each joined group costs its window plus one term per charged count of each
/// open left group, drawn from [`JOINT_BUDGET`]; when it runs out, every left group keeps the
/// bound it has, which is safe but not tight.
fn sup_over_joined(
    mut groups: Vec<LeftGroup>,
    curve: &RemovalCurve,
    p: f64,
    threshold: u64,
) -> f64 {
    let mut ln_best = groups
        .iter()
        .map(|g| g.ln_max)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut budget = JOINT_BUDGET;
    let mut n = threshold;
    let mut next_check = threshold + CHECK_EVERY;
    // The largest bound of the left groups closed so far.
    let mut ln_closed = f64::NEG_INFINITY;
    loop {
        groups.retain(|g| {
            let open = g.ln_bound > ln_best + SETTLED;
            if !open {
                ln_closed = ln_closed.max(g.ln_bound);
            }
            open
        });
        if groups.is_empty() {
            return ln_best.max(ln_closed);
        }
        let joined = JoinedOutcomes::new(n, p, threshold);
        budget = budget.saturating_sub(joined.mass.len() as u64);
        for group in &mut groups {
            budget = budget.saturating_sub(group.outcomes.weights.len() as u64);
            let ln_here = group.outcomes.ln_mixture(|alpha| joined.removing(alpha));
            group.ln_max = group.ln_max.max(ln_here);
            ln_best = ln_best.max(group.ln_max);
        }
        if n >= next_check || budget == 0 {
            next_check = n + CHECK_EVERY.max((n - threshold) / 4);
            for group in &mut groups {
                let ln_beyond = group.outcomes.ln_mixture(|alpha| {
                    removing_from(n + 1, alpha, p, joined.mode).min(curve.at(alpha))
                });
                group.ln_bound = group.ln_bound.min(group.ln_max.max(ln_beyond));
            }
            if budget == 0 {
                let ln_open = groups
                    .iter()
                    .map(|g| g.ln_bound)
                    .fold(f64::NEG_INFINITY, f64::max);
                return ln_best.max(ln_closed).max(ln_open);
            }
        }
        n += 1;
    }
}

/// How often [`sup_over_joined`] checks whether the larger joined groups can still matter.
const CHECK_EVERY: u64 = 16;

/// The relative excess (as a log) over the maximum found at which [`sup_over_joined`] stops.
const SETTLED: f64 = 1e-3;

/// The most terms (window entries and charged counts) the joint scan over joined groups may
/// evaluate in one call of [`two_cell_delta`].
const JOINT_BUDGET: u64 = 2_000_000;

/// An upper bound on the replace-one `δ` of one release at `epsilon` by the two-cell analysis
/// (see the module docs), before rounding; `None` if the scan could pass [`MAX_GROUPS`] group
/// sizes or a point of `R` cannot be evaluated precisely (the caller keeps `one_cell`, its own
/// bound).
///
/// Two passes. The first bounds every left group `k` by the curve `R` (`Σ_v b(v; k) R(α_v)`,
/// which lets each term pick its own worst joined group), until `exp(−k D(q_r‖p_s))` falls a
/// factor 1000 below the largest of these bounds, or for at most [`MAX_GROUPS`] sizes; the
/// groups beyond are charged that Chernoff bound. As the two-cell value is worth having only
/// when it is at least `one_cell/1000`, a scan that would need more than [`MAX_GROUPS`] sizes to
/// reach that is not started. The second evaluates the left groups against one joined group at
/// a time, exactly ([`sup_over_joined`]).
///
/// Requires `p ≤ 1 − e^{−ε/2}`, so that `ε − ε_d ≥ ε/2 > 0`.
pub(crate) fn two_cell_delta(epsilon: f64, p: f64, threshold: u64, one_cell: f64) -> Option<f64> {
    let removal_end = -(-p).ln_1p();
    let excess = epsilon - removal_end;
    let q = ratio_cutoff(excess, p);
    let divergence = cutoff_divergence(excess, p, q);
    let last = threshold + MAX_GROUPS;
    if divergence <= 0.0 || (1000.0 / one_cell).ln() / divergence > last as f64 {
        return None;
    }
    let curve = RemovalCurve::new(p, threshold).ok()?;
    let scale = epsilon.exp() / (1.0 - p);
    let mut groups = Vec::new();
    let mut ln_max = f64::NEG_INFINITY;
    let mut ln_beyond = None;
    for k in threshold..=last {
        if let Some(outcomes) = LeftOutcomes::new(k, p, threshold, q, scale) {
            let ln_bound = outcomes.ln_mixture(|alpha| curve.at(alpha));
            ln_max = ln_max.max(ln_bound);
            groups.push(LeftGroup {
                ln_max: outcomes.ln_mixture(|alpha| (1.0 - alpha).max(0.0)),
                ln_bound,
                outcomes,
            });
        }
        if -(k as f64) * divergence <= ln_max - SWAP_SLACK {
            ln_beyond = Some(-(k as f64) * divergence);
            break;
        }
    }
    // Every group beyond the scan is charged at most exp(−k D(q_r‖p_s)) at its last size.
    let ln_beyond = ln_beyond.unwrap_or(-(last as f64) * divergence);
    let ln_best = sup_over_joined(groups, &curve, p, threshold);
    Some(ln_best.max(ln_beyond).exp())
}

/// How far (as a log) below the largest curve bound the first pass scans left groups: the groups
/// beyond are charged their Chernoff bound, which is then far below the exact value wherever the
/// curve bound is within a factor 1000 of it (it was within 8 on every setting tried).
const SWAP_SLACK: f64 = 6.907_755_278_982_137;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::ln_binomial_pmf;

    /// `(Pr with j clients, Pr with j − 1)` of ⊥ and of every released count.
    fn outcomes(j: u64, p: f64, tau: u64) -> Vec<(f64, f64)> {
        let pmf = |v: u64, n: u64| {
            if v > n {
                0.0
            } else {
                ln_binomial_pmf(v, n, p).exp()
            }
        };
        let below = |n: u64| (0..tau).map(|v| pmf(v, n)).sum::<f64>();
        let mut rows = vec![(below(j), below(j - 1))];
        rows.extend((tau..=j).map(|v| (pmf(v, j), pmf(v, j - 1))));
        rows
    }

    /// The definition: `Σ_{x,y} (P_k(x)Q_n(y) − e^ε Q_k(x)P_n(y))_+`, pair by pair.
    fn brute_force(epsilon: f64, p: f64, tau: u64, k: u64, n: u64) -> f64 {
        let left = outcomes(k, p, tau);
        let joined = outcomes(n, p, tau);
        let scale = epsilon.exp();
        left.iter()
            .flat_map(|&(pk, qk)| {
                joined
                    .iter()
                    .map(move |&(pn, qn)| (pk * qn - scale * qk * pn).max(0.0))
            })
            .sum()
    }

    #[test]
    fn two_cell_bound_covers_every_small_pair_of_groups() {
        for (epsilon, p, tau) in [(1.5, 0.3, 3), (1.0, 0.2, 4), (2.0, 0.4, 2), (0.8, 0.15, 5)] {
            let bound = two_cell_delta(epsilon, p, tau, 1.0).unwrap();
            let mut worst = 0.0_f64;
            for k in 1..=40 {
                for n in 1..=80 {
                    worst = worst.max(brute_force(epsilon, p, tau, k, n));
                }
            }
            // Never below the enumeration, and the worst pair sits among these small groups.
            assert!(
                bound >= worst * (1.0 - 1e-9),
                "{epsilon}, {p}, {tau}: {bound} < {worst}"
            );
            assert!(
                bound <= worst * 1.01,
                "{epsilon}, {p}, {tau}: {bound} vs {worst}"
            );
        }
    }

    /// `H_α(Q_n‖P_n) = Σ_y (Q_n(y) − α P_n(y))_+`, outcome by outcome.
    fn removing_by_definition(alpha: f64, p: f64, tau: u64, n: u64) -> f64 {
        outcomes(n, p, tau)
            .iter()
            .map(|&(pn, qn)| (qn - alpha * pn).max(0.0))
            .sum()
    }

    #[test]
    fn joined_cell_reads_the_removing_divergence() {
        for (p, tau) in [(0.3, 3), (0.05, 8), (0.6, 1)] {
            for n in [1, tau, 2 * tau, 40, 157] {
                let joined = JoinedOutcomes::new(n, p, tau);
                for alpha in [0.0, 0.2, 0.7, 0.95, 1.0, 1.02, 1.2, 1.0 / (1.0 - p) - 1e-3] {
                    let exact = removing_by_definition(alpha, p, tau, n);
                    let read = joined.removing(alpha);
                    assert!(
                        read >= exact * (1.0 - 1e-12) && read <= exact * (1.0 + 1e-9) + 1e-13,
                        "p = {p}, τ = {tau}, n = {n}, α = {alpha}: {read} vs {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn bound_on_larger_joined_groups_covers_them() {
        // Every α on a grid below the cap, against every larger group up to far beyond the
        // peaks (read as in the scan, which the test above checks against the definition).
        for (p, tau) in [(0.3, 3), (0.05, 8), (0.2, 20)] {
            let cap = 1.0 / (1.0 - p);
            let larger: Vec<JoinedOutcomes> =
                (1..4000).map(|m| JoinedOutcomes::new(m, p, tau)).collect();
            for n in [tau, 60, 250] {
                let mode = larger[(n - 2) as usize].mode;
                for step in 0..40 {
                    let alpha = cap * f64::from(step) / 40.0;
                    let bound = removing_from(n, alpha, p, mode);
                    let worst = larger[(n - 1) as usize..]
                        .iter()
                        .map(|joined| joined.removing(alpha))
                        .fold(0.0, f64::max);
                    // The enumeration sums to 1 only up to rounding.
                    assert!(
                        bound >= worst * (1.0 - 1e-9),
                        "p = {p}, τ = {tau}, n = {n}, α = {alpha}: {bound} < {worst}"
                    );
                }
            }
        }
    }
}
