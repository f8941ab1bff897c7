//! Basic Hadamard response (Acharya, Sun and Zhang 2019; docs/algorithms.md §7.2, the authors'
//! `Hadamard_Rand_high_priv`).
//!
//! Let `K = 2^{⌈log2(k + 1)⌉}`, the smallest power of two above `k`, and `H_K` the Sylvester
//! Hadamard matrix, `H[i][j] = (−1)^{popcount(i & j)}`. Item `x ∈ 0..k` uses row `x + 1` (the
//! all-ones row 0 is skipped); its set is `C_x = {y ∈ [0, K) : popcount((x + 1) & y) even}`,
//! the `K/2` columns where `H[x + 1][y] = +1`.
//!
//! - Client: with probability `p = e^ε/(1 + e^ε)` output `y` uniform in `C_x`, otherwise `y`
//!   uniform in its complement. Equivalently, `Pr[y | x] ∝ e^ε` if `H[x + 1][y] = +1` and `∝ 1`
//!   otherwise. It is drawn with §7.2's `O(log K)` trick: `y₁` uniform in `[0, K)`, `y₂ = y₁`
//!   with the highest set bit of `x + 1` flipped; exactly one of them is in `C_x`, and it is
//!   uniform there (the flip is a bijection between `C_x` and its complement).
//! - Server: counts the reports in a histogram over `[0, K)`, applies one in-place fast
//!   Walsh–Hadamard transform (`O(K log K)`, never a `K × K` matrix) to get
//!   `F[j] = Σ_y H[j][y]·count[y]`, so that `S_x = #{i : y_i ∈ C_x} = (n + F[x + 1])/2`, and
//!   estimates `ĉ(x) = (2 S_x − n)/(2p − 1) = F[x + 1]/(2p − 1)`, which is
//!   `((e^ε + 1)/(e^ε − 1))·(2 S_x − n)` for the textbook `p`.
//!
//! Rows of `H_K` are orthogonal, so a client holding `x' ≠ x` lands in `C_x` with probability
//! exactly `1/2`: `p* = p`, `q* = 1/2`, and the null variance is `n (e^ε + 1)²/(e^ε − 1)²`.
//!
//! # Privacy
//!
//! ε-LDP (pure, local model, replace-one: any two inputs). `Pr[y | x] = 2p/K` on `C_x` and
//! `2(1 − p)/K` off it, so the largest ratio is `p/(1 − p)`; the `f64` `p` really used is
//! rounded down from `e^ε/(1 + e^ε)` until this ratio is provably at most `e^ε` (see
//! [the module docs](super)). The choice is an [`ExactBernoulli`] and `y₁` is exactly uniform.

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::Guarantee;
use tally_accounting::local::{ldp_guarantee, rr_keep_probability};

use super::{SupportProbabilities, check_domain, check_epsilon};
use crate::Error;
use crate::protocol::wire::decimal_digits;
use crate::protocol::{Estimates, LocalRandomizer, RoundAggregator};
use crate::sampling::{ExactBernoulli, uniform_below};

/// The largest domain: `K = 2^31` must index the report histogram.
const MAX_DOMAIN: u32 = (1 << 31) - 1;

/// The basic Hadamard-response randomizer for items in `0..k`.
#[derive(Clone, Debug, PartialEq)]
pub struct HadamardResponse {
    domain: u32,
    /// `K`, the smallest power of two above `k`.
    order: u32,
    epsilon: f64,
    inside: ExactBernoulli,
}

/// Whether column `y` is in `C_x`: `popcount((x + 1) & y)` is even.
fn in_set(row: u32, y: u32) -> bool {
    (row & y).count_ones().is_multiple_of(2)
}

/// The in-place fast Walsh–Hadamard transform of `v` (length a power of two):
/// `v[j] ← Σ_y (−1)^{popcount(j & y)} v[y]`.
pub(crate) fn fwht(v: &mut [i64]) {
    debug_assert!(v.len().is_power_of_two());
    let mut h = 1;
    while h < v.len() {
        for block in v.chunks_exact_mut(2 * h) {
            let (lo, hi) = block.split_at_mut(h);
            for (a, b) in lo.iter_mut().zip(hi) {
                let (s, d) = (*a + *b, *a - *b);
                *a = s;
                *b = d;
            }
        }
        h *= 2;
    }
}

impl HadamardResponse {
    /// The randomizer for a domain of `domain = k` items at local `epsilon`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `2 ≤ k < 2^31` and ε is finite and positive (and not
    /// so small that `f64` probabilities cannot meet it).
    pub fn new(domain: u32, epsilon: f64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        if domain > MAX_DOMAIN {
            return Err(Error::invalid("domain", domain, "below 2^31 items"));
        }
        let epsilon = check_epsilon(epsilon)?;
        let p = rr_keep_probability(epsilon, 2)?;
        Ok(Self {
            domain,
            order: (domain + 1).next_power_of_two(),
            epsilon,
            inside: ExactBernoulli::new(p)?,
        })
    }

    /// The domain size `k`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// `K`, the number of possible reports: the smallest power of two above `k`.
    pub fn order(&self) -> u32 {
        self.order
    }

    /// The local ε the randomizer satisfies.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The guarantee: `(ε, 0)`, replace-one, in the local model.
    pub fn guarantee(&self) -> Guarantee {
        ldp_guarantee(self.epsilon, "Hadamard response")
    }

    /// The probability `p` that the report falls in `C_x`.
    pub fn inside_probability(&self) -> f64 {
        self.inside.p()
    }

    /// `p* = p` and `q* = 1/2`.
    pub fn support_probabilities(&self) -> SupportProbabilities {
        SupportProbabilities {
            p: self.inside.p(),
            q: 0.5,
        }
    }

