//! `tally plan sample-threshold --report DIR`: sample-and-threshold against noise-based key
//! selection, as `DIR/index.html` and `DIR/plan.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tally_accounting::key_selection::KeySelection;
use tally_protocol::shown::PrivacyPair;
use tally_repro::figures::{GridPlot, Line, Panel, YAxis};

use super::{
    FIGURE_SIZE, Result, SWEEP_X_LABEL, escape, inline_svg, line, page_end, page_start,
    push_figures, relative_error_figure, release_curves_figure, selections_table, write_documents,
};
use crate::key_selection::{NAMES, PlanReport, PopulationSweep, count_text};

/// Writes `dir/index.html` and `dir/plan.json`, creating `dir` if needed, and
/// returns the page's path.
///
/// # Errors
///
/// [`crate::ReportError`] if a figure cannot be drawn or a file written.
pub fn write(report: &PlanReport, dir: &Path) -> Result<PathBuf> {
    write_documents(dir, &report.document(), |dir| page(report, dir))
}

fn names(report: &PlanReport) -> Vec<String> {
    report
        .selections
        .iter()
        .map(|s| s.name.to_owned())
        .collect()
}

/// The release curves, with the 50% and 95% points of each selection as dots.
fn release_figure(report: &PlanReport) -> GridPlot {
    release_curves_figure(
        format!(
            "Release probability {}; dots at 50% and 95%",
            PrivacyPair(report.epsilon, report.delta)
        ),
        &report.selections,
        &report.release_curves,
    )
}

fn error_figure(report: &PlanReport) -> GridPlot {
    relative_error_figure(&report.selections, &report.relative_errors)
}

/// The sweep figures: recall@k, the expected number of items released and the mean absolute
/// error against `log₂ ε`.
fn sweep_figures(report: &PlanReport) -> Vec<GridPlot> {
    let Some(sweep) = &report.population else {
        return Vec::new();
    };
    let top = sweep
        .points
        .iter()
        .flat_map(|p| p.utilities.iter().flatten())
        .map(|u| u.top)
        .next()
        .unwrap_or(0);
    let metric =
        |pick: fn(&tally_accounting::key_selection::PopulationUtility) -> f64| -> Vec<Line> {
            (0..report.selections.len())
                .map(|i| {
                    line(
                        i,
                        sweep.points.iter().filter_map(move |p| {
                            let u = p.utilities.get(i)?.as_ref()?;
                            Some((p.epsilon.log2(), pick(u)))
                        }),
                        true,
                    )
                })
                .collect()
        };
    let x_label = SWEEP_X_LABEL.to_owned();
    vec![
        GridPlot {
            title: format!("Predicted recall@{top} by ε"),
            series: names(report),
            x_label: x_label.clone(),
            y_label: format!("recall@{top}"),
            y_axis: YAxis::Linear {
                min: 0.0,
                max: 1.05,
            },
            panels: vec![vec![Panel {
                title: String::new(),
                lines: metric(|u| u.recall),
            }]],
            panel_size: FIGURE_SIZE,
        },
        GridPlot {
            title: "Expected number of items released by ε".into(),
            series: names(report),
            x_label: x_label.clone(),
            y_label: "expected items released".into(),
            y_axis: YAxis::Log,
            panels: vec![vec![Panel {
                title: String::new(),
                lines: metric(|u| u.expected_released),
            }]],
            panel_size: FIGURE_SIZE,
        },
        GridPlot {
            title: "Mean absolute error of released counts by ε".into(),
            series: names(report),
            x_label,
            y_label: "mean |estimate − c| of released items".into(),
            y_axis: YAxis::Log,
            panels: vec![vec![Panel {
                title: String::new(),
                lines: metric(|u| u.mean_absolute_error),
            }]],
            panel_size: FIGURE_SIZE,
        },
    ]
}

/// The section "Which to choose": when each selection compared is the right one, with this
/// plan's numbers.
fn choice_section(report: &PlanReport) -> String {
    let [_, paper, laplace, gaussian] = NAMES;
    let half = |name: &str| {
        report
            .selections
            .iter()
            .find(|s| s.name == name)
            .map(|s| count_text(s.marked[0]))
    };
    let st = &report.selections[0];
    let share = match st.selection {
        KeySelection::SampleThreshold(params) => format!("{:.4}", params.sampling_rate()),
        _ => "—".to_owned(),
    };
    let mut items = vec![format!(
        "<li><b>{}</b> when released counts must carry no added noise (an estimate is a \
         sampled count divided by the sampling rate) and when no party should receive every \
         client's item: only a share {share} of the clients sends anything (less traffic), \
         and in the federated runtime the coins can be flipped by the devices themselves or \
         by a relay. Its price is a larger count before an item shows: released half the \
         time at {} clients.</li>",
        escape(st.name),
        count_text(st.marked[0]),
    )];
    if let Some(count) = half(paper) {
        items.push(format!(
            "<li><b>{}</b> only to reproduce the paper: the same mechanism calibrated by its \
             Theorem 1, released half the time at {count} clients; the exact analysis is \
             never worse at the same (ε, δ).</li>",
            escape(paper)
        ));
    }
    if let Some(count) = half(laplace) {
        items.push(format!(
            "<li><b>{}</b> when a trusted aggregator receives every client's items and rare \
             items matter most: it releases half the time at {count} clients, but every \
             released count carries Laplace noise and every client sends its item.</li>",
            escape(laplace)
        ));
    }
    if let Some(count) = half(gaussian) {
        items.push(format!(
            "<li><b>{}</b> under the same trust when each client contributes many items: its \
             noise grows with the square root of the items per client, Laplace's linearly. \
             With one item per client, as here, it needs more: released half the time at \
             {count} clients.</li>",
            escape(gaussian)
        ));
    }
    format!(
        "<h2>Which to choose</h2>\n<p>All of them release only items that some client holds, \
         never one absent from the data.</p>\n<ul>{}</ul>\n",
        items.join("\n")
    )
}

