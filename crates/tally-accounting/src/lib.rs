//! Privacy accounting for tally: guarantees, calibration and the analyses behind them.
//!
//! This crate does no I/O and draws no randomness. Every function that returns a privacy
//! parameter rounds in the safe direction: a `δ` is an upper bound on the true value, and a
//! solved sampling rate or threshold never exceeds (respectively undercuts) what the analysis
//! allows.
#![forbid(unsafe_code)]

pub mod balcer_cheu;
pub mod blanket;
pub mod central;
pub mod collusion;
pub mod composition;
mod error;
mod estimate_error;
pub mod filter;
pub mod ghazi;
mod guarantee;
pub mod key_selection;
pub mod local;
pub mod naming;
pub mod numeric;
pub mod opt_prefix_tree;
pub mod partition_selection;
pub mod pld;
pub mod rdp;
pub mod sample_threshold;
pub mod shuffle;
pub mod shuffle_loss;
pub mod triehh;

pub use collusion::Collusion;
pub use error::Error;
pub use estimate_error::{ErrorLaw, EstimateError, ShownError, ThresholdedEstimate};
pub use guarantee::{Guarantee, Neighbours, TrustModel, compose_rounds, honest_users};
