//! The three execution paths of an S&T round: determinism, invariants, and agreement in
//! distribution with each other and with the exact binomial law.

#[path = "support/stats.rs"]
mod stats;

use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, Normal};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::{SampleThreshold, SampleThresholdRelease};
use tally_sim::{ExecutionPath, Population, run_sample_threshold};

fn mechanism(rate: f64, threshold: u64) -> SampleThreshold {
    let params = SampleThresholdParams::new(rate, threshold).unwrap();
    SampleThreshold::new(params, 1.0, Analysis::Tight, Neighbours::AddRemove).unwrap()
}

/// Items `0..counts.len()` named `i0`, `i1`, …, item `i` held by `counts[i]` clients, the
/// clients interleaved round robin.
fn small_population(counts: &[u64]) -> Population {
    let mut left = counts.to_vec();
    let mut names = Vec::new();
    while left.iter().any(|&c| c > 0) {
        for (i, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                *c -= 1;
                names.push(format!("i{i}"));
            }
        }
    }
    Population::from_names(names, "small").unwrap()
}

/// The released count of each item (0 when not released), by id.
fn released_counts(release: &SampleThresholdRelease, domain: usize) -> Vec<u64> {
    let mut counts = vec![0; domain];
    for cell in &release.items {
        counts[cell.item as usize] = cell.count;
    }
    counts
}

#[test]
fn paths_parse_and_print() {
    for path in ExecutionPath::ALL {
        assert_eq!(path.name().parse::<ExecutionPath>().unwrap(), path);
        assert_eq!(path.to_string(), path.name());
    }
    assert_eq!(ExecutionPath::default(), ExecutionPath::GapSkipping);
    assert!(!ExecutionPath::BinomialThinning.is_exact());
    let err = "poisson".parse::<ExecutionPath>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown execution path \"poisson\": expected per-client, gap-skipping or \
         binomial-thinning"
    );
}

#[test]
fn stat_paths_agree_with_the_binomial_law_and_each_other() {
    // With τ = 2 an item held by c clients shows Bin(c, p) when that is ≥ 2, else nothing.
    let counts = [40u64, 25, 10, 3, 1];
    let population = small_population(&counts);
    let (rate, threshold) = (0.25, 2);
    let st = mechanism(rate, threshold);
    let runs = 2_000u64;
    // observed[path][item][value]
    let mut observed = vec![vec![Vec::new(); counts.len()]; 3];
    for (p, path) in ExecutionPath::ALL.into_iter().enumerate() {
        for (i, &c) in counts.iter().enumerate() {
            observed[p][i] = vec![0u64; c as usize + 1];
        }
        for seed in 0..runs {
            let release = run_sample_threshold(&population, &st, path, seed);
            for (i, &count) in released_counts(&release, counts.len()).iter().enumerate() {
                observed[p][i][count as usize] += 1;
            }
        }
    }
    for (i, &c) in counts.iter().enumerate() {
        let bin = Binomial::new(rate, c).unwrap();
        let probs: Vec<f64> = (0..=c)
            .map(|v| match v {
                0 => (0..threshold).map(|u| bin.pmf(u)).sum(),
                v if v < threshold => 0.0,
                v => bin.pmf(v),
            })
            .collect();
        for (p, path) in ExecutionPath::ALL.into_iter().enumerate() {
            stats::assert_fits(
                &format!("{path}, item held by {c}"),
                &observed[p][i],
                &probs,
            );
        }
        stats::assert_same_distribution(
            &format!("per-client vs gap-skipping, item held by {c}"),
            &observed[0][i],
            &observed[1][i],
        );
        stats::assert_same_distribution(
            &format!("gap-skipping vs binomial-thinning, item held by {c}"),
            &observed[1][i],
            &observed[2][i],
        );
    }
    // The item held by one client can never reach τ = 2.
    for per_path in &observed {
        assert_eq!(per_path[4][0], runs);
    }
}

