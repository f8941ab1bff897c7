//! `tally plan shuffle`: amplification by shuffling.

#[allow(dead_code)] // `temp_file` is not needed here.
mod common;

use common::{failure, json, tally};

const BASE: &str = "plan shuffle --local-epsilon 4 --users 100000 --delta 1e-6 --json";

#[test]
fn fmt21_is_within_apples_bounds() {
    let out = json(&format!("{BASE} --bound fmt21"));
    let eps = out["epsilon"].as_f64().unwrap();
    assert!((0.1675..=0.1728).contains(&eps), "{eps}");
    assert_eq!(out["bound"], "fmt21");
    assert_eq!(out["neighbours"], "replace-one");
    assert_eq!(out["users"], 100_000);
    assert_eq!(out["local_epsilon"], 4.0);
    assert_eq!(out["delta"], 1e-6);
}

#[test]
fn fmt23_is_the_default_and_gives_0_118() {
    for args in [BASE.to_owned(), format!("{BASE} --bound fmt23")] {
        let out = json(&args);
        assert_eq!(out["bound"], "fmt23");
        let eps = out["epsilon"].as_f64().unwrap();
        assert_eq!(format!("{eps:.3}"), "0.118", "{eps}");
    }
}

#[test]
fn closed_form() {
    let out = json(&format!("{BASE} --bound closed-form"));
    let eps = out["epsilon"].as_f64().unwrap();
    assert!((eps - 0.537_804_024_237_451_2).abs() < 1e-12, "{eps}");
}

#[test]
fn solves_for_the_local_epsilon() {
    let out = json("plan shuffle --epsilon 0.1181530744493477 --users 100000 --delta 1e-6 --json");
    let eps0 = out["local_epsilon"].as_f64().unwrap();
    assert!((eps0 - 4.0).abs() < 1e-4, "{eps0}");
    assert_eq!(out["solved_for"], "local_epsilon");
}

#[test]
fn bad_input_is_one_line_naming_the_problem() {
    let cases = [
        (
            "plan shuffle --local-epsilon -1 --users 1000 --delta 1e-6",
            "local epsilon",
        ),
        (
            "plan shuffle --local-epsilon 1 --users 1 --delta 1e-6",
            "users",
        ),
        (
            "plan shuffle --local-epsilon 1 --users 1000 --delta 2",
            "delta",
        ),
        (
            "plan shuffle --epsilon 0 --users 1000 --delta 1e-6",
            "epsilon",
        ),
        ("plan shuffle --users 1000 --delta 1e-6", "--local-epsilon"),
    ];
    for (args, needle) in cases {
        let message = failure(args);
        assert!(message.contains(needle), "{args}: {message}");
    }
}

#[test]
fn both_directions_report_both_epsilons() {
    let forward = json("plan shuffle --local-epsilon 2 --users 10000 --delta 1e-6 --json");
    assert_eq!(forward["solved_for"], "epsilon");
    assert_eq!(forward["local_epsilon"], 2.0);
    let eps = forward["epsilon"].as_f64().unwrap();
    assert!(eps > 0.0 && eps < 2.0, "{eps}");
    // Solving back for ε₀ at that central ε gives (about, and at most) the ε₀ we started from.
    let backward = json(&format!(
        "plan shuffle --epsilon {eps} --users 10000 --delta 1e-6 --json"
    ));
    assert_eq!(backward["solved_for"], "local_epsilon");
    assert_eq!(
        backward["epsilon"].as_f64().unwrap().to_bits(),
        eps.to_bits()
    );
    let eps0 = backward["local_epsilon"].as_f64().unwrap();
    assert!((eps0 - 2.0).abs() < 1e-3, "{eps0}");
}

#[test]
fn local_epsilon_and_epsilon_are_mutually_exclusive() {
    // A usage error from the argument parser (several lines, with the usage).
    let output = tally("plan shuffle --local-epsilon 2 --epsilon 0.5 --users 10000 --delta 1e-6");
    assert!(!output.status.success());
    let message = String::from_utf8(output.stderr).unwrap();
    assert!(message.contains("cannot be used with"), "{message}");
}
