//! Empirical privacy audit of Ghazi et al.'s multi-message Hadamard response (`P^Had`) and
//! public-coin Count-Min (`P^CM`) on replace-one neighbours. Hadamard is audited through its
//! round: every user answers the round's query with its real and `ρ` blanket tuples, and the
//! round's analyzer decodes them into its raw counts (which depend on the tuples as a multiset
//! only, so the shuffler's order does not matter).
//!
//! The instance is the smallest the protocol takes: `n = 4` users (`τ = 2` coordinates per
//! tuple), domain `B = 2`, sets of one item, `(ε, δ) = (1, 0.1)`, so `ρ = 3` blanket tuples per
//! user by the exact analysis of the blanket (exact `δ(1) = 0.058`; Theorem 4.3 asked 144). User 0 holds item 0 on `D` and item 1 on `D'`; the others hold item 0. The outcome
//! is the analyzer's raw counts, all it releases before de-biasing.
//!
//! * The real protocol must show no `δ(ε)` above its claim.
//! * Mutant "no blanket": users send their real tuples only (the blanket is what hides them);
//!   it is caught.
//!
//! A Hadamard mutant calibrated at `2ε` is not audited: it has `ρ = 2`, whose exact `δ(1)` is
//! 0.110, within sampling error of the claimed 0.1 (under Theorem 4.3, `ρ = 30` against 144,
//! the audit's lower bound came out at −0.026).
//!
//! Count-Min (`P^CM`), on `B = 2` with `β = 1/2` (`τ = 3` rows) at the same `(ε, δ)`, for the
//! fewest users its calibration takes (29 by the exact analysis, `γ = 0.44`): user 0 holds item 0 on `D` and
//! item 1 on `D'`, the others item 0; the outcome is every item's least count, all its release
//! depends on. Its blanket cells are drawn through the round's count path (equal in law to the
//! devices' answers, tested in tally-core), since thousands of users each send thousands.
//!
//! * The real protocol must show no `δ(ε)` above its claim.
//! * Mutant "no blanket": users send their item's cells alone; it is caught.
//! * Mutant "calibrated at `2ε`" (`γ = 0.15`, the whole table's exact `δ(1) = 0.246`): it is
//!   caught. Under Lemma 4.10 (6,650 users, `γ/4`) it was not: the audit's lower bound came out
//!   at −0.249.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_core::histogram::DomainMap;
use tally_core::protocol::{
    CountedRound, DeviceQuery, Estimates, MultiMessage, RoundAggregator, RoundProtocol, WireReport,
};
use tally_core::shuffle::{
    CountMinHashes, CountMinMessages, CountMinRound, GhaziCountMin, GhaziHadamard, HadamardRound,
    HadamardTuples,
};
use tally_stats_tests::split_sample_lower_bound;

const USERS: u64 = 4;
const EPSILON: f64 = 1.0;
const DELTA: f64 = 0.1;
/// Runs per dataset and sample half.
const RUNS: u64 = 20_000;

fn protocol() -> GhaziHadamard {
    GhaziHadamard::new(USERS, 2, 1, EPSILON, DELTA).unwrap()
}

/// The users' items: user 0 holds `first`, the others item 0.
fn items(first: u32) -> Vec<u32> {
    (0..USERS)
        .map(|user| if user == 0 { first } else { 0 })
        .collect()
}

/// The analyzer's raw counts after every user answered the round with its own coins from
/// `rng`, each report passed through `sent` (what the analyzer receives of it).
fn raw_counts(
    round: &HadamardRound,
    first: u32,
    sent: fn(HadamardTuples) -> HadamardTuples,
) -> impl Fn(&mut ChaCha20Rng) -> Vec<u64> + '_ {
    let items = items(first);
    move |rng| {
        let mut analyzer = round.aggregator(ChaCha20Rng::seed_from_u64(0));
        for item in &items {
            let report = round
                .query()
                .respond(item, rng)
                .expect("an item of the domain");
            analyzer.absorb(sent(report));
        }
        analyzer.raw().to_vec()
    }
}

/// The real protocol: every tuple of every report.
fn everything(report: HadamardTuples) -> HadamardTuples {
    report
}

/// The mutant: a device's real tuple alone (the first it draws), its blanket left out.
fn no_blanket(report: HadamardTuples) -> HadamardTuples {
    let real = report.into_messages().swap_remove(0);
    HadamardTuples::from_message(real)
}

#[test]
fn dp_audit_ghazi_hadamard_passes_and_catches_a_missing_blanket() {
    let protocol = protocol();
    let params = protocol.params();
    assert_eq!((params.tau, params.rho), (2, 3));
    let round = protocol.round(DomainMap::Integers(2)).unwrap();
    let honest = split_sample_lower_bound(
        RUNS,
        5000,
        EPSILON,
        raw_counts(&round, 0, everything),
        raw_counts(&round, 1, everything),
    );
    assert!(honest <= DELTA, "Ghazi Hadamard leaks: δ ≥ {honest}");
    let mutant = split_sample_lower_bound(
        RUNS,
        6000,
        EPSILON,
        raw_counts(&round, 0, no_blanket),
        raw_counts(&round, 1, no_blanket),
    );
    assert!(mutant > DELTA, "no-blanket mutant not caught: δ ≥ {mutant}");
}

