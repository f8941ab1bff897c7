//! The round of a partition selection over the devices' items: every device reports its item
//! (no coin, no sampling), the aggregator counts each item's reports and releases, by the
//! selection's rule, the items whose noisy count passes its threshold (with their noisy counts)
//! or whose coin of the optimal probability comes up heads (keys only).
//!
//! # Privacy
//!
//! The guarantee is the selection's ([`PartitionSelection::guarantee`]), in
//! [`TrustModel::Central`]: the aggregator sees every report and the exact count of every item,
//! and must be trusted (or stand for a secure aggregation); the guarantee holds against the
//! analyst and everyone who reads the release. Each device holds one item and reports it at
//! most once, so it contributes to one item's count by at most 1: the selection must be
//! calibrated for one item per client. The noise and coins are drawn, through
//! [`PartitionSelection::release_named`] (what the offline release runs), from the aggregator's
//! own secret stream, which no device sees; [`RoundAggregator::release`] is the only way the
//! counts leave.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;

use super::wire::{DeviceResponder, WireCell, WireRelease};
use super::{DeviceQuery, RoundAggregator, RoundProtocol, TrustModel};
use crate::histogram::{PartitionSelection, SelectedKey};

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
}

/// A partition-selection round as the server holds it: its query and the calibrated selection
/// its aggregator releases by.
#[derive(Clone, Debug)]
pub struct PartitionSelectionRound {
    selection: PartitionSelection,
}

impl PartitionSelectionRound {
    /// The round releasing by `selection`, which must be calibrated for one item per client.
    pub fn new(selection: PartitionSelection) -> Self {
        Self { selection }
    }

    /// The calibrated selection.
    pub fn selection(&self) -> &PartitionSelection {
        &self.selection
    }
}

impl RoundProtocol for PartitionSelectionRound {
    type Query = ItemReport;
    type Release = SelectedItems;
    type Aggregator = SelectionCounts;

    fn query(&self) -> &ItemReport {
        &ItemReport
    }

    fn aggregator(&self, rng: ChaCha20Rng) -> SelectionCounts {
        SelectionCounts {
            counts: FxHashMap::default(),
            selection: self.selection.clone(),
            rng,
        }
    }
}

/// The aggregator of a partition-selection round: the exact count of every item reported, and
/// the aggregator's secret stream. Deliberately neither `Debug` nor serializable;
/// [`RoundAggregator::release`] is the only way out.
pub struct SelectionCounts {
    counts: FxHashMap<String, u64>,
    selection: PartitionSelection,
    rng: ChaCha20Rng,
}

impl RoundAggregator for SelectionCounts {
    type Report = String;
    type Release = SelectedItems;

    fn absorb(&mut self, item: String) {
        *self.counts.entry(item).or_insert(0) += 1;
    }

    fn merge(&mut self, other: Self) {
        for (item, count) in other.counts {
            *self.counts.entry(item).or_insert(0) += count;
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
    /// or [`KEY_ONLY`] for both when it carries none.
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
    /// [`KEY_ONLY`].
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
