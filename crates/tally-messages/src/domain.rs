//! The parameters of a histogram over a public domain, the mechanism and the domain, and the
//! registry of the mechanisms the federated runtime runs: [`DomainHistogramMechanism::build`],
//! one arm per mechanism, which the server (to open its round), the devices (to answer a
//! local randomizer's round) and the command line's simulator all go through.

use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use serde::de::IntoDeserializer;
use serde::{Deserialize, Serialize};
use tally_accounting::Neighbours;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::histogram::{DomainHistogram, DomainMap, GaussianHistogram, LaplaceHistogram};
use tally_core::ldp::{Grr, HadamardResponse, Olh, SubsetSelection, UnaryRandomizer};
use tally_core::protocol::wire::{BoundedDomainQuery, DeviceResponder, WireRelease};
use tally_core::protocol::{
    DeviceQuery, DomainRound, LocalHistogramRound, LocalRandomizer, MultiMessage, TrustModel,
    WireReport,
};
use tally_core::shuffle::{
    BalcerCheuHistogram, CountMinHashes, GhaziCountMin, GhaziHadamard, ShuffledGrr,
};

use crate::PrivacyTarget;
use crate::rounds::{AskError, PublishedQuery};

/// The mechanisms over a public domain, as the simulator, the federated runtime and the command
/// line know them (with the `clap` feature, each variant's first doc line is its help text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(any(test, feature = "clap"), derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum DomainHistogramMechanism {
    /// Generalized randomized response, k-RR (local, pure ε-LDP).
    Grr,
    /// Symmetric unary encoding, basic RAPPOR (local, pure ε-LDP).
    Sue,
    /// Optimized unary encoding (local, pure ε-LDP).
    Oue,
    /// Optimized local hashing (local, pure ε-LDP).
    Olh,
    /// Basic Hadamard response (local, pure ε-LDP).
    HadamardResponse,
    /// Subset selection, k ≈ B/(e^ε + 1) items per report (local, pure ε-LDP).
    SubsetSelection,
    /// Laplace noise on every count, exact discrete Laplace (central, pure ε).
    Laplace,
    /// Discrete Gaussian noise on every count (central, (ε, δ)).
    Gaussian,
    /// Balcer–Cheu Bernoulli-noise histogram, 1 + B·p messages per client (shuffle, (ε, δ)).
    BalcerCheu,
    /// k-RR reports amplified by shuffling, one message per client (shuffle, (ε, δ)).
    ShuffledGrr,
    /// Ghazi et al.'s private-coin multi-message Hadamard response (shuffle, (ε, δ); B a power
    /// of 2).
    GhaziHadamard,
    /// Ghazi et al.'s public-coin Count-Min sketch with binomial blanket noise (shuffle, (ε, δ)).
    GhaziCountMin,
}

