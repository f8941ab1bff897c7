//! The four S&T analyses: `δ` as a function of `(ε, p_s, τ)`.

use std::fmt;
use std::str::FromStr;

use super::{check_epsilon, max_sampling_rate_cap};
use crate::numeric::{MAX_SCAN, delta_upper, kl_bernoulli, ln_upper_tail_weighted};
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// Which analysis turns S&T parameters into `δ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Analysis {
    /// Lemma 3.2 of the paper, `δ = exp(−C_α τ)`; only for `ε ≤ 1` and `α < 0.5173`.
    ClosedForm,
    /// Theorem 1 of the paper, the Chernoff–KL bound on the bad event.
    Theorem1,
    /// The exact binomial probability of Theorem 1's bad event.
    Exact,
    /// The exact hockey-stick divergence: the smallest `δ` for which the release is `(ε, δ)`-DP.
    Tight,
}

impl Analysis {
    /// Every analysis, loosest first.
    pub const ALL: [Self; 4] = [Self::ClosedForm, Self::Theorem1, Self::Exact, Self::Tight];

    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::ClosedForm => "closed-form",
            Self::Theorem1 => "theorem1",
            Self::Exact => "exact",
            Self::Tight => "tight",
        }
    }
}

impl fmt::Display for Analysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Analysis {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| Error::invalid("method", s, "closed-form, theorem1, exact or tight"))
    }
}

/// The two parameters of an S&T release: the sampling rate `p_s` and the threshold `τ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleThresholdParams {
    sampling_rate: f64,
    threshold: u64,
}

impl SampleThresholdParams {
    /// Validates `p_s ∈ (0, 1)` and `τ ≥ 1`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming the offending parameter.
    pub fn new(sampling_rate: f64, threshold: u64) -> Result<Self, Error> {
        if !(sampling_rate > 0.0 && sampling_rate < 1.0) {
            return Err(Error::invalid(
                "sampling rate",
                sampling_rate,
                "a number in (0, 1)",
            ));
        }
        if threshold == 0 {
            return Err(Error::invalid("threshold", 0, "an integer ≥ 1"));
        }
        Ok(Self {
            sampling_rate,
            threshold,
        })
    }

    /// The sampling rate `p_s`.
    pub fn sampling_rate(&self) -> f64 {
        self.sampling_rate
    }

    /// The threshold `τ`.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The guarantee of one release with these parameters at `epsilon`.
    ///
    /// # Errors
    ///
    /// As [`delta`].
    pub fn guarantee(
        &self,
        epsilon: f64,
        analysis: Analysis,
        neighbours: Neighbours,
    ) -> Result<Guarantee, Error> {
        Ok(Guarantee {
            epsilon,
            delta: delta(epsilon, self, analysis, neighbours)?,
            neighbours,
            model: TrustModel::Central,
            analysis: analysis.name().to_owned(),
        })
    }
}

/// `C_α = ln(1/α) − 1/(1+α)`, the exponent of the closed-form lemma; positive only for
/// `α < 0.51734`.
pub fn closed_form_constant(alpha: f64) -> f64 {
    -alpha.ln() - 1.0 / (1.0 + alpha)
}

/// An upper bound on the `δ` of one S&T release with `params` at `epsilon`, by `analysis`,
/// for `neighbours`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `ε` is not positive and finite, if `p_s` exceeds the cap of
/// [`max_sampling_rate_cap`], or, for the closed form, if `ε > 1` or `C_α ≤ 0`.
/// [`Error::Infeasible`] if a sup-over-`k` scan would pass [`MAX_SCAN`].
pub fn delta(
    epsilon: f64,
    params: &SampleThresholdParams,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    let one_cell = one_cell_raw(epsilon, params, analysis, neighbours)?;
    // Replace-one: the two-cell analysis, where it is tighter than the one-cell composition.
    let raw = if has_two_cell_analysis(analysis, neighbours) {
        match super::replace_one::two_cell_delta(
            epsilon,
            params.sampling_rate,
            params.threshold,
            one_cell,
        ) {
            Some(two_cell) => one_cell.min(two_cell),
            None => one_cell,
        }
    } else {
        one_cell
    };
    Ok(delta_upper(raw))
}

