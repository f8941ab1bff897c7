//! `tally plan histogram --input FILE` without `--mechanism`: every mechanism `tally histogram
//! --max-items-per-client K` runs, at each K of a small grid, with the items it is expected to
//! release on the data, and the one recommended.

use anyhow::{Result, bail};
use tally_accounting::Neighbours;
use tally_sim::items_plan::{ERROR_DEFINITION, HeldItems, ItemsTarget, plan_items};

use crate::cli::{InputArgs, PlanHistogramArgs};
use crate::input::load_keyed_population;
use crate::output::{Stage, print_fields, print_json, save_report};
use tally_plan::page;

pub(crate) fn run(args: &PlanHistogramArgs) -> Result<()> {
    refuse_options(args)?;
    let Some(input) = args.report.population_input() else {
        bail!(
            "without --mechanism the planner chooses over clients of several items from their \
             data: give --input FILE, --dataset NAME or --synthetic SPEC (or a public-domain \
             --mechanism with --clients N)"
        );
    };
    let target = ItemsTarget {
        epsilon: args.privacy.target.epsilon,
        delta: args.privacy.target.delta(),
        neighbours: Neighbours::from(args.privacy.neighbours),
    };
    let stage = Stage::start("loading the population");
    let population = load_keyed_population(&input, args.report.population_seed)?;
    stage.next(format!("predicting over {} clients", population.len()));
    let held = HeldItems::new(&population);
    let plan = plan_items(&held, target);
    drop(stage);
    let best = plan.recommendation();
    let command = command(&input, best.name(), best.max_items, args);
    let mut document = plan.document(&held, target);
    document["input"] = population.source().into();
    document["recommendation"]["command"] = command.clone().into();
    if let Some(dir) = &args.report.report {
        save_report(dir, |dir| page::items::write(&plan, &held, &document, dir))?;
    }
    if args.privacy.json {
        return Ok(print_json(&document)?);
    }
    println!(
        "{:>4}  {:<20}  {:>15}  {:>17}  {:>18}",
        "k", "mechanism", "50% released at", "expected released", "error if released"
    );
    for (i, setting) in plan.settings.iter().enumerate() {
        let mark = if i == plan.recommended { " *" } else { "" };
        match &setting.outcome {
            Ok(predicted) => println!(
                "{:>4}  {:<20}  {:>15}  {:>17.1}  {:>18}{mark}",
                setting.max_items,
                setting.name(),
                predicted
                    .half_release_point
                    .map_or_else(|| "never".to_owned(), |c| format!("{c} clients")),
                predicted.expected_released,
                predicted.error.describe()
            ),
            Err(error) => println!(
                "{:>4}  {:<20}  not calibrated: {error}",
                setting.max_items,
                setting.name()
            ),
        }
    }
    println!();
    print_fields(
        "recommendation",
        &[
            ("input", population.source().to_owned()),
            (
                "clients",
                format!(
                    "{} holding {} distinct items, at most {} each",
                    held.clients(),
                    held.distinct_items(),
                    held.largest()
                ),
            ),
            (
                "setting",
                format!("{} with k = {}", best.name(), best.max_items),
            ),
            (
                "expected released",
                format!("{:.1} items", best.expected_released()),
            ),
            (
                "error if released",
                best.outcome
                    .as_ref()
                    .map_or_else(|_| "none".to_owned(), |p| p.error.describe()),
            ),
            ("error is", ERROR_DEFINITION.to_owned()),
            ("why", plan.why(&held)),
            ("run", command),
        ],
    )?;
    Ok(())
}

/// The `tally histogram` command that runs the recommended setting.
fn command(input: &InputArgs, mechanism: &str, max_items: u32, args: &PlanHistogramArgs) -> String {
    let source = &input.source;
    let source = match (&source.input, &source.dataset, &source.synthetic) {
        (Some(file), _, _) => format!("--input {}", file.display()),
        (_, Some(name), _) => format!("--dataset {name}"),
        (_, _, Some(spec)) => format!("--synthetic {spec}"),
        (None, None, None) => String::new(),
    };
    let neighbours = match Neighbours::from(args.privacy.neighbours) {
        Neighbours::AddRemove => String::new(),
        Neighbours::ReplaceOne => " --neighbours replace-one".to_owned(),
    };
    format!(
        "tally histogram {source} --mechanism {mechanism} --max-items-per-client {max_items} \
         --epsilon {} --delta {:e}{neighbours}",
        args.privacy.target.epsilon,
        args.privacy.target.delta()
    )
}

/// Refuses the options of a public-domain plan.
fn refuse_options(args: &PlanHistogramArgs) -> Result<()> {
    if args.clients.is_some() || args.domain.domain.is_some() || args.domain.buckets.is_some() {
        bail!(
            "--clients, --domain and --buckets plan a --mechanism over a public domain; without \
             --mechanism the planner reads the clients and their items from --input: drop them \
             or give --mechanism"
        );
    }
    if args.report.top != crate::cli::DEFAULT_TOP {
        bail!(
            "--recall-at is the k of a public-domain --mechanism's recall@k; the chooser's \
             report predicts the released items and their error: drop --recall-at"
        );
    }
    if !matches!(args.privacy.analysis.method, crate::cli::Method::Tight) {
        bail!(
            "--method chooses the analysis of one-item sample-and-threshold; over clients of \
             several items each mechanism has its own: drop --method"
        );
    }
    Ok(())
}
