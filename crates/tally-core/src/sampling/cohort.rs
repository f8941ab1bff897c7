//! Fixed-size cohorts that emulate Poisson sampling (docs/algorithms.md §1.3).
//!
//! A real round cannot ask all `n` clients to flip a coin: the server contacts a cohort of a
//! size fixed in advance, and the clients of the cohort either participate or abstain (an
//! abstaining client votes for a unique element, so the aggregator cannot tell the two apart).
//! Two emulations are provided:
//!
//! - [`PaperCohort`], the paper's cheap scheme (S1 §3.2): contact `s = ⌈m + c√m⌉` clients and
//!   let each participate with probability `≤ m/s`. Its sample size is `Bin(s, m/s)`: only
//!   *approximately* a Poisson sample of the population.
//! - [`ExactPoissonCohort`], the engineering note of §1.3: draw the Poisson sample size
//!   `S ~ Bin(n, p)` secretly and let exactly `S` of `s_max` contacted clients participate. Its
//!   participating set is *exactly* a Poisson(`p`) sample, except on a failure event of
//!   probability at most [`ExactPoissonCohort::failure_probability_bound`].
//!
//! Uniform subsets are drawn with Floyd's algorithm on an exactly uniform integer sampler
//! (multiply-and-reject without the bias of `rand`'s default `random_range`), and returned
//! sorted; [`uniform_subset`] exposes that sampler on its own (TrieHH's fixed-size sampling
//! without replacement), and [`uniform_subset_counts`] counts its draw per range of indices.

use std::fmt;

use num_bigint::BigUint;
use rand::Rng;
use rand_distr::Distribution;
use rustc_hash::FxHashSet;

use super::{ExactBernoulli, ExactBinomial, decompose, uniform_below};
use crate::Error;

/// The clients of one round: who was contacted and who of them participates.
///
/// Both lists are sorted indices into `0..n`, and `participating ⊆ contacted`; the contacted
/// clients that do not participate abstain. Which clients participate, and how many, is secret
/// to the secure aggregator, so the `Debug` output shows only the number of contacted clients.
#[derive(Clone, PartialEq, Eq)]
pub struct Cohort {
    contacted: Vec<u64>,
    participating: Vec<u64>,
}

impl Cohort {
    /// The contacted clients, sorted.
    pub fn contacted(&self) -> &[u64] {
        &self.contacted
    }

    /// The participating clients, sorted (a subset of [`Cohort::contacted`]).
    pub fn participating(&self) -> &[u64] {
        &self.participating
    }

    /// Whether client `i` participates.
    pub fn is_participating(&self, i: u64) -> bool {
        self.participating.binary_search(&i).is_ok()
    }

    /// The contacted clients that abstain, sorted.
    pub fn abstaining(&self) -> impl Iterator<Item = u64> + '_ {
        self.contacted
            .iter()
            .copied()
            .filter(|&i| !self.is_participating(i))
    }

    /// `(contacted, participating)`.
    pub fn into_parts(self) -> (Vec<u64>, Vec<u64>) {
        (self.contacted, self.participating)
    }
}

impl fmt::Debug for Cohort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cohort")
            .field("contacted", &self.contacted.len())
            .finish_non_exhaustive()
    }
}

/// The outcome of [`ExactPoissonCohort::draw`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum CohortOutcome {
    /// The Poisson sample fitted in the contacted cohort.
    Ready(Cohort),
    /// The secret Poisson sample size exceeded the cohort size: the round must not run.
    /// This happens with probability at most
    /// [`ExactPoissonCohort::failure_probability_bound`].
    Failed,
}

impl CohortOutcome {
    /// The cohort, unless the round failed.
    pub fn cohort(self) -> Option<Cohort> {
        match self {
            Self::Ready(c) => Some(c),
            Self::Failed => None,
        }
    }

    /// Whether the round failed.
    pub fn is_failed(&self) -> bool {
        matches!(self, Self::Failed)
    }
}

