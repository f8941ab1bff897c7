//! Rényi differential privacy (RDP) accounting: per-order bounds on the Rényi divergence,
//! composed by addition and converted to `(ε, δ)`.
//!
//! A mechanism is `(λ, ρ)`-RDP if `D_λ(M(x) ‖ M(x')) ≤ ρ` for all neighbours `x, x'` (both
//! orders of the pair), where `D_λ(P ‖ Q) = (1/(λ−1)) ln Σ P^λ Q^{1−λ}`. An [`RdpCurve`] holds
//! an upper bound `ρ_λ` at each order of the fixed grid [`ORDERS`].
//!
//! | Curve | `ρ_λ` |
//! | --- | --- |
//! | [`RdpCurve::pure`] (`ε`-DP) | `(1/(λ−1)) ln((sinh(λε) − sinh((λ−1)ε)) / sinh ε)`, that of randomized response |
//! | [`RdpCurve::gaussian`] (continuous or discrete, sensitivity `Δ`) | `λΔ²/(2σ²)` |
//! | [`RdpCurve::laplace`] (scale `b`, sensitivity `Δ`) | `(1/(λ−1)) ln(λ/(2λ−1) e^{(λ−1)Δ/b} + (λ−1)/(2λ−1) e^{−λΔ/b})` (Mironov 2017, Table II) |
//! | [`RdpCurve::from_pair`] (a discrete dominating pair) | `max(D_λ(P‖Q), D_λ(Q‖P))`, numerically |
//!
//! The pure-DP curve is tight: every `ε`-DP pair is a post-processing of the randomized-response
//! pair `(e^ε, 1)/(1+e^ε)` against `(1, e^ε)/(1+e^ε)` (the dominating pair of
//! [`crate::composition`] with `δ = 0`), so by data processing its divergence bounds every
//! `ε`-DP mechanism's, and randomized response attains it. Writing its sum as
//! `(e^{λε} + e^{−(λ−1)ε})/(1+e^ε) = cosh((λ−½)ε)/cosh(ε/2)` gives the `sinh` form above and the
//! numerically stable one used here. The discrete Gaussian's bound is Canonne–Kamath–Steinke
//! 2020 (Thm 4, integer `Δ`).
//!
//! # Composition and conversion
//!
//! RDP composes adaptively by adding `ρ_λ` at each order ([`RdpCurve::compose`]). A curve is
//! converted to `(ε, δ)` at the best order of the grid by [`Conversion::Cks`],
//! `ε = ρ_λ + (ln(1/δ) − ln λ)/(λ−1) + ln(1 − 1/λ)` (Canonne–Kamath–Steinke 2020, Prop. 12;
//! Balle et al. 2020, Thm 21 is the same bound written as
//! `ρ + ln((λ−1)/λ) − (ln δ + ln λ)/(λ−1)`), or by [`Conversion::Standard`],
//! `ε = ρ_λ + ln(1/δ)/(λ−1)` (Mironov 2017, Prop. 3), which is never better. The Cks form was
//! checked numerically against the exact `(ε, δ)` curve of the Gaussian mechanism (it never
//! undercuts it) here and in `tools/reference/composition.py`.
//!
//! # Rounding
//!
//! Every `ρ_λ` is an upper bound: each is computed with a bound on its floating-point error
//! added and then inflated by [`crate::composition::EPSILON_MARGIN`]; sums and multiples are
//! rounded up exactly. Converted `ε` are inflated the same way, and converted `δ` by
//! [`crate::numeric::DELTA_MARGIN`].

use crate::Error;
use crate::composition::{add_up, check_round, epsilon_upper, mul_up};
use crate::numeric::delta_upper;
use crate::pld::check_pair;

/// The Rényi orders `λ` at which every [`RdpCurve`] is kept.
pub const ORDERS: [f64; 40] = [
    1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 4.5,
    5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0, 14.0, 16.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 64.0,
    80.0, 96.0, 128.0, 256.0, 512.0, 1024.0,
];

/// The unit roundoff of `f64`.
const UNIT: f64 = f64::EPSILON / 2.0;

