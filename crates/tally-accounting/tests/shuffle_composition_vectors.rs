//! OptPrefixTree's tight composition of shuffled iterations against dp_accounting's second
//! opinion (`tools/reference/shuffle_composition.py`): never below its optimistic (lower-bound)
//! value, within the grid's rounding of its pessimistic one, and never above what the basic,
//! advanced or optimal composition of the same per-iteration bound gives.

use serde::Deserialize;
use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::{TIGHT_GRID_POINTS_PER_EPSILON0, aggregate_guarantee};
use tally_accounting::shuffle::ShuffleBound;

#[derive(Deserialize)]
struct File {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    local_epsilon: f64,
    users: u64,
    iterations: usize,
    delta: f64,
    bound: ShuffleBoundName,
    dp_accounting_epsilon: f64,
    lower_bound_epsilon: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum ShuffleBoundName {
    Fmt21,
    Fmt23,
}

#[test]
fn test_vec_tight_iterations_match_dp_accounting() {
    let file: File = serde_json::from_str(include_str!(
        "test_vectors/shuffle_composition/tight_iterations.json"
    ))
    .unwrap();
    assert!(file.cases.len() >= 4);
    for case in &file.cases {
        let bound = match case.bound {
            ShuffleBoundName::Fmt21 => ShuffleBound::Fmt21,
            ShuffleBoundName::Fmt23 => ShuffleBound::Fmt23,
        };
        let plan = |composition| {
            aggregate_guarantee(
                case.local_epsilon,
                case.delta,
                case.iterations,
                case.users,
                composition,
                bound,
            )
            .unwrap()
        };
        let tight = plan(Composition::Tight);
        let epsilon = tight.aggregate.epsilon;
        let label = format!(
            "ε₀ = {}, n = {}, T = {}, δ = {}, {bound}",
            case.local_epsilon, case.users, case.iterations, case.delta
        );
        assert_eq!(tight.aggregate.delta.to_bits(), case.delta.to_bits());
        // Never below the optimistic discretisation of the same composition ...
        let lower = case.lower_bound_epsilon;
        assert!(epsilon >= lower, "{label}: {epsilon} < {lower}");
        // ... and above the pessimistic one by at most the grid: every iteration's loss is
        // rounded up by less than h = ε₀/(100·T), so the composed loss by less than ε₀/100.
        let reference = case.dp_accounting_epsilon;
        let grid = case.local_epsilon / TIGHT_GRID_POINTS_PER_EPSILON0;
        assert!(
            epsilon <= reference + grid,
            "{label}: {epsilon} vs dp_accounting {reference} (+ {grid})"
        );
        // One iteration is at most as distinguishable as T of them.
        assert!(tight.per_iteration.epsilon <= epsilon, "{label}");
        // Never above the (ε, δ) compositions of the same clone bound.
        for composition in [
            Composition::Basic,
            Composition::Advanced,
            Composition::Optimal,
        ] {
            let other = plan(composition).aggregate.epsilon;
            assert!(
                epsilon <= other,
                "{label}: tight {epsilon} > {composition} {other}"
            );
        }
    }
}
