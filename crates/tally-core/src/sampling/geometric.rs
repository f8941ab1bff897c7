//! An exact geometric sampler: the number of failures before the first success.

use num_bigint::BigUint;
use rand::Rng;
use rand_distr::Distribution;

use super::decompose;
use crate::Error;

/// `2^-53`.
const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0;
/// `2^-64` (used by the tests).
#[cfg(test)]
const TWO_POW_M64: f64 = 1.0 / 18_446_744_073_709_551_616.0;
/// `2^63`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
/// `2^64`.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
/// Relative error margin on the floating-point `x = ln U / ln(1 − p)`: `2^-46`.
///
/// The rounding errors it must cover add up to at most `3·2^-52` (see [`ExactGeometric`]), so
/// the margin is about 20 times larger than needed; it also absorbs the rounding of the margin
/// arithmetic itself (at most `2^-52` relative).
const REL: f64 = 1.0 / 70_368_744_177_664.0;
/// Inflation of `1/|fl(ln(1 − p))|` so that it bounds `1/|ln(1 − p)|` from above and absorbs
/// the roundings of the gap test (`≤ 2^-50` is needed): `1 + 2^-40`.
const INFLATE: f64 = 1.0 + 1.0 / 1_099_511_627_776.0;
/// Extra bits of working precision of the big-integer path beyond the bits of `U` drawn so far.
const GUARD_BITS: u64 = 128;