impl DomainHistogramMechanism {
    /// Its name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Laplace => "laplace",
            Self::Gaussian => "gaussian",
            Self::BalcerCheu => "balcer-cheu",
            Self::ShuffledGrr => "shuffled-grr",
            Self::Grr => "grr",
            Self::Sue => "sue",
            Self::Olh => "olh",
            Self::HadamardResponse => "hadamard-response",
            Self::SubsetSelection => "subset-selection",
            Self::Oue => "oue",
            Self::GhaziHadamard => "ghazi-hadamard",
            Self::GhaziCountMin => "ghazi-count-min",
        }
    }

    /// The mechanism named `name` (its [`name`](Self::name)), if the runtime runs it.
    pub fn named(name: &str) -> Option<Self> {
        let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
            name.into_deserializer();
        Self::deserialize(name).ok()
    }

    /// The mechanism calibrated for `map`'s domain at `privacy` (a shuffle mechanism for
    /// `shuffle`), with its round, handed to `visitor`: the one place a mechanism is
    /// registered.
    ///
    /// # Errors
    ///
    /// [`tally_core::Error`] if the mechanism cannot be calibrated as asked.
    pub fn build<V: DomainRoundVisitor>(
        self,
        map: DomainMap,
        privacy: &PrivacyTarget,
        shuffle: ShuffleCalibration,
        visitor: V,
    ) -> Result<V::Output, tally_core::Error> {
        let size = map.size();
        let PrivacyTarget {
            epsilon,
            delta,
            neighbours,
            ..
        } = *privacy;
        match self {
            Self::Laplace => {
                let laplace = LaplaceHistogram::new(size, epsilon, neighbours)?;
                let round = laplace.round(map)?;
                Ok(visitor.visit(laplace, round))
            }
            Self::Gaussian => {
                let gaussian = GaussianHistogram::new(size, epsilon, delta, neighbours)?;
                let round = gaussian.round(map)?;
                Ok(visitor.visit(gaussian, round))
            }
            Self::Grr => local(Grr::new(size, epsilon)?, map, visitor),
            Self::Sue => local(UnaryRandomizer::sue(size, epsilon)?, map, visitor),
            Self::Olh => local(Olh::new(size, epsilon)?, map, visitor),
            Self::HadamardResponse => local(HadamardResponse::new(size, epsilon)?, map, visitor),
            Self::Oue => local(UnaryRandomizer::oue(size, epsilon)?, map, visitor),
            Self::SubsetSelection => local(SubsetSelection::new(size, epsilon)?, map, visitor),
            Self::BalcerCheu => {
                let balcer_cheu = BalcerCheuHistogram::new(size, epsilon, delta, shuffle.clients)?;
                let round = balcer_cheu.round(map)?;
                Ok(visitor.visit(balcer_cheu, round))
            }
            Self::ShuffledGrr => {
                let grr = ShuffledGrr::new(size, epsilon, delta, shuffle.clients, shuffle.bound)?;
                let round = grr.round(map)?;
                Ok(visitor.visit(grr, round))
            }
            Self::GhaziHadamard => {
                let hadamard = GhaziHadamard::new(shuffle.clients, size, 1, epsilon, delta)?;
                let round = hadamard.round(map)?;
                Ok(visitor.visit(hadamard, round))
            }
            Self::GhaziCountMin => {
                let count_min =
                    GhaziCountMin::new(shuffle.clients, size, 1, epsilon, delta, shuffle.beta)?;
                let mut coins = ChaCha20Rng::seed_from_u64(shuffle.public_coins);
                let hashes = CountMinHashes::draw(count_min.params(), &mut coins);
                let round = count_min.round(map, hashes)?;
                Ok(visitor.visit(count_min, round))
            }
        }
    }

    /// Whether the mechanism publishes public coins with its query, drawn from
    /// [`ShuffleCalibration::public_coins`] when it is built (Count-Min's hash functions).
    pub fn publishes_coins(self) -> bool {
        matches!(self, Self::GhaziCountMin)
    }

    /// Whether the mechanism's guarantee trusts a shuffler, and so holds only when at least
    /// the devices it was calibrated for report ([`ShuffleCalibration::clients`]).
    pub fn is_shuffled(self) -> bool {
        matches!(
            self,
            Self::BalcerCheu | Self::ShuffledGrr | Self::GhaziHadamard | Self::GhaziCountMin
        )
    }
}

/// What calibrates a shuffle mechanism besides the privacy target: its guarantee holds for
/// the reports of at least `clients` devices (their randomness is each other's blanket).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShuffleCalibration {
    /// The devices the mechanism is calibrated for.
    pub clients: u64,
    /// The amplification bound of shuffled GRR.
    pub bound: ShuffleBound,
    /// The accuracy failure probability `β` of Ghazi et al.'s Count-Min protocol (which sets
    /// its number of hash rows).
    pub beta: f64,
    /// The seed of the public coins a mechanism publishes with its query (Count-Min's hash
    /// functions, drawn from `ChaCha20Rng::seed_from_u64(public_coins)` when the mechanism is
    /// built). Public: the guarantee holds whatever they are; they must only be chosen
    /// independently of the devices' data.
    pub public_coins: u64,
}

