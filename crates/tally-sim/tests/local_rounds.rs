//! The local frequency oracles' rounds, run by the simulator ([`run_domain_round`] from the
//! elements' counts: drawn from them for the unary encodings, else every device answering) and over
//! the wire as the federated runtime runs them (a device answers from text with its own
//! coins, the server's [`wire_aggregator`] decodes, admits and counts, the release is read back
//! from its cells), have the analytic law: for every domain element, over repeated runs, the
//! mean of the estimates is the true count and their variance is
//! `n q*(1 − q*)/(p* − q*)² + c(1 − p* − q*)/(p* − q*)`. The device coins of the two paths
//! differ, so the two are compared in distribution, each against the law, at a familywise
//! `α ≤ 1e-6`; two mutants (a device that skips randomization, an aggregator that debiases
//! with the wrong probabilities) are caught.

use rand::SeedableRng;
use rand::prelude::*;
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{ContinuousCDF, Normal};
use tally_core::histogram::DomainMap;
use tally_core::ldp::{
    Grr, GrrAggregator, HadamardResponse, Olh, SubsetSelection, SupportProbabilities,
    UnaryRandomizer,
};
use tally_core::protocol::wire::{DeviceResponder, WireRelease, wire_aggregator};
use tally_core::protocol::{Estimates, LocalHistogramRound, LocalRandomizer};
use tally_sim::run_domain_round;

/// Devices per run.
const CLIENTS: u64 = 1000;
/// Runs per path and mechanism.
const RUNS: u64 = 120;
/// The domain.
const DOMAIN: u32 = 8;
/// The true counts: skewed, with empty elements.
const TRUTH: [u64; DOMAIN as usize] = [400, 300, 200, 100, 0, 0, 0, 0];
/// Tests of the whole file: 6 mechanisms × 2 paths × 8 elements × (mean, variance), and the
/// two mutants' 2 × 8 × 2.
const TESTS: f64 = 224.0;

/// Every device's element.
fn elements() -> Vec<u32> {
    TRUTH
        .iter()
        .zip(0_u32..)
        .flat_map(|(&count, x)| std::iter::repeat_n(x, count as usize))
        .collect()
}

/// The two-sided normal critical value of one test, for a familywise `α = 1e-6`.
fn critical() -> f64 {
    Normal::standard().inverse_cdf(1.0 - 1e-6 / TESTS / 2.0)
}

/// The largest standardized deviation, over the elements, of the runs' mean from the true
/// count and of their sample variance from the analytic one (the variance of a sum of
/// `n = 1000` bounded independent reports, close to normal, so `(S²/V − 1)/√(2/(R − 1))`).
fn largest_deviation(runs: &[Vec<f64>], law: SupportProbabilities) -> f64 {
    let r = runs.len() as f64;
    let mut worst: f64 = 0.0;
    for (x, &truth) in TRUTH.iter().enumerate() {
        let variance = law.variance(CLIENTS, truth);
        let mean = runs.iter().map(|run| run[x]).sum::<f64>() / r;
        let sample_variance =
            runs.iter().map(|run| (run[x] - mean).powi(2)).sum::<f64>() / (r - 1.0);
        let mean_z = (mean - truth as f64) / (variance / r).sqrt();
        let variance_z = (sample_variance / variance - 1.0) / (2.0 / (r - 1.0)).sqrt();
        worst = worst.max(mean_z.abs()).max(variance_z.abs());
    }
    worst
}

/// One run as the federated runtime runs it: each device answers its element's text with its
/// own coins, the report crosses as text, the server admits and counts it, and the release is
/// read back from its stored cells.
fn over_the_wire<M>(round: &LocalHistogramRound<M>, elements: &[u32], seed: u64) -> Vec<f64>
where
    M: LocalRandomizer<Report: Send, Aggregator: Send> + 'static,
{
    let mut devices = ChaCha20Rng::seed_from_u64(seed);
    let mut aggregator = wire_aggregator(round, ChaCha20Rng::seed_from_u64(seed));
    for element in elements {
        let report = DeviceResponder::respond(round, &element.to_string(), 4096, &mut devices)
            .expect("an element of the domain");
        aggregator.absorb(report).expect("an honest report");
    }
    Estimates::from_cells(aggregator.release()).unwrap().0
}