/// The number of failures before the first success in independent `Ber(p)` trials, drawn
/// exactly for the real number `p` the `f64` denotes: `Pr[G ≥ g] = (1 − p)^g` for every `g`.
///
/// The draw saturates: it returns `min(G, u64::MAX)`, so `u64::MAX` means "`G ≥ 2^64 − 1`" and
/// is returned only when the true value is at least that (which has non-negligible probability
/// only for `p` below about `2^-60`). `p = 1` always gives `0` without drawing.
///
/// Cost: one [`Rng::next_u64`], one logarithm and a few flops per draw (about 20 ns with
/// ChaCha20), except with probability about `2^-45·E[G]` (`≈ 3·10^-12` for `p = 0.01`), when
/// the exact path decides. That path becomes common only when `1/p` approaches `2^45` (about 3%
/// of draws for `p = 10^-12`, most draws below about `p = 10^-14`); it costs about a
/// microsecond (128-bit fixed point), rarely more (big integers).
///
/// # Exactness
///
/// Let `q = 1 − p`, a dyadic rational like `p`, and let `U` be uniform on `[0, 1)`. Define
/// `G(U) = max{g : U < q^g}`; then `Pr[G ≥ g] = Pr[U < q^g] = q^g` exactly. Equivalently
/// `G = ⌈x⌉ − 1` with `x(U) = ln U / ln q`, a strictly decreasing function of `U`. The sampler
/// always returns `G(U)` for one uniform `U` whose binary expansion is drawn lazily, 64 bits at
/// a time; the top 53 bits `j` of the first word place `U` in
/// `[a, b) = [j·2^-53, (j + 1)·2^-53)`, where `a` is exactly an `f64`.
///
/// *Fast path* (one logarithm). Compute `x̂ = fl(ln(a) · fl(1/log1p(−p)))`: `ln` is the
/// standard library's (the platform's `log`: glibc, musl, macOS and MSVC all document errors
/// below 1 ulp, and it is the fastest at hand), `log1p` the `libm` crate's (a pure-Rust port of
/// FreeBSD's, below 1 ulp), computed once. The two logarithms cost at most `2^-52` relative
/// error each, the reciprocal and the product `2^-53` each, so `|x(a) − x̂| ≤ 3·2^-52·|x̂|` (to
/// first order), and the margin `err = 2^-46·|x̂|` is about 20 times larger: any `log` within
/// 16 ulp keeps the argument valid. Because the result never depends on the rounding, the draws
/// are the same bits on every such platform (the pinned value-stability tests check this). With `hi = x̂ + err ≥ x(a)`, `lo = x̂ − err ≤ x(a)` and `g = ⌊hi⌋`, every
/// `U ∈ [a, b)` has `x(U) ≤ x(a) < g + 1`, hence `G(U) ≤ g`; and
/// `x(U) > x(b) = x(a) − ln(1 + 1/j)/|ln q| ≥ lo − 1/(j·|ln q|)`, so if
/// `(lo − g)·j ≥ (1 + 2^-40)/|fl(ln q)|` (checked in floating point: `lo − g` is exact by
/// Sterbenz's lemma when `lo ≥ g/2` and negative otherwise, `j` is exact, and the inflation
/// covers the other roundings) then
/// `x(U) > g`, hence `G(U) ≥ g`. Then every `U` in the interval has `G(U) = g`, and `g` is
/// returned. (`g = 0` needs only the first half, because `x(U) > 0` for every `U < 1`.) The
/// same argument with `g` replaced by `2^64` proves `G ≥ 2^64 − 1` and returns `u64::MAX`.
///
/// *Exact path* (when the test fails, when `j = 0`, or for subnormal `p`): the same bounds give
/// a window `G ∈ [⌈lo_b⌉ − 1, ⌊hi⌋]` (`lo_b` bounding `x(b)` from below, likewise), usually of
/// two or three values, or `[0, 2^64)` when they are not finite (the window rests on the same
/// error bound as the fast path; debug builds check its ends with the exact test where the bits drawn decide it, and
/// `u64::MAX` is tested when it is the upper end); `G` is found by binary search
/// over it with the exact test `G ≥ g ⟺ U < q^g`. That test knows `U ∈ [A·2^-L, (A+1)·2^-L)`
/// from the `L` bits drawn so far and computes `q^g` by square-and-multiply, rounding down for
/// a lower bound and up for an upper bound (all quantities are non-negative, so these are
/// rigorous bounds `lo ≤ q^g ≤ hi`): first in 128-bit fixed point, then with big integers at
/// precision `P = L + 128` bits. If `(A+1)·2^-L ≤ lo` then `U < q^g`; if `A·2^-L ≥ hi` then
/// `U ≥ q^g`; otherwise it draws 64 more bits of `U`, raises `P`, and repeats. Once `P`
/// reaches the number of bits of the dyadic `q^g`, `lo = hi = q^g` and the comparison is
/// decided as soon as `L` does too, so the loop ends (in practice after one or two rounds).
///
/// Both paths return `G(U)` for the same `U`, so the output is distributed exactly as claimed.
/// The one assumption is the documented accuracy (< 1 ulp) of the platform's `log` and `libm`'s
/// `log1p`, used with a 20-fold margin; the unit tests check the fast path against exact rational
/// arithmetic, including at interval ends where it must refuse.
/// Because the result never depends on how the floating-point test came out, the output for a
/// seeded portable generator is the same on every platform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactGeometric {
    p: f64,
    /// `p = p_mant·2^-p_shift` (`p_mant` odd).
    p_mant: u64,
    p_shift: u32,
    /// `1/fl(ln(1 − p))` (negative).
    inv_ln_q: f64,
    /// `(1 + 2^-40)/|fl(ln(1 − p))|`: bounds `1/|ln(1 − p)|` from above.
    inv_abs_ln_q_up: f64,
    /// Whether the floating-point constants are finite (false for subnormal `p`) and `p < 1`.
    fast: bool,
}

impl ExactGeometric {
    /// A geometric distribution with success probability `p`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p` is finite and in `(0, 1]`.
    pub fn new(p: f64) -> Result<Self, Error> {
        if !(p.is_finite() && p > 0.0 && p <= 1.0) {
            return Err(Error::invalid("p", p, "a finite probability in (0, 1]"));
        }
        let (p_mant, exp) = decompose(p);
        let p_shift = exp.unsigned_abs(); // p ≤ 1 ⇒ exp ≤ 0
        let inv_ln_q = 1.0 / libm::log1p(-p); // −0 for p = 1
        let inv_abs_ln_q_up = inv_ln_q.abs() * INFLATE;
        let fast = p < 1.0 && inv_abs_ln_q_up.is_finite();
        Ok(Self {
            p,
            p_mant,
            p_shift,
            inv_ln_q,
            inv_abs_ln_q_up,
            fast,
        })
    }

    /// The success probability.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Floating-point bounds on `x(U) = ln U / ln q` at `U = j·2^-53` (`j ≥ 1`): `(lo, hi)`
    /// with `lo ≤ x ≤ hi` (see the type's docs).
    #[inline]
    fn x_bounds(&self, j: u64) -> (f64, f64) {
        let x = (j as i64 as f64 * TWO_POW_M53).ln() * self.inv_ln_q;
        let err = x * REL;
        (x - err, x + err)
    }

