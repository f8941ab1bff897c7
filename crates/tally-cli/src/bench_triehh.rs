//! `tally bench triehh`: time whole TrieHH runs (fixed-size batches without replacement, one
//! vote per sampled client, threshold) on generated Geometric(1/√B) items named in decimal,
//! with the data made and the task calibrated outside the timed region.

use anyhow::Result;
use serde_json::json;
use tally_core::heavy_hitters::{TrieHh, TrieHhConfig};
use tally_core::task::Task;
use tally_sim::run_triehh;

use crate::bench::{Timings, geometric_population};
use crate::cli::BenchTrieHhArgs;
use crate::output::{guarantee_json, guarantee_line, print_fields, print_json};

pub(crate) fn run(args: &BenchTrieHhArgs) -> Result<()> {
    let mut config = match (args.threshold, args.batch_size) {
        (Some(threshold), Some(batch_size)) => TrieHhConfig {
            population: args.data.clients,
            rounds: args.rounds,
            segment: 1,
            threshold,
            batch_size,
            beam: None,
        },
        _ => TrieHhConfig::calibrate(
            args.target.epsilon,
            args.target.delta(),
            args.rounds,
            args.data.clients,
        )?,
    };
    config.segment = args.segment;
    config.beam = args.beam;
    let task = TrieHh::new(config.clone())?;
    let (population, stage) = geometric_population(&args.data)?;
    stage.next(format!("timing {} runs", args.data.repeats));
    let (timings, output) = Timings::measure(args.data.repeats, |repeat| {
        run_triehh(&population, task.clone(), args.data.seed + repeat)
    });
    drop(stage);
    if args.data.json {
        print_json(&json!({
            "benchmark": "triehh",
            "clients": args.data.clients,
            "domain": args.data.domain,
            "rounds": config.rounds,
            "threshold": config.threshold,
            "batch_size": config.batch_size,
            "segment": config.segment,
            "beam": config.beam,
            "guarantee": guarantee_json(task.guarantee()),
            "threads": 1,
            "repeats": args.data.repeats,
            "median_seconds": timings.median(),
            "min_seconds": timings.min(),
            "max_seconds": timings.max(),
            "rounds_run": output.rounds_run,
            "heavy_hitters": output.words.len(),
        }))?;
        return Ok(());
    }
    print_fields(
        "TrieHH (batches without replacement, one vote per sampled client, threshold)",
        &[
            ("clients", args.data.clients.to_string()),
            (
                "domain",
                format!("{} (Geometric(1/√B) items)", args.data.domain),
            ),
            (
                "parameters",
                format!(
                    "L = {}, θ = {}, m = {}, g = {}{}",
                    config.rounds,
                    config.threshold,
                    config.batch_size,
                    config.segment,
                    config
                        .beam
                        .map_or(String::new(), |beam| format!(", beam {beam}"))
                ),
            ),
            ("guarantee", guarantee_line(task.guarantee())),
            ("time", format!("{}, one thread", timings.describe())),
            ("rounds run", output.rounds_run.to_string()),
            ("heavy hitters", output.words.len().to_string()),
        ],
    )
    .map_err(Into::into)
}
