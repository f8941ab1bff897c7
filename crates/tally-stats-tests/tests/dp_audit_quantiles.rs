//! Empirical privacy audit of one round of the binary-search quantile: the S&T histogram of
//! the two buckets `x ≤ t` and `x > t`, run through the same code path as the task (the
//! task's first query and `tally_sim::run_threshold_round`), at `p_s = 0.5`, `τ = 3`, `ε = 1`.
//!
//! Neighbouring datasets: `D` holds `k` clients with the value 0.25 (below the first split
//! point 1/2) plus [`ABOVE`] clients with the value 0.75, `D'` holds one of the former fewer.
//!
//! * [`CellAudit`] audits the released count of the bucket `x ≤ t` (no violation of the
//!   accountant's tight `δ`, and conformance with the exact `δ_k` of every group size), and
//!   checks that its standard mutants are caught.
//! * The round's whole release, the pair of released counts `(c_0, c_1)`, is audited as well
//!   with [`violation_lower_bound`] and [`set_statistic`]: the bucket above the split point
//!   has the same law under `D` and `D'`, so the pair's `δ` is the cell's, and the same
//!   mutants of a hand-written two-bucket round (a strict threshold `>` for `≥`, no threshold,
//!   a wrong sampling rate) must each be caught by one of the two checks.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::composition::Composition;
use tally_core::histogram::SampleThresholdRelease;
use tally_core::quantiles::{
    BinarySearchConfig, BinarySearchQuantile, LevelQuery, Normalisation, ThresholdQuery, TreeShape,
};
use tally_core::sampling::PoissonSampler;
use tally_core::task::Task;
use tally_sim::{ExecutionPath, Values, run_level, run_threshold_round};
use tally_stats_tests::{CellAudit, Verdict};

const AUDIT: CellAudit = CellAudit::WEAK;

/// Clients above the split point, in every dataset.
const ABOVE: usize = 4;

/// `k` clients at 0.25 and [`ABOVE`] at 0.75 (the order is irrelevant to Poisson sampling).
fn values(k: u64) -> Values {
    let mut v = vec![0.75; ABOVE];
    v.extend(std::iter::repeat_n(0.25, k as usize));
    Values::from_unit_values(v, format!("audit values with k = {k}")).unwrap()
}

/// The first query of a binary search for the median: the split point 1/2. (One round: at
/// these weak audit parameters a round's δ is 1/8, so eight would not fit in a δ below 1.)
fn first_query() -> ThresholdQuery {
    let mut task = BinarySearchQuantile::new(BinarySearchConfig {
        quantile: 0.5,
        rounds: 1,
        per_round: AUDIT.mechanism(),
        composition: Composition::Basic,
        normalisation: Normalisation::Released,
        total_delta: 0.99,
    })
    .unwrap();
    let query = task.next_query().unwrap();
    assert_eq!(query.threshold.to_bits(), 0.5_f64.to_bits());
    query
}

/// The released count of `bucket` (0 when suppressed).
fn released(release: &SampleThresholdRelease, bucket: u32) -> u64 {
    release
        .items
        .iter()
        .find(|cell| cell.item == bucket)
        .map_or(0, |cell| cell.count)
}

/// The round as the task runs it: `(c_0, c_1)` for the dataset with `k` clients below.
fn tally_round(
    datasets: &[Values],
    query: &ThresholdQuery,
) -> impl Fn(u64, &mut ChaCha20Rng) -> (u64, u64) {
    move |k, rng| {
        let release = run_threshold_round(
            &datasets[k as usize],
            query,
            ExecutionPath::GapSkipping,
            rng.next_u64(),
        );
        (
            released(&release, ThresholdQuery::AT_OR_BELOW),
            released(&release, ThresholdQuery::ABOVE),
        )
    }
}

#[test]
fn dp_audit_binary_search_round_passes() {
    let datasets: Vec<Values> = (0..=AUDIT.k_max).map(values).collect();
    let query = first_query();
    let round = tally_round(&datasets, &query);
    let verdict = AUDIT.run(&|k, rng| round(k, rng).0, 5);
    assert!(verdict.passed(), "{verdict:?}");
}

