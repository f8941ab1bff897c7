//! Quantiles through the range query tree: Appendix E of Ghazi, Golowich, Kumar, Pagh and
//! Velingker (arXiv 1908.11358v4; docs/algorithms.md §5.7).
//!
//! Values `x ∈ [0, 1]` are mapped to `B` buckets `I_j = [(j−1)/B, j/B]` (0-indexed bucket
//! `min(⌊x·B⌋, B−1)`), the one-dimensional [`RangeRound`] runs once, and any `q`-quantile is
//! answered from its prefix counts as `j*/B`, where `j*` is the smallest `j ∈ 1…B` whose
//! estimated count of `I_1 ∪ … ∪ I_j` is at least `q·n` (`j* = B` if none is), `n` being the
//! public number of users. The median is `q = 1/2` (the M-estimator of Appendix E); Remark
//! E.1's `k`-th `q'`-quantile is `q = k/q'`. The error is `n/B` from the bucketing plus the
//! range tree's error.

use tally_accounting::{Collusion, Guarantee};

use super::number_tree::unit_leaf;
use super::range_tree::{RangeCounts, RangeRound};
use super::set_oracle::SetOracleRound;
use crate::Error;
use crate::histogram::MessageCost;

/// The quantile protocol of Appendix E over `2^domain_bits` buckets: one [`RangeRound`] in
/// which each device holds the bucket of its value ([`bucket`](Self::bucket)).
///
/// # Privacy
///
/// The range tree's guarantee ([`RangeRound`]): one round of its frequency oracle, `(ε, δ)`-DP
/// in the shuffle model for replace-one neighbours. Any number of quantiles are read from the
/// one release (post-processing).
#[derive(Clone, Debug)]
pub struct ShuffleQuantiles<O: SetOracleRound> {
    tree: RangeRound<O>,
    users: u64,
}

impl<O: SetOracleRound> ShuffleQuantiles<O> {
    /// The protocol on a one-dimensional range tree calibrated for `users` devices.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the tree has more than one dimension.
    pub fn new(tree: RangeRound<O>, users: u64) -> Result<Self, Error> {
        if tree.dims() != 1 {
            return Err(Error::invalid(
                "range tree dimensions",
                tree.dims(),
                "a one-dimensional tree",
            ));
        }
        Ok(Self { tree, users })
    }

    /// The round devices answer, each with the bucket of its value.
    pub fn tree(&self) -> &RangeRound<O> {
        &self.tree
    }

    /// The bucket of a value in `[0, 1]`: `min(⌊x·B⌋, B−1)`.
    ///
    /// # Panics
    ///
    /// If `x` is not in `[0, 1]`.
    pub fn bucket(&self, x: f64) -> u32 {
        assert!((0.0..=1.0).contains(&x), "value {x} is outside [0, 1]");
        unit_leaf(x, self.tree.domain())
    }

    /// The guarantee of the release.
    pub fn guarantee(&self) -> &Guarantee {
        self.tree.guarantee()
    }

    /// The guarantee of the release when a fraction `colluding_fraction` of the devices
    /// colludes with the analyst: the tree's ([`RangeRound::collusion`]).
    ///
    /// # Errors
    ///
    /// As [`RangeRound::collusion`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        self.tree.collusion(colluding_fraction)
    }

    /// What each device sends.
    pub fn message_cost(&self) -> MessageCost {
        self.tree.message_cost()
    }

    /// The sketch answering quantiles from the tree's release.
    pub fn sketch(&self, counts: RangeCounts) -> QuantileSketch {
        QuantileSketch {
            counts,
            buckets: self.tree.domain(),
            users: self.users,
        }
    }
}

/// The released prefix counts, answering quantile queries.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantileSketch {
    counts: RangeCounts,
    buckets: u32,
    users: u64,
}

impl QuantileSketch {
    /// The range counts behind the sketch.
    pub fn counts(&self) -> &RangeCounts {
        &self.counts
    }

    /// The `q`-quantile estimate `j*/B`: `j*` is the smallest `j ∈ 1…B` with estimated prefix
    /// count (buckets `0..j`) at least `q·n`, or `B` if there is none.
    ///
    /// # Panics
    ///
    /// If `q` is not in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> f64 {
        assert!(
            (0.0..=1.0).contains(&q),
            "quantile level {q} is outside [0, 1]"
        );
        let target = q * self.users as f64;
        let j = (1..=self.buckets)
            .find(|&j| self.counts.prefix(j) >= target)
            .unwrap_or(self.buckets);
        f64::from(j) / f64::from(self.buckets)
    }
}