    /// Tries to decide `G` from the top 53 bits of the first word `k` of `U`.
    #[inline]
    fn fast_path(&self, k: u64) -> Option<u64> {
        let j = k >> 11;
        if j == 0 || !self.fast {
            return None;
        }
        let (lo, hi) = self.x_bounds(j);
        let jf = j as i64 as f64; // exact: j < 2^53
        if hi < TWO_POW_63 {
            // hi ≥ 0: truncation is the floor. (For hi ≥ 2^53 the test below always fails.)
            let g = hi as i64;
            if (g == 0) | ((lo - g as f64) * jf >= self.inv_abs_ln_q_up) {
                return Some(g as u64);
            }
        } else if (lo - TWO_POW_64) * jf >= self.inv_abs_ln_q_up {
            return Some(u64::MAX);
        }
        None
    }

    /// A window `(g_lo, g_hi)` with `g_lo ≤ G < g_hi` for every `U` whose first word is `k`,
    /// from the floating-point bounds (`(0, u64::MAX)` when they are not usable: then
    /// `u64::MAX` itself must be tested).
    fn window(&self, k: u64) -> (u64, u64) {
        if !self.fast {
            return (0, u64::MAX);
        }
        let j = k >> 11;
        // G ≤ ⌈x(a)⌉ − 1 ≤ ⌊hi_a⌋.
        let g_hi = if j == 0 {
            u64::MAX
        } else {
            let (_, hi) = self.x_bounds(j);
            if hi < TWO_POW_64 / 2.0 {
                hi as u64 + 1
            } else {
                u64::MAX
            }
        };
        // G ≥ ⌈x(b)⌉ − 1 ≥ ⌈lo_b⌉ − 1, where b = (j + 1)·2^-53 ≤ 1.
        let g_lo = if j + 1 < 1 << 53 {
            let (lo, _) = self.x_bounds(j + 1);
            if (1.0..TWO_POW_64 / 2.0).contains(&lo) {
                lo.ceil() as u64 - 1
            } else {
                0
            }
        } else {
            0
        };
        (g_lo, g_hi.max(g_lo + 1))
    }

