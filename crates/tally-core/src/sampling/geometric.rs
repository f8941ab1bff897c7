//! An exact geometric sampler: the number of failures before the first success.

use num_bigint::BigUint;
use rand::Rng;
use rand_distr::Distribution;

use super::decompose;
use crate::Error;

/// `2^-64`.
const TWO_POW_M64: f64 = 1.0 / 18_446_744_073_709_551_616.0;
/// `2^64`.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
/// Relative error margin on the floating-point `x = ln U / ln(1 − p)`: `2^-46`.
///
/// The rounding errors it must cover add up to less than `3.5·2^-52` (see the type's docs), so
/// the margin is about 18 times larger than needed; it also absorbs the rounding of the margin
/// arithmetic itself (at most `2^-52` relative).
const REL: f64 = 1.0 / 70_368_744_177_664.0;
/// Absolute error margin on `ln a` from rounding the 64-bit integer `k` to an `f64`
/// (`≤ 2^-53·(1 + 2^-52)` is needed): `2^-49`.
const ABS_LN: f64 = 1.0 / 562_949_953_421_312.0;
/// Inflation of `1/|ln(1 − p)|` that absorbs its rounding (`≤ 2^-51` is needed): `1 + 2^-40`.
const INFLATE: f64 = 1.0 + 1.0 / 1_099_511_627_776.0;
/// Extra bits of working precision of the exact path beyond the bits of `U` drawn so far.
const GUARD_BITS: u64 = 128;

/// The number of failures before the first success in independent `Ber(p)` trials, drawn
/// exactly for the real number `p` the `f64` denotes: `Pr[G ≥ g] = (1 − p)^g` for every `g`.
///
/// The draw saturates: it returns `min(G, u64::MAX)`, so `u64::MAX` means "`G ≥ 2^64 − 1`" and
/// is returned only when the true value is at least that (possible only for `p` below about
/// `2^-60`). `p = 1` always gives `0` without drawing.
///
/// # Exactness
///
/// Let `q = 1 − p`, a dyadic rational like `p`, and let `U` be uniform on `[0, 1)`. Define
/// `G(U) = max{g : U < q^g}`; then `Pr[G ≥ g] = Pr[U < q^g] = q^g` exactly. Equivalently
/// `G = ⌈x⌉ − 1` with `x(U) = ln U / ln q`, a strictly decreasing function of `U`. The sampler
/// always returns `G(U)` for one uniform `U` whose binary expansion is drawn lazily, 64 bits at a
/// time; the first word `k` places `U` in `[a, b) = [k·2^-64, (k + 1)·2^-64)`.
///
/// *Fast path* (one logarithm). Compute `x̂ = fl(log(fl(k)·2^-64) · fl(1/log1p(−p)))` with the
/// `libm` crate (ports of the FreeBSD/musl `log` and `log1p`, documented errors below 1 ulp).
/// Rounding `k` costs at most `2^-53(1+2^-52)` absolutely in `ln a`; the two logarithms cost
/// at most `2^-52` relatively each; the reciprocal and the product `2^-53` each. So
/// `|x(a) − x̂| ≤ 3.5·2^-52·|x̂| + 2^-52.9/|ln q|`, and the margins used, `err = 2^-46·|x̂| +
/// 2^-49·(1 + 2^-40)/|fl(ln q)|`, are larger by a factor of 15 or more (which also covers the
/// rounding of the margin arithmetic). With `hi = x̂ + err ≥ x(a)`, `lo = x̂ − err ≤ x(a)`
/// and `g = ⌊hi⌋`: every `U ∈ [a, b)` has `x(U) ≤ x(a) < g + 1`, hence `G(U) ≤ g`; and
/// `x(U) > x(b) = x(a) − ln(1 + 1/k)/|ln q| ≥ lo − 1/(k·|ln q|)`, so if
/// `(lo − g)·k ≥ (1 + 2^-40)/|fl(ln q)|` (checked in floating point; `lo − g` is exact by
/// Sterbenz's lemma and the inflation covers the other roundings) then `x(U) > g`, hence
/// `G(U) ≥ g`. In that case every `U` in the interval has `G(U) = g`, and `g` is returned.
/// (`g = 0` needs only the first half, because `x(U) > 0` for every `U < 1`.) The same argument
/// with `g` replaced by `2^64` proves `G ≥ 2^64 − 1` and returns `u64::MAX`.
///
/// *Exact path* (probability about `10^-12` per draw for `p = 0.01`, always taken when the
/// floating-point margins cannot separate integers, e.g. `p < 10^-14`): decide `G ≥ g ⟺
/// U < q^g` with big integers. With `U ∈ [A·2^-L, (A+1)·2^-L)` known from the `L` bits drawn so
/// far, compute `q^g` by square-and-multiply at precision `P = L + 128` bits, rounding down for
/// a lower bound and up for an upper bound (all quantities are non-negative, so these are
/// rigorous bounds `lo ≤ q^g ≤ hi`). If `(A+1)·2^-L ≤ lo` then `U < q^g`; if `A·2^-L ≥ hi`
/// then `U ≥ q^g`; otherwise draw 64 more bits of `U` (and raise `P`) and repeat. When `P`
/// reaches the number of bits of `q^g`, `lo = hi = q^g` and the comparison is always decided
/// once `L` does too, so the loop ends (in practice after one or two rounds). `G` is then found
/// by binary search over `g` between floating-point hints that are themselves verified with the
/// exact test, falling back to `[0, 2^64)`.
///
/// Both paths return `G(U)` for the same `U`, so the output is distributed exactly as claimed.
/// Because the result never depends on rounding, the output for a seeded portable generator is
/// the same on every platform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactGeometric {
    p: f64,
    /// `p = p_mant·2^-p_shift` (`p_mant` odd), when `p < 1`.
    p_mant: u64,
    p_shift: u32,
    /// `1/fl(ln(1 − p))` (negative).
    inv_ln_q: f64,
    /// `2^-49·(1 + 2^-40)/|fl(ln(1 − p))|`: the absolute error margin on `x`.
    abs_err: f64,
    /// `(1 + 2^-40)/|fl(ln(1 − p))|`: bounds `1/|ln(1 − p)|` from above.
    inv_abs_ln_q_up: f64,
    /// Whether the floating-point constants are finite (false for subnormal `p`).
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
        let ln_q = libm::log1p(-p); // −∞ for p = 1
        let inv_ln_q = 1.0 / ln_q;
        let inv_abs_ln_q_up = inv_ln_q.abs() * INFLATE;
        let abs_err = ABS_LN * inv_abs_ln_q_up;
        let fast = p < 1.0 && inv_ln_q.is_finite() && abs_err.is_finite();
        Ok(Self {
            p,
            p_mant,
            p_shift,
            inv_ln_q,
            abs_err,
            inv_abs_ln_q_up,
            fast,
        })
    }

    /// The success probability.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Tries to decide `G` from the first 64 bits `k` of `U` with floating point.
    #[inline]
    fn fast_path(&self, k: u64) -> Option<u64> {
        if k == 0 || !self.fast {
            return None;
        }
        let kf = k as f64;
        let x = libm::log(kf * TWO_POW_M64) * self.inv_ln_q;
        let err = x * REL + self.abs_err;
        let hi = x + err;
        let lo = x - err;
        if hi < TWO_POW_64 {
            let g = hi as u64; // hi ≥ 0: truncation is the floor
            if g == 0 || (lo - g as f64) * kf >= self.inv_abs_ln_q_up {
                return Some(g);
            }
        } else if (lo - TWO_POW_64) * kf >= self.inv_abs_ln_q_up {
            return Some(u64::MAX);
        }
        None
    }

    /// Floating-point hints `(g_lo, g_hi)` with, barring floating-point surprises,
    /// `g_lo ≤ G < g_hi` for `U ∈ [k·2^-64, (k+1)·2^-64)`. The exact path verifies them.
    fn hints(&self, k: u64) -> (u64, Option<u64>) {
        if !self.fast {
            return (0, None);
        }
        let x_of = |u: f64| libm::log(u) * self.inv_ln_q;
        let g_hi = if k == 0 {
            None
        } else {
            let x = x_of(k as f64 * TWO_POW_M64);
            let hi = x + x * REL + self.abs_err;
            if hi < TWO_POW_64 / 2.0 {
                Some(hi as u64 + 1)
            } else {
                None
            }
        };
        let xb = x_of((k as f64 + 1.0) * TWO_POW_M64);
        let lo = xb - xb * REL - self.abs_err;
        let g_lo = if lo >= 2.0 && lo < TWO_POW_64 / 2.0 {
            lo as u64 - 1
        } else {
            0
        };
        (g_lo, g_hi)
    }

    /// The exact path: `G(U)` where `U`'s first word is `k` and further words come from `rng`.
    #[cold]
    #[inline(never)]
    fn slow_path<R: Rng + ?Sized>(&self, k: u64, rng: &mut R) -> u64 {
        let mut u = LazyUniform { words: vec![k] };
        let q = ExactQ::new(self.p_mant, self.p_shift);
        let (hint_lo, hint_hi) = self.hints(k);
        // Invariant: G ≥ lo, and G < hi.
        let mut lo = 0;
        if hint_lo > 0 && q.below_power(hint_lo, &mut u, rng) {
            lo = hint_lo;
        }
        let hi = match hint_hi {
            Some(h) if h > lo && !q.below_power(h, &mut u, rng) => h,
            _ => {
                if q.below_power(u64::MAX, &mut u, rng) {
                    return u64::MAX;
                }
                u64::MAX
            }
        };
        let mut hi = hi;
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
}

