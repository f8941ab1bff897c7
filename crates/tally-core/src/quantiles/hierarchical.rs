//! The `β`-ary hierarchical histogram over `[0, 1]` (Bharadwaj and Cormode, AISTATS 2022, §4.2;
//! docs/algorithms.md §4.2): one sample-and-threshold histogram per level of a [`TreeShape`], from
//! which range counts, ranks and quantiles are read.
//!
//! See [`HierarchicalHistogram`] for the rounds and their privacy and
//! [`HierarchicalRelease`] for what is read from them.

use rustc_hash::{FxHashMap, FxHashSet};
use tally_accounting::Guarantee;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::SampleThresholdParams;

use super::QuantileEstimate;
use super::range::{Node, TreeShape};
use crate::Error;
use crate::histogram::{
    ReleasedCount, RoundPlan, SampleThreshold, SampleThresholdRelease,
    compose_sample_threshold_rounds,
};
use crate::task::Task;

/// The parameters of a hierarchical histogram.
#[derive(Clone, Debug)]
pub struct HierarchicalConfig {
    /// The branching factor and the number of levels.
    pub shape: TreeShape,
    /// The S&T mechanism every level runs.
    pub per_level: SampleThreshold,
    /// How the levels' guarantees compose into the total.
    pub composition: Composition,
    /// The `δ` budget of the whole release (the advanced and optimal rules spend what the
    /// levels leave of it).
    pub total_delta: f64,
}

impl HierarchicalConfig {
    /// The tree `shape` with every level running `plan`'s mechanism, composed by its rule
    /// within its `δ` budget (`plan` from [`plan_rounds`](crate::histogram::plan_rounds) over
    /// the tree's levels).
    pub fn planned(shape: TreeShape, plan: &RoundPlan) -> Self {
        Self {
            shape,
            per_level: plan.per_round.clone(),
            composition: plan.composition,
            total_delta: plan.total_delta,
        }
    }
}

/// The query of one level: report the bucket of your value at `level`.
#[derive(Clone, Debug)]
pub struct LevelQuery {
    /// The level, `1..=L`.
    pub level: u32,
    /// The tree.
    pub shape: TreeShape,
    /// The level's sample-and-threshold mechanism.
    pub mechanism: SampleThreshold,
}

impl LevelQuery {
    /// The client's report for its value `x ∈ [0, 1]`: its bucket id at this level, which it
    /// then sends through the S&T round with probability `p_s`.
    pub fn report(&self, x: f64) -> u32 {
        self.shape.bucket(self.level, x)
    }

    /// The number of bucket ids of this level, `β^level` (the S&T domain size).
    pub fn buckets(&self) -> u64 {
        self.shape.buckets(self.level)
    }
}

/// The hierarchical histogram task. Build it with [`HierarchicalHistogram::new`] and drive it
/// with [`Task`]; every level runs (the queries do not depend on earlier releases).
///
/// Level `ℓ = 1..=L` asks every client for the bucket of its value among `β^ℓ` equal buckets
/// ([`LevelQuery::report`]) and releases the S&T histogram of those bucket ids. A node's
/// estimate is `count / p_s`; a suppressed (or empty) bucket counts 0.
///
/// # Privacy
///
/// Each level is an S&T histogram with its own fresh Poisson sample, `(ε', δ')`-DP for the
/// neighbour relation of its [`SampleThreshold`] (add/remove by the S&T theorem). Every client
/// takes part in every level, so the release is the `L`-fold composition, computed by
/// [`compose_sample_threshold_rounds`] with the rule the caller chose. Range
/// counts, ranks, quantiles and the consistency post-processing read only the release, so they
/// cost nothing more, however many are asked.
#[derive(Clone, Debug)]
pub struct HierarchicalHistogram {
    config: HierarchicalConfig,
    level: u32,
    released: Vec<Vec<ReleasedCount>>,
    guarantee: Guarantee,
}

impl HierarchicalHistogram {
    /// Computes the total guarantee of the `L` levels.
    ///
    /// # Errors
    ///
    /// If the composition cannot be computed.
    pub fn new(config: HierarchicalConfig) -> Result<Self, Error> {
        let levels = config.shape.levels() as usize;
        let guarantee = compose_sample_threshold_rounds(
            &config.per_level,
            levels,
            config.composition,
            config.total_delta,
        )?;
        Ok(Self {
            config,
            level: 0,
            released: Vec::with_capacity(levels),
            guarantee,
        })
    }
}

