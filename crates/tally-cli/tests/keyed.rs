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
    let first = keyed("keyed.tsv", "00000000000000007365637265742d31", 1);
    assert_eq!(first["execution"], "keyed");
    assert_eq!(first["parameters"]["population"], 6000);
    assert!(first["released_items"].as_u64().unwrap() > 0, "{first}");
    // The seed plays no part; the row order neither.
    let again = keyed("keyed-again.tsv", "00000000000000007365637265742d31", 2);
    assert_eq!(first["items"], again["items"]);
    let reversed = keyed("keyed-reversed.tsv", "00000000000000007365637265742d31", 1);
    assert_eq!(first["items"], reversed["items"]);
    let other = keyed("keyed-other.tsv", "00000000000000007365637265742d32", 1);
    assert_ne!(first["items"], other["items"]);
}

#[test]
fn the_rate_used_is_a_multiple_of_the_prf_resolution() {
    let out = keyed("keyed-rate.tsv", "0000000000000000000000000000006b", 1);
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
    let laplace = failure(&format!(
        "{base} --sampling-key 0000000000000000000000000000006b --mechanism laplace"
    ));
    assert!(laplace.contains("--sampling-key"), "{laplace}");
    let empty = failure(&format!("{base} --sampling-key="));
    assert!(empty.contains("sampling key"), "{empty}");
}

#[test]
fn a_key_needs_128_bits_and_is_never_echoed() {
    let path = temp_file("keyed-short.tsv", rows(false).as_bytes());
    let base = format!(
        "histogram --input {} --epsilon 1 --delta 1e-6",
        path.display()
    );
    let thirty_one_digits = "0123456789abcdef0123456789abcde";
    for key in ["k", "correct-horse-battery", thirty_one_digits] {
        let refused = failure(&format!("{base} --sampling-key {key}"));
        assert!(
            refused.contains("at least 32 hexadecimal digits")
                && (key.len() < 8 || !refused.contains(key)),
            "{refused}"
        );
    }
    let heavy = failure(&format!(
        "heavy-hitters --algorithm triehh++ --input {} --epsilon 4 --delta 1e-6 --sampling-key \
         {thirty_one_digits}",
        path.display()
    ));
    assert!(heavy.contains("at least 32 hexadecimal digits"), "{heavy}");
}

#[test]
fn a_generated_key_file_is_private_and_samples_as_its_text_does() {
    let key_file = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("keyed-key.txt");
    let _ = std::fs::remove_file(&key_file);
    let made = common::tally(&format!("sampling-key --output {}", key_file.display()));
    assert!(made.status.success(), "{made:?}");
    let text = std::fs::read_to_string(&key_file).unwrap();
    let key = text.trim_end();
    assert!(
        key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()),
        "{text:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    // An existing key is never replaced.
    let again = failure(&format!("sampling-key --output {}", key_file.display()));
    assert!(again.contains("never replaced"), "{again}");
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), text);

    let path = temp_file("keyed-file.tsv", rows(false).as_bytes());
    let run = |key_option: &str| {
        json(&format!(
            "histogram --input {} --epsilon 1 --delta 1e-6 --sampling-rate 0.3 {key_option} \
             --json",
            path.display()
        ))
    };
    let from_file = run(&format!("--sampling-key-file {}", key_file.display()));
    let from_text = run(&format!("--sampling-key {key}"));
    assert_eq!(from_file["items"], from_text["items"]);
    let both = common::tally(&format!(
        "histogram --input {} --epsilon 1 --delta 1e-6 --sampling-key {key} \
         --sampling-key-file {}",
        path.display(),
        key_file.display()
    ));
    let both = String::from_utf8_lossy(&both.stderr);
    assert!(both.contains("cannot be used with"), "{both}");
}
