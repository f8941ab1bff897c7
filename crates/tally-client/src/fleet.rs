//! Many simulated devices over real HTTP: for demos, tests and load.
//!
//! A [`Fleet`] holds one item per device. It follows tasks (the one asked for, or every task
//! that runs while it does), and for each open round of a followed task it checks its devices
//! in by batches, answers for each device with [`Responder`] (the simulator's respond code)
//! and uploads the batch, with a bounded number of requests in flight. It stops a round's work
//! when the round closes, and stops when the followed tasks have ended.

mod report;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_messages::{
    ErrorCode, Rejection, RoundQuery, SealedUpload, TaskState, Upload, UploadReceipt,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinError, JoinSet};

use report::RoundTally;
pub use report::{Counts, FleetReport, LatencySummary, RoundReport, Totals};

use crate::client::Client;
use crate::error::ClientError;
use crate::ledger::{DeviceLedger, LedgerRefusal};
use crate::respond::{RespondError, Responder, device_rng};
use crate::seal::{AggregatorKey, RoundSealer};

/// Why a fleet stopped before its tasks ended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The configuration cannot run.
    #[error("invalid fleet: {0}")]
    Config(String),
    /// A request failed on every attempt or was refused for a reason other than the round
    /// closing.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A round's query cannot be answered.
    #[error(transparent)]
    Respond(#[from] RespondError),
}

/// How a fleet runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FleetConfig {
    /// Requests in flight at most (each a check-in then an upload), at least 1.
    pub concurrency: usize,
    /// Devices per check-in and upload request, at least 1 (1: every device uploads alone).
    pub batch: usize,
    /// Follow only this task; `None` follows every task running while the fleet runs.
    pub task: Option<String>,
    /// Seed of the devices' coins, for tests and reproducible demos; `None` draws them from
    /// a CSPRNG. A seeded fleet draws the same coins for the same rounds of the same task on
    /// any server.
    pub seed: Option<u64>,
    /// How long to wait before looking again for open rounds when there is none to do.
    pub poll_interval: Duration,
}

impl Default for FleetConfig {
    /// 8 requests in flight, 256 devices per request, every task, fresh randomness, 100 ms polls.
    fn default() -> Self {
        Self {
            concurrency: 8,
            batch: 256,
            task: None,
            seed: None,
            poll_interval: Duration::from_millis(100),
        }
    }
}

/// What a fleet tells its caller while it runs (to draw progress; the library prints nothing).
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetEvent<'a> {
    /// The fleet joined an open round with this many devices.
    RoundStarted {
        /// The round's query.
        query: &'a RoundQuery,
        /// Devices that will take part unless the round closes first.
        devices: usize,
    },
    /// A batch of devices uploaded (accepted or not).
    Uploaded {
        /// The round.
        round_id: &'a str,
        /// Devices in the batch.
        devices: usize,
    },
    /// The fleet is done with a round.
    RoundFinished(&'a RoundReport),
    /// No round to do: the fleet waits for the next one.
    Waiting,
    /// The devices' ledger refused the round's task: they take no part in it.
    Refused {
        /// The round's query.
        query: &'a RoundQuery,
        /// Why.
        reason: &'a LedgerRefusal,
    },
}

/// Simulated devices, one item each.
pub struct Fleet {
    client: Client,
    items: Arc<[String]>,
    /// One enrolled device credential per device, or `None` when the client's own credential
    /// (an operator's) relays for all of them.
    credentials: Option<Arc<[String]>>,
    /// The devices' privacy ledger, if they keep one.
    ledger: Option<Mutex<DeviceLedger>>,
    /// In a split-trust population, the aggregator's key the devices seal to (the client
    /// then talks to the relay).
    key: Option<AggregatorKey>,
    /// Whether every device seals its messages before a round's clock starts.
    seal_first: bool,
    config: FleetConfig,
}

impl std::fmt::Debug for Fleet {
    /// Never shows a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("client", &self.client)
            .field("devices", &self.items.len())
            .field("enrolled", &self.credentials.is_some())
            .field("ledger", &self.ledger)
            .field("sealed", &self.key.is_some())
            .field("config", &self.config)
            .finish()
    }
}

