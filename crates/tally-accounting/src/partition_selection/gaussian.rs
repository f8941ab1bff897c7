//! Discrete Gaussian thresholding: release an item when its count plus discrete Gaussian noise
//! reaches an integer threshold.

use super::{
    changed_counts, check_max_items, noisy_count_reaches, smallest_meeting, thresholded_delta,
};
use crate::central::{
    SCALE_DENOMINATOR, calibrate_gaussian_for, gaussian_cells_delta, gaussian_series, lowest_terms,
};
use crate::rdp::RdpCurve;
use crate::sample_threshold::{check_delta, check_epsilon};
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// The noise variances the calibration tries, as multiples of the smallest one whose shared
/// counts alone meet `δ`: `2^(s/8)` for `s = 1..=16` first, then `s = s* − 1 + i/8` for
/// `i = 0..=16` around the best `s*`.
const COARSE_STEPS: u32 = 16;

/// A threshold and the variance it was found for.
type Candidate = (u64, (u64, u64));

/// Discrete Gaussian thresholding: an item held by `c ≥ 1` clients is released, with the
/// estimate `c + X`, when `c + X ≥ T`, for `X ~ N_Z(0, σ²)`.
///
/// # Privacy
///
/// Central model, for clients that contribute at most `k` distinct items each: the vector of
/// counts has L0 sensitivity `k` (add/remove) or `2k` (replace-one), L∞ sensitivity 1 and so
/// L2 sensitivity `√k` or `√(2k)`. `δ` at the requested `ε` is the exact maximum of
/// [`crate::partition_selection`]'s expression over the ways the client's items can be its own
/// or shared, with the divergence of up to two shifted counts exact
/// ([`gaussian_cells_delta`]) and of more bounded through Rényi DP. The calibration takes the
/// smallest `σ²` on the grid whose shared counts alone meet `δ`, then among the variances above
/// it tried (`COARSE_STEPS`, within 4×) the one with the lowest threshold (then the smallest
/// variance): the noise and the threshold grow with `k` together.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianSelection {
    sigma2: (u64, u64),
    threshold: u64,
    max_items: u32,
    guarantee: Guarantee,
}

