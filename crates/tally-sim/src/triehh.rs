//! Running TrieHH over a population: fixed-size sampling without replacement, one vote per
//! sampled client, thresholded release.

use std::borrow::Cow;

use tally_core::heavy_hitters::{TrieHh, TrieHhOutput, TrieHhQuery};
use tally_core::sampling::uniform_subset_counts;
use tally_core::task::Task;

use crate::counted::CountedPopulation;
use crate::population::Population;
use crate::rng::{Purpose, round_seed, stream};

/// Runs a TrieHH task over `population`, each round drawing from its own ChaCha12 stream of
/// `seed`: deterministic for `(population, task, seed)`.
///
/// Each round, exactly as docs/algorithms.md §2.2:
///
/// 1. a batch of `m` distinct clients is drawn uniformly without replacement, by Floyd's
///    algorithm on exact uniform integers: every `m`-subset of the `n` clients has
///    probability exactly `1/C(n, m)`;
/// 2. each sampled client casts the one vote the client-side code gives,
///    [`TrieHhQuery::respond`] (that is, `PrefixRound::report`). A vote depends on the word
///    alone, so it is computed once per distinct word in the batch and counted for all the
///    word's sampled holders;
/// 3. the votes go into the round's [`tally_core::heavy_hitters::TrieHhAggregator`], whose
///    release (threshold, then beam) the task observes.
///
/// # Which clients are sampled
///
/// The clients are numbered in order of their word's id (the population's
/// [`Population::item_counts`]: the holders of the first word, then those of the second, …),
/// and the batch is a uniform `m`-subset of those numbers, counted per word with
/// [`uniform_subset_counts`] (the same Floyd draws as `uniform_subset`, each word's range of
/// numbers counted in the sampler's bitset). Renumbering the clients is a fixed bijection, so
/// the batch is still exactly a uniform `m`-subset of the clients; it only spares reading the
/// sampled clients' items from memory one by one. A round costs `O(m + n/64)` plus one step
/// per distinct word of the population and one report per distinct word in the batch.
///
/// # Panics
///
/// If the population does not have the `n` clients the task was configured for (the
/// guarantee would not hold).
pub fn run_triehh(population: &Population, task: TrieHh, seed: u64) -> TrieHhOutput {
    let mut words = Words::new(population);
    let ends = std::mem::take(&mut words.ends);
    run_rounds(task, seed, population.len() as u64, &ends, &mut words)
}

/// Runs a TrieHH task over a counted population, as [`run_triehh`] does over the loaded one:
/// the clients are numbered in order of their word (the counted items' order), so the same
/// seed gives another, equally distributed, release.
///
/// # Panics
///
/// If the population does not have the `n` clients the task was configured for.
pub fn run_triehh_counted(population: &CountedPopulation, task: TrieHh, seed: u64) -> TrieHhOutput {
    let items = population.items();
    let ends: Vec<u64> = items
        .iter()
        .scan(0, |end, (_, count)| {
            *end += count;
            Some(*end)
        })
        .collect();
    run_rounds(
        task,
        seed,
        population.clients(),
        &ends,
        &mut CountedNames(items),
    )
}

/// The rounds of `task` over `n` clients numbered by word: the holders of word `k` are the
/// clients `ends[k − 1]..ends[k]`, and `names` names it.
fn run_rounds(
    mut task: TrieHh,
    seed: u64,
    clients: u64,
    ends: &[u64],
    names: &mut impl WordNames,
) -> TrieHhOutput {
    let n = task.config().population;
    assert_eq!(
        clients, n,
        "TrieHH was configured for {n} clients, the population has {clients}"
    );
    while let Some(query) = task.next_query() {
        let mut rng = stream(round_seed(seed, query.prefixes.round), Purpose::Round, 0);
        // Unwrap safety: `TrieHh::new` checked 1 ≤ m ≤ n, n is the population size, and the
        // word ranges end at n.
        let holders = uniform_subset_counts(n, query.batch_size, ends, &mut rng)
            .expect("m ≤ n and ranges covering 0..n");
        task.observe(run_round(&query, &holders, names));
    }
    task.finish()
}

/// One round: the number of sampled holders of each word is `holders[word]`; each distinct
/// sampled word's vote is computed once and counted that many times, then released.
fn run_round(query: &TrieHhQuery, holders: &[u64], names: &mut impl WordNames) -> Vec<String> {
    let mut aggregator = query.aggregator();
    for (word, &count) in holders.iter().enumerate() {
        if count > 0
            && let Some(prefix) = query.respond(names.name(word))
        {
            aggregator.absorb_many(prefix, count);
        }
    }
    aggregator.release()
}

/// The texts of the words a round's clients are numbered by.
trait WordNames {
    /// The text of the word at `index`.
    fn name(&mut self, index: usize) -> &str;
}

/// A counted population's words, in its items' order.
struct CountedNames<'a>(&'a [(String, u64)]);

impl WordNames for CountedNames<'_> {
    fn name(&mut self, index: usize) -> &str {
        &self.0[index].0
    }
}

/// The population's distinct words in id order, the client numbers they cover and their
/// names (computed on first use).
struct Words<'a> {
    population: &'a Population,
    /// The word ids, in increasing order.
    ids: Vec<u32>,
    /// `ends[k]`: the holders of word `k` are the clients numbered `ends[k − 1]..ends[k]`.
    ends: Vec<u64>,
    names: Vec<Option<Cow<'a, str>>>,
}

impl<'a> Words<'a> {
    fn new(population: &'a Population) -> Self {
        let mut end = 0;
        let (ids, ends): (Vec<u32>, Vec<u64>) = population
            .item_counts()
            .iter()
            .map(|&(id, count)| {
                end += count;
                (id, end)
            })
            .unzip();
        debug_assert_eq!(end, population.len() as u64);
        Self {
            population,
            names: vec![None; ids.len()],
            ids,
            ends,
        }
    }
}

impl WordNames for Words<'_> {
    fn name(&mut self, index: usize) -> &str {
        let id = self.ids[index];
        let population = self.population;
        // Unwrap safety: held ids are below the domain size, so they have names.
        self.names[index].get_or_insert_with(|| population.item_name(id).expect("id in domain"))
    }
}
