//! `tally plan compose`: the total ε of K identical rounds by each accountant.

#[allow(dead_code)] // `temp_file` is not needed here.
mod common;

use common::{failure, json, tally};

const PURE: &str = "plan compose --epsilon 0.5 --delta 0 --rounds 10 --target-delta 1e-6 --json";

fn epsilon_of(method: &str) -> f64 {
    let out = json(&format!("{PURE} --method {method}"));
    assert_eq!(out["method"], method);
    assert_eq!(out["rounds"], 10);
    assert_eq!(out["per_round"]["epsilon"], 0.5);
    assert_eq!(out["per_round"]["delta"], 0.0);
    out["epsilon"].as_f64().unwrap()
}

#[test]
fn pld_agrees_with_optimal_within_one_percent() {
    let optimal = epsilon_of("optimal");
    let pld = epsilon_of("pld");
    assert!(
        (pld - optimal).abs() <= 0.01 * optimal && pld >= optimal * (1.0 - 1e-9),
        "pld {pld} vs optimal {optimal}"
    );
    // Optimal is the default.
    let default = json(PURE);
    assert_eq!(default["method"], "optimal");
    assert_eq!(
        default["epsilon"].as_f64().unwrap().to_bits(),
        optimal.to_bits()
    );
    assert_eq!(default["delta"], 1e-6);
}

#[test]
fn basic_is_the_sum() {
    let out = json(&format!("{PURE} --method basic"));
    assert_eq!(out["epsilon"], 5.0);
    assert_eq!(out["delta"], 0.0);
    // Without a target δ too.
    let out = json("plan compose --epsilon 0.25 --delta 1e-7 --rounds 4 --method basic --json");
    assert_eq!(out["epsilon"], 1.0);
    assert!((out["delta"].as_f64().unwrap() - 4e-7).abs() < 1e-20);
}

#[test]
fn the_accountants_are_ordered() {
    let optimal = epsilon_of("optimal");
    let rdp = epsilon_of("rdp");
    let advanced = epsilon_of("advanced");
    assert!(optimal <= rdp && optimal <= 5.0, "{optimal} {rdp}");
    assert!(optimal <= advanced, "{optimal} {advanced}");
}

#[test]
fn approximate_rounds_with_pld() {
    let base = "plan compose --epsilon 0.1 --delta 1e-8 --rounds 300 --target-delta 1e-5 --json";
    let optimal = json(&format!("{base} --method optimal"))["epsilon"]
        .as_f64()
        .unwrap();
    let pld = json(&format!("{base} --method pld"))["epsilon"]
        .as_f64()
        .unwrap();
    assert!(
        (pld - optimal).abs() <= 0.01 * optimal,
        "{pld} vs {optimal}"
    );
}

#[test]
fn table_output() {
    let output = tally("plan compose --epsilon 0.5 --rounds 10 --target-delta 1e-6 --method pld");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("composition of 10 rounds (pld)"), "{text}");
    assert!(text.contains("epsilon (rounded up)"), "{text}");
}

#[test]
fn bad_input_is_one_line_naming_the_problem() {
    let cases = [
        (
            "plan compose --epsilon 0 --rounds 10 --target-delta 1e-6",
            "epsilon",
        ),
        (
            "plan compose --epsilon 1 --rounds 0 --target-delta 1e-6",
            "rounds",
        ),
        ("plan compose --epsilon 1 --rounds 10", "--target-delta"),
        (
            "plan compose --epsilon 1 --delta 1e-3 --rounds 10 --target-delta 1e-6 --method rdp",
            "--delta 0",
        ),
        (
            "plan compose --epsilon 1 --delta 1e-3 --rounds 10 --target-delta 1e-6 --method pld",
            "δ",
        ),
    ];
    for (args, needle) in cases {
        let message = failure(args);
        assert!(message.contains(needle), "{args}: {message}");
    }
}
