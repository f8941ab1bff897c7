//! The local `ε₀` of OptPrefixTree (ALGORITHMS.md §6.6): the largest per-iteration local
//! privacy parameter such that `T` iterations, each summing (or shuffling) the reports of about
//! `n` users, meet an aggregate `(ε, δ)` target.
//!
//! The solve has two one-dimensional steps, both monotone:
//!
//! 1. [`split_budget`] finds the largest per-iteration `(ε', δ')` whose `T`-fold composition by
//!    the chosen [`Composition`] stays within `(ε, δ)` (`δ' = δ/T` for `basic`, `δ' = δ/(2T)`
//!    with the other half left to the composition's tail for the others).
//! 2. [`max_local_epsilon`] finds the largest `ε₀` such that `n` summed `ε₀`-LDP reports are
//!    `(ε', δ')`-DP by the amplification bound (FMT23 by default, §8).
//!
//! Since the composed `ε` increases with `ε'` and the amplified `ε'` increases with `ε₀`, this is
//! the same `ε₀` as the bisection of §6.6 on `f(ε₀) = compose(shuffle_ε(n, ε₀, δ'), T)`, found
//! without nesting one root-finder inside another. The result is then checked forward with
//! [`shuffle_epsilon`] and [`compose_rounds`] ([`aggregate_guarantee`]), and that forward
//! guarantee is the one reported.
//!
//! The paper combines advanced composition with Rényi-DP accounting; the exact combination is
//! unknown (§6.1), so the composition is a parameter and is always reported.
//!
//! # Trust model
//!
//! The aggregate guarantee is stated with [`TrustModel::Shuffle`]: the server sees only the sum
//! of the reports (secure aggregation), which is a post-processing of the shuffled multiset of
//! one-hot reports, so every shuffle-model bound applies to it. Neighbours are
//! [`Neighbours::ReplaceOne`] at *device* level (all of one user's data replaced). Using the
//! expected number of users per iteration is exact when every user reports in every iteration
//! (users with nothing to report send `⊥`); with sampled participation, pass a lower
//! confidence bound on the count, since the bound improves as `n` grows.

use crate::composition::{Composition, split_budget};
use crate::shuffle::{ShuffleBound, max_local_epsilon, shuffle_epsilon};
use crate::{Error, Guarantee, Neighbours, TrustModel, compose_rounds};

/// A solved local `ε₀` with the guarantees it gives.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalEpsilonPlan {
    /// The per-iteration local privacy parameter `ε₀` (rounded down).
    pub local_epsilon: f64,
    /// The number of iterations `T` the budget covers (all runs together).
    pub iterations: usize,
    /// The number of reports per iteration the amplification bound assumes.
    pub users: u64,
    /// How the iterations compose.
    pub composition: Composition,
    /// The amplification-by-shuffling bound.
    pub bound: ShuffleBound,
    /// The guarantee of one iteration after aggregation.
    pub per_iteration: Guarantee,
    /// The guarantee of all `T` iterations after aggregation (at most the target).
    pub aggregate: Guarantee,
    /// The local guarantee of one iteration: `(ε₀, 0)`, replace-one, local model.
    pub local: Guarantee,
}

/// The largest local `ε₀` such that `iterations` aggregated rounds of `users` reports each are
/// `(epsilon, delta)`-DP by `composition` and `bound` (ALGORITHMS.md §6.6).
///
/// # Errors
///
/// [`Error::InvalidParameter`] for a bad budget, `iterations = 0` or `users < 2`;
/// [`Error::Infeasible`] if the forward check fails (it should not).
pub fn solve_local_epsilon(
    epsilon: f64,
    delta: f64,
    iterations: usize,
    users: u64,
    composition: Composition,
    bound: ShuffleBound,
) -> Result<LocalEpsilonPlan, Error> {
    let (round_epsilon, round_delta) =
        split_budget(epsilon, delta, iterations as u64, composition)?;
    let mut local_epsilon = max_local_epsilon(round_epsilon, users, round_delta, bound)?;
    // The forward ε of the shuffle accountant is rounded up by its solver's tolerance (about
    // 1e-9 relative), so step ε₀ down until the forward check passes.
    for _ in 0..FORWARD_STEPS {
        let plan =
            aggregate_guarantee(local_epsilon, delta, iterations, users, composition, bound)?;
        if plan.aggregate.epsilon <= epsilon && plan.aggregate.delta <= delta {
            return Ok(plan);
        }
        local_epsilon *= 1.0 - FORWARD_STEP;
    }
    Err(Error::infeasible(
        "local epsilon",
        format!("no ε₀ near {local_epsilon} composes to within ({epsilon}, {delta})"),
    ))
}

