//! `tally plan triehh++`: per-level S&T parameters whose levels compose tightly.

use std::path::Path;

use anyhow::Result;
use tally_accounting::sample_threshold::Analysis;
use tally_plan::triehh_plus::{self, KnownWords, SweepTarget};
use tally_protocol::triehh_plus_plan::TriePlusPlan;
use tally_sim::CountedPopulation;

use crate::cli::PlanTrieArgs;
use crate::input::load_report_population;
use crate::output::{print_fields, print_json, save_report};
use tally_plan::page;

pub(crate) fn run(args: &PlanTrieArgs) -> Result<()> {
    args.report.refuse_population_without_report()?;
    let plan = TriePlusPlan::solve(
        args.target.epsilon,
        args.target.delta(),
        args.levels,
        Analysis::from(args.analysis.method),
        args.round.sampling_rate,
        args.round.threshold,
    )?;
    if let Some(dir) = &args.report.report {
        write_report(&plan, args, dir)?;
    }
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
            ("analysis of a level", plan.analysis.name().to_owned()),
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
            ("solved for", plan.explanation.to_owned()),
        ],
    )?;
    Ok(())
}

/// Builds the report of `plan`, on the population the arguments name, and writes it.
fn write_report(plan: &TriePlusPlan, args: &PlanTrieArgs, dir: &Path) -> Result<()> {
    let population = load_report_population(&args.report)?;
    let counted = population.as_ref().map(CountedPopulation::from_population);
    let words = counted.as_ref().map(|counted| KnownWords {
        description: counted.description(),
        clients: counted.clients(),
        items: counted.items(),
        top: args.report.top,
    });
    let target = SweepTarget {
        sampling_rate: args.round.sampling_rate,
        threshold: args.round.threshold,
    };
    let segment = usize::try_from(args.segment)?;
    let report = triehh_plus::build(plan.clone(), segment, target, words);
    save_report(dir, |dir| page::triehh_plus::write(&report, dir))
}
