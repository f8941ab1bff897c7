//! `tally plan quantiles`: the plan's rounds and guarantee are those `tally quantiles` runs
//! with for the same options; its report, and the report's prediction on a population against
//! simulated releases.

#[allow(dead_code)] // `failure` is not needed here.
mod common;
mod report_files;

use common::{json, tally, temp_file};
use report_files::{assert_compared_at_level_share, assert_not_compared, scratch, written_report};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::key_selection::{KeySelection, gaussian_threshold, laplace_threshold};
use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams};
use tally_core::quantiles::{HierarchicalConfig, HierarchicalHistogram, TreeShape};
use tally_plan::quantiles::{predict_levels, suppressed_share_bound};
use tally_sim::values_release::{QuantileMethod, QuantilesPlan, ValuesSettings};
use tally_sim::{CountedValues, Values, run_hierarchical_counted};

/// 20 480 numbers spread evenly over [0, 1] (80 in each of 256 equal buckets), enough for
/// every level-1 bucket to be released.
fn values_file() -> std::path::PathBuf {
    let text: String = (0..20_480u64)
        .map(|i| format!("{}\n", (i * 7919 % 20_480) as f64 / 20_480.0))
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

/// The report's files: the plan, the per-level release curve with its marks, and with
/// `--input` the prediction per level.
#[test]
fn report_is_written_with_its_figures_and_levels() {
    let input = values_file();
    let dir = scratch("plan-report-quantiles");
    let options = "plan quantiles --epsilon 1 --delta 1e-8 --levels 4";
    let (html, report) = written_report(
        &format!(
            "{options} --report {} --input {}",
            dir.display(),
            input.display()
        ),
        &dir,
    );
    // Two figures inline: the release curve and the relative error.
    assert_eq!(html.matches("<svg").count(), 2, "figures");
    assert_eq!(report["plan"], json(&format!("{options} --json")));
    let selection = KeySelection::SampleThreshold(
        SampleThresholdParams::new(
            report["plan"]["sampling_rate"].as_f64().unwrap(),
            report["plan"]["threshold"].as_u64().unwrap(),
        )
        .unwrap(),
    );
    let level = &report["per_level"];
    assert_eq!(level["release_50"].as_u64(), selection.release_point(0.5));
    assert_eq!(level["release_95"].as_u64(), selection.release_point(0.95));
    // Beside Laplace and Gaussian thresholding at the level's share of the release's
    // guarantee (ε ≤ 1, δ = 1e-8 over 4 rounds).
    let guarantee = &report["plan"]["guarantee"];
    assert_compared_at_level_share(
        level,
        &html,
        report["summary"].as_str().unwrap(),
        (
            guarantee["epsilon"].as_f64().unwrap(),
            guarantee["delta"].as_f64().unwrap(),
        ),
        4,
    );
    let levels = report["population"]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 4);
    // 20 480 values spread evenly: level ℓ has 4^ℓ buckets of 20 480/4^ℓ values.
    for (l, prediction) in (1..).zip(levels) {
        let buckets = 4u64.pow(l);
        let p = selection.release_probability(20_480 / buckets);
        assert_eq!(prediction["occupied_buckets"], buckets);
        let released = prediction["expected_released"].as_f64().unwrap();
        assert!((released - buckets as f64 * p).abs() < 1e-9 * buckets as f64);
    }
    assert!(report["summary"].as_str().unwrap().contains("1/4^4"));
    // The sweep plans the release again at each ε, as `tally plan quantiles --json` plans it,
    // and predicts every selection's bound at every level; at the plan's own ε its
    // sample-and-threshold bound is the population's.
    let sweep = report["population"]["sweep"].as_array().unwrap();
    let epsilons: Vec<f64> = sweep
        .iter()
        .map(|p| p["epsilon"].as_f64().unwrap())
        .collect();
    assert_eq!(epsilons, [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]);
    let leaves = [80_u64; 256];
    let bound =
        |selection: KeySelection| suppressed_share_bound(&predict_levels(&leaves, 4, &selection));
    for point in sweep {
        let epsilon = point["epsilon"].as_f64().unwrap();
        let planned = json(&format!(
            "plan quantiles --epsilon {epsilon} --delta 1e-8 --levels 4 --json"
        ));
        let round = SampleThresholdParams::new(
            planned["sampling_rate"].as_f64().unwrap(),
            planned["threshold"].as_u64().unwrap(),
        )
        .unwrap();
        let (e, d) = (
            planned["guarantee"]["epsilon"].as_f64().unwrap() / 4.0,
            planned["guarantee"]["delta"].as_f64().unwrap() / 4.0,
        );
        let expected = [
            bound(KeySelection::SampleThreshold(round)),
            bound(KeySelection::Laplace(laplace_threshold(e, d).unwrap())),
            bound(KeySelection::Gaussian(gaussian_threshold(e, d).unwrap())),
        ];
        let bounds = point["suppressed_share_bound"].as_array().unwrap();
        assert_eq!(bounds.len(), 3, "{point}");
        for (found, expected) in bounds.iter().zip(expected) {
            let found = found["bound"].as_f64().unwrap();
            assert!(
                (found - expected).abs() < 1e-12,
                "ε = {epsilon}: {found} against {expected}"
            );
        }
        if (epsilon - 1.0).abs() < f64::EPSILON {
            assert_eq!(
                bounds[0]["bound"],
                report["population"]["suppressed_share_bound"]
            );
        }
    }
    assert!(html.contains("The bound over a sweep of ε"), "{html}");
    // A binary search's rounds depend on the earlier ones: no prediction on a population.
    let refused = tally(&format!(
        "{options} --algorithm binary-search --report {} --input {}",
        dir.display(),
        input.display()
    ));
    assert!(!refused.status.success());
    // A population without a report is refused.
    assert!(
        !tally(&format!("{options} --input {}", input.display()))
            .status
            .success()
    );
    // Under replace-one neighbours the noise-based selections' calibrations do not hold.
    let dir = scratch("plan-report-quantiles-replace-one");
    let (html, report) = written_report(
        &format!(
            "{options} --neighbours replace-one --analysis exact --report {}",
            dir.display()
        ),
        &dir,
    );
    assert_not_compared(&report["per_level"], &html);
    assert_eq!(html.matches("<svg").count(), 2, "figures");
}

