//! The tight shuffle accountant against the distribution it stands for: OptPrefixTree's tight
//! guarantee composes `T` rounds of FMT21's clone pair through a privacy-loss distribution
//! (`tally_accounting::shuffle_loss`). Here the pair is sampled directly from its definition
//! (`C ~ Bin(n − 1, e^{−ε₀})`, `A ~ Bin(C, 1/2)`, `Δ ~ Bern(e^{ε₀}/(e^{ε₀} + 1))`, the first
//! second coordinate `C − A + 1 − Δ` of `P`), each draw's exact loss `ln(P_C(t)/Q_C(t))` summed over `T` independent
//! rounds, and the hockey-stick divergence estimated as `δ̂(ε) = E[(1 − e^{ε − L})₊]`.
//!
//! The accountant must dominate the sampled law (its `δ(ε)` at least `δ̂(ε)`) and stay close to
//! it (at most `δ̂` at `ε` lowered by the grid's rounding, `T·h`), within `Z` standard errors
//! (`α ≈ 2.9e-7` each side), and the guarantee OptPrefixTree reports must hold for the sampled
//! law. Fixed seeds; a few million binomial draws.

use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Binomial, Distribution};
use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::{TIGHT_GRID_POINTS_PER_EPSILON0, aggregate_guarantee};
use tally_accounting::shuffle::ShuffleBound;
use tally_accounting::shuffle_loss::shuffle_loss_pair;
use tally_stats_tests::{Estimate, Z};

/// Samples of the composed loss per setting.
const SAMPLES: usize = 1_000_000;

/// One round's privacy loss under `P`, drawn from the clone pair's definition.
struct ClonePair {
    eps0: f64,
    clones: Binomial,
    /// `a = e^{ε₀}/(e^{ε₀} + 1)`.
    a: f64,
}

impl ClonePair {
    fn new(eps0: f64, users: u64) -> Self {
        Self {
            eps0,
            clones: Binomial::new(users - 1, (-eps0).exp()).expect("valid binomial"),
            a: eps0.exp() / (eps0.exp() + 1.0),
        }
    }

    /// `ln(P_c(t)/Q_c(t))` with `P_c(t) = a·b(t) + (1 − a)·b(t − 1)` and
    /// `Q_c(t) = (1 − a)·b(t) + a·b(t − 1)`, `b` the `Bin(c, 1/2)` pmf, through the ratio
    /// `b(t − 1)/b(t) = t/(c − t + 1)`.
    fn loss(&self, t: u64, c: u64) -> f64 {
        if t == 0 {
            return self.eps0;
        }
        if t == c + 1 {
            return -self.eps0;
        }
        let ratio = t as f64 / (c - t + 1) as f64;
        let (a, b) = (self.a, 1.0 - self.a);
        ((a + b * ratio) / (b + a * ratio)).ln()
    }

    fn sample(&self, rng: &mut ChaCha20Rng) -> f64 {
        let c = self.clones.sample(rng);
        let a = Binomial::new(c, 0.5).expect("valid binomial").sample(rng);
        let delta = u64::from(rng.random_bool(self.a));
        // P's second coordinate, C − A + 1 − Δ.
        self.loss(c - a + 1 - delta, c)
    }
}

/// `T`-fold composed losses under `P`, from the seed.
fn composed_losses(eps0: f64, users: u64, iterations: u64, seed: u64) -> Vec<f64> {
    let pair = ClonePair::new(eps0, users);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..SAMPLES)
        .map(|_| (0..iterations).map(|_| pair.sample(&mut rng)).sum())
        .collect()
}

/// `δ̂(ε)`: the mean of `(1 − e^{ε − L})₊` with its standard error.
fn hockey_stick(losses: &[f64], epsilon: f64) -> Estimate {
    let n = losses.len() as f64;
    let terms = losses.iter().map(|&l| (1.0 - (epsilon - l).exp()).max(0.0));
    let (sum, sum_sq) = terms.fold((0.0, 0.0), |(s, q), x| (s + x, q + x * x));
    let mean = sum / n;
    let variance = (sum_sq / n - mean * mean).max(0.0);
    Estimate {
        value: mean,
        standard_error: (variance / n).sqrt(),
    }
}

/// `(ε₀, n, T)`: small cohorts, so that `δ` is large enough to measure at several `ε`.
const SETTINGS: [(f64, u64, u64); 3] = [(4.0, 200, 3), (2.0, 100, 5), (1.0, 50, 2)];

#[test]
fn the_composed_clone_pair_matches_its_sampled_law() {
    for (seed, (eps0, users, iterations)) in (1..).zip(SETTINGS) {
        let step = eps0 / (TIGHT_GRID_POINTS_PER_EPSILON0 * iterations as f64);
        let composed = shuffle_loss_pair(eps0, users, ShuffleBound::Fmt21, step)
            .unwrap()
            .self_compose(iterations)
            .unwrap();
        let losses = composed_losses(eps0, users, iterations, seed);
        let rounding = iterations as f64 * step;
        let mut checked = 0;
        for tenth in 0..(10 * iterations) {
            let epsilon = eps0 * tenth as f64 / 10.0;
            let accountant = composed.delta(epsilon).unwrap();
            if !(1e-3..=0.5).contains(&accountant) {
                continue;
            }
            let label = format!("ε₀ = {eps0}, n = {users}, T = {iterations}, ε = {epsilon}");
            let sampled = hockey_stick(&losses, epsilon);
            assert!(
                accountant >= sampled.lower(),
                "{label}: the accountant's δ {accountant} is below the sampled {sampled:?}"
            );
            let loosest = hockey_stick(&losses, epsilon - rounding);
            assert!(
                accountant <= loosest.upper(),
                "{label}: the accountant's δ {accountant} is above the sampled {loosest:?} \
                 at ε − T·h"
            );
            checked += 1;
        }
        assert!(checked >= 3, "ε₀ = {eps0}: only {checked} points checked");
    }
}

#[test]
fn opt_prefix_trees_tight_guarantee_holds_for_the_sampled_law() {
    for (seed, (eps0, users, iterations)) in (11..).zip(SETTINGS) {
        let losses = composed_losses(eps0, users, iterations, seed);
        for delta in [1e-2, 1e-1] {
            let plan = aggregate_guarantee(
                eps0,
                delta,
                iterations as usize,
                users,
                Composition::Tight,
                ShuffleBound::Fmt21,
            )
            .unwrap();
            let sampled = hockey_stick(&losses, plan.aggregate.epsilon);
            assert!(
                sampled.lower() <= delta,
                "ε₀ = {eps0}, n = {users}, T = {iterations}: ({}, {delta}) reported, sampled δ \
                 {sampled:?} (Z = {Z})",
                plan.aggregate.epsilon
            );
        }
    }
}
