//! The shuffler boundary on the server's upload path: a round whose guarantee trusts a
//! shuffler gets its aggregator behind tally-core's `Shuffled`
//! ([`tally_protocol::shuffler::aggregator`]), and the upload path (`round.rs`) hands each
//! admitted report over without its token, credential or position. Nothing about an
//! individual report reaches the logs, the metrics or an error: a refused upload is answered
//! with its round kind's error code alone. The tests here check what an analyst or an
//! operator who saw the order of the uploads learns from a round's release.

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use tally_core::protocol::wire::{WireCell, WireRelease, wire_aggregator};
    use tally_core::protocol::{
        DeviceQuery, MultiMessage, RoundAggregator, RoundProtocol, TrustModel, WireReport,
    };
    use tally_messages::{ErrorCode, Upload};
    use tally_protocol::shuffler::aggregator;
    use tally_stats_tests::binomial_interval;

    use crate::round::tests::item_query;
    use crate::round::{Cohort, Round};

    /// A round whose guarantee trusts a shuffler, whose devices each send two messages, and
    /// whose analyzer publishes the messages it receives, in the order it receives them (as a
    /// shuffle-model analyzer may publish the multiset of randomized messages): the worst
    /// case for arrival order and for regrouping messages by device.
    #[derive(Clone, Debug)]
    struct Messages;

    /// A device's messages, comma-separated on the wire.
    #[derive(Clone, Debug)]
    struct Bundle(Vec<String>);

    impl WireReport for Bundle {
        fn encode(self) -> String {
            self.0.join(",")
        }

        fn decode(text: String) -> Option<Self> {
            Some(Self(text.split(',').map(str::to_owned).collect()))
        }
    }

    impl MultiMessage for Bundle {
        type Message = String;

        fn into_messages(self) -> Vec<String> {
            self.0
        }

        fn from_message(message: String) -> Self {
            Self(vec![message])
        }
    }

    impl DeviceQuery for Messages {
        type Input = str;
        type Report = Bundle;

        fn trust(&self) -> TrustModel {
            TrustModel::Shuffle
        }

        fn respond<R: Rng + ?Sized>(&self, messages: &str, _: &mut R) -> Option<Bundle> {
            Bundle::decode(messages.to_owned())
        }

        fn admits(&self, bundle: &Bundle) -> bool {
            bundle.0.len() <= 2 && bundle.0.iter().all(|m| !m.is_empty())
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
        type Report = Bundle;
        type Release = Vec<String>;

        fn absorb(&mut self, bundle: Bundle) {
            self.0.extend(bundle.0);
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
    /// and upload one after the other, device `i` the messages `m{i}a` and `m{i}b`, one
    /// refused upload among them; the attacker (an analyst reading the release, or an
    /// operator who also saw the order of the uploads) guesses that the released messages
    /// `2i` and `2i + 1` are the `i`-th device's. Returns the release and how many devices'
    /// messages the guess gets right.
    fn attack(boundary: bool, seed: u64) -> (Vec<String>, usize) {
        let aggregator = if boundary {
            aggregator(Messages, ChaCha20Rng::seed_from_u64(seed))
        } else {
            wire_aggregator(&Messages, ChaCha20Rng::seed_from_u64(seed))
        };
        let query = item_query("r-attack", "t-attack");
        let deadline = Instant::now() + Duration::from_secs(60);
        let round = Round::new(
            query,
            tally_messages::TrustModel::SingleParty,
            deadline,
            Cohort {
                min: 1,
                target: 100,
                expected: DEVICES as u64 + 1,
            },
            aggregator,
            ErrorCode::Malformed,
        );
        let mut tokens = round
            .check_in(
                "operator",
                DEVICES as u32 + 1,
                &mut ChaCha20Rng::seed_from_u64(!seed),
            )
            .unwrap();
        let refused = round
            .upload(
                "operator",
                vec![Upload {
                    token: tokens.pop().unwrap(),
                    report: Some("a,b,c".to_owned()),
                }],
            )
            .unwrap();
        // A refusal says why by its code alone, never with the report.
        assert_eq!(refused.rejected.len(), 1);
        assert_eq!(refused.rejected[0].code, ErrorCode::Malformed);
        for (i, token) in tokens.into_iter().enumerate() {
            let outcome = round.upload(
                "operator",
                vec![Upload {
                    token,
                    report: Some(format!("m{i}a,m{i}b")),
                }],
            );
            assert_eq!(outcome.unwrap().reports, 1);
        }
        let cells: Vec<WireCell> = round.close().unwrap().aggregator.release();
        let release = Vec::<String>::from_cells(cells).unwrap();
        let guessed = (0..DEVICES)
            .filter(|&i| release[2 * i..2 * i + 2] == [format!("m{i}a"), format!("m{i}b")])
            .count();
        (release, guessed)
    }

    /// Without the shuffler the release lists the messages in arrival order, each device's
    /// together, and the attacker recovers every device's messages. Behind it the analyzer
    /// gets the same multiset in an order independent of arrival and of who sent which
    /// messages together: over 8,000 rounds, the first released message is the first
    /// device's as often as `Binomial(8000, 2/16)` allows at α = 1e-6, and so is the last
    /// device's; the first two released messages come from the same device as often as
    /// `Binomial(8000, 1/15)` allows, as for a uniform permutation of all 16 messages.
    #[test]
    fn stat_the_analyzer_learns_neither_who_sent_a_message_nor_with_which_nor_when() {
        const ROUNDS: u64 = 8_000;
        let (release, guessed) = attack(false, 0);
        assert_eq!(guessed, DEVICES, "{release:?}");
        let device = |message: &str| message[..message.len() - 1].to_owned();
        let mut sent: Vec<String> = (0..DEVICES)
            .flat_map(|i| [format!("m{i}a"), format!("m{i}b")])
            .collect();
        sent.sort_unstable();
        let (mut first, mut last, mut together) = (0, 0, 0);
        for seed in 0..ROUNDS {
            let (mut release, _) = attack(true, seed);
            first += u64::from(device(&release[0]) == "m0");
            last += u64::from(device(&release[0]) == format!("m{}", DEVICES - 1));
            together += u64::from(device(&release[0]) == device(&release[1]));
            release.sort_unstable();
            assert_eq!(release, sent, "the same multiset");
        }
        let (lo, hi) = binomial_interval(ROUNDS, 1.0 / DEVICES as f64, 1e-6);
        for (what, count) in [("first", first), ("last", last)] {
            assert!(
                (lo..=hi).contains(&count),
                "the {what} device's message released first {count} times, expected {lo} to {hi}"
            );
        }
        let messages = 2 * DEVICES as u64;
        let (lo, hi) = binomial_interval(ROUNDS, 1.0 / (messages - 1) as f64, 1e-6);
        assert!(
            (lo..=hi).contains(&together),
            "one device's messages released first and second {together} times, expected {lo} \
             to {hi}"
        );
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
