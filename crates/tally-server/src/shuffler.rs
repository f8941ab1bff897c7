//! The shuffler boundary: which aggregator a round's uploads go into, by the trust model of
//! the round's guarantee.
//!
//! A round whose guarantee trusts a shuffler ([`TrustModel::Shuffle`]) gets its aggregator
//! behind tally-core's [`Shuffled`]: the upload path hands each admitted report over without
//! its token, credential or position (`round.rs` never passes them on), the shuffler holds
//! the reports, and at close permutes them with its own secret coins (an exactly uniform
//! permutation) before the round's analyzer sees any. Every other round feeds its aggregator
//! directly, as before (a sample-and-threshold aggregator only counts, and its coins are
//! flipped per report). Nothing about an individual report reaches the logs, the metrics or
//! an error: a refused upload is answered with its round kind's error code alone.
//!
//! # Privacy
//!
//! The boundary is in code, inside the one server process, not a separate trusted party: the
//! process that holds the reports before the shuffle also runs the analyzer and its coins
//! come from the same secret source (`docs/federated/threat-model.md`). What it guarantees is
//! that the analyzer's input, and so everything the round releases, is independent of who
//! sent which report and in which order.

use rand_chacha::ChaCha20Rng;
use tally_core::protocol::wire::{WireAggregator, WireRelease, wire_aggregator};
use tally_core::protocol::{
    DeviceQuery, MultiMessage, RoundProtocol, Shuffled, TrustModel, WireReport,
};

/// An empty aggregator for `round`, behind the shuffler when the round's guarantee trusts
/// one, its secret coins drawn from `rng`.
pub(crate) fn aggregator<P>(round: P, rng: ChaCha20Rng) -> Box<dyn WireAggregator>
where
    P: RoundProtocol<Query: DeviceQuery<Report: ShuffledReport> + Clone + Send + 'static>,
    P::Release: WireRelease,
    P::Aggregator: Send + 'static,
{
    match round.query().trust() {
        TrustModel::Shuffle => wire_aggregator(&Shuffled(round), rng),
        _ => wire_aggregator(&round, rng),
    }
}

/// A report as the shuffler takes it: its wire encoding, and the messages it splits into.
pub(crate) trait ShuffledReport:
    WireReport + MultiMessage<Message: Send + 'static> + Send + 'static
{
}

