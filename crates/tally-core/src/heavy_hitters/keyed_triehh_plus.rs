//! TrieHH++ with keyed coins: level `ℓ` samples client `c` when the keyed coin of
//! `(key, round ℓ, c)` comes up heads ([`KeyedCoin::flip`]), and a client with several rows
//! holds the one word [`choose_row`](crate::sampling::choose_row) picks for it (in round 0, as
//! a keyed histogram does). The same key, rows and settings give the same release wherever
//! they run: on the command line (`tally heavy-hitters --algorithm triehh++ --sampling-key`),
//! in Python and level by level on Spark.
//!
//! # Privacy
//!
//! Unchanged from [`TrieHhPlus`](super::TrieHhPlus), for the rate the keyed coin actually uses.
//! Modelling the PRF as a random function, the coins of different levels (different rounds
//! in the PRF's input) and of different clients are independent `Ber(p)` variables with `p`
//! the level's rate rounded down to a multiple of `2^-64` ([`keyed_level_mechanism`]), so
//! every level is a sample-and-threshold round with a fresh Poisson sample at that rate, and
//! the run is their composition, computed for that rate. The chosen word is uniform among a
//! client's rows and independent of the coins. The argument holds only while the key is
//! secret (`docs/privacy/sample-threshold.md`, "Keyed sampling").

use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};

use super::prefix::PrefixRound;
use super::triehh_plus::TrieHhPlusQuery;
use crate::Error;
use crate::histogram::SampleThreshold;
use crate::sampling::{KeyedCoin, SamplingKey, keyed_rate};

