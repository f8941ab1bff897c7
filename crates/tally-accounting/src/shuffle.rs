//! Amplification by shuffling (docs/algorithms.md §8): the central `(ε, δ)` of `n` users who each
//! apply an `ε₀`-LDP randomizer and whose reports are shuffled (or summed), for replace-one
//! neighbours.
//!
//! Three bounds are offered ([`ShuffleBound`]):
//!
//! * [`ShuffleBound::Fmt21`]: the numerical bound of Feldman–McMillan–Talwar 2021, "Hiding
//!   among the clones" (Theorem 3.2 and Apple's `computeamplification.py`): the hockey-stick
//!   divergence of the dominating pair of §8.1 with clone probability `e^{−ε₀}`. Clone counts
//!   are bucketed as in Apple's `deltacomp`, but with buckets of about `σ_C/32` (one count
//!   below `σ_C = 32`) charged `δ_c` at their low end only: Apple's `deltaq` `max` bug (§8.2)
//!   has no counterpart, since `H_{e^ε}(P‖Q) = H_{e^ε}(Q‖P)` is computed once.
//! * [`ShuffleBound::Fmt23`]: the same computation with FMT23's "stronger clone" probability
//!   `2/(e^{ε₀}+1)` (§8.1). Never worse than FMT21. **Caveat (§8.1):** that this worst case
//!   covers *every* `ε₀`-LDP randomizer rests on a monotonicity claim of FMT23 and Wang et al.
//!   that was not verified here; for binary randomized response the pair is exact.
//! * [`ShuffleBound::ClosedForm`]: FMT21 Theorem 3.1 (§8.3), valid when
//!   `ε₀ ≤ ln(n / (16 ln(4/δ)))`; outside that range it gives no amplification (`ε = ε₀`).
//!
//! Balle et al.'s privacy-blanket bound (Theorem 5.3, §8.3) is available as
//! [`blanket_delta`].
//!
//! # Rigour
//!
//! Every `δ` is an upper bound. It rests on `δ_c` (the divergence given `c` clones) not
//! increasing in `c`, which is data processing: one more clone adds one more independent fair
//! coin to the observed count. Clone counts are bucketed and each bucket is charged `δ_c` at its
//! lowest `c`; the sum over `c` stops upward once `δ_c` times a geometric bound on the remaining
//! mass is negligible (the rest adds at most that) and downward once a geometric bound on the remaining mass is (charged in full);
//! truncated inner sums are charged a geometric tail bound; and the result is inflated by
//! [`numeric::delta_upper`]. Solved `ε` are rounded up and solved `ε₀` down.

use std::fmt;
use std::str::FromStr;

use crate::Collusion;
use crate::error::Error;
use crate::numeric;

/// Which amplification-by-shuffling analysis to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShuffleBound {
    /// FMT21 numerical bound: clone probability `e^{−ε₀}` (code-backed, conservative).
    Fmt21,
    /// FMT23 numerical bound: clone probability `2/(e^{ε₀}+1)` (tighter; see the module
    /// caveat). The default, as docs/algorithms.md §9 recommends.
    #[default]
    Fmt23,
    /// FMT21 Theorem 3.1 closed form.
    ClosedForm,
}

impl ShuffleBound {
    /// All bounds, in a fixed order.
    pub const ALL: [Self; 3] = [Self::Fmt21, Self::Fmt23, Self::ClosedForm];

    /// The bound's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fmt21 => "fmt21",
            Self::Fmt23 => "fmt23",
            Self::ClosedForm => "closed-form",
        }
    }
}

impl fmt::Display for ShuffleBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ShuffleBound {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| Error::invalid("bound", s, "one of fmt21, fmt23, closed-form"))
    }
}

/// The largest number of users accepted: `lgamma` keeps the margin of
/// [`numeric::DELTA_MARGIN`] up to here.
pub const MAX_USERS: u64 = numeric::MAX_SCAN;

/// Relative size below which truncated sums stop (their remainder is still added).
const SUM_TOLERANCE: f64 = 1e-10;

/// Relative width at which the bisections stop.
const BISECTION_TOLERANCE: f64 = 1e-9;

fn check_eps0(eps0: f64) -> Result<(), Error> {
    if eps0.is_finite() && eps0 > 0.0 && eps0 <= 50.0 {
        Ok(())
    } else {
        Err(Error::invalid("local epsilon", eps0, "a number in (0, 50]"))
    }
}

fn check_users(n: u64) -> Result<(), Error> {
    if (2..=MAX_USERS).contains(&n) {
        Ok(())
    } else {
        Err(Error::invalid(
            "users",
            n,
            format!("an integer in [2, {MAX_USERS}]"),
        ))
    }
}

