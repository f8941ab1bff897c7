//! `tally`: differentially private federated analytics from the command line.

mod bench;
mod bench_triehh;
mod cli;
mod heavy_hitters;
mod histogram;
mod input;
mod output;
mod plan;
mod plan_shuffle;
mod quantiles;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{BenchCommand, Cli, Command, PlanCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(PlanCommand::SampleThreshold(args)) => plan::run(&args),
        Command::Plan(PlanCommand::Shuffle(args)) => plan_shuffle::run(&args),
        Command::Histogram(args) => histogram::run(&args),
        Command::HeavyHitters(args) => heavy_hitters::run(&args),
        Command::Quantiles(args) => quantiles::run_quantiles(&args),
        Command::Range(args) => quantiles::run_range(&args),
        Command::Bench(BenchCommand::SampleThreshold(args)) => bench::run(&args),
        Command::Bench(BenchCommand::Triehh(args)) => bench_triehh::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`tally ... | head`) is not an error.
        Err(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
