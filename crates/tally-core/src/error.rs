//! The error type of `tally-core`.

/// Why a mechanism, sampler or protocol could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside the range the mechanism accepts.
    #[error(
        "{}: expected {expected}",
        tally_accounting::naming::invalid(name, value)
    )]
    InvalidParameter {
        /// The parameter's name as the user knows it.
        name: &'static str,
        /// The rejected value, formatted.
        value: String,
        /// What would have been valid.
        expected: &'static str,
    },
    /// The privacy accountant rejected the parameters.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
}

impl Error {
    /// Builds [`Error::InvalidParameter`].
    pub(crate) fn invalid(
        name: &'static str,
        value: impl ToString,
        expected: &'static str,
    ) -> Self {
        Self::InvalidParameter {
            name,
            value: value.to_string(),
            expected,
        }
    }
}