fn check_epsilon(epsilon: f64) -> Result<(), Error> {
    if epsilon.is_finite() && epsilon >= 0.0 {
        Ok(())
    } else {
        Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"))
    }
}

fn check_delta(delta: f64) -> Result<(), Error> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("delta", delta, "a number in (0, 1)"))
    }
}

/// The probability that another user is a clone of user 1.
pub(crate) fn clone_probability(eps0: f64, bound: ShuffleBound) -> f64 {
    match bound {
        ShuffleBound::Fmt23 => 2.0 / (eps0.exp() + 1.0),
        ShuffleBound::Fmt21 | ShuffleBound::ClosedForm => (-eps0).exp(),
    }
}

/// `ln δ_c(ε)` for the pair conditioned on `C = c` (§8.2), as a sum of the positive terms
/// `P_c(t) − e^ε Q_c(t)`, `t ≤ t*`, walked down from the cutoff, with a geometric bound on what
/// is left when the walk stops.
fn ln_delta_given_clones(c: u64, eps0: f64, epsilon: f64) -> f64 {
    // a_Δ = e^{ε₀}/(e^{ε₀}+1) and 1 − a_Δ, computed without cancellation.
    let a = 1.0 / (1.0 + (-eps0).exp());
    let one_minus_a = 1.0 / (1.0 + eps0.exp());
    let e = epsilon.exp();
    // P_c(t) − e^ε Q_c(t) = b(t)·(coef_a + ρ_t·coef_b), ρ_t = b(t−1)/b(t) = t/(c−t+1).
    let coef_a = a - e * one_minus_a;
    let coef_b = one_minus_a - e * a;
    if coef_a <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let ratio = coef_a / -coef_b; // the term is ≥ 0 iff ρ_t ≤ ratio
    let cutoff = (ratio * (c as f64 + 1.0) / (1.0 + ratio)).floor();
    // One past the cutoff in case of rounding; a negative term there is dropped.
    let start = (cutoff.max(0.0) as u64 + 1).min(c);
    let ln_first = numeric::ln_choose(c, start) - c as f64 * std::f64::consts::LN_2;
    let mut relative = 1.0; // b(t)/b(start)
    let mut sum = 0.0;
    let mut t = start;
    loop {
        let rho = t as f64 / (c - t + 1) as f64;
        let term = relative * (coef_a + rho * coef_b);
        if term > 0.0 {
            sum += term;
        }
        if t == 0 {
            break;
        }
        // Below t, b(s−1)/b(s) ≤ ρ_t < 1 and the factor is ≤ coef_a: the rest is at most a
        // geometric series.
        let next = relative * rho;
        if rho < 1.0 && sum > 0.0 {
            let rest = coef_a * next / (1.0 - rho);
            if rest <= sum * SUM_TOLERANCE {
                sum += rest;
                break;
            }
        }
        relative = next;
        t -= 1;
    }
    ln_first + sum.ln()
}

/// Clone counts are grouped in buckets of about `σ_C / BUCKETS_PER_SIGMA` consecutive values;
/// each bucket is charged its mass times `δ_c` at its lowest `c`, an upper bound because `δ_c`
/// does not increase with `c`.
const BUCKETS_PER_SIGMA: f64 = 32.0;

