//! The plumbing of a tally service, for another executor that runs a service of its own (the
//! relay of a split-trust deployment): credentials kept in a database as hashes and
//! authenticated from memory, the database's one-writer lease (SQLite) or its replicas' round
//! leases (PostgreSQL), the forwarding between replicas, the listeners with their TLS,
//! connection and request bounds and graceful shutdown, and the HTTP API's refusals (browser
//! requests, bodies, roles, rates), answered exactly as `tally serve` answers them.

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::HeaderMap;
use serde::de::DeserializeOwned;
use tally_messages::{ErrorCode, Role};
use tokio::net::TcpListener;

pub use crate::aggregator::AggregatorCoins;
pub use crate::auth::Principal;
use crate::auth::{self, CredentialCache};
pub use crate::error::ApiError;
pub use crate::http::{HostPolicy, MAX_BATCH, MAX_CHECK_IN, check_check_in, check_upload_batch};
use crate::http::{admit, bearer, read_json_body, read_json_within, request_refusal};
use crate::rate::RateLimit;
pub use crate::replica::Replica;
pub use crate::runtime::{check_version, unix_now};
pub use crate::store::RoundPlace;
use crate::store::{Store, WriterLease};
use crate::{Limits, ServerError, Tls, transport};

/// How often [`Credentials::refresh`] should run: a credential revoked in the database beside
/// the running service (`tally token revoke --db`) is refused within one second.
pub const CREDENTIALS_POLL: std::time::Duration = auth::CREDENTIALS_POLL;

/// A service's credentials: bearer tokens of roles, stored in its database (SQLite or
/// PostgreSQL) as SHA-256 hashes of their secrets, held in memory in step with the database,
/// compared in constant time, and limited to a request rate each. On SQLite, holds the
/// database's writer lease: a second service on the same database refuses to start (on
/// PostgreSQL, replicas share it, each round held by one of them: [`RoundLeases`]).
pub struct Credentials {
    store: Store,
    cache: CredentialCache,
    rate_limit: Option<RateLimit>,
    body_timeout: std::time::Duration,
    _lease: Option<WriterLease>,
}

impl std::fmt::Debug for Credentials {
    /// Never shows a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

impl Credentials {
    /// Opens the database at `db` (a SQLite file is created if needed), takes its writer
    /// lease if it is SQLite (and lets every round lease there lapse: whoever held them is
    /// gone) and loads its credentials; requests are limited as `limits` says.
    ///
    /// # Errors
    ///
    /// [`ServerError::Locked`] if another service holds a SQLite database, [`ServerError`] if
    /// it cannot be opened or read.
    pub async fn open(db: &str, limits: &Limits) -> Result<Self, ServerError> {
        let store = Store::open(db).await?;
        let lease = match store.shared() {
            true => None,
            false => {
                let lease = Store::lease(db)?;
                store.expire_leases().await?;
                Some(lease)
            }
        };
        let cache = CredentialCache::default();
        cache.refresh(&store).await?;
        Ok(Self {
            store,
            cache,
            rate_limit: limits.requests_per_second.map(RateLimit::new),
            body_timeout: limits.body_timeout,
            _lease: lease,
        })
    }

