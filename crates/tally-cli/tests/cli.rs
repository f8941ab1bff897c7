//! The `tally` binary end to end: the foundation issue's acceptance commands and error exits.

mod common;

use std::collections::HashMap;

use common::{failure, json, tally, temp_file};
use tally_sim::Population;

/// The word counts of the shipped Shakespeare dialogue, from the dataset the binary embeds
/// (tally-sim's tests check them against the shipped counts file).
fn shakespeare_counts() -> HashMap<String, u64> {
    let population = Population::dataset("shakespeare").unwrap();
    let name = |id| population.item_name(id).unwrap().into_owned();
    population
        .item_counts()
        .iter()
        .map(|&(id, count)| (name(id), count))
        .collect()
}

#[test]
fn plan_triehh_plus_composes_levels_tightly() {
    // Issue 14: ten levels at (4, 1e-8) with τ = 26 allow a per-level rate of at least 0.40
    // (basic composition allows 0.142) ...
    let out = json("plan triehh++ --epsilon 4 --delta 1e-8 --levels 10 --threshold 26 --json");
    let rate = out["per_level"]["sampling_rate"].as_f64().unwrap();
    assert!(rate >= 0.40, "{rate}");
    assert!(out["composed_epsilon"].as_f64().unwrap() <= 4.0);
    assert_eq!(out["composition"], "tight");
    // ... and at basic composition's rate the ten levels cost less than 0.70.
    let out = json(
        "plan triehh++ --epsilon 4 --delta 1e-8 --levels 10 --threshold 26 --sampling-rate 0.1420227 --json",
    );
    let composed = out["composed_epsilon"].as_f64().unwrap();
    assert!(composed > 0.4 && composed < 0.70, "{composed}");
    assert_eq!(out["solved_for"], "epsilon");
}

#[test]
fn plan_triehh_plus_answers_where_a_level_alone_has_no_epsilon_at_delta_over_l() {
    // At (10, 1e-4) the largest rate puts each level's infinite-loss mass above δ/L while
    // the ten levels' joint mass stays within δ: the plan holds, and basic composition, which
    // needs each level at δ/L, has no ε to offer. (At δ ≥ 1e-6 this plan used not to return.)
    for delta in ["1e-5", "1e-4"] {
        let out = json(&format!(
            "plan triehh++ --epsilon 10 --delta {delta} --levels 10 --json"
        ));
        assert_eq!(out["meets_target"], true, "{out}");
        assert!(out["composed_epsilon"].as_f64().unwrap() <= 10.0, "{out}");
    }
    let out = json("plan triehh++ --epsilon 10 --delta 1e-4 --levels 10 --json");
    assert!(out["basic_composition_epsilon"].is_null(), "{out}");
}

#[test]
fn plan_closed_form_from_alpha_reproduces_the_paper() {
    let out = json(
        "plan sample-threshold --epsilon 1 --delta 1e-8 --alpha 0.16666666666666666 --method closed-form --json",
    );
    let rate = out["sampling_rate"].as_f64().unwrap();
    assert!((rate - 0.10535).abs() < 5e-5, "{rate}");
    assert_eq!(out["threshold"], 20);
    assert_eq!(out["method"], "closed-form");
    assert_eq!(out["neighbours"], "add-remove");
    assert_eq!(out["epsilon"], 1.0);
    assert_eq!(out["delta"], 1e-8);
}

#[test]
fn plan_tight_threshold_at_the_papers_rate() {
    let out = json(
        "plan sample-threshold --epsilon 1 --delta 1e-8 --sampling-rate 0.10535342647 --method tight --json",
    );
    assert_eq!(out["threshold"], 11);
}

#[test]
fn plan_tight_largest_rate_at_threshold_20() {
    let out =
        json("plan sample-threshold --epsilon 1 --delta 1e-8 --threshold 20 --method tight --json");
    let rate = out["sampling_rate"].as_f64().unwrap();
    // The reference boundary is 0.251424102... (tools/reference max_sampling_rate.json).
    assert!((0.2514..0.251_424_11).contains(&rate), "{rate}");
    assert!(out["achieved_delta"].as_f64().unwrap() <= 1e-8);
}

#[test]
fn plan_reports_delta_without_a_target() {
    let out = json(
        "plan sample-threshold --epsilon 1 --sampling-rate 0.10535342647142627 --threshold 20 --method theorem1 --json",
    );
    let delta = out["delta"].as_f64().unwrap();
    assert!(
        (delta / 1.517_970_173_675_118e-12 - 1.0).abs() < 2e-6,
        "{delta}"
    );
}

