//! `tally plan histogram --report DIR`: renders the domain mechanisms' report as
//! `DIR/index.html` (inline SVG and CSS, nothing loaded from elsewhere) and `DIR/plan.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Result;
use crate::domain::{DomainReport, MechanismPlan, table_counts};
use tally_accounting::TrustModel;
use tally_repro::figures::{GridPlot, Line, Panel, YAxis};

use tally_protocol::shown::{PrivacyPair, Rounding, delta_number, privacy_number};

use crate::page::{FIGURE_SIZE, STYLE, escape, line, page_end, push_figures, write_documents};

/// The trust models, one figure each, in the order the report compares them.
const MODELS: [TrustModel; 3] = [TrustModel::Central, TrustModel::Shuffle, TrustModel::Local];

/// Writes `dir/index.html` and `dir/plan.json`, creating `dir` if needed, and
/// returns the page's path.
///
/// # Errors
///
/// [`crate::ReportError`] if a figure cannot be drawn or a file written.
pub fn write(report: &DomainReport, dir: &Path) -> Result<PathBuf> {
    write_documents(dir, &report.document(), |dir| page(report, dir))
}

/// The name of a mechanism in the figures, the chosen one marked.
fn label(report: &DomainReport, plan: &MechanismPlan) -> String {
    let name = plan.mechanism().name();
    if plan.mechanism() == report.chosen {
        format!("{name} (chosen)")
    } else {
        name.to_owned()
    }
}

/// One figure per trust model: a line per mechanism of that model that `points` gives points
/// for, each figure with its own legend (and `extra`, a line of its own, in the central one).
fn by_model(
    report: &DomainReport,
    points: impl Fn(usize, &MechanismPlan) -> Vec<(f64, f64)>,
    extra: Option<(String, Vec<(f64, f64)>)>,
    figure: impl Fn(TrustModel, Vec<String>, Vec<Line>) -> GridPlot,
) -> Vec<GridPlot> {
    MODELS
        .iter()
        .filter_map(|&model| {
            let (mut series, mut lines) = (Vec::new(), Vec::new());
            for (i, plan) in report.mechanisms.iter().enumerate() {
                let Some(calibrated) = plan.calibrated() else {
                    continue;
                };
                let points = points(i, plan);
                if calibrated.guarantee.model != model || points.is_empty() {
                    continue;
                }
                let chosen = plan.mechanism() == report.chosen;
                lines.push(line(series.len(), points.into_iter(), chosen));
                series.push(label(report, plan));
            }
            if let Some((name, points)) = extra.as_ref().filter(|_| model == TrustModel::Central) {
                lines.push(line(series.len(), points.iter().copied(), true));
                series.push(name.clone());
            }
            (!lines.is_empty()).then(|| figure(model, series, lines))
        })
        .collect()
}

/// What each trust model assumes, and when it is the right choice.
const MODEL_CHOICE: [(TrustModel, &str); 3] = [
    (
        TrustModel::Central,
        "when one party may receive every client's true item and is trusted to add the noise: \
         the smallest error",
    ),
    (
        TrustModel::Shuffle,
        "when no party should see both who sent a report and what it says: a shuffler cuts \
         the reports from their senders, and the guarantee counts on the other devices' \
         messages (see the colluding fraction it states)",
    ),
    (
        TrustModel::Local,
        "when no party is trusted at all: each device randomizes its item before it sends \
         it, and the error is the largest",
    ),
];