/// Count-Min's instance: domain `B = 2`, `β = 1/2` (so `τ = 3` rows), sets of one item,
/// `(ε, δ) = (1, 0.1)`, for the fewest users its calibration takes (29, `γ = 0.44`).
const COUNT_MIN_BETA: f64 = 0.5;

/// The fewest users Count-Min is calibrated for at `(ε, δ)` on `B = 2` (the exact analysis at
/// the share `δ_L` of `δ` the parameters run it at).
fn count_min_users() -> u64 {
    use tally_accounting::ghazi::{
        count_min_delta_split, count_min_min_users_exact, count_min_rows,
    };
    let rows = count_min_rows(2, COUNT_MIN_BETA).unwrap();
    let (lemma_delta, _) = count_min_delta_split(DELTA).unwrap();
    count_min_min_users_exact(rows, 1, EPSILON, lemma_delta).unwrap()
}

/// Count-Min's round for `users` users at `epsilon`, with the public hash functions drawn
/// from seed 0 (the same for every calibration of the same `τ` and `s`).
fn count_min_round(users: u64, epsilon: f64) -> CountMinRound {
    let protocol = GhaziCountMin::new(users, 2, 1, epsilon, DELTA, COUNT_MIN_BETA).unwrap();
    let hashes = CountMinHashes::draw(protocol.params(), &mut ChaCha20Rng::seed_from_u64(0));
    protocol.round(DomainMap::Integers(2), hashes).unwrap()
}

/// Every item's least count `min_t C[t, h_t(j)]`, read off the round's release (which
/// subtracts the round's expected blanket `γn`).
fn least_counts(round: &CountMinRound, release: Estimates) -> Vec<i64> {
    let blanket = round.protocol().params().expected_blanket();
    release
        .0
        .iter()
        .map(|estimate| (estimate + blanket).round() as i64)
        .collect()
}

/// The least counts the round releases when user 0 holds `first` and the others item 0, every
/// user answering with its real and blanket cells. Drawn through the round's count path
/// ([`DomainRound::aggregate_counts`]: each queried cell's real count plus `Bin(n, γ)`),
/// equal in distribution to the users' own answers (tally-core's
/// `stat_devices_and_count_path_agree_in_distribution`), since thousands of users each send
/// thousands of blanket cells.
fn count_min_release(
    round: &CountMinRound,
    first: u32,
) -> impl Fn(&mut ChaCha20Rng) -> Vec<i64> + '_ {
    let users = round.protocol().params().users;
    let mut holders = vec![users - 1, 0];
    holders[first as usize] += 1;
    move |rng| {
        let counted = round
            .aggregate_counts(&holders, rng)
            .expect("the calibrated number of users");
        least_counts(round, counted.release())
    }
}

/// The mutant "no blanket": the least counts when every user sends its real cells alone.
fn count_min_without_blanket(
    round: &CountMinRound,
    first: u32,
) -> impl Fn(&mut ChaCha20Rng) -> Vec<i64> + '_ {
    let query = round.query();
    let width = query.hashes().rows()[0].width();
    let real = move |item: u32| -> CountMinMessages {
        let mut cells: Vec<u64> = (0_u64..)
            .zip(query.hashes().rows())
            .map(|(t, h)| t * width + h.apply(item))
            .collect();
        cells.sort_unstable();
        let text = cells
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        CountMinMessages::decode(text).expect("a sorted list of cells")
    };
    let users = round.protocol().params().users;
    move |_| {
        let mut analyzer = round.aggregator(ChaCha20Rng::seed_from_u64(0));
        analyzer.absorb(real(first));
        for _ in 1..users {
            analyzer.absorb(real(0));
        }
        least_counts(round, analyzer.release())
    }
}

#[test]
fn dp_audit_ghazi_count_min_passes_and_catches_a_missing_blanket_and_a_doubled_epsilon() {
    let users = count_min_users();
    let round = count_min_round(users, EPSILON);
    let params = round.protocol().params();
    assert_eq!((params.rows, params.users), (3, 29));
    assert!(params.gamma > 0.43 && params.gamma <= 0.5, "{params:?}");
    let honest = split_sample_lower_bound(
        RUNS,
        7000,
        EPSILON,
        count_min_release(&round, 0),
        count_min_release(&round, 1),
    );
    assert!(honest <= DELTA, "Ghazi Count-Min leaks: δ ≥ {honest}");
    let mutant = split_sample_lower_bound(
        1000,
        8000,
        EPSILON,
        count_min_without_blanket(&round, 0),
        count_min_without_blanket(&round, 1),
    );
    assert!(mutant > DELTA, "no-blanket mutant not caught: δ ≥ {mutant}");
    let doubled = count_min_round(users, 2.0 * EPSILON);
    assert!(doubled.protocol().params().gamma < 0.16);
    let mutant = split_sample_lower_bound(
        RUNS,
        9000,
        EPSILON,
        count_min_release(&doubled, 0),
        count_min_release(&doubled, 1),
    );
    assert!(mutant > DELTA, "doubled-ε mutant not caught: δ ≥ {mutant}");
}
