//! The HTTP API (see tally-messages for the protocol): routing, credentials and roles,
//! browser-request refusal, body limits, JSON, and a counter for every refusal.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tally_messages::{
    CheckIn, CheckInGrant, CredentialSpec, DeviceEnrollment, ErrorCode, HPKE_KEYS_MEDIA_TYPE,
    PopulationSpec, RelayedBatch, Role, TaskSpec, UploadBatch, UploadReceipt,
};

use crate::auth::Principal;
use crate::console::ConsoleSessions;
use crate::error::{ApiError, ServerError};
use crate::rate::RateLimit;
use crate::runtime::{RoundRoute, Runtime, check_version};

/// The largest request body, other than uploads.
const BODY_LIMIT: usize = 1 << 20;
/// The largest upload request body.
const UPLOAD_BODY_LIMIT: usize = 16 << 20;
/// The largest relayed batch: a round's sealed messages, about a million of a short report.
const RELAYED_BODY_LIMIT: usize = 128 << 20;
/// The most uploads in one request.
pub const MAX_BATCH: usize = 10_000;
/// The most tokens one check-in asks for.
pub const MAX_CHECK_IN: u32 = 10_000;

/// Checks a check-in: its protocol version, and 1 to [`MAX_CHECK_IN`] devices, one for a
/// device credential (which checks in for itself alone).
///
/// # Errors
///
/// `malformed` for another version, `oversized` for a count out of range, `forbidden` for a
/// device credential checking in for more than one device.
pub fn check_check_in(request: &CheckIn, role: Role) -> Result<(), ApiError> {
    check_version(request.version)?;
    let devices = request.devices;
    if devices == 0 || devices > MAX_CHECK_IN {
        return Err(ApiError::new(
            ErrorCode::Oversized,
            format!("devices: 1 to {MAX_CHECK_IN} per check-in"),
        ));
    }
    if role == Role::Device && devices != 1 {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("devices {devices}: a device credential checks in for one device, itself"),
        ));
    }
    Ok(())
}

/// Checks a batch of `uploads` uploads of protocol version `version`: at most [`MAX_BATCH`].
///
/// # Errors
///
/// `malformed` for another version, `oversized` for a larger batch.
pub fn check_upload_batch(version: u32, uploads: usize) -> Result<(), ApiError> {
    check_version(version)?;
    if uploads > MAX_BATCH {
        return Err(ApiError::new(
            ErrorCode::Oversized,
            format!("{uploads} uploads; at most {MAX_BATCH} per request"),
        ));
    }
    Ok(())
}

type App = State<Arc<Runtime>>;

/// Which `Host` headers a service answers (a browser page that rebinds a name of its own to
/// the service's address sends its own name).
#[derive(Clone, Debug)]
pub enum HostPolicy {
    /// Any `Host` (the service cannot know the names it is reached by).
    Any,
    /// Only these hosts (`name:port`, compared without case), or no `Host` at all.
    Only(Vec<String>),
}

impl HostPolicy {
    /// The hosts a listener on `listen` answers to: on a loopback address only the loopback
    /// names of that port, so that a web page whose name was rebound to 127.0.0.1 reaches
    /// nothing; any elsewhere.
    pub fn for_listener(listen: SocketAddr) -> Self {
        if listen.ip().is_loopback() {
            let port = listen.port();
            Self::Only(vec![
                listen.to_string(),
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ])
        } else {
            Self::Any
        }
    }

    /// Whether a request with this `Host` header (if any) is answered.
    pub fn allows(&self, host: Option<&str>) -> bool {
        match (self, host) {
            (Self::Any, _) | (Self::Only(_), None) => true,
            (Self::Only(hosts), Some(host)) => hosts.iter().any(|h| h.eq_ignore_ascii_case(host)),
        }
    }
}

