//! Empirical privacy audit of the S&T histogram at weak parameters (`p_s = 0.5`, `τ = 3`,
//! `ε = 1`), where the tight `δ` is large enough to measure.
//!
//! Neighbouring datasets: `D` holds `k` clients with the audited item plus filler clients with
//! unique items, `D'` holds one audited client fewer. The outcome of a run is the released
//! count of the audited item (0 when suppressed). For each `k ≤ K_MAX` the audit checks
//!
//! 1. *no violation*: a lower confidence bound on the hockey-stick divergence stays below the
//!    accountant's `δ` (which is a sup over all `k`);
//! 2. *conformance*: the statistic `P̂(S) − e^ε Q̂(S)` over the analysis' bad set
//!    `S = {v ≥ max(τ, ⌊kq⌋+1)}` matches the exact `δ_k` computed here from the binomial pmf,
//!    and the largest `δ_k` is the accountant's tight `δ`.
//!
//! Known-bad mutants of the mechanism (a strict threshold, no threshold, a sampling rate other
//! than the claimed one) must each be caught by one of the two checks.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams, delta};
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::PoissonSampler;
use tally_sim::{ExecutionPath, Population, run_sample_threshold};
use tally_stats_tests::{Outcomes, set_statistic, violation_lower_bound};

const RATE: f64 = 0.5;
const THRESHOLD: u64 = 3;
const EPSILON: f64 = 1.0;
const FILLER: u32 = 5;
const K_MAX: u64 = 5;
const RUNS: u64 = 20_000;
const AUDITED: u32 = 0;

/// `k` clients holding the audited item and `FILLER` clients holding unique items.
fn population(k: u64) -> Population {
    let mut items: Vec<u32> = (1..=FILLER).collect();
    items.extend(std::iter::repeat_n(AUDITED, k as usize));
    let vocabulary = (0..=FILLER).map(|i| format!("item{i}")).collect();
    Population::from_ids(items, vocabulary, format!("audit population with k = {k}"))
        .expect("valid population")
}

/// A mechanism under audit: a population and a generator in, the audited item's released
/// count out.
type Mechanism = dyn Fn(&Population, &mut ChaCha20Rng) -> u64;

fn tally_mechanism() -> Box<Mechanism> {
    let params = SampleThresholdParams::new(RATE, THRESHOLD).unwrap();
    let mechanism =
        SampleThreshold::new(params, EPSILON, Analysis::Tight, Neighbours::AddRemove).unwrap();
    Box::new(move |population, rng| {
        let release = run_sample_threshold(
            population,
            &mechanism,
            ExecutionPath::GapSkipping,
            rng.next_u64(),
        );
        release
            .items
            .iter()
            .find(|cell| cell.item == AUDITED)
            .map_or(0, |cell| cell.count)
    })
}

/// A hand-written S&T with a pluggable sampling rate and release rule, for the mutants.
fn mutant(rate: f64, released: fn(u64) -> bool) -> Box<Mechanism> {
    let sampler = PoissonSampler::new(rate).unwrap();
    Box::new(move |population, rng| {
        let items = population.items();
        let count = sampler
            .indices(items.len() as u64, rng)
            .filter(|&i| items[i as usize] == AUDITED)
            .count() as u64;
        if released(count) { count } else { 0 }
    })
}

fn binomial_pmf(v: u64, k: u64, p: f64) -> f64 {
    if v > k {
        return 0.0;
    }
    let choose: f64 = (0..v).map(|i| (k - i) as f64 / (i + 1) as f64).product();
    choose * p.powi(v as i32) * (1.0 - p).powi((k - v) as i32)
}

/// The analysis' bad set at group size `k`: released counts above `k·q`.
fn bad_set(k: u64) -> impl Fn(&u64) -> bool {
    let q = 1.0 - (-EPSILON).exp() * (1.0 - RATE);
    move |&v| v >= THRESHOLD && v as f64 > k as f64 * q
}

