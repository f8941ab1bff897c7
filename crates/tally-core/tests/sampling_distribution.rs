//! Statistical tests of the exact samplers of `tally_core::sampling`, at significance level
//! 1e-6 each, with fixed ChaCha20 seeds (so they are deterministic), plus value-stability pins.

mod common;

use common::{assert_fits, assert_proportion, geometric_cells, histogram};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::Distribution;
use statrs::distribution::{Binomial, Discrete, DiscreteCDF};
use tally_core::sampling::{
    CohortOutcome, ExactBernoulli, ExactBinomial, ExactGeometric, ExactPoissonCohort, PaperCohort,
    PoissonSampler, exact_binomial,
};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// `Bin(n, p)` cell probabilities for `0..=n`.
fn binomial_probs(n: u64, p: f64) -> Vec<f64> {
    let b = Binomial::new(p, n).expect("valid binomial");
    (0..=n).map(|k| b.pmf(k)).collect()
}

fn counts_of(values: impl IntoIterator<Item = u64>, cells: usize) -> Vec<u64> {
    let mut counts = vec![0u64; cells];
    for v in values {
        counts[v as usize] += 1;
    }
    counts
}

// ---------------------------------------------------------------------------------------------
// Value stability: the first outputs for a fixed seed. The samplers are exact, so these values
// do not depend on the platform's floating point; a change here changes every seeded run.
// ---------------------------------------------------------------------------------------------

#[test]
fn value_stability() {
    let mut r = rng(20240601);
    let coin = ExactBernoulli::new(0.3).unwrap();
    let bits: String = (0..32)
        .map(|_| if coin.sample(&mut r) { '1' } else { '0' })
        .collect();
    let geo = ExactGeometric::new(0.01).unwrap();
    let g01: Vec<u64> = (0..8).map(|_| geo.sample(&mut r)).collect();
    let geo = ExactGeometric::new(0.3).unwrap();
    let g3: Vec<u64> = (0..8).map(|_| geo.sample(&mut r)).collect();
    let poisson: Vec<u64> = PoissonSampler::new(0.01)
        .unwrap()
        .indices(10_000, &mut r)
        .take(8)
        .collect();
    let bin: Vec<u64> = [(1000, 0.1), (1000, 0.9), (10, 0.5), (1_000_000, 1e-4)]
        .into_iter()
        .map(|(n, p)| exact_binomial(n, p, &mut r))
        .collect();
    let paper = PaperCohort::new(1000, 10.0, 2.0).unwrap().draw(&mut r);
    let exact = ExactPoissonCohort::new(1000, 0.01, 3.0)
        .unwrap()
        .draw(&mut r)
        .cohort()
        .unwrap();
    let got = format!(
        "bits {bits}\ng01 {g01:?}\ng3 {g3:?}\npoisson {poisson:?}\nbin {bin:?}\n\
         paper {:?} / {:?}\nexact {:?} / {:?}",
        paper.contacted(),
        paper.participating(),
        exact.contacted(),
        exact.participating()
    );
    let expected = "\
bits 00100000101000100010000000001010
g01 [152, 122, 119, 50, 72, 60, 2, 429]
g3 [0, 1, 7, 2, 4, 1, 2, 1]
poisson [95, 296, 321, 410, 577, 602, 741, 743]
bin [88, 893, 5, 91]
paper [33, 140, 246, 305, 329, 338, 361, 410, 444, 523, 697, 715, 786, 802, 821, 839, 944] / \
[33, 246, 444, 697, 786, 802, 821, 839, 944]
exact [10, 45, 84, 145, 404, 467, 483, 484, 497, 498, 570, 640, 643, 658, 698, 754, 791, 896, \
898] / [84, 145, 404, 658]";
    assert_eq!(got, expected, "\n{got}");
}

// ---------------------------------------------------------------------------------------------
// ExactGeometric against the exact pmf Pr[G = g] = (1 − p)^g p.
// ---------------------------------------------------------------------------------------------

fn check_geometric(p: f64, draws: usize, edges: &[u64], seed: u64) {
    let geo = ExactGeometric::new(p).unwrap();
    let mut r = rng(seed);
    let observed = histogram((0..draws).map(|_| geo.sample(&mut r)), edges);
    assert_fits(
        &format!("ExactGeometric(p = {p:e})"),
        seed,
        &observed,
        &geometric_cells(p, edges),
    );
}

/// Edges for one cell per value `0..k`, then the pooled tail.
fn unit_edges(k: u64) -> Vec<u64> {
    (0..=k).collect()
}

/// Edges splitting Geometric(p) into `cells` cells of about equal probability.
fn quantile_edges(p: f64, cells: usize) -> Vec<u64> {
    let ln_q = (-p).ln_1p();
    let mut edges = vec![0u64];
    for i in 1..cells {
        let e = ((1.0 - i as f64 / cells as f64).ln() / ln_q).ceil() as u64;
        if e > *edges.last().unwrap() {
            edges.push(e);
        }
    }
    edges
}

