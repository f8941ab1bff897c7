//! Amplification by shuffling against docs/algorithms.md §8.4 and Appendix A item 10, against the
//! vectors of the independent Python reference (`python3 tools/reference/shuffle.py` writes
//! `tests/test_vectors/shuffle/`), plus monotonicity properties and input validation.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::Error;
use tally_accounting::shuffle::{
    ShuffleBound, blanket_delta, max_local_epsilon, shuffle_delta, shuffle_epsilon,
};

/// `actual` rounds `expected` (given to 6 decimals in §8.4) to the same 6 decimals.
fn assert_six_decimals(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= 5e-7 + 1e-12,
        "{actual} does not round to {expected}"
    );
}

#[test]
fn appendix_a_item_10() {
    let (eps0, n, delta) = (4.0, 100_000, 1e-6);
    let closed = shuffle_epsilon(eps0, n, delta, ShuffleBound::ClosedForm).unwrap();
    assert!((closed - 0.537_804_024_237_451_2).abs() < 1e-13, "{closed}");
    let fmt21 = shuffle_epsilon(eps0, n, delta, ShuffleBound::Fmt21).unwrap();
    assert!(
        (0.167_538_558_331_784_1..=0.172_790_550_755_978).contains(&fmt21),
        "{fmt21}"
    );
    assert_six_decimals(fmt21, 0.169_770);
    let fmt23 = shuffle_epsilon(eps0, n, delta, ShuffleBound::Fmt23).unwrap();
    assert_six_decimals(fmt23, 0.118_153);
}

#[test]
fn section_8_4_table() {
    // (n, ε₀, δ, FMT21 exact, FMT23 exact)
    let table = [
        (10_000, 2.0, 1e-6, 0.155_045, 0.114_400),
        (1_000_000, 8.0, 1e-8, 0.556_639, 0.381_118),
        (100_000, 1.0, 1e-6, 0.015_282, 0.012_430),
    ];
    for (n, eps0, delta, fmt21, fmt23) in table {
        assert_six_decimals(
            shuffle_epsilon(eps0, n, delta, ShuffleBound::Fmt21).unwrap(),
            fmt21,
        );
        assert_six_decimals(
            shuffle_epsilon(eps0, n, delta, ShuffleBound::Fmt23).unwrap(),
            fmt23,
        );
    }
}

#[test]
fn solved_epsilon_meets_delta_and_is_tight() {
    for bound in [ShuffleBound::Fmt21, ShuffleBound::Fmt23] {
        let eps = shuffle_epsilon(4.0, 100_000, 1e-6, bound).unwrap();
        assert!(shuffle_delta(4.0, 100_000, eps, bound).unwrap() <= 1e-6);
        assert!(shuffle_delta(4.0, 100_000, eps * (1.0 - 1e-6), bound).unwrap() > 1e-6);
    }
}

#[test]
fn max_local_epsilon_inverts_shuffle_epsilon() {
    for bound in ShuffleBound::ALL {
        let target = shuffle_epsilon(4.0, 100_000, 1e-6, bound).unwrap();
        let eps0 = max_local_epsilon(target, 100_000, 1e-6, bound).unwrap();
        assert!((eps0 - 4.0).abs() < 1e-6, "{bound}: {eps0}");
        assert!(shuffle_epsilon(eps0, 100_000, 1e-6, bound).unwrap() <= target * (1.0 + 1e-9));
    }
}

#[test]
fn fmt23_never_worse_than_fmt21_and_both_beat_the_closed_form() {
    for (n, eps0) in [(1_000, 1.0), (10_000, 3.0), (100_000, 6.0), (50_000, 0.3)] {
        let fmt21 = shuffle_epsilon(eps0, n, 1e-7, ShuffleBound::Fmt21).unwrap();
        let fmt23 = shuffle_epsilon(eps0, n, 1e-7, ShuffleBound::Fmt23).unwrap();
        let closed = shuffle_epsilon(eps0, n, 1e-7, ShuffleBound::ClosedForm).unwrap();
        assert!(
            fmt23 <= fmt21 && fmt21 <= closed && closed <= eps0,
            "{n} {eps0}"
        );
    }
}

#[test]
fn delta_is_monotone() {
    for bound in ShuffleBound::ALL {
        // Decreasing in ε.
        let deltas: Vec<f64> = [0.05, 0.1, 0.2, 0.4]
            .iter()
            .map(|&e| shuffle_delta(3.0, 20_000, e, bound).unwrap())
            .collect();
        assert!(
            deltas.windows(2).all(|w| w[1] <= w[0]),
            "{bound}: {deltas:?}"
        );
        // Decreasing in n, increasing in ε₀.
        let by_n: Vec<f64> = [2_000, 20_000, 200_000]
            .iter()
            .map(|&n| shuffle_epsilon(3.0, n, 1e-6, bound).unwrap())
            .collect();
        assert!(by_n.windows(2).all(|w| w[1] <= w[0]), "{bound}: {by_n:?}");
        let by_eps0: Vec<f64> = [0.5, 1.0, 2.0, 4.0]
            .iter()
            .map(|&e0| shuffle_epsilon(e0, 20_000, 1e-6, bound).unwrap())
            .collect();
        assert!(
            by_eps0.windows(2).all(|w| w[0] <= w[1]),
            "{bound}: {by_eps0:?}"
        );
    }
}

