//! Numerical primitives shared by the analyses (docs/algorithms.md §0).

/// Relative safety margin added to every `δ` computed in floating point.
///
/// The binomial sums behind the analyses are evaluated in log space from `lgamma`, whose
/// absolute error is a few ulps of `ln(k!)`; for the `k ≤` [`MAX_SCAN`] scanned here that is
/// below `1e-7` in relative terms. Inflating every `δ` by `1e-6` keeps the reported value an
/// upper bound on the true one.
pub const DELTA_MARGIN: f64 = 1e-6;

/// The largest group size `k` the sup-over-`k` analyses scan before giving up.
pub const MAX_SCAN: u64 = 10_000_000;

/// Inflates a floating-point `δ` so that it upper-bounds the exact value.
pub fn delta_upper(delta: f64) -> f64 {
    (delta * (1.0 + DELTA_MARGIN)).min(1.0)
}

/// The Bernoulli Kullback–Leibler divergence `D(q‖p) = q ln(q/p) + (1−q) ln((1−q)/(1−p))`.
///
/// Defined for `p ∈ (0, 1)` and `q ∈ [0, 1]`.
pub fn kl_bernoulli(q: f64, p: f64) -> f64 {
    let term = |a: f64, b: f64| if a == 0.0 { 0.0 } else { a * (a / b).ln() };
    term(q, p) + term(1.0 - q, 1.0 - p)
}

/// An upper bound on `ln Pr[Bin(trials, p) ≥ at_least]`, by the Chernoff bound in its
/// Kullback–Leibler form, `Pr[Bin(N, p) ≥ m] ≤ exp(−N·D(m/N ‖ p))` for `m ≥ Np` (and the
/// trivial bound 0 below the mean, `−∞` above `N`).
///
/// Valid for every `N` (no sum is evaluated, so it stays accurate where `lgamma`-based sums
/// do not, up to `N = 2^64`). Every rounding goes the safe way: `m/N` is rounded down (the
/// divergence grows with it above the mean), the divergence is computed as
/// `a·ln(1 + x/p) + (1 − a)·ln(1 − x/(1 − p))` with `x = a − p` and then lowered by `1e-14`
/// of its two terms' magnitudes (about 30 times the few ulps each carries, which matter
/// because the terms nearly cancel near the mean), and `N` is rounded down.
pub fn ln_binomial_upper_tail_chernoff(at_least: u64, trials: u64, p: f64) -> f64 {
    if at_least > trials {
        return f64::NEG_INFINITY;
    }
    let ratio = ((at_least as f64).next_down() / (trials as f64).next_up()).next_down();
    let x = ratio - p;
    if x <= 0.0 {
        return 0.0;
    }
    let above = ratio * (x / p).ln_1p();
    let below = (1.0 - ratio) * (-x / (1.0 - p)).ln_1p();
    let divergence = above + below - 1e-14 * (above.abs() + below.abs());
    -(divergence.max(0.0) * (trials as f64).next_down())
}

/// `ln C(k, v)`, the log binomial coefficient, for `v ≤ k`.
pub fn ln_choose(k: u64, v: u64) -> f64 {
    debug_assert!(v <= k);
    let lf = |x: u64| libm::lgamma(x as f64 + 1.0);
    lf(k) - lf(v) - lf(k - v)
}

/// `ln b(v; k, p)`, the log of the binomial pmf `Pr[Bin(k, p) = v]`, for `v ≤ k`, `p ∈ (0,1)`.
pub fn ln_binomial_pmf(v: u64, k: u64, p: f64) -> f64 {
    ln_choose(k, v) + v as f64 * p.ln() + (k - v) as f64 * (-p).ln_1p()
}

/// `ln Σ_{v ≥ start} b(v; k, p)·weight(v)` for a non-negative weight, summed upward from
/// `start` by the pmf recurrence until the terms stop mattering.
///
/// Requires `start ≥ k·p` so that the terms are decreasing in `v` (up to the weight, which
/// must grow at most polynomially). Returns `-∞` for an empty sum.
pub fn ln_upper_tail_weighted(start: u64, k: u64, p: f64, weight: impl Fn(u64) -> f64) -> f64 {
    if start > k {
        return f64::NEG_INFINITY;
    }
    let ln_first = ln_binomial_pmf(start, k, p);
    let odds = p / (1.0 - p);
    // Sum the pmf relative to its value at `start` to stay in range.
    let mut relative = 1.0;
    let mut sum = 0.0;
    for v in start..=k {
        let term = relative * weight(v);
        sum += term;
        if v > start && term <= sum * 1e-18 && relative <= 1e-18 {
            break;
        }
        relative *= (k - v) as f64 / (v + 1) as f64 * odds;
    }
    ln_first + sum.ln()
}

/// `ln Σ_{v ≤ end} b(v; k, p)·weight(v)` for a non-negative weight, summed downward from
/// `end` by the pmf recurrence until the terms stop mattering.
///
/// Requires `end ≤ k·p` so that the terms are decreasing as `v` falls (up to the weight, which
/// must be at most polynomial). Returns `-∞` for an empty sum.
pub fn ln_lower_tail_weighted(end: u64, k: u64, p: f64, weight: impl Fn(u64) -> f64) -> f64 {
    let end = end.min(k);
    let ln_first = ln_binomial_pmf(end, k, p);
    let odds = (1.0 - p) / p;
    let mut relative = 1.0;
    let mut sum = 0.0;
    for v in (0..=end).rev() {
        let term = relative * weight(v);
        sum += term;
        if v < end && term <= sum * 1e-18 && relative <= 1e-18 {
            break;
        }
        // b(v−1)/b(v) = v(1−p)/((k−v+1)p).
        relative *= v as f64 / (k - v + 1) as f64 * odds;
    }
    ln_first + sum.ln()
}

