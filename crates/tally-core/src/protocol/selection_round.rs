//! The round of a partition selection over the devices' reports: every device reports its item
//! (no coin, no sampling), or casts a prefix ballot, the aggregator counts each key's reports
//! and releases, by the selection's rule, the keys whose noisy count passes its threshold (with
//! their noisy counts) or whose coin of the optimal probability comes up heads (keys only).
//!
//! # Privacy
//!
//! The guarantee is the selection's ([`PartitionSelection::guarantee`]), in
//! [`TrustModel::Central`]: the aggregator sees every report and the exact count of every key,
//! and must be trusted (or stand for a secure aggregation); the guarantee holds against the
//! analyst and everyone who reads the release. Each device sends one report and a report counts
//! toward at most one key ([`SelectionReport::key`]: its item, its ballot's vote, or none for
//! "no vote"), so a device contributes to one key's count by at most 1: the selection must be
//! calibrated for one item per client. A ballot of "no vote" counts toward nothing, so the
//! counts are those of the votes alone. The noise and coins are drawn, through
//! [`PartitionSelection::release_named`] (what the offline release runs), from the aggregator's
//! own secret stream, which no device sees; [`RoundAggregator::release`] is the only way the
//! counts leave.

use std::marker::PhantomData;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use super::fixed_batch::Ballot;
use super::wire::{DeviceResponder, WireCell, WireRelease};
use super::{DeviceQuery, RoundAggregator, RoundProtocol, TrustModel};
use crate::histogram::{PartitionSelection, SelectedKey};

/// A report a partition-selection round counts.
pub trait SelectionReport {
    /// The one key the report counts toward, or `None` for a report that counts toward none.
    fn key(self) -> Option<String>;
}

impl SelectionReport for String {
    /// The item itself.
    fn key(self) -> Option<String> {
        Some(self)
    }
}

impl SelectionReport for Ballot {
    /// The prefix voted for, or `None` for "no vote".
    fn key(self) -> Option<String> {
        self.0
    }
}

/// The query of a partition-selection round: every device reports its item itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemReport;

impl DeviceQuery for ItemReport {
    type Input = str;
    type Report = String;

    fn trust(&self) -> TrustModel {
        TrustModel::Central
    }

    /// The item, always: there is no coin.
    fn respond<R: Rng + ?Sized>(&self, item: &str, _: &mut R) -> Option<String> {
        Some(item.to_owned())
    }

    /// Every item: the domain is unknown.
    fn admits(&self, _: &String) -> bool {
        true
    }
}

impl DeviceResponder for ItemReport {
    fn trust(&self) -> TrustModel {
        DeviceQuery::trust(self)
    }

    fn accepts(&self, _: &str) -> bool {
        true
    }

    /// The item, or nothing when it is longer than `max_bytes` (the server would refuse it).
    fn respond(&self, item: &str, max_bytes: usize, _: &mut dyn Rng) -> Option<String> {
        (item.len() <= max_bytes).then(|| item.to_owned())
    }

    fn flips_no_coin(&self) -> bool {
        true
    }
}

/// A partition-selection round as the server holds it: the query its devices answer (by
/// default [`ItemReport`]: every device reports its item) and the calibrated selection its
/// aggregator releases by.
#[derive(Clone, Debug)]
pub struct PartitionSelectionRound<Q = ItemReport> {
    query: Q,
    selection: PartitionSelection,
}

impl PartitionSelectionRound {
    /// The round in which every device reports its item and the aggregator releases by
    /// `selection`, which must be calibrated for one item per client.
    pub fn new(selection: PartitionSelection) -> Self {
        Self::over(ItemReport, selection)
    }
}

impl<Q> PartitionSelectionRound<Q> {
    /// The round in which devices answer `query` and the aggregator releases the keys of their
    /// reports by `selection`, which must be calibrated for one item per client.
    pub fn over(query: Q, selection: PartitionSelection) -> Self {
        Self { query, selection }
    }

    /// The calibrated selection.
    pub fn selection(&self) -> &PartitionSelection {
        &self.selection
    }
}

impl<Q: DeviceQuery<Report: SelectionReport>> RoundProtocol for PartitionSelectionRound<Q> {
    type Query = Q;
    type Release = SelectedItems;
    type Aggregator = SelectionCounts<Q::Report>;

