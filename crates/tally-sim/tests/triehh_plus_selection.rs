//! TrieHH++ with partition-selection levels on its real code path
//! (`run_triehh_plus_selection_counted`) against its law (fixed seeds, α = 1e-6): a word of
//! `c` clients is found only when each of its prefixes passes its level, each level drawing
//! fresh noise, so the number of levels it passes is geometric in the accountant's
//! `P[released | c]`, and every noisy count is `c` plus the calibrated noise.

#[path = "support/stats.rs"]
mod stats;

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::Method;
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig, plan_selection_levels};
use tally_core::histogram::PartitionSelection;
use tally_sim::{CountedPopulation, Population, run_triehh_plus_selection_counted};

/// Levels of every run: the word `"ab"` is found at level 3 (`"ab$"`).
const LEVELS: usize = 3;
const RUNS: u64 = 6_000;

/// `c` clients with `"ab"` and 500 with `"zz"` (always released, so the run never stops
/// early).
fn population(c: usize) -> CountedPopulation {
    let mut words = vec!["zz"; 500];
    words.extend(std::iter::repeat_n("ab", c));
    CountedPopulation::from_population(&Population::from_names(words, "law test").unwrap())
}

fn selection(method: Method, neighbours: Neighbours) -> PartitionSelection {
    plan_selection_levels(method, 3.0, 1e-3, LEVELS, Composition::Basic, neighbours).unwrap()
}

/// How many of the word's prefixes `"a"`, `"ab"`, `"ab$"` a run released (they can only be
/// released in that order), and the noisy counts of those it released.
fn passed_levels(
    population: &CountedPopulation,
    per_level: &PartitionSelection,
    seed: u64,
) -> (usize, Vec<u64>) {
    let task = TrieHhPlus::new(TrieHhPlusConfig {
        levels: LEVELS,
        segment: 1,
        restricted: true,
        per_level: per_level.clone(),
        composition: Composition::Basic,
        total_delta: 1e-3,
    })
    .unwrap();
    let output = run_triehh_plus_selection_counted(population, task, seed).unwrap();
    let counts: Vec<u64> = ["a", "ab", "ab$"]
        .into_iter()
        .map_while(|prefix| {
            output
                .nodes
                .iter()
                .find(|node| node.prefix == prefix)
                .map(|node| {
                    assert!((node.estimate - node.count as f64).abs() < 1e-9, "{node:?}");
                    node.count
                })
        })
        .collect();
    (counts.len(), counts)
}

#[test]
fn a_word_passes_each_level_with_the_probability_of_its_count() {
    for (method, neighbours) in [
        (Method::LaplaceThreshold, Neighbours::AddRemove),
        (Method::GaussianThreshold, Neighbours::ReplaceOne),
    ] {
        let per_level = selection(method, neighbours);
        let c = per_level.calibration().release_point(0.7).unwrap();
        let q = per_level.calibration().release_probability(c);
        let population = population(c as usize);
        let mut passed = [0u64; LEVELS + 1];
        for seed in 0..RUNS {
            passed[passed_levels(&population, &per_level, seed).0] += 1;
        }
        let probs: Vec<f64> = (0..=LEVELS)
            .map(|k| {
                let reach = q.powi(k as i32);
                if k == LEVELS {
                    reach
                } else {
                    reach * (1.0 - q)
                }
            })
            .collect();
        stats::assert_fits(
            &format!("{method} {neighbours}: levels passed by a word of {c} clients"),
            &passed,
            &probs,
        );
    }
}

#[test]
fn released_counts_are_the_count_plus_the_calibrated_noise() {
    let per_level = selection(Method::LaplaceThreshold, Neighbours::AddRemove);
    let threshold = match per_level.calibration() {
        tally_accounting::partition_selection::PartitionSelection::Laplace(laplace) => {
            laplace.threshold()
        }
        _ => unreachable!("a Laplace calibration"),
    };
    // Far above the threshold, so that every level releases the word and its count is `c + X`
    // with `X` the untruncated discrete Laplace noise.
    let c = threshold + 200;
    let population = population(c as usize);
    let mut noise: Vec<i64> = Vec::new();
    for seed in 0..2_000 {
        let (levels, counts) = passed_levels(&population, &per_level, seed);
        assert_eq!(levels, LEVELS, "seed {seed}");
        noise.extend(counts.iter().map(|&count| count as i64 - c as i64));
    }
    let (numerator, denominator) = match per_level.calibration() {
        tally_accounting::partition_selection::PartitionSelection::Laplace(laplace) => {
            laplace.scale()
        }
        _ => unreachable!("a Laplace calibration"),
    };
    let scale = numerator as f64 / denominator as f64;
    // P[X = x] = (1 − e^{−1/t}) / (1 + e^{−1/t}) · e^{−|x|/t}; cells −40..=40 and two tails.
    let q = (-1.0 / scale).exp();
    let pmf = |x: i64| (1.0 - q) / (1.0 + q) * q.powi(x.unsigned_abs() as i32);
    let tail = q.powi(41) / (1.0 + q);
    let mut observed = vec![0u64; 83];
    for &x in &noise {
        let cell = if x < -40 {
            0
        } else if x > 40 {
            82
        } else {
            (x + 41) as usize
        };
        observed[cell] += 1;
    }
    let mut probs = vec![tail];
    probs.extend((-40..=40).map(pmf));
    probs.push(tail);
    stats::assert_fits("noisy counts of released prefixes", &observed, &probs);
}
