//! The console's charts: inline SVG drawn on the server, its labels escaped like any text.

use maud::{Markup, html};
use serde_json::Value;
use tally_messages::LedgerBalance;
use tally_protocol::shown::{estimate_number, privacy_number};

use super::release_curve::ReleaseCurves;

/// Width and height of a budget chart.
const BUDGET_SIZE: (f64, f64) = (360.0, 120.0);
/// The most bars one chart draws.
const MAX_BARS: usize = 40;

/// The population's ε spent over time (a step per debit, from its creation to the last debit
/// or now), under its budget; what running tasks reserve is drawn on top at the right.
pub(super) fn budget(created_at: i64, balance: &LedgerBalance) -> Markup {
    let (width, height) = BUDGET_SIZE;
    let budget = balance.budget.epsilon.max(f64::MIN_POSITIVE);
    let now = crate::runtime::unix_now();
    let last = balance.entries.iter().map(|e| e.at).max().unwrap_or(now);
    let end = now.max(last).max(created_at + 1);
    let span = (end - created_at) as f64;
    let x = |at: i64| (at - created_at) as f64 / span * width;
    let y = |epsilon: f64| height - (epsilon / budget).clamp(0.0, 1.0) * height;
    let mut entries: Vec<_> = balance.entries.iter().collect();
    entries.sort_by_key(|e| e.at);
    let mut spent = 0.0;
    let mut path = format!("M0,{:.1}", y(0.0));
    for entry in entries {
        path.push_str(&format!(
            " H{:.1} V{:.1}",
            x(entry.at),
            y(spent + entry.amount.epsilon)
        ));
        spent += entry.amount.epsilon;
    }
    path.push_str(&format!(" H{width:.1}"));
    let reserved_top = y(spent + balance.reserved.epsilon);
    html! {
        svg.budget width=(width) height=(height + 16.0) viewBox=(format!("0 -2 {width} {}", height + 18.0))
            role="img" aria-label=(format!("ε spent {} of {}", privacy_number(balance.spent.epsilon), privacy_number(balance.budget.epsilon))) {
            rect x="0" y="0" width=(width) height=(height) fill="#f0f2f5" {}
            rect x=(width - 6.0) y=(format!("{reserved_top:.1}")) width="6" height=(format!("{:.1}", (y(spent) - reserved_top).max(0.0))) fill="#e0a030" {}
            line x1="0" y1="0" x2=(width) y2="0" stroke="#9b1c1c" stroke-dasharray="4 3" {}
            path d=(path) fill="none" stroke="#2457c5" stroke-width="2" {}
            text x="2" y=(height + 14.0) font-size="11" fill="#566" { "ε spent over time, up to the budget ε = " (privacy_number(balance.budget.epsilon)) }
        }
    }
}

/// A round's cohort so far against the cohort that closes it.
pub(super) fn progress(uploads: u64, target: u64) -> Markup {
    let filled = if target == 0 {
        1.0
    } else {
        (uploads as f64 / target as f64).min(1.0)
    };
    html! {
        svg width="120" height="12" role="img" aria-label=(format!("{uploads} of {target}")) {
            rect x="0" y="0" width="120" height="12" fill="#e4e7ec" {}
            rect x="0" y="0" width=(format!("{:.1}", filled * 120.0)) height="12" fill="#2457c5" {}
        }
    }
}

/// A bar chart of rows of a release: each row's first text field against its first numeric
/// field; nothing if the rows have no such pair.
pub(super) fn bars(rows: &[Value]) -> Markup {
    let pair = |row: &Value| {
        let fields = row.as_object()?;
        let label = fields.values().find_map(Value::as_str)?;
        let value = fields.values().find_map(Value::as_f64)?;
        Some((label.to_owned(), value))
    };
    let bars: Vec<(String, f64)> = rows.iter().take(MAX_BARS).filter_map(pair).collect();
    let largest = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max);
    if bars.is_empty() || largest <= 0.0 {
        return html! {};
    }
    let (label_width, bar_width, row_height) = (160.0, 320.0, 18.0);
    let height = row_height * bars.len() as f64;
    html! {
        svg.bars width=(label_width + bar_width + 80.0) height=(height) role="img" aria-label="released counts" {
            @for (index, (label, value)) in bars.iter().enumerate() {
                @let top = index as f64 * row_height;
                text x=(label_width - 6.0) y=(top + 13.0) font-size="12" text-anchor="end" { (label) }
                rect x=(label_width) y=(top + 3.0) width=(format!("{:.1}", value / largest * bar_width)) height=(row_height - 6.0) fill="#2457c5" {}
                text x=(label_width + value / largest * bar_width + 4.0) y=(top + 13.0) font-size="12" { (estimate_number(*value)) }
            }
        }
    }
}