#[test]
fn plan_without_anything_minimises_the_smallest_released_count() {
    let out = json("plan sample-threshold --epsilon 1 --delta 1e-8 --json");
    assert_eq!(out["solved_for"], "sampling_rate,threshold");
    let shown = out["min_released_count"].as_f64().unwrap();
    let (rate, threshold) = (
        out["sampling_rate"].as_f64().unwrap(),
        out["threshold"].as_f64().unwrap(),
    );
    assert!((shown - threshold / rate).abs() < 1e-9);
}

#[test]
fn histogram_of_shakespeare_meets_the_acceptance_criteria() {
    let out = json("histogram --dataset shakespeare --epsilon 1 --delta 1e-8 --seed 1 --json");
    let truth = shakespeare_counts();
    assert_eq!(out["mechanism"], "sample-and-threshold");
    assert_eq!(out["seed"], 1);
    assert_eq!(out["parameters"]["population"], 835_229);
    assert_eq!(out["guarantee"]["epsilon"], 1.0);
    assert!(out["guarantee"]["delta"].as_f64().unwrap() <= 1e-8);
    assert_eq!(out["guarantee"]["neighbours"], "add-remove");
    assert_eq!(out["guarantee"]["method"], "tight");
    let threshold = out["parameters"]["threshold"].as_u64().unwrap();
    let items = out["items"].as_array().unwrap();
    assert!(items.len() > 100);
    for item in items {
        let word = item["item"].as_str().unwrap();
        assert!(truth.contains_key(word), "{word} is not in the data");
        assert!(item["count"].as_u64().unwrap() >= threshold);
    }
    let the = items.iter().find(|i| i["item"] == "the").unwrap();
    let estimate = the["estimate"].as_f64().unwrap();
    let true_count = truth["the"] as f64;
    assert!(
        (estimate / true_count - 1.0).abs() < 0.05,
        "{estimate} vs {true_count}"
    );
}

#[test]
fn histogram_reads_lines_and_tsv_files() {
    let mut lines = String::new();
    for (word, copies) in [("apple", 400), ("pear", 300), ("fig", 2)] {
        for _ in 0..copies {
            lines.push_str(word);
            lines.push('\n');
        }
    }
    let path = temp_file("fruit.txt", lines.as_bytes());
    let out = json(&format!(
        "histogram --input {} --epsilon 1 --delta 1e-6 --threshold 10 --seed 3 --json",
        path.display()
    ));
    let words: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["apple", "pear"]);

    let path = temp_file(
        "fruit.tsv",
        b"client_id\titem\nu1\tapple\nu1\tpear\nu2\tapple\n",
    );
    let out = json(&format!(
        "histogram --input {} --epsilon 1 --delta 1e-6 --seed 3 --json",
        path.display()
    ));
    assert_eq!(out["parameters"]["population"], 2);
    assert!(
        out["input"].as_str().unwrap().contains("client"),
        "{}",
        out["input"]
    );
}

#[test]
fn bad_input_exits_with_a_one_line_message() {
    let with = |extra: &str| format!("histogram --epsilon 1 --delta 1e-8 {extra}");
    let missing = failure(&with("--input /no/such/file.txt"));
    assert!(missing.contains("/no/such/file.txt"), "{missing}");
    let bad = temp_file("bad.txt", b"fine\n\xff\xfe\n");
    let not_utf8 = failure(&with(&format!("--input {}", bad.display())));
    assert!(
        not_utf8.contains(":2:") && not_utf8.contains("UTF-8"),
        "{not_utf8}"
    );
    let epsilon = failure("histogram --dataset shakespeare --epsilon -1 --delta 1e-8");
    assert!(epsilon.contains("epsilon"), "{epsilon}");
    let delta = failure("histogram --dataset shakespeare --epsilon 1 --delta 2");
    assert!(delta.contains("delta"), "{delta}");
    let plan_delta = failure("plan sample-threshold --epsilon 1 --delta 2");
    assert!(plan_delta.contains("delta"), "{plan_delta}");
    let rate = failure("plan sample-threshold --epsilon 1 --delta 1e-8 --sampling-rate 0.9");
    assert!(rate.contains("sampling rate"), "{rate}");
    let unknown = failure(&with("--dataset hamlet"));
    assert!(unknown.contains("shakespeare"), "{unknown}");
    let spec = failure(&with("--synthetic geometric:n=0,domain=10"));
    assert!(spec.contains('n'), "{spec}");
}

