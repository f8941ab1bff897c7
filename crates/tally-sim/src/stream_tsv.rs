//! Clients of a `client_id<TAB>item` stream, formed as a [`ClientMode`] says, with the items of
//! the sampled ones counted.
//!
//! Every row is checked (the format of [`crate::Population::from_tsv_file`]). With
//! [`ClientMode::RowsAsClients`] each row is a client and its coin is drawn as the rows stream
//! by. With [`ClientMode::ClientLevel`] each client keeps one of its rows, chosen exactly
//! uniformly: every row gets a random priority (an endless sequence of uniform words: 24 bits
//! read from the ChaCha12 stream of its chunk at a position fixed by its place in the chunk,
//! then 64-bit words from a stream of its own, fixed by where the row lies in the input) and
//! each client keeps its row of least priority. Keeping the least is associative and
//! commutative, so the order rows are met in does not matter and the choice depends only on
//! the input and the seed. The chosen clients of each partition (below) are then put in the
//! input order of their chosen rows and draw their coins from the partition's own stream of
//! the sampling, the partitions in parallel: every client still gets one independent coin, so
//! the law is that of sampling the clients in any fixed order.
//!
//! The choice needs only a row's client, priority and place in the input, not its item, and
//! no client's entry is looked up in a table larger than the caches. Pass 1 (the chunks in
//! parallel) records each data row as a 24-byte [`Row`] (its client's key, the first 24 bits
//! of its priority and where its line starts in the input), grouped by the client's partition
//! (of [`PARTITIONS`]); the chunk's text is then dropped (kept only while a client of 16 bytes
//! or more in it waits for pass 2). Pass 2 runs on a batch of about [`BATCH_ROWS`] rows: the
//! partitions in parallel, each folds its rows of every chunk of the batch into its map of
//! clients, (about a thousand for 10^6 clients, which stays in cache), keeping each client's
//! least priority and the place of that row; the batch is then freed. Once the input ends,
//! the sampled clients' rows are read again, in input order, for their items (pass 3: the
//! file is opened and read again, `.gz` decoded again), and each row read is checked to be the
//! client's.
//!
//! Memory thus holds the client maps (an entry of 20 bytes and a control byte per slot for
//! `client_id`s of at most 11 bytes, 24 bytes and one for 12 to 15 bytes, the text for longer
//! ones; a map has between 8/7 and 16/7 slots per client, so 24 to 48 bytes a short client),
//! up to about three batches of rows being folded or filled (24 bytes a row, 24 MiB a batch),
//! a few 1 MiB chunks of input and, at the end, 16 bytes per sampled client. Measured: 150 MB
//! peak for 10^6 clients with 10 rows each, 484 to 502 MB for 10^7 clients (10^8 rows), of
//! which the maps are about 350 MB. Rows as clients count their distinct `client_id`s
//! through the same maps, and need no pass 3.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::BuildHasher;
use std::io::{self, BufRead};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use foldhash::quality::FixedState;
use rand::Rng;
use rayon::prelude::*;

use crate::Error;
use crate::load::{is_blank, open};
use crate::population::{ClientMode, Source};
use crate::rng::{Purpose, stream};
use crate::stream::{Chunk, ChunkFault, Fault, ROW_CHUNK_BYTES, fold_chunks};
use crate::stream_histogram::{ItemCounts, LineCoins, LineSampling};
use crate::text::{Text, pack};

/// The clients of a TSV stream: how many, their sampled items' counts and the source.
pub(crate) struct TsvClients {
    pub(crate) clients: u64,
    pub(crate) counts: ItemCounts,
    pub(crate) source: Source,
}

/// The number of client partitions: 10^6 clients give about a thousand a partition.
const PARTITIONS: usize = 1024;

/// The rows of a batch of pass 2 (each batch of chunks is folded once it holds this many).
const BATCH_ROWS: usize = 1 << 20;

/// The bits of a row's choice word that say where its line starts.
const PLACE_BITS: u32 = 40;