/// The paper's fixed-size cohort (S1 §3.2): contact `s = min(n, ⌈m + c√m⌉)` distinct clients
/// chosen uniformly, and let each participate independently with probability `r`, the largest
/// `f64` not above `m/s` (rounded down, never up), via [`ExactBernoulli`].
///
/// Given its size, the participating set is a uniform subset of the population, but its size is
/// `Bin(s, r)` rather than the `Bin(n, m/n)` of Poisson sampling (for instance, it never exceeds
/// `s`). It is therefore only approximately a Poisson sample: the S&T privacy theorem, which
/// assumes Poisson sampling, does not apply to it verbatim. Use [`ExactPoissonCohort`] when the
/// guarantee must hold exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaperCohort {
    n: u64,
    expected_size: f64,
    c: f64,
    contact_size: u64,
    coin: ExactBernoulli,
}

impl PaperCohort {
    /// A cohort of expected size `m = expected_size` out of `n` clients, contacting
    /// `⌈m + c√m⌉` of them (at most `n`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `n = 0`, `m` is not finite or not in `(0, n]`, `c` is not
    /// finite and positive, or the cohort would not fit in memory.
    pub fn new(n: u64, expected_size: f64, c: f64) -> Result<Self, Error> {
        check_n(n)?;
        let m = expected_size;
        if !(m.is_finite() && m > 0.0 && m.ceil() <= n as f64 && (m.ceil() as u64) <= n) {
            return Err(Error::invalid(
                "expected_size",
                m,
                "a finite number in (0, n]",
            ));
        }
        check_c(c)?;
        let contact_size = ceil_clamped(m + c * m.sqrt(), n);
        check_fits("expected_size", m, contact_size)?;
        let rate = ratio_rounded_down(m, contact_size);
        Ok(Self {
            n,
            expected_size: m,
            c,
            contact_size,
            coin: ExactBernoulli::new(rate)?,
        })
    }

    /// The population size `n`.
    pub fn population(&self) -> u64 {
        self.n
    }

    /// The target expected sample size `m`.
    pub fn expected_size(&self) -> f64 {
        self.expected_size
    }

    /// The constant `c` of the contact size.
    pub fn c(&self) -> f64 {
        self.c
    }

    /// The number `s` of contacted clients.
    pub fn contact_size(&self) -> u64 {
        self.contact_size
    }

    /// The participation probability `r ≤ m/s` of a contacted client (the `f64` just below or
    /// equal to `m/s`).
    pub fn participation_probability(&self) -> f64 {
        self.coin.p()
    }

    /// Contacts `s` uniform distinct clients and flips each one's participation coin.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Cohort {
        let contacted = sample_distinct(self.n, self.contact_size, rng);
        let participating = contacted
            .iter()
            .copied()
            .filter(|_| self.coin.sample(rng))
            .collect();
        Cohort {
            contacted,
            participating,
        }
    }
}

/// An exact emulation of Poisson(`p`) sampling with a fixed contact size (docs/algorithms.md §1.3,
/// engineering note): with `m = n·p` and `s_max = min(n, ⌊m + c√m⌋)`, draw the sample size
/// `S ~ Bin(n, p)` secretly with [`ExactBinomial`]; if `S ≤ s_max`, contact `s_max` uniform
/// distinct clients and let a uniform subset of exactly `S` of them participate (the others
/// abstain); if `S > s_max`, the round fails ([`CohortOutcome::Failed`]).
///
/// # Why the participating set is a Poisson sample
///
/// A Poisson(`p`) sample `P` of `[n]` is characterised by: `|P| ~ Bin(n, p)`, and given
/// `|P| = k`, `P` is a uniform `k`-subset (every `k`-subset has probability
/// `p^k (1−p)^(n−k)`). Here, given `S = k ≤ s_max`, the contacted set `C` is a uniform
/// `s_max`-subset and the participating set `T` a uniform `k`-subset of `C`; for any fixed
/// `k`-subset `A` of `[n]`,
/// `Pr[T = A] = Pr[A ⊆ C] / C(s_max, k) = [C(n−k, s_max−k) / C(n, s_max)] / C(s_max, k)
/// = 1 / C(n, k)`,
/// so `T` is a uniform `k`-subset of `[n]`. Hence `(failure, T)` is distributed exactly as
/// `(|P| > s_max, P)` with `T` defined only when `|P| ≤ s_max`: conditionally on no failure, `T`
/// is a Poisson sample conditioned on `|P| ≤ s_max`, and `T` can be coupled with a true Poisson
/// sample `P` so that they are equal except on the failure event.
///
/// # Privacy accounting
///
/// The failure event has probability at most `β =`
/// [`failure_probability_bound`](ExactPoissonCohort::failure_probability_bound) under every
/// dataset, and it must be added to δ. Precisely: if a mechanism is `(ε, δ)`-DP when run on a
/// Poisson(`p`) sample, running it on this cohort (and publishing the failure) is
/// `(ε, δ + e^ε·β)`-DP, by the coupling above (for an output set `E` without the failure
/// symbol, `Pr[out(D) ∈ E] ≤ e^ε (Pr[out(D') ∈ E] + β) + δ`; with it, `δ + β` suffices).
/// docs/algorithms.md §1.3 writes "add β to δ"; the factor `e^ε` is what this generic argument
/// gives. With `c = 10` and `m ≥ 100`, `β ≤ e^-33.3 ≈ 3.4·10^-15`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactPoissonCohort {
    n: u64,
    p: f64,
    c: f64,
    expected_size: f64,
    contact_size: u64,
    size: ExactBinomial,
}

