//! Empirical privacy audit of one OptPrefixTree iteration under its aggregate guarantee, on
//! replace-one device-level neighbours, through the simulator's per-report path (every device
//! selects, randomizes with the iteration's OUE randomizer, and the reports are summed).
//!
//! The instance is small so that amplification is weak and measurable: 20 devices, a binary
//! Huffman code over `{a, b}` in which the two words start with different bits, one iteration with a fixed segment of one symbol, so
//! `D_1 = {0, 1, ⊥}`; target `(ε, δ) = (1, 0.1)` by the default plan (the tight accountant:
//! the FMT21 clone pair's privacy-loss distribution), which gives `ε₀`. Device 0 holds `b`
//! on `D` and `a` (or a word no code can encode, which reports `⊥`) on `D'`; the 19 others hold
//! an unencodable word and report `⊥`. The outcome is the server's view projected on the two
//! elements that device 0 can select, with the number of reports: a projection can only lower
//! the divergence, so a leak in it is a leak of the release.
//!
//! * The real iteration must show no `δ(ε)` above its claim.
//! * Mutant "wrong local ε": the randomizer runs at `2.5ε₀` under the same claim; it is caught.
//!   (At `2ε₀` the projected view's exact `δ(1)` is 0.079, within the claim: the tight plan's
//!   `ε₀` is smaller than FMT23's, so this weak instance resolves only larger errors.)
//! * Mutant "budget ×4": `ε₀` calibrated by the same tight plan for `ε = 4` under the claim
//!   for `ε = 1`; it is caught.
//! * Mutant "no ⊥": a device with nothing eligible sends no report, so the number of reports
//!   gives it away; it is caught.
//!
//! The sampled statistic on the exact bad set also reproduces the exact `δ(ε)` of the
//! projected outcome (independent binomial sums), for the real iteration and the first mutant.

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::composition::Composition;
use tally_accounting::numeric::ln_binomial_pmf;
use tally_accounting::opt_prefix_tree::{LocalEpsilonPlan, solve_local_epsilon};
use tally_accounting::shuffle::ShuffleBound;
use tally_core::heavy_hitters::{
    Encoding, HuffmanCode, IterationQuery, OptPrefixTree, OptPrefixTreeConfig, SegmentPolicy,
    Selection, WordMultiset,
};
use tally_core::ldp::UnaryVariant;
use tally_core::task::Task;
use tally_stats_tests::{Outcomes, set_statistic, split_sample_lower_bound};

const DEVICES: u64 = 20;
const EPSILON: f64 = 1.0;
const DELTA: f64 = 0.1;
/// Runs per dataset and sample half.
const RUNS: u64 = 40_000;

/// The word list of the audit: `a` and `b` are encodable, `z` is not (it reports `⊥`).
const WORDS: [&str; 3] = ["a", "b", "z"];

/// The plan of one iteration of `DEVICES` reports at `(epsilon, DELTA)` by the command line's
/// default: tight composition of the FMT21 clone pair.
fn plan_at(epsilon: f64) -> LocalEpsilonPlan {
    solve_local_epsilon(
        epsilon,
        DELTA,
        1,
        DEVICES,
        Composition::Tight,
        ShuffleBound::Fmt21,
    )
    .unwrap()
}

/// The plan of the audit's target `(EPSILON, DELTA)`.
fn plan() -> LocalEpsilonPlan {
    plan_at(EPSILON)
}

/// The first iteration's query of a one-iteration OptPrefixTree run with `plan`.
fn first_query(plan: LocalEpsilonPlan) -> IterationQuery {
    // `a` is the heaviest symbol, so its code is one bit and `b`'s starts with the other.
    let code = HuffmanCode::new(&[('a', 2.0), ('b', 1.0)], 1.0).unwrap();
    let mut task = OptPrefixTree::new(OptPrefixTreeConfig {
        iterations: 1,
        runs: 1,
        domain_cap: 3,
        fpr: 0.1,
        selection: Selection::UniformSupport,
        randomizer: UnaryVariant::Optimized,
        segment: SegmentPolicy::Fixed(1),
        encoding: Encoding::Huffman(code),
        max_length: 4,
        deny: Vec::new(),
        plan,
    })
    .unwrap();
    task.next_query().unwrap()
}

/// The elements `a` and `b` select, and `⊥`.
fn elements(query: &IterationQuery) -> (u32, u32) {
    let a = query.eligible_element("a").unwrap();
    let b = query.eligible_element("b").unwrap();
    assert_ne!(a, b);
    assert_eq!(query.eligible_element("z"), None);
    assert_eq!(query.domain_size(), 3);
    (a, b)
}

/// What the audit sees of one iteration: the sums of the elements `a` and `b` select, and the
/// number of reports.
type View = (u64, u64, u64);

