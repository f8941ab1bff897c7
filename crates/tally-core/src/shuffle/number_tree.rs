//! The range query tree ([`RangeRound`](super::RangeRound)) as a round whose devices hold
//! numbers: what a federated runtime opens for `tally range` and `tally quantiles` with Ghazi
//! et al.'s oracles (docs/algorithms.md §5.4 and §5.7).
//!
//! A device maps its number into `[0, 1]` through the task's public range (clamping it to the
//! range; `[0, 1]` itself without one), takes the leaf `min(⌊x·B⌋, B−1)` of the one-dimensional
//! tree, and answers the tree's `k`-set query with the leaf's chosen ancestors. The round's
//! release is the oracle's: every chosen node's estimate, read as the tree's counts by
//! [`RangeRound::read`](super::RangeRound::read).

use std::fmt;

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::range_tree::RangeQuery;
use super::set_oracle::{SetOracleRound, SetQuery};
use crate::Error;
use crate::protocol::wire::{BoundedDomainQuery, DeviceResponder, encode_messages_apart};
use crate::protocol::{
    DeviceInput, DeviceQuery, Estimates, MultiMessage, RoundProtocol, TrustModel, WireReport,
    to_unit,
};
use crate::quantiles::ValueRange;

/// The leaf `min(⌊x·B⌋, B−1)` of `x ∈ [0, 1]` among `domain` equal leaves.
pub(crate) fn unit_leaf(x: f64, domain: u32) -> u32 {
    ((x * f64::from(domain)).floor() as u64).min(u64::from(domain) - 1) as u32
}

/// The query of a [`NumberTreeRound`]: the tree's query and the range the devices' numbers
/// are mapped from.
#[derive(Clone, Debug, PartialEq)]
pub struct NumberTreeQuery<Q> {
    tree: RangeQuery<Q>,
    range: Option<ValueRange>,
}

impl<Q> NumberTreeQuery<Q> {
    /// The query of devices holding numbers of `range` (`[0, 1]` without one) on the tree's
    /// query `tree`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the tree has more than one dimension.
    pub fn new(tree: RangeQuery<Q>, range: Option<ValueRange>) -> Result<Self, Error> {
        if tree.dims() != 1 {
            return Err(Error::invalid(
                "range tree dimensions",
                tree.dims(),
                "a one-dimensional tree",
            ));
        }
        Ok(Self { tree, range })
    }

    /// The tree's query.
    pub fn tree(&self) -> &RangeQuery<Q> {
        &self.tree
    }

    /// The range the numbers are mapped from; `[0, 1]` when `None`.
    pub fn range(&self) -> Option<ValueRange> {
        self.range
    }

    /// The leaf of the number `x`, clamped to the range.
    pub fn leaf(&self, x: f64) -> u32 {
        unit_leaf(to_unit(self.range, x), self.tree.domain())
    }
}

impl<Q: SetQuery> DeviceQuery for NumberTreeQuery<Q> {
    type Input = f64;
    type Report = Q::Report;

    fn trust(&self) -> TrustModel {
        self.tree.trust()
    }

    /// The tree's report of the number's leaf.
    fn respond<R: Rng + ?Sized>(&self, x: &f64, rng: &mut R) -> Option<Q::Report> {
        self.tree.respond(&self.leaf(*x), rng)
    }

    /// What the oracle admits.
    fn admits(&self, report: &Q::Report) -> bool {
        self.tree.admits(report)
    }

    /// What the oracle admits of a message.
    fn admits_message(&self, message: &<Q::Report as MultiMessage>::Message) -> bool {
        self.tree.admits_message(message)
    }
}

impl<Q> NumberTreeQuery<Q>
where
    Q: SetQuery + BoundedDomainQuery,
{
    /// The length of the longest report a device could send, in bytes: the oracle's for its
    /// set size.
    pub fn longest_report(&self) -> u64 {
        self.tree.oracle().longest_report()
    }

    /// The report of a device holding `data`, or `None`: not a number, or the round's longest
    /// report would not fit `max_bytes` (decided before any coin is flipped).
    fn bounded_report(&self, data: &str, max_bytes: usize, rng: &mut dyn Rng) -> Option<Q::Report> {
        let x = f64::read(data, |x| *x)?;
        if self.longest_report() > max_bytes as u64 {
            return None;
        }
        DeviceQuery::respond(self, &x, rng)
    }
}

