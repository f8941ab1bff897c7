use serde::Deserialize;
use tally_accounting::pld::PrivacyLossDistribution;

use super::*;

/// The vectors of `tools/reference/ledger_filter.py`.
const VECTORS: &str =
    include_str!("../../../tally-accounting/tests/test_vectors/ledger_filter/ledger_filter.json");

#[derive(Deserialize)]
struct Vectors {
    counterexample: Vec<Counterexample>,
    declared: Declared,
}

#[derive(Deserialize)]
struct Counterexample {
    d: f64,
    b: f64,
    fixed_rr_delta: f64,
    fixed_delta_pair_delta: f64,
    adaptive_delta: f64,
    filtered_delta: f64,
}

#[derive(Deserialize)]
struct Declared {
    sampling_rate: f64,
    threshold: u64,
    budget_epsilon: f64,
    budget_delta: f64,
    tasks: u64,
}

fn vectors() -> Vectors {
    serde_json::from_str(VECTORS).unwrap()
}

/// A mechanism on one bit: each outcome's probability when the bit is 1 and when it is 0.
type Law = Vec<(f64, f64)>;

/// Randomized response `RR(ε)`.
fn randomized_response(epsilon: f64) -> Law {
    let keep = epsilon.exp() / (1.0 + epsilon.exp());
    vec![(keep, 1.0 - keep), (1.0 - keep, keep)]
}

/// The `(0, d)` pair: with probability `d` an outcome that names the bit, else a fair coin.
fn naming(d: f64) -> Law {
    let half = (1.0 - d) / 2.0;
    vec![(d, 0.0), (0.0, d), (half, half), (half, half)]
}

/// Task 1, then the task `second` chooses from its answer (`None`: no second task).
fn interaction(first: &Law, second: impl Fn(usize) -> Option<Law>) -> Law {
    let mut joint = Vec::new();
    for (answer, &(p, q)) in first.iter().enumerate() {
        match second(answer) {
            None => joint.push((p, q)),
            Some(law) => joint.extend(law.iter().map(|&(p2, q2)| (p * p2, q * q2))),
        }
    }
    joint
}

/// The exact `δ(ε)` of `law`, the larger of both orders.
fn delta_at(law: &Law, epsilon: f64) -> f64 {
    let factor = epsilon.exp();
    let forward: f64 = law.iter().map(|&(p, q)| (p - factor * q).max(0.0)).sum();
    let backward: f64 = law.iter().map(|&(p, q)| (q - factor * p).max(0.0)).sum();
    forward.max(backward)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
}

/// The two-task counterexample against tight composition of the realized sequence: `RR(1)`,
/// then `RR(b)` or `(0, d)` chosen from its answer, within a `(1, 0.1)` budget.
#[test]
fn the_adaptive_counterexample_stays_within_the_budget() {
    const BUDGET: (f64, f64) = (1.0, 0.1);
    let ledger = Ledger {
        budget: BUDGET,
        bound: None,
    };
    for example in vectors().counterexample {
        let (b, d) = (example.b, example.d);
        let first = randomized_response(1.0);
        let adaptive = interaction(&first, |answer| {
            Some(if answer == 1 {
                randomized_response(b)
            } else {
                naming(d)
            })
        });
        let fixed_rr = interaction(&first, |_| Some(randomized_response(b)));
        let fixed_naming = interaction(&first, |_| Some(naming(d)));
        assert!(close(delta_at(&fixed_rr, 1.0), example.fixed_rr_delta));
        assert!(close(
            delta_at(&fixed_naming, 1.0),
            example.fixed_delta_pair_delta
        ));
        assert!(close(delta_at(&adaptive, 1.0), example.adaptive_delta));
        // Each fixed sequence is within the budget, the adaptive interaction is not.
        assert!(example.fixed_rr_delta <= BUDGET.1 && example.fixed_delta_pair_delta <= BUDGET.1);
        assert!(
            example.adaptive_delta > BUDGET.1 + 0.02,
            "{}",
            example.adaptive_delta
        );

        // The ledger: task 1 is (1, 0); RR(b) is refused beside it, (0, d) admitted.
        let task_one = Charge {
            epsilon: 1.0,
            delta: 0.0,
            rounds: None,
        };
        ledger.admit(&[], &task_one).unwrap();
        let refused = ledger.admit(
            &[task_one],
            &Charge {
                epsilon: b,
                delta: 0.0,
                rounds: None,
            },
        );
        assert!(refused.is_err());
        ledger
            .admit(
                &[task_one],
                &Charge {
                    epsilon: 0.0,
                    delta: d,
                    rounds: None,
                },
            )
            .unwrap();
        // What the ledger lets the analyst run is within the budget.
        let filtered = interaction(&first, |answer| (answer != 1).then(|| naming(d)));
        let filtered_delta = delta_at(&filtered, 1.0);
        assert!(close(filtered_delta, example.filtered_delta));
        assert!(filtered_delta <= BUDGET.1, "{filtered_delta}");
    }
    // The old rule (tight composition of the realized sequence, by tally's own rounded-up PLD
    // accountant) admits both branches of the instance with a margin, d = 0.099: its
    // interaction is over the budget.
    let example = &vectors().counterexample[1];
    let step = 1e-4;
    let first = PrivacyLossDistribution::pure(1.0, step).unwrap();
    for second in [PrivacyLossDistribution::pure(example.b, step).unwrap(), {
        let (p, q): (Vec<f64>, Vec<f64>) = naming(example.d).into_iter().unzip();
        // Swapping the bit's values relabels the outcomes: one direction is enough.
        PrivacyLossDistribution::from_pair(&p, &q, step).unwrap()
    }] {
        let realized = first.compose(&second).unwrap().delta(BUDGET.0).unwrap();
        assert!(realized <= BUDGET.1, "{realized}");
    }
    assert!(example.adaptive_delta > BUDGET.1);
}

