//! Central Laplace and discrete Gaussian accounting against the vectors of the independent
//! Python reference (`python3 tools/reference/central.py` writes `tests/test_vectors/central/`),
//! plus sensitivities, monotonicity and input validation.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::central::{
    MAX_GAUSSIAN_VARIANCE, SCALE_DENOMINATOR, Sensitivity, calibrate_gaussian, calibrate_laplace,
    gaussian_delta, gaussian_guarantee, histogram_sensitivity, laplace_epsilon, laplace_guarantee,
};
use tally_accounting::{Error, Neighbours, TrustModel};

const BOTH: [Neighbours; 2] = [Neighbours::AddRemove, Neighbours::ReplaceOne];

#[test]
fn sensitivities() {
    assert_eq!(
        histogram_sensitivity(Neighbours::AddRemove),
        Sensitivity {
            l1: 1,
            l2_squared: 1
        }
    );
    assert_eq!(
        histogram_sensitivity(Neighbours::ReplaceOne),
        Sensitivity {
            l1: 2,
            l2_squared: 2
        }
    );
}

#[test]
fn laplace_scale_is_exact_where_it_can_be() {
    assert_eq!(
        calibrate_laplace(1.0, Neighbours::AddRemove).unwrap(),
        (1, 1)
    );
    assert_eq!(
        calibrate_laplace(1.0, Neighbours::ReplaceOne).unwrap(),
        (2, 1)
    );
    assert_eq!(
        calibrate_laplace(0.5, Neighbours::AddRemove).unwrap(),
        (2, 1)
    );
    assert_eq!(
        calibrate_laplace(4.0, Neighbours::ReplaceOne).unwrap(),
        (1, 2)
    );
    let g = laplace_guarantee((2, 1), Neighbours::ReplaceOne).unwrap();
    assert_eq!(
        (g.epsilon, g.delta, g.model, g.neighbours),
        (1.0, 0.0, TrustModel::Central, Neighbours::ReplaceOne)
    );
}

#[test]
fn laplace_replace_one_doubles_the_scale() {
    for eps in [0.1, 0.3, 1.0, 1.0 / 3.0, 2.5, 7.77] {
        let (an, ad) = calibrate_laplace(eps, Neighbours::AddRemove).unwrap();
        let (rn, rd) = calibrate_laplace(eps, Neighbours::ReplaceOne).unwrap();
        // rn/rd = 2·an/ad, as fractions (the grid is fine enough that both round alike).
        assert_eq!(
            u128::from(rn) * u128::from(ad),
            2 * u128::from(an) * u128::from(rd)
        );
    }
}

#[test]
fn laplace_realized_epsilon_never_exceeds_the_request() {
    let mut eps = 1e-4;
    while eps < 20.0 {
        for neighbours in BOTH {
            let scale = calibrate_laplace(eps, neighbours).unwrap();
            let realized = laplace_epsilon(scale, neighbours).unwrap();
            assert!(realized <= eps, "{eps} {neighbours}: {realized}");
            // Tight: within one grid step of the scale.
            assert!(realized >= eps * (1.0 - 2e-6 * eps), "{eps}: {realized}");
        }
        eps *= 1.37;
    }
}

#[test]
fn gaussian_calibration_meets_the_target_and_is_minimal() {
    for (eps, delta) in [(1.0, 1e-6), (0.3, 1e-9)] {
        for neighbours in BOTH {
            let (num, den) = calibrate_gaussian(eps, delta, neighbours).unwrap();
            let g = gaussian_guarantee((num, den), eps, neighbours).unwrap();
            assert!(g.delta <= delta && g.delta > 0.0, "{g:?}");
            assert_eq!(g.model, TrustModel::Central);
            // The grid point below does not meet the target.
            let below = num * (SCALE_DENOMINATOR / den) - 1;
            assert!(gaussian_delta((below, SCALE_DENOMINATOR), eps, neighbours).unwrap() > delta);
        }
    }
}

#[test]
fn gaussian_delta_is_monotone_and_replace_one_costs_more() {
    for sigma2 in [(1, 2), (4, 1), (50, 1), (1000, 3)] {
        let mut last = [f64::INFINITY; 2];
        for eps in [0.0, 0.05, 0.2, 0.5, 1.0, 2.0] {
            let add = gaussian_delta(sigma2, eps, Neighbours::AddRemove).unwrap();
            let rep = gaussian_delta(sigma2, eps, Neighbours::ReplaceOne).unwrap();
            assert!(add <= last[0] && rep <= last[1], "{sigma2:?} {eps}");
            assert!(add <= rep, "{sigma2:?} {eps}: {add} {rep}");
            last = [add, rep];
        }
    }
    // Decreasing in σ².
    let deltas: Vec<f64> = [1, 2, 4, 8, 16, 32]
        .iter()
        .map(|&s| gaussian_delta((s, 1), 1.0, Neighbours::ReplaceOne).unwrap())
        .collect();
    assert!(deltas.windows(2).all(|w| w[1] < w[0]), "{deltas:?}");
}

#[test]
fn gaussian_delta_at_zero_epsilon_is_total_variation() {
    // At ε = 0 with σ² tiny, the noise is almost always 0 and the shift is detected: δ ≈ 1.
    let d = gaussian_delta((1, 100), 0.0, Neighbours::AddRemove).unwrap();
    assert!(d > 0.999 && d <= 1.0, "{d}");
}

