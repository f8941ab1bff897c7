//! The earlier "θ" analysis of the workshop version (seed 002) and of "Federated Heavy
//! Hitters revisited" (seed 004), kept to reproduce those notes (docs/algorithms.md §1.4, Legacy).
//! Prefer [`super::Analysis`] for new work.

use crate::Error;
use crate::numeric::lambert_w0;

/// `θ = 3 + ln(1/δ)`, the multiplier of the case `p_s > 1/k`.
pub fn legacy_theta_standard(delta: f64) -> f64 {
    3.0 + (1.0 / delta).ln()
}

/// `p_θ = exp(−(θ−1)²/(θ+1))`, the failure probability of the legacy lemma.
pub fn legacy_failure_probability(theta: f64) -> f64 {
    (-(theta - 1.0).powi(2) / (theta + 1.0)).exp()
}

/// The `θ` solving `θ ln θ − θ + 1 = ln(1/δ)` for the case `p_s ≤ 1/k`:
/// `θ = e·exp(W0((ln(1/δ) − 1)/e))`. The papers print `e·W((1/e) ln(1/(eδ)))`, a typo.
pub fn legacy_theta_lambert(delta: f64) -> f64 {
    let e = std::f64::consts::E;
    e * (lambert_w0(((1.0 / delta).ln() - 1.0) / e)).exp()
}

/// The per-histogram `ε` of the legacy analysis, `e^ε = 1/(1 − θ p_s)`.
///
/// # Errors
///
/// If `θ·p_s ≥ 1`, where the analysis gives no guarantee.
pub fn legacy_epsilon(theta: f64, sampling_rate: f64) -> Result<f64, Error> {
    let product = theta * sampling_rate;
    if !(product > 0.0 && product < 1.0) {
        return Err(Error::invalid(
            "theta * sampling rate",
            product,
            "a number in (0, 1)",
        ));
    }
    Ok(-(-product).ln_1p())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        ((a - b) / b).abs() < 1e-12
    }

    #[test]
    fn test_vec_appendix_a_item_4() {
        assert!(close(legacy_theta_standard(1e-6), 16.815_510_557_964_274));
        assert!(close(
            legacy_failure_probability(16.815_510_557_964_274),
            7.988_968_375_953_293e-7
        ));
        assert!(close(legacy_theta_standard(1e-8), 21.420_680_743_952_367));
        assert!(close(
            legacy_failure_probability(21.420_680_743_952_367),
            8.366_020_956_486_915e-9
        ));
        assert!(close(legacy_theta_lambert(1e-6), 9.908_467_850_620_543));
        assert!(close(legacy_theta_lambert(1e-8), 11.839_318_041_833_272));
        assert!(close(
            legacy_failure_probability(20.0),
            3.421_929_432_264_753e-8
        ));
    }

    #[test]
    fn legacy_epsilon_needs_theta_p_below_one() {
        assert!(legacy_epsilon(20.0, 0.05).is_err());
        assert!(close(legacy_epsilon(20.0, 0.01).unwrap(), -(0.8_f64.ln())));
    }
}
