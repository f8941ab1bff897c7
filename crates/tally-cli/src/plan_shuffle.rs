//! `tally plan shuffle`: amplification by shuffling (docs/algorithms.md §8).

use anyhow::Result;
use tally_accounting::shuffle::ShuffleBound;
use tally_protocol::shuffle_plan::ShufflePlan;

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
    let plan = ShufflePlan::solve(
        args.local_epsilon,
        args.epsilon,
        args.users,
        args.delta.delta,
        bound,
    )?;
    if args.json {
        print_json(&plan.document())?;
        return Ok(());
    }
    let (central, local) = if plan.solved_for_epsilon {
        ("epsilon (solved, rounded up)", "local epsilon")
    } else {
        ("epsilon", "local epsilon (solved, rounded down)")
    };
    print_fields(
        &format!("amplification by shuffling ({bound} bound, replace-one neighbours)"),
        &[
            ("users", args.users.to_string()),
            (local, format!("{:.6}", plan.local_epsilon)),
            (central, format!("{:.6}", plan.epsilon)),
            ("delta", format!("{:e}", args.delta.delta)),
        ],
    )?;
    Ok(())
}