/// How an RDP bound is converted to `(ε, δ)`-DP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conversion {
    /// Mironov 2017, Prop. 3: `ε = ρ_λ + ln(1/δ)/(λ−1)`.
    Standard,
    /// Canonne–Kamath–Steinke 2020, Prop. 12:
    /// `ε = ρ_λ + (ln(1/δ) − ln λ)/(λ−1) + ln(1 − 1/λ)`, never worse than `Standard`.
    Cks,
}

/// Upper bounds on the Rényi divergence of a mechanism at each order of [`ORDERS`].
#[derive(Clone, Debug, PartialEq)]
pub struct RdpCurve {
    /// `ρ_λ` for `λ = ORDERS[i]`, possibly `+∞`.
    rho: Vec<f64>,
}

impl RdpCurve {
    /// Builds a curve from `ρ(λ, λ−1)` (an upper bound without the final margin).
    fn from_fn(rho: impl Fn(f64, f64) -> f64) -> Self {
        let rho = ORDERS
            .iter()
            .map(|&order| epsilon_upper(rho(order, order - 1.0)))
            .collect();
        Self { rho }
    }

    /// The tight RDP curve of a pure `ε`-DP mechanism (that of randomized response):
    /// `ρ_λ = (ln cosh((λ−½)ε) − ln cosh(ε/2))/(λ−1)`.
    ///
    /// # Privacy
    ///
    /// Holds for every `ε`-DP mechanism, for the neighbour relation and trust model of its
    /// `ε`-DP guarantee: each `ε`-DP pair is a post-processing of randomized response.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `ε > 0` is finite.
    pub fn pure(epsilon: f64) -> Result<Self, Error> {
        check_round(epsilon, 0.0, 1)?;
        Ok(Self::from_fn(|order, gap| {
            let (a, b) = (ln_cosh((order - 0.5) * epsilon), ln_cosh(0.5 * epsilon));
            // a > b; both are within a few ulps, and a/(a−b) ≤ 6 on the grid.
            ((a - b) + 8.0 * UNIT * (a + b)) / gap
        }))
    }

    /// The RDP curve of the Gaussian mechanism with noise `N(0, σ²)` (or the discrete Gaussian
    /// with parameter `σ`) on a query of sensitivity `Δ`: `ρ_λ = λΔ²/(2σ²)`.
    ///
    /// # Privacy
    ///
    /// For the neighbour relation under which the query's sensitivity is `Δ` (an integer `Δ`
    /// for the discrete Gaussian), in whichever trust model adds the noise.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `Δ > 0` and `σ > 0` are finite.
    pub fn gaussian(sensitivity: f64, sigma: f64) -> Result<Self, Error> {
        check_scale(sensitivity, sigma)?;
        let ratio = sensitivity / sigma;
        // Four roundings, far inside the ε margin.
        Ok(Self::from_fn(|order, _| order * ratio * ratio / 2.0))
    }

    /// The RDP curve of the Laplace mechanism with scale `b` on a query of sensitivity `Δ`
    /// (Mironov 2017, Table II, with `b/Δ` for `b`).
    ///
    /// # Privacy
    ///
    /// For the neighbour relation under which the query's sensitivity (in `ℓ₁`) is `Δ`; the
    /// mechanism is also `Δ/b`-DP, and the curve is never above [`RdpCurve::pure`] of that.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `Δ > 0` and `b > 0` are finite.
    pub fn laplace(sensitivity: f64, scale: f64) -> Result<Self, Error> {
        check_scale(sensitivity, scale)?;
        let inv = sensitivity / scale;
        let laplace = Self::from_fn(|order, gap| {
            let two = 2.0 * order - 1.0;
            // The larger exponent t1 and the smaller t2 = t1 − ln(λ/(λ−1)) − (2λ−1)Δ/b.
            let t1 = (order / two).ln() + gap * inv;
            let log_ratio = (gap / order).ln() - two * inv;
            let log_sum = t1 + log_ratio.exp().ln_1p();
            (log_sum + 8.0 * UNIT * (t1.abs() + log_ratio.abs() + 1.0)) / gap
        });
        let pure = Self::pure(inv)?;
        let rho = laplace.rho.iter().zip(&pure.rho).map(|(a, b)| a.min(*b));
        Ok(Self { rho: rho.collect() })
    }

