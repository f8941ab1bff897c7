//! `run_task`: any registered task kind run as the server runs it, over devices' data.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::Value;
use tally_accounting::Neighbours;
use tally_accounting::numeric::ln_binomial_pmf;
use tally_accounting::sample_threshold::Analysis;
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::SamplingKey;
use tally_messages::{
    DomainHistogramMechanism, HistogramMechanism, PROTOCOL_VERSION, PrivacyTarget, PublicDomain,
    QuantileMethod, RangeTreeMechanism, RoundPolicy, Sampling, TaskKind, TaskSpec, TreeReading,
};
use tally_protocol::{AskResponder, Engine};
use tally_sim::{Devices, Error, KeyedPopulation, run_keyed_sample_threshold, run_task};
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
            let simulated = run_task(spec, Devices::Each(inputs), seed).unwrap();
            assert_eq!(simulated, one_loop(spec, inputs, seed), "{:?}", spec.kind);
        }
        let released: Value =
            serde_json::from_str(&run_task(&selection, Devices::Each(&words), seed).unwrap())
                .expect("a JSON document");
        let items = released["items"].as_array().unwrap();
        assert!(
            items.iter().any(|i| i["item"] == "ab"),
            "{}",
            released["items"]
        );
    }
}

/// Where the aggregator flips a sample-and-threshold round's coins, each listed device's
/// report meets its own coin, as on the server: the release is byte for byte what one loop
/// driving the engine releases.
#[test]
fn listed_devices_meet_the_aggregators_coins_one_by_one_as_on_the_server() {
    let words = devices(&[("ab", 900), ("abc", 600), ("ba", 40)]);
    let histogram = spec(
        TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: Some(0.5),
            threshold: None,
        },
        words.len(),
        1.0,
    );
    for seed in [5, 6] {
        let simulated = run_task(&histogram, Devices::Each(&words), seed).unwrap();
        assert_eq!(simulated, one_loop(&histogram, &words, seed));
    }
}

/// The same devices as [`devices`], given as their distinct data's counts.
fn counted(listed: &[String]) -> Vec<(String, u64)> {
    let mut held: Vec<(String, u64)> = Vec::new();
    for data in listed {
        match held.last_mut() {
            Some((last, holders)) if last == data => *holders += 1,
            _ => held.push((data.clone(), 1)),
        }
    }
    held
}

/// How a law test gives `run_task` its devices.
#[derive(Clone, Copy, Debug)]
enum Given {
    Each,
    Counted,
    /// With ids, their coins keyed by a key derived from the run's seed.
    Keyed,
}

/// Device `i`'s id, `"d{i}"`, beside each of `inputs`.
fn with_ids(inputs: &[String]) -> Vec<(String, String)> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, data)| (format!("d{i}"), data.clone()))
        .collect()
}

/// The sampling key of run `seed` of a law test.
fn key_of(seed: u64) -> SamplingKey {
    SamplingKey::derive(&seed.to_le_bytes()).unwrap()
}

