//! Values counted per leaf: read from a file as the loader would load them, and a hierarchical
//! histogram over the counts has the law of the per-client run over the loaded values.

#[path = "support/stats.rs"]
mod stats;

use std::io::Write;

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_core::quantiles::{
    HierarchicalConfig, HierarchicalHistogram, HierarchicalRelease, TreeShape,
};
use tally_sim::{
    CountedValues, ExecutionPath, ValueRange, Values, run_hierarchical, run_hierarchical_counted,
};

/// Clients per leaf of a tree with β = 2, L = 3.
const LEAVES: [usize; 8] = [30, 60, 10, 80, 40, 20, 50, 70];

fn shape() -> TreeShape {
    TreeShape::new(2, 3).unwrap()
}

/// The leaves' clients, each at its leaf's midpoint, interleaved round robin.
fn values() -> Values {
    let mut left = LEAVES;
    let mut values = Vec::new();
    while left.iter().any(|&c| c > 0) {
        for (leaf, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                *c -= 1;
                values.push((leaf as f64 + 0.5) / 8.0);
            }
        }
    }
    Values::from_unit_values(values, "test values").unwrap()
}

fn task(rate: f64) -> HierarchicalHistogram {
    let params = SampleThresholdParams::new(rate, 10).unwrap();
    let per_level =
        SampleThreshold::new(params, 0.5, Analysis::Tight, Neighbours::AddRemove).unwrap();
    HierarchicalHistogram::new(HierarchicalConfig {
        shape: shape(),
        per_level,
        composition: Composition::Basic,
        total_delta: 1e-2,
    })
    .unwrap()
}

fn no_progress(_: u64) {}

#[test]
fn files_count_as_the_loader_loads_them() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut text = String::from("\u{feff}");
    for (i, x) in values().as_slice().iter().enumerate() {
        let x = 10.0 + 10.0 * x;
        text.push_str(&format!(" {x}{}", if i % 3 == 0 { "\r\n" } else { "\n" }));
        if i % 7 == 0 {
            text.push_str("  \n\n");
        }
    }
    file.write_all(text.as_bytes()).unwrap();
    let range = Some(ValueRange::new(10.0, 20.0).unwrap());
    let counted = CountedValues::from_file(file.path(), range, shape(), &no_progress).unwrap();
    let loaded = Values::from_file(file.path(), range).unwrap();
    assert_eq!(counted, CountedValues::from_values(&loaded, shape()));
    assert_eq!(counted.clients(), 360);
    assert_eq!(counted.description(), loaded.description());
    assert_eq!(counted.range(), range);
    let leaves: Vec<u64> = LEAVES.iter().map(|&c| c as u64).collect();
    assert_eq!(counted.leaves(), leaves.as_slice());
}

#[test]
fn errors_name_the_first_bad_line_as_the_loader_does() {
    // Several chunks (1 MiB each) before the bad lines, so that lines are counted across them.
    let good = "0.25\n".repeat(600_000);
    for (tail, expected_line) in [
        ("0.5\n\nabc\n0.7\n2\n", 600_003),
        ("1.5\n", 600_001),
        ("NaN\n", 600_001),
        ("0.5\n\u{1}\n\u{ff}", 600_002),
    ] {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(good.as_bytes()).unwrap();
        file.write_all(tail.as_bytes()).unwrap();
        if tail.ends_with('\u{ff}') {
            file.write_all(&[0xff, b'\n']).unwrap();
        }
        let counted = CountedValues::from_file(file.path(), None, shape(), &no_progress);
        let loaded = Values::from_file(file.path(), None);
        let (counted, loaded) = (counted.unwrap_err(), loaded.unwrap_err());
        assert_eq!(counted.to_string(), loaded.to_string());
        assert!(
            counted.to_string().contains(&format!(":{expected_line}: ")),
            "{counted}"
        );
    }
    let blank = tempfile::NamedTempFile::new().unwrap();
    let err = CountedValues::from_file(blank.path(), None, shape(), &no_progress).unwrap_err();
    assert!(err.to_string().contains("holds only blank lines"), "{err}");
}

/// A run's released count at a node (0 when suppressed).
fn count(release: &HierarchicalRelease, level: u32, bucket: u32) -> usize {
    release
        .released(level)
        .iter()
        .find(|cell| cell.item == bucket)
        .map_or(0, |cell| cell.count as usize)
}

/// The released counts of a few nodes and the median's leaf boundary, over `runs` seeds of
/// `run`: `[statistic][value]`.
fn laws(runs: u64, run: impl Fn(u64) -> HierarchicalRelease) -> Vec<Vec<u64>> {
    let nodes = [(1, 0), (2, 1), (3, 0), (3, 3)];
    let mut laws = vec![vec![0u64; 400]; nodes.len() + 1];
    for seed in 0..runs {
        let release = run(seed);
        for (law, &(level, bucket)) in laws.iter_mut().zip(&nodes) {
            law[count(&release, level, bucket)] += 1;
        }
        let median = release.quantile(0.5).unwrap();
        laws[nodes.len()][(median * 64.0).round() as usize] += 1;
    }
    laws
}

/// Whether every statistic of `a` and `b` passes the homogeneity test.
fn same_laws(a: &[Vec<u64>], b: &[Vec<u64>]) -> bool {
    a.iter().zip(b).all(|(a, b)| {
        std::panic::catch_unwind(|| stats::assert_same_distribution("law", a, b)).is_ok()
    })
}

#[test]
fn stat_counted_hierarchical_has_the_law_of_the_loaded_run() {
    let values = values();
    let counted = CountedValues::from_values(&values, shape());
    let runs = 2_000;
    let loaded = laws(runs, |seed| {
        run_hierarchical(&values, task(0.3), ExecutionPath::GapSkipping, seed)
    });
    let from_counts = laws(runs, |seed| {
        run_hierarchical_counted(&counted, task(0.3), seed)
    });
    for (i, (a, b)) in loaded.iter().zip(&from_counts).enumerate() {
        stats::assert_same_distribution(&format!("statistic {i}"), a, b);
    }
    // The test has power: leaf 0 (30 clients, 9 sampled on average) is released in some runs
    // and not others, and a sampling rate 10% too high is caught.
    assert!(loaded[2][0] > 0 && loaded[2][0] < runs);
    let mutant = laws(runs, |seed| {
        run_hierarchical_counted(&counted, task(0.33), seed)
    });
    assert!(!same_laws(&loaded, &mutant));
}

#[test]
fn counted_runs_are_deterministic_for_a_seed() {
    let counted = CountedValues::from_values(&values(), shape());
    let released = |seed| {
        run_hierarchical_counted(&counted, task(0.3), seed)
            .released(3)
            .to_vec()
    };
    assert_eq!(released(5), released(5));
    assert_ne!(released(5), released(6));
}