    /// The RDP curve of a discrete dominating pair given as probability vectors over the same
    /// outcomes: `ρ_λ = max(D_λ(P‖Q), D_λ(Q‖P))`, computed in log space (`+∞` if one vector
    /// has mass where the other has none).
    ///
    /// # Privacy
    ///
    /// For the mechanisms, neighbour relation and trust model that `(P, Q)` dominates.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless the vectors have the same length, finite non-negative
    /// entries and sums of 1 within `1e-9`.
    pub fn from_pair(p: &[f64], q: &[f64]) -> Result<Self, Error> {
        check_pair(p, q)?;
        let forward = Self::from_fn(|order, gap| renyi_upper(p, q, order, gap));
        let backward = Self::from_fn(|order, gap| renyi_upper(q, p, order, gap));
        let rho = forward
            .rho
            .iter()
            .zip(&backward.rho)
            .map(|(a, b)| a.max(*b));
        Ok(Self { rho: rho.collect() })
    }

    /// `ρ_λ` at each order of [`ORDERS`].
    pub fn values(&self) -> &[f64] {
        &self.rho
    }

    /// The curve of running both mechanisms: `ρ_λ` add, rounded up.
    pub fn compose(&self, other: &Self) -> Self {
        let rho = self.rho.iter().zip(&other.rho).map(|(a, b)| add_up(*a, *b));
        Self { rho: rho.collect() }
    }

    /// The curve of `k` runs: `k·ρ_λ`, rounded up.
    pub fn self_compose(&self, k: u64) -> Self {
        let rho = self.rho.iter().map(|r| mul_up(k as f64, *r));
        Self { rho: rho.collect() }
    }

    /// The smallest `ε ≥ 0` over the orders of the grid such that the curve implies
    /// `(ε, δ)`-DP by `conversion`, rounded up.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `δ ∈ (0, 1)`; [`Error::Infeasible`] if every `ρ_λ`
    /// is infinite.
    pub fn epsilon(&self, delta: f64, conversion: Conversion) -> Result<f64, Error> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
        }
        let ln_inv_delta = -delta.ln();
        let best = ORDERS
            .iter()
            .zip(&self.rho)
            .map(|(&order, &rho)| {
                let gap = order - 1.0;
                let (extra, ln_order) = match conversion {
                    Conversion::Standard => (0.0, 0.0),
                    Conversion::Cks => ((-1.0 / order).ln_1p(), order.ln()),
                };
                let raw = rho + (ln_inv_delta - ln_order) / gap + extra;
                let err = 8.0 * UNIT * (rho + (ln_inv_delta + ln_order) / gap - extra);
                epsilon_upper(raw + err)
            })
            .fold(f64::INFINITY, f64::min);
        if best.is_finite() {
            Ok(best.max(0.0))
        } else {
            Err(Error::infeasible(
                "epsilon",
                "the Rényi divergence is infinite at every order",
            ))
        }
    }

    /// The smallest `δ` over the orders of the grid such that the curve implies `(ε, δ)`-DP by
    /// the [`Conversion::Cks`] bound `δ = exp((λ−1)(ρ_λ − ε) + (λ−1) ln(1 − 1/λ) − ln λ)`,
    /// rounded up and capped at 1.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `ε ≥ 0` is finite.
    pub fn delta(&self, epsilon: f64) -> Result<f64, Error> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        let best = ORDERS
            .iter()
            .zip(&self.rho)
            .map(|(&order, &rho)| {
                let gap = order - 1.0;
                let exponent = gap * (rho - epsilon) + gap * (-1.0 / order).ln_1p() - order.ln();
                let err = 8.0 * UNIT * (gap * (rho + epsilon) + gap + order.ln());
                delta_upper((exponent + err).exp())
            })
            .fold(1.0, f64::min);
        Ok(best)
    }
}

