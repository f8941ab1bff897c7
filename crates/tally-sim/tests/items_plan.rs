//! The planner over clients of several items: its predicted number of released items against
//! the mean of the real release path over many seeds.

use tally_accounting::Neighbours;
use tally_sim::KeyedPopulation;
use tally_sim::items_plan::{HeldItems, ItemsTarget, plan_items};
use tally_sim::items_release::{ItemChoice, ItemsRelease};

/// Releases per checked setting, and the seed of the first.
const RUNS: u64 = 1000;
const FIRST_SEED: u64 = 31_000;

/// How many standard errors a mean of [`RUNS`] releases may lie from the prediction:
/// two-sided `α = 1.2e-7` per check (normal approximation of the mean), below `1e-6` over the
/// test's 8 checks.
const Z: f64 = 5.3;

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
    let mut checked = 0;
    for setting in plan
        .settings
        .iter()
        .filter(|s| CHECKED.contains(&s.max_items))
    {
        let predicted = setting.outcome.as_ref().expect("calibrated");
        let released: Vec<f64> = (0..RUNS)
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
                document.released_items as f64
            })
            .collect();
        let runs = RUNS as f64;
        let mean = released.iter().sum::<f64>() / runs;
        let variance = released.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (runs - 1.0);
        let standard_error = (variance / runs).sqrt();
        let expected = predicted.expected_released;
        // Every checked setting releases some items and misses some, so the check has teeth.
        assert!(
            (1.0..39.0).contains(&expected),
            "{} at k = {}: {expected}",
            setting.name(),
            setting.max_items
        );
        assert!(
            (mean - expected).abs() <= Z * standard_error,
            "{} at k = {}: predicted {expected}, mean of {RUNS} releases {mean} ± {standard_error}",
            setting.name(),
            setting.max_items
        );
        checked += 1;
    }
    assert_eq!(checked, 8);
}
