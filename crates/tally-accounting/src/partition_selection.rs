//! Partition selection over an unknown domain with exact integer noise: which items a trusted
//! aggregator may release from the exact counts of the items it saw, when each client
//! contributes at most `k` distinct items (docs/privacy/partition-selection.md).
//!
//! Three selections, each calibrated from `(ε, δ)`, the bound `k` and the neighbour relation:
//!
//! | [`Method`] | releases an item held by `c` clients when | estimate |
//! | --- | --- | --- |
//! | `laplace-threshold` | `c + X ≥ T`, `X` discrete Laplace of scale `t` | `c + X` |
//! | `gaussian-threshold` | `c + X ≥ T`, `X ~ N_Z(0, σ²)` | `c + X` |
//! | `truncated-geometric` | a coin of probability `π_c` comes up heads (Desfontaines, Voss, Gipson and Mandayam, PoPETs 2022, Theorem 1) | none: the item alone |
//!
//! An item no client holds is never looked at, so never released.
//!
//! # The exact `δ` of a thresholded noise
//!
//! Neighbours differ by one client whose items raise `a ≤ k` counts by one and lower `b ≤ k`
//! counts by one (add/remove: `(a, b) = (k, 0)` or `(0, k)`; replace-one: `a, b ≤ k`). Of the
//! raised counts, `m₁` belong to items nobody else holds (the other dataset never releases
//! them); of the lowered ones, `m₂`. Write `p₁ = P[1 + X ≥ T]`, the probability that such an
//! item is released, and `L = −ln(1 − p₁)`. Every count is noised independently, so the output
//! is a product over items; the items the client does not touch have the same law on both
//! sides and drop out. On the `m₁` items only one side can release, and on the `m₂` items the
//! other side releases nothing but `⊥`; conditioning on them gives, for the direction `P` (the
//! dataset with the raised counts) against `Q`,
//!
//! `H_{e^ε}(P‖Q) = 1 − e^{−m₁L} + e^{−m₁L} · D_j(ε + (m₁ − m₂)L)`, `j = a + b − m₁ − m₂`,
//!
//! where `D_j(x)` is the hockey-stick divergence at `e^x` of `j` noised counts shifted by one.
//! Thresholding the shared counts is post-processing, and counts far above `T` are always
//! released, so `D_j` is the divergence of the plain noise and the supremum over datasets is
//! the maximum of this expression over `m₁ ≤ a`, `m₂ ≤ b` (a larger `a` or `b` never helps the
//! client: dropping a count is post-processing). The other direction is the same expression
//! with the roles of `a` and `b` swapped, so the maximum over the shapes above covers both.
//!
//! * Discrete Laplace of scale `t`: `D_j(x) = 0` when `x ≥ j/t`. At `ε = Δ₁/t` (`Δ₁ = k`
//!   add/remove, `2k` replace-one) and `L ≤ 1/t` every term's `x` is at least `j/t`, so the
//!   exact `δ` is `1 − (1 − p₁)^k`, reached when all the client's items are its own.
//! * Discrete Gaussian: `D_j` exact for `j ≤ 2` ([`crate::central::gaussian_cells_delta`]),
//!   the Rényi bound `ρ_λ = λj/(2σ²)` (CKS 2020, Thm 4) converted by CKS Prop. 12 for
//!   `j ≥ 3`; for `x < 0`, `D_j(x) = 1 − e^x + e^x·D_j(−x)` (the pair is symmetric). For
//!   `k = 1` add/remove the expression is `max(p₁, D₁(ε))`: the threshold and the noise each
//!   get the whole `δ`, where Google's calibration splits it in halves.
//!
//! # Rounding
//!
//! Every returned `δ` is an upper bound: `p₁` is computed from a rigorous upper bound on the
//! noise tail, `L` is widened by a relative `10⁻¹²` in the unsafe direction of each term, each
//! `D_j` is an upper bound inflated by [`crate::numeric::delta_upper`] (the Laplace `δ` as a
//! whole is), and the combination of the terms by a relative `10⁻¹²` more.

