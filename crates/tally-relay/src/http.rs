//! The relay's HTTP API: the aggregator's device endpoints, as devices reach them through the
//! relay, and the operator's enrollment of devices.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State as Extract};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use tally_client::ClientError;
use tally_messages::{
    CheckIn, CheckInGrant, DeviceEnrollment, EnrolledDevices, ErrorCode, Role, RoundQuery,
    SealedUploadBatch, TaskInfo, UploadReceipt,
};
use tally_server::service::{
    ApiError, HostPolicy, Principal, check_check_in, check_upload_batch, check_version, parse_json,
    refuse_request,
};
use tracing::warn;

use crate::round::RelayRound;
use crate::state::{Route, State};

type App = Extract<Arc<State>>;

/// The largest request body, other than sealed uploads.
const BODY_LIMIT: usize = 1 << 20;
/// The largest sealed-upload request body: a batch of shuffle-model reports of hundreds of
/// messages each, every message sealed on its own.
const SEALED_BODY_LIMIT: usize = 64 << 20;
/// Who takes part in rounds: enrolled devices, and operators relaying for devices.
const DEVICES_AND_OPERATORS: [Role; 2] = [Role::Device, Role::Operator];

/// The relay's router, answering to the hosts `hosts` allows and to no browser page.
pub(crate) fn router(state: Arc<State>, hosts: HostPolicy) -> Router {
    let hosts = Arc::new(hosts);
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/v1/rounds", get(open_rounds))
        .route("/v1/rounds/{id}/check-in", post(check_in))
        .route("/v1/rounds/{id}/sealed-uploads", post(upload))
        .route("/v1/tasks", get(tasks))
        .route("/v1/tasks/{id}", get(task))
        .route("/v1/populations/{name}/devices", post(enroll))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let hosts = Arc::clone(&hosts);
            async move {
                match refuse_request(&request, &hosts) {
                    Some(refusal) => refusal.into_response(),
                    None => next.run(request).await,
                }
            }
        }))
        .with_state(state)
}

/// Turns a result into a response.
fn answer<T: Serialize>(result: Result<(StatusCode, T), ApiError>) -> Response {
    match result {
        Ok((status, body)) => (status, axum::Json(body)).into_response(),
        Err(error) => error.into_response(),
    }
}

/// Whether `who` takes part in rounds of `population`: a device in its own population's, an
/// operator in any.
fn covers(who: &Principal, population: &str) -> bool {
    who.role == Role::Operator || who.covers(population)
}

/// Where round `id` takes uploads from `who`.
fn route(state: &State, id: &str, who: &Principal) -> Result<Route, ApiError> {
    match state.route(id) {
        Ok(route) if covers(who, &route.query().population) => Ok(route),
        Ok(_) => Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("round {id} asks another population than this device's"),
        )),
        Err(true) => Err(closed(id)),
        Err(false) => Err(ApiError::new(
            ErrorCode::UnknownRound,
            format!("no round {id} at this relay"),
        )),
    }
}

fn closed(id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ClosedRound,
        format!("round {id} is closed at this relay"),
    )
}

async fn open_rounds(Extract(state): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = state
            .credentials
            .authorize(&headers, &DEVICES_AND_OPERATORS)
            .await?;
        let queries: Vec<RoundQuery> = state
            .open_rounds()
            .into_iter()
            .filter(|query| covers(&who, &query.population))
            .collect();
        Ok((StatusCode::OK, queries))
    }
    .await;
    answer(result)
}