    fn query(&self) -> &Q {
        &self.query
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> SelectionCounts<Q::Report> {
        SelectionCounts {
            counts: FxHashMap::default(),
            selection: self.selection.clone(),
            rng,
            report: PhantomData,
        }
    }
}

/// The aggregator of a partition-selection round: the exact count of every key reported, and
/// the aggregator's secret stream. Deliberately neither `Debug` nor serializable;
/// [`RoundAggregator::release`] is the only way out.
pub struct SelectionCounts<R = String> {
    counts: FxHashMap<String, u64>,
    selection: PartitionSelection,
    rng: ChaCha20Rng,
    report: PhantomData<fn(R)>,
}

impl<R: SelectionReport> SelectionCounts<R> {
    /// Counts `times` copies of the report toward its key, if it has one.
    fn count(&mut self, report: R, times: u64) {
        if let Some(key) = report.key() {
            *self.counts.entry(key).or_insert(0) += times;
        }
    }
}

impl<R: SelectionReport> RoundAggregator for SelectionCounts<R> {
    type Report = R;
    type Release = SelectedItems;

    /// Counts the report toward its key, if it has one.
    fn absorb(&mut self, report: R) {
        self.count(report, 1);
    }

    fn absorb_repeated(&mut self, report: R, times: u64)
    where
        R: Clone,
    {
        self.count(report, times);
    }

    fn merge(&mut self, other: Self) {
        for (key, count) in other.counts {
            *self.counts.entry(key).or_insert(0) += count;
        }
    }

    /// [`PartitionSelection::release_named`] over the counts, its draws from the aggregator's
    /// stream.
    fn release(mut self) -> SelectedItems {
        // Unwrap safety: a round cannot hold 2^32 distinct reports within its upload cap.
        let items = self
            .selection
            .release_named(self.counts, &mut self.rng)
            .expect("fewer than 2^32 distinct items");
        SelectedItems(items)
    }
}

/// The items a partition-selection round released, in the selection's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedItems(pub Vec<SelectedKey<String>>);

/// The count of a released cell that carries its key alone (the truncated geometric's): a
/// released noisy count is never negative, it passed a threshold of at least 0.
const KEY_ONLY: i64 = -1;

impl WireRelease for SelectedItems {
    /// One cell per released item, in order: its noisy count and the count as the estimate,
    /// or `KEY_ONLY` for both when it carries none.
    fn into_cells(self) -> Vec<WireCell> {
        self.0
            .into_iter()
            .map(|item| {
                let count = item.noisy_count.unwrap_or(KEY_ONLY);
                WireCell {
                    key: item.key,
                    count,
                    estimate: count as f64,
                }
            })
            .collect()
    }

