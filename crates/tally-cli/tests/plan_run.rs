//! Each planner chooses the parameters the command that runs chooses for the same inputs:
//! `tally plan triehh++` and `tally heavy-hitters --algorithm triehh++`; `tally plan
//! sample-threshold` and `tally histogram` and `tally heavy-hitters --algorithm single-round`;
//! `tally plan histogram` (with and without `--mechanism`) and `tally histogram`; `tally plan
//! shuffle` and `tally histogram --mechanism shuffled-grr`; `tally plan quantiles` and `tally
//! range`. (`tally plan quantiles` against `tally quantiles` is in `plan_quantiles.rs`; `tally
//! task create` against the planners is `a_task_is_calibrated_as_its_planner_plans_it` in
//! `federated.rs`, beside the tests that a task's release, parameters included, is the offline
//! command's.)

#[allow(dead_code)] // `failure` is not needed here.
mod common;

use std::path::PathBuf;

use common::{json, temp_file};
use serde_json::Value;

/// 3,000 clients of one integer item in `[0, 16)`, skewed towards small items (enough
/// clients for every shuffle mechanism to be calibrated at `(1, 1e-8)`).
fn items_file() -> PathBuf {
    let text: String = (0..3000u64)
        .map(|i| format!("{}\n", (i * i * 2_654_435_761 % 4099) % (1 + i % 16)))
        .collect();
    temp_file("plan-run-items.txt", text.as_bytes())
}

/// 20,480 numbers spread evenly over `[0, 1]`.
fn values_file() -> PathBuf {
    let text: String = (0..20_480u64)
        .map(|i| format!("{}\n", (i * 7919 % 20_480) as f64 / 20_480.0))
        .collect();
    temp_file("plan-run-values.txt", text.as_bytes())
}

/// The shipped per-speaker Shakespeare rows: 1,419 speakers, `client_id<TAB>word`.
fn speakers() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/shakespeare/shakespeare_speakers.tsv.gz"
    )
    .to_owned()
}

/// Asserts `plan[field] == run[field]` for each field, naming the inputs.
fn assert_fields_equal(plan: &Value, run: &Value, fields: &[&str], inputs: &str) {
    for field in fields {
        assert_eq!(plan[field], run[field], "{inputs}: {field}");
    }
}

#[test]
fn plan_triehh_plus_chooses_what_heavy_hitters_runs_with() {
    for options in [
        // The command: the planner used to keep τ = 26 where the run took τ = 28.
        "--epsilon 1 --delta 1e-8 --levels 10",
        "--epsilon 4 --delta 1e-8 --levels 10 --threshold 26",
        "--epsilon 2 --delta 1e-6 --levels 8 --sampling-rate 0.05",
        "--epsilon 1 --delta 1e-8 --levels 6 --method exact",
    ] {
        let plan = json(&format!("plan triehh++ {options} --json"));
        let run = json(&format!(
            "heavy-hitters --dataset shakespeare --algorithm triehh++ {options} --seed 1 --json"
        ));
        let parameters = &run["parameters"];
        assert_fields_equal(
            &plan["per_level"],
            parameters,
            &["sampling_rate", "threshold"],
            options,
        );
        assert_eq!(plan["composition"], parameters["composition"], "{options}");
        assert_eq!(
            plan["composed_epsilon"], run["guarantee"]["epsilon"],
            "{options}"
        );
        assert_eq!(plan["meets_target"], true, "{options}");
    }
}

#[test]
fn plan_sample_threshold_chooses_what_histogram_and_single_round_run_with() {
    let input = items_file();
    for options in [
        "--epsilon 1 --delta 1e-8",
        "--epsilon 2 --delta 1e-6 --threshold 30",
        "--epsilon 1 --delta 1e-8 --sampling-rate 0.1 --method exact",
        "--epsilon 1 --delta 1e-8 --method theorem1 --neighbours replace-one",
    ] {
        let plan = json(&format!("plan sample-threshold {options} --json"));
        for command in ["histogram", "heavy-hitters --algorithm single-round"] {
            let run = json(&format!(
                "{command} --input {} {options} --seed 1 --json",
                input.display()
            ));
            let inputs = format!("{command} {options}");
            assert_fields_equal(
                &plan,
                &run["parameters"],
                &["sampling_rate", "threshold"],
                &inputs,
            );
            let guarantee = &run["guarantee"];
            assert_fields_equal(
                &plan,
                guarantee,
                &["epsilon", "method", "neighbours"],
                &inputs,
            );
            assert_eq!(plan["achieved_delta"], guarantee["delta"], "{inputs}");
        }
    }
}

