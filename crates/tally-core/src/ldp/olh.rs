//! Optimized local hashing (OLH; docs/algorithms.md §7.4).
//!
//! Each client draws its own hash function `h: [k] → [g]` from a universal family, with
//! `g = ⌈e^ε + 1⌉`, and sends `(h, GRR_g(h(x)))`: randomized response over `[g]` applied to
//! its hashed item. The report `(h, y)` supports every item `x` with `h(x) = y`; the server
//! counts the supporting reports of each item.
//!
//! # Hash family
//!
//! [`LocalHash`] is the Carter–Wegman family `h_{a,b}(x) = ((a·x + b) mod P) mod g` with the
//! Mersenne prime `P = 2^61 − 1`, `a` uniform in `[1, P)` and `b` uniform in `[0, P)` (both
//! exactly uniform, drawn by the client), on `u32` ids (all below `P`). It is portable integer
//! arithmetic. What the analysis relies on: for distinct `x, x'`, the pair
//! `((a x + b) mod P, (a x' + b) mod P)` is uniform over the pairs of distinct residues, so the
//! collision probability `c = Pr[h(x) = h(x')]` is the *same* for every pair of distinct items,
//! namely `c = m (P + r − g)/(P (P − 1))` where `P = m g + r`, which is `1/g` up to a relative
//! `(g − 1)/P < 2^-29`. The support probabilities use this exact `c`:
//! `p* = p` and `q* = p c + (1 − p)(1 − c)/(g − 1)` (`= 1/g` when `c = 1/g`), so the estimator
//! stays unbiased. Users' hashes are independent, so the variance formula of §7.4 is exact.
//!
//! `g` is computed in `f64` from `libm::exp`; a different integer `g` would change the accuracy,
//! never the privacy, which is calibrated for the `g` actually used. The OLH null variance is
//! `n (e^ε + g − 1)²/((g − 1)(e^ε − 1)²)`, which is `n 4e^ε/(e^ε − 1)²` at `g = e^ε + 1`.
//!
//! # Privacy
//!
//! ε-LDP (pure, local model, replace-one: any two inputs). The hash is drawn independently of
//! the item, and given the hash the value is randomized response over `[g]`, whose largest
//! ratio is `p (g − 1)/(1 − p) ≤ e^ε` for the `f64` keep probability `p` really used (rounded
//! down from `e^ε/(e^ε + g − 1)` until provably within `e^ε`; see [the module docs](super)).

use rand::Rng;
use tally_accounting::Guarantee;

use super::grr::Grr;
use tally_accounting::local::ldp_guarantee;

use super::{SupportAggregator, SupportProbabilities, SupportRule, check_domain, check_epsilon};
use crate::Error;
use crate::protocol::wire::decimal_digits;
use crate::protocol::{LocalRandomizer, SingleMessage, WireReport};
use crate::sampling::uniform_below;

/// The Mersenne prime `2^61 − 1` of the hash family.
pub const HASH_PRIME: u64 = (1 << 61) - 1;

/// One member `h_{a,b}(x) = ((a·x + b) mod P) mod g` of the hash family, `P = 2^61 − 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalHash {
    a: u64,
    b: u64,
}

impl LocalHash {
    /// The hash with multiplier `a ∈ [1, P)` and offset `b ∈ [0, P)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `a` or `b` is out of range.
    pub fn new(a: u64, b: u64) -> Result<Self, Error> {
        if !(1..HASH_PRIME).contains(&a) {
            return Err(Error::invalid("a", a, "an integer in [1, 2^61 − 1)"));
        }
        if b >= HASH_PRIME {
            return Err(Error::invalid("b", b, "an integer in [0, 2^61 − 1)"));
        }
        Ok(Self { a, b })
    }

    /// A uniformly random member of the family.
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Self {
            a: 1 + uniform_below(HASH_PRIME - 1, rng),
            b: uniform_below(HASH_PRIME, rng),
        }
    }

    /// The multiplier `a`.
    pub fn a(&self) -> u64 {
        self.a
    }

    /// The offset `b`.
    pub fn b(&self) -> u64 {
        self.b
    }

    /// `h(x) = ((a·x + b) mod P) mod g`.
    ///
    /// # Panics
    ///
    /// If `g = 0`.
    pub fn apply(&self, x: u32, g: u32) -> u32 {
        let t = u128::from(self.a) * u128::from(x) + u128::from(self.b);
        // 2^61 ≡ 1 (mod P): fold the high bits onto the low ones.
        let s = (t as u64 & HASH_PRIME) + (t >> 61) as u64; // < 2^61 + 2^33
        let mut s = (s & HASH_PRIME) + (s >> 61);
        if s >= HASH_PRIME {
            s -= HASH_PRIME;
        }
        // Unwrap safety: the remainder is below g ≤ u32::MAX.
        u32::try_from(s % u64::from(g)).expect("below g")
    }
}