/// Values whose density falls from the left end, so that the buckets of the finer levels hold
/// counts on both sides of the release point.
fn skewed_values(n: u32) -> Values {
    let values = (0..n)
        .map(|i| (f64::from(i) / f64::from(n)).powi(2))
        .collect();
    Values::from_unit_values(values, "squares of evenly spread numbers").expect("values")
}

/// The predicted number of buckets released and share of the values counted at every level,
/// against the means of 200 simulated hierarchical histograms (seeds 0..200): within 5.4
/// standard errors (two-sided `α = 6.7e-8` per check, normal approximation; below `1e-6` over
/// the eight).
#[test]
fn predicted_levels_match_simulated_releases() {
    let settings = ValuesSettings {
        epsilon: 1.0,
        delta: 1e-8,
        target: PlanTarget::MinReleasedCount,
        analysis: Analysis::Tight,
        neighbours: Neighbours::AddRemove,
        composition: Composition::Tight,
        branching: 4,
        levels: 4,
        consistent: false,
    };
    let plan = QuantilesPlan::solve(&settings, QuantileMethod::Hierarchical, 1).expect("plan");
    let shape = TreeShape::new(4, 4).unwrap();
    let counted = CountedValues::from_values(&skewed_values(12_000), shape);
    let clients = counted.clients() as f64;
    let selection = KeySelection::SampleThreshold(*plan.rounds.per_round.params());
    let predicted = predict_levels(counted.leaves(), 4, &selection);
    // The finer levels are uncertain: several buckets are released with probability far from
    // 0 and 1.
    let bucket_counts = |level: u32| -> Vec<u64> {
        let width = 4usize.pow(4 - level);
        counted
            .leaves()
            .chunks(width)
            .map(|c| c.iter().sum())
            .collect()
    };
    for level in [3, 4] {
        let uncertain = bucket_counts(level)
            .iter()
            .map(|&c| selection.release_probability(c))
            .filter(|&p| p > 0.05 && p < 0.95)
            .count();
        assert!(uncertain >= 5, "level {level}: {uncertain}");
    }
    let task =
        HierarchicalHistogram::new(HierarchicalConfig::planned(shape, &plan.rounds)).expect("task");
    let runs = 200;
    let mut released = vec![Vec::new(); 4];
    let mut shares = vec![Vec::new(); 4];
    for seed in 0..runs {
        let release = run_hierarchical_counted(&counted, task.clone(), seed);
        for level in 1..=4u32 {
            let counts = bucket_counts(level);
            let cells = release.released(level);
            released[level as usize - 1].push(cells.len() as f64);
            let counted_values: u64 = cells.iter().map(|c| counts[c.item as usize]).sum();
            shares[level as usize - 1].push(counted_values as f64 / clients);
        }
    }
    for (prediction, (released, shares)) in predicted.iter().zip(released.iter().zip(&shares)) {
        for (what, expected, draws) in [
            ("buckets released", prediction.expected_released, released),
            ("share counted", prediction.expected_share, shares),
        ] {
            let mean = draws.iter().sum::<f64>() / runs as f64;
            let variance =
                draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (runs as f64 - 1.0);
            let standard_error = (variance / runs as f64).sqrt();
            assert!(
                (mean - expected).abs() <= 5.4 * standard_error + 1e-12,
                "level {} {what}: predicted {expected}, simulated {mean} ± {standard_error}",
                prediction.level
            );
        }
    }
}
