//! Running TrieHH over a population: fixed-size sampling without replacement, one vote per
//! sampled client, thresholded release.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::{TrieHh, TrieHhOutput, TrieHhQuery};
use tally_core::sampling::uniform_subset;
use tally_core::task::Task;

use crate::population::Population;
use crate::rng::{Purpose, round_seed, stream};

/// Domains up to this size (or up to twice the population) cache each word's report in a
/// dense array; larger, sparsely held synthetic domains use a hash map.
const DENSE_WORD_LIMIT: usize = 1 << 24;

/// A word's report not computed yet this round.
const UNKNOWN: u32 = u32::MAX;
/// A word that does not vote this round.
const SILENT: u32 = u32::MAX - 1;

/// Runs a TrieHH task over `population`, each round drawing from its own ChaCha12 stream of
/// `seed`: deterministic for `(population, task, seed)`.
///
/// Each round, exactly as ALGORITHMS.md §2.2:
///
/// 1. a batch of `m` distinct clients is drawn uniformly without replacement with
///    [`uniform_subset`] (Floyd's algorithm on exact uniform integers: every `m`-subset of
///    the `n` clients has probability exactly `1/C(n, m)`);
/// 2. each sampled client casts the one vote the client-side code gives,
///    [`TrieHhQuery::respond`] (= `PrefixRound::report`); a vote depends on the word alone, so
///    it is computed once per distinct word the batch holds and the votes are counted in a
///    dense array over the round's prefix ids;
/// 3. the counts go into the round's [`tally_core::heavy_hitters::TrieHhAggregator`], whose
///    release (threshold, beam) the task observes.
///
/// Only the sampled clients are touched: a round costs `O(m)` plus the reports of the
/// distinct words in the batch.
///
/// # Panics
///
/// If the population does not have the `n` clients the task was configured for (its
/// guarantee would not hold).
pub fn run_triehh(population: &Population, mut task: TrieHh, seed: u64) -> TrieHhOutput {
    let n = task.config().population;
    assert_eq!(
        population.len() as u64,
        n,
        "TrieHH was configured for {n} clients, the population has {}",
        population.len()
    );
    let mut words = WordReports::new(population);
    while let Some(query) = task.next_query() {
        let mut rng = stream(round_seed(seed, query.prefixes.round), Purpose::Round, 0);
        // Unwrap safety: `TrieHh::new` checked 1 ≤ m ≤ n, and n is the population size.
        let batch = uniform_subset(query.population, query.batch_size, &mut rng)
            .expect("batch of at most n clients");
        task.observe(run_round(population, &query, &batch, &mut words));
    }
    task.finish()
}

/// One round over a drawn batch: count the batch's votes and release them.
fn run_round(
    population: &Population,
    query: &TrieHhQuery,
    batch: &[u64],
    words: &mut WordReports<'_>,
) -> Vec<String> {
    words.start_round();
    let mut prefix_ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut prefixes: Vec<String> = Vec::new();
    let mut votes: Vec<u64> = Vec::new();
    let items = population.items();
    for &client in batch {
        let word = items[client as usize];
        let mut report = words.get(word);
        if report == UNKNOWN {
            report = match query.respond(&words.name(word)) {
                None => SILENT,
                Some(prefix) => *prefix_ids.entry(prefix).or_insert_with_key(|prefix| {
                    prefixes.push(prefix.clone());
                    votes.push(0);
                    // Unwrap safety: at most one prefix per distinct word, and words have u32
                    // ids below `SILENT`.
                    u32::try_from(prefixes.len() - 1).expect("u32 prefix id")
                }),
            };
            words.set(word, report);
        }
        if report != SILENT {
            votes[report as usize] += 1;
        }
    }
    let mut aggregator = query.aggregator();
    for (prefix, &count) in prefixes.iter().zip(&votes) {
        aggregator.absorb_many(prefix, count);
    }
    aggregator.release()
}

/// Each word's report in the current round, computed on first use, and the words' names.
struct WordReports<'a> {
    population: &'a Population,
    cache: Cache,
}

enum Cache {
    /// Indexed by word id.
    Dense(Vec<u32>),
    /// For large synthetic domains.
    Sparse(FxHashMap<u32, u32>),
}

impl<'a> WordReports<'a> {
    fn new(population: &'a Population) -> Self {
        let domain = population.domain_size();
        let cache = if domain <= DENSE_WORD_LIMIT.max(2 * population.len()) {
            Cache::Dense(vec![UNKNOWN; domain])
        } else {
            Cache::Sparse(FxHashMap::default())
        };
        Self { population, cache }
    }

    fn start_round(&mut self) {
        match &mut self.cache {
            Cache::Dense(reports) => reports.fill(UNKNOWN),
            Cache::Sparse(reports) => reports.clear(),
        }
    }

    fn get(&self, word: u32) -> u32 {
        match &self.cache {
            Cache::Dense(reports) => reports[word as usize],
            Cache::Sparse(reports) => reports.get(&word).copied().unwrap_or(UNKNOWN),
        }
    }

    fn set(&mut self, word: u32, report: u32) {
        match &mut self.cache {
            Cache::Dense(reports) => reports[word as usize] = report,
            Cache::Sparse(reports) => {
                reports.insert(word, report);
            }
        }
    }

    fn name(&self, word: u32) -> Cow<'a, str> {
        // Unwrap safety: every client's item id is below the domain size, so it has a name.
        self.population.item_name(word).expect("id in domain")
    }
}
