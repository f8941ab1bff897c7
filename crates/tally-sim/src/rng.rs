//! Deterministic, independent random streams derived from one user seed.
//!
//! Every random draw of the simulator comes from a [`ChaCha12Rng`] keyed by
//! `ChaCha12Rng::seed_from_u64(seed)`, on the ChaCha stream (nonce)
//! `purpose << 48 | index`. The purpose keeps the draws of different jobs apart (a synthetic
//! population generated with seed 7 and a round run with seed 7 use unrelated streams), and the
//! index numbers the fixed-size chunks a parallel job is split into, so results do not depend
//! on the number of threads. ChaCha streams with different nonces are independent for all
//! practical purposes.
//!
//! ChaCha12 (the round count of rand's `StdRng`, a cryptographically secure generator) rather
//! than ChaCha20: the generator is the largest cost of Poisson sampling after the logarithm, and
//! twelve rounds make the simulator's sampling kernel measurably faster with the same
//! portability.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// What a stream is used for; the value is the top 16 bits of the ChaCha stream number.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
pub(crate) enum Purpose {
    /// Drawing each client's item in client-level TSV loading.
    ClientLevel = 1,
    /// Generating synthetic items.
    Synthetic = 2,
    /// Per-client coins of the S&T executor.
    PerClient = 3,
    /// Gap-skipping Poisson sampling of the S&T executor.
    GapSkipping = 4,
    /// Binomial thinning of the S&T executor.
    BinomialThinning = 5,
    /// The seeds of the rounds of a multi-round task.
    Round = 6,
    /// Generating synthetic values in [0, 1].
    Values = 7,
    /// The randomness of a histogram mechanism over a public domain.
    DomainMechanism = 8,
    /// Sampling clients while streaming an input.
    StreamSampling = 9,
    /// The row priorities of client-level TSV streaming.
    StreamClientLevel = 10,
    /// Exact binomial sampling of a counted population's rounds.
    CountedSampling = 11,
    /// Bit-sliced client coins of an in-memory column of values.
    SlicedCoins = 12,
    /// The devices' own coins in the round executor.
    DeviceCoins = 13,
    /// The coins of a chunk's aggregator in the round executor.
    ShardCoins = 14,
    /// Each client's choice of at most `k` items and its per-item coins.
    ItemsPerClient = 15,
    /// The noise or coins of a partition selection.
    PartitionSelection = 16,
    /// The public coins a simulated task draws when its spec names none.
    PublicCoins = 17,
}

/// The largest chunk index a purpose can hold.
const MAX_INDEX: u64 = (1 << 48) - 1;

/// The stream for chunk `index` of `purpose` under `seed`.
pub(crate) fn stream(seed: u64, purpose: Purpose, index: u64) -> ChaCha12Rng {
    debug_assert!(index <= MAX_INDEX);
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    rng.set_stream(((purpose as u64) << 48) | (index & MAX_INDEX));
    rng
}

/// The seed of round `round` of a multi-round task run with `seed`: rounds draw from
/// unrelated streams.
pub(crate) fn round_seed(seed: u64, round: usize) -> u64 {
    stream(seed, Purpose::Round, round as u64).next_u64()
}

/// An exactly uniform integer in `0..bound` (`bound ≥ 1`): Lemire's multiply-and-reject
/// method with the rejection step kept, so there is no bias at all.
pub(crate) fn uniform_below<R: Rng + ?Sized>(bound: u64, rng: &mut R) -> u64 {
    debug_assert!(bound >= 1);
    let mut m = u128::from(rng.next_u64()) * u128::from(bound);
    if (m as u64) < bound {
        // (2^64 − bound) mod bound: low words below it would favour some results.
        let threshold = bound.wrapping_neg() % bound;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(bound);
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_by_purpose_and_index() {
        let a = stream(7, Purpose::PerClient, 0).next_u64();
        let b = stream(7, Purpose::PerClient, 1).next_u64();
        let c = stream(7, Purpose::GapSkipping, 0).next_u64();
        let d = stream(8, Purpose::PerClient, 0).next_u64();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        assert_eq!(a, stream(7, Purpose::PerClient, 0).next_u64());
    }

    #[test]
    fn uniform_below_covers_the_range() {
        let mut rng = stream(1, Purpose::ClientLevel, 0);
        let mut seen = [0u32; 5];
        for _ in 0..5_000 {
            seen[uniform_below(5, &mut rng) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (850..1150).contains(&c)), "{seen:?}");
        assert_eq!(uniform_below(1, &mut rng), 0);
    }
}
