//! Mechanisms, exact samplers and round protocols of tally.
//!
//! This crate does no I/O, holds no global random number generator and never logs: every
//! function that samples takes `rng: &mut R`. Privacy guarantees come from `tally-accounting`.
#![forbid(unsafe_code)]

mod error;
pub mod heavy_hitters;
pub mod histogram;
pub mod ldp;
pub mod noise;
pub mod protocol;
pub mod quantiles;
pub mod sampling;
pub mod shuffle;
pub mod task;

pub use error::Error;
