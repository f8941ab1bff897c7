//! Calibrating multi-round tasks whose rounds are S&T histograms: one budget split, one
//! per-round mechanism, one composed total.

use tally_accounting::composition::{Composition, split_budget};
use tally_accounting::sample_threshold::{
    Analysis, Plan, PlanTarget, SampleThresholdParams, plan, tight_max_sampling_rate,
    tight_min_threshold, tight_rounds_epsilon,
};
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
/// With [`Composition::Tight`] there is no per-round split: the parameters are solved so
/// that the rounds' own loss distribution, composed `rounds` times, meets `(ε, δ)`
/// (`plan_tight_rounds`).
///
/// # Privacy
///
/// The per-round guarantee is the accountant's for the chosen `analysis` and `neighbours`,
/// rounded in the safe direction; the total is the composition of `rounds` copies of it (or,
/// for `Tight`, of the rounds' dominating loss pair), so it holds for adaptive rounds too
/// (see `docs/privacy/composition.md`).
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
    if composition == Composition::Tight {
        return plan_tight_rounds(epsilon, delta, rounds, target, analysis, neighbours);
    }
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

/// [`plan_rounds`] for [`Composition::Tight`]: a fixed threshold gets the largest rate, and a
/// fixed rate the smallest threshold, at which the `rounds`-fold tight composition meets
/// `(ε, δ)`; with neither, the threshold of the basic plan ([`PlanTarget::MinReleasedCount`]
/// at `(ε/L, δ/L)`) gets the largest rate, so the smallest releasable count `τ/p_s` only
/// falls. The per-round guarantee shown is one round alone at the total `δ`.
///
/// # Errors
///
/// As [`plan_rounds`]; [`Error::InvalidParameter`] for replace-one neighbours (the tight
/// accountant's loss pair is add/remove) or [`PlanTarget::Alpha`] (its cap is per round).
fn plan_tight_rounds(
    epsilon: f64,
    delta: f64,
    rounds: usize,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<RoundPlan, Error> {
    check_tight_neighbours(neighbours)?;
    let levels = rounds as u64;
    let params = match target {
        PlanTarget::Threshold(threshold) => SampleThresholdParams::new(
            tight_max_sampling_rate(epsilon, delta, levels, threshold)?,
            threshold,
        )?,
        PlanTarget::SamplingRate(rate) => {
            SampleThresholdParams::new(rate, tight_min_threshold(epsilon, delta, levels, rate)?)?
        }
        PlanTarget::MinReleasedCount => {
            let (round_epsilon, round_delta) =
                split_budget(epsilon, delta, levels, Composition::Basic)?;
            let basic = plan(round_epsilon, round_delta, target, analysis, neighbours)?;
            let threshold = basic.params.threshold();
            SampleThresholdParams::new(
                tight_max_sampling_rate(epsilon, delta, levels, threshold)?,
                threshold,
            )?
        }
        PlanTarget::Alpha(alpha) => {
            return Err(Error::invalid(
                "alpha",
                alpha,
                "a sampling rate or threshold with tight composition (α is per round)",
            ));
        }
    };
    // One round alone: its tight ε at the total δ (at δ/L it may not exist: L rounds' infinite
    // loss mass 1 − (1 − p_s^τ)^L is below L·p_s^τ), at least ln(1/(1 − p_s)) as the analyses
    // need.
    let alone = tight_rounds_epsilon(&params, 1, delta)?;
    let removal = -(-params.sampling_rate()).ln_1p();
    let round_epsilon = alone.max(removal * (1.0 + 1e-12));
    let per_round = SampleThreshold::new(params, round_epsilon, analysis, neighbours)?;
    let achieved_delta = per_round.guarantee().delta;
    let total = compose_sample_threshold_rounds(&per_round, rounds, Composition::Tight, delta)?;
    Ok(RoundPlan {
        plan: Plan {
            epsilon: round_epsilon,
            delta: achieved_delta,
            achieved_delta,
            params,
            analysis,
            neighbours,
            target,
        },
        per_round,
        rounds,
        composition: Composition::Tight,
        total_delta: delta,
        total,
    })
}

/// The tight accountant's loss pair is the add/remove one.
fn check_tight_neighbours(neighbours: Neighbours) -> Result<(), Error> {
    if neighbours == Neighbours::AddRemove {
        return Ok(());
    }
    Err(Error::invalid(
        "composition",
        "tight",
        "add-remove neighbours (use pld or basic composition for replace-one)",
    ))
}

/// The guarantee of `rounds` runs of the S&T mechanism `per_round` over the same clients by
/// `composition`, within the total `δ` budget `total_delta`: the tight accountant on its
/// parameters for [`Composition::Tight`] (add/remove), [`compose_rounds`] of its guarantee
/// otherwise.
///
/// # Privacy
///
/// Holds for adaptive rounds (each round's query chosen from earlier releases): see
/// `docs/privacy/composition.md`.
///
/// # Errors
///
/// Whatever the accountant rejects; for `Tight`, replace-one neighbours or no round.
pub fn compose_sample_threshold_rounds(
    per_round: &SampleThreshold,
    rounds: usize,
    composition: Composition,
    total_delta: f64,
) -> Result<Guarantee, Error> {
    if composition != Composition::Tight {
        return Ok(compose_rounds(
            per_round.guarantee(),
            rounds,
            composition,
            total_delta,
        )?);
    }
    let neighbours = per_round.guarantee().neighbours;
    check_tight_neighbours(neighbours)?;
    Ok(Guarantee {
        epsilon: tight_rounds_epsilon(per_round.params(), rounds as u64, total_delta)?,
        delta: total_delta,
        neighbours,
        model: per_round.guarantee().model,
        analysis: format!("tight composition of the S&T loss over {rounds} rounds"),
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

    #[test]
    fn tight_rounds_sample_faster_at_the_basic_threshold() {
        let run = |composition, neighbours| {
            plan_rounds(
                1.0,
                1e-8,
                10,
                composition,
                PlanTarget::MinReleasedCount,
                Analysis::Tight,
                neighbours,
            )
        };
        let basic = run(Composition::Basic, Neighbours::AddRemove).unwrap();
        let tight = run(Composition::Tight, Neighbours::AddRemove).unwrap();
        let (b, t) = (basic.per_round.params(), tight.per_round.params());
        // The same threshold, at a rate several times higher, within the same total budget.
        assert_eq!(b.threshold(), t.threshold());
        assert!(
            t.sampling_rate() > 3.0 * b.sampling_rate(),
            "{b:?} vs {t:?}"
        );
        assert!(tight.total.epsilon <= 1.0 && tight.total.delta <= 1e-8);
        assert_eq!(
            compose_sample_threshold_rounds(&tight.per_round, 10, Composition::Tight, 1e-8)
                .unwrap(),
            tight.total
        );
        // Its loss pair is add/remove: replace-one and the per-round α are refused.
        assert!(run(Composition::Tight, Neighbours::ReplaceOne).is_err());
        let per_round =
            SampleThreshold::new(*t, 1.0, Analysis::Tight, Neighbours::ReplaceOne).unwrap();
        assert!(compose_sample_threshold_rounds(&per_round, 10, Composition::Tight, 1e-8).is_err());
        assert!(
            plan_rounds(
                1.0,
                1e-8,
                10,
                Composition::Tight,
                PlanTarget::Alpha(0.5),
                Analysis::Tight,
                Neighbours::AddRemove,
            )
            .is_err()
        );
    }
}
