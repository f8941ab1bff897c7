//! Running TrieHH++ with keyed coins over rows of `(client id, item)`.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::{KeyedLevel, TrieHhPlus, TrieOutput, release_prefix_counts};
use tally_core::sampling::SamplingKey;
use tally_core::task::Task;

use crate::keyed::KeyedPopulation;

/// Runs `task` over `population` with keyed coins of `key`: each client holds the one row the
/// key chooses for it ([`KeyedPopulation::chosen_rows`]), and level `ℓ` counts the prefixes
/// of the clients whose coin for round `ℓ` comes up heads ([`KeyedLevel`]). No other
/// randomness is drawn: the output is a function of the rows (in any order), the task's
/// settings and the key.
///
/// # Errors
///
/// As [`KeyedLevel::new`]: the task's per-level mechanism must use a rate a keyed coin uses
/// (build it with [`keyed_level_mechanism`](tally_core::heavy_hitters::keyed_level_mechanism)).
pub fn run_keyed_triehh_plus(
    population: &KeyedPopulation,
    mut task: TrieHhPlus,
    key: &SamplingKey,
) -> Result<TrieOutput, tally_core::Error> {
    let clients: Vec<(String, &str)> = population
        .chosen_rows(key)
        .into_iter()
        .map(|(client, item)| {
            // Unwrap safety: chosen rows hold item ids of the population.
            (client, population.item_name(item).expect("item id"))
        })
        .collect();
    while let Some(query) = task.next_query() {
        let level = KeyedLevel::new(&query, key.clone())?;
        let counts = clients
            .par_iter()
            .fold(
                FxHashMap::<String, u64>::default,
                |mut counts, (client, word)| {
                    if let Some(prefix) = level.report(client.as_bytes(), word) {
                        *counts.entry(prefix).or_insert(0) += 1;
                    }
                    counts
                },
            )
            .reduce(FxHashMap::default, |mut a, b| {
                for (prefix, count) in b {
                    *a.entry(prefix).or_insert(0) += count;
                }
                a
            });
        task.observe(release_prefix_counts(&query.mechanism, counts));
    }
    Ok(task.finish())
}
