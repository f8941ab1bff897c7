//! The central discrete Laplace histogram (docs/algorithms.md §7.1): the exact count of every
//! domain element plus independent discrete Laplace noise.
//!
//! # Privacy
//!
//! Pure `(ε, 0)`-DP in the central model (a trusted curator, or a secure aggregator standing in
//! for one, sees the raw counts; the analyst sees only the noisy ones), for the neighbour
//! relation chosen at construction. One client changes the vector of counts by `Δ₁ = 1`
//! (add-remove) or `Δ₁ = 2` (replace-one) in L1 norm, and discrete Laplace noise of scale `t`
//! on every count gives `ε = Δ₁/t`. The scale is calibrated in
//! [`tally_accounting::central::calibrate_laplace`] as an exact rational rounded up, so the
//! realized `ε` (reported rounded up) never exceeds the requested one, and the noise is drawn
//! by the exact sampler [`DiscreteLaplace`] (CKS 2020, Algorithm 2): no floating point touches
//! the released values.

use rand::Rng;
use tally_accounting::central::{calibrate_laplace, laplace_guarantee};
use tally_accounting::{ErrorLaw, Guarantee, Neighbours};

use crate::Error;
use crate::histogram::{DomainHistogram, DomainMap, check_map};
use crate::ldp::check_domain;
use crate::noise::DiscreteLaplace;
use crate::protocol::{CentralHistogramRound, add_noise};

/// The central histogram with discrete Laplace noise over the domain `0..B`.
#[derive(Clone, Debug, PartialEq)]
pub struct LaplaceHistogram {
    domain: u32,
    noise: DiscreteLaplace,
    guarantee: Guarantee,
}

impl LaplaceHistogram {
    /// The mechanism over `domain = B ≥ 2` elements with the smallest grid scale `t` meeting
    /// `epsilon` for `neighbours` (`t ≥ Δ₁/ε`, see
    /// [`calibrate_laplace`](tally_accounting::central::calibrate_laplace)).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `B < 2`; [`Error::Accounting`] unless `epsilon` is finite
    /// and at least `2^−31`.
    pub fn new(domain: u32, epsilon: f64, neighbours: Neighbours) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let scale = calibrate_laplace(epsilon, neighbours)?;
        Ok(Self {
            domain,
            noise: DiscreteLaplace::new(scale)?,
            guarantee: laplace_guarantee(scale, neighbours)?,
        })
    }

    /// The noise scale `t` as `(numerator, denominator)` in lowest terms.
    pub fn scale(&self) -> (u64, u64) {
        self.noise.scale()
    }

    /// The central guarantee: pure DP at the realized `ε = Δ₁/t`.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// Releases precomputed exact counts (one per domain element): `counts[j] + X_j` with
    /// independent discrete Laplace `X_j`, the release rule of its round's aggregator.
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
    /// discrete Laplace noise to every count.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the mechanism's.
    pub fn round(&self, map: DomainMap) -> Result<CentralHistogramRound<DiscreteLaplace>, Error> {
        check_map(self.domain, map)?;
        Ok(CentralHistogramRound::new(map, self.noise.clone()))
    }
}

impl DomainHistogram for LaplaceHistogram {
    fn name(&self) -> &'static str {
        "laplace"
    }

    fn domain(&self) -> u32 {
        self.domain
    }

    fn guarantee(&self) -> Guarantee {
        self.guarantee.clone()
    }

    /// The count plus discrete Laplace noise of the calibrated scale, whatever the counts.
    fn error_law(&self, _: u64, _: u64) -> Option<ErrorLaw> {
        let (numerator, denominator) = self.scale();
        Some(ErrorLaw::DiscreteLaplace {
            scale: numerator as f64 / denominator as f64,
        })
    }
}
