//! What the central histograms over a public domain share: the exact count of every domain
//! element plus independent noise of one calibrated distribution. The discrete Laplace
//! ([`super::LaplaceHistogram`]) and discrete Gaussian ([`super::GaussianHistogram`])
//! histograms are this mechanism with their own noise, calibration and guarantee.
//!
//! # Privacy
//!
//! The guarantee is the one the noise was calibrated for, in the central model (a trusted
//! curator, or a secure aggregator standing in for one, sees the raw counts; the analyst sees
//! only the noisy ones): each mechanism's module states it. The noise is drawn by the noise's
//! exact sampler, independently for every count.

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::{ErrorLaw, Guarantee};

use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, check_map};
use crate::ldp::check_domain;
use crate::protocol::{CentralHistogramRound, add_noise};

/// The noise a central histogram adds to every count.
pub trait CentralNoise: Distribution<i64> + Clone + Send + Sync {
    /// The mechanism's name, as [`DomainHistogram::name`] gives it.
    const MECHANISM: &'static str;

    /// The law of a released count's error: this noise, whatever the counts.
    fn error_law(&self) -> ErrorLaw;
}

/// The central histogram over the domain `0..B` that adds independent draws of the noise `N`
/// to every count.
///
/// # Privacy
///
/// The guarantee its constructor calibrated the noise for: see
/// [`LaplaceHistogram::new`](super::LaplaceHistogram) and
/// [`GaussianHistogram::new`](super::GaussianHistogram).
#[derive(Clone, Debug, PartialEq)]
pub struct CentralNoiseHistogram<N> {
    domain: u32,
    pub(super) noise: N,
    guarantee: Guarantee,
}

impl<N: CentralNoise> CentralNoiseHistogram<N> {
    /// The mechanism over `domain = B ≥ 2` elements with the noise and guarantee `calibrate`
    /// gives (called once the domain is checked).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `B < 2`; `calibrate`'s error.
    pub(super) fn calibrated(
        domain: u32,
        calibrate: impl FnOnce() -> Result<(N, Guarantee), Error>,
    ) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let (noise, guarantee) = calibrate()?;
        Ok(Self {
            domain,
            noise,
            guarantee,
        })
    }

    /// The central guarantee the noise was calibrated for.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// Releases precomputed exact counts (one per domain element): `counts[j] + X_j` with
    /// independent draws `X_j` of the noise, the release rule of its round's aggregator.
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

    /// Its round over `map`'s domain: devices report their element, the aggregator adds the
    /// noise to every count.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the mechanism's.
    pub fn round(&self, map: DomainMap) -> Result<CentralHistogramRound<N>, Error> {
        check_map(self.domain, map)?;
        Ok(CentralHistogramRound::new(map, self.noise.clone()))
    }
}

impl<N: CentralNoise> DomainHistogram for CentralNoiseHistogram<N> {
    fn name(&self) -> &'static str {
        N::MECHANISM
    }

    fn domain(&self) -> u32 {
        self.domain
    }

    fn guarantee(&self) -> Guarantee {
        self.guarantee.clone()
    }

    /// The count plus the noise, whatever the counts.
    fn error_law(&self, _: u64, _: u64) -> Option<ErrorLaw> {
        Some(self.noise.error_law())
    }
}
