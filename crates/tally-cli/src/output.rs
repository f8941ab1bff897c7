//! Printing results: aligned tables for people, JSON for machines.
//!
//! Numbers meant for people are rounded: `ε` and `δ` up to four significant digits (never shown
//! below their value), other parameters to the nearest four; the JSON keeps full precision.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
use tally_accounting::Guarantee;
use tally_messages::{
    GuaranteeBody, HeavyHittersRelease, HistogramRelease, ReleaseDiagnosis, ReleasedItem,
};

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)
}

/// Prints a serializable value (a protocol value, a release) as pretty JSON on stdout.
pub(crate) fn print_serialized<T: Serialize>(value: &T) -> anyhow::Result<()> {
    print_json(&serde_json::to_value(value)?)?;
    Ok(())
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

/// The guarantee as a JSON object: its published form, [`GuaranteeBody`].
pub(crate) fn guarantee_json(guarantee: &Guarantee) -> Value {
    // Unwrap safety: a guarantee body is numbers and strings, which always convert.
    serde_json::to_value(GuaranteeBody::from(guarantee)).expect("a guarantee converts to JSON")
}

/// The guarantee in one line of words.
pub(crate) fn guarantee_line(guarantee: &Guarantee) -> String {
    guarantee_body_line(&GuaranteeBody::from(guarantee))
}

/// A published guarantee in one line of words, `ε` and `δ` rounded up to four significant
/// digits (the JSON keeps them whole).
pub(crate) fn guarantee_body_line(guarantee: &GuaranteeBody) -> String {
    let privacy = if guarantee.delta == 0.0 {
        format!("ε = {} (pure)", privacy_number(guarantee.epsilon))
    } else {
        format!("{}", PrivacyPair(guarantee.epsilon, guarantee.delta))
    };
    let collusion = guarantee.collusion.map_or_else(String::new, |collusion| {
        format!(
            "; {}; {}",
            collusion.colluding_text(),
            collusion.floor_text()
        )
    });
    format!(
        "{privacy}-DP in the {} model, {} neighbours; {}; trust model {}{collusion}",
        guarantee.model,
        guarantee.neighbours,
        guarantee.method,
        guarantee.trust_model.name()
    )
}

/// Opens `path` for writing, readable and writable by its owner alone (mode 0600 on Unix, also
/// when the file existed with a wider mode): keys, credentials and device ledgers. With `new`,
/// refuses a file that exists; otherwise truncates it.
///
/// # Errors
///
/// If the file cannot be created or restricted.
pub(crate) fn open_owner_only(path: &Path, new: bool) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if new {
        options.create_new(true);
    } else {
        options.create(true).truncate(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    #[cfg(unix)]
    file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(file)
}

/// Writes `contents` to `path` through [`open_owner_only`] (replacing what it held).
///
/// # Errors
///
/// If the file cannot be created, restricted or written.
#[cfg(feature = "federated")]
pub(crate) fn write_owner_only(path: &Path, contents: &[u8]) -> io::Result<()> {
    open_owner_only(path, false)?.write_all(contents)
}

/// Significant digits of the numbers shown to people.
const SHOWN_DIGITS: i32 = 4;

/// `x ≥ 0` to [`SHOWN_DIGITS`] significant digits, rounded up when `up` (a privacy parameter
/// is never shown below its value) and to the nearest otherwise.
fn to_shown_digits(x: f64, up: bool) -> f64 {
    if !x.is_finite() || x <= 0.0 {
        return x;
    }
    let scale = 10f64.powi(SHOWN_DIGITS - 1 - x.log10().floor() as i32);
    let nearest = (x * scale).round();
    if up && nearest / scale < x {
        (nearest + 1.0) / scale
    } else {
        nearest / scale
    }
}

/// A number for people: plain between 0.001 and 100,000, else in scientific notation.
fn shown(x: f64) -> String {
    if x == 0.0 || (1e-3..1e5).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:.3e}")
    }
}

/// An `ε` or `δ` for people: rounded up to four significant digits.
pub(crate) fn privacy_number(x: f64) -> String {
    shown(to_shown_digits(x, true))
}

/// `(ε = …, δ = …)` for people, both rounded up to four significant digits.
struct PrivacyPair(f64, f64);

