//! Quantiles and range counts of values in `[0, 1]` from sample-and-threshold histograms
//! (Bharadwaj and Cormode, AISTATS 2022, §4.2; ALGORITHMS.md §4).
//!
//! Two tasks, both driven through [`Task`](crate::task::Task):
//!
//! * [`HierarchicalHistogram`]: `L` S&T histograms over the buckets of a `β`-ary tree on
//!   `[0, 1]`; its [`HierarchicalRelease`] answers any number of range counts, ranks and
//!   quantiles, optionally after a consistency post-processing.
//! * [`BinarySearchQuantile`]: one quantile by an interactive binary search, `h` S&T rounds of
//!   two buckets each.
//!
//! [`plan_rounds`] splits a total `(ε, δ)` over the rounds of either and calibrates the
//! per-round mechanism.
//!
//! # Privacy
//!
//! Every round (a level, or a search step) is an S&T histogram with its own fresh Poisson
//! sample, `(ε', δ')`-DP for add/remove neighbours (one client present or absent; the S&T
//! theorem's relation) or, if asked, replace-one neighbours through the per-cell analysis of
//! [`SampleThreshold`]. A client takes part in every round, so the total guarantee is the
//! composition of all rounds, computed by [`tally_accounting::composition`]:
//! `L` rounds for a hierarchical histogram however many quantiles or ranges are read from it,
//! `k·h` rounds for `k` quantiles by binary search. Everything computed from the releases
//! (estimates, ranks, quantiles, consistency) is post-processing.

mod binary_search;
mod hierarchical;
mod range;

pub use binary_search::{
    BinarySearchConfig, BinarySearchQuantile, MAX_SEARCH_ROUNDS, Normalisation, QuantileSearch,
    ThresholdQuery,
};
pub use hierarchical::{
    ConsistencyWeights, HierarchicalConfig, HierarchicalHistogram, HierarchicalRelease, LevelQuery,
};
pub use range::{Node, TreeShape};

use tally_accounting::composition::{Composition, split_budget};
use tally_accounting::sample_threshold::{Analysis, Plan, PlanTarget, plan};
use tally_accounting::{Guarantee, Neighbours, compose_rounds};

use crate::Error;
use crate::histogram::SampleThreshold;

/// An estimated quantile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantileEstimate {
    /// The target quantile `q ∈ [0, 1]`.
    pub quantile: f64,
    /// The estimated value in `[0, 1]`.
    pub value: f64,
}

/// The calibrated mechanism of every round of a multi-round task and the total guarantee.
#[derive(Clone, Debug)]
pub struct RoundPlan {
    /// The per-round calibration (its `epsilon` and `delta` are the per-round budget).
    pub plan: Plan,
    /// The mechanism every round runs.
    pub per_round: SampleThreshold,
    /// The number of rounds.
    pub rounds: usize,
    /// How the rounds compose.
    pub composition: Composition,
    /// The total `δ` budget (the advanced and optimal rules spend what the rounds leave of
    /// it).
    pub total_delta: f64,
    /// The guarantee of all rounds together, at most the requested `(ε, δ)`.
    pub total: Guarantee,
}

/// Splits the total budget `(epsilon, delta)` over `rounds` rounds with
/// [`split_budget`] (`ε/L, δ/L` for basic composition; for advanced, half of `δ` as the
/// slack and the largest `ε'` that composes within `ε`), calibrates each round's S&T
/// parameters for `(ε', δ')` with `target` ([`PlanTarget::MinReleasedCount`] unless a
/// per-round sampling rate or threshold is fixed), and composes the achieved per-round
/// guarantee back with [`compose_rounds`].
///
/// # Privacy
///
/// The per-round guarantee is the accountant's for the chosen `analysis` and `neighbours`,
/// rounded in the safe direction; the total is the composition of `rounds` copies of it, so
/// it holds for adaptive rounds too.
///
/// # Errors
///
/// Whatever the accountant rejects: an invalid budget or round count, a fixed sampling rate
/// above the per-round cap `1 − e^{−ε'}`, or no parameters meeting the per-round target.
pub fn plan_rounds(
    epsilon: f64,
    delta: f64,
    rounds: usize,
    composition: Composition,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<RoundPlan, Error> {
    let (round_epsilon, round_delta) = split_budget(epsilon, delta, rounds as u64, composition)?;
    let plan = plan(round_epsilon, round_delta, target, analysis, neighbours)?;
    let per_round = SampleThreshold::new(plan.params, round_epsilon, analysis, neighbours)?;
    let total = compose_rounds(per_round.guarantee(), rounds, composition, delta)?;
    Ok(RoundPlan {
        plan,
        per_round,
        rounds,
        composition,
        total_delta: delta,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_plans_stay_within_the_total_budget() {
        for composition in Composition::ALL {
            let plan = plan_rounds(
                1.0,
                1e-8,
                8,
                composition,
                PlanTarget::MinReleasedCount,
                Analysis::Tight,
                Neighbours::AddRemove,
            )
            .unwrap();
            assert!(plan.total.epsilon <= 1.0, "{composition}: {:?}", plan.total);
            assert!(plan.total.delta <= 1e-8, "{composition}: {:?}", plan.total);
            assert_eq!(plan.rounds, 8);
            let per_round = plan.per_round.guarantee();
            assert!(per_round.delta <= plan.plan.delta);
            assert!(
                plan.per_round.params().sampling_rate() <= -(-per_round.epsilon).exp_m1(),
                "{composition}"
            );
        }
        let basic = plan_rounds(
            1.0,
            1e-8,
            8,
            Composition::Basic,
            PlanTarget::SamplingRate(0.05),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        assert_eq!(basic.plan.epsilon.to_bits(), 0.125_f64.to_bits());
        assert_eq!(
            basic.per_round.params().sampling_rate().to_bits(),
            0.05_f64.to_bits()
        );
        // A per-round rate above 1 − e^{−1/8} ≈ 0.1175 is rejected.
        assert!(
            plan_rounds(
                1.0,
                1e-8,
                8,
                Composition::Basic,
                PlanTarget::SamplingRate(0.2),
                Analysis::Tight,
                Neighbours::AddRemove,
            )
            .is_err()
        );
    }
}
