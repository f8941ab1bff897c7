//! One gap-skipping sample-and-threshold round over a column of values held in memory, one
//! value per client, counted in a hash map: no population is built and only sampled clients
//! are touched.
//!
//! The sample is exactly the one [`run_sample_threshold`](crate::run_sample_threshold) draws on
//! the default ([`ExecutionPath::GapSkipping`](crate::ExecutionPath::GapSkipping)) path for the
//! same seed over the population the values intern to (ids in order of first appearance): the
//! same chunks, the same ChaCha streams, the same exact geometric gaps. So the release is the
//! same, cell for cell and in the same order.

use std::hash::Hash;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::PoissonSampler;

use crate::execute::{GAP_SKIPPING_CHUNK, GATHER_BATCH};
use crate::rng::{Purpose, stream};

/// Integer ranges up to this many values are counted in an array rather than a hash map.
const DENSE_SPAN: u64 = 1 << 20;

/// Runs one round of `mechanism` over `values` (client `i` holds `values[i]`) with the
/// randomness of `seed`, and returns the released cells as `(value, sampled count)`, in the
/// release's order: by decreasing count, ties by the value's first appearance in `values`.
///
/// Each client is sampled by an independent exact `Ber(p_s)` coin (drawn as exact geometric
/// gaps between sampled clients); a value is released when at least the threshold of its
/// clients are sampled.
pub fn sample_threshold_values<T>(
    values: &[T],
    mechanism: &SampleThreshold,
    seed: u64,
) -> Vec<(T, u64)>
where
    T: Copy + Eq + Hash + Send + Sync,
{
    let cells = sampled_cells(values, mechanism, seed, FxHashMap::<T, u64>::default);
    release(values, mechanism, cells)
}

/// [`sample_threshold_values`] for integers: when they span at most `2^20` values, the sample
/// is counted in an array indexed by value (the same release, faster).
pub fn sample_threshold_integers(
    values: &[i64],
    mechanism: &SampleThreshold,
    seed: u64,
) -> Vec<(i64, u64)> {
    let (Some(&low), Some(&high)) = (values.iter().min(), values.iter().max()) else {
        return Vec::new();
    };
    let span = high.abs_diff(low) + 1;
    if span > DENSE_SPAN {
        return sample_threshold_values(values, mechanism, seed);
    }
    // Unwrap safety: span is at most 2^20.
    let span = usize::try_from(span).expect("span below 2^20");
    let cells = sampled_cells(values, mechanism, seed, || Dense {
        low,
        counts: vec![0; span],
    });
    release(values, mechanism, cells)
}

/// Where a round's sampled values are counted.
trait Counter<T>: Send + Sized {
    /// Counts one sampled client holding `value`.
    fn add(&mut self, value: T);
    /// Both counters' counts.
    fn merge(self, other: Self) -> Self;
    /// The values with their counts, each value sampled at least once.
    fn cells(self) -> Vec<(T, u64)>;
}

impl<T: Copy + Eq + Hash + Send> Counter<T> for FxHashMap<T, u64> {
    fn add(&mut self, value: T) {
        *self.entry(value).or_insert(0) += 1;
    }

    fn merge(self, other: Self) -> Self {
        let (mut a, b) = if self.len() >= other.len() {
            (self, other)
        } else {
            (other, self)
        };
        for (value, count) in b {
            *a.entry(value).or_insert(0) += count;
        }
        a
    }

    fn cells(self) -> Vec<(T, u64)> {
        self.into_iter().collect()
    }
}

/// Counts of the integers `low, low + 1, …`, by offset from `low`.
struct Dense {
    low: i64,
    counts: Vec<u64>,
}

impl Counter<i64> for Dense {
    fn add(&mut self, value: i64) {
        // Unwrap safety: every value lies in [low, low + span), span at most 2^20.
        let offset = usize::try_from(value.abs_diff(self.low)).expect("offset below 2^20");
        self.counts[offset] += 1;
    }

    fn merge(mut self, other: Self) -> Self {
        for (count, more) in self.counts.iter_mut().zip(other.counts) {
            *count += more;
        }
        self
    }

    fn cells(self) -> Vec<(i64, u64)> {
        let low = self.low;
        self.counts
            .into_iter()
            .enumerate()
            .filter(|&(_, count)| count > 0)
            // Unwrap safety: offsets are below 2^20 and `low + offset` is at most the largest
            // value.
            .map(|(offset, count)| {
                (
                    low + i64::try_from(offset).expect("offset below 2^20"),
                    count,
                )
            })
            .collect()
    }
}

/// The sampled counts of one round over `values`: the chunks, streams and gaps of the
/// gap-skipping path, counted in counters made by `counter`.
fn sampled_cells<T, C>(
    values: &[T],
    mechanism: &SampleThreshold,
    seed: u64,
    counter: impl Fn() -> C + Send + Sync,
) -> Vec<(T, u64)>
where
    T: Copy + Send + Sync,
    C: Counter<T>,
{
    // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
    let sampler =
        PoissonSampler::new(mechanism.params().sampling_rate()).expect("validated sampling rate");
    let chunks = values.len().div_ceil(GAP_SKIPPING_CHUNK);
    (0..chunks)
        .into_par_iter()
        .fold(&counter, |mut counts, index| {
            let start = index * GAP_SKIPPING_CHUNK;
            let chunk = &values[start..values.len().min(start + GAP_SKIPPING_CHUNK)];
            let mut rng = stream(seed, Purpose::GapSkipping, index as u64);
            let mut indices = sampler.indices(chunk.len() as u64, &mut rng);
            // Draw a batch of indices, then read their values in a tight loop: the reads are
            // then independent of each other and their cache misses overlap.
            let mut gathered = Vec::with_capacity(GATHER_BATCH);
            loop {
                gathered.clear();
                // Unwrap safety: sampled indices are below the chunk length.
                gathered.extend(
                    indices
                        .by_ref()
                        .take(GATHER_BATCH)
                        .map(|i| chunk[usize::try_from(i).expect("index below chunk length")]),
                );
                if gathered.is_empty() {
                    break counts;
                }
                for &value in &gathered {
                    counts.add(value);
                }
            }
        })
        .reduce_with(Counter::merge)
        .map_or_else(Vec::new, Counter::cells)
}

