//! The device's own privacy ledger: the guarantees of the tasks it has contributed to, and a
//! local budget it never goes past, whatever the server asks.
//!
//! A server's ledger protects a population from too many tasks; this one protects a device
//! from a server (or several servers, or several populations) asking it too often. Before a
//! device answers a round it looks up the round's task and its whole guarantee `(ε, δ)`; a
//! task it has answered before is already paid for (a task's guarantee covers all its rounds
//! and attempts), and a new task is taken only if the guarantees of every task recorded so far
//! plus this one, added by basic composition, stay within the budget.
//!
//! # Privacy
//!
//! The device's data takes part in a release only through tasks this ledger admitted, so its
//! total loss over everything it answered is at most the budget by basic composition, as
//! long as each task's guarantee is the one the server states for it (the server is the
//! trusted aggregator; the device cannot check the calibration itself). A task is charged
//! what its population's ledger charges ([`GuaranteeBody::charged`]): a shuffle-model task
//! its guarantee against the population's colluding fraction, which is what holds when that
//! many devices collude with the analyst (the guarantee itself assumes every other device
//! honest), and a task with no finite `ε` against them is refused. Guarantees are added as
//! stated, whatever their neighbour relation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tally_messages::GuaranteeBody;
use tally_protocol::shown::{Rounding, delta_number, number, privacy_number};

/// A device's privacy budget and what it has spent of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceLedger {
    /// The most `ε` the device ever spends, over every server and population.
    pub budget_epsilon: f64,
    /// The most `δ` the device ever spends.
    pub budget_delta: f64,
    /// The tasks it contributed to, by server base URL, then population, then task id.
    pub spent: BTreeMap<String, BTreeMap<String, BTreeMap<String, Spent>>>,
}

/// What one task costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spent {
    /// Its `ε`.
    pub epsilon: f64,
    /// Its `δ`.
    pub delta: f64,
}

/// Why a device refuses a round.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerRefusal {
    /// What the task charges does not fit in what is left of the budget. Its message shows
    /// the charge rounded up and what is left rounded down; the fields keep full precision.
    #[error(
        "task {task} needs (ε = {}, δ = {}) but this device has only (ε = {}, δ = {}) left of \
         its budget",
        privacy_number(*.epsilon),
        delta_number(*.delta, Rounding::Up),
        number(*.left_epsilon, Rounding::Down),
        delta_number(*.left_delta, Rounding::Down)
    )]
    OverBudget {
        /// The task.
        task: String,
        /// What it charges, `ε`.
        epsilon: f64,
        /// What it charges, `δ`.
        delta: f64,
        /// The `ε` left.
        left_epsilon: f64,
        /// The `δ` left.
        left_delta: f64,
    },
    /// The budget or what the task charges is not a finite non-negative number (such as a
    /// shuffle task that keeps no finite `ε` against its population's colluding devices).
    #[error(
        "task {task}: the budget and what the task charges (its guarantee, against its \
         population's colluding devices for a shuffle task) must be finite and non-negative"
    )]
    NotFinite {
        /// The task.
        task: String,
    },
}

impl DeviceLedger {
    /// An empty ledger with a budget of `(ε, δ)`.
    pub fn new(budget_epsilon: f64, budget_delta: f64) -> Self {
        Self {
            budget_epsilon,
            budget_delta,
            spent: BTreeMap::new(),
        }
    }

    /// The `(ε, δ)` spent over every server, population and task.
    pub fn total(&self) -> (f64, f64) {
        self.spent
            .values()
            .flat_map(BTreeMap::values)
            .flat_map(BTreeMap::values)
            .fold((0.0, 0.0), |(e, d), s| (e + s.epsilon, d + s.delta))
    }

