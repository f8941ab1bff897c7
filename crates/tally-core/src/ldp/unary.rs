//! Unary encoding: symmetric (SUE, basic RAPPOR) and optimized (OUE) (docs/algorithms.md §7.4).
//!
//! The client one-hot encodes its item as `k` bits and sends each bit independently: a 1 stays
//! 1 with probability `p`, a 0 becomes 1 with probability `q`. A report supports the items whose
//! bit is 1, so `p* = p` and `q* = q`.
//!
//! - SUE: `p = e^{ε/2}/(e^{ε/2} + 1)`, `q = 1/(e^{ε/2} + 1) = 1 − p`; null variance
//!   `n e^{ε/2}/(e^{ε/2} − 1)²`.
//! - OUE: `p = 1/2`, `q = 1/(e^ε + 1)`; null variance `n 4e^ε/(e^ε − 1)²`.
//!
//! # Privacy
//!
//! ε-LDP (pure, local model, replace-one: any two inputs). Inputs `x ≠ x'` differ in two bits,
//! so the largest ratio over reports is `p(1 − q)/(q(1 − p))`: `(e^{ε/2})² = e^ε` for SUE and
//! `e^ε` for OUE. The `f64` probabilities really used (SUE's `p`, with `q = 1 − p` exact; OUE's
//! `q`, with `p = 1/2` exact) are stepped from the rounded textbook values until this ratio is
//! provably at most `e^ε` (see [the module docs](super)); every bit is an [`ExactBernoulli`].

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::Guarantee;
use tally_accounting::local::{ldp_guarantee, oue_probability, sue_probability};

use super::{SupportAggregator, SupportProbabilities, SupportRule, check_domain, check_epsilon};
use crate::Error;
use crate::protocol::{LocalRandomizer, SingleMessage, WireReport};
use crate::sampling::{ExactBernoulli, exact_binomial};

/// Which unary encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryVariant {
    /// Symmetric unary encoding (basic RAPPOR): `p = e^{ε/2}/(e^{ε/2} + 1)`, `q = 1 − p`.
    Symmetric,
    /// Optimized unary encoding: `p = 1/2`, `q = 1/(e^ε + 1)`.
    Optimized,
}

/// A unary-encoded report: `k` bits, packed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnaryReport {
    words: Vec<u64>,
    len: u32,
}

impl UnaryReport {
    /// The report whose bit `i` is `bit(i)`, for `i` in `0..len`.
    pub fn from_fn(len: u32, mut bit: impl FnMut(u32) -> bool) -> Self {
        let mut words = vec![0u64; (len as usize).div_ceil(64)];
        for i in 0..len {
            if bit(i) {
                words[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        Self { words, len }
    }

    /// The number of bits.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the report has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i` (`false` past the end).
    pub fn get(&self, i: u32) -> bool {
        i < self.len && self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    /// The indices of the set bits, increasing.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            core::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    // Unwrap safety: word indices are below len/64 ≤ 2^26.
                    u32::try_from(w).expect("u32 word index") * 64 + bit
                })
            })
        })
    }
}

/// The SUE or OUE randomizer for items in `0..k`.
#[derive(Clone, Debug, PartialEq)]
pub struct UnaryRandomizer {
    variant: UnaryVariant,
    domain: u32,
    epsilon: f64,
    /// Bit coin for the client's own item.
    one: ExactBernoulli,
    /// Bit coin for every other item.
    zero: ExactBernoulli,
}

impl UnaryRandomizer {
    /// The `variant` randomizer for a domain of `domain = k` items at local `epsilon`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `k ≥ 2` and ε is finite and positive (and not so
    /// small that `f64` probabilities cannot meet it).
    pub fn new(variant: UnaryVariant, domain: u32, epsilon: f64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let epsilon = check_epsilon(epsilon)?;
        let (p, q) = match variant {
            UnaryVariant::Symmetric => {
                let p = sue_probability(epsilon)?;
                (p, 1.0 - p)
            }
            UnaryVariant::Optimized => (0.5, oue_probability(epsilon)?),
        };
        Ok(Self {
            variant,
            domain,
            epsilon,
            one: ExactBernoulli::new(p)?,
            zero: ExactBernoulli::new(q)?,
        })
    }

    /// SUE (basic RAPPOR) for `domain` items at local `epsilon`; see [`UnaryRandomizer::new`].
    ///
    /// # Errors
    ///
    /// As [`UnaryRandomizer::new`].
    pub fn sue(domain: u32, epsilon: f64) -> Result<Self, Error> {
        Self::new(UnaryVariant::Symmetric, domain, epsilon)
    }

    /// OUE for `domain` items at local `epsilon`; see [`UnaryRandomizer::new`].
    ///
    /// # Errors
    ///
    /// As [`UnaryRandomizer::new`].
    pub fn oue(domain: u32, epsilon: f64) -> Result<Self, Error> {
        Self::new(UnaryVariant::Optimized, domain, epsilon)
    }

    /// SUE or OUE.
    pub fn variant(&self) -> UnaryVariant {
        self.variant
    }

    /// The domain size `k`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The local ε the randomizer satisfies.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The guarantee: `(ε, 0)`, replace-one, in the local model.
    pub fn guarantee(&self) -> Guarantee {
        let name = match self.variant {
            UnaryVariant::Symmetric => "SUE",
            UnaryVariant::Optimized => "OUE",
        };
        ldp_guarantee(self.epsilon, name)
    }

