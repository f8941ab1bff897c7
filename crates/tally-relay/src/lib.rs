//! tally's relay: the party of a split-trust deployment that knows who sent a report but not
//! what it says.
//!
//! A relay is its own service, run by another organisation than the aggregator (`tally
//! serve`): its own process, database (SQLite by default, or PostgreSQL), TLS certificate and
//! credentials. Devices are enrolled at the relay and authenticate there; they read the
//! aggregator's open rounds from the relay (republished verbatim), check in for one upload
//! token per round, and upload their reports sealed to the aggregator's key (HPKE), which
//! they fetch from the aggregator, never from the relay. The relay holds a round's sealed
//! uploads in memory until the round closes at its side (the aggregator's deadline less a
//! margin, or earlier once it holds its pool), then picks the cohort, flips the
//! sample-and-threshold coins, permutes every message and sends the aggregator one
//! [`RelayedBatch`](tally_messages::RelayedBatch) with its `relay` credential, and forgets the
//! round's messages.
//!
//! | method and path | body | answer |
//! | --- | --- | --- |
//! | `GET /v1/rounds` | | `[RoundQuery]`, the aggregator's, verbatim |
//! | `POST /v1/rounds/{id}/check-in` | [`CheckIn`](tally_messages::CheckIn) | [`CheckInGrant`](tally_messages::CheckInGrant) |
//! | `POST /v1/rounds/{id}/sealed-uploads` | [`SealedUploadBatch`](tally_messages::SealedUploadBatch) | [`UploadReceipt`](tally_messages::UploadReceipt) |
//! | `GET /v1/tasks`, `GET /v1/tasks/{id}` | | the aggregator's [`TaskInfo`](tally_messages::TaskInfo) of the caller's population |
//! | `POST /v1/populations/{name}/devices` | [`DeviceEnrollment`](tally_messages::DeviceEnrollment) | [`EnrolledDevices`](tally_messages::EnrolledDevices) (201) |
//!
//! # Privacy
//!
//! The relay never holds a plaintext: it checks a sealed message's alphabet and length and
//! nothing else, keeps it in memory only, and never writes, logs or echoes it. Its cohort,
//! coins and permutation ([`cohort`](crate::Relay) below) are exact draws from its own secret
//! randomness (the operating system's CSPRNG; a test alone can fix it through
//! [`Relay::start_seeded`]). What reaches the aggregator names no device, credential, address,
//! arrival order or time: one batch per round, after the round closed at the relay. The
//! relay forwards nothing from a cohort below the round's minimum, and no relaying credential
//! (an operator's, checking in many devices) fills more than its cap of a cohort. The
//! guarantee printed by the aggregator for a `split` task holds against the relay and the
//! aggregator apart, not against both colluding (`docs/federated/threat-model.md`).
#![forbid(unsafe_code)]

mod cohort;
mod error;
mod http;
mod round;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tally_client::Client;
use tally_server::service::{self, AggregatorCoins, Credentials, HostPolicy, Replica};
use tally_server::{Limits, Replication, Tls};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::info;

pub use error::RelayError;
use state::State;

/// The default database of a relay: a SQLite file in the working directory.
pub const DEFAULT_DB: &str = "sqlite://relay.db";

/// How a relay runs its rounds.
#[derive(Clone, Debug)]
pub struct RelayOptions {
    /// The aggregator, with the relay's credential there (of role `relay`).
    pub aggregator: Client,
    /// How long before a round's deadline the relay stops taking uploads and forwards, so
    /// that its batch reaches the aggregator in time. A round whose deadline is nearer than
    /// this when the relay first sees it is not relayed.
    pub forward_margin: Duration,
    /// How many uploads the relay holds for a round, as a multiple of its cohort target (at
    /// least 1): once it holds that many it closes the round early and picks the cohort
    /// uniformly among them; past it uploads are refused as closed.
    pub cohort_pool: f64,
    /// The most devices one relaying credential (an operator checking in many devices at
    /// once) contributes to a round's cohort; a device's own credential contributes one.
    pub max_per_credential: u64,
    /// How often the relay lists the aggregator's open rounds.
    pub poll_interval: Duration,
    /// How the relay shares a PostgreSQL database with other replicas of it: each of the
    /// aggregator's rounds is held by one replica, under a lease of this duration, and the
    /// others forward it the round's check-ins and uploads.
    pub replication: Replication,
}

