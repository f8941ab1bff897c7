//! Printing results: aligned tables for people, JSON for machines.

use std::io::{self, Write};

use serde_json::Value;
use tally_accounting::Guarantee;

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)
}

/// Prints a title and `label  value` rows with the values aligned.
pub(crate) fn print_fields(title: &str, rows: &[(&str, String)]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{title}")?;
    let width = rows
        .iter()
        .map(|(label, _)| label.chars().count())
        .max()
        .unwrap_or(0);
    for (label, value) in rows {
        writeln!(out, "  {label:<width$}  {value}")?;
    }
    Ok(())
}

/// The guarantee as a JSON object.
pub(crate) fn guarantee_json(guarantee: &Guarantee) -> Value {
    serde_json::json!({
        "epsilon": guarantee.epsilon,
        "delta": guarantee.delta,
        "neighbours": guarantee.neighbours.name(),
        "method": guarantee.analysis,
    })
}

/// The guarantee in one line of words.
pub(crate) fn guarantee_line(guarantee: &Guarantee) -> String {
    format!(
        "(ε = {}, δ = {:.3e})-DP, {} neighbours, {} analysis",
        guarantee.epsilon, guarantee.delta, guarantee.neighbours, guarantee.analysis
    )
}
