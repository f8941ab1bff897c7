//! Counted populations: read from a file as the loader would load it, and TrieHH++ over their
//! counts has the law of the per-client run over the loaded population.

#[path = "support/stats.rs"]
mod stats;

use std::io::Write;

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::heavy_hitters::{TrieHh, TrieHhConfig, TrieHhPlus, TrieHhPlusConfig, TrieOutput};
use tally_core::histogram::SampleThreshold;
use tally_sim::{
    ClientMode, CountedPopulation, ExecutionPath, Population, StreamFormat, run_triehh,
    run_triehh_counted, run_triehh_plus, run_triehh_plus_counted,
};

const WORDS: [(&str, usize); 6] = [
    ("the", 120),
    ("then", 90),
    ("thy", 60),
    ("cat", 100),
    ("cab", 40),
    ("x", 5),
];

fn population() -> Population {
    let mut words = Vec::new();
    for (word, copies) in WORDS {
        words.extend(std::iter::repeat_n(word, copies));
    }
    Population::from_names(words, "test words").unwrap()
}

fn task() -> TrieHhPlus {
    let params = SampleThresholdParams::new(0.3, 20).unwrap();
    let per_level =
        SampleThreshold::new(params, 0.5, Analysis::Tight, Neighbours::AddRemove).unwrap();
    TrieHhPlus::new(TrieHhPlusConfig {
        levels: 5,
        segment: 1,
        restricted: true,
        per_level,
        composition: Composition::Basic,
        total_delta: 1e-3,
    })
    .unwrap()
}

fn no_progress(_: u64) {}

#[test]
fn files_count_as_the_loader_loads_them() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut text = String::from("\u{feff}");
    for (i, (word, copies)) in WORDS.iter().enumerate() {
        for copy in 0..*copies {
            text.push_str(word);
            text.push_str(if (i + copy) % 3 == 0 { "\r\n" } else { "\n" });
            if copy % 7 == 0 {
                text.push_str("  \n\n");
            }
        }
    }
    file.write_all(text.as_bytes()).unwrap();
    let counted = CountedPopulation::from_file(file.path(), StreamFormat::Lines, &no_progress);
    let loaded = Population::from_lines_file(file.path()).unwrap();
    assert_eq!(
        counted.unwrap(),
        CountedPopulation::from_population(&loaded)
    );

    let mut tsv = tempfile::Builder::new().suffix(".tsv").tempfile().unwrap();
    tsv.write_all(b"client_id\titem\nu1\ta\nu2\tb\nu1\tc\n\nu3\ta\n")
        .unwrap();
    for mode in [
        ClientMode::RowsAsClients,
        ClientMode::ClientLevel { seed: 3 },
    ] {
        let counted =
            CountedPopulation::from_file(tsv.path(), StreamFormat::Tsv(mode), &no_progress)
                .unwrap();
        let loaded = Population::from_tsv_file(tsv.path(), mode).unwrap();
        assert_eq!(counted.clients(), loaded.len() as u64);
        assert_eq!(counted.description(), loaded.description());
        let total: u64 = counted.items().iter().map(|(_, count)| count).sum();
        assert_eq!(total, counted.clients());
    }

    let blank = tempfile::NamedTempFile::new().unwrap();
    let err = CountedPopulation::from_file(blank.path(), StreamFormat::Lines, &no_progress);
    assert!(
        err.unwrap_err()
            .to_string()
            .contains("holds only blank lines")
    );
}

/// A run's level-2 count of `th` (0 when not released) and the set of words it found, as a
/// bit mask over `WORDS`.
fn summary(output: &TrieOutput) -> (u64, usize) {
    let th = output
        .nodes
        .iter()
        .find(|node| node.prefix == "th")
        .map_or(0, |node| node.count);
    let found = output
        .heavy_hitters()
        .iter()
        .map(|node| {
            let word = node.word().unwrap();
            1 << WORDS.iter().position(|(w, _)| *w == word).unwrap()
        })
        .sum();
    (th, found)
}

