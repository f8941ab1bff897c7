//! The round of a local frequency oracle over a public domain: every device randomizes its own
//! domain element with its own coins and sends only the randomized report; the aggregator
//! counts the reports and debiases them into an estimate of every element's count. GRR, SUE,
//! OUE, OLH and Hadamard response ([`crate::ldp`]) are this round with different randomizers
//! ([`LocalRandomizer`], implemented beside each).
//!
//! # Privacy
//!
//! The guarantee is the randomizer's, in [`TrustModel::Local`]: each report is ε-LDP on its
//! own, so neither the aggregator nor the analyst need be trusted. The device's coins are its
//! own ([`DeviceQuery::respond`]); the aggregator draws none, and a report it receives is
//! counted only if some device could have sent it ([`DeviceQuery::admits`]), so a dishonest
//! device moves the estimates by at most one report's worth.

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::wire::BoundedDomainQuery;
use super::{
    CountedRound, DeviceQuery, DomainRound, Estimates, RoundAggregator, RoundProtocol,
    SingleMessage, TrustModel, WireReport,
};
use crate::Error;
use crate::histogram::{DomainMap, check_map};

/// A local randomizer of a domain element and the debiasing aggregator of its reports.
pub trait LocalRandomizer: Clone + Send + Sync + std::fmt::Debug {
    /// What a device sends.
    type Report: WireReport + SingleMessage + Clone;
    /// Counts reports and debiases them into every element's estimate.
    type Aggregator: RoundAggregator<Report = Self::Report, Release = Estimates>;

    /// The domain size `k`.
    fn domain(&self) -> u32;

    /// A device's randomized report of `element` (below [`domain`](Self::domain)), with its
    /// own coins.
    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> Self::Report;

    /// Whether the randomizer could have produced `report` (its shape: in range, of the
    /// domain's length).
    fn admits(&self, report: &Self::Report) -> bool;

    /// The length of the longest report's wire encoding, in bytes.
    fn longest_report(&self) -> u64;

    /// An empty aggregator.
    fn aggregator(&self) -> Self::Aggregator;

    /// The aggregator after every device answered, `counts[j]` of them holding element `j`,
    /// drawn with the same law from these counts alone when the randomizer can (a unary
    /// encoding's support counts are binomials), at a fraction of the cost; `None` otherwise.
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

/// The round of a local randomizer over `map`'s domain; it is its own query.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalHistogramRound<M> {
    map: DomainMap,
    randomizer: M,
}

impl<M: LocalRandomizer> LocalHistogramRound<M> {
    /// The round of `randomizer` over `map`'s domain.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `map`'s domain is not the randomizer's.
    pub fn new(map: DomainMap, randomizer: M) -> Result<Self, Error> {
        check_map(randomizer.domain(), map)?;
        Ok(Self { map, randomizer })
    }

    /// The randomizer.
    pub fn randomizer(&self) -> &M {
        &self.randomizer
    }

    /// How a device's item is placed in the domain.
    pub fn map(&self) -> DomainMap {
        self.map
    }
}

impl<M: LocalRandomizer> DeviceQuery for LocalHistogramRound<M> {
    type Input = u32;
    type Report = M::Report;

    fn trust(&self) -> TrustModel {
        TrustModel::Local
    }

    /// The randomized element; `None` outside the domain.
    fn respond<R: Rng + ?Sized>(&self, element: &u32, rng: &mut R) -> Option<M::Report> {
        (*element < self.randomizer.domain()).then(|| self.randomizer.randomize(*element, rng))
    }

    fn admits(&self, report: &M::Report) -> bool {
        self.randomizer.admits(report)
    }
}

impl<M: LocalRandomizer> BoundedDomainQuery for LocalHistogramRound<M> {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    fn longest_report(&self) -> u64 {
        self.randomizer.longest_report()
    }
}

impl<M: LocalRandomizer> RoundProtocol for LocalHistogramRound<M> {
    type Query = Self;
    type Release = Estimates;
    type Aggregator = M::Aggregator;

    fn query(&self) -> &Self {
        self
    }

    /// The aggregator flips no coins: `rng` is unused.
    fn aggregator(&self, _: ChaCha20Rng) -> M::Aggregator {
        self.randomizer.aggregator()
    }
}

impl<M: LocalRandomizer> DomainRound for LocalHistogramRound<M> {
    fn estimates(Estimates(estimates): Estimates) -> Vec<f64> {
        estimates
    }
}

impl<M: LocalRandomizer> CountedRound for LocalHistogramRound<M> {
    /// The randomizer's [`LocalRandomizer::aggregate_counts`].
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<M::Aggregator> {
        self.randomizer.aggregate_counts(counts, rng)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::ldp::{Grr, HadamardResponse, Olh, SubsetReport, SubsetSelection, UnaryRandomizer};
    use crate::protocol::wire::DeviceResponder;

    #[test]
    fn devices_randomize_in_the_domain_and_the_aggregator_debiases() {
        let grr = Grr::new(4, 1.0).unwrap();
        assert!(LocalHistogramRound::new(DomainMap::Integers(5), grr.clone()).is_err());
        let round = LocalHistogramRound::new(DomainMap::Integers(4), grr).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert_eq!(DeviceQuery::respond(&round, &4, &mut rng), None);
        assert!(round.admits(&3) && !round.admits(&4));
        let responder: &dyn DeviceResponder = &round;
        assert!(responder.accepts(" 3") && !responder.accepts("4"));
        let report = responder.respond("2", 8, &mut rng).unwrap();
        assert!(u32::decode(report).is_some_and(|r| r < 4));
        assert_eq!(responder.respond("2", 0, &mut rng), None);
        let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(0));
        for _ in 0..10 {
            RoundAggregator::absorb(&mut aggregator, 1);
        }
        // Every report names 1: the debiased estimate is above 10 for 1, below 0 elsewhere.
        let Estimates(estimates) = aggregator.release();
        assert!(estimates[1] > 10.0 && estimates[0] < 0.0, "{estimates:?}");
    }

    /// Every randomizer's longest report is the longest of many it sends (and, for OLH, of
    /// its largest hash and value), so a device never sends more than the bound says.
    #[test]
    fn no_report_is_longer_than_the_longest() {
        fn longest_seen<M: LocalRandomizer>(randomizer: &M) -> u64 {
            let mut rng = ChaCha20Rng::seed_from_u64(1);
            (0..2000)
                .map(|i| randomizer.randomize(i % randomizer.domain(), &mut rng))
                .map(|report| report.encode().len() as u64)
                .max()
                .unwrap()
        }
        let grr = Grr::new(1000, 1.0).unwrap();
        assert_eq!((grr.longest_report(), longest_seen(&grr)), (3, 3));
        let hadamard = HadamardResponse::new(1000, 1.0).unwrap();
        assert_eq!((hadamard.longest_report(), longest_seen(&hadamard)), (4, 4));
        let sue = UnaryRandomizer::sue(100, 1.0).unwrap();
        assert_eq!((sue.longest_report(), longest_seen(&sue)), (100, 100));
        let olh = Olh::new(1000, 3.0).unwrap();
        let seen = longest_seen(&olh);
        assert!(seen <= olh.longest_report() && seen + 3 >= olh.longest_report());
        // Subset selection's longest report lists the largest elements: "9,10,11".
        let subsets = SubsetSelection::with_size(12, 1.0, 3).unwrap();
        assert_eq!(subsets.longest_report(), 7);
        assert_eq!(SubsetReport(vec![9, 10, 11]).encode().len(), 7);
        assert!(longest_seen(&subsets) <= 7);
    }
}
