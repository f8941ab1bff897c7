//! `tally plan sample-threshold`.

use std::io;
use std::path::Path;

use anyhow::Result;
use tally_accounting::sample_threshold::{
    Analysis, Plan, SampleThresholdParams, max_sampling_rate_cap,
};
use tally_accounting::{Guarantee, Neighbours};

use tally_plan::key_selection::{self, KnownPopulation};
use tally_plan::page;
use tally_protocol::plan_document::{self, Planned, solved_for};

use crate::cli::PlanArgs;
use crate::input::load_report_population;
use crate::output::{print_fields, print_json, save_report};

pub(crate) fn run(args: &PlanArgs) -> Result<()> {
    args.report.refuse_population_without_report()?;
    let planned = plan_document::solve(
        args.privacy.target.epsilon,
        args.privacy.target.delta(),
        args.alpha,
        args.round.sampling_rate,
        args.round.threshold,
        Analysis::from(args.privacy.analysis.method),
        Neighbours::from(args.privacy.neighbours),
    )?;
    if let Some(dir) = &args.report.report {
        write_report(&planned, args, dir)?;
    }
    match &planned {
        Planned::Plan(plan) => report_plan(plan, args.privacy.json)?,
        Planned::Delta {
            guarantee,
            params,
            target,
        } => report_delta(guarantee, params, *target, args.privacy.json)?,
    }
    Ok(())
}

/// Builds the report of `planned`, on the population the arguments name, and writes it.
fn write_report(planned: &Planned, args: &PlanArgs, dir: &Path) -> Result<()> {
    let population = load_report_population(&args.report)?;
    let counts: Vec<u64> = population
        .iter()
        .flat_map(|p| p.item_counts().iter().map(|&(_, count)| count))
        .collect();
    let known = population.as_ref().map(|p| KnownPopulation {
        description: p.description(),
        clients: p.len() as u64,
        counts: &counts,
        top: args.report.top,
    });
    let report = key_selection::build(planned, known)?;
    save_report(dir, |dir| page::key_selection::write(&report, dir))
}

fn report_plan(plan: &Plan, as_json: bool) -> io::Result<()> {
    let (_, why) = solved_for(plan.target);
    let rate = plan.params.sampling_rate();
    let threshold = plan.params.threshold();
    if as_json {
        return print_json(&plan_document::plan(plan));
    }
    print_fields(
        &format!(
            "sample-and-threshold plan ({} analysis, {} neighbours)",
            plan.analysis, plan.neighbours
        ),
        &[
            ("epsilon", plan.epsilon.to_string()),
            ("delta (target)", format!("{:e}", plan.delta)),
            ("delta (achieved)", format!("{:.4e}", plan.achieved_delta)),
            ("sampling rate", format!("{rate:.6}")),
            ("threshold", threshold.to_string()),
            (
                "alpha",
                format!(
                    "{:.4} of the largest rate {:.6}",
                    plan.alpha(),
                    max_sampling_rate_cap(plan.epsilon, plan.neighbours)
                ),
            ),
            (
                "smallest count shown",
                format!(
                    "{:.1} clients (threshold / rate)",
                    plan.min_released_count()
                ),
            ),
            ("solved for", why.to_owned()),
        ],
    )
}

fn report_delta(
    guarantee: &Guarantee,
    params: &SampleThresholdParams,
    target: Option<f64>,
    as_json: bool,
) -> io::Result<()> {
    let meets = target.map(|t| guarantee.delta <= t);
    if as_json {
        return print_json(&plan_document::delta(guarantee, params, target));
    }
    let mut rows = vec![
        ("epsilon", guarantee.epsilon.to_string()),
        ("sampling rate", params.sampling_rate().to_string()),
        ("threshold", params.threshold().to_string()),
        ("delta", format!("{:.6e}", guarantee.delta)),
    ];
    if let (Some(t), Some(ok)) = (target, meets) {
        rows.push((
            "target delta",
            format!("{t:e} ({})", if ok { "met" } else { "NOT met" }),
        ));
    }
    print_fields(
        &format!(
            "sample-and-threshold privacy ({} analysis, {} neighbours)",
            guarantee.analysis, guarantee.neighbours
        ),
        &rows,
    )
}
