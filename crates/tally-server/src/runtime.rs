//! The coordinator: tasks, their rounds, the ledger, and recovery after a restart.
//!
//! Every change of a task (creation, a round opening or closing, a release, a cancellation)
//! happens under one lock and is committed to the store before anyone can see it. Uploads
//! touch only their round's own lock.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::Rng;
use rustc_hash::{FxHashMap, FxHashSet};
use tally_accounting::{Collusion, Guarantee};
use tally_messages::{
    Budget, CredentialInfo, CredentialSpec, DeviceEnrollment, EnrolledDevices, ErrorCode,
    GuaranteeBody, IssuedCredential, LedgerBalance, LedgerEntry, MAX_REPORT_BYTES,
    PROTOCOL_VERSION, PopulationInfo, PopulationSpec, RelayReceipt, RelayedBatch, Role, RoundQuery,
    Sampling, TaskBoundUse, TaskInfo, TaskSpec, TaskState, TrustModel,
};
use tally_protocol::shown::{Rounding, delta_number, number, privacy_number};
use tally_protocol::{Engine, definition, draw_public_coins};
use tokio::sync::Mutex;
use tracing::{error, info, warn};

use crate::ServerError;
use crate::aggregator::AggregatorCoins;
use crate::auth::{self, CredentialCache, Principal};
use crate::console::ConsoleSessions;
use crate::error::ApiError;
use crate::keys::{AggregatorKeys, LiveKeys};
use crate::ledger::{Charge, Ledger, LossRounds};
use crate::metrics::{Metrics, RoundOutcome};
use crate::population;
use crate::rate::RateLimit;
use crate::replica::{Replica, Replication};
use crate::round::{CheckInRefused, Cohort, Round};
use crate::store::{
    self, Fence, ReleaseCommit, RemoteRound, RoundState, RoundsSummary, Store, StoredDebit,
    StoredPopulation, StoredSession, StoredTask,
};
use crate::transport::Limits;

/// A task as the coordinator holds it.
struct LiveTask {
    id: String,
    /// The lease this replica drives it under.
    fence: Fence,
    spec: TaskSpec,
    guarantee: GuaranteeBody,
    state: TaskState,
    error: Option<String>,
    rounds_released: u32,
    /// Whether the ledger holds this task's debit.
    debited: bool,
    /// What the task costs its population: its guarantee under the population's neighbour
    /// relation ([`Guarantee::under`]), the amount reserved, then debited.
    charge: (f64, f64),
    /// `Some` while running.
    engine: Option<Engine>,
    /// The open round.
    round: Option<Arc<Round>>,
    /// Attempts at the current round so far.
    attempt: u32,
    /// Attempts at the current round that closed below the minimum cohort.
    short: u32,
}

/// The server's state.
pub(crate) struct Runtime {
    store: Store,
    /// The credentials, held in memory in step with the database.
    credentials: CredentialCache,
    pub(crate) metrics: Metrics,
    /// How long a request's body may take to arrive.
    pub(crate) body_timeout: Duration,
    /// The request-rate limit of each credential, if any.
    pub(crate) rate_limit: Option<RateLimit>,
    /// Where each round's aggregator gets its sampling coins.
    coins: AggregatorCoins,
    /// The HPKE keys that open a split-trust population's sealed reports.
    keys: AggregatorKeys,
    /// This replica among those sharing the database.
    replica: Replica,
    /// The running tasks this replica drives (it holds their leases).
    tasks: Mutex<BTreeMap<String, LiveTask>>,
    /// The open rounds of the tasks this replica drives.
    open: RwLock<FxHashMap<String, Arc<Round>>>,
    /// The rounds of the tasks this replica drives that closed.
    closed: RwLock<FxHashSet<String>>,
    /// The open rounds of the tasks other replicas drive, as read at the last lease tick.
    remote: RwLock<FxHashMap<String, Forward>>,
}

/// An open round another replica drives: its query, and where to forward its check-ins and
/// uploads.
#[derive(Clone, Debug)]
pub(crate) struct Forward {
    pub(crate) query: RoundQuery,
    pub(crate) address: String,
}

/// Where a round's check-ins and uploads go.
pub(crate) enum RoundRoute {
    /// This replica drives it.
    Here(Arc<Round>),
    /// Another replica does.
    There(Box<Forward>),
}

impl Runtime {
    /// Joins the replicas of the database: takes the running tasks no live lease covers (on
    /// SQLite, every one: its one writer knows that whoever held them is gone), aborting the
    /// rounds their last driver left open (nothing released, nothing debited) and running
    /// them again with a fresh cohort.
    pub(crate) async fn start(
        store: Store,
        limits: &Limits,
        coins: AggregatorCoins,
        replication: &Replication,
    ) -> Result<Arc<Self>, ServerError> {
        if !store.shared() {
            store.expire_leases().await?;
        }
        let credentials = CredentialCache::default();
        credentials.refresh(&store).await?;
        let keys = AggregatorKeys::load(&store, unix_now()).await?;
        let runtime = Arc::new(Self {
            store,
            credentials,
            keys,
            metrics: Metrics::new(),
            body_timeout: limits.body_timeout,
            rate_limit: limits.requests_per_second.map(RateLimit::new),
            coins,
            replica: Replica::new("replica", replication),
            tasks: Mutex::new(BTreeMap::new()),
            open: RwLock::default(),
            closed: RwLock::default(),
            remote: RwLock::default(),
        });
        runtime.share_work().await?;
        Ok(runtime)
    }

    /// How often this replica renews its leases, takes lapsed ones and reads the other
    /// replicas' open rounds.
    pub(crate) fn lease_tick(&self) -> Duration {
        self.replica.tick()
    }

    /// This replica among those sharing the database.
    pub(crate) fn replica(&self) -> &Replica {
        &self.replica
    }

    /// One lease tick, logging a failure (the next tick tries again; a lease not renewed in
    /// time lapses, and the fence keeps this replica from committing past it).
    pub(crate) async fn lease_tick_logged(&self) {
        if let Err(e) = self.share_work().await {
            warn!(error = %e, "could not renew or take task leases");
        }
    }

    /// Says this replica is alive, renews its leases and stops driving the tasks whose lease
    /// it lost, takes lapsed leases up to its share of the running tasks, and reads the open
    /// rounds the other replicas drive.
    async fn share_work(&self) -> Result<(), ServerError> {
        let (now, expires_at) = self.replica.lease_from_now();
        self.store
            .heartbeat(self.replica.id(), &self.replica.address(), now)
            .await?;
        let mut tasks = self.tasks.lock().await;
        let held: FxHashSet<(String, i64)> = self
            .store
            .renew_leases(self.replica.id(), expires_at)
            .await?
            .into_iter()
            .collect();
        let lost: Vec<String> = tasks
            .values()
            .filter(|t| !held.contains(&(t.id.clone(), t.fence.epoch)))
            .map(|t| t.id.clone())
            .collect();
        for id in lost {
            if let Some(mut task) = tasks.remove(&id) {
                warn!(task = %id, "lost the task's lease (taken over, or cancelled beside this replica): it stops driving it");
                self.forget_round(&mut task);
            }
        }
        let live = self
            .store
            .live_replicas(now.saturating_sub(self.replica.lease_millis()))
            .await?
            .max(1);
        let share = self.store.running_tasks().await?.div_ceil(live);
        let room = usize::try_from(share)
            .unwrap_or(usize::MAX)
            .saturating_sub(tasks.len());
        for id in self.store.unleased_tasks(now).await?.into_iter().take(room) {
            let Some((fence, aborted)) = self
                .store
                .take_lease(&id, self.replica.id(), now, expires_at)
                .await?
            else {
                continue;
            };
            if aborted > 0 {
                warn!(task = %id, rounds = aborted,
                      "aborted the rounds the task's last driver left open; they run again");
            }
            match self.take_over(fence).await {
                Ok(Some(task)) => {
                    info!(task = %id, epoch = task.fence.epoch, "took the task's lease");
                    tasks.insert(id, task);
                }
                Ok(None) => {}
                Err(ServerError::LeaseLost(_)) => {
                    warn!(task = %id, "lost the task's lease while taking it over");
                }
                Err(e) => return Err(e),
            }
        }
        drop(tasks);
        let remote = self
            .store
            .remote_rounds(self.replica.id(), now)
            .await?
            .into_iter()
            .map(|(id, round)| Ok((id, forward_of(round)?)))
            .collect::<Result<_, ServerError>>()?;
        *self.remote.write().expect("round index lock") = remote;
        Ok(())
    }