impl ExactPoissonCohort {
    /// An exact Poisson(`p`) cohort over `n` clients, contacting `⌊n·p + c√(n·p)⌋` of them (at
    /// most `n`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `n = 0`, `p` is not a finite probability in `(0, 1]`, `c`
    /// is not finite and positive, or the cohort would not fit in memory.
    pub fn new(n: u64, p: f64, c: f64) -> Result<Self, Error> {
        check_n(n)?;
        if !(p.is_finite() && p > 0.0 && p <= 1.0) {
            return Err(Error::invalid("p", p, "a finite probability in (0, 1]"));
        }
        check_c(c)?;
        let m = n as f64 * p;
        let target = m + c * m.sqrt();
        let contact_size = if target.is_finite() && target < n as f64 {
            (target.floor() as u64).min(n)
        } else {
            n
        };
        check_fits("p", p, contact_size)?;
        Ok(Self {
            n,
            p,
            c,
            expected_size: m,
            contact_size,
            size: ExactBinomial::new(n, p)?,
        })
    }

    /// The population size `n`.
    pub fn population(&self) -> u64 {
        self.n
    }

    /// The Poisson sampling rate `p`.
    pub fn sampling_rate(&self) -> f64 {
        self.p
    }

    /// The constant `c` of the contact size.
    pub fn c(&self) -> f64 {
        self.c
    }

    /// The expected sample size `m = n·p` (rounded to an `f64`).
    pub fn expected_size(&self) -> f64 {
        self.expected_size
    }

    /// The number `s_max` of contacted clients.
    pub fn contact_size(&self) -> u64 {
        self.contact_size
    }

    /// An upper bound `β` on the failure probability `Pr[S > s_max]`, `S ~ Bin(n, p)`, to be
    /// added to δ (see the type's docs).
    ///
    /// It is the Chernoff bound `Pr[S ≥ (1+γ)m] ≤ exp(−γ²m/(2+γ))`, valid for every `γ > 0`,
    /// at `(1+γ)m = s_max + 1`, i.e. `exp(−(s_max + 1 − m)² / (s_max + 1 + m))`, rounded up.
    /// Since `s_max + 1 > m + c√m`, it is at most `exp(−c²/(2 + c/√m))`, which is at most the
    /// `exp(−c²/3)` of docs/algorithms.md §1.3 when `c ≤ √m`. For `c > √m` the paper's
    /// `exp(−c²/3)` is *not* a valid bound (e.g. `m = 1`, `c = 10`: `Pr[S ≥ 12] ≈ 10^-9` but
    /// `e^-33.3 ≈ 3·10^-15`), which is why this method does not return it. It is 0 when
    /// `s_max = n`.
    pub fn failure_probability_bound(&self) -> f64 {
        if self.contact_size >= self.n {
            return 0.0;
        }
        // Slightly overestimate m = n·p (rounded once) and t − m, t + m, so that the exponent
        // can only be underestimated, then shrink the exponent and inflate the result by
        // 2^-40 to cover the remaining roundings and exp's error (< 1 ulp).
        const SLACK: f64 = 1.0 / 1_099_511_627_776.0;
        let m = self.expected_size * (1.0 + SLACK);
        let t = self.contact_size as f64 + 1.0;
        if t <= m {
            return 1.0;
        }
        let exponent = (t - m) * (t - m) / (t + m) * (1.0 - SLACK);
        (libm::exp(-exponent) * (1.0 + SLACK)).min(1.0)
    }

