//! `tally histogram --mechanism laplace-threshold|gaussian-threshold|truncated-geometric`, and
//! `--max-items-per-client K` for those and sample-threshold: histograms over clients of up to
//! `K` distinct items each.

use anyhow::{Result, bail};
use tally_accounting::Neighbours;
use tally_accounting::partition_selection::Method as SelectionMethod;
use tally_messages::HistogramRelease;
use tally_sim::items_release::{ItemChoice, ItemsMechanism, ItemsRelease};

use crate::cli::{HistogramArgs, Method};
use crate::input::load_keyed_population;
use crate::output::{Stage, print_histogram_release, print_json, print_warnings};

/// Rows shown in the human-readable table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

/// Runs a partition selection (`method`), or sample-and-threshold with
/// `--max-items-per-client` when `method` is `None`.
pub(crate) fn run(args: &HistogramArgs, method: Option<SelectionMethod>) -> Result<()> {
    let name = args.mechanism.name();
    refuse_options(args, name, method.is_some())?;
    let max_items = args.max_items_per_client.unwrap_or(1);
    let epsilon = args.privacy.target.epsilon;
    let delta = args.privacy.target.delta();
    let neighbours = Neighbours::from(args.privacy.neighbours);
    let key = args.sampling_key.key()?;
    // Calibrate before reading any data, so a bad target fails fast.
    let mechanism = ItemsMechanism::calibrate(
        method,
        epsilon,
        delta,
        max_items,
        args.release.round.target(),
        neighbours,
        key.is_some(),
    )?;
    let seed = args.release.seed_or_random();
    let stage = Stage::start("loading the population");
    let population = load_keyed_population(&args.input, seed)?;
    stage.next(format!("bounding {} clients' items", population.len()));
    let options = ItemsRelease {
        max_items,
        choice: key.map_or(ItemChoice::Seeded, ItemChoice::Keyed),
        seed,
        target_delta: delta,
        shown_seed: args.release.seed,
    };
    let mut document = mechanism.histogram(&population, &options)?;
    drop(stage);
    if args.privacy.json
        && let Some(top) = args.top
    {
        document.items.truncate(top);
    }
    print(args, name, &document)
}

/// Refuses the options that do not apply to mechanism `name` over clients of several items.
fn refuse_options(args: &HistogramArgs, name: &str, selection: bool) -> Result<()> {
    if args.domain.domain.is_some() || args.domain.buckets.is_some() {
        bail!(
            "--mechanism {name} with --max-items-per-client runs over the items the clients \
             hold, with no public domain: drop --domain/--buckets"
        );
    }
    if !matches!(args.privacy.analysis.method, Method::Tight) {
        bail!(
            "--method chooses the analysis of one-item sample-and-threshold; --mechanism {name} \
             with --max-items-per-client has its own (the exact or composed δ of its per-item \
             releases): drop --method"
        );
    }
    if selection
        && (args.release.round.sampling_rate.is_some() || args.release.round.threshold.is_some())
    {
        bail!(
            "--sampling-rate and --threshold set sample-threshold's parameters; --mechanism \
             {name} calibrates its noise and threshold from --epsilon, --delta and \
             --max-items-per-client: drop them"
        );
    }
    if args.clamp || args.truth {
        bail!(
            "--clamp and --truth apply to the mechanisms over a public domain; --mechanism \
             {name} releases no negative estimate and no truth: drop them"
        );
    }
    Ok(())
}

/// Prints the release as JSON or as a table.
fn print(args: &HistogramArgs, name: &str, document: &HistogramRelease) -> Result<()> {
    if args.privacy.json {
        print_json(&serde_json::to_value(document)?)?;
        print_warnings(document.diagnosis.as_ref());
        return Ok(());
    }
    print_histogram_release(
        &format!("{name} histogram"),
        document,
        &[
            (
                "trust",
                "central: the aggregator sees the exact counts of the items the clients \
                 report (at most --max-items-per-client each); items no client holds are \
                 never shown"
                    .to_owned(),
            ),
            ("seed", args.release.seed_description()),
        ],
        args.top.unwrap_or(DEFAULT_TABLE_ROWS),
    )?;
    Ok(())
}
