//! Calibration of the pure local-DP randomizers (docs/algorithms.md §7.2 and §7.4): the
//! probabilities tally-core's frequency oracles flip, and their guarantee.
//!
//! # Privacy
//!
//! Every randomizer calibrated here is ε-LDP in the local model: pure (`δ = 0`) and
//! replace-one over *any* two inputs, `Pr[R(x) = y] ≤ e^ε Pr[R(x') = y]` for all inputs `x, x'`
//! and reports `y` ([`ldp_guarantee`]).
//!
//! The textbook probabilities, such as `e^ε/(e^ε + k − 1)`, are irrational. Each function
//! returns an `f64` probability (a dyadic rational, which tally-core samples exactly) obtained
//! by rounding the textbook value and then stepping it, one ulp at a time, in the direction
//! that lowers the privacy ratio, until a rigorous upper bound on the ratio of the
//! probabilities *really used* is at most a rigorous lower bound on `e^ε`. The bounds widen
//! every rounded operation by one ulp and rely only on the `libm` crate's `exp` being accurate
//! to within one ulp. Hence the requested ε holds exactly, and estimators that debias with the
//! returned probabilities stay unbiased. If ε is so small (below about `1e-14`) that no such
//! probability is found within a few ulps, calibration fails.

use crate::{Error, Guarantee, Neighbours, TrustModel};

/// The guarantee of an ε-LDP randomizer: pure, replace-one (any two inputs).
pub fn ldp_guarantee(epsilon: f64, mechanism: &str) -> Guarantee {
    Guarantee {
        epsilon,
        delta: 0.0,
        neighbours: Neighbours::ReplaceOne,
        model: TrustModel::Local,
        analysis: format!("local {mechanism} (pure ε-LDP, any two inputs)"),
    }
}

/// How many ulps a probability may be stepped before giving up.
const MAX_NUDGES: usize = 64;

/// A rigorous lower bound on `e^ε` (at least 1): `libm::exp` is within one ulp.
fn exp_lower(epsilon: f64) -> f64 {
    libm::exp(epsilon).next_down().next_down().max(1.0)
}

/// Steps `start` with `step` until `ratio_bounds` (a rigorous enclosure `[lo, hi]` of the
/// privacy ratio of the probabilities, or `None` if it is unbounded) satisfies
/// `1 ≤ lo ≤ hi ≤ e^ε`.
fn calibrate(
    epsilon: f64,
    start: f64,
    step: impl Fn(f64) -> f64,
    ratio_bounds: impl Fn(f64) -> Option<(f64, f64)>,
) -> Result<f64, Error> {
    let e_low = exp_lower(epsilon);
    let mut x = start;
    for _ in 0..MAX_NUDGES {
        if let Some((lo, hi)) = ratio_bounds(x)
            && lo >= 1.0
            && hi <= e_low
        {
            return Ok(x);
        }
        x = step(x);
    }
    Err(Error::invalid(
        "epsilon",
        epsilon,
        "large enough that rounded probabilities can keep the ratio within e^epsilon",
    ))
}

/// The keep probability of randomized response over `m ≥ 2` values: the largest `f64`
/// `p ≤ fl(e^ε/(e^ε + m − 1))` (stepped down from the rounded textbook value) whose ratio
/// `p (m − 1)/(1 − p)` is provably at most `e^ε` (and at least 1).
pub fn rr_keep_probability(epsilon: f64, m: u64) -> Result<f64, Error> {
    debug_assert!(m >= 2);
    inclusion_probability(epsilon, m - 1, 1)
}

