//! Empirical privacy audits on neighbouring datasets.
//!
//! An audit runs a mechanism many times on two neighbouring datasets `D` and `D'`, tallies the
//! outcomes, and bounds the hockey-stick divergence `δ(ε) = Σ_o (P_D(o) − e^ε P_D'(o))_+`
//! from the samples. Audits can only falsify a privacy claim, never prove it, so they
//! complement the exact tests of the accountant. Two checks are offered:
//!
//! * [`violation_lower_bound`]: a one-sided lower confidence bound on `δ(ε)`; if it exceeds the
//!   claimed `δ`, the mechanism leaks more than claimed. The set of outcomes is chosen on one
//!   half of the runs and evaluated on the other, so the bound is honest.
//! * [`set_statistic`]: the linear statistic `P̂(S) − e^ε Q̂(S)` for a fixed set `S` with its
//!   standard error, to check that the code reproduces an analytic `δ` (in both directions).
#![forbid(unsafe_code)]

mod cell_audit;

use std::hash::Hash;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rustc_hash::FxHashMap;
use tally_accounting::numeric::ln_binomial_pmf;

pub use cell_audit::{CellAudit, Mechanism, Verdict};

/// The two-sided interval of `Binomial(n, p)` holding all but at most `alpha` of its mass,
/// from the exact pmf: a test that counts `n` independent events of probability `p` fails by
/// chance with probability at most `alpha` when it asserts its count lies inside.
pub fn binomial_interval(n: u64, p: f64, alpha: f64) -> (u64, u64) {
    let pmf: Vec<f64> = (0..=n).map(|v| ln_binomial_pmf(v, n, p).exp()).collect();
    let mut lo = 0;
    let mut below = 0.0;
    while below + pmf[lo as usize] <= alpha / 2.0 {
        below += pmf[lo as usize];
        lo += 1;
    }
    let mut hi = n;
    let mut above = 0.0;
    while above + pmf[hi as usize] <= alpha / 2.0 {
        above += pmf[hi as usize];
        hi -= 1;
    }
    (lo, hi)
}

/// The z-score of the audits' confidence bounds: one-sided `α ≈ 2.9e-7`.
pub const Z: f64 = 5.0;

/// How often each outcome occurred over a number of runs.
#[derive(Clone, Debug)]
pub struct Outcomes<O> {
    counts: FxHashMap<O, u64>,
    runs: u64,
}

impl<O: Hash + Eq + Clone> Outcomes<O> {
    /// Runs `mechanism` `runs` times with a ChaCha20 generator seeded by `seed` and tallies
    /// its outcomes.
    pub fn sample(runs: u64, seed: u64, mut mechanism: impl FnMut(&mut ChaCha20Rng) -> O) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut counts = FxHashMap::default();
        for _ in 0..runs {
            *counts.entry(mechanism(&mut rng)).or_insert(0) += 1;
        }
        Self { counts, runs }
    }

    /// The number of runs.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The empirical probability of `outcome`.
    pub fn frequency(&self, outcome: &O) -> f64 {
        self.counts.get(outcome).copied().unwrap_or(0) as f64 / self.runs as f64
    }

    /// The empirical probability of the outcomes in `set`.
    pub fn frequency_of(&self, set: impl Fn(&O) -> bool) -> f64 {
        let hits: u64 = self
            .counts
            .iter()
            .filter(|(o, _)| set(o))
            .map(|(_, c)| c)
            .sum();
        hits as f64 / self.runs as f64
    }

    /// Every outcome seen at least once.
    pub fn support(&self) -> impl Iterator<Item = &O> {
        self.counts.keys()
    }
}

/// An estimate with its standard error.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Its standard error.
    pub standard_error: f64,
}

impl Estimate {
    /// `value − Z·standard_error`.
    pub fn lower(&self) -> f64 {
        self.value - Z * self.standard_error
    }

    /// `value + Z·standard_error`.
    pub fn upper(&self) -> f64 {
        self.value + Z * self.standard_error
    }

    /// Whether `truth` lies within `Z` standard errors (plus `slack`) of the estimate.
    pub fn agrees_with(&self, truth: f64, slack: f64) -> bool {
        (self.value - truth).abs() <= Z * self.standard_error + slack
    }
}