/// The cells of `cells` that reach the threshold, in the release's order.
fn release<T: Copy + Eq + Hash>(
    values: &[T],
    mechanism: &SampleThreshold,
    cells: Vec<(T, u64)>,
) -> Vec<(T, u64)> {
    let threshold = mechanism.params().threshold();
    let mut released: Vec<(T, u64)> = cells
        .into_iter()
        .filter(|&(_, count)| count >= threshold)
        .collect();
    let first = first_appearances(values, &tied(&released));
    released.sort_unstable_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| first.get(&a.0).cmp(&first.get(&b.0)))
    });
    released
}

/// The values of `cells` whose count another cell shares: only their order needs their first
/// appearance.
fn tied<T: Copy + Eq + Hash>(cells: &[(T, u64)]) -> Vec<T> {
    let mut by_count: FxHashMap<u64, usize> = FxHashMap::default();
    for &(_, count) in cells {
        *by_count.entry(count).or_insert(0) += 1;
    }
    cells
        .iter()
        .filter(|(_, count)| by_count[count] > 1)
        .map(|&(value, _)| value)
        .collect()
}

/// The position of the first appearance in `values` of each of `wanted`, scanning only as far
/// as the last of them.
fn first_appearances<T: Copy + Eq + Hash>(values: &[T], wanted: &[T]) -> FxHashMap<T, usize> {
    let mut missing: FxHashMap<T, ()> = wanted.iter().map(|&value| (value, ())).collect();
    let mut found = FxHashMap::default();
    for (position, value) in values.iter().enumerate() {
        if missing.is_empty() {
            break;
        }
        if missing.remove(value).is_some() {
            found.insert(*value, position);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget};

    use super::*;
    use crate::{ExecutionPath, Population, run_sample_threshold};

    /// The population of the values written as text: ids in order of first appearance.
    fn interned(values: &[i64]) -> Population {
        let names: Vec<String> = values.iter().map(i64::to_string).collect();
        Population::from_names(&names, "values").unwrap()
    }

    fn mechanism() -> SampleThreshold {
        SampleThreshold::calibrate(
            1.0,
            1e-8,
            PlanTarget::Threshold(20),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap()
    }

    #[test]
    fn the_release_is_that_of_the_gap_skipping_path_on_the_interned_population() {
        // Three chunks, many ties (items 0..40 with equal multiplicities), a skewed head.
        let values: Vec<i64> = (0..2_500_000i64)
            .map(|i| {
                if i % 3 == 0 {
                    (i * 7919) % 40
                } else {
                    (i % 11) * 1000 - 5
                }
            })
            .collect();
        let population = interned(&values);
        let mechanism = mechanism();
        for seed in [1, 2, 99] {
            let expected =
                run_sample_threshold(&population, &mechanism, ExecutionPath::GapSkipping, seed);
            let released = sample_threshold_values(&values, &mechanism, seed);
            let expected: Vec<(String, u64)> = expected
                .items
                .iter()
                .map(|cell| {
                    (
                        population.item_name(cell.item).unwrap().into_owned(),
                        cell.count,
                    )
                })
                .collect();
            let released: Vec<(String, u64)> = released
                .iter()
                .map(|&(value, count)| (value.to_string(), count))
                .collect();
            assert!(expected.len() > 40, "many cells, with ties");
            assert_eq!(released, expected, "seed {seed}");
        }
    }

    #[test]
    fn integers_too_far_apart_for_an_array_give_the_same_release() {
        // Values spread over 2^41: counted in a hash map, released as by the general path.
        let values: Vec<i64> = (0..300_000i64)
            .map(|i| ((i * 31) % 97 - 48) << 40)
            .collect();
        let mechanism = mechanism();
        let released = sample_threshold_integers(&values, &mechanism, 5);
        assert!(released.len() > 50);
        assert_eq!(released, sample_threshold_values(&values, &mechanism, 5));
        // A narrow range at either end of i64 is counted in an array without overflow.
        for edge in [i64::MIN, i64::MAX - 96] {
            let values: Vec<i64> = (0..300_000i64).map(|i| edge + (i * 31) % 97).collect();
            let released = sample_threshold_integers(&values, &mechanism, 6);
            assert!(released.len() > 50);
            assert_eq!(released, sample_threshold_values(&values, &mechanism, 6));
        }
    }

    #[test]
    fn nothing_is_released_from_no_values() {
        let mechanism = mechanism();
        assert!(sample_threshold_values::<i64>(&[], &mechanism, 3).is_empty());
        assert!(sample_threshold_integers(&[], &mechanism, 3).is_empty());
    }
}