/// The exact collision probability `Pr[h(x) = h(x')]` of the family for `x ≠ x'`.
fn collision_probability(g: u32) -> f64 {
    let p = u128::from(HASH_PRIME);
    let g = u128::from(g);
    let (m, r) = (p / g, p % g);
    // m (P + r − g) / (P (P − 1)), as a ratio of two quotients each within half an ulp.
    (m as f64 / p as f64) * ((p + r - g) as f64 / (p - 1) as f64)
}

/// An OLH report: the client's hash and its randomized hashed item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OlhReport {
    /// The client's hash function.
    pub hash: LocalHash,
    /// The randomized value in `0..g`.
    pub value: u32,
}

/// The OLH randomizer for items in `0..k`.
#[derive(Clone, Debug, PartialEq)]
pub struct Olh {
    domain: u32,
    epsilon: f64,
    g: u32,
    /// k-RR over the `g` hash values.
    values: Grr,
}

impl Olh {
    /// The randomizer for a domain of `domain = k` items at local `epsilon`, hashing to
    /// `g = ⌈e^ε + 1⌉` values.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `k ≥ 2`, ε is finite and positive (and not so small
    /// that `f64` probabilities cannot meet it), and `g < 2^32` (ε below about 22.18).
    pub fn new(domain: u32, epsilon: f64) -> Result<Self, Error> {
        let domain = check_domain(domain)?;
        let epsilon = check_epsilon(epsilon)?;
        let g = (libm::exp(epsilon) + 1.0).ceil();
        if g > f64::from(u32::MAX) {
            return Err(Error::invalid(
                "epsilon",
                epsilon,
                "small enough that g = ceil(e^epsilon + 1) fits in a u32",
            ));
        }
        let g = g as u32;
        Ok(Self {
            domain,
            epsilon,
            g,
            values: Grr::new(g, epsilon)?,
        })
    }

    /// The domain size `k`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The hash range `g`.
    pub fn g(&self) -> u32 {
        self.g
    }

    /// The local ε the randomizer satisfies.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The guarantee: `(ε, 0)`, replace-one, in the local model.
    pub fn guarantee(&self) -> Guarantee {
        ldp_guarantee(self.epsilon, "OLH")
    }

    /// The probability of keeping the hashed item.
    pub fn keep_probability(&self) -> f64 {
        self.values.keep_probability()
    }

    /// `p* = p` and `q* = p c + (1 − p)(1 − c)/(g − 1)` with `c` the family's collision
    /// probability (`q* ≈ 1/g`).
    pub fn support_probabilities(&self) -> SupportProbabilities {
        let p = self.values.keep_probability();
        let c = collision_probability(self.g);
        SupportProbabilities {
            p,
            q: p * c + (1.0 - p) * (1.0 - c) / f64::from(self.g - 1),
        }
    }

    /// `Pr[value = y | item = x, hash]` for the probabilities really used. The hash is drawn
    /// independently of the item, so this is the report's probability up to a factor that
    /// does not depend on `x`.
    ///
    /// # Panics
    ///
    /// If `x` is not in the domain or `report.value ≥ g`.
    pub fn output_probability(&self, x: u32, report: &OlhReport) -> f64 {
        assert!(
            x < self.domain && report.value < self.g,
            "outside the domain"
        );
        let p = self.values.keep_probability();
        if report.hash.apply(x, self.g) == report.value {
            p
        } else {
            (1.0 - p) / f64::from(self.g - 1)
        }
    }

    /// The client's report for `item`.
    ///
    /// # Panics
    ///
    /// If `item` is not in the domain.
    pub fn randomize<R: Rng + ?Sized>(&self, item: u32, rng: &mut R) -> OlhReport {
        assert!(item < self.domain, "item outside the domain");
        let hash = LocalHash::random(rng);
        let hashed = hash.apply(item, self.g);
        let value = self.values.randomize(hashed, rng);
        OlhReport { hash, value }
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
    pub fn aggregator(&self) -> OlhAggregator {
        SupportAggregator::new(
            self.domain,
            self.support_probabilities(),
            OlhSupport { g: self.g },
        )
    }
}

/// An OLH report supports every item its hash maps to its value (`O(k)` work per report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OlhSupport {
    g: u32,
}

