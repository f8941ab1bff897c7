//! One level of the prefix-tree heavy hitters ([`ShuffleHeavyHitters`](super::ShuffleHeavyHitters))
//! as a round whose devices hold an item of `0..2^L`: what both the simulator and a federated
//! runtime run for each level (docs/algorithms.md §5.6).
//!
//! At level `i` a device holding `x` answers the frequency oracle over `0..2^i` with its
//! length-`i` prefix `x >> (L − i)`; a device whose item lies outside `0..2^L` abstains. The
//! round's release is the oracle's: every prefix's estimate.

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::set_oracle::{SetHolders, SetOracleRound, SetQuery};
use crate::Error;
use crate::histogram::DomainMap;
use crate::protocol::wire::BoundedDomainQuery;
use crate::protocol::{
    CountedRound, DeviceQuery, Estimates, MultiMessage, RoundProtocol, TrustModel, WireReport,
};

/// The largest `L` of a prefix tree over `0..2^L`.
pub const MAX_DOMAIN_BITS: u32 = 31;

/// The query of a [`PrefixLevelRound`]: the level, the tree's depth and the oracle's query
/// over the level's prefixes.
#[derive(Clone, Debug, PartialEq)]
pub struct PrefixLevelQuery<Q> {
    level: u32,
    domain_bits: u32,
    oracle: Q,
}

impl<Q: SetQuery + BoundedDomainQuery> PrefixLevelQuery<Q> {
    /// The query of level `level` (`1…L`) of the tree over `0..2^domain_bits` on the oracle
    /// query `oracle`, as a device rebuilds it from what the server publishes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `1 ≤ level ≤ domain_bits ≤` [`MAX_DOMAIN_BITS`] and
    /// the oracle is over the integers `0..2^level`.
    pub fn new(level: u32, domain_bits: u32, oracle: Q) -> Result<Self, Error> {
        check_domain_bits(domain_bits)?;
        if !(1..=domain_bits).contains(&level) {
            return Err(Error::invalid(
                "prefix level",
                level,
                "an integer in [1, domain bits]",
            ));
        }
        if oracle.domain_map() != DomainMap::Integers(1 << level) {
            return Err(Error::invalid(
                "prefix level oracle",
                oracle.domain_map(),
                "integer items in [0, 2^level)",
            ));
        }
        Ok(Self {
            level,
            domain_bits,
            oracle,
        })
    }
}

/// Checks the depth `L` of a tree over `0..2^L`.
pub(crate) fn check_domain_bits(domain_bits: u32) -> Result<(), Error> {
    if !(1..=MAX_DOMAIN_BITS).contains(&domain_bits) {
        return Err(Error::invalid(
            "domain bits",
            domain_bits,
            "an integer in [1, 31]",
        ));
    }
    Ok(())
}

impl<Q> PrefixLevelQuery<Q> {
    /// The level `i`, from 1.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// The tree's depth `L`: items lie in `0..2^L`.
    pub fn domain_bits(&self) -> u32 {
        self.domain_bits
    }

    /// The oracle's query over `0..2^i`.
    pub fn oracle(&self) -> &Q {
        &self.oracle
    }

    /// The length-`i` prefix `item >> (L − i)` of an item of `0..2^L`.
    pub fn prefix(&self, item: u32) -> u32 {
        item >> (self.domain_bits - self.level)
    }
}

impl<Q: SetQuery> DeviceQuery for PrefixLevelQuery<Q> {
    type Input = u32;
    type Report = Q::Report;

    fn trust(&self) -> TrustModel {
        self.oracle.trust()
    }

    /// The oracle's report of the item's prefix; `None` for an item outside `0..2^L`, whose
    /// prefix (`2^i` or more) the oracle over `0..2^i` does not hold.
    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<Q::Report> {
        self.oracle.respond_set(&[self.prefix(*item)], rng)
    }

    /// What the oracle admits.
    fn admits(&self, report: &Q::Report) -> bool {
        self.oracle.admits(report)
    }

    /// What the oracle admits of a message.
    fn admits_message(&self, message: &<Q::Report as MultiMessage>::Message) -> bool {
        self.oracle.admits_message(message)
    }
}

/// Its devices hold an item of the public domain `0..2^L` (in decimal), so they answer
/// through [`BoundedDomainQuery`]'s responder, abstaining when the oracle's longest report
/// would not fit, before flipping a coin.
impl<Q> BoundedDomainQuery for PrefixLevelQuery<Q>
where
    Q: SetQuery<Report: WireReport> + BoundedDomainQuery,
{
    /// The integers `0..2^L`.
    fn domain_map(&self) -> DomainMap {
        DomainMap::Integers(1 << self.domain_bits)
    }

    /// The oracle's: the report is one of the oracle's.
    fn longest_report(&self) -> u64 {
        self.oracle.longest_report()
    }
}

