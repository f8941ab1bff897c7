//! Empirical privacy audit of TrieHH++ with keyed coins (`tally heavy-hitters --algorithm
//! triehh++ --sampling-key`, `tally.spark.heavy_hitters`), run through
//! `tally_sim::run_keyed_triehh_plus`, at weak per-level parameters (`p_s = 0.5`, `τ = 3`,
//! `ε = 1`) over two restricted levels composed by the tight accountant; see
//! [`CellAudit::run_levels`] for the checks.
//!
//! The guarantee holds when the key is secret, so that the PRF behaves as a random function:
//! every run draws a fresh key, the only randomness of a keyed run. Neighbouring datasets: `D`
//! holds `k` named clients with two rows `"ab"` each (level 1 reports the prefix `"a"`, level 2
//! `"ab"`) plus filler clients with two rows of words no one else starts with; `D'` holds one
//! `"ab"` client fewer. The outcome is the whole released tree; the audited chain of cells is
//! `"a"` then `"ab"`.
//!
//! The mutants, each claiming the real task's guarantee, must be caught: a strict threshold, no
//! threshold, a coin compared with a rate 20% above the accounted one, and a coin that ignores
//! the round, so that every level draws the same sample. They run [`run_mutant`], the level
//! loop of the keyed run with the release rule or the coin replaced, which reproduces the real
//! run exactly when nothing is replaced (checked here).
//!
//! The audits run on rayon's workers, so that the keyed run's own parallel loops run inline
//! instead of waking the pool for each tiny population.

use std::collections::HashMap;

use rand::RngExt;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_accounting::{Guarantee, Neighbours};
use tally_core::heavy_hitters::{
    TrieHhPlus, TrieHhPlusConfig, TrieOutput, keyed_level_mechanism, release_prefix_counts,
};
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::{KeyedCoin, SamplingKey};
use tally_core::task::Task;
use tally_sim::{KeyedPopulation, run_keyed_triehh_plus};
use tally_stats_tests::CellAudit;

const AUDIT: CellAudit = CellAudit::WEAK;
/// Levels of the audited run, and the audited cell at each.
const LEVELS: usize = 2;
const CELLS: [&str; LEVELS] = ["a", "ab"];
/// The run's δ budget, spent by the tight composition of the levels.
const TOTAL_DELTA: f64 = 0.25;
/// Filler clients; filler `f` holds words starting with the `f`-th of these letters.
const FILLER_LETTERS: [char; 3] = ['b', 'c', 'd'];

/// How a run departs from the task it claims to run.
#[derive(Clone, Copy, Debug)]
enum Mutant {
    /// It does not: the level's rate and threshold, a coin flipped for the level's round.
    None,
    /// Releases the counts that reach another threshold.
    Threshold(u64),
    /// Flips coins at another rate than the accounted one.
    Rate(f64),
    /// Flips the coin for round 0 at every level.
    IgnoresRound,
}

/// `k` audited clients with rows `"ab"`, `"ab"` and the filler clients.
fn population(k: u64) -> KeyedPopulation {
    let mut clients = Vec::new();
    let mut items = Vec::new();
    for letter in FILLER_LETTERS {
        for tail in ["x", "yz"] {
            clients.push(format!("filler-{letter}"));
            items.push(format!("{letter}{tail}"));
        }
    }
    for audited in 0..k {
        for _ in 0..2 {
            clients.push(format!("audited{audited}"));
            items.push("ab".to_owned());
        }
    }
    KeyedPopulation::from_rows(clients, items, &format!("k = {k}")).expect("valid population")
}

