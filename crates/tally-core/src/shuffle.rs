//! Histogram mechanisms in the shuffle model: clients send messages to a trusted shuffler,
//! which forwards their anonymous multiset to the analyst.
//!
//! - [`balcer_cheu`]: Balcer–Cheu 2020 Bernoulli-noise multi-message histogram (docs/algorithms.md
//!   §7.3).
//! - [`single_message`]: shuffled generalized randomized response, calibrated with the
//!   amplification-by-shuffling accountant (docs/algorithms.md §5.8 and §8).
//! - [`ghazi_hadamard`], [`ghazi_count_min`]: the multi-message frequency oracles of Ghazi et
//!   al. (Algorithms 1 and 2, docs/algorithms.md §5.1–§5.2); [`range_tree`] (range counting, §5.4),
//!   [`heavy_hitters`] (Appendix D, §5.6) and [`quantiles`] (Appendix E, §5.7) built on them as
//!   [`set_oracle`] rounds; [`number_tree`] is the range tree over devices holding numbers,
//!   and [`prefix_level`] one level of the heavy hitters' prefix tree, as both the simulator
//!   and a federated runtime run them.

pub mod balcer_cheu;
pub mod ghazi_count_min;
pub mod ghazi_hadamard;
pub mod heavy_hitters;
pub mod number_tree;
pub mod prefix_level;
pub mod quantiles;
pub mod range_tree;
pub mod set_oracle;
pub mod single_message;
#[cfg(test)]
mod two_sample;

pub use balcer_cheu::{
    BalcerCheuCounts, BalcerCheuHistogram, BalcerCheuMessages, BalcerCheuQuery, BalcerCheuRound,
};
pub use ghazi_count_min::{
    CountMinCounts, CountMinHashes, CountMinMessages, CountMinQuery, CountMinRound, GhaziCountMin,
    PairwiseHash,
};
pub use ghazi_hadamard::{
    GhaziHadamard, HadamardCounts, HadamardQuery, HadamardRound, HadamardTuple, HadamardTuples,
};
pub use heavy_hitters::ShuffleHeavyHitters;
pub use number_tree::{NumberTreeQuery, NumberTreeRound};
pub use prefix_level::{PrefixLevelQuery, PrefixLevelRound};
pub use quantiles::{QuantileSketch, ShuffleQuantiles};
pub use range_tree::{RangeAggregator, RangeCounts, RangeQuery, RangeRound};
pub use set_oracle::{SetHolders, SetOracleRound, SetQuery};
pub use single_message::{ShuffledGrr, ShuffledGrrRound};
