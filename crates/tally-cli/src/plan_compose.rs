//! `tally plan compose`: the total `(ε, δ)` of `K` rounds that are each `(ε, δ)`-DP.

use anyhow::Result;
use tally_accounting::composition::Composition;
use tally_protocol::compose_plan::{ComposeMethod, compose};

use crate::cli::{ComposeMethodArg, PlanComposeArgs};
use crate::output::{print_fields, print_json};

impl From<ComposeMethodArg> for ComposeMethod {
    fn from(method: ComposeMethodArg) -> Self {
        match method {
            ComposeMethodArg::Basic => Self::Rule(Composition::Basic),
            ComposeMethodArg::Advanced => Self::Rule(Composition::Advanced),
            ComposeMethodArg::Optimal => Self::Rule(Composition::Optimal),
            ComposeMethodArg::Pld => Self::Rule(Composition::Pld),
            ComposeMethodArg::Rdp => Self::Rdp,
        }
    }
}

pub(crate) fn run(args: &PlanComposeArgs) -> Result<()> {
    let method = ComposeMethod::from(args.method);
    let (epsilon, delta, document) = compose(
        args.epsilon,
        args.delta,
        args.rounds,
        args.target_delta,
        method,
    )?;
    if args.json {
        print_json(&document)?;
        return Ok(());
    }
    print_fields(
        &format!("composition of {} rounds ({})", args.rounds, method.name()),
        &[
            ("per-round epsilon", format!("{}", args.epsilon)),
            ("per-round delta", format!("{:e}", args.delta)),
            ("epsilon (rounded up)", format!("{epsilon:.6}")),
            ("delta", format!("{delta:e}")),
        ],
    )?;
    Ok(())
}
