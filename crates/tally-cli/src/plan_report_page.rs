//! `tally plan ... --report DIR`: renders the report as `DIR/index.html` (self-contained:
//! inline SVG and CSS, nothing loaded from elsewhere) and writes `DIR/plan.json`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use tally_accounting::key_selection::KeySelection;
use tally_cli::plan_report::{
    Calibrated, NAMES, PlanReport, PopulationSweep, RoundCurves, count_text, parameters_text,
};
use tally_repro::figures::{GridPlot, Line, Panel, Point, YAxis};

use tally_protocol::shown::parameter_rows;

/// The size of a report figure's one panel: the page's width.
pub(crate) const FIGURE_SIZE: (u32, u32) = (880, 420);

/// Writes `dir/index.html` and `dir/plan.json`, creating `dir` if needed.
pub(crate) fn write(report: &PlanReport, dir: &Path) -> Result<()> {
    write_documents(dir, &report.document(), |dir| page(report, dir))
}

/// Writes `document` as `dir/plan.json` and the page `page` renders (its figures' files
/// named inside `dir`) as `dir/index.html`, creating `dir` if needed, and says where on
/// stderr (stdout keeps the plan, a table or its JSON).
pub(crate) fn write_documents(
    dir: &Path,
    document: &serde_json::Value,
    page: impl FnOnce(&Path) -> Result<String>,
) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--report {}: a file is in the way; give a directory (it is created if missing)",
            dir.display()
        );
    }
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the report directory {}", dir.display()))?;
    let json = serde_json::to_string_pretty(document)? + "\n";
    let html = page(dir)?;
    for (name, text) in [("plan.json", json), ("index.html", html)] {
        let path = dir.join(name);
        fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "report: {} (its numbers in {})",
        dir.join("index.html").display(),
        dir.join("plan.json").display()
    );
    Ok(())
}

/// Escapes text for HTML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A count, or a dash where none reaches the probability.
pub(crate) fn count_cell(count: Option<u64>) -> String {
    count.map_or_else(|| "—".to_owned(), |c| c.to_string())
}

fn names(report: &PlanReport) -> Vec<String> {
    report
        .selections
        .iter()
        .map(|s| s.name.to_owned())
        .collect()
}

pub(crate) fn line(series: usize, points: impl Iterator<Item = (f64, f64)>, markers: bool) -> Line {
    Line {
        series,
        points: points.map(|(x, y)| Point { x, y, error: 0.0 }).collect(),
        markers,
    }
}

/// The release curves, with the 50% and 95% points of each selection as dots.
fn release_figure(report: &PlanReport) -> GridPlot {
    release_curves_figure(
        format!(
            "Release probability (ε = {}, δ = {:e}); dots at 50% and 95%",
            report.epsilon, report.delta
        ),
        &report.selections,
        &report.release_curves,
    )
}

/// The release curves `curves` of `selections` (in the same order) titled `title`, with the
/// 50% and 95% points of each as dots.
pub(crate) fn release_curves_figure(
    title: String,
    selections: &[Calibrated],
    curves: &[Vec<(u64, f64)>],
) -> GridPlot {
    let mut lines: Vec<Line> = curves
        .iter()
        .enumerate()
        .map(|(i, curve)| line(i, curve.iter().map(|&(c, p)| (c as f64, p)), false))
        .collect();
    for (i, selection) in selections.iter().enumerate() {
        for count in selection.marked.iter().flatten() {
            let p = selection.selection.release_probability(*count);
            lines.push(line(i, std::iter::once((*count as f64, p)), true));
        }
    }
    GridPlot {
        title,
        series: selections.iter().map(|s| s.name.to_owned()).collect(),
        x_label: "true count c (clients holding the item)".into(),
        y_label: "P[released | c]".into(),
        y_axis: YAxis::Linear {
            min: 0.0,
            max: 1.05,
        },
        panels: vec![vec![Panel {
            title: String::new(),
            lines,
        }]],
        panel_size: FIGURE_SIZE,
    }
}

/// The release curves of the round `curves` every level runs and of the selections compared
/// with it, titled `title`, with their 50% and 95% points as dots.
pub(crate) fn round_release_figure(title: String, curves: &RoundCurves) -> GridPlot {
    release_curves_figure(title, &curves.selections, &curves.release_curves)
}

/// The expected relative errors of the round `curves` every level runs and of the selections
/// compared with it.
pub(crate) fn round_error_figure(curves: &RoundCurves) -> GridPlot {
    relative_error_figure(&curves.selections, &curves.relative_errors)
}