/// The per-level mechanism a keyed run uses for the planned `per_level`: the same threshold,
/// the rate rounded down to a multiple of `2^-64`, and the guarantee computed for that rate at
/// the planned level's `ε` with `analysis` for `neighbours`.
///
/// # Errors
///
/// The accountant's errors for the rounded rate.
pub fn keyed_level_mechanism(
    per_level: &SampleThreshold,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<SampleThreshold, Error> {
    let params = per_level.params();
    let rate = keyed_rate(params.sampling_rate())?;
    if rate.to_bits() == params.sampling_rate().to_bits() {
        return Ok(per_level.clone());
    }
    SampleThreshold::new(
        SampleThresholdParams::new(rate, params.threshold())?,
        per_level.guarantee().epsilon,
        analysis,
        neighbours,
    )
}

/// One level of a keyed TrieHH++ run: which prefix a client reports, if its coin comes up.
#[derive(Clone, Debug)]
pub struct KeyedLevel {
    coin: KeyedCoin,
    prefixes: PrefixRound,
}

impl KeyedLevel {
    /// The level `query` asks for, with coins of `key`.
    ///
    /// # Errors
    ///
    /// As [`SampleThreshold::keyed_coin`]: the level's rate must be one a keyed coin uses
    /// (build the task's per-level mechanism with [`keyed_level_mechanism`]).
    pub fn new(query: &TrieHhPlusQuery, key: SamplingKey) -> Result<Self, Error> {
        Ok(Self {
            coin: query.mechanism.keyed_coin(key)?,
            prefixes: query.prefixes.clone(),
        })
    }

    /// A level of `prefixes` flipping `coin` (whose rate the level's mechanism must use).
    pub fn with_coin(coin: KeyedCoin, prefixes: PrefixRound) -> Self {
        Self { coin, prefixes }
    }

    /// The report of client `client` (its id's bytes) holding `word`: its prefix for this
    /// level ([`PrefixRound::report`]) when its coin for the level comes up heads, else
    /// `None`.
    pub fn report(&self, client: &[u8], word: &str) -> Option<String> {
        let round = self.prefixes.round as u64;
        if self.coin.flip(round, client) {
            self.prefixes.report(word)
        } else {
            None
        }
    }

    /// The level's prefix query.
    pub fn prefixes(&self) -> &PrefixRound {
        &self.prefixes
    }
}

/// A level's release from its sampled counts of prefixes (counted anywhere: here, or on
/// Spark): the prefixes whose count reaches `mechanism`'s threshold, as the
/// `(prefix, count, estimate)` cells [`TrieHhPlus`](super::TrieHhPlus) observes.
pub fn release_prefix_counts(
    mechanism: &SampleThreshold,
    counts: impl IntoIterator<Item = (String, u64)>,
) -> Vec<(String, u64, f64)> {
    let mut aggregator = mechanism.open_domain_aggregator();
    let mut names = Vec::new();
    for (id, (prefix, count)) in (0u32..).zip(counts) {
        aggregator.absorb_many(id, count);
        names.push(prefix);
    }
    aggregator
        .release()
        .items
        .into_iter()
        .map(|cell| (names[cell.item as usize].clone(), cell.count, cell.estimate))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use tally_accounting::sample_threshold::PlanTarget;

    use super::*;

    fn planned(rate: f64) -> SampleThreshold {
        SampleThreshold::calibrate(
            1.0,
            1e-8,
            PlanTarget::SamplingRate(rate),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap()
    }

    fn query(mechanism: SampleThreshold, round: usize, live: Option<&[&str]>) -> TrieHhPlusQuery {
        TrieHhPlusQuery {
            prefixes: PrefixRound {
                round,
                segment: 1,
                live_parents: live.map(|live| {
                    Arc::new(live.iter().map(|s| (*s).to_owned()).collect::<HashSet<_>>())
                }),
            },
            mechanism,
        }
    }

    #[test]
    fn the_level_mechanism_uses_the_rounded_rate() {
        // 1e-5's low bits fall below 2^-64: the keyed rate is lower, its δ recomputed.
        let planned = planned(1e-5);
        let keyed =
            keyed_level_mechanism(&planned, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let rate = keyed.params().sampling_rate();
        assert!(rate < planned.params().sampling_rate());
        assert_eq!(rate.to_bits(), keyed_rate(rate).unwrap().to_bits());
        assert_eq!(keyed.params().threshold(), planned.params().threshold());
        assert!(keyed.guarantee().delta <= planned.guarantee().delta);
        // A planned mechanism not built for keyed coins is refused by the level.
        let key = SamplingKey::derive(b"k").unwrap();
        assert!(KeyedLevel::new(&query(planned, 1, None), key.clone()).is_err());
        assert!(KeyedLevel::new(&query(keyed, 1, None), key).is_ok());
    }

    #[test]
    fn a_client_reports_its_prefix_when_its_coin_for_the_level_comes_up() {
        let mechanism =
            keyed_level_mechanism(&planned(0.5), Analysis::Tight, Neighbours::AddRemove).unwrap();
        let key = SamplingKey::derive(b"levels").unwrap();
        let coin = mechanism.keyed_coin(key.clone()).unwrap();
        let level =
            KeyedLevel::new(&query(mechanism.clone(), 2, Some(&["a"])), key.clone()).unwrap();
        assert_eq!(level.prefixes().round, 2);
        let mut reported = 0;
        for client in 0..200u32 {
            let id = client.to_string();
            let heads = coin.flip(2, id.as_bytes());
            let report = level.report(id.as_bytes(), "apple");
            assert_eq!(report.as_deref(), heads.then_some("ap"), "client {client}");
            reported += usize::from(heads);
            // Below a dead parent nobody reports; a short word ends in the terminator.
            assert_eq!(level.report(id.as_bytes(), "banana"), None);
            assert_eq!(
                level.report(id.as_bytes(), "a").as_deref(),
                heads.then_some("a$")
            );
        }
        assert!((60..140).contains(&reported), "{reported}");
        // Each level flips its own coin: round 3's heads differ from round 2's.
        let next = KeyedLevel::new(&query(mechanism, 3, None), key).unwrap();
        let differs = (0..200u32).any(|client| {
            let id = client.to_string();
            next.report(id.as_bytes(), "apple").is_some() != coin.flip(2, id.as_bytes())
        });
        assert!(differs);
    }

    #[test]
    fn a_level_releases_the_prefixes_that_reach_the_threshold() {
        let mechanism = planned(0.5);
        let tau = mechanism.params().threshold();
        let released = release_prefix_counts(
            &mechanism,
            [
                ("a".to_owned(), tau),
                ("b".to_owned(), tau - 1),
                ("c$".to_owned(), tau + 5),
            ],
        );
        let prefixes: Vec<&str> = released.iter().map(|(p, ..)| p.as_str()).collect();
        assert_eq!(prefixes.len(), 2);
        assert!(prefixes.contains(&"a") && prefixes.contains(&"c$"));
        for (_, count, estimate) in &released {
            let expected = *count as f64 / mechanism.params().sampling_rate();
            assert!((estimate - expected).abs() <= 1e-9 * expected);
        }
    }
}
