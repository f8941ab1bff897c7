//! Keyed sample-and-threshold rounds: each client's coin and its one row are keyed PRFs of
//! its id (`tally_core::sampling::KeyedCoin`), so the same key gives the same release from
//! the same rows, whatever their order and wherever they are processed.
//!
//! Clients are named by text ids. Rows from a `client_id<TAB>item` file keep their
//! `client_id`s; inputs with one row per client (lines files, rows taken as clients, shipped
//! datasets, synthetic data, in-memory lists) name client `i` by its 0-based position in
//! decimal, `"0"`, `"1"`, ….

use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use rayon::prelude::*;
use tally_core::histogram::{SampleThreshold, SampleThresholdRelease};
use tally_core::sampling::{KeyedCoin, SamplingKey, choose_row};

use crate::Error;
use crate::load::{LineReader, open, tsv_row};
use crate::population::{Interner, Population};

/// Clients per parallel task when flipping the coins.
const COIN_CHUNK: usize = 1 << 14;

/// Who the rows belong to.
#[derive(Clone, Debug)]
enum Clients {
    /// Row `i` is the only row of client `"i"`.
    Positions,
    /// Row `i` belongs to client `names[rows[i]]`.
    Named { rows: Vec<u32>, names: Vec<String> },
}

/// Rows of `(client id, item)` as the keyed round reads them.
///
/// Its `Debug` form is a summary, not the rows.
#[derive(Clone)]
pub struct KeyedPopulation {
    clients: Clients,
    /// Each row's item id.
    items: Vec<u32>,
    /// Item names by id.
    names: Vec<String>,
    description: String,
    /// Where the rows came from, without how a client's row is chosen.
    source: String,
}

impl std::fmt::Debug for KeyedPopulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedPopulation")
            .field("clients", &self.len())
            .field("rows", &self.items.len())
            .field("domain", &self.names.len())
            .field("description", &self.description)
            .finish()
    }
}

impl KeyedPopulation {
    /// Every client of `population` as one row, client `i` named `"i"`; the description is
    /// the population's.
    pub fn from_population(population: &Population) -> Self {
        let names = (0..population.domain_size())
            .map(|id| {
                // Unwrap safety: ids below the domain size are u32 and have names.
                let id = u32::try_from(id).expect("u32 item id");
                population.item_name(id).expect("named id").into_owned()
            })
            .collect();
        Self {
            clients: Clients::Positions,
            items: population.items().to_vec(),
            names,
            description: population.description().to_owned(),
            source: population.description().to_owned(),
        }
    }

    /// Rows given in memory: row `i` is `(clients[i], items[i])`, several rows per client
    /// allowed.
    ///
    /// # Errors
    ///
    /// [`Error::Empty`] without rows, [`Error::MalformedRow`] (line = row number, 1-based) if
    /// the two lists differ in length, [`Error::TooMany`] past `u32::MAX` distinct clients or
    /// items.
    pub fn from_rows<C, I>(clients: C, items: I, description: &str) -> Result<Self, Error>
    where
        C: IntoIterator,
        C::Item: AsRef<str>,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut rows = Rows::new(description);
        let mut clients = clients.into_iter();
        let mut items = items.into_iter();
        loop {
            match (clients.next(), items.next()) {
                (Some(client), Some(item)) => rows.push(client.as_ref(), item.as_ref())?,
                (None, None) => break,
                _ => {
                    return Err(Error::MalformedRow {
                        file: description.to_owned(),
                        line: rows.items.len() as u64 + 1,
                        found: "client and item lists of different lengths",
                    });
                }
            }
        }
        rows.finish(description.to_owned(), description.to_owned())
    }

    /// Loads a `client_id<TAB>item` file (the format of [`Population::from_tsv_file`]),
    /// keeping every row and its client id.
    ///
    /// # Errors
    ///
    /// As [`Population::from_tsv_file`].
    pub fn from_tsv_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        Self::from_tsv_reader(open(path)?, &path.display().to_string())
    }

    /// [`KeyedPopulation::from_tsv_file`] on a reader named `name` in messages.
    ///
    /// # Errors
    ///
    /// As [`Population::from_tsv_file`], except for opening.
    pub fn from_tsv_reader(reader: impl BufRead, name: &str) -> Result<Self, Error> {
        let mut lines = LineReader::new(reader, name);
        let mut rows = Rows::new(name);
        let mut first = true;
        while let Some((number, line)) = lines.next_line()? {
            let Some((client, item)) = tsv_row(line, name, number, &mut first)? else {
                continue;
            };
            rows.push(client, item)?;
        }
        let description = format!(
            "{} clients, one per client_id of {name} ({} rows), each holding one of its rows \
             chosen by the sampling key (keyed client-level)",
            rows.clients.len(),
            rows.items.len()
        );
        let source = format!("{name} ({} rows)", rows.items.len());
        rows.finish(description, source)
    }

    /// The number of clients.
    pub fn len(&self) -> usize {
        match &self.clients {
            Clients::Positions => self.items.len(),
            Clients::Named { names, .. } => names.len(),
        }
    }

    /// Whether there is no client; never true for a built population.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The name of item `id`, if `id` is below the number of distinct items.
    pub fn item_name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }

    /// What the input was.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Each client's id and the item id of its one row, chosen among its rows by `key` in
    /// round 0 as [`run_keyed_sample_threshold`] chooses it, in order of the clients' first
    /// rows (clients without ids are named by position).
    pub fn chosen_rows(&self, key: &SamplingKey) -> Vec<(String, u32)> {
        match &self.clients {
            Clients::Positions => self
                .items
                .iter()
                .enumerate()
                .map(|(position, &item)| (position.to_string(), item))
                .collect(),
            Clients::Named { rows, names } => {
                let mut held: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
                for (&client, &item) in rows.iter().zip(&self.items) {
                    held[client as usize].push(item);
                }
                held.par_iter()
                    .zip(names)
                    .map(|(items, name)| {
                        let item_names: Vec<&str> = items
                            .iter()
                            .map(|&item| self.names[item as usize].as_str())
                            .collect();
                        // Unwrap safety: every named client has at least one row.
                        let row = choose_row(key, 0, name.as_bytes(), &item_names)
                            .expect("a client has a row");
                        (name.clone(), items[row])
                    })
                    .collect()
            }
        }
    }
}

