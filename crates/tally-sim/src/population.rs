//! Populations: clients each holding one item, with items interned to dense `u32` ids.

use std::borrow::Cow;
use std::fmt;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::Error;
use crate::synthetic::SyntheticSpec;

/// How rows of a `client_id<TAB>item` file become clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientMode {
    /// Client level: each distinct `client_id` is one client, holding ONE item chosen uniformly
    /// at random among its rows. Clients are taken in order of first appearance and the draws
    /// come from a ChaCha12 stream of `seed`, so the choice is deterministic.
    ClientLevel {
        /// The seed of the draws.
        seed: u64,
    },
    /// Every row is its own client (the `client_id` column is ignored).
    RowsAsClients,
}

impl fmt::Display for ClientMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClientLevel { seed } => write!(f, "client-level (seed {seed})"),
            Self::RowsAsClients => f.write_str("rows as clients"),
        }
    }
}

/// Where a population came from.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Source {
    /// A text file (or reader) with one item per line.
    Lines {
        /// The input's name.
        file: String,
    },
    /// A `client_id<TAB>item` file (or reader).
    Tsv {
        /// The input's name.
        file: String,
        /// The number of data rows read (header and blank lines excluded).
        rows: u64,
        /// The number of distinct `client_id`s.
        client_ids: u64,
        /// How rows became clients.
        mode: ClientMode,
    },
    /// A dataset shipped inside the binary.
    Dataset {
        /// The dataset's name, for example `shakespeare`.
        name: &'static str,
        /// The shipped file it was read from.
        file: &'static str,
        /// The number of data rows read.
        rows: u64,
        /// The number of distinct `client_id`s.
        client_ids: u64,
        /// How rows became clients.
        mode: ClientMode,
    },
    /// A synthetic generator.
    Synthetic {
        /// The generator and its parameters.
        spec: SyntheticSpec,
        /// The seed it was generated with.
        seed: u64,
    },
    /// Items given in memory.
    Memory {
        /// The caller's description.
        description: String,
    },
}

/// Maps item ids to names and back.
#[derive(Clone, Debug)]
enum Vocabulary {
    /// Interned strings: `names[id]`, and the ids sorted by name for lookups.
    Names {
        names: Vec<String>,
        by_name: Vec<u32>,
    },
    /// The items `0..size`, named by their decimal ids (synthetic data).
    Decimal { size: u64 },
}

/// A population of clients, each holding one item.
///
/// Items are interned to dense `u32` ids at load time; [`Population::item_name`] maps them
/// back. The population is the ground truth: [`Population::true_count`] and
/// [`Population::true_counts`] give the exact number of clients holding each item, for metrics
/// (aggregators never expose raw counts).
///
/// Its `Debug` form is a summary (size, domain and description), not the items.
#[derive(Clone)]
pub struct Population {
    items: Vec<u32>,
    vocabulary: Vocabulary,
    /// `(id, count)` for every item held by at least one client, by increasing id.
    counts: Vec<(u32, u64)>,
    source: Source,
    description: String,
}