impl std::fmt::Display for PrivacyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "(ε = {}, δ = {:.3e})",
            privacy_number(self.0),
            to_shown_digits(self.1, true)
        )
    }
}

/// A document's `parameters` in one line for people: `name value` pairs, names in words,
/// numbers to four significant digits, a nested guarantee as its `(ε, δ)` rounded up.
pub(crate) fn parameters_line(parameters: &Value) -> String {
    match parameters {
        Value::Object(fields) => {
            if let (Some(epsilon), Some(delta)) = (
                fields.get("epsilon").and_then(Value::as_f64),
                fields.get("delta").and_then(Value::as_f64),
            ) {
                return PrivacyPair(epsilon, delta).to_string();
            }
            fields
                .iter()
                .map(|(name, value)| {
                    format!("{} {}", name.replace('_', " "), parameters_line(value))
                })
                .collect::<Vec<_>>()
                .join(", ")
        }
        Value::Number(number) => match number.as_f64() {
            Some(x) if !number.is_u64() && !number.is_i64() => {
                shown(to_shown_digits(x.abs(), false).copysign(x))
            }
            _ => number.to_string(),
        },
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::String(text) => text.clone(),
        Value::Array(values) => format!(
            "[{}]",
            values
                .iter()
                .map(parameters_line)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => "none".to_owned(),
    }
}

/// Whether `--quiet` hid the progress.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Hides all progress (`--quiet`).
pub(crate) fn hide_progress() {
    QUIET.store(true, Ordering::Relaxed);
}

/// A spinner on stderr naming the stage a long run is in; drawn only when stderr is a
/// terminal and `--quiet` is not given, so pipes and JSON consumers see nothing.
pub(crate) struct Stage(ProgressBar);

impl Stage {
    /// Starts a spinner with `message`.
    pub(crate) fn start(message: impl Into<String>) -> Self {
        if QUIET.load(Ordering::Relaxed) {
            return Self(ProgressBar::hidden());
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                // Unwrap safety: the template is a constant that parses.
                .expect("valid template"),
        );
        bar.set_message(message.into());
        bar.enable_steady_tick(Duration::from_millis(120));
        Self(bar)
    }

    /// Moves on to the next stage.
    pub(crate) fn next(&self, message: impl Into<String>) {
        self.0.set_message(message.into());
    }

    /// A callback that shows how many bytes of the input were read, after the stage's
    /// message.
    pub(crate) fn bytes_read(&self) -> impl Fn(u64) + Sync + use<> {
        let bar = self.0.clone();
        let message = bar.message();
        move |bytes| bar.set_message(format!("{message}: {} read", HumanBytes(bytes)))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Prints ranked items as a table: the first `shown` of `rows` (item, count, estimate; `None`
/// where the mechanism releases no count), then how many more there are.
pub(crate) fn print_items(
    rows: &[(String, Option<u64>, Option<f64>)],
    shown: usize,
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out)?;
    writeln!(
        out,
        "  {:>5}  {:<24} {:>10} {:>14}",
        "rank", "item", "count", "estimate"
    )?;
    for (rank, (item, count, estimate)) in rows.iter().take(shown).enumerate() {
        let count = count.map_or_else(|| "-".to_owned(), |c| c.to_string());
        let estimate = estimate.map_or_else(|| "-".to_owned(), |e| format!("{e:.1}"));
        writeln!(
            out,
            "  {:>5}  {item:<24} {count:>10} {estimate:>14}",
            rank + 1
        )?;
    }
    if rows.len() > shown {
        writeln!(
            out,
            "  ... {} more (use --top or --json)",
            rows.len() - shown
        )?;
    }
    Ok(())
}

/// Prints a histogram release for people, the same offline and federated: its title, input,
/// guarantee, parameters, execution and number of released items, then `extra` rows (the seed,
/// the task, the trust), the first `shown` items and the diagnosis.
pub(crate) fn print_histogram_release(
    title: &str,
    release: &HistogramRelease,
    extra: &[(&str, String)],
    shown: usize,
) -> io::Result<()> {
    let mut rows = vec![
        ("input", release.input.clone()),
        ("guarantee", guarantee_body_line(&release.guarantee)),
        ("parameters", parameters_line(&release.parameters)),
        ("execution", release.execution.clone()),
        ("released items", release.released_items.to_string()),
    ];
    rows.extend_from_slice(extra);
    print_fields(title, &rows)?;
    print_items(&item_rows(&release.items), shown)?;
    print_diagnosis(release.diagnosis.as_ref())
}

/// Prints a heavy-hitter release for people, the same offline and federated: its algorithm,
/// input, guarantee, parameters and number of found items, then `extra` rows (the truth
/// scores, the task), the first `shown` items and the diagnosis.
pub(crate) fn print_heavy_hitters_release(
    release: &HeavyHittersRelease,
    extra: &[(&str, String)],
    shown: usize,
) -> io::Result<()> {
    let title = if release.mechanism.contains("heavy hitters") {
        release.mechanism.clone()
    } else {
        format!("{} heavy hitters", release.mechanism)
    };
    let mut rows = vec![
        ("input", release.input.clone()),
        ("guarantee", guarantee_body_line(&release.guarantee)),
        ("parameters", parameters_line(&release.parameters)),
        ("found items", release.found_items.to_string()),
    ];
    rows.extend_from_slice(extra);
    print_fields(&title, &rows)?;
    print_items(&item_rows(&release.items), shown)?;
    print_diagnosis(release.diagnosis.as_ref())
}

/// A release's items as the rows of [`print_items`].
fn item_rows(items: &[ReleasedItem]) -> Vec<(String, Option<u64>, Option<f64>)> {
    items
        .iter()
        .map(|item| (item.item.clone(), item.count, item.estimate))
        .collect()
}

/// After a release's table: why a thin release holds so few items and what would help, on
/// stdout, then the diagnosis's warnings ([`print_warnings`]).
pub(crate) fn print_diagnosis(diagnosis: Option<&ReleaseDiagnosis>) -> io::Result<()> {
    if let Some(diagnosis) = diagnosis
        && !diagnosis.explanation.is_empty()
    {
        let mut out = io::stdout().lock();
        writeln!(out)?;
        for sentence in &diagnosis.explanation {
            writeln!(out, "  {sentence}")?;
        }
    }
    print_warnings(diagnosis);
    Ok(())
}

/// A release's warnings (`δ ≥ 1/n`) on stderr, where a JSON consumer of stdout still sees them.
pub(crate) fn print_warnings(diagnosis: Option<&ReleaseDiagnosis>) {
    print_warning_lines(diagnosis.map_or(&[], |d| &d.warnings));
}

/// `warnings` on stderr, one line each.
pub(crate) fn print_warning_lines(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privacy_numbers_are_rounded_up_to_four_digits() {
        assert_eq!(privacy_number(0.9999502514237878), "1");
        assert_eq!(privacy_number(0.5233783398103751), "0.5234");
        assert_eq!(privacy_number(0.1), "0.1");
        assert_eq!(privacy_number(1.0), "1");
        assert_eq!(privacy_number(21.4), "21.4");
        assert_eq!(privacy_number(0.000_123_41), "1.235e-4");
        assert_eq!(
            PrivacyPair(0.10000030517671259, 9.99999999999998e-9).to_string(),
            "(ε = 0.1001, δ = 1.000e-8)"
        );
        assert_eq!(
            PrivacyPair(2.0, 4.861718314491602e-10).to_string(),
            "(ε = 2, δ = 4.862e-10)"
        );
    }

    #[test]
    fn parameters_read_as_words_and_rounded_numbers() {
        let parameters = serde_json::json!({
            "levels": 10,
            "restricted": true,
            "composition": "tight",
            "sampling_rate": 0.21794661713462468,
            "scale": 9.999969482421875,
            "per_level_guarantee": {"epsilon": 0.5233783398103751, "delta": 9.99999000000941e-9,
                                    "neighbours": "add-remove"},
            "population": 835229,
        });
        assert_eq!(
            parameters_line(&parameters),
            "levels 10, restricted yes, composition tight, sampling rate 0.2179, scale 10, \
             per level guarantee (ε = 0.5234, δ = 1.000e-8), population 835229"
        );
    }
}
