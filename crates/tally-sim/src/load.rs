//! Loading populations from text and TSV files.
//!
//! Two formats, both UTF-8 with `\n` line endings (a trailing `\r` is stripped, so `\r\n`
//! files load too, and a byte-order mark at the start of the first line is dropped). Lines that
//! are empty or hold only whitespace are skipped in both formats. Files whose name ends in
//! `.gz` are decompressed (several concatenated gzip members are read as one stream).
//!
//! - **lines**: one item per line, each line one client. The item is the whole line, kept
//!   verbatim apart from the line ending.
//! - **tsv**: `client_id<TAB>item`, one row per data point, several rows per client allowed.
//!   If the first row's first field is `client_id` it is a header and skipped. Both fields
//!   must be non-empty and a row has exactly one tab. [`ClientMode`] says how rows become
//!   clients.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::Error;
use crate::population::{ClientMode, Interner, Population, Source};
use crate::rng::{Purpose, stream, uniform_below};

/// The read buffer size for files.
const BUFFER: usize = 1 << 16;

impl Population {
    /// Loads a text file with one item per line, each line one client (see the [module
    /// docs](crate#input-formats) for the exact format).
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] or [`Error::Open`] if the file cannot be opened, [`Error::Read`] if
    /// reading (or decompressing) fails, [`Error::NotUtf8`] naming the first bad line,
    /// [`Error::Empty`] if no line holds an item, [`Error::TooMany`] past `u32::MAX` distinct
    /// items.
    pub fn from_lines_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        Self::from_lines_reader(open(path)?, &path.display().to_string())
    }

    /// Reads one item per line from `reader`; `name` stands for the input in messages (for
    /// example `<stdin>`). The reader must already be decompressed.
    ///
    /// # Errors
    ///
    /// As [`Population::from_lines_file`], except for opening.
    pub fn from_lines_reader(reader: impl BufRead, name: &str) -> Result<Self, Error> {
        let mut lines = LineReader::new(reader, name);
        let mut interner = Interner::default();
        let mut items = Vec::new();
        while let Some((_, line)) = lines.next_line()? {
            if is_blank(line) {
                continue;
            }
            let id = interner
                .intern(line)
                .ok_or_else(|| too_many(name, "items"))?;
            items.push(id);
        }
        if items.is_empty() {
            return Err(Error::Empty {
                file: name.to_owned(),
                what: " or holds only blank lines",
            });
        }
        let source = Source::Lines {
            file: name.to_owned(),
        };
        Ok(Self::from_parts(items, interner.into_names(), source))
    }

    /// Loads a `client_id<TAB>item` file, forming clients as `mode` says (see the [module
    /// docs](crate#input-formats) for the exact format).
    ///
    /// # Errors
    ///
    /// As [`Population::from_lines_file`], plus [`Error::MalformedRow`] naming the first row
    /// that is not `client_id<TAB>item`.
    pub fn from_tsv_file(path: impl AsRef<Path>, mode: ClientMode) -> Result<Self, Error> {
        let path = path.as_ref();
        Self::from_tsv_reader(open(path)?, &path.display().to_string(), mode)
    }

    /// Reads `client_id<TAB>item` rows from `reader`; `name` stands for the input in
    /// messages. The reader must already be decompressed.
    ///
    /// # Errors
    ///
    /// As [`Population::from_tsv_file`], except for opening.
    pub fn from_tsv_reader(
        reader: impl BufRead,
        name: &str,
        mode: ClientMode,
    ) -> Result<Self, Error> {
        let tsv = read_tsv(reader, name, mode)?;
        let source = Source::Tsv {
            file: name.to_owned(),
            rows: tsv.rows,
            client_ids: tsv.client_ids,
            mode,
        };
        Ok(Self::from_parts(tsv.items, tsv.names, source))
    }
}

