//! A thin or empty release explains itself: the count an item needs, the largest count the
//! release shows (never a count it withholds), the number of clients and what would help; a
//! `δ ≥ 1/n` warns; the README's first example states its privacy unit.

// The helpers this test does not use are other tests'.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use common::{json, tally, temp_file};
use serde_json::Value;
use statrs::distribution::{Binomial, DiscreteCDF};

/// The number of clients of [`rows`].
const CLIENTS: u64 = 400;
/// How many clients hold `shared` in [`rows`]: too few for any mechanism at ε = 1, δ = 1e-8,
/// and a number no explanation may print, as the release withholds it.
const SHARED_HOLDERS: u64 = 11;

/// A TSV of [`CLIENTS`] clients: the first [`SHARED_HOLDERS`] hold `shared`, every client an
/// item of its own; with `everyone`, every client also holds `everyone`.
fn rows(everyone: bool) -> String {
    let mut rows = vec!["client_id\titem".to_owned()];
    for client in 0..CLIENTS {
        if client < SHARED_HOLDERS {
            rows.push(format!("c{client}\tshared"));
        }
        rows.push(format!("c{client}\town{client}"));
        if everyone {
            rows.push(format!("c{client}\teveryone"));
        }
    }
    rows.join("\n") + "\n"
}

fn data(everyone: bool) -> PathBuf {
    let name = if everyone {
        "everyone.tsv"
    } else {
        "shared.tsv"
    };
    temp_file(name, rows(everyone).as_bytes())
}

/// Runs `tally COMMAND --input FILE OPTIONS` and returns its stdout and stderr.
fn run(command: &str, file: &Path, options: &str) -> (String, String) {
    let output = tally(&format!(
        "{command} --input {} --seed 3 {options}",
        file.display()
    ));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{command} {options}: {stderr}");
    (stdout, stderr)
}

/// The commands whose empty release must explain itself, with their options.
const EMPTY_RUNS: [(&str, &str); 7] = [
    ("histogram", ""),
    ("histogram", "--max-items-per-client 2"),
    ("histogram", "--mechanism laplace-threshold"),
    ("histogram", "--mechanism gaussian-threshold"),
    ("histogram", "--mechanism truncated-geometric"),
    ("heavy-hitters", "--algorithm triehh++"),
    ("heavy-hitters", "--algorithm single-round"),
];

#[test]
fn an_empty_release_says_why_and_what_would_help() {
    let file = data(false);
    for (command, options) in EMPTY_RUNS {
        let options = format!("--epsilon 1 --delta 1e-8 {options}");
        let (table, stderr) = run(command, &file, &options);
        let (text, _) = run(command, &file, &format!("{options} --json"));
        let document: Value = serde_json::from_str(&text).unwrap();
        let diagnosis = &document["diagnosis"];
        assert_eq!(diagnosis["thin"], true, "{command} {options}");
        assert_eq!(diagnosis["clients"], CLIENTS, "{command} {options}");
        assert_eq!(diagnosis["largest_released_count"], Value::Null);
        let point = diagnosis["release_point"].as_u64().unwrap();
        assert!(point > SHARED_HOLDERS, "{command} {options}: {point}");
        for needed in [
            format!("Nothing was released from {CLIENTS} clients"),
            format!("{point} of the {CLIENTS} clients hold it"),
            "stayed below the threshold".to_owned(),
            "What would help: a larger ε".to_owned(),
        ] {
            assert!(table.contains(&needed), "{command} {options}: {table}");
        }
        // The explanation is the JSON's, word for word.
        for sentence in diagnosis["explanation"].as_array().unwrap() {
            assert!(table.contains(sentence.as_str().unwrap()), "{table}");
        }
        // The true count of the item that was not released is never shown.
        let (_, explanation) = table.split_once("estimate\n").unwrap();
        assert!(
            !explanation.contains(&SHARED_HOLDERS.to_string()),
            "{command} {options}: {explanation}"
        );
        assert!(stderr.is_empty(), "{command} {options}: {stderr}");
    }
}