#[test]
fn no_amplification_beyond_the_local_epsilon() {
    for bound in ShuffleBound::ALL {
        assert!(shuffle_delta(2.0, 1_000, 2.0, bound).unwrap() <= 0.0);
        // Two users and a tiny δ: nothing to hide among, ε stays at most ε₀.
        let eps = shuffle_epsilon(2.0, 2, 1e-12, bound).unwrap();
        assert!(eps <= 2.0);
    }
}

#[test]
fn a_million_users_is_fast() {
    let start = std::time::Instant::now();
    let eps = shuffle_epsilon(1.0, 1_000_000, 1e-6, ShuffleBound::Fmt23).unwrap();
    assert!(eps > 0.0035 && eps < 0.0036, "{eps}");
    // Generous for debug builds; release takes about 0.15 s.
    assert!(start.elapsed().as_secs_f64() < 30.0);
}

#[test]
fn blanket_bound_is_weaker_than_fmt21() {
    let eps = shuffle_epsilon(2.0, 100_000, 1e-6, ShuffleBound::Fmt21).unwrap();
    let fmt21 = shuffle_delta(2.0, 100_000, eps, ShuffleBound::Fmt21).unwrap();
    assert!(blanket_delta(2.0, 100_000, eps).unwrap() >= fmt21);
}

#[test]
fn bound_names_round_trip() {
    for bound in ShuffleBound::ALL {
        assert_eq!(bound.name().parse::<ShuffleBound>().unwrap(), bound);
    }
    assert_eq!(ShuffleBound::default(), ShuffleBound::Fmt23);
    assert!(matches!(
        "fmt22".parse::<ShuffleBound>(),
        Err(Error::InvalidParameter { name: "bound", .. })
    ));
}

#[test]
fn invalid_inputs_are_rejected() {
    let bad = |r: Result<f64, Error>, which: &str| match r {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, which),
        other => panic!("expected an invalid {which}, got {other:?}"),
    };
    let b = ShuffleBound::Fmt23;
    bad(shuffle_epsilon(0.0, 1_000, 1e-6, b), "local epsilon");
    bad(shuffle_epsilon(f64::NAN, 1_000, 1e-6, b), "local epsilon");
    bad(shuffle_epsilon(1.0, 1, 1e-6, b), "users");
    bad(shuffle_epsilon(1.0, 1_000, 0.0, b), "delta");
    bad(shuffle_epsilon(1.0, 1_000, 1.0, b), "delta");
    bad(shuffle_delta(1.0, 1_000, -0.1, b), "epsilon");
    bad(max_local_epsilon(0.0, 1_000, 1e-6, b), "epsilon");
    bad(max_local_epsilon(1.0, 1_000, 2.0, b), "delta");
    bad(blanket_delta(1.0, 1_000, 0.0), "epsilon");
}

#[derive(Deserialize)]
struct DeltaFile {
    cases: Vec<DeltaCase>,
}

#[derive(Deserialize)]
struct DeltaCase {
    bound: String,
    users: u64,
    local_epsilon: X,
    epsilon: X,
    delta: X,
}

#[derive(Deserialize)]
struct EpsilonFile {
    cases: Vec<EpsilonCase>,
}

#[derive(Deserialize)]
struct EpsilonCase {
    bound: String,
    users: u64,
    local_epsilon: X,
    delta: X,
    epsilon: X,
}

#[test]
fn python_reference_delta() {
    let file: DeltaFile =
        serde_json::from_str(include_str!("test_vectors/shuffle/delta.json")).unwrap();
    for case in file.cases {
        let bound: ShuffleBound = case.bound.parse().unwrap();
        let got = shuffle_delta(case.local_epsilon.0, case.users, case.epsilon.0, bound).unwrap();
        let want = case.delta.0;
        // At or above the reference (up to its double rounding), within the 1e-6 margin.
        assert!(
            got >= want * (1.0 - 1e-11) && got <= want * (1.0 + 2e-6),
            "{} n={} eps0={} eps={}: {got:e} vs {want:e}",
            case.bound,
            case.users,
            case.local_epsilon.0,
            case.epsilon.0
        );
    }
}

#[test]
fn python_reference_epsilon() {
    let file: EpsilonFile =
        serde_json::from_str(include_str!("test_vectors/shuffle/epsilon.json")).unwrap();
    for case in file.cases {
        let bound: ShuffleBound = case.bound.parse().unwrap();
        let got = shuffle_epsilon(case.local_epsilon.0, case.users, case.delta.0, bound).unwrap();
        let want = case.epsilon.0;
        let (below, above) = if bound == ShuffleBound::ClosedForm {
            (1e-13, 1e-13)
        } else {
            (1e-10, 1e-5)
        };
        assert!(
            got >= want * (1.0 - below) && got <= want * (1.0 + above),
            "{} n={} eps0={} delta={}: {got} vs {want}",
            case.bound,
            case.users,
            case.local_epsilon.0,
            case.delta.0
        );
    }
}
