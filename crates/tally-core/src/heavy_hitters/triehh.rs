//! TrieHH (Zhu, Kairouz, McMahan, Sun and Li, "Federated Heavy Hitters Discovery with
//! Differential Privacy", AISTATS 2020 [ZKMSL20]), exactly as docs/algorithms.md §2: a trie of
//! frequent prefixes grown one character (or one segment of `g` characters) per round, each
//! round a fresh fixed-size sample of `m` clients drawn uniformly *without replacement*, each
//! sampled client casting one vote for the next piece of its word, and the prefixes with at
//! least `θ` votes accepted.
//!
//! ```text
//! T ← ∅
//! for r = 1, …, L:
//!     S_r ← m distinct clients, uniformly at random
//!     votes[u[1..r·g]] += 1 for each u = word ‖ '$' of S_r with |u| > (r−1)·g
//!                              and (r = 1 or u[1..(r−1)·g] ∈ T)   (ends early at '$')
//!     new ← {p : votes[p] ≥ θ}          (optionally: beam, see below)
//!     T ← T ∪ new;  if new = ∅: stop
//! output {p without '$' : p ∈ T, p ends in '$'}
//! ```
//!
//! The client side is [`PrefixRound::report`] with the live parents always set (TrieHH only
//! ever extends accepted prefixes); the server side is a [`TrieHhAggregator`], which holds the
//! votes and releases the accepted prefixes only: TrieHH publishes **no counts**. Precision is
//! 1 by construction: a released word was voted for by at least `θ` sampled clients holding it.
//!
//! The words must not contain the terminator `'$'` themselves (a prefix ending in `'$'` is read
//! as a complete word).
//!
//! # Beam
//!
//! With [`TrieHhConfig::beam`] `= Some(b)` (`max_beam_size` of the Facebook re-implementation,
//! docs/algorithms.md §2.4), each round keeps only the `b` non-terminal accepted prefixes with the
//! most votes (ties broken by the prefix, in `str` order); terminal prefixes are always kept.
//! The selection needs the vote counts, so it happens inside the aggregator
//! ([`TrieHhAggregator::release`]), never on the analyst's side.
//!
//! # Privacy
//!
//! TrieHH with `L` rounds, threshold `θ` and batch `m` out of `n` clients is `(ε, δ)`-DP with
//! `ε = −L·ln(1 − θm/n)` and `δ = (θ − 2)/((θ − 3)·θ!)` when `4 ≤ θ ≤ √n` and
//! `m/n ≤ 1/(θ + 1)` (Theorem 1 of [ZKMSL20], reconstructed in docs/algorithms.md §2.3 from the
//! authors' code and Facebook's, which agree; the paper's text was not available). The
//! `(ε, δ)` and the Corollary 1 calibration of `(θ, m)` from `(ε, δ, L, n)` come from
//! [`tally_accounting::triehh`]. As in both codebases, `δ` is the total for the run, not per
//! round. Segments (`g > 1`) change what a vote says, not the sampling or the threshold, so
//! the same guarantee holds with `L` the number of rounds. Stopping early is post-processing
//! and only spends less.
//!
//! - **Neighbour relation** [RECON]: neither codebase records it. tally states the guarantee
//!   for *replace-one* neighbours (one client's word changed): the batch is a fixed `m` out of
//!   a known, fixed `n`, and the theorem's `ε` is a function of `m/n`, which only a fixed `n`
//!   makes well defined. Check the paper's definition before relying on it.
//! - The theorem assumes each client holds **one** word and votes at most once per round.
//! - Sampling is exact: every round's batch is an exactly uniform `m`-subset of the `n`
//!   clients ([`crate::sampling::uniform_subset`]), drawn afresh each round.
//! - The release is the set of accepted prefixes in `str` order, so it carries no
//!   information about the vote counts beyond the threshold test.
//! - **Beam** [RECON]: the beam's choice depends on the counts of the accepted prefixes. It is
//!   post-processing of the thresholded vote histogram `{(p, v_p) : v_p ≥ θ}`, so it inherits
//!   the guarantee if Theorem 1's proof covers that histogram; docs/algorithms.md does not record
//!   whether it does. The Facebook code runs the beam under the same `ε`, and so does tally;
//!   check the proof before relying on it.
//! - The TFF variant ([`tff`]: several words per client, a top-`k` cap on new prefixes, counts
//!   released with the heavy hitters) is **not** covered by the theorem: it is not DP as
//!   written unless its sampling and threshold are set by another analysis.
//!
//! # Citations
//!
//! [ZKMSL20]: https://arxiv.org/abs/1902.08534