impl KeyedPopulation {
    /// Each client's id and the item ids of all its rows (in row order), in order of the
    /// clients' first rows (clients without ids are named by position).
    pub fn client_items(&self) -> Vec<(String, Vec<u32>)> {
        match &self.clients {
            Clients::Positions => self
                .items
                .iter()
                .enumerate()
                .map(|(position, &item)| (position.to_string(), vec![item]))
                .collect(),
            Clients::Named { rows, names } => {
                let mut held: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
                for (&client, &item) in rows.iter().zip(&self.items) {
                    held[client as usize].push(item);
                }
                names.iter().cloned().zip(held).collect()
            }
        }
    }

    /// Where the rows came from (a file and its number of rows, or the population's
    /// description), without how a client's row is chosen.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The number of distinct items.
    pub fn domain_size(&self) -> usize {
        self.names.len()
    }
}

/// Rows being interned.
struct Rows {
    clients: Interner,
    row_clients: Vec<u32>,
    items: Vec<u32>,
    interner: Interner,
    name: String,
}

impl Rows {
    fn new(name: &str) -> Self {
        Self {
            clients: Interner::default(),
            row_clients: Vec::new(),
            items: Vec::new(),
            interner: Interner::default(),
            name: name.to_owned(),
        }
    }

    fn push(&mut self, client: &str, item: &str) -> Result<(), Error> {
        let too_many = |what| Error::TooMany {
            file: self.name.clone(),
            what,
        };
        let client = self
            .clients
            .intern(client)
            .ok_or_else(|| too_many("clients"))?;
        let item = self
            .interner
            .intern(item)
            .ok_or_else(|| too_many("items"))?;
        self.row_clients.push(client);
        self.items.push(item);
        Ok(())
    }

    fn finish(self, description: String, source: String) -> Result<KeyedPopulation, Error> {
        if self.items.is_empty() {
            return Err(Error::Empty {
                file: self.name,
                what: " or holds only a header or blank lines",
            });
        }
        Ok(KeyedPopulation {
            clients: Clients::Named {
                rows: self.row_clients,
                names: self.clients.into_names(),
            },
            items: self.items,
            names: self.interner.into_names(),
            description,
            source,
        })
    }
}

/// Runs round `round` of the S&T histogram `mechanism` over `population` with keyed coins of
/// `key`: client `c` is sampled when its keyed coin for `(round, c)` comes up heads, and a
/// sampled client with several rows reports the one [`choose_row`] picks. No other randomness
/// is drawn, so the release is a function of the rows (in any order), the mechanism, the key
/// and the round.
///
/// # Errors
///
/// As [`SampleThreshold::keyed_coin`]: the mechanism's rate must be one a keyed coin uses
/// (build it with [`SampleThreshold::calibrate_keyed`]).
pub fn run_keyed_sample_threshold(
    population: &KeyedPopulation,
    mechanism: &SampleThreshold,
    key: SamplingKey,
    round: u64,
) -> Result<SampleThresholdRelease, tally_core::Error> {
    let coin = mechanism.keyed_coin(key)?;
    let reports = match &population.clients {
        Clients::Positions => sampled_positions(&population.items, &coin, round),
        Clients::Named { rows, names } => sampled_rows(population, rows, names, &coin, round),
    };
    let mut aggregator = mechanism.aggregator(population.names.len());
    aggregator.absorb_all(&reports);
    Ok(aggregator.release())
}

/// The items of the clients `"0"`, `"1"`, … whose coins come up heads.
fn sampled_positions(items: &[u32], coin: &KeyedCoin, round: u64) -> Vec<u32> {
    items
        .par_chunks(COIN_CHUNK)
        .enumerate()
        .flat_map_iter(|(chunk, items)| {
            let mut id = String::new();
            items.iter().enumerate().filter_map(move |(i, &item)| {
                id.clear();
                // Unwrap safety: writing to a String cannot fail.
                write!(id, "{}", chunk * COIN_CHUNK + i).expect("write to a String");
                coin.flip(round, id.as_bytes()).then_some(item)
            })
        })
        .collect()
}