/// The keyed per-level mechanism at `(rate, threshold)`, its guarantee computed for them.
fn level_mechanism(rate: f64, threshold: u64) -> SampleThreshold {
    let params = SampleThresholdParams::new(rate, threshold).expect("valid parameters");
    let planned = SampleThreshold::new(
        params,
        AUDIT.epsilon,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .expect("valid mechanism");
    keyed_level_mechanism(&planned, Analysis::Tight, Neighbours::AddRemove).expect("keyed rate")
}

/// The audited task, restricted, its levels composed by the tight accountant, and the
/// guarantee it claims.
fn real_task() -> (TrieHhPlus, Guarantee) {
    let real = TrieHhPlus::new(TrieHhPlusConfig {
        levels: LEVELS,
        segment: 1,
        restricted: true,
        per_level: level_mechanism(AUDIT.rate, AUDIT.threshold),
        composition: Composition::Tight,
        total_delta: TOTAL_DELTA,
    })
    .expect("valid task");
    let claim = real.guarantee().clone();
    (real, claim)
}

/// The keyed run's level loop (as `run_keyed_triehh_plus`) departing from `task` as `mutant`
/// says.
fn run_mutant(
    population: &KeyedPopulation,
    mut task: TrieHhPlus,
    key: &SamplingKey,
    mutant: Mutant,
) -> TrieOutput {
    let rows = population.chosen_rows(key);
    while let Some(query) = task.next_query() {
        let accounted = query.mechanism.params().sampling_rate();
        let round = query.prefixes.round as u64;
        let (rate, round, release) = match mutant {
            Mutant::None => (accounted, round, query.mechanism.clone()),
            Mutant::Threshold(threshold) => {
                (accounted, round, level_mechanism(accounted, threshold))
            }
            Mutant::Rate(rate) => (rate, round, query.mechanism.clone()),
            Mutant::IgnoresRound => (accounted, 0, query.mechanism.clone()),
        };
        let flips = KeyedCoin::new(key.clone(), rate).expect("a coin's rate");
        let mut counts = HashMap::<String, u64>::new();
        for (client, item) in &rows {
            let word = population.item_name(*item).expect("item id");
            if flips.flip(round, client.as_bytes())
                && let Some(prefix) = query.prefixes.report(word)
            {
                *counts.entry(prefix).or_insert(0) += 1;
            }
        }
        task.observe(release_prefix_counts(&release, counts));
    }
    task.finish()
}

/// The whole released tree: every node's prefix, level and count.
type Tree = Vec<(String, usize, u64)>;

/// The tree `output` released.
fn tree(output: TrieOutput) -> Tree {
    output
        .nodes
        .into_iter()
        .map(|node| (node.prefix, node.level, node.count))
        .collect()
}

/// The audited cells' released counts, level by level (0 when not released).
fn cells(tree: &Tree) -> Vec<u64> {
    CELLS
        .iter()
        .map(|cell| {
            tree.iter()
                .find(|(prefix, ..)| prefix == cell)
                .map_or(0, |(.., count)| *count)
        })
        .collect()
}

/// A fresh secret key per run.
fn fresh_key(rng: &mut ChaCha20Rng) -> SamplingKey {
    SamplingKey::derive(&rng.random::<[u8; 32]>()).expect("non-empty secret")
}

/// The released tree of the real task on `k` audited clients with a fresh key, through the
/// real keyed run or, for a mutant, [`run_mutant`].
fn released_tree(mutant: Mutant) -> impl Fn(u64, &mut ChaCha20Rng) -> Tree {
    let task = real_task().0;
    let populations: Vec<KeyedPopulation> = (0..=AUDIT.k_max).map(population).collect();
    move |k, rng| {
        let population = &populations[k as usize];
        let key = fresh_key(rng);
        tree(match mutant {
            Mutant::None => {
                run_keyed_triehh_plus(population, task.clone(), &key).expect("a keyed rate")
            }
            mutant => run_mutant(population, task.clone(), &key, mutant),
        })
    }
}

#[test]
fn dp_audit_keyed_triehh_plus_passes() {
    let (_, claim) = real_task();
    // The claim covers the exact divergence of two independent levels at every group size.
    for k in 1..=AUDIT.k_max {
        let exact = AUDIT.exact_chain_delta_at(LEVELS, k, claim.epsilon);
        assert!(exact <= claim.delta, "k = {k}: {exact} above {claim:?}");
    }
    // On a rayon worker, so that the run's parallel loops stay inline.
    let verdict =
        rayon::scope(|_| AUDIT.run_levels(LEVELS, &claim, &released_tree(Mutant::None), cells, 1));
    eprintln!("{claim:?}: {verdict:?}");
    assert!(verdict.passed(), "{claim:?}: {verdict:?}");
}

#[test]
fn the_mutant_loop_with_the_accounted_coin_is_the_real_run() {
    let (real, _) = real_task();
    let population = {
        let mut clients = Vec::new();
        let mut items = Vec::new();
        for client in 0..300 {
            for row in 0..3 {
                clients.push(format!("c{client}"));
                items.push(["ab", "ac", "ba", "abc"][(client * 7 + row) % 4].to_owned());
            }
        }
        KeyedPopulation::from_rows(clients, items, "mixed").unwrap()
    };
    for secret in 0..8u8 {
        let key = SamplingKey::derive(&[secret + 1]).unwrap();
        let real_run = tree(run_keyed_triehh_plus(&population, real.clone(), &key).unwrap());
        assert!(!real_run.is_empty());
        let looped = tree(run_mutant(&population, real.clone(), &key, Mutant::None));
        assert_eq!(real_run, looped, "key {secret}");
        let shared = tree(run_mutant(
            &population,
            real.clone(),
            &key,
            Mutant::IgnoresRound,
        ));
        assert_ne!(real_run, shared, "key {secret}");
    }
}

#[test]
fn dp_audit_catches_the_keyed_triehh_plus_mutants() {
    let (_, claim) = real_task();
    let mutants = [
        ("strict threshold", Mutant::Threshold(AUDIT.threshold + 1)),
        ("no threshold", Mutant::Threshold(1)),
        (
            "coin at the accounted rate × 1.2",
            Mutant::Rate(AUDIT.rate * 1.2),
        ),
        ("coin ignoring the round", Mutant::IgnoresRound),
    ];
    mutants
        .into_par_iter()
        .enumerate()
        .for_each(|(seed, (name, mutant))| {
            let mutant = released_tree(mutant);
            let verdict = AUDIT.run_levels(LEVELS, &claim, &mutant, cells, 2 + seed as u64);
            eprintln!("{name}: {verdict:?}");
            assert!(!verdict.passed(), "{name} not caught");
        });
}
