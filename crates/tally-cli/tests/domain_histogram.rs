//! `tally histogram --mechanism M`: the mechanisms over a public domain.

mod common;

use common::{failure, json, temp_file};

/// Every mechanism over a public domain that runs on the shipped Shakespeare data.
const MECHANISMS: &[(&str, &str)] = &[
    ("grr", "local"),
    ("sue", "local"),
    ("oue", "local"),
    ("olh", "local"),
    ("hadamard-response", "local"),
    ("subset-selection", "local"),
];

#[test]
fn every_mechanism_states_its_guarantee_and_estimates_every_element() {
    let data = temp_file(
        "domain.txt",
        "0\n1\n1\n2\n2\n2\n3\n3\n3\n3\n".repeat(200).as_bytes(),
    );
    for &(mechanism, model) in MECHANISMS {
        let out = json(&format!(
            "histogram --input {} --mechanism {mechanism} --domain 8 --epsilon 1 --delta 1e-8 \
             --seed 3 --truth --json",
            data.display()
        ));
        assert_eq!(out["mechanism"], mechanism);
        assert_eq!(out["model"], model);
        assert_eq!(out["guarantee"]["model"], model);
        assert_eq!(out["guarantee"]["epsilon"], 1.0);
        assert_eq!(out["guarantee"]["neighbours"], "replace-one");
        assert_eq!(out["local_epsilon"], 1.0, "{mechanism}");
        let items = out["items"].as_array().unwrap();
        assert_eq!(
            items.len(),
            8,
            "{mechanism}: one estimate per domain element"
        );
        for (x, item) in items.iter().enumerate() {
            assert_eq!(item["item"], x);
            let truth = [200, 400, 600, 800, 0, 0, 0, 0][x];
            assert_eq!(item["true_count"], truth);
            // Null standard deviations at n = 2000, ε = 1 are all below 160.
            let estimate = item["estimate"].as_f64().unwrap();
            assert!(
                (estimate - truth as f64).abs() < 6.0 * 160.0,
                "{mechanism} {x}"
            );
        }
        assert!(out["mean_absolute_error"].as_f64().unwrap() >= 0.0);
        assert_eq!(out["messages_per_client"], 1.0);
    }
}

/// The acceptance run: on the Shakespeare data at ε = 1, δ = 1e-8, every mechanism runs and
/// states its guarantee with its model and neighbour relation.
#[test]
fn every_mechanism_runs_on_shakespeare_at_epsilon_1() {
    const ALL: &[(&str, &str, bool)] = &[
        ("grr", "local", true),
        ("sue", "local", true),
        ("oue", "local", true),
        ("olh", "local", true),
        ("hadamard-response", "local", true),
        ("subset-selection", "local", true),
        ("laplace", "central", false),
        ("gaussian", "central", false),
        ("balcer-cheu", "shuffle", false),
        ("shuffled-grr", "shuffle", true),
        ("ghazi-hadamard", "shuffle", false),
        ("ghazi-count-min", "shuffle", false),
    ];
    for &(mechanism, model, has_local) in ALL {
        // Count-Min needs few hash rows to be feasible for 835,229 users.
        let extra = if mechanism == "ghazi-count-min" {
            "--failure-probability 0.5"
        } else {
            ""
        };
        let out = json(&format!(
            "histogram --dataset shakespeare --mechanism {mechanism} --buckets 64 --epsilon 1 \
             --delta 1e-8 --seed 1 --truth --json {extra}"
        ));
        let guarantee = &out["guarantee"];
        assert_eq!(out["model"], model, "{mechanism}");
        assert_eq!(guarantee["model"], model, "{mechanism}");
        assert!(guarantee["epsilon"].as_f64().unwrap() <= 1.0, "{mechanism}");
        assert!(guarantee["delta"].as_f64().unwrap() <= 1e-8, "{mechanism}");
        let neighbours = guarantee["neighbours"].as_str().unwrap();
        assert!(
            ["add-remove", "replace-one"].contains(&neighbours),
            "{mechanism}"
        );
        assert_eq!(out["local_epsilon"].is_number(), has_local, "{mechanism}");
        // A shuffle guarantee says what holds against colluding devices (a tenth of them by
        // default) and the floor with every other device colluding: the local ε₀ where there
        // is one, none (null) otherwise. Central and local guarantees do not depend on it.
        let collusion = &guarantee["collusion"];
        if model == "shuffle" {
            assert_eq!(collusion["colluding_fraction"], 0.1, "{mechanism}");
            let colluding = collusion["epsilon"].as_f64().unwrap();
            assert!(
                colluding >= guarantee["epsilon"].as_f64().unwrap(),
                "{mechanism}: {collusion}"
            );
            assert_eq!(collusion["floor"], out["local_epsilon"], "{mechanism}");
        } else {
            assert!(collusion.is_null(), "{mechanism}: {collusion}");
        }
        assert_eq!(
            out["local_guarantee"]["model"].as_str() == Some("local"),
            has_local
        );
        assert_eq!(out["clients"], 835_229);
        assert_eq!(out["items"].as_array().unwrap().len(), 64, "{mechanism}");
        // Every bucket holds about 13,000 tokens (the error of releasing zeros); the noisiest
        // mechanism, GRR, has a null standard deviation of about 4,300 here.
        let error = out["mean_absolute_error"].as_f64().unwrap();
        assert!(error < 6_000.0, "{mechanism}: {error}");
    }
    let local = json(
        "histogram --dataset shakespeare --mechanism hadamard-response --buckets 64 --epsilon 1 \
         --delta 1e-8 --seed 1 --json",
    );
    assert_eq!(local["messages_per_client"], 1.0);
    assert_eq!(local["bits_per_message"], 7);
}