/// The round of the local `randomizer` over `map`, handed to `visitor`.
fn local<M, V>(randomizer: M, map: DomainMap, visitor: V) -> Result<V::Output, tally_core::Error>
where
    M: LocalRandomizer<Report: Send + 'static, Aggregator: Send + 'static>
        + DomainHistogram
        + 'static,
    V: DomainRoundVisitor,
{
    let round = LocalHistogramRound::new(map, randomizer.clone())?;
    Ok(visitor.visit(randomizer, round))
}

/// A domain round as the runtime drives it: a published query that devices answer from text
/// and whose longest report is known before any coin is flipped, typed wire reports and a release read as every element's estimate, movable between
/// threads.
pub trait FederatedDomainRound:
    DomainRound<
        Query: PublishedQuery
                   + BoundedDomainQuery
                   + DeviceQuery<
            Report: WireReport + MultiMessage<Message: Send + 'static> + Send + 'static,
        > + Clone
                   + Send
                   + Sync
                   + 'static,
        Release: WireRelease + Clone + Send + Sync + 'static,
        Aggregator: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<R> FederatedDomainRound for R where
    R: DomainRound<
            Query: PublishedQuery
                       + BoundedDomainQuery
                       + DeviceQuery<
                Report: WireReport + MultiMessage<Message: Send + 'static> + Send + 'static,
            > + Clone
                       + Send
                       + Sync
                       + 'static,
            Release: WireRelease + Clone + Send + Sync + 'static,
            Aggregator: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// What is done with a registered mechanism and its round (open it on the server, answer it
/// on a device, simulate it).
pub trait DomainRoundVisitor {
    /// What the visit makes.
    type Output;

    /// Makes it from the calibrated `mechanism` and its `round`.
    fn visit<M, R>(self, mechanism: M, round: R) -> Self::Output
    where
        M: DomainHistogram + 'static,
        R: FederatedDomainRound;
}

/// A device's answer to a local randomizer's round: the round's query, refused unless the
/// round is local (a device sends nothing but a randomized report to such an ask).
struct LocalResponder;

impl DomainRoundVisitor for LocalResponder {
    type Output = Result<Arc<dyn DeviceResponder>, AskError>;

    fn visit<M, R>(self, mechanism: M, round: R) -> Self::Output
    where
        M: DomainHistogram,
        R: FederatedDomainRound,
    {
        let query = round.query();
        if DeviceQuery::trust(query) != TrustModel::Local {
            return Err(AskError::Query(tally_core::Error::InvalidParameter {
                name: "mechanism",
                value: mechanism.name().to_owned(),
                expected: "a local mechanism (its devices would send their items unrandomized)",
            }));
        }
        Ok(Arc::new(query.clone()))
    }
}

/// A device's answer to [`crate::Ask::LocalReport`]: `mechanism`'s randomizer at `epsilon`
/// over `domain`.
pub(crate) fn local_responder(
    mechanism: DomainHistogramMechanism,
    epsilon: f64,
    domain: PublicDomain,
) -> Result<Arc<dyn DeviceResponder>, AskError> {
    let privacy = PrivacyTarget {
        epsilon,
        delta: 0.0,
        neighbours: Neighbours::ReplaceOne,
        analysis: tally_accounting::sample_threshold::Analysis::Tight,
    };
    // A shuffle mechanism's round, calibrated for any number of devices, is refused by trust.
    let shuffle = ShuffleCalibration {
        clients: 1,
        bound: ShuffleBound::default(),
        beta: DEFAULT_COUNT_MIN_BETA,
        public_coins: 0,
    };
    mechanism.build(DomainMap::from(domain), &privacy, shuffle, LocalResponder)?
}

/// A public domain `0..B` and how a device places its item in it, fixed before any data are
/// seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum PublicDomain {
    /// Items are integers in `0..B`, written in decimal.
    Integers(u32),
    /// Any item goes to bucket `⌊xxh3_64(utf-8 bytes)·B/2^64⌋`.
    Buckets(u32),
}

