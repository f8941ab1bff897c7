//! TrieHH's round as the round protocol: every device casts a ballot (its vote, or an explicit
//! "no vote"), and the aggregator draws the round's fixed-size batch of `m` ballots uniformly
//! without replacement with its own secret coins, then applies TrieHH's release rule
//! ([`TrieHhAggregator::release`]: the threshold `θ`, then the beam) to the batch's votes.
//!
//! # Privacy
//!
//! The round is one round of [`crate::heavy_hitters::TrieHh`], whose guarantee (Theorem 1 of
//! [ZKMSL20], through [`tally_accounting::triehh`], replace-one neighbours,
//! [`TrustModel::Central`]) assumes that each round's batch is an exactly uniform `m`-subset of
//! the `n` clients that no client can steer. Here the devices never sample themselves: every
//! device uploads a ballot, and the aggregator keeps `m` of them by
//! [`crate::sampling::uniform_subset_counts`] (Floyd's algorithm on exact uniform integers)
//! from a stream of coins no device sees.
//!
//! A device whose word gives no vote this round still uploads, a [`Ballot`] of `None`, so
//! that the number of ballots does not depend on any device's data. When fewer than the `n`
//! clients the task was configured for upload, the missing ones count as clients that give no
//! vote (the batch is drawn from `n` places): that is TrieHH over `n` clients, with the
//! guarantee computed for `n`. When more upload, the batch is drawn from all of them, and the
//! theorem's `ε = −L·ln(1 − θm/n)` only falls as `n` grows (its conditions `θ ≤ √n` and
//! `m/n ≤ 1/(θ + 1)` keep holding), so the guarantee computed for `n` still holds.
//!
//! [ZKMSL20]: https://arxiv.org/abs/1902.08534

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use super::wire::{DeviceResponder, WireCell, WireRelease};
use super::{DeviceQuery, RoundAggregator, RoundProtocol, TrustModel, WireReport};
use crate::heavy_hitters::{PrefixRound, TrieHhQuery};
use crate::sampling::uniform_subset_counts;

/// What a device uploads in a TrieHH round: the prefix it votes for, or `None` when its word
/// gives no vote this round (it ended earlier, or its parent prefix was not accepted).
///
/// On the wire a vote is the prefix itself and "no vote" is the empty string, which is never
/// a prefix any round admits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ballot(pub Option<String>);

impl WireReport for Ballot {
    fn encode(self) -> String {
        self.0.unwrap_or_default()
    }

    fn decode(text: String) -> Option<Self> {
        Some(Self((!text.is_empty()).then_some(text)))
    }
}

/// The query a TrieHH round broadcasts: the prefix-tree round every device casts its ballot
/// on. Devices do not flip coins, so they need neither the batch size nor the threshold.
#[derive(Clone, Debug)]
pub struct PrefixBallot(pub PrefixRound);

impl DeviceQuery for PrefixBallot {
    type Input = str;
    type Report = Ballot;

    fn trust(&self) -> TrustModel {
        TrustModel::Central
    }

    /// Always a ballot: the vote [`PrefixRound::report`] gives, or "no vote".
    fn respond<R: Rng + ?Sized>(&self, word: &str, _: &mut R) -> Option<Ballot> {
        Some(Ballot(self.0.report(word)))
    }

    /// "No vote", or a prefix [`PrefixRound::admits`].
    fn admits(&self, ballot: &Ballot) -> bool {
        ballot
            .0
            .as_deref()
            .is_none_or(|prefix| self.0.admits(prefix))
    }
}

impl DeviceResponder for PrefixBallot {
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    fn accepts(&self, _: &str) -> bool {
        true
    }

    /// The ballot in its wire encoding; a vote longer than `max_bytes` becomes "no vote"
    /// (the device still takes its place among the ballots the batch is drawn from).
    fn respond(&self, word: &str, max_bytes: usize, _: &mut dyn Rng) -> Option<String> {
        let vote = Ballot(self.0.report(word)).encode();
        Some(if vote.len() > max_bytes {
            String::new()
        } else {
            vote
        })
    }

    fn flips_no_coin(&self) -> bool {
        true
    }
}

/// One TrieHH round as the server holds it: the ballot devices cast, and the batch the
/// aggregator draws and thresholds.
#[derive(Clone, Debug)]
pub struct TrieHhBatchRound {
    ballot: PrefixBallot,
    query: TrieHhQuery,
}

