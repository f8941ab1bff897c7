//! The registry of the mechanisms over a public domain the federated runtime runs:
//! [`BuildDomainRound::build`], one arm per mechanism, which the server (to open its round),
//! the devices (to answer a local randomizer's round) and the command line's simulator all go
//! through.

use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
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

use tally_messages::{DomainHistogramMechanism, PrivacyTarget, PublicDomain};

use crate::rounds::{AskError, PublishedQuery};

/// The registry of the mechanisms over a public domain: how each is calibrated and which round
/// it runs.
pub trait BuildDomainRound {
    /// The mechanism calibrated for `map`'s domain at `privacy` (a shuffle mechanism for
    /// `shuffle`), with its round, handed to `visitor`.
    ///
    /// # Errors
    ///
    /// [`tally_core::Error`] if the mechanism cannot be calibrated as asked.
    fn build<V: DomainRoundVisitor>(
        self,
        map: DomainMap,
        privacy: &PrivacyTarget,
        shuffle: ShuffleCalibration,
        visitor: V,
    ) -> Result<V::Output, tally_core::Error>;
}

impl BuildDomainRound for DomainHistogramMechanism {
    /// The one place a mechanism is registered: one arm per mechanism.
    fn build<V: DomainRoundVisitor>(
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
            Report: WireReport + MultiMessage<Message: Send + 'static> + Clone + Send + 'static,
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
                Report: WireReport + MultiMessage<Message: Send + 'static> + Clone + Send + 'static,
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

/// A device's answer to [`tally_messages::Ask::LocalReport`]: `mechanism`'s randomizer at `epsilon`
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
    mechanism.build(domain_map(domain), &privacy, shuffle, LocalResponder)?
}

/// The domain map of a published public domain.
pub fn domain_map(domain: PublicDomain) -> DomainMap {
    match domain {
        PublicDomain::Integers(size) => DomainMap::Integers(size),
        PublicDomain::Buckets(size) => DomainMap::Buckets(size),
    }
}

/// A domain map as published.
pub fn public_domain(map: DomainMap) -> PublicDomain {
    match map {
        DomainMap::Integers(size) => PublicDomain::Integers(size),
        DomainMap::Buckets(size) => PublicDomain::Buckets(size),
    }
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::SeedableRng;

    use tally_messages::{Ask, Sampling};

    use super::*;
    use crate::rounds::AskResponder;

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
