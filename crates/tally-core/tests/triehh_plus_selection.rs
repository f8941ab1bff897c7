//! TrieHH++ runs whose levels are a partition selection: each level's calibration and the
//! run's total guarantee against the vectors of the independent reference
//! (`python3 tools/reference/partition_selection.py` writes `triehh_levels.json` beside the
//! accounting crate's partition-selection vectors), every composition rule within the budget,
//! and what cannot run refused.

use serde_json::Value;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::{Method, PartitionSelection as Calibration};
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig, plan_selection_levels};
use tally_core::histogram::PartitionSelection;
use tally_core::task::Task as _;

fn run(
    per_level: PartitionSelection,
    levels: usize,
    composition: Composition,
    total_delta: f64,
) -> Result<TrieHhPlus<PartitionSelection>, tally_core::Error> {
    TrieHhPlus::new(TrieHhPlusConfig {
        levels,
        segment: 1,
        restricted: true,
        per_level,
        composition,
        total_delta,
    })
}

/// A number the reference writes as a string.
fn number(value: &Value) -> f64 {
    value
        .as_str()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("{value} is not a number written as a string"))
}

fn integer(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{value} is not an integer"))
}

#[test]
fn levels_match_the_reference() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tally-accounting/tests/test_vectors/partition_selection/triehh_levels.json"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let vectors: Value = serde_json::from_str(&text).unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert!(cases.len() >= 5, "{} cases", cases.len());
    for case in cases {
        let method = match case["method"].as_str().unwrap() {
            "laplace" => Method::LaplaceThreshold,
            "gaussian" => Method::GaussianThreshold,
            other => panic!("unknown method {other}"),
        };
        let neighbours: Neighbours = case["neighbours"].as_str().unwrap().parse().unwrap();
        let (epsilon, delta) = (number(&case["epsilon"]), number(&case["delta"]));
        let levels = integer(&case["levels"]) as usize;
        let name = format!("{method} ({epsilon}, {delta}) over {levels} levels, {neighbours}");
        let per_level = plan_selection_levels(
            method,
            epsilon,
            delta,
            levels,
            Composition::Basic,
            neighbours,
        )
        .unwrap();
        let level = &case["level"];
        match per_level.calibration() {
            Calibration::Laplace(laplace) => assert_eq!(
                (laplace.scale(), laplace.threshold()),
                (
                    (
                        integer(&level["scale_numerator"]),
                        integer(&level["scale_denominator"])
                    ),
                    integer(&level["threshold"])
                ),
                "{name}"
            ),
            Calibration::Gaussian(gaussian) => assert_eq!(
                (gaussian.sigma2(), gaussian.threshold()),
                (
                    (
                        integer(&level["sigma2_numerator"]),
                        integer(&level["sigma2_denominator"])
                    ),
                    integer(&level["threshold"])
                ),
                "{name}"
            ),
            Calibration::TruncatedGeometric(_) => unreachable!("not in the vectors"),
        }
        let total = run(per_level, levels, Composition::Basic, delta)
            .unwrap()
            .guarantee()
            .clone();
        let (want_epsilon, want_delta) =
            (number(&case["total_epsilon"]), number(&case["total_delta"]));
        assert!(
            total.epsilon >= want_epsilon && total.epsilon <= want_epsilon * (1.0 + 1e-12),
            "{name}: ε {} vs {want_epsilon}",
            total.epsilon
        );
        // The accountant inflates each level's δ by its safety margin (1e-6, relative).
        assert!(
            total.delta >= want_delta && total.delta <= want_delta * (1.0 + 2e-6),
            "{name}: δ {} vs {want_delta}",
            total.delta
        );
        assert!(total.epsilon <= epsilon && total.delta <= delta, "{name}");
    }
}

#[test]
fn every_rule_for_pairs_keeps_the_run_within_its_budget() {
    for method in [Method::LaplaceThreshold, Method::GaussianThreshold] {
        for neighbours in [Neighbours::AddRemove, Neighbours::ReplaceOne] {
            for composition in Composition::FOR_PAIRS {
                for (epsilon, delta, levels) in [(1.0, 1e-8, 10), (4.0, 1e-6, 20), (0.5, 1e-5, 2)] {
                    let name = format!("{method} {neighbours} {composition} ({epsilon}, {delta})");
                    let per_level = plan_selection_levels(
                        method,
                        epsilon,
                        delta,
                        levels,
                        composition,
                        neighbours,
                    )
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(per_level.guarantee().neighbours, neighbours, "{name}");
                    let total = run(per_level, levels, composition, delta)
                        .unwrap()
                        .guarantee()
                        .clone();
                    assert!(
                        total.epsilon <= epsilon && total.delta <= delta,
                        "{name}: total ({}, {})",
                        total.epsilon,
                        total.delta
                    );
                }
            }
        }
    }
}

#[test]
fn the_truncated_geometric_and_tight_composition_are_refused() {
    let geometric = plan_selection_levels(
        Method::TruncatedGeometric,
        1.0,
        1e-8,
        10,
        Composition::Optimal,
        Neighbours::AddRemove,
    )
    .unwrap_err()
    .to_string();
    assert!(
        geometric.contains("laplace-threshold or gaussian-threshold"),
        "{geometric}"
    );
    let tight = plan_selection_levels(
        Method::LaplaceThreshold,
        1.0,
        1e-8,
        10,
        Composition::Tight,
        Neighbours::AddRemove,
    )
    .unwrap_err()
    .to_string();
    assert!(tight.contains("basic, advanced, optimal or pld"), "{tight}");
    // A selection calibrated elsewhere meets the same checks when the run is built.
    let calibrated = PartitionSelection::calibrate(
        Method::TruncatedGeometric,
        0.1,
        1e-9,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    assert!(run(calibrated, 10, Composition::Basic, 1e-8).is_err());
    let laplace = PartitionSelection::calibrate(
        Method::LaplaceThreshold,
        0.1,
        1e-9,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    assert!(run(laplace.clone(), 10, Composition::Tight, 1e-8).is_err());
    assert!(run(laplace, 10, Composition::Basic, 1e-8).is_ok());
}
