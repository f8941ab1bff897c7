//! The parts of the `tally` commands that build their reports: `tally plan ... --report` and
//! the benchmarks read them. The documents other front ends share (the Python package's
//! `to_json()`) are built by the registry (`tally-protocol`) and the simulator (`tally-sim`).
#![forbid(unsafe_code)]

pub mod domain_plan;
pub mod plan_report;
pub mod quantiles_report;
pub mod triehh_plus_report;