impl Fleet {
    /// A fleet of `items.len()` devices (device `i` holds `items[i]`) talking through
    /// `client`.
    ///
    /// # Errors
    ///
    /// [`FleetError::Config`] if there are no devices, or the concurrency or batch is 0 or
    /// the batch exceeds `u32::MAX`.
    pub fn new(
        client: Client,
        items: Vec<String>,
        config: FleetConfig,
    ) -> Result<Self, FleetError> {
        if items.is_empty() {
            return Err(FleetError::Config(
                "no devices: give at least one item".into(),
            ));
        }
        if config.concurrency == 0 {
            return Err(FleetError::Config(
                "concurrency 0: expected at least 1".into(),
            ));
        }
        if config.batch == 0 || u32::try_from(config.batch).is_err() {
            return Err(FleetError::Config(format!(
                "batch {}: expected 1 to {} devices per request",
                config.batch,
                u32::MAX
            )));
        }
        Ok(Self {
            client,
            items: items.into(),
            credentials: None,
            ledger: None,
            key: None,
            seal_first: false,
            config,
        })
    }

    /// The same fleet as devices of a split-trust population: the client is the relay's,
    /// and every device seals each message of its report to `key`, the aggregator's
    /// ([`AggregatorKey::fetch`] or [`AggregatorKey::pinned`]), before it uploads them
    /// (`POST /v1/rounds/{id}/sealed-uploads`).
    pub fn with_aggregator_key(mut self, key: AggregatorKey) -> Self {
        self.key = Some(key);
        self
    }

    /// The same fleet answering and sealing for every device of a round (on every core)
    /// before the round's clock starts and its first check-in, so that the round's uploads
    /// per second and latencies measure the relay, not the devices' sealing (a benchmark; a
    /// device seals as it goes). Only with [`Fleet::with_aggregator_key`].
    pub fn sealing_first(mut self) -> Self {
        self.seal_first = true;
        self
    }

    /// The same fleet keeping `ledger`: before a round of a task it has not answered yet, the
    /// fleet reads the task's whole guarantee and takes part only if the ledger admits it
    /// ([`DeviceLedger::admit`]); every device of a fleet answers the same rounds, so one
    /// ledger stands for each of them. A refused task's rounds are skipped, and a fleet
    /// following only that task stops.
    pub fn with_ledger(mut self, ledger: DeviceLedger) -> Self {
        self.ledger = Some(Mutex::new(ledger));
        self
    }

    /// The devices' ledger as it is now (after [`Fleet::run`], with what they spent).
    pub fn ledger(&self) -> Option<DeviceLedger> {
        self.ledger.as_ref().map(|l| lock(l).clone())
    }

    /// The same fleet with device `i` checking in with `credentials[i]`, its own enrolled
    /// device credential (`tally device enroll`), rather than through the client's
    /// credential relaying for all of them. Each device then holds one token per round; a
    /// batch's uploads go in one request, sent with the batch's first device's credential,
    /// and the fleet reads the open rounds and the tasks' states with device 0's.
    ///
    /// # Errors
    ///
    /// [`FleetError::Config`] if there are fewer credentials than devices.
    pub fn with_credentials(mut self, credentials: Vec<String>) -> Result<Self, FleetError> {
        if credentials.len() < self.items.len() {
            return Err(FleetError::Config(format!(
                "{} credentials for {} devices: enroll one per device (tally device enroll)",
                credentials.len(),
                self.items.len()
            )));
        }
        self.client = self.client.with_token(&credentials[0]);
        self.credentials = Some(credentials.into());
        Ok(self)
    }

    /// Devices in the fleet.
    pub fn devices(&self) -> usize {
        self.items.len()
    }

