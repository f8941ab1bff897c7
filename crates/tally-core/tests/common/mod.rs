//! Goodness-of-fit helpers for the statistical tests (shared by the files in `tests/`).
//!
//! Every test uses significance level [`ALPHA`] `= 1e-6`: with the fixed seeds the tests are
//! deterministic, and a correct sampler fails one of them with probability at most about 1e-6
//! for a given seed.

use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// The significance level of every test.
pub(crate) const ALPHA: f64 = 1e-6;

/// The `1 − ALPHA` quantile of the chi-square distribution with `df` degrees of freedom.
///
/// Cross-check: `python3 -c "from scipy.stats import chi2; print(chi2.isf(1e-6, df))"`
/// gives 23.928 for df = 1, 63.677 for df = 19 and 180.792 for df = 99 (values computed with
/// mpmath at 40 digits; see `critical_values_match_reference`).
pub(crate) fn chi2_critical(df: usize) -> f64 {
    ChiSquared::new(df as f64)
        .expect("df ≥ 1")
        .inverse_cdf(1.0 - ALPHA)
}

/// The two-sided normal quantile `z_{1 − ALPHA/2}`
/// (`python3 -c "from scipy.stats import norm; print(norm.isf(5e-7))"` = 4.8916).
pub(crate) fn z_critical() -> f64 {
    Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0)
}

/// Pearson's chi-square statistic of `observed` counts against cell probabilities `probs`
/// (which must sum to 1, tail included), after pooling adjacent cells until each expects at
/// least 5. Returns `(statistic, degrees of freedom)`.
pub(crate) fn chi_square(observed: &[u64], probs: &[f64]) -> (f64, usize) {
    assert_eq!(observed.len(), probs.len());
    let total: u64 = observed.iter().sum();
    let sum_p: f64 = probs.iter().sum();
    assert!(
        (sum_p - 1.0).abs() < 1e-9,
        "cell probabilities sum to {sum_p}"
    );
    let n = total as f64;
    // Pool adjacent cells.
    let mut cells: Vec<(f64, f64)> = Vec::new(); // (observed, expected)
    let mut acc = (0.0, 0.0);
    for (&o, &p) in observed.iter().zip(probs) {
        acc.0 += o as f64;
        acc.1 += p * n;
        if acc.1 >= 5.0 {
            cells.push(acc);
            acc = (0.0, 0.0);
        }
    }
    if acc.1 > 0.0 || acc.0 > 0.0 {
        match cells.last_mut() {
            Some(last) => {
                last.0 += acc.0;
                last.1 += acc.1;
            }
            None => cells.push(acc),
        }
    }
    assert!(cells.len() >= 2, "too few cells after pooling");
    let stat = cells
        .iter()
        .map(|&(o, e)| (o - e) * (o - e) / e)
        .sum::<f64>();
    (stat, cells.len() - 1)
}

/// Asserts that `observed` fits `probs` at level [`ALPHA`]; reports the details otherwise.
pub(crate) fn assert_fits(what: &str, seed: u64, observed: &[u64], probs: &[f64]) {
    let n: u64 = observed.iter().sum();
    let (stat, df) = chi_square(observed, probs);
    let crit = chi2_critical(df);
    assert!(
        stat <= crit,
        "{what}: chi-square goodness of fit rejected at alpha = {ALPHA}: n = {n}, \
         statistic = {stat:.3}, df = {df}, critical value = {crit:.3}, seed = {seed}"
    );
}

/// Asserts that `p` lies in the Wilson score interval of `successes` out of `n` at level
/// [`ALPHA`]; reports the details otherwise.
pub(crate) fn assert_proportion(what: &str, seed: u64, successes: u64, n: u64, p: f64) {
    let z = z_critical();
    let nf = n as f64;
    let phat = successes as f64 / nf;
    let denom = 1.0 + z * z / nf;
    let center = (phat + z * z / (2.0 * nf)) / denom;
    let half = z * (phat * (1.0 - phat) / nf + z * z / (4.0 * nf * nf)).sqrt() / denom;
    assert!(
        (center - half..=center + half).contains(&p),
        "{what}: Wilson interval at alpha = {ALPHA} excludes p = {p}: n = {n}, successes = \
         {successes}, interval = [{:.6e}, {:.6e}], z = {z:.4}, seed = {seed}",
        center - half,
        center + half
    );
}

/// `Pr[G ≥ g] = (1 − p)^g` in floating point (for expected counts only).
pub(crate) fn geometric_tail(p: f64, g: u64) -> f64 {
    (g as f64 * (-p).ln_1p()).exp()
}

/// Cell probabilities for `G` in the cells `[edges[i], edges[i+1])`, the last one open.
pub(crate) fn geometric_cells(p: f64, edges: &[u64]) -> Vec<f64> {
    let mut probs: Vec<f64> = edges
        .windows(2)
        .map(|w| geometric_tail(p, w[0]) - geometric_tail(p, w[1]))
        .collect();
    probs.push(geometric_tail(p, *edges.last().expect("edges")));
    probs
}

/// Counts of `values` in the cells `[edges[i], edges[i+1])`, the last one open
/// (`edges[0]` must be 0).
pub(crate) fn histogram(values: impl IntoIterator<Item = u64>, edges: &[u64]) -> Vec<u64> {
    assert_eq!(edges[0], 0);
    let mut counts = vec![0u64; edges.len()];
    for v in values {
        let cell = edges.partition_point(|&e| e <= v) - 1;
        counts[cell] += 1;
    }
    counts
}
