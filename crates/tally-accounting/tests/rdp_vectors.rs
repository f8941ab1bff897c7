//! RDP curves and conversions against the independent Python reference
//! (`python3 tools/reference/pld.py` writes `tests/test_vectors/pld/rdp.json`).
//!
//! Every `ρ_λ` and converted `ε` must be at or above the exact value and within a relative
//! `1e-10` of it.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::rdp::{Conversion, ORDERS, RdpCurve};

#[derive(Deserialize)]
struct File {
    orders: Vec<X>,
    pure: Vec<PureCase>,
    gaussian: Vec<GaussianCase>,
    laplace: Vec<LaplaceCase>,
    conversions: Vec<ConversionCase>,
}

#[derive(Deserialize)]
struct PureCase {
    epsilon: X,
    rho: Vec<X>,
}

#[derive(Deserialize)]
struct GaussianCase {
    sensitivity: X,
    sigma: X,
    rho: Vec<X>,
}

#[derive(Deserialize)]
struct LaplaceCase {
    sensitivity: X,
    scale: X,
    rho: Vec<X>,
}

#[derive(Deserialize)]
struct ConversionCase {
    epsilon: X,
    rounds: u64,
    delta: X,
    cks: X,
    standard: X,
}

/// `actual` is at or above `exact` (rounded to nearest, so one ulp of slack) and within a
/// relative `1e-10`.
fn assert_up_close(actual: f64, exact: f64, what: &str) {
    assert!(
        actual >= exact.next_down() && actual <= exact * (1.0 + 1e-10),
        "{what}: {actual:e} vs exact {exact:e}"
    );
}

/// Checks a curve's leading values (the reference may give fewer orders than the grid).
fn check_curve(curve: &RdpCurve, exact: &[X], what: &str) {
    assert!(!exact.is_empty());
    for ((rho, want), order) in curve.values().iter().zip(exact).zip(ORDERS) {
        assert_up_close(*rho, want.0, &format!("{what}, λ = {order}"));
    }
}

#[test]
fn test_vec_rdp() {
    let file: File = serde_json::from_str(include_str!("test_vectors/pld/rdp.json")).unwrap();
    let orders: Vec<u64> = file.orders.iter().map(|x| x.0.to_bits()).collect();
    let grid: Vec<u64> = ORDERS.iter().map(|x| x.to_bits()).collect();
    assert_eq!(orders, grid, "the reference uses the grid of rdp::ORDERS");
    for case in &file.pure {
        let curve = RdpCurve::pure(case.epsilon.0).unwrap();
        check_curve(&curve, &case.rho, &format!("pure ε = {}", case.epsilon.0));
    }
    for case in &file.gaussian {
        let curve = RdpCurve::gaussian(case.sensitivity.0, case.sigma.0).unwrap();
        check_curve(&curve, &case.rho, &format!("Gaussian σ = {}", case.sigma.0));
    }
    for case in &file.laplace {
        let curve = RdpCurve::laplace(case.sensitivity.0, case.scale.0).unwrap();
        check_curve(&curve, &case.rho, &format!("Laplace b = {}", case.scale.0));
    }
    for case in &file.conversions {
        let curve = RdpCurve::pure(case.epsilon.0)
            .unwrap()
            .self_compose(case.rounds);
        let what = format!(
            "ε = {}, k = {}, δ = {}",
            case.epsilon.0, case.rounds, case.delta.0
        );
        let cks = curve.epsilon(case.delta.0, Conversion::Cks).unwrap();
        assert_up_close(cks, case.cks.0, &format!("CKS {what}"));
        let standard = curve.epsilon(case.delta.0, Conversion::Standard).unwrap();
        assert_up_close(standard, case.standard.0, &format!("standard {what}"));
    }
}
