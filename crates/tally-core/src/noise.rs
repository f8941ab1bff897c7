//! Exact integer noise samplers of Canonne, Kamath and Steinke (2020), "The Discrete Gaussian
//! for Differential Privacy", Algorithms 1–3.
//!
//! Every parameter is an exact rational `(numerator, denominator)` of `u64`s and every sampler
//! draws from the distribution it names *exactly*: the only primitive is a Bernoulli coin with
//! a rational probability `a/b`, decided by an exactly uniform integer below `b`
//! (`Pr[U < a] = a/b`). No floating-point arithmetic is involved.
//!
//! - [`BernoulliExp`]: `Bernoulli(exp(−γ))` for rational `γ ≥ 0` (Algorithm 1).
//! - [`DiscreteLaplace`]: `Pr[X = x] ∝ exp(−|x|/t)` on the integers (Algorithm 2).
//! - [`DiscreteGaussian`]: `Pr[X = x] ∝ exp(−x²/(2σ²))` on the integers (Algorithm 3).
//!
//! Like the samplers of [`crate::sampling`], they consume the generator through
//! [`rand::Rng::next_u64`] only, so their output for a seeded portable generator is stable
//! across platforms.

mod bernoulli_exp;
mod discrete_gaussian;
mod discrete_laplace;

pub use bernoulli_exp::BernoulliExp;
pub use discrete_gaussian::DiscreteGaussian;
pub use discrete_laplace::DiscreteLaplace;

use num_bigint::BigUint;
use rand::Rng;

use crate::sampling::uniform_below;

/// An exactly uniform integer in `0..bound` (`bound ≥ 1`), for a big-integer bound.
///
/// Bounds below `2^64` use [`uniform_below`]; larger ones draw `bits(bound)` random bits
/// (whole [`Rng::next_u64`] words, the top one masked) and reject values `≥ bound`, which
/// happens with probability below 1/2 per try.
fn uniform_below_big<R: Rng + ?Sized>(bound: &BigUint, rng: &mut R) -> BigUint {
    if let Ok(b) = u64::try_from(bound) {
        return BigUint::from(uniform_below(b, rng));
    }
    let bits = bound.bits();
    let words = bits.div_ceil(64) as usize;
    let top_bits = bits - 64 * (words as u64 - 1);
    let mask = if top_bits == 64 {
        u64::MAX
    } else {
        (1u64 << top_bits) - 1
    };
    loop {
        // Little-endian digits: the last word is the most significant.
        let mut digits: Vec<u64> = (0..words).map(|_| rng.next_u64()).collect();
        if let Some(top) = digits.last_mut() {
            *top &= mask;
        }
        let candidate = BigUint::from_slice(
            &digits
                .iter()
                .flat_map(|&d| [d as u32, (d >> 32) as u32])
                .collect::<Vec<u32>>(),
        );
        if &candidate < bound {
            return candidate;
        }
    }
}

/// A coin that is `true` with probability exactly `num/den` (`0 ≤ num ≤ den`, `den ≥ 1`).
fn bernoulli_ratio<R: Rng + ?Sized>(num: &BigUint, den: &BigUint, rng: &mut R) -> bool {
    if num >= den {
        return true;
    }
    if *num == BigUint::ZERO {
        return false;
    }
    &uniform_below_big(den, rng) < num
}

/// [`bernoulli_ratio`] for `u64` parts, without allocating; it draws exactly as
/// [`bernoulli_ratio`] does (one [`uniform_below`] when `0 < num < den`).
fn bernoulli_ratio_u64<R: Rng + ?Sized>(num: u64, den: u64, rng: &mut R) -> bool {
    num >= den || (num > 0 && uniform_below(den, rng) < num)
}

/// A coin that is `true` with probability exactly `1/k` (`k ≥ 1`).
fn bernoulli_reciprocal<R: Rng + ?Sized>(k: u64, rng: &mut R) -> bool {
    k == 1 || uniform_below(k, rng) == 0
}