    /// The open round `id` another replica drives, read from the database (this replica's
    /// last read may be older than the round), or why round `id` takes no uploads.
    async fn elsewhere(&self, id: &str) -> Result<RoundRoute, ApiError> {
        if !self.closed.read().expect("round index lock").contains(id) {
            let remote = self
                .store
                .remote_rounds(self.replica.id(), unix_now_millis())
                .await?;
            if let Some((_, round)) = remote.into_iter().find(|(round_id, _)| round_id == id) {
                return Ok(RoundRoute::There(Box::new(forward_of(round)?)));
            }
        }
        Err(self.not_open(id).await)
    }

    /// Loads the running task `fence` leases and opens its current round; `None` if it no
    /// longer runs.
    async fn take_over(&self, fence: Fence) -> Result<Option<LiveTask>, ServerError> {
        let Some(stored) = self.store.task(&fence.task_id).await? else {
            return Ok(None);
        };
        let debited = self
            .store
            .debits()
            .await?
            .into_iter()
            .any(|d| d.task_id == stored.id);
        let mut task = self.restore(stored, fence, debited).await?;
        if task.state != TaskState::Running {
            return Ok(None);
        }
        // A running task stored before populations had a sampling policy may ask its devices to
        // sample themselves on a population that does not allow it: its remaining rounds sample
        // at the aggregator instead (the same distribution for honest devices, so its guarantee
        // stands, and colluding devices can no longer choose to be sampled).
        let device_sampling = self
            .store
            .population(&task.spec.population)
            .await?
            .is_some_and(|p| p.allow_device_sampling);
        if task.spec.sampling == Sampling::Device && !device_sampling {
            warn!(task = %task.id, population = ?task.spec.population,
                  "the population does not allow device-side sampling: the task's rounds \
                   sample at the aggregator");
            task.spec.sampling = Sampling::Aggregator;
        }
        self.open_round(&mut task).await?;
        Ok(Some(task))
    }

    /// Takes round `id` out of the open rounds into the closed ones, if it was open, and
    /// returns it.
    fn retire_round(&self, id: &str) -> Option<Arc<Round>> {
        let round = self.open.write().expect("round index lock").remove(id)?;
        self.closed
            .write()
            .expect("round index lock")
            .insert(id.to_owned());
        Some(round)
    }

    /// Drops the task's open round from memory, writing nothing: its lease is gone, and
    /// whoever took it over aborted the round in the database.
    fn forget_round(&self, task: &mut LiveTask) {
        if let Some(round) = task.round.take() {
            self.retire_round(&round.query.round_id);
            round.close();
            self.metrics.round_closed(RoundOutcome::Aborted);
        }
    }

    /// Rebuilds a task from storage. A running task is recalibrated from its spec and its
    /// released rounds are replayed into it, so that it asks exactly what it would have asked
    /// next; a task that ended is not recalibrated (its stored guarantee is all it needs), so
    /// a restart costs little whatever the number of finished tasks.
    async fn restore(
        &self,
        stored: StoredTask,
        fence: Fence,
        debited: bool,
    ) -> Result<LiveTask, ServerError> {
        let (spec, guarantee, state) = parsed(&stored)?;
        let rounds = self.store.rounds(&stored.id).await?;
        {
            let mut closed = self.closed.write().expect("round index lock");
            closed.extend(rounds.iter().map(|r| r.id.clone()));
        }
        let mut task = LiveTask {
            id: stored.id,
            fence,
            spec,
            guarantee,
            state,
            error: stored.error,
            rounds_released: 0,
            debited: false,
            charge: (stored.epsilon, stored.delta),
            engine: None,
            round: None,
            attempt: 0,
            short: 0,
        };
        task.debited = debited;
        let released = rounds.iter().filter(|r| r.state == RoundState::Released);
        if state != TaskState::Running {
            task.rounds_released = u32::try_from(released.count()).unwrap_or(u32::MAX);
            return Ok(task);
        }
        let (mut engine, _) = Engine::build(&task.spec)
            .map_err(|e| ServerError::Corrupt(format!("task {} no longer builds: {e}", task.id)))?;
        engine.advance();
        for round in released {
            let corrupt = |e: String| ServerError::Corrupt(format!("round {}: {e}", round.id));
            let cells = store::decode_release(round.release.as_deref().unwrap_or("[]"))
                .map_err(|e| corrupt(e.to_string()))?;
            engine.observe(cells).map_err(corrupt)?;
            task.rounds_released += 1;
            if !engine.advance() {
                return Err(ServerError::Corrupt(format!(
                    "task {} released its last round but is not finished",
                    task.id
                )));
            }
        }
        let current = engine.round();
        let this_round = rounds.iter().filter(|r| r.round == current);
        task.attempt = this_round.clone().map(|r| r.attempt).max().unwrap_or(0);
        task.short = u32::try_from(this_round.filter(|r| r.state == RoundState::Short).count())
            .unwrap_or(u32::MAX);
        task.engine = Some(engine);
        Ok(task)
    }

