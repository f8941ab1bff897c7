//! What a key selection releases: the probability that an item held by `c` clients is
//! released, and how far its released estimate lies from `c`, for sample-and-threshold and for
//! the noise-based selections it is compared with (docs/algorithms.md §1.5;
//! docs/privacy/planner.md).
//!
//! Every quantity is exact from the law of the release: the binomial law of the sampled count
//! for sample-and-threshold, the noise law for Laplace and Gaussian thresholding. Nothing here
//! is a privacy parameter: these are predictions of utility, computed for parameters that the
//! calibrations ([`crate::sample_threshold::plan`], [`laplace_threshold`],
//! [`gaussian_threshold`]) chose.

mod gaussian_threshold;
mod laplace_threshold;
mod population;
mod sampled_count;

pub use gaussian_threshold::{GaussianThreshold, analytic_gaussian_sigma, gaussian_threshold};
pub use laplace_threshold::{LaplaceThreshold, laplace_threshold};
pub use population::{PopulationUtility, population_utility};

use crate::sample_threshold::SampleThresholdParams;

/// A key selection whose release law is known exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeySelection {
    /// Sample-and-threshold: each client is sampled with probability `p_s`, an item is
    /// released when its sampled count `X ~ Bin(c, p_s)` reaches `τ`, with estimate `X/p_s`.
    SampleThreshold(SampleThresholdParams),
    /// Laplace thresholding: an item is released when `c + Lap(b)` exceeds `T`, with that
    /// noisy count as its estimate.
    Laplace(LaplaceThreshold),
    /// Gaussian thresholding: an item is released when `c + N(0, σ²)` exceeds `T`, with that
    /// noisy count as its estimate.
    Gaussian(GaussianThreshold),
}

/// The largest count [`KeySelection::release_point`] searches.
pub const MAX_RELEASE_POINT: u64 = 1 << 40;

/// The counts a curve is evaluated at: `points` counts spread evenly over `1..=max`, with 0
/// first (fewer when `max < points`).
pub fn curve_counts(max: u64, points: u64) -> Vec<u64> {
    let mut counts: Vec<u64> = (0..=points).map(|i| (i * max).div_ceil(points)).collect();
    counts.dedup();
    counts
}

impl KeySelection {
    /// `P[released | true count c]`. An item no client holds is never released.
    pub fn release_probability(&self, count: u64) -> f64 {
        if count == 0 {
            return 0.0;
        }
        match self {
            Self::SampleThreshold(params) => sampled_count::release_probability(
                count,
                params.sampling_rate(),
                params.threshold(),
            ),
            Self::Laplace(laplace) => laplace.release_probability(count),
            Self::Gaussian(gaussian) => gaussian.release_probability(count),
        }
    }

    /// The release curve at `counts`: `(c, P[released | c])` for each.
    pub fn release_curve(&self, counts: &[u64]) -> Vec<(u64, f64)> {
        counts
            .iter()
            .map(|&c| (c, self.release_probability(c)))
            .collect()
    }

    /// `E[|estimate − c| · 1{released}]`, the absolute error of the estimate on the event that
    /// the item is released (0 when it never is).
    pub fn released_absolute_error(&self, count: u64) -> f64 {
        if count == 0 {
            return 0.0;
        }
        match self {
            Self::SampleThreshold(params) => sampled_count::released_absolute_error(
                count,
                params.sampling_rate(),
                params.threshold(),
            ),
            Self::Laplace(laplace) => laplace.released_absolute_error(count),
            Self::Gaussian(gaussian) => gaussian.released_absolute_error(count),
        }
    }

    /// `E[|estimate − c| / c | released]`, the expected relative error of a released
    /// estimate; `None` when an item held by `c` clients is never released.
    pub fn relative_error(&self, count: u64) -> Option<f64> {
        let released = self.release_probability(count);
        (released > 0.0).then(|| self.released_absolute_error(count) / (released * count as f64))
    }

    /// The smallest count `c` with `P[released | c] ≥ probability` ([`release_point`]).
    pub fn release_point(&self, probability: f64) -> Option<u64> {
        release_point(|c| self.release_probability(c), probability)
    }
}

/// The smallest count `c ≥ 1` with `release_probability(c) ≥ probability`, for a release
/// probability that grows with `c`, by doubling and bisection; `None` if no count up to
/// [`MAX_RELEASE_POINT`] reaches it.
pub fn release_point(release_probability: impl Fn(u64) -> f64, probability: f64) -> Option<u64> {
    let reaches = |c: u64| release_probability(c) >= probability;
    let mut hi = 1;
    while !reaches(hi) {
        if hi >= MAX_RELEASE_POINT {
            return None;
        }
        hi *= 2;
    }
    let mut lo = hi / 2;
    // Invariant: `lo` does not reach the probability (or is 0), `hi` does.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `∫_a^60 |z|·density(z) dz` by the midpoint rule (the densities tested are negligible
    /// beyond 60).
    pub(crate) fn absolute_moment_above(a: f64, density: impl Fn(f64) -> f64) -> f64 {
        let steps = 400_000;
        let width = (60.0 - a) / f64::from(steps);
        (0..steps)
            .map(|i| {
                let z = a + (f64::from(i) + 0.5) * width;
                z.abs() * density(z) * width
            })
            .sum()
    }

    #[test]
    fn release_point_is_the_first_count_that_reaches_the_probability() {
        let params = SampleThresholdParams::new(0.2, 10).expect("valid");
        let selection = KeySelection::SampleThreshold(params);
        for probability in [0.05, 0.5, 0.95, 0.999] {
            let point = selection.release_point(probability).expect("reached");
            assert!(selection.release_probability(point) >= probability);
            assert!(selection.release_probability(point - 1) < probability);
        }
        assert!(selection.release_probability(0).abs() < f64::MIN_POSITIVE);
    }

    #[test]
    fn curve_counts_spread_from_zero_to_the_largest() {
        assert_eq!(curve_counts(10, 4), [0, 3, 5, 8, 10]);
        assert_eq!(curve_counts(3, 400), [0, 1, 2, 3]);
    }

    #[test]
    fn relative_error_is_none_where_nothing_is_released() {
        let params = SampleThresholdParams::new(0.2, 10).expect("valid");
        let selection = KeySelection::SampleThreshold(params);
        assert_eq!(selection.relative_error(9), None);
        assert!(
            selection
                .relative_error(100)
                .is_some_and(|e| e > 0.0 && e < 1.0)
        );
    }
}
