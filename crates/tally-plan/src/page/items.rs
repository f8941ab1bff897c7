//! `tally plan histogram --report DIR` without `--mechanism`: the chooser's report as
//! `DIR/index.html` (inline SVG and CSS, nothing loaded from elsewhere) and `DIR/plan.json`:
//! the predicted released items and error of every mechanism against `k`, the recommended
//! setting marked, and why in words.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Result;
use tally_accounting::partition_selection::Method;
use tally_protocol::shown::PrivacyPair;
use tally_repro::figures::{GridPlot, Line, Panel, YAxis};
use tally_sim::items_plan::{ERROR_DEFINITION, HeldItems, ItemsPlan, METHODS, PredictedError};
use tally_sim::items_release::ItemsMechanism;

use crate::page::{FIGURE_SIZE, escape, line, page_end, page_start, push_figures, write_documents};

/// Writes `dir/index.html` and `dir/plan.json` (`document`, the plan as `--json` prints it),
/// creating `dir` if needed, and
/// returns the page's path.
///
/// # Errors
///
/// [`crate::ReportError`] if a figure cannot be drawn or a file written.
pub fn write(
    plan: &ItemsPlan,
    held: &HeldItems,
    document: &serde_json::Value,
    dir: &Path,
) -> Result<PathBuf> {
    write_documents(dir, document, |dir| page(plan, held, document, dir))
}

/// The legend: the recommended setting (drawn on top), then each mechanism.
fn series(plan: &ItemsPlan) -> Vec<String> {
    let recommended = format!("recommended (k = {})", plan.recommendation().max_items);
    let mechanisms = METHODS.iter().map(|&method| match method {
        None => "sample-threshold".to_owned(),
        Some(Method::TruncatedGeometric) => "truncated-geometric (no count)".to_owned(),
        Some(m) => m.name().to_owned(),
    });
    std::iter::once(recommended).chain(mechanisms).collect()
}

/// The recommended setting as a line of one point, then a line per mechanism of `value`
/// against `log₂ k` (where it has one).
fn lines(plan: &ItemsPlan, value: impl Fn(usize) -> Option<f64>) -> Vec<Line> {
    let x = |i: usize| f64::from(plan.settings[i].max_items).log2();
    let best = plan.recommended;
    let recommended = line(0, value(best).map(|v| (x(best), v)).into_iter(), true);
    let mechanisms = METHODS.iter().enumerate().map(|(i, &method)| {
        let points = (0..plan.settings.len())
            .filter(|&s| plan.settings[s].method == method)
            .filter_map(|s| Some((x(s), value(s)?)));
        line(i + 1, points, true)
    });
    std::iter::once(recommended).chain(mechanisms).collect()
}

/// The relative error of setting `i` in percent, where it releases estimates.
fn relative_error(plan: &ItemsPlan, i: usize) -> Option<f64> {
    match plan.settings[i].outcome.as_ref().ok()?.error {
        PredictedError::Estimates { relative, .. } => Some(100.0 * relative),
        PredictedError::NoCount | PredictedError::NothingReleased => None,
    }
}

/// The two figures: released items and error against `k`.
fn figures(plan: &ItemsPlan) -> Vec<GridPlot> {
    let figure = |title: &str, y_label: &str, y_axis, lines| GridPlot {
        title: title.to_owned(),
        series: series(plan),
        x_label: "log₂ k, the bound on each client's distinct items (0 is k = 1, 7 is k = 128)"
            .into(),
        y_label: y_label.to_owned(),
        y_axis,
        panels: vec![vec![Panel {
            title: String::new(),
            lines,
        }]],
        panel_size: (FIGURE_SIZE.0, 320),
    };
    let released = lines(plan, |i| Some(plan.settings[i].expected_released()));
    let top = plan.recommendation().expected_released().max(1.0) * 1.1;
    vec![
        figure(
            "Predicted released items by k",
            "expected released items",
            YAxis::Linear { min: 0.0, max: top },
            released,
        ),
        figure(
            "Predicted error of a released estimate by k",
            "expected |estimate − holders| / holders, %",
            YAxis::Log,
            lines(plan, |i| relative_error(plan, i)),
        ),
    ]
}