    /// Draws the secret sample size and, unless it exceeds the contact size, the cohort.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> CohortOutcome {
        let size = self.size.sample(rng);
        if size > self.contact_size {
            return CohortOutcome::Failed;
        }
        let contacted = sample_distinct(self.n, self.contact_size, rng);
        let participating = sample_distinct(self.contact_size, size, rng)
            .into_iter()
            .map(|j| contacted[j as usize]) // sorted, as `contacted` is
            .collect();
        CohortOutcome::Ready(Cohort {
            contacted,
            participating,
        })
    }
}

fn check_n(n: u64) -> Result<(), Error> {
    if n == 0 {
        return Err(Error::invalid("n", n, "at least 1 client"));
    }
    Ok(())
}

fn check_c(c: f64) -> Result<(), Error> {
    if !(c.is_finite() && c > 0.0) {
        return Err(Error::invalid("c", c, "a finite number > 0"));
    }
    Ok(())
}

fn check_fits(name: &'static str, value: f64, size: u64) -> Result<(), Error> {
    if usize::try_from(size).is_err() {
        return Err(Error::invalid(
            name,
            value,
            "a cohort size that fits in memory",
        ));
    }
    Ok(())
}

/// `min(n, ⌈x⌉)` for `x ≥ 0` (and `n` if `x` is not finite).
fn ceil_clamped(x: f64, n: u64) -> u64 {
    if x.is_finite() && x < n as f64 {
        (x.ceil() as u64).min(n)
    } else {
        n
    }
}

/// The largest `f64` `r` with `r ≤ m/s` (for `m > 0`, `s ≥ 1`), checked exactly.
fn ratio_rounded_down(m: f64, s: u64) -> f64 {
    let mut r = m / s as f64;
    while product_exceeds(r, s, m) {
        r = f64::from_bits(r.to_bits() - 1); // next f64 down (r > 0)
    }
    // The quotient is already within a few ulps; move up while that stays ≤ m/s.
    for _ in 0..4 {
        let up = f64::from_bits(r.to_bits() + 1);
        if up.is_finite() && !product_exceeds(up, s, m) {
            r = up;
        } else {
            break;
        }
    }
    r
}

/// Whether `r·s > m` exactly, for finite non-negative `r` and `m`.
fn product_exceeds(r: f64, s: u64, m: f64) -> bool {
    let (rm, re) = decompose(r);
    let (mm, me) = decompose(m);
    let lhs = BigUint::from(rm) * BigUint::from(s);
    let rhs = BigUint::from(mm);
    if rm == 0 || s == 0 {
        return false;
    }
    if mm == 0 {
        return true;
    }
    let e = re.min(me);
    (lhs << (re - e) as u64) > (rhs << (me - e) as u64)
}

/// A uniformly random `s`-subset of the indices `0..n`, sorted: every one of the `C(n, s)`
/// subsets has probability exactly `1 / C(n, s)`. This is sampling `s` clients out of `n`
/// without replacement, as TrieHH's rounds do.
///
/// Floyd's algorithm on an exactly uniform integer sampler (multiply-and-reject, on 32-bit
/// words when `n ≤ 2^32`): `s` draws when `s ≤ n/2`, else the complement is drawn. The set is
/// kept in a bitset over `0..n` when that is small next to the sample (`n/64 ≤ 4s` words),
/// else in a hash set; both give the same subset for the same generator state.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `s > n`, or if `s` indices would not fit in memory.
pub fn uniform_subset<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R) -> Result<Vec<u64>, Error> {
    if s > n {
        return Err(Error::invalid("s", s, "a subset size at most n"));
    }
    check_fits("s", s as f64, s)?;
    Ok(sample_distinct_with(n, s, rng, true))
}

