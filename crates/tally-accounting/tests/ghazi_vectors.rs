//! Parameters of the Ghazi et al. multi-message protocols against docs/algorithms.md §5.1 and
//! Appendix A item 8, and against the vectors of the independent Python references
//! (`python3 tools/reference/ghazi.py` writes `tests/test_vectors/ghazi/`,
//! `python3 tools/reference/ghazi_blanket_cap.py` the Count-Min blanket cap's
//! `tests/test_vectors/ghazi_blanket_cap/`).

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::Error;
use tally_accounting::blanket::BlanketAnalysis;
use tally_accounting::ghazi::{
    CountMinParams, HadamardParams, MARGIN, count_min_blanket_cap, count_min_blanket_requirement,
    count_min_delta_split, count_min_min_users, count_min_rows, hadamard_rho_conservative,
    hadamard_rho_theorem, heavy_hitter_levels,
};

/// Count-Min calibrated by Lemma 4.10 alone.
fn lemma_count_min(
    users: u64,
    domain: u64,
    set_size: u64,
    epsilon: f64,
    delta: f64,
    beta: f64,
) -> Result<CountMinParams, Error> {
    CountMinParams::with_analysis(
        users,
        domain,
        set_size,
        (epsilon, delta),
        beta,
        BlanketAnalysis::Theorem,
    )
}

