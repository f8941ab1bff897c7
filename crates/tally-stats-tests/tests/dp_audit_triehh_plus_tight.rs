//! Empirical privacy audit of a whole two-level TrieHH++ run planned and composed by the tight
//! accountant (`Composition::Tight`), run through the task and `tally_sim::run_triehh_plus`.
//!
//! Neighbouring datasets: `D` holds `k` clients with the word `"ab"` (level 1 releases the
//! prefix `"a"`, level 2 `"ab"`) plus [`OTHERS`] clients with `"zz"`, `D'` one `"ab"` client
//! fewer. The outcome of a run is its whole released tree. For each audited `k` the audit
//! computes an empirical lower bound on the run's `ε` at the claimed `δ`: the largest `ε` on a
//! grid whose split-sample lower confidence bound on the hockey-stick divergence exceeds the
//! claimed `δ` (both orders of `D` and `D'`).
//!
//! * The real run, planned for `(ε, δ) = (1, 0.05)` at threshold 2: the lower bound stays
//!   below the composed `ε` it claims.
//! * A mutant calibrated as if its budget were four times larger (`(4, 0.2)`), still claiming
//!   the real plan's guarantee: the lower bound exceeds that claim.
//!
//! The default suite audits `k = τ` with 20,000 runs per sample; the heavier audit over
//! `k = τ..τ+3` with 100,000 runs is ignored by default:
//! `cargo test --release -p tally-stats-tests --test dp_audit_triehh_plus_tight -- --ignored`.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig};
use tally_core::histogram::{RoundPlan, plan_rounds};
use tally_core::task::Task;
use tally_sim::{ExecutionPath, Population, run_triehh_plus};
use tally_stats_tests::{Outcomes, epsilon_lower_bound};

/// Levels of the audited run.
const LEVELS: usize = 2;
/// The per-level threshold.
const THRESHOLD: u64 = 2;
/// The run's target budget: weak, so that its `δ` can be measured.
const EPSILON: f64 = 1.0;
const DELTA: f64 = 0.05;
/// How many times larger the mutant's budget is.
const MUTANT_FACTOR: f64 = 4.0;
/// Clients with another word, in every dataset.
const OTHERS: usize = 3;
/// The `ε` grid of the lower bound: `0, 0.05, …, 8`.
const GRID: (f64, u32) = (0.05, 160);

/// `k` clients with `"ab"` and [`OTHERS`] with `"zz"`.
fn population(k: u64) -> Population {
    let mut words = vec!["zz"; OTHERS];
    words.extend(std::iter::repeat_n("ab", k as usize));
    Population::from_names(words, format!("audit population with k = {k}")).unwrap()
}

/// The tight plan of two levels at `(epsilon, delta)` and threshold [`THRESHOLD`].
fn tight_plan(epsilon: f64, delta: f64) -> RoundPlan {
    plan_rounds(
        epsilon,
        delta,
        LEVELS,
        Composition::Tight,
        PlanTarget::Threshold(THRESHOLD),
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap()
}

/// The TrieHH++ task of `plan` (built once: its guarantee is composed on construction).
fn task(plan: &RoundPlan) -> TrieHhPlus {
    TrieHhPlus::new(TrieHhPlusConfig {
        levels: LEVELS,
        segment: 1,
        restricted: true,
        per_level: plan.per_round.clone(),
        composition: Composition::Tight,
        total_delta: plan.total_delta,
    })
    .unwrap()
}

/// The whole released tree: every node's prefix and count.
type Tree = Vec<(String, u64)>;

/// The empirical lower bound on the `ε` of `task` at `claimed_delta`, the largest over the
/// audited group sizes `ks`, from `runs` runs per dataset and sample half.
fn audited_epsilon(task: &TrieHhPlus, ks: &[u64], runs: u64, claimed_delta: f64, seed: u64) -> f64 {
    let populations: Vec<Population> = (0..=*ks.iter().max().unwrap()).map(population).collect();
    let run = |k: u64, rng: &mut ChaCha20Rng| -> Tree {
        let output = run_triehh_plus(
            &populations[k as usize],
            task.clone(),
            ExecutionPath::GapSkipping,
            rng.next_u64(),
        );
        output
            .nodes
            .into_iter()
            .map(|n| (n.prefix, n.count))
            .collect()
    };
    ks.iter()
        .map(|&k| {
            let seed = seed + 16 * k;
            let sample = |k: u64, s: u64| Outcomes::sample(runs, s, |rng| run(k, rng));
            let select = (sample(k, seed), sample(k - 1, seed + 1));
            let evaluate = (sample(k, seed + 2), sample(k - 1, seed + 3));
            epsilon_lower_bound(
                (&select.0, &select.1),
                (&evaluate.0, &evaluate.1),
                claimed_delta,
                GRID,
            )
        })
        .fold(0.0, f64::max)
}

/// Audits the real run and the mutant at group sizes `ks`.
fn audit(ks: &[u64], runs: u64) {
    let real = tight_plan(EPSILON, DELTA);
    let claim = real.total.clone();
    assert!(
        claim.epsilon <= EPSILON && claim.delta <= DELTA,
        "{claim:?}"
    );
    let real_task = task(&real);
    assert_eq!(*real_task.guarantee(), claim);
    let measured = audited_epsilon(&real_task, ks, runs, claim.delta, 1);
    assert!(
        measured < claim.epsilon,
        "the run's ε lower bound {measured} reaches its claim {claim:?}"
    );
    let mutant = tight_plan(MUTANT_FACTOR * EPSILON, MUTANT_FACTOR * DELTA);
    let (rate, mutant_rate) = (
        real.per_round.params().sampling_rate(),
        mutant.per_round.params().sampling_rate(),
    );
    assert!(mutant_rate > rate, "{mutant_rate} vs {rate}");
    let caught = audited_epsilon(&task(&mutant), ks, runs, claim.delta, 101);
    eprintln!(
        "claim {claim:?} at rate {rate}: ε lower bound {measured}; mutant at rate {mutant_rate}: \
         {caught}"
    );
    assert!(
        caught > claim.epsilon,
        "a mutant at rate {mutant_rate} (real {rate}) went uncaught: ε lower bound {caught}, \
         claim {claim:?}"
    );
}

#[test]
fn dp_audit_tight_two_level_triehh_plus_stays_below_its_claim_and_catches_a_mutant() {
    audit(&[THRESHOLD], 20_000);
}

#[test]
#[ignore = "heavy: about 7 s in release, a minute in debug; run with --ignored"]
fn dp_audit_tight_two_level_triehh_plus_over_several_group_sizes() {
    audit(
        &[THRESHOLD, THRESHOLD + 1, THRESHOLD + 2, THRESHOLD + 3],
        100_000,
    );
}
