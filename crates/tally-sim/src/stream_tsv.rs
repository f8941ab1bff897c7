//! Clients of a `client_id<TAB>item` stream, formed as a [`ClientMode`] says, with the items of
//! the sampled ones counted.
//!
//! Every row is checked (the format of [`crate::Population::from_tsv_file`]). With
//! [`ClientMode::RowsAsClients`] each row is a client and its coin is drawn as the rows stream
//! by. With [`ClientMode::ClientLevel`] each client keeps one of its rows, chosen exactly
//! uniformly and in one pass: every row gets a random priority (an endless sequence of
//! uniform 64-bit words, read from the ChaCha12 stream of its chunk at a position fixed by
//! its place in the chunk) and each client keeps its row of least priority. Keeping the least
//! is associative and commutative, so threads merge their clients in any order and the
//! choice depends only on the file and the seed. The chosen clients of each partition (below)
//! are then put in the file order of their chosen rows and draw their coins from the
//! partition's own stream of the sampling, the partitions in parallel: every client still
//! gets one independent coin, so the law is that of sampling the clients in any fixed order.
//!
//! Clients live in [`PARTITIONS`] maps by their hash, shared by the threads: a chunk's rows
//! are first bucketed by partition (as their client, priority and the offset of their item,
//! which is read only if the row is kept), then each bucket is merged into its map under the
//! map's lock. Threads start at different maps and pass over busy ones, so they do not queue.
//!
//! Memory holds one entry per distinct client (a 24-byte key and a 48-byte choice, in hash
//! maps), the row buckets of the chunks being merged (48 bytes a row) and a few chunks, not
//! one entry per row: about 231 MB for 10^6 clients with 10 rows each.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Mutex, TryLockError};

use foldhash::quality::FixedState;
use rand::Rng;
use rayon::prelude::*;

use crate::Error;
use crate::load::is_blank;
use crate::population::{ClientMode, Source};
use crate::rng::{Purpose, stream};
use crate::stream::{Chunk, ChunkFault, Fault, ROW_CHUNK_BYTES, fold_chunks};
use crate::stream_histogram::{ItemCounts, LineCoins, LineSampling};
use crate::text::Text;

/// The clients of a TSV stream: how many, their sampled items' counts and the source.
pub(crate) struct TsvClients {
    pub(crate) clients: u64,
    pub(crate) counts: ItemCounts,
    pub(crate) source: Source,
}

/// A data row's priority, and where to find the rest of it.
#[derive(Clone, Copy, Debug)]
struct Rank {
    /// The first 64 bits of the row's priority.
    priority: u64,
    /// The row's chunk, and its place among the chunk's data rows.
    chunk: u64,
    row: u64,
}

/// A client's row of least priority so far.
#[derive(Debug)]
struct Choice {
    rank: Rank,
    item: Text,
}

/// The number of client maps.
const PARTITIONS: usize = 256;

/// Each client's chosen row (client level), or nothing (rows as clients, where the map only
/// counts the distinct clients).
type Clients = HashMap<Text, Option<Choice>, FixedState>;

/// One thread's part of the stream.
struct Part {
    rows: u64,
    /// Rows as clients: the sampled rows' items.
    counts: ItemCounts,
    /// The current chunk's data rows by partition.
    buckets: Vec<Vec<Pending>>,
}

/// A data row of the current chunk waiting to be merged into its client map: its client,
/// and where its item starts in the chunk's text (read only if the row is kept).
struct Pending {
    client: Text,
    /// Where the row's item starts in the chunk's text.
    item: usize,
    /// The row's place among the chunk's data rows.
    row: u64,
    /// The first 64 bits of its priority (client level).
    priority: u64,
}

impl Default for Part {
    fn default() -> Self {
        Self {
            rows: 0,
            counts: ItemCounts::default(),
            buckets: (0..PARTITIONS).map(|_| Vec::new()).collect(),
        }
    }
}

/// The partition of a client: bits of its hash that the maps use neither for their bucket
/// index (low bits) nor for their tags (top bits).
fn partition(client: &Text) -> usize {
    let hash = FixedState::default().hash_one(client);
    // Unwrap safety: the value is masked to below 256.
    usize::try_from((hash >> 40) & (PARTITIONS as u64 - 1)).expect("small partition")
}

/// Splits a data row into `(client_id, item)`, or says what is wrong with it.
fn split_row(line: &str) -> Result<(&str, &str), &'static str> {
    let Some(tab) = memchr::memchr(b'\t', line.as_bytes()) else {
        return Err("a line with no tab");
    };
    Ok((&line[..tab], &line[tab + 1..]))
}

/// Checks the fields of a data row.
fn check_fields(client: &str, item: &str) -> Result<(), &'static str> {
    if memchr::memchr(b'\t', item.as_bytes()).is_some() {
        return Err("a row with more than two fields");
    }
    if client.is_empty() {
        return Err("an empty client_id");
    }
    if item.is_empty() {
        return Err("an empty item");
    }
    Ok(())
}