impl From<PublicDomain> for DomainMap {
    fn from(domain: PublicDomain) -> Self {
        match domain {
            PublicDomain::Integers(size) => Self::Integers(size),
            PublicDomain::Buckets(size) => Self::Buckets(size),
        }
    }
}

impl From<DomainMap> for PublicDomain {
    fn from(map: DomainMap) -> Self {
        match map {
            DomainMap::Integers(size) => Self::Integers(size),
            DomainMap::Buckets(size) => Self::Buckets(size),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::SeedableRng;

    use super::*;
    use crate::{Ask, Sampling, TaskKind};

    #[test]
    fn a_domain_histogram_is_spelled_as_documented() {
        let kind: TaskKind = serde_json::from_str(
            r#"{"type": "domain-histogram", "mechanism": "gaussian", "domain": {"buckets": 64}}"#,
        )
        .unwrap();
        assert_eq!(
            kind,
            TaskKind::DomainHistogram {
                mechanism: DomainHistogramMechanism::Gaussian,
                domain: PublicDomain::Buckets(64),
                public_coins: None,
            }
        );
        let count_min: TaskKind = serde_json::from_str(
            r#"{"type": "domain-histogram", "mechanism": "ghazi-count-min",
                "domain": {"integers": 4}, "public_coins": 7}"#,
        )
        .unwrap();
        assert!(matches!(
            count_min,
            TaskKind::DomainHistogram {
                public_coins: Some(7),
                ..
            }
        ));
        let ask = Ask::DomainElement {
            domain: PublicDomain::Integers(16),
        };
        assert_eq!(
            serde_json::to_string(&ask).unwrap(),
            r#"{"type":"domain-element","domain":{"integers":16}}"#
        );
        assert!(serde_json::from_str::<PublicDomain>(r#"{"integers": 4, "buckets": 4}"#).is_err());
    }

    #[test]
    fn a_device_answers_with_its_element_and_refuses_a_domain_of_one() {
        let ask = Ask::DomainElement {
            domain: PublicDomain::Integers(16),
        };
        let responder = ask.responder(Sampling::Aggregator).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert_eq!(responder.respond("15", 8, &mut rng), Some("15".to_owned()));
        assert_eq!(responder.respond("16", 8, &mut rng), None);
        let tiny = Ask::DomainElement {
            domain: PublicDomain::Buckets(1),
        };
        assert!(tiny.responder(Sampling::Aggregator).is_err());
    }

    #[test]
    fn every_mechanism_is_named_as_on_the_command_line() {
        use clap::ValueEnum;
        for &mechanism in DomainHistogramMechanism::value_variants() {
            assert_eq!(
                DomainHistogramMechanism::named(mechanism.name()),
                Some(mechanism)
            );
            assert_eq!(
                serde_json::to_value(mechanism).unwrap(),
                mechanism.name(),
                "{mechanism:?}"
            );
            let option = mechanism.to_possible_value().unwrap();
            assert_eq!(option.get_name(), mechanism.name(), "{mechanism:?}");
        }
        assert_eq!(DomainHistogramMechanism::named("sample-threshold"), None);
    }

    #[test]
    fn a_device_randomizes_a_local_report_and_refuses_a_central_mechanism() {
        let ask: Ask = serde_json::from_str(
            r#"{"type": "local-report", "mechanism": "oue", "epsilon": 1.0,
                "domain": {"integers": 4}}"#,
        )
        .unwrap();
        let responder = ask.responder(Sampling::Aggregator).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let report = responder.respond("2", 8, &mut rng).unwrap();
        assert!(report.len() == 4 && report.bytes().all(|b| b == b'0' || b == b'1'));
        assert_eq!(responder.respond("4", 8, &mut rng), None);
        // Too long for the round: abstains.
        assert_eq!(responder.respond("2", 3, &mut rng), None);
        let central = Ask::LocalReport {
            mechanism: DomainHistogramMechanism::Laplace,
            epsilon: 1.0,
            domain: PublicDomain::Integers(4),
        };
        assert!(central.responder(Sampling::Aggregator).is_err());
    }
}
