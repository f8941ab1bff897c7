//! Printing results: aligned tables for people, JSON for machines.
//!
//! Numbers meant for people are rounded by [`tally_protocol::shown`], as the console rounds
//! them: `ε` and `δ` up to four significant digits (never shown below their value), other
//! parameters to the nearest four; the JSON keeps full precision.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::Value;
use tally_accounting::Guarantee;
use tally_messages::{
    GuaranteeBody, HeavyHittersRelease, HistogramRelease, ReleaseDiagnosis, ReleasedItem,
};
use tally_plan::ReportError;
pub(crate) use tally_protocol::shown::{guarantee_body_line, parameters_line};

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

/// Writes a planner's report into `dir` with `write` and says where on stderr (stdout keeps
/// the plan, a table or its JSON).
pub(crate) fn save_report(
    dir: &Path,
    write: impl FnOnce(&Path) -> Result<PathBuf, ReportError>,
) -> anyhow::Result<()> {
    let page = write(dir).context("--report")?;
    eprintln!(
        "report: {} (its numbers in {})",
        page.display(),
        dir.join("plan.json").display()
    );
    Ok(())
}
