//! Heavy hitters: the frequent items of a population, found by growing a prefix tree one
//! segment per round, or in a single round.

mod prefix;
mod triehh;
mod triehh_plus;

pub use prefix::{PrefixRound, TERMINATOR, prefix_count};
pub use triehh::{
    DEFAULT_THETA_RULE, TRIEHH_ANALYSIS, TrieHh, TrieHhAggregator, TrieHhConfig, TrieHhOutput,
    TrieHhQuery, tff,
};
pub use triehh_plus::{TrieHhPlus, TrieHhPlusConfig, TrieHhPlusQuery, TrieNode, TrieOutput};