#[test]
fn clamp_removes_negative_estimates() {
    let data = temp_file("clamp.txt", "0\n".repeat(50).as_bytes());
    let args = format!(
        "histogram --input {} --mechanism grr --domain 64 --epsilon 0.5 --delta 1e-8 --seed 1 \
         --json",
        data.display()
    );
    let negative = |args: &str| {
        json(args)["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["estimate"].as_f64().unwrap() < 0.0)
            .count()
    };
    assert!(negative(&args) > 0, "unclamped estimates keep their sign");
    assert_eq!(negative(&format!("{args} --clamp")), 0);
}

#[test]
fn a_domain_is_required_and_never_read_off_the_data() {
    let err = failure("histogram --dataset shakespeare --mechanism grr --epsilon 1 --delta 1e-8");
    assert!(err.contains("public domain"), "{err}");
    assert!(err.contains("reveal"), "{err}");
}

#[test]
fn items_outside_an_integer_domain_are_refused() {
    let data = temp_file("outside.txt", b"1\n2\nten\n");
    let err = failure(&format!(
        "histogram --input {} --mechanism oue --domain 4 --epsilon 1 --delta 1e-8",
        data.display()
    ));
    assert!(err.contains("\"ten\""), "{err}");
    // The file streams, and the error names the line.
    assert!(err.contains("outside.txt:3: item"), "{err}");
    let data = temp_file("large.txt", b"1\n7\n");
    let err = failure(&format!(
        "histogram --input {} --mechanism oue --domain 4 --epsilon 1 --delta 1e-8",
        data.display()
    ));
    assert!(err.contains("[0, 4)"), "{err}");
}

/// The true counts of a release run with `--truth --json`.
fn true_counts(out: &serde_json::Value) -> Vec<u64> {
    out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["true_count"].as_u64().unwrap())
        .collect()
}

/// A file streams into the number of clients holding each element: lines (blank ones
/// skipped) parsed or hashed, TSV rows as clients or one row per client.
#[test]
fn an_input_file_streams_into_each_elements_clients() {
    let lines = temp_file("streamed.txt", b"\xef\xbb\xbf3\r\n\n 1\n3\n0\n");
    let run = |input: &std::path::Path, options: &str| {
        json(&format!(
            "histogram --input {} --mechanism laplace {options} --epsilon 1 --delta 1e-8 \
             --seed 3 --truth --json",
            input.display()
        ))
    };
    let out = run(&lines, "--domain 4");
    assert_eq!(true_counts(&out), [1, 1, 0, 2]);
    assert_eq!(out["clients"], 4);
    let input = out["input"].as_str().unwrap();
    assert!(
        input.starts_with("4 clients, one per non-blank line of"),
        "{input}"
    );
    let hashed = run(&lines, "--buckets 16");
    assert_eq!(true_counts(&hashed).iter().sum::<u64>(), 4);
    let rows = temp_file(
        "streamed.tsv",
        b"client_id\titem\na\t1\nb\t2\na\t1\nc\t0\na\t1\n",
    );
    let out = run(&rows, "--domain 3 --rows-as-clients");
    assert_eq!(true_counts(&out), [1, 3, 1]);
    assert_eq!(out["clients"], 5);
    // One row per client: a's rows all hold 1.
    let out = run(&rows, "--domain 3");
    assert_eq!(true_counts(&out), [1, 1, 1]);
    assert_eq!(out["clients"], 3);
    let input = out["input"].as_str().unwrap();
    assert!(input.contains("client-level"), "{input}");
}

#[test]
fn sample_threshold_options_are_refused_elsewhere() {
    let err = failure(
        "histogram --dataset shakespeare --mechanism hadamard-response --buckets 64 --epsilon 1 \
         --delta 1e-8 --threshold 20",
    );
    assert!(err.contains("sample-threshold"), "{err}");
}

#[test]
fn sample_threshold_runs_on_buckets_for_comparison() {
    let out = json(
        "histogram --dataset shakespeare --buckets 64 --epsilon 1 --delta 1e-8 --seed 1 --json",
    );
    assert_eq!(out["mechanism"], "sample-and-threshold");
    assert_eq!(out["guarantee"]["model"], "central");
    // Every one of 64 buckets holds thousands of the 835,229 tokens, so all pass the threshold.
    assert_eq!(out["released_items"], 64);
    assert!(out["input"].as_str().unwrap().contains("64 buckets"));
}
