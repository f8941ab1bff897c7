//! Parameters of the Ghazi et al. multi-message protocols against ALGORITHMS.md §5.1 and
//! Appendix A item 8, and against the vectors of the independent Python reference
//! (`python3 tools/reference/ghazi.py` writes `tests/test_vectors/ghazi/`).

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::Error;
use tally_accounting::ghazi::{
    CountMinParams, HadamardParams, count_min_blanket_requirement, count_min_min_users,
    count_min_rows, hadamard_rho_conservative, hadamard_rho_theorem, heavy_hitter_levels,
};

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

#[test]
fn section_5_1() {
    let p = HadamardParams::new(1 << 20, 1 << 10, 1, 1.0, 1e-6).unwrap();
    assert_eq!((p.tau, p.rho, p.tuple_bits()), (20, 559, 220));
    assert_eq!(p.tuples_per_user(), 560);
    let thm = hadamard_rho_theorem(1, 1.0, 1e-6).unwrap();
    assert!(
        (thm - 533.36).abs() < 0.005 && (533.0..534.0).contains(&thm),
        "{thm}"
    );
    let cons = hadamard_rho_conservative(1, 1.0, 1e-6).unwrap();
    assert!((cons - 558.31).abs() < 0.005, "{cons}");
    assert_eq!(
        p.guarantee().neighbours,
        tally_accounting::Neighbours::ReplaceOne
    );
    assert_eq!(p.guarantee().model, tally_accounting::TrustModel::Shuffle);
}

#[test]
fn appendix_a_item_8() {
    let need = count_min_blanket_requirement(28, 1, 1.0, 1e-6).unwrap();
    assert!((need - 1_258_851.2).abs() < 0.05, "{need}");
    // n ≥ 2.52·10^6; at n = 2^24, γ ≥ 0.0750.
    assert_eq!(count_min_min_users(28, 1, 1.0, 1e-6).unwrap(), 2_517_703);
    assert_eq!(count_min_rows(1 << 26, 0.5).unwrap(), 28);
    let p = CountMinParams::new(1 << 24, 1 << 26, 1, 1.0, 1e-6, 0.5).unwrap();
    assert!((0.0750..0.0751).contains(&p.gamma), "{}", p.gamma);
    assert!(matches!(
        CountMinParams::new(2_517_000, 1 << 26, 1, 1.0, 1e-6, 0.5),
        Err(Error::Infeasible { .. })
    ));
    assert!(CountMinParams::new(2_517_703, 1 << 26, 1, 1.0, 1e-6, 0.5).is_ok());
}

#[test]
fn validity_checks() {
    let invalid = |r: Result<HadamardParams, Error>, which: &str| match r {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, which),
        other => panic!("expected an invalid {which}, got {other:?}"),
    };
    invalid(HadamardParams::new(1 << 10, 1000, 1, 1.0, 1e-6), "domain");
    invalid(HadamardParams::new(1 << 10, 4, 4, 1.0, 1e-6), "set size");
    invalid(HadamardParams::new(1 << 10, 4, 1, 1.5, 1e-6), "epsilon");
    invalid(HadamardParams::new(1, 4, 1, 1.0, 1e-6), "users");
    invalid(HadamardParams::new(1 << 10, 4, 1, 1.0, 0.0), "delta");
}

#[test]
fn heavy_hitter_budget_composes_back() {
    let b = heavy_hitter_levels(1.0, 1e-6, 14).unwrap();
    assert!(b.per_level.0 <= 1.0 / 14.0 && b.per_level.1 <= 1e-6 / 14.0);
    assert!(b.total.0 <= 1.0 && b.total.1 <= 1e-6);
    assert!(close(b.total.0, 1.0, 1e-12) && close(b.total.1, 1e-6, 1e-12));
}

#[derive(Deserialize)]
struct HadamardFile {
    cases: Vec<HadamardCase>,
}

