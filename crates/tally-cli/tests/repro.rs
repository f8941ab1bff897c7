//! `tally repro sample-threshold --quick`: the CSV's shape, S&T against the all-zero line, and
//! the figures and report.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// The columns of `runs.csv`, in order.
const COLUMNS: &str = "dataset,domain,epsilon,delta,mechanism,rep,population,sampling_rate,\
                       expected_sample,sample_size,threshold,guarantee_epsilon,guarantee_delta,\
                       applicable,mae,recall,released,max_omitted_frequency";

/// The quick grid: 3 datasets × 2 domain sizes × 3 ε × 6 mechanisms × 3 repetitions.
const QUICK_ROWS: usize = 3 * 2 * 3 * 6 * 3;

fn out_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tally-cli-repro-{}-{name}", std::process::id()))
}

#[test]
fn quick_run_writes_the_csv_figures_and_report() {
    let dir = out_dir("quick");
    let output = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args([
            "repro",
            "sample-threshold",
            "--quick",
            "--seed",
            "3",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("tally runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(stdout.contains("runs.csv"), "{stdout}");

    // The CSV: the header, one row per (dataset, B, ε, mechanism, repetition).
    let csv = std::fs::read_to_string(dir.join("runs.csv")).expect("runs.csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(COLUMNS));
    let columns: Vec<&str> = COLUMNS.split(',').collect();
    let col = |name: &str| columns.iter().position(|&c| c == name).expect("column");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), QUICK_ROWS);
    assert!(rows.iter().all(|r| r.len() == columns.len()));

    // At ε = 1, S&T's mean error is below the all-zero error on every dataset and B.
    let mut mean: HashMap<(String, String, String), (f64, usize)> = HashMap::new();
    for r in rows.iter().filter(|r| r[col("epsilon")] == "1.0") {
        let mae: f64 = r[col("mae")].parse().expect("S&T and all-zero always run");
        let entry = mean
            .entry((
                r[col("dataset")].to_owned(),
                r[col("domain")].to_owned(),
                r[col("mechanism")].to_owned(),
            ))
            .or_default();
        entry.0 += mae;
        entry.1 += 1;
    }
    let avg = |d: &str, b: &str, m: &str| {
        let (sum, n) = mean[&(d.to_owned(), b.to_owned(), m.to_owned())];
        sum / n as f64
    };
    for dataset in ["binomial", "geometric", "shakespeare"] {
        for b in ["64", "1024"] {
            let zero = avg(dataset, b, "all-zero");
            for st in ["st-paper", "st-tight"] {
                let error = avg(dataset, b, st);
                assert!(
                    error < zero,
                    "{st} on {dataset} B={b}: {error} ≥ all-zero {zero}"
                );
            }
        }
    }

    // The figures are valid PNG and SVG files, and the report shows them.
    for stem in ["figure1-error", "figure2-recall"] {
        let png = std::fs::read(dir.join(format!("{stem}.png"))).expect("png");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png");
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).expect("svg");
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    }
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report");
    assert!(report.contains("![Figure 1"));
    assert!(report.contains("| # | claim | source | verdict | evidence |"));
    assert!(report.contains("seed: 3"));
    std::fs::remove_dir_all(&dir).expect("clean up");
}
