//! Central-model noise for a histogram with one item per client (docs/algorithms.md §7.1): the
//! sensitivities, and the accounting of the discrete Laplace and discrete Gaussian noise of
//! Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy" (CKS).
//!
//! Every noise parameter is an exact rational `(numerator, denominator)`, as the exact
//! samplers of `tally_core::noise` take it, on the grid of multiples of
//! `1/`[`SCALE_DENOMINATOR`] (then reduced to lowest terms).
//!
//! # Sensitivity
//!
//! A client holds one item, so its contribution to the vector of counts is one unit vector.
//! Adding or removing a client changes one cell by 1 (`Δ₁ = Δ₂² = 1`); replacing its item by
//! another changes two cells by `+1` and `−1` (`Δ₁ = 2`, `Δ₂² = 2`; a replacement by the same
//! item changes nothing). See [`histogram_sensitivity`].
//!
//! # Discrete Laplace
//!
//! Adding independent discrete Laplace noise `Pr[X = x] ∝ e^(−|x|/t)` to every count is pure
//! `(Δ₁/t, 0)`-DP: the density ratio of two shifted laws is at most `e^(|shift|/t)` per cell.
//! [`calibrate_laplace`] rounds the scale `t` **up** to the grid, so the realized
//! `ε = Δ₁/t` is at most the requested one; [`laplace_guarantee`] reports it rounded up.
//!
//! # Discrete Gaussian
//!
//! With independent `N_Z(0, σ²)` noise on every cell, the cells that do not change are
//! identically distributed on both neighbours and independent of the rest, so the privacy
//! curve is that of the `k` changed cells alone (`k = Δ₂²`, each shifted by one unit; flipping
//! the sign of a cell shifted by `−1` maps the noise law to itself). On the output `y` of those
//! cells the privacy loss is `Σ_i (1 − 2y_i)/(2σ²)`, a function of `s = −Σ_i y_i` alone:
//! `ℓ(s) = (2s + k)/(2σ²)`. So the exact hockey-stick divergence is
//!
//! `δ(ε) = Σ_s Pr[S = s]·(1 − e^(ε − ℓ(s)))₊`, `S` the sum of `k` independent `N_Z(0, σ²)`.
//!
//! For `k = 1` this is CKS Theorem 7 with `Δ = 1`,
//! `δ = Pr[Y > εσ² − 1/2] − e^ε·Pr[Y > εσ² + 1/2]`, written term by term so that it does not
//! cancel. For `k = 2` it is the same computation on the two changed cells (the exact value,
//! tighter than CKS Theorem 15's multivariate bound and than the zCDP conversion of CKS
//! Corollary 13 with `ρ = Δ₂²/(2σ²)`, which the reference `tools/reference/central.py` checks
//! it never exceeds). Both directions of a neighbouring pair give the same curve by symmetry.
//!
//! The pmf of `S` needs `Z = Σ_y e^(−y²/(2σ²))` (for `k = 2`:
//! `Pr[S = s] = e^(−s²/(4σ²))·W_(s mod 2)/Z²` with `W₀ = Σ_y e^(−y²/σ²)` and
//! `W₁ = Σ_y e^(−(y + 1/2)²/σ²)`, completing the square in `y² + (s − y)²`). `Z` is bounded
//! below by a truncated sum, `W₀` and `W₁` above by a truncated sum plus a geometric tail
//! bound, the sum over `s` is truncated with the same geometric tail bound, and the result is
//! inflated by [`numeric::delta_upper`] for the floating-point error (a few ulps per term, far
//! below its `10⁻⁶` relative margin). [`calibrate_gaussian`] returns the smallest `σ²` on the
//! grid, found by bisection, whose bound meets the target `δ`.

use crate::numeric;
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// The grid of the noise parameters: the scale `t` and the variance `σ²` are multiples of
/// `1/2^20` before reduction to lowest terms.
pub const SCALE_DENOMINATOR: u64 = 1 << 20;

/// The largest discrete Laplace scale `t` [`calibrate_laplace`] returns, `2^32` (it accepts
/// `ε ≥ 2^−31`).
pub const MAX_LAPLACE_SCALE: u64 = 1 << 32;