/// The largest input client level reads: a row's place must fit in [`PLACE_BITS`].
const MAX_INPUT_BYTES: u64 = 1 << PLACE_BITS;

/// The high word of a long client's key: a tag no short text has (its length byte is 255),
/// or'ed with the text's length.
const LONG: u64 = 0xFF << 56;

/// The stream the later words of the rows' priorities are read from: the last chunk index of
/// [`Purpose::StreamClientLevel`], which no chunk reaches.
const LATER_WORDS: u64 = (1 << 48) - 1;

/// A data row as pass 1 records it.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    /// Its client: a client shorter than 16 bytes [`pack`]ed, else its hash and
    /// `LONG | length` (the text is read back from the chunk when needed).
    client: [u64; 2],
    /// The first 24 bits of its priority (client level; 0 for rows as clients) above where
    /// its line starts in the input, in the low [`PLACE_BITS`].
    choice: u64,
}

impl Row {
    /// The row of `client` whose line starts at `place` of the input.
    fn new(client: &str, place: u64, priority: u32) -> Self {
        let client = pack(client).map_or_else(
            || {
                [
                    FixedState::default().hash_one(client),
                    LONG | client.len() as u64,
                ]
            },
            // The casts keep the low and the high 64 bits, as meant.
            |key| [key as u64, (key >> 64) as u64],
        );
        Self {
            client,
            choice: u64::from(priority) << PLACE_BITS | place,
        }
    }

    /// Whether the row's client is 16 bytes or longer.
    fn is_long(&self) -> bool {
        self.client[1] & LONG == LONG
    }

    /// The row's client as a map key, its text read from `chunk` (the row's) if long.
    fn key<'t>(&self, chunk: &'t ChunkRows) -> Client<'t> {
        if !self.is_long() {
            return Client::Short(self.client);
        }
        // Unwrap safety: a chunk with a long client keeps its text, whose rows' places lie
        // in it, and the length was a `usize`.
        let text = chunk.text.as_deref().expect("a kept chunk text");
        let start = usize::try_from(place(self.choice) - chunk.start).expect("a place in a chunk");
        let length = usize::try_from(self.client[1] & !LONG).expect("a client's length");
        Client::Long(&text[start..start + length])
    }

    /// The row's partition: bits of its key's hash that the maps of pass 2 use neither for
    /// their bucket index (low bits) nor for their tags (top bits).
    fn partition(&self) -> usize {
        let hash = FixedState::default().hash_one(self.client);
        // Unwrap safety: the value is masked to below `PARTITIONS`.
        usize::try_from((hash >> 40) & (PARTITIONS as u64 - 1)).expect("small partition")
    }
}

/// Where the line of the row of `choice` starts in the input.
fn place(choice: u64) -> u64 {
    choice & (MAX_INPUT_BYTES - 1)
}

/// A client as a key of pass 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Client<'t> {
    /// A client shorter than 16 bytes, [`pack`]ed.
    Short([u64; 2]),
    /// A longer client.
    Long(&'t str),
}

/// A chunk after pass 1: its data rows, grouped by partition.
struct ChunkRows {
    /// Where the chunk starts in the input.
    start: u64,
    /// The chunk's text, kept only if a row's client is long.
    text: Option<Box<str>>,
    rows: Box<[Row]>,
    /// Partition `p`'s rows are `rows[starts[p]..starts[p + 1]]`.
    starts: Box<[u32]>,
}

impl ChunkRows {
    /// The chunk's rows in `partition`.
    fn partition(&self, partition: usize) -> &[Row] {
        &self.rows[self.starts[partition] as usize..self.starts[partition + 1] as usize]
    }
}

/// Chunks after pass 1 waiting for pass 2.
#[derive(Default)]
struct Batch {
    chunks: Vec<ChunkRows>,
    rows: usize,
}

