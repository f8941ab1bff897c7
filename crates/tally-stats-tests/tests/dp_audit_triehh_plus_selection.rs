//! Empirical privacy audit of whole two-level TrieHH++ runs whose levels are Laplace or
//! Gaussian thresholding, planned by `plan_selection_levels` and composed by basic
//! composition, run through the task and `tally_sim::run_triehh_plus_selection_counted`.
//!
//! Neighbouring datasets: `D` holds `k` clients with the word `"ab"` (level 1 may release the
//! prefix `"a"`, level 2 `"ab"`), `D'` one fewer. The outcome of a run is its whole released
//! tree with the noisy counts. For the audited `k` (the level's threshold) the audit computes
//! an empirical lower bound on the run's `ε` at the claimed `δ`: the largest `ε` on a grid
//! whose split-sample lower confidence bound on the hockey-stick divergence exceeds the
//! claimed `δ` (both orders of `D` and `D'`).
//!
//! * The real run, planned for `(ε, δ) = (1, 0.05)`: the lower bound stays below the composed
//!   `ε` it claims.
//! * A mutant that does not split the budget over its two levels (each level calibrated for
//!   the whole `(1, 0.05)`, the run planned as if its budget were twice as large), still
//!   claiming the real run's guarantee: the lower bound exceeds that claim.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::{Method, PartitionSelection as Calibration};
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig, plan_selection_levels};
use tally_core::histogram::PartitionSelection;
use tally_core::task::Task;
use tally_sim::{CountedPopulation, Population, run_triehh_plus_selection_counted};
use tally_stats_tests::{Outcomes, epsilon_lower_bound};

/// Levels of the audited run.
const LEVELS: usize = 2;
/// The run's target budget: weak, so that its `δ` can be measured.
const EPSILON: f64 = 1.0;
const DELTA: f64 = 0.05;
/// How many times larger the mutant's budget is: the number of levels it did not split over.
const MUTANT_FACTOR: f64 = LEVELS as f64;
/// Runs per dataset and sample half.
const RUNS: u64 = 20_000;
/// The `ε` grid of the lower bound: `0, 0.05, …, 8`.
const GRID: (f64, u32) = (0.05, 160);

/// `k` clients with `"ab"`.
fn population(k: u64) -> CountedPopulation {
    let words = vec!["ab"; k as usize];
    CountedPopulation::from_population(
        &Population::from_names(words, format!("audit population with k = {k}")).unwrap(),
    )
}

/// The levels of a run planned for `(epsilon, delta)`.
fn levels(method: Method, epsilon: f64, delta: f64) -> PartitionSelection {
    plan_selection_levels(
        method,
        epsilon,
        delta,
        LEVELS,
        Composition::Basic,
        Neighbours::AddRemove,
    )
    .unwrap()
}

/// The run whose levels are `per_level`, within the `δ` budget `total_delta`.
fn task(per_level: &PartitionSelection, total_delta: f64) -> TrieHhPlus<PartitionSelection> {
    TrieHhPlus::new(TrieHhPlusConfig {
        levels: LEVELS,
        segment: 1,
        restricted: true,
        per_level: per_level.clone(),
        composition: Composition::Basic,
        total_delta,
    })
    .unwrap()
}

/// The level's threshold.
fn threshold(per_level: &PartitionSelection) -> u64 {
    match per_level.calibration() {
        Calibration::Laplace(laplace) => laplace.threshold(),
        Calibration::Gaussian(gaussian) => gaussian.threshold(),
        Calibration::TruncatedGeometric(_) => unreachable!("not a level mechanism"),
    }
}

/// The whole released tree: every node's prefix and noisy count.
type Tree = Vec<(String, u64)>;

/// The empirical lower bound on the `ε` of `task` at `claimed_delta` between `k` and `k − 1`
/// clients holding the word.
fn audited_epsilon(
    task: &TrieHhPlus<PartitionSelection>,
    k: u64,
    claimed_delta: f64,
    seed: u64,
) -> f64 {
    let populations = [population(k), population(k - 1)];
    let run = |index: usize, rng: &mut ChaCha20Rng| -> Tree {
        run_triehh_plus_selection_counted(&populations[index], task.clone(), rng.next_u64())
            .unwrap()
            .nodes
            .into_iter()
            .map(|n| (n.prefix, n.count))
            .collect()
    };
    let sample = |index: usize, s: u64| Outcomes::sample(RUNS, s, |rng| run(index, rng));
    let select = (sample(0, seed), sample(1, seed + 1));
    let evaluate = (sample(0, seed + 2), sample(1, seed + 3));
    epsilon_lower_bound(
        (&select.0, &select.1),
        (&evaluate.0, &evaluate.1),
        claimed_delta,
        GRID,
    )
}

/// Audits the real run of `method` and its mutant.
fn audit(method: Method, seed: u64) {
    let real = levels(method, EPSILON, DELTA);
    let real_task = task(&real, DELTA);
    let claim = real_task.guarantee().clone();
    assert!(
        claim.epsilon <= EPSILON && claim.delta <= DELTA,
        "{claim:?}"
    );
    let k = threshold(&real);
    let measured = audited_epsilon(&real_task, k, claim.delta, seed);
    assert!(
        measured < claim.epsilon,
        "{method}: the run's ε lower bound {measured} reaches its claim {claim:?}"
    );
    let mutant = levels(method, MUTANT_FACTOR * EPSILON, MUTANT_FACTOR * DELTA);
    let mutant_task = task(&mutant, MUTANT_FACTOR * DELTA);
    let caught = audited_epsilon(&mutant_task, k, claim.delta, seed + 100);
    eprintln!("{method}: claim {claim:?}: ε lower bound {measured}; mutant: {caught}");
    assert!(
        caught > claim.epsilon,
        "{method}: a mutant with its budget unsplit went uncaught: ε lower bound {caught}, \
         claim {claim:?}"
    );
}

#[test]
fn dp_audit_laplace_levels_stay_below_their_claim_and_catch_an_unsplit_budget() {
    audit(Method::LaplaceThreshold, 1);
}

#[test]
fn dp_audit_gaussian_levels_stay_below_their_claim_and_catch_an_unsplit_budget() {
    audit(Method::GaussianThreshold, 11);
}