/// The largest discrete Gaussian variance `σ²` [`calibrate_gaussian`] searches, `2^32`
/// (`σ ≤ 65536`); the cost of one `δ` evaluation grows like `σ`.
pub const MAX_GAUSSIAN_VARIANCE: u64 = 1 << 32;

/// The largest L1 sensitivity [`calibrate_laplace_l1`] accepts, `2^11`: with the denominator
/// `2^52` of [`laplace_epsilon_l1`], `l1·den` stays an exact double.
pub const MAX_L1: u64 = 1 << 11;

/// Below this fraction of the running sum, a truncated series stops (its rigorous tail bound
/// is still added).
const TRUNCATION: f64 = 1e-20;

/// The sensitivity of the vector of counts to one client's change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sensitivity {
    /// The L1 sensitivity `Δ₁`.
    pub l1: u64,
    /// The square of the L2 sensitivity, `Δ₂²` (an integer: the number of cells that change,
    /// each by one).
    pub l2_squared: u64,
}

/// The sensitivity of a histogram with one item per client: `Δ₁ = Δ₂² = 1` for add-remove
/// neighbours, `Δ₁ = 2` and `Δ₂² = 2` (`Δ₂ = √2`) for replace-one.
pub fn histogram_sensitivity(neighbours: Neighbours) -> Sensitivity {
    match neighbours {
        Neighbours::AddRemove => Sensitivity {
            l1: 1,
            l2_squared: 1,
        },
        Neighbours::ReplaceOne => Sensitivity {
            l1: 2,
            l2_squared: 2,
        },
    }
}

/// The discrete Laplace scale `t = Δ₁·u` for `epsilon`, with `u` the smallest multiple of
/// `1/2^20` such that `u·ε ≥ 1` exactly; returned in lowest terms as `(numerator, denominator)`.
/// So `Δ₁/t = 1/u ≤ ε`, and replace-one neighbours get exactly twice the add-remove scale.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and positive with
/// `1/ε ≤ 2^31` (so that `t ≤` [`MAX_LAPLACE_SCALE`]).
pub fn calibrate_laplace(epsilon: f64, neighbours: Neighbours) -> Result<(u64, u64), Error> {
    calibrate_laplace_l1(epsilon, histogram_sensitivity(neighbours).l1)
}

/// The discrete Laplace scale `t = l1·u` for a query of L1 sensitivity `l1`, `u` as in
/// [`calibrate_laplace`] (so `l1/t ≤ ε`), in lowest terms.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and positive with `1/ε ≤ 2^31`, and
/// `1 ≤ l1 ≤ 2^11`.
pub fn calibrate_laplace_l1(epsilon: f64, l1: u64) -> Result<(u64, u64), Error> {
    if !(1..=MAX_L1).contains(&l1) {
        return Err(Error::invalid(
            "L1 sensitivity",
            l1,
            "an integer in [1, 2^11]",
        ));
    }
    // Every integer here is below 2^53, so an exact double.
    let target = SCALE_DENOMINATOR as f64;
    let max_numerator = MAX_LAPLACE_SCALE / 2 * SCALE_DENOMINATOR;
    let guess = target / epsilon;
    if !(epsilon.is_finite() && epsilon > 0.0 && guess <= max_numerator as f64) {
        return Err(Error::invalid(
            "epsilon",
            epsilon,
            "a finite number with 2^-31 ≤ ε",
        ));
    }
    // num·ε ≥ 2^20, decided exactly: the fused multiply-add rounds once, which keeps the sign.
    let covers = |num: u64| (num as f64).mul_add(epsilon, -target) >= 0.0;
    let mut num = (guess.ceil() as u64).max(1);
    while !covers(num) {
        num += 1;
    }
    while num > 1 && covers(num - 1) {
        num -= 1;
    }
    Ok(lowest_terms(l1 * num, SCALE_DENOMINATOR))
}

