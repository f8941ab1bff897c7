//! Balcer–Cheu calibration against the docs/algorithms.md §7.3 table, against the vectors of the
//! independent Python reference (`python3 tools/reference/balcer_cheu.py` writes
//! `tests/test_vectors/balcer_cheu/`), plus the validity conditions and the guarantee.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::balcer_cheu::{BalcerCheu, BalcerCheuProtocol, min_users, noise_probability};
use tally_accounting::blanket::BlanketAnalysis;
use tally_accounting::{Error, Neighbours, TrustModel};

/// The histogram protocol calibrated by Theorem 3.2 alone.
fn theorem_histogram(epsilon: f64, delta: f64, users: u64) -> Result<BalcerCheu, Error> {
    BalcerCheu::with_analysis(
        BalcerCheuProtocol::Histogram,
        (epsilon, delta),
        users,
        BlanketAnalysis::Theorem,
    )
}

/// The binary sum calibrated by Theorem 3.1 alone.
fn theorem_binary_sum(epsilon: f64, delta: f64, users: u64) -> Result<BalcerCheu, Error> {
    BalcerCheu::with_analysis(
        BalcerCheuProtocol::BinarySum,
        (epsilon, delta),
        users,
        BlanketAnalysis::Theorem,
    )
}

/// `actual` lies at most `ulps` ulps below `reference` and never above it.
fn assert_down(actual: f64, reference: f64, ulps: u32, what: &str) {
    let mut floor = reference;
    for _ in 0..ulps {
        floor = floor.next_down();
    }
    assert!(
        actual <= reference && actual >= floor,
        "{what}: {actual} vs reference {reference} (must be at most {ulps} ulps below)"
    );
}

#[test]
fn section_7_3_table_is_the_binary_sum_p() {
    // The table lists the binary-sum p for the row's (ε, δ, n) directly.
    for (eps, delta, n, want) in [
        (1.0, 1e-8, 100_000, 0.990_443_09),
        (0.5, 1e-8, 100_000, 0.961_772_34),
        (1.0, 1e-6, 10_000, 0.927_456_71),
    ] {
        let p = noise_probability(eps, delta, n).unwrap();
        assert!((p - want).abs() < 5e-9, "{eps} {delta} {n}: {p}");
        let zsum = theorem_binary_sum(eps, delta, n).unwrap();
        assert_eq!(zsum.noise_probability().to_bits(), p.to_bits());
        // The histogram at the same target runs the binary sums at (ε/2, δ/2): more noise.
        let hist = theorem_histogram(eps, delta, n).unwrap();
        assert_eq!(hist.component(), (eps / 2.0, delta / 2.0));
        assert_eq!(
            hist.noise_probability().to_bits(),
            noise_probability(eps / 2.0, delta / 2.0, n)
                .unwrap()
                .to_bits()
        );
        assert!(hist.noise_probability() < p);
    }
}

#[test]
fn guarantee_is_shuffle_replace_one() {
    let hist = theorem_histogram(1.0, 1e-6, 1_000_000).unwrap();
    let g = hist.guarantee();
    assert_eq!((g.epsilon, g.delta), (1.0, 1e-6));
    assert_eq!(g.neighbours, Neighbours::ReplaceOne);
    assert_eq!(g.model, TrustModel::Shuffle);
    assert!(g.analysis.contains("Thm 3.2"), "{}", g.analysis);
    assert_eq!(hist.protocol(), BalcerCheuProtocol::Histogram);
    assert_eq!(hist.users(), 1_000_000);
    let zsum = theorem_binary_sum(1.0, 1e-6, 10_000).unwrap();
    assert_eq!(zsum.protocol(), BalcerCheuProtocol::BinarySum);
    assert!(zsum.guarantee().analysis.contains("Thm 3.1"));
}

#[test]
fn validity_conditions_are_clear_errors() {
    let bad = |r: Result<f64, Error>, which: &str| match r {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, which),
        other => panic!("expected an invalid {which}, got {other:?}"),
    };
    bad(noise_probability(0.0, 1e-6, 1_000_000), "epsilon");
    bad(noise_probability(1.5, 1e-6, 1_000_000), "epsilon");
    bad(noise_probability(f64::NAN, 1e-6, 1_000_000), "epsilon");
    bad(noise_probability(1.0, 0.0, 1_000_000), "delta");
    bad(noise_probability(1.0, 1.5, 1_000_000), "delta");
    bad(noise_probability(1.0, 1e-6, 1_450), "users");
    bad(noise_probability(1.0, 1e-6, 0), "users");
    let hist = |e, d, n| theorem_histogram(e, d, n).map(|b| b.noise_probability());
    bad(hist(2.5, 1e-6, 1_000_000), "epsilon");
    bad(hist(1.0, 1.0, 1_000_000), "delta");
    // (ε/2, δ/2) needs n ≥ 400 ln(4e6) ≈ 6,081 users.
    bad(hist(1.0, 1e-6, 6_000), "users");
    let message = theorem_histogram(1.0, 1e-6, 6_000).unwrap_err().to_string();
    assert!(message.contains("6081"), "{message}");
    let zsum = theorem_binary_sum(1.0, 1e-6, 10_000).unwrap();
    bad(zsum.error_bound(0.0), "beta");
    bad(zsum.error_bound(1.0), "beta");
    bad(zsum.error_bound(1e-160), "beta"); // below δ^25 = 1e-150
}