impl Task for HierarchicalHistogram {
    type Query = LevelQuery;
    type Release = SampleThresholdRelease;
    type Output = HierarchicalRelease;

    fn next_query(&mut self) -> Option<LevelQuery> {
        if self.level == self.config.shape.levels() {
            return None;
        }
        self.level += 1;
        Some(LevelQuery {
            level: self.level,
            shape: self.config.shape,
            mechanism: self.config.per_level.clone(),
        })
    }

    /// Takes the level's released bucket counts; ids outside the level are ignored.
    fn observe(&mut self, release: SampleThresholdRelease) {
        let buckets = self.config.shape.buckets(self.level);
        let mut cells: Vec<ReleasedCount> = release
            .items
            .into_iter()
            .filter(|cell| u64::from(cell.item) < buckets)
            .collect();
        cells.sort_by_key(|cell| cell.item);
        self.released.push(cells);
    }

    fn finish(mut self) -> HierarchicalRelease {
        let levels = self.config.shape.levels() as usize;
        self.released.resize_with(levels, Vec::new);
        let estimates = self
            .released
            .iter()
            .map(|cells| {
                cells
                    .iter()
                    .map(|cell| {
                        let estimate = NodeEstimate {
                            value: cell.estimate,
                            spread: false,
                        };
                        (u64::from(cell.item), estimate)
                    })
                    .collect()
            })
            .collect();
        HierarchicalRelease {
            shape: self.config.shape,
            params: *self.config.per_level.params(),
            released: self.released,
            estimates,
            consistent: None,
            guarantee: self.guarantee,
        }
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// How [`HierarchicalRelease::consistent_with`] weighs the released estimates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConsistencyWeights {
    /// Variances proportional to the node's count, the Poisson-sampling noise of S&T.
    #[default]
    Sampling,
    /// Equal variances at every released node: Hay et al.'s setting (Laplace noise).
    Equal,
}

/// A node's value in the released tree.
#[derive(Clone, Copy, Debug)]
struct NodeEstimate {
    value: f64,
    /// Set on consistent trees for a node no part of whose subtree was released: its
    /// descendants are not stored and share its value equally.
    spread: bool,
}

/// The released hierarchical histogram: per-level S&T releases, and range counts, ranks and
/// quantiles read from them. Build it with the [`HierarchicalHistogram`] task.
///
/// * **Range counts** `[a, b)` snap both ends down to the leaf grid (`⌊a·β^L⌋/β^L`) and add the
///   estimates of the greedy decomposition into maximal nodes ([`TreeShape::decompose`]).
/// * **Ranks**: `rank(x)` is the estimated count of `[0, x)`.
/// * **Quantiles**: the `q`-quantile is a leaf boundary `j/β^L` with `rank(j−1) < q·N̂ ≤
///   rank(j)`, found by binary search over the boundaries. `N̂` is the estimated total, the sum
///   of the level-1 estimates (equal to `rank(1)`), not the population size: it is a
///   post-processing of the release, so the guarantee covers it without assuming that the
///   number of clients is public (under add/remove neighbours it is not), and it makes the
///   estimated CDF reach 1 at `x = 1`, so every `q ∈ [0, 1]` has a quantile and the
///   suppression losses of the deep levels bias ranks and total alike. The raw ranks need not
///   be monotone (each level is a fresh sample, and `[0, j)` and `[0, j+1)` decompose into
///   different nodes): the search then returns *a* crossing, which is within the same error
///   of the true quantile as the smallest one. After [`HierarchicalRelease::consistent`] the
///   ranks are monotone and the result is the smallest boundary.
///
/// Without consistency, the deepest levels are often suppressed wholesale (a leaf needs about
/// `τ/p_s` clients to show), their nodes count 0, and quantiles fall on the boundaries of the
/// deepest level that was released; the consistency post-processing spreads what a parent's
/// estimate leaves over its suppressed children, which interpolates inside such regions.
///
/// # Consistency
///
/// [`HierarchicalRelease::consistent`] post-processes the tree so that children sum to their
/// parent: the two-pass weighted least squares of Hay, Rastogi, Miklau and Suciu, "Boosting
/// the accuracy of differentially private histograms through consistency" (VLDB 2010),
/// generalised to per-node variances and to missing observations.
///
/// 1. *Up*: each node's subtree estimate `z_v` combines its own estimate `y_v` (variance
///    `V_own`) and the sum of its children's subtree estimates (variance `Σ V_c`) by inverse
///    variance; if either is missing the other is used alone.
/// 2. *Down*: the final estimate of the level-1 nodes is `z`; each node's final value `F_v` is
///    split among its children as the least-squares solution `F_c = z_c + V_c·λ` with
///    `Σ F_c = F_v` and `F_c ≥ 0` (water-filling: children driven below 0 are set to 0).
///
/// With equal variances and every node observed, these are exactly Hay et al.'s formulas
/// (`z_v = (k^i − k^{i−1})/(k^i − 1)·y_v + (k^{i−1} − 1)/(k^i − 1)·Σ z_c`, and the residual
/// split equally among the children); [`ConsistencyWeights::Equal`] does that. The default,
/// [`ConsistencyWeights::Sampling`], fits the S&T noise instead: under Poisson sampling an
/// estimate of a node holding `N` clients has variance `N(1 − p_s)/p_s`, so every complete
/// level below a node estimates its count with the same variance, independently, and the
/// upward fit of a fully released subtree is the plain average of its level sums. Variances
/// are tracked relative to the count (the common factor cancels): `V_own` is the children's
/// sum times 1, a fit's variance is its estimate times its relative factor, so the weights
/// depend on the estimates only through the children's relative sizes and never favour a low
/// observation over a high one.
///
/// A suppressed node is treated as *missing*, not as an observation of 0 (which would be
/// biased: suppression hides exactly the small counts). A node none of whose subtree was
/// released has no estimate of its own; it receives an equal share of what its parent's
/// estimate leaves over its known siblings (0 if nothing is left), spread equally over its
/// descendants, which amounts to linear interpolation across suppressed regions.
#[derive(Clone, Debug)]
pub struct HierarchicalRelease {
    shape: TreeShape,
    params: SampleThresholdParams,
    released: Vec<Vec<ReleasedCount>>,
    estimates: Vec<FxHashMap<u64, NodeEstimate>>,
    consistent: Option<ConsistencyWeights>,
    guarantee: Guarantee,
}

impl HierarchicalRelease {
    /// The tree.
    pub fn shape(&self) -> TreeShape {
        self.shape
    }

