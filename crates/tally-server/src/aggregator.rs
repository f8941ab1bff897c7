//! The secure-aggregator boundary: the only place raw reports exist, in memory, for the life
//! of one round.
//!
//! Each round's aggregator is its tally-core round's ([`RoundProtocol::aggregator`]), behind
//! [`tally_core::protocol::wire::WireAggregator`]: reports are decoded and admitted, interned
//! to ids and counted by tally-core's sample-and-threshold aggregator; the only way out is its
//! release, which applies the mechanism's release rule (the threshold). Nothing there
//! implements `Debug` or serialization, and nothing there is ever written to disk. A round
//! whose guarantee trusts a shuffler gets its aggregator behind [`crate::shuffler`], which
//! holds the reports without identity and feeds them in a uniformly random order at close.
//! This module gives each round its secret coins.
//!
//! # Privacy
//!
//! Under aggregator-side sampling (`Sampling::Aggregator`, the default) every device
//! uploads its report and the aggregator keeps each with probability `p_s` by tally-core's
//! exact Bernoulli coin (`SampleThresholdQuery::respond`, the code devices and the
//! simulator flip), from its own ChaCha20 stream seeded from the operating system's CSPRNG
//! (tests alone can fix the seed, through [`crate::Server::start_seeded`]):
//! the sample is the Poisson sample S&T's guarantee is proved for, whatever the devices do,
//! and neither the devices nor anyone outside the process learn which reports were kept.
//! Under device-side sampling the reports arrive already sampled and are all counted.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
#[cfg(doc)]
use tally_core::protocol::RoundProtocol;

/// Where each round gets its secret stream of coins: the aggregator's sampling coins and
/// shuffles, and a relay's cohorts, coins and permutations.
pub enum AggregatorCoins {
    /// A fresh ChaCha20 stream for each round, seeded from the operating system's CSPRNG: what
    /// every deployed server uses.
    Os,
    /// Each round's stream seeded from one ChaCha20 stream with a known seed, so that a test
    /// that opens the same rounds in the same order sees the same samples. Only reachable
    /// through [`crate::Server::start_seeded`], which `tally serve` never calls.
    Seeded(Box<std::sync::Mutex<ChaCha20Rng>>),
}

impl AggregatorCoins {
    /// Coins from a stream seeded with `seed`: for tests alone (whoever knows the seed knows
    /// every draw).
    pub fn seeded(seed: u64) -> Self {
        Self::Seeded(Box::new(std::sync::Mutex::new(ChaCha20Rng::seed_from_u64(
            seed,
        ))))
    }