use std::collections::HashSet;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use tally_accounting::triehh::{ThetaRule, TrieHhParams, corollary1};
use tally_accounting::{Guarantee, Neighbours, TrustModel};

use super::prefix::{PrefixRound, TERMINATOR};
use crate::Error;
use crate::task::Task;

/// The rule [`TrieHhConfig::calibrate`] sets `θ` with: CODE A's (the AISTATS code's)
/// smallest `θ ≥ 5` whose theorem `δ` meets the target. CODE B's closed form never goes below
/// 10 and is never smaller.
pub const DEFAULT_THETA_RULE: ThetaRule = ThetaRule::Factorial { start: 5 };

/// The parameters of a TrieHH run.
///
/// Build one with [`TrieHhConfig::calibrate`] (Corollary 1: `θ` and `m` from
/// `(ε, δ, L, n)`), or fill in `threshold` and `batch_size` yourself; [`TrieHh::new`] then
/// computes the guarantee they give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrieHhConfig {
    /// The number of clients `n` the batches are drawn from.
    pub population: u64,
    /// The number of rounds `L`; words of `L·g` characters or more cannot be found.
    pub rounds: usize,
    /// Characters per round, the segment length `g ≥ 1` (1: the paper's character extension).
    pub segment: usize,
    /// The vote threshold `θ`.
    pub threshold: u64,
    /// The batch size `m`: distinct clients sampled per round.
    pub batch_size: u64,
    /// Keep at most this many non-terminal prefixes per round, by votes (`None`: all).
    pub beam: Option<usize>,
}

impl TrieHhConfig {
    /// Corollary 1 (docs/algorithms.md §2.3) with [`DEFAULT_THETA_RULE`]: the threshold `θ` and
    /// batch size `m` for a total `(ε, δ)` over `rounds` rounds and `population` clients, one
    /// character per round and no beam. Use [`TrieHhConfig::with_segment`] and
    /// [`TrieHhConfig::with_beam`] to change those.
    ///
    /// # Errors
    ///
    /// Whatever [`tally_accounting::triehh::corollary1`] rejects: invalid `(ε, δ, L, n)`, a
    /// `θ` above `√n`, or a batch smaller than `θ`.
    pub fn calibrate(
        epsilon: f64,
        delta: f64,
        rounds: usize,
        population: u64,
    ) -> Result<Self, Error> {
        Self::calibrate_with(epsilon, delta, rounds, population, DEFAULT_THETA_RULE)
    }

    /// [`TrieHhConfig::calibrate`] with the given rule for `θ` (CODE A's factorial search or
    /// CODE B's closed form; docs/algorithms.md §2.3).
    ///
    /// # Errors
    ///
    /// As [`TrieHhConfig::calibrate`].
    pub fn calibrate_with(
        epsilon: f64,
        delta: f64,
        rounds: usize,
        population: u64,
        rule: ThetaRule,
    ) -> Result<Self, Error> {
        let params = corollary1(epsilon, delta, rounds as u64, population, rule)?;
        Ok(Self {
            population,
            rounds,
            segment: 1,
            threshold: params.theta(),
            batch_size: params.batch_size(),
            beam: None,
        })
    }

    /// The same configuration with `segment` characters per round.
    #[must_use]
    pub fn with_segment(mut self, segment: usize) -> Self {
        self.segment = segment;
        self
    }

    /// The same configuration keeping at most `beam` non-terminal prefixes per round.
    #[must_use]
    pub fn with_beam(mut self, beam: usize) -> Self {
        self.beam = Some(beam);
        self
    }
}

/// The query of one TrieHH round: what a sampled client reports, how many clients to sample,
/// and how the votes are released.
#[derive(Clone, Debug)]
pub struct TrieHhQuery {
    /// What each sampled client reports: the next segment of its word below a live prefix.
    pub prefixes: PrefixRound,
    /// The batch size `m`: sample exactly this many distinct clients, uniformly.
    pub batch_size: u64,
    /// The number of clients `n` the batch is drawn from.
    pub population: u64,
    /// The vote threshold `θ`.
    pub threshold: u64,
    /// The beam (at most this many non-terminal prefixes kept), if any.
    pub beam: Option<usize>,
}

