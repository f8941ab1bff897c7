//! The release over clients of several items against its law, on the real code path
//! ([`tally_sim::items_release`], what `tally histogram --mechanism … --max-items-per-client k`
//! and `tally.histogram(mechanism=…, max_items_per_client=…)` run), one seed (or key) per run.
//!
//! Each client holds `M = 4` distinct items and keeps `K = 2`. The population has two kinds of
//! groups, sized from the mechanism's own law:
//!
//! * a *pair* group of `c` clients holds items `a` and `b` and nothing else, so both are counted
//!   exactly `c` times: each is released with probability `r(c)`, the accountant's
//!   `release_probability`, and both together with `r(c)²` (independent noise, or one coin per
//!   item);
//! * a *bounded* group of `c` clients holds one shared item `s` and three items of each client's
//!   own: each client keeps `s` with probability `K/M`, independently, so `s` is released with
//!   probability `Σ_i Binomial(c, K/M)(i) · r(i)` (an item no one kept, `i = 0`, never is).
//!
//! Over `RUNS` runs the number of releases of each item (and of both items of a pair) must lie
//! in the exact binomial interval of `α = 1e-6` around its law. Each known-bad mutant runs the
//! same path and must leave at least one interval:
//!
//! * the contribution bound dropped (each client keeps all four items under a calibration for
//!   two), for every mechanism;
//! * a threshold one lower (Laplace, Gaussian and sample-and-threshold);
//! * half the Laplace scale, half the Gaussian standard deviation;
//! * the truncated geometric's table for `2ε`.
//!
//! The mutant of one coin per client for all its items changes no item's law, only the pairs':
//! the joint interval catches it. It lives in the release path's code, not in a calibration, so
//! it is checked by editing `tally_sim::items_release` (seeded coins) and
//! `tally_sim::KeyedItemCounts::absorb_client` (keyed coins) to flip one coin per client: each
//! fails `sample_threshold_with_two_items_per_client_follows_the_law` on the pairs, and a bound
//! dropped in either place fails every test on the bounded items.

use rayon::prelude::*;
use tally_accounting::Neighbours;
use tally_accounting::key_selection::KeySelection;
use tally_accounting::numeric::ln_binomial_pmf;
use tally_accounting::partition_selection::{
    self as accounting, GaussianSelection, LaplaceSelection, Method, TruncatedGeometricSelection,
};
use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams};
use tally_core::histogram::{PartitionSelection, SampleThreshold};
use tally_core::sampling::SamplingKey;
use tally_messages::HistogramRelease;
use tally_sim::KeyedPopulation;
use tally_sim::items_release::{
    ItemChoice, ItemsRelease, sample_threshold_histogram, selection_histogram,
};
use tally_stats_tests::binomial_interval;

const EPSILON: f64 = 1.0;
const DELTA: f64 = 1e-3;
/// The bound on each client's distinct items.
const K: u32 = 2;
/// The distinct items each client of a bounded group holds.
const M: u32 = 4;
const RUNS: u64 = 3_000;
const ALPHA: f64 = 1e-6;
/// The release probabilities the groups are sized for.
const LEVELS: [f64; 3] = [0.15, 0.5, 0.85];

/// One group of clients and the law of its items.
struct Group {
    /// The items checked alone (`a`, `b` or `s`).
    items: Vec<String>,
    /// Whether the two items are checked together too.
    pair: bool,
    /// The release probability of each item.
    probability: f64,
}

