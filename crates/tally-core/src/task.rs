//! Multi-round tasks: state machines that issue one query per round, learn from each round's
//! release, and finish with an output and the guarantee of the whole run.
//!
//! A task never sees raw reports: an executor (the simulator, or later the federated server)
//! runs each query over the clients and hands the task only what the round released. The
//! task's total guarantee is fixed when it is built, from its parameters, through
//! `tally-accounting`.

use tally_accounting::Guarantee;

/// A multi-round task on the round protocol.
pub trait Task {
    /// What the server broadcasts for one round.
    type Query;
    /// What one round publishes.
    type Release;
    /// What the whole task publishes.
    type Output;

    /// The next round's query, or `None` once the task is done.
    fn next_query(&mut self) -> Option<Self::Query>;

    /// Takes the release of the round whose query was returned last.
    fn observe(&mut self, release: Self::Release);

    /// The final output; call after [`Task::next_query`] returned `None`.
    fn finish(self) -> Self::Output;

    /// The guarantee of the whole task, every round included.
    fn guarantee(&self) -> &Guarantee;
}
