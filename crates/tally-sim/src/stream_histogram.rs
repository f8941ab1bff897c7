//! One sample-and-threshold round read straight from a file, sampling before parsing.
//!
//! The input is read as a stream of chunks ([`crate::stream`]). In each chunk every line's
//! boundary is found and blank lines are skipped; a [`LineSampling`] then decides which
//! clients (non-blank lines, or TSV rows) are sampled, and only those are hashed and counted.
//! No per-line string or id is ever stored: memory holds a few chunks plus one count per
//! distinct sampled item (and, for client-level TSV, one chosen row per distinct client).

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use foldhash::fast::FixedState;
use rand_chacha::ChaCha12Rng;
use rand_distr::Distribution;
use tally_core::histogram::{SampleThreshold, SampleThresholdRelease};
use tally_core::sampling::ExactGeometric;

use crate::Error;
use crate::load::{is_blank, open};
use crate::population::{ClientMode, Source, describe};
use crate::rng::{Purpose, stream};
use crate::stream::{ChunkFault, Fault, LINE_CHUNK_BYTES, fold_chunks};
use crate::stream_tsv::tsv_clients;
use crate::text::{Text, pack};

/// How the streaming path decides which clients are sampled: one [`LineCoins`] per chunk of
/// the input, asked once for every client (non-blank line) of the chunk, in order (or, for
/// client-level TSV, one per partition of the clients; see [`stream_sample_threshold`]).
///
/// An implementation must make the coins of different clients independent with the same
/// probability, the sampling rate of the mechanism it is used with, or the mechanism's privacy
/// guarantee does not hold. Chunks are numbered from 0 and are the same bytes whatever the
/// number of threads.
pub trait LineSampling: Sync {
    /// The coins of one chunk.
    type Coins: LineCoins;

    /// The coins of chunk `chunk`.
    fn coins(&self, chunk: u64) -> Self::Coins;
}

/// The coins of one chunk's clients, drawn in order.
pub trait LineCoins {
    /// Whether the next client is sampled; `client` is its line (lines format) or its
    /// `client_id` (TSV).
    fn sampled(&mut self, client: &str) -> bool;

    /// How many of the next clients are certainly not sampled, whatever they hold: the stream
    /// may then pass over them without reading them, and calls [`LineCoins::skip`]. The
    /// default, 0, has every client read.
    fn unsampled_ahead(&self) -> u64 {
        0
    }

    /// Passes over the next `n` clients, `n` at most [`LineCoins::unsampled_ahead`].
    fn skip(&mut self, n: u64) {
        debug_assert!(n <= self.unsampled_ahead());
    }
}

/// Poisson sampling by exact geometric gap skipping: each client is sampled by its own
/// independent `Ber(p)` coin, exactly, drawn as the gaps between sampled clients (the law of
/// [`tally_core::sampling::PoissonSampler`]). Chunk `i` draws from its own ChaCha12 stream of
/// the seed.
#[derive(Clone, Copy, Debug)]
pub struct PoissonLines {
    gap: ExactGeometric,
    seed: u64,
}

impl PoissonLines {
    /// Poisson sampling at the sampling rate of `mechanism`, seeded with `seed`.
    pub fn new(mechanism: &SampleThreshold, seed: u64) -> Self {
        // Unwrap safety: the accountant validated the rate, which lies in (0, 1).
        let gap = ExactGeometric::new(mechanism.params().sampling_rate())
            .expect("validated sampling rate");
        Self { gap, seed }
    }
}

impl LineSampling for PoissonLines {
    type Coins = PoissonCoins;

    fn coins(&self, chunk: u64) -> PoissonCoins {
        let mut rng = stream(self.seed, Purpose::StreamSampling, chunk);
        let until_next = self.gap.sample(&mut rng);
        PoissonCoins {
            rng,
            gap: self.gap,
            until_next,
        }
    }
}

/// The coins of one chunk under [`PoissonLines`].
#[derive(Debug)]
pub struct PoissonCoins {
    rng: ChaCha12Rng,
    gap: ExactGeometric,
    /// Clients left to skip before the next sampled one.
    until_next: u64,
}

impl LineCoins for PoissonCoins {
    #[inline]
    fn sampled(&mut self, _client: &str) -> bool {
        if self.until_next == 0 {
            self.until_next = self.gap.sample(&mut self.rng);
            true
        } else {
            self.until_next -= 1;
            false
        }
    }

