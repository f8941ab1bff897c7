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

use tally_accounting::central::{calibrate_laplace, laplace_guarantee};
use tally_accounting::{ErrorLaw, Neighbours};

use crate::Error;
use crate::histogram::{CentralNoise, CentralNoiseHistogram};
use crate::noise::DiscreteLaplace;

/// The central histogram with discrete Laplace noise over the domain `0..B`.
///
/// # Privacy
///
/// Pure `(ε, 0)`-DP in the central model at the realized `ε = Δ₁/t` (see the module).
pub type LaplaceHistogram = CentralNoiseHistogram<DiscreteLaplace>;

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
        Self::calibrated(domain, || {
            let scale = calibrate_laplace(epsilon, neighbours)?;
            Ok((
                DiscreteLaplace::new(scale)?,
                laplace_guarantee(scale, neighbours)?,
            ))
        })
    }

    /// The noise scale `t` as `(numerator, denominator)` in lowest terms.
    pub fn scale(&self) -> (u64, u64) {
        self.noise.scale()
    }
}

impl CentralNoise for DiscreteLaplace {
    const MECHANISM: &'static str = "laplace";

    /// Discrete Laplace noise of the calibrated scale.
    fn error_law(&self) -> ErrorLaw {
        let (numerator, denominator) = self.scale();
        ErrorLaw::DiscreteLaplace {
            scale: numerator as f64 / denominator as f64,
        }
    }
}
