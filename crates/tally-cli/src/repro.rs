//! `tally repro`: reproductions of the papers' experiments.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use tally_repro::report::{Finding, Verdict};
use tally_repro::{opt_prefix_tree, sample_threshold};

use crate::cli::{ReproOptPrefixTreeArgs, ReproSampleThresholdArgs};
use crate::output::print_fields;

/// What a finished reproduction reports.
struct Summary {
    runs: usize,
    csv: PathBuf,
    report: PathBuf,
    findings: Vec<Finding>,
}

/// Runs a reproduction of `runs` runs with a progress bar on stderr (drawn only when stderr is
/// a terminal): `execute` runs the grid, ticking once per run, and writes the outputs given the
/// elapsed time. Then prints where the outputs are.
fn reproduce(
    title: &str,
    runs: usize,
    execute: impl FnOnce(&(dyn Fn() + Sync), &dyn Fn() -> Duration) -> Result<Summary>,
) -> Result<()> {
    let start = Instant::now();
    let bar = ProgressBar::new(runs as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs ({elapsed}, {eta} left) {msg}")
            // Unwrap safety: the template is a constant that parses.
            .expect("valid template"),
    );
    let summary = execute(&|| bar.inc(1), &|| {
        bar.set_message("writing figures");
        start.elapsed()
    })?;
    bar.finish_and_clear();
    let holding = summary
        .findings
        .iter()
        .filter(|f| f.verdict == Verdict::Holds)
        .count();
    print_fields(
        title,
        &[
            ("runs", summary.runs.to_string()),
            ("csv", summary.csv.display().to_string()),
            ("report", summary.report.display().to_string()),
            (
                "findings",
                format!("{holding} of {} hold", summary.findings.len()),
            ),
            (
                "wall time",
                format!("{:.1} s", start.elapsed().as_secs_f64()),
            ),
        ],
    )?;
    Ok(())
}

/// `tally repro sample-threshold`.
pub(crate) fn run_sample_threshold(args: &ReproSampleThresholdArgs) -> Result<()> {
    let mut config = if args.quick {
        sample_threshold::Config::quick(args.seed)
    } else {
        sample_threshold::Config::full(args.seed)
    };
    if let Some(reps) = args.reps {
        config.reps = reps;
    }
    config.population = args.population;
    reproduce(
        "sample-and-threshold reproduction (Bharadwaj and Cormode 2022, §5)",
        config.runs(),
        |tick, elapsed| {
            let results = sample_threshold::run(&config, tick)?;
            let outputs = sample_threshold::write_outputs(&results, &args.out, elapsed())?;
            Ok(Summary {
                runs: results.rows.len(),
                csv: outputs.runs,
                report: outputs.report,
                findings: sample_threshold::findings(&results),
            })
        },
    )
}

/// `tally repro opt-prefix-tree`.
pub(crate) fn run_opt_prefix_tree(args: &ReproOptPrefixTreeArgs) -> Result<()> {
    let mut config = if args.quick {
        opt_prefix_tree::Config::quick(args.seed)
    } else {
        opt_prefix_tree::Config::full(args.seed)
    };
    if let Some(reps) = args.reps {
        config.reps = reps;
    }
    if let Some(users) = args.users {
        config.users = users;
    }
    reproduce(
        "OptPrefixTree reproduction (Chadha et al. 2024)",
        config.runs(),
        |tick, elapsed| {
            let results = opt_prefix_tree::run(&config, tick)?;
            let outputs = opt_prefix_tree::write_outputs(&results, &args.out, elapsed())?;
            Ok(Summary {
                runs: results.rows.len(),
                csv: outputs.runs,
                report: outputs.report,
                findings: opt_prefix_tree::findings(&results),
            })
        },
    )
}