/// The realized `ε = Δ₁/t` of discrete Laplace noise with scale `t = scale.0/scale.1`, rounded
/// up to the next double.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless both parts are in `[1, 2^52]`.
pub fn laplace_epsilon(scale: (u64, u64), neighbours: Neighbours) -> Result<f64, Error> {
    laplace_epsilon_l1(scale, histogram_sensitivity(neighbours).l1)
}

/// The realized `ε = l1/t` of discrete Laplace noise with scale `t = scale.0/scale.1` on a
/// query of L1 sensitivity `l1`, rounded up to the next double.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless both parts of the scale are in `[1, 2^52]` and
/// `1 ≤ l1 ≤ 2^11`.
pub fn laplace_epsilon_l1(scale: (u64, u64), l1: u64) -> Result<f64, Error> {
    let (num, den) = check_rational("scale", scale)?;
    if !(1..=MAX_L1).contains(&l1) {
        return Err(Error::invalid(
            "L1 sensitivity",
            l1,
            "an integer in [1, 2^11]",
        ));
    }
    let top = (l1 * den) as f64;
    let quotient = top / num as f64;
    // The fused residual quotient·num − top is exact in sign: negative means rounded down.
    Ok(if quotient.mul_add(num as f64, -top) < 0.0 {
        quotient.next_up()
    } else {
        quotient
    })
}

/// The central guarantee of discrete Laplace noise with scale `t = scale.0/scale.1` on every
/// count: pure `(Δ₁/t, 0)`-DP, `ε` from [`laplace_epsilon`].
///
/// # Errors
///
/// As [`laplace_epsilon`].
pub fn laplace_guarantee(scale: (u64, u64), neighbours: Neighbours) -> Result<Guarantee, Error> {
    let epsilon = laplace_epsilon(scale, neighbours)?;
    Ok(Guarantee {
        epsilon,
        delta: 0.0,
        neighbours,
        model: TrustModel::Central,
        analysis: format!(
            "discrete Laplace, scale {}/{}, L1 sensitivity {} (pure ε-DP)",
            scale.0,
            scale.1,
            histogram_sensitivity(neighbours).l1
        ),
    })
}

/// An upper bound on the exact `δ(ε)` of independent discrete Gaussian noise `N_Z(0, σ²)`,
/// `σ² = sigma2.0/sigma2.1`, on every count (see the [module documentation](self)).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and `≥ 0` and `sigma2` has both parts
/// in `[1, 2^52]` with `σ² ≤` [`MAX_GAUSSIAN_VARIANCE`].
pub fn gaussian_delta(
    sigma2: (u64, u64),
    epsilon: f64,
    neighbours: Neighbours,
) -> Result<f64, Error> {
    gaussian_cells_delta(
        sigma2,
        epsilon,
        histogram_sensitivity(neighbours).l2_squared,
    )
}

/// An upper bound on the exact `δ(ε)` between `cells` independent `N_Z(0, σ²)` noises and the
/// same shifted by one unit each (`cells` counts that change by one, `Δ₂² = cells`), for
/// `cells` 1 or 2 (see the [module documentation](self)).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and `≥ 0`, `sigma2` has both parts
/// in `[1, 2^52]` with `σ² ≤` [`MAX_GAUSSIAN_VARIANCE`], and `cells` is 1 or 2.
pub fn gaussian_cells_delta(sigma2: (u64, u64), epsilon: f64, cells: u64) -> Result<f64, Error> {
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
    }
    if !(1..=2).contains(&cells) {
        return Err(Error::invalid("changed cells", cells, "1 or 2"));
    }
    let (num, den) = check_rational("sigma2", sigma2)?;
    if num > MAX_GAUSSIAN_VARIANCE * den {
        return Err(Error::invalid(
            "sigma2",
            format!("{num}/{den}"),
            format!("σ² ≤ {MAX_GAUSSIAN_VARIANCE}"),
        ));
    }
    let variance = num as f64 / den as f64;
    Ok(numeric::delta_upper(exact_delta_bound(
        variance, epsilon, cells,
    )))
}

