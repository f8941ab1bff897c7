//! Partition selection against the vectors of the independent reference
//! (`python3 tools/reference/partition_selection.py` writes
//! `tests/test_vectors/partition_selection/`): the calibrated parameters exactly, the exact `δ`
//! (at or above the reference, within its rounding margin), the release curves' 50% and 95%
//! points exactly, and the truncated-geometric table against Theorem 1.

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::Neighbours;
use tally_accounting::partition_selection::{
    GaussianSelection, LaplaceSelection, Method, PartitionSelection,
};

#[derive(Deserialize)]
struct Vectors<C> {
    cases: Vec<C>,
}

#[derive(Deserialize)]
struct ReleasePoint {
    probability: X,
    count: u64,
    at_count: X,
    below_count: X,
}

#[derive(Deserialize)]
struct NoiseCase {
    epsilon: X,
    delta: X,
    max_items: u32,
    neighbours: String,
    scale_numerator: Option<u64>,
    scale_denominator: Option<u64>,
    sigma2_numerator: Option<u64>,
    sigma2_denominator: Option<u64>,
    threshold: u64,
    exact_delta: X,
    brute_force_delta: X,
    points: Vec<ReleasePoint>,
}

#[derive(Deserialize)]
struct GeometricCase {
    epsilon: X,
    delta: X,
    n2: usize,
    probabilities: Vec<X>,
    points: Vec<ReleasePoint>,
}

fn load<C: for<'de> Deserialize<'de>>(name: &str) -> Vec<C> {
    let path = format!(
        "{}/tests/test_vectors/partition_selection/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str::<Vectors<C>>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .cases
}

/// The selection's points and probabilities equal the reference's.
fn check_points(selection: &PartitionSelection, points: &[ReleasePoint], case: &str) {
    for point in points {
        let q = point.probability.0;
        assert_eq!(
            selection.release_point(q),
            Some(point.count),
            "{case} at {q}"
        );
        let at = selection.release_probability(point.count);
        let below = selection.release_probability(point.count - 1);
        assert!(
            (at - point.at_count.0).abs() < 1e-9,
            "{case}: {at} vs {}",
            point.at_count.0
        );
        assert!(
            (below - point.below_count.0).abs() < 1e-9,
            "{case}: {below}"
        );
    }
}

/// The reported `δ` is at or above the reference's exact value and within the margin.
fn check_delta(reported: f64, case: &NoiseCase, name: &str) {
    let exact = case.exact_delta.0;
    assert!(
        (case.brute_force_delta.0 - exact).abs() <= 1e-9 * exact,
        "{name}: the reference's brute force"
    );
    assert!(
        reported >= exact && reported <= exact * (1.0 + 2e-6),
        "{name}: δ = {reported} vs {exact}"
    );
    assert!(reported <= case.delta.0, "{name}: above the target");
}

#[test]
fn laplace_thresholding_matches_the_reference() {
    let cases: Vec<NoiseCase> = load("laplace.json");
    assert_eq!(cases.len(), 5);
    for case in &cases {
        let neighbours: Neighbours = case.neighbours.parse().unwrap();
        let name = format!(
            "laplace ε = {}, δ = {}, k = {}, {neighbours}",
            case.epsilon.0, case.delta.0, case.max_items
        );
        let selection =
            LaplaceSelection::calibrate(case.epsilon.0, case.delta.0, case.max_items, neighbours)
                .unwrap();
        assert_eq!(
            selection.scale(),
            (
                case.scale_numerator.unwrap(),
                case.scale_denominator.unwrap()
            ),
            "{name}"
        );
        assert_eq!(selection.threshold(), case.threshold, "{name}");
        check_delta(selection.guarantee().delta, case, &name);
        check_points(&PartitionSelection::Laplace(selection), &case.points, &name);
    }
}

#[test]
fn gaussian_thresholding_matches_the_reference() {
    let cases: Vec<NoiseCase> = load("gaussian.json");
    assert_eq!(cases.len(), 5);
    for case in &cases {
        let neighbours: Neighbours = case.neighbours.parse().unwrap();
        let name = format!(
            "gaussian ε = {}, δ = {}, k = {}, {neighbours}",
            case.epsilon.0, case.delta.0, case.max_items
        );
        let selection =
            GaussianSelection::calibrate(case.epsilon.0, case.delta.0, case.max_items, neighbours)
                .unwrap();
        assert_eq!(
            selection.sigma2(),
            (
                case.sigma2_numerator.unwrap(),
                case.sigma2_denominator.unwrap()
            ),
            "{name}"
        );
        assert_eq!(selection.threshold(), case.threshold, "{name}");
        check_delta(selection.guarantee().delta, case, &name);
        check_points(
            &PartitionSelection::Gaussian(selection),
            &case.points,
            &name,
        );
    }
}

#[test]
fn truncated_geometric_is_theorem_one() {
    let cases: Vec<GeometricCase> = load("truncated_geometric.json");
    assert_eq!(cases.len(), 5);
    for case in &cases {
        let (epsilon, delta) = (case.epsilon.0, case.delta.0);
        let name = format!("truncated geometric ε = {epsilon}, δ = {delta}");
        let selection = PartitionSelection::calibrate(
            Method::TruncatedGeometric,
            epsilon,
            delta,
            1,
            Neighbours::AddRemove,
        )
        .unwrap();
        let PartitionSelection::TruncatedGeometric(geometric) = &selection else {
            unreachable!("calibrated the truncated geometric")
        };
        // The table stops at n₂, the last count released with probability below 1.
        assert_eq!(geometric.table().len(), case.n2 + 1, "{name}");
        for (n, (&ours, theirs)) in geometric
            .table()
            .iter()
            .zip(&case.probabilities)
            .enumerate()
        {
            let exact = theirs.0;
            assert!(
                ours <= exact * (1.0 + 1e-15),
                "{name}, n = {n}: {ours} > {exact}"
            );
            assert!(
                ours >= exact * (1.0 - 1e-9) - 1e-15,
                "{name}, n = {n}: {ours} ≪ {exact}"
            );
        }
        // The paper's δ: the table's realized δ is at most the target and at most a hair below.
        let realized = selection.guarantee().delta;
        assert!(
            realized <= delta && realized >= delta * (1.0 - 1e-6),
            "{name}: {realized}"
        );
        check_points(&selection, &case.points, &name);
    }
}
