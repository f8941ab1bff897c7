//! Accuracy bounds of the S&T histogram (paper §3.3; docs/algorithms.md §1.5).

/// Upper bound on the probability that an item with expected sampled count `w = W·p_s > τ`
/// is omitted: `exp(−(w − τ)²/(2w))`. Returns 1 when `w ≤ τ`, where the bound says nothing.
pub fn omission_bound(expected_count: f64, threshold: u64) -> f64 {
    let tau = threshold as f64;
    if expected_count <= tau {
        return 1.0;
    }
    (-(expected_count - tau).powi(2) / (2.0 * expected_count)).exp()
}

/// `β = 2 exp(−γ²μ/3)`: the probability that an item with expected sampled count `μ` is
/// estimated with relative error above `γ < 1`.
pub fn relative_error_failure(gamma: f64, expected_count: f64) -> f64 {
    (2.0 * (-gamma * gamma * expected_count / 3.0).exp()).min(1.0)
}

/// The smallest relative frequency `φ = (3/(γ² m))·ln(2/β)` whose estimate is within relative
/// error `γ` with probability at least `1 − β`, for an expected sample size `m`. (The paper
/// prints `ln(1/2β)`; `ln(2/β)` is the correct rearrangement.)
pub fn min_frequency_for_relative_error(gamma: f64, beta: f64, expected_sample: f64) -> f64 {
    3.0 / (gamma * gamma * expected_sample) * (2.0 / beta).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_vec_appendix_a_item_3() {
        let a = omission_bound(100.0, 20);
        assert!((a / 1.266_416_554_909_417_6e-14 - 1.0).abs() < 1e-12);
        let b = omission_bound(120.0, 15);
        assert!((b / 1.120_978_382_610_026_4e-20 - 1.0).abs() < 1e-12);
        assert!((omission_bound(10.0, 20) - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn relative_error_round_trip() {
        // §1.6: p_s = 0.1, γ = 1/√10 and ln(2/β) = 10 give μ = 300, φ = 3000/n.
        let gamma = 0.1_f64.sqrt();
        let beta = 2.0 * (-10.0_f64).exp();
        let n = 1e6;
        let phi = min_frequency_for_relative_error(gamma, beta, 0.1 * n);
        assert!((phi * n - 3000.0).abs() < 1e-6);
        assert!((relative_error_failure(gamma, 300.0) - beta).abs() < 1e-15);
    }
}