/// The round `id` if this replica holds it and the caller (a device or an operator) takes
/// part in it, with the request's body as it came; the answer of the replica holding it if
/// another one does.
async fn round_request(
    state: &State,
    id: &str,
    path: &str,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Result<(Principal, Arc<RelayRound>, Bytes), Response>, ApiError> {
    let who = state
        .credentials
        .authorize(headers, &DEVICES_AND_OPERATORS)
        .await?;
    let bytes = state
        .credentials
        .read_json_body(headers, body, limit)
        .await?;
    match route(state, id, &who)? {
        Route::Here(round) => Ok(Ok((who, round, bytes))),
        Route::There(there) => {
            let path = format!("/v1/rounds/{id}/{path}");
            let answer = state
                .replica
                .forward(&there.address, &path, headers, bytes)
                .await?;
            Ok(Err(answer))
        }
    }
}

async fn check_in(
    Extract(state): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result: Result<Response, ApiError> = async {
        let (who, round, bytes) =
            match round_request(&state, &id, "check-in", &headers, body, BODY_LIMIT).await? {
                Ok(here) => here,
                Err(forwarded) => return Ok(forwarded),
            };
        let request: CheckIn = parse_json(&bytes)?;
        check_check_in(&request, who.role)?;
        let device = who.role == Role::Device;
        let tokens = round
            .check_in(&who, request.devices, device, &mut rand::rng())
            .ok_or_else(|| closed(&id))?;
        let grant = CheckInGrant {
            query: round.query.clone(),
            tokens,
        };
        Ok((StatusCode::OK, axum::Json(grant)).into_response())
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

async fn upload(
    Extract(state): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result: Result<Response, ApiError> = async {
        let (who, round, bytes) = match round_request(
            &state,
            &id,
            "sealed-uploads",
            &headers,
            body,
            SEALED_BODY_LIMIT,
        )
        .await?
        {
            Ok(here) => here,
            Err(forwarded) => return Ok(forwarded),
        };
        let batch: SealedUploadBatch = parse_json(&bytes)?;
        check_upload_batch(batch.version, batch.uploads.len())?;
        let outcome = round
            .upload(&who, batch.uploads)
            .ok_or_else(|| closed(&id))?;
        if outcome.full {
            let state = Arc::clone(&state);
            tokio::spawn(async move { state.close_round(&id).await });
        }
        let receipt = UploadReceipt {
            accepted: outcome.accepted,
            rejected: outcome.rejected,
        };
        Ok((StatusCode::OK, axum::Json(receipt)).into_response())
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

/// What the relay answers when the aggregator refused or failed a request it passed on.
fn upstream_error(error: &ClientError) -> ApiError {
    match error {
        ClientError::Server { body, .. }
            if matches!(body.code, ErrorCode::UnknownTask | ErrorCode::Forbidden) =>
        {
            ApiError::new(body.code, body.message.clone())
        }
        _ => {
            warn!(%error, "the aggregator did not answer a request the relay passed on");
            ApiError::new(
                ErrorCode::Internal,
                "the aggregator did not answer the relay; retry later",
            )
        }
    }
}

/// The tasks of the caller's population (every task for an operator), as the aggregator
/// states them: a device reads their state and guarantee (its own ledger needs it) from the
/// relay, which it reaches with its credential.
async fn tasks(Extract(state): App, headers: HeaderMap) -> Response {
    let result = async {
        let who = state
            .credentials
            .authorize(&headers, &DEVICES_AND_OPERATORS)
            .await?;
        let tasks: Vec<TaskInfo> = state
            .upstream()
            .tasks()
            .await
            .map_err(|e| upstream_error(&e))?
            .into_iter()
            .filter(|t| covers(&who, &t.spec.population))
            .collect();
        Ok((StatusCode::OK, tasks))
    }
    .await;
    answer(result)
}

async fn task(Extract(state): App, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let result = async {
        let who = state
            .credentials
            .authorize(&headers, &DEVICES_AND_OPERATORS)
            .await?;
        let task = state
            .upstream()
            .task(&id)
            .await
            .map_err(|e| upstream_error(&e))?;
        if !covers(&who, &task.spec.population) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("task {id} is not this credential's to read"),
            ));
        }
        Ok((StatusCode::OK, task))
    }
    .await;
    answer(result)
}

async fn enroll(
    Extract(state): App,
    Path(population): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        state
            .credentials
            .authorize(&headers, &[Role::Operator])
            .await?;
        let request: DeviceEnrollment = state
            .credentials
            .read_json(&headers, body, BODY_LIMIT)
            .await?;
        check_version(request.version)?;
        let tokens = state.credentials.enroll(&population, request.count).await?;
        Ok((StatusCode::CREATED, EnrolledDevices { population, tokens }))
    }
    .await;
    answer(result)
}
