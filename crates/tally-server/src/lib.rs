//! tally's federated server: tasks, rounds, a secure aggregator and a privacy-budget ledger.
//!
//! The server runs tally-core's mechanisms and multi-round tasks over devices that answer
//! through HTTP (the protocol is tally-messages). It publishes each round's query, hands every
//! device that checks in a single-use upload token, takes exactly one report or abstention per
//! token, sums the reports in memory inside the aggregator (raw reports are never written to
//! disk), and releases a round only through the mechanism's release rule and only with at
//! least the minimum cohort. Tasks, round states, releases and the ledger are durable (SQLite
//! or PostgreSQL); the ledger's debit is committed with the first release, before anything of
//! it can be read, and a stored result is served byte for byte, never recomputed.
//!
//! # Privacy
//!
//! A task's guarantee is computed from its parameters by tally-accounting when it is created,
//! and a task whose guarantee does not fit in what the population's budget has left (basic
//! composition across tasks) is refused. By default the aggregator flips the
//! sample-and-threshold coins itself, with its own secret randomness, over the reports every
//! enrolled device uploads, so dishonest devices cannot choose to be sampled; a task may ask
//! its devices to flip them (`sampling: device`), which assumes honest devices. The guarantee
//! holds against the analyst and anyone who reads the releases; the server process itself
//! sees the reports it aggregates and which of them it (or, device-side, the devices)
//! sampled (the secure aggregator is a trust boundary, not cryptography). Every request but
//! `/healthz` carries a bearer credential of one role (operator, analyst, device) that the
//! server checks against a SHA-256 hash it stores.
#![forbid(unsafe_code)]

mod aggregator;
mod auth;
mod console;
mod error;
mod http;
mod keys;
mod ledger;
mod metrics;
mod population;
mod rate;
mod replica;
mod round;
mod runtime;
pub mod service;
mod shuffler;
mod store;
mod tls;
mod transport;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use aggregator::AggregatorCoins;
use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::info;

pub use console::ConsoleSessions;
pub use error::ServerError;
use http::HostPolicy;
pub use keys::DEFAULT_KEY_GRACE;
pub use replica::Replication;
use runtime::Runtime;
pub(crate) use service::redacted;
use store::Store;
use tally_messages::{
    CredentialInfo, CredentialSpec, IssuedCredential, PopulationInfo, PopulationSpec, TrustModel,
};
pub use tls::Tls;
pub use transport::Limits;

/// How often the server looks for rounds past their deadline.
const DEADLINE_TICK: Duration = Duration::from_millis(200);

/// How to run `tally serve`.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The operator's address for `/metrics`, which the API's listener does not serve; `None`
    /// serves no metrics.
    pub metrics_listen: Option<SocketAddr>,
    /// The bounds on connections and requests.
    pub limits: Limits,
    /// The certificate and key both listeners serve TLS with; `None` for plain HTTP.
    pub tls: Option<Tls>,
    /// Allows plain HTTP on an address other than loopback (reports and credentials then
    /// cross the network in clear).
    pub insecure_http: bool,
    /// The database URL (`sqlite://FILE` or `postgres://...`); `None` for the SQLite file
    /// `tally.db` in the working directory, created on first start.
    pub db: Option<String>,
    /// When the console's sign-ins end.
    pub console_sessions: ConsoleSessions,
    /// How this server shares a PostgreSQL database with other replicas.
    pub replication: Replication,
}

/// The default database: a SQLite file in the working directory.
pub const DEFAULT_DB: &str = "sqlite://tally.db";

/// A started server: its state, and the background work closing rounds at their deadlines.
pub struct Server {
    runtime: Arc<Runtime>,
    ticker: JoinHandle<()>,
    /// Polls the database for credentials changed beside the server.
    credential_poller: JoinHandle<()>,
    /// Reads the HPKE keys again, for rotations made beside the server and retired keys.
    key_poller: JoinHandle<()>,
    /// Renews this replica's task leases, takes lapsed ones, and reads the others' rounds.
    lease_ticker: JoinHandle<()>,
    /// A SQLite database's one-writer lock, held until the server shuts down (PostgreSQL
    /// takes many replicas, which share the tasks through their leases).
    lease: Option<store::WriterLease>,
    /// When the console's sign-ins end.
    console_sessions: ConsoleSessions,
}

