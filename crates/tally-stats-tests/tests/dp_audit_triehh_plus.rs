//! Empirical privacy audit of one TrieHH++ level: the S&T round over prefixes, run through the
//! same code path as the task (`tally_sim::run_prefix_round`), at `p_s = 0.5`, `τ = 3`,
//! `ε = 1`; see [`CellAudit`] for the checks.
//!
//! Neighbouring datasets: `D` holds `k` clients whose level-2 prefix is `"ab"` plus clients
//! with other words, `D'` holds one of them fewer. The audited cell is the prefix `"ab"`.

use rand::Rng;
use tally_core::heavy_hitters::PrefixRound;
use tally_sim::{ExecutionPath, Population, run_prefix_round};
use tally_stats_tests::CellAudit;

const AUDIT: CellAudit = CellAudit::WEAK;

/// Other words plus `reporters` clients whose level-2 prefix is `"ab"`: one holds `"abc"`
/// (reporting a prefix of a longer word) and the rest hold `"ab"`.
fn population(reporters: u64) -> Population {
    let mut words = vec!["ba", "bb", "c"];
    if reporters > 0 {
        words.push("abc");
        words.extend(std::iter::repeat_n("ab", reporters as usize - 1));
    }
    Population::from_names(
        words,
        format!("audit population with {reporters} reporters"),
    )
    .unwrap()
}

#[test]
fn dp_audit_triehh_plus_level_passes() {
    let mechanism = AUDIT.mechanism();
    // Level 2 of the unrestricted variant, whose audited cell is the prefix "ab".
    let round = PrefixRound {
        round: 2,
        segment: 1,
        live_parents: None,
    };
    let populations: Vec<Population> = (0..=AUDIT.k_max).map(population).collect();
    let verdict = AUDIT.run(
        &|k, rng| {
            run_prefix_round(
                &populations[k as usize],
                &round,
                &mechanism,
                ExecutionPath::GapSkipping,
                rng.next_u64(),
            )
            .into_iter()
            .find(|(prefix, _, _)| prefix == "ab")
            .map_or(0, |(_, count, _)| count)
        },
        3,
    );
    assert!(verdict.passed(), "{verdict:?}");
}

#[test]
fn dp_audit_triehh_plus_level_catches_the_mutants() {
    AUDIT.check_mutants_are_caught(4).unwrap();
}