impl GaussianSelection {
    /// Calibrates for `(epsilon, delta)` (see the type's documentation).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `epsilon` is finite and positive, `delta ∈ (0, 1)`
    /// and `1 ≤ max_items ≤` [`super::MAX_ITEMS_PER_CLIENT`]; [`Error::Infeasible`] if the
    /// target needs `σ² >` [`crate::central::MAX_GAUSSIAN_VARIANCE`].
    pub fn calibrate(
        epsilon: f64,
        delta: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        check_epsilon(epsilon)?;
        check_delta(delta)?;
        let k = check_max_items(max_items)?;
        let cells = changed_counts(k, neighbours);
        let floor = calibrate_gaussian_for(epsilon, delta, |sigma2| {
            shifted_counts_delta(sigma2, cells, epsilon)
        })?;
        let floor_numerator = floor.0 * (SCALE_DENOMINATOR / floor.1);
        let threshold_at = |ratio: f64| -> Result<Option<Candidate>, Error> {
            let sigma2 = lowest_terms(
                (floor_numerator as f64 * ratio).ceil() as u64,
                SCALE_DENOMINATOR,
            );
            let threshold = smallest_meeting("threshold", 2, |threshold| {
                Ok(exact_delta(sigma2, threshold, k, neighbours, epsilon)? <= delta)
            });
            match threshold {
                Ok(threshold) => Ok(Some((threshold, sigma2))),
                Err(Error::Infeasible { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        };
        // The lowest threshold over the variances tried, then the smallest variance.
        let consider = |best: &mut Option<(Candidate, f64)>, step: f64| {
            let found = threshold_at(2f64.powf(step / 8.0))?;
            let lower = |(t, (n, d)): Candidate, (best_t, (best_n, best_d)): Candidate| {
                (t, u128::from(n) * u128::from(best_d))
                    < (best_t, u128::from(best_n) * u128::from(d))
            };
            if let Some(candidate) = found
                && best.is_none_or(|(best, _)| lower(candidate, best))
            {
                *best = Some((candidate, step));
            }
            Ok::<(), Error>(())
        };
        let mut best = None;
        for step in 1..=COARSE_STEPS {
            consider(&mut best, f64::from(step))?;
        }
        let coarse = best.map_or(1.0, |(_, step)| step);
        for fine in 0..=16 {
            consider(&mut best, coarse - 1.0 + f64::from(fine) / 8.0)?;
        }
        let ((threshold, sigma2), _) = best.ok_or_else(|| {
            Error::infeasible("threshold", "no threshold meets δ up to 4× the smallest σ²")
        })?;
        Self::new(sigma2, threshold, epsilon, max_items, neighbours)
    }

    /// The selection with `σ² = sigma2.0/sigma2.1` and threshold `T`, with its guarantee at
    /// `epsilon`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `epsilon` is finite and positive, both parts of `σ²`
    /// are in `[1, 2^52]` with `σ² ≤` [`crate::central::MAX_GAUSSIAN_VARIANCE`], `T ≥ 2` and
    /// `1 ≤ max_items ≤` [`super::MAX_ITEMS_PER_CLIENT`].
    pub fn new(
        sigma2: (u64, u64),
        threshold: u64,
        epsilon: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        check_epsilon(epsilon)?;
        let k = check_max_items(max_items)?;
        if threshold < 2 {
            return Err(Error::invalid("threshold", threshold, "an integer ≥ 2"));
        }
        let delta = exact_delta(sigma2, threshold, k, neighbours, epsilon)?;
        let cells = changed_counts(k, neighbours);
        let how = if cells <= 2 {
            "exact δ"
        } else {
            "exact in which items are the client's own, Rényi bound (CKS 2020 Thm 4, Prop 12) \
             on more than two shared counts"
        };
        Ok(Self {
            sigma2,
            threshold,
            max_items,
            guarantee: Guarantee {
                epsilon,
                delta,
                neighbours,
                model: TrustModel::Central,
                analysis: format!(
                    "discrete Gaussian thresholding, σ² = {}/{}, threshold {threshold}, at most \
                     {k} item(s) per client (L2 sensitivity √{cells}): {how}",
                    sigma2.0, sigma2.1
                ),
            },
        })
    }

    /// The noise variance parameter `σ²` as `(numerator, denominator)` in lowest terms.
    pub fn sigma2(&self) -> (u64, u64) {
        self.sigma2
    }

    /// The threshold `T`: an item is released when its noisy count is at least `T`.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The contribution bound `k`.
    pub fn max_items(&self) -> u32 {
        self.max_items
    }

    /// The guarantee at the requested `ε`.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// `P[c + X ≥ T]`; 0 for `c = 0`.
    pub fn release_probability(&self, count: u64) -> f64 {
        noisy_count_reaches(self.threshold, count, |at| tail_upper(self.sigma2, at))
    }
}

/// An upper bound on `P[X ≥ a]` for `X ~ N_Z(0, σ²)` and an integer `a ≥ 1`: the series above
/// `a` bounded above over the normaliser bounded below.
fn tail_upper((num, den): (u64, u64), at: f64) -> f64 {
    let variance = num as f64 / den as f64;
    let normaliser = 1.0 + 2.0 * gaussian_series(1.0, variance).0;
    (gaussian_series(at, variance).1 / normaliser).min(1.0)
}

/// An upper bound on the divergence at `e^x` (`x ≥ 0`) of `cells` counts shifted by one:
/// exact for one or two, the Rényi curve `λ·cells/(2σ²)` converted beyond.
fn shifted_counts_delta(sigma2: (u64, u64), cells: u64, x: f64) -> Result<f64, Error> {
    if cells <= 2 {
        return gaussian_cells_delta(sigma2, x, cells);
    }
    // σ rounded down keeps ρ_λ = λ·cells/(2σ²) an upper bound.
    let sigma = (sigma2.0 as f64 / sigma2.1 as f64).sqrt().next_down();
    RdpCurve::gaussian((cells as f64).sqrt(), sigma)?.delta(x)
}

/// The exact `δ(ε)` of the selection (an upper bound, as in the module documentation).
fn exact_delta(
    sigma2: (u64, u64),
    threshold: u64,
    max_items: u64,
    neighbours: Neighbours,
    epsilon: f64,
) -> Result<f64, Error> {
    let new_release = tail_upper(sigma2, (threshold - 1) as f64);
    thresholded_delta(max_items, neighbours, epsilon, new_release, 2, |j, x| {
        shifted_counts_delta(sigma2, j, x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_add_remove_gives_the_whole_delta_to_each_part() {
        let selection = GaussianSelection::calibrate(1.0, 1e-8, 1, Neighbours::AddRemove).unwrap();
        let g = selection.guarantee();
        assert!(g.delta <= 1e-8, "{g:?}");
        // The shared count alone meets δ and so does the item of one client.
        let shared = gaussian_cells_delta(selection.sigma2(), 1.0, 1).unwrap();
        let own = tail_upper(selection.sigma2(), (selection.threshold() - 1) as f64);
        assert!(shared <= 1e-8 && own <= 1e-8, "{shared} {own}");
        // One lower is not enough.
        let lower = exact_delta(
            selection.sigma2(),
            selection.threshold() - 1,
            1,
            Neighbours::AddRemove,
            1.0,
        )
        .unwrap();
        assert!(lower > 1e-8, "{lower}");
    }

    #[test]
    fn more_items_need_more_noise_and_a_higher_threshold() {
        let one = GaussianSelection::calibrate(1.0, 1e-8, 1, Neighbours::AddRemove).unwrap();
        let four = GaussianSelection::calibrate(1.0, 1e-8, 4, Neighbours::AddRemove).unwrap();
        let ratio = |(n, d): (u64, u64)| n as f64 / d as f64;
        assert!(ratio(four.sigma2()) > 3.0 * ratio(one.sigma2()));
        assert!(four.threshold() > one.threshold());
        assert!(four.guarantee().analysis.contains("Rényi"));
        let replace = GaussianSelection::calibrate(1.0, 1e-8, 1, Neighbours::ReplaceOne).unwrap();
        assert!(replace.guarantee().delta <= 1e-8);
        assert!(replace.threshold() > one.threshold());
    }

    #[test]
    fn release_probability_sums_the_discrete_gaussian() {
        let selection = GaussianSelection::new((9, 1), 12, 1.0, 1, Neighbours::AddRemove).unwrap();
        let weight = |x: i64| (-((x * x) as f64) / 18.0).exp();
        let total: f64 = (-100..=100).map(weight).sum();
        for count in [1u64, 6, 11, 12, 13, 30] {
            let direct: f64 = (12 - count as i64..=100).map(weight).sum::<f64>() / total;
            let p = selection.release_probability(count);
            assert!((p - direct).abs() < 1e-12, "{count}: {p} vs {direct}");
        }
    }
}