impl TrieHhBatchRound {
    /// The round of `query`.
    pub fn new(query: &TrieHhQuery) -> Self {
        Self {
            ballot: PrefixBallot(query.prefixes.clone()),
            query: query.clone(),
        }
    }
}

impl RoundProtocol for TrieHhBatchRound {
    type Query = PrefixBallot;
    type Release = Vec<String>;
    type Aggregator = TrieHhBatch;

    fn query(&self) -> &PrefixBallot {
        &self.ballot
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> TrieHhBatch {
        TrieHhBatch {
            ballots: FxHashMap::default(),
            query: self.query.clone(),
            rng,
        }
    }
}

/// The aggregator of a TrieHH round: counts the ballots, and at release draws the batch and
/// thresholds its votes. Deliberately neither `Debug` nor serializable;
/// [`RoundAggregator::release`] is the only way out, and it publishes no count.
pub struct TrieHhBatch {
    ballots: FxHashMap<Ballot, u64>,
    query: TrieHhQuery,
    rng: ChaCha20Rng,
}

impl RoundAggregator for TrieHhBatch {
    type Report = Ballot;
    type Release = Vec<String>;

    fn absorb(&mut self, ballot: Ballot) {
        *self.ballots.entry(ballot).or_insert(0) += 1;
    }

    fn merge(&mut self, other: Self) {
        for (ballot, count) in other.ballots {
            *self.ballots.entry(ballot).or_insert(0) += count;
        }
    }

    /// Draws the batch: a uniform `m`-subset of `max(ballots, n)` places (places beyond the
    /// ballots are clients that gave no vote), numbered ballot by ballot in `Ballot` order
    /// (a fixed bijection: arrival order plays no part), and releases the accepted prefixes
    /// of the batch's votes by [`crate::heavy_hitters::TrieHhAggregator::release`].
    fn release(mut self) -> Vec<String> {
        let mut ballots: Vec<(Ballot, u64)> = self.ballots.into_iter().collect();
        ballots.sort_unstable();
        let mut end = 0;
        let mut ends: Vec<u64> = ballots
            .iter()
            .map(|(_, count)| {
                end += count;
                end
            })
            .collect();
        let places = end.max(self.query.population);
        ends.push(places);
        // Unwrap safety: `TrieHh::new` checked 1 ≤ m ≤ n ≤ places, and `ends` is
        // non-decreasing up to `places`.
        let sampled = uniform_subset_counts(places, self.query.batch_size, &ends, &mut self.rng)
            .expect("m ≤ n and ranges covering the places");
        let mut votes = self.query.aggregator();
        for ((ballot, _), count) in ballots.into_iter().zip(sampled) {
            if let Ballot(Some(prefix)) = ballot {
                votes.absorb_many(prefix, count);
            }
        }
        votes.release()
    }
}

/// A release of reports alone, no counts (TrieHH's accepted prefixes): each cell carries a
/// count and an estimate of 0.
impl WireRelease for Vec<String> {
    fn into_cells(self) -> Vec<WireCell> {
        self.into_iter()
            .map(|key| WireCell {
                key,
                count: 0,
                estimate: 0.0,
            })
            .collect()
    }

