//! The tight S&T accountant against dp_accounting's second opinion
//! (`tools/reference/st_composition.py`): never below the largest fixed-group composition, and
//! close to it.

use serde::Deserialize;
use tally_accounting::sample_threshold::{SampleThresholdParams, tight_rounds_epsilon};

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    sampling_rate: f64,
    threshold: u64,
    rounds: u64,
    delta: f64,
    lower_bound_epsilon: f64,
}

#[test]
fn test_vec_tight_rounds_sit_just_above_the_fixed_group_bound() {
    let file: File = serde_json::from_str(include_str!(
        "test_vectors/st_composition/tight_rounds.json"
    ))
    .unwrap();
    assert!(file.cases.len() >= 4);
    for case in &file.cases {
        let params = SampleThresholdParams::new(case.sampling_rate, case.threshold).unwrap();
        let epsilon = tight_rounds_epsilon(&params, case.rounds, case.delta).unwrap();
        let bound = case.lower_bound_epsilon;
        let label = format!(
            "p = {}, τ = {}, K = {}, δ = {}",
            case.sampling_rate, case.threshold, case.rounds, case.delta
        );
        // Never below what an adversary facing one group size at every round achieves ...
        assert!(epsilon >= bound, "{label}: {epsilon} < {bound}");
        // ... and within 25% of it: the rest is the sup over group sizes, which no single
        // group attains at every ε, plus the grid.
        assert!(epsilon <= 1.25 * bound, "{label}: {epsilon} vs {bound}");
    }
}
