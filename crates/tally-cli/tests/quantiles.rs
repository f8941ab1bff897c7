//! `tally quantiles` and `tally range` end to end: the quantiles issue's acceptance command, the
//! output formats and the error exits.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{failure, json, tally, temp_file};
use serde_json::Value;

/// SplitMix64: a small portable generator for the test data.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 10^6 values drawn from Uniform(0, 1), written once per test process, with the values
/// sorted for the true quantiles.
fn uniform_file() -> &'static (PathBuf, Vec<f64>) {
    static FILE: OnceLock<(PathBuf, Vec<f64>)> = OnceLock::new();
    FILE.get_or_init(|| {
        let mut state = 2024;
        let values: Vec<f64> = (0..1_000_000)
            .map(|_| (splitmix64(&mut state) >> 11) as f64 * (-53f64).exp2())
            .collect();
        let text: String = values.iter().map(|v| format!("{v}\n")).collect();
        let path = temp_file("uniform.txt", text.as_bytes());
        let mut sorted = values;
        sorted.sort_by(f64::total_cmp);
        (path, sorted)
    })
}

/// The empirical `q`-quantile, the `⌈q·n⌉`-th smallest value.
fn true_quantile(sorted: &[f64], q: f64) -> f64 {
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn check_guarantee(out: &Value, epsilon: f64, delta: f64) {
    let guarantee = &out["guarantee"];
    assert!(
        guarantee["epsilon"].as_f64().unwrap() <= epsilon,
        "{guarantee}"
    );
    assert!(guarantee["delta"].as_f64().unwrap() <= delta, "{guarantee}");
    assert_eq!(guarantee["neighbours"], "add-remove");
    assert!(
        guarantee["method"].as_str().unwrap().contains("tight"),
        "{guarantee}"
    );
}

#[test]
fn acceptance_hierarchical_quantiles_within_0_02() {
    let (path, sorted) = uniform_file();
    let out = json(&format!(
        "quantiles --input {} --quantiles 0.1,0.5,0.9 --method hierarchical --branching 4 \
         --levels 8 --epsilon 1 --delta 1e-8 --seed 1 --json",
        path.display()
    ));
    check_guarantee(&out, 1.0, 1e-8);
    assert_eq!(out["mechanism"], "hierarchical histogram");
    assert_eq!(out["seed"], 1);
    assert_eq!(out["parameters"]["population"], 1_000_000);
    assert_eq!(out["parameters"]["levels"], 8);
    assert_eq!(out["parameters"]["branching"], 4);
    let quantiles = out["quantiles"].as_array().unwrap();
    assert_eq!(quantiles.len(), 3);
    for (entry, q) in quantiles.iter().zip([0.1, 0.5, 0.9]) {
        assert_eq!(entry["quantile"], q);
        let value = entry["value"].as_f64().unwrap();
        let error = (value - true_quantile(sorted, q)).abs();
        eprintln!("q = {q}: {value}, error {error:.5}");
        assert!(error < 0.02, "{entry}");
    }
}

#[test]
fn binary_search_composes_over_every_round() {
    let (path, sorted) = uniform_file();
    let out = json(&format!(
        "quantiles --input {} --quantiles 0.25,0.75 --method binary-search --levels 8 \
         --composition basic --epsilon 1 --delta 1e-8 --seed 2 --json",
        path.display()
    ));
    check_guarantee(&out, 1.0, 1e-8);
    assert_eq!(out["mechanism"], "binary search");
    assert_eq!(out["parameters"]["rounds"], 16);
    let per_round = out["parameters"]["per_round_guarantee"]["epsilon"]
        .as_f64()
        .unwrap();
    // Basic composition splits ε evenly over the rounds.
    assert!((per_round - 1.0 / 16.0).abs() < 1e-12);
    for entry in out["quantiles"].as_array().unwrap() {
        let q = entry["quantile"].as_f64().unwrap();
        let value = entry["value"].as_f64().unwrap();
        let interval = entry["interval"].as_array().unwrap();
        assert_eq!(interval[1].as_f64().unwrap().to_bits(), value.to_bits());
        assert!((value - true_quantile(sorted, q)).abs() < 0.02, "{entry}");
    }
}

#[test]
fn advanced_composition_and_consistency() {
    let (path, _) = uniform_file();
    let out = json(&format!(
        "quantiles --input {} --quantiles 0.5 --levels 6 --consistent --composition advanced \
         --epsilon 1 --delta 1e-8 --seed 3 --json",
        path.display()
    ));
    check_guarantee(&out, 1.0, 1e-8);
    assert_eq!(out["parameters"]["composition"], "advanced");
    assert_eq!(out["parameters"]["consistent"], true);
    let median = out["quantiles"][0]["value"].as_f64().unwrap();
    assert!((median - 0.5).abs() < 0.02, "{median}");
}

#[test]
fn range_counts_of_uniform_values() {
    let (path, sorted) = uniform_file();
    let out = json(&format!(
        "range --input {} --lo 0.25 --hi 0.75 --levels 8 --epsilon 1 --delta 1e-8 --seed 4 \
         --json",
        path.display()
    ));
    check_guarantee(&out, 1.0, 1e-8);
    let exact = sorted
        .iter()
        .filter(|&&v| (0.25..0.75).contains(&v))
        .count() as f64;
    let estimate = out["estimate"].as_f64().unwrap();
    assert!(
        (estimate - exact).abs() < 0.01 * 1e6,
        "{estimate} vs {exact}"
    );
    assert_eq!(out["range"]["grid_lo"], 0.25);
    assert_eq!(out["range"]["grid_hi"], 0.75);
    let fraction = out["fraction"].as_f64().unwrap();
    assert!((fraction - 0.5).abs() < 0.01, "{fraction}");
}

#[test]
fn rescaled_input_reports_its_own_units() {
    let text: String = (0..50_000)
        .map(|i| format!("{}\n", -50.0 + f64::from(i % 1000) / 10.0))
        .collect();
    let path = temp_file("celsius.txt", text.as_bytes());
    let out = json(&format!(
        "quantiles --input {} --min -50 --max 50 --quantiles 0.5 --levels 5 --epsilon 1 \
         --delta 1e-6 --seed 5 --json",
        path.display()
    ));
    let median = out["quantiles"][0]["value"].as_f64().unwrap();
    assert!(median.abs() < 2.0, "{median}");
    let out = json(&format!(
        "range --input {} --min -50 --max 50 --lo -50 --hi 0 --levels 5 --epsilon 1 \
         --delta 1e-6 --seed 5 --json",
        path.display()
    ));
    let fraction = out["fraction"].as_f64().unwrap();
    assert!((fraction - 0.5).abs() < 0.02, "{fraction}");
}

#[test]
fn human_output_is_a_table() {
    let text: String = (0..20_000)
        .map(|i| format!("{}\n", f64::from(i) / 20_000.0))
        .collect();
    let path = temp_file("grid.txt", text.as_bytes());
    let output = tally(&format!(
        "quantiles --input {} --quantiles 0.1,0.9 --levels 4 --epsilon 1 --delta 1e-6 --seed 6",
        path.display()
    ));
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("quantiles (hierarchical histogram)"),
        "{stdout}"
    );
    assert!(stdout.contains("add-remove neighbours"), "{stdout}");
    assert!(stdout.contains("quantile"), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("0."))
            .count(),
        2
    );
}

