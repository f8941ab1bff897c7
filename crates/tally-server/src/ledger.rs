//! What the tasks of one population spend together: the tight accountant over their S&T rounds,
//! with basic composition for what has no loss pair and as the floor.
//!
//! A task whose every round is a sample-and-threshold histogram under add/remove neighbours
//! carries its rounds' parameters ([`LossRounds`]); their dominating loss pairs
//! ([`SampleThresholdParams::loss_pair`]) compose across tasks as they compose across the
//! levels of one task (the tasks draw on the same devices, adaptively: the pairs' product
//! dominates that too, see `docs/privacy/composition.md`). Every other task (replace-one
//! neighbours, or a stored task older than this record) is charged its own `(ε, δ)`, added by
//! basic composition to the tight group's.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tally_accounting::composition::compose_basic;
use tally_accounting::pld::PrivacyLossPair;
use tally_accounting::sample_threshold::{SampleThresholdParams, TIGHT_STEP};
use tally_accounting::{Error, Neighbours};
use tally_core::histogram::SampleThreshold;

/// `rounds` S&T rounds at the same parameters under add/remove neighbours: what the tight
/// accountant composes for a task.
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
    /// `rounds` runs of `per_round`, if its rounds have a loss pair (add/remove neighbours).
    pub(crate) fn of(per_round: &SampleThreshold, rounds: usize) -> Option<Self> {
        (per_round.guarantee().neighbours == Neighbours::AddRemove).then(|| Self {
            sampling_rate: per_round.params().sampling_rate(),
            threshold: per_round.params().threshold(),
            rounds: rounds as u64,
        })
    }

    fn pair(&self) -> Result<PrivacyLossPair, Error> {
        SampleThresholdParams::new(self.sampling_rate, self.threshold)?
            .loss_pair(TIGHT_STEP)?
            .self_compose(self.rounds)
    }

    /// Whether `other` has the same parameters (bit for bit) and rounds.
    fn same(&self, other: &Self) -> bool {
        self.same_parameters(other) && self.rounds == other.rounds
    }

    /// Whether `other` has the same `(p_s, τ)`, bit for bit.
    fn same_parameters(&self, other: &Self) -> bool {
        self.sampling_rate.to_bits() == other.sampling_rate.to_bits()
            && self.threshold == other.threshold
    }
}

/// How many composed prefixes a [`CompositionMemo`] keeps.
const MEMO_ENTRIES: usize = 64;

/// The composed loss pairs of leading runs of S&T groups, kept across ledger queries.
///
/// A population's groups appear in the order of their first task, so a new task either joins
/// a group or starts one at the end. Composing the groups in that order and remembering every
/// prefix's pair lets a new group cost one composition instead of one per group before it. A
/// remembered prefix is the very value a fresh left-to-right composition computes (the same
/// operations in the same order), so the memo changes no answer, only how soon it is found.
/// The least recently used prefixes are forgotten past [`MEMO_ENTRIES`].
#[derive(Default)]
pub(crate) struct CompositionMemo {
    prefixes: Mutex<VecDeque<(Vec<LossRounds>, Arc<PrivacyLossPair>)>>,
}

impl CompositionMemo {
    /// The composition of `groups`' pairs from left to right; `None` if any pair or
    /// composition could not be computed (nothing is remembered for those).
    fn compose(&self, groups: &[LossRounds]) -> Option<Arc<PrivacyLossPair>> {
        let (mut done, mut composed) = self.longest_prefix(groups);
        while done < groups.len() {
            let next = groups[done].pair().ok()?;
            let pair = match composed {
                Some(acc) => acc.compose(&next).ok()?,
                None => next,
            };
            done += 1;
            let pair = Arc::new(pair);
            self.remember(groups[..done].to_vec(), Arc::clone(&pair));
            composed = Some(pair);
        }
        composed
    }

    /// The longest remembered prefix of `groups` (marked as just used): its length and pair.
    fn longest_prefix(&self, groups: &[LossRounds]) -> (usize, Option<Arc<PrivacyLossPair>>) {
        let mut prefixes = self.lock();
        let best = prefixes
            .iter()
            .enumerate()
            .filter(|(_, (key, _))| is_prefix(key, groups))
            .max_by_key(|(_, (key, _))| key.len())
            .map(|(index, _)| index);
        match best.and_then(|index| prefixes.remove(index)) {
            Some(entry) => {
                let found = (entry.0.len(), Some(Arc::clone(&entry.1)));
                prefixes.push_back(entry);
                found
            }
            None => (0, None),
        }
    }

