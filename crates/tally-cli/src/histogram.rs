//! `tally histogram`: release a sample-and-threshold histogram.

use anyhow::Result;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::Analysis;
use tally_core::histogram::SampleThreshold;
use tally_messages::ReleasedItem;
use tally_server::document;
use tally_sim::{
    ClientMode, ExecutionPath, PoissonLines, StreamFormat, run_sample_threshold,
    stream_sample_threshold,
};

use crate::cli::{Format, HistogramArgs, HistogramMechanism};
use crate::domain_histogram::{self, domain_map};
use crate::input::{input_format, load_population};
use crate::output::{Stage, guarantee_line, print_fields, print_items, print_json};

/// Rows shown in the human-readable table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

pub(crate) fn run(args: &HistogramArgs) -> Result<()> {
    if args.mechanism != HistogramMechanism::SampleThreshold {
        return domain_histogram::run(args);
    }
    let epsilon = args.privacy.epsilon;
    let analysis = Analysis::from(args.privacy.method);
    let neighbours = Neighbours::from(args.privacy.neighbours);
    // Validate the privacy target before reading any data.
    let target = args.release.target();
    let mechanism =
        SampleThreshold::calibrate(epsilon, args.release.delta, target, analysis, neighbours)?;

    // Without --seed the run draws its seed from the operating system and never prints it.
    let seed = args.release.seed_or_random();
    let path = ExecutionPath::default();
    let on_domain = args.domain.domain.is_some() || args.domain.buckets.is_some();
    // The release, the number of clients, where they came from and the items' names.
    let (release, clients, description, name): (_, _, _, Box<dyn Fn(u32) -> String>) = match &args
        .input
        .input
    {
        // A file streams: clients are sampled before their lines are parsed.
        Some(file) if !on_domain => {
            let format = match input_format(file, args.format) {
                Format::Lines => StreamFormat::Lines,
                Format::Tsv if args.rows_as_clients => StreamFormat::Tsv(ClientMode::RowsAsClients),
                Format::Tsv => StreamFormat::Tsv(ClientMode::ClientLevel { seed }),
            };
            let stage = Stage::start(format!("sampling the clients of {}", file.display()));
            let streamed = stream_sample_threshold(
                file,
                format,
                &mechanism,
                &PoissonLines::new(&mechanism, seed),
                &stage.bytes_read(),
            )?;
            drop(stage);
            let names = streamed.names;
            (
                streamed.release,
                streamed.clients,
                streamed.description,
                Box::new(move |id| names[id as usize].clone()),
            )
        }
        _ => {
            let stage = Stage::start("loading the population");
            let mut population =
                load_population(&args.input, args.format, args.rows_as_clients, seed)?;
            if on_domain {
                // Sample-and-threshold needs no public domain, but may run on one for
                // comparison.
                let map = domain_map(&args.domain, args.mechanism)?;
                population = map
                    .apply(&population)?
                    .into_population(population.description())?;
            }
            stage.next(format!("sampling {} clients", population.len()));
            let release = run_sample_threshold(&population, &mechanism, path, seed);
            drop(stage);
            let clients = population.len() as u64;
            let description = population.description().to_owned();
            let name = move |id: u32| {
                population
                    .item_name(id)
                    .map_or_else(|| id.to_string(), |n| n.into_owned())
            };
            (release, clients, description, Box::new(name))
        }
    };

    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });
    let guarantee = mechanism.guarantee();
    let params = mechanism.params();
    if args.privacy.json {
        let items = release
            .items
            .iter()
            .map(|cell| ReleasedItem {
                item: name(cell.item),
                count: Some(cell.count),
                estimate: Some(cell.estimate),
            })
            .collect();
        let mut document = document::sample_threshold(
            items,
            &mechanism,
            clients,
            args.release.delta,
            description.clone(),
            path.name(),
            args.release.seed,
        );
        document.items.truncate(shown);
        print_json(&serde_json::to_value(&document)?)?;
        return Ok(());
    }
    print_fields(
        "sample-and-threshold histogram",
        &[
            ("input", description),
            ("guarantee", guarantee_line(guarantee)),
            (
                "parameters",
                format!(
                    "sampling rate {:.6}, threshold {} (smallest count shown ≈ {:.0})",
                    params.sampling_rate(),
                    params.threshold(),
                    params.threshold() as f64 / params.sampling_rate()
                ),
            ),
            ("released items", release.items.len().to_string()),
            ("seed", args.release.seed_description()),
        ],
    )?;
    let rows: Vec<_> = release
        .items
        .iter()
        .map(|cell| (name(cell.item), Some(cell.count), Some(cell.estimate)))
        .collect();
    print_items(&rows, shown)?;
    Ok(())
}