/// Whether [`delta`] refines the one-cell bound by the two-cell analysis of replace-one
/// neighbours (only `tight` does).
pub(crate) fn has_two_cell_analysis(analysis: Analysis, neighbours: Neighbours) -> bool {
    analysis == Analysis::Tight && neighbours == Neighbours::ReplaceOne
}

/// [`delta`] without the two-cell refinement: for replace-one, the add/remove analysis at
/// `ε − ln(1/(1−p_s))`, which is never below [`delta`] and costs a fraction of it. The
/// calibration searches on it (see [`super::plan`]).
///
/// # Errors
///
/// As [`delta`].
pub(crate) fn one_cell_delta(
    epsilon: f64,
    params: &SampleThresholdParams,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    Ok(delta_upper(one_cell_raw(
        epsilon, params, analysis, neighbours,
    )?))
}

/// The one-cell bound of [`one_cell_delta`], before rounding.
fn one_cell_raw(
    epsilon: f64,
    params: &SampleThresholdParams,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    check_epsilon(epsilon)?;
    let p = params.sampling_rate;
    let cap = max_sampling_rate_cap(epsilon, neighbours);
    if p > cap {
        return Err(Error::invalid(
            "sampling rate",
            p,
            format!(
                "at most {cap} (1 − e^(−ε){}) at ε = {epsilon}",
                if neighbours == Neighbours::ReplaceOne {
                    "/2, replace-one"
                } else {
                    ""
                }
            ),
        ));
    }
    let add_epsilon = match neighbours {
        Neighbours::AddRemove => epsilon,
        // The cell the client leaves costs ln(1/(1 − p)); round the remainder down.
        Neighbours::ReplaceOne => (epsilon + (-p).ln_1p()).next_down(),
    };
    match analysis {
        Analysis::ClosedForm => closed_form(add_epsilon, p, params.threshold),
        Analysis::Theorem1 => Ok(theorem1(add_epsilon, p, params.threshold)),
        Analysis::Exact => sup_over_cutoffs(add_epsilon, p, params.threshold, Charge::BadEvent),
        Analysis::Tight => sup_over_cutoffs(add_epsilon, p, params.threshold, Charge::HockeyStick),
    }
}

/// `q = 1 − e^{−ε}(1 − p_s)`: above `k·q` sampled copies the likelihood ratio exceeds `e^ε`.
/// Computed as `(1 − e^{−ε}) + e^{−ε}p_s`, free of cancellation for tiny `ε` and `p_s`.
pub(crate) fn ratio_cutoff(epsilon: f64, p: f64) -> f64 {
    -(-epsilon).exp_m1() + (-epsilon).exp() * p
}

/// `D(q‖p_s)` at `q =` [`ratio_cutoff`], lowered by a relative `1e-9` so that the Chernoff
/// bounds built on it stay upper bounds. As `(1−q)/(1−p_s) = e^{−ε}` exactly,
/// `D = q ln(q/p_s) − (1−q)ε`, and `q/p_s = 1 + (1−p_s)(1−e^{−ε})/p_s`.
pub(crate) fn cutoff_divergence(epsilon: f64, p: f64, q: f64) -> f64 {
    let ln_ratio = ((1.0 - p) * -(-epsilon).exp_m1() / p).ln_1p();
    let divergence = q * ln_ratio - (1.0 - q) * epsilon;
    divergence.max(0.0) * (1.0 - 1e-9)
}

fn closed_form(epsilon: f64, p: f64, threshold: u64) -> Result<f64, Error> {
    if epsilon > 1.0 {
        return Err(Error::invalid(
            "epsilon",
            epsilon,
            "at most 1 for the closed-form lemma (use theorem1, exact or tight)",
        ));
    }
    let alpha = p / -(-epsilon).exp_m1();
    let c = closed_form_constant(alpha);
    if c <= 0.0 {
        return Err(Error::invalid(
            "alpha",
            alpha,
            "below 0.5173 for the closed-form lemma (C_α > 0); lower the sampling rate",
        ));
    }
    Ok((-c * threshold as f64).exp())
}

