//! The aggregator every support-counting frequency oracle shares: per-item support counts and
//! the number of reports, debiased with the randomizer's [`SupportProbabilities`].
//!
//! What differs between oracles is only which items a report supports and which reports are
//! well-formed: that is a [`SupportRule`]; [`SupportAggregator`] does the rest once.

use super::SupportProbabilities;
use crate::Error;
use crate::protocol::{Estimates, RoundAggregator};

/// Which items of the domain a report of one randomizer supports.
pub trait SupportRule: PartialEq {
    /// A device's report.
    type Report;

    /// The items of `0..domain` that `report` supports, or why it is not a report of the
    /// randomizer.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for a malformed report.
    fn supported(
        &self,
        report: &Self::Report,
        domain: u32,
    ) -> Result<impl Iterator<Item = u32>, Error>;
}

/// Counts, for every item, the reports that support it, and the reports absorbed; mergeable.
/// Its raw counts cannot be read (no `Debug`): only [`estimate`](Self::estimate) debiases them.
pub struct SupportAggregator<S> {
    counts: Vec<u64>,
    reports: u64,
    probabilities: SupportProbabilities,
    rule: S,
}

impl<S: SupportRule> SupportAggregator<S> {
    /// Empty counts over `domain` items.
    pub(crate) fn new(domain: u32, probabilities: SupportProbabilities, rule: S) -> Self {
        Self::from_counts(vec![0; domain as usize], 0, probabilities, rule)
    }

    /// Counts already tallied: `counts[x]` reports out of `reports` support item `x`.
    pub(crate) fn from_counts(
        counts: Vec<u64>,
        reports: u64,
        probabilities: SupportProbabilities,
        rule: S,
    ) -> Self {
        Self {
            counts,
            reports,
            probabilities,
            rule,
        }
    }

    /// Absorbs one report.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if it is not a report of the randomizer (it is then
    /// ignored).
    pub fn absorb(&mut self, report: &S::Report) -> Result<(), Error> {
        // Unwrap safety: the counts were made with one entry per item of a u32 domain.
        let domain = u32::try_from(self.counts.len()).expect("a u32 domain");
        for item in self.rule.supported(report, domain)? {
            self.counts[item as usize] += 1;
        }
        self.reports += 1;
        Ok(())
    }

    /// Adds another shard's reports to this one.
    ///
    /// # Panics
    ///
    /// If the two aggregators belong to different randomizers.
    pub fn merge(&mut self, other: Self) {
        assert!(
            self.counts.len() == other.counts.len()
                && self.probabilities == other.probabilities
                && self.rule == other.rule,
            "merging aggregators of different randomizers"
        );
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.reports += other.reports;
    }

    /// The number of reports absorbed.
    pub fn reports(&self) -> u64 {
        self.reports
    }

    /// The unbiased estimate of the number of clients holding each item.
    pub fn estimate(&self) -> Vec<f64> {
        self.counts
            .iter()
            .map(|&c| self.probabilities.debias(c as f64, self.reports))
            .collect()
    }
}

impl<S: SupportRule> RoundAggregator for SupportAggregator<S> {
    type Report = S::Report;
    type Release = Estimates;

    /// # Panics
    ///
    /// If `report` is not a report of the randomizer (the round did not admit it).
    fn absorb(&mut self, report: S::Report) {
        SupportAggregator::absorb(self, &report).expect("an admitted report is well-formed");
    }

    fn merge(&mut self, other: Self) {
        SupportAggregator::merge(self, other);
    }

    /// The unbiased estimate of every element's count.
    fn release(self) -> Estimates {
        Estimates(self.estimate())
    }
}
