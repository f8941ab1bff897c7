//! Empirical privacy audits of partition selection and of per-client contribution bounds, at
//! a weak `ε = 1`, `δ = 0.05` where the leaks are large enough to measure, on the real code
//! path (the aggregator absorbing one report per item a client holds, then releasing).
//!
//! The audit's lower confidence bound on `δ(ε)` ([`split_sample_lower_bound`], one-sided
//! `α ≈ 2.9e-7`) must stay at or below the claimed `δ` for the real mechanism and exceed it for
//! each mutant, which claims the same guarantee:
//!
//! * a threshold one lower (noise-based methods), and a table for three times `δ` (the
//!   truncated geometric): the item of the added client alone is released too often;
//! * half the Laplace scale, a quarter of the Gaussian variance, and a table for `2ε`: a count
//!   shared with other clients moves too much;
//! * a contribution bound of one item calibrated while the client keeps four (no bound): four
//!   items of its own multiply the chance one is released.
//!
//! For sample-and-threshold with two items per client, the mechanism with one coin per item
//! passes and the mutant with one coin per client (the item's coin shared by all its items) is
//! caught by a difference attack: other clients hold items A and B together, the audited
//! client A alone, and the released counts of A and B differ exactly by its coin.

use rand_chacha::ChaCha20Rng;
use tally_accounting::Neighbours;
use tally_accounting::partition_selection::{
    self as accounting, GaussianSelection, LaplaceSelection, Method, TruncatedGeometricSelection,
};
use tally_accounting::sample_threshold::{SampleThresholdParams, items_guarantee};
use tally_core::histogram::{PartitionSelection, SampleThreshold, SampleThresholdQuery};
use tally_stats_tests::split_sample_lower_bound;

const EPSILON: f64 = 1.0;
const DELTA: f64 = 0.05;
/// Runs per sample; four samples per audit.
const RUNS: u64 = 60_000;

/// A dataset: how many clients hold each item.
type Counts = [(u32, u64)];

/// A pair of neighbouring datasets, `D` then `D'`.
type Pair = (Vec<(u32, u64)>, Vec<(u32, u64)>);

/// An outcome: the released items with their noisy counts, in order.
type Outcome = Vec<(u32, Option<i64>)>;

/// One release of `selection` over `counts` (item, clients), the aggregator's coins from `rng`.
fn release(
    selection: &PartitionSelection,
    counts: &[(u32, u64)],
    rng: &mut ChaCha20Rng,
) -> Outcome {
    let mut aggregator = selection.aggregator();
    for &(item, count) in counts {
        for _ in 0..count {
            aggregator.absorb(item);
        }
    }
    let mut items: Outcome = aggregator
        .release(rng)
        .items
        .into_iter()
        .map(|s| (s.item, s.noisy_count))
        .collect();
    items.sort_unstable();
    items
}

/// The audit's lower bound on `δ(ε)` between the releases of `selection` on `d` and `d_prime`.
fn audit(
    selection: &PartitionSelection,
    d: &[(u32, u64)],
    d_prime: &[(u32, u64)],
    seed: u64,
) -> f64 {
    split_sample_lower_bound(
        RUNS,
        seed,
        EPSILON,
        |rng| release(selection, d, rng),
        |rng| release(selection, d_prime, rng),
    )
}

/// The added client's own item (`D` has it, `D'` not) beside a shared item.
const OWN: (&Counts, &Counts) = (&[(0, 1), (1, 4)], &[(1, 4)]);

/// The datasets where the added client joins `shared` others on item 0.
fn shared(count: u64) -> Pair {
    (vec![(0, count + 1)], vec![(0, count)])
}

fn selection(calibration: accounting::PartitionSelection) -> PartitionSelection {
    PartitionSelection::new(calibration).unwrap()
}

