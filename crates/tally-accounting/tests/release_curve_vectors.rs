//! The release curves' 50% and 95% points against the vectors of the independent scipy
//! reference (`python3 tools/reference/release_curve.py` writes
//! `tests/test_vectors/release_curve/`).

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::key_selection::{KeySelection, gaussian_threshold, laplace_threshold};
use tally_accounting::sample_threshold::SampleThresholdParams;

#[derive(Deserialize)]
struct Vectors {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    selection: String,
    sampling_rate: Option<X>,
    threshold: Option<u64>,
    epsilon: Option<X>,
    delta: Option<X>,
    points: Vec<ReleasePoint>,
}

#[derive(Deserialize)]
struct ReleasePoint {
    probability: X,
    count: u64,
    at_count: X,
    below_count: X,
}

impl Case {
    fn selection(&self) -> KeySelection {
        let privacy = || {
            (
                self.epsilon.expect("epsilon").0,
                self.delta.expect("delta").0,
            )
        };
        match self.selection.as_str() {
            "sample-threshold" => KeySelection::SampleThreshold(
                SampleThresholdParams::new(
                    self.sampling_rate.expect("rate").0,
                    self.threshold.expect("threshold"),
                )
                .expect("valid parameters"),
            ),
            "laplace" => {
                let (epsilon, delta) = privacy();
                KeySelection::Laplace(laplace_threshold(epsilon, delta).expect("valid"))
            }
            "gaussian" => {
                let (epsilon, delta) = privacy();
                KeySelection::Gaussian(gaussian_threshold(epsilon, delta).expect("valid"))
            }
            other => panic!("unknown selection {other}"),
        }
    }
}

#[test]
fn release_points_match_the_scipy_reference() {
    let text = include_str!("test_vectors/release_curve/release_points.json");
    let vectors: Vectors = serde_json::from_str(text).expect("vectors parse");
    assert_eq!(vectors.cases.len(), 15);
    for case in &vectors.cases {
        let selection = case.selection();
        for point in &case.points {
            let q = point.probability.0;
            assert_eq!(
                selection.release_point(q),
                Some(point.count),
                "{} {:?}: the {q} point",
                case.selection,
                selection
            );
            for (count, expected) in [
                (point.count, point.at_count.0),
                (point.count - 1, point.below_count.0),
            ] {
                let p = selection.release_probability(count);
                assert!(
                    (p - expected).abs() <= 1e-9 * expected.max(1e-300),
                    "{} at {count}: {p} vs scipy {expected}",
                    case.selection
                );
            }
        }
    }
}
