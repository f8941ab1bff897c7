//! Empirical privacy audits of the local frequency oracles GRR and OUE and of the Balcer–Cheu
//! shuffle-model histogram, on neighbouring inputs (replace-one: one client's item `x = 0`
//! becomes `x' = 1`).
//!
//! Each audit checks, with the honest split-sample bound of [`violation_lower_bound`], that the
//! real mechanism shows no δ above its claim at the claimed ε, and that a mutant is caught; and,
//! with [`set_statistic`] on the exact bad set, that the sampled distributions reproduce the
//! exact hockey-stick divergence.
//!
//! * GRR (`k = 3`) and OUE (`k = 3`), `ε = 1`, pure (`δ = 0`): the outcome is one report; the
//!   mutant randomizes at `2ε` and claims `ε`.
//! * Balcer–Cheu, `d = 2`, `n = 1200`, target `(ε, δ) = (1, 0.05)`, calibrated by the exact
//!   privacy-loss distribution of its blanket (`1 − p = 0.0037`, exact `δ(1) = 0.04997`): the
//!   outcome is the pair of per-cell message counts. The mutant is the mechanism calibrated at
//!   `2ε` (`1 − p = 0.0025`, exact `δ(1) = 0.099`), and it is caught. Under Theorem 3.2's
//!   calibration it could not be: the theorem's constants left more than a factor 8 of slack in
//!   `ε` (a `2ε` mutant's exact `δ(1)` was `3.2e-16` against the claim 0.2).

use rand_chacha::ChaCha20Rng;
use tally_accounting::numeric::ln_binomial_pmf;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::ldp::{Grr, SubsetSelection, UnaryRandomizer, UnaryReport};
use tally_core::protocol::{DeviceQuery, MultiMessage, RoundProtocol};
use tally_core::sampling::exact_binomial;
use tally_core::shuffle::{BalcerCheuHistogram, ShuffledGrr};
use tally_stats_tests::{Outcomes, set_statistic, split_sample_lower_bound};

/// Runs per dataset and sample half for the local oracles.
const LOCAL_RUNS: u64 = 40_000;
/// Runs per dataset and sample half for Balcer–Cheu (each run randomizes 1200 clients).
const SHUFFLE_RUNS: u64 = 20_000;
const EPSILON: f64 = 1.0;

// ---------------------------------------------------------------------------------------------
// GRR
// ---------------------------------------------------------------------------------------------

/// The exact `δ(ε)` of a GRR randomizer between inputs 0 and 1.
fn grr_exact_delta(grr: &Grr, epsilon: f64) -> f64 {
    (0..grr.domain())
        .map(|y| {
            (grr.output_probability(0, y) - epsilon.exp() * grr.output_probability(1, y)).max(0.0)
        })
        .sum()
}

