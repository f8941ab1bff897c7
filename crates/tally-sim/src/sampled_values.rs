//! One sample-and-threshold round over a column of values held in memory, one value per
//! client, counted in a hash map (or an array): no population is built and only sampled
//! clients are counted.
//!
//! Each client's exact `Ber(p_s)` coin is drawn one of two ways, whichever is cheaper:
//!
//! - when `min(p_s, 1 − p_s)` is at least [`BIT_SLICED_ABOVE`], 64 clients at a time as the
//!   bits of a [`SlicedCoins`] mask (about 8 random words per 64 clients), in fixed blocks of
//!   [`SLICED_BLOCK`] clients each with its own ChaCha stream;
//! - otherwise by exact geometric gaps between sampled clients: exactly the sample
//!   [`run_sample_threshold`](crate::run_sample_threshold) draws on the default
//!   ([`ExecutionPath::GapSkipping`](crate::ExecutionPath::GapSkipping)) path for the same seed
//!   over the population the values intern to (the same chunks, streams and gaps).
//!
//! Both sample every client independently with probability exactly `p_s`: the releases are
//! equal in law, and neither depends on the number of threads.

use std::hash::Hash;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::{BIT_SLICED_ABOVE, PoissonSampler, SlicedCoins};

use crate::execute::{GAP_SKIPPING_CHUNK, GATHER_BATCH};
use crate::rng::{Purpose, stream};

/// The clients in one block of bit-sliced coins, drawn from one ChaCha stream.
pub(crate) const SLICED_BLOCK: usize = 1 << 16;

/// Integer ranges up to this many values are counted in an array rather than a hash map.
const DENSE_SPAN: u64 = 1 << 20;

/// The span of the first array of counts (it grows as the values need).
const FIRST_SPAN: u64 = 1 << 12;

/// Runs one round of `mechanism` over `values` (client `i` holds `values[i]`) with the
/// randomness of `seed`, and returns the released cells as `(value, sampled count)`, in the
/// release's order: by decreasing count, ties by the value's first appearance in `values`.
///
/// Each client is sampled by an independent exact `Ber(p_s)` coin (bit-sliced or by geometric
/// gaps, see this module's docs); a value is released when at least the threshold of its
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

/// [`sample_threshold_values`] for integers: while they span at most `2^20` values, the sample
/// is counted in an array indexed by value (of 32-bit counts, half the cache of 64-bit ones,
/// when there are fewer than `2^32` values), and the tied values' first appearances are found
/// with an array of flags (the same release, faster).
pub fn sample_threshold_integers(
    values: &[i64],
    mechanism: &SampleThreshold,
    seed: u64,
) -> Vec<(i64, u64)> {
    let cells = if u32::try_from(values.len()).is_ok() {
        sampled_cells(values, mechanism, seed, Integers::default)
    } else {
        sampled_cells(values, mechanism, seed, FxHashMap::<i64, u64>::default)
    };
    let released = threshold(mechanism, cells);
    let tied = tied(&released);
    let first = match Range::of(&tied) {
        Some(range) if range.span() <= DENSE_SPAN => {
            first_integer_appearances(values, &tied, range)
        }
        _ => first_appearances(values, &tied),
    };
    in_release_order(released, &first)
}

/// Where a round's sampled values are counted.
trait Counter<T>: Send + Sized {
    /// Prepares for the sampled clients of `block`, before they are counted.
    fn start_block(&mut self, _block: &[T]) {}
    /// Counts one sampled client for each `values[i]` whose bit `i` of `mask` is set
    /// (`values` holds at most 64).
    fn add_masked(&mut self, values: &[T], mask: u64);
    /// Both counters' counts.
    fn merge(self, other: Self) -> Self;
    /// The values with their counts, each value sampled at least once.
    fn cells(self) -> Vec<(T, u64)>;
}

impl<T: Copy + Eq + Hash + Send> Counter<T> for FxHashMap<T, u64> {
    fn add_masked(&mut self, values: &[T], mut mask: u64) {
        while mask != 0 {
            *self
                .entry(values[mask.trailing_zeros() as usize])
                .or_insert(0) += 1;
            mask &= mask - 1;
        }
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

/// The smallest and largest of some integers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    low: i64,
    high: i64,
}

impl Range {
    /// The range of `values`, `None` if there are none.
    fn of(values: &[i64]) -> Option<Self> {
        let (&first, rest) = values.split_first()?;
        Some(rest.iter().fold(
            Self {
                low: first,
                high: first,
            },
            |range, &value| Self {
                low: range.low.min(value),
                high: range.high.max(value),
            },
        ))
    }