    fn unsampled_ahead(&self) -> u64 {
        self.until_next
    }

    fn skip(&mut self, n: u64) {
        self.until_next -= n;
    }
}

/// A sample-and-threshold release made from a stream, with the names of its items.
#[derive(Clone, Debug)]
pub struct StreamedRelease {
    /// The release; item ids index [`StreamedRelease::names`].
    pub release: SampleThresholdRelease,
    /// Item names by id.
    pub names: Vec<String>,
    /// The number of clients in the input.
    pub clients: u64,
    /// Where the clients came from, as [`crate::Population::description`] says it.
    pub description: String,
}

/// Counts per distinct sampled item. Items shorter than 16 bytes (most words) are keyed by
/// their bytes and length packed in a `u128` ([`pack`]), so counting them hashes and compares
/// one integer; longer items are keyed by their text.
#[derive(Default)]
pub(crate) struct ItemCounts {
    short: HashMap<u128, u64, FixedState>,
    long: HashMap<Box<str>, u64, FixedState>,
}

impl ItemCounts {
    /// Counts one more client holding `item`.
    #[inline]
    pub(crate) fn add(&mut self, item: &str) {
        if let Some(key) = pack(item) {
            *self.short.entry(key).or_insert(0) += 1;
        } else if let Some(held) = self.long.get_mut(item) {
            *held += 1;
        } else {
            self.long.insert(item.into(), 1);
        }
    }

    /// Adds another part's counts.
    pub(crate) fn merge(&mut self, other: Self) {
        for (key, count) in other.short {
            *self.short.entry(key).or_insert(0) += count;
        }
        for (item, count) in other.long {
            *self.long.entry(item).or_insert(0) += count;
        }
    }

    /// The items with their counts, by item.
    pub(crate) fn into_sorted(self) -> Vec<(String, u64)> {
        let mut items: Vec<(String, u64)> = self
            .short
            .into_iter()
            .map(|(key, count)| (Text::from_packed(key).into_string(), count))
            .chain(
                self.long
                    .into_iter()
                    .map(|(item, count)| (item.into_string(), count)),
            )
            .collect();
        items.sort_unstable();
        items
    }

    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }
}

/// One thread's part of the round.
#[derive(Default)]
struct Tally {
    clients: u64,
    counts: ItemCounts,
}

/// The format of a streamed input (see the [crate docs](crate#input-formats)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFormat {
    /// One client per non-blank line, the line its item.
    Lines,
    /// `client_id<TAB>item` rows, clients formed as the mode says.
    Tsv(ClientMode),
}

