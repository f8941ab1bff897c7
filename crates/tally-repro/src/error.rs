//! The error type of `tally-repro`.

use std::io;
use std::path::PathBuf;

/// Why an experiment could not run or its outputs could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting is out of range.
    #[error("invalid setting {name}: {message}")]
    Setting {
        /// The setting's name.
        name: &'static str,
        /// What was wrong and what would be valid.
        message: String,
    },
    /// Writing a file or creating a directory failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing a CSV file failed.
    #[error("cannot write {}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: csv::Error,
    },
    /// Drawing a figure failed.
    #[error("cannot draw {}: {message}", path.display())]
    Figure {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Loading or generating a population failed.
    #[error(transparent)]
    Sim(#[from] tally_sim::Error),
    /// A mechanism could not be built.
    #[error(transparent)]
    Core(#[from] tally_core::Error),
    /// A calibration failed.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