    /// The smallest range holding both.
    fn union(self, other: Self) -> Self {
        Self {
            low: self.low.min(other.low),
            high: self.high.max(other.high),
        }
    }

    /// How many integers the range holds (up to 2^64, saturated).
    fn span(self) -> u64 {
        self.high.abs_diff(self.low).saturating_add(1)
    }

    /// The offset of `value` from `low`, if the range holds it.
    fn offset(self, value: i64) -> Option<usize> {
        let offset = value.wrapping_sub(self.low) as u64;
        (value >= self.low && value <= self.high).then_some(offset as usize)
    }
}

/// Counts of integers: in an array indexed by offset from the smallest value while the values
/// seen span at most [`DENSE_SPAN`], else in a hash map. The array's counts are 32-bit: a
/// round's values must number fewer than `2^32`.
#[derive(Default)]
enum Integers {
    /// No values yet.
    #[default]
    Empty,
    /// Counts of `range.low, range.low + 1, …, range.high`.
    Dense {
        range: Range,
        counts: Vec<u32>,
    },
    Sparse(FxHashMap<i64, u64>),
}

impl Integers {
    /// The same counts over `range` (which holds every counted value): in an array if it
    /// spans at most [`DENSE_SPAN`] values, else in a hash map.
    fn widened(self, range: Range) -> Self {
        if range.span() > DENSE_SPAN {
            return match self {
                Self::Sparse(counts) => Self::Sparse(counts),
                other => Self::Sparse(other.cells().into_iter().collect()),
            };
        }
        // Unwrap safety: the span is at most 2^20.
        let mut counts = vec![0; usize::try_from(range.span()).expect("span below 2^20")];
        match self {
            Self::Empty => {}
            Self::Dense {
                range: old,
                counts: old_counts,
            } => {
                // Unwrap safety: `range` holds the old range.
                let start = range.offset(old.low).expect("the old range inside");
                counts[start..start + old_counts.len()].copy_from_slice(&old_counts);
            }
            Self::Sparse(old_counts) => {
                for (value, count) in old_counts {
                    // Unwrap safety: `range` holds every counted value, and a count is at most
                    // the number of values (below 2^32, see `sample_threshold_integers`).
                    counts[range.offset(value).expect("value in range")] +=
                        u32::try_from(count).expect("count below 2^32");
                }
            }
        }
        Self::Dense { range, counts }
    }

    /// Makes room for `value`: the array grows to hold it (at least doubling, so that a
    /// column's values are covered after a few copies), or the counts move to a hash map when
    /// the range would span more than [`DENSE_SPAN`] values.
    fn make_room(&mut self, value: i64) {
        let (range, old_span) = match self {
            Self::Sparse(_) => return,
            Self::Empty => (
                Range {
                    low: value,
                    high: value,
                },
                0,
            ),
            Self::Dense { range, .. } => (*range, range.span()),
        };
        let needed = range.union(Range {
            low: value,
            high: value,
        });
        let span = needed
            .span()
            .max(old_span * 2)
            .clamp(FIRST_SPAN, DENSE_SPAN);
        // Widen towards the new value, as far as i64 allows.
        let extra = span.saturating_sub(needed.span());
        let widened = if value < range.low || old_span == 0 {
            Range {
                low: needed.low.saturating_sub_unsigned(extra),
                high: needed.high,
            }
        } else {
            Range {
                low: needed.low,
                high: needed.high.saturating_add_unsigned(extra),
            }
        };
        *self = std::mem::take(self).widened(widened);
    }
}

impl Counter<i64> for Integers {
    fn start_block(&mut self, block: &[i64]) {
        // The first block's range sizes the array: most columns need no growth after it.
        if let Self::Empty = self
            && let Some(range) = Range::of(block)
        {
            *self = Self::Empty.widened(range);
        }
    }

    fn add_masked(&mut self, values: &[i64], mut mask: u64) {
        if let Self::Dense { range, counts } = self {
            // Count while the values fall in the array.
            let low = range.low;
            while mask != 0 {
                let value = values[mask.trailing_zeros() as usize];
                match counts.get_mut(value.wrapping_sub(low) as u64 as usize) {
                    Some(count) => *count += 1,
                    None => break,
                }
                mask &= mask - 1;
            }
        }
        if mask == 0 {
            return;
        }
        if let Self::Sparse(counts) = self {
            counts.add_masked(values, mask);
        } else {
            // The first value outside the array: make room for it and go on.
            self.make_room(values[mask.trailing_zeros() as usize]);
            self.add_masked(values, mask);
        }
    }

