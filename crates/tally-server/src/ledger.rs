//! What the tasks of one population may spend together, against an analyst who chooses each
//! task after reading the releases of those before it.
//!
//! Tight composition of the realized sequence of tasks is not valid against such an analyst
//! (`docs/privacy/composition.md`, "The ledger", gives a two-task counterexample), so the
//! ledger is a privacy filter in two parts, with a split of the budget fixed when the population
//! is created:
//!
//! * *bounded* tasks, whose every round is a sample-and-threshold round under add/remove
//!   neighbours dominated by the population's declared pair ([`TaskBound`]), take one of
//!   [`TaskBound::rounds`] rounds, the largest count whose tight composition of the declared
//!   pair fits the pair's share of the budget (Zhu–Dong–Wang's theorem for pairs fixed in
//!   advance; a shorter run is a padded one);
//! * every other task is *filtered*: charged its own `(ε, δ)` by basic composition within the
//!   rest of the budget (basic composition is a valid filter, Rogers, Roth, Ullman and Vadhan
//!   2016).
//!
//! The two parts compose concurrently by basic composition of their shares.

use serde::{Deserialize, Serialize};
use tally_accounting::Neighbours;
use tally_accounting::filter::{BasicFilter, less_rounded_down};
use tally_accounting::sample_threshold::{SampleThresholdParams, TIGHT_STEP};
use tally_core::histogram::SampleThreshold;
use tally_protocol::shown::{Rounding, delta_number, number, privacy_number};

/// `rounds` S&T rounds at the same parameters under add/remove neighbours: what a task runs,
/// when the ledger can bound it by a declared pair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LossRounds {
    /// The rounds' sampling rate `p_s`.
    pub(crate) sampling_rate: f64,
    /// The rounds' threshold `τ`.
    pub(crate) threshold: u64,
    /// How many rounds the task runs.
    pub(crate) rounds: u64,
}

impl LossRounds {
    /// `rounds` runs of `per_round`, if its rounds are under add/remove neighbours (the
    /// relation of the S&T loss pair).
    pub(crate) fn of(per_round: &SampleThreshold, rounds: usize) -> Option<Self> {
        (per_round.guarantee().neighbours == Neighbours::AddRemove).then(|| Self {
            sampling_rate: per_round.params().sampling_rate(),
            threshold: per_round.params().threshold(),
            rounds: rounds as u64,
        })
    }
}

/// The most rounds a declared pair may cover: beyond, the search for `K` stops (the ledger
/// then admits at most this many).
pub(crate) const MAX_BOUNDED_ROUNDS: u64 = 1 << 16;

/// A population's declared per-round S&T pair `(P, T)`, its share of the budget and the number
/// of rounds that share covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TaskBound {
    /// The largest sampling rate `P` of a bounded round.
    pub(crate) sampling_rate: f64,
    /// The smallest threshold `T` of a bounded round.
    pub(crate) threshold: u64,
    /// The share `(ε₁, δ₁)` of the budget the bounded rounds compose within.
    pub(crate) share: (f64, f64),
    /// `K`: the most bounded rounds, the largest count whose tight composition of the declared
    /// pair is `(ε₁, δ₁)`-DP.
    pub(crate) rounds: u64,
}

impl TaskBound {
    /// Declares `(sampling_rate, threshold)` with the share `share`, computing `K`.
    ///
    /// # Privacy
    ///
    /// `K` is the largest count (at most [`MAX_BOUNDED_ROUNDS`]) whose `K`-fold composition of
    /// the round's dominating loss pair ([`SampleThresholdParams::loss_pair`], rounded up) has
    /// `δ(ε₁) ≤ δ₁`: `K` adaptively chosen rounds, each dominated by that pair, are then
    /// `(ε₁, δ₁)`-DP (Zhu, Dong and Wang 2022, Theorem 10), and so are fewer (padded with rounds
    /// that release nothing).
    ///
    /// # Errors
    ///
    /// Why the pair is refused: parameters out of range, or not even one round fits the share.
    pub(crate) fn declare(
        sampling_rate: f64,
        threshold: u64,
        share: (f64, f64),
    ) -> Result<Self, String> {
        let params = SampleThresholdParams::new(sampling_rate, threshold)
            .map_err(|e| format!("task bound: {e}"))?;
        let pair = params
            .loss_pair(TIGHT_STEP)
            .map_err(|e| format!("task bound: {e}"))?;
        let fits = |k: u64| {
            pair.self_compose(k)
                .and_then(|composed| composed.delta(share.0))
                .is_ok_and(|delta| delta <= share.1)
        };
        if !fits(1) {
            return Err(format!(
                "task bound (p_s = {sampling_rate}, τ = {threshold}): one round at it is not \
                 within its share (ε = {}, δ = {:e}); lower --task-bound-rate, raise \
                 --task-bound-threshold or give the pair a larger share",
                share.0, share.1
            ));
        }
        // The composed δ grows with the rounds: double, then bisect.
        let (mut low, mut high) = (1, 2);
        while high <= MAX_BOUNDED_ROUNDS && fits(high) {
            low = high;
            high *= 2;
        }
        let mut high = high.min(MAX_BOUNDED_ROUNDS + 1);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if fits(middle) {
                low = middle;
            } else {
                high = middle;
            }
        }
        Ok(Self {
            sampling_rate,
            threshold,
            share,
            rounds: low,
        })
    }

    /// Whether rounds at `rounds`' parameters are dominated by the declared pair: `p_s ≤ P` and
    /// `τ ≥ T` (such a round is a post-processing of one at the pair: thin the sampled count to
    /// `p_s/P`, then raise the threshold).
    pub(crate) fn covers(&self, rounds: &LossRounds) -> bool {
        rounds.sampling_rate <= self.sampling_rate && rounds.threshold >= self.threshold
    }
}