    /// The exact path: `G(U)` where `U`'s first word is `k` and further words come from `rng`.
    #[cold]
    #[inline(never)]
    fn slow_path<R: Rng + ?Sized>(&self, k: u64, rng: &mut R) -> u64 {
        let mut u = LazyUniform { words: vec![k] };
        let q = ExactQ::new(self.p_mant, self.p_shift);
        // Invariant: G ≥ lo and G < hi.
        let (mut lo, mut hi) = self.window(k);
        // (The checks draw no randomness, so debug and release builds consume the same words.)
        debug_assert!(q.try_below_power(lo, &u) != Some(false), "window too high");
        debug_assert!(
            hi == u64::MAX || q.try_below_power(hi, &u) != Some(true),
            "window too low"
        );
        if hi == u64::MAX && q.below_power(u64::MAX, &mut u, rng) {
            return u64::MAX;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if q.below_power(mid, &mut u, rng) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Distribution<u64> for ExactGeometric {
    #[inline]
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        if self.p_shift == 0 {
            // p = 1: q = 0, G = 0.
            return 0;
        }
        let k = rng.next_u64();
        match self.fast_path(k) {
            Some(g) => g,
            None => self.slow_path(k, rng),
        }
    }
}

/// A uniform `U ∈ [0, 1)` whose binary expansion is known up to `64·words.len()` bits:
/// `U ∈ [A·2^-L, (A+1)·2^-L)` with `A` the words read as a big-endian integer.
#[derive(Debug)]
struct LazyUniform {
    words: Vec<u64>,
}

impl LazyUniform {
    fn bits(&self) -> u64 {
        64 * self.words.len() as u64
    }

    fn numerator(&self) -> BigUint {
        let mut digits: Vec<u32> = Vec::with_capacity(2 * self.words.len());
        for w in self.words.iter().rev() {
            digits.push(*w as u32);
            digits.push((*w >> 32) as u32);
        }
        BigUint::new(digits)
    }

    /// `U ∈ [A·2^-128, (A+1)·2^-128)` from the first two words, or from the first word only
    /// (`A = k·2^64`, width `2^64·2^-128`): `(A, width)`.
    fn fixed_interval(&self) -> (u128, u128) {
        match self.words[..] {
            [k] => (u128::from(k) << 64, 1 << 64),
            [k, w, ..] => ((u128::from(k) << 64) | u128::from(w), 1),
            [] => unreachable!("U always has its first word"),
        }
    }
}

/// `q = 1 − p = num·2^-shift` exactly, for `p = mant·2^-shift < 1`.
struct ExactQ {
    num: BigUint,
    shift: u64,
    /// `(⌊q·2^128⌋, ⌈q·2^128⌉)` when the latter is below `2^128`.
    fixed: Option<(u128, u128)>,
}

impl ExactQ {
    fn new(p_mant: u64, p_shift: u32) -> Self {
        let shift = u64::from(p_shift);
        // p·2^128 = p_mant·2^(128 − shift); q·2^128 = 2^128 − p·2^128.
        let fixed = if shift <= 128 {
            let p_fixed = u128::from(p_mant) << (128 - shift); // < 2^128 as p < 1
            let q_fixed = p_fixed.wrapping_neg();
            Some((q_fixed, q_fixed))
        } else if shift - 128 < 64 {
            let floor = u128::from(p_mant >> (shift - 128));
            let exact = (floor << (shift - 128)) == u128::from(p_mant);
            let ceil = if exact { floor } else { floor + 1 };
            // ⌊q·2^128⌋ = 2^128 − ⌈p·2^128⌉ and ⌈q·2^128⌉ = 2^128 − ⌊p·2^128⌋.
            (floor > 0).then(|| (ceil.wrapping_neg(), floor.wrapping_neg()))
        } else {
            None
        };
        Self {
            num: (BigUint::from(1u32) << shift) - BigUint::from(p_mant),
            shift,
            fixed,
        }
    }

    /// Rigorous bounds `lo·2^-128 ≤ q^g ≤ hi·2^-128` in fixed point, for `g ≥ 1`.
    fn fixed_power_bounds(&self, g: u64) -> Option<(u128, u128)> {
        let (q_lo, q_hi) = self.fixed?;
        let (mut lo, mut hi) = (q_lo, q_hi);
        // Left-to-right binary exponentiation from the top bit of g.
        for bit in (0..u64::BITS - 1 - g.leading_zeros()).rev() {
            lo = mul_floor(lo, lo);
            hi = mul_ceil(hi, hi);
            if (g >> bit) & 1 == 1 {
                lo = mul_floor(lo, q_lo);
                hi = mul_ceil(hi, q_hi);
            }
        }
        Some((lo, hi))
    }

    /// Rigorous bounds `lo·2^-prec ≤ q^g ≤ hi·2^-prec`.
    fn power_bounds(&self, g: u64, prec: u64) -> (BigUint, BigUint) {
        let (q_lo, q_hi) = if prec >= self.shift {
            let v = &self.num << (prec - self.shift);
            (v.clone(), v)
        } else {
            let lo = &self.num >> (self.shift - prec);
            let exact = (&lo << (self.shift - prec)) == self.num;
            let hi = if exact { lo.clone() } else { &lo + 1u32 };
            (lo, hi)
        };
        let one = BigUint::from(1u32) << prec;
        let mut lo = one.clone();
        let mut hi = one;
        // Left-to-right binary exponentiation, rounding lo down and hi up at every step.
        for bit in (0..u64::BITS - g.leading_zeros()).rev() {
            lo = (&lo * &lo) >> prec;
            hi = shift_ceil(&hi * &hi, prec);
            if (g >> bit) & 1 == 1 {
                lo = (&lo * &q_lo) >> prec;
                hi = shift_ceil(&hi * &q_hi, prec);
            }
        }
        (lo, hi)
    }

    /// Decides `U < q^g` exactly, drawing more bits of `U` from `rng` while undecided.
    fn below_power<R: Rng + ?Sized>(&self, g: u64, u: &mut LazyUniform, rng: &mut R) -> bool {
        loop {
            if let Some(below) = self.try_below_power(g, u) {
                return below;
            }
            u.words.push(rng.next_u64());
        }
    }

    /// Decides `U < q^g` from the bits of `U` drawn so far, if they suffice.
    fn try_below_power(&self, g: u64, u: &LazyUniform) -> Option<bool> {
        if g == 0 {
            return Some(true); // U < 1
        }
        // First in 128-bit fixed point, with the bits of U drawn so far (up to 128).
        if let Some((lo, hi)) = self.fixed_power_bounds(g) {
            let (a, width) = u.fixed_interval();
            // U < A + width ≤ lo ≤ q^g (in units of 2^-128).
            if a.checked_add(width).is_some_and(|end| end <= lo) {
                return Some(true);
            }
            // U ≥ A ≥ hi ≥ q^g.
            if a >= hi {
                return Some(false);
            }
            if width > 1 {
                return None; // draw the second word first
            }
        }
        // Then with big integers at precision P = L + 128.
        let prec = u.bits() + GUARD_BITS;
        let (lo, hi) = self.power_bounds(g, prec);
        let a = u.numerator();
        // U < (A+1)·2^-L ≤ lo·2^-P ≤ q^g
        if ((&a + 1u32) << GUARD_BITS) <= lo {
            return Some(true);
        }
        // U ≥ A·2^-L ≥ hi·2^-P ≥ q^g
        if (a << GUARD_BITS) >= hi {
            return Some(false);
        }
        None
    }
}

/// The 256-bit product `a·b` as `(high, low)` 128-bit halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & MASK);
    let (b1, b0) = (b >> 64, b & MASK);
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 64) + (p01 & MASK) + (p10 & MASK); // < 3·2^64
    let low = (p00 & MASK) | (mid << 64);
    let high = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (high, low)
}

