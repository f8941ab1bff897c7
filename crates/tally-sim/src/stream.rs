//! Reading an input as a stream of byte chunks that end on line boundaries, processed in
//! parallel.
//!
//! A reader thread fills buffers of [`LINE_CHUNK_BYTES`] or [`ROW_CHUNK_BYTES`] (decompressing
//! `.gz` inputs on the way, so decoding runs alongside the processing), cuts each at its last
//! `\n` and hands it on through a bounded channel; the rayon pool processes the chunks as they
//! come. Buffers are recycled, so memory holds a handful of chunks whatever the input's size.
//! Chunk `i` is the same bytes whatever the number of threads, so per-chunk random streams
//! keep results deterministic.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use rayon::prelude::*;

use crate::Error;

/// The size a chunk of lines is read at (a line longer than this makes its chunk longer):
/// small enough to stay in a core's second-level cache while it is sampled and counted.
pub(crate) const LINE_CHUNK_BYTES: usize = 1 << 20;

/// The size a chunk of TSV rows is read at.
pub(crate) const ROW_CHUNK_BYTES: usize = 1 << 20;

/// Chunks read ahead of the processing.
const READ_AHEAD: usize = 4;

/// The lines of a chunk, visited in order: `(number, line)` with the 0-based line number in the
/// chunk and the line without its `\n` or `\r\n`. The chunk is valid UTF-8.
///
/// Line ends are found 64 bytes at a time: a bit mask of the block's `\n` bytes (a loop the
/// compiler turns into vector compares), then one bit per line.
pub(crate) struct Lines<'a> {
    text: &'a str,
    /// Where the next line starts.
    start: usize,
    /// Where the block of `mask` starts, and where the next block starts.
    block: usize,
    next_block: usize,
    /// The `\n` bytes of the block not yet passed, one bit each.
    mask: u64,
    number: u64,
    /// Whether the chunk is the input's first, whose first line may start with a byte-order
    /// mark.
    first: bool,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (u64, &'a str);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a str)> {
        let bytes = self.text.as_bytes();
        while self.mask == 0 {
            if self.next_block >= bytes.len() {
                // The last line, without its `\n`.
                if self.start >= bytes.len() {
                    return None;
                }
                let line = &self.text[self.start..];
                self.start = bytes.len();
                return Some(self.finish(line));
            }
            self.block = self.next_block;
            self.next_block = bytes.len().min(self.block + 64);
            self.mask = newline_mask(&bytes[self.block..self.next_block]);
        }
        let end = self.block + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        let line = &self.text[self.start..end];
        self.start = end + 1;
        Some(self.finish(line))
    }
}

impl<'a> Lines<'a> {
    /// Passes over up to `most` of the next lines, stopping before the first line that might
    /// be blank or start with a byte-order mark (one not starting with a visible ASCII
    /// character); returns how many it passed. Every line passed holds an item. Much cheaper
    /// per line than [`Iterator::next`], for lines the caller need not read.
    #[inline]
    pub(crate) fn skip_items(&mut self, most: u64) -> u64 {
        let bytes = self.text.as_bytes();
        let mut skipped = 0;
        while skipped < most {
            if self.mask == 0 {
                if self.next_block >= bytes.len() {
                    break;
                }
                self.block = self.next_block;
                self.next_block = bytes.len().min(self.block + 64);
                self.mask = newline_mask(&bytes[self.block..self.next_block]);
                continue;
            }
            // A `\n` lies ahead, so the line has a first byte.
            if !bytes[self.start].is_ascii_graphic() {
                break;
            }
            let end = self.block + self.mask.trailing_zeros() as usize;
            self.mask &= self.mask - 1;
            self.start = end + 1;
            self.first = false;
            skipped += 1;
        }
        self.number += skipped;
        skipped
    }

    /// Strips a line's `\r` (and the input's byte-order mark) and numbers it.
    #[inline]
    fn finish(&mut self, mut line: &'a str) -> (u64, &'a str) {
        if let Some(stripped) = line.strip_suffix('\r') {
            line = stripped;
        }
        if self.first {
            self.first = false;
            if let Some(stripped) = line.strip_prefix('\u{feff}') {
                line = stripped;
            }
        }
        let number = self.number;
        self.number += 1;
        (number, line)
    }
}