    /// Takes part in every open round of the followed tasks until they end (finished,
    /// cancelled or failed), or, following every task, until no task is running. Calls
    /// `progress` on the way.
    ///
    /// # Errors
    ///
    /// [`FleetError`] when a request fails on every attempt, the server refuses one for a
    /// reason other than the round closing (such as an unknown `--task`), or a round's query
    /// cannot be answered.
    pub async fn run<F>(&self, mut progress: F) -> Result<FleetReport, FleetError>
    where
        F: FnMut(&FleetEvent<'_>),
    {
        let started = Instant::now();
        if let Some(id) = &self.config.task {
            // Fails early on a task the server does not know.
            self.client.task(id).await?;
        }
        let mut done: HashSet<String> = HashSet::new();
        let mut refused: HashSet<String> = HashSet::new();
        let mut rounds = Vec::new();
        let mut total = RoundTally::new();
        loop {
            if !self.followed_running(&refused).await? {
                break;
            }
            let open: Vec<RoundQuery> = self
                .client
                .open_rounds()
                .await?
                .into_iter()
                .filter(|q| self.config.task.as_ref().is_none_or(|t| *t == q.task_id))
                .filter(|q| !done.contains(&q.round_id) && !refused.contains(&q.task_id))
                .collect();
            if open.is_empty() {
                progress(&FleetEvent::Waiting);
                tokio::time::sleep(self.config.poll_interval).await;
                continue;
            }
            for query in open {
                done.insert(query.round_id.clone());
                if let Err(reason) = self.admit(&query).await? {
                    progress(&FleetEvent::Refused {
                        query: &query,
                        reason: &reason,
                    });
                    refused.insert(query.task_id.clone());
                    continue;
                }
                let (report, tally) = self.run_round(&query, &mut progress).await?;
                progress(&FleetEvent::RoundFinished(&report));
                total.merge(tally);
                rounds.push(report);
            }
        }
        Ok(FleetReport::new(
            self.items.len(),
            &self.config,
            rounds,
            total,
            started.elapsed(),
        ))
    }

    /// Whether the followed task is running, or (following every task) any task is, leaving
    /// out the tasks the ledger refused.
    async fn followed_running(&self, refused: &HashSet<String>) -> Result<bool, FleetError> {
        let running =
            |id: &str, state: TaskState| state == TaskState::Running && !refused.contains(id);
        Ok(match &self.config.task {
            Some(id) => running(id, self.client.task(id).await?.state),
            None => self
                .client
                .tasks()
                .await?
                .iter()
                .any(|t| running(&t.id, t.state)),
        })
    }

    /// Whether the devices' ledger admits the task of `query` (always, without a ledger).
    async fn admit(&self, query: &RoundQuery) -> Result<Result<(), LedgerRefusal>, FleetError> {
        let Some(ledger) = &self.ledger else {
            return Ok(Ok(()));
        };
        let task = self.client.task(&query.task_id).await?;
        Ok(lock(ledger).admit(
            self.client.base_url(),
            &query.population,
            &query.task_id,
            &task.guarantee,
        ))
    }

    /// Every device answers one round, a batch per request, until the round closes.
    async fn run_round<F>(
        &self,
        query: &RoundQuery,
        progress: &mut F,
    ) -> Result<(RoundReport, RoundTally), FleetError>
    where
        F: FnMut(&FleetEvent<'_>),
    {
        let responder = Arc::new(Responder::new(query)?);
        // A device that cannot answer would abstain silently: refuse the round instead.
        if let Some(error) = self
            .items
            .iter()
            .find_map(|item| responder.check(item).err())
        {
            return Err(error.into());
        }
        let round_id: Arc<str> = Arc::from(query.round_id.as_str());
        let sealer = self.key.as_ref().map(|key| Arc::new(key.sealer(query)));
        let round_stream = self.round_stream(query);
        let closed = Arc::new(AtomicBool::new(false));
        let semaphore = Arc::new(Semaphore::new(self.config.concurrency));
        let mut chunks: JoinSet<Result<Chunk, ClientError>> = JoinSet::new();
        let mut tally = RoundTally::new();
        progress(&FleetEvent::RoundStarted {
            query,
            devices: self.items.len(),
        });
        let mut sealed = match (&sealer, self.seal_first) {
            (Some(sealer), true) => self.seal_round(&responder, sealer, round_stream).await,
            _ => Vec::new(),
        }
        .into_iter();
        let started = Instant::now();
        let mut absorb = |done: Result<Result<Chunk, ClientError>, JoinError>,
                          tally: &mut RoundTally|
         -> Result<(), FleetError> {
            let chunk = done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
            if chunk.devices > 0 {
                progress(&FleetEvent::Uploaded {
                    round_id: &round_id,
                    devices: chunk.devices as usize,
                });
            }
            tally.absorb(&chunk);
            Ok(())
        };
        for (index, start) in (0..self.items.len()).step_by(self.config.batch).enumerate() {
            // Unwrap safety: the semaphore is never closed.
            let permit = Arc::clone(&semaphore)
                .acquire_owned()
                .await
                .expect("semaphore open");
            while let Some(done) = chunks.try_join_next() {
                absorb(done, &mut tally)?;
            }
            if closed.load(Ordering::Relaxed) {
                break;
            }
            let end = (start + self.config.batch).min(self.items.len());
            let work = ChunkWork {
                client: self.client.clone(),
                credentials: self.credentials.clone(),
                round_id: Arc::clone(&round_id),
                items: Arc::clone(&self.items),
                range: start..end,
                responder: Arc::clone(&responder),
                sealer: sealer.clone(),
                sealed: sealed.next(),
                closed: Arc::clone(&closed),
                rng: chunk_rng(round_stream, index),
            };
            chunks.spawn(work.run(permit));
        }
        while let Some(done) = chunks.join_next().await {
            absorb(done, &mut tally)?;
        }
        let report = RoundReport::new(query, &tally, started.elapsed());
        Ok((report, tally))
    }

    /// Every batch's devices' sealed messages for the round, in batch order: each batch
    /// answered with its own coins ([`chunk_rng`], as it would be in the round) and sealed,
    /// the batches spread over the machine's cores.
    async fn seal_round(
        &self,
        responder: &Arc<Responder>,
        sealer: &Arc<RoundSealer>,
        round_stream: Option<(u64, u64)>,
    ) -> Vec<Vec<Vec<String>>> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let cores = Arc::new(Semaphore::new(cores));
        let mut sealing = JoinSet::new();
        for (index, start) in (0..self.items.len()).step_by(self.config.batch).enumerate() {
            // Unwrap safety: the semaphore is never closed.
            let core = Arc::clone(&cores)
                .acquire_owned()
                .await
                .expect("semaphore open");
            let end = (start + self.config.batch).min(self.items.len());
            let (items, responder, sealer) = (
                Arc::clone(&self.items),
                Arc::clone(responder),
                Arc::clone(sealer),
            );
            sealing.spawn_blocking(move || {
                let _core = core;
                let mut rng = chunk_rng(round_stream, index);
                (
                    index,
                    seal_batch(&items[start..end], &responder, &sealer, &mut rng),
                )
            });
        }
        let mut batches = Vec::new();
        while let Some(done) = sealing.join_next().await {
            batches.push(done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
        }
        batches.sort_unstable_by_key(|(index, _)| *index);
        batches.into_iter().map(|(_, sealed)| sealed).collect()
    }

    /// What a seeded fleet's coins in the round of `query` start from: the seed and a stream
    /// id from what the round asks (its population, its query, its place in its task), never
    /// from the ids the server draws, so that a seeded fleet repeats its coins, and so its
    /// release, from one server to the next. `None` for fresh coins.
    fn round_stream(&self, query: &RoundQuery) -> Option<(u64, u64)> {
        let seed = self.config.seed?;
        // Unwrap safety: a query is strings and numbers, which always serialize.
        let ask = serde_json::to_vec(&query.ask).expect("queries serialize");
        let mut stream = fnv1a_extend(fnv1a(query.population.as_bytes()), &ask);
        for word in [u64::from(query.round), u64::from(query.attempt)] {
            stream = fnv1a_extend(stream, &word.to_le_bytes());
        }
        Some((seed, stream))
    }
}

/// The coins of the devices of batch `index` of a round: fresh, or seeded from the round's
/// [`Fleet::round_stream`].
fn chunk_rng(round: Option<(u64, u64)>, index: usize) -> ChaCha20Rng {
    match round {
        None => device_rng(None),
        Some((seed, stream)) => {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(fnv1a_extend(stream, &(index as u64).to_le_bytes()));
            rng
        }
    }
}

/// One batch of devices' work in a round.
struct ChunkWork {
    client: Client,
    credentials: Option<Arc<[String]>>,
    round_id: Arc<str>,
    items: Arc<[String]>,
    range: std::ops::Range<usize>,
    responder: Arc<Responder>,
    /// Seals the devices' messages, in a split-trust population.
    sealer: Option<Arc<RoundSealer>>,
    /// The devices' messages, answered and sealed before the round's clock started.
    sealed: Option<Vec<Vec<String>>>,
    closed: Arc<AtomicBool>,
    rng: ChaCha20Rng,
}

/// What one batch did.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    /// Devices that checked in.
    pub(crate) devices: u64,
    /// Reports accepted.
    pub(crate) reports: u64,
    /// Abstentions accepted.
    pub(crate) abstentions: u64,
    /// Uploads refused, by code.
    pub(crate) rejected: Vec<ErrorCode>,
    /// How long each answered upload request took, retries included: one request for the
    /// batch, or one per device with enrolled credentials.
    pub(crate) latencies: Vec<Duration>,
}

impl ChunkWork {
    /// Checks the batch's devices in, answers for each, and uploads: one request each. A
    /// closed round ends the work quietly and tells the other batches.
    async fn run(mut self, _permit: OwnedSemaphorePermit) -> Result<Chunk, ClientError> {
        let mut chunk = Chunk::default();
        if self.closed.load(Ordering::Relaxed) {
            return Ok(chunk);
        }
        let over = |error: ClientError, closed: &AtomicBool| {
            if error.round_is_over() {
                closed.store(true, Ordering::Relaxed);
                Ok(())
            } else {
                Err(error)
            }
        };
        let tokens = match self.check_in().await {
            Ok(tokens) => tokens,
            Err(error) => return over(error, &self.closed).map(|()| chunk),
        };
        let (sent, reported) = self.upload(tokens).await;
        chunk.devices = reported.len() as u64;
        let (receipt, latencies) = match sent {
            Ok(answered) => answered,
            Err(error) => return over(error, &self.closed).map(|()| chunk),
        };
        chunk.latencies = latencies;
        let mut refused = vec![false; reported.len()];
        for rejection in &receipt.rejected {
            if let Some(slot) = refused.get_mut(rejection.index as usize) {
                *slot = true;
            }
            // A round that reached its cohort target while the batch was on its way refuses
            // the rest as closed: the round is over, and those devices were not refused for
            // what they sent.
            if rejection.code == ErrorCode::ClosedRound {
                self.closed.store(true, Ordering::Relaxed);
            } else {
                chunk.rejected.push(rejection.code);
            }
        }
        for (reported, refused) in reported.into_iter().zip(refused) {
            match (refused, reported) {
                (true, _) => {}
                (false, true) => chunk.reports += 1,
                (false, false) => chunk.abstentions += 1,
            }
        }
        Ok(chunk)
    }
}

impl ChunkWork {
    /// The batch's upload tokens: each enrolled device checks in for itself, or the client's
    /// credential relays for the whole batch in one request.
    async fn check_in(&self) -> Result<Vec<String>, ClientError> {
        let Some(credentials) = &self.credentials else {
            // Unwrap safety: batches are at most u32::MAX devices (checked by Fleet::new).
            let wanted = u32::try_from(self.range.len()).expect("batch fits u32");
            return Ok(self.client.check_in(&self.round_id, wanted).await?.tokens);
        };
        let mut tokens = Vec::with_capacity(self.range.len());
        for credential in &credentials[self.range.clone()] {
            let device = self.client.clone().with_token(credential);
            tokens.extend(device.check_in(&self.round_id, 1).await?.tokens);
        }
        Ok(tokens)
    }

