//! Subset selection (Ye and Barg, "Optimal schemes for discrete distribution estimation under
//! locally differential privacy", IEEE Trans. Inf. Theory 64(8), 2018; Wang et al., "Mutual
//! information optimally local private discrete distribution estimation", arXiv 1607.08025):
//! the ε-LDP frequency oracle whose error is order-optimal in every regime of ε.
//!
//! Over a domain of `d` items a client reports a set of `k` items: with probability
//! `p = k e^ε/(k e^ε + d − k)` a uniformly random `k`-subset that contains its own item,
//! otherwise a uniformly random `k`-subset of the other `d − 1` items. The subset size is the
//! integer next to `d/(e^ε + 1)` of smaller estimation variance (§IV of Ye and Barg): `k = 1` is
//! randomized response, and `k ≈ d/2` at small ε behaves like a unary encoding while sending
//! `k` ids instead of `d` bits.
//!
//! A report supports the items it lists: `p* = p` and, for another item,
//! `q* = (p (k − 1) + (1 − p) k)/(d − 1)`, so the estimates of [`super::SupportProbabilities`]
//! apply.
//!
//! # Privacy
//!
//! ε-LDP (pure, local model, replace-one: any two inputs). A `k`-subset `S` has probability
//! `p / C(d − 1, k − 1)` for a client whose item is in `S` and `(1 − p)/C(d − 1, k)` for one
//! whose item is not, so the largest ratio over two inputs is
//! `p (d − k)/((1 − p) k)`, which is `e^ε` for the textbook `p`; the `f64` `p` really used is
//! rounded down until this ratio is provably at most `e^ε` (see [the module docs](super)). The
//! inclusion coin is an [`ExactBernoulli`] of that `f64` and the subset is exactly uniform
//! ([`uniform_subset`]), so the stated ratio is the true one.

use rand::Rng;
use rand_distr::Distribution;
use tally_accounting::Guarantee;
use tally_accounting::local::{inclusion_probability, ldp_guarantee};

use super::{SupportAggregator, SupportProbabilities, SupportRule, check_domain, check_epsilon};
use crate::Error;
use crate::protocol::wire::decimal_digits_below;
use crate::protocol::{
    LocalRandomizer, SingleMessage, WireReport, decode_messages, encode_messages,
};
use crate::sampling::{ExactBernoulli, uniform_subset};

/// The subset-selection randomizer for items in `0..d`.
#[derive(Clone, Debug, PartialEq)]
pub struct SubsetSelection {
    domain: u32,
    epsilon: f64,
    size: u32,
    inside: ExactBernoulli,
}

impl SubsetSelection {
    /// The randomizer for a domain of `domain = d` items at local `epsilon`, with the subset
    /// size of smaller variance among the two integers next to `d/(e^ε + 1)` (at least 1,
    /// below `d`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `d ≥ 2` and ε is finite and positive (and not so
    /// small that `f64` probabilities cannot meet it).
    pub fn new(domain: u32, epsilon: f64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let epsilon = check_epsilon(epsilon)?;
        let ideal = f64::from(domain) / (libm::exp(epsilon) + 1.0);
        let (below, above) = (ideal.floor().max(1.0), ideal.ceil().max(1.0));
        let mut best: Option<Self> = None;
        for size in [below, above] {
            let size = (size as u32).min(domain - 1);
            let candidate = Self::with_size(domain, epsilon, size)?;
            if best
                .as_ref()
                .is_none_or(|b| candidate.null_variance_per_client() < b.null_variance_per_client())
            {
                best = Some(candidate);
            }
        }
        Ok(best.expect("two candidates were tried"))
    }