/// The smallest `σ²` on the grid (multiples of `1/2^20`, returned in lowest terms) whose
/// [`gaussian_delta`] at `epsilon` is at most `delta`, by bisection. The answer always meets the
/// target; the grid point below it does not.
///
/// This is [`calibrate_gaussian_for`] with `gaussian_delta` as the `δ`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and positive and `delta ∈ (0, 1)`;
/// [`Error::Infeasible`] if even `σ² =` [`MAX_GAUSSIAN_VARIANCE`] does not meet the target.
pub fn calibrate_gaussian(
    epsilon: f64,
    delta: f64,
    neighbours: Neighbours,
) -> Result<(u64, u64), Error> {
    calibrate_gaussian_for(epsilon, delta, |sigma2| {
        gaussian_delta(sigma2, epsilon, neighbours)
    })
}

/// The smallest `σ²` on the grid (multiples of `1/2^20`, returned in lowest terms) whose
/// `delta_of(σ²)`, a `δ` that does not grow with `σ²`, is at most `delta`, by doubling and
/// bisection. The answer always meets the target; the grid point below it does not.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon` is finite and positive and `delta ∈ (0, 1)`,
/// and whatever `delta_of` returns; [`Error::Infeasible`] if even `σ² =`
/// [`MAX_GAUSSIAN_VARIANCE`] does not meet the target.
pub fn calibrate_gaussian_for(
    epsilon: f64,
    delta: f64,
    delta_of: impl Fn((u64, u64)) -> Result<f64, Error>,
) -> Result<(u64, u64), Error> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
    }
    let meets =
        |num: u64| -> Result<bool, Error> { Ok(delta_of((num, SCALE_DENOMINATOR))? <= delta) };
    let max = MAX_GAUSSIAN_VARIANCE * SCALE_DENOMINATOR;
    // Bracket: `hi` meets the target, `lo` does not (or is 0, which is never enough).
    let mut hi = SCALE_DENOMINATOR;
    while !meets(hi)? {
        if hi == max {
            return Err(Error::infeasible(
                "sigma2",
                format!("δ({epsilon}) > {delta} even at σ² = {MAX_GAUSSIAN_VARIANCE}"),
            ));
        }
        hi = (hi * 2).min(max);
    }
    let mut lo = hi / 2;
    while lo > 0 && meets(lo)? {
        hi = lo;
        lo /= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(lowest_terms(hi, SCALE_DENOMINATOR))
}

/// The central guarantee of discrete Gaussian noise with `σ² = sigma2.0/sigma2.1` on every
/// count, at `epsilon`: `δ` from [`gaussian_delta`].
///
/// # Errors
///
/// As [`gaussian_delta`].
pub fn gaussian_guarantee(
    sigma2: (u64, u64),
    epsilon: f64,
    neighbours: Neighbours,
) -> Result<Guarantee, Error> {
    let delta = gaussian_delta(sigma2, epsilon, neighbours)?;
    let cells = histogram_sensitivity(neighbours).l2_squared;
    Ok(Guarantee {
        epsilon,
        delta,
        neighbours,
        model: TrustModel::Central,
        analysis: format!(
            "discrete Gaussian, σ² = {}/{}, exact δ over {cells} changed cell(s) (CKS 2020 Thm 7)",
            sigma2.0, sigma2.1
        ),
    })
}

/// Checks a rational parameter with both parts in `[1, 2^52]` (exact as doubles).
fn check_rational(name: &'static str, (num, den): (u64, u64)) -> Result<(u64, u64), Error> {
    const MAX: u64 = 1 << 52;
    if (1..=MAX).contains(&num) && (1..=MAX).contains(&den) {
        Ok((num, den))
    } else {
        Err(Error::invalid(
            name,
            format!("{num}/{den}"),
            "a rational with numerator and denominator in [1, 2^52]",
        ))
    }
}

/// `num/den` in lowest terms.
pub(crate) fn lowest_terms(num: u64, den: u64) -> (u64, u64) {
    let (mut a, mut b) = (num, den);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    (num / a, den / a)
}

