//! Exact Bernoulli coins drawn 64 at a time, as the bits of a mask.

use rand::Rng;

use super::ExactBernoulli;
use crate::Error;

/// Independent exact `Ber(p)` coins for the real number `p` the `f64` denotes, drawn 64 at a
/// time as the bits of a mask.
///
/// Each lane `i` of a block compares a lazily drawn uniform `U_i = 0.u₁u₂…` with `p`'s binary
/// expansion `0.p₁p₂…`, for all 64 lanes at once with one random word per bit position (bit
/// `i` of the word `k` is lane `i`'s `u_k`): at a 1 bit of `p`, lanes whose `u_k` is 0 are
/// decided `U < p`; at a 0 bit, lanes whose `u_k` is 1 are decided `U > p`; the others stay
/// undecided. Lanes still undecided when `p`'s (finite) expansion ends have `U ≥ p`. So lane
/// `i` comes up `true` exactly when `U_i < p`, with probability exactly `p`, and the lanes'
/// coins are independent, since they read disjoint bits of the random words. Each position
/// halves the undecided lanes on average: a block costs about 8 words (`log₂ 64` plus the
/// leading zeros of `p`), whatever `p`, against one exact geometric gap per sampled lane for
/// gap skipping: the cheaper method when `min(p, 1 − p)` is at least
/// [`BIT_SLICED_ABOVE`](super::BIT_SLICED_ABOVE).
///
/// The generator is read through [`Rng::next_u64`] only, and only as far as the block's lanes
/// need (a block stops drawing once every lane is decided), so the coins for a seeded portable
/// generator are stable across platforms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlicedCoins {
    coin: ExactBernoulli,
}

impl SlicedCoins {
    /// Coins that come up `true` with probability `p`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p` is finite and in `[0, 1]`.
    pub fn new(p: f64) -> Result<Self, Error> {
        Ok(Self {
            coin: ExactBernoulli::new(p)?,
        })
    }

    /// The probability of `true`.
    pub fn p(&self) -> f64 {
        self.coin.p()
    }

    /// The coins of the low `lanes` lanes (`1..=64`) as a mask: bit `i` is lane `i`'s coin,
    /// the bits above `lanes` are 0. `p = 0` and `p = 1` draw nothing.
    ///
    /// # Panics
    ///
    /// If `lanes` is 0 or above 64.
    pub fn flip<R: Rng + ?Sized>(&self, lanes: u32, rng: &mut R) -> u64 {
        assert!((1..=64).contains(&lanes), "lanes {lanes} outside 1..=64");
        let mut undecided = u64::MAX >> (64 - lanes);
        if self.coin.words() == 0 {
            // p = 0 or p = 1.
            return if self.coin.p() > 0.0 { undecided } else { 0 };
        }
        let mut below = 0u64;
        'words: for j in 0..self.coin.words() {
            let word = self.coin.word(j);
            for bit in (0..64).rev() {
                let u = rng.next_u64();
                if word >> bit & 1 == 1 {
                    below |= undecided & !u;
                    undecided &= u;
                } else {
                    undecided &= !u;
                }
                if undecided == 0 {
                    break 'words;
                }
            }
        }
        below
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha12Rng;

    use super::*;
    use crate::sampling::testing::Script;

    /// Two-sided normal bound at α = 1e-7 per check: at most ten checks in a test keep the
    /// test's false-failure rate below 1e-6.
    const Z: f64 = 5.3267;

    fn within(count: u64, n: u64, p: f64) -> bool {
        let (mean, sd) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
        (count as f64 - mean).abs() <= Z * sd
    }

