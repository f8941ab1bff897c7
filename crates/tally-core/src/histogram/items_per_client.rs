//! Sample-and-threshold for clients of up to `k` distinct items, one coin per item.
//!
//! # Privacy
//!
//! [`tally_accounting::sample_threshold::items_guarantee`]: the `k` (or `2k`) counts a client
//! changes are independent S&T cells, composed by the tight accountant. The coins must be one
//! per (client, item): [`SampleThresholdQuery::respond_items`] unkeyed,
//! [`crate::sampling::KeyedCoin::flip_item`] keyed. One coin for all of a client's items is not
//! private (docs/privacy/sample-threshold.md, "Several items per client").

use rand::Rng;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::{changed_counts, check_max_items};
use tally_accounting::sample_threshold::{
    Analysis, PlanTarget, SampleThresholdParams, items_guarantee,
};

use super::{SampleThreshold, SampleThresholdQuery, plan_rounds};
use crate::Error;
use crate::sampling::keyed_rate;

impl SampleThreshold {
    /// Calibrates the mechanism for `(ε, δ)` when each client contributes at most `max_items`
    /// distinct items with one coin each: for one item, [`SampleThreshold::calibrate`] with
    /// the tight analysis; for more, the parameters at which the `c`-fold tight composition
    /// meets the target (`c` the counts one client changes, [`plan_rounds`] with
    /// [`Composition::Tight`]) and the guarantee of
    /// [`items_guarantee`](tally_accounting::sample_threshold::items_guarantee).
    ///
    /// # Errors
    ///
    /// As [`plan_rounds`] and the accountant.
    pub fn calibrate_items(
        epsilon: f64,
        delta: f64,
        max_items: u32,
        target: PlanTarget,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        let k = check_max_items(max_items)?;
        if k == 1 {
            return Self::calibrate(epsilon, delta, target, Analysis::Tight, neighbours);
        }
        // Each changed count is dominated by the symmetric loss pair in either direction, so
        // the c counts compose as c add/remove rounds.
        let counts = changed_counts(k, neighbours) as usize;
        let plan = plan_rounds(
            epsilon,
            delta,
            counts,
            Composition::Tight,
            target,
            Analysis::Tight,
            Neighbours::AddRemove,
        )?;
        Self::with_items(plan.plan.params, max_items, delta, neighbours)
    }

    /// [`SampleThreshold::calibrate_items`] with the rate rounded down to what a keyed coin
    /// uses and the guarantee computed for the rounded rate.
    ///
    /// # Errors
    ///
    /// As [`SampleThreshold::calibrate_items`].
    pub fn calibrate_items_keyed(
        epsilon: f64,
        delta: f64,
        max_items: u32,
        target: PlanTarget,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        if max_items == 1 {
            return Self::calibrate_keyed(epsilon, delta, target, Analysis::Tight, neighbours);
        }
        let planned = Self::calibrate_items(epsilon, delta, max_items, target, neighbours)?;
        let params = SampleThresholdParams::new(
            keyed_rate(planned.params().sampling_rate())?,
            planned.params().threshold(),
        )?;
        Self::with_items(params, max_items, delta, neighbours)
    }

    /// The mechanism with `params` for clients of at most `max_items ≥ 2` items.
    fn with_items(
        params: SampleThresholdParams,
        max_items: u32,
        delta: f64,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        Ok(Self {
            params,
            guarantee: items_guarantee(&params, max_items, delta, neighbours)?,
        })
    }
}

impl SampleThresholdQuery {
    /// The client side for a client of several items: each item sent with probability `p_s`
    /// by its own exact coin, independently of the others.
    pub fn respond_items<T: Clone, R: Rng + ?Sized>(&self, items: &[T], rng: &mut R) -> Vec<T> {
        items
            .iter()
            .filter_map(|item| self.respond(item.clone(), rng))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_items_need_a_lower_rate_and_compose_within_the_budget() {
        let target = PlanTarget::Threshold(20);
        let one =
            SampleThreshold::calibrate_items(1.0, 1e-8, 1, target, Neighbours::AddRemove).unwrap();
        let four =
            SampleThreshold::calibrate_items(1.0, 1e-8, 4, target, Neighbours::AddRemove).unwrap();
        assert!(four.params().sampling_rate() < one.params().sampling_rate());
        let g = four.guarantee();
        assert!(g.epsilon <= 1.0 && g.delta <= 1e-8, "{g:?}");
        assert!(g.analysis.contains("composition bound"), "{}", g.analysis);
        let replace =
            SampleThreshold::calibrate_items(1.0, 1e-8, 4, target, Neighbours::ReplaceOne).unwrap();
        assert!(replace.params().sampling_rate() < four.params().sampling_rate());
        assert_eq!(replace.guarantee().neighbours, Neighbours::ReplaceOne);
        let keyed =
            SampleThreshold::calibrate_items_keyed(1.0, 1e-8, 4, target, Neighbours::AddRemove)
                .unwrap();
        assert!(keyed.guarantee().epsilon <= 1.0);
    }
}
