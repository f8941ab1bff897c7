//! The local `ε₀` of OptPrefixTree (docs/algorithms.md §6.6): the largest per-iteration local
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
//! # Tight composition
//!
//! With [`Composition::Tight`] the iterations are composed as what they are: each is dominated
//! by the shuffle model's clone pair of FMT21 Theorem 3.2 ([`crate::shuffle_loss`]), at every
//! `ε` and whatever randomizer earlier releases chose, so the `T`-fold composition of that
//! pair's privacy-loss distribution (pessimistically discretised on a grid of
//! `ε₀/(`[`TIGHT_GRID_POINTS_PER_EPSILON0`]` · T)`) dominates the whole run. The per-iteration
//! `(ε', δ')` split disappears: `ε₀` is found by bisection on the composed `ε(δ)` itself
//! (rounded down, to a relative width of [`TIGHT_TOLERANCE`]) and the guarantee reported is the
//! forward computation at that `ε₀`.
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

use crate::composition::{Composition, compose_basic, split_budget};
use crate::shuffle::{ShuffleBound, max_local_epsilon, shuffle_epsilon};
use crate::shuffle_loss::shuffle_loss_pair;
use crate::{Collusion, Error, Guarantee, Neighbours, TrustModel, compose_rounds};

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
/// `(epsilon, delta)`-DP by `composition` and `bound` (docs/algorithms.md §6.6).
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
    if composition == Composition::Tight {
        return solve_local_epsilon_tight(epsilon, delta, iterations, users, bound);
    }
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

impl LocalEpsilonPlan {
    /// The aggregate guarantee an honest user keeps when a fraction `colluding_fraction` of
    /// the users colludes with the analyst ([`crate::collusion`]): the same iterations over
    /// the honest users' reports alone ([`aggregate_guarantee`] at the plan's `δ`, its
    /// composition and bound), and the local guarantee of all iterations (`T·ε₀`, pure, by
    /// basic composition) as the floor and wherever the amplified one is not smaller.
    ///
    /// # Errors
    ///
    /// As [`crate::honest_users`] and [`aggregate_guarantee`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        let floor = compose_basic(&vec![(self.local_epsilon, 0.0); self.iterations])?.0;
        Collusion::over_honest(
            colluding_fraction,
            self.users,
            (self.aggregate.epsilon, self.aggregate.delta),
            floor,
            |honest| {
                if honest < 2 {
                    return Ok((floor, 0.0));
                }
                let over_honest = aggregate_guarantee(
                    self.local_epsilon,
                    self.aggregate.delta,
                    self.iterations,
                    honest,
                    self.composition,
                    self.bound,
                )?
                .aggregate;
                Ok(if over_honest.epsilon < floor {
                    (over_honest.epsilon, over_honest.delta)
                } else {
                    (floor, 0.0)
                })
            },
        )
    }
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
    if composition == Composition::Tight {
        return aggregate_guarantee_tight(local_epsilon, delta, iterations, users, bound);
    }
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
        local: local_guarantee(local_epsilon, iterations),
    })
}

/// The local guarantee's description.
fn local_analysis(local_epsilon: f64, iterations: usize) -> String {
    format!(
        "per iteration: data selection then one-hot + binary randomized response (pure \
         ε₀-LDP, device level); {iterations} iterations compose to {} by basic composition",
        local_epsilon * iterations as f64
    )
}

/// Grid points per unit of `ε₀/T` in the tight accountant's discretisation: the grid is
/// `h = ε₀/(100·T)`, so rounding every iteration's loss up costs at most `T·h = ε₀/100` of
/// the composed `ε`.
pub const TIGHT_GRID_POINTS_PER_EPSILON0: f64 = 100.0;

/// The relative width at which the tight solver's bisection on `ε₀` stops.
pub const TIGHT_TOLERANCE: f64 = 1e-4;

/// The largest `ε₀` the shuffle analyses accept.
const MAX_LOCAL_EPSILON: f64 = 50.0;