    /// Answers for the batch's devices, one per token, and uploads their answers
    /// ([`Self::send`]; each message sealed, in a split-trust population): the receipt and how
    /// long each request took, and which device reported (rather than abstained).
    async fn upload(
        &mut self,
        tokens: Vec<String>,
    ) -> (
        Result<(UploadReceipt, Vec<Duration>), ClientError>,
        Vec<bool>,
    ) {
        let items = &self.items[self.range.clone()];
        let round = self.round_id.clone();
        match &self.sealer {
            None => {
                let uploads: Vec<Upload> = tokens
                    .into_iter()
                    .zip(items)
                    .map(|(token, item)| Upload {
                        token,
                        report: self.responder.respond_with_rng(item, &mut self.rng),
                    })
                    .collect();
                let reported = uploads.iter().map(|u| u.report.is_some()).collect();
                let answer = self
                    .send(uploads, |client, batch| {
                        let round = round.clone();
                        async move { client.upload(&round, &batch).await }
                    })
                    .await;
                (answer, reported)
            }
            Some(sealer) => {
                let sealed = match self.sealed.take() {
                    Some(sealed) => sealed,
                    // Sealing is CPU work: off the async workers, so that the requests of
                    // other batches in flight are not held up (and made to time out).
                    None => {
                        let (items, range) = (Arc::clone(&self.items), self.range.clone());
                        let (responder, sealer) = (Arc::clone(&self.responder), Arc::clone(sealer));
                        let mut rng = self.rng.clone();
                        let (sealed, rng) = tokio::task::spawn_blocking(move || {
                            let sealed = seal_batch(&items[range], &responder, &sealer, &mut rng);
                            (sealed, rng)
                        })
                        .await
                        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                        self.rng = rng;
                        sealed
                    }
                };
                let uploads: Vec<SealedUpload> = tokens
                    .into_iter()
                    .zip(sealed)
                    .map(|(token, messages)| SealedUpload { token, messages })
                    .collect();
                let reported = uploads.iter().map(|u| !u.messages.is_empty()).collect();
                let answer = self
                    .send(uploads, |client, batch| {
                        let round = round.clone();
                        async move { client.upload_sealed(&round, &batch).await }
                    })
                    .await;
                (answer, reported)
            }
        }
    }