    /// The stream of the next round's coins.
    pub fn round_rng(&self) -> ChaCha20Rng {
        match self {
            Self::Os => ChaCha20Rng::from_rng(&mut rand::rng()),
            Self::Seeded(seeds) => {
                ChaCha20Rng::from_rng(&mut *seeds.lock().expect("aggregator seed lock"))
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::numeric::ln_binomial_pmf;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget, SampleThresholdParams};

    use tally_core::histogram::SampleThreshold;
    use tally_core::protocol::{
        RoundAggregator, RoundProtocol, SampleThresholdCells, SampleThresholdRound, WholeItem,
    };
    use tally_messages::Sampling;
    use tally_stats_tests::binomial_interval;

    use super::*;

    /// The server's aggregator of a histogram round of `mechanism`, its coins flipped as
    /// `sampling` says (from `rng` when the aggregator flips them).
    fn round_aggregator(
        mechanism: &SampleThreshold,
        sampling: Sampling,
        rng: ChaCha20Rng,
    ) -> SampleThresholdCells<String> {
        SampleThresholdRound::new(
            WholeItem,
            mechanism.clone(),
            tally_protocol::coin_holder(sampling),
        )
        .aggregator(rng)
    }

    /// The S&T mechanism at `(ε, δ) = (1, 1e-6)` with threshold `tau`, its rate calibrated.
    fn mechanism(tau: u64) -> SampleThreshold {
        SampleThreshold::calibrate(
            1.0,
            1e-6,
            PlanTarget::Threshold(tau),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap()
    }

    /// A stream of aggregator coins seeded with `seed`.
    fn seeded(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    /// One round of the attack: 19 dishonest devices always upload the victim's secret (they
    /// never flip a coin), 10 honest devices hold items of their own, and the victim, when
    /// present, holds the secret. Honest devices flip their own coins under device-side
    /// sampling and report every round under aggregator-side sampling. Returns whether the
    /// secret was released and whether the victim's coin came up (device-side only).
    fn attack_round(sampling: Sampling, victim: bool, seed: u64) -> (bool, bool) {
        let mechanism = mechanism(20);
        let coin = mechanism.query();
        let mut devices = ChaCha20Rng::seed_from_u64(seed);
        let mut aggregator = round_aggregator(&mechanism, sampling, seeded(seed ^ 0x5eed));
        let honest = |item: String, rng: &mut ChaCha20Rng| match sampling {
            Sampling::Aggregator => Some(item),
            Sampling::Device => coin.respond(item, rng),
        };
        for _ in 0..19 {
            aggregator.absorb("secret".to_owned());
        }
        for i in 0..10 {
            if let Some(report) = honest(format!("other-{i}"), &mut devices) {
                aggregator.absorb(report);
            }
        }
        let mut victim_sampled = false;
        if victim && let Some(report) = honest("secret".to_owned(), &mut devices) {
            victim_sampled = true;
            aggregator.absorb(report);
        }
        let released = aggregator.release().iter().any(|cell| cell.key == "secret");
        (released, victim_sampled)
    }

    /// The attack on device-side sampling (the secret appears exactly when the victim was
    /// sampled) finds nothing under aggregator-side sampling, where the 19 dishonest reports
    /// are sampled like everyone's: the secret needs all 20 holders kept, `p_s^20 ≈ 8e-10`.
    #[test]
    fn dishonest_devices_cannot_choose_to_be_sampled() {
        const TRIALS: u64 = 200;
        let mut device_side = 0;
        for seed in 0..TRIALS {
            let (released, victim_sampled) = attack_round(Sampling::Device, true, seed);
            assert_eq!(released, victim_sampled, "seed {seed}");
            device_side += u64::from(released);
            assert!(!attack_round(Sampling::Device, false, seed).0);
        }
        // The victim is sampled with p_s ≈ 0.35: about 70 releases of its secret, each
        // telling that it holds the secret.
        assert!(device_side >= 20, "{device_side} of {TRIALS}");
        for seed in 0..TRIALS {
            assert!(
                !attack_round(Sampling::Aggregator, true, seed).0,
                "seed {seed}"
            );
        }
    }

    /// One cell held by 58 devices at threshold 10 (`p_s ≈ 0.172`, so about half the rounds
    /// release it): its release probability is `Pr[Bin(58, p_s) ≥ 10]` whether the
    /// aggregator flips the coins, the devices flip them, or the simulator runs the round;
    /// each path's number of releases over 20,000 rounds lies in the exact binomial interval
    /// at α = 1e-6, and counting every report unsampled (a mutant) does not.
    #[test]
    fn stat_aggregator_and_device_sampling_release_the_simulators_distribution() {
        const HOLDERS: u64 = 58;
        const ROUNDS: u64 = 20_000;
        let mechanism = mechanism(10);
        let p = mechanism.params().sampling_rate();
        let release_probability: f64 = (10..=HOLDERS)
            .map(|v| ln_binomial_pmf(v, HOLDERS, p).exp())
            .sum();
        assert!(
            (0.3..0.7).contains(&release_probability),
            "{release_probability}"
        );
        let (lo, hi) = binomial_interval(ROUNDS, release_probability, 1e-6);
        let coin = mechanism.query();
        let released = |aggregator: SampleThresholdCells<String>| !aggregator.release().is_empty();
        let aggregator_side = (0..ROUNDS)
            .filter(|&seed| {
                let mut aggregator =
                    round_aggregator(&mechanism, Sampling::Aggregator, seeded(seed));
                (0..HOLDERS).for_each(|_| aggregator.absorb("x".to_owned()));
                released(aggregator)
            })
            .count() as u64;
        let device_side = (0..ROUNDS)
            .filter(|&seed| {
                // Seeds apart from the aggregator path's, so that the paths draw apart.
                let mut devices = ChaCha20Rng::seed_from_u64(ROUNDS + seed);
                let mut aggregator = round_aggregator(&mechanism, Sampling::Device, seeded(0));
                for _ in 0..HOLDERS {
                    if let Some(report) = coin.respond("x".to_owned(), &mut devices) {
                        aggregator.absorb(report);
                    }
                }
                released(aggregator)
            })
            .count() as u64;
        let population =
            tally_sim::Population::from_ids(vec![0; HOLDERS as usize], vec!["x".into()], "cell")
                .unwrap();
        let simulated = (0..ROUNDS)
            .filter(|&seed| {
                let path = tally_sim::ExecutionPath::PerClient;
                !tally_sim::run_sample_threshold(&population, &mechanism, path, seed)
                    .items
                    .is_empty()
            })
            .count() as u64;
        for (path, releases) in [
            ("aggregator", aggregator_side),
            ("device", device_side),
            ("simulator", simulated),
        ] {
            assert!(
                (lo..=hi).contains(&releases),
                "{path}: {releases} releases of {ROUNDS}, expected {lo} to {hi}"
            );
        }
        let unsampled = (0..ROUNDS)
            .filter(|_| {
                let mut aggregator = round_aggregator(&mechanism, Sampling::Device, seeded(0));
                (0..HOLDERS).for_each(|_| aggregator.absorb("x".to_owned()));
                released(aggregator)
            })
            .count() as u64;
        assert!(!(lo..=hi).contains(&unsampled), "the mutant passes");
    }

    #[test]
    fn releases_only_what_reaches_the_threshold() {
        let params = SampleThresholdParams::new(0.5, 3).unwrap();
        let mechanism =
            SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let mut aggregator = round_aggregator(&mechanism, Sampling::Device, seeded(0));
        for report in ["a", "b", "a", "c", "a", "b", "b", "b"] {
            aggregator.absorb(report.to_owned());
        }
        let release: Vec<_> = aggregator
            .release()
            .into_iter()
            .map(|cell| (cell.key, cell.count, cell.estimate))
            .collect();
        assert_eq!(
            release,
            [("b".to_owned(), 4, 8.0), ("a".to_owned(), 3, 6.0)]
        );
    }
}