impl<T: WireReport + MultiMessage<Message: Send + 'static> + Send + 'static> ShuffledReport for T {}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rand::{Rng, SeedableRng};
    use tally_core::protocol::RoundAggregator;
    use tally_core::protocol::wire::WireCell;
    use tally_messages::{Ask, ErrorCode, PROTOCOL_VERSION, RoundQuery, Sampling, Upload};

    use super::*;
    use crate::aggregator::tests::binomial_interval;
    use crate::round::Round;

    /// A round whose guarantee trusts a shuffler and whose analyzer publishes the messages it
    /// receives, in the order it receives them (as a shuffle-model analyzer may publish the
    /// multiset of randomized messages): the worst case for arrival order.
    #[derive(Clone, Debug)]
    struct Messages;

    impl DeviceQuery for Messages {
        type Input = str;
        type Report = String;

        fn trust(&self) -> TrustModel {
            TrustModel::Shuffle
        }

        fn respond<R: Rng + ?Sized>(&self, message: &str, _: &mut R) -> Option<String> {
            Some(message.to_owned())
        }

        fn admits(&self, message: &String) -> bool {
            !message.is_empty()
        }
    }

    impl RoundProtocol for Messages {
        type Query = Self;
        type Release = Vec<String>;
        type Aggregator = Received;

        fn query(&self) -> &Self {
            self
        }

        fn aggregator(&self, _: ChaCha20Rng) -> Received {
            Received(Vec::new())
        }
    }

    /// The messages in the order received.
    struct Received(Vec<String>);

    impl RoundAggregator for Received {
        type Report = String;
        type Release = Vec<String>;

        fn absorb(&mut self, message: String) {
            self.0.push(message);
        }

        fn merge(&mut self, other: Self) {
            self.0.extend(other.0);
        }

        fn release(self) -> Vec<String> {
            self.0
        }
    }

    /// Devices in the attack's rounds.
    const DEVICES: usize = 8;

    /// One round of the attack through the server's upload path: `DEVICES` devices check in
    /// and upload one after the other, device `i` the message `m{i}`, one refused upload among
    /// them; the attacker (an analyst reading the release, or an operator who also saw the
    /// order of the uploads) guesses that the `i`-th released message is the `i`-th device's.
    /// Returns the release and how many devices' messages the guess gets right.
    fn attack(boundary: bool, seed: u64) -> (Vec<String>, usize) {
        let aggregator = if boundary {
            aggregator(Messages, ChaCha20Rng::seed_from_u64(seed))
        } else {
            wire_aggregator(&Messages, ChaCha20Rng::seed_from_u64(seed))
        };
        let query = RoundQuery {
            version: PROTOCOL_VERSION,
            round_id: "r-attack".into(),
            task_id: "t-attack".into(),
            population: "p".into(),
            round: 1,
            attempt: 1,
            deadline: 0,
            max_report_bytes: 16,
            ask: Ask::Item { sampling_rate: 0.5 },
            sampling: Sampling::Aggregator,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let round = Round::new(query, deadline, 100, aggregator, ErrorCode::Malformed);
        let mut tokens = round
            .check_in(DEVICES as u32 + 1, &mut ChaCha20Rng::seed_from_u64(!seed))
            .unwrap();
        let refused = round
            .upload(vec![Upload {
                token: tokens.pop().unwrap(),
                report: Some(String::new()),
            }])
            .unwrap();
        // A refusal says why by its code alone, never with the report.
        assert_eq!(refused.rejected.len(), 1);
        assert_eq!(refused.rejected[0].code, ErrorCode::Malformed);
        for (i, token) in tokens.into_iter().enumerate() {
            let outcome = round.upload(vec![Upload {
                token,
                report: Some(format!("m{i}")),
            }]);
            assert_eq!(outcome.unwrap().reports, 1);
        }
        let cells: Vec<WireCell> = round.close().unwrap().aggregator.release();
        let release = Vec::<String>::from_cells(cells).unwrap();
        let guessed = (0..DEVICES)
            .filter(|&i| release[i] == format!("m{i}"))
            .count();
        (release, guessed)
    }

    /// Without the shuffler the release lists the messages in arrival order and the attacker
    /// recovers every device's message. Behind it the analyzer gets the same multiset in an
    /// order independent of arrival: over 8,000 rounds the first device's message is
    /// released first as often as `Binomial(8000, 1/8)` allows at α = 1e-6, and so is the
    /// last device's message; the attacker's guesses are right for one device per round on
    /// average, as for a guess at random.
    #[test]
    fn stat_the_analyzer_learns_neither_who_sent_a_message_nor_when() {
        const ROUNDS: u64 = 8_000;
        let (release, guessed) = attack(false, 0);
        assert_eq!(guessed, DEVICES, "{release:?}");
        let (lo, hi) = binomial_interval(ROUNDS, 1.0 / DEVICES as f64, 1e-6);
        let (mut first, mut last, mut guessed) = (0, 0, 0);
        for seed in 0..ROUNDS {
            let (mut release, right) = attack(true, seed);
            first += u64::from(release[0] == "m0");
            last += u64::from(release[0] == format!("m{}", DEVICES - 1));
            guessed += right as u64;
            release.sort_unstable();
            let mut sent: Vec<String> = (0..DEVICES).map(|i| format!("m{i}")).collect();
            sent.sort_unstable();
            assert_eq!(release, sent, "the same multiset");
        }
        for (what, count) in [("first", first), ("last", last)] {
            assert!(
                (lo..=hi).contains(&count),
                "the {what} device's message released first {count} times, expected {lo} to {hi}"
            );
        }
        // Right guesses per round: mean 1 (each position matches with probability 1/8).
        let mean = guessed as f64 / ROUNDS as f64;
        assert!((0.9..1.1).contains(&mean), "{mean}");
    }

    /// Rounds trusting a central aggregator are not held back: their aggregator counts each
    /// report as it arrives (the load figures of sample-and-threshold rounds are unchanged).
    #[test]
    fn central_rounds_feed_their_aggregator_directly() {
        use tally_accounting::Neighbours;
        use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
        use tally_core::histogram::SampleThreshold;
        use tally_core::protocol::{CoinHolder, SampleThresholdRound, WholeItem};

        let params = SampleThresholdParams::new(0.5, 2).unwrap();
        let mechanism =
            SampleThreshold::new(params, 2.0, Analysis::Tight, Neighbours::AddRemove).unwrap();
        let round = SampleThresholdRound::new(WholeItem, mechanism, CoinHolder::Device);
        let mut direct = aggregator(round, ChaCha20Rng::seed_from_u64(0));
        for item in ["b", "a", "a", "b"] {
            direct.absorb(item.to_owned()).unwrap();
        }
        // Ties are released in arrival order: no shuffle happened.
        let keys: Vec<String> = direct
            .release()
            .into_iter()
            .map(|cell: WireCell| cell.key)
            .collect();
        assert_eq!(keys, ["b", "a"]);
    }
}
