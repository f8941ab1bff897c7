//! `tally plan triehh++`: per-level S&T parameters whose levels compose tightly.

use anyhow::Result;
use tally_cli::triehh_plus_plan::TriePlusPlan;

use crate::cli::PlanTrieArgs;
use crate::output::{print_fields, print_json};

pub(crate) fn run(args: &PlanTrieArgs) -> Result<()> {
    let plan = TriePlusPlan::solve(
        args.epsilon,
        args.delta,
        args.levels,
        args.sampling_rate,
        args.threshold,
    )?;
    if args.json {
        return Ok(print_json(&plan.document())?);
    }
    let (levels, delta) = (plan.levels, plan.delta);
    print_fields(
        &format!("TrieHH++ plan ({levels} levels, tight composition, add-remove neighbours)"),
        &[
            ("epsilon (target)", plan.epsilon.to_string()),
            ("delta (target)", format!("{delta:e}")),
            (
                "sampling rate",
                format!("{:.6}", plan.params.sampling_rate()),
            ),
            ("threshold", plan.params.threshold().to_string()),
            (
                "composed epsilon",
                format!("{:.6} at delta {delta:e}", plan.composed_epsilon),
            ),
            (
                "basic composition",
                plan.basic_epsilon.map_or_else(
                    || "none (a level alone has no epsilon at delta/L)".to_owned(),
                    |e| format!("{e:.6} (each level at delta/L, summed)"),
                ),
            ),
            ("solved for", plan.solved_for.to_owned()),
        ],
    )?;
    Ok(())
}
