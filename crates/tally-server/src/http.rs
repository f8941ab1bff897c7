//! The HTTP API (see tally-messages for the protocol): routing, body limits, JSON, and a
//! counter for every refusal.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tally_messages::{CheckIn, CheckInGrant, ErrorCode, TaskSpec, UploadBatch, UploadReceipt};

use crate::error::ApiError;
use crate::runtime::{Runtime, check_version};

/// The largest request body, other than uploads.
const BODY_LIMIT: usize = 1 << 20;
/// The largest upload request body.
const UPLOAD_BODY_LIMIT: usize = 16 << 20;
/// The most uploads in one request.
pub(crate) const MAX_BATCH: usize = 10_000;
/// The most tokens one check-in asks for.
pub(crate) const MAX_CHECK_IN: u32 = 10_000;

type App = State<Arc<Runtime>>;

/// The router of the whole API.
pub(crate) fn router(runtime: Arc<Runtime>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/v1/tasks", post(create_task).get(list_tasks))
        .route("/v1/tasks/{id}", get(get_task))
        .route("/v1/tasks/{id}/cancel", post(cancel_task))
        .route("/v1/tasks/{id}/result", get(task_result))
        .route("/v1/rounds", get(open_rounds))
        .route("/v1/rounds/{id}/check-in", post(check_in))
        .route("/v1/rounds/{id}/uploads", post(upload))
        .route("/v1/ledger", get(ledger))
        .with_state(runtime)
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
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
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
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| oversized())
}

/// Reads a JSON body of at most `limit` bytes.
async fn read_json<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = read_body(headers, body, limit).await?;
    serde_json::from_slice(&bytes).map_err(|e| ApiError::new(ErrorCode::Malformed, e.to_string()))
}

async fn metrics(State(runtime): App) -> Response {
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
        let spec: TaskSpec = read_json(&headers, body, BODY_LIMIT).await?;
        Ok((StatusCode::CREATED, runtime.create_task(spec).await?))
    }
    .await;
    answer(&runtime, result)
}

async fn list_tasks(State(runtime): App) -> Response {
    let tasks = runtime.tasks().await;
    answer(&runtime, Ok((StatusCode::OK, tasks)))
}

async fn get_task(State(runtime): App, Path(id): Path<String>) -> Response {
    let result = runtime.task(&id).await.map(|t| (StatusCode::OK, t));
    answer(&runtime, result)
}

async fn cancel_task(State(runtime): App, Path(id): Path<String>) -> Response {
    let result = runtime.cancel(&id).await.map(|t| (StatusCode::OK, t));
    answer(&runtime, result)
}

/// The stored document, byte for byte.
async fn task_result(State(runtime): App, Path(id): Path<String>) -> Response {
    match runtime.result(&id).await {
        Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => {
            runtime.metrics.reject(error.code);
            error.into_response()
        }
    }
}

async fn open_rounds(State(runtime): App) -> Response {
    let rounds = runtime.open_rounds();
    answer(&runtime, Ok((StatusCode::OK, rounds)))
}

async fn check_in(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let request: CheckIn = read_json(&headers, body, BODY_LIMIT).await?;
        check_version(request.version)?;
        if request.devices == 0 || request.devices > MAX_CHECK_IN {
            return Err(ApiError::new(
                ErrorCode::Oversized,
                format!("devices: 1 to {MAX_CHECK_IN} per check-in"),
            ));
        }
        let round = runtime.round(&id)?;
        let tokens = runtime
            .check_in(&round, request.devices)
            .ok_or_else(|| runtime.not_open(&id))?;
        Ok((
            StatusCode::OK,
            CheckInGrant {
                query: round.query.clone(),
                tokens,
            },
        ))
    }
    .await;
    answer(&runtime, result)
}

async fn upload(
    State(runtime): App,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let batch: UploadBatch = read_json(&headers, body, UPLOAD_BODY_LIMIT).await?;
        check_version(batch.version)?;
        if batch.uploads.len() > MAX_BATCH {
            return Err(ApiError::new(
                ErrorCode::Oversized,
                format!(
                    "{} uploads; at most {MAX_BATCH} per request",
                    batch.uploads.len()
                ),
            ));
        }
        let round = runtime.round(&id)?;
        let outcome = round
            .upload(batch.uploads)
            .ok_or_else(|| runtime.not_open(&id))?;
        runtime
            .metrics
            .accepted(outcome.reports, outcome.abstentions);
        for rejection in &outcome.rejected {
            runtime.metrics.reject(rejection.code);
        }
        if outcome.reached_target {
            let runtime = Arc::clone(&runtime);
            tokio::spawn(async move { runtime.close_round(&id).await });
        }
        Ok((
            StatusCode::OK,
            UploadReceipt {
                // Unwrap safety: batches are capped at MAX_BATCH uploads.
                accepted: u32::try_from(outcome.reports + outcome.abstentions)
                    .expect("batch size fits u32"),
                rejected: outcome.rejected,
            },
        ))
    }
    .await;
    answer(&runtime, result)
}

async fn ledger(State(runtime): App) -> Response {
    let result = runtime.ledger().await.map(|l| (StatusCode::OK, l));
    answer(&runtime, result)
}