/// Each binomial enumerated by [`binomial_window`] stops where either tail beyond holds at most
/// `e^{−70}` (below `4e-31`) by Bernstein's inequality.
pub(crate) const BINOMIAL_TAIL_EXPONENT: f64 = 70.0;

/// The values of `Bin(k, p)` that are enumerated: those within `s` of the mean, where
/// Bernstein's inequality `Pr[X − kp ≥ s] ≤ exp(−s²/(2(kp(1−p) + s/3)))` (and the same below
/// the mean) puts at most `e^{−BINOMIAL_TAIL_EXPONENT}` on each side beyond, clipped to `[0, k]`.
pub(crate) fn binomial_window(k: u64, p: f64) -> (u64, u64) {
    let mean = k as f64 * p;
    let variance = mean * (1.0 - p);
    let l = BINOMIAL_TAIL_EXPONENT;
    // The root of s² − (2L/3)s − 2Lσ² = 0, plus one for rounding.
    let spread = l / 3.0 + (l * l / 9.0 + 2.0 * l * variance).sqrt() + 1.0;
    let lo = (mean - spread).floor().max(0.0) as u64;
    let hi = ((mean + spread).ceil().max(0.0) as u64).min(k);
    (lo.min(hi), hi)
}

/// The principal branch of the Lambert W function, `W0(x)` for `x ≥ −1/e`.
pub fn lambert_w0(x: f64) -> f64 {
    lambert_w::lambert_w0(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_rel(actual: f64, expected: f64, tol: f64) {
        assert!(
            ((actual - expected) / expected).abs() <= tol,
            "{actual} vs {expected}"
        );
    }

    #[test]
    fn binomial_pmf_matches_direct_computation() {
        // b(3; 10, 0.2) = C(10,3) 0.2^3 0.8^7 = 120 * 0.008 * 0.2097152
        assert_rel(
            ln_binomial_pmf(3, 10, 0.2).exp(),
            120.0 * 0.008 * 0.209_715_2,
            1e-13,
        );
    }

    #[test]
    fn upper_tail_sums_the_pmf() {
        // Pr[Bin(10, 0.2) >= 5] = 0.032793497599999995 (scipy.stats.binom.sf(4, 10, 0.2))
        assert_rel(
            ln_upper_tail_weighted(5, 10, 0.2, |_| 1.0).exp(),
            0.032_793_497_6,
            1e-12,
        );
        assert!(ln_upper_tail_weighted(11, 10, 0.2, |_| 1.0).is_infinite());
    }

    #[test]
    fn lower_tail_sums_the_pmf() {
        // Pr[Bin(10, 0.2) <= 1] = 0.8^10 + 10·0.2·0.8^9 = 0.3758096384.
        assert_rel(
            ln_lower_tail_weighted(1, 10, 0.2, |_| 1.0).exp(),
            0.375_809_638_4,
            1e-12,
        );
    }

    #[test]
    fn chernoff_tail_bounds_the_exact_tail() {
        // Pr[Bin(10, 0.2) ≥ 5] = 0.0327935 (above); the bound is exp(−10·D(0.5‖0.2)) =
        // (0.2/0.5)^5·(0.8/0.5)^5 = 0.64^5 = 0.1073741824.
        let bound = ln_binomial_upper_tail_chernoff(5, 10, 0.2);
        assert_rel(bound.exp(), 0.107_374_182_4, 1e-9);
        assert!(bound >= ln_upper_tail_weighted(5, 10, 0.2, |_| 1.0));
        assert_eq!(
            ln_binomial_upper_tail_chernoff(2, 10, 0.2).to_bits(),
            0.0f64.to_bits()
        );
        assert!(ln_binomial_upper_tail_chernoff(11, 10, 0.2).is_infinite());
        // N = 2^61, m = 230584319143372407 (40 standard deviations above the mean at p = 0.1):
        // −N·D(m/N‖p) = −799.99998119 (mpmath, 50 digits); the bound is at most 1e-3 above.
        let bound = ln_binomial_upper_tail_chernoff(230_584_319_143_372_407, 1 << 61, 0.1);
        assert!((-799.999_981_2..-799.999).contains(&bound), "{bound}");
    }

    #[test]
    fn kl_bernoulli_known_value() {
        // Appendix A item 1: D(q‖p_s) = 0.912852 for ε = 1, α = 1/6.
        let p = 0.105_353_426_471_426_27;
        let q = 0.670_877_918_484_362_6;
        assert!((kl_bernoulli(q, p) - 0.912_852).abs() < 1e-6);
    }

    #[test]
    fn lambert_w0_inverts_x_exp_x() {
        for x in [0.0, 0.5, 1.0, 3.0, 100.0] {
            let w = lambert_w0(x);
            assert!((w * w.exp() - x).abs() <= 1e-12 * x.max(1.0));
        }
    }
}
