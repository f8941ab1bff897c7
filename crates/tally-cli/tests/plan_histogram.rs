//! `tally plan histogram`: the predicted error of an element's estimate against releases
//! simulated through the mechanisms' rounds, and the command and its report.

#[allow(dead_code)] // `temp_file` is not needed here.
mod common;
#[allow(dead_code)] // The level-share checks are for the multi-round reports.
mod report_files;

use common::{failure, json, tally};
use report_files::{assert_page, scratch, written_report};
use tally_accounting::Neighbours;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::histogram::DomainMap;
use tally_messages::DomainHistogramMechanism;
use tally_plan::domain::{DomainSetting, Simulated, calibrate_with, error_at};
use tally_sim::run_domain_histogram;

/// The clients holding each of the 8 elements: 2000 in all, some elements held by nobody.
const COUNTS: [u64; 8] = [0, 3, 20, 90, 250, 600, 1037, 0];

/// Releases simulated per mechanism, and the seed of the first.
const RUNS: u64 = 4000;
const FIRST_SEED: u64 = 77_000;

/// How many standard errors a simulated mean may lie from the prediction: two-sided
/// `α = 6.7e-8` per check (normal approximation of a mean of 4,000 releases), below `1e-6`
/// over the test's 14 checks. The mutants the test is for lie 40 or more away.
const Z: f64 = 5.4;

/// The mean over the elements of the predicted `E|error|` and `E[error²]`, against the mean
/// over `RUNS` releases of the elements' `|error|` and `error²`, with the standard error of the
/// latter (from the spread of the per-release means, so that elements of one release may be
/// correlated).
fn predicted_and_simulated(
    mechanism: DomainHistogramMechanism,
    epsilon: f64,
) -> [(f64, f64, f64); 2] {
    let clients: u64 = COUNTS.iter().sum();
    let setting = DomainSetting {
        map: DomainMap::Integers(COUNTS.len() as u32),
        clients,
        epsilon,
        delta: 1e-6,
        neighbours: Neighbours::AddRemove,
        bound: ShuffleBound::default(),
        beta: 0.1,
    };
    let built = calibrate_with(mechanism, &setting, 0, Simulated).expect("calibrated");
    let elements = COUNTS.len() as f64;
    let (mut absolute, mut squared) = (0.0, 0.0);
    for &count in &COUNTS {
        let error = error_at(built.describe(), clients, count)
            .expect("a law")
            .error;
        absolute += error.mean_absolute_error / elements;
        squared += (error.standard_deviation.powi(2) + error.bias.powi(2)) / elements;
    }
    let per_run: Vec<[f64; 2]> = (0..RUNS)
        .map(|seed| {
            let estimates = run_domain_histogram(&built, &COUNTS, FIRST_SEED + seed);
            let mut sums = [0.0; 2];
            for (estimate, &count) in estimates.iter().zip(&COUNTS) {
                let error = estimate - count as f64;
                sums[0] += error.abs() / elements;
                sums[1] += error * error / elements;
            }
            sums
        })
        .collect();
    [(absolute, 0), (squared, 1)].map(|(predicted, k)| {
        let runs = RUNS as f64;
        let mean = per_run.iter().map(|r| r[k]).sum::<f64>() / runs;
        let variance = per_run.iter().map(|r| (r[k] - mean).powi(2)).sum::<f64>() / (runs - 1.0);
        (predicted, mean, (variance / runs).sqrt())
    })
}

/// Two central, three shuffle and two local mechanisms: the predicted error against the mean of
/// the simulated releases, within [`Z`] standard errors.
#[test]
fn predicted_error_matches_simulated_releases() {
    for (mechanism, epsilon) in [
        (DomainHistogramMechanism::Laplace, 1.0),
        (DomainHistogramMechanism::Gaussian, 1.0),
        (DomainHistogramMechanism::ShuffledGrr, 1.0),
        (DomainHistogramMechanism::BalcerCheu, 2.0),
        (DomainHistogramMechanism::GhaziHadamard, 1.0),
        (DomainHistogramMechanism::Grr, 1.0),
        (DomainHistogramMechanism::Oue, 1.0),
    ] {
        for (what, (predicted, simulated, standard_error)) in ["E|error|", "E[error²]"]
            .into_iter()
            .zip(predicted_and_simulated(mechanism, epsilon))
        {
            assert!(
                (predicted - simulated).abs() <= Z * standard_error,
                "{}: {what} predicted {predicted}, simulated {simulated} ± {standard_error}",
                mechanism.name()
            );
        }
    }
}

