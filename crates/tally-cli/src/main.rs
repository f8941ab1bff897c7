//! `tally`: differentially private federated analytics from the command line.

mod bench;
mod bench_mechanism;
mod bench_st_composition;
mod bench_triehh;
mod cli;
mod count_min_prefix_tree;
mod domain_histogram;
#[cfg(feature = "federated")]
mod federated;
#[cfg(feature = "federated")]
mod federated_cert;
#[cfg(feature = "federated")]
mod federated_domain;
#[cfg(feature = "federated")]
mod federated_fleet;
#[cfg(feature = "federated")]
mod federated_options;
#[cfg(feature = "federated")]
mod federated_range_tree;
#[cfg(feature = "federated")]
mod federated_token;
mod heavy_hitters;
mod help_examples;
mod histogram;
mod input;
mod items_histogram;
mod output;
mod plan;
mod plan_compose;
mod plan_histogram;
mod plan_items;
mod plan_quantiles;
mod plan_shuffle;
mod plan_triehh;
mod quantiles;
mod repro;
mod sampling_key;
mod shuffle_values;
mod values;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{BenchCommand, Cli, Command, PlanCommand, ReproCommand};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            #[cfg(not(feature = "federated"))]
            if let Some(command) = federated_command(&error) {
                eprintln!(
                    "error: `tally {command}` is part of the federated runtime, which this build \
                     leaves out; build it with `--features federated` (`cargo install --locked \
                     --path crates/tally-cli --features federated`)"
                );
                return ExitCode::from(2);
            }
            error.exit()
        }
    };
    if cli.quiet {
        output::hide_progress();
    }
    let result = match cli.command {
        Command::Plan(PlanCommand::SampleThreshold(args)) => plan::run(&args),
        Command::Plan(PlanCommand::Shuffle(args)) => plan_shuffle::run(&args),
        Command::Plan(PlanCommand::Compose(args)) => plan_compose::run(&args),
        Command::Plan(PlanCommand::TrieHhPlus(args)) => plan_triehh::run(&args),
        Command::Plan(PlanCommand::Histogram(args)) => plan_histogram::run(&args),
        Command::Plan(PlanCommand::Quantiles(args)) => plan_quantiles::run(&args),
        Command::Histogram(args) => histogram::run(&args),
        Command::HeavyHitters(args) => heavy_hitters::run(&args),
        Command::Quantiles(args) => quantiles::run_quantiles(&args),
        Command::Range(args) => quantiles::run_range(&args),
        Command::Bench(BenchCommand::SampleThreshold(args)) => bench::run(&args),
        Command::Bench(BenchCommand::Triehh(args)) => bench_triehh::run(&args),
        Command::Bench(BenchCommand::Mechanism(args)) => bench_mechanism::run(&args),
        Command::Bench(BenchCommand::StComposition(args)) => bench_st_composition::run(&args),
        Command::Repro(ReproCommand::SampleThreshold(args)) => repro::run_sample_threshold(&args),
        Command::Repro(ReproCommand::OptPrefixTree(args)) => repro::run_opt_prefix_tree(&args),
        Command::SamplingKey(args) => sampling_key::run(&args),
        #[cfg(feature = "federated")]
        Command::Serve(args) => federated::serve(&args),
        #[cfg(feature = "federated")]
        Command::Relay(args) => federated::relay(&args),
        #[cfg(feature = "federated")]
        Command::Task(command) => federated::task(&command),
        #[cfg(feature = "federated")]
        Command::Ledger(args) => federated::ledger(&args),
        #[cfg(feature = "federated")]
        Command::Client(args) => federated_fleet::run_client(&args),
        #[cfg(feature = "federated")]
        Command::Fleet(args) => federated_fleet::run(&args),
        #[cfg(feature = "federated")]
        Command::Token(command) => federated_token::run(&command),
        #[cfg(feature = "federated")]
        Command::Population(command) => federated_token::run_population(&command),
        #[cfg(feature = "federated")]
        Command::Device(command) => federated_token::run_device(&command),
        #[cfg(feature = "federated")]
        Command::Cert(args) => federated_cert::run(&args),
        #[cfg(feature = "federated")]
        Command::HpkeKey(command) => federated_token::run_hpke_key(&command),
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

/// The federated command `error` found unknown, if it is one: this build leaves them out.
#[cfg(not(feature = "federated"))]
fn federated_command(error: &clap::Error) -> Option<&str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    match error.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(command)) => tally_cli::FEDERATED_COMMANDS
            .contains(&command.as_str())
            .then_some(command.as_str()),
        _ => None,
    }
}
