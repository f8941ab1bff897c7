//! `tally histogram --sampling-key`: keyed sampling end to end.

mod common;

use common::{failure, json, temp_file};
use serde_json::Value;

/// A TSV of 6000 clients with two or three rows each, in the given row order.
fn rows(reversed: bool) -> String {
    let mut rows = Vec::new();
    for c in 0..6000u32 {
        rows.push(format!("user-{c}\tword-{}", c % 5));
        rows.push(format!("user-{c}\tother-{}", c % 3));
        if c % 4 == 0 {
            rows.push(format!("user-{c}\tword-{}", c % 5));
        }
    }
    if reversed {
        rows.reverse();
    }
    format!("client_id\titem\n{}\n", rows.join("\n"))
}

fn keyed(file: &str, key: &str, seed: u64) -> Value {
    let path = temp_file(file, rows(file.contains("reversed")).as_bytes());
    json(&format!(
        "histogram --input {} --epsilon 1 --delta 1e-6 --sampling-rate 0.3 --sampling-key {key} \
         --seed {seed} --json",
        path.display()
    ))
}

#[test]
fn the_key_alone_fixes_the_release() {
    let first = keyed("keyed.tsv", "secret-1", 1);
    assert_eq!(first["execution"], "keyed");
    assert_eq!(first["parameters"]["population"], 6000);
    assert!(first["released_items"].as_u64().unwrap() > 0, "{first}");
    // The seed plays no part; the row order neither.
    let again = keyed("keyed-again.tsv", "secret-1", 2);
    assert_eq!(first["items"], again["items"]);
    let reversed = keyed("keyed-reversed.tsv", "secret-1", 1);
    assert_eq!(first["items"], reversed["items"]);
    let other = keyed("keyed-other.tsv", "secret-2", 1);
    assert_ne!(first["items"], other["items"]);
}

#[test]
fn the_rate_used_is_a_multiple_of_the_prf_resolution() {
    let out = keyed("keyed-rate.tsv", "k", 1);
    let rate = out["parameters"]["sampling_rate"].as_f64().unwrap();
    let scaled = rate * 2f64.powi(64);
    assert_eq!(scaled.fract().to_bits(), 0f64.to_bits(), "{rate}");
    assert!(rate <= 0.3);
}

#[test]
fn keyed_sampling_is_refused_where_it_does_not_apply() {
    let path = temp_file("keyed-refused.tsv", rows(false).as_bytes());
    let base = format!(
        "histogram --input {} --epsilon 1 --delta 1e-6",
        path.display()
    );
    let laplace = failure(&format!("{base} --sampling-key k --mechanism laplace"));
    assert!(laplace.contains("--sampling-key"), "{laplace}");
    let empty = failure(&format!("{base} --sampling-key="));
    assert!(empty.contains("sampling key"), "{empty}");
}
