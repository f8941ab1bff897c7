//! Provisioned populations: an operator creates each one with its budget, the floor of its
//! tasks' minimum cohort, an optional cap on one task's `ε`, whether its tasks may sample on
//! the devices, the one neighbour relation its budget is kept under, an optional per-round
//! S&T pair with its share of the budget and the fraction of its devices that may collude with
//! the analyst; a task can only name a population that exists, so no spelling of a name gets a
//! budget of its own.

use tally_accounting::Neighbours;
use tally_messages::{
    Budget, CredentialSpec, PopulationInfo, PopulationSpec, Role, TaskBoundInfo, TrustModel,
};

use crate::ServerError;
use crate::auth::check_population_name;
use crate::ledger::TaskBound;
use crate::store::{Store, StoredPopulation};

/// What a population request must respect, or why it is refused; `Ok` holds its declared pair
/// with the rounds its share covers (computed here: it composes the pair up to that many times,
/// so call it off the async workers).
pub(crate) fn check_spec(spec: &PopulationSpec) -> Result<Option<TaskBound>, String> {
    check_population_name(&spec.name)?;
    let Budget { epsilon, delta } = spec.budget;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(format!("budget ε {epsilon}: expected a positive number"));
    }
    if !(0.0..1.0).contains(&delta) {
        return Err(format!("budget δ {delta}: expected a number in [0, 1)"));
    }
    if spec.min_cohort == 0 {
        return Err("min_cohort: at least 1 (no release from an empty cohort)".into());
    }
    if let Some(cap) = spec.max_task_epsilon
        && !(cap.is_finite() && cap > 0.0)
    {
        return Err(format!(
            "max_task_epsilon {cap}: expected a positive number"
        ));
    }
    if !(0.0..=1.0).contains(&spec.colluding_fraction) {
        return Err(format!(
            "colluding_fraction {}: expected a number in [0, 1] (0: the budget assumes honest \
             devices)",
            spec.colluding_fraction
        ));
    }
    if spec.task_bound.is_some() && spec.neighbours != Neighbours::AddRemove {
        return Err(format!(
            "a task bound is a sample-and-threshold loss pair under add/remove neighbours, and \
             the budget is under {} neighbours: drop the task bound, or keep the budget under \
             add-remove",
            spec.neighbours
        ));
    }
    spec.task_bound
        .map(|bound| {
            let share = bound.share.unwrap_or(spec.budget);
            if !(share.epsilon.is_finite() && share.epsilon > 0.0 && share.epsilon <= epsilon) {
                return Err(format!(
                    "task bound share ε {}: expected a positive number at most the budget's {epsilon}",
                    share.epsilon
                ));
            }
            if !(share.delta > 0.0 && share.delta <= delta) {
                return Err(format!(
                    "task bound share δ {:e}: expected a positive number at most the budget's {delta:e}",
                    share.delta
                ));
            }
            TaskBound::declare(
                bound.sampling_rate,
                bound.threshold,
                (share.epsilon, share.delta),
            )
        })
        .transpose()
}

/// Stores a checked population with the declared pair [`check_spec`] gave; `None` if one of
/// that name exists.
pub(crate) async fn provision(
    store: &Store,
    spec: &PopulationSpec,
    task_bound: Option<TaskBound>,
    created_at: i64,
) -> Result<Option<PopulationInfo>, ServerError> {
    let stored = StoredPopulation {
        name: spec.name.clone(),
        epsilon: spec.budget.epsilon,
        delta: spec.budget.delta,
        min_cohort: spec.min_cohort,
        max_task_epsilon: spec.max_task_epsilon,
        trust: spec.trust,
        allow_device_sampling: spec.allow_device_sampling,
        task_bound,
        colluding_fraction: spec.colluding_fraction,
        neighbours: spec.neighbours,
        created_at,
    };
    Ok(store
        .insert_population(&stored)
        .await?
        .then(|| info(&stored)))
}

/// A stored population as the API shows it.
pub(crate) fn info(stored: &StoredPopulation) -> PopulationInfo {
    PopulationInfo {
        name: stored.name.clone(),
        budget: Budget {
            epsilon: stored.epsilon,
            delta: stored.delta,
        },
        min_cohort: stored.min_cohort,
        max_task_epsilon: stored.max_task_epsilon,
        trust: stored.trust,
        allow_device_sampling: stored.allow_device_sampling,
        task_bound: stored.task_bound.as_ref().map(bound_info),
        colluding_fraction: stored.colluding_fraction,
        neighbours: stored.neighbours,
        created_at: stored.created_at,
    }
}

/// A declared pair as the API shows it.
pub(crate) fn bound_info(bound: &TaskBound) -> TaskBoundInfo {
    TaskBoundInfo {
        sampling_rate: bound.sampling_rate,
        threshold: bound.threshold,
        share: Budget {
            epsilon: bound.share.0,
            delta: bound.share.1,
        },
        rounds: bound.rounds,
    }
}

/// Whether the populations of a (checked) credential `spec` fit its role: a relay relays for
/// provisioned split-trust populations only, and no device credential is made for a
/// split-trust population (its devices are enrolled at its relay: the aggregator holds no
/// device identity of it). `Ok(Err(why))` refuses it.
pub(crate) async fn check_credential_populations(
    store: &Store,
    spec: &CredentialSpec,
) -> Result<Result<(), String>, ServerError> {
    for name in &spec.populations {
        let trust = store.population(name).await?.map(|p| p.trust);
        match (spec.role, trust) {
            (Role::Relay, None) => {
                return Ok(Err(format!(
                    "no population {name:?}: create it with trust split first"
                )));
            }
            (Role::Relay, Some(TrustModel::SingleParty)) => {
                return Ok(Err(format!(
                    "population {name:?} is single-party: its devices upload to the aggregator, \
                     and no relay relays for it"
                )));
            }
            (Role::Device, Some(TrustModel::Split)) => return Ok(Err(split_devices(name))),
            _ => {}
        }
    }
    Ok(Ok(()))
}

/// Why a split-trust population's devices are not enrolled at the aggregator.
pub(crate) fn split_devices(population: &str) -> String {
    format!(
        "population {population:?} is split: its devices are enrolled at its relay, and the \
         aggregator holds no device credential of it (enroll them with the relay's database)"
    )
}