/// When each mechanism is the right choice, in words.
const CHOICES: &str = "<ul>\
<li><b>sample-threshold</b> adds no noise: each client sends each of its kept items with the \
sampling rate's probability and an item sent by enough clients is shown with its sampled count \
divided by the rate. The aggregator sees only the sample, never a client's whole set, so under \
split trust it need not be trusted with more; each client sends fewer reports (the rate times \
its kept items). The right choice when the aggregator should see as little as possible, or \
when it releases the most.</li>\
<li><b>truncated-geometric</b> shows the items alone, with no count, each with the optimal \
probability for its count (Desfontaines et al., PoPETs 2022): the right choice when only which \
items are common matters, and at k = 1, where it is optimal.</li>\
<li><b>laplace-threshold</b> adds discrete Laplace noise to each count and shows the items whose \
noisy count reaches a threshold, with it: its noise grows with k, so it suits small k.</li>\
<li><b>gaussian-threshold</b> adds discrete Gaussian noise instead, which grows with √k: it \
suits large k, where clients hold many items.</li>\
</ul>\n<p>With every mechanism an item no client holds is never shown. The three partition \
selections need an aggregator trusted with the exact count of every item the clients report: \
every client reports all its kept items, and under split trust the relay forwards every \
report, not a sample.</p>\n";

/// The whole page.
fn page(
    plan: &ItemsPlan,
    held: &HeldItems,
    document: &serde_json::Value,
    dir: &Path,
) -> Result<String> {
    let best = plan.recommendation();
    let title = "tally plan: which mechanism and k for this histogram";
    let error = best
        .outcome
        .as_ref()
        .map_or_else(|_| "none".to_owned(), |p| p.error.describe());
    let summary = format!(
        "Recommended: {} with k = {}: {:.1} items released in expectation, error if released \
         {error}. Why: below, in the plan.",
        best.name(),
        best.max_items,
        best.expected_released(),
    );
    let mut html = page_start(title, &summary, &document["recommendation"])?;
    write!(
        html,
        "<h2>Every mechanism at every k</h2>\n<p>{} clients holding {} distinct items, at most \
         {} each. Each setting is calibrated for {} as <code>tally \
         histogram</code> calibrates it; the released items are predicted exactly (each item's \
         contributing clients are Poisson-binomial over its holders). The error is {}.</p>\n\
         <table><tr><th>k</th><th>mechanism</th><th>50% released at</th><th>expected \
         released</th><th>error if released</th><th>reports per client</th></tr>",
        held.clients(),
        held.distinct_items(),
        held.largest(),
        PrivacyPair(
            document["epsilon"].as_f64().unwrap_or(f64::NAN),
            document["delta"].as_f64().unwrap_or(f64::NAN)
        ),
        escape(ERROR_DEFINITION),
    )?;
    for (i, setting) in plan.settings.iter().enumerate() {
        let mark = if i == plan.recommended {
            " (recommended)"
        } else {
            ""
        };
        write!(
            html,
            "<tr><td>{}</td><td>{}{mark}</td>",
            setting.max_items,
            setting.name()
        )?;
        match &setting.outcome {
            Ok(predicted) => {
                let sent = match &predicted.mechanism {
                    ItemsMechanism::SampleThreshold(m) => m.params().sampling_rate(),
                    ItemsMechanism::Selection(_) => 1.0,
                };
                write!(
                    html,
                    "<td>{}</td><td>{:.1}</td><td>{}</td><td>{:.2}</td></tr>",
                    predicted
                        .half_release_point
                        .map_or_else(|| "never".to_owned(), |c| format!("{c} clients")),
                    predicted.expected_released,
                    escape(&predicted.error.describe()),
                    sent * held.mean_contributed(u64::from(setting.max_items))
                )?;
            }
            Err(error) => write!(
                html,
                "<td colspan=\"4\">not calibrated: {}</td></tr>",
                escape(error)
            )?,
        }
    }
    html += "</table>\n";
    push_figures(&mut html, &figures(plan), dir, "choice")?;
    html += "<h2>When each mechanism is the right choice</h2>\n";
    html += CHOICES;
    html += &page_end("tally plan histogram");
    Ok(html)
}
