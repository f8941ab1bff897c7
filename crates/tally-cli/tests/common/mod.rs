//! Helpers shared by the CLI tests: running `tally` and reading what it prints.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `tally` with a command line split on whitespace.
pub(crate) fn tally(command_line: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(command_line.split_whitespace())
        .output()
        .expect("tally runs")
}

/// Runs a command that must succeed and parses its JSON output.
pub(crate) fn json(args: &str) -> Value {
    let output = tally(args);
    assert!(
        output.status.success(),
        "tally {args} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON output")
}

/// Runs a command that must fail and returns its one-line error message.
pub(crate) fn failure(args: &str) -> String {
    let output = tally(args);
    assert!(!output.status.success(), "tally {args} succeeded");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    stderr
}

/// Writes `contents` to `name` in Cargo's scratch directory for integration tests, prefixed with
/// this test binary's name: each run overwrites the last run's files instead of leaving new ones
/// in the system's temporary directory. The file is written aside and renamed into place, so
/// that tests running at once that write the same file never read it half written.
pub(crate) fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{}-{name}", env!("CARGO_CRATE_NAME")));
    let aside = path.with_extension(format!("{:?}.partial", std::thread::current().id()));
    std::fs::write(&aside, contents).unwrap();
    std::fs::rename(&aside, &path).unwrap();
    path
}