/// Level `i` of the prefix tree on the frequency oracle round `O` over `0..2^i`, as a round
/// whose devices hold items of `0..2^L` ([`PrefixLevelQuery`]); its aggregator is the
/// oracle's, its release every prefix's estimate.
///
/// # Privacy
///
/// The oracle's guarantee: each device sends one report of the oracle, whatever its item;
/// the item only chooses which prefix it reports.
#[derive(Clone, Debug)]
pub struct PrefixLevelRound<O: SetOracleRound> {
    oracle: O,
    query: PrefixLevelQuery<O::Query>,
}

impl<O> PrefixLevelRound<O>
where
    O: SetOracleRound<Query: BoundedDomainQuery>,
{
    /// Level `level` of the tree over `0..2^domain_bits` on `oracle`.
    ///
    /// # Errors
    ///
    /// As [`PrefixLevelQuery::new`].
    pub fn new(level: u32, domain_bits: u32, oracle: O) -> Result<Self, Error> {
        let query = PrefixLevelQuery::new(level, domain_bits, oracle.query().clone())?;
        Ok(Self { oracle, query })
    }
}

impl<O: SetOracleRound> PrefixLevelRound<O> {
    /// The frequency oracle round over the level's prefixes.
    pub fn oracle(&self) -> &O {
        &self.oracle
    }
}

impl<O: SetOracleRound> RoundProtocol for PrefixLevelRound<O> {
    type Query = PrefixLevelQuery<O::Query>;
    type Release = Estimates;
    type Aggregator = O::Aggregator;

    fn query(&self) -> &PrefixLevelQuery<O::Query> {
        &self.query
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> O::Aggregator {
        self.oracle.aggregator(rng)
    }
}

/// Its devices hold an item of `0..2^L`.
impl<O: SetOracleRound> CountedRound for PrefixLevelRound<O> {
    /// The oracle's aggregate ([`SetOracleRound::aggregate_sets`]) from how many items lie
    /// below each prefix, when it can draw one.
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<O::Aggregator> {
        assert_eq!(
            counts.len(),
            1_usize << self.query.domain_bits,
            "one count per item"
        );
        let mut holders = vec![0_u64; 1 << self.query.level];
        for (item, &count) in (0..).zip(counts) {
            holders[self.query.prefix(item) as usize] += count;
        }
        self.oracle
            .aggregate_sets(&SetHolders::of_single_items(&holders), rng)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;

    use super::*;
    use crate::protocol::wire::DeviceResponder;
    use crate::shuffle::{CountMinHashes, GhaziCountMin};

    /// A device's item goes to its prefix, its report is the one the oracle gives that prefix
    /// with the same coins, and an item outside the tree abstains; a device abstains when the
    /// longest report does not fit, and the query refuses an oracle of another domain.
    #[test]
    fn an_item_reports_its_prefix() {
        let oracle = GhaziCountMin::new(350, 4, 1, 27.0, 1e-3, DEFAULT_COUNT_MIN_BETA).unwrap();
        let hashes = CountMinHashes::draw(oracle.params(), &mut ChaCha20Rng::seed_from_u64(1));
        let round = oracle.round(DomainMap::Integers(4), hashes).unwrap();
        let level = PrefixLevelRound::new(2, 5, round.clone()).unwrap();
        let query = level.query();
        assert_eq!(query.prefix(0b10111), 0b10);
        let mut ours = ChaCha20Rng::seed_from_u64(2);
        let mut theirs = ChaCha20Rng::seed_from_u64(2);
        let report = DeviceQuery::respond(query, &0b10111, &mut ours).unwrap();
        assert_eq!(
            Some(&report),
            DeviceQuery::respond(round.query(), &0b10, &mut theirs).as_ref()
        );
        assert!(query.admits(&report));
        assert_eq!(DeviceQuery::respond(query, &32, &mut ours), None);
        let responder: &dyn DeviceResponder = query;
        assert!(responder.accepts("31") && !responder.accepts("32"));
        let longest = usize::try_from(query.longest_report()).unwrap();
        assert!(responder.respond("23", longest, &mut ours).is_some());
        assert_eq!(responder.respond("23", longest - 1, &mut ours), None);
        assert!(PrefixLevelRound::new(3, 5, round.clone()).is_err());
        assert!(PrefixLevelRound::new(2, 1, round).is_err());
    }
}
