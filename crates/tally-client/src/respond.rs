//! A device's answer to a round's query, computed by the same code the simulator runs.
//!
//! # Privacy
//!
//! Every device flips its own exact Bernoulli(`p_s`) coin
//! ([`SampleThresholdQuery::respond`]); the server learns only what the device uploads. A
//! device that checked in uploads either its report or an abstention, so the number of
//! uploads says nothing about who was sampled. Randomness comes from a CSPRNG
//! ([`ChaCha20Rng`] seeded from the operating system through [`rand::rng`]) unless a test
//! fixes a seed.

use std::collections::HashSet;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use tally_core::heavy_hitters::PrefixRound;
use tally_core::histogram::SampleThresholdQuery;
use tally_messages::{Ask, RoundQuery};

/// Why a round's query cannot be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RespondError {
    /// A parameter of the query is out of range.
    #[error("round {round_id}: {source}")]
    Query {
        /// The round.
        round_id: String,
        /// What tally-core refused.
        #[source]
        source: tally_core::Error,
    },
    /// A prefix query with a level or segment of 0.
    #[error("round {round_id}: {name} = 0, expected at least 1")]
    Zero {
        /// The round.
        round_id: String,
        /// `level` or `segment`.
        name: &'static str,
    },
}

/// A round's query made ready to answer: built once per round, then asked once per device.
#[derive(Clone, Debug)]
pub struct Responder {
    coin: SampleThresholdQuery,
    prefix: Option<PrefixRound>,
    max_report_bytes: usize,
}

impl Responder {
    /// Builds the core query of `round`: the sampling coin, and for a prefix round the
    /// prefix-tree round with its live parents.
    ///
    /// # Errors
    ///
    /// [`RespondError`] if the sampling rate is not strictly between 0 and 1, or a prefix
    /// round's level or segment is 0.
    pub fn new(round: &RoundQuery) -> Result<Self, RespondError> {
        let query_error = |source| RespondError::Query {
            round_id: round.round_id.clone(),
            source,
        };
        let zero = |name| RespondError::Zero {
            round_id: round.round_id.clone(),
            name,
        };
        let (rate, prefix) = match &round.ask {
            Ask::Item { sampling_rate } => (*sampling_rate, None),
            Ask::Prefix {
                level,
                segment,
                live_parents,
                sampling_rate,
            } => {
                if *level == 0 {
                    return Err(zero("level"));
                }
                if *segment == 0 {
                    return Err(zero("segment"));
                }
                let prefix = PrefixRound {
                    round: *level as usize,
                    segment: *segment as usize,
                    live_parents: live_parents
                        .as_ref()
                        .map(|parents| Arc::new(parents.iter().cloned().collect::<HashSet<_>>())),
                };
                (*sampling_rate, Some(prefix))
            }
        };
        Ok(Self {
            coin: SampleThresholdQuery::new(rate).map_err(query_error)?,
            prefix,
            max_report_bytes: round.max_report_bytes as usize,
        })
    }

    /// The device's upload for its `item`: `Some(report)`, or `None` to abstain (not sampled,
    /// no prefix to report this level, or a report longer than the round accepts).
    pub fn respond_with_rng<R: Rng + ?Sized>(&self, item: &str, rng: &mut R) -> Option<String> {
        let report = match &self.prefix {
            None => item.to_owned(),
            Some(prefix) => prefix.report(item)?,
        };
        // An item the aggregator would refuse as oversized abstains instead: a refusal would
        // tell the server that this device was sampled.
        if report.len() > self.max_report_bytes {
            return None;
        }
        self.coin.respond(report, rng)
    }

    /// [`Responder::respond_with_rng`] with a fresh CSPRNG.
    pub fn respond(&self, item: &str) -> Option<String> {
        self.respond_with_rng(item, &mut device_rng(None))
    }
}

/// A device's randomness: [`ChaCha20Rng`] seeded from the operating system's randomness, or
/// from `seed` when one is given (tests and reproducible demos only: a release is private only
/// while the devices' coins stay secret).
pub fn device_rng(seed: Option<u64>) -> ChaCha20Rng {
    match seed {
        Some(seed) => ChaCha20Rng::seed_from_u64(seed),
        None => ChaCha20Rng::from_rng(&mut rand::rng()),
    }
}

#[cfg(test)]
mod tests {
    use tally_messages::PROTOCOL_VERSION;

    use super::*;

    fn round(ask: Ask) -> RoundQuery {
        RoundQuery {
            version: PROTOCOL_VERSION,
            round_id: "r1".to_owned(),
            task_id: "t1".to_owned(),
            population: "test".to_owned(),
            round: 1,
            attempt: 1,
            deadline: 0,
            max_report_bytes: 16,
            ask,
        }
    }