impl TrieHhQuery {
    /// The client side: the one vote of a sampled client holding `word`, or `None` when it does
    /// not vote this round (its word ended earlier, or its parent prefix was not accepted).
    pub fn respond(&self, word: &str) -> Option<String> {
        self.prefixes.report(word)
    }

    /// An empty aggregator for this round's votes.
    pub fn aggregator(&self) -> TrieHhAggregator {
        TrieHhAggregator {
            votes: FxHashMap::default(),
            threshold: self.threshold,
            beam: self.beam,
        }
    }
}

/// The secure aggregator of one TrieHH round: counts votes per prefix, merges with other
/// shards, and releases the accepted prefixes. Its counts cannot be read: it implements
/// neither `Debug` nor any serialization, and [`TrieHhAggregator::release`] publishes no
/// count.
pub struct TrieHhAggregator {
    votes: FxHashMap<String, u64>,
    threshold: u64,
    beam: Option<usize>,
}

impl TrieHhAggregator {
    /// Absorbs one client's vote.
    pub fn absorb(&mut self, prefix: String) {
        self.absorb_many(prefix, 1);
    }

    /// Absorbs `count` votes for `prefix` at once (a simulator hands over the votes of all the
    /// sampled holders of a word this way).
    pub fn absorb_many(&mut self, prefix: String, count: u64) {
        if count > 0 {
            *self.votes.entry(prefix).or_insert(0) += count;
        }
    }

    /// Adds another shard's votes to this one.
    pub fn merge(&mut self, other: Self) {
        for (prefix, count) in other.votes {
            *self.votes.entry(prefix).or_insert(0) += count;
        }
    }

    /// Releases the accepted prefixes, in `str` order: those with at least `θ` votes, and with
    /// a beam `b`, only the `b` non-terminal ones with the most votes (ties by prefix) plus
    /// every terminal one. This is the only way the votes leave, and no count does.
    pub fn release(self) -> Vec<String> {
        let threshold = self.threshold;
        let accepted = self.votes.into_iter().filter(|&(_, v)| v >= threshold);
        let mut released: Vec<String> = match self.beam {
            None => accepted.map(|(prefix, _)| prefix).collect(),
            Some(beam) => {
                let (mut open, terminal): (Vec<_>, Vec<_>) =
                    accepted.partition(|(prefix, _)| !prefix.ends_with(TERMINATOR));
                open.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                open.truncate(beam);
                open.into_iter()
                    .chain(terminal)
                    .map(|(prefix, _)| prefix)
                    .collect()
            }
        };
        released.sort_unstable();
        released
    }
}

/// The output of a TrieHH run.
#[derive(Clone, Debug, PartialEq)]
pub struct TrieHhOutput {
    /// The heavy hitters: the words whose terminal prefix `word‖'$'` was accepted, in `str`
    /// order (TrieHH releases no counts to rank them by).
    pub words: Vec<String>,
    /// The prefixes accepted in each round (`accepted[r − 1]` for round `r`), in `str` order:
    /// the trie.
    pub accepted: Vec<Vec<String>>,
    /// The rounds that ran (at most `L`; fewer when a round accepted nothing).
    pub rounds_run: usize,
    /// The parameters of the run.
    pub config: TrieHhConfig,
    /// The guarantee of the whole run.
    pub guarantee: Guarantee,
}

