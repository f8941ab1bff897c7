//! The replace-one `δ` of one S&T release against the exact two-cell enumeration of
//! `tools/reference/replace_one.py`: never below it, at most 1% above, on a grid over `ε`, the
//! sampling rate (as a fraction of its replace-one cap) and the threshold.

use serde::Deserialize;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams, delta};

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    epsilon: f64,
    sampling_rate: f64,
    threshold: u64,
    two_cell_delta: f64,
}

/// Checks every case and returns the largest ratio of the reported `δ` to the exact one.
fn worst_ratio(text: &str) -> f64 {
    let file: File = serde_json::from_str(text).unwrap();
    let mut worst = (0.0_f64, String::new());
    for case in &file.cases {
        let params = SampleThresholdParams::new(case.sampling_rate, case.threshold).unwrap();
        let reported = delta(
            case.epsilon,
            &params,
            Analysis::Tight,
            Neighbours::ReplaceOne,
        )
        .unwrap();
        let exact = case.two_cell_delta;
        let label = format!(
            "ε = {}, p = {}, τ = {}",
            case.epsilon, case.sampling_rate, case.threshold
        );
        assert!(reported >= exact, "{label}: {reported:e} < {exact:e}");
        assert!(
            reported <= 1.01 * exact,
            "{label}: {reported:e} > 1.01 × {exact:e}"
        );
        if reported / exact > worst.0 {
            worst = (reported / exact, label);
        }
    }
    println!(
        "{} settings, worst ratio {:.5} at {}",
        file.cases.len(),
        worst.0,
        worst.1
    );
    worst.0
}

#[test]
fn test_vec_replace_one_is_within_one_percent_of_the_two_cell_value() {
    let worst = worst_ratio(include_str!("test_vectors/replace_one/two_cell.json"));
    assert!(worst >= 1.0);
}
