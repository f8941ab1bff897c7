//! `tally plan sample-threshold`.

use std::io;

use anyhow::{Result, bail};
use serde_json::json;
use tally_accounting::sample_threshold::{
    Analysis, Plan, PlanTarget, SampleThresholdParams, max_sampling_rate_cap, plan,
};
use tally_accounting::{Guarantee, Neighbours};

use crate::cli::PlanArgs;
use crate::output::{print_fields, print_json};

pub(crate) fn run(args: &PlanArgs) -> Result<()> {
    let epsilon = args.privacy.epsilon;
    let analysis = Analysis::from(args.privacy.method);
    let neighbours = Neighbours::from(args.privacy.neighbours);
    match (args.delta, args.alpha, args.sampling_rate, args.threshold) {
        (_, None, Some(rate), Some(threshold)) => {
            let params = SampleThresholdParams::new(rate, threshold)?;
            let guarantee = params.guarantee(epsilon, analysis, neighbours)?;
            report_delta(&guarantee, &params, args.delta, args.privacy.json)?;
        }
        (None, ..) => bail!(
            "missing --delta: give a target δ, or both --sampling-rate and --threshold to \
             compute δ"
        ),
        (Some(delta_target), alpha, rate, threshold) => {
            let target = match (alpha, rate, threshold) {
                (Some(alpha), ..) => PlanTarget::Alpha(alpha),
                (None, Some(rate), None) => PlanTarget::SamplingRate(rate),
                (None, None, Some(threshold)) => PlanTarget::Threshold(threshold),
                _ => PlanTarget::MinReleasedCount,
            };
            let plan = plan(epsilon, delta_target, target, analysis, neighbours)?;
            report_plan(&plan, args.privacy.json)?;
        }
    }
    Ok(())
}

fn solved_for(target: PlanTarget) -> (&'static str, &'static str) {
    match target {
        PlanTarget::Alpha(_) => (
            "threshold",
            "sampling rate = α·(1 − e^(−ε)); the smallest threshold that meets (ε, δ)",
        ),
        PlanTarget::SamplingRate(_) => ("threshold", "the smallest threshold that meets (ε, δ)"),
        PlanTarget::Threshold(_) => (
            "sampling_rate",
            "the largest sampling rate that meets (ε, δ) at this threshold",
        ),
        PlanTarget::MinReleasedCount => (
            "sampling_rate,threshold",
            "the pair minimising threshold / sampling rate, the smallest population count a \
             release can show",
        ),
    }
}

fn report_plan(plan: &Plan, as_json: bool) -> io::Result<()> {
    let (solved, why) = solved_for(plan.target);
    let rate = plan.params.sampling_rate();
    let threshold = plan.params.threshold();
    if as_json {
        return print_json(&json!({
            "mechanism": "sample-and-threshold",
            "epsilon": plan.epsilon,
            "delta": plan.delta,
            "achieved_delta": plan.achieved_delta,
            "sampling_rate": rate,
            "threshold": threshold,
            "alpha": plan.alpha(),
            "min_released_count": plan.min_released_count(),
            "method": plan.analysis.name(),
            "neighbours": plan.neighbours.name(),
            "solved_for": solved,
            "explanation": why,
        }));
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
        return print_json(&json!({
            "mechanism": "sample-and-threshold",
            "epsilon": guarantee.epsilon,
            "delta": guarantee.delta,
            "target_delta": target,
            "meets_target": meets,
            "sampling_rate": params.sampling_rate(),
            "threshold": params.threshold(),
            "method": guarantee.analysis,
            "neighbours": guarantee.neighbours.name(),
            "solved_for": "delta",
        }));
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