/// δ(ε) of the dominating pair with the given clone probability, without the final margin.
///
/// Walks the buckets of clone counts outward from the mean of `C ~ Bin(n−1, p_clone)`: upward
/// until `δ_c` times a geometric bound on the remaining upper-tail mass is negligible, downward until a
/// geometric bound on the remaining lower-tail mass is (it is charged with `δ_c ≤ 1`).
fn delta_numerical(eps0: f64, n: u64, epsilon: f64, p_clone: f64) -> f64 {
    if epsilon >= eps0 {
        return 0.0;
    }
    let m = n - 1;
    let sd = (m as f64 * p_clone * (1.0 - p_clone)).sqrt();
    let width = ((sd / BUCKETS_PER_SIGMA).floor() as u64).max(1);
    let odds = p_clone / (1.0 - p_clone);
    let mean_bucket = ((m as f64 * p_clone).floor() as u64).min(m) / width;
    // The mass of bucket `k` (values k·w … min((k+1)·w − 1, m)) and its lowest value.
    let bucket = |k: u64| -> (u64, f64) {
        let first = k * width;
        let last = (first + width - 1).min(m);
        let mut relative = 1.0;
        let mut mass = 0.0;
        for c in first..=last {
            mass += relative;
            relative *= (m - c) as f64 / (c + 1) as f64 * odds;
        }
        (
            first,
            numeric::ln_binomial_pmf(first, m, p_clone) + mass.ln(),
        )
    };
    let mut sum = 0.0;
    // Upward from the mean's bucket.
    let mut k = mean_bucket;
    while k * width <= m {
        let (first, ln_mass) = bucket(k);
        let ln_dc = ln_delta_given_clones(first, eps0, epsilon);
        sum += (ln_mass + ln_dc).exp();
        // Everything above this bucket adds at most δ_c·Pr[C ≥ next], and
        // Pr[C ≥ next] ≤ b(next)/(1 − r) with r = b(next+1)/b(next), which only falls further up.
        let next = first + width;
        if next > m {
            break;
        }
        let r = (m - next) as f64 / (next + 1) as f64 * odds;
        let ln_tail = if r < 1.0 {
            (numeric::ln_binomial_pmf(next, m, p_clone) - (-r).ln_1p()).min(0.0)
        } else {
            0.0
        };
        let rest = (ln_dc + ln_tail).exp();
        if rest <= sum * SUM_TOLERANCE {
            sum += rest;
            break;
        }
        k += 1;
    }
    // Downward.
    let mut k = mean_bucket;
    while k > 0 {
        k -= 1;
        let (first, ln_mass) = bucket(k);
        let ln_dc = ln_delta_given_clones(first, eps0, epsilon);
        sum += (ln_mass + ln_dc).exp();
        if first == 0 {
            break;
        }
        // Pr[C < first] ≤ b(first)·r/(1−r) with r = b(first−1)/b(first), which only falls
        // further down.
        let r = first as f64 / (m - first + 1) as f64 / odds;
        if r < 1.0 {
            let rest = (numeric::ln_binomial_pmf(first, m, p_clone) + (r / (1.0 - r)).ln()).exp();
            if rest <= sum * SUM_TOLERANCE {
                sum += rest;
                break;
            }
        }
    }
    sum.min(1.0)
}

/// FMT21 Theorem 3.1's closed-form ε, or `None` outside its validity range
/// `ε₀ ≤ ln(n / (16 ln(4/δ)))`.
fn closed_form_epsilon(eps0: f64, n: u64, delta: f64) -> Option<f64> {
    let nf = n as f64;
    let ln4d = (4.0 / delta).ln();
    if eps0 > (nf / (16.0 * ln4d)).ln() {
        return None;
    }
    let a = 8.0 * (eps0.exp() * ln4d / nf).sqrt();
    let c = 8.0 * eps0.exp() / nf;
    let e_ = (a + c).ln_1p();
    let b = -(-eps0).exp_m1();
    let d = 1.0 + (-eps0 - e_).exp();
    Some((b / d * (a + c)).ln_1p())
}

/// A `δ` such that `n` shuffled `eps0`-LDP reports are `(epsilon, δ)`-DP for replace-one
/// neighbours, by `bound`; an upper bound on the bound's exact value.
///
/// For [`ShuffleBound::ClosedForm`] this is the smallest `δ` (found by bisection on `ln δ`,
/// rounded up) at which Theorem 3.1 applies and gives at most `epsilon`, or 1 if none does.
/// For every bound, `δ = 0` once `epsilon ≥ eps0`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `eps0 ∉ (0, 50]`, `n ∉ [2, MAX_USERS]` or `epsilon < 0`.
pub fn shuffle_delta(eps0: f64, n: u64, epsilon: f64, bound: ShuffleBound) -> Result<f64, Error> {
    check_eps0(eps0)?;
    check_users(n)?;
    check_epsilon(epsilon)?;
    if epsilon >= eps0 {
        return Ok(0.0);
    }
    match bound {
        ShuffleBound::Fmt21 | ShuffleBound::Fmt23 => Ok(numeric::delta_upper(delta_numerical(
            eps0,
            n,
            epsilon,
            clone_probability(eps0, bound),
        ))),
        ShuffleBound::ClosedForm => Ok(closed_form_delta(eps0, n, epsilon)),
    }
}