/// `q = 1 − p = num·2^-shift` exactly, for `p = mant·2^-shift < 1`.
struct ExactQ {
    num: BigUint,
    shift: u64,
}

impl ExactQ {
    fn new(p_mant: u64, p_shift: u32) -> Self {
        let shift = u64::from(p_shift);
        Self {
            num: (BigUint::from(1u32) << shift) - BigUint::from(p_mant),
            shift,
        }
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
        if g == 0 {
            return true; // U < 1
        }
        loop {
            let prec = u.bits() + GUARD_BITS;
            let (lo, hi) = self.power_bounds(g, prec);
            let a = u.numerator();
            // U < (A+1)·2^-L ≤ lo·2^-P ≤ q^g
            if ((&a + 1u32) << GUARD_BITS) <= lo {
                return true;
            }
            // U ≥ A·2^-L ≥ hi·2^-P ≥ q^g
            if (a << GUARD_BITS) >= hi {
                return false;
            }
            u.words.push(rng.next_u64());
        }
    }
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
        for p in [0.3, 0.01, 0.5, 0.9, 1e-6, 2f64.powi(-20), 0.999_999] {
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
                assert!(u.words.len() >= 2, "one word cannot decide at the boundary");
                let decided = compare(&u.numerator(), u.bits(), &num, bits);
                assert_eq!(decided, Some(below), "p = {p}, g = {g}");
            }
        }
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
                    assert!(&hi - &lo <= BigUint::from(4 * g + 4), "p={p} g={g} prec={prec}");
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
        let saturated = (0..2000).filter(|_| geo.sample(&mut rng) == u64::MAX).count();
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
