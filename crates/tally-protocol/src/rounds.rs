//! The registry of round kinds on the wire: how each kind of tally-core round is published as
//! an [`Ask`], and how a device rebuilds the round from the [`Ask`] it reads. The server and
//! the devices both go through here, so a round kind is registered once, in [`PublishedQuery`] (for a
//! sample-and-threshold round, its feature's [`WireQuery`]) and [`AskResponder::responder`].

use std::collections::HashSet;
use std::sync::Arc;

use tally_core::heavy_hitters::PrefixRound;
use tally_core::histogram::{DomainHistogram, SampleThresholdQuery};
use tally_core::protocol::DomainElement;
use tally_core::protocol::wire::{BoundedDomainQuery, DeviceResponder};
use tally_core::protocol::{
    BucketOfLevel, CoinHolder, ItemReport, LocalHistogramRound, LocalRandomizer, PrefixBallot,
    ReportFeature, SampleThresholdAsk, SideOfSplit, WholeItem, WireReport,
};
use tally_core::quantiles::{TreeShape, ValueRange};
use tally_core::shuffle::{
    BalcerCheuQuery, CountMinHashes, CountMinQuery, HadamardQuery, NumberTreeQuery, PairwiseHash,
    PrefixLevelQuery, RangeQuery, SetQuery, ShuffledGrrRound,
};

use tally_messages::{Ask, DomainHistogramMechanism, ErrorCode, PublicDomain, Sampling};

use crate::domain::{domain_map, local_responder, public_domain};

/// Who flips a sample-and-threshold round's Poisson coins, as the task's `sampling` says.
pub fn coin_holder(sampling: Sampling) -> CoinHolder {
    match sampling {
        Sampling::Aggregator => CoinHolder::Aggregator,
        Sampling::Device => CoinHolder::Device,
    }
}

/// A round's query as the protocol publishes it: its [`Ask`], and why a report it does not
/// admit is refused. Every kind of round the server opens implements it.
pub trait PublishedQuery {
    /// Why the server refuses a report this round does not admit.
    const REFUSAL: ErrorCode;

    /// The round's [`Ask`].
    fn ask(&self) -> Ask;
}

/// A kind of sample-and-threshold round the protocol carries.
pub trait WireQuery: ReportFeature {
    /// Why the server refuses a report of this kind that the round does not admit.
    const REFUSAL: ErrorCode;

    /// The round's [`Ask`] at sampling rate `sampling_rate`.
    fn ask(&self, sampling_rate: f64) -> Ask;
}

impl<F: WireQuery> PublishedQuery for SampleThresholdAsk<F> {
    const REFUSAL: ErrorCode = F::REFUSAL;

    fn ask(&self) -> Ask {
        self.feature.ask(self.coin.sampling_rate())
    }
}

impl WireQuery for WholeItem {
    /// Never used: every item is admitted.
    const REFUSAL: ErrorCode = ErrorCode::Malformed;

    fn ask(&self, sampling_rate: f64) -> Ask {
        Ask::Item { sampling_rate }
    }
}

impl PublishedQuery for ItemReport {
    /// Never used: every item is admitted.
    const REFUSAL: ErrorCode = ErrorCode::Malformed;

    fn ask(&self) -> Ask {
        Ask::ItemReport {}
    }
}

impl WireQuery for PrefixRound {
    const REFUSAL: ErrorCode = ErrorCode::BadPrefix;

    fn ask(&self, sampling_rate: f64) -> Ask {
        let live_parents = self.live_parents.as_ref().map(|live| {
            let mut live: Vec<String> = live.iter().cloned().collect();
            live.sort_unstable();
            live
        });
        Ask::Prefix {
            level: count(self.round),
            segment: count(self.segment),
            live_parents,
            sampling_rate,
        }
    }
}

impl WireQuery for BucketOfLevel {
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self, sampling_rate: f64) -> Ask {
        Ask::Bucket {
            level: self.level,
            levels: self.shape.levels(),
            branching: self.shape.branching(),
            range: self.range.map(|r| [r.min(), r.max()]),
            sampling_rate,
        }
    }
}

impl WireQuery for SideOfSplit {
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self, sampling_rate: f64) -> Ask {
        Ask::Split {
            threshold: self.threshold,
            range: self.range.map(|r| [r.min(), r.max()]),
            sampling_rate,
        }
    }
}

impl PublishedQuery for PrefixBallot {
    const REFUSAL: ErrorCode = ErrorCode::BadPrefix;

