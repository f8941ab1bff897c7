//! The exact accounting of the binomial-blanket shuffle protocols (`tally_accounting::blanket`)
//! against the independent reference `tools/reference/blanket_pld.py`, which writes
//! `tests/test_vectors/blanket_pld/blanket.json`: direct sums of one added and one moved message's
//! `δ(ε)`, dp_accounting's brackets of `ε(δ)` for several moves, and brackets of the least
//! noise each protocol's calibration may choose.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::balcer_cheu::{BalcerCheu, BalcerCheuProtocol};
use tally_accounting::blanket::{BlanketAnalysis, BlanketCell, MessageChange};
use tally_accounting::ghazi::{CountMinParams, HadamardParams, count_min_delta_split};

#[derive(Deserialize)]
struct File {
    cell: Vec<Exact>,
    #[serde(rename = "move")]
    moved: Vec<Exact>,
    compose: Vec<Composed>,
    calibration: Vec<Calibration>,
}

#[derive(Deserialize)]
struct Exact {
    coins: u64,
    probability: X,
    stray: X,
    epsilon: X,
    delta: X,
}

#[derive(Deserialize)]
struct Composed {
    what: String,
    coins: u64,
    probability: X,
    stray: X,
    moves: u64,
    delta: X,
    epsilon_lower: X,
    epsilon_upper: X,
}

#[derive(Deserialize)]
struct Calibration {
    protocol: String,
    users: u64,
    domain: u64,
    set_size: u64,
    beta: Option<X>,
    epsilon: X,
    delta: X,
    noise_lower: X,
    noise_upper: X,
}

fn file() -> File {
    serde_json::from_str(include_str!("test_vectors/blanket_pld/blanket.json")).unwrap()
}

fn cell(coins: u64, probability: X, stray: X) -> BlanketCell {
    BlanketCell {
        coins,
        probability: probability.0,
        stray: stray.0,
    }
}

/// One added message and one moved message: never below the direct sum, and within 1% of it
/// for an added message (connect-the-dots is exact at its grid points, and `ε` is one of them),
/// 3% for a moved one (two cells' discretisations composed; about 0.1% in `ε`), up to `2e-12`:
/// the
/// order `Q‖P` is read from the curve below `α = 1`, `1 − α + α·H_{1/α}(Q‖P)`, whose
/// rounding near 1 leaves an absolute error of that order in its tail.
#[test]
fn one_message_matches_the_direct_sums() {
    let file = file();
    assert!(file.cell.len() >= 12 && file.moved.len() >= 10);
    for (cases, change, tolerance) in [
        (&file.cell, MessageChange::Added, 1.01),
        (&file.moved, MessageChange::Moved(1), 1.03),
    ] {
        for c in cases {
            let what = format!(
                "{change:?} N={} p={} θ={} ε={}",
                c.coins, c.probability.0, c.stray.0, c.epsilon.0
            );
            let got = cell(c.coins, c.probability, c.stray)
                .delta(change, c.epsilon.0)
                .unwrap();
            let exact = c.delta.0;
            assert!(got >= exact * (1.0 - 1e-9), "{what}: {got} < {exact}");
            assert!(got <= exact * tolerance + 2e-12, "{what}: {got} vs {exact}");
        }
    }
}

/// Several moves: `ε(δ)` at least dp_accounting's optimistic bound (a lower bound on the exact
/// value) and within 0.5% of its pessimistic one. The first is the figure of Count-Min over
/// 3,000 devices at Lemma 4.10's blanket for `ε = 21.4`: `(1.17, 9.9e-7)`.
#[test]
fn several_moves_lie_in_the_reference_bracket() {
    let file = file();
    for c in &file.compose {
        let got = cell(c.coins, c.probability, c.stray)
            .epsilon(MessageChange::Moved(c.moves), c.delta.0)
            .unwrap();
        assert!(
            got >= c.epsilon_lower.0 * (1.0 - 1e-9) && got <= c.epsilon_upper.0 * 1.005,
            "{}: {got} not in [{}, {}]",
            c.what,
            c.epsilon_lower.0,
            c.epsilon_upper.0
        );
    }
    let figure = &file.compose[0];
    assert_eq!(
        figure.delta.0.to_bits(),
        count_min_delta_split(1e-6).unwrap().0.to_bits()
    );
    let params =
        CountMinParams::with_analysis(3000, 2, 1, (21.4, 1e-6), 0.01, BlanketAnalysis::Theorem)
            .unwrap();
    let exact = params.exact_epsilon(3000).unwrap().unwrap();
    assert!((exact - 1.17).abs() < 0.005, "{exact}");
}

/// Every calibration is at least as noisy as the reference's lower bound on the least noise
/// the exact analysis allows (so never claims more than is true), and at most 2% noisier than
/// its upper bound (Hadamard: one blanket tuple more).
#[test]
fn calibrations_lie_in_the_reference_bracket() {
    for c in file().calibration {
        let what = format!(
            "{} n={} k={} ε={} δ={}",
            c.protocol, c.users, c.set_size, c.epsilon.0, c.delta.0
        );
        let (epsilon, delta) = (c.epsilon.0, c.delta.0);
        let (noise, tolerance) = match c.protocol.as_str() {
            "count-min" => {
                let beta = c.beta.expect("Count-Min has a β").0;
                let p = CountMinParams::new(c.users, c.domain, c.set_size, epsilon, delta, beta)
                    .unwrap();
                assert_eq!(p.analysis, BlanketAnalysis::Exact, "{what}");
                (p.gamma, c.noise_upper.0 * 0.02)
            }
            "hadamard" => {
                let p = HadamardParams::new(c.users, c.domain, c.set_size, epsilon, delta).unwrap();
                assert_eq!(p.analysis, BlanketAnalysis::Exact, "{what}");
                (p.rho as f64, 1.0)
            }
            "balcer-cheu" => {
                let p = BalcerCheu::with_analysis(
                    BalcerCheuProtocol::Histogram,
                    (epsilon, delta),
                    c.users,
                    BlanketAnalysis::Exact,
                )
                .unwrap();
                (1.0 - p.noise_probability(), c.noise_upper.0 * 0.02)
            }
            other => panic!("unknown protocol {other}"),
        };
        assert!(
            noise >= c.noise_lower.0 && noise <= c.noise_upper.0 + tolerance,
            "{what}: {noise} not in [{}, {}]",
            c.noise_lower.0,
            c.noise_upper.0
        );
    }
}