/// Opens `path`, decompressing it if its name ends in `.gz`.
pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, Error> {
    let file = File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => Error::NotFound {
            path: path.to_owned(),
        },
        _ => Error::Open {
            path: path.to_owned(),
            source,
        },
    })?;
    if path.extension().is_some_and(|ext| ext == "gz") {
        Ok(Box::new(BufReader::with_capacity(
            BUFFER,
            MultiGzDecoder::new(BufReader::with_capacity(BUFFER, file)),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(BUFFER, file)))
    }
}

/// Clients formed from TSV rows: one item per client plus the interned names.
pub(crate) struct Tsv {
    /// One item id per client.
    pub(crate) items: Vec<u32>,
    /// Item names by id; every id is held by some client.
    pub(crate) names: Vec<String>,
    /// Data rows read.
    pub(crate) rows: u64,
    /// Distinct `client_id`s.
    pub(crate) client_ids: u64,
}

/// Reads `client_id<TAB>item` rows and forms clients as `mode` says.
pub(crate) fn read_tsv(reader: impl BufRead, name: &str, mode: ClientMode) -> Result<Tsv, Error> {
    let mut lines = LineReader::new(reader, name);
    let mut clients = Interner::default();
    let mut interner = Interner::default();
    let mut row_clients = Vec::new();
    let mut row_items = Vec::new();
    let mut first = true;
    while let Some((number, line)) = lines.next_line()? {
        let Some((client, item)) = tsv_row(line, name, number, &mut first)? else {
            continue;
        };
        let client = clients
            .intern(client)
            .ok_or_else(|| too_many(name, "clients"))?;
        let item = interner
            .intern(item)
            .ok_or_else(|| too_many(name, "items"))?;
        if let ClientMode::ClientLevel { .. } = mode {
            row_clients.push(client);
        }
        row_items.push(item);
    }
    if row_items.is_empty() {
        return Err(Error::Empty {
            file: name.to_owned(),
            what: " or holds only a header or blank lines",
        });
    }
    let rows = row_items.len() as u64;
    let client_ids = clients.len() as u64;
    let names = interner.into_names();
    let (items, names) = match mode {
        ClientMode::RowsAsClients => (row_items, names),
        ClientMode::ClientLevel { seed } => {
            let items = choose_per_client(&row_clients, &row_items, clients.len(), seed);
            compact(items, names)
        }
    };
    Ok(Tsv {
        items,
        names,
        rows,
        client_ids,
    })
}

/// For each client in order of first appearance (client ids are dense in that order), one of
/// its rows' items chosen uniformly at random with the client-level stream of `seed`.
fn choose_per_client(
    row_clients: &[u32],
    row_items: &[u32],
    n_clients: usize,
    seed: u64,
) -> Vec<u32> {
    // Counting sort of the rows by client, stable, so each client's rows stay in file order.
    let mut start = vec![0usize; n_clients + 1];
    for &client in row_clients {
        start[client as usize + 1] += 1;
    }
    for i in 0..n_clients {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut grouped = vec![0u32; row_items.len()];
    for (&client, &item) in row_clients.iter().zip(row_items) {
        grouped[next[client as usize]] = item;
        next[client as usize] += 1;
    }
    let mut rng = stream(seed, Purpose::ClientLevel, 0);
    (0..n_clients)
        .map(|client| {
            let rows = &grouped[start[client]..start[client + 1]];
            // Unwrap safety: a row index fits in usize.
            let pick = uniform_below(rows.len() as u64, &mut rng);
            rows[usize::try_from(pick).expect("row index fits in usize")]
        })
        .collect()
}

/// Drops the names no client holds and renumbers the ids, keeping their order.
fn compact(mut items: Vec<u32>, names: Vec<String>) -> (Vec<u32>, Vec<String>) {
    let mut new_id = vec![u32::MAX; names.len()];
    for &item in &items {
        new_id[item as usize] = 0;
    }
    let mut kept = Vec::new();
    for (old, name) in names.into_iter().enumerate() {
        if new_id[old] == 0 {
            // Unwrap safety: there are at most as many kept names as old ids, which are u32.
            new_id[old] = u32::try_from(kept.len()).expect("u32 item id");
            kept.push(name);
        }
    }
    for item in &mut items {
        *item = new_id[*item as usize];
    }
    (items, kept)
}

fn too_many(name: &str, what: &'static str) -> Error {
    Error::TooMany {
        file: name.to_owned(),
        what,
    }
}

/// The `(client_id, item)` of line `number` of the TSV file `name`, or `None` for a blank
/// line or the `client_id` header (only while `first`, which the first non-blank line clears).
///
/// # Errors
///
/// [`Error::MalformedRow`] for a line with no tab, more than two fields or an empty field.
pub(crate) fn tsv_row<'a>(
    line: &'a str,
    name: &str,
    number: u64,
    first: &mut bool,
) -> Result<Option<(&'a str, &'a str)>, Error> {
    if is_blank(line) {
        return Ok(None);
    }
    let malformed = |found| Error::MalformedRow {
        file: name.to_owned(),
        line: number,
        found,
    };
    let (client, item) = line
        .split_once('\t')
        .ok_or_else(|| malformed("a line with no tab"))?;
    if std::mem::take(first) && client == "client_id" {
        return Ok(None);
    }
    if item.contains('\t') {
        return Err(malformed("a row with more than two fields"));
    }
    if client.is_empty() {
        return Err(malformed("an empty client_id"));
    }
    if item.is_empty() {
        return Err(malformed("an empty item"));
    }
    Ok(Some((client, item)))
}

