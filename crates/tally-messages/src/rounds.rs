//! The registry of round kinds on the wire: how each kind of tally-core round is published as
//! an [`Ask`], and how a device rebuilds the round from the [`Ask`] it reads. The server and
//! the devices both go through here, so a round kind is registered once, in [`PublishedQuery`] (for a
//! sample-and-threshold round, its feature's [`WireQuery`]) and [`Ask::responder`].

use std::collections::HashSet;
use std::sync::Arc;

use tally_core::heavy_hitters::PrefixRound;
use tally_core::histogram::{DomainHistogram, DomainMap, SampleThresholdQuery};
use tally_core::protocol::DomainElement;
use tally_core::protocol::wire::{BoundedDomainQuery, DeviceResponder};
use tally_core::protocol::{
    BucketOfLevel, CoinHolder, LocalHistogramRound, LocalRandomizer, PrefixBallot, ReportFeature,
    SampleThresholdAsk, SideOfSplit, WholeItem, WireReport,
};
use tally_core::quantiles::{TreeShape, ValueRange};
use tally_core::shuffle::{
    BalcerCheuQuery, CountMinHashes, CountMinQuery, HadamardQuery, NumberTreeQuery, PairwiseHash,
    PrefixLevelQuery, RangeQuery, SetQuery, ShuffledGrrRound,
};

use crate::domain::local_responder;
use crate::{Ask, DomainHistogramMechanism, ErrorCode, PublicDomain, Sampling};

impl From<Sampling> for CoinHolder {
    fn from(sampling: Sampling) -> Self {
        match sampling {
            Sampling::Aggregator => Self::Aggregator,
            Sampling::Device => Self::Device,
        }
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
            domain: self.map.into(),
        }
    }
}

impl PublishedQuery for ShuffledGrrRound {
    /// An upload that is not the decimal spelling of an element of the domain.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::ShuffledGrr {
            domain: self.map().into(),
            local_epsilon: self.local_epsilon(),
        }
    }
}

impl PublishedQuery for BalcerCheuQuery {
    /// An upload that is not a sorted list of a device's messages in the domain.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::BalcerCheu {
            domain: self.map().into(),
            noise_probability: self.noise_probability(),
        }
    }
}

impl PublishedQuery for HadamardQuery {
    /// An upload that is not a sorted list of `1 + ρ` tuples of the round's shape.
    const REFUSAL: ErrorCode = ErrorCode::BadBucket;

    fn ask(&self) -> Ask {
        Ask::GhaziHadamard {
            domain: self.map().into(),
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
            domain: self.map().into(),
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
            domain: self.map().into(),
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

impl Ask {
    /// The round as a device answers it, its coins flipped as `sampling` says.
    ///
    /// # Errors
    ///
    /// [`AskError`] if the sampling rate is not strictly between 0 and 1, a prefix round's
    /// level or segment is 0, or a bucket round's tree, level or range is invalid.
    pub fn responder(&self, sampling: Sampling) -> Result<Arc<dyn DeviceResponder>, AskError> {
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
                coins: sampling.into(),
            }))
        }
        match self {
            Self::Item { sampling_rate } => ask(WholeItem, *sampling_rate, sampling),
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
                DomainMap::from(*domain),
                *local_epsilon,
            )?)),
            Self::BalcerCheu {
                domain,
                noise_probability,
            } => Ok(Arc::new(BalcerCheuQuery::new(
                DomainMap::from(*domain),
                *noise_probability,
            )?)),
            Self::GhaziHadamard { .. } | Self::GhaziCountMin { .. } => self.set_oracle(1),
            Self::RangeTree {
                levels,
                range,
                oracle,
            } => oracle.range_tree(*levels, value_range(*range)?),
            Self::PrefixLevel {
                level,
                domain_bits,
                oracle,
            } => oracle.with_set_oracle(
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

impl Ask {
    /// The `k`-set frequency oracle this ask publishes, for sets of `set_size` items, handed
    /// to `visit`.
    fn with_set_oracle<T>(
        &self,
        set_size: u32,
        visit: impl SetOracleVisitor<Output = T>,
    ) -> Result<T, AskError> {
        match self {
            Self::GhaziHadamard { domain, tau, rho } => {
                let query = HadamardQuery::new(DomainMap::from(*domain), *tau, *rho)?;
                visit.visit(query.with_set_size(set_size)?)
            }
            Self::GhaziCountMin {
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
                    DomainMap::from(*domain),
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

    /// A device's answer to the oracle this ask publishes, holding one item.
    fn set_oracle(&self, set_size: u32) -> Result<Arc<dyn DeviceResponder>, AskError> {
        self.with_set_oracle(set_size, OracleResponder)
    }

    /// A device's answer to the one-dimensional range tree of `levels` on the oracle this
    /// ask publishes, holding a number of `range`.
    fn range_tree(
        &self,
        levels: u32,
        range: Option<ValueRange>,
    ) -> Result<Arc<dyn DeviceResponder>, AskError> {
        self.with_set_oracle(levels.saturating_add(1), TreeResponder { levels, range })
    }
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
    let map = DomainMap::from(domain);
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