#[test]
fn plan_prints_the_guarantee_and_the_error_by_count() {
    let plan = json(
        "plan histogram --mechanism laplace --domain 64 --clients 1000 --epsilon 1 --delta 1e-8 --json",
    );
    assert_eq!(plan["mechanism"], "laplace");
    assert_eq!(plan["model"], "central");
    assert_eq!(plan["guarantee"]["delta"], 0.0);
    let errors = plan["errors"].as_array().expect("errors");
    assert_eq!(errors[0]["count"], 0);
    assert_eq!(errors.last().expect("a row")["count"], 1000);
    // Scale 1: E|X| = 2q/(1 − q²) with q = e^{−1}.
    let q = (-1.0_f64).exp();
    let mae = errors[0]["mean_absolute_error"].as_f64().expect("a number");
    assert!((mae - 2.0 * q / (1.0 - q * q)).abs() < 1e-12, "{mae}");
}

#[test]
fn report_compares_every_mechanism_and_the_population() {
    let dir = scratch("plan-histogram-report");
    let (html, document) = written_report(
        &format!(
            "plan histogram --mechanism grr --buckets 16 --clients 5000 --epsilon 1 --delta 1e-8 \
             --report {} --synthetic zipf:n=5000,domain=200,s=1.1",
            dir.display()
        ),
        &dir,
    );
    let mechanisms = document["mechanisms"].as_array().expect("mechanisms");
    assert_eq!(mechanisms.len(), 12);
    for model in ["central model", "shuffle model", "local model"] {
        assert!(html.contains(model), "{model}");
    }
    // When each trust model is the right choice, with its best mechanism here.
    let choice = &html[html
        .find("<h2>Which to choose</h2>")
        .expect("the choice section")..];
    let choice = &choice[..choice.find("</ul>").expect("its list")];
    for model in ["central", "shuffle", "local"] {
        assert!(
            choice.contains(&format!("<li><b>{model}</b> when")),
            "{choice}"
        );
    }
    assert!(choice.contains("is its best, E|error|"), "{choice}");
    let sweep = document["population"]["sweep"].as_array().expect("sweep");
    assert_eq!(sweep.len(), 6);
    let at_one = sweep.iter().find(|p| p["epsilon"] == 1.0).expect("ε = 1");
    assert!(
        at_one["sample_threshold"]["recall"]
            .as_f64()
            .expect("recall")
            > 0.0
    );
    let grr = at_one["mean_absolute_error"]
        .as_array()
        .expect("errors")
        .iter()
        .find(|e| e["mechanism"] == "grr")
        .expect("grr");
    assert!(grr["mean_absolute_error"].as_f64().expect("error") > 0.0);
}

#[test]
fn plan_refuses_what_the_histogram_refuses() {
    let err = failure("plan histogram --mechanism grr --clients 1000 --epsilon 1 --delta 1e-8");
    assert!(err.contains("needs a public domain"), "{err}");
    let err = failure(
        "plan histogram --mechanism grr --domain 16 --clients 1000 --epsilon 1 --delta 1e-8 --failure-probability 0.1",
    );
    assert!(err.contains("ghazi-count-min only"), "{err}");
}

/// The shipped per-speaker Shakespeare rows: 1,419 speakers, `client_id<TAB>word`.
fn speakers() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/shakespeare/shakespeare_speakers.tsv.gz"
    )
    .to_owned()
}

/// Without --mechanism, on per-speaker Shakespeare at (1, 1e-8): every mechanism at every k
/// up to 128, and a recommendation that releases at least the 30 words of PipelineDP's best
/// median, which is the setting of the most expected released words.
#[test]
fn plan_chooses_the_mechanism_and_k_on_per_speaker_shakespeare() {
    let document = json(&format!(
        "plan histogram --input {} --epsilon 1 --delta 1e-8 --json",
        speakers()
    ));
    assert_eq!(document["clients"], 1419);
    let settings = document["settings"].as_array().expect("settings");
    // k = 1, 2, ..., 128 (the largest speaker has 2624 distinct words), four mechanisms each.
    assert_eq!(settings.len(), 8 * 4);
    let most = settings
        .iter()
        .map(|s| s["expected_released_items"].as_f64().expect("calibrated"))
        .fold(0.0, f64::max);
    let chosen = &document["recommendation"];
    let expected = chosen["expected_released_items"].as_f64().expect("count");
    assert!(expected >= 30.0, "{chosen}");
    assert!(
        (expected - most).abs() <= 1e-12 * most,
        "{expected} against {most}"
    );
    let command = chosen["command"].as_str().expect("command");
    assert!(
        command.contains(&format!(
            "--mechanism {} --max-items-per-client {}",
            chosen["mechanism"].as_str().unwrap(),
            chosen["max_items_per_client"]
        )),
        "{command}"
    );
    let why = chosen["why"].as_str().expect("why");
    for words in [
        "never shown",
        "aggregator sees",
        "noise",
        "expected to be off by",
    ] {
        assert!(why.contains(words), "{why}");
    }
    // Every setting states its error: none for the truncated geometric, which shows no count,
    // and for the others an error that the bound k drops less of as k grows.
    for setting in settings {
        let error = &setting["error"];
        if setting["mechanism"] == "truncated-geometric" {
            assert_eq!(error["kind"], "no count", "{setting}");
        } else if setting["expected_released_items"].as_f64().expect("count") > 0.0 {
            let relative = error["expected_relative_error"].as_f64().expect("relative");
            assert!(relative > 0.0, "{setting}");
        }
    }
    assert_eq!(chosen["error"]["kind"], "estimates");
    let absolute = chosen["error"]["expected_absolute_error"]
        .as_f64()
        .expect("absolute");
    assert!(
        why.contains(&format!("off by {absolute:.1} clients")),
        "{why}"
    );
    assert!(
        document["error_definition"]
            .as_str()
            .expect("definition")
            .contains("weighted by their probability of release")
    );
}