impl Population {
    /// Builds a population from ids and their names: client `i` holds `items[i]`, named
    /// `vocabulary[items[i]]`. Names should be distinct (lookups by name find one of equal
    /// names otherwise).
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] if `items` is empty, [`Error::ItemOutOfRange`] if an id is not below
    /// `vocabulary.len()`, [`Error::TooMany`] if the vocabulary has more than `u32::MAX` names.
    pub fn from_ids(
        items: Vec<u32>,
        vocabulary: Vec<String>,
        description: impl Into<String>,
    ) -> Result<Self, Error> {
        let description = description.into();
        if items.is_empty() {
            return Err(Error::Empty {
                file: description,
                what: "",
            });
        }
        if u32::try_from(vocabulary.len()).is_err() {
            return Err(Error::TooMany {
                file: description,
                what: "items",
            });
        }
        if let Some(&id) = items.iter().find(|&&id| id as usize >= vocabulary.len()) {
            return Err(Error::ItemOutOfRange {
                id,
                size: vocabulary.len(),
            });
        }
        Ok(Self::new(
            items,
            Vocabulary::names(vocabulary),
            Source::Memory {
                description: description.clone(),
            },
            description,
        ))
    }

    /// Builds a population from item names, one client per name, interning them in order of
    /// first appearance.
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] if there is no name, [`Error::TooMany`] past `u32::MAX` distinct names.
    pub fn from_names<I>(names: I, description: impl Into<String>) -> Result<Self, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let description = description.into();
        let mut interner = Interner::default();
        let mut items = Vec::new();
        for name in names {
            let Some(id) = interner.intern(name.as_ref()) else {
                return Err(Error::TooMany {
                    file: description,
                    what: "items",
                });
            };
            items.push(id);
        }
        if items.is_empty() {
            return Err(Error::Empty {
                file: description,
                what: "",
            });
        }
        Ok(Self::new(
            items,
            Vocabulary::names(interner.into_names()),
            Source::Memory {
                description: description.clone(),
            },
            description,
        ))
    }

    /// Assembles a population; `items` is non-empty and every id is below the vocabulary size.
    pub(crate) fn from_parts(items: Vec<u32>, names: Vec<String>, source: Source) -> Self {
        let description = describe(&source, items.len());
        Self::new(items, Vocabulary::names(names), source, description)
    }

    /// Assembles a synthetic population over the decimal-named domain `0..domain`.
    pub(crate) fn from_synthetic(items: Vec<u32>, domain: u64, source: Source) -> Self {
        let description = describe(&source, items.len());
        Self::new(
            items,
            Vocabulary::Decimal { size: domain },
            source,
            description,
        )
    }

    fn new(items: Vec<u32>, vocabulary: Vocabulary, source: Source, description: String) -> Self {
        debug_assert!(!items.is_empty());
        let counts = count_items(&items, vocabulary.len());
        Self {
            items,
            vocabulary,
            counts,
            source,
            description,
        }
    }

    /// The number of clients.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the population has no client; never true for a loaded population, which
    /// holds at least one client.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The number of item ids: every id is below it. For loaded data every id names an item
    /// that some client holds; a synthetic domain may have items nobody drew.
    pub fn domain_size(&self) -> usize {
        self.vocabulary.len()
    }

    /// Each client's item id, one per client.
    pub fn items(&self) -> &[u32] {
        &self.items
    }

    /// The name of item `id`, or `None` if `id` is not below [`Population::domain_size`].
    /// Synthetic items are named by their decimal ids.
    pub fn item_name(&self, id: u32) -> Option<Cow<'_, str>> {
        match &self.vocabulary {
            Vocabulary::Names { names, .. } => names
                .get(id as usize)
                .map(|name| Cow::Borrowed(name.as_str())),
            Vocabulary::Decimal { size } => {
                (u64::from(id) < *size).then(|| Cow::Owned(id.to_string()))
            }
        }
    }

    /// The id of the item named `name`, if it is in the vocabulary. For synthetic data the
    /// name is the id in canonical decimal (no sign, no leading zeros).
    pub fn item_id(&self, name: &str) -> Option<u32> {
        match &self.vocabulary {
            Vocabulary::Names { names, by_name } => by_name
                .binary_search_by(|&id| names[id as usize].as_str().cmp(name))
                .ok()
                .map(|i| by_name[i]),
            Vocabulary::Decimal { size } => {
                let canonical = !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_digit())
                    && (name == "0" || !name.starts_with('0'));
                if !canonical {
                    return None;
                }
                let id: u32 = name.parse().ok()?;
                (u64::from(id) < *size).then_some(id)
            }
        }
    }

    /// The interned names, indexed by id; `None` for synthetic data, whose names are the
    /// decimal ids.
    pub fn vocabulary(&self) -> Option<&[String]> {
        match &self.vocabulary {
            Vocabulary::Names { names, .. } => Some(names),
            Vocabulary::Decimal { .. } => None,
        }
    }

    /// The number of clients holding item `id` (0 for ids nobody holds or out of range).
    pub fn true_count(&self, id: u32) -> u64 {
        self.counts
            .binary_search_by_key(&id, |&(item, _)| item)
            .map_or(0, |i| self.counts[i].1)
    }

    /// The number of clients holding each item, indexed by id (length
    /// [`Population::domain_size`], so it can be large for a large synthetic domain;
    /// [`Population::item_counts`] lists only the held items).
    pub fn true_counts(&self) -> Vec<u64> {
        let mut dense = vec![0; self.domain_size()];
        for &(id, count) in &self.counts {
            dense[id as usize] = count;
        }
        dense
    }

    /// The items held by at least one client with their counts, by increasing id.
    pub fn item_counts(&self) -> &[(u32, u64)] {
        &self.counts
    }

    /// Where the population came from.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// One line saying where the population came from and how clients were formed, for
    /// example `835229 clients, one per row of shakespeare_speakers.tsv.gz (rows as clients)`.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl fmt::Debug for Population {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Population")
            .field("clients", &self.items.len())
            .field("domain_size", &self.domain_size())
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl Vocabulary {
    fn names(names: Vec<String>) -> Self {
        // Unwrap safety (below): callers checked that ids fit in u32.
        let mut by_name: Vec<u32> = (0..names.len())
            .map(|i| u32::try_from(i).expect("u32 item id"))
            .collect();
        by_name.par_sort_unstable_by(|&a, &b| names[a as usize].cmp(&names[b as usize]));
        Self::Names { names, by_name }
    }

    fn len(&self) -> usize {
        match self {
            Self::Names { names, .. } => names.len(),
            // Unwrap safety: synthetic domains are at most 2^32, which fits a 64-bit usize.
            Self::Decimal { size } => usize::try_from(*size).expect("domain fits in usize"),
        }
    }
}

