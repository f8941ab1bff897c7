//! Scratch directories and the written files of the planner's reports, for their tests.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::tally;

/// A fresh directory `name` in Cargo's scratch directory for integration tests.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("clean the scratch directory");
    }
    dir
}

/// Runs `tally command_line`, which writes a report to `dir` and says where on stderr, and
/// returns its `index.html`, checked by [`assert_page`], and its `plan.json`.
pub(crate) fn written_report(command_line: &str, dir: &Path) -> (String, Value) {
    let output = tally(command_line);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "report: {} (its numbers in {})",
            dir.join("index.html").display(),
            dir.join("plan.json").display()
        )),
        "{said}"
    );
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert_page(&html);
    let text = std::fs::read_to_string(dir.join("plan.json")).expect("plan.json");
    (html, serde_json::from_str(&text).expect("plan.json parses"))
}

/// Checks that `level`, a multi-round report's `per_level` in `plan.json`, draws Laplace and
/// Gaussian thresholding calibrated at the level's share `(epsilon/levels, delta/levels)`, and
/// that the page `html` and the `summary` give their 50% counts.
pub(crate) fn assert_compared_at_level_share(
    level: &Value,
    html: &str,
    summary: &str,
    (epsilon, delta): (f64, f64),
    levels: u64,
) {
    use tally_accounting::key_selection::{KeySelection, gaussian_threshold, laplace_threshold};

    let share = (epsilon / levels as f64, delta / levels as f64);
    assert_eq!(level["compared_at"]["epsilon"].as_f64(), Some(share.0));
    assert_eq!(level["compared_at"]["delta"].as_f64(), Some(share.1));
    let expected = [
        (
            "Laplace thresholding",
            KeySelection::Laplace(laplace_threshold(share.0, share.1).unwrap()),
        ),
        (
            "Gaussian thresholding",
            KeySelection::Gaussian(gaussian_threshold(share.0, share.1).unwrap()),
        ),
    ];
    let compared = level["compared"].as_array().expect("compared selections");
    assert_eq!(compared.len(), expected.len());
    for (document, (name, selection)) in compared.iter().zip(expected) {
        assert_eq!(document["name"], name);
        let half = selection.release_point(0.5).expect("a 50% point");
        assert_eq!(document["release_50"].as_u64(), Some(half), "{name}");
        assert_eq!(
            document["release_95"].as_u64(),
            selection.release_point(0.95),
            "{name}"
        );
        assert!(!document["release_curve"].as_array().unwrap().is_empty());
        let row = format!(
            "<tr><td>{name}</td><td>{}</td><td>{half}</td>",
            tally_plan::key_selection::parameters_text(&selection)
        );
        assert!(html.contains(&row), "{row} in the page's table");
        assert!(
            summary.contains(&format!(
                "{name} at the level's share would release half the time at c = {half} "
            )),
            "{summary}"
        );
    }
}

/// Checks that `level`, a report's `per_level` under replace-one neighbours, draws no
/// noise-based selection, and that the page `html` says why.
pub(crate) fn assert_not_compared(level: &Value, html: &str) {
    assert!(level["compared_at"].is_null());
    assert_eq!(level["compared"].as_array().map(Vec::len), Some(0));
    assert!(!html.contains("<tr><td>Laplace thresholding</td>"));
    assert!(html.contains("their calibrations hold for add/remove neighbours"));
}

/// Checks that `html` is a self-contained page (nothing loaded from elsewhere) whose numbers
/// are for people.
pub(crate) fn assert_page(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    for outside in ["<script", "<link", "<img", "src=", "url("] {
        assert!(
            !html.contains(outside),
            "the page loads something: {outside}"
        );
    }
    assert_numbers_for_people(html);
}

/// Checks that no fraction on the page `html` outside its figures shows more than six
/// significant digits (`0.21794661713462468`, `1.6666666666666667e-9`): numbers for people
/// are rounded, the JSON keeps full precision. Whole numbers (counts) are exact.
fn assert_numbers_for_people(html: &str) {
    let mut text = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        text += &rest[..start];
        let end = rest[start..].find("</svg>").expect("a closed figure") + start;
        rest = &rest[end + "</svg>".len()..];
    }
    text += rest;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && bytes[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &text[start..i];
        if number.contains('.') {
            let significant = number
                .trim_start_matches(['0', '.'])
                .chars()
                .filter(char::is_ascii_digit)
                .count();
            let line_start = text[..start].rfind('\n').map_or(0, |n| n + 1);
            let line_end = text[i..].find('\n').map_or(text.len(), |n| n + i);
            assert!(
                significant <= 6,
                "{number} shows {significant} significant digits: {}",
                &text[line_start..line_end]
            );
        }
    }
}