impl Server {
    /// Opens the database at `db` (creating a SQLite file if needed), restores its tasks
    /// (aborting rounds a crash cut short and running them again) and starts closing rounds
    /// at their deadlines. Must run inside a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database cannot be opened or its state restored.
    pub async fn start(db: &str) -> Result<Self, ServerError> {
        Self::start_with(db, &Limits::default()).await
    }

    /// [`Server::start`] with the given bounds on requests.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database cannot be opened or its state restored.
    pub async fn start_with(db: &str, limits: &Limits) -> Result<Self, ServerError> {
        Self::start_replica(db, limits, &Replication::default()).await
    }

    /// [`Server::start_with`], sharing a PostgreSQL database with other replicas as
    /// `replication` says (on SQLite, a second server refuses to start).
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database cannot be opened or its state restored.
    pub async fn start_replica(
        db: &str,
        limits: &Limits,
        replication: &Replication,
    ) -> Result<Self, ServerError> {
        Self::start_coins(db, limits, AggregatorCoins::Os, replication).await
    }

    /// [`Server::start_with`], for tests: the aggregator's sampling coins come from a
    /// ChaCha20 stream seeded with `seed` rather than from the operating system, so that a
    /// test opening the same rounds and absorbing the same reports in the same order gets the
    /// same releases.
    ///
    /// # Privacy
    ///
    /// Aggregator-side sampling defends against dishonest devices only while the coins are
    /// secret: whoever knows the seed knows which reports each round keeps. `tally serve` and
    /// [`serve`] never call this (a deployment cannot reach it through any option or
    /// variable); it is for in-process tests alone.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database cannot be opened or its state restored.
    pub async fn start_seeded(db: &str, limits: &Limits, seed: u64) -> Result<Self, ServerError> {
        Self::start_coins(
            db,
            limits,
            AggregatorCoins::seeded(seed),
            &Replication::default(),
        )
        .await
    }

    async fn start_coins(
        db: &str,
        limits: &Limits,
        coins: AggregatorCoins,
        replication: &Replication,
    ) -> Result<Self, ServerError> {
        let store = Store::open(db).await?;
        let lease = match store.shared() {
            true => None,
            false => Some(Store::lease(db)?),
        };
        let runtime = Runtime::start(store, limits, coins, replication).await?;
        let leasing = Arc::clone(&runtime);
        let lease_ticker = tokio::spawn(async move {
            let mut interval = tokio::time::interval(leasing.lease_tick());
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is now, and starting did its work.
            interval.tick().await;
            loop {
                interval.tick().await;
                leasing.lease_tick_logged().await;
            }
        });
        let ticking = Arc::clone(&runtime);
        let ticker = tokio::spawn(async move {
            let mut interval = tokio::time::interval(DEADLINE_TICK);
            loop {
                interval.tick().await;
                ticking.close_due().await;
            }
        });
        let polling = Arc::clone(&runtime);
        let credential_poller = tokio::spawn(async move {
            let mut interval = tokio::time::interval(auth::CREDENTIALS_POLL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                polling.refresh_credentials().await;
            }
        });
        let reading = Arc::clone(&runtime);
        let key_poller = tokio::spawn(async move {
            let mut interval = tokio::time::interval(keys::KEYS_POLL);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                reading.refresh_keys().await;
            }
        });
        Ok(Self {
            runtime,
            ticker,
            credential_poller,
            key_poller,
            lease_ticker,
            lease,
            console_sessions: ConsoleSessions::default(),
        })
    }

    /// The server, its console's sign-ins ending as `sessions` says (by default, as
    /// [`ConsoleSessions::default`]).
    #[must_use]
    pub fn with_console_sessions(self, sessions: ConsoleSessions) -> Self {
        Self {
            console_sessions: sessions,
            ..self
        }
    }

    /// The HTTP API and the operator's console (over plain HTTP), answering to any `Host`.
    pub fn router(&self) -> Router {
        http::router(
            Arc::clone(&self.runtime),
            HostPolicy::Any,
            false,
            self.console_sessions,
        )
    }

    /// The operator's `/metrics` (an operator credential required), for a listener of its
    /// own: [`Server::router`] does not serve it.
    pub fn metrics_router(&self) -> Router {
        http::metrics_router(Arc::clone(&self.runtime))
    }

    /// The HTTP API as served on `listen`: on a loopback address it answers only to the
    /// loopback names of that port, so that a web page whose name was rebound to 127.0.0.1
    /// reaches nothing.
    pub fn router_for(&self, listen: SocketAddr) -> Router {
        self.served_router(listen, false)
    }

    /// [`Server::router_for`], over TLS if `tls`.
    fn served_router(&self, listen: SocketAddr, tls: bool) -> Router {
        let hosts = HostPolicy::for_listener(listen);
        http::router(Arc::clone(&self.runtime), hosts, tls, self.console_sessions)
    }

    /// Stops closing rounds, closes the open ones unreleased (they run again on another
    /// replica, or after the next start), lets its task leases lapse and closes the database.
    pub async fn shutdown(self) {
        self.ticker.abort();
        self.credential_poller.abort();
        self.key_poller.abort();
        self.lease_ticker.abort();
        // The lease goes with the last connection: a next server may start.
        let lease = self.lease;
        self.runtime.shutdown().await;
        drop(lease);
    }
}

