//! The planner: what a mechanism would release and how well, before any data is touched,
//! compared with the mechanisms it could be swapped for; and the self-contained HTML report
//! (`index.html` with inline figures, beside `plan.json`) that `tally plan ... --report DIR`
//! and the Python package's `plan` functions write.
//!
//! - [`key_selection`]: sample-and-threshold against noise-based key selection (release
//!   curves, errors, and a population's predicted recall by ε);
//! - [`domain`]: the histogram mechanisms over a public domain, calibrated alike;
//! - [`quantiles`]: a quantile release's per-level rounds and predicted suppression;
//! - [`triehh_plus`]: TrieHH++'s levels and its predicted heavy hitters;
//! - [`page`]: the reports' pages.
//!
//! The parameters themselves come from the registry (`tally-protocol`) and the simulator
//! (`tally-sim`), the same functions the commands that run call, so a plan predicts the run.
#![forbid(unsafe_code)]

use std::path::PathBuf;

pub mod domain;
pub mod key_selection;
pub mod page;
pub mod quantiles;
pub mod triehh_plus;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The report's directory names a file.
    #[error("{}: a file is in the way; give a directory (it is created if missing)", .0.display())]
    NotADirectory(PathBuf),
    /// Creating the report's directory failed.
    #[error("cannot create the report directory {}", path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing a file of the report failed.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Drawing a figure failed.
    #[error(transparent)]
    Figure(#[from] tally_repro::Error),
    /// The plan's document could not be serialized.
    #[error("cannot serialize the plan: {0}")]
    Json(#[from] serde_json::Error),
    /// Writing the page into its string failed.
    #[error("cannot lay out the page")]
    Format(#[from] std::fmt::Error),
}
