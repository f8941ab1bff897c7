//! Running heavy-hitter tasks over a population.

use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::{PrefixRound, TrieHhPlus, TrieOutput};
use tally_core::histogram::SampleThreshold;
use tally_core::task::Task;

use crate::execute::{ExecutionPath, run_sample_threshold};
use crate::population::Population;
use crate::rng::round_seed;

/// Runs a TrieHH++ task over `population` along `path`; each level draws from its own stream
/// of `seed`.
pub fn run_triehh_plus(
    population: &Population,
    mut task: TrieHhPlus,
    path: ExecutionPath,
    seed: u64,
) -> TrieOutput {
    while let Some(query) = task.next_query() {
        let level_seed = round_seed(seed, query.prefixes.round);
        let release = run_prefix_round(
            population,
            &query.prefixes,
            &query.mechanism,
            path,
            level_seed,
        );
        task.observe(release);
    }
    task.finish()
}

/// One S&T round over the prefixes the clients report for `prefixes`, released as
/// `(prefix, count, estimate)`.
///
/// A client's report is a function of its word alone ([`PrefixRound::report`], the code a
/// device runs), so it is computed once per distinct word; clients that report nothing are left
/// out, which does not change the distribution of the others' independent sampling coins.
pub fn run_prefix_round(
    population: &Population,
    prefixes: &PrefixRound,
    mechanism: &SampleThreshold,
    path: ExecutionPath,
    seed: u64,
) -> Vec<(String, u64, f64)> {
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut names: Vec<String> = Vec::new();
    let report_of_word: Vec<Option<u32>> = (0..population.domain_size())
        .map(|word| {
            // Unwrap safety: ids below the domain size have names.
            let name = population.item_name(word as u32).expect("id in domain");
            prefixes.report(&name).map(|prefix| {
                *ids.entry(prefix).or_insert_with_key(|prefix| {
                    names.push(prefix.clone());
                    // Unwrap safety: at most one prefix per word, and words have u32 ids.
                    u32::try_from(names.len() - 1).expect("u32 prefix id")
                })
            })
        })
        .collect();
    let items: Vec<u32> = population
        .items()
        .iter()
        .filter_map(|&word| report_of_word[word as usize])
        .collect();
    if items.is_empty() {
        return Vec::new();
    }
    let description = format!("round {} prefixes", prefixes.round);
    // Unwrap safety: the items are non-empty and index `names`.
    let level = Population::from_ids(items, names.clone(), description).expect("valid prefixes");
    run_sample_threshold(&level, mechanism, path, seed)
        .items
        .into_iter()
        .map(|cell| (names[cell.item as usize].clone(), cell.count, cell.estimate))
        .collect()
}
