//! Histograms over a public domain as one server task kind, parameterised by the mechanism:
//! each mechanism is a tally-core round registered by one line in [`build`].

use std::marker::PhantomData;
use std::sync::Arc;

use rand::distr::Distribution;
use tally_accounting::Guarantee;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::histogram::{DomainHistogram, DomainMap, GaussianHistogram, LaplaceHistogram};
use tally_core::protocol::Estimates;
use tally_core::protocol::wire::WireRelease;
use tally_core::protocol::{
    CentralHistogramRound, DeviceQuery, NoisyCounts, RoundProtocol, SingleRound,
};
use tally_core::shuffle::{BalcerCheuHistogram, BalcerCheuRound, ShuffledGrr, ShuffledGrrRound};
use tally_messages::rounds::PublishedQuery;
use tally_messages::{
    DomainBody, DomainElementBody, DomainHistogramMechanism, DomainHistogramRelease, PrivacyTarget,
    PublicDomain, Sampling, TaskSpec,
};

use super::{Engine, Kind, driven, input_description};
use crate::ledger::LossRounds;
use crate::shuffler::ShuffledReport;

/// The largest public domain a task may ask for: its one round releases a cell per element.
pub(super) const MAX_DOMAIN: u32 = 1 << 24;

/// The task of `mechanism` over `domain` at `privacy`, calibrated (a shuffle mechanism for
/// `clients` devices, the expected population), with its guarantee.
///
/// # Errors
///
/// A message saying why the task cannot run as asked.
pub(super) fn build(
    mechanism: DomainHistogramMechanism,
    domain: PublicDomain,
    privacy: &PrivacyTarget,
    clients: u64,
) -> Result<(Engine, Guarantee), String> {
    let map = DomainMap::from(domain);
    let size = map.size();
    if !(2..=MAX_DOMAIN).contains(&size) {
        return Err(format!(
            "domain of {size} elements: expected 2 to {MAX_DOMAIN}"
        ));
    }
    let PrivacyTarget {
        epsilon,
        delta,
        neighbours,
        ..
    } = *privacy;
    match mechanism {
        DomainHistogramMechanism::Laplace => registered(
            LaplaceHistogram::new(size, epsilon, neighbours),
            map,
            LaplaceHistogram::round,
        ),
        DomainHistogramMechanism::Gaussian => registered(
            GaussianHistogram::new(size, epsilon, delta, neighbours),
            map,
            GaussianHistogram::round,
        ),
        DomainHistogramMechanism::BalcerCheu => registered(
            BalcerCheuHistogram::new(size, epsilon, delta, clients),
            map,
            BalcerCheuHistogram::round,
        ),
        DomainHistogramMechanism::ShuffledGrr => registered(
            ShuffledGrr::new(size, epsilon, delta, clients, ShuffleBound::default()),
            map,
            ShuffledGrr::round,
        ),
    }
}

/// A domain mechanism's round as the server drives it: a published query, a release read
/// as every element's estimate, and what the generic driver needs to move it between threads.
trait DomainRound:
    RoundProtocol<
        Query: PublishedQuery + DeviceQuery<Report: ShuffledReport> + Clone + Send + 'static,
        Release: WireRelease + DomainEstimates + Clone + Send + Sync + 'static,
        Aggregator: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

/// Every central-noise round is one (a local mechanism's round is registered by one such line).
impl<D: Distribution<i64> + Clone + Send + Sync + 'static> DomainRound
    for CentralHistogramRound<D>
{
}

/// The shuffle rounds: the driver puts them behind the shuffler (their trust is
/// [`tally_core::protocol::TrustModel::Shuffle`]).
impl DomainRound for BalcerCheuRound {}
impl DomainRound for ShuffledGrrRound {}

/// A round's release as every domain element's estimate, in order.
trait DomainEstimates {
    fn estimates(&self) -> Vec<f64>;
}

impl DomainEstimates for NoisyCounts {
    fn estimates(&self) -> Vec<f64> {
        NoisyCounts::estimates(self)
    }
}

impl DomainEstimates for Estimates {
    fn estimates(&self) -> Vec<f64> {
        Estimates::estimates(self)
    }
}

/// The task of the calibrated `mechanism`, whose round over `map` `round` makes.
fn registered<M, R>(
    mechanism: Result<M, tally_core::Error>,
    map: DomainMap,
    round: fn(&M, DomainMap) -> Result<R, tally_core::Error>,
) -> Result<(Engine, Guarantee), String>
where
    M: DomainHistogram + 'static,
    R: DomainRound,
{
    let mechanism = mechanism.map_err(|e| e.to_string())?;
    let round = round(&mechanism, map).map_err(|e| e.to_string())?;
    let task = SingleRound::new(round, mechanism.guarantee());
    let kind = Domain {
        map,
        mechanism: Arc::new(mechanism),
        round: PhantomData,
    };
    Ok(driven(kind, task, 1))
}