/// The compositions [`solve_local_epsilon_best`] tries by default (the PLD accountant is left
/// out: it agrees with `Optimal` up to rounding and costs more).
pub const DEFAULT_COMPOSITIONS: [Composition; 3] = [
    Composition::Basic,
    Composition::Advanced,
    Composition::Optimal,
];

/// How many times [`solve_local_epsilon`] steps `ε₀` down.
const FORWARD_STEPS: usize = 32;
/// The relative size of each step.
const FORWARD_STEP: f64 = 1e-8;

/// [`solve_local_epsilon`] for each of `compositions`, keeping the largest `ε₀` (the first on
/// ties). Choosing among a fixed list is data-independent, so the result holds as stated.
///
/// # Errors
///
/// As [`solve_local_epsilon`] if every composition fails; [`Error::InvalidParameter`] if the
/// list is empty.
pub fn solve_local_epsilon_best(
    epsilon: f64,
    delta: f64,
    iterations: usize,
    users: u64,
    compositions: &[Composition],
    bound: ShuffleBound,
) -> Result<LocalEpsilonPlan, Error> {
    let mut best: Option<LocalEpsilonPlan> = None;
    let mut last_error = Error::invalid("compositions", "an empty list", "at least one rule");
    for &composition in compositions {
        match solve_local_epsilon(epsilon, delta, iterations, users, composition, bound) {
            Ok(plan) => {
                if best
                    .as_ref()
                    .is_none_or(|b| plan.local_epsilon > b.local_epsilon)
                {
                    best = Some(plan);
                }
            }
            Err(e) => last_error = e,
        }
    }
    best.ok_or(last_error)
}

/// The aggregate guarantee of `iterations` rounds in which `users` reports of an `ε₀`-LDP
/// randomizer are summed, within the total `delta` (split between the rounds and the
/// composition as [`split_budget`] does): the forward direction of [`solve_local_epsilon`].
///
/// # Errors
///
/// As [`shuffle_epsilon`] and [`compose_rounds`].
pub fn aggregate_guarantee(
    local_epsilon: f64,
    delta: f64,
    iterations: usize,
    users: u64,
    composition: Composition,
    bound: ShuffleBound,
) -> Result<LocalEpsilonPlan, Error> {
    // The per-round δ of the split does not depend on ε.
    let (_, round_delta) = split_budget(1.0, delta, iterations as u64, composition)?;
    let round_epsilon = shuffle_epsilon(local_epsilon, users, round_delta, bound)?;
    let per_iteration = Guarantee {
        epsilon: round_epsilon,
        delta: round_delta,
        neighbours: Neighbours::ReplaceOne,
        model: TrustModel::Shuffle,
        analysis: format!(
            "{users} summed ε₀ = {local_epsilon} reports, {bound} amplification by shuffling"
        ),
    };
    let aggregate = compose_rounds(&per_iteration, iterations, composition, delta)?;
    Ok(LocalEpsilonPlan {
        local_epsilon,
        iterations,
        users,
        composition,
        bound,
        per_iteration,
        aggregate,
        local: Guarantee {
            epsilon: local_epsilon,
            delta: 0.0,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Local,
            analysis: format!(
                "per iteration: data selection then one-hot + binary randomized response \
                 (pure ε₀-LDP, device level); {iterations} iterations compose to \
                 {} by basic composition",
                local_epsilon * iterations as f64
            ),
        },
    })
}