    /// Calibrates the task `spec` asks for `who` and computes its guarantee and what it
    /// charges its population, refusing it as task creation does (but for the budget, which only
    /// creation checks): what the console shows before the task is created, and the first step
    /// of creating it.
    ///
    /// The third part is, for a shuffle-model task, its guarantee against the population's
    /// colluding fraction ([`Engine::collusion`]); the fourth what the ledger charges: that
    /// guarantee (the task's own without collusion, [`GuaranteeBody::charged`]) under the
    /// population's neighbour relation ([`Guarantee::under`]).
    pub(crate) async fn plan_task(
        &self,
        spec: &TaskSpec,
        who: &Principal,
    ) -> Result<(Engine, Guarantee, Option<Collusion>, (f64, f64)), ApiError> {
        check_version(spec.version)?;
        check_spec(spec)?;
        if !who.covers(&spec.population) {
            return Err(forbidden(format!(
                "this credential does not act on population {:?}",
                spec.population
            )));
        }
        // Refused before calibrating, and again at creation under the same lock as the
        // insertion.
        check_running_tasks(self.store.running_tasks_of(&who.id).await?)?;
        // Calibration can take long: it runs off the async workers, which keep answering.
        let built = {
            let spec = spec.clone();
            tokio::task::spawn_blocking(move || Engine::build(&spec))
                .await
                .map_err(|e| ServerError::Corrupt(format!("calibrating a task failed: {e}")))?
        };
        let (engine, guarantee) = built.map_err(|m| ApiError::new(ErrorCode::InvalidTask, m))?;
        // After the kind's own checks, which say more where a cohort cap is part of its
        // guarantee (the shuffle protocols).
        check_cohort_target(spec)?;
        let population = self
            .store
            .population(&spec.population)
            .await?
            .ok_or_else(|| unknown_population(&spec.population))?;
        if spec.rounds.min_cohort < population.min_cohort {
            return Err(ApiError::new(
                ErrorCode::InvalidTask,
                format!(
                    "min_cohort {}: population {:?} requires at least {}",
                    spec.rounds.min_cohort, spec.population, population.min_cohort
                ),
            ));
        }
        if spec.sampling == Sampling::Device && !population.allow_device_sampling {
            return Err(ApiError::new(
                ErrorCode::InvalidTask,
                device_sampling_refused(&spec.population),
            ));
        }
        let collusion = {
            let engine = engine.clone();
            let fraction = population.colluding_fraction;
            tokio::task::spawn_blocking(move || engine.collusion(fraction))
                .await
                .map_err(|e| ServerError::Corrupt(format!("calibrating a task failed: {e}")))?
                .map_err(|m| ApiError::new(ErrorCode::InvalidTask, m))?
        };
        let (epsilon, delta) =
            GuaranteeBody::with_collusion(&guarantee, collusion.as_ref()).charged();
        // The charge keeps the guarantee's relation, so this refuses what the guarantee's own
        // relation cannot be converted from.
        let charge = Guarantee {
            epsilon,
            delta,
            ..guarantee.clone()
        }
        .under(population.neighbours)
        .map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidTask,
                neighbours_refused(&spec.population, &guarantee),
            )
        })?;
        if !charge.0.is_finite() {
            return Err(ApiError::new(
                ErrorCode::InvalidTask,
                format!(
                    "population {:?} tolerates a fraction {} of its devices colluding with the \
                     analyst, against which the task's shuffle-model guarantee has no finite ε \
                     at δ = {:e}: more ε or δ, more devices, or a central or local mechanism \
                     would fit",
                    spec.population, population.colluding_fraction, guarantee.delta
                ),
            ));
        }
        if let Some(cap) = population.max_task_epsilon
            && charge.0 > cap
        {
            return Err(ApiError::new(
                ErrorCode::InvalidTask,
                format!(
                    "the task's ε = {} (under {} neighbours){} exceeds population {:?}'s cap of \
                     {cap} per task",
                    privacy_number(charge.0),
                    population.neighbours,
                    colluding_note(collusion.as_ref()),
                    spec.population
                ),
            ));
        }
        Ok((engine, guarantee, collusion, charge))
    }

    /// Creates a task if the population's budget covers its guarantee, and opens its first
    /// round.
    pub(crate) async fn create_task(
        &self,
        mut spec: TaskSpec,
        who: &Principal,
    ) -> Result<TaskInfo, ApiError> {
        draw_public_coins(&mut spec.kind, || self.coins.round_rng().next_u64());
        let (mut engine, guarantee, collusion, charge) = self.plan_task(&spec, who).await?;
        let trust = self
            .store
            .population(&spec.population)
            .await?
            .ok_or_else(|| unknown_population(&spec.population))?
            .trust;
        let guarantee_body = GuaranteeBody {
            trust_model: trust,
            ..GuaranteeBody::with_collusion(&guarantee, collusion.as_ref())
        };
        // Its S&T rounds, which the population's declared pair may bound; `None` where they
        // have no loss pair (replace-one neighbours).
        let loss = engine
            .threshold_rounds()
            .and_then(|rounds| LossRounds::of(&rounds.per_round, rounds.rounds));
        check_running_tasks(self.store.running_tasks_of(&who.id).await?)?;
        let mut tasks = self.tasks.lock().await;
        let id = new_id("t");
        let created_at = unix_now();
        let stored = StoredTask {
            id: id.clone(),
            owner: who.id.clone(),
            population: spec.population.clone(),
            // Unwrap safety: the spec was just parsed from JSON.
            spec: serde_json::to_string(&spec).expect("specs serialize"),
            guarantee: serde_json::to_string(&guarantee_body).expect("guarantees serialize"),
            epsilon: charge.0,
            delta: charge.1,
            state: TaskState::Running.name().to_owned(),
            error: None,
            created_at,
            loss,
        };
        // The budget check and the reservation are one database transaction: what the
        // population's tasks charge is read from the database, not from this process's tasks.
        let admitted = Charge {
            epsilon: charge.0,
            delta: charge.1,
            rounds: loss,
        };
        let note = colluding_note(collusion.as_ref());
        let fence = Fence {
            task_id: id.clone(),
            holder: self.replica.id().to_owned(),
            epoch: 1,
        };
        let (_, expires_at) = self.replica.lease_from_now();
        self.store
            .insert_task_within_budget(&stored, (&fence, expires_at), |population, charges| {
                admit(population, &charges, &admitted, &note)
            })
            .await?;
        engine.advance();
        let mut task = LiveTask {
            id: id.clone(),
            fence,
            spec,
            guarantee: guarantee_body,
            state: TaskState::Running,
            error: None,
            rounds_released: 0,
            debited: false,
            charge,
            engine: Some(engine),
            round: None,
            attempt: 0,
            short: 0,
        };
        info!(task = %id, population = ?task.spec.population, epsilon = task.guarantee.epsilon,
              delta = task.guarantee.delta, trust_model = trust.name(), "task created");
        self.open_round(&mut task).await?;
        tasks.insert(id.clone(), task);
        drop(tasks);
        self.task(&id, who).await
    }

    /// Every task `who` may read, oldest first (as the database holds them: any replica
    /// answers for every task).
    pub(crate) async fn tasks(&self, who: &Principal) -> Result<Vec<TaskInfo>, ApiError> {
        let rounds = self.store.rounds_summary().await?;
        let mut infos = Vec::new();
        for stored in self.store.tasks().await? {
            if allows(&stored.owner, &stored.population, who, Access::Read) {
                let summary = rounds.get(&stored.id).cloned().unwrap_or_default();
                infos.push(info_of(stored, summary)?);
            }
        }
        Ok(infos)
    }

    /// One task.
    pub(crate) async fn task(&self, id: &str, who: &Principal) -> Result<TaskInfo, ApiError> {
        let stored = self.readable(id, who, Access::Read).await?;
        let mut summary = RoundsSummary::default();
        for round in self.store.rounds(id).await? {
            match round.state {
                RoundState::Released => summary.released += 1,
                RoundState::Open => summary.open = Some(round.id),
                RoundState::Short | RoundState::Aborted => {}
            }
        }
        Ok(info_of(stored, summary)?)
    }

    /// Task `id` as stored, if `who` may do `access` to it.
    async fn readable(
        &self,
        id: &str,
        who: &Principal,
        access: Access,
    ) -> Result<StoredTask, ApiError> {
        let stored = self.store.task(id).await?.ok_or_else(|| unknown_task(id))?;
        check_access(&stored, who, access)?;
        Ok(stored)
    }

    /// Cancels a running task: its open round is dropped unreleased, and the budget it held
    /// back (if it released nothing yet) is freed. Any replica cancels any task: the one
    /// driving it commits nothing for it afterwards, and stops driving it at its next lease
    /// tick.
    pub(crate) async fn cancel(&self, id: &str, who: &Principal) -> Result<TaskInfo, ApiError> {
        self.readable(id, who, Access::Cancel).await?;
        let mut tasks = self.tasks.lock().await;
        if let Some(mut task) = tasks.remove(id) {
            match self.drop_round(&mut task).await {
                Ok(()) | Err(ServerError::LeaseLost(_)) => {}
                Err(e) => {
                    tasks.insert(id.to_owned(), task);
                    return Err(e.into());
                }
            }
        }
        drop(tasks);
        if self.store.cancel_task(id).await? {
            info!(task = %id, "task cancelled");
        }
        self.task(id, who).await
    }

    /// A finished task's document, as stored.
    pub(crate) async fn result(&self, id: &str, who: &Principal) -> Result<String, ApiError> {
        let stored = self.readable(id, who, Access::Result).await?;
        if let Some(body) = self.store.result(id).await? {
            return Ok(body);
        }
        let running = stored.state == TaskState::Running.name();
        Err(ApiError::new(
            ErrorCode::NoResult,
            format!("task {id} is {} and has no result", stored.state),
        )
        .with_conflict(running))
    }

    /// The budget, spending and what is left of every population `who` may read (all for an
    /// operator, its own for an analyst).
    pub(crate) async fn ledger(&self, who: &Principal) -> Result<Vec<LedgerBalance>, ApiError> {
        // The tasks first: a release committing between the two reads is then seen as a
        // debit (spent), never as neither spent nor reserved.
        let tasks = self.store.tasks().await?;
        let debits = self.store.debits().await?;
        let mut balances = Vec::new();
        for stored in self.store.populations().await? {
            let (population, epsilon, delta) = (stored.name.clone(), stored.epsilon, stored.delta);
            if who.role != Role::Operator && !who.covers(&population) {
                continue;
            }
            let entries: Vec<LedgerEntry> = debits
                .iter()
                .filter(|d| d.population == population)
                .map(|d| LedgerEntry {
                    task_id: d.task_id.clone(),
                    amount: Budget {
                        epsilon: d.epsilon,
                        delta: d.delta,
                    },
                    at: d.at,
                })
                .collect();
            let spent = entries.iter().fold((0.0, 0.0), |(e, d), entry| {
                (e + entry.amount.epsilon, d + entry.amount.delta)
            });
            let reserved = reserved(&tasks, &debits, &population);
            let ledger = ledger_of(&stored);
            let spending = ledger.spending(&charges(&tasks, &debits, &population));
            let remaining = ledger.remaining(&spending);
            balances.push(LedgerBalance {
                population,
                budget: Budget { epsilon, delta },
                allow_device_sampling: stored.allow_device_sampling,
                neighbours: stored.neighbours,
                spent: Budget {
                    epsilon: spent.0,
                    delta: spent.1,
                },
                reserved: Budget {
                    epsilon: reserved.0,
                    delta: reserved.1,
                },
                remaining: Budget {
                    epsilon: remaining.0,
                    delta: remaining.1,
                },
                task_bound: stored.task_bound.as_ref().map(|bound| TaskBoundUse {
                    bound: population::bound_info(bound),
                    rounds_used: spending.bounded_rounds,
                }),
                colluding_fraction: stored.colluding_fraction,
                entries,
            });
        }
        Ok(balances)
    }

    /// The queries of the open rounds of `who`'s population (every round for an operator,
    /// which may relay for devices).
    pub(crate) fn open_rounds(&self, who: &Principal) -> Vec<RoundQuery> {
        let open = self.open.read().expect("round index lock");
        let remote = self.remote.read().expect("round index lock");
        let mut queries: Vec<RoundQuery> = open
            .values()
            .map(|r| &r.query)
            .chain(remote.values().map(|f| &f.query))
            .filter(|q| who.role == Role::Operator || who.covers(&q.population))
            .cloned()
            .collect();
        queries.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        queries
    }

    /// Every open round this replica drives, with the uploads it accepted so far and the
    /// cohort that closes it, ordered by task: what an operator, which may relay for any
    /// round, watches.
    pub(crate) fn open_round_progress(&self) -> Vec<(RoundQuery, (u64, u64))> {
        let open = self.open.read().expect("round index lock");
        let mut rounds: Vec<(RoundQuery, (u64, u64))> = open
            .values()
            .map(|r| (r.query.clone(), r.cohort()))
            .collect();
        rounds.sort_by(|a, b| a.0.task_id.cmp(&b.0.task_id));
        rounds
    }

    /// The open round `id`, to check in and upload to: if it asks `who`'s population (or
    /// `who` is an operator) and its population is single-party (a split-trust population's
    /// reports come only through its relay).
    pub(crate) async fn round(&self, id: &str, who: &Principal) -> Result<RoundRoute, ApiError> {
        if let Some(forward) = self.remote.read().expect("round index lock").get(id) {
            return Ok(RoundRoute::There(Box::new(forward.clone())));
        }
        if let Some(round) = self.open.read().expect("round index lock").get(id) {
            if who.role != Role::Operator && !who.covers(&round.query.population) {
                return Err(forbidden(format!(
                    "round {id} asks another population than this device's"
                )));
            }
            if round.trust == TrustModel::Split {
                return Err(forbidden(format!(
                    "round {id} asks population {:?}, whose trust model is split: its devices \
                     upload sealed reports to its relay, which sends them to the aggregator \
                     in one batch (POST /v1/rounds/{id}/relayed); the aggregator takes no \
                     check-in or upload for it",
                    round.query.population
                )));
            }
            return Ok(RoundRoute::Here(Arc::clone(round)));
        }
        self.elsewhere(id).await
    }

    /// The open round `id`, for the relayed batch of the relay credential `who`: a round of
    /// a split-trust population `who` relays for.
    pub(crate) async fn relayed_round(
        &self,
        id: &str,
        who: &Principal,
    ) -> Result<RoundRoute, ApiError> {
        if let Some(forward) = self.remote.read().expect("round index lock").get(id) {
            return Ok(RoundRoute::There(Box::new(forward.clone())));
        }
        let Some(round) = self.open.read().expect("round index lock").get(id).cloned() else {
            return self.elsewhere(id).await;
        };
        if !who.covers(&round.query.population) {
            return Err(forbidden(format!(
                "round {id} asks population {:?}, which this relay credential does not relay for",
                round.query.population
            )));
        }
        if round.trust != TrustModel::Split {
            return Err(forbidden(format!(
                "round {id} asks population {:?}, whose trust model is single-party: its \
                 devices upload to the aggregator, not through a relay",
                round.query.population
            )));
        }
        Ok(RoundRoute::Here(round))
    }

    /// The live HPKE keys: the public configurations served at `GET /v1/hpke-keys`, and the
    /// key pairs that open sealed reports.
    pub(crate) fn keys(&self) -> Arc<LiveKeys> {
        self.keys.live()
    }

    /// Reads the HPKE keys again (a rotation made beside the server, a key past its grace
    /// period); a failure is logged, and the keys read last stay in use.
    pub(crate) async fn refresh_keys(&self) {
        if let Err(e) = self.keys.refresh(&self.store, unix_now()).await {
            warn!(error = %e, "could not read the HPKE keys");
        }
    }

    /// Opens, checks and counts the relayed batch of `round`, then closes and releases the
    /// round (it takes one batch). The sealed messages are opened on a blocking thread.
    pub(crate) async fn relay(
        &self,
        round: Arc<Round>,
        batch: RelayedBatch,
    ) -> Result<RelayReceipt, ApiError> {
        let id = round.query.round_id.clone();
        if batch.attempt != round.query.attempt {
            return Err(ApiError::new(
                ErrorCode::ClosedRound,
                format!(
                    "the batch answers attempt {} of round {id}, which is attempt {}",
                    batch.attempt, round.query.attempt
                ),
            ));
        }
        let keys = self.keys();
        let cohort = batch.cohort;
        let opening = Arc::clone(&round);
        let receipt = tokio::task::spawn_blocking(move || {
            let claim = opening.claim_relay(cohort, batch.messages.len())?;
            let opened = opening.open_batch(&keys.keyring, batch.messages);
            opening
                .absorb_relayed(claim, cohort, opened)
                .map_err(|code| (code, format!("round {} is closed", opening.query.round_id)))
        })
        .await
        .map_err(|e| ServerError::Corrupt(format!("opening a relayed batch failed: {e}")))?
        .map_err(|(code, message)| ApiError::new(code, message))?;
        self.metrics.accepted(cohort);
        for refused in &receipt.refused {
            self.metrics.reject_many(refused.code, refused.count);
        }
        info!(round = %id, cohort, "relayed batch received");
        // The round takes one batch: it closes (and releases) before the relay is answered,
        // so that any later batch finds it closed.
        self.close_round(&id).await;
        Ok(receipt)
    }

    /// The refusal of a request to round `id`, which this replica drove and closed.
    pub(crate) fn closed(&self, id: &str) -> ApiError {
        ApiError::new(ErrorCode::ClosedRound, format!("round {id} is closed"))
    }

    /// Sends a request to a round another replica drives (`path`, with the caller's
    /// credential and `body`, as it came) to that replica, and returns its answer as it came
    /// ([`Replica::forward`]).
    pub(crate) async fn forward(
        &self,
        there: &Forward,
        path: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response, ApiError> {
        self.replica
            .forward(&there.address, path, headers, body)
            .await
    }

    /// Why round `id` takes no uploads here: closed, or never opened.
    pub(crate) async fn not_open(&self, id: &str) -> ApiError {
        let closed = self.closed.read().expect("round index lock").contains(id);
        match closed || self.store.round_exists(id).await.unwrap_or(false) {
            true => ApiError::new(ErrorCode::ClosedRound, format!("round {id} is closed")),
            false => ApiError::new(ErrorCode::UnknownRound, format!("no round {id}")),
        }
    }

    /// Closes every round whose deadline passed.
    pub(crate) async fn close_due(&self) {
        let now = Instant::now();
        let due: Vec<String> = {
            let open = self.open.read().expect("round index lock");
            // A round whose relayed batch is being opened closes when it is counted.
            open.values()
                .filter(|r| r.deadline <= now && !r.relaying())
                .map(|r| r.query.round_id.clone())
                .collect()
        };
        for id in due {
            self.close_round(&id).await;
        }
    }

    /// Closes round `id` (its cohort target reached or its deadline passed) and releases it,
    /// or, below the minimum cohort, runs it again. Failures are logged: the round stays
    /// unreleased and nothing is debited.
    pub(crate) async fn close_round(&self, id: &str) {
        let mut tasks = self.tasks.lock().await;
        let Some(round) = self.retire_round(id) else {
            return;
        };
        let task_id = round.query.task_id.clone();
        let Some(task) = tasks.get_mut(&task_id) else {
            return;
        };
        match self.finish_round(task, &round).await {
            Ok(()) => {}
            Err(ServerError::LeaseLost(_)) => {
                // Another replica took the task over (or it was cancelled beside this one):
                // this one committed nothing and stops driving it.
                warn!(task = %task.id, round = %id,
                      "the task's lease was lost: the round committed nothing here");
                self.forget_round(task);
                tasks.remove(&task_id);
                return;
            }
            Err(e) => {
                error!(task = %task.id, round = %id, error = %e, "closing a round failed; the task fails");
                task.round = None;
                task.engine = None;
                task.state = TaskState::Failed;
                let message = format!("closing round {id} failed: {e}");
                if let Err(e) = self.store.fail_task(&task.fence, &message).await {
                    error!(task = %task.id, error = %e, "could not record the failure");
                }
                task.error = Some(message);
            }
        }
        // A task that ended leaves this replica's memory: the database holds all of it.
        if task.state != TaskState::Running {
            tasks.remove(&task_id);
        }
    }

    async fn finish_round(&self, task: &mut LiveTask, round: &Round) -> Result<(), ServerError> {
        let Some(closed) = round.close() else {
            return Ok(());
        };
        task.round = None;
        let round_id = &round.query.round_id;
        let policy = &task.spec.rounds;
        if closed.uploads < policy.min_cohort {
            self.store
                .close_round(&task.fence, round_id, RoundState::Short, closed.uploads)
                .await?;
            self.metrics.round_closed(RoundOutcome::Short);
            task.short += 1;
            warn!(task = %task.id, round = %round_id, uploads = closed.uploads,
                  min_cohort = policy.min_cohort, "round closed below the minimum cohort; nothing released");
            if task.short >= policy.max_attempts {
                let message = format!(
                    "round {} closed below the minimum cohort of {} in {} attempts",
                    round.query.round, policy.min_cohort, task.short
                );
                self.store.fail_task(&task.fence, &message).await?;
                task.state = TaskState::Failed;
                task.error = Some(message);
                task.engine = None;
                return Ok(());
            }
            return self.open_round(task).await;
        }
        // The release rule is the only way the counts leave the aggregator.
        let cells = closed.aggregator.release();
        let release = store::encode_release(&cells);
        let mut engine = task.engine.clone().ok_or_else(|| {
            ServerError::Corrupt(format!("task {} has an open round but no engine", task.id))
        })?;
        engine
            .observe(cells)
            .map_err(|e| ServerError::Corrupt(format!("round {round_id}: {e}")))?;
        let more = engine.advance();
        let document = (!more)
            .then(|| {
                with_trust_model(engine.clone().document(&task.spec), &task.guarantee)
                    .and_then(|document| with_collusion(document, &task.guarantee))
            })
            .transpose()?;
        let now = unix_now();
        let debit = (!task.debited).then(|| StoredDebit {
            task_id: task.id.clone(),
            population: task.spec.population.clone(),
            epsilon: task.charge.0,
            delta: task.charge.1,
            at: now,
        });
        self.store
            .commit_release(ReleaseCommit {
                fence: &task.fence,
                round_id,
                uploads: closed.uploads,
                release: &release,
                debit,
                result: document.as_deref().map(|d| (task.id.as_str(), d)),
            })
            .await?;
        self.metrics.round_closed(RoundOutcome::Released);
        task.debited = true;
        task.rounds_released += 1;
        task.short = 0;
        task.attempt = 0;
        info!(task = %task.id, round = %round_id, uploads = closed.uploads, finished = !more,
              "round released");
        if more {
            task.engine = Some(engine);
            self.open_round(task).await
        } else {
            task.engine = None;
            task.state = TaskState::Finished;
            Ok(())
        }
    }

    /// Opens the task's current round with a fresh cohort.
    async fn open_round(&self, task: &mut LiveTask) -> Result<(), ServerError> {
        let Some(engine) = &task.engine else {
            return Ok(());
        };
        task.attempt += 1;
        let policy = &task.spec.rounds;
        let id = new_id("r");
        let opened_at = unix_now();
        let deadline_secs = policy.deadline_secs.min(i64::MAX as u64 / 2);
        let cohort_target = policy
            .cohort_target
            .unwrap_or(task.spec.expected_population);
        let trust = task.guarantee.trust_model;
        // In a split-trust population the relay flips the aggregator-side coins, before the
        // aggregator receives anything: the aggregator counts every report it opens.
        let coins = match (trust, task.spec.sampling) {
            (TrustModel::Split, Sampling::Aggregator) => Sampling::Device,
            (_, sampling) => sampling,
        };
        let opened = engine.open(coins, self.coins.round_rng());
        let query = RoundQuery {
            version: PROTOCOL_VERSION,
            round_id: id.clone(),
            task_id: task.id.clone(),
            population: task.spec.population.clone(),
            round: engine.round(),
            attempt: task.attempt,
            deadline: opened_at.saturating_add(deadline_secs as i64),
            max_report_bytes: policy.max_report_bytes,
            min_cohort: policy.min_cohort,
            cohort_target,
            ask: opened.ask,
            sampling: task.spec.sampling,
        };
        // Unwrap safety: a query is strings and numbers.
        let stored_query = serde_json::to_string(&query).expect("queries serialize");
        self.store
            .insert_round(
                &task.fence,
                &id,
                (query.round, query.attempt),
                opened_at,
                &stored_query,
            )
            .await?;
        let round = Arc::new(Round::new(
            query,
            trust,
            Instant::now() + Duration::from_secs(deadline_secs),
            Cohort {
                min: policy.min_cohort,
                target: cohort_target,
                expected: task.spec.expected_population,
            },
            opened.aggregator,
            opened.refusal,
        ));
        info!(task = %task.id, round = %id, level = round.query.round, attempt = task.attempt,
              "round opened");
        self.open
            .write()
            .expect("round index lock")
            .insert(id, Arc::clone(&round));
        self.metrics.round_opened();
        task.round = Some(round);
        Ok(())
    }

    /// Drops the task's open round unreleased.
    async fn drop_round(&self, task: &mut LiveTask) -> Result<(), ServerError> {
        let Some(round) = task.round.take() else {
            return Ok(());
        };
        let id = &round.query.round_id;
        self.retire_round(id);
        if let Some(closed) = round.close() {
            self.store
                .close_round(&task.fence, id, RoundState::Aborted, closed.uploads)
                .await?;
            self.metrics.round_closed(RoundOutcome::Aborted);
        }
        Ok(())
    }

    /// Closes every open round this replica drives unreleased and lets its leases lapse, for
    /// a graceful shutdown: the rounds run again on another replica, or after the next
    /// start.
    pub(crate) async fn shutdown(&self) {
        let mut tasks = self.tasks.lock().await;
        for task in tasks.values_mut() {
            if let Err(e) = self.drop_round(task).await {
                error!(task = %task.id, error = %e, "could not close a round at shutdown");
            }
        }
        tasks.clear();
        if let Err(e) = self.store.leave(self.replica.id()).await {
            error!(error = %e, "could not let this replica's leases lapse at shutdown");
        }
        self.store.close().await;
    }

    /// The live credential `token` proves, if any.
    pub(crate) async fn authenticate(&self, token: &str) -> Result<Option<Principal>, ApiError> {
        Ok(self.credentials.authenticate(&self.store, token).await?)
    }

    /// Brings the credentials in memory in step with the database (see
    /// [`CredentialCache::refresh`]); a failure is logged, and requests read their credential
    /// from the database until a refresh succeeds again.
    pub(crate) async fn refresh_credentials(&self) {
        if let Err(e) = self.credentials.refresh(&self.store).await {
            warn!(error = %e, "could not read the credentials' changes");
        }
    }

    /// Creates a credential; its token is in the answer and nowhere else.
    pub(crate) async fn create_credential(
        &self,
        spec: &CredentialSpec,
    ) -> Result<IssuedCredential, ApiError> {
        check_version(spec.version)?;
        auth::check_spec(spec).map_err(|m| ApiError::new(ErrorCode::Malformed, m))?;
        population::check_credential_populations(&self.store, spec)
            .await?
            .map_err(forbidden)?;
        let issued = auth::issue(&self.store, Some(&self.credentials), spec, unix_now()).await?;
        info!(credential = %issued.credential.id, role = issued.credential.role.name(),
              "credential created");
        Ok(issued)
    }

    /// Provisions a population.
    pub(crate) async fn create_population(
        &self,
        spec: &PopulationSpec,
    ) -> Result<PopulationInfo, ApiError> {
        check_version(spec.version)?;
        // Declaring a pair composes it up to its number of rounds: off the async workers.
        let checked = {
            let spec = spec.clone();
            tokio::task::spawn_blocking(move || population::check_spec(&spec))
                .await
                .map_err(|e| ServerError::Corrupt(format!("checking a population failed: {e}")))?
        };
        let task_bound = checked.map_err(|m| ApiError::new(ErrorCode::Malformed, m))?;
        let info = population::provision(&self.store, spec, task_bound, unix_now())
            .await?
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::PopulationExists,
                    format!("population {:?} exists already", spec.name),
                )
            })?;
        info!(population = ?info.name, epsilon = info.budget.epsilon, delta = info.budget.delta,
              "population created");
        Ok(info)
    }

    /// The populations `who` acts on (all for an operator).
    pub(crate) async fn populations(
        &self,
        who: &Principal,
    ) -> Result<Vec<PopulationInfo>, ApiError> {
        let stored = self.store.populations().await?;
        Ok(stored
            .iter()
            .filter(|p| who.role == Role::Operator || who.covers(&p.name))
            .map(population::info)
            .collect())
    }

    /// Every credential (never a secret).
    pub(crate) async fn credentials(&self) -> Result<Vec<CredentialInfo>, ApiError> {
        let stored = self.store.credentials().await?;
        Ok(stored.iter().filter_map(auth::info).collect())
    }

    /// Begins a console session for the authenticated `who`, and drops the sessions `expiry`
    /// ended; returns the session's id (a secret of [`auth::random_secret`]; the database
    /// keeps only its hash).
    pub(crate) async fn open_session(
        &self,
        who: &Principal,
        expiry: &ConsoleSessions,
    ) -> Result<String, ApiError> {
        let id = auth::random_secret();
        let now = unix_now_millis();
        let session = StoredSession {
            id_hash: auth::hash_secret(&id),
            credential_id: who.id.clone(),
            created_at: now,
        };
        self.store
            .insert_session(&session, expiry.cutoffs(now))
            .await?;
        Ok(id)
    }

    /// The live credential of the console session `id`, used now, if the session has not
    /// ended (signed out, or expired by `expiry`) and its credential is not revoked; a
    /// session that ended, or whose credential is revoked, is dropped.
    pub(crate) async fn session(
        &self,
        id: &str,
        expiry: &ConsoleSessions,
    ) -> Result<Option<Principal>, ApiError> {
        let id_hash = auth::hash_secret(id);
        let now = unix_now_millis();
        let Some(credential) = self
            .store
            .use_session(&id_hash, now, expiry.cutoffs(now))
            .await?
        else {
            return Ok(None);
        };
        let live = self.credentials.live(&self.store, &credential).await?;
        if live.is_none() {
            self.store.delete_session(&id_hash).await?;
        }
        Ok(live)
    }

    /// Ends the console session `id` (signing out).
    pub(crate) async fn close_session(&self, id: &str) -> Result<(), ApiError> {
        Ok(self.store.delete_session(&auth::hash_secret(id)).await?)
    }

    /// Revokes a credential: from now on it is refused, and its console sessions are ended.
    pub(crate) async fn revoke_credential(&self, id: &str) -> Result<CredentialInfo, ApiError> {
        let stored = self.credentials.revoke(&self.store, id, unix_now()).await?;
        let info = stored.as_ref().and_then(auth::info).ok_or_else(|| {
            ApiError::new(
                ErrorCode::UnknownCredential,
                format!("no credential {id:?}"),
            )
        })?;
        info!(credential = %info.id, "credential revoked");
        Ok(info)
    }

    /// Upload tokens from the operating system's randomness (through a CSPRNG): a device
    /// credential checks in for itself alone and holds one token per round (the same at
    /// every check-in); an operator credential relays for `devices` devices.
    pub(crate) fn check_in(
        &self,
        round: &Round,
        who: &Principal,
        devices: u32,
    ) -> Result<Vec<String>, ApiError> {
        let not_open = || self.closed(&round.query.round_id);
        let tokens = match who.role {
            Role::Device => vec![
                round
                    .check_in_device(&who.id, &mut rand::rng())
                    .ok_or_else(not_open)?,
            ],
            Role::Operator => match round.check_in(&who.id, devices, &mut rand::rng()) {
                Ok(tokens) => tokens,
                Err(CheckInRefused::Closed) => return Err(not_open()),
                Err(CheckInRefused::PastPopulation { issued, expected }) => {
                    return Err(ApiError::new(
                        ErrorCode::Oversized,
                        format!(
                            "this credential took {issued} upload tokens in this round, and \
                             {devices} more would pass the {expected} devices its task \
                             expects: a relaying credential takes at most one token per \
                             device"
                        ),
                    ));
                }
            },
            Role::Analyst => return Err(forbidden("an analyst takes no upload tokens".into())),
            Role::Relay => {
                return Err(forbidden(
                    "a relay takes no upload tokens: it sends a round's sealed reports in one \
                     batch (POST /v1/rounds/{id}/relayed)"
                        .into(),
                ));
            }
        };
        self.metrics.issued(tokens.len() as u64);
        Ok(tokens)
    }

    /// Enrolls `count` devices of a provisioned population: a device credential each.
    pub(crate) async fn enroll_devices(
        &self,
        population: &str,
        request: &DeviceEnrollment,
    ) -> Result<EnrolledDevices, ApiError> {
        check_version(request.version)?;
        if !(1..=auth::MAX_ENROLLMENT).contains(&request.count) {
            return Err(ApiError::new(
                ErrorCode::Oversized,
                format!(
                    "count: 1 to {} devices per enrollment",
                    auth::MAX_ENROLLMENT
                ),
            ));
        }
        match self.store.population(population).await? {
            None => return Err(unknown_population(population)),
            Some(p) if p.trust == TrustModel::Split => {
                return Err(forbidden(population::split_devices(population)));
            }
            Some(_) => {}
        }
        let tokens = auth::enroll(
            &self.store,
            Some(&self.credentials),
            population,
            request.count,
            unix_now(),
        )
        .await?;
        info!(population = %population, devices = request.count, "devices enrolled");
        Ok(EnrolledDevices {
            population: population.to_owned(),
            tokens,
        })
    }
}