/// A note under the sweep's table when every selection has the same recall at every `ε` (their
/// lines coincide): recall does not tell them apart, the items released do.
fn recall_note(sweep: &PopulationSweep) -> String {
    let coincide = sweep.points.iter().all(|point| {
        let recalls: Vec<f64> = point.utilities.iter().flatten().map(|u| u.recall).collect();
        recalls
            .iter()
            .all(|r| (r - recalls[0]).abs() < RECALL_TOLERANCE)
    });
    let top = sweep
        .points
        .iter()
        .flat_map(|p| p.utilities.iter().flatten())
        .map(|u| u.top)
        .next();
    match top {
        Some(top) if coincide => format!(
            "<p>Every selection has the same recall@{top} at every ε (within \
             {RECALL_TOLERANCE}): the {top} most common items are common enough for all of \
             them, so their recall lines coincide. The expected number of items released \
             tells them apart; a larger <code>--recall-at</code> reaches the items where they \
             differ.</p>\n"
        ),
        _ => String::new(),
    }
}

/// Recalls closer than this are the same on the page (they print alike to three decimals).
const RECALL_TOLERANCE: f64 = 5e-4;

/// The whole page.
fn page(report: &PlanReport, dir: &Path) -> Result<String> {
    let svg = |plot: &GridPlot, name: &str| inline_svg(plot, dir, name);
    let mut html = page_start(
        "tally plan: what a sample-and-threshold release will show",
        &report.summary,
        &report.plan,
    )?;
    html += &choice_section(report);

    html += "<h2>Release curves</h2>\n<p>The probability that an item held by <i>c</i> \
             clients is released, exact from the binomial law for sample-and-threshold and from \
             the noise law for Laplace and Gaussian thresholding, calibrated for the same \
             (ε, δ) and one item per client.</p>\n";
    html += &selections_table(&report.selections);
    writeln!(
        html,
        "<figure>{}</figure>",
        svg(&release_figure(report), "release-curve.svg")?
    )?;

    html += "<h2>Error of a released estimate</h2>\n<p>The expected relative error \
             E[|estimate − c| / c | released]: for sample-and-threshold the estimate is the \
             sampled count divided by the sampling rate, for the noise-based selections the \
             noisy count that passed the threshold.</p>\n<table><tr><th>true count c</th>";
    for s in &report.selections {
        write!(html, "<th>{}: P[released], error</th>", escape(s.name))?;
    }
    html += "</tr>";
    for &count in &report.table_counts {
        write!(html, "<tr><td>{count}</td>")?;
        for s in &report.selections {
            let error = s
                .selection
                .relative_error(count)
                .map_or_else(|| "—".to_owned(), |e| format!("{:.2}%", 100.0 * e));
            write!(
                html,
                "<td>{:.4}, {error}</td>",
                s.selection.release_probability(count)
            )?;
        }
        html += "</tr>";
    }
    write!(
        html,
        "</table>\n<figure>{}</figure>\n",
        svg(&error_figure(report), "relative-error.svg")?
    )?;

    if let Some(sweep) = &report.population {
        write!(
            html,
            "<h2>Predicted utility on {}</h2>\n<p>{} clients, {} distinct items. For each ε the \
             selections are calibrated again at the same δ; recall@k is the expected share of \
             the k most common items that is released, items released the expected number of \
             distinct items released, and the mean absolute error is that of \
             the released counts (expected total error over expected number released), both \
             exact from each item's law, with no simulation.</p>\n<table><tr><th>ε</th>",
            escape(&sweep.description),
            sweep.clients,
            sweep.items
        )?;
        for s in &report.selections {
            write!(
                html,
                "<th>{}: recall, items released, error</th>",
                escape(s.name)
            )?;
        }
        html += "</tr>";
        for point in &sweep.points {
            write!(html, "<tr><td>{}</td>", point.epsilon)?;
            for utility in point.utilities.iter().take(report.selections.len()) {
                match utility {
                    Some(u) => write!(
                        html,
                        "<td>{:.3}, {:.1}, {:.2}</td>",
                        u.recall, u.expected_released, u.mean_absolute_error
                    )?,
                    None => html += "<td>no parameters</td>",
                }
            }
            html += "</tr>";
        }
        html += "</table>\n";
        html += &recall_note(sweep);
        push_figures(&mut html, &sweep_figures(report), dir, "sweep")?;
    }
    html += &page_end("tally plan");
    Ok(html)
}

#[cfg(test)]
mod tests {
    use crate::key_selection::{PopulationSweep, SweepPoint};
    use tally_accounting::key_selection::PopulationUtility;

    use super::recall_note;

    fn sweep(recalls: &[[f64; 2]]) -> PopulationSweep {
        let utility = |recall| {
            Some(PopulationUtility {
                top: 20,
                recall,
                expected_released: 10.0,
                mean_absolute_error: 1.0,
            })
        };
        PopulationSweep {
            description: "test".into(),
            clients: 100,
            items: 30,
            points: recalls
                .iter()
                .enumerate()
                .map(|(i, pair)| SweepPoint {
                    epsilon: f64::from(u8::try_from(i).unwrap() + 1),
                    utilities: pair.iter().copied().map(utility).collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn coinciding_recall_lines_are_said_to_coincide() {
        let note = recall_note(&sweep(&[[1.0, 1.0], [0.9, 0.9002]]));
        assert!(note.contains("same recall@20 at every ε"), "{note}");
        assert_eq!(recall_note(&sweep(&[[1.0, 1.0], [0.9, 0.8]])), "");
    }
}
