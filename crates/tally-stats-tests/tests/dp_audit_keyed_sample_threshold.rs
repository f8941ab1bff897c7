//! Empirical privacy audit of the keyed S&T histogram (`--sampling-key`, `tally.spark`) at weak
//! parameters (`p_s = 0.5`, `τ = 3`, `ε = 1`); see [`CellAudit`] for the checks.
//!
//! The guarantee of a keyed round holds when the key is secret, so that the PRF behaves as a
//! random function: every run draws a fresh key. Neighbouring datasets: `D` holds `k` clients
//! whose rows all carry the audited item plus filler clients, each with two rows of items no
//! one else holds; `D'` holds one audited client fewer. Both ways of naming clients are audited:
//! by position (one row per client) and by name (several rows per client, one chosen by the
//! key).
//!
//! The mutants run the real keyed path with the wrong parameters (a strict threshold, no
//! threshold, a sampling rate 20% off) or with a key that is not secret (the same key in every
//! run), and the audit must catch each.
//!
//! The audits run on rayon's workers, so that the keyed round's own parallel loops run inline
//! instead of waking the pool for each tiny population.

use rand::RngExt;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::{KeyedCoin, SamplingKey};
use tally_sim::{KeyedPopulation, Population, run_keyed_sample_threshold};
use tally_stats_tests::CellAudit;

const AUDIT: CellAudit = CellAudit::WEAK;
const FILLER: u32 = 5;

/// How the audited population names its clients.
#[derive(Clone, Copy, Debug)]
enum Naming {
    /// One row per client, client `i` named `"i"`.
    Positions,
    /// Named clients, each with two rows.
    Rows,
}

/// The filler items take ids `0..2·FILLER` in the named population and `1..=FILLER` in the
/// positional one, so the audited item's id differs.
fn population(naming: Naming, k: u64) -> (KeyedPopulation, u32) {
    match naming {
        Naming::Positions => {
            let mut items: Vec<u32> = (1..=FILLER).collect();
            items.extend(std::iter::repeat_n(0, k as usize));
            let vocabulary = (0..=FILLER).map(|i| format!("item{i}")).collect();
            let population = Population::from_ids(items, vocabulary, format!("k = {k}"))
                .expect("valid population");
            (KeyedPopulation::from_population(&population), 0)
        }
        Naming::Rows => {
            let mut clients = Vec::new();
            let mut items = Vec::new();
            for filler in 0..FILLER {
                for row in 0..2 {
                    clients.push(format!("filler{filler}"));
                    items.push(format!("filler{filler}-{row}"));
                }
            }
            for audited in 0..k {
                for _ in 0..2 {
                    clients.push(format!("audited{audited}"));
                    items.push("audited".to_owned());
                }
            }
            let population = KeyedPopulation::from_rows(clients, items, &format!("k = {k}"))
                .expect("valid population");
            (population, 2 * FILLER)
        }
    }
}

/// The keyed S&T mechanism at `(rate, threshold)`, its guarantee computed for those parameters.
fn mechanism(rate: f64, threshold: u64) -> SampleThreshold {
    let params = SampleThresholdParams::new(rate, threshold).expect("valid parameters");
    SampleThreshold::new(
        params,
        AUDIT.epsilon,
        Analysis::Tight,
        Neighbours::AddRemove,
    )
    .expect("valid mechanism")
}

/// A fresh secret key per run.
fn fresh_key(rng: &mut ChaCha20Rng) -> SamplingKey {
    SamplingKey::derive(&rng.random::<[u8; 32]>()).expect("non-empty secret")
}

/// A key that is not secret (the same in every run) under which the first `τ` audited clients
/// are sampled, so that `k = τ` releases the audited cell in every run and `k = τ − 1` never
/// does: the first of the keys `"a key everyone knows 0"`, `"… 1"`, … that samples them.
fn public_key() -> SamplingKey {
    (0u32..)
        .map(|i| {
            SamplingKey::derive(format!("a key everyone knows {i}").as_bytes())
                .expect("non-empty secret")
        })
        .find(|key| {
            let coin = KeyedCoin::new(key.clone(), AUDIT.rate).expect("a keyed rate");
            (0..AUDIT.threshold).all(|audited| coin.flip(0, format!("audited{audited}").as_bytes()))
        })
        .expect("a key among the first 2^32")
}

/// The audited cell's released count under `mechanism` with the key `key` draws.
fn audited_count(
    naming: Naming,
    mechanism: &SampleThreshold,
    key: impl Fn(&mut ChaCha20Rng) -> SamplingKey,
) -> impl Fn(u64, &mut ChaCha20Rng) -> u64 {
    let populations: Vec<(KeyedPopulation, u32)> =
        (0..=AUDIT.k_max).map(|k| population(naming, k)).collect();
    move |k, rng| {
        let (population, audited) = &populations[k as usize];
        run_keyed_sample_threshold(population, mechanism, key(rng), 0)
            .expect("a keyed rate")
            .items
            .iter()
            .find(|cell| cell.item == *audited)
            .map_or(0, |cell| cell.count)
    }
}

#[test]
fn dp_audit_keyed_sample_threshold_passes() {
    let real = mechanism(AUDIT.rate, AUDIT.threshold);
    [Naming::Positions, Naming::Rows]
        .into_par_iter()
        .for_each(|naming| {
            let verdict = AUDIT.run(&audited_count(naming, &real, fresh_key), 1);
            assert!(verdict.passed(), "{naming:?}: {verdict:?}");
        });
}

#[test]
fn dp_audit_catches_the_keyed_mutants() {
    let tau = AUDIT.threshold;
    let mutants = [
        ("strict threshold", mechanism(AUDIT.rate, tau + 1)),
        ("no threshold", mechanism(AUDIT.rate, 1)),
        ("sampling rate × 1.2", mechanism(AUDIT.rate * 1.2, tau)),
        ("sampling rate × 0.8", mechanism(AUDIT.rate * 0.8, tau)),
    ];
    let public = public_key();
    let real = mechanism(AUDIT.rate, tau);
    rayon::join(
        || {
            mutants
                .par_iter()
                .enumerate()
                .for_each(|(seed, (name, mutant))| {
                    let count = audited_count(Naming::Rows, mutant, fresh_key);
                    let verdict = AUDIT.run(&count, 2 + seed as u64);
                    assert!(!verdict.passed(), "{name} not caught");
                });
        },
        || {
            let count = audited_count(Naming::Rows, &real, |_| public.clone());
            let verdict = AUDIT.run(&count, 9);
            assert!(
                !verdict.violations.is_empty(),
                "a public key not caught: {verdict:?}"
            );
        },
    );
}
