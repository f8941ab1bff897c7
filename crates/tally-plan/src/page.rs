//! The reports' pages: `DIR/index.html` (self-contained: inline SVG and CSS, nothing loaded
//! from elsewhere) beside `DIR/plan.json`, one module per planner.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use tally_protocol::shown::{PrivacyPair, parameter_rows};
use tally_repro::figures::{GridPlot, Line, Panel, Point, YAxis};

use crate::ReportError;
use crate::key_selection::{Calibrated, RoundCurves, parameters_text};

pub mod domain;
pub mod items;
pub mod key_selection;
pub mod quantiles;
pub mod triehh_plus;

/// What writing a page gives.
pub(crate) type Result<T, E = ReportError> = std::result::Result<T, E>;

/// The size of a report figure's one panel: the page's width.
pub(crate) const FIGURE_SIZE: (u32, u32) = (880, 420);

/// Writes `document` as `dir/plan.json` and the page `page` renders (its figures' files
/// named inside `dir`) as `dir/index.html`, creating `dir` if needed, and returns the page's
/// path.
///
/// # Errors
///
/// [`ReportError::NotADirectory`] if `dir` is a file, [`ReportError::CreateDirectory`] or
/// [`ReportError::Write`] if it cannot be created or written, and the page's own error.
pub fn write_documents(
    dir: &Path,
    document: &serde_json::Value,
    page: impl FnOnce(&Path) -> Result<String>,
) -> Result<PathBuf> {
    if dir.exists() && !dir.is_dir() {
        return Err(ReportError::NotADirectory(dir.to_owned()));
    }
    fs::create_dir_all(dir).map_err(|source| ReportError::CreateDirectory {
        path: dir.to_owned(),
        source,
    })?;
    let json = serde_json::to_string_pretty(document)? + "\n";
    let html = page(dir)?;
    for (name, text) in [("plan.json", json), ("index.html", html)] {
        let path = dir.join(name);
        if let Err(source) = fs::write(&path, text) {
            return Err(ReportError::Write { path, source });
        }
    }
    Ok(dir.join("index.html"))
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

pub(crate) fn line(series: usize, points: impl Iterator<Item = (f64, f64)>, markers: bool) -> Line {
    Line {
        series,
        points: points.map(|(x, y)| Point { x, y, error: 0.0 }).collect(),
        markers,
    }
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

/// What a report calls its levels in [`level_section`], the section on the round they run.
pub(crate) struct LevelWords<'a> {
    /// The section's heading.
    pub heading: String,
    /// One level, in the figure's title: `level`, or `round` for a binary search's.
    pub unit: &'a str,
    /// How many rounds the release runs in all, with their noun: `4 levels`.
    pub rounds: String,
    /// What a released count counts: `values`, `devices`.
    pub holders: &'a str,
    /// The release's whole guarantee.
    pub guarantee: PrivacyPair,
}

/// The section of a report on the round `curves` every level runs, in `words`: a paragraph
/// opening with `opening` of the round's parameters (it ends where the counts the round
/// releases half the time, 95% and 99.9% of the time follow), [`round_comparison`], and the
/// release curves' figure, named `release-curve.svg` in `dir`.
pub(crate) fn level_section(
    words: &LevelWords<'_>,
    opening: impl FnOnce(&str) -> String,
    curves: &RoundCurves,
    dir: &Path,
) -> Result<String> {
    let round = curves.round();
    let LevelWords {
        heading,
        unit,
        rounds,
        holders,
        guarantee,
    } = words;
    let figure = round_release_figure(
        format!(
            "One {unit}'s release probability ({rounds}, {guarantee} in all); dots at 50% and 95%"
        ),
        curves,
    );
    Ok(format!(
        "<h2>{heading}</h2>\n<p>{}half the time from {} {holders}, 95% from {}, 99.9% from \
         {}.</p>\n{}<figure>{}</figure>\n",
        opening(&escape(&parameters_text(&round.selection))),
        count_cell(round.marked[0]),
        count_cell(round.marked[1]),
        count_cell(round.release_999),
        round_comparison(curves),
        inline_svg(&figure, dir, "release-curve.svg")?
    ))
}

/// The paragraph saying what the round `curves` every level runs is compared with, and the
/// table of the counts each selection releases with probability 50%, 95% and 99.9%.
pub(crate) fn round_comparison(curves: &RoundCurves) -> String {
    let paragraph = match curves.compared_at {
        Some((epsilon, delta)) => format!(
            "<p>Beside it, Laplace and Gaussian thresholding calibrated at the level's share of \
             the guarantee by basic composition, {}, one item per client: what noise-based key \
             selection would release in one level at the same total (ε, δ).</p>\n",
            PrivacyPair(epsilon, delta)
        ),
        None => "<p>Laplace and Gaussian thresholding are not drawn: their calibrations hold \
                 for add/remove neighbours, and this plan is for replace-one neighbours.</p>\n"
            .to_owned(),
    };
    paragraph + &selections_table(&curves.selections)
}

/// The table of `selections`: each one's parameters and the counts it releases with
/// probability 50%, 95% and 99.9%.
pub(crate) fn selections_table(selections: &[Calibrated]) -> String {
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