    #[test]
    fn the_lanes_compare_the_random_bits_with_the_expansion_of_p() {
        // p = 1/2 = 0.1₂: a lane is true exactly when its first bit is 0. The expansion's
        // zeros after its last 1 decide the lanes still open false; an all-ones word decides
        // them all at once, and the block draws no further.
        let u = 0x0123_4567_89ab_cdef;
        let ones = u64::MAX;
        let half = SlicedCoins::new(0.5).unwrap();
        assert_eq!(half.flip(64, &mut Script::new(vec![u, ones])), !u);
        // p = 3/4 = 0.11₂: true unless both bits are 1.
        let (u1, u2) = (0xff00_ff00_ff00_ff00, 0xf0f0_f0f0_f0f0_f0f0);
        let three_quarters = SlicedCoins::new(0.75).unwrap();
        assert_eq!(
            three_quarters.flip(64, &mut Script::new(vec![u1, u2, ones])),
            !(u1 & u2)
        );
        // p = 1/4 = 0.01₂: true when the first bit is 0 and the second 0 too; a 1 first bit
        // decides false at once.
        let quarter = SlicedCoins::new(0.25).unwrap();
        assert_eq!(
            quarter.flip(64, &mut Script::new(vec![u1, u2, ones])),
            !u1 & !u2
        );
        // Only the low lanes are drawn: the block stops once they are decided.
        assert_eq!(half.flip(8, &mut Script::new(vec![0xf0, ones])), 0x0f);
        assert_eq!(
            quarter.flip(4, &mut Script::new(vec![0b1100, 0b1010, ones])),
            0b0001
        );
    }

    #[test]
    fn certain_coins_draw_nothing() {
        let mut empty = Script::new(Vec::new());
        assert_eq!(SlicedCoins::new(0.0).unwrap().flip(64, &mut empty), 0);
        assert_eq!(
            SlicedCoins::new(1.0).unwrap().flip(64, &mut empty),
            u64::MAX
        );
        assert_eq!(SlicedCoins::new(1.0).unwrap().flip(5, &mut empty), 0b11111);
        assert!(SlicedCoins::new(1.5).is_err());
        assert!(SlicedCoins::new(f64::NAN).is_err());
        assert_eq!(
            SlicedCoins::new(0.3).unwrap().p().to_bits(),
            0.3f64.to_bits()
        );
    }

    #[test]
    #[should_panic(expected = "outside 1..=64")]
    fn no_block_has_no_lanes() {
        SlicedCoins::new(0.3)
            .unwrap()
            .flip(0, &mut ChaCha12Rng::seed_from_u64(0));
    }

    #[test]
    fn the_frequency_of_heads_is_p_at_alpha_1e_6() {
        // Three rates (below and above 1/2, one with a long expansion), and a mutant coin at
        // 1.1 p that the same bound rejects.
        let blocks = 20_000u64;
        for (seed, p) in [(1u64, 0.24), (2, 1.0 / 3.0), (3, 0.7)] {
            let coins = SlicedCoins::new(p).unwrap();
            let mut rng = ChaCha12Rng::seed_from_u64(seed);
            let heads: u64 = (0..blocks)
                .map(|_| u64::from(coins.flip(64, &mut rng).count_ones()))
                .sum();
            assert!(within(heads, 64 * blocks, p), "p {p}: {heads}");
            let mutant = SlicedCoins::new(p * 1.1).unwrap();
            let heads: u64 = (0..blocks)
                .map(|_| u64::from(mutant.flip(64, &mut rng).count_ones()))
                .sum();
            assert!(!within(heads, 64 * blocks, p), "mutant of p {p}: {heads}");
        }
    }

    #[test]
    fn every_lane_is_its_own_independent_coin() {
        // Each lane alone, and pairs of lanes (neighbours, and the two ends), have the
        // frequencies of independent Ber(p) coins: Pr[both] = p².
        let (p, blocks) = (0.24, 40_000u64);
        let coins = SlicedCoins::new(p).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(11);
        let masks: Vec<u64> = (0..blocks).map(|_| coins.flip(64, &mut rng)).collect();
        let lane = |i: u32| masks.iter().filter(|m| *m >> i & 1 == 1).count() as u64;
        for i in [0, 31, 63] {
            assert!(within(lane(i), blocks, p), "lane {i}");
        }
        for (i, j) in [(0, 1), (31, 32), (0, 63)] {
            let both = masks
                .iter()
                .filter(|m| *m >> i & 1 == 1 && *m >> j & 1 == 1)
                .count() as u64;
            assert!(within(both, blocks, p * p), "lanes {i}, {j}: {both}");
        }
        // Consecutive blocks are independent too: lane 0 of one block and of the next.
        let both = masks
            .windows(2)
            .filter(|pair| pair[0] & pair[1] & 1 == 1)
            .count() as u64;
        assert!(
            within(both, blocks - 1, p * p),
            "consecutive blocks: {both}"
        );
    }
}