    /// `p* = p` (a 1 stays 1) and `q* = q` (a 0 becomes 1).
    pub fn support_probabilities(&self) -> SupportProbabilities {
        SupportProbabilities {
            p: self.one.p(),
            q: self.zero.p(),
        }
    }

    /// `Pr[report = y | item = x]` for the probabilities really used (rounded to `f64`).
    ///
    /// # Panics
    ///
    /// If `x` is not in the domain or `y` does not have `k` bits.
    pub fn output_probability(&self, x: u32, y: &UnaryReport) -> f64 {
        assert!(
            x < self.domain && y.len() == self.domain,
            "outside the domain"
        );
        let SupportProbabilities { p, q } = self.support_probabilities();
        (0..self.domain)
            .map(|i| {
                let on = if i == x { p } else { q };
                if y.get(i) { on } else { 1.0 - on }
            })
            .product()
    }

    /// The client's report for `item`.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> UnaryReport {
        assert!(item < self.domain, "item outside the domain");
        UnaryReport::from_fn(self.domain, |i| {
            if i == item {
                self.one.sample(rng)
            } else {
                self.zero.sample(rng)
            }
        })
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
    pub fn aggregator(&self) -> UnaryAggregator {
        SupportAggregator::new(self.domain, self.support_probabilities(), UnarySupport)
    }

    /// The aggregator after absorbing one report from each of `counts.iter().sum()` clients, of
    /// which `counts[x]` hold item `x`, simulated without forming the reports.
    ///
    /// Every bit of every report is an independent coin, so the number of reports supporting
    /// `x` is exactly `Bin(counts[x], p) + Bin(n − counts[x], q)`, independently across items:
    /// this draws those binomials exactly ([`exact_binomial`]), giving the aggregator the same
    /// law as absorbing `n` randomized reports, in `O(k·n/8)` random words instead of `O(k·n)`
    /// coins.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per domain item.
    pub fn simulate_aggregate<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> UnaryAggregator {
        assert_eq!(
            counts.len(),
            self.domain as usize,
            "one count per domain item"
        );
        let n: u64 = counts.iter().sum();
        let (p, q) = (self.one.p(), self.zero.p());
        let support = counts
            .iter()
            .map(|&c| exact_binomial(c, p, rng) + exact_binomial(n - c, q, rng))
            .collect();
        SupportAggregator::from_counts(support, n, self.support_probabilities(), UnarySupport)
    }
}

/// A unary report supports the items whose bits are set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnarySupport;

impl SupportRule for UnarySupport {
    type Report = UnaryReport;

    fn supported(
        &self,
        report: &UnaryReport,
        domain: u32,
    ) -> Result<impl Iterator<Item = u32>, Error> {
        if report.len() == domain {
            Ok(report.ones())
        } else {
            Err(Error::invalid(
                "report length",
                report.len(),
                "the domain size",
            ))
        }
    }
}

/// Counts set bits of unary reports; mergeable. Its raw counts cannot be read (no `Debug`).
pub type UnaryAggregator = SupportAggregator<UnarySupport>;

/// One character per bit, `0` or `1`, bit 0 first: the report's length is the domain's.
/// A device's report is one message.
impl SingleMessage for UnaryReport {}

impl WireReport for UnaryReport {
    fn encode(self) -> String {
        (0..self.len)
            .map(|i| if self.get(i) { '1' } else { '0' })
            .collect()
    }

    fn decode(text: String) -> Option<Self> {
        let len = u32::try_from(text.len()).ok()?;
        if !text.bytes().all(|b| b == b'0' || b == b'1') {
            return None;
        }
        let bits = text.as_bytes();
        Some(Self::from_fn(len, |i| bits[i as usize] == b'1'))
    }
}

/// A device sends its `k` randomized bits; the aggregator admits exactly `k` of them.
impl LocalRandomizer for UnaryRandomizer {
    type Report = UnaryReport;
    type Aggregator = UnaryAggregator;

    fn domain(&self) -> u32 {
        self.domain
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> UnaryReport {
        UnaryRandomizer::randomize(self, element, rng)
    }

    fn admits(&self, report: &UnaryReport) -> bool {
        report.len() == self.domain
    }

    /// One bit per element: every report has this length.
    fn longest_report(&self) -> u64 {
        u64::from(self.domain)
    }

    fn aggregator(&self) -> UnaryAggregator {
        UnaryRandomizer::aggregator(self)
    }

    /// [`UnaryRandomizer::simulate_aggregate`] of the counts.
    fn aggregate_counts<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Option<UnaryAggregator> {
        Some(self.simulate_aggregate(counts, rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_has_one_spelling_of_its_length() {
        let report = UnaryReport::from_fn(70, |i| i % 3 == 0);
        let text = report.clone().encode();
        assert_eq!(text.len(), 70);
        assert!(text.starts_with("1001001"));
        assert_eq!(UnaryReport::decode(text), Some(report));
        for bad in ["10 1", "102", "1,0", "０"] {
            assert_eq!(UnaryReport::decode(bad.to_owned()), None, "{bad:?}");
        }
        let oue = UnaryRandomizer::oue(4, 1.0).unwrap();
        assert!(oue.admits(&UnaryReport::decode("0110".to_owned()).unwrap()));
        assert!(!oue.admits(&UnaryReport::decode("01101".to_owned()).unwrap()));
        assert!(!oue.admits(&UnaryReport::decode(String::new()).unwrap()));
    }
}
