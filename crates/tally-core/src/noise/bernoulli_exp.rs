//! `Bernoulli(exp(−γ))` for a rational `γ ≥ 0` (CKS Algorithm 1).

use num_bigint::BigUint;
use rand::Rng;
use rand_distr::Distribution;

use super::{bernoulli_exp, check_rational};
use crate::Error;

/// A coin that comes up `true` with probability exactly `exp(−γ)`, for a rational
/// `γ = numerator/denominator ≥ 0`.
///
/// # Exactness
///
/// Canonne, Kamath and Steinke (2020), Algorithm 1: for `γ ∈ [0, 1]`, draw
/// `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first `A_k = 0` and return whether that
/// `k` is odd; for `γ > 1`, return `true` only if `⌊γ⌋` draws of `Bernoulli(exp(−1))` and one
/// of `Bernoulli(exp(−(γ − ⌊γ⌋)))` are all `true`. Every coin has a rational probability and is
/// decided by an exactly uniform integer, so the result is exact. The expected number of coins
/// is at most about `3` for `γ ≤ 1` and bounded for any `γ` (each `Bernoulli(exp(−1))` stops
/// the loop with probability `1 − 1/e`).
///
/// `γ = 0` always returns `true` without drawing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BernoulliExp {
    gamma: (u64, u64),
    num: BigUint,
    den: BigUint,
}

impl BernoulliExp {
    /// A coin with probability `exp(−γ)` of `true`, `γ = gamma.0 / gamma.1`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the denominator `gamma.1` is zero.
    pub fn new(gamma: (u64, u64)) -> Result<Self, Error> {
        let gamma = check_rational(
            "gamma",
            gamma,
            false,
            "a rational γ ≥ 0 with denominator ≥ 1",
        )?;
        Ok(Self {
            gamma,
            num: BigUint::from(gamma.0),
            den: BigUint::from(gamma.1),
        })
    }

    /// `γ` as `(numerator, denominator)`, as given.
    pub fn gamma(&self) -> (u64, u64) {
        self.gamma
    }
}

impl Distribution<bool> for BernoulliExp {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        bernoulli_exp(&self.num, &self.den, rng)
    }
}