#[test]
fn bad_inputs_give_one_line_errors_naming_the_line() {
    let flags = "--quantiles 0.5 --epsilon 1 --delta 1e-8";
    let out_of_range = temp_file("range.txt", b"0.5\n0.25\n1.5\n");
    let err = failure(&format!(
        "quantiles --input {} {flags}",
        out_of_range.display()
    ));
    assert!(
        err.contains(&format!(
            "{}:3: value 1.5 is outside [0, 1]",
            out_of_range.display()
        )),
        "{err}"
    );
    assert!(err.contains("--min and --max"), "{err}");
    let not_a_number = temp_file("nan.txt", b"0.5\n\nhalf\n");
    let err = failure(&format!(
        "quantiles --input {} {flags}",
        not_a_number.display()
    ));
    assert!(
        err.contains(&format!(
            "{}:3: expected a number, found \"half\"",
            not_a_number.display()
        )),
        "{err}"
    );
    let nan = temp_file("nan2.txt", b"NaN\n");
    let err = failure(&format!(
        "range --input {} --lo 0 --hi 1 --epsilon 1 --delta 1e-8",
        nan.display()
    ));
    assert!(
        err.contains(&format!("{}:1: expected a finite number", nan.display())),
        "{err}"
    );
    let err = failure(&format!(
        "quantiles --input /nonexistent/values.txt {flags}"
    ));
    assert!(
        err.contains("cannot open /nonexistent/values.txt: file not found"),
        "{err}"
    );
    // Outside the rescaling range.
    let err = failure(&format!(
        "quantiles --input {} --min 0 --max 1.2 {flags}",
        out_of_range.display()
    ));
    assert!(err.contains(":3: value 1.5 is outside [0, 1.2]"), "{err}");
}

