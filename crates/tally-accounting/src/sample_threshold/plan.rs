//! Calibration: solving for the S&T parameters that meet a target `(ε, δ)`.

use super::analysis::{
    Analysis, SampleThresholdParams, delta, has_two_cell_analysis, one_cell_delta,
};
use super::{check_delta, check_epsilon, max_sampling_rate_cap};
use crate::{Error, Neighbours};

/// The largest threshold the solvers consider.
const MAX_THRESHOLD: u64 = 1 << 40;

/// What the caller fixed besides `(ε, δ)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlanTarget {
    /// The sampling rate is `α` times its cap (`1 − e^{−ε}` for add/remove); solve for `τ`.
    Alpha(f64),
    /// The sampling rate is given; solve for the smallest `τ`.
    SamplingRate(f64),
    /// The threshold is given; solve for the largest sampling rate.
    Threshold(u64),
    /// Nothing else is given: choose the pair with the smallest `τ/p_s`, the smallest
    /// population count a release can show.
    MinReleasedCount,
}

/// Calibrated S&T parameters with the guarantee they achieve.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The target ε.
    pub epsilon: f64,
    /// The target δ.
    pub delta: f64,
    /// The δ the chosen parameters achieve (an upper bound, at most the target).
    pub achieved_delta: f64,
    /// The chosen sampling rate and threshold.
    pub params: SampleThresholdParams,
    /// The analysis used.
    pub analysis: Analysis,
    /// The neighbour relation.
    pub neighbours: Neighbours,
    /// What the caller fixed.
    pub target: PlanTarget,
}

impl Plan {
    /// `p_s / cap`, the sampling rate as a fraction of the largest one the analyses accept.
    pub fn alpha(&self) -> f64 {
        self.params.sampling_rate() / max_sampling_rate_cap(self.epsilon, self.neighbours)
    }

    /// `τ / p_s`: the smallest population count whose estimate a release can show.
    pub fn min_released_count(&self) -> f64 {
        self.params.threshold() as f64 / self.params.sampling_rate()
    }
}

/// Solves for the parameters missing from `target` so that one release is `(ε, δ)`-DP for
/// `neighbours` by `analysis`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] for out-of-range inputs, [`Error::Infeasible`] when no
/// parameter meets the target.
pub fn plan(
    epsilon: f64,
    delta_target: f64,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<Plan, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta_target)?;
    let params = match target {
        PlanTarget::Alpha(alpha) => {
            if !(alpha > 0.0 && alpha <= 1.0) {
                return Err(Error::invalid("alpha", alpha, "a number in (0, 1]"));
            }
            let rate = round_down_product(alpha, max_sampling_rate_cap(epsilon, neighbours));
            let tau = min_threshold(epsilon, delta_target, rate, analysis, neighbours)?;
            SampleThresholdParams::new(rate, tau)?
        }
        PlanTarget::SamplingRate(rate) => {
            let tau = min_threshold(epsilon, delta_target, rate, analysis, neighbours)?;
            SampleThresholdParams::new(rate, tau)?
        }
        PlanTarget::Threshold(tau) => {
            let rate = max_sampling_rate(epsilon, delta_target, tau, analysis, neighbours)?;
            SampleThresholdParams::new(rate, tau)?
        }
        PlanTarget::MinReleasedCount => {
            min_released_count_params(epsilon, delta_target, analysis, neighbours)?
        }
    };
    let achieved_delta = delta(epsilon, &params, analysis, neighbours)?;
    debug_assert!(achieved_delta <= delta_target);
    Ok(Plan {
        epsilon,
        delta: delta_target,
        achieved_delta,
        params,
        analysis,
        neighbours,
        target,
    })
}

/// `a·b` rounded down.
fn round_down_product(a: f64, b: f64) -> f64 {
    let product = a * b;
    // The product is within half an ulp of the exact one; stepping down one ulp is safe.
    if product > 0.0 {
        product.next_down()
    } else {
        product
    }
}

/// A bound on the `δ` of one release: [`delta`], or the cheaper [`one_cell_delta`] the searches
/// run on before the two-cell refinement.
type DeltaBound = fn(f64, &SampleThresholdParams, Analysis, Neighbours) -> Result<f64, Error>;