#[test]
fn dp_audit_binary_search_cell_catches_the_mutants() {
    AUDIT.check_mutants_are_caught(6).unwrap();
}

/// A hand-written two-bucket round over `datasets` with its own sampling rate and release
/// rule, for the mutants: the task's query maps values to buckets, each client is sampled at
/// `rate`, and a bucket's count is released when `rule(count)`.
fn two_bucket_round(
    datasets: &[Values],
    query: &ThresholdQuery,
    rate: f64,
    rule: fn(u64) -> bool,
) -> impl Fn(u64, &mut ChaCha20Rng) -> (u64, u64) {
    let sampler = PoissonSampler::new(rate).unwrap();
    move |k, rng| {
        let values = datasets[k as usize].as_slice();
        let mut counts = [0u64; 2];
        for i in sampler.indices(values.len() as u64, rng) {
            counts[query.report(values[i as usize]) as usize] += 1;
        }
        let release = |c: u64| if rule(c) { c } else { 0 };
        (release(counts[0]), release(counts[1]))
    }
}

/// The audit of the whole release `(c_0, c_1)`: the violation bound uses both counts, the
/// conformance check the audited bucket's count `c_0`.
fn audit_pairs(round: &dyn Fn(u64, &mut ChaCha20Rng) -> (u64, u64), seed: u64) -> Verdict {
    AUDIT.run_with(round, |&(below, _)| below, seed)
}

#[test]
fn dp_audit_binary_search_round_release_passes() {
    let datasets: Vec<Values> = (0..=AUDIT.k_max).map(values).collect();
    let query = first_query();
    let verdict = audit_pairs(&tally_round(&datasets, &query), 7);
    assert!(verdict.passed(), "{verdict:?}");
}

#[test]
fn dp_audit_binary_search_round_catches_the_mutants() {
    let datasets: Vec<Values> = (0..=AUDIT.k_max).map(values).collect();
    let query = first_query();
    let tau = AUDIT.threshold;
    let round = |rate, rule| two_bucket_round(&datasets, &query, rate, rule);
    // The correct hand-written round passes, so each mutant differs only by its bug.
    let correct = audit_pairs(&round(AUDIT.rate, |c| c >= 3), 8);
    assert!(correct.passed(), "{correct:?}");
    assert_eq!(tau, 3);
    let strict = audit_pairs(&round(AUDIT.rate, |c| c > 3), 9);
    assert!(
        !strict.mismatches.is_empty(),
        "strict threshold: {strict:?}"
    );
    let none = audit_pairs(&round(AUDIT.rate, |c| c > 0), 10);
    assert!(!none.violations.is_empty(), "no threshold: {none:?}");
    let high = audit_pairs(&round(0.6, |c| c >= 3), 11);
    assert!(!high.violations.is_empty(), "rate 0.6: {high:?}");
    let low = audit_pairs(&round(0.4, |c| c >= 3), 12);
    assert!(!low.mismatches.is_empty(), "rate 0.4: {low:?}");
}

/// One level of the hierarchical histogram, through the simulator's level runner: the audited
/// cell is level-1 bucket 0 of a binary tree, which holds the `k` values at 0.25.
#[test]
fn dp_audit_hierarchical_level_passes() {
    let query = LevelQuery {
        level: 1,
        shape: TreeShape::new(2, 1).unwrap(),
        mechanism: AUDIT.mechanism(),
    };
    let datasets: Vec<Values> = (0..=AUDIT.k_max).map(values).collect();
    let verdict = AUDIT.run(
        &|k, rng| {
            run_level(
                &datasets[k as usize],
                &query,
                ExecutionPath::GapSkipping,
                rng.next_u64(),
            )
            .items
            .iter()
            .find(|cell| cell.item == 0)
            .map_or(0, |cell| cell.count)
        },
        13,
    );
    assert!(verdict.passed(), "{verdict:?}");
}
