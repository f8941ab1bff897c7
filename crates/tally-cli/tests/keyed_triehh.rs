//! `tally heavy-hitters --algorithm triehh++ --sampling-key`: keyed TrieHH++ end to end.

mod common;

use common::{failure, json, temp_file};
use serde_json::Value;

/// A TSV of 20,000 clients with two rows each, words of shared prefixes in skewed shares, in
/// the given row order.
fn rows(reversed: bool) -> String {
    let words = ["apple", "apricot", "banana", "band", "cherry", "kiwi"];
    let mut rows = Vec::new();
    for c in 0..20_000usize {
        rows.push(format!("user-{c}\t{}", words[(c * c) % 11 % 6]));
        rows.push(format!("user-{c}\t{}", words[c % 7 % 6]));
    }
    if reversed {
        rows.reverse();
    }
    format!("client_id\titem\n{}\n", rows.join("\n"))
}

fn keyed(file: &str, key: &str) -> Value {
    keyed_with(file, key, "")
}

/// [`keyed`], with `options` besides.
fn keyed_with(file: &str, key: &str, options: &str) -> Value {
    let path = temp_file(file, rows(file.contains("reversed")).as_bytes());
    json(&format!(
        "heavy-hitters --algorithm triehh++ --input {} --epsilon 4 --delta 1e-6 --levels 8 \
         --sampling-key {key} --json{options}",
        path.display()
    ))
}

fn words(release: &Value) -> Vec<&str> {
    let mut words: Vec<&str> = release["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["item"].as_str().unwrap())
        .collect();
    words.sort_unstable();
    words
}

#[test]
fn the_key_alone_fixes_the_prefix_tree() {
    let first = keyed("hh-keyed.tsv", "00000000000000007365637265742d31");
    assert_eq!(first["parameters"]["population"], 20_000);
    assert_eq!(
        words(&first),
        ["apple", "apricot", "banana", "band", "cherry", "kiwi"]
    );
    // The row order plays no part.
    let reversed = keyed("hh-keyed-reversed.tsv", "00000000000000007365637265742d31");
    assert_eq!(first["items"], reversed["items"]);
    assert_eq!(first["trie"], reversed["trie"]);
    // Another key draws other coins.
    let other = keyed("hh-keyed-other.tsv", "00000000000000007365637265742d32");
    assert_ne!(first["trie"], other["trie"]);
    // A seed given plays no part in the coins, and is shown as the keyed histogram shows it
    // (it generates synthetic rows).
    assert_eq!(first["seed"], Value::Null);
    let seeded = keyed_with(
        "hh-keyed-seeded.tsv",
        "00000000000000007365637265742d31",
        " --seed 3",
    );
    assert_eq!(seeded["seed"], 3, "{seeded}");
    assert_eq!(first["trie"], seeded["trie"]);
}

#[test]
fn every_level_uses_a_rate_of_the_prf_resolution() {
    let release = keyed("hh-keyed-rate.tsv", "0000000000000000000000000000006b");
    let rate = release["parameters"]["sampling_rate"].as_f64().unwrap();
    let scaled = rate * 2f64.powi(64);
    assert_eq!(scaled.fract().to_bits(), 0f64.to_bits(), "{rate}");
    let total = release["guarantee"]["epsilon"].as_f64().unwrap();
    assert!(total <= 4.0, "{total}");
}

#[test]
fn keyed_sampling_is_refused_for_other_algorithms() {
    let path = temp_file("hh-keyed-refused.tsv", rows(false).as_bytes());
    let refused = failure(&format!(
        "heavy-hitters --algorithm triehh --input {} --epsilon 4 --delta 1e-6 --sampling-key 0000000000000000000000000000006b",
        path.display()
    ));
    assert!(refused.contains("--sampling-key"), "{refused}");
}