/// The description line of a population of `n` clients from `source`.
pub(crate) fn describe(source: &Source, n: usize) -> String {
    match source {
        Source::Lines { file } => format!("{n} clients, one per non-blank line of {file}"),
        Source::Tsv {
            file,
            rows,
            client_ids,
            mode,
        } => describe_tsv(n, file, *rows, *client_ids, *mode),
        Source::Dataset {
            name,
            file,
            rows,
            client_ids,
            mode,
        } => format!(
            "dataset {name}: {}",
            describe_tsv(n, file, *rows, *client_ids, *mode)
        ),
        Source::Synthetic { spec, seed } => {
            format!("{n} clients, synthetic {spec} with seed {seed}")
        }
        Source::Memory { description } => description.clone(),
    }
}

fn describe_tsv(n: usize, file: &str, rows: u64, client_ids: u64, mode: ClientMode) -> String {
    match mode {
        ClientMode::RowsAsClients => {
            format!(
                "{n} clients, one per row of {file} (rows as clients: the guarantee protects one \
                 row, not one of the {client_ids} client_ids)"
            )
        }
        ClientMode::ClientLevel { seed } => format!(
            "{n} clients, one per client_id of {file} ({rows} rows), each holding one item \
             chosen uniformly from its rows with seed {seed} (client-level)"
        ),
    }
}

/// Interns strings to dense ids in order of first appearance.
#[derive(Default)]
pub(crate) struct Interner {
    ids: FxHashMap<String, u32>,
}

impl Interner {
    /// The id of `name`, adding it if new; `None` when ids run out of `u32`.
    pub(crate) fn intern(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.ids.len()).ok()?;
        self.ids.insert(name.to_owned(), id);
        Some(id)
    }

    /// The number of distinct names.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The names, indexed by id.
    pub(crate) fn into_names(self) -> Vec<String> {
        let mut names = vec![String::new(); self.ids.len()];
        for (name, id) in self.ids {
            names[id as usize] = name;
        }
        names
    }
}

