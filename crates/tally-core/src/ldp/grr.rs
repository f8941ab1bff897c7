//! Generalized randomized response (k-RR, "direct encoding"; docs/algorithms.md §7.4).
//!
//! The client reports its item with probability `p = e^ε/(e^ε + k − 1)` and otherwise an item
//! drawn uniformly from the `k − 1` others. The report supports exactly the item it names, so
//! `p* = p` and `q* = (1 − p)/(k − 1)`, and the null variance is `n (e^ε + k − 2)/(e^ε − 1)²`.
//!
//! # Privacy
//!
//! ε-LDP (pure, local model, replace-one: any two inputs). For items `x ≠ x'` the largest
//! ratio is `Pr[y = x | x]/Pr[y = x | x'] = p (k − 1)/(1 − p)`, which is `e^ε` for the textbook
//! `p`; the `f64` `p` really used is rounded down until this ratio is provably at most `e^ε`
//! (see [the module docs](super)). The keep coin is an [`ExactBernoulli`] of that `f64` and the
//! other item is exactly uniform, so the stated ratio is the true one.

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::Guarantee;
use tally_accounting::local::{ldp_guarantee, rr_keep_probability};

use super::{SupportAggregator, SupportProbabilities, SupportRule, check_domain, check_epsilon};
use crate::Error;
use crate::protocol::LocalRandomizer;
use crate::protocol::wire::decimal_digits;
use crate::sampling::{ExactBernoulli, uniform_below};

/// The k-RR randomizer for items in `0..k`.
#[derive(Clone, Debug, PartialEq)]
pub struct Grr {
    domain: u32,
    epsilon: f64,
    keep: ExactBernoulli,
}

impl Grr {
    /// The randomizer for a domain of `domain = k` items at local `epsilon`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `k ≥ 2` and ε is finite and positive (and not so
    /// small that `f64` probabilities cannot meet it).
    pub fn new(domain: u32, epsilon: f64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let epsilon = check_epsilon(epsilon)?;
        let p = rr_keep_probability(epsilon, u64::from(domain))?;
        Ok(Self {
            domain,
            epsilon,
            keep: ExactBernoulli::new(p)?,
        })
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
        ldp_guarantee(self.epsilon, "GRR")
    }

    /// The probability of reporting the true item.
    pub fn keep_probability(&self) -> f64 {
        self.keep.p()
    }

    /// `p* = p` and `q* = (1 − p)/(k − 1)`.
    pub fn support_probabilities(&self) -> SupportProbabilities {
        let p = self.keep.p();
        SupportProbabilities {
            p,
            q: (1.0 - p) / f64::from(self.domain - 1),
        }
    }

    /// `Pr[report = y | item = x]` for the probabilities really used (rounded to `f64`).
    ///
    /// # Panics
    ///
    /// If `x` or `y` is not in the domain.
    pub fn output_probability(&self, x: u32, y: u32) -> f64 {
        assert!(
            x < self.domain && y < self.domain,
            "item outside the domain"
        );
        let SupportProbabilities { p, q } = self.support_probabilities();
        if x == y { p } else { q }
    }

    /// The client's report for `item`.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> u32 {
        assert!(item < self.domain, "item outside the domain");
        if self.keep.sample(rng) {
            return item;
        }
        // Unwrap safety: the draw is below k − 1 ≤ u32::MAX − 1.
        let other = u32::try_from(uniform_below(u64::from(self.domain - 1), rng))
            .expect("below the domain size");
        if other >= item { other + 1 } else { other }
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
    pub fn aggregator(&self) -> GrrAggregator {
        SupportAggregator::new(self.domain, self.support_probabilities(), GrrSupport)
    }
}

/// A k-RR report supports exactly the item it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrrSupport;

impl SupportRule for GrrSupport {
    type Report = u32;

    fn supported(&self, report: &u32, domain: u32) -> Result<impl Iterator<Item = u32>, Error> {
        if *report < domain {
            Ok(std::iter::once(*report))
        } else {
            Err(Error::invalid("report", report, "an item in the domain"))
        }
    }
}

/// Counts k-RR reports; mergeable. Its raw counts cannot be read (no `Debug`).
pub type GrrAggregator = SupportAggregator<GrrSupport>;

/// A device sends its randomized item, an index below `k` (decimal on the wire).
impl LocalRandomizer for Grr {
    type Report = u32;
    type Aggregator = GrrAggregator;

    fn domain(&self) -> u32 {
        self.domain
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> u32 {
        Grr::randomize(self, element, rng)
    }

    fn admits(&self, report: &u32) -> bool {
        *report < self.domain
    }

    /// The largest element, in decimal.
    fn longest_report(&self) -> u64 {
        decimal_digits(u64::from(self.domain - 1))
    }

    fn aggregator(&self) -> GrrAggregator {
        Grr::aggregator(self)
    }
}