/// Visits the data rows of `chunk`, whose text is `text`, as `(place among the chunk's data rows, client, item)`,
/// skipping blank lines and the header; returns the chunk's line count.
fn for_each_row<'c>(
    chunk: &Chunk,
    text: &'c str,
    mut visit: impl FnMut(u64, &'c str, &'c str),
) -> Result<u64, ChunkFault> {
    let fault = |line, fault| ChunkFault {
        chunk: chunk.index,
        line,
        fault,
    };
    let lines = chunk.lines_of(text);
    // The input's first non-blank line may be the header.
    let mut first = chunk.index == 0;
    let mut lines_seen = 0;
    let mut rows = 0;
    for (number, line) in lines {
        lines_seen = number + 1;
        if is_blank(line) {
            continue;
        }
        let (client, item) =
            split_row(line).map_err(|found| fault(number, Fault::MalformedRow(found)))?;
        if std::mem::take(&mut first) && client == "client_id" {
            continue;
        }
        check_fields(client, item).map_err(|found| fault(number, Fault::MalformedRow(found)))?;
        visit(rows, client, item);
        rows += 1;
    }
    Ok(lines_seen)
}

/// Reads the `client_id<TAB>item` stream `reader` (named `name`), forms its clients as `mode`
/// says and counts the items of those `sampling` samples; with [`ClientMode::ClientLevel`]
/// the chosen clients, in file order, draw the coins of chunk 0 of `sampling`.
pub(crate) fn tsv_clients(
    reader: Box<dyn std::io::Read + Send>,
    name: &str,
    mode: ClientMode,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<TsvClients, Error> {
    let seed = match mode {
        ClientMode::ClientLevel { seed } => seed,
        ClientMode::RowsAsClients => 0,
    };
    let maps: Vec<Mutex<Clients>> = (0..PARTITIONS).map(|_| Mutex::default()).collect();
    let parts = fold_chunks(
        ROW_CHUNK_BYTES,
        reader,
        name,
        progress,
        Part::default,
        |part, chunk| {
            let Part {
                rows,
                counts,
                buckets,
            } = part;
            let text = chunk.text().map_err(|line| ChunkFault {
                chunk: chunk.index,
                line,
                fault: Fault::NotUtf8,
            })?;
            // Where a row's item starts in the text (the pointers are only subtracted).
            let start = |item: &str| item.as_ptr() as usize - text.as_ptr() as usize;
            let lines = if mode == ClientMode::RowsAsClients {
                let mut coins = sampling.coins(chunk.index);
                for_each_row(chunk, text, |row, client, item| {
                    *rows += 1;
                    if coins.sampled(client) {
                        counts.add(item);
                    }
                    let client = Text::new(client);
                    buckets[partition(&client)].push(Pending {
                        client,
                        item: start(item),
                        row,
                        priority: 0,
                    });
                })?
            } else {
                let mut priorities = stream(seed, Purpose::StreamClientLevel, chunk.index);
                for_each_row(chunk, text, |row, client, item| {
                    *rows += 1;
                    let client = Text::new(client);
                    buckets[partition(&client)].push(Pending {
                        client,
                        item: start(item),
                        row,
                        priority: priorities.next_u64(),
                    });
                })?
            };
            let chosen = match mode {
                ClientMode::RowsAsClients => None,
                ClientMode::ClientLevel { seed } => Some(seed),
            };
            drain_buckets(buckets, &maps, chunk.index, text, chosen);
            Ok(lines)
        },
    )?;
    let mut total = Part::default();
    for part in parts {
        total.rows += part.rows;
        total.counts.merge(part.counts);
    }
    let maps = maps
        .into_iter()
        // Unwrap safety: as in `drain_buckets`.
        .map(|map| map.into_inner().expect("a client map's lock"));
    let (clients, client_ids) = match mode {
        ClientMode::RowsAsClients => {
            let client_ids = maps.map(|map| map.len() as u64).sum();
            (total.rows, client_ids)
        }
        ClientMode::ClientLevel { .. } => {
            let (client_ids, counts) = maps
                .collect::<Vec<Clients>>()
                .into_par_iter()
                .enumerate()
                .fold(
                    || (0, ItemCounts::default()),
                    |(client_ids, mut counts), (partition, map)| {
                        let held = map.len() as u64;
                        count_sampled(map, partition as u64, sampling, &mut counts);
                        (client_ids + held, counts)
                    },
                )
                .reduce(
                    || (0, ItemCounts::default()),
                    |(a_ids, mut a), (b_ids, b)| {
                        a.merge(b);
                        (a_ids + b_ids, a)
                    },
                );
            total.counts.merge(counts);
            (client_ids, client_ids)
        }
    };
    Ok(TsvClients {
        clients,
        counts: total.counts,
        source: Source::Tsv {
            file: name.to_owned(),
            rows: total.rows,
            client_ids,
            mode,
        },
    })
}

/// Merges each of the `buckets` of chunk `index` (whose text is `text`) into its client map,
/// under the map's lock; with `chosen`, the client level's seed, each client keeps its least
/// row. Threads start at different maps (chunk `index` at map `index·37 mod 256`) and pass
/// over a map another thread holds, coming back to it last, so that they do not queue behind
/// each other.
fn drain_buckets(
    buckets: &mut [Vec<Pending>],
    maps: &[Mutex<Clients>],
    index: u64,
    text: &str,
    chosen: Option<u64>,
) {
    let merge = |map: &mut Clients, bucket: &mut Vec<Pending>| {
        for pending in bucket.drain(..) {
            let kept = map.entry(pending.client).or_insert(None);
            let Some(seed) = chosen else { continue };
            let rank = Rank {
                priority: pending.priority,
                chunk: index,
                row: pending.row,
            };
            if kept
                .as_ref()
                .is_none_or(|old| precedes(rank, old.rank, seed))
            {
                *kept = Some(Choice {
                    rank,
                    item: Text::new(item_at(text, pending.item)),
                });
            }
        }
    };
    // Unwrap safety: the remainder is below 256.
    let first = usize::try_from(index.wrapping_mul(37) % PARTITIONS as u64).expect("small");
    let mut busy = Vec::new();
    for partition in (first..PARTITIONS).chain(0..first) {
        match maps[partition].try_lock() {
            Ok(mut map) => merge(&mut map, &mut buckets[partition]),
            Err(TryLockError::WouldBlock) => busy.push(partition),
            // Unwrap safety: a thread holding the lock only panics by a bug; pass that on.
            Err(TryLockError::Poisoned(_)) => panic!("a client map's lock was poisoned"),
        }
    }
    for partition in busy {
        // Unwrap safety: as above.
        let mut map = maps[partition].lock().expect("a client map's lock");
        merge(&mut map, &mut buckets[partition]);
    }
}

/// The item that starts at `start` of `text`: up to the end of its line.
fn item_at(text: &str, start: usize) -> &str {
    let rest = &text[start..];
    let item = memchr::memchr(b'\n', rest.as_bytes()).map_or(rest, |end| &rest[..end]);
    item.strip_suffix('\r').unwrap_or(item)
}

/// Adds to `counts` the items of the clients of `map` (one partition) that `sampling` samples:
/// the clients, in the file order of their chosen rows, draw the coins of chunk `partition`.
fn count_sampled(
    map: Clients,
    partition: u64,
    sampling: &impl LineSampling,
    counts: &mut ItemCounts,
) {
    let mut chosen: Vec<(Text, Choice)> = map
        .into_iter()
        .filter_map(|(client, choice)| Some((client, choice?)))
        .collect();
    chosen.sort_unstable_by_key(|(_, choice)| (choice.rank.chunk, choice.rank.row));
    let mut coins = sampling.coins(partition);
    for (client, choice) in chosen {
        if client.with_str(|client| coins.sampled(client)) {
            counts.add_text(choice.item);
        }
    }
}

/// Whether row `a`'s priority is less than row `b`'s, comparing their words in turn until
/// they differ (two rows' sequences differ with probability 1, so ties are broken exactly).
fn precedes(a: Rank, b: Rank, seed: u64) -> bool {
    if a.priority != b.priority {
        return a.priority < b.priority;
    }
    (1..)
        .map(|word| {
            (
                priority_word(seed, a.chunk, a.row, word),
                priority_word(seed, b.chunk, b.row, word),
            )
        })
        .find(|(x, y)| x != y)
        .is_some_and(|(x, y)| x < y)
}

/// Word `word` of the priority of data row `row` of chunk `chunk`: the 64 bits at 32-bit word
/// position `word·2^42 + 2·row` of the chunk's stream. Word 0 of the rows are thus the
/// stream's 64-bit outputs in order (drawn as the chunk is read), and later words lie beyond
/// them (a chunk has far fewer than 2^41 rows).
fn priority_word(seed: u64, chunk: u64, row: u64, word: u64) -> u64 {
    let mut rng = stream(seed, Purpose::StreamClientLevel, chunk);
    rng.set_word_pos((u128::from(word) << 42) | u128::from(2 * row));
    rng.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_priority_words_are_the_stream_in_order() {
        let mut rng = stream(5, Purpose::StreamClientLevel, 3);
        for row in 0..20 {
            assert_eq!(priority_word(5, 3, row, 0), rng.next_u64());
        }
        assert_ne!(priority_word(5, 3, 0, 1), priority_word(5, 3, 0, 0));
    }

    #[test]
    fn ties_are_broken_by_later_words() {
        let rank = |chunk, row| Rank {
            priority: 7,
            chunk,
            row,
        };
        let (a, b) = (rank(0, 1), rank(2, 0));
        assert_ne!(precedes(a, b, 1), precedes(b, a, 1));
        assert_eq!(
            precedes(a, b, 1),
            priority_word(1, 0, 1, 1) < priority_word(1, 2, 0, 1)
        );
    }
}