    /// Over `n` devices at rate `p`, the number of reports is Binomial(n, p); the bounds are
    /// its two-sided 1 − 10⁻⁶ interval by the normal approximation (z = 4.892, from
    /// `scipy.stats.norm.isf(0.5e-6)`), ample at n = 200,000.
    #[test]
    fn stat_share_of_reports_is_the_sampling_rate() {
        const N: u64 = 200_000;
        const Z: f64 = 4.892;
        for (seed, p) in [(1, 0.05), (2, 0.3), (3, 0.9)] {
            let responder = Responder::new(&round(Ask::Item { sampling_rate: p })).unwrap();
            let mut rng = device_rng(Some(seed));
            let reports = (0..N)
                .filter_map(|_| responder.respond_with_rng("apple", &mut rng))
                .inspect(|report| assert_eq!(report, "apple"))
                .count() as f64;
            let mean = N as f64 * p;
            let sd = (N as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (reports - mean).abs() <= Z * sd,
                "seed {seed}, p = {p}: {reports} reports of {N}, expected {mean} ± {}",
                Z * sd
            );
        }
    }

    #[test]
    fn stat_prefix_reports_are_sampled_at_the_rate() {
        const N: u64 = 100_000;
        const Z: f64 = 4.892;
        let p = 0.4;
        let responder = Responder::new(&round(Ask::Prefix {
            level: 2,
            segment: 2,
            live_parents: Some(vec!["ap".to_owned()]),
            sampling_rate: p,
        }))
        .unwrap();
        let mut rng = device_rng(Some(11));
        let reports = (0..N)
            .filter_map(|_| responder.respond_with_rng("apple", &mut rng))
            .inspect(|report| assert_eq!(report, "appl"))
            .count() as f64;
        let (mean, sd) = (N as f64 * p, (N as f64 * p * (1.0 - p)).sqrt());
        assert!((reports - mean).abs() <= Z * sd, "{reports} reports of {N}");
    }

    #[test]
    fn abstains_below_a_dead_parent_or_after_the_word_ended() {
        let responder = Responder::new(&round(Ask::Prefix {
            level: 2,
            segment: 1,
            live_parents: Some(vec!["b".to_owned()]),
            // Close to 1 so that a report would show up at once.
            sampling_rate: 0.999_999,
        }))
        .unwrap();
        let mut rng = device_rng(Some(5));
        for _ in 0..1000 {
            assert_eq!(responder.respond_with_rng("apple", &mut rng), None);
            assert_eq!(responder.respond_with_rng("", &mut rng), None);
        }
        let reported = (0..1000)
            .filter_map(|_| responder.respond_with_rng("be", &mut rng))
            .inspect(|report| assert_eq!(report, "be"))
            .count();
        assert!(reported > 990, "{reported}");
        // A word that ends inside the level reports its terminator.
        assert_eq!(
            responder
                .respond_with_rng("b", &mut device_rng(Some(6)))
                .as_deref(),
            Some("b$")
        );
    }

    #[test]
    fn unrestricted_prefix_rounds_report_below_any_parent() {
        let responder = Responder::new(&round(Ask::Prefix {
            level: 2,
            segment: 1,
            live_parents: None,
            sampling_rate: 0.999_999,
        }))
        .unwrap();
        assert_eq!(
            responder
                .respond_with_rng("apple", &mut device_rng(Some(8)))
                .as_deref(),
            Some("ap")
        );
    }

    #[test]
    fn a_report_longer_than_the_round_accepts_abstains() {
        let responder = Responder::new(&round(Ask::Item {
            sampling_rate: 0.999_999,
        }))
        .unwrap();
        let mut rng = device_rng(Some(9));
        assert_eq!(responder.respond_with_rng(&"x".repeat(17), &mut rng), None);
        assert_eq!(
            responder.respond_with_rng(&"x".repeat(16), &mut rng),
            Some("x".repeat(16))
        );
    }

    #[test]
    fn refuses_invalid_rates_and_levels() {
        for rate in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
            let error = Responder::new(&round(Ask::Item {
                sampling_rate: rate,
            }))
            .unwrap_err();
            assert!(
                matches!(error, RespondError::Query { .. }),
                "{rate}: {error}"
            );
            assert!(error.to_string().contains("sampling_rate"), "{error}");
        }
        let error = Responder::new(&round(Ask::Prefix {
            level: 0,
            segment: 1,
            live_parents: None,
            sampling_rate: 0.5,
        }))
        .unwrap_err();
        assert!(
            matches!(error, RespondError::Zero { name: "level", .. }),
            "{error}"
        );
    }

    #[test]
    fn seeded_devices_repeat_their_coins() {
        let responder = Responder::new(&round(Ask::Item { sampling_rate: 0.5 })).unwrap();
        let coins = |seed| {
            let mut rng = device_rng(Some(seed));
            (0..64)
                .map(|_| responder.respond_with_rng("a", &mut rng).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(coins(3), coins(3));
        assert_ne!(coins(3), coins(4));
    }
}
