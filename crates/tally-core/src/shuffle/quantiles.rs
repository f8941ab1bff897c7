//! Quantiles through the range query tree: Appendix E of Ghazi, Golowich, Kumar, Pagh and
//! Velingker (arXiv 1908.11358v4; ALGORITHMS.md §5.7).
//!
//! Values `x ∈ [0, 1]` are mapped to `B` buckets `I_j = [(j−1)/B, j/B]` (0-indexed bucket
//! `min(⌊x·B⌋, B−1)`), the one-dimensional [`RangeTree`] runs once, and any `q`-quantile is
//! answered from its prefix counts as `j*/B`, where `j*` is the smallest `j ∈ 1…B` whose
//! estimated count of `I_1 ∪ … ∪ I_j` is at least `q·n` (`j* = B` if none is), `n` being the
//! public number of users. The median is `q = 1/2` (the M-estimator of Appendix E); Remark
//! E.1's `k`-th `q'`-quantile is `q = k/q'`. The error is `n/B` from the bucketing plus the
//! range tree's error.

use rand::Rng;
use tally_accounting::Guarantee;

use super::range_tree::{RangeCounts, RangeOracle, RangeTree};
use crate::Error;
use crate::histogram::MessageCost;

/// The quantile protocol of Appendix E over `2^domain_bits` buckets.
///
/// # Privacy
///
/// The range tree's guarantee ([`RangeTree`]): one run of its frequency oracle, `(ε, δ)`-DP in
/// the shuffle model for replace-one neighbours. Any number of quantiles are read from the one
/// release (post-processing).
#[derive(Debug)]
pub struct ShuffleQuantiles {
    tree: RangeTree,
    users: u64,
}

impl ShuffleQuantiles {
    /// The protocol for `users` users with `2^domain_bits` buckets.
    ///
    /// # Errors
    ///
    /// As [`RangeTree::new`].
    pub fn new(
        domain_bits: u32,
        oracle: RangeOracle,
        epsilon: f64,
        delta: f64,
        users: u64,
    ) -> Result<Self, Error> {
        Ok(Self {
            tree: RangeTree::new(domain_bits, oracle, epsilon, delta, users)?,
            users,
        })
    }

    /// The protocol on a given range tree (one-dimensional) for `users` users.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the tree has more than one dimension.
    pub fn with_tree(tree: RangeTree, users: u64) -> Result<Self, Error> {
        if tree.dims() != 1 {
            return Err(Error::invalid(
                "range tree",
                format!("{tree:?}"),
                "a one-dimensional tree",
            ));
        }
        Ok(Self { tree, users })
    }

    /// The bucket of a value in `[0, 1]`: `min(⌊x·B⌋, B−1)`.
    ///
    /// # Panics
    ///
    /// If `x` is not in `[0, 1]`.
    pub fn bucket(&self, x: f64) -> u32 {
        assert!((0.0..=1.0).contains(&x), "value {x} is outside [0, 1]");
        let b = self.tree.domain();
        ((x * f64::from(b)).floor() as u64).min(u64::from(b) - 1) as u32
    }

    /// The guarantee of the release.
    pub fn guarantee(&self) -> Guarantee {
        self.tree.guarantee()
    }

    /// What each user sends.
    pub fn message_cost(&self) -> MessageCost {
        self.tree.message_cost()
    }

    /// Runs the protocol on the users' values (one each, in `[0, 1]`).
    ///
    /// # Panics
    ///
    /// If a value is outside `[0, 1]` or the number of values is not `n`.
    pub fn run(&self, values: &[f64], rng: &mut dyn Rng) -> QuantileSketch {
        let leaves: Vec<u32> = values.iter().map(|&x| self.bucket(x)).collect();
        QuantileSketch {
            counts: self.tree.run(&leaves, rng),
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
