//! `tally heavy-hitters --algorithm count-min-prefix-tree`: Ghazi et al.'s heavy hitters
//! through a prefix tree of Count-Min oracles, its document and its errors.

mod common;
#[path = "common/prefix_tree.rs"]
mod prefix_tree;

use common::{failure, json, temp_file};
use prefix_tree::PREFIX_TREE;
use serde_json::Value;

/// The offline command over [`PREFIX_TREE`]'s items of `heavy` at the seed 7.
fn offline(heavy: u32, extra: &str) -> Value {
    let file = temp_file(
        &format!("heavy-{heavy}.txt"),
        PREFIX_TREE.items(heavy).as_bytes(),
    );
    json(&format!(
        "heavy-hitters --input {} {} --seed 7 --json {extra}",
        file.display(),
        PREFIX_TREE.options()
    ))
}

/// At weak parameters the heavy item is found, alone, with an estimate the protocol's law
/// admits ([`prefix_tree::PrefixTree::admits`]); the document states the composed guarantee
/// and every level's parameters; the same seed gives the same release. A release of data
/// whose heavy item moved from 2 to 3 is caught.
#[test]
fn finds_the_heavy_item_at_weak_parameters() {
    let release = offline(2, "--truth");
    assert_eq!(release["mechanism"], "count-min-prefix-tree");
    assert!(PREFIX_TREE.admits(&release, 2), "{release}");
    let guarantee = &release["guarantee"];
    assert!(guarantee["epsilon"].as_f64().unwrap() <= 3.0);
    assert!(guarantee["delta"].as_f64().unwrap() <= 1e-3);
    assert_eq!(guarantee["model"], "shuffle");
    assert_eq!(guarantee["neighbours"], "replace-one");
    let parameters = &release["parameters"];
    assert_eq!(parameters["domain_bits"], 2);
    assert_eq!(parameters["threshold"], 160.0);
    // A prefix is kept when its estimate reaches τ_HH/2, which the explanation of a thin
    // release states.
    assert_eq!(release["diagnosis"]["release_point"], 80, "{release}");
    assert_eq!(parameters["users"], PREFIX_TREE.devices);
    let levels = parameters["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for (level, expected_rows) in levels.iter().zip([9, 10]) {
        assert_eq!(level["epsilon"], 1.5);
        assert_eq!(level["rows"], expected_rows);
    }
    let per_level: f64 = levels
        .iter()
        .map(|l| l["messages_per_client"].as_f64().unwrap())
        .sum();
    assert!((per_level - parameters["messages_per_client"].as_f64().unwrap()).abs() < 1e-6);
    assert_eq!(release["truth"]["recall"], 1.0);
    assert_eq!(release["seed"], 7);
    assert_eq!(offline(2, "--truth"), release);
    let mutant = offline(3, "");
    assert!(
        !PREFIX_TREE.admits(&mutant, 2),
        "the mutant passes: {mutant}"
    );
}

/// The table names the algorithm and the found item.
#[test]
fn prints_a_table() {
    let file = temp_file("table.txt", PREFIX_TREE.items(1).as_bytes());
    let output = common::tally(&format!(
        "heavy-hitters --input {} {} --seed 7",
        file.display(),
        PREFIX_TREE.options()
    ));
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(
        table.contains("count-min-prefix-tree") && table.contains("found items  1"),
        "{table}"
    );
}

/// Bad input is refused with a message that says what is wrong: an item outside `0..2^L`,
/// `L` out of range or missing, no threshold, too few devices for the levels' oracles (the
/// accountant's count), and the options of another algorithm.
#[test]
fn explains_what_is_wrong() {
    let file = temp_file("outside.txt", b"1\n4\n");
    let base = |options: &str| {
        failure(&format!(
            "heavy-hitters --input {} --algorithm count-min-prefix-tree --epsilon 1 --delta 1e-3 \
             {options}",
            file.display()
        ))
    };
    let outside = base("--domain-bits 2 --threshold 1");
    assert!(
        outside.contains(":2: item \"4\" is not an integer in [0, 2^2)"),
        "{outside}"
    );
    for bits in [0, 32] {
        let message = base(&format!("--domain-bits {bits} --threshold 1"));
        assert!(message.contains("expected 1 to 31"), "{message}");
    }
    let missing = base("--threshold 1");
    assert!(missing.contains("needs --domain-bits L"), "{missing}");
    let missing = base("--domain-bits 1");
    assert!(missing.contains("needs --threshold"), "{missing}");
    let ok = temp_file("inside.txt", b"1\n0\n");
    let infeasible = failure(&format!(
        "heavy-hitters --input {} --algorithm count-min-prefix-tree --domain-bits 1 \
         --threshold 1 --epsilon 1 --delta 1e-3",
        ok.display()
    ));
    assert!(
        infeasible.contains("users (got 2)") && infeasible.contains("more devices"),
        "{infeasible}"
    );
    let other = failure(&format!(
        "heavy-hitters --input {} --algorithm triehh++ --domain-bits 2 --epsilon 1 --delta 1e-3",
        ok.display()
    ));
    assert!(other.contains("count-min-prefix-tree only"), "{other}");
}