/// `ln cosh x` for `x ≥ 0`, to a few ulps: `ln(1 + 2 sinh²(x/2))` below 1, and
/// `x − ln 2 + ln(1 + e^{−2x})` above.
fn ln_cosh(x: f64) -> f64 {
    if x < 1.0 {
        let s = (0.5 * x).sinh();
        (2.0 * s * s).ln_1p()
    } else {
        x - std::f64::consts::LN_2 + (-2.0 * x).exp().ln_1p()
    }
}

/// `D_λ(P ‖ Q)` plus a bound on its rounding error (before the final margin).
fn renyi_upper(p: &[f64], q: &[f64], order: f64, gap: f64) -> f64 {
    let mut exponents = Vec::with_capacity(p.len());
    let mut err = 0.0_f64;
    for (&pi, &qi) in p.iter().zip(q) {
        if pi == 0.0 {
            continue;
        }
        if qi == 0.0 {
            return f64::INFINITY;
        }
        let (lp, lq) = (pi.ln(), qi.ln());
        exponents.push(order * lp - gap * lq);
        err = err.max(4.0 * UNIT * (order * lp.abs() + gap * lq.abs()));
    }
    let top = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = exponents.iter().map(|e| (e - top).exp()).sum();
    let log_sum = top + sum.ln();
    (log_sum + err + (exponents.len() as f64 + 4.0) * UNIT * (1.0 + log_sum.abs())) / gap
}

/// Checks a sensitivity and a noise scale.
fn check_scale(sensitivity: f64, scale: f64) -> Result<(), Error> {
    if !(sensitivity.is_finite() && sensitivity > 0.0) {
        return Err(Error::invalid(
            "sensitivity",
            sensitivity,
            "a finite number > 0",
        ));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(Error::invalid("noise scale", scale, "a finite number > 0"));
    }
    Ok(())
}