    fn ask(&self) -> Ask {
        let rounds = &self.0;
        let mut live_parents: Vec<String> = rounds
            .live_parents
            .as_ref()
            .map_or_else(Vec::new, |live| live.iter().cloned().collect());
        live_parents.sort_unstable();
        Ask::PrefixBallot {
            level: count(rounds.round),
            segment: count(rounds.segment),
            live_parents,
        }
    }
}

impl PublishedQuery for DomainElement {
    /// An upload that is not the decimal spelling of an element of the domain.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::DomainElement {
            domain: public_domain(self.map),
        }
    }
}

impl PublishedQuery for ShuffledGrrRound {
    /// An upload that is not the decimal spelling of an element of the domain.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::ShuffledGrr {
            domain: public_domain(self.map()),
            local_epsilon: self.local_epsilon(),
        }
    }
}

impl PublishedQuery for BalcerCheuQuery {
    /// An upload that is not a sorted list of a device's messages in the domain.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::BalcerCheu {
            domain: public_domain(self.map()),
            noise_probability: self.noise_probability(),
        }
    }
}

impl PublishedQuery for HadamardQuery {
    /// An upload that is not a sorted list of `1 + ρ` tuples of the round's shape.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::GhaziHadamard {
            domain: public_domain(self.map()),
            tau: self.tau(),
            rho: self.rho(),
        }
    }
}

impl PublishedQuery for CountMinQuery {
    /// An upload that is not a sorted list of a device's cells of the table.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        let rows = self.hashes().rows();
        Ask::GhaziCountMin {
            domain: public_domain(self.map()),
            hashes: rows
                .iter()
                .map(|h| {
                    let (a, b) = h.coefficients();
                    [a, b]
                })
                .collect(),
            width: rows[0].width(),
            gamma: self.gamma(),
            blanket_cap: self.blanket_cap(),
        }
    }
}

impl<Q: PublishedQuery> PublishedQuery for NumberTreeQuery<Q> {
    /// What the oracle refuses.
    const REFUSAL: ErrorCode = Q::REFUSAL;

    fn ask(&self) -> Ask {
        Ask::RangeTree {
            levels: self.tree().axis_levels(),
            range: self.range().map(|r| [r.min(), r.max()]),
            oracle: Box::new(self.tree().oracle().ask()),
        }
    }
}

impl<Q: PublishedQuery> PublishedQuery for PrefixLevelQuery<Q> {
    /// What the oracle refuses.
    const REFUSAL: ErrorCode = Q::REFUSAL;

    fn ask(&self) -> Ask {
        Ask::PrefixLevel {
            level: self.level(),
            domain_bits: self.domain_bits(),
            oracle: Box::new(self.oracle().ask()),
        }
    }
}

impl<M: LocalRandomizer + DomainHistogram> PublishedQuery for LocalHistogramRound<M> {
    /// An upload that is not the encoding of a report the randomizer could have sent.
    const REFUSAL: ErrorCode = ErrorCode::Malformed;

    /// # Panics
    ///
    /// If the randomizer's name is not a registered mechanism's (the server opens only
    /// registered mechanisms' rounds).
    fn ask(&self) -> Ask {
        let randomizer = self.randomizer();
        Ask::LocalReport {
            mechanism: DomainHistogramMechanism::named(randomizer.name())
                .expect("a registered mechanism"),
            epsilon: randomizer.guarantee().epsilon,
            domain: public_domain(self.map()),
        }
    }
}

