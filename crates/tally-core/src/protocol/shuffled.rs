//! The shuffler in front of a round's aggregator, for rounds whose guarantee trusts a
//! shuffler ([`TrustModel::Shuffle`]): the analyzer (the round's own aggregator) must see the
//! round's messages as a multiset, neither who sent each one, nor which messages came from
//! the same device, nor in which order they arrived.
//!
//! [`Shuffled`] wraps any [`RoundProtocol`] whose reports are made of messages
//! ([`MultiMessage`]): its aggregator splits each admitted report into its messages and holds
//! them, without identity (an executor hands over the report
//! alone) and without their grouping by device; only when the round is released does it
//! permute **all** held messages with its own secret coins, by an exactly uniform
//! permutation ([`uniform_shuffle`]), and feed them one by one (each as a one-message report)
//! to the wrapped aggregator in that order, whose release it returns.
//!
//! # Privacy
//!
//! A shuffle-model guarantee (e.g. Balcer–Cheu's, or shuffled GRR's amplified from the local
//! randomizer's `ε₀`) holds against whoever sees the analyzer's output, on the premise that
//! the analyzer's input is a uniformly random permutation of every device's messages,
//! independent of who sent them, together with which others, and when. [`ShuffledAggregator`]
//! makes that premise true of what the wrapped aggregator receives: every one of the `k!`
//! orders of the `k` held messages has probability exactly `1/k!`, from a stream of coins
//! drawn from the round's secret stream and used for nothing else. It is a boundary in code,
//! inside the one server process, not a separate party: the process that holds the reports
//! before the shuffle is the one that runs the analyzer (see
//! `docs/federated/threat-model.md`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{DeviceQuery, MultiMessage, RoundAggregator, RoundProtocol};
use crate::sampling::uniform_below;

/// Permutes `items` uniformly at random: Fisher–Yates on exactly uniform integers, so each of
/// the `k!` orders of `k` items has probability exactly `1/k!`. (`rand`'s `shuffle` draws its
/// indices with a tiny bias.)
pub fn uniform_shuffle<T, R: Rng + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        // Unwrap safety: a slice's index fits in u64, and the draw is below i + 1.
        let j = uniform_below(i as u64 + 1, rng) as usize;
        items.swap(i, j);
    }
}

/// A round behind a shuffler: the same query, its aggregator fed only a uniformly permuted
/// batch of all the round's messages, one at a time, at release.
#[derive(Clone, Debug)]
pub struct Shuffled<P>(pub P);

impl<P> RoundProtocol for Shuffled<P>
where
    P: RoundProtocol<Query: DeviceQuery<Report: MultiMessage>>,
{
    type Query = P::Query;
    type Release = P::Release;
    type Aggregator = ShuffledAggregator<P::Aggregator>;

    fn query(&self) -> &P::Query {
        self.0.query()
    }

    /// The shuffler's coins are a stream of their own, seeded from `rng`; the wrapped
    /// aggregator gets the rest of `rng`.
    fn aggregator(&self, mut rng: ChaCha20Rng) -> ShuffledAggregator<P::Aggregator> {
        let coins = ChaCha20Rng::from_rng(&mut rng);
        ShuffledAggregator {
            held: Vec::new(),
            coins,
            analyzer: self.0.aggregator(rng),
        }
    }
}

/// The message type of an aggregator's reports.
type MessageOf<A> = <<A as RoundAggregator>::Report as MultiMessage>::Message;

/// Holds a round's messages, without identity or grouping by device, until release, then
/// shuffles them into the analyzer. Deliberately neither `Debug` nor serializable.
pub struct ShuffledAggregator<A: RoundAggregator<Report: MultiMessage>> {
    held: Vec<MessageOf<A>>,
    coins: ChaCha20Rng,
    analyzer: A,
}

impl<A: RoundAggregator<Report: MultiMessage>> RoundAggregator for ShuffledAggregator<A> {
    type Report = A::Report;
    type Release = A::Release;

