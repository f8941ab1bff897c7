//! The local-ε solver of OptPrefixTree (docs/algorithms.md §6.6): consistent with the shuffle
//! accountant and the composition rules, and monotone in its inputs.

use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::{
    aggregate_guarantee, solve_local_epsilon, solve_local_epsilon_best,
};
use tally_accounting::shuffle::ShuffleBound;
use tally_accounting::{Neighbours, TrustModel};

#[test]
fn solved_local_epsilon_meets_the_target_and_is_the_largest() {
    for composition in [
        Composition::Basic,
        Composition::Advanced,
        Composition::Optimal,
    ] {
        let plan =
            solve_local_epsilon(4.0, 1e-6, 5, 100_000, composition, ShuffleBound::Fmt23).unwrap();
        assert!(plan.aggregate.epsilon <= 4.0 && plan.aggregate.delta <= 1e-6);
        assert_eq!(plan.aggregate.model, TrustModel::Shuffle);
        assert_eq!(plan.aggregate.neighbours, Neighbours::ReplaceOne);
        assert_eq!(plan.local.model, TrustModel::Local);
        assert!(plan.local.epsilon.to_bits() == plan.local_epsilon.to_bits());
        // Amplification: the local ε₀ is well above the per-iteration aggregate ε.
        assert!(plan.local_epsilon > plan.per_iteration.epsilon);
        // A slightly larger ε₀ breaks the target.
        let over = aggregate_guarantee(
            plan.local_epsilon * 1.001,
            1e-6,
            5,
            100_000,
            composition,
            ShuffleBound::Fmt23,
        )
        .unwrap();
        assert!(over.aggregate.epsilon > 4.0, "{composition}: {over:?}");
    }
}

#[test]
fn local_epsilon_is_monotone() {
    let solve = |eps: f64, t: usize, n: u64| {
        solve_local_epsilon(eps, 1e-6, t, n, Composition::Optimal, ShuffleBound::Fmt23)
            .unwrap()
            .local_epsilon
    };
    let by_eps: Vec<f64> = [1.0, 2.0, 4.0, 8.0]
        .iter()
        .map(|&e| solve(e, 5, 100_000))
        .collect();
    assert!(by_eps.windows(2).all(|w| w[0] < w[1]), "{by_eps:?}");
    let by_t: Vec<f64> = [1, 2, 5, 10]
        .iter()
        .map(|&t| solve(4.0, t, 100_000))
        .collect();
    assert!(by_t.windows(2).all(|w| w[0] > w[1]), "{by_t:?}");
    let by_n: Vec<f64> = [1_000, 10_000, 100_000, 1_000_000]
        .iter()
        .map(|&n| solve(4.0, 5, n))
        .collect();
    assert!(by_n.windows(2).all(|w| w[0] < w[1]), "{by_n:?}");
}

#[test]
fn tighter_composition_allows_a_larger_local_epsilon() {
    let solve = |c| {
        solve_local_epsilon(2.0, 1e-6, 10, 100_000, c, ShuffleBound::Fmt23)
            .unwrap()
            .local_epsilon
    };
    // Optimal and advanced split δ the same way; optimal is the tighter theorem.
    assert!(solve(Composition::Optimal) >= solve(Composition::Advanced));
    let best = solve_local_epsilon_best(
        2.0,
        1e-6,
        10,
        100_000,
        &Composition::ALL[..3],
        ShuffleBound::Fmt23,
    )
    .unwrap();
    for c in &Composition::ALL[..3] {
        assert!(best.local_epsilon >= solve(*c));
    }
    assert!(best.aggregate.epsilon <= 2.0);
}

#[test]
fn tight_composition_meets_the_target_with_the_largest_local_epsilon() {
    let bound = ShuffleBound::Fmt21;
    for (epsilon, iterations, users) in [(8.0, 5, 20_000), (2.0, 3, 5_000)] {
        let tight =
            solve_local_epsilon(epsilon, 1e-6, iterations, users, Composition::Tight, bound)
                .unwrap();
        let label = format!("({epsilon}, 1e-6), T = {iterations}, n = {users}");
        assert_eq!(tight.composition, Composition::Tight);
        assert!(
            tight.aggregate.epsilon <= epsilon && tight.aggregate.delta <= 1e-6,
            "{label}: {tight:?}"
        );
        assert_eq!(tight.aggregate.model, TrustModel::Shuffle);
        assert_eq!(tight.aggregate.neighbours, Neighbours::ReplaceOne);
        assert!(tight.per_iteration.epsilon <= tight.aggregate.epsilon);
        // The reported guarantee is the forward computation at the returned ε₀.
        let again = aggregate_guarantee(
            tight.local_epsilon,
            1e-6,
            iterations,
            users,
            Composition::Tight,
            bound,
        )
        .unwrap();
        assert_eq!(again.aggregate, tight.aggregate, "{label}");
        // At least what every (ε, δ) rule of the same bound allows ...
        let best = solve_local_epsilon_best(
            epsilon,
            1e-6,
            iterations,
            users,
            &tally_accounting::opt_prefix_tree::DEFAULT_COMPOSITIONS,
            bound,
        )
        .unwrap();
        assert!(
            tight.local_epsilon >= best.local_epsilon,
            "{label}: tight {} < {} {}",
            tight.local_epsilon,
            best.composition,
            best.local_epsilon
        );
        // ... and the largest: 5% more breaks the target (the bisection stops within 1e-4).
        let over = aggregate_guarantee(
            tight.local_epsilon * 1.05,
            1e-6,
            iterations,
            users,
            Composition::Tight,
            bound,
        )
        .unwrap();
        assert!(over.aggregate.epsilon > epsilon, "{label}: {over:?}");
    }
    // The closed form is not a pair.
    assert!(
        solve_local_epsilon(
            8.0,
            1e-6,
            5,
            20_000,
            Composition::Tight,
            ShuffleBound::ClosedForm
        )
        .is_err()
    );
}

/// Against colluding users the iterations run over the honest users' reports alone: the
/// guarantee itself with nobody colluding, the same iterations over half the users with half
/// colluding, and the local `T·ε₀` with every other user colluding.
#[test]
fn colluders_leave_the_iterations_over_the_honest_reports() {
    let plan = aggregate_guarantee(
        1.0,
        1e-6,
        4,
        10_000,
        Composition::Tight,
        ShuffleBound::Fmt21,
    )
    .unwrap();
    let none = plan.collusion(0.0).unwrap();
    assert_eq!(
        (none.epsilon.to_bits(), none.delta.to_bits()),
        (
            plan.aggregate.epsilon.to_bits(),
            plan.aggregate.delta.to_bits()
        )
    );
    assert_eq!(none.floor.to_bits(), 4.0_f64.to_bits());
    let half = plan.collusion(0.5).unwrap();
    let over_half = aggregate_guarantee(
        1.0,
        plan.aggregate.delta,
        4,
        5_000,
        Composition::Tight,
        ShuffleBound::Fmt21,
    )
    .unwrap()
    .aggregate;
    assert_eq!(half.epsilon.to_bits(), over_half.epsilon.to_bits());
    assert!(
        half.epsilon > plan.aggregate.epsilon && half.epsilon < 4.0,
        "{half:?}"
    );
    let alone = plan.collusion(1.0).unwrap();
    assert_eq!(alone.epsilon.to_bits(), 4.0_f64.to_bits());
}
