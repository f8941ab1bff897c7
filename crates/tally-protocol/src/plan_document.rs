//! The JSON documents of `tally plan sample-threshold --json`.

use serde_json::{Value, json};
use tally_accounting::naming::Parameter;
use tally_accounting::sample_threshold::{self, Analysis, Plan, PlanTarget, SampleThresholdParams};
use tally_accounting::{Guarantee, Neighbours};

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Neither a target δ nor both parameters.
    #[error(
        "missing {}: give a target δ, or both {} and {} to compute δ",
        Parameter("delta"),
        Parameter("sampling_rate"),
        Parameter("threshold")
    )]
    MissingDelta,
    /// The accountant rejected the request.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
}

/// A plan, or the `δ` of given parameters.
#[derive(Clone, Debug)]
pub enum Planned {
    /// Parameters solved for a target `(ε, δ)`.
    Plan(Plan),
    /// The `δ` of given parameters, checked against a target if there is one.
    Delta {
        /// The guarantee of the parameters.
        guarantee: Guarantee,
        /// The parameters.
        params: SampleThresholdParams,
        /// The target `δ`, if any.
        target: Option<f64>,
    },
}

impl Planned {
    /// The `--json` document.
    pub fn document(&self) -> Value {
        match self {
            Self::Plan(solved) => self::plan(solved),
            Self::Delta {
                guarantee,
                params,
                target,
            } => delta(guarantee, params, *target),
        }
    }
}

/// `tally plan sample-threshold`: with both a sampling rate and a threshold (and no `α`), the
/// `δ` they give; otherwise the parameters that meet the target `delta`, solving for what the
/// arguments leave open.
///
/// # Errors
///
/// [`PlanError::MissingDelta`] without a target to solve for, and whatever the accountant
/// rejects.
pub fn solve(
    epsilon: f64,
    delta: Option<f64>,
    alpha: Option<f64>,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<Planned, PlanError> {
    match (delta, alpha, sampling_rate, threshold) {
        (_, None, Some(rate), Some(threshold)) => {
            let params = SampleThresholdParams::new(rate, threshold)?;
            let guarantee = params.guarantee(epsilon, analysis, neighbours)?;
            Ok(Planned::Delta {
                guarantee,
                params,
                target: delta,
            })
        }
        (None, ..) => Err(PlanError::MissingDelta),
        (Some(delta), alpha, rate, threshold) => {
            let target = match (alpha, rate, threshold) {
                (Some(alpha), ..) => PlanTarget::Alpha(alpha),
                (None, Some(rate), None) => PlanTarget::SamplingRate(rate),
                (None, None, Some(threshold)) => PlanTarget::Threshold(threshold),
                _ => PlanTarget::MinReleasedCount,
            };
            Ok(Planned::Plan(sample_threshold::plan(
                epsilon, delta, target, analysis, neighbours,
            )?))
        }
    }
}

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