    /// The randomizer reporting `size` items of `domain`, at local `epsilon`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and [`Error::InvalidParameter`] unless `1 ≤ size < domain`.
    pub fn with_size(domain: u32, epsilon: f64, size: u32) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let epsilon = check_epsilon(epsilon)?;
        if !(1..domain).contains(&size) {
            return Err(Error::invalid(
                "subset size",
                size,
                "at least 1 and below the domain size",
            ));
        }
        let p = inclusion_probability(epsilon, u64::from(domain - size), u64::from(size))?;
        Ok(Self {
            domain,
            epsilon,
            size,
            inside: ExactBernoulli::new(p)?,
        })
    }

    /// The domain size `d`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The number `k` of items a report lists.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The local ε the randomizer satisfies.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The guarantee: `(ε, 0)`, replace-one, in the local model.
    pub fn guarantee(&self) -> Guarantee {
        ldp_guarantee(self.epsilon, "subset selection")
    }

    /// The probability `p` that a report lists the client's own item.
    pub fn inclusion_probability(&self) -> f64 {
        self.inside.p()
    }

    /// `p* = p` and `q* = (p (k − 1) + (1 − p) k)/(d − 1)`.
    pub fn support_probabilities(&self) -> SupportProbabilities {
        let p = self.inside.p();
        let k = f64::from(self.size);
        SupportProbabilities {
            p,
            q: (p * (k - 1.0) + (1.0 - p) * k) / f64::from(self.domain - 1),
        }
    }

    /// `Pr[report = subset | item = x]` for the probabilities really used; 0 for a list that is
    /// not a `k`-subset of the domain in increasing order.
    ///
    /// # Panics
    ///
    /// If `x` is not in the domain.
    pub fn output_probability(&self, x: u32, subset: &[u32]) -> f64 {
        assert!(x < self.domain, "item outside the domain");
        if !self.admits(subset) {
            return 0.0;
        }
        let others = u64::from(self.domain - 1);
        let k = u64::from(self.size);
        if subset.binary_search(&x).is_ok() {
            self.inside.p() / binomial(others, k - 1)
        } else {
            (1.0 - self.inside.p()) / binomial(others, k)
        }
    }

    /// The client's report for `item`: `k` distinct items, in increasing order.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> Vec<u32> {
        assert!(item < self.domain, "item outside the domain");
        let inside = self.inside.sample(rng);
        let others = self.size - u32::from(inside);
        // Unwrap safety: `others ≤ k < d`, and a subset of at most 2^32 ids fits.
        let drawn = uniform_subset(u64::from(self.domain - 1), u64::from(others), rng)
            .expect("a subset of the other items");
        // The other items are `0..d` without `item`: index `i` is `i`, or `i + 1` from `item` on.
        let mut subset: Vec<u32> = drawn
            .into_iter()
            .map(|i| {
                let i = i as u32;
                if i >= item { i + 1 } else { i }
            })
            .collect();
        if inside {
            let at = subset.partition_point(|&y| y < item);
            subset.insert(at, item);
        }
        subset
    }

    /// Whether `subset` is a report of this randomizer: `k` items of the domain, strictly
    /// increasing.
    pub fn admits(&self, subset: &[u32]) -> bool {
        lists_subset(subset, self.size, self.domain)
    }

    /// The null variance of the count estimate for `n` clients.
    pub fn variance(&self, n: u64) -> f64 {
        self.support_probabilities().null_variance(n)
    }

    /// The variance of the count estimate of an item held by `count` of `n` clients.
    pub fn variance_at(&self, n: u64, count: u64) -> f64 {
        self.support_probabilities().variance(n, count)
    }

    /// The null variance per client, which the subset size minimises.
    fn null_variance_per_client(&self) -> f64 {
        self.variance(1)
    }

    /// An empty aggregator for this randomizer's reports.
    pub fn aggregator(&self) -> SubsetSelectionAggregator {
        SupportAggregator::new(
            self.domain,
            self.support_probabilities(),
            SubsetSupport { size: self.size },
        )
    }
}

/// Whether `report` lists `size` items below `domain`, strictly increasing.
fn lists_subset(report: &[u32], size: u32, domain: u32) -> bool {
    report.len() == size as usize
        && report.windows(2).all(|w| w[0] < w[1])
        && report.last().is_some_and(|&y| y < domain)
}

/// `C(n, r)` as an `f64` (for output probabilities in tests of small domains).
fn binomial(n: u64, r: u64) -> f64 {
    (0..r).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// A subset-selection report: `k` distinct items in increasing order, written on the wire as
/// a list of messages ([`encode_messages`]): decimal ids separated by commas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubsetReport(pub Vec<u32>);

impl SingleMessage for SubsetReport {}

impl WireReport for SubsetReport {
    fn encode(self) -> String {
        encode_messages(self.0)
    }

    /// Strictly increasing ids only: a repeated id is not the one spelling of any report.
    fn decode(text: String) -> Option<Self> {
        let ids = decode_messages(&text)?;
        ids.windows(2).all(|w| w[0] < w[1]).then_some(Self(ids))
    }
}

/// A subset-selection report supports the `k` items it lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubsetSupport {
    size: u32,
}

impl SupportRule for SubsetSupport {
    type Report = SubsetReport;

    fn supported(
        &self,
        report: &SubsetReport,
        domain: u32,
    ) -> Result<impl Iterator<Item = u32>, Error> {
        if lists_subset(&report.0, self.size, domain) {
            Ok(report.0.iter().copied())
        } else {
            Err(Error::invalid(
                "report",
                format!("{:?}", report.0),
                "the subset size's number of increasing items of the domain",
            ))
        }
    }
}

/// Counts subset-selection reports; mergeable. Its raw counts cannot be read (no `Debug`).
pub type SubsetSelectionAggregator = SupportAggregator<SubsetSupport>;

/// A device sends its `k` items (decimal ids in increasing order, separated by commas).
impl LocalRandomizer for SubsetSelection {
    type Report = SubsetReport;
    type Aggregator = SubsetSelectionAggregator;

    fn domain(&self) -> u32 {
        self.domain
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> SubsetReport {
        SubsetReport(SubsetSelection::randomize(self, element, rng))
    }

    fn admits(&self, report: &SubsetReport) -> bool {
        SubsetSelection::admits(self, &report.0)
    }

    /// The `k` largest elements, in decimal, separated by commas.
    fn longest_report(&self) -> u64 {
        let (domain, size) = (u64::from(self.domain), u64::from(self.size));
        decimal_digits_below(domain) - decimal_digits_below(domain - size) + size - 1
    }

    fn aggregator(&self) -> SubsetSelectionAggregator {
        SubsetSelection::aggregator(self)
    }
}
