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
//! composition across tasks) is refused. Devices flip their own sampling coins, which assumes
//! honest devices. The guarantee holds against the analyst and anyone who reads the
//! releases; the server process itself sees the reports it aggregates, and which upload token
//! carried a report rather than an abstention, so it learns which checked-in device was
//! sampled (the secure aggregator is a trust boundary, not cryptography). Every request but
//! `/healthz` carries a bearer credential of one role (operator, analyst, device) that the
//! server checks against a SHA-256 hash it stores.
#![forbid(unsafe_code)]

mod aggregator;
mod auth;
pub mod document;
mod engine;
mod error;
mod http;
mod metrics;
mod population;
mod round;
mod runtime;
mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::info;

pub use error::ServerError;
use http::HostPolicy;
use runtime::Runtime;
use store::Store;
use tally_messages::{
    CredentialInfo, CredentialSpec, IssuedCredential, PopulationInfo, PopulationSpec,
};

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
    /// The database URL (`sqlite://FILE` or `postgres://...`); `None` for the SQLite file
    /// `tally.db` in the working directory, created on first start.
    pub db: Option<String>,
}

/// The default database: a SQLite file in the working directory.
pub const DEFAULT_DB: &str = "sqlite://tally.db";

/// A started server: its state, and the background work closing rounds at their deadlines.
pub struct Server {
    runtime: Arc<Runtime>,
    ticker: JoinHandle<()>,
    /// Held until the server shuts down.
    lease: store::WriterLease,
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
        let store = Store::open(db).await?;
        let lease = store.lease(db).await?;
        let runtime = Runtime::start(store).await?;
        let ticking = Arc::clone(&runtime);
        let ticker = tokio::spawn(async move {
            let mut interval = tokio::time::interval(DEADLINE_TICK);
            loop {
                interval.tick().await;
                ticking.close_due().await;
            }
        });
        Ok(Self {
            runtime,
            ticker,
            lease,
        })
    }

    /// The HTTP API, answering to any `Host`.
    pub fn router(&self) -> Router {
        http::router(Arc::clone(&self.runtime), HostPolicy::Any)
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
        let hosts = if listen.ip().is_loopback() {
            let port = listen.port();
            HostPolicy::Only(vec![
                listen.to_string(),
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ])
        } else {
            HostPolicy::Any
        };
        http::router(Arc::clone(&self.runtime), hosts)
    }

    /// Stops closing rounds, closes the open ones unreleased (they run again after the next
    /// start) and closes the database.
    pub async fn shutdown(self) {
        self.ticker.abort();
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
/// [`ServerError`] if the database cannot be opened or the address not bound.
pub async fn serve(config: ServeConfig) -> Result<(), ServerError> {
    let db = config.db.as_deref().unwrap_or(DEFAULT_DB);
    let server = Server::start(db).await?;
    let listener = TcpListener::bind(config.listen).await?;
    info!(address = %listener.local_addr()?, db = %redacted(db), "serving");
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let metrics = match config.metrics_listen {
        Some(address) => {
            let listener = TcpListener::bind(address).await?;
            info!(address = %listener.local_addr()?, "serving /metrics");
            let router = server.metrics_router();
            let stopping = stopping.clone();
            Some(tokio::spawn(async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(stopped(stopping))
                    .await
            }))
        }
        None => None,
    };
    let signal = tokio::spawn(async move {
        shutdown_signal().await;
        // Both listeners stop; an error means they stopped already.
        stop.send(true).ok();
    });
    let served = axum::serve(listener, server.router_for(config.listen))
        .with_graceful_shutdown(stopped(stopping))
        .await;
    signal.abort();
    served?;
    if let Some(metrics) = metrics {
        metrics
            .await
            .map_err(|e| ServerError::Io(std::io::Error::other(e)))??;
    }
    info!("shutting down");
    server.shutdown().await;
    Ok(())
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
    let issued = auth::issue(&store, spec, runtime::unix_now()).await;
    store.close().await;
    issued
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
    population::check_spec(spec).map_err(ServerError::Invalid)?;
    let store = Store::open(db).await?;
    let created = population::provision(&store, spec, runtime::unix_now()).await;
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
        .as_ref()
        .and_then(auth::info)
        .ok_or_else(|| ServerError::Invalid(format!("no credential {id:?}")))
}

/// The database URL without its password, for logs.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Resolves once `stop` says to stop.
async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    // An error means the sender is gone: stop as well.
    let _ = stop.wait_for(|stop| *stop).await;
}

async fn shutdown_signal() {
    let ctrl_c = async {
        // Without a Ctrl-C handler, wait for SIGTERM alone.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
