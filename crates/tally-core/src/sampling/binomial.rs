//! An exact binomial sampler.

use rand::Rng;
use rand_distr::Distribution;

use super::{ExactGeometric, SlicedCoins, check_probability};
use crate::Error;

/// Draws `Bin(n, p)` exactly for the real number `p` the `f64` denotes.
///
/// Two exact methods, chosen by cost:
///
/// - **Gap skipping**, when `p' = min(p, 1 − p)` is below [`BIT_SLICED_ABOVE`]: count the
///   successes among `n` independent `Ber(p')` coins by skipping over the failures with
///   [`ExactGeometric`]`(p')` gaps; for `p > 1/2` return `n − Bin(n, 1 − p)` (for
///   `p ∈ [1/2, 1]` the subtraction `1 − p` is exact in `f64`, by Sterbenz's lemma). Expected
///   time `O(n·p' + 1)`, one geometric draw (about 20 ns) per success of the rarer outcome.
/// - **Bit-sliced coins** ([`SlicedCoins`]) otherwise: 64 coins at a time, each the exact comparison `U < p` of
///   a lazily drawn uniform `U` with `p`'s binary expansion, done for 64 lanes at once with one
///   random word per bit position: at a 1 bit of `p`, lanes whose next bit of `U` is 0 are
///   decided `U < p`; at a 0 bit, lanes whose next bit is 1 are decided `U > p`; the others stay
///   undecided. Lanes still undecided when `p`'s expansion ends have `U ≥ p`. Each position
///   halves the undecided lanes on average, so a block of 64 coins costs about 8 words:
///   `O(n/8)` words in all, whatever `p`.
///
/// Both reproduce the law of `n` independent exact coins.
///
/// # Panics
///
/// If `p` is not a finite probability in `[0, 1]`; use [`ExactBinomial::new`] to validate.
pub fn exact_binomial<R: Rng + ?Sized>(n: u64, p: f64, rng: &mut R) -> u64 {
    match ExactBinomial::new(n, p) {
        Ok(b) => b.sample(rng),
        Err(e) => panic!("exact_binomial: {e}"),
    }
}

/// The rarer outcome's probability above which [`exact_binomial`] switches from gap skipping
/// to bit-sliced coins (where one geometric draw per rare success starts to cost more than
/// about 8 words per 64 coins).
pub const BIT_SLICED_ABOVE: f64 = 1.0 / 32.0;

/// `Bin(n, p)`, validated once and drawn exactly with [`exact_binomial`]'s method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactBinomial {
    n: u64,
    p: f64,
    /// Whether the gaps count failures (`p > 1/2`) rather than successes.
    complement: bool,
    /// Geometric gaps for `min(p, 1 − p)`, or `None` when that is 0.
    gap: Option<ExactGeometric>,
    /// The bit-sliced coins, when they are used.
    sliced: Option<SlicedCoins>,
}

impl ExactBinomial {
    /// `Bin(n, p)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p` is finite and in `[0, 1]`.
    pub fn new(n: u64, p: f64) -> Result<Self, Error> {
        let p = check_probability("p", p)?;
        let complement = p > 0.5;
        let rare = if complement { 1.0 - p } else { p }; // exact
        let sliced = (rare >= BIT_SLICED_ABOVE)
            .then(|| SlicedCoins::new(p))
            .transpose()?;
        let gap = if rare > 0.0 && sliced.is_none() {
            Some(ExactGeometric::new(rare)?)
        } else {
            None
        };
        Ok(Self {
            n,
            p,
            complement,
            gap,
            sliced,
        })
    }

    /// The number of trials.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The success probability.
    pub fn p(&self) -> f64 {
        self.p
    }
}

impl Distribution<u64> for ExactBinomial {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if let Some(coin) = &self.sliced {
            let mut count = 0u64;
            let mut left = self.n;
            while left > 0 {
                let lanes = left.min(64) as u32;
                count += u64::from(coin.flip(lanes, rng).count_ones());
                left -= u64::from(lanes);
            }
            return count;
        }
        let mut count = 0u64;
        if let Some(gap) = &self.gap {
            // `pos` is the first trial not decided yet.
            let mut pos = 0u64;
            while pos < self.n {
                match pos.checked_add(gap.sample(rng)) {
                    Some(i) if i < self.n => {
                        count += 1;
                        pos = i + 1;
                    }
                    _ => break,
                }
            }
        }
        if self.complement {
            self.n - count
        } else {
            count
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn rejects_invalid_p() {
        for p in [-0.1, 1.1, f64::NAN, f64::NEG_INFINITY] {
            assert!(
                matches!(
                    ExactBinomial::new(10, p),
                    Err(Error::InvalidParameter { name: "p", .. })
                ),
                "{p}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "invalid p")]
    fn function_panics_on_invalid_p() {
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        exact_binomial(10, 2.0, &mut rng);
    }

    #[test]
    fn degenerate_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        assert_eq!(exact_binomial(0, 0.3, &mut rng), 0);
        assert_eq!(exact_binomial(1000, 0.0, &mut rng), 0);
        assert_eq!(exact_binomial(1000, 1.0, &mut rng), 1000);
        assert_eq!(exact_binomial(u64::MAX, 1.0, &mut rng), u64::MAX);
        for _ in 0..100 {
            assert!(exact_binomial(7, 0.9, &mut rng) <= 7);
        }
        let b = ExactBinomial::new(5, 0.25).unwrap();
        assert_eq!((b.n(), b.p()), (5, 0.25));
    }
}
