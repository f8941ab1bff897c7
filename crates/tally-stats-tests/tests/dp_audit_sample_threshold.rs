//! Empirical privacy audit of the S&T histogram at weak parameters (`p_s = 0.5`, `τ = 3`,
//! `ε = 1`), where the tight `δ` is large enough to measure; see [`CellAudit`] for the checks.
//!
//! Neighbouring datasets: `D` holds `k` clients with the audited item plus filler clients with
//! unique items, `D'` holds one audited client fewer.

use rand::Rng;
use tally_sim::{ExecutionPath, Population, run_sample_threshold};
use tally_stats_tests::CellAudit;

const AUDIT: CellAudit = CellAudit::WEAK;
const FILLER: u32 = 5;
const AUDITED: u32 = 0;

/// `k` clients holding the audited item and `FILLER` clients holding unique items.
fn population(k: u64) -> Population {
    let mut items: Vec<u32> = (1..=FILLER).collect();
    items.extend(std::iter::repeat_n(AUDITED, k as usize));
    let vocabulary = (0..=FILLER).map(|i| format!("item{i}")).collect();
    Population::from_ids(items, vocabulary, format!("audit population with k = {k}"))
        .expect("valid population")
}

#[test]
fn dp_audit_exact_deltas_peak_at_the_accountants_tight_delta() {
    let peak = (1..=40)
        .map(|k| AUDIT.exact_delta_at(k))
        .fold(0.0, f64::max);
    // p_s^τ = 1/8 at k = τ: every copy sampled.
    assert!((peak - 0.125).abs() < 1e-12, "{peak}");
    let claimed = AUDIT.claimed_delta();
    assert!(
        claimed >= peak && claimed <= peak * (1.0 + 2e-6),
        "{claimed} vs {peak}"
    );
}

#[test]
fn dp_audit_sample_threshold_passes() {
    let mechanism = AUDIT.mechanism();
    for path in [ExecutionPath::GapSkipping, ExecutionPath::PerClient] {
        let verdict = AUDIT.run(
            &|k, rng| {
                run_sample_threshold(&population(k), &mechanism, path, rng.next_u64())
                    .items
                    .iter()
                    .find(|cell| cell.item == AUDITED)
                    .map_or(0, |cell| cell.count)
            },
            1,
        );
        assert!(verdict.passed(), "{path}: {verdict:?}");
    }
}

#[test]
fn dp_audit_catches_the_mutants() {
    AUDIT.check_mutants_are_caught(2).unwrap();
}