/// Bit `i` set where `block[i]` is `\n`; `block` holds at most 64 bytes.
///
/// A full block is read as eight little-endian words, each turned into its eight bits with
/// word-wide arithmetic (no carry crosses a byte, so the result is exact): a byte `b` is
/// `\n` exactly when `x = b ^ 0x0A` is zero, that is when neither the top bit of `x` nor that
/// of `(x & 0x7F) + 0x7F` is set; the eight flags, one per byte's top bit, are then gathered
/// into one byte by a multiplication whose partial products never overlap.
#[inline]
fn newline_mask(block: &[u8]) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const NEWLINES: u64 = 0x0A0A_0A0A_0A0A_0A0A;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    match block.first_chunk::<64>() {
        Some(full) => full.chunks_exact(8).enumerate().fold(0, |mask, (j, word)| {
            // Unwrap safety: `chunks_exact(8)` yields 8-byte slices.
            let x = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ NEWLINES;
            let zero = !(((x & LOW7) + LOW7) | x | LOW7);
            mask | ((((zero >> 7).wrapping_mul(GATHER)) >> 56) << (8 * j))
        }),
        None => block
            .iter()
            .enumerate()
            .fold(0, |mask, (i, &b)| mask | (u64::from(b == b'\n') << i)),
    }
}

/// A chunk of the input: whole lines.
pub(crate) struct Chunk {
    /// The chunk's position in the input, from 0.
    pub(crate) index: u64,
    /// Where the chunk's first byte lies in the (decompressed) input.
    pub(crate) start: u64,
    bytes: Vec<u8>,
}

impl Chunk {
    /// The chunk's lines, or the 0-based number of its first line that is not UTF-8.
    pub(crate) fn lines(&self) -> Result<Lines<'_>, u64> {
        self.text().map(|text| self.lines_of(text))
    }

    /// The chunk's text, or the 0-based number of its first line that is not UTF-8.
    pub(crate) fn text(&self) -> Result<&str, u64> {
        std::str::from_utf8(&self.bytes)
            .map_err(|error| count_lines(&self.bytes[..error.valid_up_to()]))
    }

    /// The chunk's lines up to its first line that is not UTF-8, and that line's 0-based
    /// number if there is one, for callers that must also report bad lines before it.
    pub(crate) fn lines_before_fault(&self) -> (Lines<'_>, Option<u64>) {
        match std::str::from_utf8(&self.bytes) {
            Ok(text) => (self.lines_of(text), None),
            Err(error) => {
                let valid = &self.bytes[..error.valid_up_to()];
                let end = memchr::memrchr(b'\n', valid).map_or(0, |last| last + 1);
                // Unwrap safety: a prefix of the valid part cut after a `\n` is UTF-8.
                let text = std::str::from_utf8(&valid[..end]).expect("valid UTF-8 prefix");
                (self.lines_of(text), Some(count_lines(valid)))
            }
        }
    }

    /// The lines of `text`, which is [`Chunk::text`].
    pub(crate) fn lines_of<'a>(&self, text: &'a str) -> Lines<'a> {
        Lines {
            text,
            start: 0,
            block: 0,
            next_block: 0,
            mask: 0,
            number: 0,
            first: self.index == 0,
        }
    }
}

/// The number of `\n` in `bytes`.
fn count_lines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// What a chunk's processing found wrong, located by chunk and line in it.
pub(crate) struct ChunkFault {
    /// The chunk's index.
    pub(crate) chunk: u64,
    /// The 0-based line in the chunk.
    pub(crate) line: u64,
    /// What was wrong.
    pub(crate) fault: Fault,
}