mod gaussian;
mod laplace;
mod truncated_geometric;

use std::fmt;
use std::str::FromStr;

pub use gaussian::GaussianSelection;
pub use laplace::LaplaceSelection;
pub use truncated_geometric::{MAX_TABLE, TruncatedGeometricSelection};

use crate::{Error, Guarantee, Neighbours};

/// The largest contribution bound `k` the calibrations accept.
pub const MAX_ITEMS_PER_CLIENT: u32 = 128;

/// The largest threshold `T` the noise calibrations search.
pub const MAX_THRESHOLD: u64 = 1 << 40;

/// A partition-selection method, by its command-line name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Discrete Laplace noise on each count, released at or above a threshold.
    LaplaceThreshold,
    /// Discrete Gaussian noise on each count, released at or above a threshold.
    GaussianThreshold,
    /// Each item released with the optimal probability of its count (keys only).
    TruncatedGeometric,
}

impl Method {
    /// Every method, in the order they are listed.
    pub const ALL: [Self; 3] = [
        Self::LaplaceThreshold,
        Self::GaussianThreshold,
        Self::TruncatedGeometric,
    ];

    /// The name used on the command line and in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::LaplaceThreshold => "laplace-threshold",
            Self::GaussianThreshold => "gaussian-threshold",
            Self::TruncatedGeometric => "truncated-geometric",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::ALL
            .into_iter()
            .find(|method| method.name() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "mechanism",
                    s,
                    "laplace-threshold, gaussian-threshold or truncated-geometric",
                )
            })
    }
}

/// A calibrated partition selection: the parameters of one [`Method`] and its guarantee.
#[derive(Clone, Debug, PartialEq)]
pub enum PartitionSelection {
    /// Discrete Laplace thresholding.
    Laplace(LaplaceSelection),
    /// Discrete Gaussian thresholding.
    Gaussian(GaussianSelection),
    /// The truncated-geometric (optimal one-partition) selection.
    TruncatedGeometric(TruncatedGeometricSelection),
}

impl PartitionSelection {
    /// Calibrates `method` for `(epsilon, delta)` when each client contributes at most
    /// `max_items` distinct items, for `neighbours`.
    ///
    /// # Errors
    ///
    /// As the method's own `calibrate`.
    pub fn calibrate(
        method: Method,
        epsilon: f64,
        delta: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        Ok(match method {
            Method::LaplaceThreshold => Self::Laplace(LaplaceSelection::calibrate(
                epsilon, delta, max_items, neighbours,
            )?),
            Method::GaussianThreshold => Self::Gaussian(GaussianSelection::calibrate(
                epsilon, delta, max_items, neighbours,
            )?),
            Method::TruncatedGeometric => Self::TruncatedGeometric(
                TruncatedGeometricSelection::calibrate(epsilon, delta, max_items, neighbours)?,
            ),
        })
    }

    /// The method.
    pub fn method(&self) -> Method {
        match self {
            Self::Laplace(_) => Method::LaplaceThreshold,
            Self::Gaussian(_) => Method::GaussianThreshold,
            Self::TruncatedGeometric(_) => Method::TruncatedGeometric,
        }
    }

    /// The guarantee of one release.
    pub fn guarantee(&self) -> &Guarantee {
        match self {
            Self::Laplace(s) => s.guarantee(),
            Self::Gaussian(s) => s.guarantee(),
            Self::TruncatedGeometric(s) => s.guarantee(),
        }
    }

    /// `P[released | c clients hold the item]`; 0 for `c = 0`.
    pub fn release_probability(&self, count: u64) -> f64 {
        match self {
            Self::Laplace(s) => s.release_probability(count),
            Self::Gaussian(s) => s.release_probability(count),
            Self::TruncatedGeometric(s) => s.release_probability(count),
        }
    }

