//! The parts of the `tally` commands that other front ends share, so that they print the same
//! documents for the same inputs: the Python package builds its `to_json()` here.
#![forbid(unsafe_code)]

pub mod compose_plan;
pub mod domain_plan;
pub mod plan_document;
pub mod plan_report;
pub mod quantiles_report;
pub mod sample_threshold_release;
pub mod shuffle_plan;
pub mod triehh_plus_plan;
pub mod triehh_plus_release;
pub mod triehh_plus_report;
pub mod values_release;
