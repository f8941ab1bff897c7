//! Empirical privacy audit of the central discrete Laplace and discrete Gaussian histograms at
//! a weak `ε = 1` (and, for the Gaussian, `δ = 0.05`), on their rounds' real path: the
//! simulator's executor ([`run_domain_round`]) from the clients' element counts, each run
//! seeded by a draw of the audit's generator.
//!
//! * Add-remove: `D` holds [`K`] clients with item 0 plus one client of every other item of a
//!   domain of [`DOMAIN`], `D'` one client with item 0 fewer; the outcome is the released count
//!   of cell 0 (the other cells have the same law under both).
//! * Replace-one: `D'` replaces one of the clients with item 0 by one with item 1; the outcome
//!   is the pair of released counts of cells 0 and 1.
//!
//! The audit's lower confidence bound on `δ(ε)` ([`violation_lower_bound`], one-sided
//! `α ≈ 2.9e-7`) must not exceed the claimed `δ` (0 for the pure Laplace) at the claimed `ε`. It
//! must exceed it for a mutant calibrated for twice the `ε` (half the Laplace scale, about a
//! quarter of the Gaussian variance) that claims the same guarantee, and, to show that the
//! audit is sharp, for the real mechanism at a smaller `ε` (`0.8ε` for Laplace, `0.6ε` for the
//! Gaussian, where the exact `δ` is about 0.12).

use std::hash::Hash;

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::Neighbours;
use tally_core::histogram::{DomainMap, GaussianHistogram, LaplaceHistogram};
use tally_core::protocol::CentralHistogramRound;
use tally_sim::run_domain_round;
use tally_stats_tests::split_sample_lower_bound;

const DOMAIN: u32 = 4;
const K: u64 = 3;
const EPSILON: f64 = 1.0;
/// Runs per sample of the Laplace audits; four samples per audit.
const RUNS: u64 = 100_000;
/// Runs per sample of the (slower) Gaussian audits.
const GAUSSIAN_RUNS: u64 = 50_000;

/// The dataset as the number of clients holding each item: `zeros` clients with item 0,
/// `ones` with item 1, one of every other item.
fn items(zeros: u64, ones: u64) -> Vec<u64> {
    let mut counts = vec![zeros, ones];
    counts.extend((2..DOMAIN).map(|_| 1));
    counts
}

/// The central round of a mechanism over the audit's domain.
trait Round {
    type Noise: Distribution<i64> + Clone + Send + Sync;

    fn central_round(&self) -> CentralHistogramRound<Self::Noise>;
}

impl Round for LaplaceHistogram {
    type Noise = tally_core::noise::DiscreteLaplace;

    fn central_round(&self) -> CentralHistogramRound<Self::Noise> {
        self.round(DomainMap::Integers(DOMAIN)).unwrap()
    }
}

impl Round for GaussianHistogram {
    type Noise = tally_core::noise::DiscreteGaussian;

    fn central_round(&self) -> CentralHistogramRound<Self::Noise> {
        self.round(DomainMap::Integers(DOMAIN)).unwrap()
    }
}

/// The audit's lower bound on `δ(epsilon)` between `D` and `D'` for the outcome `outcome` of
/// `mechanism`'s round, with independent selection and evaluation samples of `runs` runs each
/// (seeds `seed..seed + 4`).
fn audit<O: Hash + Eq + Clone>(
    mechanism: &impl Round,
    (d, d_prime): (&[u64], &[u64]),
    outcome: fn(Vec<f64>) -> O,
    epsilon: f64,
    (runs, seed): (u64, u64),
) -> f64 {
    let round = mechanism.central_round();
    split_sample_lower_bound(
        runs,
        seed,
        epsilon,
        |rng| outcome(run_domain_round(&round, d, rng.next_u64())),
        |rng| outcome(run_domain_round(&round, d_prime, rng.next_u64())),
    )
}

fn cell_0(counts: Vec<f64>) -> i64 {
    counts[0] as i64
}

fn cells_0_1(counts: Vec<f64>) -> (i64, i64) {
    (counts[0] as i64, counts[1] as i64)
}