/// The population and its groups for a mechanism whose item of `count` holders is released
/// with probability `r(count)`.
fn population(r: &dyn Fn(u64) -> f64) -> (KeyedPopulation, Vec<Group>) {
    let keep = f64::from(K) / f64::from(M);
    let bounded = |c: u64| {
        (1..=c)
            .map(|i| ln_binomial_pmf(i, c, keep).exp() * r(i))
            .sum::<f64>()
    };
    let smallest = |law: &dyn Fn(u64) -> f64, level: f64| {
        (1..10_000)
            .find(|&c| law(c) >= level)
            .expect("a group size below 10000")
    };
    let (mut clients, mut rows, mut groups) = (Vec::new(), Vec::new(), Vec::new());
    for (g, level) in LEVELS.into_iter().enumerate() {
        let c = smallest(r, level);
        for client in 0..c {
            for item in ["a", "b"] {
                clients.push(format!("pair-{g}-{client}"));
                rows.push(format!("{item}-{g}"));
            }
        }
        groups.push(Group {
            items: vec![format!("a-{g}"), format!("b-{g}")],
            pair: true,
            probability: r(c),
        });
        let c = smallest(&bounded, level);
        for client in 0..c {
            let name = format!("bounded-{g}-{client}");
            clients.push(name.clone());
            rows.push(format!("s-{g}"));
            for own in 0..M - 1 {
                clients.push(name.clone());
                rows.push(format!("own-{name}-{own}"));
            }
        }
        groups.push(Group {
            items: vec![format!("s-{g}")],
            pair: false,
            probability: bounded(c),
        });
    }
    let population = KeyedPopulation::from_rows(&clients, &rows, "groups").expect("rows");
    (population, groups)
}

/// How each run chooses the kept items (and sample-and-threshold's coins).
#[derive(Clone, Copy, Debug)]
enum Choice {
    Seeded,
    /// A fresh key each run.
    Keyed,
}

/// The options of run `run`: each client keeps `kept` items.
fn options(run: u64, kept: u32, choice: Choice) -> ItemsRelease {
    let choice = match choice {
        Choice::Seeded => ItemChoice::Seeded,
        Choice::Keyed => {
            ItemChoice::Keyed(SamplingKey::derive(format!("run {run}").as_bytes()).expect("a key"))
        }
    };
    ItemsRelease {
        max_items: kept,
        choice,
        seed: 1_000 + run,
        target_delta: DELTA,
        shown_seed: None,
    }
}

/// The items outside their intervals over `RUNS` runs of `release`, as messages.
fn misfits(groups: &[Group], release: impl Fn(u64) -> HistogramRelease + Sync) -> Vec<String> {
    let released: Vec<Vec<String>> = (0..RUNS)
        .into_par_iter()
        .map(|run| release(run).items.into_iter().map(|i| i.item).collect())
        .collect();
    let hits = |item: &str| {
        released
            .iter()
            .filter(|r| r.iter().any(|i| i == item))
            .count()
    };
    let mut misfits = Vec::new();
    let mut check = |what: String, hits: usize, p: f64| {
        let (lo, hi) = binomial_interval(RUNS, p, ALPHA);
        if !(lo..=hi).contains(&(hits as u64)) {
            misfits.push(format!(
                "{what}: {hits} of {RUNS}, law {p:.4} → [{lo}, {hi}]"
            ));
        }
    };
    for group in groups {
        for item in &group.items {
            check(item.clone(), hits(item), group.probability);
        }
        if group.pair {
            let both = released
                .iter()
                .filter(|r| group.items.iter().all(|item| r.contains(item)))
                .count();
            check(
                format!("{} and {}", group.items[0], group.items[1]),
                both,
                group.probability * group.probability,
            );
        }
    }
    misfits
}

/// Checks the selection `real` fits its law seeded and keyed, and each mutant (a name, the
/// selection it runs, the items each client keeps) leaves it.
fn check_selection(real: &PartitionSelection, mutants: &[(&str, PartitionSelection, u32)]) {
    let r = |count: u64| real.calibration().release_probability(count);
    let (population, groups) = population(&r);
    for choice in [Choice::Seeded, Choice::Keyed] {
        let found = misfits(&groups, |run| {
            selection_histogram(&population, real, &options(run, K, choice)).expect("a release")
        });
        assert!(found.is_empty(), "{} {choice:?}: {found:#?}", real.method());
    }
    for (name, mutant, kept) in mutants {
        let found = misfits(&groups, |run| {
            selection_histogram(&population, mutant, &options(run, *kept, Choice::Seeded))
                .expect("a release")
        });
        assert!(!found.is_empty(), "{}: {name} not caught", real.method());
        println!("{}: {name} caught: {found:?}", real.method());
    }
}

