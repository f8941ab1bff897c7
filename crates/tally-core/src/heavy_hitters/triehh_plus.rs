//! TrieHH++ (Bharadwaj and Cormode, AISTATS 2022, §4.1; Cormode, "Federated Heavy Hitters
//! revisited", §2): a prefix tree grown one segment per level, each level a fresh
//! sample-and-threshold histogram of the clients' prefixes.
//!
//! Level `ℓ` asks every client for the first `ℓ·g` characters of its word followed by the
//! terminator `'$'` ([`PrefixRound::report`]); the S&T histogram of those prefixes is released
//! with counts. In the *restricted* variant only clients whose prefix of the previous length
//! survived report; this is post-processing of the unrestricted level (the restricted count of
//! a prefix is its unrestricted count when its parent is live, else nothing), so both variants
//! have the same guarantee. The heavy hitters are the released prefixes ending in `'$'`.
//!
//! # Privacy
//!
//! Each level is an S&T histogram with its own fresh Poisson sample, `(ε', δ')`-DP for
//! add/remove neighbours by the analysis of [`SampleThreshold`]. A client takes part in every
//! level, so the task is the `L`-fold composition, computed by
//! [`tally_accounting::composition`] with the rule the caller chose. Stopping early (no prefix
//! survived) is post-processing and only spends less.

use std::collections::HashSet;
use std::sync::Arc;

use tally_accounting::Guarantee;
use tally_accounting::composition::Composition;

use super::prefix::{PrefixRound, TERMINATOR};
use crate::Error;
use crate::histogram::{SampleThreshold, compose_sample_threshold_rounds};
use crate::task::Task;

/// The parameters of a TrieHH++ run.
#[derive(Clone, Debug)]
pub struct TrieHhPlusConfig {
    /// The number of levels `L`; words longer than `L·g − 1` characters cannot be found.
    pub levels: usize,
    /// Characters added per level, `g ≥ 1`.
    pub segment: usize,
    /// Whether clients report only below a surviving prefix.
    pub restricted: bool,
    /// The S&T mechanism every level runs.
    pub per_level: SampleThreshold,
    /// How the levels' guarantees compose into the total.
    pub composition: Composition,
    /// The δ budget of the whole run (the advanced and optimal rules spend what the levels
    /// leave of it).
    pub total_delta: f64,
}

/// One node of the released prefix tree.
#[derive(Clone, Debug, PartialEq)]
pub struct TrieNode {
    /// The prefix, ending in `'$'` for a complete word.
    pub prefix: String,
    /// The level that released it, from 1.
    pub level: usize,
    /// The sampled count (at least the level's threshold).
    pub count: u64,
    /// The estimated number of clients below this node, `count / p_s`.
    pub estimate: f64,
}

impl TrieNode {
    /// The word, when this node is a complete word (its prefix ends in `'$'`).
    pub fn word(&self) -> Option<&str> {
        self.prefix.strip_suffix(TERMINATOR)
    }
}

/// The output of a TrieHH++ run.
#[derive(Clone, Debug)]
pub struct TrieOutput {
    /// Every released node, level by level, by decreasing count within a level.
    pub nodes: Vec<TrieNode>,
    /// The levels that ran.
    pub levels_run: usize,
    /// The guarantee of the whole run.
    pub guarantee: Guarantee,
}

impl TrieOutput {
    /// The complete words found, by decreasing count.
    pub fn heavy_hitters(&self) -> Vec<&TrieNode> {
        let mut words: Vec<&TrieNode> = self.nodes.iter().filter(|n| n.word().is_some()).collect();
        words.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.prefix.cmp(&b.prefix)));
        words
    }
}

/// The query of one TrieHH++ level: which prefix to report, and the S&T round it feeds.
#[derive(Clone, Debug)]
pub struct TrieHhPlusQuery {
    /// What each client reports.
    pub prefixes: PrefixRound,
    /// The level's sample-and-threshold mechanism.
    pub mechanism: SampleThreshold,
}

/// The TrieHH++ task. Build it with [`TrieHhPlus::new`] and drive it with [`Task`].
#[derive(Clone, Debug)]
pub struct TrieHhPlus {
    config: TrieHhPlusConfig,
    level: usize,
    live: Arc<HashSet<String>>,
    nodes: Vec<TrieNode>,
    finished: bool,
    guarantee: Guarantee,
}

impl TrieHhPlus {
    /// Validates the configuration and computes the total guarantee.
    ///
    /// # Errors
    ///
    /// If `levels` or `segment` is 0, or if the composition cannot be computed.
    pub fn new(config: TrieHhPlusConfig) -> Result<Self, Error> {
        if config.levels == 0 {
            return Err(Error::invalid("levels", 0, "at least 1"));
        }
        if config.segment == 0 {
            return Err(Error::invalid("segment", 0, "at least 1 character"));
        }
        let guarantee = compose_sample_threshold_rounds(
            &config.per_level,
            config.levels,
            config.composition,
            config.total_delta,
        )?;
        Ok(Self {
            config,
            level: 0,
            live: Arc::default(),
            nodes: Vec::new(),
            finished: false,
            guarantee,
        })
    }
}

impl Task for TrieHhPlus {
    type Query = TrieHhPlusQuery;
    type Release = Vec<(String, u64, f64)>;
    type Output = TrieOutput;

    fn next_query(&mut self) -> Option<TrieHhPlusQuery> {
        if self.finished || self.level == self.config.levels {
            self.finished = true;
            return None;
        }
        self.level += 1;
        Some(TrieHhPlusQuery {
            prefixes: PrefixRound {
                round: self.level,
                segment: self.config.segment,
                live_parents: self.config.restricted.then(|| Arc::clone(&self.live)),
            },
            mechanism: self.config.per_level.clone(),
        })
    }

    /// Takes the level's released `(prefix, count, estimate)` cells.
    fn observe(&mut self, release: Vec<(String, u64, f64)>) {
        let mut live = HashSet::new();
        let mut level_nodes: Vec<TrieNode> = release
            .into_iter()
            .map(|(prefix, count, estimate)| {
                if !prefix.ends_with(TERMINATOR) {
                    live.insert(prefix.clone());
                }
                TrieNode {
                    prefix,
                    level: self.level,
                    count,
                    estimate,
                }
            })
            .collect();
        level_nodes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.prefix.cmp(&b.prefix)));
        self.nodes.extend(level_nodes);
        // Nothing left to extend: later levels could only release what chance lifts over the
        // threshold below dead prefixes, so stop (post-processing, spends less).
        self.finished = live.is_empty();
        self.live = Arc::new(live);
    }

    fn finish(self) -> TrieOutput {
        TrieOutput {
            nodes: self.nodes,
            levels_run: self.level,
            guarantee: self.guarantee,
        }
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}