/// The real mechanism (claiming `ε`) and the mutant with half its scale (really `2ε`).
fn real_and_mutant(neighbours: Neighbours) -> (LaplaceHistogram, LaplaceHistogram) {
    let real = LaplaceHistogram::new(DOMAIN, EPSILON, neighbours).unwrap();
    let mutant = LaplaceHistogram::new(DOMAIN, 2.0 * EPSILON, neighbours).unwrap();
    let ((rn, rd), (mn, md)) = (real.scale(), mutant.scale());
    assert_eq!(
        u128::from(rn) * u128::from(md),
        2 * u128::from(mn) * u128::from(rd)
    );
    assert!(real.guarantee().epsilon <= EPSILON && real.guarantee().delta == 0.0);
    (real, mutant)
}

#[test]
fn dp_audit_laplace_add_remove() {
    let (real, mutant) = real_and_mutant(Neighbours::AddRemove);
    let (d, d_prime) = (items(K, 1), items(K - 1, 1));
    let pair = (d.as_slice(), d_prime.as_slice());
    let passes = audit(&real, pair, cell_0, EPSILON, (RUNS, 100));
    assert!(passes <= 0.0, "real mechanism: δ(ε) ≥ {passes}");
    let caught = audit(&mutant, pair, cell_0, EPSILON, (RUNS, 200));
    assert!(caught > 0.0, "half-scale mutant not caught: {caught}");
    // Sharp: at 0.8ε the real mechanism's δ is about 0.13.
    let sharp = audit(&real, pair, cell_0, 0.8 * EPSILON, (RUNS, 300));
    assert!(sharp > 0.0, "no leak found at 0.8ε: {sharp}");
    println!("add-remove lower bounds on δ: real {passes}, mutant {caught}, real at 0.8ε {sharp}");
}

#[test]
fn dp_audit_laplace_replace_one() {
    let (real, mutant) = real_and_mutant(Neighbours::ReplaceOne);
    let (d, d_prime) = (items(K, 1), items(K - 1, 2));
    let pair = (d.as_slice(), d_prime.as_slice());
    let passes = audit(&real, pair, cells_0_1, EPSILON, (RUNS, 400));
    assert!(passes <= 0.0, "real mechanism: δ(ε) ≥ {passes}");
    let caught = audit(&mutant, pair, cells_0_1, EPSILON, (RUNS, 500));
    assert!(caught > 0.0, "half-scale mutant not caught: {caught}");
    let sharp = audit(&real, pair, cells_0_1, 0.8 * EPSILON, (RUNS, 600));
    assert!(sharp > 0.0, "no leak found at 0.8ε: {sharp}");
    println!("replace-one lower bounds on δ: real {passes}, mutant {caught}, real at 0.8ε {sharp}");
}

/// The Gaussian's claimed `δ` at `ε = 1`.
const GAUSSIAN_DELTA: f64 = 0.05;

#[test]
fn dp_audit_gaussian() {
    for neighbours in [Neighbours::AddRemove, Neighbours::ReplaceOne] {
        let real = GaussianHistogram::new(DOMAIN, EPSILON, GAUSSIAN_DELTA, neighbours).unwrap();
        let mutant =
            GaussianHistogram::new(DOMAIN, 2.0 * EPSILON, GAUSSIAN_DELTA, neighbours).unwrap();
        assert!(real.guarantee().delta <= GAUSSIAN_DELTA);
        let (d, d_prime) = match neighbours {
            Neighbours::AddRemove => (items(K, 1), items(K - 1, 1)),
            Neighbours::ReplaceOne => (items(K, 1), items(K - 1, 2)),
        };
        let pair = (d.as_slice(), d_prime.as_slice());
        let passes = audit(&real, pair, cells_0_1, EPSILON, (GAUSSIAN_RUNS, 700));
        assert!(
            passes <= GAUSSIAN_DELTA,
            "{neighbours}: real mechanism: δ(ε) ≥ {passes}"
        );
        let caught = audit(&mutant, pair, cells_0_1, EPSILON, (GAUSSIAN_RUNS, 800));
        assert!(
            caught > GAUSSIAN_DELTA,
            "{neighbours}: quarter-variance mutant not caught: {caught}"
        );
        let sharp = audit(&real, pair, cells_0_1, 0.6 * EPSILON, (GAUSSIAN_RUNS, 900));
        assert!(
            sharp > GAUSSIAN_DELTA,
            "{neighbours}: no leak found at 0.6ε: {sharp}"
        );
        println!(
            "gaussian {neighbours} lower bounds on δ: real {passes}, mutant {caught}, real at 0.6ε {sharp}"
        );
    }
}
