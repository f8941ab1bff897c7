//! Running TrieHH over a population: fixed-size sampling without replacement, one vote per
//! sampled client, thresholded release.

use std::borrow::Cow;

use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::{TrieHh, TrieHhOutput, TrieHhQuery};
use tally_core::sampling::uniform_subset;
use tally_core::task::Task;

use crate::population::Population;
use crate::rng::{Purpose, round_seed, stream};

/// Runs a TrieHH task over `population`, each round drawing from its own ChaCha12 stream of
/// `seed`: deterministic for `(population, task, seed)`.
///
/// Each round, exactly as ALGORITHMS.md §2.2:
///
/// 1. a batch of `m` distinct clients is drawn uniformly without replacement with
///    [`uniform_subset`] (Floyd's algorithm on exact uniform integers: every `m`-subset of the
///    `n` clients has probability exactly `1/C(n, m)`);
/// 2. each sampled client casts the one vote the client-side code gives,
///    [`TrieHhQuery::respond`] (that is, `PrefixRound::report`). A vote depends on the word
///    alone, so it is computed once per distinct word in the batch, and the batch's votes are
///    counted in a dense array over the round's prefix ids;
/// 3. the counts go into the round's [`tally_core::heavy_hitters::TrieHhAggregator`], whose
///    release (threshold, then beam) the task observes.
///
/// # Which clients are sampled
///
/// The clients are numbered in order of their word's id (the population's
/// [`Population::item_counts`]: the holders of the first word, then those of the second, …)
/// and the batch is a uniform `m`-subset of those positions. Renumbering the clients is a
/// fixed bijection, so the batch is still exactly a uniform `m`-subset of the clients; what
/// it buys is that the batch's words are read off by walking the sorted positions past the
/// words' boundaries, without touching the `n` clients' items in memory. A round costs
/// `O(m)` plus one report per distinct word in the batch.
///
/// # Panics
///
/// If the population does not have the `n` clients the task was configured for (the
/// guarantee would not hold).
pub fn run_triehh(population: &Population, mut task: TrieHh, seed: u64) -> TrieHhOutput {
    let n = task.config().population;
    assert_eq!(
        population.len() as u64,
        n,
        "TrieHH was configured for {n} clients, the population has {}",
        population.len()
    );
    let mut words = Words::new(population);
    while let Some(query) = task.next_query() {
        let mut rng = stream(round_seed(seed, query.prefixes.round), Purpose::Round, 0);
        // Unwrap safety: `TrieHh::new` checked 1 ≤ m ≤ n, and n is the population size.
        let batch = uniform_subset(n, query.batch_size, &mut rng).expect("m ≤ n");
        task.observe(run_round(&query, &batch, &mut words));
    }
    task.finish()
}

/// One round over a drawn batch of client positions (sorted): count the batch's votes and
/// release them.
fn run_round(query: &TrieHhQuery, batch: &[u64], words: &mut Words<'_>) -> Vec<String> {
    let mut prefix_ids: FxHashMap<String, usize> = FxHashMap::default();
    let mut votes: Vec<u64> = Vec::new();
    for (word, holders) in words.count(batch) {
        if let Some(prefix) = query.respond(words.name(word)) {
            let next = votes.len();
            let id = *prefix_ids.entry(prefix).or_insert(next);
            if id == next {
                votes.push(0);
            }
            votes[id] += holders;
        }
    }
    let mut aggregator = query.aggregator();
    for (prefix, id) in prefix_ids {
        aggregator.absorb_many(prefix, votes[id]);
    }
    aggregator.release()
}

/// The population's distinct words in id order, with the client positions they cover and
/// their names (computed on first use).
struct Words<'a> {
    population: &'a Population,
    /// `(word id, end)`: the word's holders are the positions `previous end..end`.
    words: Vec<(u32, u64)>,
    names: Vec<Option<Cow<'a, str>>>,
}

impl<'a> Words<'a> {
    fn new(population: &'a Population) -> Self {
        let mut end = 0;
        let words: Vec<(u32, u64)> = population
            .item_counts()
            .iter()
            .map(|&(id, count)| {
                end += count;
                (id, end)
            })
            .collect();
        debug_assert_eq!(end, population.len() as u64);
        Self {
            population,
            names: vec![None; words.len()],
            words,
        }
    }

    /// The words held in `batch` (sorted positions), as `(word index, number of positions)`.
    fn count(&self, batch: &[u64]) -> Vec<(usize, u64)> {
        let mut counted = Vec::new();
        let mut word = 0;
        let mut i = 0;
        while i < batch.len() {
            let position = batch[i];
            // The next word in the batch is usually close: step, then search.
            let mut steps = 0;
            while self.words[word].1 <= position && steps < 8 {
                word += 1;
                steps += 1;
            }
            if self.words[word].1 <= position {
                word += self.words[word..].partition_point(|&(_, end)| end <= position);
            }
            let end = self.words[word].1;
            let first = i;
            while i < batch.len() && batch[i] < end {
                i += 1;
            }
            counted.push((word, (i - first) as u64));
        }
        counted
    }

    /// The name of the word at `index`.
    fn name(&mut self, index: usize) -> &str {
        let (id, _) = self.words[index];
        let population = self.population;
        // Unwrap safety: held ids are below the domain size, so they have names.
        self.names[index].get_or_insert_with(|| population.item_name(id).expect("id in domain"))
    }
}
