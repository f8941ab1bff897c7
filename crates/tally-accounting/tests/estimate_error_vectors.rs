//! The error of one domain element's estimate against the vectors of the independent scipy
//! reference (`python3 tools/reference/estimate_error.py` writes
//! `tests/test_vectors/estimate_error/`).

mod common;

use common::X;
use serde::Deserialize;
use tally_accounting::ErrorLaw;

#[derive(Deserialize)]
struct Vectors {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    law: String,
    scale: Option<X>,
    sigma2: Option<X>,
    n1: Option<u64>,
    p1: Option<X>,
    n2: Option<u64>,
    p2: Option<X>,
    gap: Option<X>,
    count: Option<u64>,
    clients: Option<u64>,
    p: Option<X>,
    bias: X,
    standard_deviation: X,
    mean_absolute_error: X,
}

impl Case {
    fn law(&self) -> ErrorLaw {
        let x = |v: Option<X>| v.expect("parameter").0;
        let n = |v: Option<u64>| v.expect("parameter");
        match self.law.as_str() {
            "discrete-laplace" => ErrorLaw::DiscreteLaplace {
                scale: x(self.scale),
            },
            "discrete-gaussian" => ErrorLaw::DiscreteGaussian {
                sigma2: x(self.sigma2),
            },
            "debiased-binomials" => ErrorLaw::DebiasedBinomials {
                parts: [(n(self.n1), x(self.p1)), (n(self.n2), x(self.p2))],
                gap: x(self.gap),
            },
            "thresholded-binomial" => ErrorLaw::ThresholdedBinomial {
                count: n(self.count),
                clients: n(self.clients),
                p: x(self.p),
            },
            other => panic!("unknown law {other}"),
        }
    }
}

#[test]
fn estimate_errors_match_the_scipy_reference() {
    let text = include_str!("test_vectors/estimate_error/estimate_error.json");
    let vectors: Vectors = serde_json::from_str(text).expect("vectors parse");
    assert_eq!(vectors.cases.len(), 16);
    for case in &vectors.cases {
        let law = case.law();
        let error = law.error();
        let scale = case.standard_deviation.0.max(1e-300);
        assert!(
            (error.bias - case.bias.0).abs() <= 1e-9 * (1.0 + scale),
            "{law}: bias {} vs scipy {}",
            error.bias,
            case.bias.0
        );
        for (what, ours, theirs) in [
            ("sd", error.standard_deviation, case.standard_deviation.0),
            (
                "E|error|",
                error.mean_absolute_error,
                case.mean_absolute_error.0,
            ),
        ] {
            assert!(
                (ours - theirs).abs() <= 1e-9 * theirs,
                "{law}: {what} {ours} vs scipy {theirs}"
            );
        }
    }
}
