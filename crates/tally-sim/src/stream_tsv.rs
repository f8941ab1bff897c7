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
//! choice depends only on the file and the seed; memory holds one entry per distinct client,
//! not per row. The chosen clients are then put in file order (of their chosen rows) and
//! sampled.
//!
//! Clients live in [`PARTITIONS`] maps by their hash, shared by the threads: a chunk's rows
//! are first bucketed by partition, then each bucket is merged into its map under the map's
//! lock. Each merge touches one small map, which stays in cache, rather than one map of every
//! client per thread.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

use foldhash::quality::FixedState;
use rand::Rng;

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

/// A client's row of least priority so far.
#[derive(Debug)]
struct Choice {
    /// The first 64 bits of the row's priority.
    priority: u64,
    /// The row's chunk, and its place among the chunk's data rows.
    chunk: u64,
    row: u64,
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
    /// The current chunk's rows by partition.
    buckets: Vec<Vec<(Text, Option<Choice>)>>,
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

/// Visits the data rows of `chunk` as `(place among the chunk's data rows, client, item)`,
/// skipping blank lines and the header; returns the chunk's line count.
fn for_each_row<'c>(
    chunk: &'c Chunk,
    mut visit: impl FnMut(u64, &'c str, &'c str),
) -> Result<u64, ChunkFault> {
    let fault = |line, fault| ChunkFault {
        chunk: chunk.index,
        line,
        fault,
    };
    let lines = chunk.lines().map_err(|line| fault(line, Fault::NotUtf8))?;
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
            let lines = if mode == ClientMode::RowsAsClients {
                let mut coins = sampling.coins(chunk.index);
                for_each_row(chunk, |_, client, item| {
                    *rows += 1;
                    if coins.sampled(client) {
                        counts.add(item);
                    }
                    let client = Text::new(client);
                    buckets[partition(&client)].push((client, None));
                })?
            } else {
                let mut priorities = stream(seed, Purpose::StreamClientLevel, chunk.index);
                for_each_row(chunk, |row, client, item| {
                    *rows += 1;
                    let choice = Choice {
                        priority: priorities.next_u64(),
                        chunk: chunk.index,
                        row,
                        item: Text::new(item),
                    };
                    let client = Text::new(client);
                    buckets[partition(&client)].push((client, Some(choice)));
                })?
            };
            for (bucket, map) in buckets.iter_mut().zip(&maps) {
                // Unwrap safety: a thread holding the lock only panics by a bug; pass that on.
                let mut map = map.lock().expect("a client map's lock");
                for (client, choice) in bucket.drain(..) {
                    let kept = map.entry(client).or_insert(None);
                    if let Some(choice) = choice {
                        keep_least(kept, choice, seed);
                    }
                }
            }
            Ok(lines)
        },
    )?;
    let mut total = Part::default();
    for part in parts {
        total.rows += part.rows;
        total.counts.merge(part.counts);
    }
    let maps: Vec<Clients> = maps
        .into_iter()
        // Unwrap safety: as above.
        .map(|map| map.into_inner().expect("a client map's lock"))
        .collect();
    let client_ids = maps.iter().map(|map| map.len() as u64).sum();
    let clients = match mode {
        ClientMode::RowsAsClients => total.rows,
        ClientMode::ClientLevel { .. } => {
            let mut chosen: Vec<(Text, Choice)> = maps
                .into_iter()
                .flatten()
                .filter_map(|(client, choice)| Some((client, choice?)))
                .collect();
            chosen.sort_unstable_by_key(|(_, choice)| (choice.chunk, choice.row));
            let mut coins = sampling.coins(0);
            for (client, choice) in &chosen {
                if client.with_str(|client| coins.sampled(client)) {
                    choice.item.with_str(|item| total.counts.add(item));
                }
            }
            client_ids
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

/// Keeps in `kept` whichever of it and `choice` has the lesser priority.
fn keep_least(kept: &mut Option<Choice>, choice: Choice, seed: u64) {
    match kept {
        Some(old) if !precedes(&choice, old, seed) => {}
        _ => *kept = Some(choice),
    }
}

/// Whether row `a`'s priority is less than row `b`'s, comparing their words in turn until
/// they differ (two rows' sequences differ with probability 1, so ties are broken exactly).
fn precedes(a: &Choice, b: &Choice, seed: u64) -> bool {
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
        let choice = |chunk, row| Choice {
            priority: 7,
            chunk,
            row,
            item: Text::new("x"),
        };
        let (a, b) = (choice(0, 1), choice(2, 0));
        assert_ne!(precedes(&a, &b, 1), precedes(&b, &a, 1));
        let mut kept = Some(choice(0, 1));
        keep_least(&mut kept, choice(2, 0), 1);
        let winner = kept.unwrap();
        assert_eq!((winner.chunk, winner.row) == (0, 1), precedes(&a, &b, 1));
    }
}