    fn remember(&self, key: Vec<LossRounds>, pair: Arc<PrivacyLossPair>) {
        let mut prefixes = self.lock();
        if prefixes
            .iter()
            .any(|(known, _)| known.len() == key.len() && is_prefix(known, &key))
        {
            return;
        }
        if prefixes.len() == MEMO_ENTRIES {
            prefixes.pop_front();
        }
        prefixes.push_back((key, pair));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Vec<LossRounds>, Arc<PrivacyLossPair>)>> {
        // A panic while holding the lock leaves only complete entries behind.
        self.prefixes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `key` is a leading run of `groups`.
fn is_prefix(key: &[LossRounds], groups: &[LossRounds]) -> bool {
    key.len() <= groups.len() && key.iter().zip(groups).all(|(a, b)| a.same(b))
}

/// The rounds of `rounds` with the same `(p_s, τ)` counted together, in order of first
/// appearance: a population's tasks share a few parameter sets, and one self-composition by
/// squaring per set costs `O(log rounds)` convolutions where composing every task's pair in
/// turn cost one per task, each over a support that grows with the tasks before it.
fn grouped(rounds: impl Iterator<Item = LossRounds>) -> Vec<LossRounds> {
    let mut groups: Vec<LossRounds> = Vec::new();
    for r in rounds {
        match groups.iter_mut().find(|g| g.same_parameters(&r)) {
            Some(group) => group.rounds += r.rounds,
            None => groups.push(r),
        }
    }
    groups
}

/// One task's charge to its population.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Charge {
    /// The task's own guarantee's `ε`.
    pub(crate) epsilon: f64,
    /// The task's own guarantee's `δ`.
    pub(crate) delta: f64,
    /// Its S&T rounds, when the tight accountant can compose them.
    pub(crate) rounds: Option<LossRounds>,
}

/// The joint guarantee of a population's charges.
pub(crate) struct Total {
    /// Every charge's `(ε, δ)` by basic composition, rounded up.
    pub(crate) basic: (f64, f64),
    /// The composed loss pair of the charges with rounds, if any (and if it could be
    /// computed; if not, those charges count in `fallback`).
    tight: Option<Arc<PrivacyLossPair>>,
    /// The basic sum of the charges outside `tight`.
    fallback: (f64, f64),
}

impl Total {
    /// Composes `charges`, reusing what `memo` remembers of earlier compositions.
    ///
    /// # Privacy
    ///
    /// Both the basic sum and the tight composition (the tight group's `δ(ε')` plus the basic
    /// sum of the rest, at `ε' = ε − ε_rest`) are upper bounds on the joint `δ` at `ε`, so
    /// every query below takes the smaller of the two.
    pub(crate) fn of(charges: &[Charge], memo: &CompositionMemo) -> Self {
        let all: Vec<(f64, f64)> = charges.iter().map(|c| (c.epsilon, c.delta)).collect();
        let basic = compose_basic(&all).unwrap_or((f64::INFINITY, 1.0));
        let composed = memo.compose(&grouped(charges.iter().filter_map(|c| c.rounds)));
        let rest: Vec<(f64, f64)> = charges
            .iter()
            .filter(|c| composed.is_none() || c.rounds.is_none())
            .map(|c| (c.epsilon, c.delta))
            .collect();
        Self {
            basic,
            tight: composed,
            fallback: compose_basic(&rest).unwrap_or((f64::INFINITY, 1.0)),
        }
    }

    /// An upper bound on the joint `δ` at `epsilon` (1 where nothing bounds it).
    pub(crate) fn delta_at(&self, epsilon: f64) -> f64 {
        let basic = if self.basic.0 <= epsilon {
            self.basic.1
        } else {
            1.0
        };
        basic.min(self.tight_delta_at(epsilon).unwrap_or(1.0))
    }