/// The TrieHH task. Build it with [`TrieHh::new`] and drive it with [`Task`]: each query's
/// batch must be sampled from the same `n` clients the configuration names.
///
/// # Example
///
/// ```
/// use tally_core::heavy_hitters::{TrieHh, TrieHhConfig};
/// use tally_core::task::Task;
///
/// // Corollary 1 for (ε, δ) = (1, 1e-8), 5 rounds, 10^6 clients: θ = 12, m = 15105.
/// let config = TrieHhConfig::calibrate(1.0, 1e-8, 5, 1_000_000)?;
/// assert_eq!((config.threshold, config.batch_size), (12, 15_105));
/// let mut task = TrieHh::new(config)?;
/// while let Some(query) = task.next_query() {
///     // An executor samples `query.batch_size` clients; say 20 of them hold "ok", 3 "no".
///     let mut aggregator = query.aggregator();
///     for word in std::iter::repeat_n("ok", 20).chain(std::iter::repeat_n("no", 3)) {
///         if let Some(vote) = query.respond(word) {
///             aggregator.absorb(vote);
///         }
///     }
///     task.observe(aggregator.release());
/// }
/// let output = task.finish();
/// assert_eq!(output.words, ["ok"]);
/// assert_eq!(output.accepted[..3], [["o"], ["ok"], ["ok$"]]);
/// assert_eq!(output.rounds_run, 4); // the fourth round accepts nothing
/// # Ok::<(), tally_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TrieHh {
    config: TrieHhConfig,
    round: usize,
    live: Arc<HashSet<String>>,
    accepted: Vec<Vec<String>>,
    finished: bool,
    guarantee: Guarantee,
}

impl TrieHh {
    /// Validates the configuration and computes its guarantee with
    /// [`tally_accounting::triehh`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `rounds`, `segment`, `threshold` or `beam` is 0, or the
    /// batch is empty or larger than the population; [`Error::Accounting`] if the theorem's
    /// conditions do not hold (`4 ≤ θ ≤ √n`, `1 ≤ m ≤ n/(θ+1)`, `n ≤ 2^53`).
    pub fn new(config: TrieHhConfig) -> Result<Self, Error> {
        if config.rounds == 0 {
            return Err(Error::invalid("rounds", 0, "at least 1"));
        }
        if config.segment == 0 {
            return Err(Error::invalid("segment", 0, "at least 1 character"));
        }
        if config.threshold == 0 {
            return Err(Error::invalid("threshold", 0, "at least 1 vote"));
        }
        if config.batch_size == 0 || config.batch_size > config.population {
            return Err(Error::invalid(
                "batch_size",
                config.batch_size,
                "between 1 and the population size n",
            ));
        }
        if config.beam == Some(0) {
            return Err(Error::invalid("beam", 0, "at least 1 prefix"));
        }
        let guarantee = theorem_guarantee(&config)?;
        Ok(Self {
            config,
            round: 0,
            live: Arc::default(),
            accepted: Vec::new(),
            finished: false,
            guarantee,
        })
    }

    /// The parameters.
    pub fn config(&self) -> &TrieHhConfig {
        &self.config
    }
}

impl Task for TrieHh {
    type Query = TrieHhQuery;
    type Release = Vec<String>;
    type Output = TrieHhOutput;

    fn next_query(&mut self) -> Option<TrieHhQuery> {
        if self.finished || self.round == self.config.rounds {
            self.finished = true;
            return None;
        }
        self.round += 1;
        Some(TrieHhQuery {
            prefixes: PrefixRound {
                round: self.round,
                segment: self.config.segment,
                live_parents: Some(Arc::clone(&self.live)),
            },
            batch_size: self.config.batch_size,
            population: self.config.population,
            threshold: self.config.threshold,
            beam: self.config.beam,
        })
    }

    /// Takes the round's accepted prefixes ([`TrieHhAggregator::release`]). The non-terminal
    /// ones are the parents the next round extends; an empty release ends the run.
    fn observe(&mut self, mut release: Vec<String>) {
        release.sort_unstable();
        release.dedup();
        self.finished = release.is_empty();
        self.live = Arc::new(
            release
                .iter()
                .filter(|prefix| !prefix.ends_with(TERMINATOR))
                .cloned()
                .collect(),
        );
        self.accepted.push(release);
    }