/// Whether a line is empty or holds only whitespace (such lines hold no client).
#[inline]
pub(crate) fn is_blank(line: &str) -> bool {
    // A printable ASCII first byte settles it at once, as it does for almost every line.
    match line.as_bytes().first() {
        None => true,
        Some(byte) if byte.is_ascii_graphic() => false,
        Some(_) => line.chars().all(char::is_whitespace),
    }
}

/// Reads lines with their 1-based numbers, checking UTF-8 and stripping line endings.
pub(crate) struct LineReader<'a, R> {
    reader: R,
    name: &'a str,
    buf: Vec<u8>,
    /// The number of the line last returned.
    line: u64,
}

impl<'a, R: BufRead> LineReader<'a, R> {
    pub(crate) fn new(reader: R, name: &'a str) -> Self {
        Self {
            reader,
            name,
            buf: Vec::new(),
            line: 0,
        }
    }

    /// The next line's number and text without its `\n` or `\r\n`, or `None` at the end
    /// of the input.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &str)>, Error> {
        self.buf.clear();
        let read = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| Error::Read {
                file: self.name.to_owned(),
                line: self.line + 1,
                source,
            })?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut bytes = self.buf.as_slice();
        if let Some(rest) = bytes.strip_suffix(b"\n") {
            bytes = rest;
        }
        if let Some(rest) = bytes.strip_suffix(b"\r") {
            bytes = rest;
        }
        if self.line == 1
            && let Some(rest) = bytes.strip_prefix("\u{feff}".as_bytes())
        {
            bytes = rest;
        }
        std::str::from_utf8(bytes)
            .map(|text| Some((self.line, text)))
            .map_err(|_| Error::NotUtf8 {
                file: self.name.to_owned(),
                line: self.line,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_keeps_order_and_drops_unheld() {
        let names = ["a", "b", "c", "d"].map(String::from).to_vec();
        let (items, names) = compact(vec![3, 1, 3], names);
        assert_eq!(items, vec![1, 0, 1]);
        assert_eq!(names, vec!["b", "d"]);
    }

    #[test]
    fn choose_per_client_picks_one_of_its_rows() {
        // Client 0 has items {10, 11}, client 1 has {20}, client 2 has {30, 31, 32}.
        let clients = [0, 1, 0, 2, 2, 2];
        let items = [10, 20, 11, 30, 31, 32];
        for seed in 0..50 {
            let chosen = choose_per_client(&clients, &items, 3, seed);
            assert!([10, 11].contains(&chosen[0]));
            assert_eq!(chosen[1], 20);
            assert!([30, 31, 32].contains(&chosen[2]));
            assert_eq!(chosen, choose_per_client(&clients, &items, 3, seed));
        }
    }
}