    /// `Pr[report = y | item = x]` for the probabilities really used (rounded to `f64`).
    ///
    /// # Panics
    ///
    /// If `x` is not in the domain or `y ≥ K`.
    pub fn output_probability(&self, x: u32, y: u32) -> f64 {
        assert!(x < self.domain && y < self.order, "outside the domain");
        let p = self.inside.p();
        let half = f64::from(self.order / 2);
        if in_set(x + 1, y) {
            p / half
        } else {
            (1.0 - p) / half
        }
    }

    /// The client's report for `item`, a column index in `0..K`.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> u32 {
        assert!(item < self.domain, "item outside the domain");
        let row = item + 1;
        // Unwrap safety: the draw is below K ≤ 2^31.
        let y1 = u32::try_from(uniform_below(u64::from(self.order), rng)).expect("below K");
        let y2 = y1 ^ (1 << (31 - row.leading_zeros()));
        let (inside, outside) = if in_set(row, y1) { (y1, y2) } else { (y2, y1) };
        if self.inside.sample(rng) {
            inside
        } else {
            outside
        }
    }

    /// The null variance of the count estimate for `n` clients.
    pub fn variance(&self, n: u64) -> f64 {
        self.support_probabilities().null_variance(n)
    }

    /// The variance of the count estimate of an item held by `count` of `n` clients.
    pub fn variance_at(&self, n: u64, count: u64) -> f64 {
        self.support_probabilities().variance(n, count)
    }

    /// An empty aggregator for this randomizer's reports.
    pub fn aggregator(&self) -> HadamardAggregator {
        HadamardAggregator {
            counts: vec![0; self.order as usize],
            reports: 0,
            domain: self.domain,
            inside: self.inside.p(),
        }
    }
}

/// The histogram of Hadamard-response reports over `[0, K)`; mergeable. Its raw counts cannot
/// be read (no `Debug`).
pub struct HadamardAggregator {
    counts: Vec<i64>,
    reports: u64,
    domain: u32,
    inside: f64,
}

impl HadamardAggregator {
    /// Absorbs one report.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the report is not below `K` (it is then ignored).
    pub fn absorb(&mut self, report: u32) -> Result<(), Error> {
        let cell = self
            .counts
            .get_mut(report as usize)
            .ok_or_else(|| Error::invalid("report", report, "a column index below K"))?;
        *cell += 1;
        self.reports += 1;
        Ok(())
    }

    /// Adds another shard's reports to this one.
    ///
    /// # Panics
    ///
    /// If the two aggregators belong to different randomizers.
    pub fn merge(&mut self, other: Self) {
        assert!(
            self.domain == other.domain && self.inside.to_bits() == other.inside.to_bits(),
            "merging aggregators of different randomizers"
        );
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        self.reports += other.reports;
    }

    /// The number of reports absorbed.
    pub fn reports(&self) -> u64 {
        self.reports
    }

    /// The unbiased estimate of the number of clients holding each item,
    /// `F[x + 1]/(2p − 1)` with `F` the fast Walsh–Hadamard transform of the histogram.
    pub fn estimate(&self) -> Vec<f64> {
        let mut f = self.counts.clone();
        fwht(&mut f);
        // Exact: p ∈ [1/2, 1), so 2p ∈ [1, 2) and 2p − 1 are exact (Sterbenz).
        let gap = 2.0 * self.inside - 1.0;
        f[1..=self.domain as usize]
            .iter()
            .map(|&v| v as f64 / gap)
            .collect()
    }
}

/// A device sends its column, an index below `K` (decimal on the wire).
impl LocalRandomizer for HadamardResponse {
    type Report = u32;
    type Aggregator = HadamardAggregator;

    fn domain(&self) -> u32 {
        self.domain
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> u32 {
        HadamardResponse::randomize(self, element, rng)
    }

    fn admits(&self, report: &u32) -> bool {
        *report < self.order
    }

    /// The largest row index, in decimal.
    fn longest_report(&self) -> u64 {
        decimal_digits(u64::from(self.order - 1))
    }

    fn aggregator(&self) -> HadamardAggregator {
        HadamardResponse::aggregator(self)
    }
}

impl RoundAggregator for HadamardAggregator {
    type Report = u32;
    type Release = Estimates;

    /// # Panics
    ///
    /// If `report` is not below `K` (the round did not admit it).
    fn absorb(&mut self, report: u32) {
        HadamardAggregator::absorb(self, report).expect("an admitted report is below K");
    }

    fn merge(&mut self, other: Self) {
        HadamardAggregator::merge(self, other);
    }

    fn release(self) -> Estimates {
        Estimates(self.estimate())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fwht_matches_the_matrix() {
        let v: Vec<i64> = (0..16).map(|i| (i * 7 + 3) % 11 - 5).collect();
        let mut f = v.clone();
        fwht(&mut f);
        for (j, &fj) in f.iter().enumerate() {
            let direct: i64 = v
                .iter()
                .enumerate()
                .map(|(y, &c)| if (j & y).count_ones() % 2 == 0 { c } else { -c })
                .sum();
            assert_eq!(fj, direct, "row {j}");
        }
    }

    #[test]
    fn order_is_the_smallest_power_of_two_above_k() {
        for (k, order) in [
            (2, 4),
            (3, 4),
            (4, 8),
            (5, 8),
            (7, 8),
            (8, 16),
            (1024, 2048),
        ] {
            assert_eq!(HadamardResponse::new(k, 1.0).unwrap().order(), order);
        }
        assert!(HadamardResponse::new(1 << 31, 1.0).is_err());
    }
}
