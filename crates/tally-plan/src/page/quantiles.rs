//! `tally plan quantiles --report DIR`: renders the quantiles report as `DIR/index.html`
//! (self-contained: inline SVG and CSS) and writes `DIR/plan.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::Result;
use crate::quantiles::QuantilesReport;
use tally_protocol::shown::PrivacyPair;
use tally_repro::figures::GridPlot;
use tally_sim::values_release::QuantileMethod;

use crate::page::{
    LevelWords, escape, inline_svg, level_section, page_end, page_start, round_error_figure,
    write_documents,
};

/// Writes `dir/index.html` and `dir/plan.json`, creating `dir` if needed, and
/// returns the page's path.
///
/// # Errors
///
/// [`crate::ReportError`] if a figure cannot be drawn or a file written.
pub fn write(report: &QuantilesReport, dir: &Path) -> Result<PathBuf> {
    write_documents(dir, &report.document(), |dir| page(report, dir))
}

/// The whole page.
fn page(report: &QuantilesReport, dir: &Path) -> Result<String> {
    let svg = |plot: &GridPlot, name: &str| inline_svg(plot, dir, name);
    let plan = &report.plan;
    let mut html = page_start(
        "tally plan: what a quantile release will resolve",
        &report.summary,
        &plan.document(),
    )?;
    let (unit, rounds) = match plan.method {
        QuantileMethod::Hierarchical => (
            "level",
            format!(
                "Level ℓ of the tree splits the range into {}<sup>ℓ</sup> equal buckets; every \
             client reports its value's bucket at every level",
                plan.branching
            ),
        ),
        QuantileMethod::BinarySearch => (
            "round",
            format!(
                "Each of the {} searches asks {} rounds of two buckets (at or below the split, \
             above it), halving its interval every round",
                plan.searches, plan.levels
            ),
        ),
    };
    html += &level_section(
        &LevelWords {
            heading: format!("Release curve of every {unit}"),
            unit,
            rounds: format!("{} rounds", plan.rounds.rounds),
            holders: "values",
            guarantee: PrivacyPair(plan.guarantee.epsilon, plan.guarantee.delta),
        },
        |parameters| {
            format!(
                "{rounds}. Every round is one sample-and-threshold histogram ({parameters}) \
                 with fresh coins, so a bucket holding <i>c</i> values is released with the \
                 probability below, exact from the binomial law: "
            )
        },
        &report.level,
        dir,
    )?;
    write!(
        html,
        "<h2>Error of a released bucket</h2>\n<p>A released bucket's estimate is its sampled \
         count divided by the sampling rate; a suppressed bucket counts 0.</p>\n\
         <figure>{}</figure>\n",
        svg(&round_error_figure(&report.level), "relative-error.svg")?
    )?;

    writeln!(html, "<h2>The {unit}s</h2>")?;
    if let Some(prediction) = &report.population {
        write!(
            html,
            "<p>On {} ({} values), exact from each bucket's binomial law, with no \
             simulation.</p>\n<table><tr><th>level</th><th>bucket width (share of the \
             range)</th><th>occupied buckets</th><th>expected buckets released</th>\
             <th>expected share of the values counted</th><th>P[every occupied bucket \
             released]</th></tr>",
            escape(&prediction.description),
            prediction.clients
        )?;
        for l in &prediction.levels {
            write!(
                html,
                "<tr><td>{}</td><td>{:.3e}</td><td>{}</td><td>{:.1}</td><td>{:.2}%</td>\
                 <td>{:.4}</td></tr>",
                l.level,
                plan.bucket_width(l.level),
                l.occupied,
                l.expected_released,
                100.0 * l.expected_share,
                l.all_released
            )?;
        }
        write!(
            html,
            "</table>\n<p>A rank counts each value through at most one bucket per level, so \
             the suppressed shares summed over the levels, {:.2}%, bound the expected share of \
             the values a quantile's rank misses through suppressed buckets (a bound, not the \
             error: the sampling error of released buckets and the normalisation by the \
             estimated total come on top).</p>\n",
            100.0 * prediction.suppressed_share_bound()
        )?;
        html += "<h3>The bound over a sweep of ε</h3>\n<p>The release planned again at each \
                 ε (the same levels, δ and rules), and Laplace and Gaussian thresholding at the \
                 level's share of each plan's guarantee, run at every level instead: the \
                 suppressed shares summed over the levels, exact from each selection's law.</p>\n\
                 <table><tr><th>ε</th>";
        if let Some(first) = prediction.sweep.first() {
            for (name, _) in &first.bounds {
                write!(html, "<th>{}</th>", escape(name))?;
            }
        }
        html += "</tr>";
        for point in &prediction.sweep {
            write!(html, "<tr><td>{}</td>", point.epsilon)?;
            for (_, bound) in &point.bounds {
                match bound {
                    Some(bound) => write!(html, "<td>{:.2}%</td>", 100.0 * bound)?,
                    None => html += "<td>no parameters</td>",
                }
            }
            html += "</tr>";
        }
        html += "</table>\n";
    } else {
        let width = match plan.method {
            QuantileMethod::Hierarchical => "bucket width (share of the range)",
            QuantileMethod::BinarySearch => "interval width after the round (share of the range)",
        };
        write!(html, "<table><tr><th>{unit}</th><th>{width}</th></tr>")?;
        for l in 1..=plan.levels {
            write!(
                html,
                "<tr><td>{l}</td><td>{:.3e}</td></tr>",
                plan.bucket_width(l)
            )?;
        }
        html += "</table>\n";
    }
    html += &page_end("tally plan quantiles");
    Ok(html)
}
