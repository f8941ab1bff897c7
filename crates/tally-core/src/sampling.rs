//! Exact samplers for privacy-critical randomness.
//!
//! Every sampler here draws from the distribution it names *exactly* for the `f64` parameter it
//! was given: a finite `f64` is a dyadic rational `M·2^-K`, so probabilities such as
//! `Pr[coin = 1] = p` or `Pr[G ≥ g] = (1 − p)^g` are rationals that can be compared exactly with
//! a lazily generated uniform variate. Floating-point arithmetic is used only as a fast path whose
//! answer is accepted when a rigorous error bound proves it right; otherwise an exact
//! big-integer path decides (DESIGN.md, "Privacy is part of the types").
//!
//! - [`ExactBernoulli`]: one coin with probability `p`, about one 64-bit word of randomness.
//! - [`ExactGeometric`]: failures before the first success, `Pr[G ≥ g] = (1 − p)^g`.
//! - [`PoissonSampler`]: the indices selected by independent `Ber(p)` coins, by gap skipping.
//! - [`exact_binomial`] / [`ExactBinomial`]: `Bin(n, p)` by counting geometric gaps or by
//!   bit-sliced exact coins, whichever is cheaper.
//! - [`PaperCohort`] and [`ExactPoissonCohort`]: the fixed-size cohort emulations of
//!   docs/algorithms.md §1.3.
//! - [`KeyedCoin`] and [`choose_row`]: a client's coin and its one row as keyed pseudorandom
//!   functions of a secret [`SamplingKey`], reproducible wherever the key is known.
//! - [`bound_items`] and [`choose_items`]: at most `k` distinct items of a client, uniformly
//!   (the second keyed).
//! - [`uniform_subset`]: a uniform `s`-subset of `0..n` (sampling without replacement), and
//!   [`uniform_subset_counts`]: how many of its indices fall in each of a list of ranges.
//!
//! All samplers but the keyed ones take the random number generator as a parameter
//! (`rng: &mut R`) and consume it through [`rand::Rng::next_u64`] only ([`uniform_subset`] and
//! [`uniform_subset_counts`] also [`rand::Rng::next_u32`], for bounds below `2^32`), so their
//! output for a seeded portable generator is stable across platforms.

mod bernoulli;
mod binomial;
mod cohort;
mod contribution;
mod geometric;
mod keyed;
mod poisson;
mod sliced_coins;

pub use bernoulli::ExactBernoulli;
pub use binomial::{BIT_SLICED_ABOVE, ExactBinomial, exact_binomial};
pub use cohort::{
    Cohort, CohortOutcome, ExactPoissonCohort, PaperCohort, uniform_subset, uniform_subset_counts,
};
pub use contribution::bound_items;
pub use geometric::ExactGeometric;
pub use keyed::{
    GENERATED_KEY_BYTES, KeyedCoin, MIN_KEY_HEX_DIGITS, SamplingKey, choose_items, choose_row,
    item_score, keyed_rate, row_score,
};
pub use poisson::{PoissonIndices, PoissonSampler};
pub use sliced_coins::SlicedCoins;

/// Splits a finite, non-negative `f64` into `(mantissa, exponent)` with `x = mantissa·2^exponent`
/// and `mantissa` odd (or zero when `x == 0`).
pub(crate) fn decompose(x: f64) -> (u64, i32) {
    debug_assert!(x.is_finite() && x >= 0.0);
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mant, exp) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    if mant == 0 {
        return (0, 0);
    }
    let tz = mant.trailing_zeros();
    (mant >> tz, exp + tz as i32)
}

/// Validates a probability: finite and in `[0, 1]`.
pub(crate) fn check_probability(name: &'static str, p: f64) -> Result<f64, crate::Error> {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(crate::Error::invalid(
            name,
            p,
            "a finite probability in [0, 1]",
        ))
    }
}

/// An exactly uniform integer in `0..bound` (`bound ≥ 1`), by Lemire's multiply-and-reject
/// method with the rejection step kept, so that there is no bias at all.
///
/// (`rand`'s `random_range` uses Canon's method by default, whose bias is tiny but not zero.)
#[inline]
pub(crate) fn uniform_below<R: rand::Rng + ?Sized>(bound: u64, rng: &mut R) -> u64 {
    debug_assert!(bound >= 1);
    let mut m = u128::from(rng.next_u64()) * u128::from(bound);
    if (m as u64) < bound {
        // Reject the low values of the low word that would make some results more likely.
        let threshold = bound.wrapping_neg() % bound; // (2^64 − bound) mod bound
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(bound);
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
pub(crate) mod testing {
    /// A generator that replays a fixed list of 64-bit words (and panics when it runs out).
    pub(crate) struct Script {
        words: Vec<u64>,
        next: usize,
    }

    impl Script {
        pub(crate) fn new(words: Vec<u64>) -> Self {
            Self { words, next: 0 }
        }
    }

    impl rand::TryRng for Script {
        type Error = core::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            Ok(self.try_next_u64()? as u32)
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            let w = self.words[self.next];
            self.next += 1;
            Ok(w)
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), Self::Error> {
            unreachable!("the samplers draw whole words only")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decompose_round_trips() {
        for x in [
            0.0,
            1.0,
            0.5,
            0.1,
            1.0 / 3.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-300,
            0.75,
        ] {
            let (m, e) = decompose(x);
            if x == 0.0 {
                assert_eq!(m, 0);
                continue;
            }
            assert_eq!(m % 2, 1, "{x}");
            // m < 2^53 and 2^e is representable as a product of two powers of two.
            let back = (m as f64) * 2f64.powi(e / 2) * 2f64.powi(e - e / 2);
            assert_eq!(back.to_bits(), x.to_bits(), "{x}");
        }
    }

    #[test]
    fn uniform_below_small_bound_is_uniform_enough() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[uniform_below(3, &mut rng) as usize] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        assert_eq!(uniform_below(1, &mut rng), 0);
    }
}