/// Checks the real selection passes on the added client's own item and on a count shared
/// with `shared_count` others (both directions), and returns the bounds.
fn passes(real: &PartitionSelection, shared_count: u64, seed: u64) -> [f64; 3] {
    assert!(real.guarantee().delta <= DELTA && real.guarantee().epsilon <= EPSILON);
    let own = audit(real, OWN.0, OWN.1, seed);
    let (d, d_prime) = shared(shared_count);
    let joined = audit(real, &d, &d_prime, seed + 10);
    let left = audit(real, &d_prime, &d, seed + 20);
    let bounds = [own, joined, left];
    assert!(
        bounds.iter().all(|&b| b <= DELTA),
        "{}: {bounds:?}",
        real.method()
    );
    bounds
}

#[test]
fn dp_audit_laplace_threshold() {
    let real = LaplaceSelection::calibrate(EPSILON, DELTA, 1, Neighbours::AddRemove).unwrap();
    let bounds = passes(
        &selection(accounting::PartitionSelection::Laplace(real.clone())),
        real.threshold(),
        100,
    );
    let lower = LaplaceSelection::new(real.scale(), real.threshold() - 1, 1, Neighbours::AddRemove)
        .unwrap();
    let lower = audit(
        &selection(accounting::PartitionSelection::Laplace(lower)),
        OWN.0,
        OWN.1,
        200,
    );
    assert!(lower > DELTA, "threshold one lower not caught: {lower}");
    let (n, d) = real.scale();
    let half =
        LaplaceSelection::new((n, 2 * d), real.threshold(), 1, Neighbours::AddRemove).unwrap();
    let (sd, sd_prime) = shared(real.threshold());
    let half = audit(
        &selection(accounting::PartitionSelection::Laplace(half)),
        &sd,
        &sd_prime,
        300,
    );
    assert!(half > DELTA, "half scale not caught: {half}");
    println!(
        "laplace-threshold lower bounds on δ: real {bounds:?}, threshold − 1 {lower}, half scale {half}"
    );
}

