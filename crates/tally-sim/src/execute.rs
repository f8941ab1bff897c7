//! Running one sample-and-threshold histogram round over a population.
//!
//! See [`ExecutionPath`] for the three ways of executing a round.

use std::fmt;
use std::str::FromStr;

use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;
use tally_core::histogram::{SampleThreshold, SampleThresholdAggregator, SampleThresholdRelease};
use tally_core::sampling::PoissonSampler;

use crate::Error;
use crate::population::Population;
use crate::rng::{Purpose, stream};

/// Clients per chunk (one ChaCha stream each) on the per-client path.
const PER_CLIENT_CHUNK: usize = 1 << 16;

/// Clients per chunk on the gap-skipping path.
pub(crate) const GAP_SKIPPING_CHUNK: usize = 1 << 20;

/// Sampled indices drawn before their items are read, on the gap-skipping path.
pub(crate) const GATHER_BATCH: usize = 256;

/// Domains up to this size aggregate into one aggregator per parallel task, merged at the end.
/// Larger domains collect each chunk's reports and absorb them into a single aggregator, so
/// that no more than one domain-sized count array is allocated.
const MERGE_DOMAIN_LIMIT: usize = 1 << 20;

/// How the simulator executes a sample-and-threshold round.
///
/// Three execution paths, all deterministic for a seed and independent of the number of
/// threads (work is split into fixed-size chunks, chunk `i` drawing from its own ChaCha12
/// stream of the seed, and partial aggregates are merged by addition):
///
/// | path | what runs | cost |
/// | --- | --- | --- |
/// | `per-client` | every client runs the exact client-side `respond` (its own exact `Ber(p_s)` coin) | `O(n)` |
/// | `gap-skipping` (default) | exact geometric gaps between sampled clients; only sampled clients are touched | `O(n·p_s)` |
/// | `binomial-thinning` | per distinct item, `Bin(count, p_s)` sampled holders (floating point) | `O(distinct items)` |
///
/// The first two are exactly equal in distribution: both select each client by an independent
/// exact `Ber(p_s)` coin, the second by drawing the gaps between successes, which are
/// independent exact geometric variables. The third is equal in distribution in exact
/// arithmetic (the number of sampled holders of an item with `c` holders is `Bin(c, p_s)`,
/// independently across items), but draws the binomials with `rand_distr`'s floating-point
/// sampler: a simulation shortcut, never a deployment path. The crate's tests check that the
/// three paths agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExecutionPath {
    /// Every client runs the exact client-side respond function with its own coin.
    PerClient,
    /// Poisson sampling by exact geometric gap skipping: only sampled clients are touched.
    /// Equal in distribution to [`ExecutionPath::PerClient`].
    #[default]
    GapSkipping,
    /// Per distinct item, the number of sampled holders drawn as `Bin(count, p_s)` with
    /// `rand_distr`'s floating-point binomial sampler. A simulation shortcut: equal in
    /// distribution to the exact paths up to floating-point error, never for deployment.
    BinomialThinning,
}

impl ExecutionPath {
    /// Every path, exact ones first.
    pub const ALL: [Self; 3] = [Self::PerClient, Self::GapSkipping, Self::BinomialThinning];

    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::PerClient => "per-client",
            Self::GapSkipping => "gap-skipping",
            Self::BinomialThinning => "binomial-thinning",
        }
    }

    /// Whether the path's sampling is exact (no floating-point shortcut).
    pub fn is_exact(self) -> bool {
        !matches!(self, Self::BinomialThinning)
    }
}

impl fmt::Display for ExecutionPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExecutionPath {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|path| path.name() == s)
            .ok_or_else(|| Error::UnknownPath { name: s.to_owned() })
    }
}

/// Runs one S&T histogram round of `mechanism` over `population` along `path`, with all
/// randomness drawn from ChaCha12 streams of `seed`, and releases the result.
///
/// The release is a function of `(population, mechanism, path, seed)` only. Different paths
/// use different streams, so the same seed gives different (equally distributed) releases
/// on different paths.
pub fn run_sample_threshold(
    population: &Population,
    mechanism: &SampleThreshold,
    path: ExecutionPath,
    seed: u64,
) -> SampleThresholdRelease {
    let aggregator = match path {
        ExecutionPath::PerClient => per_client(population, mechanism, seed),
        ExecutionPath::GapSkipping => gap_skipping(population, mechanism, seed),
        ExecutionPath::BinomialThinning => binomial_thinning(population, mechanism, seed),
    };
    aggregator.release()
}