/// `Bernoulli(exp(−num/den))` exactly, CKS Algorithm 1 (`den ≥ 1`).
///
/// For `γ = num/den ∈ [0, 1]`: draw `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first
/// `A_k = 0`, and return whether that `k` is odd (`Pr[k > j] = γ^j/j!`, so
/// `Pr[k odd] = Σ_j (−γ)^j/j! = e^−γ`). Each
/// `Bernoulli(γ/k)` is the conjunction of independent `Bernoulli(γ)` and `Bernoulli(1/k)`
/// coins, which keeps denominators small. For `γ > 1`: `⌊γ⌋` coins of `Bernoulli(e^−1)` and one
/// of `Bernoulli(e^−(γ−⌊γ⌋))`, all of which must be `true`.
///
/// Parameters that fit in `u64` take the allocation-free [`bernoulli_exp_u64`], which draws the
/// same coins from the same generator words.
fn bernoulli_exp<R: Rng + ?Sized>(num: &BigUint, den: &BigUint, rng: &mut R) -> bool {
    debug_assert!(*den > BigUint::ZERO);
    if let (Ok(num), Ok(den)) = (u64::try_from(num), u64::try_from(den)) {
        return bernoulli_exp_u64(num, den, rng);
    }
    if *num == BigUint::ZERO {
        return true;
    }
    let whole = num / den;
    let frac = num % den;
    let mut i = BigUint::ZERO;
    while i < whole {
        if !exp_unit_loop(|_| true, rng) {
            return false;
        }
        i += 1u8;
    }
    exp_unit_loop(|rng| bernoulli_ratio(&frac, den, rng), rng)
}

/// [`bernoulli_exp`] for `u64` parts (`den ≥ 1`), without allocating.
fn bernoulli_exp_u64<R: Rng + ?Sized>(num: u64, den: u64, rng: &mut R) -> bool {
    debug_assert!(den > 0);
    if num == 0 {
        return true;
    }
    for _ in 0..num / den {
        if !exp_unit_loop(|_| true, rng) {
            return false;
        }
    }
    let frac = num % den;
    exp_unit_loop(|rng| bernoulli_ratio_u64(frac, den, rng), rng)
}

/// The `γ ∈ [0, 1]` loop of Algorithm 1, given a `Bernoulli(γ)` coin: the parity of the first
/// `k` whose `Bernoulli(γ)·Bernoulli(1/k)` coin fails.
fn exp_unit_loop<R: Rng + ?Sized>(mut coin: impl FnMut(&mut R) -> bool, rng: &mut R) -> bool {
    let mut k: u64 = 1;
    while coin(rng) && bernoulli_reciprocal(k, rng) {
        k += 1;
    }
    k % 2 == 1
}

/// Checks a rational parameter `(num, den)`: `den ≥ 1`, and `num ≥ 1` when `positive`.
fn check_rational(
    name: &'static str,
    (num, den): (u64, u64),
    positive: bool,
    expected: &'static str,
) -> Result<(u64, u64), crate::Error> {
    if den == 0 || (positive && num == 0) {
        Err(crate::Error::invalid(
            name,
            format!("{num}/{den}"),
            expected,
        ))
    } else {
        Ok((num, den))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn big_uniform_is_below_bound_and_spread() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let bound = (BigUint::from(1u8) << 100u32) + BigUint::from(7u8);
        let half = &bound >> 1u32;
        let mut low = 0;
        for _ in 0..2_000 {
            let u = uniform_below_big(&bound, &mut rng);
            assert!(u < bound);
            if u < half {
                low += 1;
            }
        }
        assert!((850..1_150).contains(&low), "{low}");
    }

    #[test]
    fn ratio_coin_degenerate_cases() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let (zero, one, two) = (BigUint::ZERO, BigUint::from(1u8), BigUint::from(2u8));
        for _ in 0..50 {
            assert!(!bernoulli_ratio(&zero, &two, &mut rng));
            assert!(bernoulli_ratio(&two, &two, &mut rng));
            assert!(bernoulli_ratio(&one, &one, &mut rng));
            assert!(bernoulli_reciprocal(1, &mut rng));
        }
    }
}
