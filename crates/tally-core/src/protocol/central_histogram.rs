//! The round of a central histogram over a public domain: every device reports its domain
//! element, the aggregator counts every element and releases each count plus independent
//! noise drawn from its own secret coins. Central discrete Laplace
//! ([`crate::histogram::LaplaceHistogram`]) and discrete Gaussian
//! ([`crate::histogram::GaussianHistogram`]) are this round with different noise
//! ([`crate::histogram::CentralNoiseHistogram::round`]).
//!
//! # Privacy
//!
//! The guarantee is the mechanism's, in [`TrustModel::Central`]: the aggregator sees the exact
//! counts and must be trusted (or stand for a secure aggregation), the analyst sees only the
//! noisy ones. The noise is drawn by the mechanism's exact sampler from the aggregator's stream,
//! which no device sees; [`RoundAggregator::release`] is the only way the counts leave.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::Distribution;

use super::wire::{
    BoundedDomainQuery, WireCell, WireRelease, decimal_digits, element_cells, element_values,
};
use super::{CountedRound, DeviceQuery, DomainRound, RoundAggregator, RoundProtocol, TrustModel};
use crate::histogram::DomainMap;

/// The query of a domain-histogram round whose devices send their domain element itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DomainElement {
    /// How a device's item is placed in the public domain.
    pub map: DomainMap,
}

impl DeviceQuery for DomainElement {
    type Input = u32;
    type Report = u32;

    fn trust(&self) -> TrustModel {
        TrustModel::Central
    }

    /// The element itself; `None` outside the domain.
    fn respond<R: Rng + ?Sized>(&self, element: &u32, _: &mut R) -> Option<u32> {
        self.admits(element).then_some(*element)
    }

    fn admits(&self, element: &u32) -> bool {
        *element < self.map.size()
    }
}

impl BoundedDomainQuery for DomainElement {
    fn domain_map(&self) -> DomainMap {
        self.map
    }

    /// The largest element, in decimal.
    fn longest_report(&self) -> u64 {
        decimal_digits(u64::from(self.map.size() - 1))
    }

    /// The element, always.
    fn flips_no_coin(&self) -> bool {
        true
    }
}

/// A central histogram round: its query and the noise its aggregator adds to every count.
#[derive(Clone, Debug, PartialEq)]
pub struct CentralHistogramRound<D> {
    query: DomainElement,
    noise: D,
}

impl<D> CentralHistogramRound<D> {
    /// The round over `map`'s domain adding independent draws of `noise`.
    pub fn new(map: DomainMap, noise: D) -> Self {
        Self {
            query: DomainElement { map },
            noise,
        }
    }
}

impl<D: Distribution<i64> + Clone> RoundProtocol for CentralHistogramRound<D> {
    type Query = DomainElement;
    type Release = NoisyCounts;
    type Aggregator = CentralCounts<D>;

    fn query(&self) -> &DomainElement {
        &self.query
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> CentralCounts<D> {
        CentralCounts {
            counts: vec![0; self.query.map.size() as usize],
            noise: self.noise.clone(),
            rng,
        }
    }
}

impl<D: Distribution<i64> + Clone> DomainRound for CentralHistogramRound<D> {
    fn estimates(release: NoisyCounts) -> Vec<f64> {
        release.estimates()
    }
}

impl<D: Distribution<i64> + Clone> CountedRound for CentralHistogramRound<D> {
    /// The counts themselves: the devices send their elements as they are, so this is what
    /// absorbing them one by one counts. Its coins (never used: it only merges into the
    /// releasing aggregator) come from `rng`.
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<CentralCounts<D>> {
        assert_eq!(
            counts.len(),
            self.query.map.size() as usize,
            "one count per domain element"
        );
        let mut aggregator = self.aggregator(ChaCha20Rng::from_rng(rng));
        aggregator.counts = counts.to_vec();
        Some(aggregator)
    }
}

/// The aggregator of a central histogram round: the exact count of every domain element.
/// Deliberately neither `Debug` nor serializable; [`RoundAggregator::release`] is the only way
/// out.
pub struct CentralCounts<D> {
    counts: Vec<u64>,
    noise: D,
    rng: ChaCha20Rng,
}

impl<D: Distribution<i64>> RoundAggregator for CentralCounts<D> {
    type Report = u32;
    type Release = NoisyCounts;

    /// Counts an admitted element.
    ///
    /// # Panics
    ///
    /// If `element` is outside the domain (the query did not admit it).
    fn absorb(&mut self, element: u32) {
        self.absorb_repeated(element, 1);
    }

    fn absorb_repeated(&mut self, element: u32, times: u64) {
        self.counts[element as usize] += times;
    }

