//! Sample-and-threshold with keyed coins: the rate rounded down to the keyed coin's resolution
//! and the guarantee computed for that rate.
//!
//! # Privacy
//!
//! As [`SampleThreshold`], for the rate [`keyed_rate`] actually uses (at most `2^-64` below
//! the calibrated one; the accountant's `δ` is recomputed for it), while the sampling key stays
//! secret. See [`crate::sampling::KeyedCoin`].

use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams};

use super::SampleThreshold;
use crate::Error;
use crate::sampling::{KeyedCoin, SamplingKey, keyed_rate};

impl SampleThreshold {
    /// Calibrates the mechanism for a target `(ε, δ)` as [`SampleThreshold::calibrate`] does,
    /// then rounds the sampling rate down to what a keyed coin can use and computes the
    /// guarantee for the rounded rate.
    ///
    /// # Errors
    ///
    /// As [`SampleThreshold::calibrate`], and the accountant's errors for the rounded rate.
    pub fn calibrate_keyed(
        epsilon: f64,
        delta: f64,
        target: PlanTarget,
        analysis: Analysis,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        let planned = Self::calibrate(epsilon, delta, target, analysis, neighbours)?;
        let params = planned.params();
        let rate = keyed_rate(params.sampling_rate())?;
        if rate.to_bits() == params.sampling_rate().to_bits() {
            return Ok(planned);
        }
        let params = SampleThresholdParams::new(rate, params.threshold())?;
        Self::new(params, epsilon, analysis, neighbours)
    }

    /// The clients' keyed coin for this mechanism's rate.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the rate is not a multiple of `2^-64` (a mechanism not
    /// built by [`SampleThreshold::calibrate_keyed`] or with such a rate), since the coin would
    /// then use a rate the guarantee was not computed for.
    pub fn keyed_coin(&self, key: SamplingKey) -> Result<KeyedCoin, Error> {
        let coin = KeyedCoin::new(key, self.params().sampling_rate())?;
        if coin.rate().to_bits() != self.params().sampling_rate().to_bits() {
            return Err(Error::invalid(
                "sampling rate",
                self.params().sampling_rate(),
                "a multiple of 2^-64 for a keyed coin (calibrate with calibrate_keyed)",
            ));
        }
        Ok(coin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guarantee_is_computed_for_the_rounded_rate() {
        // A small rate: its low bits fall below 2^-64 and are dropped.
        let target = PlanTarget::SamplingRate(1e-5);
        let keyed = SampleThreshold::calibrate_keyed(
            1.0,
            1e-9,
            target,
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        let planned =
            SampleThreshold::calibrate(1.0, 1e-9, target, Analysis::Tight, Neighbours::AddRemove)
                .unwrap();
        let (rate, planned_rate) = (
            keyed.params().sampling_rate(),
            planned.params().sampling_rate(),
        );
        assert!(rate < planned_rate, "{rate} vs {planned_rate}");
        assert_eq!(keyed_rate(rate).unwrap().to_bits(), rate.to_bits());
        let threshold = keyed.params().threshold();
        assert_eq!(threshold, planned.params().threshold());
        let recomputed = SampleThresholdParams::new(rate, threshold)
            .unwrap()
            .guarantee(1.0, Analysis::Tight, Neighbours::AddRemove)
            .unwrap();
        assert_eq!(keyed.guarantee(), &recomputed);
        assert!(keyed.guarantee().delta <= 1e-9);
        assert!(keyed.keyed_coin(SamplingKey::derive(b"k").unwrap()).is_ok());
        assert!(
            planned
                .keyed_coin(SamplingKey::derive(b"k").unwrap())
                .is_err()
        );
    }
}
