//! The error type of `tally-sim`.

use std::io;
use std::path::PathBuf;

use tally_accounting::naming::Parameter;

/// Why a population could not be loaded or generated, or a simulation could not run.
///
/// Messages say what was wrong, where (file and line) and, where it helps, what would be valid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input file does not exist.
    #[error("cannot open {}: file not found", path.display())]
    NotFound {
        /// The path as given.
        path: PathBuf,
    },
    /// The input file exists but could not be opened (permissions, a directory, …).
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The path as given.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Reading failed part way through (for example a corrupt or truncated gzip stream).
    #[error("{file}:{line}: read error: {source}")]
    Read {
        /// The input's name (its path, or the dataset's file name).
        file: String,
        /// The 1-based number of the line being read.
        line: u64,
        /// The underlying error.
        source: io::Error,
    },
    /// A line is not valid UTF-8.
    #[error("{file}:{line}: line is not valid UTF-8")]
    NotUtf8 {
        /// The input's name.
        file: String,
        /// The 1-based line number.
        line: u64,
    },
    /// A TSV row is not `client_id<TAB>item`.
    #[error("{file}:{line}: expected client_id<TAB>item, found {found}")]
    MalformedRow {
        /// The input's name.
        file: String,
        /// The 1-based line number.
        line: u64,
        /// What the row held instead, in words (for example `a line with no tab`).
        found: &'static str,
    },
    /// The input holds no client.
    #[error("{file}: no clients: the input is empty{what}")]
    Empty {
        /// The input's name.
        file: String,
        /// What was skipped, for example ` or holds only blank lines`.
        what: &'static str,
    },
    /// More distinct items (or clients) than 32-bit ids can name.
    #[error("{file}: more than {max} distinct {what}", max = u32::MAX)]
    TooMany {
        /// The input's name.
        file: String,
        /// `items` or `clients`.
        what: &'static str,
    },
    /// A client-level TSV input is larger than the places of its rows can name.
    #[error(
        "{file}: the input is larger than {max} bytes (decompressed), the most client-level TSV reads"
    )]
    TooLarge {
        /// The input's name.
        file: String,
        /// The largest input read, in bytes.
        max: u64,
    },
    /// Reading a client-level TSV input a second time, for the items of its chosen rows,
    /// failed or found other bytes than the first reading.
    #[error("{file}: reading the input again for its chosen rows failed: {source}")]
    Reread {
        /// The input's name.
        file: String,
        /// What went wrong.
        source: io::Error,
    },
    /// No shipped dataset has this name.
    #[error("unknown dataset {name:?}: known datasets are {known}")]
    UnknownDataset {
        /// The requested name.
        name: String,
        /// The known names, comma separated.
        known: String,
    },
    /// A synthetic specification names no known generator.
    #[error("unknown synthetic generator {name:?} in {spec:?}: expected one of {known}")]
    UnknownGenerator {
        /// The whole specification.
        spec: String,
        /// The generator name found.
        name: String,
        /// The known generators with their keys.
        known: &'static str,
    },
    /// A synthetic specification has a key its generator does not take, or a key twice.
    #[error("{spec:?}: unexpected key {key:?}: {generator} takes {expected}")]
    UnknownKey {
        /// The whole specification.
        spec: String,
        /// The generator.
        generator: &'static str,
        /// The rejected key.
        key: String,
        /// The keys the generator takes, each once.
        expected: &'static str,
    },
    /// A synthetic specification lacks a required key.
    #[error("{spec:?}: missing key {key:?}: {generator} takes {expected}")]
    MissingKey {
        /// The whole specification.
        spec: String,
        /// The generator.
        generator: &'static str,
        /// The missing key.
        key: &'static str,
        /// The keys the generator takes.
        expected: &'static str,
    },
    /// A synthetic specification has a value out of range or not a number.
    #[error("{spec:?}: invalid {key} = {value:?}: expected {expected}")]
    InvalidValue {
        /// The whole specification.
        spec: String,
        /// The key.
        key: &'static str,
        /// The rejected value as written.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },
    /// A population built from ids has an id outside its vocabulary.
    #[error("item id {id} is not below the vocabulary size {size}")]
    ItemOutOfRange {
        /// The offending id.
        id: u32,
        /// The vocabulary size.
        size: usize,
    },
    /// An item cannot be placed in the public domain `0..size`.
    #[error(
        "item {item:?} is not an integer in [0, {size}): {} needs integer items below the domain \
         size (use {} to hash any item into buckets)",
        Parameter("domain"),
        Parameter("buckets")
    )]
    NotInDomain {
        /// The item's name.
        item: String,
        /// The domain size.
        size: u32,
    },
    /// An item of an input file cannot be placed in the public domain `0..size`.
    #[error(
        "{file}:{line}: item {item:?} is not an integer in [0, {size}): {} needs integer items \
         below the domain size (use {} to hash any item into buckets)",
        Parameter("domain"),
        Parameter("buckets")
    )]
    NotInDomainAt {
        /// The file.
        file: String,
        /// The 1-based line number.
        line: u64,
        /// The item.
        item: String,
        /// The domain size.
        size: u32,
    },
    /// An executor path name is not known.
    #[error(
        "unknown execution path {name:?}: expected per-client, gap-skipping or binomial-thinning"
    )]
    UnknownPath {
        /// The rejected name.
        name: String,
    },
    /// Users' arrays that do not describe multisets.
    #[error("inconsistent users: expected offsets from 0 to the item count and multiplicities ≥ 1")]
    InconsistentUsers,
    /// A task the engine cannot run as asked, or a round of it that cannot release.
    #[error("the task cannot run: {0}")]
    Task(String),
    /// A device's data cannot answer a round of the task.
    #[error(
        "device {device}: its data {data:?} cannot answer round {round}, which asks for another \
         kind of data (a number, or an element of the task's domain)"
    )]
    Device {
        /// The device, from 1, in the inputs' order.
        device: u64,
        /// The round, from 1.
        round: usize,
        /// The device's data.
        data: String,
    },
    /// Keyed devices that give an id twice.
    #[error(
        "devices {first} and {again} both have id {id:?}: a keyed device flips one coin per id, \
         so give each device once, with one datum (one row of a client that has several)"
    )]
    DeviceTwice {
        /// The id.
        id: String,
        /// The first device with it, from 1.
        first: u64,
        /// The next, from 1.
        again: u64,
    },
}