/// [`aggregate_guarantee`] with [`Composition::Tight`]: the `T`-fold composition of one
/// iteration's clone pair (see the module docs), its `ε` at `delta`, rounded up.
///
/// # Errors
///
/// As [`shuffle_loss_pair`] and [`crate::pld::PrivacyLossPair::epsilon`]; invalid
/// `iterations = 0`.
fn aggregate_guarantee_tight(
    local_epsilon: f64,
    delta: f64,
    iterations: usize,
    users: u64,
    bound: ShuffleBound,
) -> Result<LocalEpsilonPlan, Error> {
    if iterations == 0 {
        return Err(Error::invalid("iterations", 0, "an integer ≥ 1"));
    }
    let step = local_epsilon / (TIGHT_GRID_POINTS_PER_EPSILON0 * iterations as f64);
    let pair = shuffle_loss_pair(local_epsilon, users, bound, step)?;
    let one = pair.epsilon(delta)?;
    let all = pair.self_compose(iterations as u64)?.epsilon(delta)?;
    let guarantee = |epsilon: f64, analysis: String| Guarantee {
        epsilon,
        delta,
        neighbours: Neighbours::ReplaceOne,
        model: TrustModel::Shuffle,
        analysis,
    };
    Ok(LocalEpsilonPlan {
        local_epsilon,
        iterations,
        users,
        composition: Composition::Tight,
        bound,
        per_iteration: guarantee(
            one,
            format!(
                "{users} summed ε₀ = {local_epsilon} reports, the {bound} clone pair's \
                 privacy-loss distribution"
            ),
        ),
        aggregate: guarantee(
            all,
            format!(
                "tight composition of {iterations} iterations of the {bound} clone pair's \
                 privacy-loss distribution (pessimistic, grid {step})"
            ),
        ),
        local: local_guarantee(local_epsilon, iterations),
    })
}

/// The local guarantee of one iteration: `(ε₀, 0)`, replace-one, local model.
fn local_guarantee(local_epsilon: f64, iterations: usize) -> Guarantee {
    Guarantee {
        epsilon: local_epsilon,
        delta: 0.0,
        neighbours: Neighbours::ReplaceOne,
        model: TrustModel::Local,
        analysis: local_analysis(local_epsilon, iterations),
    }
}

/// [`solve_local_epsilon`] with [`Composition::Tight`]: bisection on `ε₀` of the composed
/// `ε(δ)`, keeping the largest `ε₀` seen to meet the target (whose forward guarantee is the one
/// returned).
fn solve_local_epsilon_tight(
    epsilon: f64,
    delta: f64,
    iterations: usize,
    users: u64,
    bound: ShuffleBound,
) -> Result<LocalEpsilonPlan, Error> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
    }
    if iterations == 0 {
        return Err(Error::invalid("iterations", 0, "an integer ≥ 1"));
    }
    let meets = |local_epsilon: f64| -> Result<Option<LocalEpsilonPlan>, Error> {
        let plan = aggregate_guarantee_tight(local_epsilon, delta, iterations, users, bound)?;
        Ok((plan.aggregate.epsilon <= epsilon && plan.aggregate.delta <= delta).then_some(plan))
    };
    // Start from what basic composition of the same bound allows (the tight composition of
    // its pair is at most that, up to the grid), else from ε/T, which basic composition of
    // pure ε₀-LDP rounds allows; halve until the computed guarantee agrees.
    let basic = solve_local_epsilon(epsilon, delta, iterations, users, Composition::Basic, bound)
        .map(|plan| plan.local_epsilon);
    let mut best = match basic {
        Ok(start) => meets(start)?,
        Err(_) => None,
    };
    let mut lo = match (&best, basic) {
        (Some(_), Ok(start)) => start,
        _ => (epsilon / iterations as f64).min(MAX_LOCAL_EPSILON),
    };
    for _ in 0..64 {
        if best.is_some() {
            break;
        }
        if let Some(plan) = meets(lo)? {
            best = Some(plan);
            break;
        }
        lo *= 0.5;
    }
    let Some(mut best) = best else {
        return Err(Error::infeasible(
            "local epsilon",
            format!("no ε₀ composes to within ({epsilon}, {delta}) over {iterations} iterations"),
        ));
    };
    let mut hi = lo;
    loop {
        if hi >= MAX_LOCAL_EPSILON {
            return Ok(best);
        }
        hi = (2.0 * hi).min(MAX_LOCAL_EPSILON);
        match meets(hi)? {
            Some(plan) => {
                lo = hi;
                best = plan;
            }
            None => break,
        }
    }
    while hi - lo > TIGHT_TOLERANCE * lo {
        let mid = 0.5 * (lo + hi);
        match meets(mid)? {
            Some(plan) => {
                lo = mid;
                best = plan;
            }
            None => hi = mid,
        }
    }
    Ok(best)
}
