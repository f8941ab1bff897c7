//! The discrete Gaussian distribution with a rational variance parameter (CKS Algorithm 3).

use num_bigint::BigUint;
use rand::Rng;
use rand_distr::Distribution;

use super::discrete_laplace::sample_discrete_laplace;
use super::{bernoulli_exp, bernoulli_exp_u64, check_rational};
use crate::Error;

/// The discrete Gaussian on the integers with rational parameter `σ² > 0`:
/// `Pr[X = x] = e^(−x²/(2σ²)) / Σ_y e^(−y²/(2σ²))`.
///
/// # Exactness
///
/// Canonne, Kamath and Steinke (2020), Algorithm 3: with `t = ⌊σ⌋ + 1`, draw `Y` from the
/// discrete Laplace distribution with scale `t` ([`super::DiscreteLaplace`]) and accept it with
/// probability `exp(−(|Y| − σ²/t)²/(2σ²))`, a [`super::BernoulliExp`] coin whose rational
/// exponent `(|Y|·b·t − a)²/(2·a·b·t²)` (for `σ² = a/b`) is computed in big integers. The
/// expected number of rejections is below about `1.5` for every `σ` (CKS Proposition 5) and
/// the result is exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscreteGaussian {
    sigma2: (u64, u64),
    /// `t = ⌊σ⌋ + 1`.
    t: u64,
}

impl DiscreteGaussian {
    /// The discrete Gaussian with `σ² = sigma2.0 / sigma2.1`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless both parts are non-zero.
    pub fn new(sigma2: (u64, u64)) -> Result<Self, Error> {
        let sigma2 = check_rational(
            "sigma2",
            sigma2,
            true,
            "a rational σ² > 0 with denominator ≥ 1",
        )?;
        // ⌊σ⌋ = ⌊√⌊σ²⌋⌋ ≤ 2^32 − 1, so t ≤ 2^32 (well within DiscreteLaplace's bound).
        let t = (sigma2.0 / sigma2.1).isqrt() + 1;
        Ok(Self { sigma2, t })
    }

    /// `σ²` as `(numerator, denominator)`, as given.
    pub fn sigma2(&self) -> (u64, u64) {
        self.sigma2
    }
}

impl Distribution<i64> for DiscreteGaussian {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        let (a, b) = self.sigma2;
        loop {
            let y = sample_discrete_laplace(self.t, 1, rng);
            if accept(a, b, self.t, y.unsigned_abs(), rng) {
                return y;
            }
        }
    }
}

/// The acceptance coin of Algorithm 3 for `|Y| = y`: `Bernoulli(exp(−γ))` with
/// `γ = (|Y| − σ²/t)²/(2σ²) = (y·b·t − a)² / (2·a·b·t²)` for `σ² = a/b`.
///
/// When every quantity fits in `u64` (the common case) it is computed without allocating; the
/// big-integer path draws the same coins ([`bernoulli_exp`] takes the `u64` path itself when
/// its parameters fit).
fn accept<R: Rng + ?Sized>(a: u64, b: u64, t: u64, y: u64, rng: &mut R) -> bool {
    let small = || {
        let den = 2u64
            .checked_mul(a)?
            .checked_mul(b)?
            .checked_mul(t)?
            .checked_mul(t)?;
        let ybt = y.checked_mul(b)?.checked_mul(t)?;
        let diff = ybt.abs_diff(a);
        Some((diff.checked_mul(diff)?, den))
    };
    if let Some((num, den)) = small() {
        return bernoulli_exp_u64(num, den, rng);
    }
    let (a, b, t) = (BigUint::from(a), BigUint::from(b), BigUint::from(t));
    let den = BigUint::from(2u8) * &a * &b * &t * &t;
    let ybt = BigUint::from(y) * &b * &t;
    let diff = if ybt >= a { ybt - &a } else { &a - ybt };
    bernoulli_exp(&(&diff * &diff), &den, rng)
}