/// The clients of one partition, each with the choice word of its kept row. Clients of at
/// most 11 bytes (most ids) are keyed by 12 bytes with the word in two halves, 20 bytes an
/// entry; clients of 12 to 15 bytes by their 16 [`pack`]ed bytes, 24 bytes an entry; longer
/// ones by their text.
#[derive(Default)]
struct Clients {
    small: HashMap<[u32; 3], [u32; 2], FixedState>,
    short: HashMap<[u64; 2], u64, FixedState>,
    long: HashMap<Box<str>, u64, FixedState>,
}

/// The 12-byte key of a [`pack`]ed client of at most 11 bytes (its bytes 0 to 10 and its
/// length), or `None` for a longer one.
fn small_key([low, high]: [u64; 2]) -> Option<[u32; 3]> {
    let length = high >> 56;
    // The casts keep the low 32 bits, as meant; bytes 11 to 14 of a short text are zero.
    (length <= 11).then_some([
        low as u32,
        (low >> 32) as u32,
        (high as u32 & 0x00FF_FFFF) | (length as u32) << 24,
    ])
}

/// The [`pack`]ed client of a [`small_key`].
fn unsmall_key([a, b, c]: [u32; 3]) -> [u64; 2] {
    [
        u64::from(a) | u64::from(b) << 32,
        u64::from(c & 0x00FF_FFFF) | u64::from(c >> 24) << 56,
    ]
}

/// A choice word in two 32-bit halves, low first.
fn halves(choice: u64) -> [u32; 2] {
    // The casts keep the low and the high 32 bits, as meant.
    [choice as u32, (choice >> 32) as u32]
}

/// The choice word of its [`halves`].
fn whole([low, high]: [u32; 2]) -> u64 {
    u64::from(low) | u64::from(high) << 32
}

impl Clients {
    fn len(&self) -> usize {
        self.small.len() + self.short.len() + self.long.len()
    }

    /// Meets a row of `client` with `choice`; with `chosen`, the client level's seed, the
    /// client keeps its row of least priority.
    #[inline]
    fn meet(&mut self, client: Client<'_>, choice: u64, chosen: Option<u64>) {
        let replaces = |kept: u64| chosen.is_some_and(|seed| precedes(choice, kept, seed));
        match client {
            Client::Short(key) => {
                if let Some(key) = small_key(key) {
                    match self.small.entry(key) {
                        Entry::Vacant(entry) => {
                            entry.insert(halves(choice));
                        }
                        Entry::Occupied(mut entry) => {
                            if replaces(whole(*entry.get())) {
                                entry.insert(halves(choice));
                            }
                        }
                    }
                } else {
                    match self.short.entry(key) {
                        Entry::Vacant(entry) => {
                            entry.insert(choice);
                        }
                        Entry::Occupied(mut entry) => {
                            if replaces(*entry.get()) {
                                entry.insert(choice);
                            }
                        }
                    }
                }
            }
            Client::Long(text) => {
                if let Some(kept) = self.long.get_mut(text) {
                    if replaces(*kept) {
                        *kept = choice;
                    }
                } else {
                    self.long.insert(text.into(), choice);
                }
            }
        }
    }
}

/// One thread's part of pass 1.
#[derive(Default)]
struct Part {
    rows: u64,
    /// Rows as clients: the sampled rows' items.
    counts: ItemCounts,
    /// Where the input ends, as far as this thread's chunks show.
    end: u64,
    /// The current chunk's rows and their partitions, before grouping.
    scratch: Vec<(Row, u16)>,
}

/// Groups `rows` by partition (a counting sort): the rows and where each partition starts.
fn group_by_partition(rows: &[(Row, u16)]) -> (Box<[Row]>, Box<[u32]>) {
    let mut starts = vec![0u32; PARTITIONS + 1];
    for &(_, partition) in rows {
        starts[usize::from(partition) + 1] += 1;
    }
    for p in 0..PARTITIONS {
        starts[p + 1] += starts[p];
    }
    let mut next = starts.clone();
    let mut grouped = vec![Row::default(); rows.len()];
    for &(row, partition) in rows {
        let at = &mut next[usize::from(partition)];
        grouped[*at as usize] = row;
        *at += 1;
    }
    (grouped.into_boxed_slice(), starts.into_boxed_slice())
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

/// Visits the data rows of `chunk`, whose text is `text`, in order as `(client, item)`,
/// skipping blank lines and the header; returns the chunk's line count.
fn for_each_row<'c>(
    chunk: &Chunk,
    text: &'c str,
    mut visit: impl FnMut(&'c str, &'c str),
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
        visit(client, item);
    }
    Ok(lines_seen)
}