/// The acceptance: a `(2, 1e-5)` budget with the declared pair `(0.36, 18)` admits exactly as
/// many one-round tasks at the pair as the reference's `K`-fold composition, tasks outside the
/// pair get the filter, and tasks within it stop at `K`.
#[test]
fn a_declared_pair_admits_as_many_rounds_as_the_reference() {
    let declared = vectors().declared;
    let budget = (declared.budget_epsilon, declared.budget_delta);
    let bound = TaskBound::declare(declared.sampling_rate, declared.threshold, budget).unwrap();
    assert_eq!(bound.rounds, declared.tasks);
    let ledger = Ledger {
        budget,
        bound: Some(bound),
    };
    let round = |sampling_rate: f64, threshold: u64| Charge {
        epsilon: 4.0,
        delta: 1e-8,
        rounds: Some(LossRounds {
            sampling_rate,
            threshold,
            rounds: 1,
        }),
    };
    let mut admitted = Vec::new();
    while ledger
        .admit(
            &admitted,
            &round(declared.sampling_rate, declared.threshold),
        )
        .is_ok()
    {
        admitted.push(round(declared.sampling_rate, declared.threshold));
        assert!(admitted.len() as u64 <= declared.tasks);
    }
    assert_eq!(admitted.len() as u64, declared.tasks);
    let spending = ledger.spending(&admitted);
    assert_eq!(spending.bounded_rounds, declared.tasks);
    // A round under the pair (lower rate, higher threshold) is bounded too: no slot left.
    assert!(ledger.admit(&admitted, &round(0.2, 30)).is_err());
    // Outside the pair: the filter, whose share is empty when the pair takes the whole budget.
    let outside = [
        round(0.5, 18),
        round(0.36, 17),
        Charge {
            epsilon: 0.1,
            delta: 1e-9,
            rounds: None,
        },
    ];
    for charge in &outside {
        let refused = ledger.admit(&[], charge).unwrap_err();
        assert!(refused.contains("outside the pair"), "{refused}");
    }
    assert_eq!(ledger.remaining(&ledger.spending(&[])), (0.0, 0.0));

    // With a share of (1.5, 5e-6) the pair covers fewer rounds and the filter has the rest.
    let shared = Ledger {
        budget,
        bound: Some(
            TaskBound::declare(declared.sampling_rate, declared.threshold, (1.5, 5e-6)).unwrap(),
        ),
    };
    assert!(shared.bound.unwrap().rounds < declared.tasks);
    assert_eq!(shared.filter_budget(), (0.5, 5e-6));
    let filtered = Charge {
        epsilon: 0.25,
        delta: 1e-6,
        rounds: None,
    };
    shared.admit(&[], &filtered).unwrap();
    shared.admit(&[filtered], &filtered).unwrap();
    assert!(shared.admit(&[filtered, filtered], &filtered).is_err());
    let left = shared.remaining(&shared.spending(&[filtered, filtered]));
    assert!(left.0 == 0.0 && (left.1 - 3e-6).abs() < 1e-18, "{left:?}");
}

/// Rounds at a lower rate or a higher threshold are a post-processing of rounds at the pair
/// (`docs/privacy/composition.md`, "The ledger"): their computed curves lie under the pair's.
#[test]
fn bounded_rounds_lie_under_the_declared_pair() {
    let declared = SampleThresholdParams::new(0.36, 18)
        .unwrap()
        .loss_pair(TIGHT_STEP)
        .unwrap();
    for (rate, threshold) in [(0.36, 18), (0.3, 18), (0.36, 22), (0.1, 19), (0.35, 40)] {
        let pair = SampleThresholdParams::new(rate, threshold)
            .unwrap()
            .loss_pair(TIGHT_STEP)
            .unwrap();
        for step in 0..=40 {
            let epsilon = f64::from(step) * 0.25;
            let (under, over) = (
                pair.delta(epsilon).unwrap(),
                declared.delta(epsilon).unwrap(),
            );
            assert!(
                under <= over * (1.0 + 1e-6),
                "({rate}, {threshold}) at ε = {epsilon}: {under} > {over}"
            );
        }
    }
}

/// Without a declared pair every task is filtered, and `remaining` is the budget less their
/// rounded-up sums: never negative while the ledger admits, and exactly what it admits.
#[test]
fn remaining_is_what_the_ledger_enforces() {
    let ledger = Ledger {
        budget: (2.0, 1e-5),
        bound: None,
    };
    let task = Charge {
        epsilon: 0.6,
        delta: 2e-6,
        rounds: Some(LossRounds {
            sampling_rate: 0.1,
            threshold: 20,
            rounds: 5,
        }),
    };
    let mut charges = Vec::new();
    while ledger.admit(&charges, &task).is_ok() {
        charges.push(task);
        let left = ledger.remaining(&ledger.spending(&charges));
        assert!(left.0 >= 0.0 && left.1 >= 0.0, "{left:?}");
    }
    assert_eq!(charges.len(), 3);
    let left = ledger.remaining(&ledger.spending(&charges));
    assert!(left.0 < task.epsilon, "{left:?}");
    assert!(
        (left.0 - 0.2).abs() < 1e-9 && (left.1 - 4e-6).abs() < 1e-15,
        "{left:?}"
    );
    // A task of what is left fits.
    let rest = Charge {
        epsilon: left.0,
        delta: left.1,
        rounds: None,
    };
    ledger.admit(&charges, &rest).unwrap();
}
