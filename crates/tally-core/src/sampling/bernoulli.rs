//! An exact Bernoulli coin for an `f64` probability.

use rand::Rng;
use rand_distr::Distribution;

use super::{check_probability, decompose};
use crate::Error;

/// A coin that comes up `true` with probability exactly `p`, the real number the `f64` denotes.
///
/// # Exactness
///
/// A finite `f64` `p ∈ (0, 1)` is a dyadic rational `M·2^-K` (`M` odd, `K ≤ 1074`), so its
/// binary expansion `p = 0.p₁p₂…p_K` is finite. The sampler draws a uniform `U = 0.u₁u₂…` lazily,
/// 64 bits (one [`Rng::next_u64`] word) at a time, and returns `U < p` by comparing word `j` of
/// `U` with word `j` of `p`: the first word that differs decides; if `p`'s expansion is
/// exhausted while all words were equal, `U ≥ p` (the remaining words of `p` are zero). Hence
/// `Pr[true] = Pr[U < p] = p` exactly, using one word with probability `1 − 2^-64` and at most
/// `⌈K/64⌉ ≤ 17` words. No floating-point comparison is involved.
///
/// `p = 0` always returns `false` and `p = 1` always returns `true`, without drawing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactBernoulli {
    p: f64,
    /// `p = mant·2^-shift`, `mant` odd (only meaningful when `0 < p < 1`).
    mant: u64,
    shift: u32,
    /// The first 64 bits of `p`'s binary expansion.
    first_word: u64,
}

impl ExactBernoulli {
    /// A coin with probability `p` of `true`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p` is finite and in `[0, 1]`.
    pub fn new(p: f64) -> Result<Self, Error> {
        let p = check_probability("p", p)?;
        let (mant, shift) = if p > 0.0 && p < 1.0 {
            let (mant, exp) = decompose(p);
            (mant, exp.unsigned_abs())
        } else {
            (0, 0)
        };
        let mut coin = Self {
            p,
            mant,
            shift,
            first_word: 0,
        };
        coin.first_word = coin.word(0);
        Ok(coin)
    }

    /// The probability of `true`.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Word `j` (0-based) of the binary expansion of `p`: `⌊p·2^(64(j+1))⌋ mod 2^64`.
    pub(super) fn word(&self, j: u32) -> u64 {
        if self.mant == 0 {
            return 0;
        }
        // p·2^(64(j+1)) = mant·2^s with s = 64(j+1) − shift.
        let s = 64 * (i64::from(j) + 1) - i64::from(self.shift);
        if s >= 64 {
            0
        } else if s >= 0 {
            // mant < 2^53 and s < 64: fits in a u128; keep the low 64 bits.
            ((u128::from(self.mant) << s) & u128::from(u64::MAX)) as u64
        } else if s > -64 {
            self.mant >> (-s)
        } else {
            0
        }
    }

    /// The number of 64-bit words of `p`'s binary expansion that can be non-zero (0 for
    /// `p ∈ {0, 1}`).
    pub(super) fn words(&self) -> u32 {
        self.shift.div_ceil(64)
    }
}

impl Distribution<bool> for ExactBernoulli {
    #[inline]
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        if self.mant == 0 {
            // p = 0 or p = 1.
            return self.p > 0.0;
        }
        let u = rng.next_u64();
        if u != self.first_word {
            return u < self.first_word;
        }
        for j in 1..self.words() {
            let w = self.word(j);
            let u = rng.next_u64();
            if u != w {
                return u < w;
            }
        }
        // U agrees with every non-zero bit of p, and p's remaining bits are zero: U ≥ p.
        false
    }
}

#[cfg(test)]
mod tests {
    use num_bigint::BigUint;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;
    use crate::sampling::testing::Script;

    #[test]
    fn rejects_invalid_probabilities() {
        for p in [
            -0.1,
            1.0 + 1e-15,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(
                matches!(
                    ExactBernoulli::new(p),
                    Err(Error::InvalidParameter { name: "p", .. })
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn degenerate_probabilities() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let zero = ExactBernoulli::new(0.0).unwrap();
        let one = ExactBernoulli::new(1.0).unwrap();
        for _ in 0..100 {
            assert!(!zero.sample(&mut rng));
            assert!(one.sample(&mut rng));
        }
    }

    #[test]
    fn words_are_the_binary_expansion() {
        for p in [0.5, 0.1, 1.0 / 3.0, 1e-3, 1e-300, 5e-324, 0.999_999_999] {
            let coin = ExactBernoulli::new(p).unwrap();
            let (m, e) = decompose(p);
            let k = (-e) as u32;
            // p·2^(64·W) as an integer, W = number of words.
            let w = coin.words();
            let scaled = BigUint::from(m) << (64 * w - k);
            let digits = scaled.to_u64_digits(); // little endian
            for j in 0..w {
                let expect = digits
                    .get((w - 1 - j) as usize)
                    .copied()
                    .unwrap_or_default();
                assert_eq!(coin.word(j), expect, "p = {p}, word {j}");
            }
            assert_eq!(coin.word(w), 0);
            assert_eq!(coin.word(w + 5), 0);
        }
    }

    #[test]
    fn boundary_words_decide_exactly() {
        // p = 0.1 has a 55-bit mantissa expansion within one word: U = first word exactly
        // is not below p unless the following bits of p are non-zero.
        let coin = ExactBernoulli::new(0.1).unwrap();
        assert_eq!(coin.words(), 1);
        let w = coin.first_word;
        assert!(coin.sample(&mut Script::new(vec![w - 1])));
        assert!(!coin.sample(&mut Script::new(vec![w])));
        assert!(!coin.sample(&mut Script::new(vec![w + 1])));

        // p = 2^-70 + 2^-100: the first word is 0, the second decides.
        let p = 2f64.powi(-70) + 2f64.powi(-100);
        let coin = ExactBernoulli::new(p).unwrap();
        assert_eq!(coin.words(), 2);
        assert_eq!(coin.first_word, 0);
        let w1 = coin.word(1);
        assert_eq!(w1, (1u64 << 58) + (1u64 << 28));
        assert!(!coin.sample(&mut Script::new(vec![1])));
        assert!(coin.sample(&mut Script::new(vec![0, w1 - 1])));
        assert!(!coin.sample(&mut Script::new(vec![0, w1])));
    }
}