    fn finish(self) -> TrieHhOutput {
        let mut words: Vec<String> = self
            .accepted
            .iter()
            .flatten()
            .filter_map(|prefix| prefix.strip_suffix(TERMINATOR).map(str::to_owned))
            .collect();
        words.sort_unstable();
        TrieHhOutput {
            words,
            accepted: self.accepted,
            rounds_run: self.round,
            config: self.config,
            guarantee: self.guarantee,
        }
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}

/// The name of the analysis in [`Guarantee::analysis`].
pub const TRIEHH_ANALYSIS: &str = "triehh-theorem-1";

/// The guarantee of Theorem 1 for the configuration, for replace-one neighbours.
fn theorem_guarantee(config: &TrieHhConfig) -> Result<Guarantee, Error> {
    let params = TrieHhParams::new(
        config.threshold,
        config.batch_size,
        config.rounds as u64,
        config.population,
    )?;
    let (epsilon, delta) = params.guarantee();
    Ok(Guarantee {
        epsilon,
        delta,
        neighbours: Neighbours::ReplaceOne,
        model: TrustModel::Central,
        analysis: TRIEHH_ANALYSIS.to_owned(),
    })
}

pub mod tff {
    //! The TensorFlow Federated variant of TrieHH (`google-research/federated`,
    //! `triehh/triehh_tf.py`; docs/algorithms.md §2.5), as pure functions with the unit-test
    //! vectors of `triehh_tf_test.py` as tests.
    //!
    //! A client holds a dataset of words and keeps up to `max_user_contribution` distinct ones
    //! (its most frequent, [`top_elements`]); each is lower-cased and gets `'$'` appended. In
    //! round `round_num` the prefix length is `e = ⌊round_num / num_sub_rounds⌋`, and a kept
    //! word `u` votes for `(u[0..e], u[e])` when `u[0..e]` is a discovered prefix and `u[e]` an
    //! extension (`'$'` is the last column). Votes accumulate over `num_sub_rounds` sub-rounds;
    //! then the server decodes: the discovered prefixes whose `'$'` votes reach the threshold
    //! are heavy hitters (released **with** their counts), and the extensions with at least
    //! `threshold` votes that are also among the top `max_num_prefixes` (when there are more
    //! candidates than that) become the next discovered prefixes. The run ends when no prefix
    //! is discovered.
    //!
    //! Lengths and extensions are in `char`s (TensorFlow's `substr` counts bytes), and
    //! lower-casing is Unicode's (`tf.strings.lower` lower-cases ASCII only).
    //!
    //! # Privacy
    //!
    //! **None proven.** A client casts up to `max_user_contribution` votes per round, the
    //! cohort and threshold are set by hand, and counts are released: TrieHH's theorem (one word
    //! per client, fixed-size sampling, `θ` and `m` from Corollary 1, no counts) does not apply.
    //! Do not present the output of this variant as differentially private.

    use rustc_hash::FxHashMap;

    use crate::Error;
    use crate::heavy_hitters::TERMINATOR;

    /// A `[max_num_prefixes, |extensions| + 1]` matrix of votes: row `i` for the `i`-th
    /// discovered prefix, column `j` for the `j`-th extension, the last column for `'$'`.
    ///
    /// It holds raw votes (one client's, or a sum), so it implements neither `Debug` nor any
    /// serialization; read it with [`VoteMatrix::row`].
    #[derive(Clone, PartialEq, Eq)]
    pub struct VoteMatrix {
        columns: usize,
        votes: Vec<u64>,
    }

    impl VoteMatrix {
        /// All zeros, `rows × columns`.
        pub fn zeros(rows: usize, columns: usize) -> Self {
            Self {
                columns,
                votes: vec![0; rows * columns],
            }
        }

        /// A matrix from its rows.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if the rows do not all have the same length.
        pub fn from_rows(rows: &[&[u64]]) -> Result<Self, Error> {
            let columns = rows.first().map_or(0, |row| row.len());
            if let Some(row) = rows.iter().find(|row| row.len() != columns) {
                return Err(Error::invalid("rows", row.len(), "rows of equal length"));
            }
            Ok(Self {
                columns,
                votes: rows.concat(),
            })
        }

        /// The number of rows (`max_num_prefixes`).
        pub fn rows(&self) -> usize {
            self.votes.len().checked_div(self.columns).unwrap_or(0)
        }

        /// The number of columns (extensions and `'$'`).
        pub fn columns(&self) -> usize {
            self.columns
        }

        /// Row `i`.
        ///
        /// # Panics
        ///
        /// If `i` is not below [`VoteMatrix::rows`].
        pub fn row(&self, i: usize) -> &[u64] {
            &self.votes[i * self.columns..(i + 1) * self.columns]
        }

