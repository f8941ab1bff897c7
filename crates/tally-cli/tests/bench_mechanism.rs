//! `tally bench mechanism`: every mechanism runs at a tiny size and reports its timings.

mod common;

use common::{failure, json, temp_file};
use serde_json::Value;

/// Checks the fields every run reports.
fn check_timings(out: &Value, mechanism: &str, clients: u64, domain: u64) {
    assert_eq!(out["benchmark"], "mechanism");
    assert_eq!(out["mechanism"], mechanism);
    assert_eq!(out["clients"], clients);
    assert_eq!(out["domain"], domain);
    assert_eq!(out["repeats"], 1);
    let median = out["median_seconds"].as_f64().unwrap();
    let (min, max) = (
        out["min_seconds"].as_f64().unwrap(),
        out["max_seconds"].as_f64().unwrap(),
    );
    assert!(median > 0.0 && min <= median && median <= max, "{out}");
    assert!(
        out["estimated_total"].as_f64().unwrap().is_finite(),
        "{out}"
    );
}

#[test]
fn hadamard_response() {
    let out = json(
        "bench mechanism --mechanism hadamard-response --clients 1000 --domain 64 --repeats 1 \
         --json",
    );
    check_timings(&out, "hadamard-response", 1000, 64);
    assert_eq!(out["guarantee"]["model"], "local");
    assert_eq!(out["guarantee"]["epsilon"], 1.0);
    assert_eq!(out["local_guarantee"]["model"], "local");
    // K = 128 reports of 7 bits, one per client.
    assert_eq!(out["message_cost"]["bits_per_message"], 7);
    assert_eq!(out["messages"], 1000.0);
}

#[test]
fn laplace() {
    let out = json(
        "bench mechanism --mechanism laplace --clients 1000 --domain 64 --epsilon 0.5 \
         --repeats 1 --json",
    );
    check_timings(&out, "laplace", 1000, 64);
    assert_eq!(out["guarantee"]["model"], "central");
    assert_eq!(out["guarantee"]["neighbours"], "add-remove");
    assert!(out["guarantee"]["epsilon"].as_f64().unwrap() <= 0.5);
    assert_eq!(out["guarantee"]["delta"], 0.0);
    assert!(out["local_guarantee"].is_null() && out["message_cost"].is_null());
    assert!(out["messages_per_second"].is_null());
}

#[test]
fn balcer_cheu_reports_messages_per_second() {
    // n ≥ (400/ε²) ln(4/δ) ≈ 1476 clients at ε = 1, δ = 0.1.
    let out = json(
        "bench mechanism --mechanism balcer-cheu --clients 2000 --domain 64 --delta 0.1 \
         --repeats 1 --json",
    );
    check_timings(&out, "balcer-cheu", 2000, 64);
    assert_eq!(out["guarantee"]["model"], "shuffle");
    assert_eq!(out["guarantee"]["delta"], 0.1);
    let per_client = out["message_cost"]["messages_per_client"].as_f64().unwrap();
    assert!((1.0..=65.0).contains(&per_client), "{per_client}");
    let messages = out["messages"].as_f64().unwrap();
    assert!(
        (messages - 2000.0 * per_client).abs() < 1e-6 * messages,
        "{out}"
    );
    let rate = out["messages_per_second"].as_f64().unwrap();
    let median = out["median_seconds"].as_f64().unwrap();
    assert!((rate * median - messages).abs() < 1e-6 * messages, "{out}");
}

#[test]
fn balcer_cheu_needs_enough_clients() {
    let err = failure(
        "bench mechanism --mechanism balcer-cheu --clients 2 --domain 64 --delta 0.1 \
         --repeats 1",
    );
    assert!(err.starts_with("error:"), "{err}");
}

#[test]
fn items_file_sets_the_clients() {
    let items: String = (0..500).map(|i| format!("{}\n", (i * 7) % 64)).collect();
    let path = temp_file("bench-items.txt", items.as_bytes());
    let out = json(&format!(
        "bench mechanism --mechanism hadamard-response --items {} --domain 64 --repeats 1 --json",
        path.display()
    ));
    check_timings(&out, "hadamard-response", 500, 64);
    assert_eq!(out["items"], path.display().to_string());
}

#[test]
fn items_outside_the_domain_are_an_error() {
    let path = temp_file("bench-items-bad.txt", b"3\n64\n");
    let err = failure(&format!(
        "bench mechanism --mechanism hadamard-response --items {} --domain 64 --repeats 1",
        path.display()
    ));
    assert!(err.contains("line 2") && err.contains("[0, 64)"), "{err}");
}

#[test]
fn the_table_names_the_mechanism_and_the_time() {
    let output = common::tally(
        "bench mechanism --mechanism hadamard-response --clients 1000 --domain 64 --repeats 1",
    );
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("hadamard-response: whole runs"), "{text}");
    assert!(text.contains("median"), "{text}");
}
