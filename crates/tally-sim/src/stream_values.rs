//! Files of numbers read once, as a stream, into the counts of their values per leaf of a
//! hierarchical tree: all that a hierarchical histogram's levels need (see
//! [`crate::run_hierarchical_counted`]).
//!
//! A client's bucket at level `ℓ` is its leaf divided by `β^{L−ℓ}` ([`TreeShape::bucket`]), so
//! a level's bucket holds the clients of a run of consecutive leaves. Memory holds one count
//! per leaf and thread, not one value per client.

use std::path::Path;

use rayon::prelude::*;
use tally_core::quantiles::{TreeShape, ValueRange};

use crate::Error;
use crate::load::open;
use crate::stream::{Chunk, LINE_CHUNK_BYTES, fold_chunks};
use crate::values::{Values, ValuesError, describe_file, parse_value};

/// Leaves counted at a time (see [`add_leaves`]).
const LEAF_BATCH: usize = 256;

/// A population of numbers kept as the number of clients in each leaf of a [`TreeShape`].
#[derive(Clone, Debug, PartialEq)]
pub struct CountedValues {
    shape: TreeShape,
    /// Clients per leaf, `β^L` of them.
    leaves: Vec<u64>,
    clients: u64,
    range: Option<ValueRange>,
    description: String,
}

/// What one thread's chunks held.
struct Tally {
    leaves: Vec<u64>,
    /// `(chunk, lines)` of every chunk read through.
    line_counts: Vec<(u64, u64)>,
    /// The first bad line of each chunk that has one: `(chunk, line in it, fault)`.
    faults: Vec<(u64, u64, LineFault)>,
}

/// A bad line, without its place.
enum LineFault {
    NotUtf8,
    /// The line's trimmed text, which [`parse_value`] refuses.
    BadValue(String),
}

impl CountedValues {
    /// The most leaves a tree may have to be counted (one `u64` per leaf and thread); larger
    /// trees load the values instead.
    pub const MAX_LEAVES: u64 = 1 << 24;

    /// Whether a tree of `shape` can be counted ([`CountedValues::MAX_LEAVES`]).
    pub fn fits(shape: TreeShape) -> bool {
        shape.leaves() <= Self::MAX_LEAVES
    }