/// One task's charge to its population.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Charge {
    /// The task's own guarantee's `ε`.
    pub(crate) epsilon: f64,
    /// The task's own guarantee's `δ`.
    pub(crate) delta: f64,
    /// Its S&T rounds, when they are under add/remove neighbours.
    pub(crate) rounds: Option<LossRounds>,
}

/// What a population's charges take from its budget, by the ledger's rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spending {
    /// The rounds the bounded charges take.
    pub(crate) bounded_rounds: u64,
    /// The filtered charges' `(ε, δ)` by basic composition, rounded up.
    pub(crate) filtered: (f64, f64),
}

/// A population's budget and declared pair: the ledger's rule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ledger {
    /// The whole budget `(ε, δ)`.
    pub(crate) budget: (f64, f64),
    /// The declared pair, if any.
    pub(crate) bound: Option<TaskBound>,
}

impl Ledger {
    /// The rounds `charge` takes from the declared pair, if it is bounded by it.
    fn bounded_rounds(&self, charge: &Charge) -> Option<u64> {
        let bound = self.bound.as_ref()?;
        let rounds = charge.rounds.as_ref()?;
        bound.covers(rounds).then_some(rounds.rounds)
    }

    /// The filter's budget: the whole budget less the declared pair's share, each difference
    /// rounded down (so that the two parts add up to at most the budget).
    pub(crate) fn filter_budget(&self) -> (f64, f64) {
        match &self.bound {
            None => self.budget,
            Some(bound) => (
                less_rounded_down(self.budget.0, bound.share.0).max(0.0),
                less_rounded_down(self.budget.1, bound.share.1).max(0.0),
            ),
        }
    }

    /// What `charges` take.
    pub(crate) fn spending<'a>(&self, charges: impl IntoIterator<Item = &'a Charge>) -> Spending {
        let mut bounded_rounds = 0u64;
        let mut filtered = Vec::new();
        for charge in charges {
            match self.bounded_rounds(charge) {
                Some(rounds) => bounded_rounds = bounded_rounds.saturating_add(rounds),
                None => filtered.push((charge.epsilon, charge.delta)),
            }
        }
        Spending {
            bounded_rounds,
            filtered: BasicFilter::spent(&filtered),
        }
    }

    /// What the filter has left after `spending`, rounded down: a task of at most that is
    /// admitted (negative where a database filled by an earlier rule is over it).
    pub(crate) fn remaining(&self, spending: &Spending) -> (f64, f64) {
        self.filter().remaining(spending.filtered)
    }

    /// The filter of the charges outside the declared pair, over [`Self::filter_budget`].
    fn filter(&self) -> BasicFilter {
        BasicFilter {
            budget: self.filter_budget(),
        }
    }

    /// Whether `charge` may join `charges`; `Err` says why not.
    ///
    /// # Privacy
    ///
    /// A bounded charge is admitted while the bounded rounds, its own included, are at most
    /// `K`; any other while the filtered charges' rounded-up sums, its own included, fit the
    /// filter's budget. Which part a charge joins depends on its own parameters alone. See
    /// `docs/privacy/composition.md`, "The ledger", for why the population is then within its
    /// budget against an adaptive analyst.
    pub(crate) fn admit(&self, charges: &[Charge], charge: &Charge) -> Result<(), String> {
        let before = self.spending(charges);
        let after = self.spending(charges.iter().chain([charge]));
        if let (Some(bound), Some(rounds)) = (&self.bound, self.bounded_rounds(charge)) {
            if after.bounded_rounds <= bound.rounds {
                return Ok(());
            }
            return Err(format!(
                "the task runs {rounds} round(s) within the declared pair (p_s ≤ {}, τ ≥ {}), \
                 whose share (ε = {}, δ = {}) covers {} round(s) and {} are taken",
                bound.sampling_rate,
                bound.threshold,
                number(bound.share.0, Rounding::Down),
                delta_number(bound.share.1, Rounding::Down),
                bound.rounds,
                before.bounded_rounds
            ));
        }
        let (epsilon, delta) = self.filter_budget();
        if self.filter().fits(after.filtered) {
            return Ok(());
        }
        let left = self.remaining(&before);
        let within = match &self.bound {
            None => String::new(),
            Some(bound) => format!(
                " (the budget less the declared pair's share; the task is outside the pair \
                 p_s ≤ {}, τ ≥ {})",
                bound.sampling_rate, bound.threshold
            ),
        };
        Err(format!(
            "the task needs (ε = {}, δ = {}); tasks charged their own guarantee by basic \
             composition have (ε = {}, δ = {}) left of (ε = {}, δ = {}){within}",
            privacy_number(charge.epsilon),
            delta_number(charge.delta, Rounding::Up),
            number(left.0, Rounding::Down),
            delta_number(left.1, Rounding::Down),
            number(epsilon, Rounding::Down),
            delta_number(delta, Rounding::Down)
        ))
    }
}

#[cfg(test)]
mod tests;