#[test]
fn bench_reports_a_median() {
    let out = json("bench sample-threshold --clients 100000 --domain 1024 --repeats 3 --json");
    assert!(out["median_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(out["clients"], 100_000);
}

#[test]
fn bench_st_composition_times_the_plans_composition() {
    let rounds = "--sampling-rate 0.1420227 --threshold 26 --levels 10 --delta 1e-8";
    let bench = json(&format!("bench st-composition {rounds} --repeats 2 --json"));
    let plan = json(&format!("plan triehh++ --epsilon 4 {rounds} --json"));
    assert_eq!(bench["composed_epsilon"], plan["composed_epsilon"]);
    for timing in ["loss_pair_median_seconds", "compose_median_seconds"] {
        assert!(bench[timing].as_f64().unwrap() > 0.0, "{bench}");
    }
    let refused = failure("bench st-composition --levels 0");
    assert!(refused.contains("--levels 0"), "{refused}");
}

#[test]
fn heavy_hitters_triehh_plus_finds_the_true_top_20_words() {
    let out = json(
        "heavy-hitters --dataset shakespeare --algorithm triehh++ --epsilon 4 --delta 1e-8 \
         --seed 1 --json --truth",
    );
    assert_eq!(out["mechanism"], "triehh++");
    // The levels compose tightly by default: the total ε is the composed one, at most the
    // target (basic composition summed ε/L back to exactly 4).
    assert_eq!(out["parameters"]["composition"], "tight");
    let epsilon = out["guarantee"]["epsilon"].as_f64().unwrap();
    assert!(epsilon <= 4.0 && epsilon > 3.9, "{epsilon}");
    assert!(out["guarantee"]["delta"].as_f64().unwrap() <= 1e-8);
    assert!(out["truth"]["true_top_k_found"].as_u64().unwrap() >= 20);
    let node_errors = &out["truth"]["trie_estimate_errors"];
    assert_eq!(
        node_errors["estimates"],
        out["trie"].as_array().unwrap().len()
    );
    assert!(
        node_errors["mean_relative_error"].as_f64().unwrap() < 0.5,
        "{node_errors}"
    );
    let truth = shakespeare_counts();
    let threshold = out["parameters"]["threshold"].as_u64().unwrap();
    for node in out["trie"].as_array().unwrap() {
        assert!(node["count"].as_u64().unwrap() >= threshold, "{node}");
    }
    for item in out["items"].as_array().unwrap() {
        let word = item["item"].as_str().unwrap();
        assert!(truth.contains_key(word), "{word} is not in the data");
        assert!(item["count"].as_u64().unwrap() >= threshold);
    }
}

#[test]
fn heavy_hitters_with_noise_based_levels_release_noisy_counts_within_the_budget() {
    let truth = shakespeare_counts();
    for (mechanism, noise) in [
        ("laplace-threshold", "scale"),
        ("gaussian-threshold", "sigma"),
    ] {
        let out = json(&format!(
            "heavy-hitters --dataset shakespeare --algorithm triehh++ --mechanism {mechanism} \
             --epsilon 1 --delta 1e-8 --seed 1 --json --truth"
        ));
        let parameters = &out["parameters"];
        assert_eq!(parameters["level_mechanism"], mechanism, "{parameters}");
        // The levels' (ε, δ) pairs compose optimally by default.
        assert_eq!(parameters["composition"], "optimal");
        assert!(parameters[noise].as_f64().unwrap() > 0.0, "{parameters}");
        assert!(parameters.get("sampling_rate").is_none(), "{parameters}");
        let epsilon = out["guarantee"]["epsilon"].as_f64().unwrap();
        assert!(epsilon <= 1.0 && epsilon > 0.99, "{epsilon}");
        assert!(out["guarantee"]["delta"].as_f64().unwrap() <= 1e-8);
        let level = &parameters["per_level_guarantee"];
        assert!(level["delta"].as_f64().unwrap() < 1e-9, "{level}");
        assert!(out["truth"]["true_top_k_found"].as_u64().unwrap() >= 20);
        let threshold = parameters["threshold"].as_u64().unwrap();
        for item in out["items"].as_array().unwrap() {
            let word = item["item"].as_str().unwrap();
            let count = item["count"].as_u64().unwrap();
            // Nobody is sampled: the count is the word's own, plus noise, and is its estimate.
            assert!(count >= threshold, "{item}");
            let estimate = item["estimate"].as_f64().unwrap();
            assert!((estimate - count as f64).abs() < 1e-9, "{item}");
            let true_count = truth[word] as f64;
            assert!(
                (count as f64 - true_count).abs() < 400.0,
                "{word}: {count} against {true_count}"
            );
        }
    }
}

#[test]
fn heavy_hitters_refuse_what_noise_based_levels_cannot_run() {
    let base = "heavy-hitters --dataset shakespeare --epsilon 1 --delta 1e-8";
    for (extra, expected) in [
        (
            "--algorithm triehh --mechanism laplace-threshold",
            "--mechanism applies to --algorithm triehh++ only",
        ),
        (
            "--algorithm triehh++ --mechanism laplace-threshold --sampling-rate 0.1",
            "calibrate their noise and threshold from ε and δ",
        ),
        (
            "--algorithm triehh++ --mechanism gaussian-threshold --threshold 20",
            "calibrate their noise and threshold from ε and δ",
        ),
        (
            "--algorithm triehh++ --mechanism laplace-threshold --sampling-key 00000000000000000000736563726574",
            "partition-selection levels sample nobody",
        ),
        (
            "--algorithm triehh++ --mechanism truncated-geometric",
            "releases keys without the counts",
        ),
        (
            "--algorithm triehh++ --mechanism laplace-threshold --composition tight",
            "basic, advanced, optimal or pld",
        ),
    ] {
        let message = failure(&format!("{base} {extra}"));
        assert!(message.contains(expected), "{extra}: {message}");
    }
    let unknown = tally(&format!("{base} --algorithm triehh++ --mechanism laplace"));
    let message = String::from_utf8_lossy(&unknown.stderr);
    assert!(!unknown.status.success());
    assert!(
        message.contains("expected sample-threshold, laplace-threshold or gaussian-threshold"),
        "{message}"
    );
}

#[test]
fn heavy_hitters_single_round_releases_whole_words() {
    let out = json(
        "heavy-hitters --dataset shakespeare --algorithm single-round --epsilon 1 --delta 1e-8 \
         --seed 2 --top 10 --json --truth",
    );
    assert_eq!(out["items"].as_array().unwrap().len(), 10);
    assert_eq!(out["items"][0]["item"], "the");
    assert!(out["truth"]["recall"].as_f64().unwrap() > 0.99);
}

#[test]
fn heavy_hitters_triehh_releases_words_without_counts() {
    let out = json(
        "heavy-hitters --dataset shakespeare --algorithm triehh --epsilon 4 --delta 1e-8 --seed 3 \
         --json --truth",
    );
    assert_eq!(out["mechanism"], "triehh");
    assert_eq!(out["guarantee"]["neighbours"], "replace-one");
    assert!(out["guarantee"]["epsilon"].as_f64().unwrap() <= 4.0);
    let truth = shakespeare_counts();
    let items = out["items"].as_array().unwrap();
    assert!(items.len() > 20);
    for item in items {
        assert!(truth.contains_key(item["item"].as_str().unwrap()));
        assert!(item["count"].is_null());
    }
    assert!(out["truth"]["true_top_k_found"].as_u64().unwrap() >= 20);
}

#[test]
fn heavy_hitters_read_a_file_into_its_items_counts() {
    // 4,000 clients: three common words and a tail held by one client each.
    let mut text = String::new();
    for i in 0..4_000 {
        match i % 4 {
            0 | 1 => text.push_str("apple\n"),
            2 => text.push_str("banana\n"),
            _ if i % 8 == 3 => text.push_str("cherry\n"),
            _ => text.push_str(&format!("rare{i}\n")),
        }
        if i % 100 == 0 {
            text.push_str("  \n");
        }
    }
    let file = temp_file("heavy-words.txt", text.as_bytes());
    for algorithm in ["triehh++", "triehh"] {
        let out = json(&format!(
            "heavy-hitters --algorithm {algorithm} --input {} --epsilon 4 --delta 1e-8 --seed 1 \
             --quiet --json",
            file.display()
        ));
        assert_eq!(out["parameters"]["population"], 4_000, "{algorithm}");
        let input = out["input"].as_str().unwrap();
        assert!(
            input.starts_with("4000 clients, one per non-blank line of "),
            "{input}"
        );
        let found: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["item"].as_str().unwrap())
            .collect();
        // The two commonest words are found, and no word held by one client.
        assert!(
            found.contains(&"apple") && found.contains(&"banana"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .all(|word| ["apple", "banana", "cherry"].contains(word)),
            "{found:?}"
        );
    }
    let bad = temp_file("heavy-bad.txt", b"apple\nbanana\n\xff\n");
    let error = failure(&format!(
        "heavy-hitters --algorithm triehh++ --input {} --epsilon 4 --delta 1e-8 --quiet",
        bad.display()
    ));
    assert!(
        error.contains("heavy-bad.txt:3: line is not valid UTF-8"),
        "{error}"
    );
}