        /// Adds `other` element-wise (sub-round accumulation).
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if the shapes differ.
        pub fn accumulate(&mut self, other: &Self) -> Result<(), Error> {
            if (self.rows(), self.columns) != (other.rows(), other.columns) {
                return Err(Error::invalid(
                    "votes",
                    format!("{}×{}", other.rows(), other.columns),
                    "a vote matrix of the accumulator's shape",
                ));
            }
            for (a, b) in self.votes.iter_mut().zip(&other.votes) {
                *a += b;
            }
            Ok(())
        }

        fn add(&mut self, row: usize, column: usize) {
            self.votes[row * self.columns + column] += 1;
        }

        fn clear(&mut self) {
            self.votes.fill(0);
        }
    }

    /// The distinct words of a client's dataset, at most `max_user_contribution` of them: all of
    /// them in order of first appearance if there are that few, else the most frequent (ties in
    /// order of first appearance). TFF's `get_top_elements` leaves the order of ties
    /// unspecified.
    pub fn top_elements<S: AsRef<str>>(words: &[S], max_user_contribution: usize) -> Vec<&str> {
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        let mut counts: Vec<(&str, u64)> = Vec::new();
        for word in words {
            let word = word.as_ref();
            let i = *index.entry(word).or_insert_with(|| {
                counts.push((word, 0));
                counts.len() - 1
            });
            counts[i].1 += 1;
        }
        if counts.len() > max_user_contribution {
            counts.sort_by_key(|&(_, count)| std::cmp::Reverse(count)); // stable: ties keep order
            counts.truncate(max_user_contribution);
        }
        counts.into_iter().map(|(word, _)| word).collect()
    }

    /// Every discovered prefix extended by every extension (the `'$'` column excluded), row by
    /// row: the candidates whose votes [`extend_prefixes`] reads, in the same order.
    pub fn extended_prefix_candidates(
        discovered_prefixes: &[String],
        extensions_wo_terminator: &[char],
    ) -> Vec<String> {
        discovered_prefixes
            .iter()
            .flat_map(|prefix| {
                extensions_wo_terminator.iter().map(move |&c| {
                    let mut candidate = prefix.clone();
                    candidate.push(c);
                    candidate
                })
            })
            .collect()
    }

    /// The next discovered prefixes from the flattened candidate votes `prefix_votes` (in the
    /// order of [`extended_prefix_candidates`]): the candidates with at least `threshold` votes
    /// and, when there are more than `max_num_prefixes` candidates, also among the
    /// `max_num_prefixes` with the most votes (ties to the lower index, as `tf.math.top_k`).
    /// Returned in candidate order.
    ///
    /// # Panics
    ///
    /// If `prefix_votes` does not have one entry per candidate.
    pub fn extend_prefixes(
        prefix_votes: &[u64],
        discovered_prefixes: &[String],
        extensions_wo_terminator: &[char],
        max_num_prefixes: usize,
        threshold: u64,
    ) -> Vec<String> {
        let candidates = extended_prefix_candidates(discovered_prefixes, extensions_wo_terminator);
        assert_eq!(
            candidates.len(),
            prefix_votes.len(),
            "one vote count per candidate"
        );
        let mut keep: Vec<bool> = prefix_votes.iter().map(|&v| v >= threshold).collect();
        if candidates.len() > max_num_prefixes {
            let mut order: Vec<usize> = (0..candidates.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(prefix_votes[i])); // stable
            let mut top = vec![false; candidates.len()];
            for &i in &order[..max_num_prefixes] {
                top[i] = true;
            }
            for (k, t) in keep.iter_mut().zip(top) {
                *k &= t;
            }
        }
        candidates
            .into_iter()
            .zip(keep)
            .filter_map(|(candidate, k)| k.then_some(candidate))
            .collect()
    }

    /// What one decoding step finds.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Decoded {
        /// The discovered prefixes whose `'$'` column reached the threshold, with that count
        /// (the word is the prefix itself, without `'$'`), in discovered order.
        pub heavy_hitters: Vec<(String, u64)>,
        /// The next discovered prefixes ([`extend_prefixes`]).
        pub new_prefixes: Vec<String>,
    }