/// The plot area of a release-curve chart: left, top, width, height.
const CURVE_AREA: (f64, f64, f64, f64) = (44.0, 22.0, 640.0, 220.0);

/// The colour and dash pattern of each selection's curve, by its key.
fn curve_stroke(key: &str) -> (&'static str, &'static str) {
    match key {
        "sample-threshold" => ("#2457c5", "none"),
        "laplace" => ("#c0392b", "6 3"),
        _ => ("#2a8a50", "2 3"),
    }
}

/// The release curves, `P[released | c]` against the true count `c`, with the counts
/// sample-and-threshold releases with probability 50% and 95% marked, and a legend below.
///
/// Each curve is a polyline in the plot's own coordinates, `c` across and `1 − P` down (a
/// nested `svg` scales them to the plot), so that the points on the page are the computed
/// ones, to four decimals.
pub(super) fn release_curves(plan: &ReleaseCurves) -> Markup {
    let (left, top, width, height) = CURVE_AREA;
    let max = plan.max_count.max(1) as f64;
    // Positions to a tenth of a pixel.
    let tenth = |v: f64| (v * 10.0).round() / 10.0;
    let x = |count: u64| tenth(left + count as f64 / max * width);
    let y = |probability: f64| tenth(top + (1.0 - probability) * height);
    let legend_top = top + height + 50.0;
    let total_height = legend_top + 18.0 * plan.curves.len() as f64;
    // Sample-and-threshold's marked counts, each with its release probability.
    let marks: Vec<(f64, u64, f64)> = plan.curves.first().map_or_else(Vec::new, |curve| {
        super::release_curve::MARKED_PROBABILITIES
            .iter()
            .zip(curve.marked)
            .filter_map(|(&probability, count)| {
                let count = count.filter(|&c| c <= plan.max_count)?;
                Some((
                    probability,
                    count,
                    curve.selection.release_probability(count),
                ))
            })
            .collect()
    });
    html! {
        svg #release-curve width=(left + width + 24.0) height=(total_height) role="img"
            aria-label="probability that an item is released against the number of devices holding it" {
            rect x=(left) y=(top) width=(width) height=(height) fill="#f0f2f5" {}
            @for probability in [0.0, 0.25, 0.5, 0.75, 1.0] {
                line x1=(left) y1=(y(probability)) x2=(left + width) y2=(y(probability)) stroke="#d5d9e0" {}
                text x=(left - 4.0) y=(y(probability) + 4.0) font-size="11" text-anchor="end" { (probability) }
            }
            @for count in [0, plan.max_count / 2, plan.max_count] {
                text x=(x(count)) y=(top + height + 14.0) font-size="11" text-anchor="middle" { (count) }
            }
            text x=(left + width / 2.0) y=(top + height + 27.0) font-size="11" text-anchor="middle" fill="#566" {
                "true count c (devices holding the item)"
            }
            text x=(left) y="12" font-size="11" fill="#566" { "P[released | c]" }
            svg x=(left) y=(top) width=(width) height=(height) viewBox=(format!("0 0 {max} 1"))
                preserveAspectRatio="none" {
                @for curve in &plan.curves {
                    @let (colour, dash) = curve_stroke(curve.key);
                    polyline data-key=(curve.key) points=(polyline_points(&curve.points)) fill="none"
                        stroke=(colour) stroke-width="2" stroke-dasharray=(dash) vector-effect="non-scaling-stroke" {}
                }
            }
            @for (probability, count, reached) in &marks {
                line x1=(x(*count)) y1=(top) x2=(x(*count)) y2=(top + height) stroke="#2457c5" stroke-dasharray="3 3" {}
                circle cx=(x(*count)) cy=(y(*reached)) r="3.5" fill="#2457c5" {}
                text x=(x(*count) + 5.0) y=(y(*reached) + 14.0) font-size="11" fill="#1d2330" {
                    (probability * 100.0) "%: c = " (count)
                }
            }
            @for (index, curve) in plan.curves.iter().enumerate() {
                @let (colour, dash) = curve_stroke(curve.key);
                @let row = legend_top + 18.0 * index as f64;
                line x1=(left) y1=(row - 4.0) x2=(left + 28.0) y2=(row - 4.0) stroke=(colour) stroke-width="2" stroke-dasharray=(dash) {}
                text x=(left + 36.0) y=(row) font-size="12" { (curve.name()) ": " (curve.parameters()) }
            }
        }
    }
}

/// A curve's points as `c,1−P` pairs, `1 − P` to four decimals.
fn polyline_points(points: &[(u64, f64)]) -> String {
    points
        .iter()
        .map(|(count, probability)| format!("{count},{:.4}", 1.0 - probability))
        .collect::<Vec<_>>()
        .join(" ")
}