/// How many indices of a uniformly random `s`-subset of `0..n` fall in each of the
/// consecutive ranges `0..ends[0]`, `ends[0]..ends[1]`, …, `..ends[k−1] = n`: jointly
/// multivariate hypergeometric counts. For the same generator state they are exactly the
/// counts of the subset [`uniform_subset`] returns (the same draws), read off without listing
/// the subset: on the bitset path each range is counted with popcounts.
///
/// A simulator whose clients are numbered item by item draws a fixed-size batch without
/// replacement this way and gets the number of sampled holders of each item.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `s > n`, if `s` indices would not fit in memory, or if
/// `ends` is not non-decreasing with last entry `n`.
pub fn uniform_subset_counts<R: Rng + ?Sized>(
    n: u64,
    s: u64,
    ends: &[u64],
    rng: &mut R,
) -> Result<Vec<u64>, Error> {
    if s > n {
        return Err(Error::invalid("s", s, "a subset size at most n"));
    }
    check_fits("s", s as f64, s)?;
    if ends.last() != Some(&n) || ends.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::invalid(
            "ends",
            format!("{} range ends", ends.len()),
            "non-decreasing range ends, the last one equal to n",
        ));
    }
    // The same branch `sample_distinct_with` takes, so that the draws are the same.
    if s < n && s <= n / 2 && is_dense(n, s) {
        let (bits, per_word) = floyd_bits(n, s, rng, true);
        // rank(p), the number of set bits below p: whole words by their counts, then the
        // bits of p's word below p.
        let (mut counted, mut below, mut previous) = (0, 0u64, 0u64);
        Ok(ends
            .iter()
            .map(|&end| {
                let (word, bit) = ((end >> 6) as usize, end & 63);
                below += per_word[counted..word]
                    .iter()
                    .map(|&c| u64::from(c))
                    .sum::<u64>();
                counted = word;
                let partial = bits
                    .get(word)
                    .map_or(0, |w| (w & ((1u64 << bit) - 1)).count_ones());
                let rank = below + u64::from(partial);
                let count = rank - previous;
                previous = rank;
                count
            })
            .collect())
    } else {
        let subset = sample_distinct_with(n, s, rng, true);
        let mut first = 0;
        Ok(ends
            .iter()
            .map(|&end| {
                let next = first + subset[first..].partition_point(|&i| i < end);
                let count = (next - first) as u64;
                first = next;
                count
            })
            .collect())
    }
}

/// An exactly uniform integer in `0..bound` (`bound ≥ 1`) like [`uniform_below`], but from one
/// 32-bit word (Lemire's multiply-and-reject on 32 bits) when `bound ≤ 2^32 − 1`: half the
/// randomness per draw.
#[inline(always)] // called by `draw`, in the hot loop
fn uniform_below_narrow<R: Rng + ?Sized>(bound: u64, rng: &mut R) -> u64 {
    let Ok(bound32) = u32::try_from(bound) else {
        return uniform_below(bound, rng);
    };
    let mut m = u64::from(rng.next_u32()) * u64::from(bound32);
    if (m as u32) < bound32 {
        // (2^32 − bound) mod bound: low words below it would favour some results.
        let threshold = bound32.wrapping_neg() % bound32;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(bound32);
        }
    }
    m >> 32
}

/// One Floyd draw, uniform in `0..bound`.
#[inline(always)] // the hot loop of the Floyd samplers
fn draw<R: Rng + ?Sized>(bound: u64, narrow: bool, rng: &mut R) -> u64 {
    if narrow {
        uniform_below_narrow(bound, rng)
    } else {
        uniform_below(bound, rng)
    }
}

/// A uniform random `s`-subset of `0..n` (`s ≤ n`), sorted.
///
/// Floyd's algorithm: for `j = n−s, …, n−1`, draw `t` uniform in `0..=j` and insert `t`, or `j`
/// if `t` is already in. Each `s`-subset is equally likely. When `s > n/2` the complement is
/// drawn instead.
fn sample_distinct<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R) -> Vec<u64> {
    sample_distinct_with(n, s, rng, false)
}

/// [`sample_distinct`], drawing with [`uniform_below_narrow`] when `narrow`, else with
/// [`uniform_below`].
fn sample_distinct_with<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R, narrow: bool) -> Vec<u64> {
    debug_assert!(s <= n);
    if s == n {
        return (0..n).collect();
    }
    if s > n / 2 {
        let excluded = sample_distinct_with(n, n - s, rng, narrow);
        let mut out = Vec::with_capacity(s as usize);
        let mut skip = excluded.iter().peekable();
        for i in 0..n {
            if skip.peek() == Some(&&i) {
                skip.next();
            } else {
                out.push(i);
            }
        }
        return out;
    }
    if is_dense(n, s) {
        floyd_bitset(n, s, rng, narrow)
    } else {
        floyd_hash(n, s, rng, narrow)
    }
}

