//! Discrete Laplace thresholding: release an item when its count plus discrete Laplace noise
//! reaches an integer threshold.

use super::{changed_counts, check_max_items, noisy_count_reaches, smallest_meeting};
use crate::central::{calibrate_laplace_l1, laplace_epsilon_l1};
use crate::numeric::delta_upper;
use crate::sample_threshold::{check_delta, check_epsilon};
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// Discrete Laplace thresholding: an item held by `c ≥ 1` clients is released, with the
/// estimate `c + X`, when `c + X ≥ T`, for `X` discrete Laplace of scale `t`
/// (`Pr[X = x] ∝ e^{−|x|/t}`).
///
/// # Privacy
///
/// Central model, for clients that contribute at most `k` distinct items each. The vector of
/// counts has L0 sensitivity `Δ₀ = k` (add/remove) or `2k` (replace-one) and L∞ sensitivity 1,
/// so L1 sensitivity `Δ₁ = Δ₀`; `t = Δ₁/ε` makes the counts the client shares with others pure
/// `Δ₁/t`-DP, and an item only the client holds is released with probability
/// `p₁ = P[X ≥ T − 1] = e^{−(T−1)/t}/(1 + e^{−1/t})`. With `p₁ ≤ 1 − e^{−1/t}` the guarantee is
/// `(Δ₁/t, 1 − (1 − p₁)^k)` exactly (module documentation of
/// [`crate::partition_selection`]); the noise scale grows with `k` and so does the threshold,
/// about `t·ln(k/δ)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LaplaceSelection {
    scale: (u64, u64),
    threshold: u64,
    max_items: u32,
    guarantee: Guarantee,
}

impl LaplaceSelection {
    /// Calibrates for `(epsilon, delta)`: `t` the smallest grid scale with `Δ₁/t ≤ ε`
    /// ([`calibrate_laplace_l1`]) and `T` the smallest integer whose exact `δ` is at most
    /// `delta`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `epsilon` is finite and positive with `1/ε ≤ 2^31`,
    /// `delta ∈ (0, 1)` and `1 ≤ max_items ≤` [`super::MAX_ITEMS_PER_CLIENT`];
    /// [`Error::Infeasible`] if no threshold up to [`super::MAX_THRESHOLD`] meets `delta`.
    pub fn calibrate(
        epsilon: f64,
        delta: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        check_epsilon(epsilon)?;
        check_delta(delta)?;
        let k = check_max_items(max_items)?;
        let scale = calibrate_laplace_l1(epsilon, changed_counts(k, neighbours))?;
        let threshold = smallest_meeting("threshold", 2, |threshold| {
            Ok(exact_delta(scale, threshold, k).is_some_and(|d| d <= delta))
        })?;
        Self::new(scale, threshold, max_items, neighbours)
    }

    /// The selection with scale `t = scale.0/scale.1` and threshold `T`, with its guarantee.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless both parts of the scale are in `[1, 2^52]`,
    /// `1 ≤ max_items ≤` [`super::MAX_ITEMS_PER_CLIENT`], and `T` is high enough that
    /// `p₁ ≤ 1 − e^{−1/t}` (where the exact `δ` above holds).
    pub fn new(
        scale: (u64, u64),
        threshold: u64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        let k = check_max_items(max_items)?;
        let l1 = changed_counts(k, neighbours);
        let epsilon = laplace_epsilon_l1(scale, l1)?;
        let delta = exact_delta(scale, threshold, k).ok_or_else(|| {
            Error::invalid(
                "threshold",
                threshold,
                "a threshold at which an item of one client is released with probability at \
                 most 1 − e^(−1/t) (raise it)",
            )
        })?;
        Ok(Self {
            scale,
            threshold,
            max_items,
            guarantee: Guarantee {
                epsilon,
                delta,
                neighbours,
                model: TrustModel::Central,
                analysis: format!(
                    "discrete Laplace thresholding, scale {}/{}, threshold {threshold}, at most \
                     {k} item(s) per client (L1 sensitivity {l1}): exact δ",
                    scale.0, scale.1
                ),
            },
        })
    }