/// Without --mechanism, `--report DIR` draws every mechanism's released items and error
/// against k with the recommendation, and writes `plan.json` with the numbers the table
/// printed.
#[test]
fn the_choosers_report_draws_every_mechanism_and_the_recommendation() {
    let dir = scratch("plan-histogram-choice");
    let out = tally(&format!(
        "plan histogram --input {} --epsilon 1 --delta 1e-8 --report {}",
        speakers(),
        dir.display()
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).expect("UTF-8");
    let said = String::from_utf8(out.stderr).expect("UTF-8");
    let index = dir.join("index.html");
    assert!(
        said.contains(&format!("report: {}", index.display())),
        "{said}"
    );
    let html = std::fs::read_to_string(&index).expect("index.html");
    let figures: Vec<&str> = html.split("<svg").skip(1).collect();
    assert_eq!(figures.len(), 2);
    for figure in &figures {
        for name in [
            "sample-threshold",
            "truncated-geometric",
            "laplace-threshold",
            "gaussian-threshold",
            "recommended (k = 128)",
        ] {
            assert!(figure.contains(name), "{name} is not in a figure's legend");
        }
    }
    assert_page(&html);
    for words in [
        "Recommended: sample-threshold with k = 128",
        "never shown",
        "aggregator sees",
        "right choice",
        "no count",
    ] {
        assert!(html.contains(words), "{words}");
    }
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).expect("plan.json"))
            .expect("JSON");
    assert_eq!(document["recommendation"]["mechanism"], "sample-threshold");
    let settings = document["settings"].as_array().expect("settings");
    assert_eq!(settings.len(), 32);
    for setting in settings {
        let mechanism = setting["mechanism"].as_str().expect("mechanism");
        let k = setting["max_items_per_client"].as_u64().expect("k");
        let row_start = format!("{k:>4}  {mechanism:<20}");
        let row = table
            .lines()
            .find(|l| l.starts_with(&row_start))
            .unwrap_or_else(|| panic!("no row {row_start:?} in {table}"));
        let released = setting["expected_released_items"]
            .as_f64()
            .expect("released");
        let error = &setting["error"];
        let error = match error["kind"].as_str().expect("kind") {
            "estimates" => format!(
                "{:.1} ({:.1}%)",
                error["expected_absolute_error"].as_f64().expect("absolute"),
                100.0 * error["expected_relative_error"].as_f64().expect("relative")
            ),
            other => other.to_owned(),
        };
        assert!(
            row.contains(&format!(" {released:.1}  ")) && row.contains(&error),
            "{row} against {setting}"
        );
        assert!(
            html.contains(&format!("<td>{released:.1}</td><td>{error}</td>")),
            "{row}"
        );
    }
}

#[test]
fn plan_without_a_mechanism_refuses_what_does_not_apply() {
    let err = failure("plan histogram --epsilon 1 --delta 1e-8");
    assert!(err.contains("give --input FILE"), "{err}");
    let err = failure(&format!(
        "plan histogram --input {} --clients 10 --epsilon 1 --delta 1e-8",
        speakers()
    ));
    assert!(err.contains("drop them or give --mechanism"), "{err}");
    let err = failure(&format!(
        "plan histogram --mechanism laplace --domain 16 --clients 10 --input {} --epsilon 1 \
         --delta 1e-8",
        speakers()
    ));
    assert!(err.contains("add --report DIR"), "{err}");
    let err = failure(&format!(
        "plan histogram --input {} --epsilon 1 --delta 1e-8 --report {} --top 5",
        speakers(),
        scratch("plan-histogram-top").display()
    ));
    assert!(err.contains("drop --recall-at"), "{err}");
    let err = failure("plan histogram --mechanism laplace --domain 16 --epsilon 1 --delta 1e-8");
    assert!(err.contains("give --clients N"), "{err}");
}