    fn merge(&mut self, other: Self) {
        for (count, more) in self.counts.iter_mut().zip(other.counts) {
            *count += more;
        }
    }

    /// Every count plus an independent draw of the noise, in the order of the domain, from
    /// the aggregator's stream.
    fn release(mut self) -> NoisyCounts {
        NoisyCounts(add_noise(&self.counts, &self.noise, &mut self.rng))
    }
}

/// `counts[j] + X_j` for independent draws `X_j` of `noise`, in order: the central release
/// rule.
///
/// # Panics
///
/// If a count exceeds `i64::MAX`.
pub(crate) fn add_noise<D, R>(counts: &[u64], noise: &D, rng: &mut R) -> Vec<i64>
where
    D: Distribution<i64>,
    R: Rng + ?Sized,
{
    counts
        .iter()
        .map(|&count| {
            let count = i64::try_from(count).expect("a count fits in i64");
            count.saturating_add(noise.sample(rng))
        })
        .collect()
}

/// The noisy count of every domain element `0..B`, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoisyCounts(pub Vec<i64>);

impl NoisyCounts {
    /// The counts as estimates.
    pub fn estimates(&self) -> Vec<f64> {
        self.0.iter().map(|&count| count as f64).collect()
    }
}

impl WireRelease for NoisyCounts {
    /// One cell per element, in order: the element, its noisy count and the count as an
    /// estimate.
    fn into_cells(self) -> Vec<WireCell> {
        element_cells(self.0, |count| (count, count as f64))
    }

    /// Cells `0, 1, …` in order, each estimate its count.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        element_values(cells, |cell| {
            (cell.estimate.to_bits() == (cell.count as f64).to_bits()).then_some(cell.count)
        })
        .map(Self)
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    /// Noise that is always `+1`.
    #[derive(Clone)]
    struct PlusOne;

    impl Distribution<i64> for PlusOne {
        fn sample<R: Rng + ?Sized>(&self, _: &mut R) -> i64 {
            1
        }
    }

    fn round() -> CentralHistogramRound<PlusOne> {
        CentralHistogramRound::new(DomainMap::Integers(4), PlusOne)
    }

    #[test]
    fn counts_every_element_and_adds_noise() {
        let round = round();
        let rng = || ChaCha20Rng::seed_from_u64(0);
        let mut left = round.aggregator(rng());
        let mut right = round.aggregator(rng());
        for element in [0, 3, 3] {
            left.absorb(element);
        }
        right.absorb(3);
        left.merge(right);
        assert_eq!(left.release(), NoisyCounts(vec![2, 1, 1, 4]));
        // The counts given at once are the absorbed ones.
        let mut whole = round.aggregator(rng());
        let answered = round.aggregate_counts(&[1, 0, 0, 3], &mut rng());
        whole.merge(answered.expect("a central round counts its elements"));
        assert_eq!(whole.release(), NoisyCounts(vec![2, 1, 1, 4]));
    }

    #[test]
    fn devices_report_their_element_in_the_domain() {
        use crate::protocol::wire::DeviceResponder;

        let query = round().query;
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert_eq!(DeviceQuery::respond(&query, &3, &mut rng), Some(3));
        assert_eq!(DeviceQuery::respond(&query, &4, &mut rng), None);
        let responder: &dyn DeviceResponder = &query;
        assert_eq!(responder.respond(" 2", 8, &mut rng), Some("2".to_owned()));
        assert_eq!(responder.respond("4", 8, &mut rng), None);
        assert!(!responder.accepts("pear"));
        let hashed: &dyn DeviceResponder = &DomainElement {
            map: DomainMap::Buckets(1 << 10),
        };
        assert_eq!(hashed.respond("the", 8, &mut rng), Some("812".to_owned()));
        // Up to 4 digits: a device abstains whatever its own element when 4 bytes do not fit.
        assert_eq!(hashed.respond("the", 4, &mut rng), Some("812".to_owned()));
        assert_eq!(hashed.respond("the", 3, &mut rng), None);
    }

    #[test]
    fn a_release_reads_back_only_in_its_one_spelling() {
        let release = NoisyCounts(vec![-2, 0, 7]);
        let cells = release.clone().into_cells();
        assert_eq!(NoisyCounts::from_cells(cells.clone()), Ok(release));
        let mut shuffled = cells.clone();
        shuffled.swap(0, 1);
        assert_eq!(NoisyCounts::from_cells(shuffled), Err("1".to_owned()));
        let mut unequal = cells;
        unequal[2].estimate = 7.5;
        assert_eq!(NoisyCounts::from_cells(unequal), Err("2".to_owned()));
    }
}
