//! What the replicas of a service (servers, or relays) on one PostgreSQL database share: each
//! replica's id, lease duration and address, and the forwarding of a round's requests to the
//! replica that holds the round.

use std::net::SocketAddr;
use std::sync::{OnceLock, RwLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use axum::response::{IntoResponse, Response};
use rustls::pki_types::CertificateDer;
use tally_messages::ErrorCode;
use tracing::warn;

use crate::ServerError;
use crate::error::ApiError;
use crate::runtime::{new_id, unix_now_millis};

/// How a service shares a PostgreSQL database with other replicas of it (a SQLite database
/// has one process, which holds every lease).
#[derive(Clone, Debug)]
pub struct Replication {
    /// How long a lease (a task's at a server, a round's at a relay) lasts unless renewed
    /// (each replica renews its leases every quarter of it): how long the others wait before
    /// they take over the work of a replica that stopped without saying so.
    pub lease: Duration,
    /// Where the other replicas reach this one (`http://HOST:PORT` or `https://...`); `None`
    /// for the address the service listens on.
    pub address: Option<String>,
}

impl Default for Replication {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(10),
            address: None,
        }
    }
}

impl Replication {
    /// Refuses a replica on PostgreSQL database `db` that listens on every address (or on
    /// one other than loopback) and was not told where the others reach it.
    ///
    /// # Errors
    ///
    /// [`ServerError::Invalid`], naming `--advertise-url`.
    pub fn check_reachable(&self, db: &str, listen: SocketAddr) -> Result<(), ServerError> {
        if db.starts_with("postgres") && self.address.is_none() && !listen.ip().is_loopback() {
            return Err(ServerError::Invalid(format!(
                "on PostgreSQL, replicas forward each other the check-ins and uploads of the \
                 rounds they hold, and a replica listening on {listen} cannot tell them where \
                 to reach it: give --advertise-url (e.g. https://this-host.example:{})",
                listen.port()
            )));
        }
        Ok(())
    }
}

/// The header marking a request one replica forwarded to another.
const FORWARDED_BY: &str = "x-tally-forwarded-by";

/// This replica among those sharing a database: its id (random, at every start), how long
/// its leases last, where the others reach it, and the client that forwards it the requests
/// of rounds the others hold.
pub struct Replica {
    id: String,
    lease: Duration,
    address: RwLock<String>,
    forwarder: OnceLock<reqwest::Client>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("id", &self.id)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Replica {
    /// A new replica as `replication` says, of a fresh random id starting with `kind`.
    pub fn new(kind: &str, replication: &Replication) -> Self {
        Self {
            id: new_id(kind),
            lease: replication.lease,
            address: RwLock::new(replication.address.clone().unwrap_or_default()),
            forwarder: OnceLock::new(),
        }
    }

    /// The replica's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How often the replica renews its leases: a quarter of their duration.
    pub fn tick(&self) -> Duration {
        self.lease / 4
    }

    /// When a lease taken or renewed now lapses, and now, in milliseconds since the Unix
    /// epoch.
    pub fn lease_from_now(&self) -> (i64, i64) {
        let now = unix_now_millis();
        let lease = i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX);
        (now, now.saturating_add(lease))
    }

    /// The lease's duration in milliseconds.
    pub fn lease_millis(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }

    /// Where the others reach this replica (empty until [`Replica::advertise`]).
    pub fn address(&self) -> String {
        self.address.read().expect("replica address lock").clone()
    }

    /// Sets where the others reach this replica when it listens on `listen` (unless
    /// configured), and the certificates (the chain this one serves, as every replica of it
    /// does) it trusts when it forwards them requests over TLS.
    ///
    /// # Errors
    ///
    /// [`ServerError::Invalid`] if the chain is not one of certificates.
    pub fn advertise(
        &self,
        listen: SocketAddr,
        chain: &[CertificateDer<'static>],
    ) -> Result<(), ServerError> {
        {
            let mut current = self.address.write().expect("replica address lock");
            if current.is_empty() {
                *current = default_address(listen, !chain.is_empty());
            }
        }
        let client = build_forwarder(chain)?;
        // A replica is advertised once, before it serves; a second call keeps the first client.
        self.forwarder.set(client).ok();
        Ok(())
    }

    /// Sends a request to a round another replica holds (`path`, with the caller's
    /// credential and `body`, as it came) to that replica at `address`, and returns its answer
    /// as it came. A forwarded request is not forwarded again: a round that moved meanwhile
    /// is refused as unknown, and the device's next look finds it.
    ///
    /// # Errors
    ///
    /// The [`ApiError`] to answer: the request was forwarded already, or the replica holding
    /// the round is out of reach (500 with `Retry-After: 1`).
    pub async fn forward(
        &self,
        address: &str,
        path: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Response, ApiError> {
        if headers.contains_key(FORWARDED_BY) {
            return Err(ApiError::new(
                ErrorCode::UnknownRound,
                format!("{path}: the round is not this replica's (it moved): look again"),
            ));
        }
        let unreachable = |e: &dyn std::fmt::Display| {
            warn!(address = %address, error = %e, "could not forward a round's request");
            ApiError::new(
                ErrorCode::Internal,
                "the replica holding the round is out of reach; retry later",
            )
            .with_retry_after(Duration::from_secs(1))
        };
        let mut request = self
            .forwarder()
            .post(format!("{}{path}", address.trim_end_matches('/')))
            .header(FORWARDED_BY, &self.id)
            .body(body);
        for name in [AUTHORIZATION, CONTENT_TYPE] {
            if let Some(value) = headers.get(&name) {
                request = request.header(name, value);
            }
        }
        let answer = request.send().await.map_err(|e| unreachable(&e))?;
        let status = answer.status();
        let content_type = answer.headers().get(CONTENT_TYPE).cloned();
        let retry_after = answer.headers().get(RETRY_AFTER).cloned();
        let body = answer.bytes().await.map_err(|e| unreachable(&e))?;
        let mut response = (status, body).into_response();
        for (name, value) in [(CONTENT_TYPE, content_type), (RETRY_AFTER, retry_after)] {
            if let Some(value) = value {
                response.headers_mut().insert(name, value);
            }
        }
        Ok(response)
    }

    /// The HTTP client that forwards requests to the other replicas.
    fn forwarder(&self) -> reqwest::Client {
        self.forwarder
            .get_or_init(|| build_forwarder(&[]).expect("a client without certificates builds"))
            .clone()
    }
}

/// The client forwarding requests to the other replicas: over TLS, trusting `chain` (the
/// certificates the replicas serve) alone.
fn build_forwarder(chain: &[CertificateDer<'static>]) -> Result<reqwest::Client, ServerError> {
    // rustls with the ring provider; an error means a provider is installed already.
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none());
    if !chain.is_empty() {
        let certificates = chain
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ServerError::Invalid(format!("the served certificate chain: {e}")))?;
        builder = builder.tls_certs_only(certificates);
    }
    builder
        .build()
        .map_err(|e| ServerError::Invalid(format!("the client forwarding to replicas: {e}")))
}

/// Where the other replicas reach a replica listening on `listen` (by default): its loopback
/// address when it listens on every address, and under TLS the name `localhost` for a
/// loopback address (the name a local certificate is made for).
fn default_address(listen: SocketAddr, tls: bool) -> String {
    let ip = match listen.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
        ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    let host = match (tls, ip) {
        (true, ip) if ip.is_loopback() => "localhost".to_owned(),
        (_, std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        (_, ip) => ip.to_string(),
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{host}:{}", listen.port())
}