/// A device holding a number answers, abstaining when the round's longest report would not
/// fit `max_bytes`, before flipping a coin (as [`BoundedDomainQuery`]'s devices do).
impl<Q> DeviceResponder for NumberTreeQuery<Q>
where
    Q: SetQuery<Report: WireReport> + BoundedDomainQuery + Send + Sync + fmt::Debug,
{
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    fn accepts(&self, data: &str) -> bool {
        f64::read(data, |_| ()).is_some()
    }

    fn respond(&self, data: &str, max_bytes: usize, rng: &mut dyn Rng) -> Option<String> {
        self.bounded_report(data, max_bytes, rng)
            .map(WireReport::encode)
    }

    fn respond_messages(
        &self,
        data: &str,
        max_bytes: usize,
        rng: &mut dyn Rng,
    ) -> Option<Vec<String>> {
        self.bounded_report(data, max_bytes, rng)
            .map(encode_messages_apart)
    }
}

/// The one-dimensional range query tree on the `k`-set frequency oracle round `O` as a round
/// whose devices hold numbers ([`NumberTreeQuery`]); its aggregator is the oracle's, its
/// release every chosen node's estimate.
///
/// # Privacy
///
/// The tree's guarantee ([`RangeRound`](super::RangeRound)): each device sends one `k`-set
/// report of the oracle, whatever its number; where the number lies only chooses the set.
#[derive(Clone, Debug)]
pub struct NumberTreeRound<O: SetOracleRound> {
    oracle: O,
    query: NumberTreeQuery<O::Query>,
}

impl<O: SetOracleRound> NumberTreeRound<O> {
    /// The round of `tree`'s devices holding numbers of `range`, on `oracle`.
    pub(crate) fn new(
        oracle: O,
        tree: RangeQuery<O::Query>,
        range: Option<ValueRange>,
    ) -> Result<Self, Error> {
        Ok(Self {
            oracle,
            query: NumberTreeQuery::new(tree, range)?,
        })
    }
}

impl<O: SetOracleRound> NumberTreeRound<O> {
    /// The aggregator after every device answered, `counts[j]` of them holding a number of
    /// leaf `j` ([`NumberTreeQuery::leaf`]), drawn with the same law from these counts alone
    /// when the oracle can ([`SetOracleRound::aggregate_sets`]), as the tree over leaves draws
    /// its own ([`crate::protocol::CountedRound`]); its devices' coins from `rng`.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per leaf.
    pub fn aggregate_leaf_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<O::Aggregator> {
        let holders = self.query.tree().leaf_holders(counts);
        self.oracle.aggregate_sets(&holders, rng)
    }
}

impl<O: SetOracleRound> RoundProtocol for NumberTreeRound<O> {
    type Query = NumberTreeQuery<O::Query>;
    type Release = Estimates;
    type Aggregator = O::Aggregator;

    fn query(&self) -> &NumberTreeQuery<O::Query> {
        &self.query
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> O::Aggregator {
        self.oracle.aggregator(rng)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::protocol::RoundAggregator;
    use crate::shuffle::RangeRound;

    /// A device's number goes to its leaf, clamped to the range, and its report is the one
    /// the tree's query gives that leaf with the same coins.
    #[test]
    fn a_number_reports_its_leafs_ancestors() {
        let tree = RangeRound::hadamard(2, 1, 1.0, 1e-3, 3000).unwrap();
        let round = tree
            .over_numbers(Some(ValueRange::new(0.0, 100.0).unwrap()))
            .unwrap();
        let query = round.query();
        assert_eq!(query.leaf(-5.0), 0);
        assert_eq!(query.leaf(49.9), 1);
        assert_eq!(query.leaf(50.0), 2);
        assert_eq!(query.leaf(100.0), 3);
        assert_eq!(query.leaf(1e9), 3);
        let mut ours = ChaCha20Rng::seed_from_u64(1);
        let mut theirs = ChaCha20Rng::seed_from_u64(1);
        let report = DeviceQuery::respond(query, &60.0, &mut ours).unwrap();
        assert_eq!(
            Some(&report),
            DeviceQuery::respond(tree.query(), &2, &mut theirs).as_ref()
        );
        assert!(query.admits(&report));
        let responder: &dyn DeviceResponder = query;
        assert!(responder.accepts("60") && !responder.accepts("sixty"));
        let longest = usize::try_from(query.longest_report()).unwrap();
        assert!(responder.respond("60", longest, &mut ours).is_some());
        assert_eq!(responder.respond("60", longest - 1, &mut ours), None);
        let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(2));
        aggregator.absorb(report);
        assert_eq!(tree.read(aggregator.release()).nodes().len(), 4);
    }
}