    /// Splits the report into its messages and holds them; the analyzer sees nothing before
    /// release.
    fn absorb(&mut self, report: A::Report) {
        self.held.extend(report.into_messages());
    }

    /// Holds the other shard's messages too (they are shuffled with the rest at release).
    fn merge(&mut self, other: Self) {
        self.held.extend(other.held);
    }

    /// Permutes all held messages uniformly, feeds them to the analyzer one by one in that
    /// order and returns its release.
    fn release(mut self) -> A::Release {
        uniform_shuffle(&mut self.held, &mut self.coins);
        for message in self.held {
            self.analyzer.absorb(A::Report::from_message(message));
        }
        self.analyzer.release()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether each of the 24 orders of 4 items comes up 1/24 of the time under `shuffle`:
    /// every order's count over 48,000 shuffles within its binomial interval at
    /// α = 1e-6 / 24 (normal approximation with a 5.6σ margin, conservative at these counts).
    fn every_order_equally_likely(shuffle: fn(&mut [u8], &mut ChaCha20Rng)) -> bool {
        const SHUFFLES: u64 = 48_000;
        let mut rng = ChaCha20Rng::seed_from_u64(15);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..SHUFFLES {
            let mut items = [0u8, 1, 2, 3];
            shuffle(&mut items, &mut rng);
            *counts.entry(items).or_insert(0u64) += 1;
        }
        let mean = SHUFFLES as f64 / 24.0;
        let sigma = (mean * (1.0 - 1.0 / 24.0)).sqrt();
        counts.len() == 24
            && counts
                .values()
                .all(|&count| (count as f64 - mean).abs() <= 5.6 * sigma)
    }

    /// The shuffle is uniform, and the classic mistake (swapping each item with any
    /// position, `n^n` equally likely paths over `n!` orders) is caught.
    #[test]
    fn stat_every_order_is_equally_likely() {
        assert!(every_order_equally_likely(uniform_shuffle));
        let naive: fn(&mut [u8], &mut ChaCha20Rng) = |items, rng| {
            for i in 0..items.len() {
                let j = uniform_below(items.len() as u64, rng) as usize;
                items.swap(i, j);
            }
        };
        assert!(!every_order_equally_likely(naive), "the mutant passes");
    }

    /// A round whose devices each send a bundle of messages `d{i}:{j}` and whose analyzer
    /// publishes the messages in the order it receives them: the worst case for regrouping.
    #[derive(Clone)]
    struct Bundles;

    struct Bundle(Vec<String>);

    impl MultiMessage for Bundle {
        type Message = String;

        fn into_messages(self) -> Vec<String> {
            self.0
        }

        fn from_message(message: String) -> Self {
            Self(vec![message])
        }
    }

    impl super::super::DeviceQuery for Bundles {
        type Input = [String];
        type Report = Bundle;

        fn trust(&self) -> super::super::TrustModel {
            super::super::TrustModel::Shuffle
        }

        fn respond<R: Rng + ?Sized>(&self, messages: &[String], _: &mut R) -> Option<Bundle> {
            Some(Bundle(messages.to_vec()))
        }

        fn admits(&self, bundle: &Bundle) -> bool {
            !bundle.0.is_empty()
        }
    }

    impl RoundProtocol for Bundles {
        type Query = Self;
        type Release = Vec<String>;
        type Aggregator = InOrder;

        fn query(&self) -> &Self {
            self
        }

        fn aggregator(&self, _: ChaCha20Rng) -> InOrder {
            InOrder(Vec::new())
        }
    }

    /// The messages in the order received.
    struct InOrder(Vec<String>);

    impl RoundAggregator for InOrder {
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

    /// Devices in the regrouping attack, and messages per device.
    const DEVICES: usize = 6;
    const PER_DEVICE: usize = 3;

    /// The analyzer's view of one round of `DEVICES` devices with `PER_DEVICE` messages each,
    /// uploaded device after device, through `shuffler`.
    type Shuffler = fn(Vec<Bundle>, u64) -> Vec<String>;

    /// Whether the analyzer's view under `shuffler` is a uniform permutation of all messages,
    /// as far as a dishonest analyzer regrouping messages by device can tell. Over 12,000
    /// rounds it counts (a) the rounds whose first two released messages come from the same
    /// device, which a uniform permutation gives with probability `(m−1)/(k−1)` for `m`
    /// messages per device and `k` in all, and (b) the rounds whose first released message
    /// is the first device's, probability `1/DEVICES`; both counts must lie in their
    /// binomial intervals at α = 1e-6 (normal approximation with a 5.6σ margin).
    fn looks_uniform(shuffler: Shuffler) -> bool {
        const ROUNDS: u64 = 12_000;
        let all = (DEVICES * PER_DEVICE) as f64;
        let within = |count: u64, p: f64| {
            let mean = ROUNDS as f64 * p;
            (count as f64 - mean).abs() <= 5.6 * (mean * (1.0 - p)).sqrt()
        };
        let device = |message: &str| message.split(':').next().unwrap().to_owned();
        let (mut together, mut first) = (0, 0);
        for seed in 0..ROUNDS {
            let bundles = (0..DEVICES)
                .map(|i| Bundle((0..PER_DEVICE).map(|j| format!("d{i}:{j}")).collect()))
                .collect();
            let view = shuffler(bundles, seed);
            let mut sorted = view.clone();
            sorted.sort_unstable();
            assert_eq!(sorted.len(), DEVICES * PER_DEVICE, "nothing lost");
            sorted.dedup();
            assert_eq!(sorted.len(), DEVICES * PER_DEVICE, "nothing repeated");
            together += u64::from(device(&view[0]) == device(&view[1]));
            first += u64::from(device(&view[0]) == "d0");
        }
        within(together, (PER_DEVICE as f64 - 1.0) / (all - 1.0))
            && within(first, 1.0 / DEVICES as f64)
    }

    /// Behind [`Shuffled`] the analyzer sees a uniform permutation of all messages: it can
    /// regroup them by device no better than at random. A shuffler that permutes devices'
    /// bundles (keeping each device's messages together) is caught, as is no shuffle.
    #[test]
    fn stat_messages_cannot_be_regrouped_by_device() {
        let shuffled: Shuffler = |bundles, seed| {
            let mut aggregator = Shuffled(Bundles).aggregator(ChaCha20Rng::seed_from_u64(seed));
            for bundle in bundles {
                aggregator.absorb(bundle);
            }
            aggregator.release()
        };
        assert!(looks_uniform(shuffled));
        let bundles_shuffled: Shuffler = |mut bundles, seed| {
            uniform_shuffle(&mut bundles, &mut ChaCha20Rng::seed_from_u64(seed));
            bundles.into_iter().flat_map(|b| b.0).collect()
        };
        assert!(!looks_uniform(bundles_shuffled), "the bundle mutant passes");
        let unshuffled: Shuffler = |bundles, _| bundles.into_iter().flat_map(|b| b.0).collect();
        assert!(!looks_uniform(unshuffled), "no shuffle passes");
    }

    #[test]
    fn short_slices_are_left_alone_and_nothing_is_lost() {
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let mut empty: [u8; 0] = [];
        uniform_shuffle(&mut empty, &mut rng);
        let mut one = [7];
        uniform_shuffle(&mut one, &mut rng);
        assert_eq!(one, [7]);
        let mut many: Vec<u32> = (0..100).collect();
        uniform_shuffle(&mut many, &mut rng);
        assert_ne!(many, (0..100).collect::<Vec<_>>());
        many.sort_unstable();
        assert_eq!(many, (0..100).collect::<Vec<_>>());
    }
}