    /// The parameters of TFF TrieHH.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct TffConfig {
        extensions: Vec<char>,
        max_num_prefixes: usize,
        max_user_contribution: usize,
        num_sub_rounds: u64,
        threshold: u64,
    }

    impl TffConfig {
        /// Validates the parameters. `extensions` is the alphabet without `'$'`
        /// (`possible_prefix_extensions` minus its last entry).
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if `extensions` is empty, holds `'$'` or a character
        /// twice, or `max_num_prefixes`, `max_user_contribution` or `num_sub_rounds` is 0.
        pub fn new(
            extensions: &[char],
            max_num_prefixes: usize,
            max_user_contribution: usize,
            num_sub_rounds: u64,
            threshold: u64,
        ) -> Result<Self, Error> {
            if extensions.is_empty() {
                return Err(Error::invalid("extensions", "[]", "at least one character"));
            }
            for (i, &c) in extensions.iter().enumerate() {
                if c == TERMINATOR || extensions[..i].contains(&c) {
                    return Err(Error::invalid(
                        "extensions",
                        c,
                        "distinct characters other than '$'",
                    ));
                }
            }
            if max_num_prefixes == 0 {
                return Err(Error::invalid("max_num_prefixes", 0, "at least 1"));
            }
            if max_user_contribution == 0 {
                return Err(Error::invalid("max_user_contribution", 0, "at least 1"));
            }
            if num_sub_rounds == 0 {
                return Err(Error::invalid("num_sub_rounds", 0, "at least 1"));
            }
            Ok(Self {
                extensions: extensions.to_vec(),
                max_num_prefixes,
                max_user_contribution,
                num_sub_rounds,
                threshold,
            })
        }

        /// The extensions without `'$'`.
        pub fn extensions(&self) -> &[char] {
            &self.extensions
        }

        /// The prefix length of round `round_num`, `⌊round_num / num_sub_rounds⌋`.
        pub fn prefix_length(&self, round_num: u64) -> usize {
            // Unwrap safety: a prefix length is compared with word lengths, which are usize.
            usize::try_from(round_num / self.num_sub_rounds).unwrap_or(usize::MAX)
        }

        /// An all-zero vote matrix of the right shape.
        pub fn zero_votes(&self) -> VoteMatrix {
            VoteMatrix::zeros(self.max_num_prefixes, self.extensions.len() + 1)
        }

        /// The vote matrix of a client holding `words` in round `round_num`
        /// (`client_update`): one vote per kept word whose prefix of the round's length is
        /// discovered and whose next character is an extension or the terminator.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if there are more discovered prefixes than
        /// `max_num_prefixes` rows.
        pub fn client_votes<S: AsRef<str>>(
            &self,
            words: &[S],
            discovered_prefixes: &[String],
            round_num: u64,
        ) -> Result<VoteMatrix, Error> {
            self.check_discovered(discovered_prefixes)?;
            let mut votes = self.zero_votes();
            if discovered_prefixes.is_empty() {
                return Ok(votes);
            }
            let e = self.prefix_length(round_num);
            for word in top_elements(words, self.max_user_contribution) {
                let mut u: Vec<char> = word.to_lowercase().chars().collect();
                u.push(TERMINATOR);
                if u.len() <= e {
                    continue; // too short, or nothing after the prefix (TFF's empty substr)
                }
                let prefix: String = u[..e].iter().collect();
                let Some(row) = discovered_prefixes.iter().position(|p| *p == prefix) else {
                    continue;
                };
                let column = if u[e] == TERMINATOR {
                    Some(self.extensions.len())
                } else {
                    self.extensions.iter().position(|&c| c == u[e])
                };
                if let Some(column) = column {
                    votes.add(row, column);
                }
            }
            Ok(votes)
        }

        /// Decodes accumulated `votes` over `discovered_prefixes`: the heavy hitters and the
        /// next discovered prefixes.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if there are more discovered prefixes than rows, or
        /// `votes` does not have the configuration's shape.
        pub fn decode(
            &self,
            discovered_prefixes: &[String],
            votes: &VoteMatrix,
        ) -> Result<Decoded, Error> {
            self.check_discovered(discovered_prefixes)?;
            self.check_shape(votes)?;
            let last = self.extensions.len();
            let heavy_hitters = discovered_prefixes
                .iter()
                .enumerate()
                .filter(|&(i, _)| votes.row(i)[last] >= self.threshold)
                .map(|(i, prefix)| (prefix.clone(), votes.row(i)[last]))
                .collect();
            let prefix_votes: Vec<u64> = (0..discovered_prefixes.len())
                .flat_map(|i| votes.row(i)[..last].iter().copied())
                .collect();
            let new_prefixes = extend_prefixes(
                &prefix_votes,
                discovered_prefixes,
                &self.extensions,
                self.max_num_prefixes,
                self.threshold,
            );
            Ok(Decoded {
                heavy_hitters,
                new_prefixes,
            })
        }

        /// The server's state before the first round: the empty prefix discovered, round 0.
        pub fn initial_state(&self) -> ServerState {
            ServerState {
                discovered_prefixes: vec![String::new()],
                heavy_hitters: Vec::new(),
                round_num: 0,
                accumulated: self.zero_votes(),
            }
        }

        /// One server step (`server_update`) with the summed client votes of a sub-round:
        /// nothing once no prefix is discovered; otherwise the votes are accumulated, and when
        /// `(round_num + 1)` is a multiple of `num_sub_rounds` they are decoded
        /// ([`TffConfig::decode`]), the heavy hitters appended, the prefixes replaced and the
        /// accumulator reset. `round_num` advances by one either way.
        ///
        /// # Errors
        ///
        /// [`Error::InvalidParameter`] if `sub_round_votes` or the state's accumulator does not
        /// have the configuration's shape.
        pub fn server_update(
            &self,
            state: &mut ServerState,
            sub_round_votes: &VoteMatrix,
        ) -> Result<(), Error> {
            if state.discovered_prefixes.is_empty() {
                return Ok(());
            }
            self.check_shape(sub_round_votes)?;
            self.check_shape(&state.accumulated)?;
            state.accumulated.accumulate(sub_round_votes)?;
            if (state.round_num + 1).is_multiple_of(self.num_sub_rounds) {
                let decoded = self.decode(&state.discovered_prefixes, &state.accumulated)?;
                state.heavy_hitters.extend(decoded.heavy_hitters);
                state.discovered_prefixes = decoded.new_prefixes;
                state.accumulated.clear();
            }
            state.round_num += 1;
            Ok(())
        }

        fn check_discovered(&self, discovered_prefixes: &[String]) -> Result<(), Error> {
            if discovered_prefixes.len() > self.max_num_prefixes {
                return Err(Error::invalid(
                    "discovered_prefixes",
                    discovered_prefixes.len(),
                    "at most max_num_prefixes prefixes",
                ));
            }
            Ok(())
        }

        fn check_shape(&self, votes: &VoteMatrix) -> Result<(), Error> {
            if (votes.rows(), votes.columns()) != (self.max_num_prefixes, self.extensions.len() + 1)
            {
                return Err(Error::invalid(
                    "votes",
                    format!("{}×{}", votes.rows(), votes.columns()),
                    "a max_num_prefixes × (extensions + 1) vote matrix",
                ));
            }
            Ok(())
        }
    }

    /// The server's state between sub-rounds.
    #[derive(Clone)]
    pub struct ServerState {
        discovered_prefixes: Vec<String>,
        heavy_hitters: Vec<(String, u64)>,
        round_num: u64,
        accumulated: VoteMatrix,
    }

    impl ServerState {
        /// A state resumed mid-run: `discovered_prefixes` at `round_num` with `accumulated`
        /// votes of the earlier sub-rounds and no heavy hitter yet.
        pub fn resume(
            discovered_prefixes: Vec<String>,
            round_num: u64,
            accumulated: VoteMatrix,
        ) -> Self {
            Self {
                discovered_prefixes,
                heavy_hitters: Vec::new(),
                round_num,
                accumulated,
            }
        }

        /// The prefixes clients vote on next.
        pub fn discovered_prefixes(&self) -> &[String] {
            &self.discovered_prefixes
        }

        /// The heavy hitters found so far, with the count they were decoded with.
        pub fn heavy_hitters(&self) -> &[(String, u64)] {
            &self.heavy_hitters
        }

        /// The round number (sub-rounds included).
        pub fn round_num(&self) -> u64 {
            self.round_num
        }

        /// The votes accumulated since the last decoding.
        pub fn accumulated_votes(&self) -> &VoteMatrix {
            &self.accumulated
        }

        /// Whether the run is over (no prefix is discovered).
        pub fn is_done(&self) -> bool {
            self.discovered_prefixes.is_empty()
        }
    }
}
