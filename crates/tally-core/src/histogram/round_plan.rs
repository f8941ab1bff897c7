//! Calibrating multi-round tasks whose rounds are S&T histograms: one budget split, one
//! per-round mechanism, one composed total.

use tally_accounting::composition::{Composition, split_budget};
use tally_accounting::sample_threshold::{Analysis, Plan, PlanTarget, plan};
use tally_accounting::{Guarantee, Neighbours, compose_rounds};

use super::SampleThreshold;
use crate::Error;

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
