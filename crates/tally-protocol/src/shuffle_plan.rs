//! Planning amplification by shuffling and its document, as `tally plan shuffle --json` prints
//! it (docs/algorithms.md §8).

use serde_json::{Value, json};
use tally_accounting::naming::Parameter;
use tally_accounting::shuffle::{ShuffleBound, max_local_epsilon, shuffle_epsilon};

/// Why a shuffle plan was refused.
#[derive(Debug, thiserror::Error)]
pub enum ShufflePlanError {
    /// Neither or both of the local and the central `ε` were given.
    #[error(
        "give exactly one of {} (to get the central ε) and {} (to get the largest local ε₀)",
        Parameter("local_epsilon"),
        Parameter("epsilon")
    )]
    OneEpsilon,
    /// Whatever the accountant rejects.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
}

/// A solved shuffle plan.
#[derive(Clone, Copy, Debug)]
pub struct ShufflePlan {
    /// The local `ε₀` of each report (rounded down when solved for).
    pub local_epsilon: f64,
    /// The central `ε` after shuffling (rounded up when solved for).
    pub epsilon: f64,
    /// The central `δ`.
    pub delta: f64,
    /// The number of users.
    pub users: u64,
    /// The amplification bound.
    pub bound: ShuffleBound,
    /// Whether the central `ε` was solved for (else the local one).
    pub solved_for_epsilon: bool,
}

impl ShufflePlan {
    /// The central `ε` of `local_epsilon` reports, or the largest local `ε₀` that meets
    /// `epsilon`: exactly one must be given.
    ///
    /// # Errors
    ///
    /// [`ShufflePlanError::OneEpsilon`] unless exactly one `ε` is given, and whatever the
    /// accountant rejects.
    pub fn solve(
        local_epsilon: Option<f64>,
        epsilon: Option<f64>,
        users: u64,
        delta: f64,
        bound: ShuffleBound,
    ) -> Result<Self, ShufflePlanError> {
        let (local_epsilon, epsilon, solved_for_epsilon) = match (local_epsilon, epsilon) {
            (Some(eps0), None) => (eps0, shuffle_epsilon(eps0, users, delta, bound)?, true),
            (None, Some(eps)) => (max_local_epsilon(eps, users, delta, bound)?, eps, false),
            _ => return Err(ShufflePlanError::OneEpsilon),
        };
        Ok(Self {
            local_epsilon,
            epsilon,
            delta,
            users,
            bound,
            solved_for_epsilon,
        })
    }

    /// The document `tally plan shuffle --json` prints.
    pub fn document(&self) -> Value {
        json!({
            "mechanism": "shuffle",
            "epsilon": self.epsilon,
            "delta": self.delta,
            "local_epsilon": self.local_epsilon,
            "users": self.users,
            "bound": self.bound.name(),
            "neighbours": "replace-one",
            "solved_for": if self.solved_for_epsilon { "epsilon" } else { "local_epsilon" },
        })
    }
}