    /// Refuses a cell whose estimate is not its count, and a negative count other than
    /// `KEY_ONLY`.
    fn from_cells(cells: Vec<WireCell>) -> Result<Self, String> {
        cells
            .into_iter()
            .map(|cell| {
                let spelt = cell.estimate.to_bits() == (cell.count as f64).to_bits()
                    && (cell.count >= 0 || cell.count == KEY_ONLY);
                if !spelt {
                    return Err(cell.key);
                }
                Ok(SelectedKey {
                    noisy_count: (cell.count != KEY_ONLY).then_some(cell.count),
                    key: cell.key,
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use tally_accounting::Neighbours;
    use tally_accounting::partition_selection::Method;

    use super::*;
    use crate::protocol::wire::wire_aggregator;

    fn round(method: Method) -> PartitionSelectionRound {
        let selection =
            PartitionSelection::calibrate(method, 1.0, 1e-6, 1, Neighbours::AddRemove).unwrap();
        PartitionSelectionRound::new(selection)
    }

    /// Shards merge into what one aggregator that saw every report releases, which is the
    /// selection's release of the counts with the same stream.
    #[test]
    fn merged_shards_release_what_the_selection_releases_from_the_counts() {
        for method in Method::ALL {
            let round = round(method);
            let rng = || ChaCha20Rng::seed_from_u64(3);
            let mut left = round.aggregator(rng());
            let mut right = round.aggregator(rng());
            for i in 0..400 {
                left.absorb(if i % 4 == 0 { "b" } else { "a" }.to_owned());
                right.absorb(format!("own-{i}"));
            }
            right.absorb("b".to_owned());
            left.merge(right);
            let release = left.release();
            let mut counts: Vec<(String, u64)> = vec![("a".into(), 300), ("b".into(), 101)];
            counts.extend((0..400).map(|i| (format!("own-{i}"), 1)));
            let expected = round.selection().release_named(counts, &mut rng()).unwrap();
            assert_eq!(release.0, expected, "{method}");
            let keys: Vec<&str> = release.0.iter().map(|item| item.key.as_str()).collect();
            assert_eq!(keys.len(), 2, "{method}: {keys:?}");
            assert!(
                keys.contains(&"a") && keys.contains(&"b"),
                "{method}: {keys:?}"
            );
            assert_eq!(
                release.0[0].noisy_count.is_some(),
                method != Method::TruncatedGeometric
            );
        }
    }

    /// Over prefix ballots the round counts the votes alone: a ballot of "no vote" counts
    /// toward no key, and the release is the selection's over the votes' counts.
    #[test]
    fn a_round_over_prefix_ballots_counts_the_votes_alone() {
        use std::collections::HashSet;
        use std::sync::Arc;

        use crate::heavy_hitters::PrefixRound;
        use crate::protocol::PrefixBallot;

        let live: HashSet<String> = ["a".to_owned()].into();
        let ballot = PrefixBallot(PrefixRound {
            round: 2,
            segment: 1,
            live_parents: Some(Arc::new(live)),
        });
        let selection = PartitionSelection::calibrate(
            Method::GaussianThreshold,
            1.0,
            1e-6,
            1,
            Neighbours::AddRemove,
        )
        .unwrap();
        let round = PartitionSelectionRound::over(ballot, selection.clone());
        let rng = || ChaCha20Rng::seed_from_u64(5);
        let mut aggregator = round.aggregator(rng());
        let mut device = ChaCha20Rng::seed_from_u64(0);
        let words = ["ab", "ab", "ac", "b", "bc", ""];
        for i in 0..1200 {
            let report =
                DeviceQuery::respond(round.query(), words[i % words.len()], &mut device).unwrap();
            assert!(round.query().admits(&report));
            aggregator.absorb(report);
        }
        let release = aggregator.release();
        let votes = vec![("ab".to_owned(), 400), ("ac".to_owned(), 200)];
        assert_eq!(
            release.0,
            selection.release_named(votes, &mut rng()).unwrap()
        );
        let mut keys: Vec<&str> = release.0.iter().map(|item| item.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["ab", "ac"]);
    }

    #[test]
    fn a_release_reads_back_only_in_its_one_spelling() {
        for method in Method::ALL {
            let mut aggregator = wire_aggregator(&round(method), ChaCha20Rng::seed_from_u64(1));
            for _ in 0..200 {
                aggregator.absorb("x".to_owned()).unwrap();
            }
            let cells = aggregator.release();
            assert_eq!(cells.len(), 1, "{method}");
            let read = SelectedItems::from_cells(cells.clone()).unwrap();
            assert_eq!(read.clone().into_cells(), cells);
        }
        let cell = |count: i64, estimate: f64| WireCell {
            key: "x".to_owned(),
            count,
            estimate,
        };
        assert_eq!(
            SelectedItems::from_cells(vec![cell(-1, -1.0), cell(7, 7.0)])
                .unwrap()
                .0
                .iter()
                .map(|item| item.noisy_count)
                .collect::<Vec<_>>(),
            [None, Some(7)]
        );
        for bad in [cell(7, 7.5), cell(-2, -2.0), cell(-1, 0.0)] {
            assert_eq!(SelectedItems::from_cells(vec![bad]), Err("x".to_owned()));
        }
    }

    #[test]
    fn every_device_reports_its_item_within_the_limit() {
        let responder: &dyn DeviceResponder = &ItemReport;
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        assert!((0..100).all(|_| responder.respond("pear", 4, &mut rng) == Some("pear".into())));
        assert_eq!(responder.respond("pear", 3, &mut rng), None);
    }
}