#[test]
fn geometric_p_0_3_fits() {
    check_geometric(0.3, 1_000_000, &unit_edges(60), 101);
}

#[test]
fn geometric_p_0_01_fits() {
    check_geometric(0.01, 1_000_000, &unit_edges(1500), 102);
}

#[test]
fn geometric_p_2_pow_minus_20_fits() {
    // Values around 10^6: 200 cells of equal probability, plus the first values one by one
    // (pooled until each cell expects 5).
    let p = 2f64.powi(-20);
    let mut edges: Vec<u64> = (0..64).collect();
    edges.extend(quantile_edges(p, 200).into_iter().filter(|&e| e > 63));
    check_geometric(p, 400_000, &edges, 103);
}

#[test]
fn geometric_p_1e_minus_12_fits() {
    // Around 3% of these draws take the exact big-integer path.
    let p = 1e-12;
    check_geometric(p, 100_000, &quantile_edges(p, 100), 104);
}

#[test]
fn geometric_p_0_75_fits() {
    check_geometric(0.75, 500_000, &unit_edges(20), 105);
}

// ---------------------------------------------------------------------------------------------
// ExactBernoulli frequencies.
// ---------------------------------------------------------------------------------------------

#[test]
fn bernoulli_frequencies() {
    for (i, p) in [0.5, 0.1, 1.0 / 3.0, 1e-3, 0.999].into_iter().enumerate() {
        let seed = 200 + i as u64;
        let coin = ExactBernoulli::new(p).unwrap();
        let mut r = rng(seed);
        let n = 2_000_000u64;
        let successes = (0..n).filter(|_| coin.sample(&mut r)).count() as u64;
        assert_proportion(&format!("ExactBernoulli({p})"), seed, successes, n, p);
    }
}

// ---------------------------------------------------------------------------------------------
// exact_binomial against the Binomial pmf.
// ---------------------------------------------------------------------------------------------

