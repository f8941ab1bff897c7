//! `run_task`: any registered task kind run as the server runs it, over devices' data.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::Value;
use tally_accounting::Neighbours;
use tally_accounting::numeric::ln_binomial_pmf;
use tally_accounting::sample_threshold::Analysis;
use tally_messages::{
    DomainHistogramMechanism, HistogramMechanism, PROTOCOL_VERSION, PrivacyTarget, PublicDomain,
    QuantileMethod, RoundPolicy, Sampling, TaskKind, TaskSpec,
};
use tally_protocol::{AskResponder, Engine};
use tally_sim::{Error, run_task};
use tally_stats_tests::binomial_interval;

fn spec(kind: TaskKind, devices: usize, epsilon: f64) -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: "proxy".into(),
        expected_population: devices as u64,
        privacy: PrivacyTarget {
            epsilon,
            delta: 1e-6,
            neighbours: Neighbours::AddRemove,
            analysis: Analysis::Tight,
        },
        kind,
        rounds: RoundPolicy::default(),
        sampling: Sampling::Aggregator,
    }
}

/// The task run by one loop without chunks, every device answering in turn with coins that go
/// unused (its kinds flip none on the device): the engine as the server drives it.
fn one_loop(spec: &TaskSpec, inputs: &[String], seed: u64) -> String {
    let (mut engine, _) = Engine::build(spec).unwrap();
    let mut coins = ChaCha20Rng::seed_from_u64(seed);
    let mut unused = ChaCha20Rng::seed_from_u64(0);
    while engine.advance() {
        let opened = engine.open(spec.sampling, ChaCha20Rng::from_rng(&mut coins));
        let responder = opened.ask.responder(spec.sampling).unwrap();
        let mut aggregator = opened.aggregator;
        for input in inputs {
            if let Some(report) = responder.respond(input, 256, &mut unused) {
                aggregator.absorb(report).unwrap();
            }
        }
        engine.observe(aggregator.release()).unwrap();
    }
    engine.document(spec)
}

/// `holders` devices of each of `words`, then one device per word of its own: 3,000 or more
/// devices, so several chunks.
fn devices(words: &[(&str, usize)]) -> Vec<String> {
    let mut inputs: Vec<String> = words
        .iter()
        .flat_map(|&(word, holders)| std::iter::repeat_n(word.to_owned(), holders))
        .collect();
    let own = 3_000usize.saturating_sub(inputs.len()).max(100);
    inputs.extend((0..own).map(|i| format!("own{i}")));
    inputs
}

/// For kinds whose devices flip no coin, the chunked, parallel run releases byte for byte
/// what one loop driving the engine releases with the same aggregator coins: TrieHH++ over
/// partition-selection levels (four rounds) and a central Laplace histogram over a public
/// domain.
#[test]
fn a_task_releases_what_the_engine_releases_round_by_round() {
    let words = devices(&[("ab", 900), ("abc", 600), ("ba", 500)]);
    let selection = spec(
        TaskKind::TriehhPlusSelection {
            mechanism: HistogramMechanism::GaussianThreshold,
            levels: 4,
            segment: 1,
            composition: None,
        },
        words.len(),
        2.0,
    );
    let numbers: Vec<String> = (0..3_000).map(|i| ((i * i) % 16).to_string()).collect();
    let laplace = spec(
        TaskKind::DomainHistogram {
            mechanism: DomainHistogramMechanism::Laplace,
            domain: PublicDomain::Integers(16),
            public_coins: None,
        },
        numbers.len(),
        1.0,
    );
    for seed in [1, 2] {
        for (spec, inputs) in [(&selection, &words), (&laplace, &numbers)] {
            let simulated = run_task(spec, inputs, seed).unwrap();
            assert_eq!(simulated, one_loop(spec, inputs, seed), "{:?}", spec.kind);
        }
        let released: Value = serde_json::from_str(&run_task(&selection, &words, seed).unwrap())
            .expect("a JSON document");
        let items = released["items"].as_array().unwrap();
        assert!(
            items.iter().any(|i| i["item"] == "ab"),
            "{}",
            released["items"]
        );
    }
}

/// A sample-and-threshold histogram whose aggregator flips the coins: the item held by `h`
/// devices is released as often as `Pr[Bin(h, p) ≥ τ]` says, over 1,500 seeds at α = 1e-6;
/// a run that lost six of its holders' reports is caught.
#[test]
fn stat_a_sample_threshold_task_releases_an_item_as_its_law_says() {
    const RUNS: u64 = 1_500;
    let kind = TaskKind::Histogram {
        mechanism: HistogramMechanism::SampleThreshold,
        sampling_rate: Some(0.5),
        threshold: None,
    };
    let probe = devices(&[("x", 10)]);
    let document: Value =
        serde_json::from_str(&run_task(&spec(kind.clone(), probe.len(), 1.0), &probe, 0).unwrap())
            .unwrap();
    let threshold = document["parameters"]["threshold"].as_u64().expect("τ");
    let rate = document["parameters"]["sampling_rate"].as_f64().expect("p");
    assert_eq!(rate.to_bits(), 0.5_f64.to_bits(), "{document}");
    let holders = 2 * threshold as usize;
    let released = |holders: usize| {
        let inputs = devices(&[("x", holders)]);
        let spec = spec(kind.clone(), inputs.len(), 1.0);
        (0..RUNS)
            .filter(|&seed| {
                let document: Value =
                    serde_json::from_str(&run_task(&spec, &inputs, seed).unwrap()).unwrap();
                document["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i["item"] == "x")
            })
            .count() as u64
    };
    let law = |holders: usize| -> f64 {
        (threshold..=holders as u64)
            .map(|k| ln_binomial_pmf(k, holders as u64, rate).exp())
            .sum()
    };
    let (lo, hi) = binomial_interval(RUNS, law(holders), 1e-6);
    let count = released(holders);
    assert!(
        (lo..=hi).contains(&count),
        "released {count} of {RUNS}, expected {lo} to {hi} (τ {threshold}, h {holders})"
    );
    let mutant = released(holders - 6);
    assert!(
        !(lo..=hi).contains(&mutant),
        "the mutant passes: released {mutant} of {RUNS}"
    );
}

/// What cannot run is refused by name: data a round cannot take, and too few devices for a
/// round's minimum cohort.
#[test]
fn a_task_refuses_data_its_rounds_cannot_take_and_too_few_devices() {
    let quantiles = TaskKind::Quantiles {
        method: QuantileMethod::Hierarchical,
        quantiles: vec![0.5],
        branching: None,
        levels: 3,
        consistent: false,
        composition: None,
        range: None,
        sampling_rate: None,
        threshold: None,
    };
    let mut inputs: Vec<String> = (0..500).map(|i| format!("0.{i}")).collect();
    inputs[41] = "apple".to_owned();
    match run_task(&spec(quantiles.clone(), 500, 1.0), &inputs, 0) {
        Err(Error::Device {
            device: 42,
            round: 1,
            data,
        }) => assert_eq!(data, "apple"),
        other => panic!("expected device 42's data refused, got {other:?}"),
    }
    let few: Vec<String> = (0..99).map(|i| format!("0.{i}")).collect();
    let error = run_task(&spec(quantiles, 99, 1.0), &few, 0).unwrap_err();
    assert!(
        error.to_string().contains("minimum cohort of 100"),
        "{error}"
    );
}
