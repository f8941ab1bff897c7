//! Chi-square tests for the statistical tests of this crate (fixed seeds, α = 1e-6).
//!
//! Bins are pooled left to right until each pooled bin's expected count is at least 5 (a
//! short remainder at the right end joins the last bin), as is standard for the χ² test.
// Each test crate includes this module and uses only some of its helpers.
#![allow(dead_code)]

use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The significance level of every statistical test: the chance that a fixed seed, chosen
/// when the test was written, fails although the code is right.
pub(crate) const ALPHA: f64 = 1e-6;

/// The minimum expected count per pooled bin.
const MIN_EXPECTED: f64 = 5.0;

/// Groups consecutive bins so that `weight(bin group) ≥ MIN_EXPECTED` for every group.
fn pool(weights: &[f64]) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    let mut acc = 0.0;
    for (i, &w) in weights.iter().enumerate() {
        acc += w;
        if acc >= MIN_EXPECTED {
            groups.push(start..i + 1);
            start = i + 1;
            acc = 0.0;
        }
    }
    if start < weights.len() {
        match groups.last_mut() {
            Some(last) => last.end = weights.len(),
            None => groups.push(0..weights.len()),
        }
    }
    groups
}

/// The p-value of χ² with `df` degrees of freedom.
fn p_value(statistic: f64, df: usize) -> f64 {
    if df == 0 {
        return 1.0;
    }
    ChiSquared::new(df as f64).unwrap().sf(statistic)
}

/// Goodness of fit of `observed` counts to the probabilities `probs` (which sum to 1).
/// Panics with the statistic, the degrees of freedom and the p-value if `p < ALPHA`.
pub(crate) fn assert_fits(what: &str, observed: &[u64], probs: &[f64]) {
    assert_eq!(observed.len(), probs.len(), "{what}: bins");
    let total: u64 = observed.iter().sum();
    let n = total as f64;
    let mass: f64 = probs.iter().sum();
    assert!(
        (mass - 1.0).abs() < 1e-9,
        "{what}: probabilities sum to {mass}"
    );
    for (i, (&o, &p)) in observed.iter().zip(probs).enumerate() {
        assert!(
            p > 0.0 || o == 0,
            "{what}: {o} observations in impossible bin {i}"
        );
    }
    let expected: Vec<f64> = probs.iter().map(|p| p * n).collect();
    let groups = pool(&expected);
    let statistic: f64 = groups
        .iter()
        .map(|g| {
            let o: u64 = observed[g.clone()].iter().sum();
            let e: f64 = expected[g.clone()].iter().sum();
            (o as f64 - e).powi(2) / e
        })
        .sum();
    let df = groups.len() - 1;
    let p = p_value(statistic, df);
    assert!(
        p >= ALPHA,
        "{what}: chi-square = {statistic:.2}, df = {df}, p = {p:.3e} < {ALPHA:e} over {total} \
         observations\nobserved {observed:?}\nexpected {expected:.1?}"
    );
}

/// Homogeneity of two samples of counts over the same bins. Panics if `p < ALPHA`.
pub(crate) fn assert_same_distribution(what: &str, a: &[u64], b: &[u64]) {
    assert_eq!(a.len(), b.len(), "{what}: bins");
    let na = a.iter().sum::<u64>() as f64;
    let nb = b.iter().sum::<u64>() as f64;
    let smaller = na.min(nb) / (na + nb);
    let weights: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (x + y) as f64 * smaller)
        .collect();
    let groups = pool(&weights);
    let statistic: f64 = groups
        .iter()
        .map(|g| {
            let x = a[g.clone()].iter().sum::<u64>() as f64;
            let y = b[g.clone()].iter().sum::<u64>() as f64;
            let ea = (x + y) * na / (na + nb);
            let eb = (x + y) * nb / (na + nb);
            (x - ea).powi(2) / ea + (y - eb).powi(2) / eb
        })
        .sum();
    let df = groups.len() - 1;
    let p = p_value(statistic, df);
    assert!(
        p >= ALPHA,
        "{what}: two-sample chi-square = {statistic:.2}, df = {df}, p = {p:.3e} < {ALPHA:e}\n\
         a {a:?}\nb {b:?}"
    );
}
