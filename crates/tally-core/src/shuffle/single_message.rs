//! Single-message shuffle histogram: generalized randomized response (k-RR) whose reports are
//! shuffled (ALGORITHMS.md §5.8, "B-ary randomized response"), with the local `ε₀` solved
//! numerically by the amplification-by-shuffling accountant of §8.
//!
//! Each client sends one [`Grr`] report at local `ε₀`; the analyst sees the shuffled multiset of
//! the `n` reports and debiases the per-item counts with GRR's unbiased estimator
//! ([`Grr::aggregator`]). `ε₀` is the largest local ε for which [`max_local_epsilon`] proves the
//! shuffled reports `(ε, δ)`-DP: the paper's `ε_L = ln(n/ln(1/δ)) + 2 ln ε + O(1)` has an
//! unspecified constant, so it is solved instead (§5.8).
//!
//! # Privacy
//!
//! `(ε, δ)`-DP for replace-one neighbours in the shuffle model (the adversary sees the shuffled
//! reports of all `n` clients), by the chosen [`ShuffleBound`]; each single report is also
//! `ε₀`-LDP (pure, replace-one, local model), stated by
//! [`local_guarantee`](DomainHistogram::local_guarantee).
//!
//! The amplification theorems need only that every client's randomizer is `ε₀`-LDP, for any
//! output space, which GRR is for every domain size (its keep probability is rounded so that
//! the ratio is provably at most `e^{ε₀}`; see [`crate::ldp`]):
//!
//! * [`ShuffleBound::Fmt21`] and [`ShuffleBound::ClosedForm`] (Feldman–McMillan–Talwar 2021,
//!   Theorems 3.1–3.2) hold for any `ε₀`-LDP randomizer, adaptively chosen per client.
//! * [`ShuffleBound::Fmt23`] (the default) uses the "stronger clone" probability
//!   `2/(e^{ε₀}+1)`; that this worst case covers every `ε₀`-LDP randomizer rests on a
//!   monotonicity claim of FMT23 and Wang et al. that was not verified here (ALGORITHMS.md §8.1
//!   caveat). For GRR on `k > 2` items the clone decomposition of §8.1 has
//!   `α = TV/(e^{ε₀}−1) = 1/(e^{ε₀}+k−1) < 1/(e^{ε₀}+1)`, which is exactly where that claim is
//!   needed; for `k = 2` (binary randomized response) the pair is exact. Pick
//!   [`ShuffleBound::Fmt21`] for the code-backed conservative bound.

use rand::Rng;
use tally_accounting::shuffle::{ShuffleBound, max_local_epsilon};
use tally_accounting::{Guarantee, Neighbours, TrustModel};

use crate::Error;
use crate::histogram::{DomainHistogram, MessageCost};
use crate::ldp::Grr;

/// Shuffled k-RR over the domain `0..k` for a fixed number of clients `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct ShuffledGrr {
    grr: Grr,
    epsilon: f64,
    delta: f64,
    users: u64,
    bound: ShuffleBound,
}

impl ShuffledGrr {
    /// The mechanism for `n` clients over `domain = k ≥ 2` items, at the replace-one
    /// shuffle-model target `(epsilon, delta)`, with the local `ε₀` solved by `bound`.
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] if the accountant rejects `(epsilon, n, delta)` (`epsilon ∉
    /// (0, 50]`, `n ∉ [2, 10^7]`, `delta ∉ (0, 1)`); [`Error::InvalidParameter`] if `k < 2`.
    pub fn new(
        domain: u32,
        epsilon: f64,
        delta: f64,
        n: u64,
        bound: ShuffleBound,
    ) -> Result<Self, Error> {
        let local_epsilon = max_local_epsilon(epsilon, n, delta, bound)?;
        Ok(Self {
            grr: Grr::new(domain, local_epsilon)?,
            epsilon,
            delta,
            users: n,
            bound,
        })
    }

    /// The local randomizer (at `ε₀`).
    pub fn randomizer(&self) -> &Grr {
        &self.grr
    }

    /// The local `ε₀` every report satisfies.
    pub fn local_epsilon(&self) -> f64 {
        self.grr.epsilon()
    }

    /// The number of clients `n` the mechanism is calibrated for.
    pub fn users(&self) -> u64 {
        self.users
    }

    /// The amplification bound used to solve `ε₀`.
    pub fn bound(&self) -> ShuffleBound {
        self.bound
    }
}

impl DomainHistogram for ShuffledGrr {
    fn name(&self) -> &'static str {
        "shuffled-grr"
    }

    fn domain(&self) -> u32 {
        self.grr.domain()
    }

    fn guarantee(&self) -> Guarantee {
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis: format!(
                "shuffled GRR at local ε₀ = {}, amplification by shuffling ({}) over {} clients",
                self.local_epsilon(),
                self.bound,
                self.users
            ),
        }
    }

    fn local_guarantee(&self) -> Option<Guarantee> {
        Some(self.grr.guarantee())
    }

    fn message_cost(&self) -> Option<MessageCost> {
        Some(MessageCost {
            messages_per_client: 1.0,
            bits_per_message: u64::from(u32::BITS - (self.grr.domain() - 1).leading_zeros()),
        })
    }

    /// Randomizes every client's item with GRR at `ε₀` and returns GRR's unbiased count
    /// estimates.
    ///
    /// # Panics
    ///
    /// If an item is outside the domain or `items.len()` is not the calibrated `n` (the
    /// amplification is computed for exactly `n` reports).
    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64> {
        assert_eq!(
            items.len() as u64,
            self.users,
            "the mechanism is calibrated for a different number of clients"
        );
        let mut aggregator = self.grr.aggregator();
        for &item in items {
            aggregator
                .absorb(self.grr.randomize(item, rng))
                .expect("GRR reports lie in the domain");
        }
        aggregator.estimate()
    }
}