/// One item per named client whose coin comes up heads, chosen among its rows by the key.
fn sampled_rows(
    population: &KeyedPopulation,
    rows: &[u32],
    names: &[String],
    coin: &KeyedCoin,
    round: u64,
) -> Vec<u32> {
    let sampled: Vec<bool> = names
        .par_iter()
        .with_min_len(COIN_CHUNK)
        .map(|name| coin.flip(round, name.as_bytes()))
        .collect();
    // The sampled clients' rows, grouped by client.
    let mut held: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
    for (&client, &item) in rows.iter().zip(&population.items) {
        if sampled[client as usize] {
            held[client as usize].push(item);
        }
    }
    held.par_iter()
        .enumerate()
        .filter(|(_, items)| !items.is_empty())
        .map(|(client, items)| {
            let item_names: Vec<&str> = items
                .iter()
                .map(|&item| population.names[item as usize].as_str())
                .collect();
            // Unwrap safety: the client has at least one row.
            let row = choose_row(coin.key(), round, names[client].as_bytes(), &item_names)
                .expect("a sampled client has a row");
            items[row]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget};

    use super::*;

    fn mechanism() -> SampleThreshold {
        SampleThreshold::calibrate_keyed(
            1.0,
            1e-6,
            PlanTarget::SamplingRate(0.5),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap()
    }

    fn key() -> SamplingKey {
        SamplingKey::derive(b"keyed tests").unwrap()
    }

    fn released(population: &KeyedPopulation) -> Vec<(String, u64)> {
        run_keyed_sample_threshold(population, &mechanism(), key(), 0)
            .unwrap()
            .items
            .iter()
            .map(|cell| {
                let name = population.item_name(cell.item).unwrap().to_owned();
                (name, cell.count)
            })
            .collect()
    }

    /// Rows of 3000 clients: client `c` holds `c % 7` and `c % 3` (as text), and a few
    /// clients hold a common item twice.
    fn rows() -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for c in 0..3000u32 {
            rows.push((format!("u{c}"), format!("seven-{}", c % 7)));
            rows.push((format!("u{c}"), format!("three-{}", c % 3)));
            if c % 5 == 0 {
                rows.push((format!("u{c}"), "common".to_owned()));
                rows.push((format!("u{c}"), "common".to_owned()));
            }
        }
        rows
    }

    #[test]
    fn the_release_does_not_depend_on_the_row_order() {
        let rows = rows();
        let (clients, items): (Vec<_>, Vec<_>) = rows.iter().cloned().unzip();
        let forward = KeyedPopulation::from_rows(&clients, &items, "forward").unwrap();
        let (clients, items): (Vec<_>, Vec<_>) = rows.iter().rev().cloned().unzip();
        let backward = KeyedPopulation::from_rows(&clients, &items, "backward").unwrap();
        assert_eq!(forward.len(), 3000);
        let mut a = released(&forward);
        let mut b = released(&backward);
        a.sort();
        b.sort();
        assert!(!a.is_empty());
        assert_eq!(a, b);
        // Each sampled client reports one row: the counts add up to at most the sample.
        let total: u64 = a.iter().map(|(_, count)| count).sum();
        assert!(total <= 3000);
    }

    #[test]
    fn a_tsv_file_and_its_rows_in_memory_agree() {
        let rows = rows();
        let mut text = String::from("client_id\titem\n");
        for (client, item) in &rows {
            text.push_str(&format!("{client}\t{item}\n"));
        }
        let file = KeyedPopulation::from_tsv_reader(text.as_bytes(), "rows.tsv").unwrap();
        let (clients, items): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
        let memory = KeyedPopulation::from_rows(&clients, &items, "memory").unwrap();
        assert_eq!(released(&file), released(&memory));
        assert!(file.description().contains("3000 clients"), "{file:?}");
    }

    #[test]
    fn positions_are_the_clients_ids() {
        let items: Vec<String> = (0..5000).map(|i| format!("item-{}", i % 4)).collect();
        let population = Population::from_names(&items, "memory").unwrap();
        let positional = KeyedPopulation::from_population(&population);
        let ids: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
        let named = KeyedPopulation::from_rows(&ids, &items, "named").unwrap();
        assert_eq!(released(&positional), released(&named));
    }

    #[test]
    fn bad_rows_are_reported() {
        let error = KeyedPopulation::from_rows(["a"], ["x", "y"], "lists").unwrap_err();
        assert!(error.to_string().contains("different lengths"), "{error}");
        let error = KeyedPopulation::from_tsv_reader("a\tb\nc\n".as_bytes(), "f.tsv").unwrap_err();
        assert_eq!(
            error.to_string(),
            "f.tsv:2: expected client_id<TAB>item, found a line with no tab"
        );
        let empty: [&str; 0] = [];
        assert!(KeyedPopulation::from_rows(empty, empty, "none").is_err());
    }
}
