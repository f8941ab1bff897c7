//! `tally bench triehh`: time whole TrieHH runs (fixed-size batches without replacement, one
//! vote per sampled client, threshold) on generated Geometric(1/√B) items named in decimal,
//! with the data made and the task calibrated outside the timed region.

use std::time::Instant;

use anyhow::Result;
use serde_json::json;
use tally_core::heavy_hitters::{TrieHh, TrieHhConfig};
use tally_core::task::Task;
use tally_sim::{Generator, Population, SyntheticSpec, run_triehh};

use crate::cli::BenchTrieHhArgs;
use crate::output::{Stage, guarantee_json, guarantee_line, print_fields, print_json};

pub(crate) fn run(args: &BenchTrieHhArgs) -> Result<()> {
    anyhow::ensure!(args.repeats > 0, "--repeats must be at least 1");
    let mut config = match (args.threshold, args.batch_size) {
        (Some(threshold), Some(batch_size)) => TrieHhConfig {
            population: args.clients,
            rounds: args.rounds,
            segment: 1,
            threshold,
            batch_size,
            beam: None,
        },
        _ => TrieHhConfig::calibrate(args.epsilon, args.delta, args.rounds, args.clients)?,
    };
    config.segment = args.segment;
    config.beam = args.beam;
    let task = TrieHh::new(config.clone())?;
    let spec = SyntheticSpec::new(
        args.clients,
        Generator::Geometric {
            domain: args.domain,
        },
    )?;
    let stage = Stage::start(format!("generating {} clients", args.clients));
    let population = Population::synthetic(&spec, args.seed);
    stage.next(format!("timing {} runs", args.repeats));

    let mut seconds = Vec::with_capacity(args.repeats);
    let mut last = None;
    for repeat in 0..args.repeats {
        let task = task.clone();
        let start = Instant::now();
        let output = run_triehh(&population, task, args.seed + repeat as u64);
        seconds.push(start.elapsed().as_secs_f64());
        last = Some(output);
    }
    drop(stage);
    // Unwrap safety: at least one repetition ran.
    let output = last.expect("repeats ≥ 1");
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    if args.json {
        print_json(&json!({
            "benchmark": "triehh",
            "clients": args.clients,
            "domain": args.domain,
            "rounds": config.rounds,
            "threshold": config.threshold,
            "batch_size": config.batch_size,
            "segment": config.segment,
            "beam": config.beam,
            "guarantee": guarantee_json(task.guarantee()),
            "threads": 1,
            "repeats": args.repeats,
            "median_seconds": median,
            "min_seconds": seconds[0],
            "max_seconds": seconds[seconds.len() - 1],
            "rounds_run": output.rounds_run,
            "heavy_hitters": output.words.len(),
        }))?;
        return Ok(());
    }
    print_fields(
        "TrieHH (batches without replacement, one vote per sampled client, threshold)",
        &[
            ("clients", args.clients.to_string()),
            ("domain", format!("{} (Geometric(1/√B) items)", args.domain)),
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
            (
                "time",
                format!(
                    "median {} over {} runs (min {}, max {}), one thread",
                    fmt_seconds(median),
                    args.repeats,
                    fmt_seconds(seconds[0]),
                    fmt_seconds(seconds[seconds.len() - 1])
                ),
            ),
            ("rounds run", output.rounds_run.to_string()),
            ("heavy hitters", output.words.len().to_string()),
        ],
    )
    .map_err(Into::into)
}

fn fmt_seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.1} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}
