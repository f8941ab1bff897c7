//! A population over a public domain read straight from a file into the number of clients
//! holding each domain element: all that a domain round needs ([`crate::run_domain_round`]),
//! since its release depends on the population only through these counts.
//!
//! The input is read as a stream of chunks ([`crate::stream`]). Lines are placed in the domain
//! as they stream by (parsed for an integer domain, hashed for a bucketed one) and counted
//! per thread into one array of the domain's size: no per-line string or id is ever stored,
//! so memory holds a few chunks and one count per domain element and thread. TSV clients are
//! formed exactly as the sample-and-threshold stream forms them ([`crate::stream_tsv`]: for
//! client-level clients, one row per `client_id` chosen exactly uniformly), every client
//! counted, and their distinct items then placed in the domain.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use rayon::prelude::*;
use tally_core::histogram::DomainMap;

use crate::Error;
use crate::load::{is_blank, open};
use crate::population::{Source, describe};
use crate::stream::{ChunkFault, Fault, LINE_CHUNK_BYTES, fold_chunks};
use crate::stream_histogram::{EveryClient, StreamFormat, stream_counts};

/// The clients of an input placed in a public domain, kept as the number holding each
/// element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainCounts {
    map: DomainMap,
    counts: Vec<u64>,
    clients: u64,
    description: String,
}