    /// The sampling rate and threshold of every level.
    pub fn params(&self) -> &SampleThresholdParams {
        &self.params
    }

    /// The guarantee of the whole release (all levels).
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// The released cells of `level` (`1..=L`), by bucket id: the raw S&T release, before any
    /// post-processing.
    ///
    /// # Panics
    ///
    /// If `level` is 0 or above `L`.
    pub fn released(&self, level: u32) -> &[ReleasedCount] {
        &self.released[level_index(self.shape, level)]
    }

    /// The weights of the consistency post-processing, if it was applied.
    pub fn consistency(&self) -> Option<ConsistencyWeights> {
        self.consistent
    }

    /// The estimated number of clients in `node`: `count / p_s` if released, 0 if suppressed;
    /// after consistency, the post-processed value.
    ///
    /// # Panics
    ///
    /// If `node` is not in the tree.
    pub fn node_estimate(&self, node: Node) -> f64 {
        assert!(self.shape.contains(node), "{node:?} is not in the tree");
        let level = level_index(self.shape, node.level);
        if let Some(estimate) = self.estimates[level].get(&node.index) {
            return estimate.value;
        }
        if self.consistent.is_none() {
            return 0.0;
        }
        // The nearest stored ancestor of a node missing from a consistent tree is one whose
        // subtree had no release; its value is shared equally.
        let beta = u64::from(self.shape.branching());
        let (mut index, mut share) = (node.index, 1.0);
        for ancestor in (0..level).rev() {
            index /= beta;
            share *= beta as f64;
            if let Some(estimate) = self.estimates[ancestor].get(&index) {
                return if estimate.spread {
                    estimate.value / share
                } else {
                    0.0
                };
            }
        }
        0.0
    }

