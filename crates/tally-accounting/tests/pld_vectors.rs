//! The PLD accountant against the exact pure-DP composition of the independent Python
//! reference (`python3 tools/reference/pld.py` writes `tests/test_vectors/pld/`).
//!
//! Every `δ` and `ε` must be at or above the exact value (the safe direction) and within the
//! accountant's margins of it.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::pld::{compose_pld_homogeneous, pld_homogeneous_delta};

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

/// Either `delta` at `epsilon_total`, or `epsilon_total` at `target_delta`.
#[derive(Deserialize)]
struct Case {
    epsilon: X,
    rounds: u64,
    epsilon_total: X,
    delta: Option<X>,
    target_delta: Option<X>,
}

#[test]
fn test_vec_pure_composition() {
    let file: File =
        serde_json::from_str(include_str!("test_vectors/pld/pure_composition.json")).unwrap();
    assert!(file.cases.len() >= 100);
    for case in &file.cases {
        let (eps, k, e_tot) = (case.epsilon.0, case.rounds, case.epsilon_total.0);
        match (case.delta, case.target_delta) {
            (Some(X(exact)), None) => {
                let d = pld_homogeneous_delta(eps, 0.0, k, e_tot).unwrap();
                // The exact value is rounded to nearest: allow one ulp below it.
                assert!(
                    d >= exact.next_down() && d <= exact * (1.0 + 2e-6) + 1e-300,
                    "ε = {eps}, k = {k}, ε_total = {e_tot}: {d:e} vs exact {exact:e}"
                );
            }
            (None, Some(X(target))) => {
                let (e, _) = compose_pld_homogeneous(eps, 0.0, k, target).unwrap();
                // The δ margin of 1e-6 moves ε by far less than 1e-5 relative.
                assert!(
                    e >= e_tot.next_down() && e <= e_tot * (1.0 + 1e-5),
                    "ε = {eps}, k = {k}, δ = {target}: {e} vs exact {e_tot}"
                );
            }
            _ => panic!("a case has either delta or target_delta"),
        }
    }
}