    /// The smallest count released with probability at least `probability`
    /// ([`crate::key_selection::release_point`]).
    pub fn release_point(&self, probability: f64) -> Option<u64> {
        crate::key_selection::release_point(|c| self.release_probability(c), probability)
    }
}

/// Checks a contribution bound `k ∈ [1, MAX_ITEMS_PER_CLIENT]`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] otherwise.
pub fn check_max_items(max_items: u32) -> Result<u64, Error> {
    if (1..=MAX_ITEMS_PER_CLIENT).contains(&max_items) {
        Ok(u64::from(max_items))
    } else {
        Err(Error::invalid(
            "max items per client",
            max_items,
            format!("an integer in [1, {MAX_ITEMS_PER_CLIENT}]"),
        ))
    }
}

/// The number of counts one client changes between neighbours: `k` (add/remove) or `2k`
/// (replace-one), the L0 (and L1, and squared L2) sensitivity of the vector of counts.
pub fn changed_counts(max_items: u64, neighbours: Neighbours) -> u64 {
    match neighbours {
        Neighbours::AddRemove => max_items,
        Neighbours::ReplaceOne => 2 * max_items,
    }
}

/// The shapes `(a, b)` of a neighbouring pair: `a` counts raised and `b` lowered by one.
fn shapes(max_items: u64, neighbours: Neighbours) -> Vec<(u64, u64)> {
    match neighbours {
        Neighbours::AddRemove => vec![(max_items, 0), (0, max_items)],
        Neighbours::ReplaceOne => vec![(max_items, max_items)],
    }
}

/// The exact `δ(ε)` of a thresholded noise (module documentation): the maximum over the shapes
/// and `m₁ ≤ a`, `m₂ ≤ b` of `1 − e^{−m₁L} + e^{−m₁L}·D_j(ε + (m₁ − m₂)L)`, with
/// `new_release = p₁` an upper bound on the probability that an item of one client is
/// released and `cells(j, x)` an upper bound on `D_j(x)` for `x ≥ 0`, exact for
/// `j ≤ exact_cells`.
///
/// Above `exact_cells` the bound is only used where it covers every `m₂` at once: `D_j(x)`
/// grows with `j` and falls with `x`, so the bound at the most counts and the lowest `x` of an
/// `m₁` covers all its `m₂`, which keeps the cost linear in `k`.
fn thresholded_delta(
    max_items: u64,
    neighbours: Neighbours,
    epsilon: f64,
    new_release: f64,
    exact_cells: u64,
    cells: impl Fn(u64, f64) -> Result<f64, Error>,
) -> Result<f64, Error> {
    if !(0.0..1.0).contains(&new_release) {
        return Ok(1.0);
    }
    let loss = -(-new_release).ln_1p();
    let (loss_low, loss_high) = (loss * (1.0 - 1e-12), loss * (1.0 + 1e-12));
    let divergence = |j: u64, x: f64| -> Result<f64, Error> {
        if j == 0 {
            return Ok((-x.exp_m1()).max(0.0));
        }
        if x >= 0.0 {
            return cells(j, x);
        }
        // H_α(P‖Q) = 1 − α + α·H_{1/α}(Q‖P), and the shifted pair is symmetric.
        Ok(-x.exp_m1() + x.exp() * cells(j, -x)?)
    };
    let mut worst = 0.0_f64;
    for (raised, lowered) in shapes(max_items, neighbours) {
        for own_raised in 0..=raised {
            let kept = (-(own_raised as f64) * loss_high).exp();
            let released = -(-(own_raised as f64) * loss_high).exp_m1();
            let x_at = |own_lowered: u64| {
                epsilon + own_raised as f64 * loss_low - own_lowered as f64 * loss_high
            };
            let most = raised + lowered - own_raised;
            let d = if most > exact_cells {
                divergence(most, x_at(lowered))?
            } else {
                let mut d = 0.0_f64;
                for own_lowered in 0..=lowered {
                    d = d.max(divergence(most - own_lowered, x_at(own_lowered))?);
                }
                d
            };
            worst = worst.max(released + kept * d);
        }
    }
    // `cells` is already an upper bound; the few roundings of the combination are far below a
    // relative 1e-12.
    Ok((worst * (1.0 + 1e-12)).min(1.0))
}