/// Hadamard response calibrated by Theorem 4.3 (conservative `ρ`) alone.
fn theorem_hadamard(
    users: u64,
    domain: u64,
    set_size: u64,
    epsilon: f64,
    delta: f64,
) -> Result<HadamardParams, Error> {
    HadamardParams::with_analysis(
        users,
        domain,
        set_size,
        (epsilon, delta),
        BlanketAnalysis::Theorem,
    )
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

#[test]
fn section_5_1() {
    let p = theorem_hadamard(1 << 20, 1 << 10, 1, 1.0, 1e-6).unwrap();
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
    // n ≥ 2.52·10^6 by the lemma at δ; at n = 2^24, γ ≥ 0.0750.
    assert_eq!(count_min_min_users(28, 1, 1.0, 1e-6).unwrap(), 2_517_703);
    assert_eq!(count_min_rows(1 << 26, 0.5).unwrap(), 28);
    let p = lemma_count_min(1 << 24, 1 << 26, 1, 1.0, 1e-6, 0.5).unwrap();
    assert!((0.0750..0.0751).contains(&p.gamma), "{}", p.gamma);
    // The lemma runs at δ_L = 0.99·10^{-6}, which takes 2,519,121 users (2·1,259,560.4).
    let (lemma, _) = count_min_delta_split(1e-6).unwrap();
    assert_eq!(count_min_min_users(28, 1, 1.0, lemma).unwrap(), 2_519_121);
    assert!(matches!(
        lemma_count_min(2_519_120, 1 << 26, 1, 1.0, 1e-6, 0.5),
        Err(Error::Infeasible { why, .. }) if why.contains("2519121")
    ));
    assert!(lemma_count_min(2_519_121, 1 << 26, 1, 1.0, 1e-6, 0.5).is_ok());
}

/// `δ_L + δ_cap = δ` in floating point, `δ_L ≤ 0.99·δ`, over a sweep of `δ`.
#[test]
fn the_count_min_delta_split_adds_up_to_the_target() {
    for delta in (1..2000).map(|i| f64::from(i) * 4.99e-4 * 1e-3f64.powi(i % 5)) {
        let (lemma, cap) = count_min_delta_split(delta).unwrap();
        assert_eq!((lemma + cap).to_bits(), delta.to_bits(), "{delta}");
        assert!(lemma <= delta * 0.99 && cap >= delta / 100.0, "{delta}");
        assert!(lemma > delta * 0.98999, "{delta}");
    }
    assert!(count_min_delta_split(0.0).is_err() && count_min_delta_split(1.0).is_err());
}

#[test]
fn validity_checks() {
    let invalid = |r: Result<HadamardParams, Error>, which: &str| match r {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, which),
        other => panic!("expected an invalid {which}, got {other:?}"),
    };
    invalid(theorem_hadamard(1 << 10, 1000, 1, 1.0, 1e-6), "domain");
    invalid(theorem_hadamard(1 << 10, 4, 4, 1.0, 1e-6), "set size");
    invalid(theorem_hadamard(1 << 10, 4, 1, 1.5, 1e-6), "epsilon");
    invalid(theorem_hadamard(1, 4, 1, 1.0, 1e-6), "users");
    invalid(theorem_hadamard(1 << 10, 4, 1, 1.0, 0.0), "delta");
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
        let p = theorem_hadamard(c.users, c.domain, c.set_size, c.epsilon.0, c.delta.0)
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
        // The parameters run the lemma at δ_L (below the reference's δ): they need more users.
        let (lemma, _) = count_min_delta_split(delta).unwrap();
        let need = count_min_blanket_requirement(c.rows, c.set_size, eps, lemma).unwrap();
        let ratio = need / c.users as f64;
        if (ratio - 0.5).abs() < 1e-9 {
            continue; // too close to the boundary for the rounding margin
        }
        match lemma_count_min(c.users, c.domain, c.set_size, eps, delta, c.beta.0) {
            Ok(p) => {
                assert!(c.feasible, "{what}: accepted an infeasible case");
                assert_eq!(p.lemma_delta.to_bits(), lemma.to_bits(), "{what}");
                assert_eq!((p.rows, p.width), (c.rows, c.width), "{what}");
                assert!(
                    p.gamma >= ratio && p.gamma <= ratio * (1.0 + 1e-9),
                    "{what}"
                );
                assert!(p.gamma <= 0.5);
            }
            Err(Error::Infeasible { why, .. }) => {
                assert!(
                    !c.feasible || ratio > 0.5,
                    "{what}: rejected a feasible case"
                );
                let min = count_min_min_users(c.rows, c.set_size, eps, lemma).unwrap();
                assert!(why.contains(&min.to_string()), "{what}: {why}");
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

#[derive(Deserialize)]
struct BlanketCapFile {
    cases: Vec<BlanketCapCase>,
}

#[derive(Deserialize)]
struct BlanketCapCase {
    users: u64,
    domain: u64,
    set_size: u64,
    epsilon: X,
    delta: X,
    beta: X,
    lemma_delta: X,
    rows: u32,
    cells: u64,
    gamma: X,
    blanket_cap: u64,
}

/// Count-Min's `δ_L`, `γ` and blanket cap `q` against the Python reference, which also checks
/// with scipy's exact binomial tail that `Pr[Bin(N, γ) > q]` is within the budget: `q`
/// exactly, `γ` within 1e-12 of the reference's once inflated by [`MARGIN`].
#[test]
fn python_reference_count_min_blanket_cap() {
    let file: BlanketCapFile = serde_json::from_str(include_str!(
        "test_vectors/ghazi_blanket_cap/blanket_cap.json"
    ))
    .unwrap();
    assert_eq!(file.cases.len(), 6);
    for c in file.cases {
        let what = format!("n={} B={} eps={}", c.users, c.domain, c.epsilon.0);
        let p = lemma_count_min(
            c.users,
            c.domain,
            c.set_size,
            c.epsilon.0,
            c.delta.0,
            c.beta.0,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(p.lemma_delta.to_bits(), c.lemma_delta.0.to_bits(), "{what}");
        assert_eq!(u64::from(p.rows) * p.width, c.cells, "{what}");
        assert_eq!(p.rows, c.rows, "{what}");
        assert!(
            close(p.gamma, c.gamma.0 * (1.0 + MARGIN), 1e-12),
            "{what}: {}",
            p.gamma
        );
        assert_eq!(p.blanket_cap, c.blanket_cap, "{what}");
        assert!(p.guarantee().analysis.contains("blanket capped"));
        assert_eq!(p.guarantee().delta.to_bits(), c.delta.0.to_bits());
    }
    // N = 16, γ = 1/4, budget 0.999/(2·(1 + e)) = 0.134: the bound at q + 1 = 8 is
    // exp(−16·D(1/2‖1/4)) = 0.100 and at 7 it is 0.264. A cap of every cell always passes.
    assert_eq!(count_min_blanket_cap(16, 0.25, 2, 1.0, 0.999).unwrap(), 7);
    assert_eq!(count_min_blanket_cap(16, 0.25, 2, 1.0, 1e-300).unwrap(), 16);
}