    /// The credential of a request (`Authorization: Bearer TOKEN`), if its role is among
    /// `roles`: 401 without a live credential, 403 with one of another role, 429 past its
    /// request rate.
    ///
    /// # Errors
    ///
    /// The [`ApiError`] to answer.
    pub async fn authorize(
        &self,
        headers: &HeaderMap,
        roles: &[Role],
    ) -> Result<Principal, ApiError> {
        let token = bearer(headers)
            .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, crate::http::SEND_BEARER))?;
        let who = self.cache.authenticate(&self.store, token.trim()).await?;
        admit(who, self.rate_limit.as_ref(), roles)
    }

    /// Brings the credentials in memory in step with the database; call it every
    /// [`CREDENTIALS_POLL`]. A failure is logged, and requests read their credential from the
    /// database until a refresh succeeds again.
    pub async fn refresh(&self) {
        if let Err(e) = self.cache.refresh(&self.store).await {
            tracing::warn!(error = %e, "could not read the credentials' changes");
        }
    }

    /// Enrolls `count` devices of `population` (only its name is checked: a relay's
    /// populations are provisioned at the aggregator): one device credential each, usable at
    /// once; their tokens, shown this once.
    ///
    /// # Errors
    ///
    /// [`ErrorCode::Oversized`] for a count outside 1 to 10 000, [`ErrorCode::Malformed`] for
    /// an invalid population name, [`ErrorCode::Internal`] if the database fails.
    pub async fn enroll(&self, population: &str, count: u32) -> Result<Vec<String>, ApiError> {
        auth::check_enrollment(count).map_err(|m| ApiError::new(ErrorCode::Oversized, m))?;
        auth::check_population_name(population)
            .map_err(|m| ApiError::new(ErrorCode::Malformed, m))?;
        let tokens = auth::enroll(
            &self.store,
            Some(&self.cache),
            population,
            count,
            unix_now(),
        )
        .await?;
        tracing::info!(population = %population, devices = count, "devices enrolled");
        Ok(tokens)
    }

    /// Reads a JSON body of at most `limit` bytes, declared `Content-Type: application/json`
    /// (which no browser page can send without asking first), within the limits' body
    /// timeout.
    ///
    /// # Errors
    ///
    /// The [`ApiError`] to answer: 415, 413, 408 or 400.
    pub async fn read_json<T: DeserializeOwned>(
        &self,
        headers: &HeaderMap,
        body: Body,
        limit: usize,
    ) -> Result<T, ApiError> {
        read_json_within(headers, body, limit, self.body_timeout).await
    }

    /// [`Credentials::read_json`], not yet parsed ([`parse_json`]): the body as it came, to
    /// forward to another replica.
    ///
    /// # Errors
    ///
    /// The [`ApiError`] to answer: 415, 413 or 408.
    pub async fn read_json_body(
        &self,
        headers: &HeaderMap,
        body: Body,
        limit: usize,
    ) -> Result<Bytes, ApiError> {
        read_json_body(headers, body, limit, self.body_timeout).await
    }

    /// The round leases of the replicas sharing this database.
    pub fn round_leases(&self) -> RoundLeases {
        RoundLeases {
            store: self.store.clone(),
        }
    }

    /// Closes the database and gives up its lease.
    pub async fn close(self) {
        self.store.close().await;
    }
}

/// A relay's round leases: each of the aggregator's rounds is held by one replica of the
/// relay on the database (its uploads in that replica's memory alone), under a lease that
/// its holder renews every [`Replica::tick`], and whose epoch, bumped by every takeover,
/// fences the round's one forward ([`RoundLeases::close`]).
#[derive(Clone, Debug)]
pub struct RoundLeases {
    store: Store,
}

impl RoundLeases {
    /// Says that `replica` is alive and takes requests at its address, renews its leases and
    /// returns them (round and epoch: a round taken over is not among them), and forgets the
    /// rounds whose deadline passed an hour ago.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn renew(&self, replica: &Replica) -> Result<Vec<(String, i64)>, ServerError> {
        let (now, expires_at) = replica.lease_from_now();
        self.store
            .heartbeat(replica.id(), &replica.address(), now)
            .await?;
        let held = self
            .store
            .renew_relay_rounds(replica.id(), expires_at)
            .await?;
        self.store
            .forget_relay_rounds(unix_now().saturating_sub(3600))
            .await?;
        Ok(held)
    }

    /// Takes round `round_id`'s lease for `replica`, if no other replica holds a live one
    /// and the round was not closed; `deadline` is the aggregator's. Returns the lease's
    /// epoch.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn claim(
        &self,
        replica: &Replica,
        round_id: &str,
        deadline: i64,
    ) -> Result<Option<i64>, ServerError> {
        self.store
            .claim_relay_round(round_id, replica.id(), deadline, replica.lease_from_now())
            .await
    }

    /// Where the rounds held by other replicas than `replica` are, and which rounds are
    /// closed.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn places(
        &self,
        replica: &Replica,
    ) -> Result<Vec<(String, RoundPlace)>, ServerError> {
        let (now, _) = replica.lease_from_now();
        self.store.relay_round_places(replica.id(), now).await
    }

    /// Closes round `round_id` for good if `replica` still holds its lease at `epoch`: the
    /// fence of its one forward. `false`: the round was taken over, and its holder must
    /// forward nothing.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails (forward nothing then either).
    pub async fn close(
        &self,
        replica: &Replica,
        round_id: &str,
        epoch: i64,
    ) -> Result<bool, ServerError> {
        self.store
            .close_relay_round(round_id, replica.id(), epoch)
            .await
    }

    /// Lets `replica`'s lease of round `round_id` at `epoch` lapse now (if it has not closed
    /// the round): another replica takes the round at its next look.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn release(
        &self,
        replica: &Replica,
        round_id: &str,
        epoch: i64,
    ) -> Result<(), ServerError> {
        self.store
            .release_relay_round(round_id, replica.id(), epoch)
            .await
    }

    /// How many replicas were heard of within a lease, `replica` among them once it renewed.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn live_replicas(&self, replica: &Replica) -> Result<u64, ServerError> {
        let (now, _) = replica.lease_from_now();
        self.store
            .live_replicas(now.saturating_sub(replica.lease_millis()))
            .await
    }

    /// Forgets `replica` and lets its leases lapse now, for its graceful shutdown.
    ///
    /// # Errors
    ///
    /// [`ServerError`] if the database fails.
    pub async fn leave(&self, replica: &Replica) -> Result<(), ServerError> {
        self.store.leave(replica.id()).await
    }
}