#[test]
fn invalid_inputs_are_rejected() {
    let bad = |r: Result<(u64, u64), Error>, which: &str| match r {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, which),
        other => panic!("expected an invalid {which}, got {other:?}"),
    };
    let n = Neighbours::AddRemove;
    bad(calibrate_laplace(0.0, n), "epsilon");
    bad(calibrate_laplace(-1.0, n), "epsilon");
    bad(calibrate_laplace(f64::NAN, n), "epsilon");
    bad(calibrate_laplace(f64::INFINITY, n), "epsilon");
    bad(calibrate_laplace(1e-12, n), "epsilon");
    bad(calibrate_laplace(2f64.powi(-31).next_down(), n), "epsilon");
    bad(calibrate_gaussian(0.0, 1e-6, n), "epsilon");
    bad(calibrate_gaussian(1.0, 0.0, n), "delta");
    bad(calibrate_gaussian(1.0, 1.0, n), "delta");
    bad(calibrate_gaussian(1.0, f64::NAN, n), "delta");
    assert!(matches!(
        laplace_epsilon((0, 1), n),
        Err(Error::InvalidParameter { name: "scale", .. })
    ));
    assert!(matches!(
        gaussian_delta((1, 0), 1.0, n),
        Err(Error::InvalidParameter { name: "sigma2", .. })
    ));
    assert!(matches!(
        gaussian_delta((MAX_GAUSSIAN_VARIANCE + 1, 1), 1.0, n),
        Err(Error::InvalidParameter { name: "sigma2", .. })
    ));
    assert!(matches!(
        gaussian_delta((1, 1), -0.5, n),
        Err(Error::InvalidParameter {
            name: "epsilon",
            ..
        })
    ));
    assert!(matches!(
        calibrate_gaussian(1e-7, 1e-12, n),
        Err(Error::Infeasible { what: "sigma2", .. })
    ));
}

fn neighbours(name: &str) -> Neighbours {
    name.parse().unwrap()
}

#[derive(Deserialize)]
struct LaplaceFile {
    cases: Vec<LaplaceCase>,
}

#[derive(Deserialize)]
struct LaplaceCase {
    neighbours: String,
    epsilon: X,
    scale: (u64, u64),
    realized_epsilon: X,
}

#[test]
fn python_reference_laplace() {
    let file: LaplaceFile =
        serde_json::from_str(include_str!("test_vectors/central/laplace.json")).unwrap();
    for case in file.cases {
        let n = neighbours(&case.neighbours);
        let scale = calibrate_laplace(case.epsilon.0, n).unwrap();
        assert_eq!(scale, case.scale, "{} {}", case.epsilon.0, case.neighbours);
        let realized = laplace_epsilon(scale, n).unwrap();
        assert_eq!(
            realized.to_bits(),
            case.realized_epsilon.0.to_bits(),
            "{} {}: {realized} vs {}",
            case.epsilon.0,
            case.neighbours,
            case.realized_epsilon.0
        );
    }
}

#[derive(Deserialize)]
struct DeltaFile {
    cases: Vec<DeltaCase>,
}

#[derive(Deserialize)]
struct DeltaCase {
    neighbours: String,
    sigma2: (u64, u64),
    epsilon: X,
    delta: X,
}

#[test]
fn python_reference_gaussian_delta() {
    let file: DeltaFile =
        serde_json::from_str(include_str!("test_vectors/central/gaussian_delta.json")).unwrap();
    for case in file.cases {
        let got =
            gaussian_delta(case.sigma2, case.epsilon.0, neighbours(&case.neighbours)).unwrap();
        let want = case.delta.0;
        // At or above the exact value (up to its double rounding), within the 1e-6 margin.
        assert!(
            got >= want * (1.0 - 1e-12) && got <= want * (1.0 + 2e-6),
            "{} σ²={:?} ε={}: {got:e} vs {want:e}",
            case.neighbours,
            case.sigma2,
            case.epsilon.0
        );
    }
}

#[derive(Deserialize)]
struct CalibrationFile {
    cases: Vec<CalibrationCase>,
}

#[derive(Deserialize)]
struct CalibrationCase {
    neighbours: String,
    epsilon: X,
    delta: X,
    sigma2_min: (u64, u64),
    sigma2_max: (u64, u64),
}

#[test]
fn python_reference_gaussian_calibration() {
    let file: CalibrationFile = serde_json::from_str(include_str!(
        "test_vectors/central/gaussian_calibration.json"
    ))
    .unwrap();
    let as_ratio = |(n, d): (u64, u64)| u128::from(n) * u128::from(SCALE_DENOMINATOR / d);
    for case in file.cases {
        let got =
            calibrate_gaussian(case.epsilon.0, case.delta.0, neighbours(&case.neighbours)).unwrap();
        let (lo, hi, at) = (
            as_ratio(case.sigma2_min),
            as_ratio(case.sigma2_max),
            as_ratio(got),
        );
        assert!(
            lo <= at && at <= hi,
            "{} ε={} δ={}: {got:?} not in [{:?}, {:?}]",
            case.neighbours,
            case.epsilon.0,
            case.delta.0,
            case.sigma2_min,
            case.sigma2_max
        );
    }
}
