//! `tally heavy-hitters --algorithm opt-prefix-tree`: the acceptance command, the ε sweep on
//! the `reddit-like` population, the options and their errors.

mod common;

use common::{failure, json, temp_file};
use serde_json::Value;

/// The shipped speakers file, `client_id<TAB>word`, many rows per client.
fn speakers() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/shakespeare/shakespeare_speakers.tsv.gz"
    )
    .to_owned()
}

#[test]
fn acceptance_command_on_the_speakers_file() {
    let out = json(&format!(
        "heavy-hitters --algorithm opt-prefix-tree --input {} --format tsv --epsilon 8 \
         --delta 1e-6 --seed 1 --json --truth",
        speakers()
    ));
    assert_eq!(out["mechanism"], "opt-prefix-tree");
    // The whole multiset of each speaker: 1,419 users, 835,229 data points.
    assert_eq!(out["parameters"]["population"], 1419);
    assert_eq!(out["parameters"]["data_points"], 835_229);
    let guarantee = &out["guarantee"];
    assert!(guarantee["epsilon"].as_f64().unwrap() <= 8.0);
    assert!(guarantee["delta"].as_f64().unwrap() <= 1e-6);
    assert_eq!(guarantee["model"], "shuffle");
    assert_eq!(guarantee["neighbours"], "replace-one");
    let local = &out["local_guarantee"];
    assert_eq!(local["model"], "local");
    assert_eq!(local["delta"], 0.0);
    assert_eq!(
        local["epsilon"].as_f64(),
        out["parameters"]["local_epsilon"].as_f64()
    );
    for key in ["captured_mass", "captured_user_mass"] {
        let mass = out[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&mass), "{key} = {mass}");
    }
    assert!(out["false_positives"].as_u64().is_some());
    assert!(out["truth"]["recall"].as_f64().is_some());
    assert!(!out["iterations"].as_array().unwrap().is_empty());
    assert_eq!(out["seed"], 1);
}

fn captured(epsilon: f64) -> f64 {
    let out = json(&format!(
        "heavy-hitters --algorithm opt-prefix-tree --synthetic \
         reddit-like:users=10000,mean_items=30 --domain-cap 4097 --epsilon {epsilon} \
         --delta 1e-6 --seed 1 --json"
    ));
    out["captured_mass"].as_f64().unwrap()
}

/// The full-size run (`users=200000`) is in the report; this is the same sweep at 10,000 users.
#[test]
fn captured_mass_grows_with_epsilon_on_reddit_like_users() {
    let masses: Vec<f64> = [2.0, 4.0, 8.0].into_iter().map(captured).collect();
    assert!(masses.windows(2).all(|w| w[0] < w[1]), "{masses:?}");
    assert!(masses[0] > 0.1, "{masses:?}");
}

#[test]
fn options_reach_the_algorithm() {
    let deny = temp_file("deny.txt", b"the\nand\n\n");
    let out: Value = json(&format!(
        "heavy-hitters --algorithm opt-prefix-tree --synthetic \
         reddit-like:users=3000,mean_items=10 --epsilon 8 --delta 1e-6 --seed 2 --json \
         --segment fixed:1 --encoding bytes --domain-cap 1000 --runs 2 --iterations 3 \
         --selection weighted --randomizer sue --fpr 0.05 --composition optimal --deny {}",
        deny.display()
    ));
    let p = &out["parameters"];
    assert_eq!(p["segment"], "fixed:1");
    assert_eq!(p["encoding"], "bytes");
    assert_eq!(p["selection"], "weighted");
    assert_eq!(p["randomizer"], "sue");
    assert_eq!(p["composition"], "optimal");
    assert_eq!(p["deny"], 2);
    assert_eq!(p["runs"], 2);
    // The default amplification bound is FMT21's, proven for every ε₀-LDP randomizer.
    assert_eq!(p["shuffle_bound"], "fmt21");
    assert_eq!(p["shuffle_bound_proven_for_randomizer"], true);
    let items: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item"].as_str().unwrap())
        .collect();
    assert!(
        !items.contains(&"the") && !items.contains(&"and"),
        "{items:?}"
    );
    for it in out["iterations"].as_array().unwrap() {
        assert!(it["domain_size"].as_u64().unwrap() <= 1000);
        assert_eq!(it["segment"], 1);
    }
}

#[test]
fn fmt23_is_opt_in_and_labelled_unproven() {
    let run = |extra: &str| {
        json(&format!(
            "heavy-hitters --algorithm opt-prefix-tree --synthetic \
             reddit-like:users=3000,mean_items=10 --epsilon 8 --delta 1e-6 --seed 2 --json \
             --iterations 2 --domain-cap 500 {extra}"
        ))["parameters"]
            .clone()
    };
    let proven = run("");
    let unproven = run("--unproven-fmt23");
    // The iterations compose tightly by default (the clone pair's privacy-loss distribution),
    // under either bound, and tightly beats the best (ε, δ) rule of the same bound.
    assert_eq!(proven["composition"], "tight");
    assert_eq!(unproven["composition"], "tight");
    let optimal = run("--composition optimal");
    assert_eq!(optimal["composition"], "optimal");
    assert!(proven["local_epsilon"].as_f64().unwrap() > optimal["local_epsilon"].as_f64().unwrap());
    assert_eq!(unproven["shuffle_bound"], "fmt23");
    assert_eq!(unproven["shuffle_bound_proven_for_randomizer"], false);
    // FMT23's stronger clone probability allows a larger ε₀, which is why it must not be the
    // default while its premise fails for OUE.
    assert!(
        unproven["local_epsilon"].as_f64().unwrap() > proven["local_epsilon"].as_f64().unwrap()
    );
}

#[test]
fn misuse_is_reported() {
    let err = failure(
        "heavy-hitters --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-6 \
         --segment max-under-cap",
    );
    assert!(err.contains("opt-prefix-tree policy"), "{err}");
    let err = failure(&format!(
        "heavy-hitters --algorithm opt-prefix-tree --input {} --rows-as-clients --epsilon 1 \
         --delta 1e-6",
        speakers()
    ));
    assert!(err.contains("rows-as-clients"), "{err}");
    let err = failure(
        "heavy-hitters --algorithm opt-prefix-tree --dataset shakespeare --epsilon 1 \
         --delta 1e-6 --segment fixed:20",
    );
    assert!(err.contains("domain cap"), "{err}");
}