/// A fault in the input, without its place.
pub(crate) enum Fault {
    /// A line is not valid UTF-8.
    NotUtf8,
    /// A TSV row is not `client_id<TAB>item`; what it holds instead.
    MalformedRow(&'static str),
    /// An item a public domain of `size` elements does not hold.
    NotInDomain {
        /// The item.
        item: String,
        /// The domain's size.
        size: u32,
    },
}

/// Runs `process` on every chunk of `reader`, read at `chunk_bytes`, in parallel, folding each thread's chunks into an
/// accumulator made by `init`, and returns the accumulators. `process` returns the number of
/// lines in its chunk, which places faults. `progress` is called with the bytes read so far.
///
/// # Errors
///
/// [`Error::Read`] if reading fails (numbered by the line reading stopped at), or the first
/// fault in input order that `process` reported, as [`Error::NotUtf8`] or
/// [`Error::MalformedRow`] with its 1-based line number in the input.
pub(crate) fn fold_chunks<A, I, P>(
    chunk_bytes: usize,
    reader: Box<dyn Read + Send>,
    name: &str,
    progress: &(dyn Fn(u64) + Sync),
    init: I,
    process: P,
) -> Result<Vec<A>, Error>
where
    A: Send,
    I: Fn() -> A + Sync + Send,
    P: Fn(&mut A, &Chunk) -> Result<u64, ChunkFault> + Sync + Send,
{
    let (full_tx, full_rx) = sync_channel::<Chunk>(READ_AHEAD);
    let (empty_tx, empty_rx) =
        sync_channel::<Vec<u8>>(READ_AHEAD + rayon::current_num_threads() + 2);
    struct Folded<A> {
        acc: A,
        line_counts: Vec<(u64, u64)>,
        faults: Vec<ChunkFault>,
    }
    let (read, folded) = thread::scope(|scope| {
        let reader_thread =
            scope.spawn(move || read_chunks(reader, chunk_bytes, &full_tx, &empty_rx, progress));
        let folded: Vec<Folded<A>> = full_rx
            .into_iter()
            .par_bridge()
            .fold(
                || Folded {
                    acc: init(),
                    line_counts: Vec::new(),
                    faults: Vec::new(),
                },
                |mut folded, chunk| {
                    match process(&mut folded.acc, &chunk) {
                        Ok(lines) => folded.line_counts.push((chunk.index, lines)),
                        Err(fault) => folded.faults.push(fault),
                    }
                    // The reader may have finished; a buffer it will not reuse is dropped.
                    let _ = empty_tx.try_send(chunk.bytes);
                    folded
                },
            )
            .collect();
        // Unwrap safety: the reader thread does not panic but by a bug; pass that on.
        let read = reader_thread.join().expect("the reader thread panicked");
        (read, folded)
    });
    let mut line_counts = Vec::new();
    let mut faults = Vec::new();
    let mut accs = Vec::with_capacity(folded.len());
    for folded in folded {
        line_counts.extend(folded.line_counts);
        faults.extend(folded.faults);
        accs.push(folded.acc);
    }
    line_counts.sort_unstable();
    // Every chunk before a fault was processed, so its line count is known.
    let lines_before = |chunk: u64| -> u64 {
        line_counts
            .iter()
            .take_while(|&&(index, _)| index < chunk)
            .map(|&(_, count)| count)
            .sum()
    };
    if let Err((chunk, source)) = read {
        return Err(Error::Read {
            file: name.to_owned(),
            line: lines_before(chunk) + 1,
            source,
        });
    }
    if let Some(first) = faults.into_iter().min_by_key(|f| (f.chunk, f.line)) {
        let file = name.to_owned();
        let line = lines_before(first.chunk) + first.line + 1;
        return Err(match first.fault {
            Fault::NotUtf8 => Error::NotUtf8 { file, line },
            Fault::MalformedRow(found) => Error::MalformedRow { file, line, found },
            Fault::NotInDomain { item, size } => Error::NotInDomainAt {
                file,
                line,
                item,
                size,
            },
        });
    }
    Ok(accs)
}

/// The reader thread: fills buffers from `reader`, cuts them at their last `\n` and sends them
/// on, until the input ends, reading fails (`Err((chunk index, error))`) or the receiver hangs
/// up.
fn read_chunks(
    mut reader: Box<dyn Read + Send>,
    chunk_bytes: usize,
    full: &SyncSender<Chunk>,
    empty: &Receiver<Vec<u8>>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(), (u64, io::Error)> {
    let mut carry: Vec<u8> = Vec::new();
    let mut index = 0;
    let mut read = 0u64;
    // Where the next chunk starts in the input.
    let mut start = 0u64;
    loop {
        let mut buf = empty.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&carry);
        carry.clear();
        let want = chunk_bytes.max(buf.len() * 2);
        let before = buf.len();
        let eof = fill(&mut reader, &mut buf, want).map_err(|e| (index, e))?;
        read += (buf.len() - before) as u64;
        progress(read);
        if !eof {
            match memchr::memrchr(b'\n', &buf) {
                Some(last) => carry.extend_from_slice(&buf[last + 1..]),
                None => {
                    // A line longer than the buffer: read on into a larger one.
                    carry = buf;
                    continue;
                }
            }
            let cut = buf.len() - carry.len();
            buf.truncate(cut);
        }
        let len = buf.len() as u64;
        if !buf.is_empty()
            && full
                .send(Chunk {
                    index,
                    start,
                    bytes: buf,
                })
                .is_err()
        {
            return Ok(());
        }
        start += len;
        index += 1;
        if eof {
            return Ok(());
        }
    }
}

/// Reads into `buf` until it holds `want` bytes or the input ends; returns whether it ended.
fn fill(reader: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    let start = buf.len();
    buf.resize(want, 0);
    let mut filled = start;
    while filled < want {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => {
                buf.truncate(filled);
                return Ok(true);
            }
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// Every line of `text` with its 1-based line number, read in chunks of `chunk_bytes`.
    fn read_lines(text: &[u8], chunk_bytes: usize) -> Result<Vec<(u64, String)>, Error> {
        let reader: Box<dyn Read + Send> = Box::new(io::Cursor::new(text.to_vec()));
        let read = AtomicU64::new(0);
        let progress = |bytes| read.store(bytes, Ordering::Relaxed);
        let parts = fold_chunks(
            chunk_bytes,
            reader,
            "t",
            &progress,
            Vec::new,
            |acc: &mut Vec<(u64, u64, String)>, chunk| {
                // The chunk knows where it lies in the input.
                let start = usize::try_from(chunk.start).unwrap();
                assert_eq!(&text[start..start + chunk.bytes.len()], chunk.bytes);
                let lines = chunk.lines().map_err(|line| ChunkFault {
                    chunk: chunk.index,
                    line,
                    fault: Fault::NotUtf8,
                })?;
                let mut count = 0;
                for (number, line) in lines {
                    acc.push((chunk.index, number, line.to_owned()));
                    count += 1;
                }
                Ok(count)
            },
        )?;
        assert_eq!(read.load(Ordering::Relaxed), text.len() as u64);
        let mut all: Vec<_> = parts.into_iter().flatten().collect();
        all.sort_unstable();
        Ok(all
            .into_iter()
            .enumerate()
            .map(|(i, (_, _, line))| (i as u64 + 1, line))
            .collect())
    }

    #[test]
    fn chunks_split_on_line_boundaries() {
        let mut text = String::from("\u{feff}first\r\n");
        let mut want = vec!["first".to_owned()];
        for i in 0..500 {
            // Some lines are longer than a chunk.
            let line = "x".repeat(i % 37) + &i.to_string();
            text.push_str(&line);
            text.push('\n');
            want.push(line);
        }
        text.push_str("last, without a newline");
        want.push("last, without a newline".to_owned());
        for chunk_bytes in [1, 7, 16, 1000, 1 << 20] {
            let lines = read_lines(text.as_bytes(), chunk_bytes).unwrap();
            let got: Vec<String> = lines.iter().map(|(_, line)| line.clone()).collect();
            assert_eq!(got, want, "chunks of {chunk_bytes}");
        }
    }

    #[test]
    fn skipping_passes_only_lines_with_items() {
        let text = "ab\ncd\nef\n\ngh\n é\n\u{feff}x\nlong line that spans more than one block of \
                    sixty-four bytes, to be sure\nij\nkl";
        let chunk = Chunk {
            index: 1,
            start: 0,
            bytes: text.as_bytes().to_vec(),
        };
        // Alternate skipping up to `most` lines and reading one, and compare with reading all.
        for most in [1, 2, 3, 100] {
            let mut lines = chunk.lines().unwrap();
            let mut read = Vec::new();
            loop {
                let before = lines.number;
                let skipped = lines.skip_items(most);
                assert!(skipped <= most);
                assert_eq!(lines.number, before + skipped);
                let Some(next) = lines.next() else { break };
                read.push(next);
            }
            let all: Vec<_> = chunk.lines().unwrap().collect();
            // Every line read is in place, and every line skipped holds an item.
            for (number, line) in &read {
                assert_eq!(all[*number as usize].1, *line);
            }
            for (number, line) in &all {
                if !read.iter().any(|(n, _)| n == number) {
                    assert!(line.as_bytes()[0].is_ascii_graphic(), "skipped {line:?}");
                }
            }
            assert_eq!(read.last().map(|&(n, _)| n), Some(all.len() as u64 - 1));
        }
    }

    #[test]
    fn newline_masks_mark_exactly_the_newlines() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(1);
        // Bytes near `\n` and with its low bits under a set top bit, and random ones.
        let pick = [b'\n', 0x8A, 0x0B, 0x09, 0x00, 0xFF, 0x4A, b'a'];
        for _ in 0..2_000 {
            let block: Vec<u8> = (0..64)
                .map(|_| {
                    let [coin, index, byte, ..] = rng.next_u64().to_le_bytes();
                    if coin & 1 == 0 {
                        pick[usize::from(index) % pick.len()]
                    } else {
                        byte
                    }
                })
                .collect();
            let want = block
                .iter()
                .enumerate()
                .fold(0u64, |mask, (i, &b)| mask | (u64::from(b == b'\n') << i));
            assert_eq!(newline_mask(&block), want, "{block:?}");
            assert_eq!(newline_mask(&block[..63]), want & (u64::MAX >> 1));
        }
    }

    #[test]
    fn faults_name_their_line_in_the_input() {
        let mut text = Vec::new();
        for i in 0..300 {
            if i == 211 || i == 250 {
                text.extend_from_slice(b"bad \xff\n");
            } else {
                text.extend_from_slice(format!("line {i}\n").as_bytes());
            }
        }
        for chunk_bytes in [5, 64, 1 << 20] {
            let err = read_lines(&text, chunk_bytes).unwrap_err();
            assert_eq!(err.to_string(), "t:212: line is not valid UTF-8");
        }
    }
}