#[test]
fn noise_probability_is_monotone() {
    // More users or a weaker target: less noise per user.
    let ps: Vec<f64> = [10_000, 100_000, 1_000_000]
        .iter()
        .map(|&n| noise_probability(0.5, 1e-6, n).unwrap())
        .collect();
    assert!(ps.windows(2).all(|w| w[0] < w[1]), "{ps:?}");
    assert!(
        noise_probability(1.0, 1e-6, 100_000).unwrap()
            > noise_probability(0.5, 1e-6, 100_000).unwrap()
    );
    assert!(
        noise_probability(1.0, 1e-3, 100_000).unwrap()
            > noise_probability(1.0, 1e-9, 100_000).unwrap()
    );
}

#[derive(Deserialize)]
struct NoiseFile {
    cases: Vec<NoiseCase>,
}

#[derive(Deserialize)]
struct NoiseCase {
    epsilon: X,
    delta: X,
    users: u64,
    binary_sum_p: Option<X>,
    histogram_p: Option<X>,
}

#[derive(Deserialize)]
struct MinUsersFile {
    cases: Vec<MinUsersCase>,
}

#[derive(Deserialize)]
struct MinUsersCase {
    epsilon: X,
    delta: X,
    min_users: u64,
}

#[derive(Deserialize)]
struct ErrorFile {
    cases: Vec<ErrorCase>,
}

#[derive(Deserialize)]
struct ErrorCase {
    epsilon: X,
    delta: X,
    users: u64,
    beta: X,
    alpha: X,
}

#[test]
fn python_reference_noise_probability() {
    let file: NoiseFile =
        serde_json::from_str(include_str!("test_vectors/balcer_cheu/noise.json")).unwrap();
    let mut checked = 0;
    for case in file.cases {
        let (eps, delta, n) = (case.epsilon.0, case.delta.0, case.users);
        let what = format!("eps={eps} delta={delta} n={n}");
        match (noise_probability(eps, delta, n), case.binary_sum_p) {
            (Ok(p), Some(want)) => {
                assert_down(p, want.0, 8, &format!("binary sum {what}"));
                checked += 1;
            }
            (Err(Error::InvalidParameter { .. }), None) => {}
            (got, want) => panic!("binary sum {what}: {got:?} vs {:?}", want.map(|x| x.0)),
        }
        match (theorem_histogram(eps, delta, n), case.histogram_p) {
            (Ok(h), Some(want)) => {
                assert_down(
                    h.noise_probability(),
                    want.0,
                    8,
                    &format!("histogram {what}"),
                );
                checked += 1;
            }
            (Err(Error::InvalidParameter { .. }), None) => {}
            (got, want) => panic!("histogram {what}: {got:?} vs {:?}", want.map(|x| x.0)),
        }
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn python_reference_min_users() {
    let file: MinUsersFile =
        serde_json::from_str(include_str!("test_vectors/balcer_cheu/min_users.json")).unwrap();
    for case in file.cases {
        let got = min_users(case.epsilon.0, case.delta.0).unwrap();
        // The rigorous check may reject the exact boundary when it is within rounding error.
        assert!(
            got == case.min_users || got == case.min_users + 1,
            "eps={} delta={}: {got} vs {}",
            case.epsilon.0,
            case.delta.0,
            case.min_users
        );
        assert!(noise_probability(case.epsilon.0, case.delta.0, got).is_ok());
        assert!(noise_probability(case.epsilon.0, case.delta.0, got - 1).is_err());
    }
}

#[test]
fn python_reference_error_bound() {
    let file: ErrorFile =
        serde_json::from_str(include_str!("test_vectors/balcer_cheu/error.json")).unwrap();
    for case in file.cases {
        let hist = theorem_histogram(case.epsilon.0, case.delta.0, case.users).unwrap();
        let got = hist.error_bound(case.beta.0).unwrap();
        let want = case.alpha.0;
        assert!(
            got >= want && got <= want * (1.0 + 1e-11),
            "eps={} delta={} n={} beta={}: {got} vs {want}",
            case.epsilon.0,
            case.delta.0,
            case.users,
            case.beta.0
        );
    }
}
