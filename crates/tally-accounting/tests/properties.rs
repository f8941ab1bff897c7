//! Properties every S&T analysis must have, on random parameters.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{
    Analysis, SampleThresholdParams, delta, max_sampling_rate_cap,
};

/// (ε, α, τ) with the sampling rate α·(1 − e^(−ε)) below the cap.
fn parameters() -> impl Strategy<Value = (f64, f64, u64)> {
    (0.05f64..3.0, 0.001f64..0.999, 1u64..80)
}

fn delta_at(epsilon: f64, rate: f64, tau: u64, analysis: Analysis) -> Option<f64> {
    let params = SampleThresholdParams::new(rate, tau).ok()?;
    delta(epsilon, &params, analysis, Neighbours::AddRemove).ok()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        rng_seed: RngSeed::Fixed(20_261_122),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn analyses_are_ordered_loosest_first((epsilon, alpha, tau) in parameters()) {
        let rate = alpha * max_sampling_rate_cap(epsilon, Neighbours::AddRemove);
        let theorem1 = delta_at(epsilon, rate, tau, Analysis::Theorem1).unwrap();
        let exact = delta_at(epsilon, rate, tau, Analysis::Exact).unwrap();
        let tight = delta_at(epsilon, rate, tau, Analysis::Tight).unwrap();
        prop_assert!(theorem1 >= exact, "theorem1 {theorem1:e} < exact {exact:e}");
        prop_assert!(exact >= tight, "exact {exact:e} < tight {tight:e}");
        if let Some(closed) = delta_at(epsilon, rate, tau, Analysis::ClosedForm) {
            prop_assert!(closed >= theorem1, "closed-form {closed:e} < theorem1 {theorem1:e}");
        }
    }

    #[test]
    fn delta_decreases_in_the_threshold((epsilon, alpha, tau) in parameters()) {
        let rate = alpha * max_sampling_rate_cap(epsilon, Neighbours::AddRemove);
        for analysis in Analysis::ALL {
            if let (Some(a), Some(b)) = (
                delta_at(epsilon, rate, tau, analysis),
                delta_at(epsilon, rate, tau + 1, analysis),
            ) {
                prop_assert!(b <= a, "{analysis}: δ(τ+1) = {b:e} > δ(τ) = {a:e}");
            }
        }
    }

    /// Monotone in the sampling rate for every analysis but `exact`, whose bad-event
    /// probability jumps down each time ⌊kq⌋ steps up.
    #[test]
    fn delta_increases_in_the_sampling_rate(
        (epsilon, alpha, tau) in parameters(),
        step in 1.0001f64..1.5,
    ) {
        let cap = max_sampling_rate_cap(epsilon, Neighbours::AddRemove);
        let rate = alpha * cap;
        let higher = (rate * step).min(cap);
        for analysis in [Analysis::ClosedForm, Analysis::Theorem1, Analysis::Tight] {
            if let (Some(a), Some(b)) = (
                delta_at(epsilon, rate, tau, analysis),
                delta_at(epsilon, higher, tau, analysis),
            ) {
                prop_assert!(b >= a, "{analysis}: δ({higher}) = {b:e} < δ({rate}) = {a:e}");
            }
        }
    }

    #[test]
    fn replace_one_never_costs_less((epsilon, alpha, tau) in parameters()) {
        let rate = alpha * max_sampling_rate_cap(epsilon, Neighbours::ReplaceOne);
        let params = SampleThresholdParams::new(rate, tau).unwrap();
        let add = delta(epsilon, &params, Analysis::Tight, Neighbours::AddRemove).unwrap();
        if let Ok(replace) = delta(epsilon, &params, Analysis::Tight, Neighbours::ReplaceOne) {
            // Equal up to rounding where the worst group is k = 1 (δ = p_s at τ = 1).
            prop_assert!(replace >= add * (1.0 - 1e-12), "{replace:e} < {add:e}");
        }
    }
}
