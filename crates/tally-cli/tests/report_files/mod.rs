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

/// Runs `tally command_line`, which writes a report to `dir`, and returns its `index.html`,
/// checked to be a self-contained page (nothing loaded from elsewhere), and its `plan.json`.
pub(crate) fn written_report(command_line: &str, dir: &Path) -> (String, Value) {
    let output = tally(command_line);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(dir.join("index.html")).expect("index.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for outside in ["<script", "<link", "<img", "src=", "url("] {
        assert!(!html.contains(outside), "{outside}");
    }
    let text = std::fs::read_to_string(dir.join("plan.json")).expect("plan.json");
    (html, serde_json::from_str(&text).expect("plan.json parses"))
}