#[test]
fn binomial_fits() {
    for (i, (n, p, draws)) in [
        (50u64, 0.3, 100_000usize),
        (1000, 0.9, 20_000),      // complement path
        (1000, 0.5, 10_000),      // boundary of the complement path
        (1_000_000, 1e-4, 5_000), // large n
        (20, 1.0 / 3.0, 100_000),
        // Bit-sliced coins (the rarer outcome at least 1/32): a partial block, exactly one
        // block, several blocks, a p with a long binary expansion, and p just above 1/32.
        (37, 0.2, 100_000),
        (64, 0.7, 100_000),
        (1000, 0.25, 20_000),
        (130, 0.1 + 0.2, 100_000),
        (500, 1.0 / 32.0, 50_000),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 300 + i as u64;
        let mut r = rng(seed);
        let b = ExactBinomial::new(n, p).unwrap();
        // For n = 10^6, sizes of 400 and above are pooled into one tail cell.
        let cap = if n <= 1000 { n } else { 400 };
        let observed = counts_of(
            (0..draws).map(|_| b.sample(&mut r).min(cap)),
            cap as usize + 1,
        );
        let dist = Binomial::new(p, n).unwrap();
        let mut probs: Vec<f64> = (0..cap).map(|k| dist.pmf(k)).collect();
        probs.push(dist.sf(cap - 1));
        assert_fits(
            &format!("exact_binomial({n}, {p})"),
            seed,
            &observed,
            &probs,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// PoissonSampler: sample size ~ Bin(n, p) and every index equally likely.
// ---------------------------------------------------------------------------------------------

#[test]
fn poisson_sampler_size_and_uniformity() {
    let (n, p, runs, seed) = (1000u64, 0.05, 20_000usize, 400u64);
    let sampler = PoissonSampler::new(p).unwrap();
    let mut r = rng(seed);
    let mut sizes = vec![0u64; n as usize + 1];
    let buckets = 25usize;
    let mut per_bucket = vec![0u64; buckets];
    for _ in 0..runs {
        let mut size = 0;
        for i in sampler.indices(n, &mut r) {
            size += 1;
            per_bucket[(i * buckets as u64 / n) as usize] += 1;
        }
        sizes[size] += 1;
    }
    assert_fits("PoissonSampler size", seed, &sizes, &binomial_probs(n, p));
    // Given the total, the bucket counts are multinomial with equal cell probabilities.
    assert_fits(
        "PoissonSampler index buckets",
        seed,
        &per_bucket,
        &vec![1.0 / buckets as f64; buckets],
    );
    // The first and last indices are selected with probability p.
    let mut r = rng(seed + 1);
    let (mut first, mut last) = (0, 0);
    let trials = 200_000u64;
    for _ in 0..trials {
        let v: Vec<u64> = sampler.indices(4, &mut r).collect();
        first += u64::from(v.first() == Some(&0));
        last += u64::from(v.last() == Some(&3));
    }
    assert_proportion("PoissonSampler index 0", seed + 1, first, trials, p);
    assert_proportion("PoissonSampler index n-1", seed + 1, last, trials, p);
}

// ---------------------------------------------------------------------------------------------
// Cohorts.
// ---------------------------------------------------------------------------------------------

#[test]
fn exact_poisson_cohort_is_a_poisson_sample() {
    let (n, p, c, runs, seed) = (2000u64, 0.02, 4.0, 20_000usize, 500u64);
    let cohort = ExactPoissonCohort::new(n, p, c).unwrap();
    let s_max = cohort.contact_size();
    assert_eq!(s_max, 65); // ⌊40 + 4·√40⌋
    let mut r = rng(seed);
    // Cells: sizes 0..=s_max, then "failed" (S > s_max).
    let mut outcomes = vec![0u64; s_max as usize + 2];
    let buckets = 20usize;
    let mut per_bucket = vec![0u64; buckets];
    for _ in 0..runs {
        match cohort.draw(&mut r) {
            CohortOutcome::Ready(cohort) => {
                assert_eq!(cohort.contacted().len() as u64, s_max);
                outcomes[cohort.participating().len()] += 1;
                for &i in cohort.participating() {
                    per_bucket[(i * buckets as u64 / n) as usize] += 1;
                }
            }
            CohortOutcome::Failed => outcomes[s_max as usize + 1] += 1,
        }
    }
    let dist = Binomial::new(p, n).unwrap();
    let mut probs: Vec<f64> = (0..=s_max).map(|k| dist.pmf(k)).collect();
    probs.push(dist.sf(s_max));
    assert_fits("ExactPoissonCohort size", seed, &outcomes, &probs);
    assert_fits(
        "ExactPoissonCohort index buckets",
        seed,
        &per_bucket,
        &vec![1.0 / buckets as f64; buckets],
    );
}

#[test]
fn exact_poisson_cohort_failure_bound_holds() {
    for (n, p, c) in [
        (2000u64, 0.02, 4.0),
        (1000, 0.001, 10.0), // m = 1 < c²: exp(−c²/3) would not be a bound here
        (100_000, 0.01, 3.0),
        (10_000, 0.3, 1.0),
        (500, 0.5, 0.5),
    ] {
        let cohort = ExactPoissonCohort::new(n, p, c).unwrap();
        let exact = Binomial::new(p, n).unwrap().sf(cohort.contact_size());
        let bound = cohort.failure_probability_bound();
        assert!(
            exact <= bound,
            "n = {n}, p = {p}, c = {c}: Pr[S > s_max] = {exact:e} > bound {bound:e}"
        );
        if c * c <= cohort.expected_size() {
            assert!(bound <= (-c * c / 3.0).exp(), "n = {n}, p = {p}, c = {c}");
        }
    }
    // The case the paper's exp(−c²/3) gets wrong.
    let cohort = ExactPoissonCohort::new(1000, 0.001, 10.0).unwrap();
    let exact = Binomial::new(0.001, 1000)
        .unwrap()
        .sf(cohort.contact_size());
    assert!(exact > (-100.0f64 / 3.0).exp(), "{exact:e}");
}

#[test]
fn paper_cohort_size_is_binomial_s_r() {
    let (n, m, c, runs, seed) = (10_000u64, 40.0, 3.0, 20_000usize, 600u64);
    let cohort = PaperCohort::new(n, m, c).unwrap();
    let s = cohort.contact_size();
    assert_eq!(s, 59); // ⌈40 + 3·√40⌉
    let rate = cohort.participation_probability();
    assert!(rate <= 40.0 / 59.0);
    let mut r = rng(seed);
    let mut sizes = vec![0u64; s as usize + 1];
    let buckets = 20usize;
    let mut per_bucket = vec![0u64; buckets];
    for _ in 0..runs {
        let drawn = cohort.draw(&mut r);
        assert_eq!(drawn.contacted().len() as u64, s);
        sizes[drawn.participating().len()] += 1;
        for &i in drawn.participating() {
            per_bucket[(i * buckets as u64 / n) as usize] += 1;
        }
    }
    assert_fits("PaperCohort size", seed, &sizes, &binomial_probs(s, rate));
    assert_fits(
        "PaperCohort index buckets",
        seed,
        &per_bucket,
        &vec![1.0 / buckets as f64; buckets],
    );
}

#[test]
fn critical_values_match_reference() {
    // chi2.isf(1e-6, df) and norm.isf(5e-7), computed with mpmath at 40 digits:
    // python3 -c "from mpmath import *; mp.dps=40; print(findroot(lambda x: log(gammainc(
    //   mpf(19)/2, x/2, inf, regularized=True)) - log(mpf('1e-6')), (19, 270), solver='anderson'))"
    // (equivalently scipy.stats.chi2.isf(1e-6, 19)).
    for (df, reference) in [
        (1usize, 23.928_126_976_934_83),
        (19, 63.677_052_285_678),
        (99, 180.792_015_325_9),
    ] {
        let ours = common::chi2_critical(df);
        assert!(
            (ours - reference).abs() < 1e-6 * reference,
            "df = {df}: {ours} vs {reference}"
        );
    }
    assert!((common::z_critical() - 4.891_638_475_698_59).abs() < 1e-6);
}