impl SupportRule for OlhSupport {
    type Report = OlhReport;

    fn supported(
        &self,
        report: &OlhReport,
        domain: u32,
    ) -> Result<impl Iterator<Item = u32>, Error> {
        if report.value >= self.g {
            return Err(Error::invalid("report value", report.value, "below g"));
        }
        let (hash, value, g) = (report.hash, report.value, self.g);
        Ok((0..domain).filter(move |&x| hash.apply(x, g) == value))
    }
}

/// Counts, for every item, the OLH reports that support it; mergeable. Its raw counts cannot
/// be read (no `Debug`).
pub type OlhAggregator = SupportAggregator<OlhSupport>;

/// `a:b:value`, each in canonical decimal; a report whose hash is not in the family does not
/// decode.
/// A device's report is one message.
impl SingleMessage for OlhReport {}

impl WireReport for OlhReport {
    fn encode(self) -> String {
        format!("{}:{}:{}", self.hash.a, self.hash.b, self.value)
    }

    fn decode(text: String) -> Option<Self> {
        let mut parts = text.split(':').map(str::to_owned);
        let (a, b, value) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let hash = LocalHash::new(u64::decode(a)?, u64::decode(b)?).ok()?;
        Some(Self {
            hash,
            value: u32::decode(value)?,
        })
    }
}

/// A device sends its hash and its randomized hashed item; the aggregator admits a value
/// below `g`.
impl LocalRandomizer for Olh {
    type Report = OlhReport;
    type Aggregator = OlhAggregator;

    fn domain(&self) -> u32 {
        self.domain
    }

    fn randomize<R: Rng + ?Sized>(&self, element: u32, rng: &mut R) -> OlhReport {
        Olh::randomize(self, element, rng)
    }

    fn admits(&self, report: &OlhReport) -> bool {
        report.value < self.g
    }

    /// The largest multiplier and offset and the largest value, with two colons.
    fn longest_report(&self) -> u64 {
        2 * decimal_digits(HASH_PRIME - 2) + decimal_digits(u64::from(self.g - 1)) + 2
    }

    fn aggregator(&self) -> OlhAggregator {
        Olh::aggregator(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_has_one_spelling_and_a_hash_of_the_family() {
        let report = OlhReport {
            hash: LocalHash::new(5, 0).unwrap(),
            value: 2,
        };
        assert_eq!(report.encode(), "5:0:2");
        assert_eq!(OlhReport::decode("5:0:2".to_owned()), Some(report));
        for bad in [
            "5:0",
            "5:0:2:1",
            "05:0:2",
            "0:0:2",
            "5:-0:2",
            "5:0:x",
            "2305843009213693951:0:1",
        ] {
            assert_eq!(OlhReport::decode(bad.to_owned()), None, "{bad:?}");
        }
        let olh = Olh::new(8, 1.0).unwrap();
        assert!(olh.admits(&report) && olh.g() == 4);
        assert!(!olh.admits(&OlhReport { value: 4, ..report }));
    }

    #[test]
    fn hash_matches_naive_arithmetic() {
        let hashes = [
            LocalHash::new(1, 0).unwrap(),
            LocalHash::new(HASH_PRIME - 1, HASH_PRIME - 1).unwrap(),
            LocalHash::new(0x0123_4567_89ab_cdef, 42).unwrap(),
        ];
        for h in hashes {
            for x in [0, 1, 7, 1 << 31, u32::MAX] {
                for g in [2, 3, 4, 22, u32::MAX] {
                    let naive = ((u128::from(h.a) * u128::from(x) + u128::from(h.b))
                        % u128::from(HASH_PRIME))
                        % u128::from(g);
                    assert_eq!(u128::from(h.apply(x, g)), naive);
                }
            }
        }
        assert!(LocalHash::new(0, 0).is_err());
        assert!(LocalHash::new(1, HASH_PRIME).is_err());
    }

    #[test]
    fn collision_probability_is_one_over_g_to_f64_precision() {
        for g in [2u32, 3, 4, 22, 1000] {
            let c = collision_probability(g);
            assert!((c * f64::from(g) - 1.0).abs() < 1e-15, "{g} {c}");
        }
    }
}
