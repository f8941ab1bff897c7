//! `tally plan compose`: the total `(ε, δ)` of `K` rounds that are each `(ε, δ)`-DP.

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde_json::json;
use tally_accounting::composition::{Composition, compose_basic};
use tally_accounting::rdp::compose_rdp_homogeneous;
use tally_accounting::{Guarantee, Neighbours, TrustModel, compose_rounds};

use crate::cli::{ComposeMethodArg, PlanComposeArgs};
use crate::output::{print_fields, print_json};

pub(crate) fn run(args: &PlanComposeArgs) -> Result<()> {
    let rounds = usize::try_from(args.rounds).context("--rounds does not fit in memory")?;
    let target = || {
        args.target_delta
            .context("missing --target-delta: the total δ at which to report ε")
    };
    // The neighbour relation and trust model carry through composition unchanged.
    let per_round = Guarantee {
        epsilon: args.epsilon,
        delta: args.delta,
        neighbours: Neighbours::AddRemove,
        model: TrustModel::Central,
        analysis: String::new(),
    };
    let by_rule = |composition| -> Result<(f64, f64)> {
        let total = compose_rounds(&per_round, rounds, composition, target()?)?;
        Ok((total.epsilon, total.delta))
    };
    let (epsilon, delta) = match args.method {
        ComposeMethodArg::Basic => compose_basic(&vec![(args.epsilon, args.delta); rounds])?,
        ComposeMethodArg::Rdp => {
            if args.delta != 0.0 {
                bail!(
                    "--method rdp composes pure ε-DP rounds only: give --delta 0, or use pld or \
                     optimal"
                );
            }
            compose_rdp_homogeneous(args.epsilon, args.rounds, target()?)?
        }
        ComposeMethodArg::Advanced => by_rule(Composition::Advanced)?,
        ComposeMethodArg::Optimal => by_rule(Composition::Optimal)?,
        ComposeMethodArg::Pld => by_rule(Composition::Pld)?,
    };
    let method = args
        .method
        .to_possible_value()
        .map(|v| v.get_name().to_owned());
    let method = method.unwrap_or_default();
    if args.json {
        print_json(&json!({
            "epsilon": epsilon,
            "delta": delta,
            "method": method,
            "rounds": args.rounds,
            "per_round": {"epsilon": args.epsilon, "delta": args.delta},
            "target_delta": args.target_delta,
        }))?;
        return Ok(());
    }
    print_fields(
        &format!("composition of {} rounds ({method})", args.rounds),
        &[
            ("per-round epsilon", format!("{}", args.epsilon)),
            ("per-round delta", format!("{:e}", args.delta)),
            ("epsilon (rounded up)", format!("{epsilon:.6}")),
            ("delta", format!("{delta:e}")),
        ],
    )?;
    Ok(())
}
