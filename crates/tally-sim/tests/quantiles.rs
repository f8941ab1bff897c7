//! Accuracy of the quantile and range tasks run by the simulator: the acceptance case of the
//! quantiles issue, the binary search, and the consistency post-processing.

use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_core::histogram::{RoundPlan, plan_rounds};
use tally_core::quantiles::{
    BinarySearchConfig, BinarySearchQuantile, HierarchicalConfig, HierarchicalHistogram,
    HierarchicalRelease, TreeShape,
};
use tally_sim::{
    ExecutionPath, SortedValues, Values, run_binary_searches, run_hierarchical, run_level,
};

fn round_plan(epsilon: f64, delta: f64, rounds: usize) -> RoundPlan {
    plan_rounds(
        epsilon,
        delta,
        rounds,
        Composition::Basic,
        PlanTarget::MinReleasedCount,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap()
}

fn hierarchical(
    values: &Values,
    branching: u32,
    levels: u32,
    plan: &RoundPlan,
    seed: u64,
) -> HierarchicalRelease {
    let task = HierarchicalHistogram::new(HierarchicalConfig::planned(
        TreeShape::new(branching, levels).unwrap(),
        plan,
    ))
    .unwrap();
    run_hierarchical(values, task, ExecutionPath::GapSkipping, seed)
}

#[test]
fn acceptance_hierarchical_quantiles_of_a_million_uniform_values() {
    // The issue: 10^6 values from Uniform(0, 1), β = 4, L = 8, (ε, δ) = (1, 1e-8): the 0.1,
    // 0.5 and 0.9 quantiles within 0.02 of the truth.
    let values = Values::uniform(1_000_000, 2024);
    let truth = values.sorted();
    let plan = round_plan(1.0, 1e-8, 8);
    let release = hierarchical(&values, 4, 8, &plan, 7);
    let guarantee = release.guarantee();
    assert!(
        guarantee.epsilon <= 1.0 && guarantee.delta <= 1e-8,
        "{guarantee:?}"
    );
    assert_eq!(guarantee.neighbours, Neighbours::AddRemove);
    for tree in [release.clone(), release.consistent()] {
        for estimate in tree.quantiles(&[0.1, 0.5, 0.9]).unwrap() {
            let error = (estimate.value - truth.quantile(estimate.quantile)).abs();
            eprintln!(
                "consistent {:?}: q = {} → {} (true {}), error {error:.5}",
                tree.consistency(),
                estimate.quantile,
                estimate.value,
                truth.quantile(estimate.quantile)
            );
            assert!(error < 0.02, "{estimate:?}: error {error}");
        }
        let total = tree.total();
        assert!((total / 1e6 - 1.0).abs() < 0.02, "N̂ = {total}");
    }
}

#[test]
fn binary_search_quantiles_of_uniform_values() {
    let values = Values::uniform(1_000_000, 99);
    let truth = values.sorted();
    let quantiles = [0.1, 0.5, 0.9];
    let rounds = 10;
    let plan = round_plan(1.0, 1e-8, rounds * quantiles.len());
    let config = |quantile| BinarySearchConfig::planned(quantile, rounds, &plan);
    let tasks = quantiles
        .iter()
        .map(|&q| BinarySearchQuantile::new(config(q)).unwrap())
        .collect();
    let searches = run_binary_searches(&values, tasks, ExecutionPath::GapSkipping, 3);
    let total = config(0.5).guarantee_of(quantiles.len()).unwrap();
    assert!(total.epsilon <= 1.0 && total.delta <= 1e-8, "{total:?}");
    for search in searches {
        let want = truth.quantile(search.quantile);
        let error = (search.value - want).abs();
        eprintln!(
            "binary search q = {} → {} in [{}, {}] (true {want}), error {error:.5}",
            search.quantile, search.value, search.lo, search.hi
        );
        assert!(error < 0.02, "{search:?}");
        assert_eq!(search.rounds, rounds);
        assert!((search.hi - search.lo - 2f64.powi(-10)).abs() < 1e-15);
    }
}

/// Values from a skewed law, `u^3` for uniform `u`: dense near 0, sparse near 1, so that the
/// deep levels suppress many buckets.
fn skewed(n: usize, seed: u64) -> Values {
    let cubed = Values::uniform(n, seed)
        .as_slice()
        .iter()
        .map(|u| u * u * u)
        .collect();
    Values::from_unit_values(cubed, "cubed uniform").unwrap()
}

/// Mean absolute error of the estimated counts of `ranges` (leaf boundaries).
fn mean_range_error(
    release: &HierarchicalRelease,
    truth: &SortedValues,
    ranges: &[(u64, u64)],
) -> f64 {
    let shape = release.shape();
    ranges
        .iter()
        .map(|&(lo, hi)| {
            let estimate = release.leaf_range_count(lo, hi);
            let exact = truth.count_in(shape.boundary_point(lo), shape.boundary_point(hi));
            (estimate - exact as f64).abs()
        })
        .sum::<f64>()
        / ranges.len() as f64
}

#[test]
fn consistency_does_not_increase_the_average_range_error() {
    let shape = TreeShape::new(4, 6).unwrap();
    // Every 37th pair of leaf boundaries: 1,000+ ranges of all lengths and positions.
    let leaves = shape.leaves();
    let ranges: Vec<(u64, u64)> = (0..=leaves)
        .step_by(37)
        .flat_map(|lo| (lo..=leaves).step_by(211).map(move |hi| (lo, hi)))
        .filter(|(lo, hi)| lo < hi)
        .collect();
    assert!(ranges.len() > 1_000, "{}", ranges.len());
    let plan = round_plan(1.0, 1e-8, 6);
    let (mut raw, mut consistent) = (0.0, 0.0);
    let seeds = 8;
    for seed in 0..seeds {
        let values = skewed(200_000, 100 + seed);
        let truth = values.sorted();
        let release = hierarchical(&values, 4, 6, &plan, seed);
        let r = mean_range_error(&release, &truth, &ranges);
        let c = mean_range_error(&release.consistent(), &truth, &ranges);
        eprintln!("seed {seed}: mean |error| raw {r:.1}, consistent {c:.1}");
        raw += r / seeds as f64;
        consistent += c / seeds as f64;
    }
    eprintln!("average over {seeds} seeds: raw {raw:.1}, consistent {consistent:.1}");
    assert!(consistent <= raw, "raw {raw}, consistent {consistent}");
}

#[test]
fn range_counts_are_close_and_runs_are_deterministic() {
    let values = skewed(300_000, 5);
    let truth = values.sorted();
    let plan = round_plan(1.0, 1e-8, 5);
    let release = hierarchical(&values, 4, 5, &plan, 11);
    let again = hierarchical(&values, 4, 5, &plan, 11);
    for level in 1..=5 {
        assert_eq!(release.released(level), again.released(level));
    }
    let n = values.len() as f64;
    for (lo, hi) in [
        (0.0, 0.25),
        (0.25, 0.5),
        (0.0, 1.0),
        (0.5, 1.0),
        (0.125, 0.1875),
    ] {
        let estimate = release.range_count(lo, hi).unwrap();
        let exact = truth.count_in(lo, hi) as f64;
        assert!(
            (estimate - exact).abs() < 0.01 * n,
            "[{lo}, {hi}): {estimate} vs {exact}"
        );
    }
    // Every released cell reached the threshold and is an exact sampled count.
    let threshold = plan.per_round.params().threshold();
    for level in 1..=5 {
        for cell in release.released(level) {
            assert!(cell.count >= threshold);
            assert!(u64::from(cell.item) < release.shape().buckets(level));
        }
    }
}

#[test]
fn levels_release_bucket_counts_of_the_values() {
    // With a rate close to 1 nearly every client is sampled: the level-1 counts are the true
    // bucket counts thinned by p_s.
    use tally_accounting::sample_threshold::SampleThresholdParams;
    use tally_core::histogram::SampleThreshold;
    use tally_core::quantiles::LevelQuery;
    let values =
        Values::from_unit_values((0..4000).map(|i| f64::from(i) / 4000.0).collect(), "grid")
            .unwrap();
    let params = SampleThresholdParams::new(0.5, 5).unwrap();
    let mechanism =
        SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
    let query = LevelQuery {
        level: 1,
        shape: TreeShape::new(4, 3).unwrap(),
        mechanism,
    };
    let release = run_level(&values, &query, ExecutionPath::PerClient, 1);
    assert_eq!(release.items.len(), 4);
    for cell in &release.items {
        // Each bucket holds 1000 values; Bin(1000, 1/2) is within 500 ± 5σ ≈ 500 ± 80.
        assert!((420..=580).contains(&cell.count), "{cell:?}");
    }
}

#[test]
fn rescaled_values_report_quantiles_in_their_own_units() {
    use tally_sim::ValueRange;
    let text: String = (0..20_000)
        .map(|i| format!("{}\n", 100.0 + f64::from(i % 1000) / 10.0))
        .collect();
    let range = ValueRange::new(100.0, 200.0).unwrap();
    let values = Values::from_reader(text.as_bytes(), "grid.txt", Some(range)).unwrap();
    assert!(values.as_slice().iter().all(|&x| (0.0..=1.0).contains(&x)));
    let plan = round_plan(2.0, 1e-6, 4);
    let release = hierarchical(&values, 4, 4, &plan, 3);
    let median = values.to_original(release.quantile(0.5).unwrap());
    // The values are uniform on [100, 200): the median is 150.
    assert!((median - 150.0).abs() < 5.0, "{median}");
}
