//! Tests of the shuffle-model histograms of `tally_core::shuffle` (docs/algorithms.md §7.3, §5.8):
//!
//! 1. Balcer–Cheu: every device's messages summed, and the counts drawn cell by cell, both
//!    give each cell's message count the law `#{clients holding j} + Bin(n, p)` (chi-square
//!    goodness of fit) and agree with each other (two-sample chi-square); one client's
//!    randomizer sends `1 + Bin(d, p)` messages; the analyzer is the paper's;
//!    the estimates meet Theorem 3.1's error bound;
//! 2. shuffled GRR: `ε₀` is the accountant's, the estimates are unbiased;
//! 3. the `DomainHistogram` interface and the parameter errors of both.
//!
//! Statistical tests use significance level 1e-6 each (see `common`), with fixed seeds.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::{assert_fits, chi2_critical, z_critical};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{Binomial, Discrete};
use tally_accounting::balcer_cheu::BalcerCheu;
use tally_accounting::shuffle::{ShuffleBound, max_local_epsilon};
use tally_accounting::{Neighbours, TrustModel};
use tally_core::Error;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::protocol::{DeviceQuery, Estimates, MultiMessage, RoundAggregator, RoundProtocol};
use tally_core::shuffle::{BalcerCheuHistogram, ShuffledGrr};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// The number of clients holding each element of `0..domain`.
fn holders(domain: u32, items: &[u32]) -> Vec<u64> {
    let mut counts = vec![0; domain as usize];
    for &item in items {
        counts[item as usize] += 1;
    }
    counts
}

