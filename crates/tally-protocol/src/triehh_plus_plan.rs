//! The plan `tally plan triehh++ --json` prints: per-level S&T parameters whose levels compose
//! tightly to a target `(ε, δ)`.

use serde_json::{Value, json};
use tally_accounting::Neighbours;
use tally_accounting::composition::{Composition, compose_basic};
use tally_accounting::naming::Parameter;
use tally_accounting::sample_threshold::{
    Analysis, MAX_TIGHT_ROUNDS, PlanTarget, SampleThresholdParams, TIGHT_STEP,
};
use tally_core::histogram::plan_rounds;

use crate::plan_document;

/// A TrieHH++ plan: one level's parameters and what `levels` of them compose to.
#[derive(Clone, Debug)]
pub struct TriePlusPlan {
    /// The target ε of all levels.
    pub epsilon: f64,
    /// The target δ of all levels.
    pub delta: f64,
    /// The number of levels (S&T rounds over the same clients).
    pub levels: u64,
    /// The analysis of each level (it sets the threshold when neither the rate nor the
    /// threshold is given).
    pub analysis: Analysis,
    /// Each level's sampling rate and threshold.
    pub params: SampleThresholdParams,
    /// The ε the levels compose to at `delta` (tight composition).
    pub composed_epsilon: f64,
    /// The ε of basic composition, each level at `δ/L`; `None` where a level alone has no ε
    /// at `δ/L` (its infinite-loss mass exceeds `δ/L`, while the levels' joint mass stays
    /// within `δ`).
    pub basic_epsilon: Option<f64>,
    /// What was solved for: `"sampling_rate"`, `"threshold"`, `"sampling_rate,threshold"` or
    /// `"epsilon"`.
    pub solved_for: &'static str,
    /// What was solved for, in words.
    pub explanation: &'static str,
}

/// Errors of [`TriePlusPlan::solve`].
#[derive(Debug, thiserror::Error)]
pub enum TriePlusPlanError {
    /// The number of levels is out of range.
    #[error("{}: between 1 and {MAX_TIGHT_ROUNDS}", Parameter("levels").with(levels))]
    Levels {
        /// The levels asked for.
        levels: u64,
    },
    /// The accountant rejected the request.
    #[error(transparent)]
    Accounting(#[from] tally_accounting::Error),
    /// The levels' calibration rejected the request.
    #[error(transparent)]
    Calibration(#[from] tally_core::Error),
}

impl TriePlusPlan {
    /// Solves for what is not given, as a TrieHH++ run (`tally heavy-hitters --algorithm
    /// triehh++`, `tally task create --algorithm triehh++`) calibrates its levels with tight
    /// composition and add/remove neighbours ([`plan_rounds`]): the largest rate for
    /// `threshold`, the smallest threshold for `sampling_rate`, and with neither the threshold
    /// of the smallest releasable count at `(ε/L, δ/L)` under `analysis` with the largest rate
    /// for it. With both, the composed ε of the pair is reported (a run takes one of them).
    ///
    /// # Errors
    ///
    /// Whatever the accountant rejects, and levels outside `1..=MAX_TIGHT_ROUNDS`.
    pub fn solve(
        epsilon: f64,
        delta: f64,
        levels: u64,
        analysis: Analysis,
        sampling_rate: Option<f64>,
        threshold: Option<u64>,
    ) -> Result<Self, TriePlusPlanError> {
        if !(1..=MAX_TIGHT_ROUNDS).contains(&levels) {
            return Err(TriePlusPlanError::Levels { levels });
        }
        let target = match (sampling_rate, threshold) {
            (Some(rate), Some(threshold)) => Err(SampleThresholdParams::new(rate, threshold)?),
            (Some(rate), None) => Ok(PlanTarget::SamplingRate(rate)),
            (None, Some(threshold)) => Ok(PlanTarget::Threshold(threshold)),
            (None, None) => Ok(PlanTarget::MinReleasedCount),
        };
        // Both given: the pair is evaluated; otherwise solved as the run solves it.
        let (params, (solved_for, explanation)) = match target {
            Ok(target) => (
                per_level_params(epsilon, delta, levels, analysis, target)?,
                solved_for(target),
            ),
            Err(given) => (
                given,
                ("epsilon", "the ε the given pair's levels compose to at δ"),
            ),
        };
        // One level's loss pair, built once: composed over the levels (as
        // `tight_rounds_epsilon` does), and alone at δ/L for the same levels by basic
        // composition, each level's own (ε, δ/L) summed.
        let pair = params.loss_pair(TIGHT_STEP)?;
        let composed_epsilon = pair.self_compose(levels)?.epsilon(delta)?;
        let basic_epsilon = match pair.epsilon(delta / levels as f64) {
            Ok(per_level) => {
                Some(compose_basic(&vec![(per_level, delta / levels as f64); levels as usize])?.0)
            }
            Err(tally_accounting::Error::Infeasible { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(Self {
            epsilon,
            delta,
            levels,
            analysis,
            params,
            composed_epsilon,
            basic_epsilon,
            solved_for,
            explanation,
        })
    }

    /// Whether the levels compose to at most the target ε.
    pub fn meets_target(&self) -> bool {
        self.composed_epsilon <= self.epsilon
    }

    /// The document `tally plan triehh++ --json` prints.
    pub fn document(&self) -> Value {
        json!({
            "mechanism": "triehh++",
            "composition": "tight",
            "neighbours": "add-remove",
            "levels": self.levels,
            "method": self.analysis.name(),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "per_level": {
                "sampling_rate": self.params.sampling_rate(),
                "threshold": self.params.threshold(),
            },
            "composed_epsilon": self.composed_epsilon,
            "meets_target": self.meets_target(),
            "basic_composition_epsilon": self.basic_epsilon,
            "grid_step": TIGHT_STEP,
            "solved_for": self.solved_for,
            "explanation": self.explanation,
        })
    }
}

/// One level's parameters for `target`, as a TrieHH++ run with tight composition over
/// add/remove neighbours calibrates them (`levels` within `1..=MAX_TIGHT_ROUNDS`).
fn per_level_params(
    epsilon: f64,
    delta: f64,
    levels: u64,
    analysis: Analysis,
    target: PlanTarget,
) -> Result<SampleThresholdParams, tally_core::Error> {
    let plan = plan_rounds(
        epsilon,
        delta,
        levels as usize,
        Composition::Tight,
        target,
        analysis,
        Neighbours::AddRemove,
    )?;
    Ok(*plan.per_round.params())
}

/// What the plan solved for at `target` and why, as [`plan_document::solved_for`] says it
/// for one round, but for the levels' own choice with neither the rate nor the threshold.
fn solved_for(target: PlanTarget) -> (&'static str, &'static str) {
    let (key, one_round) = plan_document::solved_for(target);
    let why = match target {
        PlanTarget::MinReleasedCount => {
            "the threshold of the smallest count a level can show at (ε/L, δ/L), and the \
             largest rate at which the levels compose within (ε, δ)"
        }
        _ => one_round,
    };
    (key, why)
}