    /// Admits a round of task `task` of `population` on `server` whose whole guarantee is
    /// `guarantee`: free if the task was admitted before, recorded at what it charges
    /// ([`GuaranteeBody::charged`]: against colluding devices, where the guarantee states
    /// them) if that fits in the budget, refused otherwise (and then nothing is recorded).
    ///
    /// # Errors
    ///
    /// [`LedgerRefusal`] when the task does not fit, or a number is not finite.
    pub fn admit(
        &mut self,
        server: &str,
        population: &str,
        task: &str,
        guarantee: &GuaranteeBody,
    ) -> Result<(), LedgerRefusal> {
        let known = self
            .spent
            .get(server)
            .and_then(|p| p.get(population))
            .is_some_and(|t| t.contains_key(task));
        if known {
            return Ok(());
        }
        let (charged_epsilon, charged_delta) = guarantee.charged();
        let finite = |x: f64| x.is_finite() && x >= 0.0;
        if ![
            self.budget_epsilon,
            self.budget_delta,
            charged_epsilon,
            charged_delta,
        ]
        .into_iter()
        .all(finite)
        {
            return Err(LedgerRefusal::NotFinite { task: task.into() });
        }
        let (epsilon, delta) = self.total();
        if epsilon + charged_epsilon > self.budget_epsilon
            || delta + charged_delta > self.budget_delta
        {
            return Err(LedgerRefusal::OverBudget {
                task: task.into(),
                epsilon: charged_epsilon,
                delta: charged_delta,
                left_epsilon: self.budget_epsilon - epsilon,
                left_delta: self.budget_delta - delta,
            });
        }
        self.spent
            .entry(server.into())
            .or_default()
            .entry(population.into())
            .or_default()
            .insert(
                task.into(),
                Spent {
                    epsilon: charged_epsilon,
                    delta: charged_delta,
                },
            );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarantee(epsilon: f64, delta: f64) -> GuaranteeBody {
        GuaranteeBody {
            epsilon,
            delta,
            neighbours: "add-remove".into(),
            model: "central".into(),
            method: "tight".into(),
            trust_model: tally_messages::TrustModel::SingleParty,
            collusion: None,
        }
    }

    #[test]
    fn a_device_never_spends_past_its_budget_whatever_the_servers_ask() {
        let mut ledger = DeviceLedger::new(2.0, 1e-6);
        let one = guarantee(1.0, 1e-7);
        ledger.admit("https://a", "p", "t1", &one).unwrap();
        // Every round of a task it answered is already paid for.
        for _ in 0..10 {
            ledger.admit("https://a", "p", "t1", &one).unwrap();
        }
        // Another population or server spends the same budget.
        ledger.admit("https://b", "q", "t1", &one).unwrap();
        assert_eq!(ledger.total(), (2.0, 2e-7));
        let refused = ledger.admit("https://a", "other", "t2", &guarantee(0.5, 0.0));
        assert!(
            matches!(refused, Err(LedgerRefusal::OverBudget { .. })),
            "{refused:?}"
        );
        // A refusal records nothing; δ is kept too.
        assert_eq!(ledger.total(), (2.0, 2e-7));
        let mut delta_only = DeviceLedger::new(100.0, 1e-6);
        delta_only
            .admit("s", "p", "t1", &guarantee(0.1, 6e-7))
            .unwrap();
        assert!(
            delta_only
                .admit("s", "p", "t2", &guarantee(0.1, 6e-7))
                .is_err()
        );
        assert!(
            delta_only
                .admit("s", "p", "t3", &guarantee(f64::NAN, 0.0))
                .is_err()
        );
    }

    #[test]
    fn a_ledger_reads_back_what_it_wrote() {
        let mut ledger = DeviceLedger::new(3.0, 1e-5);
        ledger
            .admit(
                "http://127.0.0.1:8080",
                "words",
                "t-1",
                &guarantee(1.0, 1e-8),
            )
            .unwrap();
        let text = serde_json::to_string(&ledger).unwrap();
        assert_eq!(serde_json::from_str::<DeviceLedger>(&text).unwrap(), ledger);
    }

    /// A shuffle task is charged what holds against its population's colluding devices, as
    /// the population's ledger charges it: two tasks of `ε = 1` that fit a budget of 2 under
    /// honest devices do not fit at `ε = 1.5` each against colluders, and a task with no
    /// finite `ε` against them is refused.
    #[test]
    fn a_shuffle_task_is_charged_its_guarantee_against_colluding_devices() {
        let shuffled = |epsilon: Option<f64>| GuaranteeBody {
            model: "shuffle".into(),
            collusion: Some(tally_messages::CollusionBody {
                colluding_fraction: 0.1,
                epsilon,
                delta: 2e-7,
                floor: Some(4.0),
            }),
            ..guarantee(1.0, 1e-7)
        };
        let mut ledger = DeviceLedger::new(2.0, 1e-6);
        ledger.admit("s", "p", "t1", &shuffled(Some(1.5))).unwrap();
        assert_eq!(ledger.total(), (1.5, 2e-7));
        let refused = ledger.admit("s", "p", "t2", &shuffled(Some(1.5)));
        let charged = match &refused {
            Err(LedgerRefusal::OverBudget { epsilon, .. }) => Some(epsilon.to_bits()),
            _ => None,
        };
        assert_eq!(charged, Some(1.5_f64.to_bits()), "{refused:?}");
        // For people: the charge rounded up, what is left rounded down.
        let mut thirds = DeviceLedger::new(1.0, 1e-6);
        let third = GuaranteeBody {
            collusion: Some(tally_messages::CollusionBody {
                epsilon: Some(1.0 / 3.0),
                ..shuffled(None).collusion.unwrap()
            }),
            ..shuffled(None)
        };
        for task in ["a", "b"] {
            thirds.admit("s", "p", task, &third).unwrap();
        }
        let message = thirds
            .admit("s", "p", "c", &shuffled(Some(0.7)))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(
                "(ε = 0.7, δ = 2.000e-7) but this device has only (ε = 0.3333, δ = 6.000e-7)"
            ),
            "{message}"
        );
        let unbounded = ledger
            .admit("s", "p", "t3", &shuffled(None))
            .unwrap_err()
            .to_string();
        assert!(unbounded.contains("colluding devices"), "{unbounded}");
        assert_eq!(ledger.total(), (1.5, 2e-7));
        // Without collusion stated, the guarantee itself.
        ledger.admit("s", "p", "t4", &guarantee(0.5, 1e-7)).unwrap();
        assert_eq!(ledger.total(), (2.0, 3e-7));
    }
}