/// The router of the whole API, and of the operator's console (see [`crate::console`]; its
/// cookie is `Secure` when the server runs `tls`, and its sign-ins end as `sessions` says).
pub(crate) fn router(
    runtime: Arc<Runtime>,
    hosts: HostPolicy,
    tls: bool,
    sessions: ConsoleSessions,
) -> Router {
    let hosts = Arc::new(hosts);
    let console = crate::console::router(Arc::clone(&runtime), Arc::clone(&hosts), tls, sessions);
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/v1/tasks", post(create_task).get(list_tasks))
        .route("/v1/tasks/{id}", get(get_task))
        .route("/v1/tasks/{id}/cancel", post(cancel_task))
        .route("/v1/tasks/{id}/result", get(task_result))
        .route("/v1/rounds", get(open_rounds))
        .route("/v1/rounds/{id}/check-in", post(check_in))
        .route("/v1/rounds/{id}/uploads", post(upload))
        .route("/v1/rounds/{id}/relayed", post(relayed))
        .route("/v1/hpke-keys", get(hpke_keys))
        .route("/v1/ledger", get(ledger))
        .route(
            "/v1/populations",
            post(create_population).get(list_populations),
        )
        .route(
            "/v1/credentials",
            post(create_credential).get(list_credentials),
        )
        .route("/v1/credentials/{id}/revoke", post(revoke_credential))
        .route("/v1/populations/{name}/devices", post(enroll_devices))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&runtime),
            move |state: App, request: Request, next: Next| {
                let hosts = Arc::clone(&hosts);
                async move { refuse_browsers(state, &hosts, request, next).await }
            },
        ))
        .with_state(runtime)
        .merge(console)
}

/// The operator's router: `/metrics` alone (with an operator credential), served on its own
/// listener and never on the API's, so that whoever reaches the API cannot read the counters.
pub(crate) fn metrics_router(runtime: Arc<Runtime>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&runtime),
            |state: App, request: Request, next: Next| async move {
                refuse_browsers(state, &HostPolicy::Any, request, next).await
            },
        ))
        .with_state(runtime)
}

/// Refuses every request a browser page could make: one with an `Origin` header (browsers
/// send it with every cross-origin request and every POST), or one whose `Host` is not the
/// server's. No endpoint is meant for a browser, and no CORS header is ever sent.
async fn refuse_browsers(
    State(runtime): App,
    hosts: &HostPolicy,
    request: Request,
    next: Next,
) -> Response {
    match request_refusal(&request, hosts) {
        Some(refusal) => {
            runtime.metrics.reject(refusal.code);
            refusal.into_response()
        }
        None => next.run(request).await,
    }
}

/// Why a request is refused before it is routed, if it is: a request a browser page could
/// make ([`browser_refusal`]), or a path or query holding a NUL character (`%00`).
pub(crate) fn request_refusal(request: &Request, hosts: &HostPolicy) -> Option<ApiError> {
    browser_refusal(request.headers(), hosts).or_else(|| {
        let uri = request.uri();
        let target = uri.path_and_query().map_or("", |target| target.as_str());
        target.contains("%00").then(|| nul_refusal("the path"))
    })
}

/// Why a request a browser page could make is refused, if it is one: it carries an `Origin`
/// header, or a `Host` that `hosts` does not allow.
fn browser_refusal(headers: &HeaderMap, hosts: &HostPolicy) -> Option<ApiError> {
    let host = headers.get(HOST).map(|h| h.to_str().unwrap_or("\u{fffd}"));
    let message = if headers.contains_key(ORIGIN) {
        "requests from browser pages (with an Origin header) are refused"
    } else if !hosts.allows(host) {
        "this server does not answer to that Host"
    } else {
        return None;
    };
    Some(ApiError::new(ErrorCode::Forbidden, message))
}

/// The credential of a request, if its role is among `roles`: 401 without a live
/// credential, 403 with one of another role.
async fn authorize(
    runtime: &Runtime,
    headers: &HeaderMap,
    roles: &[Role],
) -> Result<Principal, ApiError> {
    authorize_token(runtime, bearer(headers), SEND_BEARER, roles).await
}

/// How to send a credential, said to a request without one.
pub(crate) const SEND_BEARER: &str = "send a credential: Authorization: Bearer TOKEN";

/// The bearer token of a request, if it carries one.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// The credential `token` proves, if its role is among `roles`: 401 without a token
/// (`missing` says how to send one) or a live credential, 403 with one of another role; every
/// check counts against the credential's rate.
pub(crate) async fn authorize_token(
    runtime: &Runtime,
    token: Option<&str>,
    missing: &str,
    roles: &[Role],
) -> Result<Principal, ApiError> {
    let token = token.ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, missing))?;
    let who = runtime.authenticate(token.trim()).await?;
    admit(who, runtime.rate_limit.as_ref(), roles)
}

