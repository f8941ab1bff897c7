//! `tally histogram`: release a sample-and-threshold histogram.

use anyhow::{Result, bail};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::Analysis;
use tally_sim::PlaceInDomain;
use tally_sim::domain_release::{self, ItemsOptions};
use tally_sim::sample_threshold_release::{self, Sampling};

use crate::cli::{HistogramArgs, HistogramMechanism};
use crate::domain_histogram::{self, domain_map};
use crate::input::{load_keyed_population, load_population, stream_format};
use crate::items_histogram;
use crate::output::{Stage, print_histogram_release, print_json, print_warnings};

/// Rows shown in the human-readable table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

pub(crate) fn run(args: &HistogramArgs) -> Result<()> {
    match args.mechanism {
        HistogramMechanism::Domain(mechanism) => {
            domain_release::refuse_items_options(ItemsOptions {
                sampling_key: args.sampling_key.given(),
                max_items_per_client: args.max_items_per_client.is_some(),
                sampling_rate_or_threshold: args.release.round.sampling_rate.is_some()
                    || args.release.round.threshold.is_some(),
            })?;
            return domain_histogram::run(args, mechanism);
        }
        HistogramMechanism::Selection(method) => return items_histogram::run(args, Some(method)),
        HistogramMechanism::SampleThreshold if args.max_items_per_client.is_some() => {
            return items_histogram::run(args, None);
        }
        HistogramMechanism::SampleThreshold => {}
    }
    let epsilon = args.privacy.target.epsilon;
    let analysis = Analysis::from(args.privacy.analysis.method);
    let neighbours = Neighbours::from(args.privacy.neighbours);
    // Validate the privacy target and the key before reading any data.
    let target = args.release.round.target();
    let on_domain = args.domain.domain.is_some() || args.domain.buckets.is_some();
    if on_domain && args.sampling_key.given() {
        bail!(
            "--sampling-key samples the items clients hold, with no public domain: drop \
             --domain/--buckets or the key"
        );
    }
    let key = args.sampling_key.key()?;
    let delta = args.privacy.target.delta();
    let mechanism = sample_threshold_release::calibrate(
        epsilon,
        delta,
        target,
        analysis,
        neighbours,
        key.is_some(),
    )?;

    // Without --seed the run draws its seed from the operating system and never prints it.
    let seed = args.release.seed_or_random();
    let mut document = match (key, &args.input.source.input) {
        (Some(key), _) => {
            let stage = Stage::start("loading the population");
            let population = load_keyed_population(&args.input, seed)?;
            stage.next(format!(
                "sampling {} clients with the key",
                population.len()
            ));
            let sampling = Sampling::Keyed {
                population: &population,
                key,
            };
            sample_threshold_release::histogram(sampling, &mechanism, delta, args.release.seed)?
        }
        // A file streams: clients are sampled before their lines are parsed.
        (None, Some(file)) if !on_domain => {
            let format = stream_format(&args.input, file, seed);
            let stage = Stage::start(format!("sampling the clients of {}", file.display()));
            let document = sample_threshold_release::streamed_histogram(
                file,
                format,
                &mechanism,
                delta,
                seed,
                args.release.seed,
                &stage.bytes_read(),
            )?;
            drop(stage);
            document
        }
        (None, _) => {
            let stage = Stage::start("loading the population");
            let mut population = load_population(&args.input, seed)?;
            if on_domain {
                // Sample-and-threshold needs no public domain, but may run on one for comparison.
                let map = domain_map(&args.domain, args.mechanism.name())?;
                population = map
                    .apply(&population)?
                    .into_population(population.description())?;
            }
            stage.next(format!("sampling {} clients", population.len()));
            let sampling = Sampling::Seeded {
                population: &population,
                seed,
            };
            sample_threshold_release::histogram(sampling, &mechanism, delta, args.release.seed)?
        }
    };

    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });
    if args.privacy.json {
        document.items.truncate(shown);
        print_json(&serde_json::to_value(&document)?)?;
        print_warnings(document.diagnosis.as_ref());
        return Ok(());
    }
    let seed = if args.sampling_key.given() {
        "none (keyed sampling)".to_owned()
    } else {
        args.release.seed_description()
    };
    let params = mechanism.params();
    let smallest = params.threshold() as f64 / params.sampling_rate();
    print_histogram_release(
        "sample-and-threshold histogram",
        &document,
        &[
            (
                "smallest count shown",
                format!("≈ {smallest:.0} (threshold / rate)"),
            ),
            ("seed", seed),
        ],
        shown,
    )?;
    Ok(())
}
