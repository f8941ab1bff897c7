//! Composition against the vectors of the independent Python reference
//! (`python3 tools/reference/composition.py` writes `tests/test_vectors/composition/`).
//!
//! Every composed `ε` and `δ` must be at or above the exact value (the safe direction) and
//! within the documented margins of it; every split budget must be at or below the exact
//! largest admissible one, and compose back within the totals.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::Error;
use tally_accounting::composition::{
    Composition, compose_advanced, compose_basic, compose_optimal_homogeneous,
    optimal_homogeneous_delta, split_budget,
};

/// `actual` is at least `lower` (a value at or above the exact one) and at most `ulps` doubles
/// above it.
fn assert_up_within_ulps(actual: f64, lower: f64, ulps: u32, what: &str) {
    let mut upper = lower;
    for _ in 0..ulps {
        upper = upper.next_up();
    }
    assert!(
        actual >= lower && actual <= upper,
        "{what}: computed {actual:e}, exact rounded up {lower:e}"
    );
}

#[derive(Deserialize)]
struct BasicFile {
    cases: Vec<BasicCase>,
}

#[derive(Deserialize)]
struct BasicCase {
    costs: Vec<(X, X)>,
    epsilon_up: X,
    delta_up: X,
}

#[test]
fn test_vec_basic() {
    let file: BasicFile =
        serde_json::from_str(include_str!("test_vectors/composition/basic.json")).unwrap();
    assert!(file.cases.len() >= 40);
    for case in &file.cases {
        let costs: Vec<(f64, f64)> = case.costs.iter().map(|&(e, d)| (e.0, d.0)).collect();
        let (eps, delta) = compose_basic(&costs).unwrap();
        let label = format!("{costs:?}");
        assert_up_within_ulps(eps, case.epsilon_up.0, 1, &format!("ε of {label}"));
        assert_up_within_ulps(delta, case.delta_up.0, 1, &format!("δ of {label}"));
    }
}

#[derive(Deserialize)]
struct AdvancedFile {
    cases: Vec<AdvancedCase>,
}

#[derive(Deserialize)]
struct AdvancedCase {
    epsilon: X,
    delta: X,
    k: u64,
    delta_slack: X,
    epsilon_total: X,
    delta_up: X,
}

#[test]
fn test_vec_advanced() {
    let file: AdvancedFile =
        serde_json::from_str(include_str!("test_vectors/composition/advanced.json")).unwrap();
    for case in &file.cases {
        let (eps, delta) =
            compose_advanced(case.epsilon.0, case.delta.0, case.k, case.delta_slack.0).unwrap();
        let label = format!(
            "ε = {}, δ = {}, k = {}, δ̃ = {}",
            case.epsilon.0, case.delta.0, case.k, case.delta_slack.0
        );
        assert!(
            eps >= case.epsilon_total.0 && eps <= case.epsilon_total.0 * (1.0 + 2e-12),
            "{label}: {eps} vs {}",
            case.epsilon_total.0
        );
        assert_up_within_ulps(delta, case.delta_up.0, 1, &label);
    }
}

#[derive(Deserialize)]
struct OptimalFile {
    delta_cases: Vec<OptimalDeltaCase>,
    compose_cases: Vec<OptimalComposeCase>,
}

#[derive(Deserialize)]
struct OptimalDeltaCase {
    epsilon: X,
    delta: X,
    k: u64,
    epsilon_total: X,
    delta_total: X,
}

#[derive(Deserialize)]
struct OptimalComposeCase {
    epsilon: X,
    delta: X,
    k: u64,
    target_delta: X,
    epsilon_total_down: Option<X>,
    epsilon_total_loose: Option<X>,
}

