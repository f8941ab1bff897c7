//! Heavy hitters: the frequent items of a population, found by growing a prefix tree one
//! segment per round, or in a single round.

mod keyed_triehh_plus;
mod opt_prefix_tree;
mod prefix;
mod triehh;
mod triehh_plus;

pub use keyed_triehh_plus::{KeyedLevel, keyed_level_mechanism, release_prefix_counts};
pub use opt_prefix_tree::{
    Decoded, Encoding, FoundWord, HuffmanCode, IterationQuery, IterationReport, IterationSummary,
    IterationSums, IterationSumsAggregator, OptPrefixTree, OptPrefixTreeConfig,
    OptPrefixTreeOutput, PublishedIteration, SegmentPolicy, Selection, ThresholdChoice,
    WordMultiset, select_by_fpr,
};
pub use prefix::{PrefixRound, TERMINATOR, prefix_count};
pub use triehh::{
    DEFAULT_THETA_RULE, TRIEHH_ANALYSIS, TrieHh, TrieHhAggregator, TrieHhConfig, TrieHhOutput,
    TrieHhQuery, tff,
};
pub use triehh_plus::{
    LevelMechanism, TrieHhPlus, TrieHhPlusConfig, TrieHhPlusQuery, TrieNode, TrieOutput,
    plan_selection_levels, release_prefix_selection, selected_prefixes,
};