/// One round over a public domain: every device's element, released by the mechanism's
/// release rule.
struct Domain<R> {
    map: DomainMap,
    mechanism: Arc<dyn DomainHistogram>,
    round: PhantomData<fn() -> R>,
}

impl<R> Clone for Domain<R> {
    fn clone(&self) -> Self {
        Self {
            map: self.map,
            mechanism: Arc::clone(&self.mechanism),
            round: PhantomData,
        }
    }
}

impl<R: DomainRound> Kind for Domain<R> {
    type Task = SingleRound<R, R::Release>;
    type Round = R;

    /// The round itself: its coins are the devices' own or the aggregator's, whatever the
    /// task's sampling.
    fn round(&self, round: &R, _: Sampling) -> R {
        round.clone()
    }

    /// No sample-and-threshold loss pair: the ledger composes its `(ε, δ)`.
    fn loss_rounds(_: &R, _: usize) -> Option<LossRounds> {
        None
    }

    fn release(_: &R, release: R::Release) -> R::Release {
        release
    }

    /// The document `tally histogram --mechanism M --json` prints for the same parameters
    /// (no truth, no seed, not clamped).
    fn document(
        &self,
        guarantee: &Guarantee,
        output: Option<R::Release>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let estimates = output
            .map(|release| release.estimates())
            .unwrap_or_default();
        let local = self.mechanism.local_guarantee();
        let cost = self.mechanism.message_cost();
        serde_json::to_string_pretty(&DomainHistogramRelease {
            mechanism: self.mechanism.name().to_owned(),
            model: guarantee.model.name().to_owned(),
            guarantee: guarantee.into(),
            local_guarantee: local.as_ref().map(Into::into),
            local_epsilon: local.as_ref().map(|g| g.epsilon),
            target_delta: spec.privacy.delta,
            domain: DomainBody {
                size: self.map.size(),
                mapping: self.map.to_string(),
            },
            messages_per_client: cost.map(|c| c.messages_per_client),
            bits_per_message: cost.map(|c| c.bits_per_message),
            clamped: false,
            input: input_description(spec),
            clients: spec.expected_population,
            items: estimates
                .into_iter()
                .zip(0_u32..)
                .map(|(estimate, item)| DomainElementBody {
                    item,
                    estimate,
                    true_count: None,
                })
                .collect(),
            seed: None,
            mean_absolute_error: None,
        })
    }
}

#[cfg(test)]
mod shuffle_tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_accounting::sample_threshold::Analysis;
    use tally_accounting::{Neighbours, TrustModel};
    use tally_core::protocol::wire::WireRelease;
    use tally_messages::Ask;

    use super::*;

    /// The shuffle mechanisms are published as their own asks, their devices' responders and
    /// the rounds the driver opens trust a shuffler, so `shuffler::aggregator` puts the
    /// analyzer behind `Shuffled` (whose input `shuffler.rs` tests); 3,000 devices' wire
    /// reports go through and every element is released, the common one standing out.
    #[test]
    fn shuffle_mechanisms_run_behind_the_shuffler() {
        let privacy = PrivacyTarget {
            epsilon: 2.0,
            delta: 1e-6,
            neighbours: Neighbours::ReplaceOne,
            analysis: Analysis::Tight,
        };
        for mechanism in [
            DomainHistogramMechanism::BalcerCheu,
            DomainHistogramMechanism::ShuffledGrr,
        ] {
            let (mut engine, guarantee) =
                build(mechanism, PublicDomain::Integers(16), &privacy, 3000).unwrap();
            assert_eq!(guarantee.model, TrustModel::Shuffle, "{mechanism:?}");
            assert!(engine.advance());
            let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::seed_from_u64(1));
            assert!(
                matches!(opened.ask, Ask::BalcerCheu { .. } | Ask::ShuffledGrr { .. }),
                "{:?}",
                opened.ask
            );
            let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
            assert_eq!(responder.trust(), TrustModel::Shuffle);
            let mut aggregator = opened.aggregator;
            let mut devices = ChaCha20Rng::seed_from_u64(2);
            for i in 0..3000_u32 {
                let element = if i % 2 == 0 { 0 } else { i % 16 };
                let report = responder
                    .respond(&element.to_string(), 256, &mut devices)
                    .unwrap();
                aggregator.absorb(report).unwrap();
            }
            assert!(aggregator.absorb("16".to_owned()).is_err());
            let estimates = Estimates::from_cells(aggregator.release()).unwrap().0;
            assert_eq!(estimates.len(), 16);
            assert!(estimates[0] > 1000.0, "{mechanism:?}: {estimates:?}");
        }
    }
}
