//! `tally plan quantiles`: the plan's rounds and guarantee are those `tally quantiles` runs
//! with for the same options.

#[allow(dead_code)] // `failure` is not needed here.
mod common;

use common::{json, tally, temp_file};

/// 20 000 numbers spread over [0, 1], enough for every level-1 bucket to be released.
fn values_file() -> std::path::PathBuf {
    let text: String = (0..20_000u64)
        .map(|i| format!("{}\n", (i * 7919 % 20_000) as f64 / 20_000.0))
        .collect();
    temp_file("plan-quantiles-values.txt", text.as_bytes())
}

#[test]
fn plan_equals_the_calibration_of_the_release() {
    let input = values_file();
    for options in [
        "--epsilon 1 --delta 1e-8 --levels 4",
        "--epsilon 2 --delta 1e-6 --levels 3 --branching 8 --threshold 20",
        "--epsilon 1 --delta 1e-8 --levels 4 --neighbours replace-one --analysis exact \
         --composition basic --sampling-rate 0.03",
        "--epsilon 1 --delta 1e-8 --levels 5 --composition advanced --analysis theorem1",
    ] {
        for (algorithm, quantiles) in [("hierarchical", "0.5"), ("binary-search", "0.25,0.5,0.75")]
        {
            let plan = json(&format!(
                "plan quantiles {options} --algorithm {algorithm} --quantiles {quantiles} --json"
            ));
            let release = json(&format!(
                "quantiles --input {} {options} --method {algorithm} --quantiles {quantiles} \
                 --seed 1 --json",
                input.display()
            ));
            let parameters = &release["parameters"];
            for field in [
                "sampling_rate",
                "threshold",
                "per_round_guarantee",
                "composition",
            ] {
                assert_eq!(
                    plan[field], parameters[field],
                    "{options} {algorithm}: {field}"
                );
            }
            assert_eq!(
                plan["guarantee"], release["guarantee"],
                "{options} {algorithm}"
            );
            assert_eq!(plan["target_delta"], release["target_delta"]);
            assert_eq!(plan["finest_bucket"], parameters["resolution"]);
            if algorithm == "binary-search" {
                assert_eq!(plan["rounds"], parameters["rounds"]);
                assert_eq!(
                    plan["rounds_per_quantile"],
                    parameters["rounds_per_quantile"]
                );
            } else {
                assert_eq!(plan["levels"], parameters["levels"]);
                assert_eq!(plan["branching"], parameters["branching"]);
            }
        }
    }
}

#[test]
fn plan_prints_every_level_and_refuses_what_the_release_refuses() {
    let output = tally("plan quantiles --epsilon 1 --delta 1e-8 --levels 3 --branching 4");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let plan = json("plan quantiles --epsilon 1 --delta 1e-8 --levels 3 --branching 4 --json");
    let rate = format!("{:.6}", plan["sampling_rate"].as_f64().unwrap());
    // One row per level, with its buckets, the rate and the threshold.
    for buckets in ["4", "16", "64"] {
        assert!(
            text.lines().any(|l| {
                let cells: Vec<&str> = l.split_whitespace().collect();
                cells.get(1) == Some(&buckets)
                    && cells.get(3) == Some(&rate.as_str())
                    && cells.get(4) == Some(&plan["threshold"].to_string().as_str())
            }),
            "{buckets}: {text}"
        );
    }
    for refused in [
        "plan quantiles --epsilon 1 --delta 1e-8 --algorithm binary-search --levels 0",
        "plan quantiles --epsilon 1 --delta 1e-8 --branching 1",
        "plan quantiles --epsilon 1 --delta 1e-8 --quantiles 1.5",
        "plan quantiles --epsilon 1 --delta 1e-8 --sampling-rate 0.9",
    ] {
        assert!(!tally(refused).status.success(), "{refused}");
    }
}