#[test]
fn stat_paths_agree_on_a_multi_chunk_population() {
    // 300,000 clients (several per-client chunks); item 0 is held by 150,000 of them. Its
    // sampled count is Bin(150000, 1/4): check the mean (z-test) and the variance (χ² test)
    // over 100 runs per path.
    let counts = [150_000u64, 100_000, 50_000];
    let population = small_population(&counts);
    let rate = 0.25;
    let st = mechanism(rate, 10);
    let runs = 100;
    let (c, p) = (counts[0] as f64, rate);
    let (mean, var) = (c * p, c * p * (1.0 - p));
    // Two-sided critical values at α = 1e-6.
    let z_max = Normal::standard().inverse_cdf(1.0 - stats::ALPHA / 2.0);
    let chi2 = ChiSquared::new(runs as f64 - 1.0).unwrap();
    let q_range = chi2.inverse_cdf(stats::ALPHA / 2.0)..chi2.inverse_cdf(1.0 - stats::ALPHA / 2.0);
    for path in ExecutionPath::ALL {
        let xs: Vec<f64> = (0..runs)
            .map(|seed| {
                released_counts(&run_sample_threshold(&population, &st, path, seed), 3)[0] as f64
            })
            .collect();
        let n = runs as f64;
        let m = xs.iter().sum::<f64>() / n;
        let s2 = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        let z = (m - mean) / (var / n).sqrt();
        assert!(
            z.abs() < z_max,
            "{path}: mean {m}, expected {mean}, z = {z} (max {z_max})"
        );
        // (n−1)s²/σ² ~ χ²(n−1).
        let q = (n - 1.0) * s2 / var;
        assert!(
            q_range.contains(&q),
            "{path}: variance {s2}, expected {var}, q = {q} not in {q_range:?}"
        );
    }
}

#[test]
fn releases_are_deterministic_and_independent_of_threads() {
    // More than one chunk on every chunked path (gap skipping uses chunks of 2^20 clients).
    for text in [
        "uniform:n=1200000,domain=1000",
        // Above the merge limit: chunks' reports are collected, then absorbed.
        "zipf:n=1200000,domain=2097152,s=1.1",
    ] {
        let population = Population::synthetic(&text.parse().unwrap(), 3);
        let st = mechanism(0.25, 20);
        for path in ExecutionPath::ALL {
            let a = run_sample_threshold(&population, &st, path, 11);
            assert!(!a.items.is_empty(), "{text} {path}");
            let b = run_sample_threshold(&population, &st, path, 11);
            assert_eq!(a.items, b.items, "{text} {path}");
            let single = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
                .install(|| run_sample_threshold(&population, &st, path, 11));
            assert_eq!(a.items, single.items, "{text} {path}: 1 thread");
            let c = run_sample_threshold(&population, &st, path, 12);
            assert_ne!(a.items, c.items, "{text} {path}: another seed");
        }
    }
}

#[test]
fn released_items_reach_the_threshold_and_occur_in_the_population() {
    let population = Population::synthetic(&"zipf:n=200000,domain=10000,s=1.1".parse().unwrap(), 1);
    let (rate, threshold) = (0.125, 15);
    let st = mechanism(rate, threshold);
    for path in ExecutionPath::ALL {
        for seed in 0..5 {
            let release = run_sample_threshold(&population, &st, path, seed);
            assert!(release.items.len() > 10, "{path}");
            assert_eq!(&release.params, st.params());
            assert_eq!(&release.guarantee, st.guarantee());
            let mut seen = std::collections::HashSet::new();
            for w in release.items.windows(2) {
                assert!(
                    w[0].count >= w[1].count,
                    "{path}: sorted by decreasing count"
                );
            }
            for cell in &release.items {
                assert!(seen.insert(cell.item), "{path}: item {} twice", cell.item);
                assert!(cell.count >= threshold, "{path}: {cell:?}");
                let truth = population.true_count(cell.item);
                assert!(
                    truth > 0,
                    "{path}: released item {} held by nobody",
                    cell.item
                );
                assert!(
                    cell.count <= truth,
                    "{path}: {cell:?} but only {truth} holders"
                );
                let estimate = cell.count as f64 / rate;
                assert!(
                    (cell.estimate - estimate).abs() <= 1e-12 * estimate,
                    "{cell:?}"
                );
            }
        }
    }
}

#[test]
fn shakespeare_round_releases_the_common_words() {
    let population = Population::dataset("shakespeare").unwrap();
    let st = mechanism(0.1, 100);
    let release = run_sample_threshold(&population, &st, ExecutionPath::GapSkipping, 2024);
    let the = population.item_id("the").unwrap();
    let cell = release.items.iter().find(|c| c.item == the).unwrap();
    // 27,586 holders: the sampled count is Bin(27586, 0.1), sd ≈ 50.
    assert!(
        (cell.estimate - 27_586.0).abs() < 27_586.0 * 0.1,
        "{cell:?}"
    );
    assert_eq!(
        release.items[0].item, the,
        "the most common word comes first"
    );
    for cell in &release.items {
        assert!(population.true_count(cell.item) >= 100);
    }
}
