//! The guarantees against colluding devices (`tally_accounting::collusion`) against the
//! independent reference `tools/reference/collusion.py`, which writes
//! `tests/test_vectors/collusion/collusion.json`: shuffled GRR over the honest reports (summed
//! amplification pair), and Count-Min's and Hadamard response's blankets over the honest
//! devices (dp_accounting brackets), each at a few colluding fractions.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::blanket::BlanketAnalysis;
use tally_accounting::ghazi::{CountMinParams, HadamardParams};
use tally_accounting::honest_users;
use tally_accounting::shuffle::{ShuffleBound, grr_collusion};

#[derive(Deserialize)]
struct File {
    grr: Vec<Grr>,
    count_min: Vec<CountMin>,
    hadamard: Vec<Hadamard>,
}

#[derive(Deserialize)]
struct Grr {
    bound: String,
    users: u64,
    local_epsilon: X,
    epsilon: X,
    delta: X,
    colluding_fraction: X,
    honest: u64,
    collusion_epsilon: X,
    floor: X,
}

#[derive(Deserialize)]
struct CountMin {
    users: u64,
    domain: u64,
    set_size: u64,
    beta: X,
    rows: u32,
    gamma: X,
    epsilon: X,
    delta: X,
    lemma_delta: X,
    colluding_fraction: X,
    honest: u64,
    epsilon_lower: X,
    epsilon_upper: X,
    delta_lower: X,
    delta_upper: X,
}

#[derive(Deserialize)]
struct Hadamard {
    users: u64,
    domain: u64,
    set_size: u64,
    tau: u32,
    rho: u64,
    epsilon: X,
    delta: X,
    colluding_fraction: X,
    honest: u64,
    epsilon_lower: X,
    epsilon_upper: X,
}

fn file() -> File {
    serde_json::from_str(include_str!("test_vectors/collusion/collusion.json")).unwrap()
}

/// The exact analysis lands within half a percent above the reference's pessimistic bracket
/// (as in `blanket_vectors.rs`), never below its optimistic one.
fn within(got: f64, lower: f64, upper: f64) -> bool {
    got >= lower * (1.0 - 1e-9) && got <= upper * 1.005
}

#[test]
fn shuffled_grr_over_the_honest_reports_matches_the_reference() {
    for case in file().grr {
        let bound: ShuffleBound = case.bound.parse().unwrap();
        let f = case.colluding_fraction.0;
        assert_eq!(honest_users(case.users, f).unwrap(), case.honest);
        let got = grr_collusion(
            case.local_epsilon.0,
            case.users,
            (case.epsilon.0, case.delta.0),
            bound,
            f,
        )
        .unwrap();
        let want = case.collusion_epsilon.0;
        assert!(
            got.epsilon >= want * (1.0 - 1e-10) && got.epsilon <= want * (1.0 + 1e-5),
            "{} n={} f={f}: {} vs {want}",
            case.bound,
            case.users,
            got.epsilon
        );
        assert_eq!(got.delta.to_bits(), case.delta.0.to_bits());
        assert_eq!(got.floor.to_bits(), case.floor.0.to_bits());
        assert_eq!(got.colluding_fraction.to_bits(), f.to_bits());
    }
}

#[test]
fn count_min_over_the_honest_blanket_matches_the_reference() {
    for case in file().count_min {
        let params = CountMinParams {
            users: case.users,
            domain: case.domain,
            set_size: case.set_size,
            epsilon: case.epsilon.0,
            delta: case.delta.0,
            lemma_delta: case.lemma_delta.0,
            beta: case.beta.0,
            rows: case.rows,
            width: 2 * case.set_size * case.users,
            gamma: case.gamma.0,
            blanket_cap: 2 * case.set_size * case.users * u64::from(case.rows),
            analysis: BlanketAnalysis::Exact,
        };
        let f = case.colluding_fraction.0;
        assert_eq!(honest_users(case.users, f).unwrap(), case.honest);
        let got = params.collusion(f).unwrap();
        assert!(
            within(got.epsilon, case.epsilon_lower.0, case.epsilon_upper.0),
            "f = {f}: ε {} not in [{}, {}]",
            got.epsilon,
            case.epsilon_lower.0,
            case.epsilon_upper.0
        );
        // The cap's share grows with e^ε: the δ at the bracket's ends, and half a percent of ε
        // above its top.
        let slack = (case.epsilon_upper.0 * 0.005).exp();
        assert!(
            got.delta >= case.delta_lower.0 * (1.0 - 1e-12)
                && got.delta <= case.delta_upper.0 * slack,
            "f = {f}: δ {} not in [{}, {}]",
            got.delta,
            case.delta_lower.0,
            case.delta_upper.0
        );
        assert!(got.floor.is_infinite());
    }
}

#[test]
fn hadamard_over_the_honest_blanket_matches_the_reference() {
    for case in file().hadamard {
        let params = HadamardParams {
            users: case.users,
            domain: case.domain,
            set_size: case.set_size,
            epsilon: case.epsilon.0,
            delta: case.delta.0,
            tau: case.tau,
            rho: case.rho,
            analysis: BlanketAnalysis::Exact,
        };
        let f = case.colluding_fraction.0;
        assert_eq!(honest_users(case.users, f).unwrap(), case.honest);
        let got = params.collusion(f).unwrap();
        assert!(
            within(got.epsilon, case.epsilon_lower.0, case.epsilon_upper.0),
            "f = {f}: ε {} not in [{}, {}]",
            got.epsilon,
            case.epsilon_lower.0,
            case.epsilon_upper.0
        );
        assert_eq!(got.delta.to_bits(), case.delta.0.to_bits());
        assert!(got.floor.is_infinite());
    }
}