/// Runs one round of `mechanism` over the file at `path` (`.gz` is decompressed), in the
/// format of [`crate::Population::from_lines_file`] or [`crate::Population::from_tsv_file`],
/// with the clients chosen by `sampling`. `progress` is called with the bytes read so far.
///
/// With [`PoissonLines`] at the mechanism's sampling rate the release is distributed exactly
/// as [`crate::run_sample_threshold`]'s over the loaded population; it is a function of the
/// file's bytes, the format, the mechanism and the seeds only. Lines and rows as clients draw
/// the coins of chunk `i` of the input from `sampling.coins(i)`; client-level TSV first
/// chooses every client's row (exactly uniformly, seeded by the mode's seed), then splits the
/// clients into 1024 partitions by a fixed hash of their `client_id`, and the clients of
/// partition `p`, in the file order of their chosen rows, draw the coins of
/// `sampling.coins(p)`; it reads the file a second time for the chosen rows' items.
///
/// # Errors
///
/// As [`crate::Population::from_lines_file`] or [`crate::Population::from_tsv_file`].
pub fn stream_sample_threshold(
    path: &Path,
    format: StreamFormat,
    mechanism: &SampleThreshold,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<StreamedRelease, Error> {
    let name = path.display().to_string();
    let (clients, counts, description) = stream_counts(path, format, sampling, progress)?;
    let counted = counts.into_sorted();
    if u32::try_from(counted.len()).is_err() {
        return Err(Error::TooMany {
            file: name,
            what: "items",
        });
    }
    let mut aggregator = mechanism.aggregator(counted.len());
    let mut names = Vec::with_capacity(counted.len());
    for (id, (item, count)) in counted.into_iter().enumerate() {
        // Unwrap safety: the number of items was checked to fit in u32.
        aggregator.absorb_many(u32::try_from(id).expect("u32 item id"), count);
        names.push(item);
    }
    Ok(StreamedRelease {
        release: aggregator.release(),
        names,
        clients,
        description,
    })
}

/// Reads the file at `path` in `format` as a stream and returns its number of clients, the
/// counts of the items of the clients `sampling` samples and the description of the clients
/// (as [`crate::Population::description`] says it).
///
/// # Errors
///
/// As [`crate::Population::from_lines_file`] or [`crate::Population::from_tsv_file`],
/// including [`Error::Empty`] for an input without clients.
pub(crate) fn stream_counts(
    path: &Path,
    format: StreamFormat,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(u64, ItemCounts, String), Error> {
    let name = path.display().to_string();
    let (clients, counts, source, blank) = match format {
        StreamFormat::Lines => {
            let (clients, counts) = line_clients(open(path)?, &name, sampling, progress)?;
            let source = Source::Lines { file: name.clone() };
            (clients, counts, source, " or holds only blank lines")
        }
        StreamFormat::Tsv(mode) => {
            let tsv = tsv_clients(path, &name, mode, sampling, progress)?;
            let blank = " or holds only a header or blank lines";
            (tsv.clients, tsv.counts, tsv.source, blank)
        }
    };
    if clients == 0 {
        return Err(Error::Empty {
            file: name,
            what: blank,
        });
    }
    // Unwrap safety: a client count fits in usize on 64-bit targets.
    let described = usize::try_from(clients).expect("client count fits in usize");
    Ok((clients, counts, describe(&source, described)))
}

/// Every client sampled: the streaming path then counts every client's item.
pub(crate) struct EveryClient;

impl LineSampling for EveryClient {
    type Coins = Self;

    fn coins(&self, _chunk: u64) -> Self {
        Self
    }
}

impl LineCoins for EveryClient {
    #[inline]
    fn sampled(&mut self, _client: &str) -> bool {
        true
    }
}

/// The number of clients (non-blank lines) of a lines stream, and the counts of the items of
/// those `sampling` samples.
fn line_clients(
    reader: Box<dyn Read + Send>,
    name: &str,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(u64, ItemCounts), Error> {
    let tallies = fold_chunks(
        LINE_CHUNK_BYTES,
        reader,
        name,
        progress,
        Tally::default,
        |tally, chunk| {
            let mut lines = chunk.lines().map_err(|line| ChunkFault {
                chunk: chunk.index,
                line,
                fault: Fault::NotUtf8,
            })?;
            let mut coins = sampling.coins(chunk.index);
            let mut count = 0;
            loop {
                // Lines the coins will not sample are passed over, not read.
                let ahead = coins.unsampled_ahead();
                if ahead > 0 {
                    let skipped = lines.skip_items(ahead);
                    coins.skip(skipped);
                    tally.clients += skipped;
                    count += skipped;
                }
                let Some((_, line)) = lines.next() else {
                    break;
                };
                count += 1;
                if is_blank(line) {
                    continue;
                }
                tally.clients += 1;
                if coins.sampled(line) {
                    tally.counts.add(line);
                }
            }
            Ok(count)
        },
    )?;
    let clients = tallies.iter().map(|tally| tally.clients).sum();
    Ok((
        clients,
        merge(tallies.into_iter().map(|tally| tally.counts)),
    ))
}

/// The sum of the per-thread counts.
fn merge(parts: impl Iterator<Item = ItemCounts>) -> ItemCounts {
    let mut parts: Vec<ItemCounts> = parts.collect();
    parts.sort_unstable_by_key(|part| std::cmp::Reverse(part.len()));
    let mut parts = parts.into_iter();
    let mut total = parts.next().unwrap_or_default();
    for part in parts {
        total.merge(part);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_counts_keep_short_and_long_items_apart() {
        let items = [
            "",
            "a",
            "a\0",
            "fifteen bytes!!",
            "sixteen bytes!!!",
            "a much longer item, well past sixteen bytes",
            "é",
        ];
        let mut first = ItemCounts::default();
        let mut second = ItemCounts::default();
        for (i, item) in items.iter().enumerate() {
            for _ in 0..=i {
                first.add(item);
            }
            second.add(item);
        }
        first.merge(second);
        assert_eq!(first.len(), items.len());
        let mut want: Vec<(String, u64)> = items
            .iter()
            .enumerate()
            .map(|(i, item)| ((*item).to_owned(), i as u64 + 2))
            .collect();
        want.sort_unstable();
        assert_eq!(first.into_sorted(), want);
    }
}