    /// Counts the values of the file at `path` (`.gz` is decompressed) per leaf of `shape`,
    /// reading it once as a stream on all cores; `progress` is called with the bytes read so
    /// far. The clients, their values and the errors are those of [`Values::from_file`].
    ///
    /// # Errors
    ///
    /// As [`Values::from_file`], naming the first bad line of the file.
    ///
    /// # Panics
    ///
    /// If `shape` does not [fit](CountedValues::fits).
    pub fn from_file(
        path: &Path,
        range: Option<ValueRange>,
        shape: TreeShape,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Self, ValuesError> {
        assert!(Self::fits(shape), "{} leaves are too many", shape.leaves());
        let name = path.display().to_string();
        // Unwrap safety: `fits` bounds the leaves by 2^24.
        let leaf_count = usize::try_from(shape.leaves()).expect("leaves fit in usize");
        let tallies = fold_chunks(
            LINE_CHUNK_BYTES,
            open(path)?,
            &name,
            progress,
            || Tally {
                leaves: vec![0; leaf_count],
                line_counts: Vec::new(),
                faults: Vec::new(),
            },
            |tally, chunk| Ok(count_chunk(tally, chunk, shape, range)),
        )?;
        // The first thread's counts become the total, so that memory holds no extra array.
        let mut total: Option<Vec<u64>> = None;
        let mut line_counts = Vec::new();
        let mut faults = Vec::new();
        for tally in tallies {
            match &mut total {
                None => total = Some(tally.leaves),
                Some(total) => total
                    .par_iter_mut()
                    .zip(tally.leaves.par_iter())
                    .for_each(|(total, count)| *total += count),
            }
            line_counts.extend(tally.line_counts);
            faults.extend(tally.faults);
        }
        let leaves = total.unwrap_or_else(|| vec![0; leaf_count]);
        if let Some((chunk, line, fault)) = faults
            .into_iter()
            .min_by_key(|&(chunk, line, _)| (chunk, line))
        {
            // Every chunk before the first fault was read through.
            let line = line_counts
                .iter()
                .filter(|&&(index, _)| index < chunk)
                .map(|&(_, count)| count)
                .sum::<u64>()
                + line
                + 1;
            return Err(match fault {
                LineFault::NotUtf8 => Error::NotUtf8 { file: name, line }.into(),
                LineFault::BadValue(text) => parse_value(&text, &name, line, range)
                    .expect_err("the line was refused while counting"),
            });
        }
        let clients = leaves.iter().sum();
        if clients == 0 {
            return Err(Error::Empty {
                file: name,
                what: " or holds only blank lines",
            }
            .into());
        }
        Ok(Self {
            shape,
            leaves,
            clients,
            range,
            description: describe_file(clients, &name, range),
        })
    }

    /// The counts of loaded `values` per leaf of `shape`.
    ///
    /// # Panics
    ///
    /// If `shape` does not [fit](CountedValues::fits).
    pub fn from_values(values: &Values, shape: TreeShape) -> Self {
        assert!(Self::fits(shape), "{} leaves are too many", shape.leaves());
        // Unwrap safety: `fits` bounds the leaves by 2^24.
        let mut leaves = vec![0u64; usize::try_from(shape.leaves()).expect("leaves fit")];
        for &x in values.as_slice() {
            leaves[leaf_index(shape, x)] += 1;
        }
        Self {
            shape,
            leaves,
            clients: values.len() as u64,
            range: values.range(),
            description: values.description().to_owned(),
        }
    }

    /// The tree whose leaves the values are counted in.
    pub fn shape(&self) -> TreeShape {
        self.shape
    }

    /// The number of clients in each leaf, by leaf.
    pub fn leaves(&self) -> &[u64] {
        &self.leaves
    }

    /// The number of clients.
    pub fn clients(&self) -> u64 {
        self.clients
    }

    /// The range the values were rescaled from, if any.
    pub fn range(&self) -> Option<ValueRange> {
        self.range
    }

    /// One line saying where the values came from, as [`Values::description`] says it.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// The leaf of `x ∈ [0, 1]` as an index.
fn leaf_index(shape: TreeShape, x: f64) -> usize {
    // Unwrap safety: leaves are fewer than 2^24.
    usize::try_from(shape.leaf(x)).expect("leaf fits in usize")
}

/// Adds one client to each leaf of `batch`, and empties it.
///
/// The leaves of a batch are counted in a loop of their own, whose increments do not wait on
/// one another, so that the processor overlaps their cache misses (a tree of `4^10` leaves
/// holds 8 MB of counts) instead of meeting them one parsed line at a time.
fn add_leaves(leaves: &mut [u64], batch: &mut Vec<usize>) {
    for &leaf in batch.iter() {
        leaves[leaf] += 1;
    }
    batch.clear();
}

/// Counts a chunk's values into `tally`, or notes its first bad line; returns its lines.
fn count_chunk(
    tally: &mut Tally,
    chunk: &Chunk,
    shape: TreeShape,
    range: Option<ValueRange>,
) -> u64 {
    let (lines, not_utf8) = chunk.lines_before_fault();
    let mut count = 0;
    let mut batch = Vec::with_capacity(LEAF_BATCH);
    for (number, line) in lines {
        count += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        match parse_value(text, "", number, range) {
            Ok(x) => {
                batch.push(leaf_index(shape, x));
                if batch.len() == LEAF_BATCH {
                    add_leaves(&mut tally.leaves, &mut batch);
                }
            }
            Err(_) => {
                tally
                    .faults
                    .push((chunk.index, number, LineFault::BadValue(text.to_owned())));
                return count;
            }
        }
    }
    add_leaves(&mut tally.leaves, &mut batch);
    if let Some(line) = not_utf8 {
        tally.faults.push((chunk.index, line, LineFault::NotUtf8));
        return count;
    }
    tally.line_counts.push((chunk.index, count));
    count
}
