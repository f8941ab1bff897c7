//! Laplace thresholding, calibrated as Google's differential-privacy library calibrates its
//! `LaplacePartitionSelection` (`cc/algorithms/partition-selection.h`, which PipelineDP calls
//! through PyDP) for one partition per user and one contribution.

use crate::Error;
use crate::sample_threshold::{check_delta, check_epsilon};

/// Laplace thresholding: release an item when `c + Lap(b)` exceeds `T`.
///
/// # Privacy
///
/// `(ε, δ)`-DP for add/remove neighbours when each client holds one item: the noisy count of
/// an item held by other clients is `ε`-indistinguishable with `b = 1/ε`, and an item only the
/// added client holds (count 1) passes `T` with probability `½e^{−(T−1)/b} = δ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaplaceThreshold {
    /// The noise scale `b`.
    pub scale: f64,
    /// The threshold `T` the noisy count must exceed.
    pub threshold: f64,
}

/// The Laplace thresholding of `(ε, δ)` for one item per client: `b = 1/ε` and
/// `T = 1 − b·ln(2δ)`, rounded up.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `epsilon > 0` is finite and `delta ∈ (0, ½]`.
pub fn laplace_threshold(epsilon: f64, delta: f64) -> Result<LaplaceThreshold, Error> {
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    if delta > 0.5 {
        return Err(Error::invalid("delta", delta, "a number in (0, 1/2]"));
    }
    let scale = 1.0 / epsilon;
    Ok(LaplaceThreshold {
        scale,
        threshold: (1.0 - scale * (2.0 * delta).ln()).next_up(),
    })
}

impl LaplaceThreshold {
    /// `P[c + Lap(b) > T]`.
    pub(super) fn release_probability(&self, count: u64) -> f64 {
        let gap = (self.threshold - count as f64) / self.scale;
        if gap >= 0.0 {
            0.5 * (-gap).exp()
        } else {
            1.0 - 0.5 * gap.exp()
        }
    }

    /// `E[|Z|·1{Z > T − c}]` for `Z ~ Lap(b)`: `½(a + b)e^{−a/b}` for `a = T − c ≥ 0`, and
    /// `b − ½(|a| + b)e^{−|a|/b}` below.
    pub(super) fn released_absolute_error(&self, count: u64) -> f64 {
        let b = self.scale;
        let gap = self.threshold - count as f64;
        if gap >= 0.0 {
            0.5 * (gap + b) * (-gap / b).exp()
        } else {
            b - 0.5 * (-gap + b) * (gap / b).exp()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_selection::tests::absolute_moment_above;

    #[test]
    fn an_item_of_one_client_passes_with_probability_delta() {
        let laplace = laplace_threshold(1.0, 1e-8).expect("valid");
        let p = laplace.release_probability(1);
        assert!(p <= 1e-8 && p > 0.999_999 * 1e-8, "{p}");
    }

    #[test]
    fn error_integrates_the_laplace_density() {
        let laplace = LaplaceThreshold {
            scale: 2.0,
            threshold: 10.0,
        };
        for count in [3, 10, 25] {
            let numeric =
                absolute_moment_above(10.0 - count as f64, |z| (-z.abs() / 2.0).exp() / 4.0);
            let exact = laplace.released_absolute_error(count);
            assert!(
                (numeric - exact).abs() < 1e-6,
                "{count}: {numeric} vs {exact}"
            );
        }
    }
}