/// The smallest `ε_total` at which `k` releases, each pure `ε`-DP, are jointly
/// `(ε_total, target_delta)`-DP by RDP ([`RdpCurve::pure`], composed, converted with
/// [`Conversion::Cks`]). Returns `(ε_total, target_delta)`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `k ≥ 1` and
/// `target_delta ∈ (0, 1)`.
pub fn compose_rdp_homogeneous(
    epsilon: f64,
    k: u64,
    target_delta: f64,
) -> Result<(f64, f64), Error> {
    check_round(epsilon, 0.0, k)?;
    let total = RdpCurve::pure(epsilon)?
        .self_compose(k)
        .epsilon(target_delta, Conversion::Cks)?;
    Ok((total, target_delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composition::compose_optimal_homogeneous;

    /// `Φ(x)`, the standard normal CDF.
    fn phi(x: f64) -> f64 {
        0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
    }

    /// The exact `δ(ε)` of the Gaussian mechanism with sensitivity/σ ratio `r`.
    fn gaussian_delta(r: f64, epsilon: f64) -> f64 {
        phi(r / 2.0 - epsilon / r) - epsilon.exp() * phi(-r / 2.0 - epsilon / r)
    }

    #[test]
    fn pure_curve_is_randomized_response() {
        for eps in [0.01_f64, 0.3, 1.0, 4.0] {
            let curve = RdpCurve::pure(eps).unwrap();
            for (&order, &rho) in ORDERS.iter().zip(curve.values()) {
                let sinh_form = ((order * eps).sinh() - ((order - 1.0) * eps).sinh()) / eps.sinh();
                let direct = sinh_form.ln() / (order - 1.0);
                if direct.is_finite() {
                    assert!(rho >= direct * (1.0 - 1e-9), "{eps} {order}");
                } else {
                    // sinh overflows at large λε; the log-space form below still applies.
                    assert!(order * eps > 700.0);
                }
                // ln(p^λ q^{1−λ} + q^λ p^{1−λ}) = ln(e^{λε} + e^{−(λ−1)ε}) − ln(1 + e^ε).
                let ln_sum = order * eps + (-(2.0 * order - 1.0) * eps).exp().ln_1p()
                    - eps
                    - (-eps).exp().ln_1p();
                let rr = ln_sum / (order - 1.0);
                assert!(rho <= eps, "{eps} {order}");
                assert!(
                    ((rho - rr) / rr).abs() < 1e-8,
                    "{eps} {order}: {rho} vs {rr}"
                );
                // Bun–Steinke: ε-DP is (ε²/2)-zCDP.
                assert!(rho <= order * eps * eps / 2.0 * (1.0 + 1e-9));
            }
            // The pair form agrees.
            let p = [1.0 / (1.0 + (-eps).exp()), 1.0 / (1.0 + eps.exp())];
            let pair = RdpCurve::from_pair(&p, &[p[1], p[0]]).unwrap();
            for (a, b) in pair.values().iter().zip(curve.values()) {
                assert!(((a - b) / b).abs() < 1e-9, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn cks_conversion_never_undercuts_the_exact_gaussian_curve() {
        for ratio in [0.05_f64, 0.2, 0.5, 1.0, 2.0, 5.0] {
            for k in [1_u64, 10, 1000] {
                let curve = RdpCurve::gaussian(ratio, 1.0).unwrap().self_compose(k);
                let r = ratio * (k as f64).sqrt();
                for delta in [1e-3, 1e-6, 1e-10] {
                    let cks = curve.epsilon(delta, Conversion::Cks).unwrap();
                    if cks > 600.0 {
                        // e^ε overflows in the exact curve below.
                        continue;
                    }
                    let standard = curve.epsilon(delta, Conversion::Standard).unwrap();
                    assert!(cks <= standard);
                    assert!(gaussian_delta(r, cks) <= delta, "{ratio} {k} {delta}");
                    let back = curve.delta(cks).unwrap();
                    assert!(back <= delta * (1.0 + 1e-5) && gaussian_delta(r, cks) <= back);
                }
            }
        }
    }

    #[test]
    fn laplace_matches_mironov_and_stays_below_pure() {
        // λ = 2, b = 1: ln(2/3 e + 1/3 e^{−2}).
        let curve = RdpCurve::laplace(1.0, 1.0).unwrap();
        let i = ORDERS
            .iter()
            .position(|&o| o.to_bits() == 2.0_f64.to_bits());
        let expected = (2.0 / 3.0 * 1.0_f64.exp() + (-2.0_f64).exp() / 3.0).ln();
        let rho = curve.values()[i.unwrap()];
        assert!(rho >= expected && rho <= expected * (1.0 + 1e-10));
        let pure = RdpCurve::pure(1.0).unwrap();
        assert!(
            curve
                .values()
                .iter()
                .zip(pure.values())
                .all(|(a, b)| a <= b)
        );
    }

    #[test]
    fn rdp_is_above_the_optimal_composition() {
        for (eps, k) in [(0.1, 100), (0.5, 10), (1.0, 1000)] {
            let (rdp, _) = compose_rdp_homogeneous(eps, k, 1e-6).unwrap();
            let (opt, _) = compose_optimal_homogeneous(eps, 0.0, k, 1e-6).unwrap();
            assert!(rdp >= opt, "{eps} {k}: {rdp} < {opt}");
        }
    }

    #[test]
    fn infinite_divergence_and_bad_parameters() {
        let curve = RdpCurve::from_pair(&[0.5, 0.5], &[1.0, 0.0]).unwrap();
        assert!(curve.values().iter().all(|r| r.is_infinite()));
        assert!(curve.epsilon(1e-6, Conversion::Cks).is_err());
        assert!(RdpCurve::pure(0.0).is_err());
        assert!(RdpCurve::gaussian(1.0, 0.0).is_err());
        assert!(RdpCurve::laplace(-1.0, 1.0).is_err());
        assert!(compose_rdp_homogeneous(1.0, 10, 1.0).is_err());
        assert!(RdpCurve::pure(1.0).unwrap().delta(-1.0).is_err());
    }
}
