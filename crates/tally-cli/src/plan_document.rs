//! The JSON documents of `tally plan sample-threshold --json`.

use serde_json::{Value, json};
use tally_accounting::Guarantee;
use tally_accounting::sample_threshold::{Plan, PlanTarget, SampleThresholdParams};

/// What the planner solved for and why: the `solved_for` field and its explanation.
pub fn solved_for(target: PlanTarget) -> (&'static str, &'static str) {
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

/// The document of a solved plan.
pub fn plan(plan: &Plan) -> Value {
    let (solved, why) = solved_for(plan.target);
    json!({
        "mechanism": "sample-and-threshold",
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "achieved_delta": plan.achieved_delta,
        "sampling_rate": plan.params.sampling_rate(),
        "threshold": plan.params.threshold(),
        "alpha": plan.alpha(),
        "min_released_count": plan.min_released_count(),
        "method": plan.analysis.name(),
        "neighbours": plan.neighbours.name(),
        "solved_for": solved,
        "explanation": why,
    })
}

/// The document of the `δ` of given parameters, checked against `target` if there is one.
pub fn delta(guarantee: &Guarantee, params: &SampleThresholdParams, target: Option<f64>) -> Value {
    json!({
        "mechanism": "sample-and-threshold",
        "epsilon": guarantee.epsilon,
        "delta": guarantee.delta,
        "target_delta": target,
        "meets_target": target.map(|t| guarantee.delta <= t),
        "sampling_rate": params.sampling_rate(),
        "threshold": params.threshold(),
        "method": guarantee.analysis,
        "neighbours": guarantee.neighbours.name(),
        "solved_for": "delta",
    })
}
