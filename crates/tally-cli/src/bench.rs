//! `tally bench sample-threshold`: time the S&T kernel (sample, count, threshold) on
//! generated Geometric(1/√B) items, with the data made outside the timed region.

use std::time::Instant;

use anyhow::Result;
use serde_json::json;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_sim::{ExecutionPath, Generator, Population, SyntheticSpec, run_sample_threshold};

use crate::cli::{BenchArgs, BenchDataArgs};
use crate::output::{Stage, print_fields, print_json};

pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    let params = SampleThresholdParams::new(args.sampling_rate, args.threshold)?;
    let mechanism =
        SampleThreshold::new(params, args.epsilon, Analysis::Tight, Neighbours::AddRemove)?;
    let (population, stage) = geometric_population(&args.data)?;
    stage.next(format!("timing {} runs", args.data.repeats));
    let path = ExecutionPath::GapSkipping;
    let (timings, release) = Timings::measure(args.data.repeats, |repeat| {
        run_sample_threshold(&population, &mechanism, path, args.data.seed + repeat)
    });
    drop(stage);
    let released = release.items.len();
    let threads = rayon::current_num_threads();
    if args.data.json {
        print_json(&json!({
            "benchmark": "sample-threshold",
            "clients": args.data.clients,
            "domain": args.data.domain,
            "sampling_rate": args.sampling_rate,
            "threshold": args.threshold,
            "execution": path.name(),
            "threads": threads,
            "repeats": args.data.repeats,
            "median_seconds": timings.median(),
            "min_seconds": timings.min(),
            "max_seconds": timings.max(),
            "released_items": released,
        }))?;
        return Ok(());
    }
    print_fields(
        "sample-and-threshold kernel (sample, count, threshold)",
        &[
            ("clients", args.data.clients.to_string()),
            (
                "domain",
                format!("{} (Geometric(1/√B) items)", args.data.domain),
            ),
            (
                "parameters",
                format!(
                    "sampling rate {}, threshold {}",
                    args.sampling_rate, args.threshold
                ),
            ),
            ("execution", format!("{} on {threads} threads", path.name())),
            ("time", timings.describe()),
            ("released items", released.to_string()),
        ],
    )
    .map_err(Into::into)
}

/// Generates `clients` Geometric(1/√domain) items (redrawn when ≥ domain) outside any timed
/// region, behind a progress spinner that the caller moves on.
pub(crate) fn geometric_population(data: &BenchDataArgs) -> Result<(Population, Stage)> {
    anyhow::ensure!(data.repeats > 0, "--repeats must be at least 1");
    let domain = data.domain;
    let spec = SyntheticSpec::new(data.clients, Generator::Geometric { domain })?;
    let stage = Stage::start(format!("generating {} clients", data.clients));
    Ok((Population::synthetic(&spec, data.seed), stage))
}

/// Wall-clock times of repeated runs.
pub(crate) struct Timings {
    /// Sorted, at least one.
    seconds: Vec<f64>,
}

impl Timings {
    /// Runs `run(repeat)` for `repeat = 0..repeats` (at least once), timing each run, and
    /// returns the timings and the last run's result.
    pub(crate) fn measure<T>(repeats: usize, mut run: impl FnMut(u64) -> T) -> (Self, T) {
        let mut seconds = Vec::with_capacity(repeats);
        let mut last = None;
        for repeat in 0..repeats.max(1) {
            let start = Instant::now();
            last = Some(run(repeat as u64));
            seconds.push(start.elapsed().as_secs_f64());
        }
        seconds.sort_by(f64::total_cmp);
        // Unwrap safety: the loop ran at least once.
        (Self { seconds }, last.expect("at least one run"))
    }

    /// The median run time in seconds.
    pub(crate) fn median(&self) -> f64 {
        self.seconds[self.seconds.len() / 2]
    }

    /// The fastest run in seconds.
    pub(crate) fn min(&self) -> f64 {
        self.seconds[0]
    }

    /// The slowest run in seconds.
    pub(crate) fn max(&self) -> f64 {
        self.seconds[self.seconds.len() - 1]
    }

    /// `median … over N runs (min …, max …)`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "median {} over {} runs (min {}, max {})",
            fmt_seconds(self.median()),
            self.seconds.len(),
            fmt_seconds(self.min()),
            fmt_seconds(self.max())
        )
    }
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
