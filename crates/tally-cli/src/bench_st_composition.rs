//! `tally bench st-composition`: time the tight accountant of S&T rounds in process, apart
//! from process start-up: building one round's loss pair on the grid [`TIGHT_STEP`], and
//! composing it over the levels with `ε` at `δ` (the part a PLD library does on a given curve).

use anyhow::Result;
use serde_json::json;
use tally_accounting::sample_threshold::{MAX_TIGHT_ROUNDS, SampleThresholdParams, TIGHT_STEP};

use crate::bench::Timings;
use crate::cli::BenchStCompositionArgs;
use crate::output::{print_fields, print_json};

pub(crate) fn run(args: &BenchStCompositionArgs) -> Result<()> {
    anyhow::ensure!(
        (1..=MAX_TIGHT_ROUNDS).contains(&args.levels),
        "--levels {}: between 1 and {MAX_TIGHT_ROUNDS}",
        args.levels
    );
    let params = SampleThresholdParams::new(args.sampling_rate, args.threshold)?;
    let (curve, pair) = Timings::measure(args.repeats, |_| params.loss_pair(TIGHT_STEP));
    let pair = pair?;
    let (compose, epsilon) = Timings::measure(args.repeats, |_| {
        pair.self_compose(args.levels)
            .and_then(|composed| composed.epsilon(args.delta))
    });
    let epsilon = epsilon?;
    if args.json {
        return Ok(print_json(&json!({
            "benchmark": "st-composition",
            "sampling_rate": args.sampling_rate,
            "threshold": args.threshold,
            "levels": args.levels,
            "delta": args.delta,
            "grid_step": TIGHT_STEP,
            "repeats": args.repeats,
            "composed_epsilon": epsilon,
            "loss_pair_median_seconds": curve.median(),
            "compose_median_seconds": compose.median(),
        }))?);
    }
    print_fields(
        "tight composition of S&T rounds (in process)",
        &[
            (
                "parameters",
                format!(
                    "sampling rate {}, threshold {}, {} levels, delta {:e}",
                    args.sampling_rate, args.threshold, args.levels, args.delta
                ),
            ),
            ("composed epsilon", format!("{epsilon:.6}")),
            ("loss pair of one round", curve.describe()),
            ("compose and epsilon", compose.describe()),
        ],
    )?;
    Ok(())
}
