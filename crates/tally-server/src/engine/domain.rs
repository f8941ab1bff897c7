//! Histograms over a public domain as one server task kind, parameterised by the mechanism:
//! each mechanism is a tally-core round registered once, in
//! [`DomainHistogramMechanism::build`], which [`build`] opens as a task.

use std::marker::PhantomData;
use std::sync::Arc;

use tally_accounting::Guarantee;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::protocol::SingleRound;
use tally_messages::{
    DomainBody, DomainElementBody, DomainHistogramMechanism, DomainHistogramRelease,
    DomainRoundVisitor, FederatedDomainRound, PrivacyTarget, PublicDomain, Sampling, TaskSpec,
};

use super::{Engine, Kind, driven, input_description};
use crate::ledger::LossRounds;

/// The largest public domain a task may ask for: its one round releases a cell per element.
pub(super) const MAX_DOMAIN: u32 = 1 << 24;

/// The task of `mechanism` over `domain` at `privacy`, calibrated, with its guarantee.
///
/// # Errors
///
/// A message saying why the task cannot run as asked.
pub(super) fn build(
    mechanism: DomainHistogramMechanism,
    domain: PublicDomain,
    privacy: &PrivacyTarget,
) -> Result<(Engine, Guarantee), String> {
    let map = DomainMap::from(domain);
    let size = map.size();
    if !(2..=MAX_DOMAIN).contains(&size) {
        return Err(format!(
            "domain of {size} elements: expected 2 to {MAX_DOMAIN}"
        ));
    }
    mechanism
        .build(map, privacy, Registered { map })
        .map_err(|e| e.to_string())
}

/// Makes the task of a registered mechanism's round over `map`.
struct Registered {
    map: DomainMap,
}

impl DomainRoundVisitor for Registered {
    type Output = (Engine, Guarantee);

    fn visit<M, R>(self, mechanism: M, round: R) -> (Engine, Guarantee)
    where
        M: DomainHistogram + 'static,
        R: FederatedDomainRound,
    {
        let task = SingleRound::new(round, mechanism.guarantee());
        let kind = Domain {
            map: self.map,
            mechanism: Arc::new(mechanism),
            round: PhantomData,
        };
        driven(kind, task, 1)
    }
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

impl<R: FederatedDomainRound> Kind for Domain<R> {
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
        let estimates = output.map(R::estimates).unwrap_or_default();
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