/// The section "Which to choose": per trust model, what it assumes and its mechanism with the
/// smallest expected error at the middle count of the table `counts`.
fn choice_section(report: &DomainReport, counts: &[u64]) -> String {
    let Some(&count) = counts.get(counts.len() / 2) else {
        return String::new();
    };
    let mut items = Vec::new();
    for (model, when) in MODEL_CHOICE {
        let best = report
            .mechanisms
            .iter()
            .filter_map(|plan| {
                let calibrated = plan.calibrated()?;
                let error = calibrated.table.iter().find(|e| e.count == count)?;
                (calibrated.guarantee.model == model)
                    .then_some((plan.mechanism().name(), error.error.mean_absolute_error))
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let Some((name, error)) = best else {
            continue;
        };
        items.push(format!(
            "<li><b>{}</b> {when}; here <code>{name}</code> is its best, E|error| {} at a true \
             count of {count}.</li>",
            model.name(),
            cell(Some(error)),
        ));
    }
    format!(
        "<h2>Which to choose</h2>\n<p>Every mechanism here estimates every element of a public \
         domain. Sample-and-threshold (<code>tally histogram</code> without \
         <code>--mechanism</code>) needs none: it adds no noise and releases only the items \
         enough clients hold.</p>\n<ul>{}</ul>\n",
        items.join("\n")
    )
}

/// The expected absolute error by true count, a figure per trust model.
fn error_figures(report: &DomainReport) -> Vec<GridPlot> {
    let setting = &report.setting;
    by_model(
        report,
        |_, plan| {
            plan.calibrated().map_or_else(Vec::new, |c| {
                c.errors
                    .iter()
                    .filter(|e| e.count > 0)
                    .map(|e| ((e.count as f64).log10(), e.error.mean_absolute_error))
                    .collect()
            })
        },
        None,
        |model, series, lines| GridPlot {
            title: format!(
                "{} model: E|error| of one element {}",
                model.name(),
                PrivacyPair(setting.epsilon, setting.delta),
            ),
            series,
            x_label: "log₁₀ of the true count (0 is 1 client, 3 is 1000)".into(),
            y_label: "E|estimate − count|".into(),
            y_axis: YAxis::Log,
            panels: vec![vec![Panel {
                title: String::new(),
                lines,
            }]],
            panel_size: (FIGURE_SIZE.0, 300),
        },
    )
}

/// The predicted mean absolute error over the population against `log₂ ε`, a figure per trust
/// model, sample-and-threshold's among the central ones.
fn sweep_figures(report: &DomainReport) -> Vec<GridPlot> {
    let Some(sweep) = report.population.as_ref() else {
        return Vec::new();
    };
    let sample_threshold = sweep
        .points
        .iter()
        .filter_map(|p| Some((p.epsilon.log2(), p.sample_threshold?.mean_absolute_error)))
        .collect();
    by_model(
        report,
        |i, _| {
            sweep
                .points
                .iter()
                .filter_map(|p| Some((p.epsilon.log2(), (*p.mean_absolute_errors.get(i)?)?)))
                .collect()
        },
        Some((
            "sample-threshold (released items only)".to_owned(),
            sample_threshold,
        )),
        |model, series, lines| GridPlot {
            title: format!("{} model: predicted mean absolute error by ε", model.name()),
            series,
            x_label: "log₂ ε (−2 is ε = 0.25, 0 is ε = 1, 3 is ε = 8)".into(),
            y_label: "mean E|estimate − count|".into(),
            y_axis: YAxis::Log,
            panels: vec![vec![Panel {
                title: String::new(),
                lines: lines
                    .into_iter()
                    .map(|mut l| {
                        l.markers = true;
                        l
                    })
                    .collect(),
            }]],
            panel_size: (FIGURE_SIZE.0, 300),
        },
    )
}

/// A number for a table cell, or a dash.
fn cell(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"))
}

/// The whole page.
fn page(report: &DomainReport, dir: &Path) -> Result<String> {
    let title = format!(
        "tally plan: what a {} histogram will show",
        report.chosen.name()
    );
    let mut html = String::new();
    write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n\
         <p class=\"summary\">{}</p>\n",
        escape(&report.summary)
    )?;

    let counts = table_counts(&report.setting);
    write!(
        html,
        "<h2>Every mechanism at the same setting</h2>\n<p>{} and {} clients; each mechanism \
         calibrated for {} as <code>tally histogram</code> calibrates it. \
         The error of an element's estimate is exact from the mechanism's noise law: discrete \
         Laplace in closed form, the discrete Gaussian by summing its mass function, and the \
         binomial laws of randomized response's support counts and of the shuffle protocols' \
         blanket noise by summing theirs. ghazi-count-min has no such law: its estimate is a \
         minimum over hashed rows, whose error depends on which other elements collide.</p>\n\
         <table><tr><th>mechanism</th><th>model</th><th>guarantee</th><th>messages per client</th>",
        escape(&report.setting.map.to_string()),
        report.setting.clients,
        PrivacyPair(report.setting.epsilon, report.setting.delta)
    )?;
    for count in &counts {
        write!(html, "<th>count {count}: sd, E|error|</th>")?;
    }
    html += "</tr>";
    for plan in &report.mechanisms {
        write!(html, "<tr><td>{}</td>", escape(&label(report, plan)))?;
        match plan {
            MechanismPlan::Calibrated(c) => {
                let g = &c.guarantee;
                write!(
                    html,
                    "<td>{}</td><td>ε = {}, δ = {}, {}</td><td>{}</td>",
                    g.model.name(),
                    privacy_number(g.epsilon),
                    delta_number(g.delta, Rounding::Up),
                    escape(&g.neighbours.to_string()),
                    c.cost.map_or_else(
                        || "—".to_owned(),
                        |m| format!("{:.1}", m.messages_per_client)
                    )
                )?;
                for count in &counts {
                    let error = c.table.iter().find(|e| e.count == *count);
                    write!(
                        html,
                        "<td>{}, {}</td>",
                        cell(error.map(|e| e.error.standard_deviation)),
                        cell(error.map(|e| e.error.mean_absolute_error))
                    )?;
                }
            }
            MechanismPlan::Unavailable { reason, .. } => {
                write!(
                    html,
                    "<td colspan=\"{}\">not available: {}</td>",
                    3 + counts.len(),
                    escape(reason)
                )?;
            }
        }
        html += "</tr>";
    }
    html += "</table>\n";
    html += &choice_section(report, &counts);
    push_figures(&mut html, &error_figures(report), dir, "error")?;

    if let Some(sweep) = &report.population {
        write!(
            html,
            "<h2>Predicted error on {}</h2>\n<p>{} clients, {} distinct items, placed in the \
             domain. For each ε every mechanism is calibrated again at the same δ for these \
             clients, and the mean over the domain's elements of E|estimate − count| is \
             computed from each element's law, with no simulation. Sample-and-threshold, \
             planned for the smallest count it can show, releases only some items: its error \
             is over the released items, and its recall@k is the expected share of the k most \
             common items released. Recall@k is not predicted for the domain mechanisms: it \
             depends on how all the elements' noisy estimates rank against each other (the \
             local oracles' estimates are correlated), which has no law here short of \
             simulation.</p>\n<table><tr><th>mechanism</th>",
            escape(&sweep.description),
            sweep.clients,
            sweep.items
        )?;
        for point in &sweep.points {
            write!(html, "<th>ε = {}</th>", point.epsilon)?;
        }
        html += "</tr>";
        for (i, plan) in report.mechanisms.iter().enumerate() {
            write!(html, "<tr><td>{}</td>", escape(&label(report, plan)))?;
            for point in &sweep.points {
                let error = point.mean_absolute_errors.get(i).copied().flatten();
                write!(html, "<td>{}</td>", cell(error))?;
            }
            html += "</tr>";
        }
        html += "<tr><td>sample-threshold: error of released items, recall</td>";
        for point in &sweep.points {
            match &point.sample_threshold {
                Some(u) => write!(
                    html,
                    "<td>{:.2}, {:.3} (k = {})</td>",
                    u.mean_absolute_error, u.recall, u.top
                )?,
                None => html += "<td>no parameters</td>",
            }
        }
        html += "</tr>";
        html += "</table>\n";
        push_figures(&mut html, &sweep_figures(report), dir, "sweep")?;
    }
    html += &page_end("tally plan histogram");
    Ok(html)
}
