//! The TrieHH++ task as a state machine, driven by hand-made releases.

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig};
use tally_core::histogram::SampleThreshold;
use tally_core::task::Task;

fn task(levels: usize, restricted: bool, composition: Composition) -> TrieHhPlus {
    let params = SampleThresholdParams::new(0.1, 20).unwrap();
    let per_level =
        SampleThreshold::new(params, 0.4, Analysis::Tight, Neighbours::AddRemove).unwrap();
    TrieHhPlus::new(TrieHhPlusConfig {
        levels,
        segment: 1,
        restricted,
        per_level,
        composition,
        total_delta: 1e-6,
    })
    .unwrap()
}

fn cells(cells: &[(&str, u64)]) -> Vec<(String, u64, f64)> {
    cells
        .iter()
        .map(|&(p, c)| (p.to_owned(), c, c as f64 * 10.0))
        .collect()
}

#[test]
fn grows_below_live_prefixes_and_stops_when_none_are_left() {
    let mut t = task(10, true, Composition::Basic);
    let q1 = t.next_query().unwrap();
    assert_eq!(q1.prefixes.length(), 1);
    assert!(q1.prefixes.live_parents.as_ref().unwrap().is_empty());
    t.observe(cells(&[("t", 90), ("a", 40)]));
    let q2 = t.next_query().unwrap();
    assert_eq!(q2.prefixes.length(), 2);
    assert_eq!(q2.prefixes.report("the").as_deref(), Some("th"));
    assert_eq!(q2.prefixes.report("bee"), None, "b did not survive");
    t.observe(cells(&[("th", 80), ("a$", 30)]));
    let q3 = t.next_query().unwrap();
    t.observe(cells(&[("the", 70)]));
    let _q4 = t.next_query().unwrap();
    t.observe(cells(&[("the$", 60)]));
    // Only terminal prefixes survived: the task is done before its tenth level.
    assert!(t.next_query().is_none());
    assert_eq!(q3.prefixes.round, 3);
    let out = t.finish();
    assert_eq!(out.levels_run, 4);
    let words: Vec<&str> = out
        .heavy_hitters()
        .iter()
        .map(|n| n.word().unwrap())
        .collect();
    assert_eq!(words, ["the", "a"]);
    assert_eq!(out.nodes.len(), 6);
    assert_eq!(out.nodes[0].prefix, "t");
    assert_eq!(out.nodes[0].level, 1);
}

#[test]
fn unrestricted_rounds_ask_everyone() {
    let mut t = task(3, false, Composition::Basic);
    t.next_query().unwrap();
    t.observe(cells(&[("t", 90)]));
    let q = t.next_query().unwrap();
    assert!(q.prefixes.live_parents.is_none());
    assert_eq!(q.prefixes.report("bee").as_deref(), Some("be"));
}

#[test]
fn stops_after_the_last_level() {
    let mut t = task(2, true, Composition::Basic);
    for _ in 0..2 {
        t.next_query().unwrap();
        t.observe(cells(&[("aa", 50)]));
    }
    assert!(t.next_query().is_none());
    assert!(t.next_query().is_none());
}

#[test]
fn total_guarantee_composes_the_levels() {
    let per_level = task(1, true, Composition::Basic).guarantee().clone();
    let basic = task(10, true, Composition::Basic).guarantee().clone();
    assert!((basic.epsilon - 4.0).abs() < 1e-12);
    assert!(basic.delta <= 10.0 * per_level.delta * (1.0 + 1e-12));
    assert!(basic.analysis.contains("basic composition over 10 rounds"));
    let advanced = task(10, true, Composition::Advanced).guarantee().clone();
    assert!(advanced.delta <= 1e-6);
    assert!(advanced.analysis.contains("advanced"));
}

#[test]
fn rejects_empty_configurations() {
    let params = SampleThresholdParams::new(0.1, 20).unwrap();
    let per_level =
        SampleThreshold::new(params, 0.4, Analysis::Tight, Neighbours::AddRemove).unwrap();
    let config = TrieHhPlusConfig {
        levels: 0,
        segment: 1,
        restricted: true,
        per_level,
        composition: Composition::Basic,
        total_delta: 1e-6,
    };
    assert!(TrieHhPlus::new(config.clone()).is_err());
    assert!(
        TrieHhPlus::new(TrieHhPlusConfig {
            levels: 3,
            segment: 0,
            ..config.clone()
        })
        .is_err()
    );
    // Ten levels of the per-level δ do not fit a budget of 1e-30.
    assert!(
        TrieHhPlus::new(TrieHhPlusConfig {
            levels: 10,
            total_delta: 1e-30,
            ..config
        })
        .is_err()
    );
}