/// `⌊a·b / 2^128⌋`.
fn mul_floor(a: u128, b: u128) -> u128 {
    mul_wide(a, b).0
}

/// `⌈a·b / 2^128⌉` (below `2^128` when `a, b < 2^128`).
fn mul_ceil(a: u128, b: u128) -> u128 {
    let (high, low) = mul_wide(a, b);
    high + u128::from(low != 0)
}

/// `⌈x / 2^s⌉`.
fn shift_ceil(x: BigUint, s: u64) -> BigUint {
    let floor = &x >> s;
    if (&floor << s) == x {
        floor
    } else {
        floor + 1u32
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;
    use crate::sampling::testing::Script;

    /// `q^g` as an exact fraction `num / 2^(shift·g)`.
    fn exact_power(p: f64, g: u64) -> (BigUint, u64) {
        let (m, e) = decompose(p);
        let q = ExactQ::new(m, e.unsigned_abs());
        (q.num.pow(g as u32), q.shift * g)
    }

    /// Compares the interval `[A·2^-L, (A+1)·2^-L)` of `U` with `num·2^-bits` exactly:
    /// `Some(true)` if `U < num·2^-bits`, `Some(false)` if `U ≥ num·2^-bits`, `None` if the
    /// interval straddles it.
    fn compare(a: &BigUint, l: u64, num: &BigUint, bits: u64) -> Option<bool> {
        let v = num << l;
        if ((a + 1u32) << bits) <= v {
            Some(true)
        } else if (a << bits) >= v {
            Some(false)
        } else {
            None
        }
    }

    /// `G(U)` by exact rational arithmetic for `U` known to the bits `words`, or `None` if
    /// those bits do not decide it. Uses a floating-point guess only to pick where to start.
    fn exact_reference(p: f64, words: &[u64]) -> Option<u64> {
        let u = LazyUniform {
            words: words.to_vec(),
        };
        let (a, l) = (u.numerator(), u.bits());
        let guess = (libm::log((words[0] as f64 + 0.5) * TWO_POW_M64) / libm::log1p(-p)) as u64;
        let mut g = guess.saturating_sub(3);
        let (m, e) = decompose(p);
        let q = ExactQ::new(m, e.unsigned_abs());
        let (mut num, mut bits) = exact_power(p, g);
        assert_eq!(compare(&a, l, &num, bits), Some(true), "guess too high");
        loop {
            // Here U < q^g; is U < q^(g+1)?
            num *= &q.num;
            bits += q.shift;
            match compare(&a, l, &num, bits)? {
                true => g += 1,
                false => return Some(g),
            }
        }
    }

    #[test]
    fn rejects_invalid_p() {
        for p in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY, -0.0] {
            assert!(
                matches!(
                    ExactGeometric::new(p),
                    Err(Error::InvalidParameter { name: "p", .. })
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn p_one_is_always_zero() {
        let g = ExactGeometric::new(1.0).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        assert!((0..1000).all(|_| g.sample(&mut rng) == 0));
    }

    #[test]
    fn fast_path_agrees_with_exact_reference() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for p in [0.3, 0.01, 0.5, 0.9, 1.0 / 3.0, 0.05, 0.999_999] {
            let geo = ExactGeometric::new(p).unwrap();
            for _ in 0..300 {
                let w = [rng.next_u64(), rng.next_u64()];
                let Some(expect) = exact_reference(p, &w) else {
                    continue;
                };
                if let Some(g) = geo.fast_path(w[0]) {
                    assert_eq!(g, expect, "p = {p}, k = {}", w[0]);
                }
                let got = geo.sample(&mut Script::new(w.to_vec()));
                assert_eq!(got, expect, "p = {p}, words = {w:?}");
            }
        }
    }

    /// The 64-bit words (big-endian) of a `64·n`-bit integer.
    fn to_words(x: &BigUint, n: usize) -> Vec<u64> {
        let digits = x.to_u64_digits();
        assert!(digits.len() <= n);
        (0..n)
            .rev()
            .map(|i| digits.get(i).copied().unwrap_or_default())
            .collect()
    }

    #[test]
    fn boundary_u_forces_the_exact_path() {
        // For each (p, g), take U within 2^-192 of q^g. The first word k of q^g puts q^g inside
        // [k, k+1)·2^-64, where G is g − 1 on one part and ≥ g on the other, so the fast path
        // must refuse and the exact path must decide with the later words.
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for (p, g) in [
            (0.3, 1u64),
            (0.3, 7),
            (0.01, 1),
            (0.01, 100),
            (0.01, 457),
            (1.0 / 3.0, 20),
            (2f64.powi(-20), 100_000),
            (0.5, 30),
            (0.999, 2),
            (1e-9, 3),
        ] {
            let geo = ExactGeometric::new(p).unwrap();
            let (num, bits) = exact_power(p, g);
            // t = ⌊q^g·2^192⌋.
            let t = if bits >= 192 {
                &num >> (bits - 192)
            } else {
                &num << (192 - bits)
            };
            let k = to_words(&t, 3)[0];
            // Whether q^g is a multiple of 2^-64 (then the first word alone decides).
            let on_grid = bits <= 64 || (&num >> (bits - 64)) << (bits - 64) == num;
            assert_eq!(geo.fast_path(k), None, "p = {p}, g = {g}");
            // U ∈ [t − 1, t)·2^-192 lies below q^g (G = g, as q^(g+1) is far below), and
            // U ∈ [t + 1, t + 2)·2^-192 lies above it (G = g − 1).
            for (a, expect) in [(&t - 1u32, g), (&t + 1u32, g - 1)] {
                let mut words = to_words(&a, 3);
                assert_eq!(Some(expect), exact_reference(p, &words), "p = {p}, g = {g}");
                words.push(rng.next_u64()); // a spare word the sampler should not need
                let got = geo.sample(&mut Script::new(words.clone()));
                assert_eq!(got, expect, "p = {p}, g = {g}, words = {words:?}");
            }
            // The decision routine on its own, against random continuations of k.
            let q = ExactQ::new(decompose(p).0, decompose(p).1.unsigned_abs());
            for _ in 0..20 {
                let mut u = LazyUniform { words: vec![k] };
                let more: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
                let below = q.below_power(g, &mut u, &mut Script::new(more));
                if !on_grid {
                    assert!(u.words.len() >= 2, "one word cannot decide at the boundary");
                }
                let decided = compare(&u.numerator(), u.bits(), &num, bits);
                assert_eq!(decided, Some(below), "p = {p}, g = {g}");
            }
        }
    }

    #[test]
    fn wide_multiplication_matches_big_integers() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        for _ in 0..1000 {
            let a = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
            let b = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64() >> 7);
            let (high, low) = mul_wide(a, b);
            let exact = BigUint::from(a) * BigUint::from(b);
            assert_eq!((BigUint::from(high) << 128u32) + BigUint::from(low), exact);
        }
        assert_eq!(mul_ceil(u128::MAX, u128::MAX), u128::MAX);
        assert_eq!(mul_floor(u128::MAX, u128::MAX), u128::MAX - 1);
    }

    #[test]
    fn fixed_point_bounds_bracket_the_exact_power() {
        for p in [
            0.3,
            0.01,
            1e-9,
            0.75,
            2f64.powi(-100) * 3.0,
            2f64.powi(-120) * (1.0 + 2f64.powi(-50)),
        ] {
            let (m, e) = decompose(p);
            let q = ExactQ::new(m, e.unsigned_abs());
            let (q_lo, q_hi) = q.fixed.expect("p ≥ 2^-128 has a fixed-point q");
            assert_eq!(q_lo == q_hi, e.unsigned_abs() <= 128, "p = {p}");
            for g in [1u64, 2, 3, 17, 1000] {
                let (num, bits) = exact_power(p, g);
                let (lo, hi) = q.fixed_power_bounds(g).unwrap();
                assert!(
                    (BigUint::from(lo) << bits) <= (&num << 128u32),
                    "p = {p}, g = {g}"
                );
                assert!(
                    (BigUint::from(hi) << bits) >= (&num << 128u32),
                    "p = {p}, g = {g}"
                );
                assert!(hi - lo <= u128::from(4 * g + 4), "p = {p}, g = {g}");
            }
        }
        assert!(ExactQ::new(1, 130).fixed.is_none()); // p = 2^-130
    }

    #[test]
    fn power_bounds_bracket_the_exact_power() {
        for p in [0.3, 0.01, 1e-9, 0.75] {
            let (m, e) = decompose(p);
            let q = ExactQ::new(m, e.unsigned_abs());
            for g in [1u64, 2, 3, 17, 1000] {
                let (num, bits) = exact_power(p, g);
                for prec in [64u64, 130, 400] {
                    let (lo, hi) = q.power_bounds(g, prec);
                    assert!((&lo << bits) <= (&num << prec), "p = {p}, g = {g}");
                    assert!((&hi << bits) >= (&num << prec), "p = {p}, g = {g}");
                    assert!(
                        &hi - &lo <= BigUint::from(4 * g + 4),
                        "p={p} g={g} prec={prec}"
                    );
                }
            }
        }
    }

    #[test]
    fn tiny_and_subnormal_p_saturate_or_stay_exact() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        // p = 1e-12: values around 1e12, still mostly on the fast path.
        let geo = ExactGeometric::new(1e-12).unwrap();
        let mut fast = 0;
        for _ in 0..1000 {
            let k = rng.next_u64();
            if geo.fast_path(k).is_some() {
                fast += 1;
            }
            let g = geo.sample(&mut rng);
            assert!(g < 100_000_000_000_000, "{g}");
        }
        assert!(fast > 900, "{fast}");
        // p = 2^-80: G ≈ 2^80·Exp(1) exceeds u64::MAX except with probability ≈ 2^-16.
        let geo = ExactGeometric::new(2f64.powi(-80)).unwrap();
        assert!((0..50).all(|_| geo.sample(&mut rng) == u64::MAX));
        // Subnormal p: no fast path at all, and the exact path saturates.
        let geo = ExactGeometric::new(5e-324).unwrap();
        assert!(!geo.fast);
        assert!((0..5).all(|_| geo.sample(&mut rng) == u64::MAX));
        // p = 2^-62: G ≥ 2^64 − 1 with probability (1 − 2^-62)^(2^64 − 1) ≈ e^-4.
        let geo = ExactGeometric::new(2f64.powi(-62)).unwrap();
        let saturated = (0..2000)
            .filter(|_| geo.sample(&mut rng) == u64::MAX)
            .count();
        assert!((10..80).contains(&saturated), "{saturated}");
    }

    #[test]
    fn k_zero_goes_to_the_exact_path() {
        let geo = ExactGeometric::new(0.3).unwrap();
        assert_eq!(geo.fast_path(0), None);
        // U ∈ [2^-128·w, …): ln U ≈ −88.7 + …; G = ⌈ln U / ln 0.7⌉ − 1.
        let words = vec![0u64, 1u64 << 63, 0];
        let got = geo.sample(&mut Script::new(words.clone()));
        assert_eq!(Some(got), exact_reference(0.3, &words[..2]));
    }
}