/// What a request does to a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Reads its state.
    Read,
    /// Cancels it.
    Cancel,
    /// Reads its result.
    Result,
}

/// Whether `who` may do `access` to the task `stored`: its owner may do anything; an
/// operator may read and cancel any task but read no result; a device may read the state of
/// its population's tasks.
fn allows(owner: &str, population: &str, who: &Principal, access: Access) -> bool {
    match who.role {
        Role::Analyst => who.id == owner,
        Role::Operator => access != Access::Result,
        Role::Device | Role::Relay => access == Access::Read && who.covers(population),
    }
}

fn check_access(stored: &StoredTask, who: &Principal, access: Access) -> Result<(), ApiError> {
    if allows(&stored.owner, &stored.population, who, access) {
        Ok(())
    } else {
        Err(forbidden(format!(
            "task {} is not this credential's to {}",
            stored.id,
            match access {
                Access::Read => "read",
                Access::Cancel => "cancel",
                Access::Result => "read the result of",
            }
        )))
    }
}

/// A stored task's spec, guarantee and state.
fn parsed(stored: &StoredTask) -> Result<(TaskSpec, GuaranteeBody, TaskState), ServerError> {
    let spec: TaskSpec = serde_json::from_str(&stored.spec)
        .map_err(|e| ServerError::Corrupt(format!("task {}: {e}", stored.id)))?;
    let state = TaskState::from_name(&stored.state)
        .ok_or_else(|| ServerError::Corrupt(format!("task state {:?}", stored.state)))?;
    let guarantee: GuaranteeBody = serde_json::from_str(&stored.guarantee)
        .map_err(|e| ServerError::Corrupt(format!("task {}: {e}", stored.id)))?;
    Ok((spec, guarantee, state))
}