    fn merge(self, other: Self) -> Self {
        let (range, other_range) = match (&self, &other) {
            (Self::Empty, _) => return other,
            (_, Self::Empty) => return self,
            (
                Self::Dense { range, .. },
                Self::Dense {
                    range: other_range, ..
                },
            ) => (*range, *other_range),
            _ => {
                let counts: FxHashMap<i64, u64> = self.cells().into_iter().collect();
                return Self::Sparse(counts.merge(other.cells().into_iter().collect()));
            }
        };
        // Add the counts of the narrower range into the wider (widened to hold both).
        let union = range.union(other_range);
        let (wide, narrow) = if other_range == union {
            (other, self)
        } else {
            (self, other)
        };
        match (wide.widened(union), narrow) {
            (
                Self::Dense { range, mut counts },
                Self::Dense {
                    range: narrow_range,
                    counts: more,
                },
            ) => {
                // Unwrap safety: the union holds the narrow range.
                let start = range.offset(narrow_range.low).expect("inside the union");
                for (count, more) in counts[start..].iter_mut().zip(more) {
                    *count += more;
                }
                Self::Dense { range, counts }
            }
            (wide, narrow) => {
                let counts: FxHashMap<i64, u64> = wide.cells().into_iter().collect();
                Self::Sparse(counts.merge(narrow.cells().into_iter().collect()))
            }
        }
    }

    fn cells(self) -> Vec<(i64, u64)> {
        match self {
            Self::Empty => Vec::new(),
            Self::Sparse(counts) => counts.cells(),
            Self::Dense { range, counts } => counts
                .into_iter()
                .zip(range.low..=range.high)
                .filter(|&(count, _)| count > 0)
                .map(|(count, value)| (value, u64::from(count)))
                .collect(),
        }
    }
}

/// The sampled counts of one round over `values` at `mechanism`'s rate, counted in counters
/// made by `counter`.
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
    cells_at_rate(values, mechanism.params().sampling_rate(), seed, counter)
}

/// The sampled counts of one round over `values` at `rate`: bit-sliced coins when
/// `min(rate, 1 − rate)` is at least [`BIT_SLICED_ABOVE`], else the chunks, streams and gaps
/// of the gap-skipping path.
fn cells_at_rate<T, C>(
    values: &[T],
    rate: f64,
    seed: u64,
    counter: impl Fn() -> C + Send + Sync,
) -> Vec<(T, u64)>
where
    T: Copy + Send + Sync,
    C: Counter<T>,
{
    if rate.min(1.0 - rate) >= BIT_SLICED_ABOVE {
        sliced_cells(values, rate, seed, counter)
    } else {
        gap_cells(values, rate, seed, counter)
    }
}

/// The sampled counts with bit-sliced coins: block `b` of [`SLICED_BLOCK`] clients draws its
/// masks from its own stream, 64 clients a mask.
fn sliced_cells<T, C>(
    values: &[T],
    rate: f64,
    seed: u64,
    counter: impl Fn() -> C + Send + Sync,
) -> Vec<(T, u64)>
where
    T: Copy + Send + Sync,
    C: Counter<T>,
{
    // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
    let coins = SlicedCoins::new(rate).expect("validated sampling rate");
    values
        .par_chunks(SLICED_BLOCK)
        .enumerate()
        // About two counters per thread: few counters to allocate and merge, and still
        // room to balance the work. (Counts add up the same however the blocks are split.)
        .with_min_len(
            values
                .len()
                .div_ceil(SLICED_BLOCK * 2 * rayon::current_num_threads()),
        )
        .fold(&counter, |mut counts, (index, block)| {
            counts.start_block(block);
            let mut rng = stream(seed, Purpose::SlicedCoins, index as u64);
            for lanes in block.chunks(64) {
                // Unwrap safety: chunks hold 1 to 64 values.
                let mask = coins.flip(
                    u32::try_from(lanes.len()).expect("at most 64 lanes"),
                    &mut rng,
                );
                counts.add_masked(lanes, mask);
            }
            counts
        })
        .reduce_with(Counter::merge)
        .map_or_else(Vec::new, Counter::cells)
}

