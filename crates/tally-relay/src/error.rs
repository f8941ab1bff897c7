//! What stops a relay.

use tally_server::ServerError;

/// Why a relay cannot start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The options cannot run.
    #[error("{0}")]
    Invalid(String),
    /// The database, the lease or the service plumbing failed.
    #[error(transparent)]
    Service(#[from] ServerError),
    /// Listening failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
