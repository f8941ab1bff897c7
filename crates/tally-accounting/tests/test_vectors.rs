//! The accountant against the vectors of the independent Python reference
//! (`python3 tools/reference/sample_threshold.py` writes `tests/test_vectors/`).
//!
//! Every computed `δ` must be an upper bound on the reference value (the safe direction) and
//! exceed it by no more than the documented margin; solved thresholds must match exactly and
//! solved rates must never exceed the true largest admissible rate.

use serde::Deserialize;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{
    Analysis, SampleThresholdParams, delta, legacy_epsilon, legacy_failure_probability,
    legacy_theta_lambert, legacy_theta_standard, max_sampling_rate, max_sampling_rate_cap,
    min_frequency_for_relative_error, min_threshold, omission_bound, relative_error_failure,
};

/// Upper slack allowed over the reference: the 1e-6 safety margin plus float error.
const UPPER_SLACK: f64 = 2e-6;

fn analysis(method: &str) -> Analysis {
    method.replace('_', "-").parse().expect("known method")
}

fn assert_upper_bound(actual: f64, expected: f64, what: &str) {
    assert!(
        actual >= expected && actual <= expected * (1.0 + UPPER_SLACK),
        "{what}: computed {actual:e}, reference {expected:e}"
    );
}

#[derive(Deserialize)]
struct DeltaFile {
    cases: Vec<DeltaCase>,
}

#[derive(Deserialize)]
struct DeltaCase {
    epsilon: f64,
    sampling_rate: f64,
    threshold: u64,
    closed_form: Option<f64>,
    theorem1: f64,
    exact: f64,
    tight: f64,
    replace_one_tight: Option<f64>,
}

#[test]
fn test_vec_delta() {
    let file: DeltaFile =
        serde_json::from_str(include_str!("test_vectors/sample_threshold/delta.json")).unwrap();
    assert!(file.cases.len() >= 60);
    for case in &file.cases {
        let params = SampleThresholdParams::new(case.sampling_rate, case.threshold).unwrap();
        let at = |a, n| delta(case.epsilon, &params, a, n);
        let label = format!(
            "ε = {}, p = {}, τ = {}",
            case.epsilon, case.sampling_rate, case.threshold
        );
        let cap = max_sampling_rate_cap(case.epsilon, Neighbours::AddRemove);
        if case.sampling_rate > cap {
            // The cap 1 − e^(−ε) is rounded down, so a rate within one ulp of the exact cap
            // may be refused: the safe direction.
            assert!(case.sampling_rate <= cap.next_up().next_up(), "{label}");
            assert!(
                at(Analysis::Tight, Neighbours::AddRemove).is_err(),
                "{label}"
            );
            continue;
        }
        match case.closed_form {
            Some(expected) => assert_upper_bound(
                at(Analysis::ClosedForm, Neighbours::AddRemove).unwrap(),
                expected,
                &format!("closed-form, {label}"),
            ),
            None => assert!(
                at(Analysis::ClosedForm, Neighbours::AddRemove).is_err(),
                "{label}"
            ),
        }
        for (a, expected) in [
            (Analysis::Theorem1, case.theorem1),
            (Analysis::Exact, case.exact),
            (Analysis::Tight, case.tight),
        ] {
            assert_upper_bound(
                at(a, Neighbours::AddRemove).unwrap(),
                expected,
                &format!("{a}, {label}"),
            );
        }
        match case.replace_one_tight {
            // The reference's value is the one-cell bound (add/remove at ε − ln(1/(1−p_s)));
            // the two-cell analysis, checked against `replace_one.py` in
            // `replace_one_vectors.rs`, reports at most it.
            Some(expected) => {
                let actual = at(Analysis::Tight, Neighbours::ReplaceOne).unwrap();
                assert!(
                    actual > 0.0 && actual <= expected * (1.0 + UPPER_SLACK),
                    "replace-one tight, {label}: computed {actual:e}, one-cell {expected:e}"
                );
            }
            None => assert!(
                at(Analysis::Tight, Neighbours::ReplaceOne).is_err(),
                "{label}"
            ),
        }
    }
}

#[derive(Deserialize)]
struct MinThresholdFile {
    alpha_cases: Vec<MinThresholdCase>,
    cases: Vec<MinThresholdCase>,
}

#[derive(Deserialize)]
struct MinThresholdCase {
    epsilon: f64,
    delta: f64,
    sampling_rate: f64,
    method: String,
    threshold: Option<u64>,
}

#[test]
fn test_vec_min_threshold() {
    let file: MinThresholdFile = serde_json::from_str(include_str!(
        "test_vectors/sample_threshold/min_threshold.json"
    ))
    .unwrap();
    for case in file.alpha_cases.iter().chain(&file.cases) {
        let solved = min_threshold(
            case.epsilon,
            case.delta,
            case.sampling_rate,
            analysis(&case.method),
            Neighbours::AddRemove,
        );
        let label = format!(
            "{} at ε = {}, δ = {}, p = {}",
            case.method, case.epsilon, case.delta, case.sampling_rate
        );
        match case.threshold {
            Some(expected) => assert_eq!(solved.unwrap(), expected, "{label}"),
            None => assert!(solved.is_err(), "{label}"),
        }
    }
}