    /// The estimated count of the leaves `[lo, hi)`: the sum of the estimates of the greedy
    /// decomposition into maximal nodes.
    ///
    /// # Panics
    ///
    /// If `hi > β^L`.
    pub fn leaf_range_count(&self, lo: u64, hi: u64) -> f64 {
        self.shape
            .decompose(lo, hi)
            .into_iter()
            .map(|node| self.node_estimate(node))
            .sum()
    }

    /// The estimated number of clients, `N̂`: the sum of the level-1 estimates (the count of
    /// the whole leaf range).
    pub fn total(&self) -> f64 {
        self.leaf_range_count(0, self.shape.leaves())
    }

    /// The estimated count of `[lo, hi)`, both ends snapped down to the leaf grid
    /// ([`TreeShape::boundary_below`]; `hi = 1` includes the value 1).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `0 ≤ lo ≤ hi ≤ 1`.
    pub fn range_count(&self, lo: f64, hi: f64) -> Result<f64, Error> {
        check_unit("lo", lo)?;
        check_unit("hi", hi)?;
        if lo > hi {
            return Err(Error::invalid("hi", hi, "a number ≥ lo"));
        }
        Ok(self.leaf_range_count(self.shape.boundary_below(lo), self.shape.boundary_below(hi)))
    }

    /// The estimated count of `[0, x)`, `x` snapped down to the leaf grid (values below 0 give
    /// 0, values above 1 the total).
    pub fn rank(&self, x: f64) -> f64 {
        self.leaf_range_count(0, self.shape.boundary_below(x))
    }

