//! Running heavy-hitter tasks over a population.

use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::{PrefixRound, TrieHhPlus, TrieOutput};
use tally_core::histogram::SampleThreshold;
use tally_core::shuffle::ShuffleHeavyHitters;
use tally_core::task::Task;

use crate::execute::{ExecutionPath, run_sample_threshold};
use crate::population::Population;
use crate::rng::round_seed;
use crate::round::run_counted_round;

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

/// Runs Ghazi et al.'s prefix-tree heavy hitters over the devices, `counts[x]` of them holding
/// item `x` (one entry per item of `0..2^L`): the task's level rounds
/// ([`PrefixLevelRound`](tally_core::shuffle::PrefixLevelRound), every device answering with
/// its prefix) are run in order by the round executor ([`run_counted_round`]), level `i` with
/// its own stream of `seed`, and the task decodes their releases
/// ([`ShuffleHeavyHitters::decode`]).
///
/// # Panics
///
/// If `counts` does not have one entry per item.
pub fn run_shuffle_heavy_hitters(
    mut task: ShuffleHeavyHitters,
    counts: &[u64],
    seed: u64,
) -> Vec<(u32, f64)> {
    assert_eq!(counts.len(), task.domain() as usize, "one count per item");
    let mut level = 0;
    while let Some(round) = task.next_query() {
        task.observe(run_counted_round(&round, counts, round_seed(seed, level)));
        level += 1;
    }
    task.finish()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    /// Ten million devices over `0..8`, 40% of them holding item 5 and 25% item 2, the rest
    /// spread evenly: at `τ_HH` = 20% of them, the two heavy items are found with estimates
    /// near their counts, and the same seed gives the same release.
    #[test]
    fn finds_the_heavy_items_through_the_level_rounds() {
        let users = 10_000_000_u64;
        let mut counts = vec![users * 35 / 600; 8];
        counts[5] = users * 2 / 5;
        counts[2] = users / 4;
        counts[0] += users - counts.iter().sum::<u64>();
        let protocol = ShuffleHeavyHitters::new(
            3,
            1.0,
            1e-6,
            0.01,
            users,
            users as f64 / 5.0,
            &mut ChaCha20Rng::seed_from_u64(1),
        )
        .unwrap();
        let found = run_shuffle_heavy_hitters(protocol.clone(), &counts, 2);
        let items: Vec<u32> = found.iter().map(|&(item, _)| item).collect();
        assert_eq!(items, [2, 5], "{found:?}");
        for &(item, estimate) in &found {
            let truth = counts[item as usize] as f64;
            assert!(
                (estimate - truth).abs() < 0.05 * truth,
                "{item}: {estimate}"
            );
        }
        assert_eq!(run_shuffle_heavy_hitters(protocol, &counts, 2), found);
    }
}