/// The shuffler's output when every client answers the round's query: the number of
/// messages equal to each cell.
fn every_client_answers(
    mechanism: &BalcerCheuHistogram,
    items: &[u32],
    rng: &mut ChaCha20Rng,
) -> Vec<u64> {
    let round = mechanism
        .round(DomainMap::Integers(mechanism.domain()))
        .unwrap();
    let mut counts = vec![0; mechanism.domain() as usize];
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

/// The estimates `round` releases after every client of `items` answered its query (the
/// analyzer flips no coins).
fn round_estimates<P>(round: &P, items: &[u32], rng: &mut ChaCha20Rng) -> Vec<f64>
where
    P: RoundProtocol<Query: DeviceQuery<Input = u32>, Release = Estimates>,
{
    let mut analyzer = round.aggregator(ChaCha20Rng::seed_from_u64(0));
    for item in items {
        let report = round
            .query()
            .respond(item, rng)
            .expect("an item of the domain");
        analyzer.absorb(report);
    }
    analyzer.release().0
}

/// Weak parameters with a `p` far from 0 and 1: `(ε', δ') = (1, 1/4)`, `n = 300`.
fn small() -> (BalcerCheuHistogram, Vec<u32>) {
    // p = 0.62 by the exact analysis.
    let mechanism = BalcerCheuHistogram::new(3, 0.7, 1e-6, 300).unwrap();
    // Cell 0: nobody; cell 1: 100 clients; cell 2: 200 clients.
    let items = (0..300).map(|i| if i < 100 { 1 } else { 2 }).collect();
    (mechanism, items)
}

/// `Pr[count = real + k]` for `k ~ Bin(n, p)`, as cell probabilities over `0..=n`.
fn binomial_probs(n: u64, p: f64) -> Vec<f64> {
    let b = Binomial::new(p, n).expect("valid binomial");
    (0..=n).map(|k| b.pmf(k)).collect()
}

/// Pearson's two-sample chi-square of two equal-size samples of values in `0..cells`, after
/// pooling adjacent values until each pooled cell holds at least 10 observations in all.
/// Returns `(statistic, degrees of freedom)`.
fn two_sample(a: &[u64], b: &[u64]) -> (f64, usize) {
    assert_eq!(a.len(), b.len());
    let mut pooled: Vec<(f64, f64)> = Vec::new();
    let mut acc = (0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        acc.0 += x as f64;
        acc.1 += y as f64;
        if acc.0 + acc.1 >= 10.0 {
            pooled.push(acc);
            acc = (0.0, 0.0);
        }
    }
    if let Some(last) = pooled.last_mut() {
        last.0 += acc.0;
        last.1 += acc.1;
    }
    let stat = pooled
        .iter()
        .map(|&(x, y)| (x - y) * (x - y) / (x + y))
        .sum();
    (stat, pooled.len() - 1)
}

const RUNS: usize = 20_000;

/// `RUNS` draws of every cell's message count, as histograms over `0..=2n`.
fn cell_histograms(
    mechanism: &BalcerCheuHistogram,
    items: &[u32],
    seed: u64,
    per_client: bool,
) -> Vec<Vec<u64>> {
    let n = mechanism.users() as usize;
    let mut hist = vec![vec![0u64; 2 * n + 1]; 3];
    let mut r = rng(seed);
    let held = holders(mechanism.domain(), items);
    for _ in 0..RUNS {
        let counts = if per_client {
            every_client_answers(mechanism, items, &mut r)
        } else {
            mechanism.run_per_cell(&held, &mut r)
        };
        for (h, c) in hist.iter_mut().zip(counts) {
            h[c as usize] += 1;
        }
    }
    hist
}

#[test]
fn balcer_cheu_paths_draw_the_exact_cell_distribution() {
    let (mechanism, items) = small();
    let (n, p) = (mechanism.users(), mechanism.noise_probability());
    assert!(p > 0.6 && p < 0.7, "{p}");
    let noise = binomial_probs(n, p);
    for (per_client, seed) in [(true, 11), (false, 12)] {
        let hist = cell_histograms(&mechanism, &items, seed, per_client);
        for (cell, real) in [(0usize, 0usize), (1, 100), (2, 200)] {
            // The count is real + Bin(n, p): nothing below real or above real + n.
            assert!(hist[cell][..real].iter().all(|&c| c == 0));
            assert!(hist[cell][real + n as usize + 1..].iter().all(|&c| c == 0));
            let observed = &hist[cell][real..=real + n as usize];
            let what = format!("cell {cell}, per_client = {per_client}");
            assert_fits(&what, seed, observed, &noise);
        }
    }
}

#[test]
fn balcer_cheu_paths_agree_two_sample() {
    let (mechanism, items) = small();
    let a = cell_histograms(&mechanism, &items, 21, true);
    let b = cell_histograms(&mechanism, &items, 22, false);
    for cell in 0..3 {
        let (stat, df) = two_sample(&a[cell], &b[cell]);
        let crit = chi2_critical(df);
        assert!(
            stat <= crit,
            "cell {cell}: two-sample chi-square {stat:.2} > {crit:.2} (df = {df})"
        );
    }
    // The test has power: a slightly less noisy calibration (δ' = 0.3 instead of 0.25, p up by
    // about 0.03) is told apart.
    let weaker = BalcerCheuHistogram::new(3, 2.0, 0.6, 300).unwrap();
    let c = cell_histograms(&weaker, &items, 23, false);
    let (stat, df) = two_sample(&a[0], &c[0]);
    assert!(stat > chi2_critical(df), "{stat} (df = {df})");
}

#[test]
fn randomizer_sends_one_plus_binomial_messages() {
    let mechanism = BalcerCheuHistogram::new(5, 2.0, 0.5, 300).unwrap();
    let p = mechanism.noise_probability();
    let mut r = rng(31);
    let mut lengths = vec![0u64; 6];
    let mut own_twice = 0u64;
    let runs = 50_000;
    for i in 0..runs {
        let item = (i % 5) as u32;
        let messages = mechanism.randomize(item, &mut r);
        assert!(messages.windows(2).all(|w| w[0] <= w[1]));
        let own = messages.iter().filter(|&&m| m == item).count();
        assert!(own == 1 || own == 2);
        own_twice += u64::from(own == 2);
        for j in 0..5 {
            if j != item {
                assert!(messages.iter().filter(|&&m| m == j).count() <= 1);
            }
        }
        lengths[messages.len() - 1] += 1;
    }
    assert_fits(
        "noise messages per client",
        31,
        &lengths,
        &binomial_probs(5, p),
    );
    common::assert_proportion("own noise coin", 31, own_twice, runs, p);
}

#[test]
fn analyzer_is_the_papers() {
    let (mechanism, _) = small();
    let (n, p) = (mechanism.users(), mechanism.noise_probability());
    let freq = mechanism.analyze(&[n - 5, n, n + 1]);
    assert_eq!(freq[..2], [0.0, 0.0]);
    assert_eq!(freq[2].to_bits(), ((n + 1) as f64 / n as f64 - p).to_bits());
    assert_eq!(
        mechanism.analyze(&[2 * n, 0, n])[0].to_bits(),
        (2.0 - p).to_bits()
    );
    // Zero error on cells nobody holds: Bin(n, p) ≤ n messages.
    let round = mechanism.round(DomainMap::Integers(3)).unwrap();
    let mut r = rng(51);
    for _ in 0..200 {
        let estimate = round_estimates(&round, &[1; 300], &mut r);
        assert_eq!([estimate[0].to_bits(), estimate[2].to_bits()], [0, 0]);
        assert!(estimate[1] > 0.0);
    }
}

#[test]
fn balcer_cheu_meets_the_theorem_3_1_error_bound() {
    let (d, n) = (64u32, 100_000u64);
    let mechanism = BalcerCheuHistogram::new(d, 1.0, 1e-6, n).unwrap();
    // A skewed histogram: item i held by about n·2^-(i+1) clients.
    let items: Vec<u32> = (0..n)
        .map(|i| (i + 1).trailing_zeros().min(d - 1))
        .collect();
    let mut truth = vec![0f64; d as usize];
    for &x in &items {
        truth[x as usize] += 1.0;
    }
    let beta = 1e-6 / f64::from(d);
    let alpha = mechanism.params().error_bound(beta).unwrap();
    let round = mechanism.round(DomainMap::Integers(d)).unwrap();
    let mut r = rng(61);
    for _ in 0..5 {
        let estimate = round_estimates(&round, &items, &mut r);
        let worst = estimate
            .iter()
            .zip(&truth)
            .map(|(e, t)| (e - t).abs() / n as f64)
            .fold(0.0, f64::max);
        assert!(worst <= alpha, "max frequency error {worst} > α = {alpha}");
    }
}

#[test]
fn balcer_cheu_interface_and_errors() {
    let mechanism = BalcerCheuHistogram::new(1000, 1.0, 1e-8, 1_000_000).unwrap();
    assert_eq!(mechanism.name(), "balcer-cheu");
    assert_eq!(mechanism.domain(), 1000);
    let g = mechanism.guarantee();
    assert_eq!((g.epsilon, g.delta), (1.0, 1e-8));
    assert_eq!(g.model, TrustModel::Shuffle);
    assert_eq!(g.neighbours, Neighbours::ReplaceOne);
    assert!(mechanism.local_guarantee().is_none());
    let p = BalcerCheu::histogram(1.0, 1e-8, 1_000_000)
        .unwrap()
        .noise_probability();
    assert_eq!(mechanism.noise_probability().to_bits(), p.to_bits());
    let cost = mechanism.message_cost().unwrap();
    assert_eq!(cost.bits_per_message, 10);
    assert!((cost.messages_per_client - (1.0 + 1000.0 * p)).abs() < 1e-9);
    assert_eq!(
        BalcerCheuHistogram::new(1024, 1.0, 1e-8, 1_000_000)
            .unwrap()
            .message_cost()
            .unwrap()
            .bits_per_message,
        10
    );
    assert!(matches!(
        BalcerCheuHistogram::new(1, 1.0, 1e-6, 1_000_000),
        Err(Error::InvalidParameter { name: "domain", .. })
    ));
    // Too few users even at p = 1/2 (the exact analysis needs 148), no ε, δ = 1.
    for (eps, delta, n) in [
        (1.0, 1e-6, 147),
        (0.0, 1e-6, 1_000_000),
        (1.0, 1.0, 1_000_000),
    ] {
        assert!(
            matches!(
                BalcerCheuHistogram::new(4, eps, delta, n),
                Err(Error::Accounting(_))
            ),
            "{eps} {delta} {n}"
        );
    }
}

#[test]
#[should_panic(expected = "different number of clients")]
fn balcer_cheu_rejects_the_wrong_number_of_clients() {
    let (mechanism, _) = small();
    mechanism.run_per_cell(&[0, 100, 199], &mut rng(0));
}

#[test]
#[should_panic(expected = "one count per domain element")]
fn balcer_cheu_rejects_counts_of_another_domain() {
    let (mechanism, _) = small();
    mechanism.run_per_cell(&[0, 100, 100, 100], &mut rng(0));
}

#[test]
fn shuffled_grr_uses_the_accountants_local_epsilon() {
    let (eps, delta, n) = (0.5, 1e-6, 10_000);
    for bound in [ShuffleBound::Fmt21, ShuffleBound::Fmt23] {
        let mechanism = ShuffledGrr::new(4, eps, delta, n, bound).unwrap();
        let eps0 = max_local_epsilon(eps, n, delta, bound).unwrap();
        assert_eq!(mechanism.local_epsilon().to_bits(), eps0.to_bits());
        assert!(eps0 > 2.0 * eps, "{bound}: {eps0}");
        assert_eq!(mechanism.bound(), bound);
        assert_eq!(mechanism.users(), n);
        assert_eq!(mechanism.name(), "shuffled-grr");
        assert_eq!(mechanism.domain(), 4);
        let g = mechanism.guarantee();
        assert_eq!((g.epsilon, g.delta), (eps, delta));
        assert_eq!(g.model, TrustModel::Shuffle);
        assert_eq!(g.neighbours, Neighbours::ReplaceOne);
        let local = mechanism.local_guarantee().unwrap();
        assert_eq!((local.epsilon, local.delta), (eps0, 0.0));
        assert_eq!(local.model, TrustModel::Local);
        let cost = mechanism.message_cost().unwrap();
        assert_eq!((cost.messages_per_client, cost.bits_per_message), (1.0, 2));
    }
    // FMT23 is never worse than FMT21: it allows a larger ε₀.
    let fmt21 = ShuffledGrr::new(4, eps, delta, n, ShuffleBound::Fmt21).unwrap();
    let fmt23 = ShuffledGrr::new(4, eps, delta, n, ShuffleBound::Fmt23).unwrap();
    assert!(fmt23.local_epsilon() >= fmt21.local_epsilon());
}

#[test]
fn shuffled_grr_estimates_are_unbiased() {
    let (d, n) = (4u32, 10_000u64);
    let mechanism = ShuffledGrr::new(d, 0.5, 1e-6, n, ShuffleBound::Fmt23).unwrap();
    let items: Vec<u32> = (0..n)
        .map(|i| u32::from(i % 10 >= 6) + u32::from(i % 10 >= 9))
        .collect();
    let truth = [6_000.0, 3_000.0, 1_000.0, 0.0];
    let runs = 400;
    let mut sums = [0f64; 4];
    let round = mechanism.round(DomainMap::Integers(d)).unwrap();
    let mut r = rng(71);
    for _ in 0..runs {
        for (s, e) in sums.iter_mut().zip(round_estimates(&round, &items, &mut r)) {
            *s += e;
        }
    }
    let grr = mechanism.randomizer();
    for (j, (&sum, &t)) in sums.iter().zip(&truth).enumerate() {
        let mean = sum / f64::from(runs);
        let sd = (grr.variance_at(n, t as u64) / f64::from(runs)).sqrt();
        assert!(
            (mean - t).abs() <= z_critical() * sd,
            "item {j}: mean {mean} vs {t} (sd {sd})"
        );
    }
}

#[test]
fn shuffled_grr_errors() {
    assert!(matches!(
        ShuffledGrr::new(1, 1.0, 1e-6, 10_000, ShuffleBound::Fmt23),
        Err(Error::InvalidParameter { name: "domain", .. })
    ));
    assert!(matches!(
        ShuffledGrr::new(4, 1.0, 0.0, 10_000, ShuffleBound::Fmt23),
        Err(Error::Accounting(_))
    ));
    assert!(matches!(
        ShuffledGrr::new(4, 1.0, 1e-6, 1, ShuffleBound::Fmt23),
        Err(Error::Accounting(_))
    ));
}