#[test]
fn dp_audit_gaussian_threshold() {
    let real = GaussianSelection::calibrate(EPSILON, DELTA, 1, Neighbours::AddRemove).unwrap();
    let bounds = passes(
        &selection(accounting::PartitionSelection::Gaussian(real.clone())),
        real.threshold(),
        400,
    );
    let lower = GaussianSelection::new(
        real.sigma2(),
        real.threshold() - 1,
        EPSILON,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    let lower = audit(
        &selection(accounting::PartitionSelection::Gaussian(lower)),
        OWN.0,
        OWN.1,
        500,
    );
    assert!(lower > DELTA, "threshold one lower not caught: {lower}");
    let (n, d) = real.sigma2();
    let quarter = GaussianSelection::new(
        (n, 4 * d),
        real.threshold(),
        EPSILON,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    let (sd, sd_prime) = shared(real.threshold());
    let quarter = audit(
        &selection(accounting::PartitionSelection::Gaussian(quarter)),
        &sd,
        &sd_prime,
        600,
    );
    assert!(quarter > DELTA, "quarter variance not caught: {quarter}");
    println!(
        "gaussian-threshold lower bounds on δ: real {bounds:?}, threshold − 1 {lower}, quarter variance {quarter}"
    );
}

#[test]
fn dp_audit_truncated_geometric() {
    let calibrate = |epsilon, delta| {
        selection(accounting::PartitionSelection::TruncatedGeometric(
            TruncatedGeometricSelection::calibrate(epsilon, delta, 1, Neighbours::AddRemove)
                .unwrap(),
        ))
    };
    let real = calibrate(EPSILON, DELTA);
    // A shared count in the geometric part of the table, where neighbouring counts differ by e^ε.
    let bounds = passes(&real, 1, 700);
    let triple = audit(&calibrate(EPSILON, 3.0 * DELTA), OWN.0, OWN.1, 800);
    assert!(triple > DELTA, "a table for 3δ not caught: {triple}");
    let (sd, sd_prime) = shared(1);
    let doubled = audit(&calibrate(2.0 * EPSILON, DELTA), &sd, &sd_prime, 900);
    assert!(doubled > DELTA, "a table for 2ε not caught: {doubled}");
    println!("truncated-geometric lower bounds on δ: real {bounds:?}, 3δ {triple}, 2ε {doubled}");
}

#[test]
fn dp_audit_contribution_bound() {
    // The added client holds four items of its own; the outcome is the released keys.
    const ITEMS: u32 = 4;
    let d: Vec<(u32, u64)> = (0..ITEMS)
        .map(|item| (item, 1))
        .chain([(ITEMS, 4)])
        .collect();
    let d_prime = [(ITEMS, 4)];
    let keys = |selection: &PartitionSelection, d: &[(u32, u64)], rng: &mut ChaCha20Rng| {
        release(selection, d, rng)
            .into_iter()
            .map(|(item, _)| item)
            .collect::<Vec<u32>>()
    };
    let keys_audit = |selection: &PartitionSelection, seed| {
        split_sample_lower_bound(
            RUNS,
            seed,
            EPSILON,
            |rng| keys(selection, &d, rng),
            |rng| keys(selection, &d_prime, rng),
        )
    };
    for method in Method::ALL {
        let calibrate = |k| {
            PartitionSelection::calibrate(method, EPSILON, DELTA, k, Neighbours::AddRemove).unwrap()
        };
        let real = keys_audit(&calibrate(ITEMS), 1000);
        assert!(real <= DELTA, "{method}, k = {ITEMS}: {real}");
        let caught = keys_audit(&calibrate(1), 1100);
        assert!(
            caught > DELTA,
            "{method}: a client of {ITEMS} items under k = 1 not caught: {caught}"
        );
        println!("{method} with {ITEMS} items of one client: k = {ITEMS} {real}, k = 1 {caught}");
    }
}

/// How the clients of the difference attack flip their coins.
#[derive(Clone, Copy)]
enum Coins {
    /// One coin per (client, item): the mechanism.
    PerItem,
    /// One coin per client, carrying all its items: the mutant.
    PerClient,
}

/// One S&T release: `others` clients hold items 0 and 1, the audited client (if present)
/// item 0 alone; the outcome is the released (item, count) pairs.
fn items_release(
    mechanism: &SampleThreshold,
    query: &SampleThresholdQuery,
    coins: Coins,
    others: usize,
    audited: bool,
    rng: &mut ChaCha20Rng,
) -> Vec<(u32, u64)> {
    let mut aggregator = mechanism.aggregator(2);
    let clients = std::iter::repeat_n(&[0u32, 1][..], others).chain(audited.then_some(&[0u32][..]));
    for items in clients {
        let sent = match coins {
            Coins::PerItem => query.respond_items(items, rng),
            Coins::PerClient => query.respond(items.to_vec(), rng).unwrap_or_default(),
        };
        for item in sent {
            aggregator.absorb(item);
        }
    }
    aggregator
        .release()
        .items
        .iter()
        .map(|c| (c.item, c.count))
        .collect()
}

#[test]
fn dp_audit_sample_threshold_with_two_items_per_client() {
    let params = SampleThresholdParams::new(0.5, 3).unwrap();
    let guarantee = items_guarantee(&params, 2, 0.25, Neighbours::AddRemove).unwrap();
    let query = SampleThresholdQuery::new(0.5).unwrap();
    let mechanism = SampleThreshold::new(
        params,
        1.0,
        tally_accounting::sample_threshold::Analysis::Tight,
        Neighbours::AddRemove,
    )
    .unwrap();
    let others = 12;
    let bound = |coins: Coins, seed: u64| {
        split_sample_lower_bound(
            RUNS,
            seed,
            guarantee.epsilon,
            |rng| items_release(&mechanism, &query, coins, others, true, rng),
            |rng| items_release(&mechanism, &query, coins, others, false, rng),
        )
    };
    let real = bound(Coins::PerItem, 1200);
    assert!(
        real <= guarantee.delta,
        "one coin per item at {guarantee:?}: {real}"
    );
    let one_coin = bound(Coins::PerClient, 1300);
    assert!(
        one_coin > guarantee.delta,
        "one coin per client not caught: {one_coin}"
    );
    println!(
        "S&T, two items per client at (ε, δ) = ({}, {}): per-item coins {real}, one coin {one_coin}",
        guarantee.epsilon, guarantee.delta
    );
}
