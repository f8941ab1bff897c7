//! Quantiles and range counts of values in `[0, 1]` from sample-and-threshold histograms
//! (Bharadwaj and Cormode, AISTATS 2022, §4.2; docs/algorithms.md §4).
//!
//! Two tasks, both driven through [`Task`](crate::task::Task):
//!
//! * [`HierarchicalHistogram`]: `L` S&T histograms over the buckets of a `β`-ary tree on
//!   `[0, 1]`; its [`HierarchicalRelease`] answers any number of range counts, ranks and
//!   quantiles, optionally after a consistency post-processing.
//! * [`BinarySearchQuantile`]: one quantile by an interactive binary search, `h` S&T rounds of
//!   two buckets each.
//!
//! [`plan_rounds`](crate::histogram::plan_rounds) splits a total `(ε, δ)` over the rounds of
//! either and calibrates the per-round mechanism.
//!
//! # Privacy
//!
//! Every round (a level, or a search step) is an S&T histogram with its own fresh Poisson
//! sample, `(ε', δ')`-DP for add/remove neighbours (one client present or absent; the S&T
//! theorem's relation) or, if asked, replace-one neighbours through the per-cell analysis of
//! [`SampleThreshold`](crate::histogram::SampleThreshold). A client takes part in every round, so the total guarantee is the
//! composition of all rounds, computed by [`tally_accounting::composition`]:
//! `L` rounds for a hierarchical histogram however many quantiles or ranges are read from it,
//! `k·h` rounds for `k` quantiles by binary search. Everything computed from the releases
//! (estimates, ranks, quantiles, consistency) is post-processing.

mod binary_search;
mod hierarchical;
mod range;
mod value_range;

pub use binary_search::{
    BinarySearchConfig, BinarySearchQuantile, MAX_SEARCH_ROUNDS, Normalisation, QuantileSearch,
    ThresholdQuery,
};
pub use hierarchical::{
    ConsistencyWeights, HierarchicalConfig, HierarchicalHistogram, HierarchicalRelease, LevelQuery,
};
pub use range::{Node, TreeShape};
pub use value_range::ValueRange;

/// An estimated quantile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantileEstimate {
    /// The target quantile `q ∈ [0, 1]`.
    pub quantile: f64,
    /// The estimated value in `[0, 1]`.
    pub value: f64,
}