/// A JSON body read by [`Credentials::read_json_body`], parsed.
///
/// # Errors
///
/// The [`ApiError`] to answer: 400.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    crate::http::parse_json(bytes)
}

/// Enrolls `count` devices of `population` in the database at `db` (created if needed)
/// without a running service, checking only the population's name (a relay's database,
/// whose populations are provisioned at the aggregator); their tokens, shown this once.
///
/// # Errors
///
/// [`ServerError::Invalid`] for a count outside 1 to 10 000 or an invalid population name,
/// [`ServerError`] if the database fails.
pub async fn enroll_devices(
    db: &str,
    population: &str,
    count: u32,
) -> Result<Vec<String>, ServerError> {
    auth::check_enrollment(count).map_err(ServerError::Invalid)?;
    auth::check_population_name(population).map_err(ServerError::Invalid)?;
    let store = Store::open(db).await?;
    let enrolled = auth::enroll(&store, None, population, count, unix_now()).await;
    store.close().await;
    enrolled
}

/// Why a request is refused before it is routed, if it is: a request a browser page could make
/// (it carries an `Origin` header, which browsers send with every cross-origin request and
/// every POST, or a `Host` that `hosts` does not allow: no endpoint of a tally service is meant
/// for a browser), or one whose path or query holds a NUL character (`%00`), which no name or
/// id may hold.
pub fn refuse_request(request: &Request, hosts: &HostPolicy) -> Option<ApiError> {
    request_refusal(request, hosts)
}

/// Refuses to serve plain HTTP (`tls` false) on any of `addresses` that is not a loopback
/// address, unless `insecure_http` accepts it.
///
/// # Errors
///
/// [`ServerError::Invalid`] naming the address and the options that fix it.
pub fn refuse_plain_http(
    tls: bool,
    insecure_http: bool,
    addresses: impl IntoIterator<Item = SocketAddr>,
) -> Result<(), ServerError> {
    if tls || insecure_http {
        return Ok(());
    }
    match addresses
        .into_iter()
        .find(|address| !address.ip().is_loopback())
    {
        Some(address) => Err(ServerError::Invalid(format!(
            "refusing to serve plain HTTP on {address}, which is not a loopback address: \
             credentials and reports would cross the network in clear; give --tls-cert FILE \
             --tls-key FILE, or --insecure-http to accept that"
        ))),
        None => Ok(()),
    }
}

/// Serves `router` on `listener` (over TLS with `tls`) within `limits` until `shutdown`
/// resolves, then stops accepting connections and lets the requests in flight finish for at
/// most the limits' grace period.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Tls>,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) {
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let serving = transport::serve(listener, router, tls, limits, stopping);
    let signal = async {
        shutdown.await;
        // An error means the listener stopped already.
        stop.send(true).ok();
    };
    tokio::join!(serving, signal);
}

/// The database URL without its password, for logs.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Resolves at Ctrl-C or SIGTERM: when a service should stop taking requests.
pub async fn shutdown_signal() {
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
