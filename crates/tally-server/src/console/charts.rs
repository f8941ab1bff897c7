//! The console's charts: inline SVG drawn on the server, its labels escaped like any text.

use maud::{Markup, html};
use serde_json::Value;
use tally_messages::LedgerBalance;

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
            role="img" aria-label=(format!("ε spent {} of {}", balance.spent.epsilon, balance.budget.epsilon)) {
            rect x="0" y="0" width=(width) height=(height) fill="#f0f2f5" {}
            rect x=(width - 6.0) y=(reserved_top) width="6" height=((y(spent) - reserved_top).max(0.0)) fill="#e0a030" {}
            line x1="0" y1="0" x2=(width) y2="0" stroke="#9b1c1c" stroke-dasharray="4 3" {}
            path d=(path) fill="none" stroke="#2457c5" stroke-width="2" {}
            text x="2" y=(height + 14.0) font-size="11" fill="#566" { "ε spent over time, up to the budget ε = " (balance.budget.epsilon) }
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
                text x=(label_width + value / largest * bar_width + 4.0) y=(top + 13.0) font-size="12" { (value) }
            }
        }
    }
}