#[test]
fn bad_options_give_one_line_errors() {
    let (path, _) = uniform_file();
    let input = format!("--input {}", path.display());
    let err = failure(&format!(
        "quantiles {input} --quantiles 0.5,1.5 --epsilon 1 --delta 1e-8"
    ));
    assert!(err.contains("invalid quantile 1.5"), "{err}");
    let err = failure(&format!(
        "quantiles {input} --quantiles 0.5 --levels 17 --epsilon 1 --delta 1e-8"
    ));
    assert!(err.contains("levels"), "{err}");
    let err = failure(&format!(
        "range {input} --lo 0.6 --hi 0.5 --epsilon 1 --delta 1e-8"
    ));
    assert!(err.contains("--lo 0.6 is above --hi 0.5"), "{err}");
    let err = failure(&format!(
        "range {input} --lo 0.1 --hi 0.5 --method binary-search --epsilon 1 --delta 1e-8"
    ));
    assert!(err.contains("--method hierarchical"), "{err}");
    let err = failure(&format!(
        "quantiles {input} --method binary-search --mechanism ghazi-hadamard --epsilon 1 \
         --delta 1e-3"
    ));
    assert!(err.contains("one range-query tree"), "{err}");
    let err = failure(&format!(
        "quantiles {input} --quantiles 0.5 --min 3 --max 3 --epsilon 1 --delta 1e-8"
    ));
    assert!(
        err.contains("invalid max = 3: expected a finite number above min"),
        "{err}"
    );
    // Basic composition caps each round's rate at 1 − e^(−ε/L); the tight default has no
    // per-round cap (the composed loss decides), but a rate that cannot meet the target fails.
    let err = failure(&format!(
        "quantiles {input} --quantiles 0.5 --sampling-rate 0.5 --composition basic --epsilon 1 \
         --delta 1e-8"
    ));
    assert!(err.contains("sampling"), "{err}");
    let err = failure(&format!(
        "quantiles {input} --quantiles 0.5 --sampling-rate 0.99 --epsilon 1 --delta 1e-8"
    ));
    assert!(err.contains("threshold"), "{err}");
}

#[test]
fn truth_adds_true_values_and_rank_errors() {
    let values: String = (0..20_000)
        .map(|i| format!("{}\n", f64::from(i) / 20_000.0))
        .collect();
    let path = temp_file("grid.txt", values.as_bytes());
    let out = json(&format!(
        "quantiles --input {} --quantiles 0.5 --levels 4 --epsilon 2 --delta 1e-6 --seed 1 \
         --truth --json",
        path.display()
    ));
    let row = &out["quantiles"][0];
    assert!(
        (row["true_value"].as_f64().unwrap() - 0.5).abs() < 1e-3,
        "{row}"
    );
    let rank_error = row["rank_error"].as_f64().unwrap();
    assert!((0.0..0.05).contains(&rank_error), "{row}");
}

#[test]
fn counted_and_loaded_runs_answer_alike() {
    // β = 4, L = 4 is counted as the file is read; β = 2, L = 25 has too many leaves to count,
    // so its values are loaded. Both answer the median of an even grid closely.
    let values: String = (0..20_000)
        .map(|i| format!("{}\n", f64::from(i) / 20_000.0))
        .collect();
    let path = temp_file("grid-counted.txt", values.as_bytes());
    for (tree, epsilon) in [
        ("--branching 4 --levels 4", 2),
        ("--branching 2 --levels 25", 25),
    ] {
        let out = json(&format!(
            "quantiles --input {} --quantiles 0.5 {tree} --epsilon {epsilon} --delta 1e-6 \
             --seed 1 --quiet --json",
            path.display()
        ));
        let median = out["quantiles"][0]["value"].as_f64().unwrap();
        assert!((median - 0.5).abs() < 0.05, "{tree}: {out}");
        assert_eq!(
            out["input"],
            format!(
                "20000 values in [0, 1], one per non-blank line of {}",
                path.display()
            ),
            "{tree}"
        );
    }
}
