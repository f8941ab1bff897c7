//! Every example a command's `--help` shows runs as written: the offline commands' examples
//! run here with the built `tally`, from a scratch directory that sees the shipped `data/`
//! (through bash, as a user would paste them). The federated commands' examples need a server
//! or its database, so `src/help_examples.rs` only parses them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `command`'s examples talk to a server or its database: every federated command's
/// but `cert`'s, which only writes files.
fn needs_a_server(command: &str) -> bool {
    tally_cli::FEDERATED_COMMANDS.contains(&command) && command != "cert"
}

fn tally(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(args)
        .output()
        .expect("run tally");
    assert!(out.status.success(), "tally {}: {:?}", args.join(" "), out);
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The names under `Commands:` in a help text (`help` aside).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command without subcommands, as the words after `tally`.
fn leaves(path: &[String], out: &mut Vec<Vec<String>>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let subs = subcommands(&tally(&args));
    if subs.is_empty() {
        out.push(path.to_vec());
    }
    for sub in subs {
        let mut longer = path.to_vec();
        longer.push(sub);
        leaves(&longer, out);
    }
}

/// The example command lines under `Examples:` in a help text.
fn examples(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Examples:")
        .map(str::trim)
        .filter(|line| !line.starts_with('#') && line.contains("tally "))
        .map(str::to_owned)
        .collect()
}

/// The examples of every command but the federated ones.
fn offline_examples() -> Vec<String> {
    let mut all = Vec::new();
    leaves(&[], &mut all);
    assert!(all.len() >= 30, "only {} commands", all.len());
    let mut out = Vec::new();
    for path in all {
        let words: Vec<&str> = path.iter().map(String::as_str).collect();
        let help = tally(&[words.as_slice(), &["--help"]].concat());
        let found = examples(&help);
        assert!(
            !found.is_empty(),
            "`tally {} --help` shows no example",
            words.join(" ")
        );
        if !needs_a_server(words[0]) {
            out.extend(found);
        }
    }
    out
}

/// Runs each example with bash from a scratch directory holding a link to the shipped data.
fn run_all(examples: &[String]) {
    let scratch = tempfile::tempdir().expect("scratch directory");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    std::os::unix::fs::symlink(
        data.canonicalize().expect("data/"),
        scratch.path().join("data"),
    )
    .expect("link data/");
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_tally"))
        .parent()
        .expect("the binary's directory")
        .to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    for example in examples {
        let out = Command::new("bash")
            .args(["-c", example])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "the example `{example}` failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn offline_examples_run_as_written() {
    let examples = offline_examples();
    assert!(examples.len() >= 25, "only {} examples", examples.len());
    run_all(&examples);
}
