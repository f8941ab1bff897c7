//! The error type of `tally-accounting`.

/// Why a privacy analysis could not be carried out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside the range the analysis accepts.
    #[error("{}: expected {expected}", crate::naming::invalid(name, value))]
    InvalidParameter {
        /// The parameter's name as the user knows it.
        name: &'static str,
        /// The rejected value, formatted.
        value: String,
        /// What would have been valid.
        expected: String,
    },
    /// No parameter in the searched range meets the target.
    #[error("no {what} meets the target: {why}")]
    Infeasible {
        /// The parameter that was solved for.
        what: &'static str,
        /// Why the search failed, in words.
        why: String,
    },
}

impl Error {
    /// Builds [`Error::InvalidParameter`].
    pub(crate) fn invalid(
        name: &'static str,
        value: impl ToString,
        expected: impl Into<String>,
    ) -> Self {
        Self::InvalidParameter {
            name,
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// Builds [`Error::Infeasible`].
    pub(crate) fn infeasible(what: &'static str, why: impl Into<String>) -> Self {
        Self::Infeasible {
            what,
            why: why.into(),
        }
    }
}