#[test]
fn test_vec_optimal() {
    let file: OptimalFile =
        serde_json::from_str(include_str!("test_vectors/composition/optimal.json")).unwrap();
    for case in &file.delta_cases {
        let delta =
            optimal_homogeneous_delta(case.epsilon.0, case.delta.0, case.k, case.epsilon_total.0)
                .unwrap();
        assert!(
            delta >= case.delta_total.0 && delta <= case.delta_total.0 * (1.0 + 2e-6),
            "ε = {}, δ = {}, k = {}, ε_total = {}: {delta:e} vs {:e}",
            case.epsilon.0,
            case.delta.0,
            case.k,
            case.epsilon_total.0,
            case.delta_total.0
        );
    }
    for case in &file.compose_cases {
        let solved =
            compose_optimal_homogeneous(case.epsilon.0, case.delta.0, case.k, case.target_delta.0);
        let label = format!(
            "ε = {}, δ = {}, k = {}, target = {}",
            case.epsilon.0, case.delta.0, case.k, case.target_delta.0
        );
        let Some(X(lower)) = case.epsilon_total_down else {
            assert!(
                matches!(solved, Err(Error::Infeasible { .. })),
                "{label}: {solved:?}"
            );
            continue;
        };
        let (eps, delta) = solved.unwrap();
        assert_eq!(delta.to_bits(), case.target_delta.0.to_bits());
        // The 1e-5 loose target covers the δ margin; without one (the target is the floor
        // 1 − (1−δ)^k itself) the answer is k·ε up to the ε margin.
        let upper = case
            .epsilon_total_loose
            .map_or(case.k as f64 * case.epsilon.0 * (1.0 + 1e-11), |x| x.0);
        assert!(
            eps >= lower && eps <= upper,
            "{label}: {eps} not in [{lower}, {upper}]"
        );
    }
}

#[derive(Deserialize)]
struct SplitFile {
    cases: Vec<SplitCase>,
}

#[derive(Deserialize)]
struct SplitCase {
    epsilon_total: X,
    delta_total: X,
    k: u64,
    basic_epsilon: X,
    basic_delta: X,
    delta_slack: X,
    split_delta: X,
    advanced_epsilon_down: X,
    optimal_epsilon_down: X,
}

#[test]
fn test_vec_split_budget() {
    let file: SplitFile =
        serde_json::from_str(include_str!("test_vectors/composition/split.json")).unwrap();
    for case in &file.cases {
        let (total_eps, total_delta, k) = (case.epsilon_total.0, case.delta_total.0, case.k);
        let label = format!("E = {total_eps}, D = {total_delta}, k = {k}");

        let (eps, delta) = split_budget(total_eps, total_delta, k, Composition::Basic).unwrap();
        assert_eq!(eps.to_bits(), case.basic_epsilon.0.to_bits(), "{label}");
        assert_eq!(delta.to_bits(), case.basic_delta.0.to_bits(), "{label}");
        let (back_eps, back_delta) = compose_basic(&vec![(eps, delta); k as usize]).unwrap();
        assert!(
            back_eps <= total_eps && back_delta <= total_delta,
            "{label}"
        );

        let (eps, delta) = split_budget(total_eps, total_delta, k, Composition::Advanced).unwrap();
        assert_eq!(delta.to_bits(), case.split_delta.0.to_bits(), "{label}");
        assert!(
            eps <= case.advanced_epsilon_down.0
                && eps >= case.advanced_epsilon_down.0 * (1.0 - 1e-11),
            "{label}: advanced {eps} vs {}",
            case.advanced_epsilon_down.0
        );
        let (back_eps, back_delta) = compose_advanced(eps, delta, k, case.delta_slack.0).unwrap();
        assert!(
            back_eps <= total_eps && back_delta <= total_delta,
            "{label}"
        );

        let (eps, delta) = split_budget(total_eps, total_delta, k, Composition::Optimal).unwrap();
        assert_eq!(delta.to_bits(), case.split_delta.0.to_bits(), "{label}");
        assert!(
            eps <= case.optimal_epsilon_down.0 && eps >= case.optimal_epsilon_down.0 * (1.0 - 1e-6),
            "{label}: optimal {eps} vs {}",
            case.optimal_epsilon_down.0
        );
        assert!(optimal_homogeneous_delta(eps, delta, k, total_eps).unwrap() <= total_delta);
        let (back_eps, _) = compose_optimal_homogeneous(eps, delta, k, total_delta).unwrap();
        assert!(back_eps <= total_eps, "{label}");
    }
}