/// Runs the server until Ctrl-C or SIGTERM, then stops taking requests, lets the ones in
/// flight finish, and shuts down.
///
/// # Errors
///
/// [`ServerError`] if the database cannot be opened or an address not bound.
pub async fn serve(config: ServeConfig) -> Result<(), ServerError> {
    service::refuse_plain_http(
        config.tls.is_some(),
        config.insecure_http,
        std::iter::once(config.listen).chain(config.metrics_listen),
    )?;
    let db = config.db.as_deref().unwrap_or(DEFAULT_DB);
    config.replication.check_reachable(db, config.listen)?;
    let server = Server::start_replica(db, &config.limits, &config.replication)
        .await?
        .with_console_sessions(config.console_sessions);
    let api = TcpListener::bind(config.listen).await?;
    info!(address = %api.local_addr()?, db = %redacted(db), tls = config.tls.is_some(), "serving");
    let metrics = match config.metrics_listen {
        Some(address) => {
            let listener = TcpListener::bind(address).await?;
            info!(address = %listener.local_addr()?, "serving /metrics");
            Some(listener)
        }
        None => None,
    };
    let listeners = Listeners {
        api,
        metrics,
        tls: config.tls,
    };
    server
        .serve(listeners, &config.limits, service::shutdown_signal())
        .await?;
    info!("shutting down");
    server.shutdown().await;
    Ok(())
}

/// Enrolls `count` devices of the provisioned population `population` in the database at
/// `db`, without a running server: one device credential each, returned as their tokens
/// (shown this once; the database keeps only their hashes). A device credential answers only
/// its population's rounds and holds at most one upload token per round.
///
/// # Errors
///
/// [`ServerError::Invalid`] for an unknown population or a count outside 1 to 10 000,
/// [`ServerError`] if the database fails.
pub async fn enroll_devices(
    db: &str,
    population: &str,
    count: u32,
) -> Result<Vec<String>, ServerError> {
    auth::check_enrollment(count).map_err(ServerError::Invalid)?;
    let store = Store::open(db).await?;
    let enrolled = match store.population(population).await {
        Ok(Some(p)) if p.trust == TrustModel::Split => {
            Err(ServerError::Invalid(population::split_devices(population)))
        }
        Ok(Some(_)) => auth::enroll(&store, None, population, count, runtime::unix_now()).await,
        Ok(None) => Err(ServerError::Invalid(format!(
            "no population {population:?}: create it first (tally population create), or, \
             for a relay's database, enroll with --relay"
        ))),
        Err(e) => Err(e),
    };
    store.close().await;
    enrolled
}

/// Where a [`Server`] serves.
#[derive(Debug)]
pub struct Listeners {
    /// The API's listener.
    pub api: TcpListener,
    /// The operator's listener for `/metrics`, if any.
    pub metrics: Option<TcpListener>,
    /// TLS on both listeners, or plain HTTP.
    pub tls: Option<Tls>,
}