    /// The smallest `ε` at which the charges are jointly `(ε, delta)`-DP, rounded up; `None`
    /// where nothing bounds it.
    pub(crate) fn epsilon_at(&self, delta: f64) -> Option<f64> {
        let basic = (self.basic.1 <= delta).then_some(self.basic.0);
        match (basic, self.tight_epsilon_at(delta)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn tight_delta_at(&self, epsilon: f64) -> Option<f64> {
        let pair = self.tight.as_ref()?;
        if self.fallback.0 > epsilon {
            return None;
        }
        // ε − ε_rest rounded down, so that it and ε_rest add up to at most ε.
        let mut left = epsilon - self.fallback.0;
        if left + self.fallback.0 > epsilon {
            left = left.next_down();
        }
        let delta = pair.delta(left.max(0.0)).ok()?;
        compose_basic(&[(0.0, delta), (0.0, self.fallback.1)])
            .ok()
            .map(|(_, d)| d)
    }

    fn tight_epsilon_at(&self, delta: f64) -> Option<f64> {
        let pair = self.tight.as_ref()?;
        if self.fallback.1 >= delta {
            return None;
        }
        // δ − δ_rest rounded down, so that it and δ_rest add up to at most δ.
        let mut left = delta - self.fallback.1;
        if left + self.fallback.1 > delta {
            left = left.next_down();
        }
        let epsilon = pair.epsilon(left).ok()?;
        compose_basic(&[(epsilon, 0.0), (self.fallback.0, 0.0)])
            .ok()
            .map(|(e, _)| e)
    }

    /// Whether the charges fit a budget `(epsilon, delta)`.
    pub(crate) fn fits(&self, epsilon: f64, delta: f64) -> bool {
        self.delta_at(epsilon) <= delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEVELS: LossRounds = LossRounds {
        sampling_rate: 0.1,
        threshold: 20,
        rounds: 5,
    };

    /// A task of [`LEVELS`] at its own tight guarantee at `δ = 1e-10`, as a task composing
    /// its levels tightly states it.
    fn charge(rounds: Option<LossRounds>) -> Charge {
        Charge {
            epsilon: LEVELS.pair().unwrap().epsilon(1e-10).unwrap(),
            delta: 1e-10,
            rounds,
        }
    }

    #[test]
    fn tight_totals_never_exceed_basic_and_fall_below_it_for_s_and_t() {
        for tasks in 1..=4 {
            let tight = Total::of(
                &vec![charge(Some(LEVELS)); tasks],
                &CompositionMemo::default(),
            );
            let plain = Total::of(&vec![charge(None); tasks], &CompositionMemo::default());
            let (sum_epsilon, sum_delta) = plain.basic;
            assert_eq!(tight.basic, plain.basic);
            assert_eq!(plain.epsilon_at(sum_delta), Some(sum_epsilon));
            let composed = tight.epsilon_at(sum_delta).unwrap();
            assert!(composed <= sum_epsilon, "{tasks} tasks: {composed}");
            if tasks > 1 {
                assert!(composed < 0.75 * sum_epsilon, "{tasks} tasks: {composed}");
            }
            assert!(tight.delta_at(sum_epsilon) <= sum_delta);
        }
    }

    #[test]
    fn tasks_at_the_same_parameters_compose_as_their_rounds_together() {
        let other = LossRounds {
            sampling_rate: 0.2,
            threshold: 30,
            rounds: 2,
        };
        let groups = grouped([LEVELS, other, LEVELS, other, LEVELS].into_iter());
        assert_eq!(
            groups,
            [
                LossRounds {
                    rounds: 15,
                    ..LEVELS
                },
                LossRounds { rounds: 4, ..other },
            ]
        );
        // The same total as composing each task's pair in turn, up to the discretisation.
        let tasks = [
            Some(LEVELS),
            Some(other),
            Some(LEVELS),
            Some(other),
            Some(LEVELS),
        ];
        let one_by_one = tasks
            .iter()
            .map(|r| r.unwrap().pair().unwrap())
            .reduce(|a, b| a.compose(&b).unwrap())
            .unwrap()
            .epsilon(1e-8)
            .unwrap();
        let total = Total::of(&tasks.map(charge), &CompositionMemo::default())
            .tight_epsilon_at(1e-8)
            .unwrap();
        assert!(
            (total - one_by_one).abs() <= 1e-3 * one_by_one,
            "{total} vs {one_by_one}"
        );
    }

    #[test]
    fn charges_without_rounds_add_basically_to_the_tight_group() {
        let group = Total::of(
            &[charge(Some(LEVELS)), charge(Some(LEVELS))],
            &CompositionMemo::default(),
        );
        let mixed = Total::of(
            &[
                charge(Some(LEVELS)),
                charge(Some(LEVELS)),
                Charge {
                    epsilon: 0.25,
                    delta: 1e-9,
                    rounds: None,
                },
            ],
            &CompositionMemo::default(),
        );
        let group_epsilon = group.epsilon_at(1e-8).unwrap();
        let mixed_epsilon = mixed.epsilon_at(1e-8 + 1e-9).unwrap();
        assert!(mixed_epsilon >= group_epsilon + 0.25, "{mixed_epsilon}");
        assert!(
            mixed_epsilon <= group_epsilon + 0.25 + 1e-9,
            "{mixed_epsilon}"
        );
        assert!(mixed.delta_at(group_epsilon + 0.25) <= 1e-8 + 1e-9);
        assert!(mixed.fits(10.0, 1e-6));
        assert!(!mixed.fits(0.2, 1e-6));
    }

    #[test]
    fn remembered_prefixes_give_the_fresh_composition_bit_for_bit() {
        let memo = CompositionMemo::default();
        let task = |rate: f64, threshold: u64| Charge {
            rounds: Some(LossRounds {
                sampling_rate: rate,
                threshold,
                rounds: 3,
            }),
            ..charge(None)
        };
        let mut charges = Vec::new();
        // Each task a new group, then one that joins the first group, then a new one again.
        let admitted = [
            task(0.1, 20),
            task(0.2, 30),
            task(0.15, 25),
            task(0.1, 20),
            task(0.25, 35),
        ];
        for (index, next) in admitted.into_iter().enumerate() {
            charges.push(next);
            let groups = grouped(charges.iter().filter_map(|c| c.rounds));
            let (reused, _) = memo.longest_prefix(&groups);
            let expected_reuse = match index {
                0 => 0,
                3 => 0, // the first group's rounds changed: nothing before it is reusable
                _ => groups.len() - 1,
            };
            assert_eq!(reused, expected_reuse, "task {index}");
            let remembered = Total::of(&charges, &memo);
            let fresh = Total::of(&charges, &CompositionMemo::default());
            assert_eq!(remembered.tight, fresh.tight, "task {index}");
            assert_eq!(
                remembered.epsilon_at(1e-8).map(f64::to_bits),
                fresh.epsilon_at(1e-8).map(f64::to_bits)
            );
        }
    }
}
