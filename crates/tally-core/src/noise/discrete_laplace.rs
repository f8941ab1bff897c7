//! The discrete Laplace distribution with a rational scale (CKS Algorithm 2).

use rand::Rng;
use rand_distr::Distribution;

use super::{bernoulli_exp_u64, check_rational};
use crate::Error;
use crate::sampling::{ExactBernoulli, uniform_below};

/// The largest accepted scale `t`, `2^40`.
const MAX_SCALE: u64 = 1 << 40;

/// The discrete Laplace distribution on the integers with rational scale `t > 0`:
/// `Pr[X = x] = (e^(1/t) − 1)/(e^(1/t) + 1) · e^(−|x|/t)`.
///
/// # Exactness
///
/// Canonne, Kamath and Steinke (2020), Algorithm 2, with `t = n/d`: draw `U` uniform in
/// `0..n` and accept it with probability `exp(−U/n)`; draw `V ~ Geometric(1 − e^−1)` by
/// counting `Bernoulli(exp(−1))` successes; `Y = ⌊(U + n·V)/d⌋`; draw a fair sign `B` and
/// reject `(B = 1, Y = 0)`, otherwise return `(1 − 2B)·Y`. All coins are exact
/// ([`super::BernoulliExp`]'s algorithm, [`ExactBernoulli`] for the sign and exactly uniform
/// integers). Each attempt succeeds with probability at least `(1 − e^−1)/2 > 0.31`, whatever
/// `t`, so the expected number of attempts is below `3.2`.
///
/// The magnitude is computed in 128 bits and saturates at `i64::MAX`, which for `t ≤ 2^40`
/// needs `V > 2^23` and so happens with probability below `exp(−2^23)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscreteLaplace {
    scale: (u64, u64),
}

impl DiscreteLaplace {
    /// The discrete Laplace distribution with scale `t = scale.0 / scale.1`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless both parts are non-zero and `t ≤ 2^40`.
    pub fn new(scale: (u64, u64)) -> Result<Self, Error> {
        const EXPECTED: &str = "a rational scale 0 < t ≤ 2^40 with denominator ≥ 1";
        let scale = check_rational("scale", scale, true, EXPECTED)?;
        if scale.0 / scale.1 > MAX_SCALE
            || (scale.0 / scale.1 == MAX_SCALE && scale.0 % scale.1 != 0)
        {
            return Err(Error::invalid(
                "scale",
                format!("{}/{}", scale.0, scale.1),
                EXPECTED,
            ));
        }
        Ok(Self { scale })
    }

    /// The scale `t` as `(numerator, denominator)`, as given.
    pub fn scale(&self) -> (u64, u64) {
        self.scale
    }
}

/// One draw of the discrete Laplace distribution with scale `n/d` (`n, d ≥ 1`).
pub(super) fn sample_discrete_laplace<R: Rng + ?Sized>(n: u64, d: u64, rng: &mut R) -> i64 {
    // 1/2 is a dyadic rational, so this coin is exactly fair (one word per draw).
    let fair = ExactBernoulli::new(0.5).expect("1/2 is a probability");
    loop {
        let u = uniform_below(n, rng);
        if !bernoulli_exp_u64(u, n, rng) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_u64(1, 1, rng) {
            v += 1;
        }
        let x = u128::from(u).saturating_add(u128::from(n).saturating_mul(v));
        let y = x / u128::from(d);
        let negative = fair.sample(rng);
        if negative && y == 0 {
            continue;
        }
        let y = i64::try_from(y).unwrap_or(i64::MAX);
        return if negative { -y } else { y };
    }
}

impl Distribution<i64> for DiscreteLaplace {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        sample_discrete_laplace(self.scale.0, self.scale.1, rng)
    }
}
