//! A device's answer to a round's query, computed by the same code the simulator runs: the
//! round's tally-core query, rebuilt from its [`Ask`] by the protocol's registry of round kinds
//! ([`AskResponder::responder`]).
//!
//! # Privacy
//!
//! Under aggregator-side sampling (the default, [`Sampling::Aggregator`]) a device reports
//! every round and the aggregator flips the coins. Under device-side sampling every device
//! flips its own exact Bernoulli(`p_s`) coin (`SampleThresholdQuery::respond`), which holds
//! only if every device does so honestly; a device that checked in uploads either its report
//! or an abstention, so the number of uploads says nothing about who was sampled (the
//! aggregator itself, which sees each upload, does learn it: it is inside the trust
//! boundary). Randomness comes from a CSPRNG ([`ChaCha20Rng`] seeded from the operating
//! system through [`rand::rng`]) unless a test fixes a seed.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use tally_core::protocol::wire::DeviceResponder;
use tally_messages::RoundQuery;
#[cfg(doc)]
use tally_messages::{Ask, Sampling};
use tally_protocol::{AskError, AskResponder};

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
    /// A bucket query whose level is not a level of its tree.
    #[error("round {round_id}: level {level}, expected 1 to {levels}")]
    Level {
        /// The round.
        round_id: String,
        /// The level asked.
        level: u32,
        /// The tree's levels.
        levels: u32,
    },
    /// A query over a public domain of fewer than 2 elements.
    #[error("round {round_id}: domain of {size} elements, expected at least 2")]
    Domain {
        /// The round.
        round_id: String,
        /// The domain's size.
        size: u32,
    },
    /// A device's data cannot answer this kind of round (a bucket or split round needs a
    /// number, a round over integer items an integer in its domain).
    #[error("round {round_id} asks for a number, but a device holds {item:?}")]
    NotANumber {
        /// The round.
        round_id: String,
        /// The device's item (shortened if long).
        item: String,
    },
}

/// A round's query made ready to answer: built once per round, then asked once per device.
#[derive(Clone, Debug)]
pub struct Responder {
    round_id: String,
    /// The round's query, with the device's own coin under device-side sampling.
    query: Arc<dyn DeviceResponder>,
    max_report_bytes: usize,
}

impl Responder {
    /// Builds the core query of `round`: the sampling coin, and for a prefix round the
    /// prefix-tree round with its live parents, for a bucket round the tree and the range.
    ///
    /// # Errors
    ///
    /// [`RespondError`] if the sampling rate is not strictly between 0 and 1, a prefix
    /// round's level or segment is 0, or a bucket round's tree, level or range is invalid.
    pub fn new(round: &RoundQuery) -> Result<Self, RespondError> {
        let round_id = round.round_id.clone();
        let query = round.ask.responder(round.sampling).map_err(|e| match e {
            AskError::Query(source) => RespondError::Query { round_id, source },
            AskError::Zero(name) => RespondError::Zero { round_id, name },
            AskError::Level { level, levels } => RespondError::Level {
                round_id,
                level,
                levels,
            },
            AskError::Domain(size) => RespondError::Domain { round_id, size },
        })?;
        Ok(Self {
            round_id: round.round_id.clone(),
            query,
            max_report_bytes: round.max_report_bytes as usize,
        })
    }

    /// Whether a device holding `item` can answer this round: a bucket round needs a finite
    /// number (a device that cannot answer abstains, so a fleet checks its data first).
    ///
    /// # Errors
    ///
    /// [`RespondError::NotANumber`] for a bucket round and an item that is not one.
    pub fn check(&self, item: &str) -> Result<(), RespondError> {
        if self.query.accepts(item) {
            return Ok(());
        }
        Err(RespondError::NotANumber {
            round_id: self.round_id.clone(),
            item: item.chars().take(40).collect(),
        })
    }

    /// The device's upload for its `item`: `Some(report)`, or `None` to abstain (not sampled,
    /// no prefix to report this level, no number for a bucket round, or a report longer than
    /// the round accepts).
    pub fn respond_with_rng<R: Rng + ?Sized>(&self, item: &str, mut rng: &mut R) -> Option<String> {
        self.query.respond(item, self.max_report_bytes, &mut rng)
    }

