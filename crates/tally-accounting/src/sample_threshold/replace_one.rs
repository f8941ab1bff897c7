//! The two-cell analysis of replace-one neighbours for one S&T release.
//!
//! Replacing one client's item moves it from cell A to cell B. With `k` clients in A counting
//! the changed one and `n` in B counting it, the release is the pair of thresholded counts, so
//! the pair of output distributions is `P_k ⊗ Q_n` against `Q_k ⊗ P_n`, where `P_j` is "`Bin(j,
//! p_s)` released if it reaches `τ`, else ⊥" and `Q_j` the same with `j − 1`. Conditioning on
//! A's output `x`, with `ℓ(x) = ln(P_k(x)/Q_k(x))`,
//!
//! `H_{e^ε}(P_k ⊗ Q_n ‖ Q_k ⊗ P_n) = Σ_x P_k(x)·H_{e^{ε−ℓ(x)}}(Q_n‖P_n)
//!   ≤ Σ_x P_k(x)·R(e^{ε−ℓ(x)})`,
//!
//! with `R(α) = sup_n H_α(Q_n‖P_n)`, the removing divergence of one cell. Swapping A and B gives
//! the other direction, so the supremum over `k` of the right-hand side bounds both. `R` is a
//! supremum of functions convex in `α`, hence convex: it is evaluated (rounded up) at grid points
//! and bounded between them by chords. It is `0` from `α = 1/(1−p_s)` on (the ratio `Q_n/P_n`
//! never exceeds it), the worst-case total variation at `α = 1` and `1` at `α = 0`. So only the
//! counts `v ≥ τ` of A with `ℓ > ε − ε_d`, `ε_d = ln(1/(1−p_s))`, that is `v > k·q_r` with `q_r =
//! 1 − e^{−(ε−ε_d)}(1−p_s)`, are charged, and every `k` is charged at most `Pr[Bin(k,p_s) >
//! k q_r] ≤ exp(−k D(q_r‖p_s))`, which ends the scan over `k`.

use std::cell::OnceCell;

use super::SampleThresholdParams;
use super::analysis::{Charge, cutoff_divergence, ratio_cutoff, sup_over_cutoffs};
use super::loss_distribution::{removal_divergence, total_variation};
use crate::Error;
use crate::numeric::{delta_upper, ln_upper_tail_weighted};

/// Grid points of `R` over `ε ∈ [ε_d/4, ε_d)`; below `ε_d/4` the chord to `α = 1` is used, as
/// the removing divergence is slow to evaluate close to `ε = 0`.
const GRID_POINTS: u32 = 12;

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

/// An upper bound on the replace-one `δ` of one release at `epsilon` by the two-cell analysis
/// (see the module docs), before rounding; `None` if the scan could pass [`MAX_GROUPS`] group
/// sizes or a point of `R` cannot be evaluated precisely (the caller keeps `one_cell`, its own
/// bound). The scan ends once `exp(−k D(q_r‖p_s))` falls below the largest charge; as that is
/// at least `one_cell/1000` whenever the two-cell value is worth having, a scan that would need
/// more than [`MAX_GROUPS`] sizes to reach `one_cell/1000` is not started.
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
    let mut ln_max = f64::NEG_INFINITY;
    for k in threshold..=last {
        // ⌊kq⌋ + 1, rounded so that it can only include more counts.
        let start = ((k as f64 * q) * (1.0 - 4.0 * f64::EPSILON)).floor() as u64 + 1;
        let ln_term = ln_upper_tail_weighted(start.max(threshold), k, p, |v| {
            // α = e^{ε − ℓ(v)} = e^ε (k − v)/(k(1 − p)), rounded down (R falls with α).
            let alpha = (scale * (k - v) as f64 / k as f64) * (1.0 - 4.0 * f64::EPSILON);
            curve.at(alpha)
        });
        ln_max = ln_max.max(ln_term);
        if -(k as f64) * divergence <= ln_max {
            return Some(ln_max.exp());
        }
    }
    None
}

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
}
