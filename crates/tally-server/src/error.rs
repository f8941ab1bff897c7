//! Errors: what the HTTP API answers, and what stops the server.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tally_messages::{ErrorBody, ErrorCode};

/// Why the server cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The database failed.
    #[error("storage: {0}")]
    Storage(#[from] sqlx::Error),
    /// The stored state does not make sense.
    #[error("stored state is inconsistent: {0}")]
    Corrupt(String),
    /// Another process holds the SQLite database (one writer per SQLite database).
    #[error(
        "another tally process holds the database {0}: one server or relay per SQLite database (stop it first; on PostgreSQL, servers and relays run as replicas)"
    )]
    Locked(String),
    /// This replica no longer holds the lease of the task it drove (another replica took it
    /// over, or the task was cancelled beside it): it committed nothing and stops driving it.
    #[error(
        "task {0} is no longer this replica's to drive: another replica took its lease over, or it no longer runs"
    )]
    LeaseLost(String),
    /// A request (such as a credential's) is not valid.
    #[error("{0}")]
    Invalid(String),
    /// Listening or serving failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// An error answer: a code from the protocol and a message saying what was wrong, answered
/// with the code's HTTP status and an [`ErrorBody`].
#[derive(Debug)]
pub struct ApiError {
    /// Why the request was refused.
    pub code: ErrorCode,
    message: String,
    conflict: bool,
    retry_after: Option<std::time::Duration>,
}

impl ApiError {
    /// A refusal with `code`, saying `message` (what was wrong and what would be valid).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            conflict: false,
            retry_after: None,
        }
    }

    /// Answers 409 instead of 404 (a result asked for before the task finished).
    pub(crate) fn with_conflict(mut self, conflict: bool) -> Self {
        self.conflict = conflict;
        self
    }

    /// Tells the client how long to wait before it retries (`Retry-After`, in whole seconds,
    /// rounded up).
    pub(crate) fn with_retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// What went wrong, for a person.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status the API answers with.
    pub(crate) fn status(&self) -> StatusCode {
        match self.code {
            ErrorCode::Malformed => StatusCode::BAD_REQUEST,
            ErrorCode::Oversized => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnknownTask
            | ErrorCode::UnknownRound
            | ErrorCode::UnknownCredential
            | ErrorCode::UnknownPopulation => StatusCode::NOT_FOUND,
            ErrorCode::PopulationExists => StatusCode::CONFLICT,
            ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorCode::Forbidden => StatusCode::FORBIDDEN,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::NoResult if self.conflict => StatusCode::CONFLICT,
            ErrorCode::NoResult => StatusCode::NOT_FOUND,
            ErrorCode::ClosedRound | ErrorCode::ReusedToken | ErrorCode::BudgetExceeded => {
                StatusCode::CONFLICT
            }
            ErrorCode::BadPrefix
            | ErrorCode::BadBucket
            | ErrorCode::InvalidTask
            | ErrorCode::BelowMinCohort
            | ErrorCode::UnknownKey
            | ErrorCode::UnopenedReport
            | ErrorCode::DuplicateReport => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::AlreadyRelayed => StatusCode::CONFLICT,
            ErrorCode::UnknownToken => StatusCode::FORBIDDEN,
            ErrorCode::Timeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<ServerError> for ApiError {
    fn from(error: ServerError) -> Self {
        tracing::error!(%error, "request failed");
        Self::new(ErrorCode::Internal, "the server failed; retry later")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let unauthenticated = self.code == ErrorCode::Unauthenticated;
        let retry_after = self.retry_after.map(|wait| {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            axum::http::HeaderValue::from(seconds.max(1))
        });
        let body = ErrorBody {
            code: self.code,
            message: self.message,
        };
        let mut response = (status, Json(body)).into_response();
        if unauthenticated {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds);
        }
        response
    }
}