#[test]
fn plan_histogram_calibrates_each_mechanism_as_histogram_runs_it() {
    let input = items_file();
    for mechanism in [
        "grr",
        "sue",
        "oue",
        "olh",
        "hadamard-response",
        "subset-selection",
        "laplace",
        "gaussian",
        "balcer-cheu",
        "shuffled-grr",
        "ghazi-hadamard",
        "ghazi-count-min",
    ] {
        let options = format!("--mechanism {mechanism} --domain 16 --epsilon 1 --delta 1e-8");
        let plan = json(&format!("plan histogram {options} --clients 3000 --json"));
        let run = json(&format!(
            "histogram {options} --input {} --seed 1 --json",
            input.display()
        ));
        assert_eq!(run["clients"], 3000, "{options}");
        assert_fields_equal(
            &plan,
            &run,
            &[
                "mechanism",
                "model",
                "local_epsilon",
                "messages_per_client",
                "bits_per_message",
            ],
            &options,
        );
        // The run also states what an honest device keeps against colluding devices, for the
        // shuffle mechanisms; the plan states the guarantee alone.
        let mut guarantee = run["guarantee"].clone();
        let collusion = guarantee.as_object_mut().unwrap().remove("collusion");
        assert_eq!(
            collusion.is_some(),
            run["model"] == "shuffle",
            "{options}: {collusion:?}"
        );
        assert_eq!(plan["guarantee"], guarantee, "{options}");
    }
}

#[test]
fn plan_histogram_settings_are_what_histogram_runs_with() {
    let input = speakers();
    let options = "--epsilon 1 --delta 1e-8";
    let plan = json(&format!("plan histogram --input {input} {options} --json"));
    let settings = plan["settings"].as_array().expect("settings");
    let checked: Vec<&Value> = settings
        .iter()
        .filter(|s| [1, 128].contains(&s["max_items_per_client"].as_u64().unwrap()))
        .collect();
    assert_eq!(checked.len(), 8, "{plan}");
    for setting in checked {
        let (mechanism, k) = (&setting["mechanism"], &setting["max_items_per_client"]);
        let mechanism = mechanism.as_str().unwrap();
        let run = json(&format!(
            "histogram --input {input} {options} --mechanism {mechanism} \
             --max-items-per-client {k} --seed 1 --json"
        ));
        let inputs = format!("{mechanism} at k = {k}");
        let mut parameters = run["parameters"].clone();
        assert_eq!(parameters["max_items_per_client"], *k, "{inputs}");
        parameters
            .as_object_mut()
            .unwrap()
            .remove("max_items_per_client");
        assert_eq!(setting["parameters"], parameters, "{inputs}");
        assert_eq!(setting["guarantee"], run["guarantee"], "{inputs}");
    }
}

#[test]
fn plan_shuffle_chooses_the_local_epsilon_shuffled_grr_runs_with() {
    let input = items_file();
    for bound in ["fmt21", "fmt23"] {
        let plan = json(&format!(
            "plan shuffle --users 3000 --epsilon 1 --delta 1e-8 --bound {bound} --json"
        ));
        let run = json(&format!(
            "histogram --mechanism shuffled-grr --bound {bound} --domain 16 --input {} \
             --epsilon 1 --delta 1e-8 --seed 1 --json",
            input.display()
        ));
        assert_eq!(plan["local_epsilon"], run["local_epsilon"], "{bound}");
        assert_eq!(
            plan["neighbours"], run["guarantee"]["neighbours"],
            "{bound}"
        );
    }
}

#[test]
fn plan_quantiles_chooses_what_range_runs_with() {
    let input = values_file();
    for options in [
        "--epsilon 1 --delta 1e-8 --levels 4",
        "--epsilon 2 --delta 1e-6 --levels 3 --branching 8 --threshold 20",
        "--epsilon 1 --delta 1e-8 --levels 5 --composition advanced --analysis theorem1",
    ] {
        let plan = json(&format!(
            "plan quantiles {options} --algorithm hierarchical --json"
        ));
        let run = json(&format!(
            "range --input {} {options} --lo 0.1 --hi 0.6 --seed 1 --json",
            input.display()
        ));
        let parameters = &run["parameters"];
        assert_fields_equal(
            &plan,
            parameters,
            &[
                "sampling_rate",
                "threshold",
                "per_round_guarantee",
                "composition",
                "levels",
                "branching",
            ],
            options,
        );
        assert_eq!(plan["finest_bucket"], parameters["resolution"], "{options}");
        assert_fields_equal(&plan, &run, &["guarantee", "target_delta"], options);
    }
}