#[test]
fn dp_audit_grr_passes_and_catches_the_doubled_epsilon() {
    let real = Grr::new(3, EPSILON).unwrap();
    let mutant = Grr::new(3, 2.0 * EPSILON).unwrap();
    assert_eq!(real.guarantee().delta.to_bits(), 0f64.to_bits());
    for (grr, seed, is_real) in [(&real, 100, true), (&mutant, 200, false)] {
        let bound = split_sample_lower_bound(
            LOCAL_RUNS,
            seed,
            EPSILON,
            |rng| grr.randomize(0, rng),
            |rng| grr.randomize(1, rng),
        );
        let exact = grr_exact_delta(grr, EPSILON);
        // Conformance: the statistic on the exact bad set {y = 0} matches the exact δ.
        let statistic = set_statistic(
            &Outcomes::sample(LOCAL_RUNS, seed + 10, |rng| grr.randomize(0, rng)),
            &Outcomes::sample(LOCAL_RUNS, seed + 11, |rng| grr.randomize(1, rng)),
            EPSILON,
            |&y| y == 0,
        );
        assert!(
            statistic.agrees_with(exact, 1e-12),
            "{statistic:?} vs {exact}"
        );
        if is_real {
            assert!(exact <= 1e-15, "{exact}");
            assert!(bound <= 0.0, "GRR leaks: δ ≥ {bound}");
        } else {
            assert!((exact - 0.497).abs() < 1e-3, "{exact}");
            assert!(bound > 0.4, "mutant not caught: {bound}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Subset selection
// ---------------------------------------------------------------------------------------------

/// Every 2-subset of `0..4`, in increasing order: subset selection's reports at `s = 2`.
fn pairs_of_four() -> Vec<Vec<u32>> {
    (0..4)
        .flat_map(|a| (a + 1..4).map(move |b| vec![a, b]))
        .collect()
}

/// The exact `δ(ε)` of a subset-selection randomizer between inputs 0 and 1.
fn subset_selection_exact_delta(mechanism: &SubsetSelection, epsilon: f64) -> f64 {
    pairs_of_four()
        .iter()
        .map(|y| {
            (mechanism.output_probability(0, y)
                - epsilon.exp() * mechanism.output_probability(1, y))
            .max(0.0)
        })
        .sum()
}

#[test]
fn dp_audit_subset_selection_passes_and_catches_the_doubled_epsilon() {
    let real = SubsetSelection::with_size(4, EPSILON, 2).unwrap();
    let mutant = SubsetSelection::with_size(4, 2.0 * EPSILON, 2).unwrap();
    assert_eq!(real.guarantee().delta.to_bits(), 0f64.to_bits());
    for (mechanism, seed, is_real) in [(&real, 300, true), (&mutant, 400, false)] {
        let bound = split_sample_lower_bound(
            LOCAL_RUNS,
            seed,
            EPSILON,
            |rng| mechanism.randomize(0, rng),
            |rng| mechanism.randomize(1, rng),
        );
        let exact = subset_selection_exact_delta(mechanism, EPSILON);
        // Conformance: the statistic on the exact bad set {0 ∈ y, 1 ∉ y} matches the exact δ.
        let statistic = set_statistic(
            &Outcomes::sample(LOCAL_RUNS, seed + 10, |rng| mechanism.randomize(0, rng)),
            &Outcomes::sample(LOCAL_RUNS, seed + 11, |rng| mechanism.randomize(1, rng)),
            EPSILON,
            |y| y.contains(&0) && !y.contains(&1),
        );
        assert!(
            statistic.agrees_with(exact, 1e-12),
            "{statistic:?} vs {exact}"
        );
        if is_real {
            assert!(exact <= 1e-15, "{exact}");
            assert!(bound <= 0.0, "subset selection leaks: δ ≥ {bound}");
        } else {
            // Two reports hold 0 and not 1, each (p/3)(1 − e^ε e^{−2ε}) with p = e²/(e² + 1).
            assert!((exact - 0.371).abs() < 1e-3, "{exact}");
            assert!(bound > 0.25, "mutant not caught: {bound}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OUE
// ---------------------------------------------------------------------------------------------

#[test]
fn dp_audit_oue_passes_and_catches_the_doubled_epsilon() {
    let real = UnaryRandomizer::oue(3, EPSILON).unwrap();
    let mutant = UnaryRandomizer::oue(3, 2.0 * EPSILON).unwrap();
    for (oue, seed, is_real) in [(&real, 300, true), (&mutant, 400, false)] {
        let bound = split_sample_lower_bound(
            LOCAL_RUNS,
            seed,
            EPSILON,
            |rng| oue.randomize(0, rng),
            |rng| oue.randomize(1, rng),
        );
        // The exact δ over all 8 bit patterns, and its bad set.
        let patterns: Vec<UnaryReport> = (0..8u32)
            .map(|m| UnaryReport::from_fn(3, |i| m >> i & 1 == 1))
            .collect();
        let excess = |y: &UnaryReport| {
            oue.output_probability(0, y) - EPSILON.exp() * oue.output_probability(1, y)
        };
        let exact: f64 = patterns.iter().map(|y| excess(y).max(0.0)).sum();
        let bad: Vec<UnaryReport> = patterns.into_iter().filter(|y| excess(y) > 0.0).collect();
        let statistic = set_statistic(
            &Outcomes::sample(LOCAL_RUNS, seed + 10, |rng| oue.randomize(0, rng)),
            &Outcomes::sample(LOCAL_RUNS, seed + 11, |rng| oue.randomize(1, rng)),
            EPSILON,
            |y| bad.contains(y),
        );
        assert!(
            statistic.agrees_with(exact, 1e-12),
            "{statistic:?} vs {exact}"
        );
        if is_real {
            assert!(exact <= 1e-15, "{exact}");
            assert!(bound <= 0.0, "OUE leaks: δ ≥ {bound}");
        } else {
            assert!(exact > 0.25, "{exact}");
            assert!(bound > 0.2, "mutant not caught: {bound}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Balcer–Cheu
// ---------------------------------------------------------------------------------------------

const USERS: u64 = 1200;
const BC_DELTA: f64 = 0.05;

/// `D`: the differing client holds 0, the other 1199 clients alternate between 0 and 1;
/// `D'`: the differing client holds 1.
fn dataset(differing: u32) -> Vec<u32> {
    let mut items: Vec<u32> = (0..USERS - 1).map(|i| (i % 2) as u32).collect();
    items.push(differing);
    items
}

/// The real items held per cell under `D` and `D'`.
fn real_counts(differing: u32) -> [u64; 2] {
    let items = dataset(differing);
    let ones = items.iter().filter(|&&x| x == 1).count() as u64;
    [USERS - ones, ones]
}

/// The exact `δ(ε)` between the message-count pairs on `D` and `D'` when every cell gets
/// `Bin(n, p)` noise messages: the pair `(X + 1, Y)` against `(X, Y + 1)` for independent
/// `X, Y ~ Bin(n, p)` (the outcomes shifted by the reals of `D'` minus one in cell 1).
fn balcer_cheu_exact_delta(p: f64, epsilon: f64) -> f64 {
    let pmf: Vec<f64> = (0..=USERS)
        .map(|k| ln_binomial_pmf(k, USERS, p).exp())
        .collect();
    let g = |k: i64| {
        usize::try_from(k)
            .ok()
            .and_then(|k| pmf.get(k))
            .copied()
            .unwrap_or(0.0)
    };
    let e = epsilon.exp();
    let mut sum = 0.0;
    for u in 0..=USERS as i64 + 1 {
        let (gu1, gu) = (g(u - 1), g(u));
        if gu1 == 0.0 && gu == 0.0 {
            continue;
        }
        for v in 0..=USERS as i64 + 1 {
            sum += (gu1 * g(v) - e * gu * g(v - 1)).max(0.0);
        }
    }
    sum
}

/// Whether the outcome `(c0, c1)` is in the exact bad set `{P > e^ε Q}` of the noise `p`.
fn in_bad_set(p: f64, epsilon: f64, (c0, c1): (u64, u64)) -> bool {
    let [r0, r1] = real_counts(1); // D' reals; D has one more in cell 0, one fewer in cell 1
    let ln_pmf = |k: i64| {
        if (0..=USERS as i64).contains(&k) {
            ln_binomial_pmf(k as u64, USERS, p)
        } else {
            f64::NEG_INFINITY
        }
    };
    let (x, y) = (c0 as i64 - r0 as i64, c1 as i64 - r1 as i64); // noise under D'
    let ln_p = ln_pmf(x - 1) + ln_pmf(y + 1);
    let ln_q = ln_pmf(x) + ln_pmf(y);
    ln_p > epsilon + ln_q
}

/// The mutant's per-cell path: the real counts plus `Bin(n, p)` noise with the given `p`.
fn per_cell_with(p: f64, differing: u32) -> impl Fn(&mut ChaCha20Rng) -> (u64, u64) {
    let [r0, r1] = real_counts(differing);
    move |rng| {
        let n0 = exact_binomial(USERS, p, rng);
        (r0 + n0, r1 + exact_binomial(USERS, p, rng))
    }
}

fn pair(counts: Vec<u64>) -> (u64, u64) {
    (counts[0], counts[1])
}

/// The shuffler's output when every client of `items` answers the round's query: the number
/// of messages equal to each cell, as the analyzer counts them.
fn every_client_answers(
    mechanism: &BalcerCheuHistogram,
    items: &[u32],
    rng: &mut ChaCha20Rng,
) -> Vec<u64> {
    let round = mechanism.round(DomainMap::Integers(2)).unwrap();
    let mut counts = vec![0; 2];
    for item in items {
        let report = round
            .query()
            .respond(item, rng)
            .expect("an item of the domain");
        for message in report.into_messages() {
            counts[message as usize] += 1;
        }
    }
    counts
}

#[test]
fn dp_audit_balcer_cheu_passes() {
    let mechanism = BalcerCheuHistogram::new(2, EPSILON, BC_DELTA, USERS).unwrap();
    let claimed = mechanism.guarantee().delta;
    assert_eq!(claimed.to_bits(), BC_DELTA.to_bits());
    let (d, d_prime) = (dataset(0), dataset(1));
    let bound = split_sample_lower_bound(
        SHUFFLE_RUNS,
        500,
        EPSILON,
        |rng| pair(every_client_answers(&mechanism, &d, rng)),
        |rng| pair(every_client_answers(&mechanism, &d_prime, rng)),
    );
    assert!(bound <= claimed, "per-client path leaks: δ ≥ {bound}");
    let bound = split_sample_lower_bound(
        SHUFFLE_RUNS,
        600,
        EPSILON,
        |rng| pair(mechanism.run_per_cell(&real_counts(0), rng)),
        |rng| pair(mechanism.run_per_cell(&real_counts(1), rng)),
    );
    assert!(bound <= claimed, "per-cell path leaks: δ ≥ {bound}");
    // Conformance: the sampled statistic on the exact bad set reproduces the exact δ.
    let p = mechanism.noise_probability();
    let exact = balcer_cheu_exact_delta(p, EPSILON);
    assert!(exact <= claimed && exact > 0.049, "{exact}");
    let statistic = set_statistic(
        &Outcomes::sample(SHUFFLE_RUNS, 610, |rng| {
            pair(every_client_answers(&mechanism, &d, rng))
        }),
        &Outcomes::sample(SHUFFLE_RUNS, 611, |rng| {
            pair(every_client_answers(&mechanism, &d_prime, rng))
        }),
        EPSILON,
        |&o| in_bad_set(p, EPSILON, o),
    );
    assert!(
        statistic.agrees_with(exact, 1e-9),
        "{statistic:?} vs {exact}"
    );
}

#[test]
fn dp_audit_balcer_cheu_catches_the_doubled_epsilon() {
    // The mechanism calibrated at 2ε, run through its own per-cell path, claiming ε.
    let doubled = BalcerCheuHistogram::new(2, 2.0 * EPSILON, BC_DELTA, USERS).unwrap();
    let p = doubled.noise_probability();
    let exact = balcer_cheu_exact_delta(p, EPSILON);
    assert!((exact - 0.099).abs() < 1e-3, "{exact}");
    let bound = split_sample_lower_bound(
        SHUFFLE_RUNS,
        700,
        EPSILON,
        |rng| pair(doubled.run_per_cell(&real_counts(0), rng)),
        |rng| pair(doubled.run_per_cell(&real_counts(1), rng)),
    );
    assert!(
        bound > BC_DELTA,
        "doubled-ε mutant not caught: δ ≥ {bound} (exact δ(ε) = {exact})"
    );
    // Conformance: the sampled statistic on the exact bad set reproduces the exact δ.
    let statistic = set_statistic(
        &Outcomes::sample(SHUFFLE_RUNS, 710, per_cell_with(p, 0)),
        &Outcomes::sample(SHUFFLE_RUNS, 711, per_cell_with(p, 1)),
        EPSILON,
        |&o| in_bad_set(p, EPSILON, o),
    );
    assert!(
        statistic.agrees_with(exact, 1e-9),
        "{statistic:?} vs {exact}"
    );
}

// ---------------------------------------------------------------------------------------------
// Shuffled GRR
// ---------------------------------------------------------------------------------------------

/// Clients of the shuffled-GRR audit: small, so that amplification is weak and measurable.
const SHUFFLED_USERS: u64 = 20;
const SHUFFLED_DELTA: f64 = 0.1;

/// The shuffled output of binary GRR reports: only the number of reports equal to 1 (the
/// multiset of reports is determined by it).
fn shuffled_ones(grr: &Grr, differing: u32) -> impl Fn(&mut ChaCha20Rng) -> u64 + '_ {
    move |rng| {
        let others = (0..SHUFFLED_USERS - 1).filter(|_| grr.randomize(0, rng) == 1);
        others.count() as u64 + u64::from(grr.randomize(differing, rng) == 1)
    }
}

#[test]
fn dp_audit_shuffled_grr_passes_and_catches_the_doubled_local_epsilon() {
    let mechanism = ShuffledGrr::new(
        2,
        EPSILON,
        SHUFFLED_DELTA,
        SHUFFLED_USERS,
        ShuffleBound::Fmt23,
    )
    .unwrap();
    let grr = mechanism.randomizer();
    let claimed = mechanism.guarantee().delta;
    let honest = split_sample_lower_bound(
        LOCAL_RUNS,
        900,
        EPSILON,
        shuffled_ones(grr, 0),
        shuffled_ones(grr, 1),
    );
    assert!(honest <= claimed, "shuffled GRR leaks: δ ≥ {honest}");
    // The mutant randomizes at twice the solved local ε₀ but claims the same shuffled ε.
    let doubled = Grr::new(2, 2.0 * mechanism.local_epsilon()).unwrap();
    let bound = split_sample_lower_bound(
        LOCAL_RUNS,
        910,
        EPSILON,
        shuffled_ones(&doubled, 0),
        shuffled_ones(&doubled, 1),
    );
    assert!(bound > claimed, "doubled-ε₀ mutant not caught: δ ≥ {bound}");
}
