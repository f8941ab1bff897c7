//! A keyed sample-and-threshold round counted part by part: each part of the rows (a Spark
//! partition, a shard of a file) flips its clients' keyed coins and counts the sampled items
//! itself, and the parts' counts are summed elsewhere. As the coins and the chosen rows are
//! keyed PRFs of the clients' ids, the sums are the counts [`run_keyed_sample_threshold`] gives
//! on all the rows at once, whatever the parts and however often a part is recomputed, as long
//! as every client's rows are in one part.
//!
//! [`run_keyed_sample_threshold`]: crate::run_keyed_sample_threshold

use std::borrow::Borrow;
use std::hash::Hash;

use rustc_hash::FxHashMap;
use tally_core::sampling::{KeyedCoin, SamplingKey, choose_items, choose_row};

/// The sampled counts of one part of a keyed round's rows, by item, and how many clients the
/// part held.
///
/// Items are counted by value: `T` is the item's type (`i64` for integers, which counts them
/// as their decimal texts would be counted; `Vec<u8>` for the UTF-8 bytes of texts). Client
/// ids are bytes, as [`KeyedCoin::flip`] reads them.
///
/// # Privacy
///
/// The counts are raw sampled counts, not a release: only their sums over all parts, kept
/// when they reach the threshold, are released, with the guarantee of the mechanism the coin
/// was calibrated for (`SampleThreshold::calibrate_keyed` and `SampleThreshold::keyed_coin`).
/// The sample is that of [`run_keyed_sample_threshold`]: each client sampled by its keyed coin,
/// one row per sampled client chosen by [`choose_row`], so the guarantee is that run's, for
/// add/remove or replace-one neighbours as the mechanism states.
///
/// [`run_keyed_sample_threshold`]: crate::run_keyed_sample_threshold
#[derive(Clone, Debug)]
pub struct KeyedPartCounts<T> {
    coin: KeyedCoin,
    round: u64,
    counts: FxHashMap<T, u64>,
    clients: u64,
}

impl<T: Eq + Hash> KeyedPartCounts<T> {
    /// No rows yet, for round `round` of the keyed coin `coin`.
    pub fn new(coin: KeyedCoin, round: u64) -> Self {
        Self {
            coin,
            round,
            counts: FxHashMap::default(),
            clients: 0,
        }
    }

    /// A client with one row, `item`: counts the item if the client's coin comes up heads.
    pub fn absorb_row<Q>(&mut self, client: &[u8], item: &Q)
    where
        T: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = T> + ?Sized,
    {
        self.clients += 1;
        if self.coin.flip(self.round, client) {
            self.count(item);
        }
    }

    fn count<Q>(&mut self, item: &Q)
    where
        T: Borrow<Q>,
        Q: Eq + Hash + ToOwned<Owned = T> + ?Sized,
    {
        match self.counts.get_mut(item) {
            Some(count) => *count += 1,
            None => {
                self.counts.insert(item.to_owned(), 1);
            }
        }
    }

    /// The number of clients absorbed.
    pub fn clients(&self) -> u64 {
        self.clients
    }

    /// The sampled counts, one per distinct sampled item, in no particular order.
    pub fn into_counts(self) -> Vec<(T, u64)> {
        self.counts.into_iter().collect()
    }
}

impl KeyedPartCounts<Vec<u8>> {
    /// A client with all its rows, `rows` (their items' bytes, at least one row): counts the
    /// row the key chooses ([`choose_row`]) if the client's coin comes up heads.
    pub fn absorb_client<R: AsRef<[u8]>>(&mut self, client: &[u8], rows: &[R]) {
        self.clients += 1;
        if self.coin.flip(self.round, client)
            && let Some(row) = choose_row(self.coin.key(), self.round, client, rows)
        {
            self.count(rows[row].as_ref());
        }
    }
}

/// The counts of one part of a keyed release over clients of several items (a Spark
/// partition), by item: each client keeps at most `max_items` of its distinct items, chosen by
/// the key ([`choose_items`]), and for sample-and-threshold sends each kept item by its own
/// keyed coin ([`KeyedCoin::flip_item`]). As every choice is a keyed PRF of the client's id and
/// items, the parts' sums are the counts `tally_sim::items_release` gives on all the rows at
/// once with the same key, whatever the parts and the order of the rows, as long as every
/// client's rows are in one part.
///
/// # Privacy
///
/// The counts are raw, not a release: only the release computed from their sums
/// ([`crate::items_release::ItemsMechanism::release_counts`]) is, with the guarantee of the
/// mechanism calibrated for `max_items` items per client (and, for sample-and-threshold, the
/// coin of its keyed rate, [`tally_core::histogram::SampleThreshold::keyed_coin`]).
#[derive(Clone, Debug)]
pub struct KeyedItemCounts {
    key: SamplingKey,
    max_items: u32,
    coin: Option<KeyedCoin>,
    counts: FxHashMap<Vec<u8>, u64>,
    clients: u64,
}

impl KeyedItemCounts {
    /// No clients yet: each will keep at most `max_items` items chosen by `key` in round 0,
    /// and send each by `coin` if there is one (sample-and-threshold) or all of them if not
    /// (a partition selection).
    pub fn new(key: SamplingKey, max_items: u32, coin: Option<KeyedCoin>) -> Self {
        Self {
            key,
            max_items,
            coin,
            counts: FxHashMap::default(),
            clients: 0,
        }
    }

