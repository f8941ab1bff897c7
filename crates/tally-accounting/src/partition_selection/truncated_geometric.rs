//! The optimal partition selection for one item per client (Desfontaines, Voss, Gipson and
//! Mandayam, "Differentially private partition selection", PoPETs 2022, Theorem 1), with
//! probabilities that an exact coin can flip.
//!
//! The theorem: for `(ε, δ)` and one item per client, the selection that releases an item of
//! `n` clients with probability
//!
//! * `π_n = δ·(e^{nε} − 1)/(e^ε − 1)` for `n ≤ n₁`,
//! * `π_n = 1 − e^{−(n−n₁)ε}·(1 − π_{n₁}) + δ·(1 − e^{−(n−n₁)ε})/(e^ε − 1)` for
//!   `n₁ < n ≤ n₂`, and 1 beyond,
//!
//! with `n₁ = 1 + ⌊ln(1 + tanh(ε/2)·(1/δ − 1))/ε⌋` and
//! `n₂ = n₁ + ⌊ln(1 + (e^ε − 1)(1 − π_{n₁})/δ)/ε⌋`, is `(ε, δ)`-DP under add/remove
//! neighbours and releases every item with the largest probability any such selection can.
//! It is the greedy solution of the constraints between neighbouring counts,
//! `π_{n+1} ≤ e^ε·π_n + δ` and `1 − π_n ≤ e^ε·(1 − π_{n+1}) + δ` with `π_0 = 0`:
//! `π_{n+1} = min(e^ε·π_n + δ, 1 − e^{−ε}(1 − π_n − δ), 1)`, the first bound binding while
//! `π_n ≤ (1 − δ)/(1 + e^ε)`.
//!
//! Here the table is built by that recurrence with each `π_n` rounded down to a double whose
//! two constraints against `π_{n−1}` are checked with a rigorous bound on the rounding, so a
//! coin of exactly that probability ([`crate::partition_selection`]'s exact sampler in
//! `tally-core`) keeps the guarantee, and the realized `δ` is recomputed from the table.

use super::{changed_counts, check_max_items};
use crate::composition::{MAX_OPTIMAL_ROUNDS, optimal_homogeneous_delta};
use crate::sample_threshold::{check_delta, check_epsilon};
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// The longest table of release probabilities (counts below which release is not certain).
pub const MAX_TABLE: usize = 1 << 22;

/// The per-count budgets the calibration tries for several changed counts: `ε/c·c^(i/23)`.
const EPSILON_STEPS: u32 = 24;

/// The unit roundoff of `f64`.
const UNIT: f64 = f64::EPSILON / 2.0;

/// The truncated-geometric selection: an item held by `c ≥ 1` clients is released with
/// probability `π_c` (its key only, no count).
///
/// # Privacy
///
/// Central model. Each item's coin depends on its own count only, so one client changes the
/// coins of the `k` (add/remove) or `2k` (replace-one) items it touches, each a pair of
/// Bernoulli laws `(π_{n+1}, π_n)` that the table makes `(ε_c, δ_c)`-DP. For one changed item
/// (`k = 1`, add/remove) that is the whole guarantee, `(ε, δ_c)` with `δ_c` the table's exact
/// maximum, at most `δ` (Theorem 1). For `c > 1` changed items the guarantee is the optimal
/// composition of `c` `(ε_c, δ_c)`-DP mechanisms (Kairouz, Oh and Viswanath 2015, Thm 3.3),
/// tight over all such mechanisms, with `ε_c` chosen between `ε/c` and `ε` to release items
/// of the fewest clients; at `ε_c = ε/c` it is the split PipelineDP and Google's library use
/// (`ε/k` and `1 − (1 − δ)^{1/k}`).
#[derive(Clone, Debug, PartialEq)]
pub struct TruncatedGeometricSelection {
    cell_epsilon: f64,
    cell_delta: f64,
    table: Vec<f64>,
    max_items: u32,
    guarantee: Guarantee,
}

impl TruncatedGeometricSelection {
    /// Calibrates for `(epsilon, delta)` (see the type's documentation).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `epsilon` is finite and positive, `delta ∈ (0, 1)`
    /// and `1 ≤ max_items ≤` [`super::MAX_ITEMS_PER_CLIENT`]; [`Error::Infeasible`] if the
    /// table would need more than [`MAX_TABLE`] counts (a tiny `ε/k`).
    pub fn calibrate(
        epsilon: f64,
        delta: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        check_epsilon(epsilon)?;
        check_delta(delta)?;
        let k = check_max_items(max_items)?;
        let cells = changed_counts(k, neighbours);
        if cells == 1 {
            let table = build_table(epsilon, delta)?;
            return Self::with_table(epsilon, delta, table, epsilon, max_items, neighbours);
        }
        let mut best: Option<(u64, f64, f64, Vec<f64>)> = None;
        for step in 0..EPSILON_STEPS {
            let cell_epsilon = epsilon / cells as f64
                * (cells as f64).powf(f64::from(step) / f64::from(EPSILON_STEPS - 1));
            let Some(cell_delta) = largest_cell_delta(cell_epsilon, cells, epsilon, delta)? else {
                continue;
            };
            let table = build_table(cell_epsilon, cell_delta)?;
            let half = half_point(&table);
            if best.as_ref().is_none_or(|(h, ..)| half < *h) {
                best = Some((half, cell_epsilon, cell_delta, table));
            }
        }
        let (_, cell_epsilon, cell_delta, table) = best.ok_or_else(|| {
            Error::infeasible("per-item budget", "no per-item (ε, δ) composes within δ")
        })?;
        Self::with_table(
            cell_epsilon,
            cell_delta,
            table,
            epsilon,
            max_items,
            neighbours,
        )
    }

