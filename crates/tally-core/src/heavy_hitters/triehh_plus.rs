//! TrieHH++ (Bharadwaj and Cormode, AISTATS 2022, §4.1; Cormode, "Federated Heavy Hitters
//! revisited", §2): a prefix tree grown one segment per level, each level a fresh
//! sample-and-threshold histogram of the clients' prefixes, or (beyond the paper) a
//! noise-based partition selection of them.
//!
//! Level `ℓ` asks every client for the first `ℓ·g` characters of its word followed by the
//! terminator `'$'` ([`PrefixRound::report`]); the level's mechanism ([`LevelMechanism`])
//! releases those prefixes with counts. In the *restricted* variant only clients whose prefix
//! of the previous length survived report; this is post-processing of the unrestricted level
//! (the restricted count of a prefix is its unrestricted count when its parent is live, else
//! nothing, and every prefix draws its own coins or noise), so both variants have the same
//! guarantee. The heavy hitters are the released prefixes ending in `'$'`.
//!
//! # Privacy
//!
//! Each level is an S&T histogram with its own fresh Poisson sample, `(ε', δ')`-DP for
//! add/remove neighbours by the analysis of [`SampleThreshold`], or a partition selection of
//! one item per client ([`PartitionSelection`], Laplace or Gaussian thresholding, central: the
//! aggregator sees each level's exact prefix counts), `(ε', δ')`-DP for its neighbour relation
//! with the δ computed exactly at its parameters. A client takes part in every level, so the
//! task is the `L`-fold composition, computed by [`tally_accounting::composition`] with the rule
//! the caller chose ([`LevelMechanism::compose_levels`]). Stopping early (no prefix survived)
//! is post-processing and only spends less.

use std::collections::HashSet;
use std::sync::Arc;

use rand::Rng;
use tally_accounting::composition::{Composition, split_budget};
use tally_accounting::partition_selection::Method;
use tally_accounting::{Guarantee, Neighbours, compose_rounds};

use super::prefix::{PrefixRound, TERMINATOR};
use crate::Error;
use crate::histogram::{
    PartitionSelection, SampleThreshold, SelectedKey, compose_sample_threshold_rounds,
};
use crate::task::Task;

/// A mechanism every level of a TrieHH++ run can use to release the clients' prefixes with
/// counts: [`SampleThreshold`] (the paper's) or a noise-based [`PartitionSelection`].
///
/// # Privacy
///
/// [`Self::compose_levels`] is the guarantee of the whole run; it must hold for adaptively
/// chosen levels (each level's live prefixes depend on the earlier releases).
pub trait LevelMechanism: Clone + std::fmt::Debug {
    /// The guarantee of `levels` levels of this mechanism over the same clients, composed by
    /// `composition` within the total `δ` budget `total_delta`.
    ///
    /// # Errors
    ///
    /// If the composition cannot be computed, or the mechanism cannot run a level.
    fn compose_levels(
        &self,
        levels: usize,
        composition: Composition,
        total_delta: f64,
    ) -> Result<Guarantee, Error>;
}

impl LevelMechanism for SampleThreshold {
    /// The tight accountant on the S&T parameters for [`Composition::Tight`], the rule on the
    /// per-level guarantee otherwise ([`compose_sample_threshold_rounds`]).
    fn compose_levels(
        &self,
        levels: usize,
        composition: Composition,
        total_delta: f64,
    ) -> Result<Guarantee, Error> {
        compose_sample_threshold_rounds(self, levels, composition, total_delta)
    }
}

impl LevelMechanism for PartitionSelection {
    /// The `levels`-fold composition of the per-level `(ε', δ')` by a rule for plain pairs
    /// (basic, advanced, optimal or PLD; each holds for adaptively chosen levels under one
    /// neighbour relation). Refuses [`Composition::Tight`], which composes S&T's own loss, and
    /// the truncated geometric, which releases keys without the counts a level ranks by.
    fn compose_levels(
        &self,
        levels: usize,
        composition: Composition,
        total_delta: f64,
    ) -> Result<Guarantee, Error> {
        check_selection_levels(self.method(), composition)?;
        Ok(compose_rounds(
            self.guarantee(),
            levels,
            composition,
            total_delta,
        )?)
    }
}

/// Refuses what cannot run partition-selection levels: the truncated geometric, which releases
/// keys without the counts a level ranks by, and [`Composition::Tight`], which composes S&T's
/// own loss.
fn check_selection_levels(method: Method, composition: Composition) -> Result<(), Error> {
    if method == Method::TruncatedGeometric {
        return Err(Error::invalid(
            "level mechanism",
            Method::TruncatedGeometric.name(),
            "laplace-threshold or gaussian-threshold (the truncated geometric releases keys \
             without the counts TrieHH++ ranks prefixes by)",
        ));
    }
    if composition == Composition::Tight {
        return Err(Error::invalid(
            "composition",
            "tight",
            "basic, advanced, optimal or pld for partition-selection levels (tight composes \
             sample-and-threshold's own loss)",
        ));
    }
    Ok(())
}