/// The smallest integer `n ≥ start` (up to [`MAX_THRESHOLD`]) with `meets(n)`, for a `meets`
/// that stays true once true, by doubling and bisection.
///
/// # Errors
///
/// [`Error::Infeasible`] naming `what` if no `n` up to [`MAX_THRESHOLD`] meets it; whatever
/// `meets` returns.
fn smallest_meeting(
    what: &'static str,
    start: u64,
    meets: impl Fn(u64) -> Result<bool, Error>,
) -> Result<u64, Error> {
    if meets(start)? {
        return Ok(start);
    }
    let mut lo = start;
    let mut hi = start.max(1) * 2;
    while !meets(hi)? {
        if hi >= MAX_THRESHOLD {
            return Err(Error::infeasible(
                what,
                format!("none up to {MAX_THRESHOLD} meets the target"),
            ));
        }
        lo = hi;
        hi = (hi * 2).min(MAX_THRESHOLD);
    }
    // Invariant: `lo` does not meet the target, `hi` does.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// `P[c + X ≥ T]` for the count `c = count`, the threshold `T = threshold` and integer noise
/// `X` symmetric about 0 whose upper tail `P[X ≥ a]` is `tail(a)` for `a ≥ 1`; 0 for `c = 0`.
fn noisy_count_reaches(threshold: u64, count: u64, tail: impl Fn(f64) -> f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let gap = threshold as f64 - count as f64;
    if gap >= 1.0 {
        tail(gap)
    } else {
        1.0 - tail(1.0 - gap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_round_trip_their_names() {
        for method in Method::ALL {
            assert_eq!(method.name().parse::<Method>().unwrap(), method);
        }
        let err = "laplace".parse::<Method>().unwrap_err().to_string();
        assert!(err.contains("laplace-threshold"), "{err}");
    }

    #[test]
    fn contribution_bounds_are_checked() {
        assert_eq!(check_max_items(1).unwrap(), 1);
        assert!(check_max_items(0).is_err());
        assert!(check_max_items(MAX_ITEMS_PER_CLIENT + 1).is_err());
        assert_eq!(changed_counts(3, Neighbours::ReplaceOne), 6);
    }

    #[test]
    fn smallest_meeting_finds_the_first_integer() {
        assert_eq!(smallest_meeting("t", 2, |n| Ok(n >= 37)).unwrap(), 37);
        assert_eq!(smallest_meeting("t", 2, |n| Ok(n >= 1)).unwrap(), 2);
        assert!(smallest_meeting("t", 2, |_| Ok(false)).is_err());
    }

    #[test]
    fn one_item_add_remove_is_the_larger_of_the_two_parts() {
        // With pure cells (D = 0 for x ≥ 0), δ is the chance of releasing the client's item.
        let p1 = 1e-7;
        let delta =
            thresholded_delta(1, Neighbours::AddRemove, 1.0, p1, 1, |_, _| Ok(0.0)).unwrap();
        assert!((p1..=p1 * (1.0 + 2e-6)).contains(&delta), "{delta}");
        // A cell part larger than p₁ wins.
        let delta =
            thresholded_delta(1, Neighbours::AddRemove, 1.0, p1, 1, |_, _| Ok(3e-7)).unwrap();
        assert!((3e-7..=3e-7 * (1.0 + 2e-6)).contains(&delta), "{delta}");
        // k items of their own: 1 − (1 − p₁)^k.
        let delta =
            thresholded_delta(5, Neighbours::AddRemove, 1.0, p1, 5, |_, _| Ok(0.0)).unwrap();
        let exact = -(5.0 * (-p1).ln_1p()).exp_m1();
        assert!((exact..=exact * (1.0 + 2e-6)).contains(&delta), "{delta}");
    }
}
