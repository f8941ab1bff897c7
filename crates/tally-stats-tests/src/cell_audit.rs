//! The audit of one sample-and-threshold cell, shared by every mechanism built on S&T rounds.
//!
//! Neighbouring datasets: `D` has `k` clients whose report lands in the audited cell (an item,
//! a prefix, a bucket), `D'` has one fewer; everything else is equal. The outcome of a run is
//! the cell's released count (0 when suppressed). For each `k ≤ k_max` the audit checks
//!
//! 1. *no violation*: a lower confidence bound on the hockey-stick divergence stays below the
//!    accountant's `δ` (which is a sup over all `k`);
//! 2. *conformance*: the statistic `P̂(S) − e^ε Q̂(S)` over the analysis' bad set
//!    `S = {v ≥ max(τ, ⌊kq⌋+1)}` matches the exact `δ_k` computed from the binomial pmf.
//!
//! [`CellAudit::run_levels`] audits a chain of such rounds (the levels of a prefix tree) against
//! their composed guarantee, with the exact law of independent levels.
//!
//! [`CellAudit::mutant`] builds known-bad mechanisms (another release rule or sampling rate) that
//! an audit must catch.

use std::hash::Hash;

use rand_chacha::ChaCha20Rng;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_accounting::{Guarantee, Neighbours};
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::PoissonSampler;

use crate::{Outcomes, set_statistic, violation_lower_bound};

/// A mechanism under audit: given `k`, the number of audited clients in the dataset, and a
/// generator, the audited cell's released count (0 when suppressed).
pub type Mechanism<'a> = dyn Fn(u64, &mut ChaCha20Rng) -> u64 + 'a;

/// The parameters of an audit.
#[derive(Clone, Copy, Debug)]
pub struct CellAudit {
    /// The claimed sampling rate.
    pub rate: f64,
    /// The claimed threshold.
    pub threshold: u64,
    /// The ε at which δ is audited.
    pub epsilon: f64,
    /// The largest group size audited.
    pub k_max: u64,
    /// Runs per dataset and sample half.
    pub runs: u64,
}

/// What an audit found.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Group sizes where the divergence provably exceeds the claimed δ.
    pub violations: Vec<u64>,
    /// Group sizes where the measured δ_k disagrees with the exact one.
    pub mismatches: Vec<u64>,
}

impl Verdict {
    /// Whether the audit found nothing wrong.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.mismatches.is_empty()
    }
}

impl CellAudit {
    /// Weak parameters at which the tight δ (1/8, at `k = τ`) is large enough to measure:
    /// `p_s = 0.5`, `τ = 3`, `ε = 1`, `k ≤ 5`, 20,000 runs per sample.
    pub const WEAK: Self = Self {
        rate: 0.5,
        threshold: 3,
        epsilon: 1.0,
        k_max: 5,
        runs: 20_000,
    };

    /// The real S&T mechanism with the claimed parameters, its guarantee by the tight
    /// add/remove analysis.
    ///
    /// # Panics
    ///
    /// If the accountant rejects the parameters.
    pub fn mechanism(&self) -> SampleThreshold {
        let params = SampleThresholdParams::new(self.rate, self.threshold).expect("valid");
        SampleThreshold::new(params, self.epsilon, Analysis::Tight, Neighbours::AddRemove)
            .expect("valid")
    }

    /// The accountant's tight add/remove δ for the claimed parameters.
    ///
    /// # Panics
    ///
    /// If the accountant rejects the parameters.
    pub fn claimed_delta(&self) -> f64 {
        self.mechanism().guarantee().delta
    }

    /// The analysis' bad set at group size `k`: released counts above `k·q`.
    pub fn bad_set(&self, k: u64) -> impl Fn(&u64) -> bool + use<> {
        let q = 1.0 - (-self.epsilon).exp() * (1.0 - self.rate);
        let threshold = self.threshold;
        move |&v| v >= threshold && v as f64 > k as f64 * q
    }

    /// The exact hockey-stick divergence at group size `k`, from the binomial pmf.
    pub fn exact_delta_at(&self, k: u64) -> f64 {
        let in_set = self.bad_set(k);
        (self.threshold..=k)
            .filter(|v| in_set(v))
            .map(|v| {
                binomial_pmf(v, k, self.rate)
                    - self.epsilon.exp() * binomial_pmf(v, k - 1, self.rate)
            })
            .sum()
    }