fn theorem1(epsilon: f64, p: f64, threshold: u64) -> f64 {
    let q = ratio_cutoff(epsilon, p);
    (-(threshold as f64 / q) * kl_bernoulli(q, p)).exp()
}

/// How the group of `k` clients holding the item is charged at cutoff `m`.
#[derive(Clone, Copy)]
pub(crate) enum Charge {
    /// Theorem 1's bad event, `Pr[Bin(k,p_s) ≥ max(τ, ⌊kq⌋+1)]`.
    BadEvent,
    /// The hockey-stick divergence `Σ_{v≥m} (b(v;k,p_s) − e^ε b(v;k−1,p_s))_+`.
    HockeyStick,
}

/// `sup_{k ≥ 1}` of the per-group charge, computed cutoff by cutoff instead of group by group.
///
/// For a group of `k` clients holding the item (`k − 1` besides the one added), the release
/// differs from the one without the client only on the counts `v ≥ τ`, and the likelihood ratio
/// `b(v;k)/b(v;k−1)` exceeds `e^ε` exactly when `v > kq`. So
///
/// - `tight`: `δ = sup_{m ≥ τ} sup_k g(m, k)` with `g(m,k) = Pr[X_k ≥ m] − e^ε Pr[X_{k−1} ≥ m]`,
///   `X_k ~ Bin(k, p_s)` (the best set is an upper set). As
///   `g(m,k+1) − g(m,k) = p_s(b(m−1;k) − e^ε b(m−1;k−1))`, which is positive exactly when
///   `k < (m−1)/q`, `g(m, ·)` is unimodal with its peak at `k* = ⌊(m−1)/q⌋ + 1`.
/// - `exact`: on the groups sharing a start `max(τ, ⌊kq⌋+1) = m`, `Pr[X_k ≥ m]` grows with `k`,
///   so the largest such `k`, `⌈m/q⌉ − 1`, is the worst.
///
/// Each cutoff's peak (for `exact`, with its two neighbours, so that rounding cannot miss it)
/// is evaluated as a positive sum. Every value lies between the sup's lower and upper ends, so the
/// maximum is the sup. The scan stops once no larger cutoff can win: every charge at a cutoff
/// `m' > m` is at most `exp(−⌊m/q⌋·D(q‖p_s))` (Chernoff at the group size `⌊m/q⌋`, below which
/// `Pr[X_k ≥ m']` only shrinks, and above which every group's charge is at most its own Chernoff
/// bound). The number of cutoffs scanned is about `q·ln(1/δ)/D(q‖p_s)`, which does not grow as
/// `ε` shrinks, so the cost is bounded.
pub(crate) fn sup_over_cutoffs(
    epsilon: f64,
    p: f64,
    threshold: u64,
    charge: Charge,
) -> Result<f64, Error> {
    let q = ratio_cutoff(epsilon, p);
    let divergence = cutoff_divergence(epsilon, p, q);
    let scale = epsilon.exp() / (1.0 - p);
    let mut ln_max = f64::NEG_INFINITY;
    let mut m = threshold;
    loop {
        let centre = match charge {
            Charge::HockeyStick => ((m - 1) as f64 / q).floor() + 1.0,
            Charge::BadEvent => (m as f64 / q).ceil() - 1.0,
        };
        if centre + 1.0 > MAX_SCAN as f64 {
            return Err(group_too_large(centre, threshold, p));
        }
        let centre = centre as u64;
        let candidates = match charge {
            // The peak is the first k with k·q ≥ m − 1; a rounding slip there moves to a
            // neighbour whose charge differs by a term proportional to |kq − (m−1)|, far
            // below the margin, so the peak alone is evaluated.
            Charge::HockeyStick => {
                let mut peak = centre;
                while peak > 1 && (peak - 1) as f64 * q >= (m - 1) as f64 {
                    peak -= 1;
                }
                while (peak as f64) * q < (m - 1) as f64 {
                    peak += 1;
                }
                peak.max(1)..=peak.max(1)
            }
            Charge::BadEvent => centre.saturating_sub(1).max(1)..=centre + 1,
        };
        for k in candidates {
            let ln_term = match charge {
                Charge::HockeyStick => ln_upper_tail_weighted(m, k, p, |v| {
                    // 1 − e^ε (k−v)/(k(1−p)) rewritten as e^ε (v − kq)/(k(1−p)) to avoid
                    // cancellation.
                    (scale * (v as f64 - k as f64 * q) / k as f64).clamp(0.0, 1.0)
                }),
                Charge::BadEvent => {
                    // ⌊kq⌋ + 1 computed so that rounding can only add terms (a larger δ).
                    let cutoff = ((k as f64 * q) * (1.0 - 4.0 * f64::EPSILON)).floor() as u64 + 1;
                    ln_upper_tail_weighted(cutoff.max(threshold), k, p, |_| 1.0)
                }
            };
            ln_max = ln_max.max(ln_term);
        }
        // ⌊m/q⌋ rounded down, so that the bound can only grow.
        let beyond = ((m as f64 / q) * (1.0 - 4.0 * f64::EPSILON)).floor();
        if -beyond * divergence <= ln_max {
            return Ok(ln_max.exp());
        }
        if m - threshold >= MAX_SCAN {
            return Err(Error::infeasible(
                "delta",
                format!("the sup over cutoffs did not settle within {MAX_SCAN} cutoffs"),
            ));
        }
        m += 1;
    }
}