impl RelayOptions {
    /// Options relaying to `aggregator`: a margin of 10 s, a pool of twice the cohort target,
    /// at most 10,000 devices per relaying credential, the aggregator's rounds listed every
    /// 250 ms, and leases of 10 s among replicas.
    pub fn new(aggregator: Client) -> Self {
        Self {
            aggregator,
            forward_margin: Duration::from_secs(10),
            cohort_pool: 2.0,
            max_per_credential: 10_000,
            poll_interval: Duration::from_millis(250),
            replication: Replication::default(),
        }
    }

    fn check(&self) -> Result<(), RelayError> {
        if !(self.cohort_pool.is_finite() && self.cohort_pool >= 1.0) {
            return Err(RelayError::Invalid(format!(
                "cohort pool {}: at least 1 (the relay picks the cohort among that many times \
                 its target)",
                self.cohort_pool
            )));
        }
        if self.max_per_credential == 0 {
            return Err(RelayError::Invalid(
                "max per credential 0: at least 1 device per relaying credential".into(),
            ));
        }
        if self.poll_interval.is_zero() {
            return Err(RelayError::Invalid(
                "poll interval 0: the relay lists the aggregator's rounds at most every 1 ms"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// How to run `tally relay serve`.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The bounds on connections and requests.
    pub limits: Limits,
    /// The certificate and key the listener serves TLS with; `None` for plain HTTP.
    pub tls: Option<Tls>,
    /// Allows plain HTTP on an address other than loopback.
    pub insecure_http: bool,
    /// The database URL (`sqlite://FILE` or `postgres://...`); `None` for [`DEFAULT_DB`].
    pub db: Option<String>,
    /// How the relay runs its rounds.
    pub options: RelayOptions,
}

/// A started relay: its state, and the background work following the aggregator's rounds,
/// closing its own and keeping its credentials in step with its database.
pub struct Relay {
    state: Arc<State>,
    background: Vec<JoinHandle<()>>,
}

impl Relay {
    /// Opens the database at `db` (creating a SQLite file if needed) and starts following
    /// the aggregator's rounds. Must run inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`RelayError`] if the options are invalid or the database cannot be opened.
    pub async fn start(
        db: &str,
        limits: &Limits,
        options: RelayOptions,
    ) -> Result<Self, RelayError> {
        Self::start_coins(db, limits, options, AggregatorCoins::Os).await
    }

    /// [`Relay::start`], for tests: the relay's cohorts, sampling coins and permutations come
    /// from a ChaCha20 stream seeded with `seed` rather than from the operating system.
    ///
    /// # Privacy
    ///
    /// The relay's draws defend the devices only while they are secret: whoever knows the
    /// seed knows which devices each cohort holds, which were sampled and which message is
    /// whose. `tally relay serve` and [`serve`] never call this; it is for in-process tests
    /// alone.
    ///
    /// # Errors
    ///
    /// As [`Relay::start`].
    pub async fn start_seeded(
        db: &str,
        limits: &Limits,
        options: RelayOptions,
        seed: u64,
    ) -> Result<Self, RelayError> {
        Self::start_coins(db, limits, options, AggregatorCoins::seeded(seed)).await
    }

    async fn start_coins(
        db: &str,
        limits: &Limits,
        options: RelayOptions,
        coins: AggregatorCoins,
    ) -> Result<Self, RelayError> {
        options.check()?;
        let credentials = Credentials::open(db, limits).await?;
        let replica = Replica::new("relay", &options.replication);
        let state = Arc::new(State::new(credentials, replica, options, coins));
        state.renew().await;
        let mut background = Vec::new();
        let following = Arc::clone(&state);
        background.push(tokio::spawn(async move {
            let mut follow = tokio::time::interval(following.poll_interval());
            follow.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut renew = tokio::time::interval(following.replica.tick());
            renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = follow.tick() => following.follow().await,
                    _ = renew.tick() => following.renew().await,
                }
            }
        }));
        let closing = Arc::clone(&state);
        background.push(tokio::spawn(async move {
            let mut interval = tokio::time::interval(CLOSE_TICK);
            loop {
                interval.tick().await;
                closing.close_due().await;
            }
        }));
        let polling = Arc::clone(&state);
        background.push(tokio::spawn(async move {
            let mut interval = tokio::time::interval(service::CREDENTIALS_POLL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                polling.credentials.refresh().await;
            }
        }));
        Ok(Self { state, background })
    }

    /// The relay's HTTP API, answering to the hosts `hosts` allows.
    pub fn router(&self, hosts: HostPolicy) -> Router {
        http::router(Arc::clone(&self.state), hosts)
    }

    /// Serves the API on `listener` (over TLS with `tls`) within `limits` until `shutdown`
    /// resolves; on a loopback address it answers only to the loopback names of its port.
    /// The other replicas reach this one at the configured address, or at the listener's.
    ///
    /// # Errors
    ///
    /// [`RelayError::Io`] if the listener's address cannot be read.
    pub async fn serve(
        &self,
        listener: TcpListener,
        tls: Option<Tls>,
        limits: &Limits,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), RelayError> {
        let address = listener.local_addr()?;
        let chain = tls.as_ref().map(Tls::chain).unwrap_or_default();
        self.state.replica.advertise(address, chain)?;
        // The other replicas learn the address now, not at the next renewal.
        self.state.renew().await;
        let router = self.router(HostPolicy::for_listener(address));
        service::serve(listener, router, tls, limits, shutdown).await;
        Ok(())
    }

    /// Stops following the aggregator, drops every round's uploads unforwarded (nothing is
    /// kept: another replica takes the rounds over, or the aggregator runs them again), lets
    /// this replica's leases lapse and closes the database.
    pub async fn shutdown(self) {
        for task in &self.background {
            task.abort();
        }
        self.state.leave().await;
        // A request still in flight may hold the state: the database then closes with it.
        if let Ok(state) = Arc::try_unwrap(self.state) {
            state.credentials.close().await;
        }
    }
}

/// How often the relay looks for rounds to close.
const CLOSE_TICK: Duration = Duration::from_millis(100);

/// Runs a relay until Ctrl-C or SIGTERM, then stops taking requests, lets the ones in flight
/// finish, and shuts down (the rounds it held are not forwarded).
///
/// # Errors
///
/// [`RelayError`] if plain HTTP would be served beyond loopback, the options are invalid, or
/// the database cannot be opened or the address bound.
pub async fn serve(config: RelayConfig) -> Result<(), RelayError> {
    service::refuse_plain_http(config.tls.is_some(), config.insecure_http, [config.listen])?;
    let db = config.db.as_deref().unwrap_or(DEFAULT_DB);
    config
        .options
        .replication
        .check_reachable(db, config.listen)?;
    let relay = Relay::start(db, &config.limits, config.options.clone()).await?;
    let listener = TcpListener::bind(config.listen).await?;
    info!(address = %listener.local_addr()?, db = %service::redacted(db),
          tls = config.tls.is_some(), aggregator = %config.options.aggregator.base_url(),
          "relaying");
    relay
        .serve(
            listener,
            config.tls,
            &config.limits,
            service::shutdown_signal(),
        )
        .await?;
    info!("shutting down");
    relay.shutdown().await;
    Ok(())
}

/// Enrolls `count` devices of `population` in the relay's database at `db` (created if
/// needed), without a running relay: one device credential each, returned as their tokens
/// (shown this once; the database keeps only their hashes). The population is the
/// aggregator's: the relay checks only its name.
///
/// # Errors
///
/// [`RelayError::Invalid`] for a count outside 1 to 10 000 or an invalid name,
/// [`RelayError`] if the database fails.
pub async fn enroll_devices(
    db: &str,
    population: &str,
    count: u32,
) -> Result<Vec<String>, RelayError> {
    Ok(service::enroll_devices(db, population, count).await?)
}