    /// Audits `mechanism` at `k = 1..=k_max`, with runs seeded from `seed`.
    pub fn run(&self, mechanism: &Mechanism<'_>, seed: u64) -> Verdict {
        self.run_with(mechanism, |&count| count, seed)
    }

    /// Audits a mechanism whose outcome `O` holds more than the audited cell (a whole
    /// release, say): the violation check uses the whole outcome, and the conformance check
    /// reads the cell's released count with `cell`.
    pub fn run_with<O: Hash + Eq + Clone>(
        &self,
        mechanism: &(dyn Fn(u64, &mut ChaCha20Rng) -> O + '_),
        cell: impl Fn(&O) -> u64,
        seed: u64,
    ) -> Verdict {
        self.audit(
            self.epsilon,
            self.claimed_delta(),
            mechanism,
            |k, p, q| {
                let bad = self.bad_set(k);
                set_statistic(p, q, self.epsilon, |o| bad(&cell(o)))
                    .agrees_with(self.exact_delta_at(k), 0.0)
            },
            seed,
        )
    }

    /// Audits a mechanism that runs the cell's S&T round `levels` times in a chain, each
    /// level with a fresh sample and the next level run only when the cell was released (the
    /// levels of a prefix tree, where the audited clients' prefixes at every level land in
    /// the audited chain of cells), against the composed guarantee `claimed`.
    ///
    /// `cells` reads the cell's released count at each level from an outcome (0 when
    /// suppressed or not run). The violation check bounds the whole outcome's divergence at
    /// `claimed.epsilon` by `claimed.delta`. The conformance check compares, at
    /// `ε = claimed.epsilon`, the privacy loss `P̂(o) − e^ε Q̂(o)` of every outcome `o` of the
    /// chain's exact bad set, and their sum, with the exact values
    /// ([`CellAudit::exact_chain_delta_at`]): levels that share a sample, or another rate or
    /// threshold, change the chain's law and are caught there.
    pub fn run_levels<O: Hash + Eq + Clone>(
        &self,
        levels: usize,
        claimed: &Guarantee,
        mechanism: &(dyn Fn(u64, &mut ChaCha20Rng) -> O + '_),
        cells: impl Fn(&O) -> Vec<u64>,
        seed: u64,
    ) -> Verdict {
        let epsilon = claimed.epsilon;
        self.audit(
            epsilon,
            claimed.delta,
            mechanism,
            |k, p, q| {
                let bad = self.chain_bad_set(levels, k, epsilon);
                let measured =
                    |set: &[Vec<u64>]| set_statistic(p, q, epsilon, |o| set.contains(&cells(o)));
                let outcomes: Vec<Vec<u64>> = bad.iter().map(|(o, _)| o.clone()).collect();
                let total: f64 = bad.iter().map(|(_, loss)| loss).sum();
                measured(&outcomes).agrees_with(total, 0.0)
                    && bad.into_iter().all(|(outcome, loss)| {
                        measured(std::slice::from_ref(&outcome)).agrees_with(loss, 0.0)
                    })
            },
            seed,
        )
    }

    /// The exact hockey-stick divergence at `epsilon` between the chains of `levels` rounds
    /// on `k` and on `k − 1` audited clients ([`CellAudit::run_levels`]).
    pub fn exact_chain_delta_at(&self, levels: usize, k: u64, epsilon: f64) -> f64 {
        self.chain_bad_set(levels, k, epsilon)
            .iter()
            .map(|(_, loss)| loss)
            .sum()
    }

    /// The chain's bad set at group size `k`, the outcomes `o` with `P_k(o) > e^ε P_{k−1}(o)`,
    /// each with `P_k(o) − e^ε P_{k−1}(o)`.
    fn chain_bad_set(&self, levels: usize, k: u64, epsilon: f64) -> Vec<(Vec<u64>, f64)> {
        let without = self.chain_law(levels, k - 1);
        let scale = epsilon.exp();
        self.chain_law(levels, k)
            .into_iter()
            .filter_map(|(outcome, p)| {
                let q = without
                    .iter()
                    .find(|(o, _)| *o == outcome)
                    .map_or(0.0, |(_, q)| *q);
                (p > scale * q).then_some((outcome, p - scale * q))
            })
            .collect()
    }

    /// The law of the cell's released counts over a chain of `levels` rounds on `k` audited
    /// clients: each level's count is `Bin(k, rate)`, independently, released when it reaches
    /// the threshold; after a suppressed level every count is 0.
    fn chain_law(&self, levels: usize, k: u64) -> Vec<(Vec<u64>, f64)> {
        let suppressed: f64 = (0..self.threshold.clamp(1, k + 1))
            .map(|v| binomial_pmf(v, k, self.rate))
            .sum();
        let mut round = vec![(0, suppressed)];
        round.extend((self.threshold.max(1)..=k).map(|v| (v, binomial_pmf(v, k, self.rate))));
        let mut law = vec![(Vec::new(), 1.0)];
        for _ in 0..levels {
            law = law
                .into_iter()
                .flat_map(|(outcome, p): (Vec<u64>, f64)| {
                    let ended = outcome.last() == Some(&0);
                    let next: Vec<(u64, f64)> = if ended { vec![(0, 1.0)] } else { round.clone() };
                    next.into_iter().map(move |(v, q)| {
                        let mut longer = outcome.clone();
                        longer.push(v);
                        (longer, p * q)
                    })
                })
                .collect();
        }
        law
    }

    /// The audit loop: at each `k ≤ k_max`, the violation check of the whole outcome at
    /// `epsilon` against `claimed_delta`, and `conforms(k, on D, on D')` on the evaluation
    /// samples.
    fn audit<O: Hash + Eq + Clone>(
        &self,
        epsilon: f64,
        claimed_delta: f64,
        mechanism: &(dyn Fn(u64, &mut ChaCha20Rng) -> O + '_),
        conforms: impl Fn(u64, &Outcomes<O>, &Outcomes<O>) -> bool,
        seed: u64,
    ) -> Verdict {
        let mut verdict = Verdict::default();
        for k in 1..=self.k_max {
            let seed = seed + 16 * k;
            let sample = |k: u64, s: u64| Outcomes::sample(self.runs, s, |rng| mechanism(k, rng));
            let select = (sample(k, seed), sample(k - 1, seed + 1));
            let evaluate = (sample(k, seed + 2), sample(k - 1, seed + 3));
            let bound =
                violation_lower_bound((&select.0, &select.1), (&evaluate.0, &evaluate.1), epsilon);
            if bound > claimed_delta {
                verdict.violations.push(k);
            }
            if !conforms(k, &evaluate.0, &evaluate.1) {
                verdict.mismatches.push(k);
            }
        }
        verdict
    }

    /// A hand-written cell that samples each of the `k` clients at `rate` and releases the
    /// count when `released(count)`: with the claimed rate and `count ≥ threshold` it is the
    /// correct mechanism, otherwise a known-bad mutant.
    pub fn mutant(
        rate: f64,
        released: impl Fn(u64) -> bool,
    ) -> impl Fn(u64, &mut ChaCha20Rng) -> u64 {
        let sampler = PoissonSampler::new(rate).expect("valid rate");
        move |k, rng| {
            let count = sampler.indices(k, rng).count() as u64;
            if released(count) { count } else { 0 }
        }
    }

    /// Checks that the audit catches the three standard mutants (a strict threshold, no
    /// threshold, a sampling rate 20% too high and one 20% too low) and passes the correct
    /// hand-written cell. Returns the description of the first failure.
    pub fn check_mutants_are_caught(&self, seed: u64) -> Result<(), String> {
        let tau = self.threshold;
        let correct = self.run(&Self::mutant(self.rate, |c| c >= tau), seed);
        if !correct.passed() {
            return Err(format!("the correct hand-written cell failed: {correct:?}"));
        }
        let strict = self.run(&Self::mutant(self.rate, |c| c > tau), seed + 1000);
        if strict.passed() {
            return Err("strict threshold not caught".into());
        }
        let none = self.run(&Self::mutant(self.rate, |c| c > 0), seed + 2000);
        if none.violations.is_empty() {
            return Err(format!("missing threshold not caught: {none:?}"));
        }
        for factor in [1.2, 0.8] {
            let wrong = self.run(&Self::mutant(self.rate * factor, |c| c >= tau), seed + 3000);
            if wrong.passed() {
                return Err(format!("sampling rate × {factor} not caught"));
            }
        }
        Ok(())
    }
}

fn binomial_pmf(v: u64, k: u64, p: f64) -> f64 {
    if v > k {
        return 0.0;
    }
    let choose: f64 = (0..v).map(|i| (k - i) as f64 / (i + 1) as f64).product();
    choose * p.powi(v as i32) * (1.0 - p).powi((k - v) as i32)
}
