//! `tally histogram --mechanism laplace-threshold|gaussian-threshold|truncated-geometric` and
//! `--max-items-per-client`: partition selection and per-item sample-and-threshold over
//! clients of several items.

mod common;

use common::{failure, json, temp_file};
use serde_json::Value;

/// A TSV of 3000 clients: each holds `common-0..common-5`, one of them twice, and three items
/// no other client holds; rows in the given order.
fn rows(reversed: bool) -> String {
    let mut rows = Vec::new();
    for c in 0..3000u32 {
        for i in 0..6 {
            rows.push(format!("user-{c}\tcommon-{i}"));
        }
        rows.push(format!("user-{c}\tcommon-{}", c % 6));
        for i in 0..3 {
            rows.push(format!("user-{c}\town-{c}-{i}"));
        }
    }
    if reversed {
        rows.reverse();
    }
    format!("client_id\titem\n{}\n", rows.join("\n"))
}

fn run(file: &str, options: &str) -> Value {
    let path = temp_file(file, rows(file.contains("reversed")).as_bytes());
    json(&format!(
        "histogram --input {} --epsilon 1 --delta 1e-8 {options} --json",
        path.display()
    ))
}

fn released(document: &Value) -> Vec<String> {
    let mut items: Vec<String> = document["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["item"].as_str().unwrap().to_owned())
        .collect();
    items.sort();
    items
}

fn commons() -> Vec<String> {
    (0..6).map(|i| format!("common-{i}")).collect()
}

#[test]
fn every_selection_releases_the_common_items_with_its_guarantee() {
    for (method, neighbours) in [
        ("laplace-threshold", "add-remove"),
        ("gaussian-threshold", "replace-one"),
        ("truncated-geometric", "add-remove"),
    ] {
        let file = format!("selection-{method}.tsv");
        let options = format!(
            "--mechanism {method} --max-items-per-client 4 --neighbours {neighbours} --seed 3"
        );
        let document = run(&file, &options);
        assert_eq!(document["mechanism"], method);
        assert_eq!(document["execution"], "seeded");
        assert_eq!(document["parameters"]["max_items_per_client"], 4);
        assert_eq!(document["parameters"]["population"], 3000);
        // Each common item is kept by about 3000·4/9 clients, far above every release point
        // at k = 4; the own items by one client each.
        assert_eq!(released(&document), commons(), "{method}");
        let guarantee = &document["guarantee"];
        assert_eq!(guarantee["neighbours"], neighbours);
        assert_eq!(guarantee["model"], "central");
        assert!(guarantee["epsilon"].as_f64().unwrap() <= 1.0);
        assert!(guarantee["delta"].as_f64().unwrap() <= 1e-8);
        let analysis = guarantee["method"].as_str().unwrap();
        assert!(
            analysis.contains("at most 4 item(s) per client"),
            "{analysis}"
        );
        let estimate = &document["items"][0]["estimate"];
        if method == "truncated-geometric" {
            assert!(estimate.is_null(), "keys only: {document}");
        } else {
            let estimate = estimate.as_f64().unwrap();
            assert!((1000.0..1700.0).contains(&estimate), "{estimate}");
        }
        // The same seed gives the same release.
        assert_eq!(document["items"], run(&file, &options)["items"]);
    }
}

#[test]
fn one_item_per_client_is_the_default_bound_of_a_selection() {
    let document = run(
        "selection-default.tsv",
        "--mechanism laplace-threshold --seed 1",
    );
    assert_eq!(document["parameters"]["max_items_per_client"], 1);
    // One of nine distinct items per client: about 333 holders per common item.
    assert_eq!(released(&document), commons());
}

#[test]
fn keyed_per_item_sample_and_threshold_is_fixed_by_the_key() {
    let options =
        "--max-items-per-client 4 --sampling-key 00000000000000007365637265742d31 --threshold 20";
    let first = run("items-keyed.tsv", &format!("{options} --seed 1"));
    assert_eq!(first["mechanism"], "sample-and-threshold");
    assert_eq!(first["execution"], "keyed");
    assert_eq!(first["parameters"]["max_items_per_client"], 4);
    let analysis = first["guarantee"]["method"].as_str().unwrap();
    assert!(analysis.contains("one coin per item"), "{analysis}");
    assert_eq!(released(&first), commons());
    let again = run("items-keyed-again.tsv", &format!("{options} --seed 2"));
    assert_eq!(first["items"], again["items"]);
    let reversed = run("items-keyed-reversed.tsv", &format!("{options} --seed 1"));
    assert_eq!(first["items"], reversed["items"]);
    let other = run(
        "items-keyed-other.tsv",
        "--max-items-per-client 4 --sampling-key 00000000000000007365637265742d32 --threshold 20",
    );
    assert_ne!(first["items"], other["items"]);
}

#[test]
fn seeded_per_item_sample_and_threshold_follows_the_seed() {
    let options = "--max-items-per-client 4 --threshold 20";
    let first = run("items-seeded.tsv", &format!("{options} --seed 1"));
    assert_eq!(first["execution"], "seeded");
    assert_eq!(released(&first), commons());
    let again = run("items-seeded-again.tsv", &format!("{options} --seed 1"));
    assert_eq!(first["items"], again["items"]);
    let other = run("items-seeded-other.tsv", &format!("{options} --seed 2"));
    assert_ne!(first["items"], other["items"]);
}

#[test]
fn bad_combinations_are_refused_with_the_fix() {
    let path = temp_file("items-refused.tsv", rows(false).as_bytes());
    let base = format!(
        "histogram --input {} --epsilon 1 --delta 1e-8",
        path.display()
    );
    let cases = [
        (
            "--mechanism laplace --domain 10 --max-items-per-client 2",
            "--max-items-per-client applies",
        ),
        ("--mechanism laplace-threshold --threshold 20", "drop them"),
        (
            "--mechanism gaussian-threshold --domain 10",
            "no public domain",
        ),
        ("--max-items-per-client 4 --method exact", "drop --method"),
        ("--mechanism truncated-geometric --truth", "drop them"),
        (
            "--mechanism laplace-threshold --max-items-per-client 0",
            "max items per client",
        ),
        (
            "--mechanism laplace-threshold --max-items-per-client 129",
            "[1, 128]",
        ),
    ];
    for (options, expected) in cases {
        let message = failure(&format!("{base} {options}"));
        assert!(message.contains(expected), "{options}: {message}");
    }
}
