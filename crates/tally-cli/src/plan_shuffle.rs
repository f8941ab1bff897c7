//! `tally plan shuffle`: amplification by shuffling (ALGORITHMS.md §8).

use anyhow::{Result, bail};
use serde_json::json;
use tally_accounting::shuffle::{ShuffleBound, max_local_epsilon, shuffle_epsilon};

use crate::cli::{PlanShuffleArgs, ShuffleBoundArg};
use crate::output::{print_fields, print_json};

impl From<ShuffleBoundArg> for ShuffleBound {
    fn from(bound: ShuffleBoundArg) -> Self {
        match bound {
            ShuffleBoundArg::Fmt21 => Self::Fmt21,
            ShuffleBoundArg::Fmt23 => Self::Fmt23,
            ShuffleBoundArg::ClosedForm => Self::ClosedForm,
        }
    }
}

pub(crate) fn run(args: &PlanShuffleArgs) -> Result<()> {
    let bound = ShuffleBound::from(args.bound);
    let (local_epsilon, epsilon, solved_for) = match (args.local_epsilon, args.epsilon) {
        (Some(eps0), None) => (
            eps0,
            shuffle_epsilon(eps0, args.users, args.delta, bound)?,
            "epsilon",
        ),
        (None, Some(eps)) => (
            max_local_epsilon(eps, args.users, args.delta, bound)?,
            eps,
            "local_epsilon",
        ),
        _ => bail!(
            "give exactly one of --local-epsilon (to get the central ε) and --epsilon (to get the largest local ε₀)"
        ),
    };
    if args.json {
        print_json(&json!({
            "mechanism": "shuffle",
            "epsilon": epsilon,
            "delta": args.delta,
            "local_epsilon": local_epsilon,
            "users": args.users,
            "bound": bound.name(),
            "neighbours": "replace-one",
            "solved_for": solved_for,
        }))?;
        return Ok(());
    }
    let (central, local) = if solved_for == "epsilon" {
        ("epsilon (solved, rounded up)", "local epsilon")
    } else {
        ("epsilon", "local epsilon (solved, rounded down)")
    };
    print_fields(
        &format!("amplification by shuffling ({bound} bound, replace-one neighbours)"),
        &[
            ("users", args.users.to_string()),
            (local, format!("{local_epsilon:.6}")),
            (central, format!("{epsilon:.6}")),
            ("delta", format!("{:e}", args.delta)),
        ],
    )?;
    Ok(())
}