    /// The selection of the table for `(cell_epsilon, cell_delta)` with its guarantee at
    /// `epsilon`.
    fn with_table(
        cell_epsilon: f64,
        cell_delta: f64,
        table: Vec<f64>,
        epsilon: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        let k = u64::from(max_items);
        let cells = changed_counts(k, neighbours);
        let realized = table_delta(&table, cell_epsilon);
        let (delta, how) = if cells == 1 {
            (
                realized,
                "exact δ (Desfontaines et al. 2022, Thm 1)".to_owned(),
            )
        } else {
            (
                optimal_homogeneous_delta(cell_epsilon, realized, cells, epsilon)?,
                format!(
                    "each of {cells} changed items ({cell_epsilon}, {realized})-DP, optimal \
                     composition (Kairouz et al. 2015, Thm 3.3)"
                ),
            )
        };
        Ok(Self {
            cell_epsilon,
            cell_delta,
            max_items,
            guarantee: Guarantee {
                epsilon,
                delta,
                neighbours,
                model: TrustModel::Central,
                analysis: format!(
                    "truncated-geometric partition selection, at most {k} item(s) per client: \
                     {how}"
                ),
            },
            table,
        })
    }

    /// The per-item budget `(ε_c, δ_c)` the table was built for.
    pub fn cell_budget(&self) -> (f64, f64) {
        (self.cell_epsilon, self.cell_delta)
    }

    /// The release probabilities `π_0 = 0, π_1, …` below the first count released surely
    /// (every later count has `π = 1`); each is a double, flipped exactly.
    pub fn table(&self) -> &[f64] {
        &self.table
    }

    /// The contribution bound `k`.
    pub fn max_items(&self) -> u32 {
        self.max_items
    }

    /// The guarantee at the requested `ε`.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// `π_c`; 0 for `c = 0`.
    pub fn release_probability(&self, count: u64) -> f64 {
        usize::try_from(count)
            .ok()
            .and_then(|c| self.table.get(c))
            .copied()
            .unwrap_or(1.0)
    }
}

/// An upper bound on the `δ` at `e^ε` between `Ber(a)` and `Ber(b)`, `a ≥ b`, in both
/// directions: `a − e^ε·b` (releasing, the only positive term of `Ber(a)` against `Ber(b)`) and
/// `(1 − b) − e^ε·(1 − a)` (not releasing, the only one of `Ber(b)` against `Ber(a)`), each
/// plus a bound on its rounding, and 0.
fn pair_delta(a: f64, b: f64, epsilon: f64) -> f64 {
    let growth = epsilon.exp();
    // `e^ε` and each product and difference round once (relative `u`); `1 − a` and `1 − b`
    // round by at most `u` each, which `e^ε` can scale.
    let raised = a - growth * b + 4.0 * UNIT * (a + growth * b);
    let (stay, leave) = (1.0 - b, 1.0 - a);
    let dropped =
        stay - growth * leave + 4.0 * UNIT * (stay + growth * leave) + 2.0 * UNIT * (1.0 + growth);
    raised.max(dropped).max(0.0)
}

/// The table for `(ε, δ)`: Theorem 1's recurrence, each value rounded down until its pair
/// with the previous one checks within `δ`, up to the first 1.
fn build_table(epsilon: f64, delta: f64) -> Result<Vec<f64>, Error> {
    let growth = epsilon.exp();
    let decay = (-epsilon).exp();
    let mut table = vec![0.0];
    let mut last = 0.0_f64;
    while last < 1.0 {
        if table.len() >= MAX_TABLE {
            return Err(Error::infeasible(
                "release table",
                format!(
                    "at ε = {epsilon} more than {MAX_TABLE} counts are released with probability \
                     below 1; raise ε (or lower the items per client) or use laplace-threshold"
                ),
            ));
        }
        let mut next = (growth * last + delta)
            .min(1.0 - decay * (1.0 - last - delta))
            .min(1.0);
        // Lowering `next` by the excess lowers both terms by at least as much.
        loop {
            let excess = pair_delta(next, last, epsilon) - delta;
            if excess <= 0.0 || next <= last {
                break;
            }
            next = (next - excess).next_down().max(last);
        }
        if next <= last {
            return Err(Error::infeasible(
                "release table",
                format!("δ = {delta} is too small for the rounding of the table at ε = {epsilon}"),
            ));
        }
        table.push(next);
        last = next;
    }
    table.pop();
    Ok(table)
}