/// Why a device cannot rebuild a round from its [`Ask`].
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// A parameter tally-core refuses (a sampling rate, a tree, a range).
    #[error(transparent)]
    Query(#[from] tally_core::Error),
    /// A prefix round's level or segment of 0.
    #[error("{0} = 0, expected at least 1")]
    Zero(&'static str),
    /// A bucket round's level outside its tree.
    #[error("level {level}, expected 1 to {levels}")]
    Level {
        /// The level asked.
        level: u32,
        /// The tree's levels.
        levels: u32,
    },
    /// A public domain of fewer than 2 elements.
    #[error("domain of {0} elements, expected at least 2")]
    Domain(u32),
}

/// How a device rebuilds a round from its [`Ask`].
pub trait AskResponder {
    /// The round as a device answers it, its coins flipped as `sampling` says.
    ///
    /// # Errors
    ///
    /// [`AskError`] if the sampling rate is not strictly between 0 and 1, a prefix round's
    /// level or segment is 0, or a bucket round's tree, level or range is invalid.
    fn responder(&self, sampling: Sampling) -> Result<Arc<dyn DeviceResponder>, AskError>;
}

impl AskResponder for Ask {
    fn responder(&self, sampling: Sampling) -> Result<Arc<dyn DeviceResponder>, AskError> {
        fn ask<F>(
            feature: F,
            rate: f64,
            sampling: Sampling,
        ) -> Result<Arc<dyn DeviceResponder>, AskError>
        where
            SampleThresholdAsk<F>: DeviceResponder + 'static,
        {
            Ok(Arc::new(SampleThresholdAsk {
                feature,
                coin: SampleThresholdQuery::new(rate)?,
                coins: coin_holder(sampling),
            }))
        }
        match self {
            Self::Item { sampling_rate } => ask(WholeItem, *sampling_rate, sampling),
            Self::ItemReport {} => Ok(Arc::new(ItemReport)),
            Self::Prefix {
                level,
                segment,
                live_parents,
                sampling_rate,
            } => {
                let feature = prefix_round(*level, *segment, live_parents.as_ref())?;
                ask(feature, *sampling_rate, sampling)
            }
            Self::Bucket {
                level,
                levels,
                branching,
                range,
                sampling_rate,
            } => {
                let shape = TreeShape::new(*branching, *levels)?;
                if !(1..=*levels).contains(level) {
                    return Err(AskError::Level {
                        level: *level,
                        levels: *levels,
                    });
                }
                let feature = BucketOfLevel {
                    shape,
                    level: *level,
                    range: value_range(*range)?,
                };
                ask(feature, *sampling_rate, sampling)
            }
            Self::Split {
                threshold,
                range,
                sampling_rate,
            } => {
                let feature = SideOfSplit {
                    threshold: *threshold,
                    range: value_range(*range)?,
                };
                ask(feature, *sampling_rate, sampling)
            }
            Self::PrefixBallot {
                level,
                segment,
                live_parents,
            } => Ok(Arc::new(PrefixBallot(prefix_round(
                *level,
                *segment,
                Some(live_parents),
            )?))),
            Self::DomainElement { domain } => domain_responder(*domain),
            Self::ShuffledGrr {
                domain,
                local_epsilon,
            } => Ok(Arc::new(ShuffledGrrRound::new(
                domain_map(*domain),
                *local_epsilon,
            )?)),
            Self::BalcerCheu {
                domain,
                noise_probability,
            } => Ok(Arc::new(BalcerCheuQuery::new(
                domain_map(*domain),
                *noise_probability,
            )?)),
            Self::GhaziHadamard { .. } | Self::GhaziCountMin { .. } => set_oracle(self, 1),
            Self::RangeTree {
                levels,
                range,
                oracle,
            } => range_tree(oracle, *levels, value_range(*range)?),
            Self::PrefixLevel {
                level,
                domain_bits,
                oracle,
            } => with_set_oracle(
                oracle,
                1,
                LevelResponder {
                    level: *level,
                    domain_bits: *domain_bits,
                },
            ),
            Self::OptPrefixTree {
                run,
                iteration,
                parent_length,
                segment,
                elements,
                excluded,
                selection,
                randomizer,
                local_epsilon,
                encoding,
            } => crate::opt_prefix_tree::responder(
                *run,
                *iteration,
                *parent_length,
                *segment,
                elements,
                excluded,
                *selection,
                *randomizer,
                *local_epsilon,
                encoding,
            ),
            Self::LocalReport {
                mechanism,
                epsilon,
                domain,
            } => local_responder(*mechanism, *epsilon, *domain),
        }
    }
}

/// The `k`-set frequency oracle `ask` publishes, for sets of `set_size` items, handed to
/// `visit`.
fn with_set_oracle<T>(
    ask: &Ask,
    set_size: u32,
    visit: impl SetOracleVisitor<Output = T>,
) -> Result<T, AskError> {
    match ask {
        Ask::GhaziHadamard { domain, tau, rho } => {
            let query = HadamardQuery::new(domain_map(*domain), *tau, *rho)?;
            visit.visit(query.with_set_size(set_size)?)
        }
        Ask::GhaziCountMin {
            domain,
            hashes,
            width,
            gamma,
            blanket_cap,
        } => {
            let rows = hashes
                .iter()
                .map(|&[a, b]| PairwiseHash::new(a, b, *width))
                .collect::<Result<Vec<_>, _>>()?;
            let query = CountMinQuery::new(
                domain_map(*domain),
                CountMinHashes::new(rows)?,
                *gamma,
                *blanket_cap,
            )?;
            visit.visit(query.with_set_size(set_size)?)
        }
        other => Err(AskError::Query(tally_core::Error::InvalidParameter {
            name: "frequency oracle",
            value: format!("{other:?}"),
            expected: "a ghazi-hadamard or ghazi-count-min ask",
        })),
    }
}

/// A device's answer to the oracle `ask` publishes, holding one item.
fn set_oracle(ask: &Ask, set_size: u32) -> Result<Arc<dyn DeviceResponder>, AskError> {
    with_set_oracle(ask, set_size, OracleResponder)
}

/// A device's answer to the one-dimensional range tree of `levels` on the oracle `ask`
/// publishes, holding a number of `range`.
fn range_tree(
    ask: &Ask,
    levels: u32,
    range: Option<ValueRange>,
) -> Result<Arc<dyn DeviceResponder>, AskError> {
    with_set_oracle(
        ask,
        levels.saturating_add(1),
        TreeResponder { levels, range },
    )
}

/// What is made of a `k`-set frequency oracle's query rebuilt from its ask.
trait SetOracleVisitor {
    /// What the visit makes.
    type Output;

    /// Makes it from `query`.
    fn visit<Q>(self, query: Q) -> Result<Self::Output, AskError>
    where
        Q: SetQuery<Report: WireReport> + BoundedDomainQuery + 'static;
}

/// A device holding one item answers the oracle itself.
struct OracleResponder;

impl SetOracleVisitor for OracleResponder {
    type Output = Arc<dyn DeviceResponder>;

    fn visit<Q>(self, query: Q) -> Result<Self::Output, AskError>
    where
        Q: SetQuery<Report: WireReport> + BoundedDomainQuery + 'static,
    {
        Ok(Arc::new(query))
    }
}

/// A device holding a number answers the range tree of `levels` over `range` on the oracle.
struct TreeResponder {
    levels: u32,
    range: Option<ValueRange>,
}

impl SetOracleVisitor for TreeResponder {
    type Output = Arc<dyn DeviceResponder>;

    fn visit<Q>(self, query: Q) -> Result<Self::Output, AskError>
    where
        Q: SetQuery<Report: WireReport> + BoundedDomainQuery + 'static,
    {
        let tree = RangeQuery::new(self.levels, 1, query)?;
        Ok(Arc::new(NumberTreeQuery::new(tree, self.range)?))
    }
}

/// A device holding an item of `0..2^domain_bits` answers level `level` of the prefix tree on
/// the oracle.
struct LevelResponder {
    level: u32,
    domain_bits: u32,
}

impl SetOracleVisitor for LevelResponder {
    type Output = Arc<dyn DeviceResponder>;

    fn visit<Q>(self, query: Q) -> Result<Self::Output, AskError>
    where
        Q: SetQuery<Report: WireReport> + BoundedDomainQuery + 'static,
    {
        Ok(Arc::new(PrefixLevelQuery::new(
            self.level,
            self.domain_bits,
            query,
        )?))
    }
}

/// The prefix-tree round at `level` of `segment` characters, below `live_parents` if given.
fn prefix_round(
    level: u32,
    segment: u32,
    live_parents: Option<&Vec<String>>,
) -> Result<PrefixRound, AskError> {
    if level == 0 {
        return Err(AskError::Zero("level"));
    }
    if segment == 0 {
        return Err(AskError::Zero("segment"));
    }
    Ok(PrefixRound {
        round: level as usize,
        segment: segment as usize,
        live_parents: live_parents
            .map(|parents| Arc::new(parents.iter().cloned().collect::<HashSet<_>>())),
    })
}

/// A device's answer to a round over the public `domain`.
fn domain_responder(domain: PublicDomain) -> Result<Arc<dyn DeviceResponder>, AskError> {
    let map = domain_map(domain);
    if map.size() < 2 {
        return Err(AskError::Domain(map.size()));
    }
    Ok(Arc::new(DomainElement { map }))
}

/// The range a round's numbers lie in, if it gives one.
fn value_range(range: Option<[f64; 2]>) -> Result<Option<ValueRange>, tally_core::Error> {
    range
        .map(|[min, max]| ValueRange::new(min, max))
        .transpose()
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use tally_messages::{PublicDomain, RangeTreeMechanism, TaskKind, TreeReading};

    use super::*;

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
        let text = serde_json::to_string(value).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, value, "{text}");
    }

    /// A range-tree task and its ask are spelled as documented; a device rebuilds the tree from
    /// the ask (its oracle's ask for sets of `1 + levels` items) and answers a number with a
    /// report of the oracle's shape, and refuses an ask whose oracle is not a set oracle.
    #[test]
    fn a_range_tree_is_spelled_and_answered_through_its_oracles_ask() {
        use rand_chacha::ChaCha20Rng;
        use rand_chacha::rand_core::SeedableRng;

        let kind: TaskKind = serde_json::from_str(
            r#"{"type": "range-tree", "mechanism": "ghazi-hadamard", "levels": 2,
                "range": [0, 100], "reading": {"range": {"lo": 0, "hi": 50}}}"#,
        )
        .unwrap();
        assert!(matches!(
            kind,
            TaskKind::RangeTree {
                mechanism: RangeTreeMechanism::GhaziHadamard,
                reading: TreeReading::Range { .. },
                public_coins: None,
                ..
            }
        ));
        round_trip(&kind);
        let oracle = Ask::GhaziHadamard {
            domain: PublicDomain::Integers(4),
            tau: 4,
            rho: 2,
        };
        let ask = Ask::RangeTree {
            levels: 2,
            range: Some([0.0, 100.0]),
            oracle: Box::new(oracle),
        };
        round_trip(&ask);
        let responder = ask.responder(Sampling::Aggregator).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let report = responder.respond("70", 1 << 12, &mut rng).unwrap();
        // k = 3 real tuples and ρ = 2 blanket ones.
        assert_eq!(report.split(',').count(), 5, "{report}");
        assert_eq!(responder.respond("seventy", 1 << 12, &mut rng), None);
        let not_an_oracle = Ask::RangeTree {
            levels: 2,
            range: None,
            oracle: Box::new(Ask::Item { sampling_rate: 0.5 }),
        };
        assert!(not_an_oracle.responder(Sampling::Aggregator).is_err());
    }

    /// A Count-Min prefix-tree task and its level's ask are spelled as documented; a device
    /// rebuilds the level from the ask (its oracle's ask for sets of one item) and answers its
    /// item's prefix with one cell per row of the sketch and its blanket, abstains for an item
    /// outside `0..2^L`, and refuses an ask whose oracle is not a set oracle or whose oracle's
    /// domain is not the level's.
    #[test]
    fn a_prefix_level_is_spelled_and_answered_through_its_oracles_ask() {
        use rand_chacha::ChaCha20Rng;
        use rand_chacha::rand_core::SeedableRng;

        let kind: TaskKind = serde_json::from_str(
            r#"{"type": "count-min-prefix-tree", "domain_bits": 3, "threshold": 100}"#,
        )
        .unwrap();
        assert_eq!(
            kind,
            TaskKind::CountMinPrefixTree {
                domain_bits: 3,
                threshold: 100,
                failure_probability: None,
                public_coins: None,
            }
        );
        round_trip(&kind);
        let oracle = |size| Ask::GhaziCountMin {
            domain: PublicDomain::Integers(size),
            hashes: vec![[1, 0], [3, 1]],
            width: 8,
            // A blanket this thin is empty at this seed.
            gamma: 1e-12,
            blanket_cap: 1,
        };
        let ask = |size| Ask::PrefixLevel {
            level: 2,
            domain_bits: 3,
            oracle: Box::new(oracle(size)),
        };
        round_trip(&ask(4));
        let responder = ask(4).responder(Sampling::Aggregator).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        // Item 7's prefix is 3: cell h_0(3) = 3 of row 0 and 8 + h_1(3) = 8 + 10 mod 8 of row 1.
        assert_eq!(
            responder.respond("7", 1 << 12, &mut rng).as_deref(),
            Some("3,10")
        );
        assert_eq!(responder.respond("8", 1 << 12, &mut rng), None);
        assert!(ask(8).responder(Sampling::Aggregator).is_err());
        let not_an_oracle = Ask::PrefixLevel {
            level: 1,
            domain_bits: 3,
            oracle: Box::new(Ask::Item { sampling_rate: 0.5 }),
        };
        assert!(not_an_oracle.responder(Sampling::Aggregator).is_err());
    }
}
