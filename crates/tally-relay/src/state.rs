//! The relay's state: the aggregator's rounds it follows, their uploads in memory, and their
//! closing and forwarding.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap, FxHashSet};
use tally_client::Client;
use tally_messages::{ErrorCode, PROTOCOL_VERSION, RelayedBatch, RoundQuery};
use tally_server::service::{AggregatorCoins, Credentials, unix_now};
use tracing::{error, info, warn};

use crate::RelayOptions;
use crate::cohort::pick;
use crate::round::{RelayRound, SealedSize};

/// Everything a relay holds.
pub(crate) struct State {
    pub(crate) credentials: Credentials,
    upstream: Client,
    options: RelayOptions,
    coins: AggregatorCoins,
    /// The rounds taking uploads, by id.
    rounds: RwLock<FxHashMap<String, Arc<RelayRound>>>,
    /// Rounds the relay forwarded, dropped or will not relay: never opened again, and
    /// forgotten once the aggregator no longer lists them.
    finished: Mutex<FxHashSet<String>>,
}

impl State {
    pub(crate) fn new(
        credentials: Credentials,
        options: RelayOptions,
        coins: AggregatorCoins,
    ) -> Self {
        Self {
            credentials,
            upstream: options.aggregator.clone(),
            options,
            coins,
            rounds: RwLock::default(),
            finished: Mutex::default(),
        }
    }

    pub(crate) fn poll_interval(&self) -> Duration {
        self.options.poll_interval
    }

    /// The aggregator, with the relay's credential.
    pub(crate) fn upstream(&self) -> &Client {
        &self.upstream
    }

    /// The rounds taking uploads, ordered by task.
    pub(crate) fn open_rounds(&self) -> Vec<Arc<RelayRound>> {
        let rounds = self.rounds.read().expect("relay rounds lock");
        let mut open: Vec<Arc<RelayRound>> = rounds.values().cloned().collect();
        open.sort_by(|a, b| a.query.task_id.cmp(&b.query.task_id));
        open
    }

    /// The round `id` if it takes uploads; `Err(true)` if the relay closed it (or will not
    /// relay it), `Err(false)` if it does not know it.
    pub(crate) fn round(&self, id: &str) -> Result<Arc<RelayRound>, bool> {
        if let Some(round) = self.rounds.read().expect("relay rounds lock").get(id) {
            return Ok(Arc::clone(round));
        }
        Err(self
            .finished
            .lock()
            .expect("relay finished lock")
            .contains(id))
    }

    /// Lists the aggregator's open rounds and follows them: a new one opens at the relay
    /// (unless its deadline is too near), one the aggregator no longer lists (closed or
    /// cancelled there) is dropped with its uploads.
    pub(crate) async fn follow(&self) {
        match self.upstream.open_rounds().await {
            Ok(queries) => self.sync(queries, Instant::now(), unix_now()),
            Err(e) => warn!(error = %e, "could not list the aggregator's open rounds"),
        }
    }

    fn sync(&self, queries: Vec<RoundQuery>, now: Instant, unix: i64) {
        let listed: FxHashSet<&str> = queries.iter().map(|q| q.round_id.as_str()).collect();
        let mut rounds = self.rounds.write().expect("relay rounds lock");
        let mut finished = self.finished.lock().expect("relay finished lock");
        rounds.retain(|id, round| {
            if listed.contains(id.as_str()) {
                return true;
            }
            if round.close().is_some() {
                warn!(round = %id, task = %round.query.task_id,
                      "the aggregator closed the round before the relay forwarded it; its uploads are dropped");
            }
            finished.insert(id.clone());
            false
        });
        finished.retain(|id| listed.contains(id.as_str()));
        let margin = i64::try_from(self.options.forward_margin.as_secs()).unwrap_or(i64::MAX);
        for query in queries {
            if rounds.contains_key(&query.round_id) || finished.contains(&query.round_id) {
                continue;
            }
            let id = query.round_id.clone();
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
                warn!(round = %id, task = %query.task_id, reason = %reason, "not relaying the round");
                finished.insert(id);
                continue;
            }
            // Unwrap safety: `left` is positive.
            let closes_at = now + Duration::from_secs(u64::try_from(left).expect("positive"));
            let pool = (query.cohort_target as f64 * self.options.cohort_pool).ceil() as u64;
            info!(round = %id, task = %query.task_id, population = %query.population,
                  attempt = query.attempt, closes_in_secs = left, "round opened at the relay");
            let sealed = sealed_size(&query);
            rounds.insert(
                id,
                Arc::new(RelayRound::new(query, closes_at, pool, sealed)),
            );
        }
    }

    /// Closes and forwards every round whose time at the relay is up.
    pub(crate) async fn close_due(&self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .rounds
            .read()
            .expect("relay rounds lock")
            .values()
            .filter(|r| r.closes_at <= now)
            .map(|r| r.query.round_id.clone())
            .collect();
        for id in due {
            self.close_round(&id).await;
        }
    }

    /// Closes round `id` at the relay and forwards its cohort to the aggregator in one batch,
    /// or nothing below the minimum cohort; its uploads are forgotten either way.
    pub(crate) async fn close_round(&self, id: &str) {
        let round = {
            // Both at once, in the order `sync` takes them, so that no listing in between
            // opens the round again.
            let mut rounds = self.rounds.write().expect("relay rounds lock");
            let mut finished = self.finished.lock().expect("relay finished lock");
            let Some(round) = rounds.remove(id) else {
                return;
            };
            finished.insert(id.to_owned());
            round
        };
        let Some(uploads) = round.close() else {
            return;
        };
        let query = &round.query;
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

    /// Drops every round's uploads, unforwarded.
    pub(crate) fn drop_rounds(&self) {
        let mut rounds = self.rounds.write().expect("relay rounds lock");
        for round in rounds.values() {
            round.close();
        }
        rounds.clear();
    }
}

/// How the sealed messages of the round of `query` are sized.
fn sealed_size(query: &RoundQuery) -> SealedSize {
    SealedSize {
        max_chars: tally_seal::max_sealed_len(query.max_report_bytes),
        overhead: tally_seal::SEAL_OVERHEAD,
    }
}