/// The probability `p` that a report lists the client's own item when a report lists
/// `inside ≥ 1` of the `inside + outside` items and the privacy ratio is
/// `p · outside/((1 − p) · inside)` (subset selection; randomized response is `inside = 1`):
/// the largest `f64` `p ≤ fl(inside e^ε/(inside e^ε + outside))`, stepped down from the rounded
/// textbook value, whose ratio is provably at most `e^ε` (and at least 1).
pub fn inclusion_probability(epsilon: f64, outside: u64, inside: u64) -> Result<f64, Error> {
    debug_assert!(outside >= 1 && inside >= 1);
    let (outside, inside) = (outside as f64, inside as f64);
    let e = libm::exp(epsilon);
    let start = inside * e / (inside * e + outside);
    calibrate(epsilon, start, f64::next_down, |p| {
        if !(p > 0.0 && p < 1.0) {
            return None;
        }
        let one_minus = 1.0 - p;
        let hi = ((p * outside).next_up() / product_down(one_minus.next_down(), inside)).next_up();
        let lo = ((p * outside).next_down() / product_up(one_minus.next_up(), inside)).next_down();
        Some((lo, hi))
    })
}

/// A lower bound on `x · y`: the rounded product, one ulp lower unless it is exact (its
/// rounding error, computed exactly by a fused multiply-add, says which).
fn product_down(x: f64, y: f64) -> f64 {
    let product = x * y;
    if x.mul_add(y, -product) >= 0.0 {
        product
    } else {
        product.next_down()
    }
}

/// An upper bound on `x · y`, as [`product_down`].
fn product_up(x: f64, y: f64) -> f64 {
    let product = x * y;
    if x.mul_add(y, -product) <= 0.0 {
        product
    } else {
        product.next_up()
    }
}

/// SUE's bit probability `p` (with `q = 1 − p`, exact in `f64` since `p ≥ 1/2`), stepped down
/// from `fl(e^{ε/2}/(e^{ε/2} + 1))` until the ratio `(p/(1 − p))²` is provably at most `e^ε`.
pub fn sue_probability(epsilon: f64) -> Result<f64, Error> {
    let h = libm::exp(epsilon / 2.0);
    let start = h / (h + 1.0);
    calibrate(epsilon, start, f64::next_down, |p| {
        if !(0.5..1.0).contains(&p) {
            return None;
        }
        let one_minus = 1.0 - p; // exact (Sterbenz)
        let r_hi = (p / one_minus).next_up();
        let r_lo = (p / one_minus).next_down();
        Some(((r_lo * r_lo).next_down(), (r_hi * r_hi).next_up()))
    })
}

/// OUE's `q` (with `p = 1/2`), stepped up from `fl(1/(e^ε + 1))` until the ratio `(1 − q)/q` is
/// provably at most `e^ε`.
pub fn oue_probability(epsilon: f64) -> Result<f64, Error> {
    let start = 1.0 / (libm::exp(epsilon) + 1.0);
    calibrate(epsilon, start, f64::next_up, |q| {
        if !(q > 0.0 && q <= 0.5) {
            return None;
        }
        let one_minus = 1.0 - q;
        let hi = (one_minus.next_up() / q).next_up();
        let lo = (one_minus.next_down() / q).next_down();
        Some((lo, hi))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_probabilities_are_close_to_the_textbook_values() {
        for eps in [1e-6_f64, 0.1, 0.5, 1.0, 3.0, 10.0] {
            let e = eps.exp();
            for m in [2u64, 5, 1024] {
                let p = rr_keep_probability(eps, m).unwrap();
                let exact = e / (e + (m - 1) as f64);
                assert!(p <= exact && (exact - p) / exact < 1e-14, "{eps} {m}");
            }
            let p = sue_probability(eps).unwrap();
            assert!(((e.sqrt() / (e.sqrt() + 1.0)) - p).abs() < 1e-14);
            let q = oue_probability(eps).unwrap();
            assert!(((1.0 / (e + 1.0)) - q).abs() / q < 1e-14);
        }
    }

    #[test]
    fn tiny_epsilon_is_rejected_not_miscalibrated() {
        assert!(rr_keep_probability(1e-300, 3).is_err());
    }

    #[test]
    fn large_epsilon_stays_private() {
        // e^ε/(e^ε + 1) rounds to 1 here: the calibration must step below 1.
        let p = rr_keep_probability(60.0, 2).unwrap();
        assert!(p < 1.0);
        assert!(p / (1.0 - p) <= 60f64.exp());
    }
}
