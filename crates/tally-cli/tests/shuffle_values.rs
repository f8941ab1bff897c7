//! `tally range` and `tally quantiles` with `--mechanism ghazi-*`: Ghazi et al.'s range-query
//! tree over a multi-message shuffle frequency oracle.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{failure, json, temp_file};

/// 20,000 evenly spread values `(i + 0.5)/20000`, written once per test process.
fn grid_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let text: String = (0..20_000)
            .map(|i| format!("{}\n", (f64::from(i) + 0.5) / 20_000.0))
            .collect();
        temp_file("shuffle-grid.txt", text.as_bytes())
    })
}

#[test]
fn ghazi_hadamard_range_counts_in_the_shuffle_model() {
    let out = json(&format!(
        "range --input {} --mechanism ghazi-hadamard --levels 4 --lo 0.25 --hi 0.75 \
         --epsilon 1 --delta 1e-8 --seed 2 --json",
        grid_file().display()
    ));
    assert_eq!(out["model"], "shuffle");
    let guarantee = &out["guarantee"];
    assert_eq!(guarantee["model"], "shuffle");
    assert_eq!(guarantee["neighbours"], "replace-one");
    assert!(guarantee["epsilon"].as_f64().unwrap() <= 1.0);
    assert!(guarantee["delta"].as_f64().unwrap() <= 1e-8);
    assert_eq!(out["parameters"]["buckets"], 16);
    assert_eq!(out["range"]["grid_lo"], 0.25);
    assert_eq!(out["range"]["grid_hi"], 0.75);
    // Each of the ≤ 2·4 node estimates has a null standard deviation of about
    // sqrt((ρ + k)·n·2^−τ) ≈ sqrt(19,500·20,000/16,384) ≈ 150; allow six of them in all.
    let estimate = out["estimate"].as_f64().unwrap();
    assert!(
        (estimate - 10_000.0).abs() < 6.0 * 150.0 * 8f64.sqrt(),
        "{estimate}"
    );
    assert!(out["parameters"]["messages_per_client"].as_f64().unwrap() > 1.0);
}

#[test]
fn ghazi_hadamard_quantiles() {
    let out = json(&format!(
        "quantiles --input {} --mechanism ghazi-hadamard --levels 4 --quantiles 0.5 \
         --epsilon 1 --delta 1e-8 --seed 3 --truth --json",
        grid_file().display()
    ));
    assert_eq!(out["guarantee"]["model"], "shuffle");
    let median = out["quantiles"][0]["value"].as_f64().unwrap();
    // The answer is a bucket boundary j/16 next to the true median 0.5.
    assert!((median - 0.5).abs() <= 1.0 / 16.0 + 1e-12, "{median}");
}

#[test]
fn count_min_refuses_too_few_users_and_says_what_would_do() {
    let err = failure(&format!(
        "range --input {} --mechanism ghazi-count-min --levels 4 --lo 0 --hi 0.5 --epsilon 1 \
         --delta 1e-8",
        grid_file().display()
    ));
    assert!(err.contains("users"), "{err}");
    assert!(err.contains("--failure-probability"), "{err}");
}

#[test]
fn options_of_other_mechanisms_are_refused() {
    let err = failure(&format!(
        "quantiles --input {} --mechanism ghazi-hadamard --consistent --epsilon 1 --delta 1e-8",
        grid_file().display()
    ));
    assert!(err.contains("--consistent"), "{err}");
    let err = failure(&format!(
        "range --input {} --mechanism ghazi-hadamard --failure-probability 0.1 --lo 0 --hi 1 \
         --epsilon 1 --delta 1e-8",
        grid_file().display()
    ));
    assert!(err.contains("ghazi-count-min only"), "{err}");
}
