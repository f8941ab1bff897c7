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
    let raw = match analysis {
        Analysis::ClosedForm => closed_form(add_epsilon, p, params.threshold)?,
        Analysis::Theorem1 => theorem1(add_epsilon, p, params.threshold),
        Analysis::Exact => sup_over_group_size(add_epsilon, p, params.threshold, |_, _| 1.0)?,
        Analysis::Tight => {
            let scale = add_epsilon.exp() / (1.0 - p);
            let q = ratio_cutoff(add_epsilon, p);
            sup_over_group_size(add_epsilon, p, params.threshold, move |v, k| {
                // 1 − e^ε (k−v)/(k(1−p)) rewritten as e^ε (v − kq)/(k(1−p)) to avoid
                // cancellation.
                (scale * (v as f64 - k as f64 * q) / k as f64).clamp(0.0, 1.0)
            })?
        }
    };
    Ok(delta_upper(raw))
}

/// `q = 1 − e^{−ε}(1 − p_s)`: above `k·q` sampled copies the likelihood ratio exceeds `e^ε`.
fn ratio_cutoff(epsilon: f64, p: f64) -> f64 {
    1.0 - (-epsilon).exp() * (1.0 - p)
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

/// `sup_{k ≥ 1} Σ_{v ≥ max(τ, ⌊kq⌋+1)} b(v; k, p)·weight(v, k)` for a weight in `[0, 1]`.
///
/// For `k < τ` the sum is empty. Every term is at most `Pr[Bin(k,p) > kq] ≤ exp(−k D(q‖p))`
/// (Chernoff, as `q > p`), which decreases in `k`; the scan stops as soon as that bound falls
/// to the running maximum, so the sup is exact.
fn sup_over_group_size(
    epsilon: f64,
    p: f64,
    threshold: u64,
    weight: impl Fn(u64, u64) -> f64,
) -> Result<f64, Error> {
    let q = ratio_cutoff(epsilon, p);
    let divergence = kl_bernoulli(q, p);
    let mut ln_max = f64::NEG_INFINITY;
    let mut k = threshold;
    loop {
        if -(k as f64) * divergence <= ln_max {
            return Ok(ln_max.exp());
        }
        if k > MAX_SCAN {
            return Err(Error::infeasible(
                "delta",
                format!("the sup over group sizes did not settle by k = {MAX_SCAN}"),
            ));
        }
        // ⌊kq⌋ + 1 computed so that rounding can only add terms (a larger δ).
        let cutoff = ((k as f64 * q) * (1.0 - 4.0 * f64::EPSILON)).floor() as u64 + 1;
        let start = cutoff.max(threshold);
        let ln_term = ln_upper_tail_weighted(start, k, p, |v| weight(v, k));
        ln_max = ln_max.max(ln_term);
        k += 1;
    }
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
        let too_fast = SampleThresholdParams::new(0.45, 20).unwrap();
        assert!(delta(1.0, &too_fast, Analysis::Tight, Neighbours::ReplaceOne).is_err());
    }
}