/// The credential a token proved (`None` if none is live), if its role is among `roles`: 401
/// without one, 403 with one of another role; every check counts against the credential's
/// `rate_limit`.
pub(crate) fn admit(
    who: Option<Principal>,
    rate_limit: Option<&RateLimit>,
    roles: &[Role],
) -> Result<Principal, ApiError> {
    let who = who.ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unauthenticated,
            "the credential is unknown or revoked",
        )
    })?;
    if let Some(limit) = rate_limit
        && let Err(wait) = limit.take(&who.id, std::time::Instant::now())
    {
        return Err(ApiError::new(
            ErrorCode::RateLimited,
            "this credential sent more requests than its rate allows; retry later",
        )
        .with_retry_after(wait));
    }
    if !roles.contains(&who.role) {
        let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "a {} credential cannot do this (it needs: {})",
                who.role.name(),
                names.join(" or ")
            ),
        ));
    }
    Ok(who)
}

/// Counts a refusal and turns the result into a response.
fn answer<T: Serialize>(runtime: &Runtime, result: Result<(StatusCode, T), ApiError>) -> Response {
    match result {
        Ok((status, body)) => (status, axum::Json(body)).into_response(),
        Err(error) => {
            runtime.metrics.reject(error.code);
            error.into_response()
        }
    }
}

/// Reads a body of at most `limit` bytes: a declared length above it is refused before
/// anything is read, and reading stops as soon as the limit is passed.
/// A body that takes longer than `timeout` to arrive is refused.
async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let oversized = || {
        ApiError::new(
            ErrorCode::Oversized,
            format!("the body exceeds {limit} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(oversized());
    }
    tokio::time::timeout(timeout, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| {
            ApiError::new(
                ErrorCode::Timeout,
                format!("the body did not arrive within {} s", timeout.as_secs()),
            )
        })?
        .map_err(|_| oversized())
}

/// Reads a JSON body of at most `limit` bytes, declared `Content-Type: application/json` (a
/// browser can send a `text/plain` body without asking first; it cannot send this one).
async fn read_json<T: DeserializeOwned>(
    runtime: &Runtime,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, ApiError> {
    read_json_within(headers, body, limit, runtime.body_timeout).await
}

/// [`read_json`], the body arriving within `timeout`.
pub(crate) async fn read_json_within<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<T, ApiError> {
    let bytes = read_json_body(headers, body, limit, timeout).await?;
    parse_json(&bytes)
}

/// A body of at most `limit` bytes declared `Content-Type: application/json`, arriving
/// within `timeout`, not yet parsed.
pub(crate) async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "the body must be sent with Content-Type: application/json",
        ));
    }
    read_body(headers, body, limit, timeout).await
}

/// A JSON body's value, refused if it holds a NUL character.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if has_nul_escape(bytes) {
        return Err(nul_refusal("the body"));
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::new(ErrorCode::Malformed, e.to_string()))
}

/// A round request's answer: this replica's, or, for a round another replica drives, that
/// replica's answer as it came.
enum Routed<T> {
    Here(T),
    Forwarded(Response),
}

fn answer_routed<T: Serialize>(
    runtime: &Runtime,
    result: Result<Routed<(StatusCode, T)>, ApiError>,
) -> Response {
    match result {
        Ok(Routed::Forwarded(response)) => response,
        Ok(Routed::Here(ok)) => answer(runtime, Ok(ok)),
        Err(error) => answer::<()>(runtime, Err(error)),
    }
}

/// Whether a JSON text holds a NUL character: the escape `\u0000` with its backslash not
/// itself escaped (an odd run of backslashes before the `u`). A raw NUL byte is not valid JSON
/// and the parser refuses it; a backslash appears nowhere in JSON but in strings.
fn has_nul_escape(json: &[u8]) -> bool {
    memchr::memmem::find_iter(json, b"u0000").any(|at| {
        let backslashes = json[..at].iter().rev().take_while(|&&b| b == b'\\').count();
        backslashes % 2 == 1
    })
}

