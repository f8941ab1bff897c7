//! The secure-aggregator boundary: the only place raw reports exist, in memory, for the life
//! of one round.
//!
//! Reports are interned to ids and counted by tally-core's sample-and-threshold aggregator;
//! the only way out is [`RoundAggregator::release`], which applies the mechanism's release
//! rule (the threshold). Nothing here implements `Debug` or serialization, and nothing here is
//! ever written to disk.

use rustc_hash::FxHashMap;
use tally_core::histogram::{SampleThreshold, SampleThresholdAggregator};

/// One released cell: the item (or prefix), its sampled count and its estimate.
pub(crate) type Cell = (String, u64, f64);

/// The aggregator of one round.
pub(crate) struct RoundAggregator {
    ids: FxHashMap<String, u32>,
    names: Vec<String>,
    counts: SampleThresholdAggregator,
}

impl RoundAggregator {
    /// An empty aggregator releasing through `mechanism`.
    pub(crate) fn new(mechanism: &SampleThreshold) -> Self {
        Self {
            ids: FxHashMap::default(),
            names: Vec::new(),
            counts: mechanism.open_domain_aggregator(),
        }
    }

    /// Counts one validated report.
    pub(crate) fn absorb(&mut self, report: String) {
        let id = match self.ids.get(&report) {
            Some(&id) => id,
            None => {
                // Unwrap safety: a round cannot hold 2^32 distinct reports within its upload
                // cap.
                let id = u32::try_from(self.names.len()).expect("fewer than 2^32 reports");
                self.names.push(report.clone());
                self.ids.insert(report, id);
                id
            }
        };
        self.counts.absorb(id);
    }

    /// Releases the cells whose count reaches the threshold, by decreasing count: the
    /// mechanism's release rule, the only way counts leave.
    pub(crate) fn release(self) -> Vec<Cell> {
        let names = self.names;
        self.counts
            .release()
            .items
            .into_iter()
            .map(|cell| (names[cell.item as usize].clone(), cell.count, cell.estimate))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};

    use super::*;

    #[test]
    fn releases_only_what_reaches_the_threshold() {
        let params = SampleThresholdParams::new(0.5, 3).unwrap();
        let mechanism =
            SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let mut aggregator = RoundAggregator::new(&mechanism);
        for report in ["a", "b", "a", "c", "a", "b", "b", "b"] {
            aggregator.absorb(report.to_owned());
        }
        assert_eq!(
            aggregator.release(),
            [("b".to_owned(), 4, 8.0), ("a".to_owned(), 3, 6.0)]
        );
    }
}
