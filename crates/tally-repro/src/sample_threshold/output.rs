//! Writing a run's outputs: CSV files, the figures and the report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Dataset, Mechanism, Results, findings};
use crate::Error;
use crate::figures::{GridPlot, Line, PANEL_SIZE, Panel, Point, YAxis};
use crate::report::Markdown;
use crate::table::write_csv;

/// The files a run wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Outputs {
    /// One row per run and mechanism (`runs.csv`).
    pub runs: PathBuf,
    /// Means and standard errors per setting and mechanism (`summary.csv`).
    pub summary: PathBuf,
    /// The S&T calibrations per ε (`calibration.csv`).
    pub calibration: PathBuf,
    /// The figures, PNG and SVG.
    pub figures: Vec<PathBuf>,
    /// The report (`report.md`).
    pub report: PathBuf,
}

/// Which metric a figure shows.
#[derive(Clone, Copy)]
enum Metric {
    Error,
    Recall,
}

/// `2ᵏ` (with superscript digits) for powers of two, else the decimal number.
pub(super) fn domain_label(b: u32) -> String {
    const SUPERSCRIPTS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    if b.is_power_of_two() {
        let exponent: String = b
            .trailing_zeros()
            .to_string()
            .bytes()
            .map(|digit| SUPERSCRIPTS[usize::from(digit - b'0')])
            .collect();
        format!("2{exponent}")
    } else {
        b.to_string()
    }
}

fn figure(results: &Results, metric: Metric) -> GridPlot {
    let config = &results.config;
    let panels = config
        .domains
        .iter()
        .map(|&b| {
            config
                .datasets
                .iter()
                .map(|&d| Panel {
                    title: format!("{}, B = {}", d.title(), domain_label(b)),
                    lines: line_per_mechanism(results, d, b, metric),
                })
                .collect()
        })
        .collect();
    let (title, y_label, y_axis) = match metric {
        Metric::Error => (
            "Mean absolute error per bucket (fraction of n), ± standard error",
            "error / n",
            YAxis::Log,
        ),
        Metric::Recall => (
            "Recall of the top k = B/10 buckets, ± standard error",
            "top-k recall",
            YAxis::Linear {
                min: 0.0,
                max: 1.05,
            },
        ),
    };
    GridPlot {
        title: title.to_owned(),
        series: Mechanism::ALL
            .iter()
            .map(|m| m.title().to_owned())
            .collect(),
        x_label: "ε".to_owned(),
        y_label: y_label.to_owned(),
        y_axis,
        panels,
        panel_size: PANEL_SIZE,
    }
}

fn line_per_mechanism(results: &Results, d: Dataset, b: u32, metric: Metric) -> Vec<Line> {
    Mechanism::ALL
        .iter()
        .enumerate()
        .map(|(series, &m)| Line {
            series,
            points: results
                .config
                .epsilons
                .iter()
                .filter_map(|&e| {
                    let s = results.summary(d, b, e, m)?;
                    let (y, error) = match metric {
                        Metric::Error => (s.mae_mean?, s.mae_se?),
                        Metric::Recall => (s.recall_mean?, s.recall_se?),
                    };
                    Some(Point { x: e, y, error })
                })
                .collect(),
            markers: true,
        })
        .collect()
}

/// Writes the CSV files, the figures (`figure1-error`, `figure2-recall`, each `.png` and
/// `.svg`) and `report.md` into `dir` (created if missing). `wall_time` is the run's duration
/// as reported.
///
/// # Errors
///
/// [`Error::Io`], [`Error::Csv`] or [`Error::Figure`] if a file cannot be written.
pub fn write_outputs(results: &Results, dir: &Path, wall_time: Duration) -> Result<Outputs, Error> {
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let runs = dir.join("runs.csv");
    write_csv(&runs, &results.rows)?;
    let summary = dir.join("summary.csv");
    write_csv(&summary, &results.summaries)?;
    let calibration = dir.join("calibration.csv");
    write_csv(&calibration, &results.calibrations)?;
    let mut figures = Vec::new();
    for (stem, metric) in [
        ("figure1-error", Metric::Error),
        ("figure2-recall", Metric::Recall),
    ] {
        figures.extend(figure(results, metric).write_png_and_svg(dir, stem)?);
    }
    let report = dir.join("report.md");
    write_report(results, wall_time).write(&report)?;
    Ok(Outputs {
        runs,
        summary,
        calibration,
        figures,
        report,
    })
}

