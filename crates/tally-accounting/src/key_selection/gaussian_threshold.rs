//! Gaussian thresholding, calibrated as Google's differential-privacy library calibrates its
//! `GaussianPartitionSelection` (`cc/algorithms/partition-selection.h`, which PipelineDP calls
//! through PyDP) for one partition per user and one contribution: half of `δ` for the noise,
//! half for the threshold.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

use crate::Error;
use crate::sample_threshold::{check_delta, check_epsilon};

/// Gaussian thresholding: release an item when `c + N(0, σ²)` exceeds `T`.
///
/// # Privacy
///
/// `(ε, δ)`-DP for add/remove neighbours when each client holds one item: the noisy count of
/// an item held by other clients is `(ε, δ/2)`-indistinguishable with the analytic Gaussian
/// `σ` of L2 sensitivity 1 (Balle and Wang 2018, Theorem 8), and an item only the added client
/// holds passes `T = 1 + σ·Φ⁻¹(1 − δ/2)` with probability `δ/2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GaussianThreshold {
    /// The noise standard deviation `σ`.
    pub sigma: f64,
    /// The threshold `T` the noisy count must exceed.
    pub threshold: f64,
}

/// The Gaussian thresholding of `(ε, δ)` for one item per client: `σ` the analytic Gaussian
/// standard deviation for `(ε, δ/2)`, and `T = 1 + σ·Φ⁻¹(1 − δ/2)`, rounded up.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon > 0` is finite and `delta ∈ (0, 1)`.
pub fn gaussian_threshold(epsilon: f64, delta: f64) -> Result<GaussianThreshold, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    let sigma = analytic_gaussian_sigma(epsilon, delta / 2.0)?;
    let threshold = 1.0 + sigma * upper_quantile(delta / 2.0);
    Ok(GaussianThreshold {
        sigma,
        threshold: threshold.next_up(),
    })
}

/// The smallest `σ` (to a relative `1e-12`, rounded up) whose Gaussian mechanism of L2
/// sensitivity 1 is `(ε, δ)`-DP by Balle and Wang's exact condition
/// `Φ(1/(2σ) − εσ) − e^ε·Φ(−1/(2σ) − εσ) ≤ δ`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon > 0` is finite and `delta ∈ (0, 1)`.
pub fn analytic_gaussian_sigma(epsilon: f64, delta: f64) -> Result<f64, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    let delta_of = |sigma: f64| {
        normal_cdf(0.5 / sigma - epsilon * sigma)
            - epsilon.exp() * normal_cdf(-0.5 / sigma - epsilon * sigma)
    };
    let (mut lo, mut hi) = (1e-6, 1.0);
    while delta_of(hi) > delta {
        lo = hi;
        hi *= 2.0;
    }
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if delta_of(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// `Φ(x)`, the standard normal distribution function.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// `φ(x)`, the standard normal density.
fn normal_density(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * PI).sqrt()
}

/// The `x` with `1 − Φ(x) = tail`, by bisection on `erfc` (accurate in the far tail, where
/// `1 − tail` would round).
fn upper_quantile(tail: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 40.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(-mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

impl GaussianThreshold {
    /// `P[c + N(0, σ²) > T] = 1 − Φ((T − c)/σ)`.
    pub(super) fn release_probability(&self, count: u64) -> f64 {
        normal_cdf((count as f64 - self.threshold) / self.sigma)
    }

    /// `E[|Z|·1{Z > a}]` for `Z ~ N(0, σ²)` and `a = T − c`: `σφ(a/σ)` for `a ≥ 0`, and
    /// `σ(2φ(0) − φ(a/σ))` below.
    pub(super) fn released_absolute_error(&self, count: u64) -> f64 {
        let z = (self.threshold - count as f64) / self.sigma;
        if z >= 0.0 {
            self.sigma * normal_density(z)
        } else {
            self.sigma * (2.0 * normal_density(0.0) - normal_density(z))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_selection::tests::absolute_moment_above;

    #[test]
    fn sigma_meets_the_exact_condition_and_is_tight() {
        // Balle and Wang's calibration at ε = 1, δ = 1e-5 gives σ ≈ 3.73 for Δ = 1.
        let sigma = analytic_gaussian_sigma(1.0, 1e-5).expect("valid");
        assert!((sigma - 3.73).abs() < 0.01, "{sigma}");
        let delta_of = |s: f64| normal_cdf(0.5 / s - s) - 1f64.exp() * normal_cdf(-0.5 / s - s);
        assert!(delta_of(sigma) <= 1e-5);
        assert!(delta_of(sigma * (1.0 - 1e-9)) > 1e-5);
    }

    #[test]
    fn an_item_of_one_client_passes_with_probability_half_delta() {
        let gaussian = gaussian_threshold(1.0, 1e-8).expect("valid");
        let p = gaussian.release_probability(1);
        assert!(p <= 0.5e-8 && p > 0.999 * 0.5e-8, "{p}");
    }

    #[test]
    fn error_integrates_the_normal_density() {
        let gaussian = GaussianThreshold {
            sigma: 3.0,
            threshold: 10.0,
        };
        for count in [2, 10, 30] {
            let numeric =
                absolute_moment_above(10.0 - count as f64, |z| normal_density(z / 3.0) / 3.0);
            let exact = gaussian.released_absolute_error(count);
            assert!(
                (numeric - exact).abs() < 1e-6,
                "{count}: {numeric} vs {exact}"
            );
        }
    }
}