    /// The noise scale `t` as `(numerator, denominator)` in lowest terms.
    pub fn scale(&self) -> (u64, u64) {
        self.scale
    }

    /// The threshold `T`: an item is released when its noisy count is at least `T`.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// The contribution bound `k`.
    pub fn max_items(&self) -> u32 {
        self.max_items
    }

    /// The guarantee: `(Δ₁/t, 1 − (1 − p₁)^k)`.
    pub fn guarantee(&self) -> &Guarantee {
        &self.guarantee
    }

    /// `P[c + X ≥ T]`; 0 for `c = 0`.
    pub fn release_probability(&self, count: u64) -> f64 {
        noisy_count_reaches(self.threshold, count, |at| tail(self.scale, at))
    }
}

/// `P[X ≥ a] = q^a/(1 + q)` for `a ≥ 1`, `q = e^{−1/t}`.
fn tail((num, den): (u64, u64), at: f64) -> f64 {
    let inverse = den as f64 / num as f64;
    (-at * inverse).exp() / (1.0 + (-inverse).exp())
}

/// `1 − (1 − p₁)^k`, rounded up, or `None` when `p₁ > 1 − e^{−1/t}` (or `T < 2`), where the
/// counts the client shares would also cost `δ`.
fn exact_delta(scale: (u64, u64), threshold: u64, max_items: u64) -> Option<f64> {
    if threshold < 2 {
        return None;
    }
    let new_release = tail(scale, (threshold - 1) as f64) * (1.0 + 1e-12);
    let allowed = -(-(scale.1 as f64) / scale.0 as f64).exp_m1() * (1.0 - 1e-12);
    (new_release <= allowed)
        .then(|| delta_upper(-(max_items as f64 * (-new_release).ln_1p()).exp_m1()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_at_epsilon_one_needs_the_laplace_quantile() {
        let selection = LaplaceSelection::calibrate(1.0, 1e-8, 1, Neighbours::AddRemove).unwrap();
        assert_eq!(selection.scale(), (1, 1));
        // e^{−(T−1)}/(1 + e^{−1}) ≤ 1e-8 first at T − 1 = ⌈ln(1e8/(1 + e^{−1}))⌉ = ⌈18.11⌉.
        assert_eq!(selection.threshold(), 20);
        let g = selection.guarantee();
        assert!(
            g.epsilon.to_bits() == 1f64.to_bits() && g.delta <= 1e-8,
            "{g:?}"
        );
        let below = LaplaceSelection::new((1, 1), 19, 1, Neighbours::AddRemove).unwrap();
        assert!(below.guarantee().delta > 1e-8);
    }

    #[test]
    fn replace_one_doubles_the_scale_and_k_raises_the_threshold() {
        let add = LaplaceSelection::calibrate(1.0, 1e-8, 3, Neighbours::AddRemove).unwrap();
        let replace = LaplaceSelection::calibrate(1.0, 1e-8, 3, Neighbours::ReplaceOne).unwrap();
        assert_eq!(add.scale(), (3, 1));
        assert_eq!(replace.scale(), (6, 1));
        assert!(replace.threshold() > add.threshold());
        assert!(add.guarantee().delta <= 1e-8 && replace.guarantee().delta <= 1e-8);
    }

    #[test]
    fn release_probability_is_the_discrete_laplace_tail() {
        let selection = LaplaceSelection::new((2, 1), 10, 1, Neighbours::AddRemove).unwrap();
        let q: f64 = (-0.5_f64).exp();
        let pmf = |x: i64| (1.0 - q) / (1.0 + q) * q.powi(x.abs() as i32);
        for count in [1u64, 5, 9, 10, 11, 20] {
            let direct: f64 = (10 - count as i64..200).map(pmf).sum();
            let p = selection.release_probability(count);
            assert!((p - direct).abs() < 1e-12, "{count}: {p} vs {direct}");
        }
        assert!(selection.release_probability(0).abs() < f64::MIN_POSITIVE);
    }

    #[test]
    fn a_threshold_too_low_is_refused_with_the_fix() {
        let err = LaplaceSelection::new((1, 1), 1, 1, Neighbours::AddRemove).unwrap_err();
        assert!(err.to_string().contains("raise it"), "{err}");
    }
}