/// Bounds on `Σ_{j ≥ 0} e^(−(x0 + j)²/(2v))` for `x0 > 0`: `(lower, upper)`, the truncated sum
/// and the truncated sum plus a geometric bound on the rest (consecutive terms past `x` shrink
/// by at least `e^(−(2x + 1)/(2v))`).
pub(crate) fn gaussian_series(x0: f64, v: f64) -> (f64, f64) {
    let mut sum = 0.0;
    let mut x = x0;
    loop {
        let term = (-x * x / (2.0 * v)).exp();
        sum += term;
        x += 1.0;
        if term <= TRUNCATION * sum {
            break;
        }
    }
    (sum, sum + geometric_tail(x, v, 1.0))
}

/// A bound on `Σ_{j ≥ 0} c·e^(−(x + j)²/(2v))` for `x > 0`, relative to `c = 1`:
/// `e^(−x²/(2v)) / (1 − e^(−(2x + 1)/(2v)))`.
fn geometric_tail(x: f64, v: f64, c: f64) -> f64 {
    c * (-x * x / (2.0 * v)).exp() / -(-(2.0 * x + 1.0) / (2.0 * v)).exp_m1()
}

/// The exact-δ bound before the floating-point margin: `Σ_s Pr[S = s]·(1 − e^(ε − ℓ(s)))₊`,
/// `ℓ(s) = (2s + k)/(2σ²)`, with the pmf of `S` bounded above and the sum truncated with a tail
/// bound.
fn exact_delta_bound(variance: f64, epsilon: f64, cells: u64) -> f64 {
    // `Z` from below: 1 + 2·Σ_{y ≥ 1} e^(−y²/(2σ²)).
    let z_lower = 1.0 + 2.0 * gaussian_series(1.0, variance).0;
    // pmf(s) ≤ e^(−s²/(2kσ²))·c[s mod 2].
    let (spread, weights) = match cells {
        1 => (variance, [1.0 / z_lower; 2]),
        2 => {
            // W₀ = 1 + 2Σ_{y≥1} e^(−y²/σ²), W₁ = 2Σ_{y≥0} e^(−(y+1/2)²/σ²): variance σ²/2.
            let w0 = 1.0 + 2.0 * gaussian_series(1.0, variance / 2.0).1;
            let w1 = 2.0 * gaussian_series(0.5, variance / 2.0).1;
            let z2 = z_lower * z_lower;
            (2.0 * variance, [w0 / z2, w1 / z2])
        }
        _ => unreachable!("the exact δ is computed for one or two changed cells"),
    };
    let k = cells as f64;
    // The first s with ℓ(s) > ε is above εσ² − k/2; start one lower (its weight clamps to 0).
    let first = (epsilon * variance - k / 2.0).floor() - 1.0;
    let mut s = first;
    let mut sum = 0.0;
    loop {
        let parity = (s.rem_euclid(2.0)) as usize;
        let mass = (-s * s / (2.0 * spread)).exp() * weights[parity];
        let loss = (2.0 * s + k) / (2.0 * variance);
        let term = mass * (-(epsilon - loss).exp_m1()).max(0.0);
        sum += term;
        s += 1.0;
        if s > 0.0 && (mass == 0.0 || (sum > 0.0 && mass <= TRUNCATION * sum)) {
            break;
        }
    }
    // Every later term has weight at most 1.
    let c_max = weights[0].max(weights[1]);
    (sum + geometric_tail(s, spread, c_max)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_terms_reduces() {
        assert_eq!(lowest_terms(1 << 20, 1 << 20), (1, 1));
        assert_eq!(lowest_terms(6, 4), (3, 2));
        assert_eq!(lowest_terms(7, 1 << 20), (7, 1 << 20));
    }

    #[test]
    fn series_bounds_bracket_the_theta_value() {
        // Σ_{y ∈ Z} e^(−y²/2) = 2.5066282746310002…·(1 + 2e^(−2π²) + …) = 2.5066282880429…
        let (lower, upper) = gaussian_series(1.0, 1.0);
        let full = 2.506_628_288_042_9;
        assert!(1.0 + 2.0 * lower <= full + 1e-12 && 1.0 + 2.0 * upper >= full - 1e-12);
        assert!(upper - lower < 1e-18);
    }
}