#[derive(Deserialize)]
struct MaxRateFile {
    cases: Vec<MaxRateCase>,
}

#[derive(Deserialize)]
struct MaxRateCase {
    epsilon: f64,
    delta: f64,
    threshold: u64,
    method: String,
    capped: Option<bool>,
    sampling_rate_boundary: Option<f64>,
    first_crossing_boundary: Option<f64>,
}

#[test]
fn test_vec_max_sampling_rate() {
    let file: MaxRateFile = serde_json::from_str(include_str!(
        "test_vectors/sample_threshold/max_sampling_rate.json"
    ))
    .unwrap();
    for case in &file.cases {
        let a = analysis(&case.method);
        let solved = max_sampling_rate(
            case.epsilon,
            case.delta,
            case.threshold,
            a,
            Neighbours::AddRemove,
        );
        let label = format!(
            "{a} at ε = {}, δ = {}, τ = {}",
            case.epsilon, case.delta, case.threshold
        );
        let (Some(largest), Some(first)) =
            (case.sampling_rate_boundary, case.first_crossing_boundary)
        else {
            assert!(solved.is_err(), "{label}");
            continue;
        };
        let rate = solved.unwrap();
        // Never above the true largest admissible rate, and admissible itself.
        assert!(rate <= largest, "{label}: {rate} > {largest}");
        let params = SampleThresholdParams::new(rate, case.threshold).unwrap();
        assert!(delta(case.epsilon, &params, a, Neighbours::AddRemove).unwrap() <= case.delta);
        if case.capped == Some(true) {
            assert!(
                rate >= largest * (1.0 - 1e-15),
                "{label}: capped at {largest}, got {rate}"
            );
        } else {
            // The 1e-6 safety margin on δ costs at most a tiny fraction of the rate; for the
            // non-monotone exact analysis, bisection lands on a crossing at or above the first.
            assert!(
                rate >= first * (1.0 - 1e-6),
                "{label}: {rate} well below {first}"
            );
        }
    }
}

#[derive(Deserialize)]
struct LegacyFile {
    theta_cases: Vec<ThetaCase>,
    p_theta_cases: Vec<PThetaCase>,
    epsilon_cases: Vec<LegacyEpsilonCase>,
}

#[derive(Deserialize)]
struct ThetaCase {
    delta: f64,
    theta_std: f64,
    p_theta_of_theta_std: f64,
    theta_lambert: f64,
}

#[derive(Deserialize)]
struct PThetaCase {
    theta: f64,
    p_theta: f64,
}

#[derive(Deserialize)]
struct LegacyEpsilonCase {
    theta: f64,
    sampling_rate: f64,
    epsilon: f64,
}

fn assert_close(actual: f64, expected: f64, rel: f64, what: &str) {
    assert!(
        ((actual - expected) / expected).abs() <= rel,
        "{what}: {actual} vs {expected}"
    );
}

#[test]
fn test_vec_legacy() {
    let file: LegacyFile =
        serde_json::from_str(include_str!("test_vectors/sample_threshold/legacy.json")).unwrap();
    for case in &file.theta_cases {
        assert_close(
            legacy_theta_standard(case.delta),
            case.theta_std,
            1e-14,
            "θ",
        );
        assert_close(
            legacy_failure_probability(case.theta_std),
            case.p_theta_of_theta_std,
            1e-13,
            "p_θ",
        );
        assert_close(
            legacy_theta_lambert(case.delta),
            case.theta_lambert,
            1e-13,
            "Lambert θ",
        );
    }
    for case in &file.p_theta_cases {
        assert_close(
            legacy_failure_probability(case.theta),
            case.p_theta,
            1e-13,
            "p_θ",
        );
    }
    for case in &file.epsilon_cases {
        assert_close(
            legacy_epsilon(case.theta, case.sampling_rate).unwrap(),
            case.epsilon,
            1e-13,
            "legacy ε",
        );
    }
}

#[derive(Deserialize)]
struct AccuracyFile {
    omission_cases: Vec<OmissionCase>,
    relative_error_cases: Vec<RelativeErrorCase>,
    min_frequency_cases: Vec<MinFrequencyCase>,
}

#[derive(Deserialize)]
struct OmissionCase {
    expected_count: f64,
    threshold: f64,
    omission_bound: f64,
}

#[derive(Deserialize)]
struct RelativeErrorCase {
    gamma: f64,
    mu: f64,
    beta: f64,
}

#[derive(Deserialize)]
struct MinFrequencyCase {
    gamma: f64,
    beta: f64,
    sample_size: f64,
    min_frequency: f64,
}

#[test]
fn test_vec_accuracy() {
    let file: AccuracyFile =
        serde_json::from_str(include_str!("test_vectors/sample_threshold/accuracy.json")).unwrap();
    for case in &file.omission_cases {
        assert_close(
            omission_bound(case.expected_count, case.threshold as u64),
            case.omission_bound,
            1e-12,
            "omission bound",
        );
    }
    for case in &file.relative_error_cases {
        assert_close(
            relative_error_failure(case.gamma, case.mu),
            case.beta,
            1e-12,
            "β",
        );
    }
    for case in &file.min_frequency_cases {
        assert_close(
            min_frequency_for_relative_error(case.gamma, case.beta, case.sample_size),
            case.min_frequency,
            1e-12,
            "φ",
        );
    }
}
