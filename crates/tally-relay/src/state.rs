//! The relay's state: the aggregator's rounds it follows, the ones this replica holds (their
//! uploads in memory) and where the others are held, and their closing and forwarding.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};
use tally_client::Client;
use tally_messages::{ErrorCode, PROTOCOL_VERSION, RelayedBatch, RoundQuery};
use tally_server::ServerError;
use tally_server::service::{
    AggregatorCoins, Credentials, Replica, RoundLeases, RoundPlace, unix_now,
};
use tracing::{error, info, warn};

use crate::RelayOptions;
use crate::cohort::pick;
use crate::round::{RelayRound, SealedSize};

/// Everything a relay holds.
pub(crate) struct State {
    pub(crate) credentials: Credentials,
    /// This replica among the relay's replicas on its database.
    pub(crate) replica: Replica,
    /// Which replica holds each round.
    leases: RoundLeases,
    upstream: Client,
    options: RelayOptions,
    coins: AggregatorCoins,
    /// The rounds this replica holds the lease of, taking uploads, by id.
    rounds: RwLock<FxHashMap<String, Held>>,
    /// The rounds other replicas hold, taking uploads there, by id, as last read.
    elsewhere: RwLock<FxHashMap<String, Arc<Elsewhere>>>,
    /// Rounds closed (here or at another replica), dropped, or not relayed: never opened
    /// again, and forgotten once the aggregator no longer lists them.
    finished: Mutex<FxHashSet<String>>,
    /// Held while leases are taken or renewed: a renewal that read the held leases before a
    /// round was taken would drop it as lost.
    leasing: tokio::sync::Mutex<()>,
}

/// A round this replica holds: its uploads, and its lease's epoch (the fence of its forward).
struct Held {
    round: Arc<RelayRound>,
    epoch: i64,
}

/// A round another replica holds: its query, and where that replica takes its requests.
#[derive(Debug)]
pub(crate) struct Elsewhere {
    pub(crate) query: RoundQuery,
    pub(crate) address: String,
}

/// Where a round's check-ins and uploads go.
pub(crate) enum Route {
    /// This replica holds the round.
    Here(Arc<RelayRound>),
    /// Another one does.
    There(Arc<Elsewhere>),
}

impl Route {
    /// The round's query.
    pub(crate) fn query(&self) -> &RoundQuery {
        match self {
            Route::Here(round) => &round.query,
            Route::There(there) => &there.query,
        }
    }
}

