//! Populations kept as their distinct items with holder counts, and the multi-round tasks that
//! need nothing more.
//!
//! A round whose clients are Poisson sampled sees, for every report `r`, the number of
//! sampled clients reporting `r`: a sum of independent `Ber(p)` coins, one per client whose
//! report is `r`, that is `Bin(N_r, p)` with `N_r` the number of such clients, independently
//! across reports. When a client's report is a function of its item alone (TrieHH++'s prefix
//! reports), `N_r` is the sum of the holder counts of the items reporting `r`, so each round
//! needs only the items' counts: one [`ExactBinomial`] per distinct report, drawn exactly
//! ([`tally_core::sampling::exact_binomial`]'s bit-sliced coins or geometric gaps). The law is
//! that of one exact coin per client, as on [`ExecutionPath::GapSkipping`], while a round costs
//! `O(distinct items + n/8 random words)` instead of touching every sampled client.
//!
//! A file is read once ([`CountedPopulation::from_file`]), streamed like
//! [`crate::stream_sample_threshold`]'s input, and memory holds one count per distinct item
//! rather than one id per client.
//!
//! [`ExecutionPath::GapSkipping`]: crate::ExecutionPath::GapSkipping

use std::collections::BTreeMap;
use std::path::Path;

use rand_distr::Distribution;
use rayon::prelude::*;
use tally_core::heavy_hitters::{PrefixRound, TrieHhPlus, TrieOutput, release_prefix_selection};
use tally_core::histogram::{PartitionSelection, SampleThreshold, SampleThresholdRelease};
use tally_core::sampling::ExactBinomial;
use tally_core::task::Task;

use crate::Error;
use crate::population::Population;
use crate::rng::{Purpose, round_seed, stream};
use crate::stream_histogram::{EveryClient, StreamFormat, stream_counts};

/// A population as its distinct items and how many clients hold each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountedPopulation {
    /// `(item, holders)`, by item, every count at least 1.
    items: Vec<(String, u64)>,
    clients: u64,
    description: String,
}