/// What the API says of a stored task whose rounds `rounds` summarizes.
fn info_of(stored: StoredTask, rounds: RoundsSummary) -> Result<TaskInfo, ServerError> {
    let (spec, guarantee, state) = parsed(&stored)?;
    Ok(TaskInfo {
        id: stored.id,
        spec,
        guarantee,
        state,
        rounds_released: rounds.released,
        open_round: rounds.open,
        error: stored.error,
        created_at: stored.created_at,
    })
}

/// Where to forward the check-ins and uploads of a round another replica drives.
fn forward_of(round: RemoteRound) -> Result<Forward, ServerError> {
    let query = serde_json::from_str(&round.query)
        .map_err(|e| ServerError::Corrupt(format!("a stored round query: {e}")))?;
    Ok(Forward {
        query,
        address: round.address,
    })
}

/// Refuses a new task to an analyst that has [`MAX_RUNNING_TASKS`] running already.
fn check_running_tasks(running: u64) -> Result<(), ApiError> {
    if running >= MAX_RUNNING_TASKS {
        return Err(ApiError::new(
            ErrorCode::InvalidTask,
            format!(
                "this credential runs {running} tasks, the most allowed at once: cancel one or \
                 wait for one to finish"
            ),
        ));
    }
    Ok(())
}