/// A sample-and-threshold histogram whose `sampling` party flips the coins, its devices
/// `given` one way: the item held by `h = 2τ` devices is released as often as
/// `Pr[Bin(h, p) ≥ τ]` says, over 1,500 seeds at α = 1e-6; a run that lost six of its
/// holders' reports is caught.
fn assert_released_as_the_law_says(given: Given, sampling: Sampling) {
    const RUNS: u64 = 1_500;
    let kind = TaskKind::Histogram {
        mechanism: HistogramMechanism::SampleThreshold,
        sampling_rate: Some(0.5),
        threshold: None,
    };
    let spec = |devices: usize| TaskSpec {
        sampling,
        ..spec(kind.clone(), devices, 1.0)
    };
    let probe = devices(&[("x", 10)]);
    let document: Value =
        serde_json::from_str(&run_task(&spec(probe.len()), Devices::Each(&probe), 0).unwrap())
            .unwrap();
    let threshold = document["parameters"]["threshold"].as_u64().expect("τ");
    let rate = document["parameters"]["sampling_rate"].as_f64().expect("p");
    assert_eq!(rate.to_bits(), 0.5_f64.to_bits(), "{document}");
    let holders = 2 * threshold as usize;
    let released = |holders: usize| {
        let inputs = devices(&[("x", holders)]);
        let held = counted(&inputs);
        let named = with_ids(&inputs);
        let spec = spec(inputs.len());
        (0..RUNS)
            .filter(|&seed| {
                let key = key_of(seed);
                let devices = match given {
                    Given::Each => Devices::Each(&inputs),
                    Given::Counted => Devices::Counted(&held),
                    Given::Keyed => Devices::Keyed {
                        devices: &named,
                        key: &key,
                    },
                };
                let document: Value =
                    serde_json::from_str(&run_task(&spec, devices, seed).unwrap()).unwrap();
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
        "{given:?}, {sampling:?}: released {count} of {RUNS}, expected {lo} to {hi} \
         (τ {threshold}, h {holders})"
    );
    let mutant = released(holders - 6);
    assert!(
        !(lo..=hi).contains(&mutant),
        "{given:?}, {sampling:?}: the mutant passes: released {mutant} of {RUNS}"
    );
}

/// A sample-and-threshold histogram whose aggregator flips the coins releases an item as its
/// law says ([`assert_released_as_the_law_says`]).
#[test]
fn stat_a_sample_threshold_task_releases_an_item_as_its_law_says() {
    assert_released_as_the_law_says(Given::Each, Sampling::Aggregator);
}

/// Devices given as counts are answered by one exact binomial per datum, on the devices'
/// side (`respond_held`) or the aggregator's (`absorb_repeated`): the release keeps the law
/// of every device answering in turn, whichever party flips the coins. So do devices listed
/// one by one whose own coins are drawn by exact gaps between the devices that send.
#[test]
fn stat_counted_devices_keep_the_law_of_each_device() {
    for sampling in [Sampling::Aggregator, Sampling::Device] {
        assert_released_as_the_law_says(Given::Counted, sampling);
    }
    assert_released_as_the_law_says(Given::Each, Sampling::Device);
}

/// Devices whose coins are keyed by their ids release as the law of independent exact coins
/// says, a new key per run: the keyed coins flip on the devices' side, and under the
/// aggregator's coins the keyed devices flip none.
#[test]
fn stat_keyed_devices_keep_the_law_of_each_device() {
    for sampling in [Sampling::Device, Sampling::Aggregator] {
        assert_released_as_the_law_says(Given::Keyed, sampling);
    }
}

/// The released `(item, count)` cells of a histogram document.
fn released_cells(document: &str) -> Vec<(String, u64)> {
    let document: Value = serde_json::from_str(document).unwrap();
    let mut cells: Vec<(String, u64)> = document["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let item = i["item"].as_str().unwrap().to_owned();
            (item, i["count"].as_u64().expect("a count"))
        })
        .collect();
    cells.sort();
    cells
}

/// A keyed sample-and-threshold histogram run as the server runs it flips the coins the keyed
/// executor flips for round 1 and releases the same cells; the devices' order plays no part,
/// in it and in a task of several rounds. A run keyed by another key releases other cells,
/// so the comparison can fail.
#[test]
fn keyed_devices_release_what_the_keyed_executor_releases_in_any_order() {
    let inputs = devices(&[("ab", 200), ("abc", 150), ("ba", 100), ("bb", 60)]);
    let named = with_ids(&inputs);
    let histogram = TaskSpec {
        sampling: Sampling::Device,
        ..spec(
            TaskKind::Histogram {
                mechanism: HistogramMechanism::SampleThreshold,
                sampling_rate: Some(0.5),
                threshold: None,
            },
            inputs.len(),
            1.0,
        )
    };
    let mechanism = SampleThreshold::calibrate_keyed(
        1.0,
        1e-6,
        tally_accounting::sample_threshold::PlanTarget::SamplingRate(0.5),
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap();
    let (ids, items): (Vec<&str>, Vec<&str>) = named
        .iter()
        .map(|(id, data)| (id.as_str(), data.as_str()))
        .unzip();
    let population = KeyedPopulation::from_rows(ids, items, "proxy").unwrap();
    let mut reversed = named.clone();
    reversed.reverse();
    for secret in [b"one".as_slice(), b"two"] {
        let key = SamplingKey::derive(secret).unwrap();
        let document = run_task(
            &histogram,
            Devices::Keyed {
                devices: &named,
                key: &key,
            },
            9,
        )
        .unwrap();
        let release = run_keyed_sample_threshold(&population, &mechanism, key.clone(), 1).unwrap();
        let mut expected: Vec<(String, u64)> = release
            .items
            .iter()
            .map(|cell| {
                (
                    population.item_name(cell.item).unwrap().to_owned(),
                    cell.count,
                )
            })
            .collect();
        expected.sort();
        assert!(!expected.is_empty());
        assert_eq!(released_cells(&document), expected);
        let backwards = run_task(
            &histogram,
            Devices::Keyed {
                devices: &reversed,
                key: &key,
            },
            10,
        )
        .unwrap();
        assert_eq!(
            backwards, document,
            "the order or the seed changed the coins"
        );
    }
    let other = |secret: &[u8]| {
        let key = SamplingKey::derive(secret).unwrap();
        let devices = Devices::Keyed {
            devices: &named,
            key: &key,
        };
        released_cells(&run_task(&histogram, devices, 9).unwrap())
    };
    assert_ne!(other(b"one"), other(b"two"));
    // A task of three sample-and-threshold rounds: each round's coins are the key's alone.
    let quantiles = TaskSpec {
        sampling: Sampling::Device,
        ..spec(
            TaskKind::Quantiles {
                method: QuantileMethod::Hierarchical,
                quantiles: vec![0.5],
                branching: None,
                levels: 3,
                consistent: false,
                composition: None,
                range: None,
                sampling_rate: Some(0.5),
                threshold: None,
            },
            3_000,
            1.0,
        )
    };
    let numbers: Vec<String> = (0..3_000).map(|i| format!("0.{}", i % 97)).collect();
    let named = with_ids(&numbers);
    let mut reversed = named.clone();
    reversed.reverse();
    let key = SamplingKey::derive(b"quantiles").unwrap();
    let run = |devices: &[(String, String)], seed| {
        let devices = Devices::Keyed { devices, key: &key };
        run_task(&quantiles, devices, seed).unwrap()
    };
    assert_eq!(run(&named, 1), run(&reversed, 2));
}

/// Keyed devices are refused by name where their key cannot flip a round's coins as the
/// engine's guarantee assumes, and where an id is given twice.
#[test]
fn keyed_devices_are_refused_where_a_key_cannot_flip_their_coins() {
    let key = SamplingKey::derive(b"refusals").unwrap();
    let numbers: Vec<String> = (0..3_000).map(|i| (i % 4).to_string()).collect();
    let named = with_ids(&numbers);
    let keyed = Devices::Keyed {
        devices: &named,
        key: &key,
    };
    let local = spec(
        TaskKind::DomainHistogram {
            mechanism: DomainHistogramMechanism::Grr,
            domain: PublicDomain::Integers(4),
            public_coins: None,
        },
        numbers.len(),
        1.0,
    );
    let error = run_task(&local, keyed, 0).unwrap_err();
    assert!(error.to_string().contains("local randomizer"), "{error}");
    // 1e-5 lies in [2^-17, 2^-16): its last bit is worth 2^-69, below a keyed coin's 2^-64.
    let rare = TaskSpec {
        sampling: Sampling::Device,
        ..spec(
            TaskKind::Histogram {
                mechanism: HistogramMechanism::SampleThreshold,
                sampling_rate: Some(1e-5),
                threshold: None,
            },
            numbers.len(),
            20.0,
        )
    };
    let error = run_task(&rare, keyed, 0).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("probability 0.00001, which a keyed coin cannot flip exactly")
            && error.to_string().contains("of at least 0.00025,"),
        "{error}"
    );
    let mut twice = named.clone();
    twice[7].0 = "d3".to_owned();
    match run_task(
        &local,
        Devices::Keyed {
            devices: &twice,
            key: &key,
        },
        0,
    ) {
        Err(Error::DeviceTwice { id, first, again }) => {
            assert_eq!((id.as_str(), first, again), ("d3", 4, 8));
        }
        other => panic!("expected id d3 refused as given twice, got {other:?}"),
    }
}

/// For kinds whose devices flip no coin, devices given as their data's counts release byte
/// for byte what the same devices listed one by one release: each distinct datum's report is
/// counted `holders` times at once.
#[test]
fn counted_devices_release_what_the_devices_listed_release() {
    let words = devices(&[("ab", 900), ("abc", 600), ("ba", 500)]);
    let selection = spec(
        TaskKind::TriehhPlusSelection {
            mechanism: HistogramMechanism::LaplaceThreshold,
            levels: 3,
            segment: 1,
            composition: None,
        },
        words.len(),
        2.0,
    );
    let numbers: Vec<String> = (0..3_000).map(|i| (i % 16 / 3).to_string()).collect();
    let mut numbers_sorted = numbers.clone();
    numbers_sorted.sort();
    let gaussian = spec(
        TaskKind::DomainHistogram {
            mechanism: DomainHistogramMechanism::Gaussian,
            domain: PublicDomain::Integers(16),
            public_coins: None,
        },
        numbers.len(),
        1.0,
    );
    for seed in [3, 4] {
        for (spec, listed) in [(&selection, &words), (&gaussian, &numbers_sorted)] {
            let held = counted(listed);
            assert!(held.len() < listed.len() / 2, "{:?}", spec.kind);
            let each = run_task(spec, Devices::Each(listed), seed).unwrap();
            let by_counts = run_task(spec, Devices::Counted(&held), seed).unwrap();
            assert_eq!(by_counts, each, "{:?}", spec.kind);
        }
    }
    // The devices' order plays no part in what a coinless kind releases.
    assert_eq!(
        run_task(&gaussian, Devices::Each(&numbers), 3).unwrap(),
        run_task(&gaussian, Devices::Each(&numbers_sorted), 3).unwrap()
    );
}

/// Local histograms over 4 elements at local ε = 1, their devices given as counts: OUE's
/// round draws its aggregate from the counts (`CountedAggregate`), GRR's devices answer a
/// datum at a time (`respond_held`). Element 0's estimate keeps its law, as with every device
/// answering in turn: unbiased for its 1,000 holders, with the variance of
/// `Bin(1000, p) + Bin(1000, q)` over `(p − q)²` (`p`, `q`: the probabilities that a holder and
/// a non-holder report element 0), its mean over 300 seeds within 4.89 standard errors
/// (α ≈ 1e-6); a population 60 holders short is caught.
#[test]
fn stat_a_domain_round_over_counted_devices_keeps_its_law() {
    const RUNS: u64 = 300;
    let e = 1_f64.exp();
    for (mechanism, p, q) in [
        (DomainHistogramMechanism::Oue, 0.5, 1.0 / (e + 1.0)),
        (
            DomainHistogramMechanism::Grr,
            e / (e + 3.0),
            1.0 / (e + 3.0),
        ),
    ] {
        let kind = TaskKind::DomainHistogram {
            mechanism,
            domain: PublicDomain::Integers(4),
            public_coins: None,
        };
        let spec = spec(kind, 2_000, 1.0);
        let mean_estimate = |held: &[(String, u64)], given: Given| {
            let listed: Vec<String> = held
                .iter()
                .flat_map(|(data, holders)| std::iter::repeat_n(data.clone(), *holders as usize))
                .collect();
            let total: f64 = (0..RUNS)
                .map(|seed| {
                    let devices = match given {
                        Given::Each => Devices::Each(&listed),
                        Given::Counted => Devices::Counted(held),
                        Given::Keyed => {
                            unreachable!("devices flipping a randomizer's coins are not keyed")
                        }
                    };
                    let document: Value =
                        serde_json::from_str(&run_task(&spec, devices, seed).unwrap()).unwrap();
                    assert_eq!(document["local_epsilon"].as_f64(), Some(1.0), "{document}");
                    document["items"][0]["estimate"]
                        .as_f64()
                        .expect("an estimate")
                })
                .sum();
            total / RUNS as f64
        };
        let held = |zeros: u64| -> Vec<(String, u64)> {
            let rest = 2_000 - zeros;
            vec![
                ("0".into(), zeros),
                ("1".into(), rest / 3),
                ("2".into(), rest / 3),
                ("3".into(), rest - 2 * (rest / 3)),
            ]
        };
        let sd = (1_000.0 * p * (1.0 - p) + 1_000.0 * q * (1.0 - q)).sqrt() / (p - q);
        let bound = 4.89 * sd / (RUNS as f64).sqrt();
        for given in [Given::Counted, Given::Each] {
            let mean = mean_estimate(&held(1_000), given);
            assert!(
                (mean - 1_000.0).abs() <= bound,
                "{mechanism:?}, {given:?}: mean estimate {mean}, expected 1000 ± {bound}"
            );
        }
        let mutant = mean_estimate(&held(940), Given::Counted);
        assert!(
            (mutant - 1_000.0).abs() > bound,
            "{mechanism:?}: the mutant passes: mean estimate {mutant}"
        );
    }
}

/// Runs of `spec` over devices given as counts keep the law of every device answering in
/// turn: over 30 seeds each, the mean of `estimate` of the runs over `held(holders)` counted
/// and listed differ by at most 4.89 standard errors of the difference (α ≈ 1e-6), and counted
/// devices `short` holders short are caught.
fn assert_counted_keeps_the_law(
    spec: &TaskSpec,
    held: impl Fn(u64) -> Vec<(String, u64)>,
    holders: u64,
    short: u64,
    estimate: impl Fn(&Value) -> f64,
) {
    const RUNS: u64 = 30;
    let estimates = |held: &[(String, u64)], given: Given| -> Vec<f64> {
        let listed: Vec<String> = held
            .iter()
            .flat_map(|(data, holders)| std::iter::repeat_n(data.clone(), *holders as usize))
            .collect();
        (0..RUNS)
            .map(|seed| {
                let devices = match given {
                    Given::Each => Devices::Each(&listed),
                    Given::Counted => Devices::Counted(held),
                    Given::Keyed => {
                        unreachable!("devices flipping a randomizer's coins are not keyed")
                    }
                };
                let document = run_task(spec, devices, seed).unwrap();
                estimate(&serde_json::from_str(&document).unwrap())
            })
            .collect()
    };
    let mean_and_variance = |values: &[f64]| {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let variance =
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
        (mean, variance)
    };
    let (listed, listed_variance) = mean_and_variance(&estimates(&held(holders), Given::Each));
    let z = |counted: &[f64]| {
        let (mean, variance) = mean_and_variance(counted);
        (mean - listed) / ((variance + listed_variance) / RUNS as f64).sqrt()
    };
    let counted = z(&estimates(&held(holders), Given::Counted));
    assert!(
        counted.abs() <= 4.89,
        "{:?}: counted and listed differ by {counted} standard errors",
        spec.kind
    );
    let mutant = z(&estimates(&held(holders - short), Given::Counted));
    assert!(
        mutant.abs() > 4.89,
        "{:?}: the mutant passes: {mutant} standard errors",
        spec.kind
    );
}

/// Ghazi et al.'s shuffle rounds whose devices hold an element of `0..2^L` or a number, their
/// devices given as counts: each draws its aggregate from the counts (`Kind::counted`), and
/// keeps the law of every device answering ([`assert_counted_keeps_the_law`]): the Count-Min
/// prefix tree over the items `0..4` (the common item's estimate) and Ghazi's Hadamard range
/// tree over `[0, 1]` (the count of `[0.25, 0.75)`); in each, 60 holders short are caught.
#[test]
fn stat_shuffle_trees_over_counted_devices_keep_their_law() {
    let shuffled = |kind| {
        let mut spec = spec(kind, 3_000, 54.0);
        spec.privacy.neighbours = Neighbours::ReplaceOne;
        spec.rounds.min_cohort = 3_000;
        spec.rounds.max_report_bytes = tally_messages::MAX_REPORT_BYTES;
        spec
    };
    let prefix_tree = shuffled(TaskKind::CountMinPrefixTree {
        domain_bits: 2,
        threshold: 160,
        failure_probability: None,
        public_coins: Some(5),
    });
    let items = |heavy: u64| -> Vec<(String, u64)> {
        vec![
            ("0".into(), 20),
            ("1".into(), 20),
            ("2".into(), heavy),
            ("3".into(), 3_000 - 40 - heavy),
        ]
    };
    assert_counted_keeps_the_law(&prefix_tree, items, 2_000, 60, |document| {
        let items = document["items"].as_array().expect("items");
        let heavy = items
            .iter()
            .find(|i| i["item"] == "2")
            .expect("item 2 found");
        heavy["estimate"].as_f64().expect("an estimate")
    });
    let mut range_tree = shuffled(TaskKind::RangeTree {
        mechanism: RangeTreeMechanism::GhaziHadamard,
        levels: 3,
        range: None,
        reading: TreeReading::Range { lo: 0.25, hi: 0.75 },
        failure_probability: None,
        public_coins: None,
    });
    range_tree.privacy.epsilon = 8.0;
    let numbers = |inside: u64| -> Vec<(String, u64)> {
        vec![("0.3".into(), inside), ("0.9".into(), 3_000 - inside)]
    };
    assert_counted_keeps_the_law(&range_tree, numbers, 1_500, 60, |document| {
        document["estimate"].as_f64().expect("an estimate")
    });
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
    match run_task(
        &spec(quantiles.clone(), 500, 1.0),
        Devices::Each(&inputs),
        0,
    ) {
        Err(Error::Device {
            device: 42,
            round: 1,
            data,
        }) => assert_eq!(data, "apple"),
        other => panic!("expected device 42's data refused, got {other:?}"),
    }
    let held: Vec<(String, u64)> = vec![
        ("0.5".into(), 40),
        ("0.25".into(), 0),
        ("apple".into(), 0),
        ("pear".into(), 3),
        ("0.75".into(), 460),
    ];
    match run_task(
        &spec(quantiles.clone(), 503, 1.0),
        Devices::Counted(&held),
        0,
    ) {
        Err(Error::Device {
            device: 41,
            round: 1,
            data,
        }) => assert_eq!(
            data, "pear",
            "the first holder of data refused, counted from 1"
        ),
        other => panic!("expected device 41's data refused, got {other:?}"),
    }
    let few: Vec<String> = (0..99).map(|i| format!("0.{i}")).collect();
    let error = run_task(&spec(quantiles, 99, 1.0), Devices::Each(&few), 0).unwrap_err();
    assert!(
        error.to_string().contains("minimum cohort of 100"),
        "{error}"
    );
}