/// The sampled counts by gap skipping: the chunks, streams and gaps of the gap-skipping path.
fn gap_cells<T, C>(
    values: &[T],
    rate: f64,
    seed: u64,
    counter: impl Fn() -> C + Send + Sync,
) -> Vec<(T, u64)>
where
    T: Copy + Send + Sync,
    C: Counter<T>,
{
    // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
    let sampler = PoissonSampler::new(rate).expect("validated sampling rate");
    let chunks = values.len().div_ceil(GAP_SKIPPING_CHUNK);
    (0..chunks)
        .into_par_iter()
        .fold(&counter, |mut counts, index| {
            let start = index * GAP_SKIPPING_CHUNK;
            let chunk = &values[start..values.len().min(start + GAP_SKIPPING_CHUNK)];
            counts.start_block(chunk);
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
                for values in gathered.chunks(64) {
                    counts.add_masked(values, u64::MAX >> (64 - values.len()));
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
    let released = threshold(mechanism, cells);
    let first = first_appearances(values, &tied(&released));
    in_release_order(released, &first)
}

/// The cells of `cells` that reach the threshold.
fn threshold<T>(mechanism: &SampleThreshold, cells: Vec<(T, u64)>) -> Vec<(T, u64)> {
    let threshold = mechanism.params().threshold();
    cells
        .into_iter()
        .filter(|&(_, count)| count >= threshold)
        .collect()
}

/// `released` by decreasing count, ties by first appearance (`first` holds the tied values').
fn in_release_order<T: Copy + Eq + Hash>(
    mut released: Vec<(T, u64)>,
    first: &FxHashMap<T, usize>,
) -> Vec<(T, u64)> {
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

/// [`first_appearances`] of integers `wanted` within `range`, looked up in a set of bits (a few
/// kilobytes, in the first-level cache): blocks of [`SLICED_BLOCK`] values are scanned a few at
/// a time in parallel, each with its own copy of the bits of the values still missing, cleared
/// as it finds them (so a block reports each value once, with no hashing per value), until
/// every wanted value is found.
fn first_integer_appearances(
    values: &[i64],
    wanted: &[i64],
    range: Range,
) -> FxHashMap<i64, usize> {
    // Unwrap safety: the callers' range spans at most 2^20 values.
    let span = usize::try_from(range.span()).expect("span below 2^20");
    let mut missing = vec![0u64; span.div_ceil(64)];
    for &value in wanted {
        // Unwrap safety: `range` holds every wanted value.
        let offset = range.offset(value).expect("wanted value in range");
        missing[offset / 64] |= 1 << (offset % 64);
    }
    let mut found = FxHashMap::default();
    let round = SLICED_BLOCK * 2 * rayon::current_num_threads();
    for (start, values) in (0..).step_by(round).zip(values.chunks(round)) {
        if found.len() == wanted.len() {
            break;
        }
        // Each block's first appearances of the values still missing, in block order.
        let firsts: Vec<Vec<(i64, usize)>> = values
            .par_chunks(SLICED_BLOCK)
            .enumerate()
            .map(|(block, values)| {
                let mut unseen = missing.clone();
                let base = start + block * SLICED_BLOCK;
                reported_once(values, base, range.low, &mut unseen)
            })
            .collect();
        // Blocks come in order, so a value's first report is its first appearance.
        for (value, position) in firsts.into_iter().flatten() {
            found.entry(value).or_insert_with(|| {
                // Unwrap safety: found values are wanted values, which `range` holds.
                let offset = range.offset(value).expect("wanted value in range");
                missing[offset / 64] &= !(1 << (offset % 64));
                position
            });
        }
    }
    found
}

/// The values of `values` whose bit (at their offset from `low`) is set in `unseen`, each at its
/// first position (counted from `base`), clearing its bit as it is found.
///
/// Eight values are tested at a time without branching: almost every value is not wanted, and
/// only a group holding a wanted one is looked at value by value.
fn reported_once(values: &[i64], base: usize, low: i64, unseen: &mut [u64]) -> Vec<(i64, usize)> {
    let span = unseen.len() as u64 * 64;
    // Whether `value` is wanted and unseen: in the range exactly when its offset, taken modulo
    // 2^64, is below the span (the range does not wrap around i64; the bits past the range's
    // end, up to a whole word, are never set).
    let wanted = |unseen: &[u64], value: i64| {
        let offset = value.wrapping_sub(low) as u64;
        let inside = offset < span;
        let offset = if inside { offset } else { 0 };
        inside & (unseen[(offset / 64) as usize] >> (offset % 64) & 1 == 1)
    };
    let mut seen = Vec::new();
    for (group, values) in values.chunks(8).enumerate() {
        if !values
            .iter()
            .fold(false, |any, &value| any | wanted(unseen, value))
        {
            continue;
        }
        for (position, &value) in values.iter().enumerate() {
            if wanted(unseen, value) {
                let offset = value.wrapping_sub(low) as u64;
                unseen[(offset / 64) as usize] &= !(1 << (offset % 64));
                seen.push((value, base + group * 8 + position));
            }
        }
    }
    seen
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

    /// A mechanism whose rate is below [`BIT_SLICED_ABOVE`]: sampled by gap skipping.
    fn rare_mechanism() -> SampleThreshold {
        let mechanism = SampleThreshold::calibrate(
            1.0,
            1e-8,
            PlanTarget::SamplingRate(0.02),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        assert!(mechanism.params().sampling_rate() < BIT_SLICED_ABOVE);
        mechanism
    }

    #[test]
    fn below_the_bit_sliced_rates_the_release_is_that_of_the_gap_skipping_path() {
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
        let mechanism = rare_mechanism();
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

    /// Each value's sampled count over `seeds`, summed, at `rate` with bit-sliced coins or gaps.
    fn summed_counts(values: &[i64], rate: f64, seeds: u64, sliced: bool) -> FxHashMap<i64, u64> {
        let mut sums = FxHashMap::default();
        for seed in 0..seeds {
            let cells = if sliced {
                sliced_cells(values, rate, seed, FxHashMap::<i64, u64>::default)
            } else {
                gap_cells(values, rate, seed, FxHashMap::<i64, u64>::default)
            };
            for (value, count) in cells {
                *sums.entry(value).or_insert(0) += count;
            }
        }
        sums
    }

    #[test]
    fn bit_sliced_coins_sample_as_the_gaps_do_at_alpha_1e_6() {
        // Three values held by 100, 10,000 and 200,000 clients (blocks that end mid-mask),
        // sampled over 30 seeds both ways at p = 0.24: each value's summed count on either
        // path is Bin(30·n, p), so their difference has sd √(2·30·n·p(1 − p)). Bound at
        // α = 1e-6 over the six checks (z = 5.45 for 1e-6 / 6, two-sided), and a mutant
        // bit-sliced sampler at 1.1 p that the same bound catches.
        let (rate, seeds, z) = (0.24, 30u64, 5.45);
        let values: Vec<i64> = (0..210_100i64)
            .map(|i| match i % 2101 {
                0 => 7,
                1..=100 => -3,
                _ => 1 << 40,
            })
            .collect();
        let held = |value: i64| values.iter().filter(|&&v| v == value).count() as f64;
        let gaps = summed_counts(&values, rate, seeds, false);
        let sliced = summed_counts(&values, rate, seeds, true);
        let mutant = summed_counts(&values, rate * 1.1, seeds, true);
        for value in [7, -3, 1 << 40] {
            let n = seeds as f64 * held(value);
            let sd = (2.0 * n * rate * (1.0 - rate)).sqrt();
            let difference =
                |counts: &FxHashMap<i64, u64>| (counts[&value] as f64 - gaps[&value] as f64).abs();
            assert!(difference(&sliced) <= z * sd, "value {value}");
            if n > 1e6 {
                assert!(difference(&mutant) > z * sd, "mutant, value {value}");
            }
        }
    }

    #[test]
    fn bit_sliced_samples_do_not_depend_on_the_threads() {
        let values: Vec<i64> = (0..300_001i64).map(|i| i % 13).collect();
        let mechanism = mechanism();
        assert!(mechanism.params().sampling_rate() >= BIT_SLICED_ABOVE);
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| sample_threshold_integers(&values, &mechanism, 4))
        };
        let one = on(1);
        assert_eq!(one.len(), 13);
        assert_eq!(on(3), one);
        // Another seed draws another sample.
        assert_ne!(sample_threshold_integers(&values, &mechanism, 5), one);
    }

    #[test]
    fn blocks_of_different_ranges_are_counted_as_in_a_hash_map() {
        // Blocks whose ranges differ (the array grows, and merges across threads join ranges),
        // then a block far away (the counts move to a hash map mid-way).
        let block = |i: i64| -> i64 {
            match i / SLICED_BLOCK as i64 {
                0 => i % 97,
                1 => -500 + i % 89,
                2 => 100_000 + i % 83,
                _ => (1 << 30) + i % 7,
            }
        };
        let mechanism = mechanism();
        for blocks in [3i64, 4] {
            let values: Vec<i64> = (0..blocks * SLICED_BLOCK as i64).map(block).collect();
            for threads in [1, 2] {
                let released = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| sample_threshold_integers(&values, &mechanism, 8));
                assert!(released.len() > 250, "{}", released.len());
                assert_eq!(released, sample_threshold_values(&values, &mechanism, 8));
            }
        }
    }

    #[test]
    fn nothing_is_released_from_no_values() {
        let mechanism = mechanism();
        assert!(sample_threshold_values::<i64>(&[], &mechanism, 3).is_empty());
        assert!(sample_threshold_integers(&[], &mechanism, 3).is_empty());
    }
}