/// A task's result `document` saying the trust model of the task's `guarantee` in every
/// guarantee it holds (a document is built as a simulation's, which says `single-party`).
fn with_trust_model(document: String, guarantee: &GuaranteeBody) -> Result<String, ServerError> {
    fn set(value: &mut serde_json::Value, trust: &serde_json::Value) {
        match value {
            serde_json::Value::Object(fields) => {
                if let Some(field) = fields.get_mut("trust_model") {
                    *field = trust.clone();
                }
                fields.values_mut().for_each(|v| set(v, trust));
            }
            serde_json::Value::Array(values) => values.iter_mut().for_each(|v| set(v, trust)),
            _ => {}
        }
    }
    if guarantee.trust_model == TrustModel::SingleParty {
        return Ok(document);
    }
    let corrupt = |e: serde_json::Error| ServerError::Corrupt(format!("a task's document: {e}"));
    let mut value: serde_json::Value = serde_json::from_str(&document).map_err(corrupt)?;
    set(
        &mut value,
        &serde_json::Value::from(guarantee.trust_model.name()),
    );
    serde_json::to_string_pretty(&value).map_err(corrupt)
}

/// `document` with its guarantee's `collusion` set from the task's `guarantee` (computed at
/// the population's colluding fraction when the task was created); as it is when the task has
/// none (a task that is not in the shuffle model).
fn with_collusion(document: String, guarantee: &GuaranteeBody) -> Result<String, ServerError> {
    let Some(collusion) = &guarantee.collusion else {
        return Ok(document);
    };
    let corrupt = |e: serde_json::Error| ServerError::Corrupt(format!("a task's document: {e}"));
    let mut value: serde_json::Value = serde_json::from_str(&document).map_err(corrupt)?;
    let Some(published) = value.get_mut("guarantee").and_then(|g| g.as_object_mut()) else {
        return Err(ServerError::Corrupt(
            "a shuffle task's document without a guarantee".into(),
        ));
    };
    published.insert(
        "collusion".into(),
        serde_json::to_value(collusion).map_err(corrupt)?,
    );
    serde_json::to_string_pretty(&value).map_err(corrupt)
}