fn per_client(
    population: &Population,
    mechanism: &SampleThreshold,
    seed: u64,
) -> SampleThresholdAggregator {
    let query = mechanism.query();
    let items = population.items();
    aggregate_chunks(
        mechanism,
        population.domain_size(),
        items.len().div_ceil(PER_CLIENT_CHUNK),
        |index, report| {
            let chunk = chunk(items, PER_CLIENT_CHUNK, index);
            let mut rng = stream(seed, Purpose::PerClient, index as u64);
            let reports: Vec<u32> = chunk
                .iter()
                .filter_map(|&item| query.respond(item, &mut rng))
                .collect();
            report(&reports);
        },
    )
}

fn gap_skipping(
    population: &Population,
    mechanism: &SampleThreshold,
    seed: u64,
) -> SampleThresholdAggregator {
    // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
    let sampler =
        PoissonSampler::new(mechanism.params().sampling_rate()).expect("validated sampling rate");
    let items = population.items();
    aggregate_chunks(
        mechanism,
        population.domain_size(),
        items.len().div_ceil(GAP_SKIPPING_CHUNK),
        |index, report| {
            let chunk = chunk(items, GAP_SKIPPING_CHUNK, index);
            let mut rng = stream(seed, Purpose::GapSkipping, index as u64);
            let mut indices = sampler.indices(chunk.len() as u64, &mut rng);
            // Draw a batch of indices, then read their items in a tight loop: the reads are
            // then independent of each other and their cache misses overlap.
            let mut batch = Vec::with_capacity(GATHER_BATCH);
            let mut gathered = Vec::with_capacity(GATHER_BATCH);
            loop {
                batch.clear();
                batch.extend(indices.by_ref().take(GATHER_BATCH));
                if batch.is_empty() {
                    break;
                }
                gathered.clear();
                // Unwrap safety: sampled indices are below the chunk length.
                gathered.extend(
                    batch
                        .iter()
                        .map(|&i| chunk[usize::try_from(i).expect("index below chunk length")]),
                );
                report(&gathered);
            }
        },
    )
}

fn binomial_thinning(
    population: &Population,
    mechanism: &SampleThreshold,
    seed: u64,
) -> SampleThresholdAggregator {
    let rate = mechanism.params().sampling_rate();
    let mut rng = stream(seed, Purpose::BinomialThinning, 0);
    let mut aggregator = mechanism.aggregator(population.domain_size());
    for &(item, count) in population.item_counts() {
        // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
        let sampled = Binomial::new(count, rate)
            .expect("validated sampling rate")
            .sample(&mut rng);
        if sampled > 0 {
            aggregator.absorb_many(item, sampled);
        }
    }
    aggregator
}

/// Chunk `index` of `items` in chunks of `size`.
fn chunk(items: &[u32], size: usize, index: usize) -> &[u32] {
    let start = index * size;
    &items[start..items.len().min(start + size)]
}

/// Runs `reports(index, report)` for every chunk index in parallel and aggregates the batches
/// of items passed to `report`. Addition commutes, so the result does not depend on the scheduling.
fn aggregate_chunks<F>(
    mechanism: &SampleThreshold,
    domain: usize,
    chunks: usize,
    reports: F,
) -> SampleThresholdAggregator
where
    F: Fn(usize, &mut dyn FnMut(&[u32])) + Sync,
{
    if domain <= MERGE_DOMAIN_LIMIT {
        (0..chunks)
            .into_par_iter()
            .fold(
                || mechanism.aggregator(domain),
                |mut aggregator, index| {
                    reports(index, &mut |items| aggregator.absorb_all(items));
                    aggregator
                },
            )
            .reduce_with(|mut a, b| {
                a.merge(b);
                a
            })
            .unwrap_or_else(|| mechanism.aggregator(domain))
    } else {
        let per_chunk: Vec<Vec<u32>> = (0..chunks)
            .into_par_iter()
            .map(|index| {
                let mut sampled = Vec::new();
                reports(index, &mut |items| sampled.extend_from_slice(items));
                sampled
            })
            .collect();
        let mut aggregator = mechanism.aggregator(domain);
        for sampled in &per_chunk {
            aggregator.absorb_all(sampled);
        }
        aggregator
    }
}
