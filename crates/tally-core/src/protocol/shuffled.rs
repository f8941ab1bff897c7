//! The shuffler in front of a round's aggregator, for rounds whose guarantee trusts a
//! shuffler ([`TrustModel::Shuffle`]): the analyzer (the round's own aggregator) must see the
//! round's reports as a multiset, neither who sent each one nor in which order they arrived.
//!
//! [`Shuffled`] wraps any [`RoundProtocol`]: its aggregator holds the admitted reports, which
//! carry no identity (an executor hands over the report alone), and only when the round is
//! released permutes them with its own secret coins, by an exactly uniform permutation
//! ([`uniform_shuffle`]), and feeds them to the wrapped aggregator in that order, whose release
//! it returns.
//!
//! # Privacy
//!
//! A shuffle-model guarantee (e.g. OptPrefixTree's, amplified by shuffling from the local
//! randomizer's `ε₀`) holds against whoever sees the analyzer's output, on the premise that
//! the analyzer's input is a uniformly random permutation of the reports, independent of who
//! sent them and when. [`ShuffledAggregator`] makes that premise true of what the wrapped
//! aggregator receives: every one of the `k!` orders of `k` held reports has probability
//! exactly `1/k!`, from a stream of coins drawn from the round's secret stream and used for
//! nothing else. It is a boundary in code, inside the one server process, not a separate
//! party: the process that holds the reports before the shuffle is the one that runs the
//! analyzer (see `docs/federated/threat-model.md`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{RoundAggregator, RoundProtocol};
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
/// batch of the round's reports, at release.
#[derive(Clone, Debug)]
pub struct Shuffled<P>(pub P);

impl<P: RoundProtocol> RoundProtocol for Shuffled<P> {
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

/// Holds a round's reports without identity until release, then shuffles them into the
/// analyzer. Deliberately neither `Debug` nor serializable.
pub struct ShuffledAggregator<A: RoundAggregator> {
    held: Vec<A::Report>,
    coins: ChaCha20Rng,
    analyzer: A,
}

impl<A: RoundAggregator> RoundAggregator for ShuffledAggregator<A> {
    type Report = A::Report;
    type Release = A::Release;

    /// Holds the report; the analyzer sees nothing before release.
    fn absorb(&mut self, report: A::Report) {
        self.held.push(report);
    }

    /// Holds the other shard's reports too (it is shuffled with the rest at release).
    fn merge(&mut self, other: Self) {
        self.held.extend(other.held);
    }

    /// Permutes the held reports uniformly, feeds them to the analyzer in that order and
    /// returns its release.
    fn release(mut self) -> A::Release {
        uniform_shuffle(&mut self.held, &mut self.coins);
        for report in self.held {
            self.analyzer.absorb(report);
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