    /// A client with all its rows, `rows` (their items' bytes): counts the items it keeps and
    /// sends.
    pub fn absorb_client<R: AsRef<[u8]> + Ord>(&mut self, client: &[u8], rows: &[R]) {
        self.clients += 1;
        for position in choose_items(&self.key, 0, client, rows, self.max_items) {
            let item = rows[position].as_ref();
            let sent = self
                .coin
                .as_ref()
                .is_none_or(|coin| coin.flip_item(0, client, item));
            if sent {
                *self.counts.entry(item.to_vec()).or_insert(0) += 1;
            }
        }
    }

    /// The number of clients absorbed.
    pub fn clients(&self) -> u64 {
        self.clients
    }

    /// The counts, one per distinct counted item, in no particular order.
    pub fn into_counts(self) -> Vec<(Vec<u8>, u64)> {
        self.counts.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget};
    use tally_core::histogram::SampleThreshold;
    use tally_core::sampling::SamplingKey;

    use super::*;
    use crate::{KeyedPopulation, run_keyed_sample_threshold};

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
        SamplingKey::derive(b"part counts").unwrap()
    }

    /// The whole run's sampled counts of the items that reach the threshold, by name.
    fn released(population: &KeyedPopulation) -> Vec<(String, u64)> {
        let release = run_keyed_sample_threshold(population, &mechanism(), key(), 0).unwrap();
        let mut counts: Vec<_> = release
            .items
            .iter()
            .map(|cell| {
                (
                    population.item_name(cell.item).unwrap().to_owned(),
                    cell.count,
                )
            })
            .collect();
        counts.sort();
        counts
    }

    /// The parts' counts summed, kept at the threshold.
    fn summed<T: Ord + Hash>(parts: Vec<KeyedPartCounts<T>>) -> (Vec<(T, u64)>, u64) {
        let threshold = mechanism().params().threshold();
        let clients = parts.iter().map(KeyedPartCounts::clients).sum();
        let mut sums = std::collections::BTreeMap::new();
        for part in parts {
            for (item, count) in part.into_counts() {
                *sums.entry(item).or_insert(0) += count;
            }
        }
        let kept = sums.into_iter().filter(|&(_, n)| n >= threshold).collect();
        (kept, clients)
    }

    fn coin() -> KeyedCoin {
        mechanism().keyed_coin(key()).unwrap()
    }

    #[test]
    fn parts_of_rows_as_clients_sum_to_the_whole_run() {
        // Integer items counted by value, in three uneven parts of the clients 0, 1, ….
        let items: Vec<i64> = (0..6000).map(|c| (c * 7919) % 23 - 5).collect();
        let mut parts = vec![KeyedPartCounts::new(coin(), 0); 3];
        for (client, item) in items.iter().enumerate() {
            parts[client * client % 3].absorb_row(client.to_string().as_bytes(), item);
        }
        let (counts, clients) = summed(parts);
        assert_eq!(clients, 6000);
        let texts: Vec<String> = items.iter().map(i64::to_string).collect();
        let ids: Vec<String> = (0..6000).map(|c: usize| c.to_string()).collect();
        let whole = KeyedPopulation::from_rows(&ids, &texts, "whole").unwrap();
        let mut expected: Vec<(i64, u64)> = released(&whole)
            .into_iter()
            .map(|(name, count)| (name.parse().unwrap(), count))
            .collect();
        expected.sort();
        assert!(expected.len() > 10, "{expected:?}");
        assert_eq!(counts, expected);
    }

    #[test]
    fn parts_of_clients_with_several_rows_sum_to_the_whole_run() {
        // Client `u{c}` holds `w{c % 6}`, `x{c % 4}` and, every fifth, `w{c % 6}` again.
        let held = |c: u32| {
            let mut rows = vec![format!("w{}", c % 6), format!("x{}", c % 4)];
            if c.is_multiple_of(5) {
                rows.push(format!("w{}", c % 6));
            }
            rows
        };
        let mut parts = vec![KeyedPartCounts::<Vec<u8>>::new(coin(), 0); 2];
        let (mut ids, mut items) = (Vec::new(), Vec::new());
        for c in 0..3000 {
            let rows: Vec<Vec<u8>> = held(c).into_iter().map(String::into_bytes).collect();
            parts[(c % 2) as usize].absorb_client(format!("u{c}").as_bytes(), &rows);
            for row in held(c) {
                ids.push(format!("u{c}"));
                items.push(row);
            }
        }
        let (counts, clients) = summed(parts);
        assert_eq!(clients, 3000);
        let whole = KeyedPopulation::from_rows(&ids, &items, "whole").unwrap();
        let expected: Vec<(Vec<u8>, u64)> = released(&whole)
            .into_iter()
            .map(|(name, count)| (name.into_bytes(), count))
            .collect();
        assert!(expected.len() > 5, "{expected:?}");
        assert_eq!(counts, expected);
    }

    #[test]
    fn a_part_counts_its_clients_and_only_its_sampled_items() {
        let mut part = KeyedPartCounts::<Vec<u8>>::new(coin(), 0);
        for c in 0..1000 {
            part.absorb_row(format!("{c}").as_bytes(), b"same".as_slice());
        }
        assert_eq!(part.clients(), 1000);
        let heads = (0..1000)
            .filter(|c: &i32| coin().flip(0, c.to_string().as_bytes()))
            .count() as u64;
        assert!(heads > 0 && heads < 1000);
        assert_eq!(part.into_counts(), vec![(b"same".to_vec(), heads)]);
    }
}