impl Server {
    /// Serves the API and `/metrics` on the `listeners` within `limits` until `shutdown`
    /// resolves, then stops accepting connections and lets the requests in flight finish
    /// (for at most the limits' grace period). The server itself keeps running: call
    /// [`Server::shutdown`] next.
    ///
    /// # Errors
    ///
    /// [`ServerError::Io`] if a listener's address cannot be read.
    pub async fn serve(
        &self,
        listeners: Listeners,
        limits: &Limits,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServerError> {
        let Listeners { api, metrics, tls } = listeners;
        let address = api.local_addr()?;
        let chain = tls.as_ref().map(Tls::chain).unwrap_or_default();
        self.runtime.replica().advertise(address, chain)?;
        let (stop, stopping) = tokio::sync::watch::channel(false);
        let router = self.served_router(api.local_addr()?, tls.is_some());
        let api = transport::serve(api, router, tls.clone(), limits, stopping.clone());
        let metrics = async {
            if let Some(listener) = metrics {
                let router = self.metrics_router();
                transport::serve(listener, router, tls, limits, stopping).await;
            }
        };
        let signal = async {
            shutdown.await;
            // Both listeners stop; an error means they stopped already.
            stop.send(true).ok();
        };
        tokio::join!(api, metrics, signal);
        Ok(())
    }
}

/// Creates a credential in the database at `db` (creating the database if needed), without a
/// running server: this is how the first operator credential is made. The token in the
/// answer is shown this once; the database keeps only its hash.
///
/// # Errors
///
/// [`ServerError::Invalid`] for a credential the roles do not allow, [`ServerError`] if the
/// database fails.
pub async fn create_credential(
    db: &str,
    spec: &CredentialSpec,
) -> Result<IssuedCredential, ServerError> {
    auth::check_spec(spec).map_err(ServerError::Invalid)?;
    let store = Store::open(db).await?;
    let issued = match population::check_credential_populations(&store, spec).await {
        Ok(Ok(())) => auth::issue(&store, None, spec, runtime::unix_now()).await,
        Ok(Err(why)) => Err(ServerError::Invalid(why)),
        Err(e) => Err(e),
    };
    store.close().await;
    issued
}

/// Makes a new current HPKE key in the database at `db` (creating the database if needed)
/// and gives every older key `grace` more time to open sealed messages
/// ([`DEFAULT_KEY_GRACE`] covers every round open at the rotation); returns the new key's
/// RFC 9458 key id. A running server serves the new key within two seconds.
///
/// # Errors
///
/// [`ServerError::Invalid`] if all 256 key ids are in their grace period, [`ServerError`] if
/// the database fails.
pub async fn rotate_hpke_key(db: &str, grace: Duration) -> Result<u8, ServerError> {
    let store = Store::open(db).await?;
    let rotated = keys::rotate(&store, runtime::unix_now(), grace).await;
    store.close().await;
    rotated
}

/// Provisions a population in the database at `db` (creating the database if needed),
/// without a running server; `tally population create --server` does the same through one.
///
/// # Errors
///
/// [`ServerError::Invalid`] for an invalid population or one that exists, [`ServerError`] if
/// the database fails.
pub async fn create_population(
    db: &str,
    spec: &PopulationSpec,
) -> Result<PopulationInfo, ServerError> {
    let task_bound = population::check_spec(spec).map_err(ServerError::Invalid)?;
    let store = Store::open(db).await?;
    let created = population::provision(&store, spec, task_bound, runtime::unix_now()).await;
    store.close().await;
    created?
        .ok_or_else(|| ServerError::Invalid(format!("population {:?} exists already", spec.name)))
}

/// Every population in the database at `db`.
///
/// # Errors
///
/// [`ServerError`] if the database fails.
pub async fn populations(db: &str) -> Result<Vec<PopulationInfo>, ServerError> {
    let store = Store::open(db).await?;
    let stored = store.populations().await;
    store.close().await;
    Ok(stored?.iter().map(population::info).collect())
}

/// Every credential in the database at `db` (never a secret).
///
/// # Errors
///
/// [`ServerError`] if the database fails.
pub async fn credentials(db: &str) -> Result<Vec<CredentialInfo>, ServerError> {
    let store = Store::open(db).await?;
    let stored = store.credentials().await;
    store.close().await;
    Ok(stored?.iter().filter_map(auth::info).collect())
}

/// Revokes the credential `id` in the database at `db`: a running server refuses it from its
/// next request on.
///
/// # Errors
///
/// [`ServerError::Invalid`] if there is no such credential, [`ServerError`] if the database
/// fails.
pub async fn revoke_credential(db: &str, id: &str) -> Result<CredentialInfo, ServerError> {
    let store = Store::open(db).await?;
    let stored = store.revoke_credential(id, runtime::unix_now()).await;
    store.close().await;
    stored?
        .0
        .as_ref()
        .and_then(auth::info)
        .ok_or_else(|| ServerError::Invalid(format!("no credential {id:?}")))
}
