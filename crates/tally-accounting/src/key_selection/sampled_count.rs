//! The binomial law of an item's sampled count under sample-and-threshold: `X ~ Bin(c, p_s)`,
//! released when `X ≥ τ`, estimated by `X/p_s`.

use crate::numeric::{ln_binomial_pmf, ln_lower_tail_weighted, ln_upper_tail_weighted};

/// `P[Bin(c, p) ≥ τ]`, summed on the side of the mean the threshold lies on so that it does
/// not cancel.
pub(super) fn release_probability(count: u64, rate: f64, threshold: u64) -> f64 {
    if threshold == 0 {
        return 1.0;
    }
    if threshold > count {
        return 0.0;
    }
    if threshold as f64 >= count as f64 * rate {
        ln_upper_tail_weighted(threshold, count, rate, |_| 1.0).exp()
    } else {
        -ln_lower_tail_weighted(threshold - 1, count, rate, |_| 1.0).exp_m1()
    }
}

/// `E[|X/p − c| · 1{X ≥ τ}]` for `X ~ Bin(c, p)`.
pub(super) fn released_absolute_error(count: u64, rate: f64, threshold: u64) -> f64 {
    if threshold > count {
        return 0.0;
    }
    let mean = count as f64 * rate;
    let deviation = |v: u64| (v as f64 - mean).abs() / rate;
    if threshold as f64 >= mean {
        return ln_upper_tail_weighted(threshold, count, rate, deviation).exp();
    }
    let below = if threshold == 0 {
        0.0
    } else {
        ln_lower_tail_weighted(threshold - 1, count, rate, deviation).exp()
    };
    (mean_absolute_deviation(count, rate) / rate - below).max(0.0)
}

/// `E|X − cp|` for `X ~ Bin(c, p)`, by de Moivre's formula `2m(1 − p)·b(m; c, p)` with
/// `m = ⌊cp⌋ + 1` (0 when `m > c`, where `X` cannot exceed its mean).
fn mean_absolute_deviation(count: u64, rate: f64) -> f64 {
    let m = (count as f64 * rate).floor() as u64 + 1;
    if m > count {
        return 0.0;
    }
    2.0 * m as f64 * (1.0 - rate) * ln_binomial_pmf(m, count, rate).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Σ_{v≥τ} b(v; c, p)·f(v)` term by term, for small `c`.
    fn direct(count: u64, rate: f64, threshold: u64, f: impl Fn(u64) -> f64) -> f64 {
        (threshold..=count)
            .map(|v| ln_binomial_pmf(v, count, rate).exp() * f(v))
            .sum()
    }

    #[test]
    fn matches_the_direct_sum_on_both_sides_of_the_mean() {
        for (count, rate, threshold) in [(40, 0.3, 5), (40, 0.3, 20), (7, 0.5, 0), (200, 0.1, 20)] {
            let p = release_probability(count, rate, threshold);
            let expected = direct(count, rate, threshold, |_| 1.0);
            assert!(
                (p - expected).abs() < 1e-13,
                "{count} {rate} {threshold}: {p} vs {expected}"
            );
            let mean = count as f64 * rate;
            let e = released_absolute_error(count, rate, threshold);
            let expected = direct(count, rate, threshold, |v| (v as f64 - mean).abs() / rate);
            assert!(
                (e - expected).abs() < 1e-11 * expected.max(1.0),
                "{e} vs {expected}"
            );
        }
    }

    #[test]
    fn de_moivre_matches_the_direct_sum() {
        for (count, rate) in [(1, 0.5), (2, 0.5), (31, 0.17), (100, 0.9)] {
            let mean = count as f64 * rate;
            let expected = direct(count, rate, 0, |v| (v as f64 - mean).abs());
            let mad = mean_absolute_deviation(count, rate);
            assert!((mad - expected).abs() < 1e-12, "{mad} vs {expected}");
        }
    }
}