/// The refusal of a request whose `part` holds a NUL character: no name, id or text of the
/// API may hold one, and a database may not store it.
fn nul_refusal(part: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Malformed,
        format!("{part} holds a NUL character (\\u0000 or %00), which no field may hold"),
    )
}

async fn metrics(State(runtime): App, headers: HeaderMap) -> Response {
    if let Err(error) = authorize(&runtime, &headers, &[Role::Operator]).await {
        runtime.metrics.reject(error.code);
        return error.into_response();
    }
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        runtime.metrics.render(),
    )
        .into_response()
}

async fn create_task(State(runtime): App, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &[Role::Analyst]).await?;
        let spec: TaskSpec = read_json(&runtime, &headers, body, BODY_LIMIT).await?;
        Ok((StatusCode::CREATED, runtime.create_task(spec, &who).await?))
    }
    .await;
    answer(&runtime, result)
}

/// Every role may read tasks and populations: each sees those it may (see `Runtime::tasks`;
/// a relay reads its populations' tasks, to republish their states and guarantees to the
/// devices it relays for).
const EVERY_ROLE: [Role; 4] = [Role::Operator, Role::Analyst, Role::Device, Role::Relay];

async fn list_tasks(State(runtime): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &EVERY_ROLE).await?;
        Ok((StatusCode::OK, runtime.tasks(&who).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn get_task(State(runtime): App, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &EVERY_ROLE).await?;
        Ok((StatusCode::OK, runtime.task(&id, &who).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn cancel_task(State(runtime): App, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &[Role::Analyst, Role::Operator]).await?;
        Ok((StatusCode::OK, runtime.cancel(&id, &who).await?))
    }
    .await;
    answer(&runtime, result)
}

/// The stored document, byte for byte.
async fn task_result(State(runtime): App, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &[Role::Analyst]).await?;
        runtime.result(&id, &who).await
    }
    .await;
    match result {
        Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            runtime.metrics.reject(error.code);
            error.into_response()
        }
    }
}

/// Who takes part in rounds: enrolled devices, and operators relaying for devices.
const DEVICES_AND_RELAYS: [Role; 2] = [Role::Device, Role::Operator];

/// Who reads the open rounds: those who take part, and a split-trust population's relays.
const ROUND_READERS: [Role; 3] = [Role::Device, Role::Operator, Role::Relay];

async fn open_rounds(State(runtime): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &ROUND_READERS).await?;
        Ok((StatusCode::OK, runtime.open_rounds(&who)))
    }
    .await;
    answer(&runtime, result)
}

async fn check_in(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &DEVICES_AND_RELAYS).await?;
        let bytes = read_json_body(&headers, body, BODY_LIMIT, runtime.body_timeout).await?;
        let round = match runtime.round(&id, &who).await? {
            RoundRoute::Here(round) => round,
            RoundRoute::There(there) => {
                let path = format!("/v1/rounds/{id}/check-in");
                return Ok(Routed::Forwarded(
                    runtime.forward(&there, &path, &headers, bytes).await?,
                ));
            }
        };
        let request: CheckIn = parse_json(&bytes)?;
        check_check_in(&request, who.role)?;
        let tokens = runtime.check_in(&round, &who, request.devices)?;
        Ok(Routed::Here((
            StatusCode::OK,
            CheckInGrant {
                query: round.query.clone(),
                tokens,
            },
        )))
    }
    .await;
    answer_routed(&runtime, result)
}