/// The sizes the stream is read and folded at.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// The bytes of a chunk.
    chunk_bytes: usize,
    /// The rows of a batch of pass 2.
    batch_rows: usize,
}

/// Reads the `client_id<TAB>item` file at `path` (named `name`; `.gz` is decompressed),
/// forms its clients as `mode` says and counts the items of those `sampling` samples; with
/// [`ClientMode::ClientLevel`] the chosen clients of each partition, in input order, draw the
/// coins of the chunk of `sampling` numbered as the partition.
pub(crate) fn tsv_clients(
    path: &Path,
    name: &str,
    mode: ClientMode,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<TsvClients, Error> {
    let sizes = Sizes {
        chunk_bytes: ROW_CHUNK_BYTES,
        batch_rows: BATCH_ROWS,
    };
    tsv_clients_in(path, name, mode, sampling, progress, sizes)
}

/// [`tsv_clients`], reading and folding at `sizes`.
fn tsv_clients_in(
    path: &Path,
    name: &str,
    mode: ClientMode,
    sampling: &impl LineSampling,
    progress: &(dyn Fn(u64) + Sync),
    sizes: Sizes,
) -> Result<TsvClients, Error> {
    let chosen = match mode {
        ClientMode::ClientLevel { seed } => Some(seed),
        ClientMode::RowsAsClients => None,
    };
    let maps: Vec<Mutex<Clients>> = (0..PARTITIONS).map(|_| Mutex::default()).collect();
    let folded = AtomicUsize::new(0);
    let pending = Mutex::new(Batch::default());
    let parts = fold_chunks(
        sizes.chunk_bytes,
        open(path)?,
        name,
        progress,
        Part::default,
        |part, chunk| {
            let text = chunk.text().map_err(|line| ChunkFault {
                chunk: chunk.index,
                line,
                fault: Fault::NotUtf8,
            })?;
            // Where a row's line starts in the input (the pointers are only subtracted).
            let place = |client: &str| {
                chunk.start + (client.as_ptr() as usize - text.as_ptr() as usize) as u64
            };
            let Part {
                rows: part_rows,
                counts,
                end,
                scratch,
            } = part;
            // A chunk beyond the places rows can name is only checked (the input is then
            // refused).
            let too_large = chosen.is_some() && chunk.start + text.len() as u64 > MAX_INPUT_BYTES;
            // A chunk whose check failed may have left rows behind.
            scratch.clear();
            let mut record = |client: &str, priority: u32| {
                if too_large {
                    return;
                }
                let row = Row::new(client, place(client), priority);
                // Unwrap safety: partitions are below 1024.
                let partition = u16::try_from(row.partition()).expect("small partition");
                scratch.push((row, partition));
            };
            let lines = if let Some(seed) = chosen {
                let mut priorities = stream(seed, Purpose::StreamClientLevel, chunk.index);
                for_each_row(chunk, text, |client, _| {
                    record(client, priorities.next_u32() >> 8);
                })?
            } else {
                let mut coins = sampling.coins(chunk.index);
                for_each_row(chunk, text, |client, item| {
                    if coins.sampled(client) {
                        counts.add(item);
                    }
                    record(client, 0);
                })?
            };
            *part_rows += scratch.len() as u64;
            *end = (*end).max(chunk.start + text.len() as u64);
            let (rows, starts) = group_by_partition(scratch);
            let rows_here = rows.len();
            let chunk_rows = ChunkRows {
                start: chunk.start,
                text: rows.iter().any(Row::is_long).then(|| text.into()),
                rows,
                starts,
            };
            // The thread that fills the batch folds it, on its own: the other thread goes on
            // with pass 1 (or folds the next batch), so at most about three batches are held.
            let full = {
                // Unwrap safety: a thread holding the lock only panics by a bug; pass that on.
                let mut batch = pending.lock().expect("the pending batch's lock");
                batch.chunks.push(chunk_rows);
                batch.rows += rows_here;
                (batch.rows >= sizes.batch_rows).then(|| std::mem::take(&mut *batch))
            };
            if let Some(batch) = full {
                fold_batch(
                    &batch,
                    &maps,
                    folded.fetch_add(1, Ordering::Relaxed),
                    chosen,
                );
            }
            Ok(lines)
        },
    )?;
    // Unwrap safety: as above.
    let last = pending.into_inner().expect("the pending batch's lock");
    fold_batch(&last, &maps, 0, chosen);
    let maps: Vec<Clients> = maps
        .into_iter()
        // Unwrap safety: as above.
        .map(|map| map.into_inner().expect("a client map's lock"))
        .collect();
    let mut rows = 0;
    let mut counts = ItemCounts::default();
    let mut end = 0;
    for part in parts {
        rows += part.rows;
        end = end.max(part.end);
        counts.merge(part.counts);
    }
    if chosen.is_some() && end > MAX_INPUT_BYTES {
        return Err(Error::TooLarge {
            file: name.to_owned(),
            max: MAX_INPUT_BYTES,
        });
    }
    let client_ids = maps.iter().map(|map| map.len() as u64).sum();
    if chosen.is_some() {
        let mut sampled: Vec<(u64, u64)> = maps
            .into_par_iter()
            .enumerate()
            .flat_map_iter(|(partition, map)| sampled_rows(map, partition as u64, sampling))
            .collect();
        sampled.sort_unstable();
        count_items(open(path)?, name, &sampled, &mut counts)?;
    }
    Ok(TsvClients {
        clients: if chosen.is_some() { client_ids } else { rows },
        counts,
        source: Source::Tsv {
            file: name.to_owned(),
            rows,
            client_ids,
            mode,
        },
    })
}

/// Pass 2 for `batch`, the `number`th folded: folds each partition's rows of every chunk of
/// the batch into its client map, under the map's lock, starting at a partition set by
/// `number` so that two batches folded at once seldom meet on a map; with `chosen`, the
/// client level's seed, each client keeps its row of least priority.
fn fold_batch(batch: &Batch, maps: &[Mutex<Clients>], number: usize, chosen: Option<u64>) {
    let first = number.wrapping_mul(PARTITIONS / 2 + 1);
    for i in 0..PARTITIONS {
        let partition = first.wrapping_add(i) % PARTITIONS;
        // Unwrap safety: a thread holding the lock only panics by a bug; pass that on.
        let mut map = maps[partition].lock().expect("a client map's lock");
        for chunk in &batch.chunks {
            for row in chunk.partition(partition) {
                map.meet(row.key(chunk), row.choice, chosen);
            }
        }
    }
}

/// The clients of `map` (partition `partition`) that `sampling` samples: the clients, in the
/// input order of their kept rows, draw the coins of chunk `partition`. Each is given as the
/// place of its kept row's line and a [`check`] of its `client_id`.
fn sampled_rows(map: Clients, partition: u64, sampling: &impl LineSampling) -> Vec<(u64, u64)> {
    let mut kept: Vec<(u64, Text)> = map
        .small
        .into_iter()
        .map(|(key, choice)| (place(whole(choice)), Text::Short(unsmall_key(key))))
        .chain(
            map.short
                .into_iter()
                .map(|(key, choice)| (place(choice), Text::Short(key))),
        )
        .chain(
            map.long
                .into_iter()
                .map(|(client, choice)| (place(choice), Text::Long(client))),
        )
        .collect();
    kept.sort_unstable_by_key(|&(place, _)| place);
    let mut coins = sampling.coins(partition);
    kept.into_iter()
        .filter_map(|(place, client)| {
            client.with_str(|client| coins.sampled(client).then(|| (place, check(client))))
        })
        .collect()
}

/// A 64-bit hash of a `client_id`, to check that a row read again is the client's.
fn check(client: &str) -> u64 {
    FixedState::default().hash_one(client)
}

/// Pass 3: reads `reader` (the input again) for the rows at the `sampled` places, in
/// increasing order, and counts their items.
///
/// # Errors
///
/// [`Error::Reread`] if reading fails or a row read is not the one expected (the input
/// changed between the passes).
fn count_items(
    mut reader: Box<dyn BufRead + Send>,
    name: &str,
    sampled: &[(u64, u64)],
    counts: &mut ItemCounts,
) -> Result<(), Error> {
    let changed = || io::Error::new(io::ErrorKind::InvalidData, "the input changed");
    let reread = |source| Error::Reread {
        file: name.to_owned(),
        source,
    };
    let mut at = 0;
    let mut line = Vec::new();
    for &(place, client_check) in sampled {
        skip(&mut reader, place - at).map_err(reread)?;
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(reread)?;
        at = place + read as u64;
        let row = std::str::from_utf8(&line).map_err(|_| reread(changed()))?;
        let row = row.strip_suffix('\n').unwrap_or(row);
        let row = row.strip_suffix('\r').unwrap_or(row);
        match split_row(row) {
            Ok((client, item)) if check(client) == client_check => counts.add(item),
            _ => return Err(reread(changed())),
        }
    }
    Ok(())
}

/// Passes over the next `n` bytes of `reader`.
fn skip(reader: &mut dyn BufRead, mut n: u64) -> io::Result<()> {
    while n > 0 {
        let buffered = reader.fill_buf()?.len();
        if buffered == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // The cast is exact: the value is at most `buffered`.
        let passed = n.min(buffered as u64) as usize;
        reader.consume(passed);
        n -= passed as u64;
    }
    Ok(())
}

/// Whether the row of `a` (a choice word) has a priority less than the row of `b`'s,
/// comparing their words in turn until they differ (two rows' sequences differ with
/// probability 1, so ties are broken exactly).
fn precedes(a: u64, b: u64, seed: u64) -> bool {
    let (first_a, first_b) = (a >> PLACE_BITS, b >> PLACE_BITS);
    if a == b {
        // The same row.
        return false;
    }
    if first_a != first_b {
        return first_a < first_b;
    }
    (1..)
        .map(|word| {
            (
                later_priority_word(seed, place(a), word),
                later_priority_word(seed, place(b), word),
            )
        })
        .find(|(x, y)| x != y)
        .is_some_and(|(x, y)| x < y)
}

/// Word `word` (from 1) of the priority of the row whose line starts at `place` of the input:
/// the 64 bits at 32-bit word position `word·2^42 + 2·place` of the stream [`LATER_WORDS`],
/// which no chunk's first words are read from (rows start at distinct places, below 2^40).
fn later_priority_word(seed: u64, place: u64, word: u64) -> u64 {
    let mut rng = stream(seed, Purpose::StreamClientLevel, LATER_WORDS);
    rng.set_word_pos((u128::from(word) << 42) | u128::from(2 * place));
    rng.next_u64()
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::stream_histogram::PoissonLines;

    #[test]
    fn later_priority_words_lie_apart() {
        for place in 0..20 {
            let later = later_priority_word(5, place, 1);
            assert_ne!(later, later_priority_word(5, place, 2));
            assert_ne!(later, later_priority_word(5, place + 1, 1));
            assert_ne!(later, later_priority_word(6, place, 1));
        }
        // The chunks' first words come from other streams.
        let mut first = stream(5, Purpose::StreamClientLevel, 0);
        let firsts: Vec<u32> = (0..40).map(|_| first.next_u32()).collect();
        let later = later_priority_word(5, 0, 1);
        assert!(!firsts.contains(&(later as u32)));
    }

    #[test]
    fn ties_are_broken_by_later_words() {
        let (a, b) = (7 << PLACE_BITS | 1, 7 << PLACE_BITS | 9);
        assert_ne!(precedes(a, b, 1), precedes(b, a, 1));
        assert_eq!(
            precedes(a, b, 1),
            later_priority_word(1, 1, 1) < later_priority_word(1, 9, 1)
        );
        let c = 6 << PLACE_BITS | 9;
        assert!(precedes(c, a, 1) && !precedes(a, c, 1));
        assert!(!precedes(a, a, 1));
    }

    #[test]
    fn rows_key_short_and_long_clients_exactly() {
        let text = "u1\tx\nclient-with-a-long-id\ty\n";
        let short = Row::new("u1", 100, 0);
        let long = Row::new("client-with-a-long-id", 105, 3);
        let (rows, starts) = group_by_partition(&[(short, 0), (long, 1)]);
        let chunk = ChunkRows {
            start: 100,
            text: Some(text.into()),
            rows,
            starts,
        };
        assert_eq!(
            short.key(&chunk),
            Client::Short(Row::new("u1", 9, 1).client)
        );
        assert_eq!(long.key(&chunk), Client::Long("client-with-a-long-id"));
        assert_eq!((place(long.choice), long.choice >> PLACE_BITS), (105, 3));
        assert_eq!(chunk.partition(1).len(), 1);
    }

    #[test]
    fn small_keys_hold_clients_of_up_to_11_bytes_exactly() {
        let text = "abcdefghijklmnop";
        let mut keys = Vec::new();
        for n in 0..16 {
            let packed = Row::new(&text[..n], 0, 0).client;
            match small_key(packed) {
                Some(key) => {
                    assert!(n <= 11);
                    assert_eq!(unsmall_key(key), packed, "length {n}");
                    keys.push(key);
                }
                None => assert!(n > 11),
            }
        }
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 12);
        let (a, b) = (Row::new("u1", 0, 0).client, Row::new("u1\0", 0, 0).client);
        assert_ne!(small_key(a), small_key(b));
        assert_eq!(whole(halves(0x0123_4567_89AB_CDEF)), 0x0123_4567_89AB_CDEF);
    }

    #[test]
    fn grouping_keeps_each_partitions_rows_in_order() {
        let rows: Vec<(Row, u16)> = (0..2_000)
            .map(|i| {
                let row = Row::new(&format!("c{}", i % 300), i, 0);
                (row, row.partition() as u16)
            })
            .collect();
        let (grouped, starts) = group_by_partition(&rows);
        assert_eq!(starts[PARTITIONS] as usize, rows.len());
        for partition in 0..PARTITIONS {
            let part = &grouped[starts[partition] as usize..starts[partition + 1] as usize];
            assert!(part.iter().all(|row| row.partition() == partition));
            assert!(
                part.windows(2)
                    .all(|w| place(w[0].choice) < place(w[1].choice))
            );
        }
    }

    /// A TSV file of 300 clients, of short, middling and long ids, with 1 to 7 rows each,
    /// scattered.
    fn clients_file() -> tempfile::NamedTempFile {
        let mut text = String::from("client_id\titem\n");
        for row in 0..1_200 {
            let client = (row * 7) % 300;
            if row % 4 < client % 8 {
                // Ids of 16 bytes or more, of 12 to 15 and of at most 11.
                let id = match client % 3 {
                    0 => format!("a-client-with-a-long-id-{client}"),
                    1 => format!("medium-id-{client:04}"),
                    _ => format!("u{client}"),
                };
                text.push_str(&format!("{id}\ti{}\n", (row + client) % 5));
            }
            if row % 50 == 0 {
                text.push('\n');
            }
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    /// The Poisson sampling of an S&T round at `p_s = 1/2`, `τ = 2`, seeded with `seed`.
    fn half_sampling(seed: u64) -> PoissonLines {
        let st = tally_core::histogram::SampleThreshold::new(
            tally_accounting::sample_threshold::SampleThresholdParams::new(0.5, 2).unwrap(),
            1.0,
            tally_accounting::sample_threshold::Analysis::Tight,
            tally_accounting::Neighbours::AddRemove,
        )
        .unwrap();
        PoissonLines::new(&st, seed)
    }

    /// The clients, sampled items' counts and rows of `path` read at `sizes`.
    fn read(path: &Path, seed: u64, sizes: Sizes) -> (u64, Vec<(String, u64)>, String) {
        let mode = ClientMode::ClientLevel { seed };
        let sampling = half_sampling(seed);
        let tsv = tsv_clients_in(path, "t", mode, &sampling, &|_| {}, sizes).unwrap();
        let described = crate::population::describe(&tsv.source, tsv.clients as usize);
        (tsv.clients, tsv.counts.into_sorted(), described)
    }

    #[test]
    fn small_batches_give_the_release_of_one_batch() {
        let file = clients_file();
        let mut differ = 0;
        for seed in 0..20 {
            // Chunks of 64 bytes hold about 5 rows, so clients span many batches of 3 rows.
            let one = read(
                file.path(),
                seed,
                Sizes {
                    chunk_bytes: 64,
                    batch_rows: usize::MAX,
                },
            );
            let small = read(
                file.path(),
                seed,
                Sizes {
                    chunk_bytes: 64,
                    batch_rows: 3,
                },
            );
            assert_eq!(one, small, "seed {seed}");
            let total: u64 = one.1.iter().map(|(_, count)| count).sum();
            assert!(total > 0 && total < one.0);
            differ += usize::from(
                one != read(
                    file.path(),
                    seed + 100,
                    Sizes {
                        chunk_bytes: 64,
                        batch_rows: 3,
                    },
                ),
            );
        }
        // The seed matters.
        assert!(differ > 15);
    }

    #[test]
    fn bad_rows_are_named_by_their_line_across_chunks_and_batches() {
        let good = std::fs::read_to_string(clients_file().path()).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        for (at, bad) in [
            (400, "no tab here"),
            (731, "u1\t"),
            (lines.len() - 1, "\tx"),
        ] {
            let mut text = lines[..at].join("\n");
            text.push('\n');
            text.push_str(bad);
            text.push('\n');
            text.push_str(&lines[at..].join("\n"));
            let mut file = tempfile::NamedTempFile::new().unwrap();
            file.write_all(text.as_bytes()).unwrap();
            for mode in [
                ClientMode::ClientLevel { seed: 3 },
                ClientMode::RowsAsClients,
            ] {
                let sizes = Sizes {
                    chunk_bytes: 64,
                    batch_rows: 3,
                };
                let Err(err) =
                    tsv_clients_in(file.path(), "t", mode, &half_sampling(3), &|_| {}, sizes)
                else {
                    panic!("a bad row at line {} passed", at + 1);
                };
                let loaded = crate::Population::from_tsv_file(file.path(), mode).unwrap_err();
                assert!(
                    err.to_string().starts_with(&format!("t:{}: ", at + 1)),
                    "{err}"
                );
                assert_eq!(
                    err.to_string()[1..],
                    loaded.to_string()[file.path().display().to_string().len()..]
                );
            }
        }
    }

    #[test]
    fn rows_read_again_must_be_the_clients() {
        let text = "u1\tx\r\nu2\ty\nu3\tz";
        let sampled = [(0, check("u1")), (11, check("u3"))];
        let mut counts = ItemCounts::default();
        count_items(Box::new(text.as_bytes()), "t", &sampled, &mut counts).unwrap();
        assert_eq!(
            counts.into_sorted(),
            [("x".to_owned(), 1), ("z".to_owned(), 1)]
        );
        for sampled in [
            [(0, check("u1")), (7, check("u3"))],
            [(0, check("u1")), (40, check("u3"))],
        ] {
            let err = count_items(
                Box::new(text.as_bytes()),
                "t",
                &sampled,
                &mut ItemCounts::default(),
            )
            .unwrap_err();
            assert!(
                err.to_string().starts_with("t: reading the input again"),
                "{err}"
            );
        }
    }
}