/// The exact hockey-stick divergence at group size `k`, from the binomial pmf.
fn exact_delta_at(k: u64) -> f64 {
    let in_set = bad_set(k);
    (THRESHOLD..=k)
        .filter(|v| in_set(v))
        .map(|v| binomial_pmf(v, k, RATE) - EPSILON.exp() * binomial_pmf(v, k - 1, RATE))
        .sum()
}

/// The accountant's tight δ for the audited parameters.
fn claimed_delta() -> f64 {
    delta(
        EPSILON,
        &SampleThresholdParams::new(RATE, THRESHOLD).unwrap(),
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap()
}

#[derive(Debug, Default)]
struct Verdict {
    /// Group sizes where the divergence provably exceeds the claimed δ.
    violations: Vec<u64>,
    /// Group sizes where the measured δ_k disagrees with the exact one.
    mismatches: Vec<u64>,
}

fn audit(mechanism: &Mechanism, seed: u64) -> Verdict {
    let claimed = claimed_delta();
    let mut verdict = Verdict::default();
    for k in 1..=K_MAX {
        let (d, d_prime) = (population(k), population(k - 1));
        let seed = seed + 16 * k;
        let run = |pop: &Population, s: u64| Outcomes::sample(RUNS, s, |rng| mechanism(pop, rng));
        let select = (run(&d, seed), run(&d_prime, seed + 1));
        let evaluate = (run(&d, seed + 2), run(&d_prime, seed + 3));
        let bound =
            violation_lower_bound((&select.0, &select.1), (&evaluate.0, &evaluate.1), EPSILON);
        if bound > claimed {
            verdict.violations.push(k);
        }
        let measured = set_statistic(&evaluate.0, &evaluate.1, EPSILON, bad_set(k));
        if !measured.agrees_with(exact_delta_at(k), 0.0) {
            eprintln!(
                "k = {k}: measured {measured:?}, exact {}",
                exact_delta_at(k)
            );
            verdict.mismatches.push(k);
        }
    }
    verdict
}

#[test]
fn dp_audit_exact_deltas_peak_at_the_accountants_tight_delta() {
    let claimed = claimed_delta();
    let peak = (1..=40).map(exact_delta_at).fold(0.0, f64::max);
    // p_s^τ = 1/8 at k = τ: every copy sampled.
    assert!((peak - 0.125).abs() < 1e-12, "{peak}");
    assert!(
        claimed >= peak && claimed <= peak * (1.0 + 2e-6),
        "{claimed} vs {peak}"
    );
}

#[test]
fn dp_audit_sample_threshold_passes() {
    let verdict = audit(&*tally_mechanism(), 1);
    assert!(verdict.violations.is_empty(), "{verdict:?}");
    assert!(verdict.mismatches.is_empty(), "{verdict:?}");
}

#[test]
fn dp_audit_catches_strict_threshold() {
    let verdict = audit(&*mutant(RATE, |count| count > THRESHOLD), 2);
    assert!(!verdict.mismatches.is_empty(), "{verdict:?}");
}

#[test]
fn dp_audit_catches_missing_threshold() {
    let verdict = audit(&*mutant(RATE, |count| count > 0), 3);
    assert!(!verdict.violations.is_empty(), "{verdict:?}");
}

#[test]
fn dp_audit_catches_wrong_sampling_rate() {
    let verdict = audit(&*mutant(0.6, |count| count >= THRESHOLD), 4);
    assert!(!verdict.violations.is_empty(), "{verdict:?}");
    let verdict = audit(&*mutant(0.4, |count| count >= THRESHOLD), 5);
    assert!(!verdict.mismatches.is_empty(), "{verdict:?}");
}

#[test]
fn dp_audit_mutant_harness_matches_the_real_mechanism() {
    // The correct hand-written mechanism passes too, so the mutants differ only by their bug.
    let verdict = audit(&*mutant(RATE, |count| count >= THRESHOLD), 6);
    assert!(
        verdict.violations.is_empty() && verdict.mismatches.is_empty(),
        "{verdict:?}"
    );
}
