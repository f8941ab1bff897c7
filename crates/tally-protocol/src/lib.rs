//! The registry of tally's protocol: every task kind and every kind of round defined once,
//! between the mechanisms (`tally-core`, `tally-accounting`) and the wire (`tally-messages`)
//! below it and the executors (the simulator, the server, the devices) above it.
//!
//! - [`rounds`]: how each kind of round is published as an [`Ask`](tally_messages::Ask)
//!   ([`PublishedQuery`]) and rebuilt by a device ([`AskResponder`]);
//! - [`domain`]: the mechanisms over a public domain, each calibrated and given its round in
//!   one arm of [`BuildDomainRound::build`];
//! - [`opt_prefix_tree`]: OptPrefixTree's published options and iterations;
//! - [`engine`]: every task kind, read off its spec by [`definition`] (the only `match` on a
//!   task's kind) into a [`TaskDefinition`]: its name, description, rounds and limits, the
//!   console's text, and its build into a calibrated task with its guarantee
//!   ([`Engine::build`]), driven round by round by one generic driver, each round behind the
//!   [`shuffler`] when its guarantee trusts one;
//! - [`document`]: the released documents, the same for a simulation (`tally histogram`,
//!   `tally heavy-hitters`, `tally quantiles`, `tally range`) and for a federated task;
//! - [`plan_document`], [`compose_plan`], [`shuffle_plan`], [`triehh_plus_plan`]: the plans'
//!   documents (`tally plan ... --json`, and the Python package's);
//! - [`shown`]: the numbers of those documents for people, rounded the same way in the command
//!   line's tables and the console's pages.
#![forbid(unsafe_code)]

pub mod compose_plan;
pub mod diagnosis;
pub mod document;
pub mod domain;
pub mod engine;
pub mod opt_prefix_tree;
pub mod plan_document;
pub mod rounds;
pub mod shown;
pub mod shuffle_plan;
pub mod shuffler;
pub mod triehh_plus_plan;

pub use domain::{
    BuildDomainRound, DomainRoundVisitor, FederatedDomainRound, ShuffleCalibration, domain_map,
    public_domain,
};
pub use engine::{
    CountedAggregate, DEFAULT_MIN_COHORT, Engine, OpenedRound, TaskDefinition, ThresholdRounds,
    definition, draw_public_coins,
};
pub use rounds::{AskError, AskResponder, PublishedQuery, WireQuery, coin_holder};
