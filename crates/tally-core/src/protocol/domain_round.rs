//! Rounds over a public domain: every device holds a domain element. A [`CountedRound`] may
//! draw its aggregate from how many devices hold each element; a [`DomainRound`] also releases
//! an estimate of every element's count. The central ([`super::CentralHistogramRound`]) and
//! local ([`super::LocalHistogramRound`]) histograms are such rounds; an executor runs any of
//! them alike, taking the path the round declares it supports.

use rand::Rng;

use super::{DeviceQuery, RoundProtocol};

/// A round whose devices hold a domain element, which may draw its aggregate from the number
/// of devices holding each element.
pub trait CountedRound: RoundProtocol<Query: DeviceQuery<Input = u32>> {
    /// The aggregator after every device answered, `counts[j]` of them holding element `j`,
    /// drawn with the same law from these counts alone (without forming the reports) when the
    /// round can; its coins, as the devices', from `rng`. `None` (the default) when every
    /// device must answer.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per domain element.
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<Self::Aggregator> {
        let _ = (counts, rng);
        None
    }
}

/// A round whose devices hold a domain element and whose release is every element's estimate.
pub trait DomainRound: CountedRound {
    /// The release as every domain element's estimate, in order.
    fn estimates(release: Self::Release) -> Vec<f64>;
}
