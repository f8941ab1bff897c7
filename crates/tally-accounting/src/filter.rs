//! A privacy filter by basic composition: releases, each chosen after reading the ones before
//! it, are admitted while the rounded-up sums of their `(ε, δ)` fit a budget. Basic composition
//! is a valid filter against such an adaptive analyst (Rogers, Roth, Ullman and Vadhan 2016,
//! "Privacy Odometers and Filters", Theorem 3.6 for `δ`-sums with `ε`-sums); tight or optimal
//! composition of the realized sequence is not. The server's ledger and the Python package's
//! offline budget both keep their releases by this rule.

use crate::Error;
use crate::composition::compose_basic;

/// A budget `(ε, δ)` kept by basic composition of what it admits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BasicFilter {
    /// The whole budget `(ε, δ)`.
    pub budget: (f64, f64),
}

impl BasicFilter {
    /// A filter of the budget `(epsilon, delta)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `epsilon ≥ 0` is finite and `delta ∈ [0, 1)`.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, Error> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        if !(0.0..1.0).contains(&delta) {
            return Err(Error::invalid("delta", delta, "a number in [0, 1)"));
        }
        Ok(Self {
            budget: (epsilon, delta),
        })
    }

    /// What `charges` spend together: their `(Σ ε, Σ δ)` rounded up (`(∞, 1)` for a charge
    /// outside what composition accepts, which no budget admits).
    #[must_use]
    pub fn spent(charges: &[(f64, f64)]) -> (f64, f64) {
        // One rounded-up sum over every charge (not a running sum, which rounds at each step).
        compose_basic(charges).unwrap_or((f64::INFINITY, 1.0))
    }

    /// Whether `spent` (as [`Self::spent`] gives it) fits the budget.
    #[must_use]
    pub fn fits(&self, spent: (f64, f64)) -> bool {
        spent.0 <= self.budget.0 && spent.1 <= self.budget.1
    }

    /// Whether `charge` may join `charges`: their sums, its own included, fit the budget.
    ///
    /// # Privacy
    ///
    /// Which charges are admitted depends on their own `(ε, δ)` alone, never on the data, so
    /// the filter's stopping rule is itself public; every admitted sequence is within the
    /// budget by basic composition.
    #[must_use]
    pub fn admits(&self, charges: &[(f64, f64)], charge: (f64, f64)) -> bool {
        let mut after = charges.to_vec();
        after.push(charge);
        self.fits(Self::spent(&after))
    }

    /// What is left after `spent`, rounded down: a charge of at most that is admitted
    /// (negative where `spent` is over the budget).
    #[must_use]
    pub fn remaining(&self, spent: (f64, f64)) -> (f64, f64) {
        (
            less_rounded_down(self.budget.0, spent.0),
            less_rounded_down(self.budget.1, spent.1),
        )
    }
}

/// `total − part`, rounded down so that it and `part` add up (rounded up, as basic composition
/// adds) to at most `total`; negative where `part` exceeds `total`.
#[must_use]
pub fn less_rounded_down(total: f64, part: f64) -> f64 {
    let mut left = total - part;
    while left > 0.0
        && compose_basic(&[(left, 0.0), (part, 0.0)]).map_or(true, |(sum, _)| sum > total)
    {
        left = left.next_down();
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_while_the_rounded_up_sums_fit() {
        let filter = BasicFilter {
            budget: (1.0, 1e-6),
        };
        let charges = [(0.5, 4e-7), (0.25, 4e-7)];
        assert!(filter.admits(&charges, (0.25, 2e-7)));
        assert!(!filter.admits(&charges, (0.25, 3e-7)));
        assert!(!filter.admits(&charges, (0.26, 0.0)));
        let spent = BasicFilter::spent(&charges);
        assert_eq!(spent, compose_basic(&charges).unwrap());
        let (epsilon, delta) = filter.remaining(spent);
        assert!(filter.admits(&charges, (epsilon, delta)));
        assert!(!filter.admits(&charges, (epsilon.next_up(), delta)));
    }

    #[test]
    fn a_charge_composition_refuses_is_never_admitted() {
        let filter = BasicFilter {
            budget: (10.0, 0.5),
        };
        assert!(!filter.admits(&[], (f64::NAN, 0.0)));
        assert!(!filter.admits(&[], (-1.0, 0.0)));
    }
}