/// Whether `(rate, tau)` meets `δ ≤ target` by `bound`; parameters an analysis rejects do not.
fn meets(
    bound: DeltaBound,
    epsilon: f64,
    delta_target: f64,
    rate: f64,
    tau: u64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<bool, Error> {
    let params = SampleThresholdParams::new(rate, tau)?;
    match bound(epsilon, &params, analysis, neighbours) {
        Ok(d) => Ok(d <= delta_target),
        Err(Error::InvalidParameter { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The smallest threshold `τ` for which sampling at `rate` is `(ε, δ)`-DP. `δ` decreases in
/// `τ` for every analysis, so an exponential then binary search finds it.
///
/// For replace-one `tight`, the search runs on the one-cell bound, and a binary search with the
/// two-cell [`delta`] then lowers its result, down to the add/remove threshold at most (see
/// `refined_min_threshold`); the result always meets the target by [`delta`].
///
/// # Errors
///
/// [`Error::InvalidParameter`] for out-of-range inputs (including a rate above the cap, or the
/// closed form's limits), [`Error::Infeasible`] if no `τ ≤ 2^40` suffices.
pub fn min_threshold(
    epsilon: f64,
    delta_target: f64,
    rate: f64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<u64, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta_target)?;
    // Surface parameter errors (bad rate, closed-form limits) instead of searching.
    delta(
        epsilon,
        &SampleThresholdParams::new(rate, 1)?,
        analysis,
        neighbours,
    )?;
    let tau = one_cell_min_threshold(epsilon, delta_target, rate, analysis, neighbours)?;
    if has_two_cell_analysis(analysis, neighbours) {
        return refined_min_threshold(epsilon, delta_target, rate, tau);
    }
    Ok(tau)
}

/// [`min_threshold`] by [`one_cell_delta`].
fn one_cell_min_threshold(
    epsilon: f64,
    delta_target: f64,
    rate: f64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<u64, Error> {
    let ok = |tau| {
        meets(
            one_cell_delta,
            epsilon,
            delta_target,
            rate,
            tau,
            analysis,
            neighbours,
        )
    };
    let mut hi = 1;
    while !ok(hi)? {
        if hi >= MAX_THRESHOLD {
            return Err(Error::infeasible(
                "threshold",
                format!("none up to {MAX_THRESHOLD} at sampling rate {rate}"),
            ));
        }
        hi *= 2;
    }
    first_passing(hi / 2, hi, ok)
}

/// The smallest `τ` in `(lo, hi]` that passes `ok`, by bisection, given that `hi` passes and
/// assuming `lo` fails (`lo` may be `0`); if `ok` is not monotone, a passing `τ`.
fn first_passing(lo: u64, hi: u64, ok: impl Fn(u64) -> Result<bool, Error>) -> Result<u64, Error> {
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Lowers `one_cell_tau`, the replace-one `tight` threshold found on the one-cell bound, to the
/// smallest one whose two-cell [`delta`] meets the target. Replace-one `δ` is never below
/// add/remove `δ` (a client joining an unboundedly large cell tends to a plain removal), so the
/// add/remove threshold at `rate` bounds the search from below; each step is one evaluation of
/// [`delta`], about `log₂(one_cell_tau)` in all.
fn refined_min_threshold(
    epsilon: f64,
    delta_target: f64,
    rate: f64,
    one_cell_tau: u64,
) -> Result<u64, Error> {
    let floor = one_cell_min_threshold(
        epsilon,
        delta_target,
        rate,
        Analysis::Tight,
        Neighbours::AddRemove,
    )?;
    let ok = |tau| {
        meets(
            delta,
            epsilon,
            delta_target,
            rate,
            tau,
            Analysis::Tight,
            Neighbours::ReplaceOne,
        )
    };
    first_passing(
        floor.saturating_sub(1).min(one_cell_tau - 1),
        one_cell_tau,
        ok,
    )
}

/// The largest sampling rate at which threshold `tau` is `(ε, δ)`-DP, capped at
/// [`max_sampling_rate_cap`], to a relative `1e-12`. The search brackets the boundary and
/// returns a rate whose `δ` was checked to meet the target.
///
/// `δ` increases with the rate for `closed-form`, `theorem1` and `tight`, so the result is the
/// largest admissible rate. For replace-one `tight`, the search runs on the one-cell bound and
/// the two-cell [`delta`] then raises the rate, to a relative `REFINED_RATE_TOLERANCE` (see
/// `refined_max_rate`). The `exact` bad-event probability is not monotone (it drops each
/// time `⌊kq⌋` steps up), so for it the result is an admissible rate at a crossing of the
/// target that may lie below a larger admissible one; it is never above the largest.
///
/// # Errors
///
/// [`Error::InvalidParameter`] for out-of-range inputs, [`Error::Infeasible`] if even tiny
/// rates fail (which happens only for `τ = 1` with a tiny `δ`).
pub fn max_sampling_rate(
    epsilon: f64,
    delta_target: f64,
    tau: u64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    let rate = one_cell_max_rate(epsilon, delta_target, tau, analysis, neighbours)?;
    if has_two_cell_analysis(analysis, neighbours) {
        return refined_max_rate(epsilon, delta_target, tau, rate);
    }
    Ok(rate)
}

/// [`max_sampling_rate`] by [`one_cell_delta`].
fn one_cell_max_rate(
    epsilon: f64,
    delta_target: f64,
    tau: u64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta_target)?;
    if tau == 0 {
        return Err(Error::invalid("threshold", 0, "an integer ≥ 1"));
    }
    let cap = max_sampling_rate_cap(epsilon, neighbours);
    let ok = |rate| {
        meets(
            one_cell_delta,
            epsilon,
            delta_target,
            rate,
            tau,
            analysis,
            neighbours,
        )
    };
    if ok(cap)? {
        return Ok(cap);
    }
    let mut lo = cap / 2.0;
    while !ok(lo)? {
        lo /= 2.0;
        if lo < 1e-300 {
            return Err(Error::infeasible(
                "sampling rate",
                format!("even tiny rates exceed δ = {delta_target} at threshold {tau}"),
            ));
        }
    }
    let excess = |rate| {
        log_excess(
            one_cell_delta,
            epsilon,
            delta_target,
            rate,
            tau,
            analysis,
            neighbours,
        )
    };
    bracketed_root(lo, cap, RATE_TOLERANCE, excess)
}

/// `ln(δ/target)` by `bound` at `(rate, tau)`: `≤ 0` exactly when the target is met, `+∞` for
/// parameters the analysis rejects.
fn log_excess(
    bound: DeltaBound,
    epsilon: f64,
    delta_target: f64,
    rate: f64,
    tau: u64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    let params = SampleThresholdParams::new(rate, tau)?;
    match bound(epsilon, &params, analysis, neighbours) {
        // The sign follows the exact comparison, which `ln` could blur.
        Ok(d) if d <= delta_target => Ok((d.ln() - delta_target.ln()).min(0.0)),
        Ok(d) => Ok((d.ln() - delta_target.ln()).max(f64::MIN_POSITIVE)),
        Err(Error::InvalidParameter { .. }) => Ok(f64::INFINITY),
        Err(e) => Err(e),
    }
}

/// Raises `one_cell_rate`, the replace-one `tight` rate found on the one-cell bound at `tau`,
/// towards the largest whose two-cell [`delta`] meets the target. The search is bracketed by
/// the one-cell rate (which meets it, as the two-cell value is never above the one-cell one)
/// and the smaller of the replace-one cap and the add/remove rate at `tau` (replace-one `δ` is
/// never below add/remove `δ`), and stops at a relative [`REFINED_RATE_TOLERANCE`]: each step
/// is one evaluation of [`delta`], a few milliseconds. The result meets the target by [`delta`].
fn refined_max_rate(
    epsilon: f64,
    delta_target: f64,
    tau: u64,
    one_cell_rate: f64,
) -> Result<f64, Error> {
    let add_remove = one_cell_max_rate(
        epsilon,
        delta_target,
        tau,
        Analysis::Tight,
        Neighbours::AddRemove,
    )?;
    let hi = add_remove.min(max_sampling_rate_cap(epsilon, Neighbours::ReplaceOne));
    let excess = |rate| {
        log_excess(
            delta,
            epsilon,
            delta_target,
            rate,
            tau,
            Analysis::Tight,
            Neighbours::ReplaceOne,
        )
    };
    if hi <= one_cell_rate {
        return Ok(one_cell_rate);
    }
    if excess(hi)? <= 0.0 {
        return Ok(hi);
    }
    bracketed_root(one_cell_rate, hi, REFINED_RATE_TOLERANCE, excess)
}

/// The relative width at which [`bracketed_root`] stops for the one-cell bound.
const RATE_TOLERANCE: f64 = 1e-12;

/// The relative width at which the two-cell refinement of a replace-one rate stops: it bounds
/// the number of two-cell evaluations, and costs the rate at most this fraction of itself.
const REFINED_RATE_TOLERANCE: f64 = 1e-4;

/// The left end of a bracket `[lo, hi]` around the crossing of `excess` from `≤ 0` (at `lo`) to
/// `> 0` (at `hi`), shrunk until its relative width is `tolerance` by the Illinois
/// variant of regula falsi on `excess` (the log-ratio of `δ` to its target, smooth in the
/// rate), with a bisection step whenever the secant leaves the bracket. The result always
/// satisfies `excess ≤ 0`; it converges superlinearly, in about ten evaluations instead of the
/// sixty of a bisection over the doubles.
fn bracketed_root(
    lo: f64,
    hi: f64,
    tolerance: f64,
    excess: impl Fn(f64) -> Result<f64, Error>,
) -> Result<f64, Error> {
    let (f_lo, f_hi) = (excess(lo)?, excess(hi)?);
    bracketed_root_from(
        (lo, f_lo),
        (hi, f_hi),
        |lo, hi| hi - lo <= lo * tolerance,
        excess,
    )
}

/// [`bracketed_root`] from ends whose `excess` is already known (`lo.1 ≤ 0 < hi.1`), stopping
/// once `narrow(lo, hi)` holds for the bracket.
pub(super) fn bracketed_root_from(
    (mut lo, mut f_lo): (f64, f64),
    (mut hi, mut f_hi): (f64, f64),
    narrow: impl Fn(f64, f64) -> bool,
    excess: impl Fn(f64) -> Result<f64, Error>,
) -> Result<f64, Error> {
    debug_assert!(f_lo <= 0.0 && f_hi > 0.0);
    let mut last_side = 0;
    for _ in 0..200 {
        if narrow(lo, hi) {
            break;
        }
        let secant = hi - f_hi * (hi - lo) / (f_hi - f_lo);
        let mid = if secant.is_finite() && secant > lo && secant < hi {
            secant
        } else {
            lo + (hi - lo) / 2.0
        };
        let f = excess(mid)?;
        if f <= 0.0 {
            lo = mid;
            f_lo = f;
            if last_side == -1 {
                f_hi /= 2.0;
            }
            last_side = -1;
        } else {
            hi = mid;
            f_hi = f;
            if last_side == 1 {
                f_lo /= 2.0;
            }
            last_side = 1;
        }
    }
    Ok(lo)
}

/// The pair minimising `τ / p_s`. The largest rate grows with `τ` but never passes the cap, so
/// once `τ / cap` reaches the best ratio no larger `τ` can win. For replace-one `tight` the
/// threshold is chosen on the one-cell bound, and the rate at that threshold is then raised by
/// the two-cell analysis ([`refined_max_rate`]).
fn min_released_count_params(
    epsilon: f64,
    delta_target: f64,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<SampleThresholdParams, Error> {
    let cap = max_sampling_rate_cap(epsilon, neighbours);
    let mut best: Option<SampleThresholdParams> = None;
    let mut tau = 1;
    loop {
        if let Some(b) = best
            && tau as f64 / cap >= b.threshold() as f64 / b.sampling_rate()
        {
            if has_two_cell_analysis(analysis, neighbours) {
                let rate =
                    refined_max_rate(epsilon, delta_target, b.threshold(), b.sampling_rate())?;
                return SampleThresholdParams::new(rate, b.threshold());
            }
            return Ok(b);
        }
        if tau > 1_000_000 {
            return Err(Error::infeasible(
                "threshold",
                "no pair with a threshold up to 10^6 meets the target",
            ));
        }
        match one_cell_max_rate(epsilon, delta_target, tau, analysis, neighbours) {
            Ok(rate) => {
                let candidate = SampleThresholdParams::new(rate, tau)?;
                let better = best
                    .is_none_or(|b| (tau as f64 / rate) < b.threshold() as f64 / b.sampling_rate());
                if better {
                    best = Some(candidate);
                }
            }
            // The worst-case group only grows with τ: no larger threshold can be evaluated.
            Err(e @ Error::Infeasible { what: "delta", .. }) => return Err(e),
            Err(Error::Infeasible { .. }) => {}
            Err(e) => return Err(e),
        }
        tau += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptance_alpha_closed_form() {
        let plan = plan(
            1.0,
            1e-8,
            PlanTarget::Alpha(1.0 / 6.0),
            Analysis::ClosedForm,
            Neighbours::AddRemove,
        )
        .unwrap();
        assert!((plan.params.sampling_rate() - 0.105_353_426_471_426_27).abs() < 1e-15);
        assert_eq!(plan.params.threshold(), 20);
    }

    #[test]
    fn acceptance_tight_threshold_at_paper_rate() {
        let tau = min_threshold(
            1.0,
            1e-8,
            0.105_353_426_47,
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        assert_eq!(tau, 11);
    }

    #[test]
    fn max_rate_is_the_boundary() {
        let rate =
            max_sampling_rate(1.0, 1e-8, 20, Analysis::Tight, Neighbours::AddRemove).unwrap();
        assert!((0.24..0.26).contains(&rate), "{rate}");
        let at = |r: f64| {
            delta(
                1.0,
                &SampleThresholdParams::new(r, 20).unwrap(),
                Analysis::Tight,
                Neighbours::AddRemove,
            )
            .unwrap()
        };
        assert!(at(rate) <= 1e-8);
        assert!(at(rate * (1.0 + 2.0 * RATE_TOLERANCE)) > 1e-8);
    }

    #[test]
    fn min_table_of_section_1_4() {
        // docs/algorithms.md §1.4, α = 1/6: (ε, δ) → τ for closed-form, theorem1, exact, tight.
        let table = [
            (0.1_f64, 1e-6, [15, 13, 11, 7]),
            (0.1, 1e-8, [20, 17, 15, 11]),
            (0.5, 1e-6, [15, 12, 10, 8]),
            (0.5, 1e-8, [20, 15, 14, 11]),
            (1.0, 1e-6, [15, 11, 9, 8]),
            (1.0, 1e-8, [20, 14, 12, 11]),
        ];
        for (eps, del, taus) in table {
            for (analysis, expected) in Analysis::ALL.into_iter().zip(taus) {
                let rate = -(-eps).exp_m1() / 6.0;
                let tau = min_threshold(eps, del, rate, analysis, Neighbours::AddRemove).unwrap();
                assert_eq!(tau, expected, "ε = {eps}, δ = {del}, {analysis}");
            }
        }
    }

    #[test]
    fn tiny_epsilon_is_refused_with_the_reason() {
        let refused = plan(
            1e-9,
            1e-8,
            PlanTarget::MinReleasedCount,
            Analysis::Tight,
            Neighbours::AddRemove,
        );
        assert!(
            matches!(refused, Err(Error::Infeasible { what: "delta", .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn min_released_count_beats_neighbouring_thresholds() {
        let plan = plan(
            1.0,
            1e-8,
            PlanTarget::MinReleasedCount,
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        let tau = plan.params.threshold();
        for other in [tau - 1, tau + 1] {
            let rate = max_sampling_rate(1.0, 1e-8, other, Analysis::Tight, Neighbours::AddRemove)
                .unwrap();
            assert!(other as f64 / rate >= plan.min_released_count());
        }
    }

    #[test]
    fn replace_one_plans_on_the_two_cell_value() {
        let (tight, replace) = (Analysis::Tight, Neighbours::ReplaceOne);
        let at = |rate: f64, tau: u64| {
            delta(
                1.0,
                &SampleThresholdParams::new(rate, tau).unwrap(),
                tight,
                replace,
            )
            .unwrap()
        };
        // The two-cell value allows a rate well above the one-cell one (0.250 against 0.210),
        // and the refined rate sits at the boundary to the refinement's tolerance.
        let one_cell = one_cell_max_rate(1.0, 1e-8, 20, tight, replace).unwrap();
        let rate = max_sampling_rate(1.0, 1e-8, 20, tight, replace).unwrap();
        assert!(rate > 1.15 * one_cell, "{rate} vs {one_cell}");
        assert!(at(rate, 20) <= 1e-8);
        assert!(at(rate * (1.0 + 2.0 * REFINED_RATE_TOLERANCE), 20) > 1e-8);
        // And a threshold one below the one-cell one (12 against 13), the smallest that meets.
        let tau = min_threshold(0.5, 1e-10, 0.05, tight, replace).unwrap();
        let one_cell_tau = one_cell_min_threshold(0.5, 1e-10, 0.05, tight, replace).unwrap();
        assert_eq!((tau, one_cell_tau), (12, 13));
        let at_half = |tau: u64| {
            delta(
                0.5,
                &SampleThresholdParams::new(0.05, tau).unwrap(),
                tight,
                replace,
            )
            .unwrap()
        };
        assert!(at_half(12) <= 1e-10 && at_half(11) > 1e-10);
        // The plan with neither given refines the rate at the threshold it chose.
        let planned = plan(1.0, 1e-8, PlanTarget::MinReleasedCount, tight, replace).unwrap();
        let threshold = planned.params.threshold();
        let unrefined = one_cell_max_rate(1.0, 1e-8, threshold, tight, replace).unwrap();
        assert!(planned.params.sampling_rate() > 1.1 * unrefined);
        assert!(planned.achieved_delta <= 1e-8);
    }
}