/// The count sample-and-threshold needs for probability ½ is the smallest `c` with
/// `P[Bin(c, p_s) ≥ τ] ≥ ½`, checked here with statrs's binomial law.
#[test]
fn the_count_an_item_needs_is_the_release_laws_half_point() {
    let document = json(&format!(
        "histogram --input {} --seed 3 --epsilon 1 --delta 1e-8 --json",
        data(false).display()
    ));
    let rate = document["parameters"]["sampling_rate"].as_f64().unwrap();
    let threshold = document["parameters"]["threshold"].as_u64().unwrap();
    let released = |count: u64| {
        let law = Binomial::new(rate, count).unwrap();
        1.0 - law.cdf(threshold - 1)
    };
    let point = document["diagnosis"]["release_point"].as_u64().unwrap();
    assert!(released(point) >= 0.5, "{point}");
    assert!(released(point - 1) < 0.5, "{point}");
    assert_eq!(document["diagnosis"]["release_point_exact"], true);
}

#[test]
fn a_thin_release_shows_its_largest_released_count() {
    let file = data(true);
    let document = json(&format!(
        "histogram --input {} --seed 3 --epsilon 1 --delta 1e-8 --json",
        file.display()
    ));
    assert_eq!(document["released_items"], 1);
    let count = document["items"][0]["count"].as_u64().unwrap();
    assert_eq!(
        document["diagnosis"]["largest_released_count"].as_f64(),
        Some(count as f64)
    );
    let (table, _) = run("histogram", &file, "--epsilon 1 --delta 1e-8");
    assert!(
        table.contains("Only 1 item was released from 400 clients"),
        "{table}"
    );
    assert!(
        table.contains(&format!("largest released sampled count is {count}.0")),
        "{table}"
    );
}

#[test]
fn a_delta_of_one_over_n_or_more_warns_on_stderr_and_in_the_json() {
    let file = data(true);
    for (command, options) in EMPTY_RUNS {
        // 1/400 = 2.5e-3: δ = 1e-2 is above it, δ = 1e-3 below.
        let loose = format!("--epsilon 1 --delta 1e-2 {options}");
        let (_, stderr) = run(command, &file, &loose);
        assert!(
            stderr.contains("is at least 1/n = 2.500e-3 for the n = 400 clients"),
            "{command} {options}: {stderr}"
        );
        let (text, stderr) = run(command, &file, &format!("{loose} --json"));
        assert!(stderr.contains("warning: δ"), "{command} {options}");
        let document: Value = serde_json::from_str(&text).unwrap();
        let warnings = document["diagnosis"]["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{command} {options}");
        let (_, stderr) = run(
            command,
            &file,
            &format!("--epsilon 1 --delta 1e-3 {options}"),
        );
        assert!(!stderr.contains("warning"), "{command} {options}: {stderr}");
    }
}

/// The README's first command comments on its privacy unit, and its output states it.
#[test]
fn the_readmes_first_example_states_its_privacy_unit() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    let (comment, command) = block
        .split_once("cargo run --release -p tally-cli -- ")
        .unwrap();
    assert!(comment.contains("one client per spoken word"), "{comment}");
    let command = command.lines().next().unwrap();
    assert!(
        command.starts_with("histogram --dataset shakespeare"),
        "{command}"
    );
    let output = tally(command);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("the guarantee protects one row, not one of the 1419 client_ids"),
        "{stdout}"
    );
}

/// A mechanism over a public domain releases every element, so it is never thin; it warns as
/// the others do.
#[test]
fn a_domain_histogram_warns_when_delta_is_one_over_n_or_more() {
    let command = "histogram --mechanism gaussian --dataset shakespeare --buckets 16 --seed 1 \
                   --epsilon 1";
    let output = tally(&format!("{command} --delta 1e-2 --json"));
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("is at least 1/n = 1.197e-6 for the n = 835229 clients"),
        "{stderr}"
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["warnings"].as_array().map(Vec::len), Some(1));
    let output = tally(&format!("{command} --delta 1e-8 --json"));
    assert!(output.stderr.is_empty());
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document.get("warnings"), None);
}

/// OptPrefixTree's document has no diagnosis (its words pass noisy thresholds of several
/// iterations), but warns as the others do.
#[test]
fn opt_prefix_tree_warns_when_delta_is_one_over_n_or_more() {
    let command = "heavy-hitters --algorithm opt-prefix-tree --synthetic \
                   reddit-like:users=300,mean_items=4 --epsilon 8 --seed 2 --iterations 2 --json";
    let output = tally(&format!("{command} --delta 1e-2"));
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("is at least 1/n"), "{stderr}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["warnings"].as_array().map(Vec::len), Some(1));
    let output = tally(&format!("{command} --delta 1e-6"));
    assert!(output.status.success());
    assert!(output.stderr.is_empty());
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document.get("warnings"), None);
}
