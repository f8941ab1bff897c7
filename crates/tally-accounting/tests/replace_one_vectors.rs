//! The replace-one `δ` of one S&T release against the exact two-cell enumeration of
//! `tools/reference/replace_one.py`: never below it, at most 1% above.

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

#[test]
fn test_vec_replace_one_is_within_one_percent_of_the_two_cell_value() {
    let file: File =
        serde_json::from_str(include_str!("test_vectors/replace_one/two_cell.json")).unwrap();
    assert!(file.cases.len() >= 5);
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
    }
}
