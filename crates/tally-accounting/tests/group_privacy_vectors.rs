//! `Guarantee::under` from add/remove to replace-one against the independent Python reference
//! (`python3 tools/reference/group_privacy.py` writes `tests/test_vectors/group_privacy/`).
//!
//! The conversion is group privacy for a group of two, `(2ε, min(1, (1 + e^ε) δ))`: `ε` must be
//! doubled exactly and `δ` lie at or above the reference's exact value rounded up. On one S&T
//! release the converted Rust add/remove `δ` must cover the exact two-cell replace-one `δ` at
//! `2ε`, and a conversion that keeps `(ε, δ)` must be caught by the same comparison.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams, delta};
use tally_accounting::{Guarantee, Neighbours, TrustModel};

/// How far above the reference's rounded-up `δ` the Rust's may lie, relative. The Rust takes
/// `e^ε` from the platform's `exp` (within an ulp) one ulp up, then rounds `1 + e^ε` and the
/// product up: at most about 4 ulps (`≈ 9e-16`) above the exact value; `1e-14` leaves room.
const DELTA_RELATIVE: f64 = 1e-14;

#[derive(Deserialize)]
struct Vectors<C> {
    cases: Vec<C>,
}

#[derive(Deserialize)]
struct ConversionCase {
    epsilon: X,
    delta: X,
    epsilon_replace_one: X,
    delta_replace_one_up: X,
    capped: bool,
}

#[derive(Deserialize)]
struct Premise {
    sample_threshold: Vec<SampleThresholdCase>,
}

#[derive(Deserialize)]
struct SampleThresholdCase {
    epsilon: X,
    sampling_rate: X,
    threshold: u64,
    add_remove_delta: X,
    replace_one_delta_at_twice_epsilon: X,
    replace_one_delta_at_epsilon: X,
}

fn add_remove(epsilon: f64, delta: f64) -> Guarantee {
    Guarantee {
        epsilon,
        delta,
        neighbours: Neighbours::AddRemove,
        model: TrustModel::Central,
        analysis: "test".into(),
    }
}

fn sample_threshold_cases() -> Vec<SampleThresholdCase> {
    let premise: Premise =
        serde_json::from_str(include_str!("test_vectors/group_privacy/premise.json")).unwrap();
    assert!(!premise.sample_threshold.is_empty());
    premise.sample_threshold
}

#[test]
fn test_vec_conversion_doubles_epsilon_and_rounds_delta_up() {
    let file: Vectors<ConversionCase> =
        serde_json::from_str(include_str!("test_vectors/group_privacy/conversion.json")).unwrap();
    assert!(file.cases.iter().any(|c| c.capped) && file.cases.iter().any(|c| !c.capped));
    let mut largest_excess = 0.0_f64;
    for case in &file.cases {
        let label = format!("ε = {}, δ = {}", case.epsilon.0, case.delta.0);
        let (epsilon, delta) = add_remove(case.epsilon.0, case.delta.0)
            .under(Neighbours::ReplaceOne)
            .unwrap();
        assert_eq!(
            epsilon.to_bits(),
            case.epsilon_replace_one.0.to_bits(),
            "{label}: ε {epsilon}"
        );
        let exact_up = case.delta_replace_one_up.0;
        if case.capped {
            assert_eq!(delta.to_bits(), 1.0f64.to_bits(), "{label}: δ {delta}");
        } else {
            assert!(
                delta >= exact_up && delta <= exact_up * (1.0 + DELTA_RELATIVE),
                "{label}: δ {delta:e}, exact rounded up {exact_up:e}"
            );
            largest_excess = largest_excess.max(delta / exact_up - 1.0);
        }
    }
    println!(
        "{} pairs, δ at most {largest_excess:e} (relative) above the exact value rounded up",
        file.cases.len()
    );
}

/// The settings on which `convert` (from the Rust's own add/remove S&T guarantee) claims less
/// than the reference's exact replace-one `δ` at the claimed `ε`.
fn uncovered(
    cases: &[SampleThresholdCase],
    convert: impl Fn(&Guarantee) -> (f64, f64),
) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let epsilon = case.epsilon.0;
        let params = SampleThresholdParams::new(case.sampling_rate.0, case.threshold).unwrap();
        let own = delta(epsilon, &params, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let label = format!(
            "ε = {epsilon}, p = {}, τ = {}",
            case.sampling_rate.0, case.threshold
        );
        assert!(
            own >= case.add_remove_delta.0,
            "{label}: add/remove δ {own:e} below the exact {:e}",
            case.add_remove_delta.0
        );
        let (claimed_epsilon, claimed_delta) = convert(&add_remove(epsilon, own));
        // The exact δ at the claimed ε; the reference has it at 2ε and at ε only.
        let exact = if claimed_epsilon.to_bits() == (2.0 * epsilon).to_bits() {
            case.replace_one_delta_at_twice_epsilon.0
        } else if claimed_epsilon.to_bits() == epsilon.to_bits() {
            case.replace_one_delta_at_epsilon.0
        } else {
            panic!("{label}: no exact replace-one δ at ε = {claimed_epsilon}")
        };
        if claimed_delta < exact {
            failures.push(format!(
                "{label}: claims ({claimed_epsilon}, {claimed_delta:e}), exact δ {exact:e}"
            ));
        }
    }
    failures
}

#[test]
fn test_vec_converted_sample_threshold_covers_the_exact_replace_one_delta() {
    let failures = uncovered(&sample_threshold_cases(), |g| {
        g.under(Neighbours::ReplaceOne).unwrap()
    });
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn test_vec_keeping_epsilon_and_delta_under_replace_one_is_caught() {
    let cases = sample_threshold_cases();
    let failures = uncovered(&cases, |g| (g.epsilon, g.delta));
    assert_eq!(failures.len(), cases.len(), "{failures:#?}");
}