/// The largest deviations from `law` of the simulator's runs and of the runs over the wire.
fn deviations<M>(randomizer: M, law: SupportProbabilities) -> (f64, f64)
where
    M: LocalRandomizer<Report: Send, Aggregator: Send> + 'static,
{
    let round = LocalHistogramRound::new(DomainMap::Integers(DOMAIN), randomizer).unwrap();
    let elements = elements();
    let simulated: Vec<_> = (0..RUNS)
        .map(|seed| run_domain_round(&round, &TRUTH, seed))
        .collect();
    let federated: Vec<_> = (0..RUNS)
        .map(|seed| over_the_wire(&round, &elements, 1000 + seed))
        .collect();
    (
        largest_deviation(&simulated, law),
        largest_deviation(&federated, law),
    )
}

#[test]
fn every_local_round_has_the_analytic_law_in_the_simulator_and_over_the_wire() {
    let checks = [
        ("grr", deviations_of(Grr::new(DOMAIN, 1.0).unwrap())),
        (
            "sue",
            deviations_of(UnaryRandomizer::sue(DOMAIN, 1.0).unwrap()),
        ),
        (
            "oue",
            deviations_of(UnaryRandomizer::oue(DOMAIN, 1.0).unwrap()),
        ),
        ("olh", deviations_of(Olh::new(DOMAIN, 1.0).unwrap())),
        (
            "hadamard-response",
            deviations_of(HadamardResponse::new(DOMAIN, 1.0).unwrap()),
        ),
        (
            "subset-selection",
            deviations_of(SubsetSelection::new(DOMAIN, 1.0).unwrap()),
        ),
    ];
    for (name, (simulated, federated)) in checks {
        assert!(simulated < critical(), "{name} simulated: {simulated:.2}");
        assert!(
            federated < critical(),
            "{name} over the wire: {federated:.2}"
        );
    }
}

/// [`deviations`] from the randomizer's own law.
fn deviations_of<M>(randomizer: M) -> (f64, f64)
where
    M: LocalRandomizer<Report: Send, Aggregator: Send> + HasLaw + 'static,
{
    let law = randomizer.law();
    deviations(randomizer, law)
}

/// The support probabilities a randomizer's estimates follow.
trait HasLaw {
    fn law(&self) -> SupportProbabilities;
}

macro_rules! has_law {
    ($($ty:ty),*) => {
        $(impl HasLaw for $ty {
            fn law(&self) -> SupportProbabilities {
                self.support_probabilities()
            }
        })*
    };
}

has_law!(Grr, UnaryRandomizer, Olh, HadamardResponse, SubsetSelection);

/// Mutant: a GRR device that sends its element unrandomized (or, with `aggregator_epsilon`
/// set, an honest device whose aggregator debiases with another ε's probabilities).
#[derive(Clone, Debug)]
struct MutantGrr {
    honest: Grr,
    skips_randomization: bool,
    aggregator_epsilon: f64,
}

impl LocalRandomizer for MutantGrr {
    type Report = u32;
    type Aggregator = GrrAggregator;

    fn domain(&self) -> u32 {
        DOMAIN
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> u32 {
        if self.skips_randomization {
            element
        } else {
            self.honest.randomize(element, rng)
        }
    }

    fn admits(&self, report: &u32) -> bool {
        *report < DOMAIN
    }

    fn longest_report(&self) -> u64 {
        self.honest.longest_report()
    }

    fn aggregator(&self) -> GrrAggregator {
        Grr::new(DOMAIN, self.aggregator_epsilon)
            .unwrap()
            .aggregator()
    }
}

#[test]
fn a_device_that_skips_randomization_or_a_wrong_debiasing_is_caught() {
    let honest = Grr::new(DOMAIN, 1.0).unwrap();
    let law = honest.support_probabilities();
    let raw = MutantGrr {
        honest: honest.clone(),
        skips_randomization: true,
        aggregator_epsilon: 1.0,
    };
    let (_, federated) = deviations(raw, law);
    assert!(
        federated > critical(),
        "unrandomized devices: {federated:.2}"
    );
    let miscalibrated = MutantGrr {
        honest,
        skips_randomization: false,
        aggregator_epsilon: 1.2,
    };
    let (_, federated) = deviations(miscalibrated, law);
    assert!(federated > critical(), "wrong debiasing: {federated:.2}");
}