/// Floyd's algorithm with the set held in a hash set (for sparse samples of large `n`).
fn floyd_hash<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R, narrow: bool) -> Vec<u64> {
    let mut set = FxHashSet::with_capacity_and_hasher(s as usize, Default::default());
    for j in (n - s)..n {
        let t = draw(j + 1, narrow, rng);
        if !set.insert(t) {
            set.insert(j);
        }
    }
    let mut out: Vec<u64> = set.into_iter().collect();
    out.sort_unstable();
    out
}

/// Whether a bitset over `0..n` is small next to an `s`-sample (`n/64 ≤ 4s` words).
fn is_dense(n: u64, s: u64) -> bool {
    n / 64 <= s.saturating_mul(4)
}

/// Floyd's algorithm with the set held in a bitset over `0..n` (for dense samples, where the
/// `n/64` words cost no more than the hash set); the bitset.
///
/// Also returns the number of set bits of each word (counted as they are set: the build
/// target may lack a popcount instruction).
fn floyd_bits<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R, narrow: bool) -> (Vec<u64>, Vec<u8>) {
    // Unwrap safety: the caller checked `n/64 ≤ 4s`, and `s` indices fit in memory.
    let words = usize::try_from(n.div_ceil(64)).expect("bitset fits");
    let mut bits = vec![0u64; words];
    let mut per_word = vec![0u8; words];
    for j in (n - s)..n {
        let t = draw(j + 1, narrow, rng);
        let (word, bit) = ((t >> 6) as usize, 1u64 << (t & 63));
        let (word, bit) = if bits[word] & bit == 0 {
            (word, bit)
        } else {
            ((j >> 6) as usize, 1u64 << (j & 63))
        };
        bits[word] |= bit;
        per_word[word] += 1;
    }
    (bits, per_word)
}