/// Domains up to this size are counted in dense arrays (one per parallel task); larger ones
/// by sorting a copy of the items.
const DENSE_COUNT_LIMIT: usize = 1 << 22;

/// `(id, count)` of every held item, by increasing id.
fn count_items(items: &[u32], domain: usize) -> Vec<(u32, u64)> {
    if domain <= DENSE_COUNT_LIMIT {
        // Unwrap safety: the limit is below 2^32.
        let size = u32::try_from(domain).expect("a dense domain fits in u32");
        crate::count_elements(size, items)
            .into_iter()
            .enumerate()
            .filter(|&(_, count)| count > 0)
            // Unwrap safety: ids are u32, so are the indices of a vector indexed by them.
            .map(|(id, count)| (u32::try_from(id).expect("u32 item id"), count))
            .collect()
    } else {
        let mut sorted = items.to_vec();
        sorted.par_sort_unstable();
        sorted
            .chunk_by(|a, b| a == b)
            .map(|run| (run[0], run.len() as u64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_names_interns_in_order_of_first_appearance() {
        let p = Population::from_names(["b", "a", "b", "c", "b"], "five").unwrap();
        assert_eq!(p.len(), 5);
        assert_eq!(p.domain_size(), 3);
        assert_eq!(p.items(), &[0, 1, 0, 2, 0]);
        assert_eq!(p.item_name(0).unwrap(), "b");
        assert_eq!(p.item_name(3), None);
        assert_eq!(p.item_id("c"), Some(2));
        assert_eq!(p.item_id("d"), None);
        assert_eq!(p.true_counts(), vec![3, 1, 1]);
        assert_eq!(p.true_count(0), 3);
        assert_eq!(p.true_count(9), 0);
        assert_eq!(p.item_counts(), &[(0, 3), (1, 1), (2, 1)]);
        assert_eq!(p.description(), "five");
    }

    #[test]
    fn from_ids_validates() {
        let names = vec!["x".to_owned(), "y".to_owned(), "z".to_owned()];
        let p = Population::from_ids(vec![2, 2, 0], names.clone(), "ids").unwrap();
        assert_eq!(p.true_counts(), vec![1, 0, 2]);
        assert_eq!(p.item_counts(), &[(0, 1), (2, 2)]);
        assert!(matches!(
            Population::from_ids(vec![3], names.clone(), "ids"),
            Err(Error::ItemOutOfRange { id: 3, size: 3 })
        ));
        assert!(matches!(
            Population::from_ids(vec![], names, "ids"),
            Err(Error::Empty { .. })
        ));
        assert!(matches!(
            Population::from_names(Vec::<String>::new(), "none"),
            Err(Error::Empty { .. })
        ));
    }

    #[test]
    fn sparse_counting_matches_dense() {
        let items = vec![5, 10_000_000, 5, 7];
        let want = vec![(5, 2), (7, 1), (10_000_000, 1)];
        assert_eq!(count_items(&items, 20_000_000), want);
        let items: Vec<u32> = items.into_iter().map(|x| x % 1_000_000).collect();
        assert_eq!(count_items(&items, 1_000_000), [(0, 1), (5, 2), (7, 1)]);
    }

    #[test]
    fn decimal_vocabulary_names_and_lookups() {
        let p = Population::from_synthetic(
            vec![0, 3, 3],
            10,
            Source::Memory {
                description: "d".into(),
            },
        );
        assert_eq!(p.domain_size(), 10);
        assert_eq!(p.item_name(3).unwrap(), "3");
        assert_eq!(p.item_name(10), None);
        assert_eq!(p.item_id("3"), Some(3));
        assert_eq!(p.item_id("03"), None);
        assert_eq!(p.item_id("+3"), None);
        assert_eq!(p.item_id("10"), None);
        assert_eq!(p.item_id(""), None);
        assert_eq!(p.item_id("0"), Some(0));
        assert_eq!(p.true_count(3), 2);
        assert!(p.vocabulary().is_none());
    }
}