    /// The estimated `q`-quantile: a leaf boundary `j/β^L` with `rank(j−1) < q·N̂ ≤ rank(j)`
    /// (see [`HierarchicalRelease`]). `q = 0` gives 0; when nothing was released at level 1
    /// (`N̂ = 0`) every quantile is 0.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `q ∈ [0, 1]`.
    pub fn quantile(&self, q: f64) -> Result<f64, Error> {
        check_unit("quantile", q)?;
        let target = q * self.total();
        let rank_at = |j: u64| self.leaf_range_count(0, j);
        if rank_at(0) >= target {
            return Ok(0.0);
        }
        // rank(lo) < target ≤ rank(hi); rank(β^L) = N̂ ≥ q·N̂.
        let (mut lo, mut hi) = (0, self.shape.leaves());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if rank_at(mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(self.shape.boundary_point(hi))
    }

    /// [`HierarchicalRelease::quantile`] for each of `quantiles`.
    ///
    /// # Errors
    ///
    /// As [`HierarchicalRelease::quantile`].
    pub fn quantiles(&self, quantiles: &[f64]) -> Result<Vec<QuantileEstimate>, Error> {
        quantiles
            .iter()
            .map(|&quantile| {
                Ok(QuantileEstimate {
                    quantile,
                    value: self.quantile(quantile)?,
                })
            })
            .collect()
    }

    /// The consistent tree with [`ConsistencyWeights::Sampling`]; see
    /// [`HierarchicalRelease::consistent_with`].
    pub fn consistent(&self) -> Self {
        self.consistent_with(ConsistencyWeights::Sampling)
    }

    /// The tree post-processed so that every node's estimate is the sum of its children's and
    /// none is negative (see [`HierarchicalRelease`]). It reads only the raw
    /// release, so applying it to an already consistent tree starts again from the release.
    pub fn consistent_with(&self, weights: ConsistencyWeights) -> Self {
        let observed: Vec<FxHashMap<u64, f64>> = self
            .released
            .iter()
            .map(|cells| {
                cells
                    .iter()
                    .map(|cell| (u64::from(cell.item), cell.estimate))
                    .collect()
            })
            .collect();
        Self {
            estimates: least_squares(self.shape, &observed, weights),
            consistent: Some(weights),
            ..self.clone()
        }
    }
}

/// The index of `level` in per-level vectors.
fn level_index(shape: TreeShape, level: u32) -> usize {
    assert!(
        (1..=shape.levels()).contains(&level),
        "level {level} not in 1..={}",
        shape.levels()
    );
    level as usize - 1
}

fn check_unit(name: &'static str, x: f64) -> Result<(), Error> {
    if (0.0..=1.0).contains(&x) {
        Ok(())
    } else {
        Err(Error::invalid(name, x, "a number in [0, 1]"))
    }
}

/// A subtree estimate and its variance (in units of the common noise factor).
#[derive(Clone, Copy, Debug)]
struct Fit {
    estimate: f64,
    variance: f64,
}

/// The two-pass least-squares consistency of [`HierarchicalRelease`]. `observed[ℓ−1]` maps the
/// released buckets of level `ℓ` to their estimates; the result maps every node of the support
/// (released nodes and their ancestors) and every child of one to its final value.
fn least_squares(
    shape: TreeShape,
    observed: &[FxHashMap<u64, f64>],
    weights: ConsistencyWeights,
) -> Vec<FxHashMap<u64, NodeEstimate>> {
    let levels = shape.levels() as usize;
    let beta = u64::from(shape.branching());
    // Nodes with a release in their subtree, per level.
    let mut support: Vec<FxHashSet<u64>> = vec![FxHashSet::default(); levels];
    for level in (0..levels).rev() {
        let mut nodes: FxHashSet<u64> = observed[level].keys().copied().collect();
        if level + 1 < levels {
            nodes.extend(support[level + 1].iter().map(|&child| child / beta));
        }
        support[level] = nodes;
    }
    // Up: subtree fits, deepest level first.
    let mut fits: Vec<FxHashMap<u64, Fit>> = vec![FxHashMap::default(); levels];
    for level in (0..levels).rev() {
        let mut level_fits = FxHashMap::default();
        for &node in &support[level] {
            let children = if level + 1 < levels {
                (beta * node..beta * (node + 1))
                    .map(|child| fits[level + 1].get(&child).copied())
                    .try_fold((0.0, 0.0), |(sum, variance), fit: Option<Fit>| {
                        fit.map(|f| (sum + f.estimate, variance + f.variance))
                    })
            } else {
                None
            };
            let own = observed[level].get(&node).copied();
            let fit = match (own, children) {
                (Some(y), Some((sum, children_variance))) => {
                    let own_variance = match weights {
                        ConsistencyWeights::Equal => 1.0,
                        ConsistencyWeights::Sampling => sum.max(f64::MIN_POSITIVE),
                    };
                    let (a, b) = (1.0 / own_variance, 1.0 / children_variance);
                    let estimate = (a * y + b * sum) / (a + b);
                    let variance = match weights {
                        ConsistencyWeights::Equal => 1.0 / (a + b),
                        // The variance relative to the count, re-anchored on the new estimate.
                        ConsistencyWeights::Sampling => {
                            1.0 / (a + b) / sum.max(f64::MIN_POSITIVE) * estimate
                        }
                    };
                    Fit { estimate, variance }
                }
                (Some(y), None) => Fit {
                    estimate: y,
                    variance: match weights {
                        ConsistencyWeights::Equal => 1.0,
                        ConsistencyWeights::Sampling => y.max(f64::MIN_POSITIVE),
                    },
                },
                (None, Some((sum, variance))) => Fit {
                    estimate: sum,
                    variance,
                },
                (None, None) => continue,
            };
            level_fits.insert(node, fit);
        }
        fits[level] = level_fits;
    }
    // Down: the level-1 nodes are the children of a root with no observation of its own.
    let mut finals: Vec<FxHashMap<u64, NodeEstimate>> = vec![FxHashMap::default(); levels];
    let top: Vec<Option<Fit>> = (0..beta).map(|node| fits[0].get(&node).copied()).collect();
    let root: f64 = top.iter().flatten().map(|fit| fit.estimate).sum();
    for (node, value) in (0..beta).zip(split(root, &top)) {
        let spread = !support[0].contains(&node);
        finals[0].insert(node, NodeEstimate { value, spread });
    }
    for level in 0..levels - 1 {
        let (above, below) = finals.split_at_mut(level + 1);
        for &node in &support[level] {
            let parent = above[level][&node].value;
            let children: Vec<Option<Fit>> = (beta * node..beta * (node + 1))
                .map(|child| fits[level + 1].get(&child).copied())
                .collect();
            for (child, value) in (beta * node..).zip(split(parent, &children)) {
                let spread = !support[level + 1].contains(&child);
                below[0].insert(child, NodeEstimate { value, spread });
            }
        }
    }
    finals
}

/// Splits a parent's final value among its children (`None` for a child with no fit): the
/// least-squares `F_c = z_c + V_c·λ` with `Σ F_c = parent` and `F_c ≥ 0`. Children without a
/// fit share what the others leave (nothing if they leave less than nothing).
fn split(parent: f64, children: &[Option<Fit>]) -> Vec<f64> {
    let parent = parent.max(0.0);
    let known_sum: f64 = children.iter().flatten().map(|fit| fit.estimate).sum();
    let unknown = children.iter().filter(|fit| fit.is_none()).count();
    let residual = parent - known_sum;
    if unknown > 0 && residual >= 0.0 {
        let share = residual / unknown as f64;
        return children
            .iter()
            .map(|fit| fit.map_or(share, |f| f.estimate))
            .collect();
    }
    // Water-filling over the children with a fit (unknown ones, if any, get 0).
    let mut free: Vec<bool> = children.iter().map(Option::is_some).collect();
    loop {
        let (mut sum, mut variance) = (0.0, 0.0);
        for (fit, _) in children.iter().zip(&free).filter(|(_, free)| **free) {
            // Unwrap safety: only children with a fit are free.
            let fit = fit.expect("free children have a fit");
            sum += fit.estimate;
            variance += fit.variance;
        }
        if variance <= 0.0 {
            // No child left to carry the value (only when it is 0 or no child has a fit).
            let share = parent / children.len() as f64;
            return vec![share; children.len()];
        }
        let lambda = (parent - sum) / variance;
        let mut clamped = false;
        for (fit, free) in children.iter().zip(free.iter_mut()) {
            if let (true, Some(fit)) = (*free, fit)
                && fit.estimate + fit.variance * lambda < 0.0
            {
                *free = false;
                clamped = true;
            }
        }
        if !clamped {
            return children
                .iter()
                .zip(&free)
                .map(|(fit, &free)| match (free, fit) {
                    (true, Some(fit)) => fit.estimate + fit.variance * lambda,
                    _ => 0.0,
                })
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn random_observations(
        shape: TreeShape,
        keep: f64,
        rng: &mut ChaCha8Rng,
    ) -> Vec<FxHashMap<u64, f64>> {
        (1..=shape.levels())
            .map(|level| {
                let scale = (shape.leaves() / shape.buckets(level)) as f64;
                let mut nodes = FxHashMap::default();
                for node in 0..shape.buckets(level) {
                    let kept = (rng.next_u64() as f64 / u64::MAX as f64) < keep;
                    let value = scale * (0.5 + rng.next_u64() as f64 / u64::MAX as f64);
                    if kept {
                        nodes.insert(node, value);
                    }
                }
                nodes
            })
            .collect()
    }

    fn release_from(shape: TreeShape, observed: &[FxHashMap<u64, f64>]) -> HierarchicalRelease {
        let params = SampleThresholdParams::new(0.5, 1).unwrap();
        let released: Vec<Vec<ReleasedCount>> = observed
            .iter()
            .map(|level| {
                let mut cells: Vec<ReleasedCount> = level
                    .iter()
                    .map(|(&node, &estimate)| ReleasedCount {
                        item: u32::try_from(node).unwrap(),
                        count: 1,
                        estimate,
                    })
                    .collect();
                cells.sort_by_key(|c| c.item);
                cells
            })
            .collect();
        let estimates = observed
            .iter()
            .map(|level| {
                level
                    .iter()
                    .map(|(&node, &value)| {
                        (
                            node,
                            NodeEstimate {
                                value,
                                spread: false,
                            },
                        )
                    })
                    .collect()
            })
            .collect();
        HierarchicalRelease {
            shape,
            params,
            released,
            estimates,
            consistent: None,
            guarantee: Guarantee {
                epsilon: 1.0,
                delta: 0.0,
                neighbours: tally_accounting::Neighbours::AddRemove,
                model: tally_accounting::TrustModel::Central,
                analysis: "test".into(),
            },
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Property (seeded, 200 random trees per weighting): after the post-processing every node
    /// is the sum of its children, no node is negative, and ranks are monotone.
    #[test]
    fn consistent_trees_sum_and_are_nonnegative() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for case in 0..400 {
            let beta = 2 + (rng.next_u64() % 4) as u32;
            let levels = 1 + (rng.next_u64() % 4) as u32;
            let shape = TreeShape::new(beta, levels).unwrap();
            let keep = [0.0, 0.2, 0.6, 1.0][(rng.next_u64() % 4) as usize];
            let observed = random_observations(shape, keep, &mut rng);
            let weights = if case % 2 == 0 {
                ConsistencyWeights::Sampling
            } else {
                ConsistencyWeights::Equal
            };
            let tree = release_from(shape, &observed).consistent_with(weights);
            for level in 1..=levels {
                for index in 0..shape.buckets(level) {
                    let node = Node { level, index };
                    let value = tree.node_estimate(node);
                    assert!(value >= 0.0, "case {case}: {node:?} = {value}");
                    if level < levels {
                        let children: f64 = (index * u64::from(beta)
                            ..(index + 1) * u64::from(beta))
                            .map(|index| {
                                tree.node_estimate(Node {
                                    level: level + 1,
                                    index,
                                })
                            })
                            .sum();
                        assert!(close(children, value), "case {case}: {node:?}");
                    }
                }
            }
            let mut previous = 0.0f64;
            for j in 0..=shape.leaves() {
                let rank = tree.leaf_range_count(0, j);
                assert!(rank >= previous - 1e-9 * previous.max(1.0), "case {case}");
                previous = rank;
            }
            assert!(close(previous, tree.total()));
        }
    }

    #[test]
    fn equal_weights_on_a_complete_tree_are_hays_formulas() {
        // Hay et al. (VLDB 2010), Theorem 3, on each level-1 subtree (there is no root
        // observation here, so the subtrees are independent).
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let shape = TreeShape::new(3, 3).unwrap();
        let observed = random_observations(shape, 1.0, &mut rng);
        let tree = release_from(shape, &observed).consistent_with(ConsistencyWeights::Equal);
        let k = 3.0f64;
        let y = |level: u32, index: u64| observed[level as usize - 1][&index];
        // Bottom-up z with heights i = 1 (leaves) … 3 (level 1).
        let mut z: Vec<Vec<f64>> = vec![Vec::new(); 4];
        z[3] = (0..27).map(|i| y(3, i)).collect();
        for level in (1..=2u32).rev() {
            let i = f64::from(4 - level);
            z[level as usize] = (0..shape.buckets(level))
                .map(|v| {
                    let children: f64 = (3 * v..3 * v + 3)
                        .map(|c| z[level as usize + 1][c as usize])
                        .sum();
                    (k.powf(i) - k.powf(i - 1.0)) / (k.powf(i) - 1.0) * y(level, v)
                        + (k.powf(i - 1.0) - 1.0) / (k.powf(i) - 1.0) * children
                })
                .collect();
        }
        // Top-down: h̄ = z at the subtree roots, then h̄_u = z_u + (h̄_v − Σ z_children)/k.
        let mut h: Vec<Vec<f64>> = vec![Vec::new(); 4];
        h[1] = z[1].clone();
        for level in 2..=3usize {
            h[level] = (0..z[level].len())
                .map(|u| {
                    let v = u / 3;
                    let siblings: f64 = (3 * v..3 * v + 3).map(|c| z[level][c]).sum();
                    z[level][u] + (h[level - 1][v] - siblings) / k
                })
                .collect();
        }
        for level in 1..=3u32 {
            for index in 0..shape.buckets(level) {
                let got = tree.node_estimate(Node { level, index });
                let want = h[level as usize][index as usize];
                assert!(close(got, want), "({level}, {index}): {got} vs {want}");
            }
        }
    }

    #[test]
    fn sampling_weights_average_the_levels_of_a_complete_subtree() {
        // Under sampling weights every complete level of a subtree estimates the subtree's
        // count with the same variance, so a node's upward fit is the plain average of the
        // level sums below it.
        let shape = TreeShape::new(2, 3).unwrap();
        let observed: Vec<FxHashMap<u64, f64>> = vec![
            [(0, 100.0), (1, 60.0)].into_iter().collect(),
            [(0, 40.0), (1, 50.0), (2, 30.0), (3, 30.0)]
                .into_iter()
                .collect(),
            (0..8).map(|i| (i, 10.0 + i as f64)).collect(),
        ];
        let fits_root = least_squares(shape, &observed, ConsistencyWeights::Sampling);
        // Level-1 node 0: levels give 100, 40 + 50 = 90 and 10 + 11 + 12 + 13 = 46.
        let want = (100.0 + 90.0 + 46.0) / 3.0;
        assert!(
            close(fits_root[0][&0].value, want),
            "{}",
            fits_root[0][&0].value
        );
    }

    #[test]
    fn suppressed_regions_share_the_parents_residual() {
        let shape = TreeShape::new(2, 2).unwrap();
        // Level 1: both buckets; level 2: only bucket 0 of the left half.
        let observed: Vec<FxHashMap<u64, f64>> = vec![
            [(0, 100.0), (1, 50.0)].into_iter().collect(),
            [(0, 70.0)].into_iter().collect(),
        ];
        let tree = release_from(shape, &observed).consistent();
        let at = |level, index| tree.node_estimate(Node { level, index });
        assert!(close(at(1, 0), 100.0));
        assert!(close(at(2, 0), 70.0));
        assert!(close(at(2, 1), 30.0));
        // Nothing was released below bucket 1: its value spreads equally.
        assert!(close(at(2, 2), 25.0));
        assert!(close(at(2, 3), 25.0));
        // A child above its parent is clamped back to it.
        let observed: Vec<FxHashMap<u64, f64>> = vec![
            [(0, 50.0), (1, 50.0)].into_iter().collect(),
            [(0, 80.0)].into_iter().collect(),
        ];
        let tree = release_from(shape, &observed).consistent();
        let at = |level, index| tree.node_estimate(Node { level, index });
        assert!(close(at(2, 0) + at(2, 1), at(1, 0)));
        assert!(close(at(2, 1), 0.0));
    }

    #[test]
    fn raw_ranges_and_quantiles() {
        let shape = TreeShape::new(2, 2).unwrap();
        let observed: Vec<FxHashMap<u64, f64>> = vec![
            [(0, 100.0), (1, 100.0)].into_iter().collect(),
            [(0, 20.0), (2, 60.0), (3, 40.0)].into_iter().collect(),
        ];
        let tree = release_from(shape, &observed);
        assert!(close(tree.total(), 200.0));
        assert!(close(tree.rank(0.25), 20.0));
        assert!(close(tree.rank(0.5), 100.0));
        assert!(close(tree.rank(0.75), 160.0));
        assert!(close(tree.rank(1.0), 200.0));
        assert!(close(tree.range_count(0.25, 0.75).unwrap(), 60.0));
        // [0.2, 0.8) snaps to [0, 0.75).
        assert!(close(tree.range_count(0.2, 0.8).unwrap(), 160.0));
        assert!(tree.range_count(0.6, 0.5).is_err());
        assert!(tree.range_count(-0.1, 0.5).is_err());
        assert_eq!(tree.quantile(0.0).unwrap().to_bits(), 0.0_f64.to_bits());
        assert_eq!(tree.quantile(0.1).unwrap().to_bits(), 0.25_f64.to_bits());
        assert_eq!(tree.quantile(0.5).unwrap().to_bits(), 0.5_f64.to_bits());
        assert_eq!(tree.quantile(0.51).unwrap().to_bits(), 0.75_f64.to_bits());
        assert_eq!(tree.quantile(1.0).unwrap().to_bits(), 1.0_f64.to_bits());
        assert!(tree.quantile(1.5).is_err());
        assert!(tree.quantile(f64::NAN).is_err());
        let estimates = tree.quantiles(&[0.1, 0.9]).unwrap();
        assert_eq!(estimates[1].value.to_bits(), 1.0_f64.to_bits());
        // Appendix A item 12 on the consistent tree: z_4 = total − y_{1,1} − y_{2,3}.
        let consistent = tree.consistent();
        let at = |level, index| consistent.node_estimate(Node { level, index });
        assert!(close(at(2, 3), consistent.total() - at(1, 0) - at(2, 2)));
    }
}