/// The realized `δ` of a table at `ε`: the largest pair `δ` between neighbouring counts,
/// including the last entry against a certain release ([`pair_delta`] already bounds the
/// rounding).
fn table_delta(table: &[f64], epsilon: f64) -> f64 {
    table
        .windows(2)
        .map(|pair| pair_delta(pair[1], pair[0], epsilon))
        .chain(table.last().map(|&last| pair_delta(1.0, last, epsilon)))
        .fold(0.0, f64::max)
}

/// The first count released with probability at least ½.
fn half_point(table: &[f64]) -> u64 {
    table.iter().position(|&p| p >= 0.5).unwrap_or(table.len()) as u64
}

/// The largest per-item `δ_c ≤ δ` (bisection on the doubles) whose `cells`-fold optimal
/// composition at `epsilon` is within `delta`, or `None` if none is.
fn largest_cell_delta(
    cell_epsilon: f64,
    cells: u64,
    epsilon: f64,
    delta: f64,
) -> Result<Option<f64>, Error> {
    if cells > MAX_OPTIMAL_ROUNDS {
        return Err(Error::invalid(
            "changed items",
            cells,
            format!("at most {MAX_OPTIMAL_ROUNDS}"),
        ));
    }
    let meets = |d: f64| -> Result<bool, Error> {
        Ok(optimal_homogeneous_delta(cell_epsilon, d, cells, epsilon)? <= delta)
    };
    if !meets(f64::MIN_POSITIVE)? {
        return Ok(None);
    }
    let (mut lo, mut hi) = (f64::MIN_POSITIVE.to_bits(), delta.to_bits());
    if meets(delta)? {
        return Ok(Some(delta));
    }
    // Invariant: `lo` meets the target, `hi` does not; positive doubles order like their bits.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(f64::from_bits(mid))? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(f64::from_bits(lo)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Theorem 1's closed form, transcribed.
    fn theorem_one(epsilon: f64, delta: f64, n: u64) -> f64 {
        let n1 =
            1.0 + ((1.0 + (epsilon / 2.0).tanh() * (1.0 / delta - 1.0)).ln() / epsilon).floor();
        let first = |n: f64| delta * (n * epsilon).exp_m1() / epsilon.exp_m1();
        let at_n1 = first(n1);
        let n2 = n1 + ((epsilon.exp_m1() * (1.0 - at_n1) / delta).ln_1p() / epsilon).floor();
        let n = n as f64;
        if n == 0.0 {
            0.0
        } else if n <= n1 {
            first(n)
        } else if n <= n2 {
            let m = n - n1;
            1.0 - (-m * epsilon).exp() * (1.0 - at_n1)
                - delta * (-m * epsilon).exp_m1() / epsilon.exp_m1()
        } else {
            1.0
        }
    }

    #[test]
    fn the_table_is_theorem_one_rounded_down() {
        for (epsilon, delta) in [(1.0, 1e-8), (0.5, 1e-6), (2.0, 1e-10), (0.1, 1e-5)] {
            let selection =
                TruncatedGeometricSelection::calibrate(epsilon, delta, 1, Neighbours::AddRemove)
                    .unwrap();
            let table = selection.table();
            for (n, &p) in table.iter().enumerate() {
                let exact = theorem_one(epsilon, delta, n as u64);
                assert!(
                    p <= exact * (1.0 + 1e-12),
                    "{epsilon} {delta} {n}: {p} > {exact}"
                );
                assert!(
                    p >= exact * (1.0 - 1e-9) - 1e-14,
                    "{epsilon} {delta} {n}: {p} ≪ {exact}"
                );
            }
            assert!(theorem_one(epsilon, delta, table.len() as u64) >= 1.0);
            let g = selection.guarantee();
            assert!(g.delta <= delta && g.delta >= delta * (1.0 - 1e-6), "{g:?}");
        }
    }

    #[test]
    fn several_items_compose_no_worse_than_the_even_split() {
        let k = 4;
        let selection =
            TruncatedGeometricSelection::calibrate(1.0, 1e-8, k, Neighbours::AddRemove).unwrap();
        assert!(selection.guarantee().delta <= 1e-8);
        let even = -((-1e-8_f64).ln_1p() / f64::from(k)).exp_m1();
        let split = build_table(1.0 / f64::from(k), even).unwrap();
        assert!(half_point(selection.table()) <= half_point(&split));
        let (cell_epsilon, _) = selection.cell_budget();
        assert!(cell_epsilon >= 0.25 * (1.0 - 1e-12), "{cell_epsilon}");
    }
}