async fn upload(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &DEVICES_AND_RELAYS).await?;
        let bytes = read_json_body(&headers, body, UPLOAD_BODY_LIMIT, runtime.body_timeout).await?;
        let round = match runtime.round(&id, &who).await? {
            RoundRoute::Here(round) => round,
            RoundRoute::There(there) => {
                let path = format!("/v1/rounds/{id}/uploads");
                return Ok(Routed::Forwarded(
                    runtime.forward(&there, &path, &headers, bytes).await?,
                ));
            }
        };
        let batch: UploadBatch = parse_json(&bytes)?;
        check_upload_batch(batch.version, batch.uploads.len())?;
        let outcome = round
            .upload(&who.id, batch.uploads)
            .ok_or_else(|| runtime.closed(&id))?;
        runtime
            .metrics
            .accepted(outcome.reports + outcome.abstentions);
        for rejection in &outcome.rejected {
            runtime.metrics.reject(rejection.code);
        }
        if outcome.reached_target {
            let runtime = Arc::clone(&runtime);
            tokio::spawn(async move { runtime.close_round(&id).await });
        }
        Ok(Routed::Here((
            StatusCode::OK,
            UploadReceipt {
                // Unwrap safety: batches are capped at MAX_BATCH uploads.
                accepted: u32::try_from(outcome.reports + outcome.abstentions)
                    .expect("batch size fits u32"),
                rejected: outcome.rejected,
            },
        )))
    }
    .await;
    answer_routed(&runtime, result)
}

/// A split-trust population's round: its relay's one batch of sealed messages.
async fn relayed(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &[Role::Relay]).await?;
        let bytes =
            read_json_body(&headers, body, RELAYED_BODY_LIMIT, runtime.body_timeout).await?;
        let round = match runtime.relayed_round(&id, &who).await? {
            RoundRoute::Here(round) => round,
            RoundRoute::There(there) => {
                let path = format!("/v1/rounds/{id}/relayed");
                return Ok(Routed::Forwarded(
                    runtime.forward(&there, &path, &headers, bytes).await?,
                ));
            }
        };
        let batch: RelayedBatch = parse_json(&bytes)?;
        check_version(batch.version)?;
        // Opened, counted, closed and released to the end even if the relay hangs up
        // meanwhile (its request timed out): a round left claimed but open would never close.
        let relaying = Arc::clone(&runtime);
        let receipt = tokio::spawn(async move { relaying.relay(round, batch).await })
            .await
            .map_err(|e| ServerError::Corrupt(format!("taking a relayed batch failed: {e}")))??;
        Ok(Routed::Here((StatusCode::OK, receipt)))
    }
    .await;
    answer_routed(&runtime, result)
}

/// The aggregator's public key configurations (RFC 9458's `application/ohttp-keys`, the
/// current key first), without a credential: devices fetch them from the aggregator itself.
async fn hpke_keys(State(runtime): App) -> Response {
    (
        [(CONTENT_TYPE, HPKE_KEYS_MEDIA_TYPE)],
        runtime.keys().configs.clone(),
    )
        .into_response()
}

async fn ledger(State(runtime): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &[Role::Operator, Role::Analyst]).await?;
        Ok((StatusCode::OK, runtime.ledger(&who).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn create_population(State(runtime): App, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        authorize(&runtime, &headers, &[Role::Operator]).await?;
        let spec: PopulationSpec = read_json(&runtime, &headers, body, BODY_LIMIT).await?;
        Ok((StatusCode::CREATED, runtime.create_population(&spec).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn enroll_devices(
    State(runtime): App,
    Path(population): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        authorize(&runtime, &headers, &[Role::Operator]).await?;
        let request: DeviceEnrollment = read_json(&runtime, &headers, body, BODY_LIMIT).await?;
        Ok((
            StatusCode::CREATED,
            runtime.enroll_devices(&population, &request).await?,
        ))
    }
    .await;
    answer(&runtime, result)
}

async fn list_populations(State(runtime): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = authorize(&runtime, &headers, &EVERY_ROLE).await?;
        Ok((StatusCode::OK, runtime.populations(&who).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn create_credential(State(runtime): App, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        authorize(&runtime, &headers, &[Role::Operator]).await?;
        let spec: CredentialSpec = read_json(&runtime, &headers, body, BODY_LIMIT).await?;
        Ok((StatusCode::CREATED, runtime.create_credential(&spec).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn list_credentials(State(runtime): App, headers: HeaderMap) -> Response {
    let result = async {
        authorize(&runtime, &headers, &[Role::Operator]).await?;
        Ok((StatusCode::OK, runtime.credentials().await?))
    }
    .await;
    answer(&runtime, result)
}

async fn revoke_credential(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let result = async {
        authorize(&runtime, &headers, &[Role::Operator]).await?;
        Ok((StatusCode::OK, runtime.revoke_credential(&id).await?))
    }
    .await;
    answer(&runtime, result)
}