/// The error for a worst-case group beyond [`MAX_SCAN`], where `lgamma` loses the precision
/// [`crate::numeric::DELTA_MARGIN`] assumes.
pub(crate) fn group_too_large(group: f64, threshold: u64, p: f64) -> Error {
    Error::infeasible(
        "delta",
        format!(
            "the worst-case group holds about {group:.3e} clients, beyond the {MAX_SCAN} the \
             analysis evaluates precisely; such a release could only show counts above \
             threshold / sampling rate = {:.3e}: raise ε or the sampling rate",
            threshold as f64 / p
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: f64 = 0.105_353_426_471_426_27;

    fn delta_at(p: f64, tau: u64, analysis: Analysis) -> f64 {
        let params = SampleThresholdParams::new(p, tau).unwrap();
        delta(1.0, &params, analysis, Neighbours::AddRemove).unwrap()
    }

    /// Asserts the safe direction: not below the exact value, and within the margin above.
    fn assert_upper(actual: f64, expected: f64, rel: f64) {
        assert!(
            actual >= expected * (1.0 - rel) && actual <= expected * (1.0 + rel + 2e-6),
            "{actual} vs {expected}"
        );
    }

    #[test]
    fn test_vec_appendix_a_item_1() {
        assert_upper(
            delta_at(P, 20, Analysis::ClosedForm),
            7.621_198_152_832_148e-9,
            1e-12,
        );
        assert_upper(
            delta_at(P, 20, Analysis::Theorem1),
            1.517_970_173_675_118_3e-12,
            1e-10,
        );
        assert_upper(delta_at(P, 20, Analysis::Exact), 1.0985e-13, 1e-4);
        assert_upper(delta_at(P, 20, Analysis::Tight), 6.8688e-15, 1e-4);
        assert!((closed_form_constant(1.0 / 6.0) - 0.934_616_612_085_197_9).abs() < 1e-15);
        assert!((ratio_cutoff(1.0, P) - 0.670_877_918_484_362_6).abs() < 1e-15);
    }

    /// The definition, group size by group size, up to `k_max`.
    fn brute_force(epsilon: f64, p: f64, tau: u64, charge: Charge, k_max: u64) -> f64 {
        let q = ratio_cutoff(epsilon, p);
        let scale = epsilon.exp() / (1.0 - p);
        (tau..=k_max)
            .map(|k| {
                let cutoff = ((k as f64 * q) * (1.0 - 4.0 * f64::EPSILON)).floor() as u64 + 1;
                let start = cutoff.max(tau);
                let ln = match charge {
                    Charge::BadEvent => ln_upper_tail_weighted(start, k, p, |_| 1.0),
                    Charge::HockeyStick => ln_upper_tail_weighted(start, k, p, |v| {
                        (scale * (v as f64 - k as f64 * q) / k as f64).clamp(0.0, 1.0)
                    }),
                };
                ln.exp()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn cutoff_scan_matches_the_group_scan() {
        for (epsilon, p, tau) in [
            (1.0, P, 20),
            (1.0, 0.3, 5),
            (0.1, 0.05, 11),
            (0.05, 0.02, 3),
            (3.0, 0.9, 8),
            (0.5, 0.1, 1),
        ] {
            for charge in [Charge::BadEvent, Charge::HockeyStick] {
                let fast = sup_over_cutoffs(epsilon, p, tau, charge).unwrap();
                let slow = brute_force(epsilon, p, tau, charge, 30_000);
                assert!(
                    ((fast - slow) / slow).abs() < 1e-9,
                    "ε = {epsilon}, p = {p}, τ = {tau}: {fast} vs {slow}"
                );
            }
        }
    }

    #[test]
    fn tiny_epsilon_answers_or_says_why() {
        // The scan length does not grow as ε shrinks.
        let params = SampleThresholdParams::new(5e-4, 20).unwrap();
        let d = delta(1e-3, &params, Analysis::Tight, Neighbours::AddRemove).unwrap();
        assert!(d > 0.0 && d < 1e-6, "{d}");
        let params = SampleThresholdParams::new(5e-10, 20).unwrap();
        assert!(matches!(
            delta(1e-9, &params, Analysis::Tight, Neighbours::AddRemove),
            Err(Error::Infeasible { .. })
        ));
    }

    #[test]
    fn analyses_are_ordered() {
        for tau in [1, 5, 20, 60] {
            let d: Vec<f64> = Analysis::ALL.iter().map(|&a| delta_at(P, tau, a)).collect();
            assert!(d.windows(2).all(|w| w[0] >= w[1]), "τ = {tau}: {d:?}");
        }
    }

    #[test]
    fn threshold_one_leaks_the_sampling_rate() {
        // With τ = 1 a lone client's item is released whenever it is sampled.
        assert!(delta_at(0.1, 1, Analysis::Tight) >= 0.1 * (1.0 - 1.0 / 1.0_f64.exp()));
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(SampleThresholdParams::new(0.0, 3).is_err());
        assert!(SampleThresholdParams::new(1.0, 3).is_err());
        assert!(SampleThresholdParams::new(f64::NAN, 3).is_err());
        assert!(SampleThresholdParams::new(0.5, 0).is_err());
        let params = SampleThresholdParams::new(0.7, 3).unwrap();
        assert!(delta(1.0, &params, Analysis::Tight, Neighbours::AddRemove).is_err());
        let params = SampleThresholdParams::new(0.1, 3).unwrap();
        assert!(delta(-1.0, &params, Analysis::Tight, Neighbours::AddRemove).is_err());
        assert!(delta(2.0, &params, Analysis::ClosedForm, Neighbours::AddRemove).is_err());
        let params = SampleThresholdParams::new(0.55, 3).unwrap();
        assert!(delta(1.0, &params, Analysis::ClosedForm, Neighbours::AddRemove).is_err());
    }

    #[test]
    fn replace_one_costs_more_than_add_remove() {
        let params = SampleThresholdParams::new(0.1, 20).unwrap();
        let add = delta(1.0, &params, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let replace = delta(1.0, &params, Analysis::Tight, Neighbours::ReplaceOne).unwrap();
        assert!(replace > add);
        // The two-cell analysis is about 4x below the one-cell bound (add/remove at
        // ε − ln(1/(1−p_s))) here, and close to add/remove.
        let one_cell = delta(
            1.0 + (-0.1_f64).ln_1p(),
            &params,
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        assert!(
            replace < one_cell / 3.0 && replace < add * 1.01,
            "{replace:e}, {one_cell:e}"
        );
        let too_fast = SampleThresholdParams::new(0.45, 20).unwrap();
        assert!(delta(1.0, &too_fast, Analysis::Tight, Neighbours::ReplaceOne).is_err());
    }
}
