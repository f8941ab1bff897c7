//! `tally bench sample-threshold`: time the S&T kernel (sample, count, threshold) on
//! generated Geometric(1/√B) items, with the data made outside the timed region.

use std::time::Instant;

use anyhow::Result;
use serde_json::json;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_sim::{ExecutionPath, Generator, Population, SyntheticSpec, run_sample_threshold};

use crate::cli::BenchArgs;
use crate::output::{Stage, print_fields, print_json};

pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    anyhow::ensure!(args.repeats > 0, "--repeats must be at least 1");
    let params = SampleThresholdParams::new(args.sampling_rate, args.threshold)?;
    let mechanism =
        SampleThreshold::new(params, args.epsilon, Analysis::Tight, Neighbours::AddRemove)?;
    let spec = SyntheticSpec::new(
        args.clients,
        Generator::Geometric {
            domain: args.domain,
        },
    )?;
    let stage = Stage::start(format!("generating {} clients", args.clients));
    let population = Population::synthetic(&spec, args.seed);
    stage.next(format!("timing {} runs", args.repeats));
    let path = ExecutionPath::GapSkipping;

    let mut seconds = Vec::with_capacity(args.repeats);
    let mut released = 0;
    for repeat in 0..args.repeats {
        let start = Instant::now();
        let release =
            run_sample_threshold(&population, &mechanism, path, args.seed + repeat as u64);
        seconds.push(start.elapsed().as_secs_f64());
        released = release.items.len();
    }
    drop(stage);
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    let threads = rayon::current_num_threads();
    if args.json {
        print_json(&json!({
            "benchmark": "sample-threshold",
            "clients": args.clients,
            "domain": args.domain,
            "sampling_rate": args.sampling_rate,
            "threshold": args.threshold,
            "execution": path.name(),
            "threads": threads,
            "repeats": args.repeats,
            "median_seconds": median,
            "min_seconds": seconds[0],
            "max_seconds": seconds[seconds.len() - 1],
            "released_items": released,
        }))?;
        return Ok(());
    }
    print_fields(
        "sample-and-threshold kernel (sample, count, threshold)",
        &[
            ("clients", args.clients.to_string()),
            ("domain", format!("{} (Geometric(1/√B) items)", args.domain)),
            (
                "parameters",
                format!(
                    "sampling rate {}, threshold {}",
                    args.sampling_rate, args.threshold
                ),
            ),
            ("execution", format!("{} on {threads} threads", path.name())),
            (
                "time",
                format!(
                    "median {} over {} runs (min {}, max {})",
                    fmt_seconds(median),
                    args.repeats,
                    fmt_seconds(seconds[0]),
                    fmt_seconds(seconds[seconds.len() - 1])
                ),
            ),
            ("released items", released.to_string()),
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