/// One iteration on the dataset where device 0 holds `WORDS[first]` and the others hold `z`;
/// with `drop_bottom`, a device with nothing eligible sends no report (the second mutant).
fn iteration(
    query: &IterationQuery,
    first: u32,
    drop_bottom: bool,
) -> impl Fn(&mut ChaCha20Rng) -> View + '_ {
    let (a, b) = elements(query);
    let devices: Vec<WordMultiset> = (0..DEVICES)
        .map(|device| WORDS[if device == 0 { first as usize } else { 2 }])
        .filter(|word| !drop_bottom || query.eligible_element(word).is_some())
        .map(|word| WordMultiset::from_words([word]))
        .collect();
    move |rng| {
        let sums = tally_sim::run_round(query, &devices, rng.next_u64());
        (sums.sums[a as usize], sums.sums[b as usize], sums.reports)
    }
}

/// The split-sample lower bound on `δ(ε)` between device 0 holding `WORDS[first]` and
/// `WORDS[second]`.
fn delta_lower_bound(
    query: &IterationQuery,
    first: u32,
    second: u32,
    drop_bottom: bool,
    seed: u64,
) -> f64 {
    split_sample_lower_bound(
        RUNS,
        seed,
        EPSILON,
        iteration(query, first, drop_bottom),
        iteration(query, second, drop_bottom),
    )
}

/// The exact law of the projected view when device 0 selects `b` (`holds_b`) or `a`: the two
/// sums are independent, each `Bin(19, q)` plus device 0's bit (`p` on its own element, `q`
/// on the other).
fn exact_probability(query: &IterationQuery, holds_b: bool, view: View) -> f64 {
    let support = query.randomizer.support_probabilities();
    let (p, q) = (support.p, support.q);
    let others = DEVICES - 1;
    let sum_law = |own: f64, y: u64| -> f64 {
        let with_bit = if y >= 1 {
            own * ln_binomial_pmf(y - 1, others, q).exp()
        } else {
            0.0
        };
        let without = if y <= others {
            (1.0 - own) * ln_binomial_pmf(y, others, q).exp()
        } else {
            0.0
        };
        with_bit + without
    };
    let (own_a, own_b) = if holds_b { (q, p) } else { (p, q) };
    sum_law(own_a, view.0) * sum_law(own_b, view.1)
}

/// Every view, and `P_D(o) − e^ε P_D'(o)` for each: `D` has device 0 holding `b`, `D'` `a`.
fn exact_excess(query: &IterationQuery) -> Vec<(View, f64)> {
    let scale = EPSILON.exp();
    (0..=DEVICES)
        .flat_map(|ya| (0..=DEVICES).map(move |yb| (ya, yb, DEVICES)))
        .map(|view| {
            let excess = exact_probability(query, true, view)
                - scale * exact_probability(query, false, view);
            (view, excess)
        })
        .collect()
}

#[test]
fn dp_audit_opt_prefix_tree_iteration_passes_and_catches_inflated_local_epsilons() {
    let plan = plan();
    let claimed = plan.aggregate.delta;
    assert!(plan.aggregate.epsilon <= EPSILON && claimed <= DELTA);
    let mut wrong_plan = plan.clone();
    wrong_plan.local_epsilon *= 2.5;
    let real = first_query(plan);
    let wrong = first_query(wrong_plan);
    // Calibrated as if the budget were four times larger, under the same claim.
    let inflated = first_query(plan_at(4.0 * EPSILON));
    for (query, seed, is_real) in [
        (&real, 1000, true),
        (&wrong, 2000, false),
        (&inflated, 5000, false),
    ] {
        let excess = exact_excess(query);
        let exact: f64 = excess.iter().map(|(_, e)| e.max(0.0)).sum();
        let bad: Vec<View> = excess
            .iter()
            .filter(|(_, e)| *e > 0.0)
            .map(|(v, _)| *v)
            .collect();
        // Conformance: the real path's sampled statistic on the exact bad set matches the
        // exact δ(ε) of the projected view.
        let statistic = set_statistic(
            &Outcomes::sample(RUNS, seed + 10, iteration(query, 1, false)),
            &Outcomes::sample(RUNS, seed + 11, iteration(query, 0, false)),
            EPSILON,
            |view| bad.contains(view),
        );
        assert!(
            statistic.agrees_with(exact, 1e-12),
            "{statistic:?} vs {exact}"
        );
        let bound = delta_lower_bound(query, 1, 0, false, seed);
        if is_real {
            assert!(
                exact <= claimed,
                "exact δ(ε) {exact} above the claim {claimed}"
            );
            assert!(bound <= claimed, "OptPrefixTree leaks: δ ≥ {bound}");
        } else {
            assert!(exact > claimed, "exact δ(ε) {exact}");
            assert!(
                bound > claimed,
                "mis-calibrated mutant not caught: δ ≥ {bound}"
            );
        }
    }
}

#[test]
fn dp_audit_opt_prefix_tree_catches_a_missing_bottom_report() {
    let plan = plan();
    let claimed = plan.aggregate.delta;
    let query = first_query(plan);
    // Device 0 holds `a` or nothing encodable: the real iteration sends ⊥ for the latter.
    let real = delta_lower_bound(&query, 0, 2, false, 3000);
    assert!(real <= claimed, "OptPrefixTree leaks: δ ≥ {real}");
    // Without ⊥ the device's silence is in the number of reports.
    let mutant = delta_lower_bound(&query, 0, 2, true, 4000);
    assert!(mutant > 0.9, "no-⊥ mutant not caught: δ ≥ {mutant}");
}
