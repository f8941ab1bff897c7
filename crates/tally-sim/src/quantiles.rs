//! Running the quantile tasks of [`tally_core::quantiles`] over a population of [`Values`].
//!
//! Each round maps every client's value to its report with the client-side code of the round's
//! query ([`LevelQuery::report`], [`ThresholdQuery::report`]), builds the population of those
//! bucket ids and runs the S&T round on it with [`run_sample_threshold`] along the chosen
//! [`ExecutionPath`]. Every round draws from its own stream of the seed.

use rayon::prelude::*;
use tally_core::histogram::SampleThresholdRelease;
use tally_core::quantiles::{
    BinarySearchQuantile, HierarchicalHistogram, HierarchicalRelease, LevelQuery, QuantileSearch,
    ThresholdQuery,
};
use tally_core::task::Task;

use crate::counted::counted_round;
use crate::execute::{ExecutionPath, run_sample_threshold};
use crate::population::{Population, Source};
use crate::rng::round_seed;
use crate::stream_values::CountedValues;
use crate::values::Values;

/// Populations at least this large compute their reports in parallel.
const PARALLEL_MIN: usize = 1 << 16;

/// Runs a hierarchical histogram over `values` along `path`; level `ℓ` draws from stream
/// `ℓ` of `seed`.
pub fn run_hierarchical(
    values: &Values,
    mut task: HierarchicalHistogram,
    path: ExecutionPath,
    seed: u64,
) -> HierarchicalRelease {
    while let Some(query) = task.next_query() {
        let level_seed = round_seed(seed, query.level as usize);
        task.observe(run_level(values, &query, path, level_seed));
    }
    task.finish()
}

/// Runs a hierarchical histogram over values counted per leaf; level `ℓ` draws from its own
/// stream of `seed`.
///
/// A level's sampled clients in bucket `b` are drawn as one exact `Bin(N_b, p_s)`, `N_b` the
/// number of clients whose value lies in `b` (the sum of its leaves' counts), from stream `b`
/// of the level's seed: the sum of `N_b` independent exact `Ber(p_s)` coins, independently
/// across buckets and levels (every level samples every client afresh). The run is therefore
/// equal in law to [`run_hierarchical`] over the loaded values, though not draw for draw.
///
/// # Panics
///
/// If the task's tree is not the one `values` are counted in.
pub fn run_hierarchical_counted(
    values: &CountedValues,
    mut task: HierarchicalHistogram,
    seed: u64,
) -> HierarchicalRelease {
    while let Some(query) = task.next_query() {
        assert_eq!(query.shape, values.shape(), "the values' tree");
        let level_seed = round_seed(seed, query.level as usize);
        task.observe(counted_level(values, &query, level_seed));
    }
    task.finish()
}

/// One level over counted values: each bucket's sampled clients are one exact binomial.
fn counted_level(values: &CountedValues, query: &LevelQuery, seed: u64) -> SampleThresholdRelease {
    let shape = query.shape;
    // Unwrap safety: counted trees have fewer than 2^24 leaves.
    let width = usize::try_from(u64::from(shape.branching()).pow(shape.levels() - query.level))
        .expect("bucket width fits in usize");
    let holders: Vec<u64> = values
        .leaves()
        .par_chunks(width)
        .map(|leaves| leaves.iter().sum())
        .collect();
    counted_round(&holders, &query.mechanism, seed)
}

/// One level of a hierarchical histogram: the S&T histogram of the clients' bucket ids.
pub fn run_level(
    values: &Values,
    query: &LevelQuery,
    path: ExecutionPath,
    seed: u64,
) -> SampleThresholdRelease {
    let items = reports(values, |x| query.report(x));
    let description = format!("level {} buckets of {} values", query.level, values.len());
    let level = bucket_population(items, query.buckets(), description);
    run_sample_threshold(&level, &query.mechanism, path, seed)
}

/// Runs one binary search over `values` along `path`; round `r` draws from stream `r` of
/// `seed`.
pub fn run_binary_search(
    values: &Values,
    mut task: BinarySearchQuantile,
    path: ExecutionPath,
    seed: u64,
) -> QuantileSearch {
    while let Some(query) = task.next_query() {
        let round = round_seed(seed, query.round);
        task.observe(run_threshold_round(values, &query, path, round));
    }
    task.finish()
}

/// Runs several binary searches over the same `values` (for example one per quantile),
/// search `i` with stream `i` of `seed`. Their joint guarantee is the composition of all their
/// rounds: see [`tally_core::quantiles::BinarySearchConfig::guarantee_of`].
pub fn run_binary_searches(
    values: &Values,
    tasks: Vec<BinarySearchQuantile>,
    path: ExecutionPath,
    seed: u64,
) -> Vec<QuantileSearch> {
    tasks
        .into_iter()
        .enumerate()
        .map(|(i, task)| run_binary_search(values, task, path, round_seed(seed, i)))
        .collect()
}

/// One binary-search round: the S&T histogram of the two buckets `x ≤ t` and `x > t`.
pub fn run_threshold_round(
    values: &Values,
    query: &ThresholdQuery,
    path: ExecutionPath,
    seed: u64,
) -> SampleThresholdRelease {
    let items = reports(values, |x| query.report(x));
    let description = format!(
        "round {} split at {} of {} values",
        query.round,
        query.threshold,
        values.len()
    );
    let round = bucket_population(items, ThresholdQuery::BUCKETS as u64, description);
    run_sample_threshold(&round, &query.mechanism, path, seed)
}

/// Every client's report, computed from its value by the client-side `report`; in parallel for
/// large populations.
fn reports(values: &Values, report: impl Fn(f64) -> u32 + Sync) -> Vec<u32> {
    let values = values.as_slice();
    if values.len() >= PARALLEL_MIN {
        values.par_iter().map(|&x| report(x)).collect()
    } else {
        values.iter().map(|&x| report(x)).collect()
    }
}

/// The population of bucket ids `0..buckets`, one per client.
fn bucket_population(items: Vec<u32>, buckets: u64, description: String) -> Population {
    debug_assert!(!items.is_empty());
    Population::from_synthetic(items, buckets, Source::Memory { description })
}
