//! Rounds over a public domain: every device holds a domain element, and the round releases an
//! estimate of every element's count. The central ([`super::CentralHistogramRound`]) and local
//! ([`super::LocalHistogramRound`]) histograms are such rounds; an executor runs any of them
//! alike, taking the path the round declares it supports.

use rand::Rng;

use super::{DeviceQuery, RoundProtocol};

/// A round whose devices hold a domain element and whose release is every element's estimate.
pub trait DomainRound: RoundProtocol<Query: DeviceQuery<Input = u32>> {
    /// The release as every domain element's estimate, in order.
    fn estimates(release: Self::Release) -> Vec<f64>;

    /// The aggregator after every device holding one of `elements` answered, drawn with the
    /// same law from the elements alone (without forming the reports) when the round can; its
    /// coins, as the devices', from `rng`. `None` (the default) when every device must answer.
    ///
    /// # Panics
    ///
    /// If an element is outside the domain.
    fn aggregate_elements<R: Rng + ?Sized>(
        &self,
        elements: &[u32],
        rng: &mut R,
    ) -> Option<Self::Aggregator> {
        let _ = (elements, rng);
        None
    }
}