fn selection(calibration: accounting::PartitionSelection) -> PartitionSelection {
    PartitionSelection::new(calibration).expect("samplers")
}

fn calibrate(method: Method, epsilon: f64) -> PartitionSelection {
    PartitionSelection::calibrate(method, epsilon, DELTA, K, Neighbours::AddRemove)
        .expect("a calibration")
}

#[test]
fn laplace_threshold_releases_follow_the_law() {
    let real = LaplaceSelection::calibrate(EPSILON, DELTA, K, Neighbours::AddRemove).unwrap();
    let laplace = |scale, threshold| {
        selection(accounting::PartitionSelection::Laplace(
            LaplaceSelection::new(scale, threshold, K, Neighbours::AddRemove).unwrap(),
        ))
    };
    let (n, d) = real.scale();
    check_selection(
        &laplace(real.scale(), real.threshold()),
        &[
            ("no bound", laplace(real.scale(), real.threshold()), M),
            (
                "threshold − 1",
                laplace(real.scale(), real.threshold() - 1),
                K,
            ),
            ("half scale", laplace((n, 2 * d), real.threshold()), K),
        ],
    );
}

#[test]
fn gaussian_threshold_releases_follow_the_law() {
    let real = GaussianSelection::calibrate(EPSILON, DELTA, K, Neighbours::AddRemove).unwrap();
    let gaussian = |sigma2, threshold| {
        selection(accounting::PartitionSelection::Gaussian(
            GaussianSelection::new(sigma2, threshold, EPSILON, K, Neighbours::AddRemove).unwrap(),
        ))
    };
    let (n, d) = real.sigma2();
    check_selection(
        &gaussian(real.sigma2(), real.threshold()),
        &[
            ("no bound", gaussian(real.sigma2(), real.threshold()), M),
            (
                "threshold − 1",
                gaussian(real.sigma2(), real.threshold() - 1),
                K,
            ),
            ("half deviation", gaussian((n, 4 * d), real.threshold()), K),
        ],
    );
}

#[test]
fn truncated_geometric_releases_follow_the_law() {
    let real =
        TruncatedGeometricSelection::calibrate(EPSILON, DELTA, K, Neighbours::AddRemove).unwrap();
    check_selection(
        &selection(accounting::PartitionSelection::TruncatedGeometric(real)),
        &[
            (
                "no bound",
                calibrate(Method::TruncatedGeometric, EPSILON),
                M,
            ),
            (
                "table for 2ε",
                calibrate(Method::TruncatedGeometric, 2.0 * EPSILON),
                K,
            ),
        ],
    );
}

#[test]
fn sample_threshold_with_two_items_per_client_follows_the_law() {
    let target = PlanTarget::Threshold(5);
    for choice in [Choice::Seeded, Choice::Keyed] {
        let real = match choice {
            Choice::Seeded => {
                SampleThreshold::calibrate_items(EPSILON, DELTA, K, target, Neighbours::AddRemove)
            }
            Choice::Keyed => SampleThreshold::calibrate_items_keyed(
                EPSILON,
                DELTA,
                K,
                target,
                Neighbours::AddRemove,
            ),
        }
        .unwrap();
        let law = KeySelection::SampleThreshold(*real.params());
        let (population, groups) = population(&|count| law.release_probability(count));
        let found = misfits(&groups, |run| {
            sample_threshold_histogram(&population, &real, &options(run, K, choice))
                .expect("a release")
        });
        assert!(found.is_empty(), "S&T {choice:?}: {found:#?}");
        if let Choice::Keyed = choice {
            continue;
        }
        let lower = SampleThreshold::new(
            SampleThresholdParams::new(
                real.params().sampling_rate(),
                real.params().threshold() - 1,
            )
            .unwrap(),
            EPSILON,
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap();
        for (name, mutant, kept) in [("no bound", &real, M), ("threshold − 1", &lower, K)] {
            let found = misfits(&groups, |run| {
                sample_threshold_histogram(&population, mutant, &options(run, kept, choice))
                    .expect("a release")
            });
            assert!(!found.is_empty(), "S&T: {name} not caught");
            println!("S&T: {name} caught: {found:?}");
        }
    }
}
