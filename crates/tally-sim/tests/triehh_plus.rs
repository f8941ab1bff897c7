//! TrieHH++ over small populations through the simulator.

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig};
use tally_core::histogram::SampleThreshold;
use tally_sim::{ExecutionPath, Population, run_triehh_plus};

fn population() -> Population {
    let mut words = Vec::new();
    for (word, copies) in [
        ("the", 3000),
        ("then", 1500),
        ("cat", 1200),
        ("cab", 20),
        ("x", 5),
    ] {
        words.extend(std::iter::repeat_n(word, copies));
    }
    Population::from_names(words, "test words").unwrap()
}

fn run(segment: usize, restricted: bool, seed: u64) -> tally_core::heavy_hitters::TrieOutput {
    let params = SampleThresholdParams::new(0.3, 30).unwrap();
    let per_level =
        SampleThreshold::new(params, 0.5, Analysis::Tight, Neighbours::AddRemove).unwrap();
    let task = TrieHhPlus::new(TrieHhPlusConfig {
        levels: 6,
        segment,
        restricted,
        per_level,
        composition: Composition::Basic,
        total_delta: 1e-3,
    })
    .unwrap();
    run_triehh_plus(&population(), task, ExecutionPath::GapSkipping, seed)
}

#[test]
fn finds_the_frequent_words_and_nothing_else() {
    for (segment, restricted) in [(1, true), (1, false), (2, true)] {
        let out = run(segment, restricted, 7);
        let mut words: Vec<&str> = out
            .heavy_hitters()
            .iter()
            .map(|n| n.word().unwrap())
            .collect();
        words.sort_unstable();
        assert_eq!(
            words,
            ["cat", "the", "then"],
            "segment {segment}, restricted {restricted}"
        );
        for node in &out.nodes {
            assert!(node.count >= 30);
            assert!((node.estimate - node.count as f64 / 0.3).abs() < 1e-9);
        }
        let the = out
            .heavy_hitters()
            .into_iter()
            .find(|n| n.prefix == "the$")
            .unwrap();
        assert!(
            (the.estimate / 3000.0 - 1.0).abs() < 0.2,
            "{}",
            the.estimate
        );
    }
}

#[test]
fn prefix_counts_nest() {
    let out = run(1, true, 11);
    let level = |p: &str| out.nodes.iter().find(|n| n.prefix == p).map(|n| n.level);
    assert_eq!(level("t"), Some(1));
    assert_eq!(level("th"), Some(2));
    assert_eq!(level("the$"), Some(4));
    assert_eq!(level("then$"), Some(5));
    assert_eq!(level("cab$"), None, "too rare");
}

#[test]
fn is_deterministic_for_a_seed() {
    let a = run(1, true, 5);
    let b = run(1, true, 5);
    assert_eq!(a.nodes, b.nodes);
    assert_ne!(a.nodes, run(1, true, 6).nodes);
}
