//! `tally plan triehh++ --report DIR`: renders the TrieHH++ report as `DIR/index.html`
//! (self-contained: inline SVG and CSS) and writes `DIR/plan.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Result;
use crate::key_selection::parameters_text;
use crate::triehh_plus::{TriePlusReport, TrieSweep};
use tally_protocol::shown::PrivacyPair;
use tally_repro::figures::{GridPlot, Panel, YAxis};

use crate::page::{
    FIGURE_SIZE, LevelWords, SWEEP_X_LABEL, escape, inline_svg, level_section, line, page_end,
    page_start, push_figures, round_error_figure, write_documents,
};

/// Writes `dir/index.html` and `dir/plan.json`, creating `dir` if needed, and
/// returns the page's path.
///
/// # Errors
///
/// [`crate::ReportError`] if a figure cannot be drawn or a file written.
pub fn write(report: &TriePlusReport, dir: &Path) -> Result<PathBuf> {
    write_documents(dir, &report.document(), |dir| page(report, dir))
}

/// Predicted recall@k and the expected number of words found against `log₂ ε`.
fn sweep_figures(sweep: &TrieSweep) -> Vec<GridPlot> {
    let top = sweep
        .points
        .iter()
        .find_map(|p| p.utility)
        .map_or(0, |u| u.top);
    let most_found = sweep
        .points
        .iter()
        .filter_map(|p| Some(p.utility?.expected_found))
        .fold(0.0, f64::max);
    let metric = |pick: fn(&crate::triehh_plus::TrieUtility) -> f64| {
        vec![line(
            0,
            sweep
                .points
                .iter()
                .filter_map(|p| Some((p.epsilon.log2(), pick(&p.utility?)))),
            true,
        )]
    };
    let figure = |title: String, y_label: String, y_axis, lines| GridPlot {
        title,
        series: vec!["TrieHH++ (restricted)".to_owned()],
        x_label: SWEEP_X_LABEL.to_owned(),
        y_label,
        y_axis,
        panels: vec![vec![Panel {
            title: String::new(),
            lines,
        }]],
        panel_size: FIGURE_SIZE,
    };
    vec![
        figure(
            format!("Predicted recall@{top} of the heavy hitters by ε"),
            format!("recall@{top}"),
            YAxis::Linear {
                min: 0.0,
                max: 1.05,
            },
            metric(|u| u.recall),
        ),
        figure(
            "Expected number of words found by ε".to_owned(),
            "expected words found".to_owned(),
            YAxis::Linear {
                min: 0.0,
                max: 1.05 * most_found.max(1.0),
            },
            metric(|u| u.expected_found),
        ),
    ]
}

/// The whole page.
fn page(report: &TriePlusReport, dir: &Path) -> Result<String> {
    let svg = |plot: &GridPlot, name: &str| inline_svg(plot, dir, name);
    let mut html = page_start(
        "tally plan: what TrieHH++ heavy hitters will find",
        &report.summary,
        &report.plan.document(),
    )?;

    html += &level_section(
        &LevelWords {
            heading: "One level's release curve".to_owned(),
            unit: "level",
            rounds: format!("{} levels", report.plan.levels),
            holders: "devices",
            guarantee: PrivacyPair(report.plan.epsilon, report.plan.delta),
        },
        |parameters| {
            format!(
                "Every level is one sample-and-threshold round ({parameters}) over the \
                 devices' prefixes, with fresh coins. The probability that a prefix held by \
                 <i>c</i> devices is released at its level, exact from the binomial law: \
                 released "
            )
        },
        &report.level,
        dir,
    )?;
    write!(
        html,
        "<h2>Error of a released estimate</h2>\n<p>A released prefix's estimate is its \
         sampled count divided by the sampling rate; a found word's estimate is its terminal \
         prefix's.</p>\n<figure>{}</figure>\n",
        svg(&round_error_figure(&report.level), "relative-error.svg")?
    )?;

    if let Some(sweep) = &report.population {
        write!(
            html,
            "<h2>Predicted heavy hitters on {}</h2>\n<p>{} devices, {} distinct words, {} \
             character(s) per level. A word is found when each of its level prefixes is \
             released; with devices reporting only below a surviving prefix and fresh coins \
             per level, P[found] = Π<sub>ℓ</sub> P[Bin(c<sub>ℓ</sub>, p<sub>s</sub>) ≥ τ], \
             c<sub>ℓ</sub> the devices whose word has the word's level-ℓ prefix: exact, with \
             no simulation. For each ε the levels are planned again at the same δ.</p>\n\
             <table><tr><th>ε</th><th>per level</th><th>recall@{}</th>\
             <th>expected words found</th><th>mean |estimate − c| of found words</th></tr>",
            escape(&sweep.description),
            sweep.clients,
            sweep.words,
            report.segment,
            sweep
                .points
                .iter()
                .find_map(|p| p.utility)
                .map_or(0, |u| u.top),
        )?;
        for point in &sweep.points {
            match (&point.selection, &point.utility) {
                (Some(selection), Some(u)) => write!(
                    html,
                    "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td>{:.2}</td></tr>",
                    point.epsilon,
                    escape(&parameters_text(selection)),
                    u.recall,
                    u.expected_found,
                    u.mean_absolute_error
                )?,
                _ => write!(
                    html,
                    "<tr><td>{}</td><td colspan=\"4\">no parameters</td></tr>",
                    point.epsilon
                )?,
            }
        }
        html += "</table>\n";
        push_figures(&mut html, &sweep_figures(sweep), dir, "sweep")?;
        write!(
            html,
            "<h2>The most common words at ε = {}</h2>\n<table><tr><th>word</th>\
             <th>devices</th><th>P[found]</th></tr>",
            report.plan.epsilon
        )?;
        for (word, count, found) in &sweep.top_words {
            write!(
                html,
                "<tr><td>{}</td><td>{count}</td><td>{found:.4}</td></tr>",
                escape(word)
            )?;
        }
        html += "</table>\n";
    }
    html += &page_end("tally plan triehh++");
    Ok(html)
}
