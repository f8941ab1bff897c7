//! Standard pure local-DP frequency oracles (docs/algorithms.md §7.2 and §7.4).
//!
//! Each client holds one item, a `u32` id in `0..k`, and sends one randomized report; the server
//! counts how many reports *support* each item and debiases the counts.
//!
//! - [`grr`]: generalized randomized response (k-RR, "direct encoding").
//! - [`unary`]: symmetric unary encoding (SUE, basic RAPPOR) and optimized unary encoding (OUE).
//! - [`olh`]: optimized local hashing (OLH).
//! - [`hadamard`]: basic Hadamard response (HR), decoded with a fast Walsh–Hadamard transform.
//! - [`subset_selection`]: subset selection (SS), `k` items per report.
//!
//! Every oracle is *pure*: an item's report supports it with probability `p*` and supports any
//! other item with probability `q*` ([`SupportProbabilities`]), independently across clients.
//! The estimate of the number of clients holding `x` is `ĉ(x) = (S(x) − n q*)/(p* − q*)`, where
//! `S(x)` counts the reports supporting `x`; it is unbiased and its variance is exactly
//! `n q*(1 − q*)/(p* − q*)² + c(x)(1 − p* − q*)/(p* − q*)` (§7.4).
//!
//! # Privacy
//!
//! All five randomizers are ε-LDP in the local model: pure (`δ = 0`) and replace-one over *any*
//! two inputs, `Pr[R(x) = y] ≤ e^ε Pr[R(x') = y]` for all items `x, x'` and reports `y`.
//!
//! The probabilities each randomizer flips are calibrated by
//! [`tally_accounting::local`]: the textbook values rounded and stepped, one ulp at a time,
//! until the ratio of the probabilities really used provably holds within `e^ε`. The
//! randomizers sample them exactly ([`ExactBernoulli`](crate::sampling::ExactBernoulli)) and
//! the estimators debias with them, so they stay unbiased.

use tally_accounting::ErrorLaw;

use crate::Error;

mod domain_histogram;
pub mod grr;
pub mod hadamard;
pub mod olh;
pub mod subset_selection;
pub mod support;
pub mod unary;

pub use grr::{Grr, GrrAggregator, GrrSupport};
pub use hadamard::{HadamardAggregator, HadamardResponse};
pub use olh::{LocalHash, Olh, OlhAggregator, OlhReport, OlhSupport};
pub use subset_selection::{
    SubsetReport, SubsetSelection, SubsetSelectionAggregator, SubsetSupport,
};
pub use support::{SupportAggregator, SupportRule};
pub use unary::{UnaryAggregator, UnaryRandomizer, UnaryReport, UnarySupport, UnaryVariant};

/// The support probabilities of a pure frequency oracle (docs/algorithms.md §7.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SupportProbabilities {
    /// `p*`: the probability that a client's report supports the client's own item.
    pub p: f64,
    /// `q*`: the probability that a client's report supports a given other item.
    pub q: f64,
}

impl SupportProbabilities {
    /// The variance of the count estimate `ĉ(x)` for `n` clients of which `count` hold `x`:
    /// `n q*(1 − q*)/(p* − q*)² + count (1 − p* − q*)/(p* − q*)`.
    pub fn variance(&self, n: u64, count: u64) -> f64 {
        let Self { p, q } = *self;
        let gap = p - q;
        n as f64 * q * (1.0 - q) / (gap * gap) + count as f64 * (1.0 - p - q) / gap
    }

    /// The law of the count estimate for `n` clients of which `count` hold `x`: the support
    /// count `Bin(count, p*) + Bin(n − count, q*)`, de-biased.
    pub fn error_law(&self, n: u64, count: u64) -> ErrorLaw {
        ErrorLaw::DebiasedBinomials {
            parts: [(count, self.p), (n.saturating_sub(count), self.q)],
            gap: self.p - self.q,
        }
    }

    /// The null variance, for an item nobody holds: `n q*(1 − q*)/(p* − q*)²`.
    pub fn null_variance(&self, n: u64) -> f64 {
        self.variance(n, 0)
    }

    /// The unbiased count estimate from `support` supporting reports out of `n`.
    pub(crate) fn debias(&self, support: f64, n: u64) -> f64 {
        (support - n as f64 * self.q) / (self.p - self.q)
    }
}

/// Validates the domain size `k ≥ 2`.
pub(crate) fn check_domain(domain: u32) -> Result<u32, Error> {
    if domain >= 2 {
        Ok(domain)
    } else {
        Err(Error::invalid("domain", domain, "at least 2 items"))
    }
}

/// Validates the local ε: finite and positive.
pub(crate) fn check_epsilon(epsilon: f64) -> Result<f64, Error> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(epsilon)
    } else {
        Err(Error::invalid(
            "epsilon",
            epsilon,
            "a finite number above 0",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_epsilons_and_domains_are_rejected() {
        assert!(check_epsilon(0.0).is_err());
        assert!(check_epsilon(f64::NAN).is_err());
        assert!(check_epsilon(f64::INFINITY).is_err());
        assert!(check_domain(1).is_err());
    }
}