#[derive(Deserialize)]
struct HadamardCase {
    users: u64,
    domain: u64,
    set_size: u64,
    epsilon: X,
    delta: X,
    beta: X,
    tau: u32,
    rho_theorem: X,
    rho_conservative: X,
    rho: u64,
    tuple_bits: u64,
    error_bound: X,
}

#[test]
fn python_reference_hadamard() {
    let file: HadamardFile =
        serde_json::from_str(include_str!("test_vectors/ghazi/hadamard.json")).unwrap();
    for c in file.cases {
        let what = format!(
            "n={} B={} k={} eps={}",
            c.users, c.domain, c.set_size, c.epsilon.0
        );
        let p = HadamardParams::new(c.users, c.domain, c.set_size, c.epsilon.0, c.delta.0)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(p.tau, c.tau, "{what}");
        assert_eq!(p.tuple_bits(), c.tuple_bits, "{what}");
        // ρ rounds up with a 1e-12 margin: one more only when the reference is that close.
        let near_integer = (c.rho_conservative.0 - c.rho_conservative.0.ceil()).abs() < 1e-9;
        assert!(
            p.rho == c.rho || (near_integer && p.rho == c.rho + 1),
            "{what}: {} vs {}",
            p.rho,
            c.rho
        );
        let thm = hadamard_rho_theorem(c.set_size, c.epsilon.0, c.delta.0).unwrap();
        let cons = hadamard_rho_conservative(c.set_size, c.epsilon.0, c.delta.0).unwrap();
        assert!(close(thm, c.rho_theorem.0, 1e-12), "{what}: {thm}");
        assert!(close(cons, c.rho_conservative.0, 1e-12), "{what}: {cons}");
        let bound = p.error_bound(c.beta.0).unwrap();
        assert!(close(bound, c.error_bound.0, 1e-12), "{what}: {bound}");
    }
}

#[derive(Deserialize)]
struct CountMinFile {
    cases: Vec<CountMinCase>,
}

#[derive(Deserialize)]
struct CountMinCase {
    users: u64,
    domain: u64,
    set_size: u64,
    epsilon: X,
    delta: X,
    beta: X,
    rows: u32,
    width: u64,
    requirement: X,
    min_users: u64,
    feasible: bool,
}

#[test]
fn python_reference_count_min() {
    let file: CountMinFile =
        serde_json::from_str(include_str!("test_vectors/ghazi/count_min.json")).unwrap();
    for c in file.cases {
        let what = format!(
            "n={} B={} k={} eps={}",
            c.users, c.domain, c.set_size, c.epsilon.0
        );
        let (eps, delta) = (c.epsilon.0, c.delta.0);
        assert_eq!(
            count_min_rows(c.domain, c.beta.0).unwrap(),
            c.rows,
            "{what}"
        );
        let need = count_min_blanket_requirement(c.rows, c.set_size, eps, delta).unwrap();
        assert!(close(need, c.requirement.0, 1e-12), "{what}: {need}");
        let min = count_min_min_users(c.rows, c.set_size, eps, delta).unwrap();
        assert!(
            min == c.min_users || min == c.min_users + 1,
            "{what}: {min}"
        );
        let ratio = c.requirement.0 / c.users as f64;
        if (ratio - 0.5).abs() < 1e-9 {
            continue; // too close to the boundary for the rounding margin
        }
        match CountMinParams::new(c.users, c.domain, c.set_size, eps, delta, c.beta.0) {
            Ok(p) => {
                assert!(c.feasible, "{what}: accepted an infeasible case");
                assert_eq!((p.rows, p.width), (c.rows, c.width), "{what}");
                assert!(
                    p.gamma >= ratio && p.gamma <= ratio * (1.0 + 1e-9),
                    "{what}"
                );
                assert!(p.gamma <= 0.5);
            }
            Err(Error::Infeasible { why, .. }) => {
                assert!(!c.feasible, "{what}: rejected a feasible case");
                assert!(why.contains(&min.to_string()), "{what}: {why}");
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}