fn closed_form_delta(eps0: f64, n: u64, epsilon: f64) -> f64 {
    let ok =
        |ln_delta: f64| closed_form_epsilon(eps0, n, ln_delta.exp()).is_some_and(|e| e <= epsilon);
    // The closed-form ε decreases in δ; the validity range is an upper interval of δ.
    let mut hi = (0.5f64).ln();
    if !ok(hi) {
        return 1.0;
    }
    let mut lo = f64::MIN_POSITIVE.ln();
    if ok(lo) {
        return f64::MIN_POSITIVE;
    }
    while hi - lo > 1e-12 * lo.abs().max(1.0) {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi.exp().min(1.0)
}

/// The smallest central `ε` (to a relative `1e-10`, rounded up) such that `n` shuffled
/// `eps0`-LDP reports are `(ε, delta)`-DP for replace-one neighbours, by `bound`. Never more
/// than `eps0` (shuffling is post-processing).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `eps0 ∉ (0, 50]`, `n ∉ [2, MAX_USERS]` or
/// `delta ∉ (0, 1)`.
pub fn shuffle_epsilon(eps0: f64, n: u64, delta: f64, bound: ShuffleBound) -> Result<f64, Error> {
    check_eps0(eps0)?;
    check_users(n)?;
    check_delta(delta)?;
    if bound == ShuffleBound::ClosedForm {
        return Ok(closed_form_epsilon(eps0, n, delta).map_or(eps0, |e| e.min(eps0)));
    }
    let p_clone = clone_probability(eps0, bound);
    // f(ε) = ln δ(ε) − ln δ_target decreases in ε; solve f = 0 by the Illinois variant of
    // regula falsi (ln δ is smooth in ε), falling back to bisection, keeping f(hi) ≤ 0.
    let f =
        |eps: f64| numeric::delta_upper(delta_numerical(eps0, n, eps, p_clone)).ln() - delta.ln();
    let (mut lo, mut hi) = (0.0, eps0);
    let mut f_lo = f(lo);
    if f_lo <= 0.0 {
        return Ok(0.0);
    }
    let mut f_hi = f64::NEG_INFINITY;
    let mut side = 0i8;
    while hi - lo > BISECTION_TOLERANCE * hi {
        let secant = if f_hi.is_finite() {
            (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        } else {
            f64::NAN
        };
        let width = hi - lo;
        let mid = if secant > lo + 0.01 * width && secant < hi - 0.01 * width {
            secant
        } else {
            0.5 * (lo + hi)
        };
        let f_mid = f(mid);
        if f_mid <= 0.0 {
            hi = mid;
            f_hi = f_mid;
            if side == -1 {
                f_lo *= 0.5;
            }
            side = -1;
        } else {
            lo = mid;
            f_lo = f_mid;
            if side == 1 {
                f_hi *= 0.5;
            }
            side = 1;
        }
    }
    Ok(hi)
}

/// The largest local `ε₀` (to a relative `1e-10`, rounded down) such that `n` shuffled
/// `ε₀`-LDP reports are `(epsilon, delta)`-DP for replace-one neighbours, by `bound`. At least
/// `epsilon` (an `epsilon`-LDP randomizer is `epsilon`-DP after shuffling).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `epsilon ∉ (0, 50]`, `n ∉ [2, MAX_USERS]` or
/// `delta ∉ (0, 1)`.
pub fn max_local_epsilon(
    epsilon: f64,
    n: u64,
    delta: f64,
    bound: ShuffleBound,
) -> Result<f64, Error> {
    if !(epsilon.is_finite() && epsilon > 0.0 && epsilon <= 50.0) {
        return Err(Error::invalid("epsilon", epsilon, "a number in (0, 50]"));
    }
    check_users(n)?;
    check_delta(delta)?;
    let ok = |eps0: f64| -> Result<bool, Error> {
        Ok(match bound {
            ShuffleBound::ClosedForm => shuffle_epsilon(eps0, n, delta, bound)? <= epsilon,
            _ => shuffle_delta(eps0, n, epsilon, bound)? <= delta,
        })
    };
    let mut lo = epsilon;
    let mut hi = (2.0 * epsilon).min(50.0);
    while ok(hi)? {
        if hi >= 50.0 {
            return Ok(50.0);
        }
        lo = hi;
        hi = (2.0 * hi).min(50.0);
    }
    while hi - lo > BISECTION_TOLERANCE * hi {
        let mid = 0.5 * (lo + hi);
        if ok(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The central `ε` at `delta` an honest user of `n` shuffled `eps0`-LDP reports keeps when a
/// fraction `colluding_fraction` of them colludes with the adversary: the colluders' reports
/// are known, so only the [`crate::honest_users`] are shuffled, and the amplification is over
/// them ([`shuffle_epsilon`]); with every other user colluding it is the local `ε₀` (one
/// report, `(ε₀, 0)`-DP). Never above `ε₀`.
///
/// # Errors
///
/// As [`shuffle_epsilon`] and [`crate::honest_users`].
pub fn colluding_epsilon(
    eps0: f64,
    n: u64,
    delta: f64,
    bound: ShuffleBound,
    colluding_fraction: f64,
) -> Result<f64, Error> {
    check_eps0(eps0)?;
    let honest = crate::honest_users(n, colluding_fraction)?;
    if honest < 2 {
        return Ok(eps0);
    }
    Ok(shuffle_epsilon(eps0, honest, delta, bound)?.min(eps0))
}

/// The guarantee an honest user of `n` shuffled `eps0`-LDP reports, calibrated to
/// `(epsilon, delta)`, keeps when a fraction `colluding_fraction` of them colludes with the
/// analyst: [`colluding_epsilon`] at the same `δ` and `bound`, with the floor `ε₀` (every
/// other user colluding leaves the user's own `ε₀`-LDP report).
///
/// # Errors
///
/// As [`colluding_epsilon`].
pub fn grr_collusion(
    eps0: f64,
    n: u64,
    (epsilon, delta): (f64, f64),
    bound: ShuffleBound,
    colluding_fraction: f64,
) -> Result<Collusion, Error> {
    Collusion::over_honest(colluding_fraction, n, (epsilon, delta), eps0, |_| {
        Ok((
            colluding_epsilon(eps0, n, delta, bound, colluding_fraction)?,
            delta,
        ))
    })
}

/// Balle et al.'s privacy-blanket bound (Theorem 5.3; docs/algorithms.md §8.3): a `δ` for which
/// `n` shuffled `eps0`-LDP reports are `(epsilon, δ)`-DP, inflated by
/// [`numeric::delta_upper`], and capped at 1.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `eps0 ∉ (0, 50]`, `n ∉ [2, MAX_USERS]` or
/// `epsilon ≤ 0`.
pub fn blanket_delta(eps0: f64, n: u64, epsilon: f64) -> Result<f64, Error> {
    check_eps0(eps0)?;
    check_users(n)?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    let nf = n as f64;
    let spread = (eps0.exp() - (-eps0).exp()).powi(2);
    let ep1 = epsilon.exp() + 1.0;
    let em1 = epsilon.exp_m1();
    let constant = -(-2.0f64).exp_m1();
    let rate = (-eps0).exp().min(em1 * em1 / (ep1 * ep1 * spread));
    let ln_delta = (ep1 * ep1 * spread / (4.0 * nf * em1)).ln() - constant * nf * rate;
    Ok(numeric::delta_upper(ln_delta.exp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_form_matches_appendix_a() {
        let eps = closed_form_epsilon(4.0, 100_000, 1e-6).unwrap();
        assert!((eps - 0.537_804_024_237_451_2).abs() < 1e-14, "{eps}");
    }

    #[test]
    fn delta_given_clones_small_cases() {
        // c = 0: N_1 ∈ {0, 1}, δ_0 = a − e^ε(1 − a).
        let (eps0, eps) = (1.0f64, 0.3f64);
        let a = eps0.exp() / (eps0.exp() + 1.0);
        let expected = a - eps.exp() * (1.0 - a);
        assert!((ln_delta_given_clones(0, eps0, eps).exp() - expected).abs() < 1e-15);
        // c = 1: t ∈ {0, 1, 2}, b(·; 1, ½) = ½, ½.
        let p = [a / 2.0, 0.5, (1.0 - a) / 2.0];
        let q = [(1.0 - a) / 2.0, 0.5, a / 2.0];
        let direct: f64 = (0..3).map(|t| (p[t] - eps.exp() * q[t]).max(0.0)).sum();
        assert!((ln_delta_given_clones(1, eps0, eps).exp() - direct).abs() < 1e-15);
    }

    #[test]
    fn delta_given_clones_matches_direct_sum() {
        let (eps0, eps) = (2.0f64, 0.4f64);
        let a = eps0.exp() / (eps0.exp() + 1.0);
        for c in [5u64, 40, 300] {
            let b = |t: i64| {
                if t < 0 || t > c as i64 {
                    0.0
                } else {
                    numeric::ln_choose(c, t as u64).exp() * 0.5f64.powi(c as i32)
                }
            };
            let direct: f64 = (0..=c as i64 + 1)
                .map(|t| {
                    let p = a * b(t) + (1.0 - a) * b(t - 1);
                    let q = (1.0 - a) * b(t) + a * b(t - 1);
                    (p - eps.exp() * q).max(0.0)
                })
                .sum();
            let got = ln_delta_given_clones(c, eps0, eps).exp();
            assert!(
                got >= direct * (1.0 - 1e-10) && got <= direct * (1.0 + 1e-9),
                "c = {c}: {got} vs {direct}"
            );
        }
    }
}