/// What a refusal adds for a task charged its guarantee against colluding devices: the
/// fraction and that guarantee; nothing for a population that assumes honest devices.
fn colluding_note(collusion: Option<&Collusion>) -> String {
    match collusion {
        Some(c) if c.colluding_fraction > 0.0 => format!(
            " (the population tolerates a fraction {} of its devices colluding with the \
             analyst: the task is charged the guarantee an honest device keeps against them, \
             ε = {}, δ = {}, not the one that assumes every device honest)",
            c.colluding_fraction,
            privacy_number(c.epsilon),
            delta_number(c.delta, Rounding::Up)
        ),
        _ => String::new(),
    }
}

fn forbidden(message: String) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

/// Admits a task charging `charge` to `population` if, with what its tasks charge already,
/// the population's tasks stay jointly within its budget (by the ledger's accountant).
fn admit(
    population: &StoredPopulation,
    charges: &[Charge],
    charge: &Charge,
    note: &str,
) -> Result<(), ApiError> {
    ledger_of(population).admit(charges, charge).map_err(|why| {
        ApiError::new(
            ErrorCode::BudgetExceeded,
            format!(
                "population {:?}'s budget (ε = {}, δ = {}): {why}{note}",
                population.name,
                number(population.epsilon, Rounding::Down),
                delta_number(population.delta, Rounding::Down)
            ),
        )
    })
}

