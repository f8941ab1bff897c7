//! The error of released estimates against the brute-force vectors of the independent
//! reference (`python3 tools/reference/released_error.py` writes
//! `tests/test_vectors/released_error/`): each law's `E[|estimate − holders| · 1{shown}]`
//! for one item, and the planner's weighted error over a population.

use serde_json::Value;
use tally_accounting::ThresholdedEstimate;
use tally_sim::KeyedPopulation;
use tally_sim::items_plan::{HeldItems, PredictedError, predicted_error};

const VECTORS: &str = include_str!("test_vectors/released_error/released_error.json");

/// The relative tolerance: the reference sums the whole law, the code closed forms (Laplace),
/// tail sums (Gaussian) and a window of ±12 standard deviations (binomial).
const TOLERANCE: f64 = 1e-9;

fn number(value: &Value) -> f64 {
    match value {
        Value::String(text) => text.parse().expect("a float"),
        other => other.as_f64().expect("a number"),
    }
}

fn estimate(case: &Value) -> ThresholdedEstimate {
    let parameter = number(&case["parameter"]);
    let threshold = case["threshold"].as_u64().expect("threshold");
    match case["law"].as_str().expect("law") {
        "discrete-laplace" => ThresholdedEstimate::DiscreteLaplace {
            scale: parameter,
            threshold,
        },
        "discrete-gaussian" => ThresholdedEstimate::DiscreteGaussian {
            sigma2: parameter,
            threshold,
        },
        "sampled" => ThresholdedEstimate::Sampled {
            rate: parameter,
            threshold,
        },
        other => panic!("unknown law {other}"),
    }
}

fn close(ours: f64, theirs: f64) -> bool {
    (ours - theirs).abs() <= TOLERANCE * theirs.abs().max(1e-12)
}

fn vectors() -> Value {
    serde_json::from_str(VECTORS).expect("vectors parse")
}

#[test]
fn one_items_shown_error_matches_the_reference() {
    let vectors = vectors();
    let cases = vectors["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 36);
    for case in cases {
        let shown = estimate(case).shown_error();
        let contributed = case["contributed"].as_u64().expect("contributed");
        let holders = case["holders"].as_u64().expect("holders");
        let ours = shown.expected_absolute_error(contributed, holders);
        let theirs = number(&case["expected_absolute_error"]);
        assert!(close(ours, theirs), "{case}: {ours} vs {theirs}");
    }
}

/// Client `u` of `clients` holds `w0 ..= w(u mod 12)`, and `own<u>` when `u` is odd.
fn population(clients: u32) -> KeyedPopulation {
    let mut rows = Vec::new();
    for u in 0..clients {
        for j in 0..=u % 12 {
            rows.push((format!("u{u}"), format!("w{j}")));
        }
        if u % 2 == 1 {
            rows.push((format!("u{u}"), format!("own{u}")));
        }
    }
    let (clients, items): (Vec<String>, Vec<String>) = rows.into_iter().unzip();
    KeyedPopulation::from_rows(clients, items, "reference rows").unwrap()
}

#[test]
fn the_planners_weighted_error_matches_the_reference() {
    let vectors = vectors();
    let clients = vectors["population"]["clients"].as_u64().expect("clients");
    let held = HeldItems::new(&population(clients as u32));
    let plans = vectors["plans"].as_array().expect("plans");
    assert_eq!(plans.len(), 6);
    for plan in plans {
        let k = plan["max_items"].as_u64().expect("max_items");
        let laws = held.contribution_laws(k);
        let expected_released = number(&plan["expected_released"]);
        let PredictedError::Estimates { absolute, relative } =
            predicted_error(Some(estimate(plan)), &laws, expected_released)
        else {
            panic!("{plan}: no estimates");
        };
        for (what, ours, theirs) in [
            ("absolute", absolute, number(&plan["absolute"])),
            ("relative", relative, number(&plan["relative"])),
        ] {
            assert!(close(ours, theirs), "{plan}: {what} {ours} vs {theirs}");
        }
    }
    assert_eq!(
        predicted_error(None, &held.contribution_laws(1), 1.0),
        PredictedError::NoCount
    );
}