    /// Sends the batch's `uploads` with `send`: in one request through the client's
    /// credential, or, with enrolled credentials, each with its own device's credential (a
    /// token is good only in the hands of the credential that checked in), one request each,
    /// the receipts joined in the batch's order. The receipt and how long each request took;
    /// once the round is over the uploads not yet sent are refused as closed.
    async fn send<U, F, Fut>(
        &self,
        uploads: Vec<U>,
        send: F,
    ) -> Result<(UploadReceipt, Vec<Duration>), ClientError>
    where
        F: Fn(Client, Vec<U>) -> Fut,
        Fut: Future<Output = Result<UploadReceipt, ClientError>>,
    {
        let Some(credentials) = &self.credentials else {
            let sent = Instant::now();
            let receipt = send(self.client.clone(), uploads).await?;
            return Ok((receipt, vec![sent.elapsed()]));
        };
        let mut joined = UploadReceipt {
            accepted: 0,
            rejected: Vec::new(),
        };
        let mut latencies = Vec::with_capacity(uploads.len());
        let mut over = false;
        let devices = credentials[self.range.clone()].iter();
        for ((index, upload), credential) in (0_u32..).zip(uploads).zip(devices) {
            if !over {
                let sent = Instant::now();
                match send(self.client.clone().with_token(credential), vec![upload]).await {
                    Ok(receipt) => {
                        latencies.push(sent.elapsed());
                        joined.accepted += receipt.accepted;
                        joined.rejected.extend(
                            receipt
                                .rejected
                                .into_iter()
                                .map(|rejection| Rejection { index, ..rejection }),
                        );
                        continue;
                    }
                    Err(error) if error.round_is_over() && index > 0 => over = true,
                    Err(error) => return Err(error),
                }
            }
            joined.rejected.push(Rejection {
                index,
                code: ErrorCode::ClosedRound,
            });
        }
        Ok((joined, latencies))
    }
}

/// The sealed messages of devices holding `items`, each answered by `responder` with coins
/// from `rng` and sealed by `sealer`.
fn seal_batch(
    items: &[String],
    responder: &Responder,
    sealer: &RoundSealer,
    rng: &mut ChaCha20Rng,
) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|item| {
            let messages = responder
                .respond_messages_with_rng(item, rng)
                .unwrap_or_default();
            sealer.seal(messages)
        })
        .collect()
}

fn lock(ledger: &Mutex<DeviceLedger>) -> std::sync::MutexGuard<'_, DeviceLedger> {
    // The ledger is only replaced whole under the lock: a poisoned one is still consistent.
    ledger
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`: a stable (toolchain-independent) hash for deriving seeded streams.
fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_extend(FNV_OFFSET, bytes)
}

fn fnv1a_extend(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}
