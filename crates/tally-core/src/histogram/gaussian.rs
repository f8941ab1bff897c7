//! The central discrete Gaussian histogram: the exact count of every domain element plus
//! independent discrete Gaussian noise `N_Z(0, σ²)`.
//!
//! # Privacy
//!
//! `(ε, δ)`-DP in the central model (a trusted curator, or a secure aggregator standing in for
//! one, sees the raw counts; the analyst sees only the noisy ones), for the neighbour relation
//! chosen at construction: add-remove changes one count by 1, replace-one two counts by `+1`
//! and `−1` (`Δ₂² = 2`). `δ` is the exact hockey-stick divergence of the changed cells (CKS
//! 2020 Theorem 7 for one cell, the same computation on the sum of the two changed cells'
//! noise for two), bounded above rigorously in
//! [`tally_accounting::central::gaussian_delta`]; `σ²` is the smallest exact rational on a
//! `2^−20` grid whose bound meets the requested `δ`
//! ([`tally_accounting::central::calibrate_gaussian`]). The noise is drawn by the exact
//! sampler [`DiscreteGaussian`] (CKS 2020, Algorithm 3).

use tally_accounting::central::{calibrate_gaussian, gaussian_guarantee};
use tally_accounting::{ErrorLaw, Neighbours};

use crate::Error;
use crate::histogram::{CentralNoise, CentralNoiseHistogram};
use crate::noise::DiscreteGaussian;

/// The central histogram with discrete Gaussian noise over the domain `0..B`.
///
/// # Privacy
///
/// `(ε, δ)`-DP in the central model at the requested `ε`, with `δ` at most the requested one
/// (see the module).
pub type GaussianHistogram = CentralNoiseHistogram<DiscreteGaussian>;

impl GaussianHistogram {
    /// The mechanism over `domain = B ≥ 2` elements with the smallest grid `σ²` whose `δ` at
    /// `epsilon` is at most `delta` for `neighbours`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `B < 2`; [`Error::Accounting`] unless `epsilon` is finite
    /// and positive and `delta ∈ (0, 1)`, or if the target needs `σ² > 2^32`.
    pub fn new(
        domain: u32,
        epsilon: f64,
        delta: f64,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        Self::calibrated(domain, || {
            let sigma2 = calibrate_gaussian(epsilon, delta, neighbours)?;
            Ok((
                DiscreteGaussian::new(sigma2)?,
                gaussian_guarantee(sigma2, epsilon, neighbours)?,
            ))
        })
    }

    /// The noise variance parameter `σ²` as `(numerator, denominator)` in lowest terms.
    pub fn sigma2(&self) -> (u64, u64) {
        self.noise.sigma2()
    }
}

impl CentralNoise for DiscreteGaussian {
    const MECHANISM: &'static str = "gaussian";

    /// Discrete Gaussian noise of the calibrated `σ²`.
    fn error_law(&self) -> ErrorLaw {
        let (numerator, denominator) = self.sigma2();
        ErrorLaw::DiscreteGaussian {
            sigma2: numerator as f64 / denominator as f64,
        }
    }
}
