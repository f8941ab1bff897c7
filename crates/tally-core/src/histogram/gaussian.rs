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

use rand::Rng;
use tally_accounting::central::{calibrate_gaussian, gaussian_guarantee};
use tally_accounting::{ErrorLaw, Guarantee, Neighbours};

use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, check_map};
use crate::ldp::check_domain;
use crate::noise::DiscreteGaussian;
use crate::protocol::{CentralHistogramRound, add_noise};

/// The central histogram with discrete Gaussian noise over the domain `0..B`.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianHistogram {
    domain: u32,
    noise: DiscreteGaussian,
    guarantee: Guarantee,
}

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
        let domain = check_domain(domain)?;
        let sigma2 = calibrate_gaussian(epsilon, delta, neighbours)?;
        Ok(Self {
            domain,
            noise: DiscreteGaussian::new(sigma2)?,
            guarantee: gaussian_guarantee(sigma2, epsilon, neighbours)?,
        })
    }

    /// The noise variance parameter `σ²` as `(numerator, denominator)` in lowest terms.
    pub fn sigma2(&self) -> (u64, u64) {
        self.noise.sigma2()
    }

    /// The central guarantee at the requested `ε`, with `δ` at most the requested one.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// Releases precomputed exact counts (one per domain element): `counts[j] + X_j` with
    /// independent discrete Gaussian `X_j`, the release rule of its round's aggregator.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per domain element, or a count exceeds `i64::MAX`.
    pub fn release_counts<R: Rng + ?Sized>(&self, counts: &[u64], rng: &mut R) -> Vec<i64> {
        assert_eq!(
            counts.len(),
            self.domain as usize,
            "one count per domain element"
        );
        add_noise(counts, &self.noise, rng)
    }

    /// Its round over `map`'s domain: devices report their element, the aggregator adds
    /// discrete Gaussian noise to every count.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the mechanism's.
    pub fn round(&self, map: DomainMap) -> Result<CentralHistogramRound<DiscreteGaussian>, Error> {
        check_map(self.domain, map)?;
        Ok(CentralHistogramRound::new(map, self.noise.clone()))
    }
}

impl DomainHistogram for GaussianHistogram {
    fn name(&self) -> &'static str {
        "gaussian"
    }

    fn domain(&self) -> u32 {
        self.domain
    }

    fn guarantee(&self) -> Guarantee {
        self.guarantee.clone()
    }

    /// The count plus discrete Gaussian noise of the calibrated `σ²`, whatever the counts.
    fn error_law(&self, _: u64, _: u64) -> Option<ErrorLaw> {
        let (numerator, denominator) = self.sigma2();
        Some(ErrorLaw::DiscreteGaussian {
            sigma2: numerator as f64 / denominator as f64,
        })
    }
}