fn write_report(results: &Results, wall_time: Duration) -> Markdown {
    let config = &results.config;
    let mut doc = Markdown::new(
        "Sample-and-threshold: reproduction of Bharadwaj and Cormode, \"Sample and Threshold \
         Differential Privacy\" (AISTATS 2022), §5 Experiments",
    );
    doc.paragraph(
        "Sample-and-threshold (S&T) histograms against central Laplace, local Hadamard response \
         and the Balcer–Cheu shuffle histogram, each run on a Poisson sample of the same expected \
         size m = p_s·n (Bharadwaj and Cormode, §5, Figures 1 and 2; docs/algorithms.md §7). \
         `S&T (tight)` keeps τ and (ε, δ) but samples at the largest rate the exact \
         hockey-stick analysis allows. See docs/repro/sample-threshold.md for the setup and \
         the deviations from the paper.",
    );
    doc.heading(2, "Settings");
    let list = |v: Vec<String>| v.join(", ");
    doc.bullets([
        format!(
            "datasets: {}",
            list(
                config
                    .datasets
                    .iter()
                    .map(|d| d.title().to_owned())
                    .collect()
            )
        ),
        format!(
            "B: {}",
            list(config.domains.iter().map(|&b| domain_label(b)).collect())
        ),
        format!(
            "ε: {}",
            list(config.epsilons.iter().map(|e| format!("{e}")).collect())
        ),
        format!(
            "δ = {:e}, α = {:.6} (τ = {})",
            config.delta,
            config.alpha,
            results.calibrations.first().map_or(0, |c| c.threshold)
        ),
        format!(
            "synthetic population n = {}; Shakespeare n = 835,229 word tokens",
            config.population
        ),
        format!("repetitions: {}", config.reps),
        format!("seed: {}", config.seed),
        format!(
            "wall time: {:.1} s on {} rayon threads",
            wall_time.as_secs_f64(),
            rayon::current_num_threads()
        ),
        format!("rows in runs.csv: {}", results.rows.len()),
    ]);
    doc.heading(2, "Figure 1: error");
    doc.image(
        "Figure 1: mean absolute error per bucket",
        "figure1-error.png",
    );
    doc.heading(2, "Figure 2: top-k recall");
    doc.image("Figure 2: top-k recall", "figure2-recall.png");
    doc.heading(2, "Findings of the paper, evaluated on this run");
    doc.paragraph(
        "Each verdict is computed from summary.csv by the code in \
         `tally_repro::sample_threshold::findings`; `not tested` means the grid lacks the \
         settings the claim is about.",
    );
    doc.findings(&findings(results));
    doc.heading(2, "Notes computed from this run");
    doc.bullets(notes(results));
    doc.heading(2, "The tight calibration's gain");
    doc.paragraph(
        "At the same (ε, δ) and τ, the exact hockey-stick analysis (docs/algorithms.md §1.4 (c)) \
         allows a larger sampling rate than the paper's closed form. Error and recall are \
         averaged over every dataset and B of the grid.",
    );
    let rows: Vec<Vec<String>> = results
        .calibrations
        .iter()
        .map(|c| {
            let mean = |m: Mechanism, f: fn(&super::Summary) -> Option<f64>| {
                let v: Vec<f64> = results
                    .summaries
                    .iter()
                    .filter(|s| s.mechanism == m.name() && (s.epsilon - c.epsilon).abs() < 1e-9)
                    .filter_map(f)
                    .collect();
                if v.is_empty() {
                    f64::NAN
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                }
            };
            let (paper, tight) = (
                Mechanism::SampleThresholdPaper,
                Mechanism::SampleThresholdTight,
            );
            let (e_paper, e_tight) = (mean(paper, |s| s.mae_mean), mean(tight, |s| s.mae_mean));
            vec![
                format!("{}", c.epsilon),
                format!("{:.5}", c.paper_rate),
                format!("{:.5}", c.tight_rate),
                format!("{:.2}×", c.tight_rate / c.paper_rate),
                format!("{:.2e} / {:.2e}", c.paper_delta, c.tight_delta),
                format!("{e_paper:.3e}"),
                format!("{e_tight:.3e}"),
                format!("{:.2}", e_tight / e_paper),
                format!("{:.3}", mean(paper, |s| s.recall_mean)),
                format!("{:.3}", mean(tight, |s| s.recall_mean)),
            ]
        })
        .collect();
    doc.table(
        &[
            "ε",
            "p_s paper",
            "p_s tight",
            "ratio",
            "δ achieved (paper / tight)",
            "error paper",
            "error tight",
            "error ratio",
            "recall paper",
            "recall tight",
        ],
        &rows,
    );
    doc.heading(2, "Files");
    doc.bullets([
        "`runs.csv`: one row per (dataset, B, ε, mechanism, repetition) with the parameters used",
        "`summary.csv`: mean and standard error per (dataset, B, ε, mechanism)",
        "`calibration.csv`: both S&T calibrations per ε",
        "`figure1-error.{png,svg}`, `figure2-recall.{png,svg}`",
    ]);
    doc
}