/// Floyd's algorithm with the set held in a bitset over `0..n`, read out in order.
fn floyd_bitset<R: Rng + ?Sized>(n: u64, s: u64, rng: &mut R, narrow: bool) -> Vec<u64> {
    let (bits, _) = floyd_bits(n, s, rng, narrow);
    // Read the set bits out in order. A word holds about `64·s/n` of them, a number the branch
    // predictor cannot guess: the first two are written unconditionally (the length advances
    // only past real ones; one spare slot takes the extra writes), a loop takes the rest.
    let mut out = vec![0u64; s as usize + 1];
    let mut len = 0;
    for (word, &set) in bits.iter().enumerate() {
        let base = (word as u64) << 6;
        let mut rest = set;
        for _ in 0..2 {
            out[len] = base | u64::from(rest.trailing_zeros() & 63);
            len += usize::from(rest != 0);
            rest &= rest.wrapping_sub(1);
        }
        while rest != 0 {
            out[len] = base | u64::from(rest.trailing_zeros());
            len += 1;
            rest &= rest - 1;
        }
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    fn name_of(e: Error) -> &'static str {
        match e {
            Error::InvalidParameter { name, .. } => name,
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn paper_cohort_rejects_bad_parameters() {
        let cases: &[(u64, f64, f64, &str)] = &[
            (0, 1.0, 1.0, "n"),
            (100, 0.0, 1.0, "expected_size"),
            (100, -1.0, 1.0, "expected_size"),
            (100, 100.5, 1.0, "expected_size"),
            (100, f64::NAN, 1.0, "expected_size"),
            (100, f64::INFINITY, 1.0, "expected_size"),
            (100, 10.0, 0.0, "c"),
            (100, 10.0, -2.0, "c"),
            (100, 10.0, f64::NAN, "c"),
            (100, 10.0, f64::INFINITY, "c"),
        ];
        for &(n, m, c, name) in cases {
            let e = PaperCohort::new(n, m, c).unwrap_err();
            assert_eq!(name_of(e), name, "n = {n}, m = {m}, c = {c}");
        }
        assert!(PaperCohort::new(100, 100.0, 10.0).is_ok());
    }

    #[test]
    fn exact_cohort_rejects_bad_parameters() {
        let cases: &[(u64, f64, f64, &str)] = &[
            (0, 0.5, 1.0, "n"),
            (100, 0.0, 1.0, "p"),
            (100, 1.5, 1.0, "p"),
            (100, f64::NAN, 1.0, "p"),
            (100, 0.5, 0.0, "c"),
            (100, 0.5, f64::NEG_INFINITY, "c"),
        ];
        for &(n, p, c, name) in cases {
            let e = ExactPoissonCohort::new(n, p, c).unwrap_err();
            assert_eq!(name_of(e), name, "n = {n}, p = {p}, c = {c}");
        }
    }

    #[test]
    fn paper_cohort_sizes_and_rate_rounded_down() {
        let pc = PaperCohort::new(1_000_000, 1000.0, 10.0).unwrap();
        assert_eq!(pc.contact_size(), 1317); // ⌈1000 + 10·31.62…⌉
        let r = pc.participation_probability();
        assert!(!product_exceeds(r, 1317, 1000.0));
        assert!(product_exceeds(
            f64::from_bits(r.to_bits() + 1),
            1317,
            1000.0
        ));
        // Contact size capped at n, and then r = m/n.
        let pc = PaperCohort::new(50, 40.0, 10.0).unwrap();
        assert_eq!(pc.contact_size(), 50);
        // 0.8 as an f64 is slightly above 4/5, so r is the f64 just below it.
        let r = pc.participation_probability();
        assert_eq!(r.to_bits(), 0.8f64.to_bits() - 1);
        let cohort = pc.draw(&mut ChaCha20Rng::seed_from_u64(1));
        assert!(cohort.contacted().iter().copied().eq(0..50));
        assert_eq!(
            cohort.abstaining().count() + cohort.participating().len(),
            50
        );
        assert_eq!(format!("{cohort:?}"), "Cohort { contacted: 50, .. }");
    }

    #[test]
    fn ratio_rounding_is_exact_and_downward() {
        // Cases where m/s rounds up in f64.
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let mut rounded_up = 0;
        for _ in 0..2000 {
            let s = 1 + uniform_below(1 << 40, &mut rng);
            let m = (uniform_below(s, &mut rng) + 1) as f64 * 0.7;
            let r = ratio_rounded_down(m, s);
            assert!(!product_exceeds(r, s, m), "m = {m}, s = {s}");
            assert!(product_exceeds(f64::from_bits(r.to_bits() + 1), s, m));
            if r < m / s as f64 {
                rounded_up += 1;
            }
        }
        assert!(rounded_up > 100, "{rounded_up}");
    }

    #[test]
    fn exact_cohort_sizes_and_draws() {
        let ec = ExactPoissonCohort::new(10_000, 0.01, 10.0).unwrap();
        assert_eq!(ec.contact_size(), 200); // ⌊100 + 10·10⌋
        assert_eq!(ec.expected_size().to_bits(), 100f64.to_bits());
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for _ in 0..20 {
            let cohort = ec.draw(&mut rng).cohort().expect("β is tiny");
            assert_eq!(cohort.contacted().len(), 200);
            assert!(cohort.contacted().windows(2).all(|w| w[0] < w[1]));
            assert!(cohort.participating().windows(2).all(|w| w[0] < w[1]));
            assert!(
                cohort
                    .participating()
                    .iter()
                    .all(|i| cohort.contacted().binary_search(i).is_ok())
            );
        }
        // With a tiny c, s_max = m and the round fails about half the time.
        let ec = ExactPoissonCohort::new(10_000, 0.5, 1e-9).unwrap();
        assert_eq!(ec.contact_size(), 5000);
        let fails = (0..40).filter(|_| ec.draw(&mut rng).is_failed()).count();
        assert!((8..32).contains(&fails), "{fails}");
        let all = ExactPoissonCohort::new(30, 1.0, 1.0).unwrap();
        assert_eq!(all.contact_size(), 30);
        assert_eq!(all.failure_probability_bound().to_bits(), 0f64.to_bits());
        let cohort = all.draw(&mut rng).cohort().unwrap();
        assert_eq!(cohort.participating().len(), 30);
    }

    #[test]
    fn failure_bound_matches_the_closed_forms() {
        // c ≤ √m: at most exp(−c²/3).
        let ec = ExactPoissonCohort::new(1_000_000, 0.001, 3.0).unwrap();
        assert!(ec.failure_probability_bound() <= (-3.0f64).exp());
        // c = 10, m = 10^4: s_max + 1 = 11001, bound exp(−1001²/21001) ≈ e^-47.7.
        let ec = ExactPoissonCohort::new(1_000_000, 0.01, 10.0).unwrap();
        let b = ec.failure_probability_bound();
        let expect = (-(1001.0f64 * 1001.0) / 21_001.0).exp();
        assert!(b >= expect && b <= expect * (1.0 + 1e-9), "{b} vs {expect}");
        assert!(b <= (-100.0f64 / 3.0).exp());
    }

    #[test]
    fn floyd_bitset_and_hash_agree() {
        for (n, s) in [(1u64, 1u64), (64, 3), (65, 30), (1000, 7), (100_000, 2000)] {
            for seed in 0..5 {
                let a = floyd_bitset(n, s, &mut ChaCha20Rng::seed_from_u64(seed), false);
                let b = floyd_hash(n, s, &mut ChaCha20Rng::seed_from_u64(seed), false);
                assert_eq!(a, b, "n = {n}, s = {s}, seed = {seed}");
                assert_eq!(a.len() as u64, s);
            }
        }
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        assert!(uniform_subset(5, 6, &mut rng).is_err());
        assert_eq!(uniform_subset(5, 5, &mut rng).unwrap(), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn narrow_draws_are_uniform_and_fall_back_above_32_bits() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[uniform_below_narrow(3, &mut rng) as usize] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        assert_eq!(uniform_below_narrow(1, &mut rng), 0);
        // Bounds of 2^32 and more use the 64-bit sampler, draw for draw.
        for bound in [1u64 << 32, (1 << 40) + 3] {
            let a = uniform_below_narrow(bound, &mut ChaCha20Rng::seed_from_u64(6));
            let b = uniform_below(bound, &mut ChaCha20Rng::seed_from_u64(6));
            assert_eq!(a, b);
        }
    }

    #[test]
    fn subset_counts_are_the_counts_of_the_subset() {
        let mut ends_rng = ChaCha20Rng::seed_from_u64(9);
        for (n, s) in [
            (1u64, 0u64),
            (1, 1),
            (64, 3),
            (100, 100),
            (130, 40),
            (1000, 700),
            (10_000, 150),
            (1 << 40, 20),
        ] {
            for seed in 0..4 {
                let mut ends: Vec<u64> = (0..uniform_below(12, &mut ends_rng))
                    .map(|_| uniform_below(n + 1, &mut ends_rng))
                    .collect();
                ends.extend([0, 63.min(n), 64.min(n), n]);
                ends.sort_unstable();
                let subset = uniform_subset(n, s, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap();
                let counts =
                    uniform_subset_counts(n, s, &ends, &mut ChaCha20Rng::seed_from_u64(seed))
                        .unwrap();
                let mut start = 0;
                for (&end, &count) in ends.iter().zip(&counts) {
                    let expected = subset.iter().filter(|&&i| start <= i && i < end).count();
                    assert_eq!(count, expected as u64, "n = {n}, s = {s}, {start}..{end}");
                    start = end;
                }
            }
        }
        let mut rng = ChaCha20Rng::seed_from_u64(10);
        assert!(uniform_subset_counts(10, 3, &[5, 9], &mut rng).is_err());
        assert!(uniform_subset_counts(10, 3, &[6, 5, 10], &mut rng).is_err());
        assert!(uniform_subset_counts(10, 3, &[], &mut rng).is_err());
        assert!(uniform_subset_counts(10, 11, &[10], &mut rng).is_err());
        assert_eq!(uniform_subset_counts(10, 4, &[10], &mut rng).unwrap(), [4]);
    }

    #[test]
    fn sample_distinct_edges() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        assert!(sample_distinct(10, 0, &mut rng).is_empty());
        assert_eq!(
            sample_distinct(10, 10, &mut rng),
            (0..10).collect::<Vec<_>>()
        );
        for (n, s) in [(10u64, 3u64), (10, 7), (1_000_000_000_000, 5), (3, 2)] {
            let v = sample_distinct(n, s, &mut rng);
            assert_eq!(v.len() as u64, s);
            assert!(v.windows(2).all(|w| w[0] < w[1]));
            assert!(v.iter().all(|&i| i < n));
        }
    }
}