impl State {
    pub(crate) fn new(
        credentials: Credentials,
        replica: Replica,
        options: RelayOptions,
        coins: AggregatorCoins,
    ) -> Self {
        Self {
            leases: credentials.round_leases(),
            credentials,
            replica,
            upstream: options.aggregator.clone(),
            options,
            coins,
            rounds: RwLock::default(),
            elsewhere: RwLock::default(),
            finished: Mutex::default(),
            leasing: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn poll_interval(&self) -> Duration {
        self.options.poll_interval
    }

    /// The aggregator, with the relay's credential.
    pub(crate) fn upstream(&self) -> &Client {
        &self.upstream
    }

    /// The queries of the rounds taking uploads at this replica or another, ordered by task.
    pub(crate) fn open_rounds(&self) -> Vec<RoundQuery> {
        let mut open: Vec<RoundQuery> = self
            .rounds
            .read()
            .expect("relay rounds lock")
            .values()
            .map(|held| held.round.query.clone())
            .collect();
        open.extend(
            self.elsewhere
                .read()
                .expect("relay rounds lock")
                .values()
                .map(|there| there.query.clone()),
        );
        open.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        open
    }

    /// Where round `id` takes uploads; `Err(true)` if it was closed (or will not be
    /// relayed), `Err(false)` if the relay does not know it.
    pub(crate) fn route(&self, id: &str) -> Result<Route, bool> {
        if let Some(held) = self.rounds.read().expect("relay rounds lock").get(id) {
            return Ok(Route::Here(Arc::clone(&held.round)));
        }
        if let Some(there) = self.elsewhere.read().expect("relay rounds lock").get(id) {
            return Ok(Route::There(Arc::clone(there)));
        }
        Err(self
            .finished
            .lock()
            .expect("relay finished lock")
            .contains(id))
    }

    /// Lists the aggregator's open rounds and follows them: a round no replica holds is
    /// taken here (unless its deadline is too near), one another replica holds is forwarded
    /// there, one the aggregator no longer lists (closed or cancelled there) is dropped with
    /// its uploads.
    pub(crate) async fn follow(&self) {
        let queries = match self.upstream.open_rounds().await {
            Ok(queries) => queries,
            Err(e) => {
                warn!(error = %e, "could not list the aggregator's open rounds");
                return;
            }
        };
        let _leasing = self.leasing.lock().await;
        let unheld = self.sync(queries, unix_now());
        if let Err(e) = self.place(unheld, Instant::now(), unix_now()).await {
            warn!(error = %e, "could not read or take the rounds' leases");
        }
    }

    /// Drops the rounds the aggregator no longer lists, refuses the new ones the relay does
    /// not relay, and returns the listed ones that this replica neither holds nor closed.
    fn sync(&self, queries: Vec<RoundQuery>, unix: i64) -> Vec<RoundQuery> {
        let listed: FxHashSet<&str> = queries.iter().map(|q| q.round_id.as_str()).collect();
        let mut rounds = self.rounds.write().expect("relay rounds lock");
        let mut elsewhere = self.elsewhere.write().expect("relay rounds lock");
        let mut finished = self.finished.lock().expect("relay finished lock");
        rounds.retain(|id, held| {
            if listed.contains(id.as_str()) {
                return true;
            }
            if held.round.close().is_some() {
                warn!(round = %id, task = %held.round.query.task_id,
                      "the aggregator closed the round before the relay forwarded it; its uploads are dropped");
            }
            finished.insert(id.clone());
            false
        });
        elsewhere.retain(|id, _| listed.contains(id.as_str()));
        finished.retain(|id| listed.contains(id.as_str()));
        let margin = self.margin_secs();
        let mut unheld = Vec::new();
        for query in queries {
            if rounds.contains_key(&query.round_id) || finished.contains(&query.round_id) {
                continue;
            }
            let left = query.deadline.saturating_sub(unix).saturating_sub(margin);
            let refusal = if query.version != PROTOCOL_VERSION {
                Some(format!("protocol version {}", query.version))
            } else if query.min_cohort == 0 || query.cohort_target < query.min_cohort {
                Some(format!(
                    "a minimum cohort of {} and a cohort target of {}",
                    query.min_cohort, query.cohort_target
                ))
            } else if left <= 0 {
                Some(format!(
                    "its deadline is less than the forward margin of {margin} s away"
                ))
            } else {
                None
            };
            if let Some(reason) = refusal {
                // A round held elsewhere closes there at this moment too.
                if elsewhere.remove(&query.round_id).is_none() {
                    warn!(round = %query.round_id, task = %query.task_id, reason = %reason,
                          "not relaying the round");
                }
                finished.insert(query.round_id);
                continue;
            }
            unheld.push(query);
        }
        unheld
    }

    /// Places the listed rounds this replica does not hold: where another replica holds one
    /// under a live lease, requests go there; a closed one is finished; one nobody holds
    /// (new, or its holder's lease lapsed) is taken here, up to this replica's share of the
    /// listed rounds (rounds ÷ live replicas, rounded up), so that the rounds, and their
    /// uploads, spread over the replicas.
    async fn place(
        &self,
        unheld: Vec<RoundQuery>,
        now: Instant,
        unix: i64,
    ) -> Result<(), ServerError> {
        if unheld.is_empty() {
            self.elsewhere.write().expect("relay rounds lock").clear();
            return Ok(());
        }
        let places: FxHashMap<String, RoundPlace> = self
            .leases
            .places(&self.replica)
            .await?
            .into_iter()
            .collect();
        let held = self.rounds.read().expect("relay rounds lock").len();
        let live = self.leases.live_replicas(&self.replica).await?.max(1);
        let listed = u64::try_from(held + unheld.len()).unwrap_or(u64::MAX);
        let share = usize::try_from(listed.div_ceil(live)).unwrap_or(usize::MAX);
        let mut room = share.saturating_sub(held);
        let mut elsewhere = FxHashMap::default();
        let mut closed = Vec::new();
        let mut taken = Vec::new();
        // A failed claim ends the look, but the rounds taken before it are kept: a lease
        // taken and not held in memory would be renewed for nothing.
        let mut failure = None;
        for query in unheld {
            let id = query.round_id.clone();
            match places.get(&id) {
                Some(RoundPlace::HeldAt(address)) => {
                    let address = address.clone();
                    elsewhere.insert(id, Arc::new(Elsewhere { query, address }));
                }
                Some(RoundPlace::Closed) => closed.push(id),
                // Beyond this replica's share: another replica takes it.
                None if room == 0 => {}
                None => {
                    let epoch = match self.leases.claim(&self.replica, &id, query.deadline).await {
                        Ok(Some(epoch)) => epoch,
                        // Another replica took it meanwhile: the next look finds where.
                        Ok(None) => continue,
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    };
                    let left = query
                        .deadline
                        .saturating_sub(unix)
                        .saturating_sub(self.margin_secs());
                    // `sync` kept only rounds with time left.
                    let closes_at =
                        now + Duration::from_secs(u64::try_from(left).unwrap_or_default());
                    let pool =
                        (query.cohort_target as f64 * self.options.cohort_pool).ceil() as u64;
                    match epoch {
                        1 => {
                            info!(round = %id, task = %query.task_id, population = %query.population,
                                   attempt = query.attempt, closes_in_secs = left,
                                   "round opened at the relay")
                        }
                        _ => warn!(round = %id, task = %query.task_id, epoch,
                                   "took the round over from a replica whose lease lapsed; the uploads it held are lost"),
                    }
                    let sealed = sealed_size(&query);
                    let round = Arc::new(RelayRound::new(query, closes_at, pool, sealed));
                    taken.push((id, Held { round, epoch }));
                    room -= 1;
                }
            }
        }
        self.rounds
            .write()
            .expect("relay rounds lock")
            .extend(taken);
        *self.elsewhere.write().expect("relay rounds lock") = elsewhere;
        self.finished
            .lock()
            .expect("relay finished lock")
            .extend(closed);
        failure.map_or(Ok(()), Err)
    }

    /// Says this replica is alive, renews the leases of the rounds it holds, drops at once,
    /// with their uploads, the rounds another replica took over, and lets lapse now a lease
    /// it holds on a round it does not hold in memory (taken by a claim whose answer was
    /// lost), so that another replica takes that round at once.
    pub(crate) async fn renew(&self) {
        let _leasing = self.leasing.lock().await;
        let held: FxHashSet<(String, i64)> = match self.leases.renew(&self.replica).await {
            Ok(held) => held.into_iter().collect(),
            Err(e) => {
                warn!(error = %e, "could not renew the rounds' leases");
                return;
            }
        };
        let orphans: Vec<(String, i64)> = {
            let mut rounds = self.rounds.write().expect("relay rounds lock");
            let mut finished = self.finished.lock().expect("relay finished lock");
            rounds.retain(|id, kept| {
                if held.contains(&(id.clone(), kept.epoch)) {
                    return true;
                }
                warn!(round = %id, task = %kept.round.query.task_id,
                      "lost the round's lease (another replica took it over): its uploads are dropped");
                kept.round.close();
                finished.insert(id.clone());
                false
            });
            // A round being closed is out of `rounds` but in `finished`: its lease is kept
            // for the fence.
            held.into_iter()
                .filter(|(id, _)| !rounds.contains_key(id) && !finished.contains(id))
                .collect()
        };
        for (id, epoch) in orphans {
            match self.leases.release(&self.replica, &id, epoch).await {
                Ok(()) => {
                    warn!(round = %id, "let lapse the lease of a round this replica does not hold")
                }
                Err(e) => warn!(round = %id, error = %e, "could not let a round's lease lapse"),
            }
        }
    }

    /// The forward margin, in whole seconds.
    fn margin_secs(&self) -> i64 {
        i64::try_from(self.options.forward_margin.as_secs()).unwrap_or(i64::MAX)
    }

    /// Closes and forwards every round whose time at the relay is up.
    pub(crate) async fn close_due(&self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .rounds
            .read()
            .expect("relay rounds lock")
            .values()
            .filter(|held| held.round.closes_at <= now)
            .map(|held| held.round.query.round_id.clone())
            .collect();
        for id in due {
            self.close_round(&id).await;
        }
    }

    /// Closes round `id` at the relay and forwards its cohort to the aggregator in one batch,
    /// or nothing below the minimum cohort; its uploads are forgotten either way. Nothing is
    /// forwarded unless the round's lease is still this replica's, checked as the round is
    /// closed for good in the database: a replica that lost it (stopped, partitioned, its
    /// database sessions killed, while another took the round over) forwards nothing.
    pub(crate) async fn close_round(&self, id: &str) {
        let Held { round, epoch } = {
            // Both at once, in the order `sync` takes them, so that no listing in between
            // opens the round again.
            let mut rounds = self.rounds.write().expect("relay rounds lock");
            let mut finished = self.finished.lock().expect("relay finished lock");
            let Some(held) = rounds.remove(id) else {
                return;
            };
            finished.insert(id.to_owned());
            held
        };
        let Some(uploads) = round.close() else {
            return;
        };
        let query = &round.query;
        match self.leases.close(&self.replica, id, epoch).await {
            Ok(true) => {}
            Ok(false) => {
                warn!(round = %id, task = %query.task_id,
                      "another replica took the round over: this one forwards nothing");
                return;
            }
            Err(e) => {
                error!(round = %id, task = %query.task_id, error = %e,
                       "could not close the round's lease; nothing forwarded");
                return;
            }
        }
        let held = uploads.len() as u64;
        let rule = round.rule(self.options.max_per_credential);
        let mut rng = self.coins.round_rng();
        // Drawing a large cohort's permutation takes a while: off the async workers.
        let forward = match tokio::task::spawn_blocking(move || pick(uploads, rule, &mut rng)).await
        {
            Ok(forward) => forward,
            Err(e) => {
                error!(round = %id, error = %e, "picking the cohort failed; nothing forwarded");
                return;
            }
        };
        if forward.cohort < query.min_cohort {
            warn!(round = %id, task = %query.task_id, uploads = held, cohort = forward.cohort,
                  min_cohort = query.min_cohort,
                  "round closed below the minimum cohort at the relay; nothing forwarded");
            return;
        }
        let batch = RelayedBatch {
            version: PROTOCOL_VERSION,
            attempt: query.attempt,
            cohort: forward.cohort,
            messages: forward.messages,
        };
        match self.upstream.relay(id, &batch).await {
            Ok(receipt) => {
                info!(round = %id, task = %query.task_id, uploads = held, cohort = batch.cohort,
                      messages = batch.messages.len(), accepted = receipt.accepted,
                      "round forwarded to the aggregator")
            }
            // A forward whose answer was lost is sent again, and the aggregator, which takes
            // one batch per round, refuses the repeat: the batch was most likely counted.
            Err(e) if e.code() == Some(ErrorCode::AlreadyRelayed) => {
                warn!(round = %id, task = %query.task_id, error = %e,
                      "the aggregator holds a batch of this round already (most likely this \
                       forward's, sent again after its answer was lost); nothing is counted twice")
            }
            Err(e) => {
                error!(round = %id, task = %query.task_id, error = %e,
                       "forwarding the round failed; its uploads are dropped")
            }
        }
    }

    /// Drops every round's uploads, unforwarded, and lets this replica's leases lapse now:
    /// the other replicas take its rounds over at their next look.
    pub(crate) async fn leave(&self) {
        {
            let mut rounds = self.rounds.write().expect("relay rounds lock");
            for held in rounds.values() {
                held.round.close();
            }
            rounds.clear();
        }
        if let Err(e) = self.leases.leave(&self.replica).await {
            error!(error = %e, "could not let this replica's round leases lapse");
        }
    }
}

/// How the sealed messages of the round of `query` are sized.
fn sealed_size(query: &RoundQuery) -> SealedSize {
    SealedSize {
        max_chars: tally_seal::max_sealed_len(query.max_report_bytes),
        overhead: tally_seal::SEAL_OVERHEAD,
    }
}