    /// The device's report for its `item` as its messages, each to be sealed on its own (a
    /// split-trust population's device): one for a report of one message, several for a
    /// shuffle-model report of several; `None` to abstain, as [`Responder::respond_with_rng`].
    pub fn respond_messages_with_rng<R: Rng + ?Sized>(
        &self,
        item: &str,
        mut rng: &mut R,
    ) -> Option<Vec<String>> {
        self.query
            .respond_messages(item, self.max_report_bytes, &mut rng)
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
    use tally_messages::{Ask, PROTOCOL_VERSION, Sampling};

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
            min_cohort: 1,
            cohort_target: 100,
            ask,
            sampling: Sampling::Device,
        }
    }

    #[test]
    fn under_aggregator_sampling_a_device_reports_every_round() {
        let query = RoundQuery {
            sampling: Sampling::Aggregator,
            ..round(Ask::Item {
                sampling_rate: 0.01,
            })
        };
        let responder = Responder::new(&query).unwrap();
        let mut rng = device_rng(Some(1));
        for _ in 0..1000 {
            assert_eq!(
                responder.respond_with_rng("apple", &mut rng).as_deref(),
                Some("apple")
            );
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

    fn bucket_round(level: u32, range: Option<[f64; 2]>) -> RoundQuery {
        round(Ask::Bucket {
            level,
            levels: 3,
            branching: 4,
            range,
            sampling_rate: 0.999_999,
        })
    }

    #[test]
    fn a_number_reports_its_bucket_of_the_level() {
        let mut rng = device_rng(Some(12));
        let answer = |round: &RoundQuery, item: &str, rng: &mut ChaCha20Rng| {
            Responder::new(round).unwrap().respond_with_rng(item, rng)
        };
        // 0.7 lies in [11/16, 12/16) at level 2 and in [44/64, 45/64) at level 3.
        assert_eq!(
            answer(&bucket_round(2, None), "0.7", &mut rng).as_deref(),
            Some("11")
        );
        assert_eq!(
            answer(&bucket_round(3, None), " 0.7\t", &mut rng).as_deref(),
            Some("44")
        );
        // Rescaled from [100, 200], 170 is 0.7; numbers outside count at the nearer end.
        let scaled = bucket_round(1, Some([100.0, 200.0]));
        for (item, bucket) in [("170", "2"), ("99", "0"), ("1e9", "3"), ("200", "3")] {
            assert_eq!(
                answer(&scaled, item, &mut rng).as_deref(),
                Some(bucket),
                "{item}"
            );
        }
    }

    #[test]
    fn a_number_reports_which_side_of_the_split_it_lies() {
        let round = round(Ask::Split {
            threshold: 0.375,
            range: Some([0.0, 200.0]),
            sampling_rate: 0.999_999,
        });
        let responder = Responder::new(&round).unwrap();
        let mut rng = device_rng(Some(13));
        // 75 is 0.375 of [0, 200]: at or below the split point.
        for (item, side) in [
            ("75", "0"),
            ("74.9", "0"),
            ("75.1", "1"),
            ("-3", "0"),
            ("900", "1"),
        ] {
            assert_eq!(
                responder.respond_with_rng(item, &mut rng).as_deref(),
                Some(side),
                "{item}"
            );
        }
        assert!(responder.check("pear").is_err());
    }

    #[test]
    fn a_bucket_round_needs_a_number() {
        let responder = Responder::new(&bucket_round(1, None)).unwrap();
        for item in ["apple", "", "NaN", "inf"] {
            let error = responder.check(item).unwrap_err();
            assert!(matches!(error, RespondError::NotANumber { .. }), "{error}");
            assert_eq!(
                responder.respond_with_rng(item, &mut device_rng(Some(1))),
                None
            );
        }
        responder.check("0.25").unwrap();
        // Item and prefix rounds take any item.
        let items = Responder::new(&round(Ask::Item { sampling_rate: 0.5 })).unwrap();
        items.check("apple").unwrap();
    }

    #[test]
    fn refuses_a_bucket_round_outside_its_tree() {
        let error = Responder::new(&bucket_round(4, None)).unwrap_err();
        assert!(
            matches!(
                error,
                RespondError::Level {
                    level: 4,
                    levels: 3,
                    ..
                }
            ),
            "{error}"
        );
        let error = Responder::new(&bucket_round(1, Some([2.0, 1.0]))).unwrap_err();
        assert!(error.to_string().contains("min < max"), "{error}");
        let error = Responder::new(&round(Ask::Bucket {
            level: 1,
            levels: 3,
            branching: 1,
            range: None,
            sampling_rate: 0.5,
        }))
        .unwrap_err();
        assert!(error.to_string().contains("branching"), "{error}");
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