/// Observations that explain the figures, computed from the summaries.
fn notes(results: &Results) -> Vec<String> {
    let by = |m: Mechanism| {
        results
            .summaries
            .iter()
            .filter(move |s| s.mechanism == m.name())
    };
    let mut notes = Vec::new();
    for &d in &results.config.datasets {
        let smallest = by(Mechanism::BalcerCheu)
            .filter(|s| s.dataset == d.name() && s.reps > 0)
            .map(|s| s.epsilon)
            .fold(f64::INFINITY, f64::min);
        notes.push(if smallest.is_finite() {
            format!(
                "Balcer–Cheu on {}: its condition m ≥ (400/ε²)·ln(4/δ) holds from ε = {smallest} \
                 on; below that ε its rows are marked applicable = false and it is left out of \
                 the figures.",
                d.title()
            )
        } else {
            format!(
                "Balcer–Cheu on {}: its condition never holds on this grid.",
                d.title()
            )
        });
    }
    let applicable: Vec<_> = by(Mechanism::BalcerCheu).filter(|s| s.reps > 0).collect();
    let silent = applicable
        .iter()
        .filter(|s| s.released_mean == Some(0.0))
        .count();
    notes.push(format!(
        "Balcer–Cheu's analyzer (docs/algorithms.md §7.3) reports a cell only when its message \
         count exceeds m, i.e. when its true share of the sample exceeds 1 − p. It released no \
         bucket in any repetition at {silent} of the {} settings where it applies; there its \
         error equals the all-zero error and its line lies on the all-zero line.",
        applicable.len()
    ));
    let laplace_above = by(Mechanism::Laplace)
        .filter(|s| {
            let zero = results
                .summary(
                    Dataset::ALL
                        .into_iter()
                        .find(|d| d.name() == s.dataset)
                        .expect("a known dataset"),
                    s.domain,
                    s.epsilon,
                    Mechanism::AllZero,
                )
                .and_then(|z| z.mae_mean);
            matches!((s.mae_mean, zero), (Some(l), Some(z)) if l >= z)
        })
        .count();
    notes.push(format!(
        "Laplace (Δ₁ = 2 on the sample, scaled by 1/p_s) is at or above the all-zero error at \
         {laplace_above} settings (small ε, large B)."
    ));
    notes
}
