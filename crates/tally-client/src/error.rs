//! What can go wrong talking to a server.

use tally_messages::{ErrorBody, ErrorCode};

/// Why a request to the server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server URL cannot be used.
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it and what would be valid.
        reason: String,
    },
    /// The CA certificate to trust cannot be used.
    #[error("invalid CA certificate: {reason}")]
    InvalidCertificate {
        /// What is wrong with it.
        reason: String,
    },
    /// The server refused the request with one of the protocol's errors.
    #[error("{request}: the server answered {status} {}: {}", body.code.name(), body.message)]
    Server {
        /// The request, as `METHOD /path`.
        request: String,
        /// The HTTP status.
        status: u16,
        /// The server's error body.
        body: ErrorBody,
    },
    /// The server answered with an error status whose body is not a protocol error (a proxy,
    /// or not a tally server).
    #[error("{request}: the server answered {status}: {text}")]
    Status {
        /// The request, as `METHOD /path`.
        request: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        text: String,
    },
    /// The server could not be reached, or the exchange broke off, on every attempt.
    #[error("{request}: {detail} (after {attempts} attempt{})", if *attempts == 1 { "" } else { "s" })]
    Transport {
        /// The request, as `METHOD /path`.
        request: String,
        /// How many times it was tried.
        attempts: u32,
        /// What failed, with its causes.
        detail: String,
    },
    /// The server's request-rate limit (429) still refused the request once the retry
    /// policy's budget for such refusals was spent.
    #[error(
        "{request}: the server's request-rate limit refused it {refusals} time{} ({waited:?} \
         spent waiting{}); send fewer requests at once (e.g. a lower --concurrency) or ask the \
         operator to raise `tally serve --rate-limit`",
        if *refusals == 1 { "" } else { "s" },
        match retry_after { Some(wait) => format!(", the last asked to wait {wait:?} more"), None => String::new() }
    )]
    RateLimited {
        /// The request, as `METHOD /path`.
        request: String,
        /// How many 429 answers it got.
        refusals: u32,
        /// How long it waited them out in all.
        waited: std::time::Duration,
        /// The wait the last answer's `Retry-After` asked for, if it named one.
        retry_after: Option<std::time::Duration>,
    },
    /// The aggregator's key configuration would not come from the aggregator itself (the
    /// relay's address, or plain HTTP beyond loopback), or cannot be used.
    #[error("the aggregator's key: {reason}")]
    AggregatorKey {
        /// What is wrong and what would do.
        reason: String,
    },
    /// The answer is not the JSON the protocol specifies.
    #[error("{request}: the answer is not valid protocol JSON: {source}")]
    Decode {
        /// The request, as `METHOD /path`.
        request: String,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
}

impl ClientError {
    /// The protocol error code, when the server answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Server { body, .. } => Some(body.code),
            Self::RateLimited { .. } => Some(ErrorCode::RateLimited),
            _ => None,
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Server { status, .. } | Self::Status { status, .. } => Some(*status),
            Self::RateLimited { .. } => Some(429),
            _ => None,
        }
    }

    /// Whether the error says the round is over for devices: it closed (cohort target or
    /// deadline reached) or the server no longer knows it (it was aborted by a restart).
    pub fn round_is_over(&self) -> bool {
        matches!(
            self.code(),
            Some(ErrorCode::ClosedRound | ErrorCode::UnknownRound)
        )
    }
}