    /// # Errors
    ///
    /// The report of the first cell that carries a count or an estimate.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        cells
            .into_iter()
            .map(|cell| {
                if cell.count == 0 && cell.estimate == 0.0 {
                    Ok(cell.key)
                } else {
                    Err(cell.key)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use rand::SeedableRng;

    use super::*;
    use crate::heavy_hitters::{TrieHh, TrieHhConfig};
    use crate::protocol::wire::wire_aggregator;
    use crate::task::Task;

    /// The first round of a TrieHH task over `n` clients with threshold 5 and batch `m`.
    fn first_round(n: u64, m: u64) -> TrieHhBatchRound {
        let mut task = TrieHh::new(TrieHhConfig {
            population: n,
            rounds: 3,
            segment: 1,
            threshold: 5,
            batch_size: m,
            beam: None,
        })
        .unwrap();
        TrieHhBatchRound::new(&task.next_query().unwrap())
    }

    #[test]
    fn no_vote_is_the_empty_string_and_never_a_prefix() {
        assert_eq!(Ballot(None).encode(), "");
        assert_eq!(Ballot::decode(String::new()), Some(Ballot(None)));
        assert_eq!(
            Ballot::decode("ab".to_owned()),
            Some(Ballot(Some("ab".to_owned())))
        );
        for round in 1..4 {
            let prefixes = PrefixRound {
                round,
                segment: 2,
                live_parents: Some(Arc::new(HashSet::new())),
            };
            assert!(!prefixes.admits(""));
        }
    }

    #[test]
    fn every_device_casts_a_ballot() {
        let round = first_round(400, 60);
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let ballot = round.query();
        assert_eq!(
            DeviceQuery::respond(ballot, "ab", &mut rng),
            Some(Ballot(Some("a".to_owned())))
        );
        let mut task_round_two = PrefixRound {
            round: 2,
            segment: 1,
            live_parents: Some(Arc::new(HashSet::from(["a".to_owned()]))),
        };
        let second = PrefixBallot(task_round_two.clone());
        assert_eq!(
            DeviceQuery::respond(&second, "bc", &mut rng),
            Some(Ballot(None))
        );
        assert_eq!(
            DeviceResponder::respond(&second, "bc", 8, &mut rng),
            Some(String::new())
        );
        // Longer than allowed: "no vote", never an abstention.
        task_round_two.segment = 4;
        let long = PrefixBallot(task_round_two);
        assert_eq!(
            DeviceResponder::respond(&long, "abcdefghij", 3, &mut rng),
            Some(String::new())
        );
        assert!(second.admits(&Ballot(None)));
        assert!(second.admits(&Ballot(Some("ab".to_owned()))));
        assert!(!second.admits(&Ballot(Some("bc".to_owned()))));
    }

    /// With every ballot a vote for one prefix and a batch of `m`, the prefix gets exactly `m`
    /// votes; with only a few voters among many places it cannot reach `θ`.
    #[test]
    fn the_batch_has_exactly_m_ballots() {
        let round = first_round(400, 60);
        let mut aggregator = wire_aggregator(&round, ChaCha20Rng::seed_from_u64(1));
        for _ in 0..400 {
            aggregator.absorb("a".to_owned()).unwrap();
        }
        assert_eq!(
            Vec::<String>::from_cells(aggregator.release()).unwrap(),
            ["a"]
        );
        // Four voters cannot give five votes, whatever the draw.
        for seed in 0..50 {
            let mut aggregator = wire_aggregator(&round, ChaCha20Rng::seed_from_u64(seed));
            for _ in 0..4 {
                aggregator.absorb("a".to_owned()).unwrap();
            }
            assert!(aggregator.release().is_empty());
        }
    }

    #[test]
    fn ballots_that_name_no_prefix_are_refused() {
        let round = first_round(400, 60);
        let mut aggregator = wire_aggregator(&round, ChaCha20Rng::seed_from_u64(0));
        for bad in ["ab", "$$", "a$b"] {
            assert!(aggregator.absorb(bad.to_owned()).is_err(), "{bad:?}");
        }
        for good in ["", "a", "$"] {
            aggregator.absorb(good.to_owned()).unwrap();
        }
    }

    /// Shards merge into the ballots of one aggregator that saw them all, in any order.
    #[test]
    fn merged_shards_and_arrival_order_do_not_change_the_release() {
        let round = first_round(400, 60);
        let ballots: Vec<Ballot> = (0..400)
            .map(|i| Ballot([None, Some("a".to_owned()), Some("b".to_owned())][i % 3].clone()))
            .collect();
        let rng = || ChaCha20Rng::seed_from_u64(7);
        let mut left = round.aggregator(rng());
        let mut right = round.aggregator(rng());
        for (i, ballot) in ballots.iter().enumerate() {
            if i % 2 == 0 { &mut left } else { &mut right }.absorb(ballot.clone());
        }
        left.merge(right);
        let mut reversed = round.aggregator(rng());
        for ballot in ballots.into_iter().rev() {
            reversed.absorb(ballot);
        }
        assert_eq!(left.release(), reversed.release());
    }

    #[test]
    fn a_release_carries_no_counts() {
        let cells = vec!["a".to_owned(), "b$".to_owned()].into_cells();
        assert!(cells.iter().all(|c| c.count == 0 && c.estimate == 0.0));
        assert_eq!(
            Vec::<String>::from_cells(cells).unwrap(),
            ["a".to_owned(), "b$".to_owned()]
        );
        let counted = vec![WireCell {
            key: "a".to_owned(),
            count: 7,
            estimate: 7.0,
        }];
        assert_eq!(Vec::<String>::from_cells(counted), Err("a".to_owned()));
    }
}