impl DomainCounts {
    /// Reads the file at `path` (`.gz` is decompressed) in `format` as a stream and counts its
    /// clients' elements of `map`'s domain; `progress` is called with the bytes read so far.
    /// The clients, their items and the description are those of
    /// [`crate::Population::from_lines_file`] or [`crate::Population::from_tsv_file`] (for
    /// client-level TSV, the rows chosen by the stream's exact uniform choice with the mode's
    /// seed), placed in the domain as [`crate::PlaceInDomain`] places them.
    ///
    /// # Errors
    ///
    /// As the loaders, and [`Error::NotInDomainAt`] naming the first line (of the lines
    /// format), or the first row holding the first such item (of TSV), whose item an integer
    /// domain does not hold.
    ///
    /// # Panics
    ///
    /// If the domain is empty (`B = 0`).
    pub fn from_file(
        path: &Path,
        format: StreamFormat,
        map: DomainMap,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Self, Error> {
        assert!(map.size() > 0, "an empty domain");
        let (counts, clients, description) = match format {
            StreamFormat::Lines => line_counts(path, map, progress)?,
            StreamFormat::Tsv(_) => row_counts(path, format, map, progress)?,
        };
        Ok(Self {
            map,
            counts,
            clients,
            description,
        })
    }

    /// How the items were placed.
    pub fn map(&self) -> DomainMap {
        self.map
    }

    /// The number of clients holding each domain element.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The number of clients.
    pub fn clients(&self) -> u64 {
        self.clients
    }

    /// Where the clients came from, as [`crate::Population::description`] says it.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// Elements counted per parallel task of [`count_elements`].
const ELEMENT_CHUNK: usize = 1 << 20;

/// How many of `elements` equal each element of `0..size`: counted as the stream counts its
/// lines, into one array of the domain's size per parallel task, added up at the end.
///
/// # Panics
///
/// If an element is `size` or more.
pub fn count_elements(size: u32, elements: &[u32]) -> Vec<u64> {
    // Unwrap safety: a domain size is a u32.
    let size = usize::try_from(size).expect("a domain size fits in usize");
    let parts = elements
        .par_chunks(ELEMENT_CHUNK)
        .fold(
            || vec![0_u64; size],
            |mut counts, chunk| {
                for &element in chunk {
                    counts[element as usize] += 1;
                }
                counts
            },
        )
        .collect();
    add_up(parts, size)
}

/// The sum of per-task count arrays of `size` entries each (zeros when there are none).
fn add_up(parts: Vec<Vec<u64>>, size: usize) -> Vec<u64> {
    let mut parts = parts.into_iter();
    let mut counts = parts.next().unwrap_or_else(|| vec![0; size]);
    for part in parts {
        for (count, more) in counts.iter_mut().zip(part) {
            *count += more;
        }
    }
    counts
}

/// The element counts, clients and description of a lines file: every non-blank line placed
/// as it streams by.
fn line_counts(
    path: &Path,
    map: DomainMap,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<u64>, u64, String), Error> {
    let name = path.display().to_string();
    // Unwrap safety: a domain size is a u32.
    let size = usize::try_from(map.size()).expect("a domain size fits in usize");
    let parts = fold_chunks(
        LINE_CHUNK_BYTES,
        open(path)?,
        &name,
        progress,
        || vec![0_u64; size],
        |counts, chunk| {
            let (lines, not_utf8) = chunk.lines_before_fault();
            let mut read = 0;
            for (number, line) in lines {
                read += 1;
                if is_blank(line) {
                    continue;
                }
                match map.element(line) {
                    Some(element) => counts[element as usize] += 1,
                    None => {
                        return Err(ChunkFault {
                            chunk: chunk.index,
                            line: number,
                            fault: Fault::NotInDomain {
                                item: line.to_owned(),
                                size: map.size(),
                            },
                        });
                    }
                }
            }
            match not_utf8 {
                Some(line) => Err(ChunkFault {
                    chunk: chunk.index,
                    line,
                    fault: Fault::NotUtf8,
                }),
                None => Ok(read),
            }
        },
    )?;
    let counts = add_up(parts, size);
    let clients: u64 = counts.iter().sum();
    if clients == 0 {
        return Err(Error::Empty {
            file: name,
            what: " or holds only blank lines",
        });
    }
    let source = Source::Lines { file: name };
    // Unwrap safety: a client count fits in usize on 64-bit targets.
    let described = usize::try_from(clients).expect("client count fits in usize");
    Ok((counts, clients, describe(&source, described)))
}

/// The element counts, clients and description of a TSV file: its clients formed and every
/// one's item counted by the sample-and-threshold stream, then each distinct item placed.
fn row_counts(
    path: &Path,
    format: StreamFormat,
    map: DomainMap,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<(Vec<u64>, u64, String), Error> {
    let (clients, items, description) = stream_counts(path, format, &EveryClient, progress)?;
    let mut counts = vec![0_u64; map.size() as usize];
    let mut outside = HashSet::new();
    for (item, count) in items.into_sorted() {
        match map.element(&item) {
            Some(element) => counts[element as usize] += count,
            None => {
                outside.insert(item);
            }
        }
    }
    if outside.is_empty() {
        return Ok((counts, clients, description));
    }
    Err(first_row_holding(path, &outside, map.size()))
}

/// [`Error::NotInDomainAt`] for the first data row of the TSV file at `path` whose item is
/// one of `outside`, read again for it (only on this error path).
fn first_row_holding(path: &Path, outside: &HashSet<String>, size: u32) -> Error {
    let file = path.display().to_string();
    let reader = match open(path) {
        Ok(reader) => reader,
        Err(error) => return error,
    };
    let mut header_possible = true;
    for (index, line) in reader.lines().enumerate() {
        let Ok(line) = line else { break };
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        if is_blank(line) {
            continue;
        }
        let (client, item) = line.split_once('\t').unwrap_or((line, ""));
        if std::mem::take(&mut header_possible) && client == "client_id" {
            continue;
        }
        if outside.contains(item) {
            return Error::NotInDomainAt {
                file,
                line: index as u64 + 1,
                item: item.to_owned(),
                size,
            };
        }
    }
    // The rows were read once already: the input changed between the readings.
    let item = outside.iter().min().cloned().unwrap_or_default();
    Error::NotInDomain { item, size }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::population::{ClientMode, Population};
    use crate::{DomainMap, PlaceInDomain};

    fn file(text: impl AsRef<[u8]>) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_ref()).unwrap();
        file
    }

    fn counted(
        text: impl AsRef<[u8]>,
        format: StreamFormat,
        map: DomainMap,
    ) -> Result<DomainCounts, Error> {
        DomainCounts::from_file(file(text).path(), format, map, &|_| {})
    }

    /// Streamed, the clients' elements are counted as loading and placing them counts them,
    /// and described alike.
    #[test]
    fn streams_count_what_loading_and_placing_counts() {
        let mut lines = String::from("\u{feff}3\r\n\n 1 \n");
        for i in 0..5000 {
            lines.push_str(&format!("{}\n", i * i % 7));
        }
        let source = file(&lines);
        for map in [DomainMap::Integers(7), DomainMap::Buckets(5)] {
            let streamed =
                DomainCounts::from_file(source.path(), StreamFormat::Lines, map, &|_| {}).unwrap();
            let loaded = Population::from_lines_file(source.path()).unwrap();
            let placed = map.apply(&loaded).unwrap();
            assert_eq!(streamed.counts(), placed.true_counts(), "{map}");
            assert_eq!(streamed.clients(), loaded.len() as u64);
            assert_eq!(streamed.description(), loaded.description());
            assert_eq!(streamed.map(), map);
        }
        let rows = "client_id\titem\na\t1\nb\t2\na\t1\nc\t0\n";
        let source = file(rows);
        for mode in [
            ClientMode::RowsAsClients,
            ClientMode::ClientLevel { seed: 3 },
        ] {
            let streamed = DomainCounts::from_file(
                source.path(),
                StreamFormat::Tsv(mode),
                DomainMap::Integers(3),
                &|_| {},
            )
            .unwrap();
            let loaded = Population::from_tsv_file(source.path(), mode).unwrap();
            let placed = DomainMap::Integers(3).apply(&loaded).unwrap();
            assert_eq!(streamed.counts(), placed.true_counts(), "{mode:?}");
            assert_eq!(streamed.description(), loaded.description());
        }
    }

    /// Counted in parallel parts, the elements are counted as one loop over them counts them
    /// (over more elements than one part holds); an element outside the domain is refused.
    #[test]
    fn elements_are_counted_across_parts() {
        let elements: Vec<u32> = (0..ELEMENT_CHUNK as u32 * 2 + 7)
            .map(|i| i.wrapping_mul(2_654_435_761) % 13)
            .collect();
        let mut expected = vec![0_u64; 13];
        for &element in &elements {
            expected[element as usize] += 1;
        }
        assert_eq!(count_elements(13, &elements), expected);
        assert_eq!(count_elements(3, &[]), vec![0; 3]);
        let outside = std::panic::catch_unwind(|| count_elements(12, &elements));
        assert!(outside.is_err());
    }

    #[test]
    fn items_outside_the_domain_and_bad_lines_are_named_by_their_line() {
        let lines = format!("{}x\n1\n9\n", "1\n".repeat(300_000));
        // The bad line lies in a later chunk than the first.
        let err = counted(&lines, StreamFormat::Lines, DomainMap::Integers(4)).unwrap_err();
        assert!(
            err.to_string()
                .contains(":300001: item \"x\" is not an integer in [0, 4)"),
            "{err}"
        );
        let err = counted(b"1\n\xff\n7\n", StreamFormat::Lines, DomainMap::Integers(4));
        assert!(
            err.unwrap_err()
                .to_string()
                .ends_with(":2: line is not valid UTF-8")
        );
        let err = counted("1\n2\n7\n", StreamFormat::Lines, DomainMap::Integers(4));
        assert!(matches!(
            err,
            Err(Error::NotInDomainAt {
                line: 3,
                size: 4,
                ..
            })
        ));
        let rows = "client_id\titem\na\t1\nb\tpear\na\t1\nc\tpear\n";
        let err = counted(
            rows,
            StreamFormat::Tsv(ClientMode::RowsAsClients),
            DomainMap::Integers(3),
        );
        assert!(matches!(
            err,
            Err(Error::NotInDomainAt { line: 3, ref item, .. }) if item == "pear"
        ));
        let blank = counted("\n \n", StreamFormat::Lines, DomainMap::Integers(4));
        assert!(matches!(blank, Err(Error::Empty { .. })));
    }
}
