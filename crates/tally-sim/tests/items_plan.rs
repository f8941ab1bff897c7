//! The planner over clients of several items: its predicted number of released items and
//! error of their estimates against the means of the real release path over many seeds.

use tally_accounting::Neighbours;
use tally_sim::KeyedPopulation;
use tally_sim::items_plan::{HeldItems, ItemsTarget, PredictedError, plan_items};
use tally_sim::items_release::{ItemChoice, ItemsRelease};

/// Releases per checked setting, and the seed of the first.
const RUNS: u64 = 1000;
const FIRST_SEED: u64 = 31_000;

/// How many standard errors a mean of [`RUNS`] releases may lie from the prediction:
/// two-sided `α = 2.2e-8` per check (normal approximation of the mean), below `1e-6` over the
/// test's 20 checks.
const Z: f64 = 5.6;

/// The bounds `k` whose four settings are checked.
const CHECKED: [u32; 2] = [2, 8];

/// 1200 clients; item `j < 40` is held by clients `0 .. 25j + 25`, so client `c` holds the
/// items with `25j + 25 > c`: from 40 distinct items (clients 0 ..= 24) down to one (clients
/// 975 ..= 999), and clients from 1000 on hold an item of their own.
fn population() -> KeyedPopulation {
    let mut clients = Vec::new();
    let mut items = Vec::new();
    for c in 0..1200_u32 {
        let held: Vec<String> = (0..40)
            .filter(|j| 25 * j + 25 > c)
            .map(|j| format!("w{j}"))
            .collect();
        let held = if held.is_empty() {
            vec![format!("own{c}")]
        } else {
            held
        };
        for item in held {
            clients.push(format!("c{c}"));
            items.push(item);
        }
    }
    KeyedPopulation::from_rows(clients, items, "test rows").unwrap()
}

#[test]
fn predicted_released_items_match_the_mean_of_real_releases() {
    let population = population();
    let held = HeldItems::new(&population);
    assert_eq!((held.clients(), held.largest()), (1200, 40));
    let target = ItemsTarget {
        epsilon: 1.0,
        delta: 1e-8,
        neighbours: Neighbours::AddRemove,
    };
    let plan = plan_items(&held, target);
    let (mut checked, mut errors_checked) = (0, 0);
    for setting in plan
        .settings
        .iter()
        .filter(|s| CHECKED.contains(&s.max_items))
    {
        let predicted = setting.outcome.as_ref().expect("calibrated");
        // Per release: the number of released items, and the sums over them of the absolute
        // and relative errors of their estimates against the item's holders.
        let runs: Vec<[f64; 3]> = (0..RUNS)
            .map(|run| {
                let options = ItemsRelease {
                    max_items: setting.max_items,
                    choice: ItemChoice::Seeded,
                    seed: FIRST_SEED + run,
                    target_delta: target.delta,
                    shown_seed: None,
                };
                let document = predicted
                    .mechanism
                    .histogram(&population, &options)
                    .unwrap();
                let (mut absolute, mut relative) = (0.0, 0.0);
                for item in &document.items {
                    if let Some(estimate) = item.estimate {
                        let truth = holders(&item.item);
                        absolute += (estimate - truth).abs();
                        relative += (estimate - truth).abs() / truth;
                    }
                }
                [document.released_items as f64, absolute, relative]
            })
            .collect();
        let name = format!("{} at k = {}", setting.name(), setting.max_items);
        let expected = predicted.expected_released;
        // Every checked setting releases some items and misses some, so the check has teeth.
        assert!((1.0..39.0).contains(&expected), "{name}: {expected}");
        within(&name, "released items", column(&runs, 0), expected);
        match predicted.error {
            // E[Σ errors] = (the error per released item) · E[released items].
            PredictedError::Estimates { absolute, relative } => {
                within(
                    &name,
                    "absolute error",
                    column(&runs, 1),
                    absolute * expected,
                );
                within(
                    &name,
                    "relative error",
                    column(&runs, 2),
                    relative * expected,
                );
                errors_checked += 1;
            }
            PredictedError::NoCount => {
                assert_eq!(setting.name(), "truncated-geometric");
                assert!(
                    column(&runs, 1).iter().all(|&e| e == 0.0),
                    "{name}: a count"
                );
            }
            PredictedError::NothingReleased => panic!("{name}: nothing released"),
        }
        checked += 1;
    }
    assert_eq!(errors_checked, 6);
    assert_eq!(checked, 8);
}

/// The number of clients holding `item` in [`population`].
fn holders(item: &str) -> f64 {
    match item.strip_prefix('w') {
        Some(j) => 25.0 * j.parse::<f64>().unwrap() + 25.0,
        None => 1.0,
    }
}

fn column(runs: &[[f64; 3]], i: usize) -> Vec<f64> {
    runs.iter().map(|run| run[i]).collect()
}

/// Asserts that the mean of `values` lies within [`Z`] standard errors of `expected`.
fn within(setting: &str, what: &str, values: Vec<f64>, expected: f64) {
    let runs = values.len() as f64;
    let mean = values.iter().sum::<f64>() / runs;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (runs - 1.0);
    let standard_error = (variance / runs).sqrt();
    assert!(
        (mean - expected).abs() <= Z * standard_error,
        "{setting}: {what} predicted {expected}, mean of {} releases {mean} ± {standard_error}",
        values.len()
    );
}
