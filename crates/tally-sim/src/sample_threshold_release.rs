//! Running a sample-and-threshold histogram and building its document, as `tally histogram
//! --json` prints it.

use std::path::Path;

use crate::{
    ExecutionPath, KeyedPopulation, PoissonLines, Population, StreamFormat,
    run_keyed_sample_threshold, run_sample_threshold, stream_sample_threshold,
};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_core::histogram::{SampleThreshold, SampleThresholdRelease};
use tally_core::sampling::SamplingKey;
use tally_messages::{HistogramRelease, ReleasedItem};
use tally_protocol::document;

/// The execution name of a keyed run in the document.
pub const KEYED_EXECUTION: &str = "keyed";

/// Where a round's randomness comes from, and the clients it runs over.
#[derive(Debug)]
pub enum Sampling<'a> {
    /// Exact coins drawn from ChaCha streams of `seed`, along the default execution path.
    Seeded {
        /// The clients.
        population: &'a Population,
        /// The seed of every draw.
        seed: u64,
    },
    /// Keyed coins and a keyed row choice of `key`, in round 0.
    Keyed {
        /// The clients' rows.
        population: &'a KeyedPopulation,
        /// The secret key.
        key: SamplingKey,
    },
}

/// Calibrates the mechanism for a target `(ε, δ)`; with `keyed`, for the rate a keyed coin
/// uses ([`SampleThreshold::calibrate_keyed`]).
///
/// # Errors
///
/// Whatever the planner and the accountant reject.
pub fn calibrate(
    epsilon: f64,
    delta: f64,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
    keyed: bool,
) -> Result<SampleThreshold, tally_core::Error> {
    if keyed {
        SampleThreshold::calibrate_keyed(epsilon, delta, target, analysis, neighbours)
    } else {
        SampleThreshold::calibrate(epsilon, delta, target, analysis, neighbours)
    }
}

/// Runs one round of `mechanism` as `sampling` says and builds the release's document:
/// `target_delta` is the `δ` asked for and `seed` the seed to show (`None` when the user gave
/// none).
///
/// # Errors
///
/// As [`run_keyed_sample_threshold`] for a keyed round.
pub fn histogram(
    sampling: Sampling<'_>,
    mechanism: &SampleThreshold,
    target_delta: f64,
    seed: Option<u64>,
) -> Result<HistogramRelease, tally_core::Error> {
    let (items, clients, input, execution) = match sampling {
        Sampling::Seeded { population, seed } => {
            let path = ExecutionPath::default();
            let release = run_sample_threshold(population, mechanism, path, seed);
            let items = named(&release, |id| {
                population.item_name(id).map(|n| n.into_owned())
            });
            (
                items,
                population.len(),
                population.description(),
                path.name(),
            )
        }
        Sampling::Keyed { population, key } => {
            let release = run_keyed_sample_threshold(population, mechanism, key, 0)?;
            let items = named(&release, |id| population.item_name(id).map(str::to_owned));
            (
                items,
                population.len(),
                population.description(),
                KEYED_EXECUTION,
            )
        }
    };
    Ok(document::sample_threshold(
        items,
        mechanism,
        clients as u64,
        target_delta,
        input.to_owned(),
        execution,
        seed,
    ))
}

/// Streams the file at `file` through one round of `mechanism`, each client's exact Poisson
/// coin drawn from the streams of `seed` before its line is parsed, and builds the release's
/// document, as `tally histogram --input FILE` does: `target_delta` is the `δ` asked for,
/// `shown_seed` the seed to show (`None` when the user gave none) and `progress` is called
/// with the bytes read so far.
///
/// # Errors
///
/// As [`stream_sample_threshold`].
pub fn streamed_histogram(
    file: &Path,
    format: StreamFormat,
    mechanism: &SampleThreshold,
    target_delta: f64,
    seed: u64,
    shown_seed: Option<u64>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<HistogramRelease, crate::Error> {
    let sampling = PoissonLines::new(mechanism, seed);
    let streamed = stream_sample_threshold(file, format, mechanism, &sampling, progress)?;
    let names = streamed.names;
    Ok(document::sample_threshold(
        named(&streamed.release, |id| names.get(id as usize).cloned()),
        mechanism,
        streamed.clients,
        target_delta,
        streamed.description,
        ExecutionPath::default().name(),
        shown_seed,
    ))
}

/// The document of a keyed round whose sampled counts were computed elsewhere (by Spark):
/// `counts` holds `(item, sampled count)` for at least every item whose count reaches the
/// threshold; the release keeps exactly those, as the aggregator does.
pub fn from_counts(
    counts: Vec<(String, u64)>,
    mechanism: &SampleThreshold,
    clients: u64,
    target_delta: f64,
    input: String,
    execution: &str,
) -> HistogramRelease {
    let mut aggregator = mechanism.open_domain_aggregator();
    let mut names = Vec::with_capacity(counts.len());
    for (id, (name, count)) in (0u32..).zip(counts) {
        aggregator.absorb_many(id, count);
        names.push(name);
    }
    let release = aggregator.release();
    let items = named(&release, |id| names.get(id as usize).cloned());
    document::sample_threshold(
        items,
        mechanism,
        clients,
        target_delta,
        input,
        execution,
        None,
    )
}

/// The released cells with their items' names (a cell whose item has no name shows its id).
pub fn named(
    release: &SampleThresholdRelease,
    name: impl Fn(u32) -> Option<String>,
) -> Vec<ReleasedItem> {
    release
        .items
        .iter()
        .map(|cell| ReleasedItem {
            item: name(cell.item).unwrap_or_else(|| cell.item.to_string()),
            count: Some(cell.count),
            estimate: Some(cell.estimate),
        })
        .collect()
}
