//! `tally plan triehh++`: per-level S&T parameters whose levels compose tightly.

use anyhow::Result;
use serde_json::json;
use tally_accounting::composition::compose_basic;
use tally_accounting::sample_threshold::{
    MAX_TIGHT_ROUNDS, SampleThresholdParams, TIGHT_STEP, tight_max_sampling_rate,
    tight_min_threshold,
};

use crate::cli::PlanTrieArgs;
use crate::output::{print_fields, print_json};

/// The threshold used when neither it nor the sampling rate is given.
const DEFAULT_THRESHOLD: u64 = 26;

pub(crate) fn run(args: &PlanTrieArgs) -> Result<()> {
    let (epsilon, delta, levels) = (args.epsilon, args.delta, args.levels);
    let (params, solved_for) = match (args.sampling_rate, args.threshold) {
        (Some(rate), Some(threshold)) => (SampleThresholdParams::new(rate, threshold)?, "epsilon"),
        (Some(rate), None) => (
            SampleThresholdParams::new(rate, tight_min_threshold(epsilon, delta, levels, rate)?)?,
            "threshold",
        ),
        (None, threshold) => {
            let threshold = threshold.unwrap_or(DEFAULT_THRESHOLD);
            let rate = tight_max_sampling_rate(epsilon, delta, levels, threshold)?;
            (
                SampleThresholdParams::new(rate, threshold)?,
                "sampling_rate",
            )
        }
    };
    anyhow::ensure!(
        (1..=MAX_TIGHT_ROUNDS).contains(&levels),
        "--levels {levels}: between 1 and {MAX_TIGHT_ROUNDS}"
    );
    // One level's loss pair, built once: composed over the levels (as `tight_rounds_epsilon`
    // does), and alone at δ/L for the same levels by basic composition, each level's own
    // (ε, δ/L) summed.
    let pair = params.loss_pair(TIGHT_STEP)?;
    let composed = pair.self_compose(levels)?.epsilon(delta)?;
    let meets_target = composed <= epsilon;
    // None where a level alone has no ε at δ/L (its infinite-loss mass exceeds δ/L, while
    // the levels' joint mass stays within δ): basic composition cannot reach the target.
    let basic_epsilon = match pair.epsilon(delta / levels as f64) {
        Ok(per_level) => {
            Some(compose_basic(&vec![(per_level, delta / levels as f64); levels as usize])?.0)
        }
        Err(tally_accounting::Error::Infeasible { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    if args.json {
        return Ok(print_json(&json!({
            "mechanism": "triehh++",
            "composition": "tight",
            "neighbours": "add-remove",
            "levels": levels,
            "epsilon": epsilon,
            "delta": delta,
            "per_level": {
                "sampling_rate": params.sampling_rate(),
                "threshold": params.threshold(),
            },
            "composed_epsilon": composed,
            "meets_target": meets_target,
            "basic_composition_epsilon": basic_epsilon,
            "grid_step": TIGHT_STEP,
            "solved_for": solved_for,
        }))?);
    }
    print_fields(
        &format!("TrieHH++ plan ({levels} levels, tight composition, add-remove neighbours)"),
        &[
            ("epsilon (target)", epsilon.to_string()),
            ("delta (target)", format!("{delta:e}")),
            ("sampling rate", format!("{:.6}", params.sampling_rate())),
            ("threshold", params.threshold().to_string()),
            (
                "composed epsilon",
                format!("{composed:.6} at delta {delta:e}"),
            ),
            (
                "basic composition",
                basic_epsilon.map_or_else(
                    || "none (a level alone has no epsilon at delta/L)".to_owned(),
                    |e| format!("{e:.6} (each level at delta/L, summed)"),
                ),
            ),
            ("solved for", solved_for.to_owned()),
        ],
    )?;
    Ok(())
}