/// The paragraph saying what the round `curves` every level runs is compared with, and the
/// table of the counts each selection releases with probability 50%, 95% and 99.9%.
pub(crate) fn round_comparison(curves: &RoundCurves) -> String {
    let paragraph = match curves.compared_at {
        Some((epsilon, delta)) => format!(
            "<p>Beside it, Laplace and Gaussian thresholding calibrated at the level's share of \
             the guarantee by basic composition, (ε/L, δ/L) = ({epsilon:.4}, {delta:e}), one \
             item per client: what noise-based key selection would release in one level at \
             the same total (ε, δ).</p>\n"
        ),
        None => "<p>Laplace and Gaussian thresholding are not drawn: their calibrations hold \
                 for add/remove neighbours, and this plan is for replace-one neighbours.</p>\n"
            .to_owned(),
    };
    paragraph + &selections_table(&curves.selections)
}

/// The table of `selections`: each one's parameters and the counts it releases with
/// probability 50%, 95% and 99.9%.
fn selections_table(selections: &[Calibrated]) -> String {
    let mut table = "<table><tr><th>selection</th><th>parameters</th><th>released 50%</th>\
                     <th>released 95%</th><th>released 99.9%</th></tr>"
        .to_owned();
    for s in selections {
        table += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(s.name),
            escape(&parameters_text(&s.selection)),
            count_cell(s.marked[0]),
            count_cell(s.marked[1]),
            count_cell(s.release_999)
        );
    }
    table + "</table>\n"
}

fn error_figure(report: &PlanReport) -> GridPlot {
    relative_error_figure(&report.selections, &report.relative_errors)
}

/// The expected relative errors `errors` of `selections` (in the same order).
pub(crate) fn relative_error_figure(
    selections: &[Calibrated],
    errors: &[Vec<(u64, f64)>],
) -> GridPlot {
    GridPlot {
        title: "Expected relative error of a released estimate".into(),
        series: selections.iter().map(|s| s.name.to_owned()).collect(),
        x_label: "true count c (where released with probability ≥ 1%)".into(),
        y_label: "E[|estimate − c| / c | released]".into(),
        y_axis: YAxis::Log,
        panels: vec![vec![Panel {
            title: String::new(),
            lines: errors
                .iter()
                .enumerate()
                .map(|(i, e)| line(i, e.iter().map(|&(c, r)| (c as f64, r)), false))
                .collect(),
        }]],
        panel_size: FIGURE_SIZE,
    }
}

/// The horizontal axis of a figure over the sweep of ε.
pub(crate) const SWEEP_X_LABEL: &str = "log₂ ε (−2 is ε = 0.25, 0 is ε = 1, 3 is ε = 8)";

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

pub(crate) const STYLE: &str = "body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1100px;\
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}h1{font-size:1.6em}h2{font-size:1.25em;\
margin-top:1.8em;border-bottom:1px solid #ccc}table{border-collapse:collapse;margin:1em 0}\
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}th{background:#f3f3f3}\
td:first-child,th:first-child{text-align:left}figure{margin:1em 0}figure svg{max-width:100%;\
height:auto}.summary{background:#f6f8fa;border-left:4px solid #1f77b4;padding:.8em 1em}\
@media print{body{max-width:none}figure,table{break-inside:avoid}}";

/// `plot` as inline SVG (`dir/name` names it in an error).
pub(crate) fn inline_svg(plot: &GridPlot, dir: &Path, name: &str) -> Result<String> {
    Ok(plot.to_svg_string(&dir.join(name))?)
}

/// Appends each of `plots` to `html` as an inline figure, its file named `{prefix}-{i}.svg`
/// in `dir`.
pub(crate) fn push_figures(
    html: &mut String,
    plots: &[GridPlot],
    dir: &Path,
    prefix: &str,
) -> Result<()> {
    for (i, plot) in plots.iter().enumerate() {
        let figure = inline_svg(plot, dir, &format!("{prefix}-{i}.svg"))?;
        writeln!(html, "<figure>{figure}</figure>")?;
    }
    Ok(())
}

/// The end of a report page that `command` writes.
pub(crate) fn page_end(command: &str) -> String {
    format!(
        "<p><small>Written by <code>{command}</code>; the numbers are in \
         <code>plan.json</code>. The formulas and their sources: \
         docs/privacy/planner.md.</small></p>\n</body></html>\n"
    )
}

/// The start of a report page titled `title`: the head, the summary, and a section "The plan"
/// with a row per field of the plan's `--json` document, for people: names in words, `ε` and
/// `δ` rounded up to four significant digits, other numbers to the nearest four.
pub(crate) fn page_start(title: &str, summary: &str, plan: &serde_json::Value) -> Result<String> {
    let mut html = String::new();
    write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n\
         <p class=\"summary\">{}</p>\n<h2>The plan</h2>\n<table>",
        escape(summary)
    )?;
    if let Some(fields) = plan.as_object() {
        for (name, value) in parameter_rows(fields) {
            write!(
                html,
                "<tr><td>{}</td><td>{}</td></tr>",
                escape(&name),
                escape(&value)
            )?;
        }
    }
    html += "</table>\n";
    Ok(html)
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
    use tally_accounting::key_selection::PopulationUtility;
    use tally_cli::plan_report::{PopulationSweep, SweepPoint};

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