/// The partition selection every level of a `levels`-level run at total `(epsilon, delta)`
/// runs: the budget split by `composition` ([`split_budget`]: `(ε/L, δ/L)` for basic; for the
/// others half of `δ` over the levels and the largest `ε'` that composes within `ε`), and
/// `method` calibrated at the share for one prefix per client and `neighbours`
/// ([`PartitionSelection::calibrate`]).
///
/// # Privacy
///
/// The per-level guarantee is the calibration's, with its `δ` exact at its parameters;
/// [`TrieHhPlus::new`] composes it back ([`LevelMechanism::compose_levels`]), within
/// `(epsilon, delta)`.
///
/// # Errors
///
/// The truncated geometric and [`Composition::Tight`] (as [`LevelMechanism::compose_levels`]),
/// and what [`split_budget`] and the calibration refuse.
pub fn plan_selection_levels(
    method: Method,
    epsilon: f64,
    delta: f64,
    levels: usize,
    composition: Composition,
    neighbours: Neighbours,
) -> Result<PartitionSelection, Error> {
    check_selection_levels(method, composition)?;
    let (level_epsilon, level_delta) = split_budget(epsilon, delta, levels as u64, composition)?;
    PartitionSelection::calibrate(method, level_epsilon, level_delta, 1, neighbours)
}

/// One level of a partition-selection TrieHH++ run: the release of the prefixes `counts`
/// names, each with the number of clients reporting it, by `selection` with draws from `rng`,
/// as `(prefix, noisy count, noisy count)` (the count is its own estimate: nobody was
/// sampled).
///
/// # Privacy
///
/// As [`PartitionSelection::release_named`]: `rng` must be secret, and each client must have
/// reported at most one prefix.
///
/// # Errors
///
/// [`Error::InvalidParameter`] past `u32::MAX` distinct prefixes.
pub fn release_prefix_selection<R: Rng + ?Sized>(
    selection: &PartitionSelection,
    counts: impl IntoIterator<Item = (String, u64)>,
    rng: &mut R,
) -> Result<Vec<(String, u64, f64)>, Error> {
    Ok(selected_prefixes(selection.release_named(counts, rng)?))
}

/// A partition-selection level's released prefixes as the level's release of
/// [`TrieHhPlus`]: `(prefix, noisy count, noisy count)` each (the count is its own estimate:
/// nobody was sampled).
///
/// # Panics
///
/// On a prefix released without its noisy count, which no level [`plan_selection_levels`]
/// plans releases (it refuses the truncated geometric).
pub fn selected_prefixes(selected: Vec<SelectedKey<String>>) -> Vec<(String, u64, f64)> {
    selected
        .into_iter()
        .map(|selected| {
            // Unwrap safety: the noise-based methods release a noisy count at or above their
            // threshold, which is at least 1; `compose_levels` refused the truncated geometric.
            let count = selected
                .noisy_count
                .and_then(|c| u64::try_from(c).ok())
                .expect("a noise-based level releases a positive noisy count");
            (selected.key, count, count as f64)
        })
        .collect()
}

/// The parameters of a TrieHH++ run whose levels run the mechanism `M`.
#[derive(Clone, Debug)]
pub struct TrieHhPlusConfig<M = SampleThreshold> {
    /// The number of levels `L`; words longer than `L·g − 1` characters cannot be found.
    pub levels: usize,
    /// Characters added per level, `g ≥ 1`.
    pub segment: usize,
    /// Whether clients report only below a surviving prefix.
    pub restricted: bool,
    /// The mechanism every level runs.
    pub per_level: M,
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
    /// The released count: the sampled count (S&T) or the noisy count (partition selection),
    /// at least the level's threshold.
    pub count: u64,
    /// The estimated number of clients below this node: `count / p_s` for S&T, the noisy count
    /// for a partition selection.
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

/// The query of one TrieHH++ level: which prefix to report, and the mechanism that releases
/// the level.
#[derive(Clone, Debug)]
pub struct TrieHhPlusQuery<M = SampleThreshold> {
    /// What each client reports.
    pub prefixes: PrefixRound,
    /// The level's mechanism.
    pub mechanism: M,
}

/// The TrieHH++ task. Build it with [`TrieHhPlus::new`] and drive it with [`Task`].
#[derive(Clone, Debug)]
pub struct TrieHhPlus<M = SampleThreshold> {
    config: TrieHhPlusConfig<M>,
    level: usize,
    live: Arc<HashSet<String>>,
    nodes: Vec<TrieNode>,
    finished: bool,
    guarantee: Guarantee,
}

impl<M: LevelMechanism> TrieHhPlus<M> {
    /// Validates the configuration and computes the total guarantee
    /// ([`LevelMechanism::compose_levels`]).
    ///
    /// # Errors
    ///
    /// If `levels` or `segment` is 0, or if the composition cannot be computed.
    pub fn new(config: TrieHhPlusConfig<M>) -> Result<Self, Error> {
        if config.levels == 0 {
            return Err(Error::invalid("levels", 0, "at least 1"));
        }
        if config.segment == 0 {
            return Err(Error::invalid("segment", 0, "at least 1 character"));
        }
        let guarantee = config.per_level.compose_levels(
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

impl<M: LevelMechanism> Task for TrieHhPlus<M> {
    type Query = TrieHhPlusQuery<M>;
    type Release = Vec<(String, u64, f64)>;
    type Output = TrieOutput;

    fn next_query(&mut self) -> Option<TrieHhPlusQuery<M>> {
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
