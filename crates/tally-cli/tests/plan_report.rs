//! `tally plan sample-threshold --report DIR`: the files it writes, its errors, and its
//! predicted recall against simulated releases.

#[allow(dead_code)] // `temp_file` is not needed here.
mod common;
#[allow(dead_code)] // The level-share checks are for the multi-round reports.
mod report_files;

use common::{failure, json, tally};
use report_files::{scratch, written_report};
use serde_json::Value;
use tally_accounting::Neighbours;
use tally_accounting::key_selection::{KeySelection, population_utility};
use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_sim::{ExecutionPath, Population, run_sample_threshold};

const PLAN: &str = "plan sample-threshold --epsilon 1 --delta 1e-8";

#[test]
fn report_is_written_with_its_figures_and_numbers() {
    let dir = scratch("plan-report-written").join("nested");
    let (html, report) = written_report(
        &format!(
            "{PLAN} --report {} --synthetic zipf:n=20000,domain=2000,s=1.1 --top 10",
            dir.display()
        ),
        &dir,
    );
    // Five figures inline: release curves, relative error, and recall, items released and
    // error by ε.
    assert_eq!(html.matches("<svg").count(), 5, "figures");
    assert_eq!(html.matches("</svg>").count(), 5);
    // The plan's table is for people: names in words, δ rounded up (plan.json keeps it whole).
    assert!(html.contains("<td>achieved delta</td>"), "{html}");
    assert!(!html.contains("achieved_delta"));
    let achieved = report["plan"]["achieved_delta"]
        .as_f64()
        .unwrap()
        .to_string();
    assert!(
        achieved.len() <= 8 || !html.contains(&achieved),
        "δ shown whole: {achieved}"
    );
    // The plan is the document of `--json`.
    assert_eq!(report["plan"], json(&format!("{PLAN} --json")));
    // Its 50% and 95% points are the library's for the planned parameters.
    let plan = &report["plan"];
    let params = SampleThresholdParams::new(
        plan["sampling_rate"].as_f64().unwrap(),
        plan["threshold"].as_u64().unwrap(),
    )
    .unwrap();
    let selection = KeySelection::SampleThreshold(params);
    let st = &report["selections"][0];
    assert_eq!(st["release_50"].as_u64(), selection.release_point(0.5));
    assert_eq!(st["release_95"].as_u64(), selection.release_point(0.95));
    assert_eq!(report["selections"].as_array().unwrap().len(), 4);
    let summary = report["summary"].as_str().unwrap();
    let c50 = selection.release_point(0.5).unwrap();
    assert!(
        summary.contains(&format!("held by {c50} clients half the time")),
        "{summary}"
    );
    assert!(html.contains(&format!("held by {c50} clients half the time")));
    // When each selection is the right one, with this plan's numbers.
    let choice = &html[html
        .find("<h2>Which to choose</h2>")
        .expect("the choice section")..];
    let choice = &choice[..choice.find("</ul>").unwrap()];
    for (name, selection) in report["selections"].as_array().unwrap().iter().map(|s| {
        (
            s["name"].as_str().unwrap().replace('&', "&amp;"),
            s["release_50"].as_u64().unwrap(),
        )
    }) {
        assert!(
            choice.contains(&format!("<b>{name}</b>")),
            "{name} in {choice}"
        );
        assert!(
            choice.contains(&format!("half the time at {selection} clients")),
            "{name}'s 50% count {selection} in {choice}"
        );
    }
    let sweep = report["population"]["sweep"].as_array().unwrap();
    assert_eq!(sweep.len(), 6);
    assert!(sweep.iter().all(|p| p["selections"][0]["top"] == 10));
}

#[test]
fn report_without_a_population_has_no_sweep() {
    let dir = scratch("plan-report-alone");
    json(&format!("{PLAN} --report {} --json", dir.display()));
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert_eq!(html.matches("<svg").count(), 2);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
    assert!(report["population"].is_null());
}

#[test]
fn a_bad_report_directory_is_a_clear_error() {
    let dir = scratch("plan-report-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"in the way").unwrap();
    let message = failure(&format!("{PLAN} --report {}", file.display()));
    assert!(message.contains("a file is in the way"), "{message}");
    let message = failure(&format!("{PLAN} --report {}/below", file.display()));
    assert!(
        message.contains("cannot create the report directory") && message.contains("below"),
        "{message}"
    );
    // A population needs a report to go into.
    let message = tally(&format!("{PLAN} --dataset shakespeare"));
    assert!(!message.status.success());
    assert!(String::from_utf8_lossy(&message.stderr).contains("--report"));
}

/// Predicted recall@k of the planned S&T on Shakespeare at ε = 1 against 200 simulated
/// releases along the real S&T path (seeds 0..200): within two standard errors, for k = 20
/// (every top item is far above the threshold: both are 1) and for the k that reaches down to
/// the count released 5% of the time, where the recall is uncertain.
#[test]
fn predicted_recall_matches_simulated_releases_on_shakespeare() {
    let population = Population::dataset("shakespeare").expect("shipped dataset");
    let mechanism = SampleThreshold::calibrate(
        1.0,
        1e-8,
        PlanTarget::MinReleasedCount,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .expect("plan");
    let selection = KeySelection::SampleThreshold(*mechanism.params());
    let mut by_count: Vec<(u32, u64)> = population.item_counts().to_vec();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let counts: Vec<u64> = by_count.iter().map(|&(_, c)| c).collect();
    let low = selection.release_point(0.05).unwrap();
    let wide = counts.iter().filter(|&&c| c >= low).count();
    assert!(wide > 100, "{wide}");

    let runs = 200;
    let releases: Vec<Vec<u32>> = (0..runs)
        .map(|seed| {
            run_sample_threshold(&population, &mechanism, ExecutionPath::default(), seed)
                .items
                .iter()
                .map(|r| r.item)
                .collect()
        })
        .collect();
    for top in [20, wide] {
        let predicted = population_utility(&counts, &selection, top).recall;
        let top_items: Vec<u32> = by_count[..top].iter().map(|&(id, _)| id).collect();
        let recalls: Vec<f64> = releases
            .iter()
            .map(|items| {
                top_items.iter().filter(|id| items.contains(id)).count() as f64 / top as f64
            })
            .collect();
        let mean = recalls.iter().sum::<f64>() / runs as f64;
        let variance =
            recalls.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (runs as f64 - 1.0);
        let standard_error = (variance / runs as f64).sqrt();
        assert!(
            (mean - predicted).abs() <= 2.0 * standard_error + 1e-12,
            "recall@{top}: simulated {mean} ± {standard_error}, predicted {predicted}"
        );
        if top == wide {
            assert!(predicted < 0.99 && standard_error > 0.0, "{predicted}");
        }
    }
}