impl CountedPopulation {
    /// Counts the clients of the file at `path` (`.gz` is decompressed) in `format`, reading it
    /// once as a stream on all cores; `progress` is called with the bytes read so far. The
    /// clients are those [`Population::from_lines_file`] or [`Population::from_tsv_file`]
    /// would load (a client-level TSV client holds its row chosen exactly uniformly with the
    /// mode's seed).
    ///
    /// # Errors
    ///
    /// As [`Population::from_lines_file`] or [`Population::from_tsv_file`].
    pub fn from_file(
        path: &Path,
        format: StreamFormat,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Self, Error> {
        let (clients, counts, description) = stream_counts(path, format, &EveryClient, progress)?;
        Ok(Self {
            items: counts.into_sorted(),
            clients,
            description,
        })
    }

    /// The counts of a loaded population.
    pub fn from_population(population: &Population) -> Self {
        let mut items: Vec<(String, u64)> = population
            .item_counts()
            .iter()
            .map(|&(id, count)| {
                // Unwrap safety: held ids are below the domain size, so they have names.
                let name = population.item_name(id).expect("id in domain");
                (name.into_owned(), count)
            })
            .collect();
        items.sort_unstable();
        Self {
            items,
            clients: population.len() as u64,
            description: population.description().to_owned(),
        }
    }

    /// The distinct items with their holder counts, by item.
    pub fn items(&self) -> &[(String, u64)] {
        &self.items
    }

    /// The number of clients.
    pub fn clients(&self) -> u64 {
        self.clients
    }

    /// Where the clients came from.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// Runs a TrieHH++ task over `population`; level `ℓ` draws from its own stream of `seed`.
///
/// Each level's sampled reporters of a prefix are drawn as one exact `Bin(N, p_s)`, `N` the
/// number of clients whose word reports that prefix: the sum of `N` independent exact
/// `Ber(p_s)` coins, one per client, independently across prefixes. The run is therefore
/// equal in law to [`crate::run_triehh_plus`] on the loaded population along
/// [`crate::ExecutionPath::GapSkipping`], though not draw for draw: the same seed gives
/// another, equally distributed, release.
pub fn run_triehh_plus_counted(
    population: &CountedPopulation,
    mut task: TrieHhPlus,
    seed: u64,
) -> TrieOutput {
    while let Some(query) = task.next_query() {
        let level_seed = round_seed(seed, query.prefixes.round);
        let release =
            counted_prefix_round(population, &query.prefixes, &query.mechanism, level_seed);
        task.observe(release);
    }
    task.finish()
}

/// Runs a TrieHH++ task whose levels are a partition selection over `population`: level `ℓ`
/// counts the clients reporting each prefix exactly and releases them with the noise of its
/// own stream of `seed` ([`release_prefix_selection`]). Nobody is sampled, so the counts are
/// those of one report per client.
///
/// # Errors
///
/// [`tally_core::Error::InvalidParameter`] past `u32::MAX` distinct prefixes in a level.
pub fn run_triehh_plus_selection_counted(
    population: &CountedPopulation,
    mut task: TrieHhPlus<PartitionSelection>,
    seed: u64,
) -> Result<TrieOutput, tally_core::Error> {
    while let Some(query) = task.next_query() {
        let level_seed = round_seed(seed, query.prefixes.round);
        let release = release_prefix_selection(
            &query.mechanism,
            prefix_reporters(population, &query.prefixes),
            &mut stream(level_seed, Purpose::PartitionSelection, 0),
        )?;
        task.observe(release);
    }
    Ok(task.finish())
}

/// How many clients of `population` report each prefix for `prefixes`, by prefix.
fn prefix_reporters(population: &CountedPopulation, prefixes: &PrefixRound) -> Vec<(String, u64)> {
    let mut reporters: BTreeMap<String, u64> = BTreeMap::new();
    for (word, count) in &population.items {
        if let Some(prefix) = prefixes.report(word) {
            *reporters.entry(prefix).or_insert(0) += count;
        }
    }
    reporters.into_iter().collect()
}

/// One S&T round over the prefixes the clients report for `prefixes`, released as
/// `(prefix, count, estimate)`: each prefix's sampled holders are `Bin(N, p)`, `N` the number
/// of clients reporting it; the `k`-th prefix in order draws from stream `k` of `seed`, so the
/// prefixes are drawn in parallel and the release does not depend on the number of threads.
fn counted_prefix_round(
    population: &CountedPopulation,
    prefixes: &PrefixRound,
    mechanism: &SampleThreshold,
    seed: u64,
) -> Vec<(String, u64, f64)> {
    let reporters = prefix_reporters(population, prefixes);
    let holders: Vec<u64> = reporters.iter().map(|&(_, holders)| holders).collect();
    let release = counted_round(&holders, mechanism, seed);
    let names: Vec<String> = reporters.into_iter().map(|(prefix, _)| prefix).collect();
    release
        .items
        .into_iter()
        .map(|cell| (names[cell.item as usize].clone(), cell.count, cell.estimate))
        .collect()
}

/// One S&T round over cells whose holders are counted, `holders[k]` clients in cell `k`: cell
/// `k`'s sampled holders are one exact `Bin(holders[k], p_s)` drawn from stream `k` of `seed`
/// (none for an empty cell), so the cells are drawn in parallel and the release does not
/// depend on the number of threads. Equal in law to one exact coin per client.
pub(crate) fn counted_round(
    holders: &[u64],
    mechanism: &SampleThreshold,
    seed: u64,
) -> SampleThresholdRelease {
    let rate = mechanism.params().sampling_rate();
    let sampled: Vec<u64> = holders
        .par_iter()
        .enumerate()
        .map(|(cell, &holders)| {
            if holders == 0 {
                return 0;
            }
            let mut rng = stream(seed, Purpose::CountedSampling, cell as u64);
            // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
            ExactBinomial::new(holders, rate)
                .expect("validated sampling rate")
                .sample(&mut rng)
        })
        .collect();
    let mut aggregator = mechanism.aggregator(sampled.len());
    for (cell, &count) in sampled.iter().enumerate() {
        if count > 0 {
            // Unwrap safety: callers have fewer than 2^32 cells (distinct words, or buckets of
            // a counted tree).
            aggregator.absorb_many(u32::try_from(cell).expect("u32 cell id"), count);
        }
    }
    aggregator.release()
}