/// `P̂(S) − e^ε Q̂(S)` for the outcome set `set`, an unbiased estimate of
/// `P(S) − e^ε Q(S)`, with its standard error (the two samples are independent).
pub fn set_statistic<O: Hash + Eq + Clone>(
    p: &Outcomes<O>,
    q: &Outcomes<O>,
    epsilon: f64,
    set: impl Fn(&O) -> bool,
) -> Estimate {
    let ps = p.frequency_of(&set);
    let qs = q.frequency_of(&set);
    let scale = epsilon.exp();
    let variance =
        ps * (1.0 - ps) / p.runs() as f64 + scale * scale * qs * (1.0 - qs) / q.runs() as f64;
    Estimate {
        value: ps - scale * qs,
        standard_error: variance.sqrt(),
    }
}

/// A lower confidence bound on the hockey-stick divergence `δ(ε)` between the mechanism's
/// output distributions on `D` and `D'`.
///
/// The outcome set `S = {o : P̂(o) > e^ε Q̂(o)}` is chosen on the `select` samples and the
/// statistic of [`set_statistic`] is evaluated on the independent `evaluate` samples, so
/// `P(S) − e^ε Q(S) ≤ δ(ε)` and the returned bound holds with confidence `1 − α`.
pub fn violation_lower_bound<O: Hash + Eq + Clone>(
    select: (&Outcomes<O>, &Outcomes<O>),
    evaluate: (&Outcomes<O>, &Outcomes<O>),
    epsilon: f64,
) -> f64 {
    let (p_sel, q_sel) = select;
    let scale = epsilon.exp();
    let chosen: Vec<O> = p_sel
        .support()
        .filter(|o| p_sel.frequency(o) > scale * q_sel.frequency(o))
        .cloned()
        .collect();
    set_statistic(evaluate.0, evaluate.1, epsilon, |o| chosen.contains(o)).lower()
}

/// [`violation_lower_bound`] between the outcomes of `p` (on `D`) and `q` (on `D'`), each run
/// `runs` times to choose the outcome set and `runs` times again to evaluate it (seeds
/// `seed..seed + 4`).
pub fn split_sample_lower_bound<O: Hash + Eq + Clone>(
    runs: u64,
    seed: u64,
    epsilon: f64,
    p: impl Fn(&mut ChaCha20Rng) -> O,
    q: impl Fn(&mut ChaCha20Rng) -> O,
) -> f64 {
    let select = (
        Outcomes::sample(runs, seed, &p),
        Outcomes::sample(runs, seed + 1, &q),
    );
    let evaluate = (
        Outcomes::sample(runs, seed + 2, &p),
        Outcomes::sample(runs, seed + 3, &q),
    );
    violation_lower_bound((&select.0, &select.1), (&evaluate.0, &evaluate.1), epsilon)
}

/// The largest `ε` on the grid `0, step, 2·step, …, points·step` whose lower confidence
/// bound on `δ(ε)` ([`violation_lower_bound`]) exceeds `claimed_delta`, in either order of the
/// two datasets' outcomes; `0` if there is none: an empirical lower bound on the `ε` of a
/// mechanism that claims `claimed_delta`.
pub fn epsilon_lower_bound<O: Hash + Eq + Clone>(
    select: (&Outcomes<O>, &Outcomes<O>),
    evaluate: (&Outcomes<O>, &Outcomes<O>),
    claimed_delta: f64,
    (step, points): (f64, u32),
) -> f64 {
    (0..=points)
        .map(|i| f64::from(i) * step)
        .filter(|&epsilon| {
            violation_lower_bound(select, evaluate, epsilon) > claimed_delta
                || violation_lower_bound((select.1, select.0), (evaluate.1, evaluate.0), epsilon)
                    > claimed_delta
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use rand::RngExt;

    use super::*;

    #[test]
    fn randomized_response_audit_is_honest() {
        // Randomized response with ε = ln 3: P(truth) = 3/4. Its δ at ε = ln 3 is 0, and at
        // ε = 0 it is 1/2.
        let rr = |bit: bool| move |rng: &mut ChaCha20Rng| bit ^ (rng.random::<f64>() >= 0.75);
        let p = Outcomes::sample(40_000, 1, rr(true));
        let q = Outcomes::sample(40_000, 2, rr(false));
        let p2 = Outcomes::sample(40_000, 3, rr(true));
        let q2 = Outcomes::sample(40_000, 4, rr(false));
        assert!(violation_lower_bound((&p, &q), (&p2, &q2), 3.0_f64.ln()) <= 0.0);
        let half = set_statistic(&p2, &q2, 0.0, |&o| o);
        assert!(half.agrees_with(0.5, 0.0), "{half:?}");
        assert!(violation_lower_bound((&p, &q), (&p2, &q2), 0.0) > 0.45);
    }
}