#[test]
fn stat_counted_triehh_plus_has_the_law_of_gap_skipping() {
    let population = population();
    let counted = CountedPopulation::from_population(&population);
    let runs = 1_500;
    let holders_of_th = 270;
    // [path][value]
    let mut th = vec![vec![0u64; holders_of_th + 1]; 2];
    let mut found = vec![vec![0u64; 1 << WORDS.len()]; 2];
    for seed in 0..runs {
        let outputs = [
            run_triehh_plus_counted(&counted, task(), seed),
            run_triehh_plus(&population, task(), ExecutionPath::GapSkipping, seed),
        ];
        for (path, output) in outputs.iter().enumerate() {
            let (count, words) = summary(output);
            th[path][count as usize] += 1;
            found[path][words] += 1;
        }
    }
    stats::assert_same_distribution("count of th", &th[0], &th[1]);
    stats::assert_same_distribution("words found", &found[0], &found[1]);
    // The test has power: th is released in most runs, and the rarer words vary.
    assert!(th[0][0] < runs / 2);
    assert!(found[0].iter().filter(|&&n| n > 0).count() >= 2);
}

#[test]
fn counted_runs_are_deterministic_for_a_seed() {
    let counted = CountedPopulation::from_population(&population());
    let a = run_triehh_plus_counted(&counted, task(), 5);
    assert_eq!(a.nodes, run_triehh_plus_counted(&counted, task(), 5).nodes);
    assert_ne!(a.nodes, run_triehh_plus_counted(&counted, task(), 6).nodes);
}

/// TrieHH's task for `clients` clients.
fn triehh_task(clients: u64) -> TrieHh {
    TrieHh::new(TrieHhConfig::calibrate(4.0, 1e-6, 6, clients).unwrap()).unwrap()
}

/// The words `WORDS` scaled by `scale`, the clients interleaved round robin.
fn interleaved(scale: usize) -> Population {
    let mut left: Vec<usize> = WORDS.iter().map(|&(_, c)| c * scale).collect();
    let mut names = Vec::new();
    while left.iter().any(|&c| c > 0) {
        for (i, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                *c -= 1;
                names.push(WORDS[i].0);
            }
        }
    }
    Population::from_names(names, "test words").unwrap()
}

#[test]
fn counted_triehh_is_the_loaded_run_when_ids_are_in_word_order() {
    // Ids by first appearance: sorted names give ids in the counted order, so both number
    // the clients alike and the same draws give the same release.
    let mut names: Vec<&str> = Vec::new();
    for (word, copies) in WORDS {
        names.extend(std::iter::repeat_n(word, copies * 10));
    }
    names.sort_unstable();
    let population = Population::from_names(names, "sorted").unwrap();
    let counted = CountedPopulation::from_population(&population);
    let n = counted.clients();
    for seed in 0..20 {
        let loaded = run_triehh(&population, triehh_task(n), seed);
        let from_counts = run_triehh_counted(&counted, triehh_task(n), seed);
        assert_eq!(loaded.words, from_counts.words);
        assert_eq!(loaded.accepted, from_counts.accepted);
    }
}

#[test]
fn stat_counted_triehh_has_the_law_of_the_loaded_run() {
    // Here ids follow the interleaving, not the words' order.
    let population = interleaved(10);
    let counted = CountedPopulation::from_population(&population);
    let n = counted.clients();
    let runs = 1_000;
    let mut found = vec![vec![0u64; 1 << WORDS.len()]; 2];
    for seed in 0..runs {
        let outputs = [
            run_triehh_counted(&counted, triehh_task(n), seed),
            run_triehh(&population, triehh_task(n), seed),
        ];
        for (path, output) in outputs.iter().enumerate() {
            let mask: usize = output
                .words
                .iter()
                .map(|word| 1 << WORDS.iter().position(|(w, _)| w == word).unwrap())
                .sum();
            found[path][mask] += 1;
        }
    }
    stats::assert_same_distribution("TrieHH words found", &found[0], &found[1]);
    assert!(
        found[0].iter().filter(|&&n| n > 0).count() >= 2,
        "{:?}",
        found[0]
    );
}