/// The ledger's rule for `population`.
fn ledger_of(population: &StoredPopulation) -> Ledger {
    Ledger {
        budget: (population.epsilon, population.delta),
        bound: population.task_bound,
    }
}

/// Why a task asking `sampling: device` is refused on `population`, whose operator did not
/// allow it.
fn device_sampling_refused(population: &str) -> String {
    format!(
        "sampling device: population {population:?} does not allow device-side sampling (enrolled \
         devices colluding with the analyst would report every time and cross the threshold \
         with one victim); ask sampling aggregator, or have the operator create the population \
         with `tally population create ... --allow-device-sampling`"
    )
}

/// Why a task whose guarantee has no rule into `population`'s neighbour relation is refused.
fn neighbours_refused(population: &str, guarantee: &Guarantee) -> String {
    format!(
        "the task's guarantee is under {} neighbours, and population {population:?}'s budget is \
         kept under add-remove neighbours: a replace-one guarantee holds for a fixed number of \
         clients, and adding or removing one changes it; create the task with --neighbours \
         add-remove where its mechanism offers it, or run it on a population created with \
         --neighbours replace-one",
        guarantee.neighbours
    )
}

/// What `population`'s released (debited) and reserved tasks charge to it.
fn charges(tasks: &[StoredTask], debits: &[StoredDebit], population: &str) -> Vec<Charge> {
    let loss = |id: &str| tasks.iter().find(|t| t.id == id).and_then(|t| t.loss);
    let spent = debits
        .iter()
        .filter(|d| d.population == population)
        .map(|d| Charge {
            epsilon: d.epsilon,
            delta: d.delta,
            rounds: loss(&d.task_id),
        });
    let reserved = reserving(tasks, debits, population).map(|t| Charge {
        epsilon: t.epsilon,
        delta: t.delta,
        rounds: t.loss,
    });
    spent.chain(reserved).collect()
}

/// What `population`'s running tasks that released nothing yet hold back.
fn reserved(tasks: &[StoredTask], debits: &[StoredDebit], population: &str) -> (f64, f64) {
    reserving(tasks, debits, population).fold((0.0, 0.0), |(e, d), t| (e + t.epsilon, d + t.delta))
}

/// `population`'s running tasks not yet debited: what the ledger holds back for them.
fn reserving<'a>(
    tasks: &'a [StoredTask],
    debits: &'a [StoredDebit],
    population: &'a str,
) -> impl Iterator<Item = &'a StoredTask> {
    tasks.iter().filter(move |t| {
        t.population == population
            && t.state == TaskState::Running.name()
            && !debits.iter().any(|d| d.task_id == t.id)
    })
}

/// Refuses a request of another protocol version than [`PROTOCOL_VERSION`] as `malformed`.
///
/// # Errors
///
/// [`ErrorCode::Malformed`], naming both versions.
pub fn check_version(version: u32) -> Result<(), ApiError> {
    if version == PROTOCOL_VERSION {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::Malformed,
            format!("protocol version {version}; this service speaks version {PROTOCOL_VERSION}"),
        ))
    }
}

/// Limits a task's round policy must respect.
fn check_spec(spec: &TaskSpec) -> Result<(), ApiError> {
    let invalid = |m: String| Err(ApiError::new(ErrorCode::InvalidTask, m));
    let rounds = &spec.rounds;
    auth::check_population_name(&spec.population)
        .map_err(|m| ApiError::new(ErrorCode::InvalidTask, m))?;
    if spec.expected_population == 0 {
        return invalid("expected_population: at least 1".into());
    }
    if rounds.min_cohort == 0 {
        return invalid("min_cohort: at least 1 (no release from an empty cohort)".into());
    }
    if rounds.cohort_target.is_some_and(|t| t < rounds.min_cohort) {
        return invalid("cohort_target: at least min_cohort".into());
    }
    // A round closes at its cohort target, the expected population by default: below the
    // minimum cohort no round could ever release (and a relay would not relay it).
    if rounds.cohort_target.is_none() && spec.expected_population < rounds.min_cohort {
        return invalid(format!(
            "expected_population ({}) is below min_cohort ({}): each round closes at its cohort \
             target, the expected population by default, so none could release; raise \
             expected_population (or cohort_target), or lower min_cohort",
            spec.expected_population, rounds.min_cohort
        ));
    }
    if spec.expected_population > MAX_POPULATION {
        return invalid(format!("expected_population: at most {MAX_POPULATION}"));
    }
    if !(1..=MAX_DEADLINE_SECS).contains(&rounds.deadline_secs) {
        return invalid(format!("deadline_secs: 1 to {MAX_DEADLINE_SECS} (a week)"));
    }
    if !(1..=MAX_ATTEMPTS).contains(&rounds.max_attempts) {
        return invalid(format!("max_attempts: 1 to {MAX_ATTEMPTS}"));
    }
    let kind = definition(&spec.kind);
    if kind.quantiles().len() > MAX_QUANTILES {
        return invalid(format!("quantiles: at most {MAX_QUANTILES}"));
    }
    let levels = kind.levels();
    if levels > MAX_LEVELS {
        return invalid(format!(
            "levels {levels}: at most {MAX_LEVELS} (each level is a round to calibrate and run)"
        ));
    }
    if !(1..=MAX_REPORT_BYTES).contains(&rounds.max_report_bytes) {
        return invalid(format!("max_report_bytes: 1 to {MAX_REPORT_BYTES}"));
    }
    Ok(())
}

/// Refuses a cohort target above the expected population: a round would wait for devices the
/// task does not count on (and a relaying credential could be asked for that many upload
/// tokens).
fn check_cohort_target(spec: &TaskSpec) -> Result<(), ApiError> {
    match spec.rounds.cohort_target {
        Some(target) if target > spec.expected_population => Err(ApiError::new(
            ErrorCode::InvalidTask,
            format!(
                "cohort_target {target}: above the expected population of {} devices, so a \
                 round would wait for devices the task does not count on; set cohort_target \
                 to at most {}, or expected_population to the devices there are",
                spec.expected_population, spec.expected_population
            ),
        )),
        _ => Ok(()),
    }
}

/// The most devices a task may expect.
const MAX_POPULATION: u64 = 1_000_000_000;
/// The longest a round may stay open, in seconds.
const MAX_DEADLINE_SECS: u64 = 7 * 24 * 3600;
/// The most runs of one round.
const MAX_ATTEMPTS: u32 = 100;
/// The most levels (rounds per search) of a multi-round task.
const MAX_LEVELS: u32 = 64;
/// The most tasks one analyst credential may run at once.
const MAX_RUNNING_TASKS: u64 = 100;
/// The most quantiles of one task.
const MAX_QUANTILES: usize = 100;

fn unknown_population(name: &str) -> ApiError {
    ApiError::new(
        ErrorCode::UnknownPopulation,
        format!("no population {name:?}: an operator creates it first (tally population create)"),
    )
}

fn unknown_task(id: &str) -> ApiError {
    ApiError::new(ErrorCode::UnknownTask, format!("no task {id}"))
}

pub(crate) fn new_id(kind: &str) -> String {
    format!("{kind}-{:016x}", rand::rng().next_u64())
}

/// Now, in whole seconds since the Unix epoch (0 before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Milliseconds since the Unix epoch (0 before it), the clock of console sessions and leases.
pub(crate) fn unix_now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
