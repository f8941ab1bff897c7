//! Several binary-search quantiles as one [`Task`]: the searches run one after the other, each
//! its rounds, within one privacy target.

use std::collections::VecDeque;

use tally_accounting::Guarantee;

use crate::Error;
use crate::histogram::{RoundPlan, SampleThresholdRelease};
use crate::quantiles::{BinarySearchConfig, BinarySearchQuantile, QuantileSearch, ThresholdQuery};
use crate::task::Task;

/// One [`BinarySearchQuantile`] per quantile, run in the order asked.
///
/// # Privacy
///
/// The `quantiles.len() · rounds` rounds of the plan compose as the plan says
/// ([`BinarySearchConfig::guarantee_of`]); each round is one S&T histogram of two buckets.
#[derive(Clone, Debug)]
pub struct QuantileSearches {
    waiting: VecDeque<BinarySearchQuantile>,
    running: Option<BinarySearchQuantile>,
    finished: Vec<QuantileSearch>,
    guarantee: Guarantee,
}

impl QuantileSearches {
    /// The searches of `quantiles`, `rounds` rounds each, calibrated by `plan` (which splits
    /// the target over `quantiles.len() · rounds` rounds).
    ///
    /// # Errors
    ///
    /// If a search cannot be built (a quantile outside `[0, 1]`, a round count out of range)
    /// or the composition cannot be computed.
    pub fn new(quantiles: &[f64], rounds: usize, plan: &RoundPlan) -> Result<Self, Error> {
        let config = |quantile| BinarySearchConfig::planned(quantile, rounds, plan);
        let waiting = quantiles
            .iter()
            .map(|&q| BinarySearchQuantile::new(config(q)))
            .collect::<Result<VecDeque<_>, _>>()?;
        let guarantee = config(0.5).guarantee_of(quantiles.len())?;
        Ok(Self {
            waiting,
            running: None,
            finished: Vec::new(),
            guarantee,
        })
    }
}

impl Task for QuantileSearches {
    type Query = ThresholdQuery;
    type Release = SampleThresholdRelease;
    /// The finished searches, in the order asked.
    type Output = Vec<QuantileSearch>;

    fn next_query(&mut self) -> Option<ThresholdQuery> {
        loop {
            if let Some(search) = &mut self.running {
                if let Some(query) = search.next_query() {
                    return Some(query);
                }
                if let Some(done) = self.running.take() {
                    self.finished.push(done.finish());
                }
            }
            self.running = Some(self.waiting.pop_front()?);
        }
    }

    fn observe(&mut self, release: SampleThresholdRelease) {
        if let Some(search) = &mut self.running {
            search.observe(release);
        }
    }

    fn finish(self) -> Vec<QuantileSearch> {
        self.finished
    }

    fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }
}
