//! Privacy of the sample-and-threshold (S&T) histogram (Bharadwaj and Cormode, AISTATS 2022;
//! docs/algorithms.md §1.4).
//!
//! An S&T release samples each client with probability `p_s` and publishes the items whose
//! sampled count reaches the threshold `τ`. Four analyses give `δ` for `(ε, p_s, τ)`, from the
//! loosest to the tightest:
//!
//! | [`Analysis`] | statement |
//! | --- | --- |
//! | `closed-form` | Lemma 3.2: `δ = exp(−C_α τ)`, `C_α = ln(1/α) − 1/(1+α)`, `p_s = α(1 − e^{−ε})`, needs `ε ≤ 1` |
//! | `theorem1` | Theorem 1: `δ = exp(−(τ/q) D(q‖p_s))`, `q = 1 − e^{−ε}(1 − p_s)` |
//! | `exact` | the exact probability of Theorem 1's bad event, `sup_k Pr[Bin(k,p_s) ≥ max(τ, ⌊kq⌋+1)]` |
//! | `tight` | the exact hockey-stick divergence, `sup_k Σ_{v≥τ} (b(v;k,p_s) − e^ε b(v;k−1,p_s))_+` |
//!
//! All four need `p_s ≤ 1 − e^{−ε}`: below it the direction "one client fewer" costs no `δ`
//! (its likelihood ratio is at most `1/(1−p_s) ≤ e^ε`), so the add direction is the whole story.
//!
//! # Neighbour relations
//!
//! The theorem is an add/remove one. Under replace-one, two cells change: the cell the client
//! leaves, whose ratio is at most `1/(1−p_s)` (pure `ε_d = ln(1/(1−p_s))`), and the cell it
//! joins, which is the add/remove case. By composition the replace-one guarantee at `ε` is the
//! add/remove one at `ε − ε_d`; this needs `p_s ≤ 1 − e^{−ε/2}`.

mod accuracy;
mod analysis;
mod items;
mod legacy;
mod loss_distribution;
mod plan;
mod replace_one;
mod rounds;

pub use accuracy::{min_frequency_for_relative_error, omission_bound, relative_error_failure};
pub use analysis::{Analysis, SampleThresholdParams, closed_form_constant, delta};
pub use items::items_guarantee;
pub use legacy::{
    legacy_epsilon, legacy_failure_probability, legacy_theta_lambert, legacy_theta_standard,
};
pub use loss_distribution::{privacy_profile, total_variation};
pub use plan::{Plan, PlanTarget, max_sampling_rate, min_threshold, plan};
pub use rounds::{
    MAX_TIGHT_ROUNDS, TIGHT_STEP, tight_max_sampling_rate, tight_min_threshold,
    tight_rounds_epsilon,
};

use crate::{Error, Neighbours};

/// The largest sampling rate the analyses accept at `epsilon`: `1 − e^{−ε}` for add/remove and
/// `1 − e^{−ε/2}` for replace-one, rounded down.
pub fn max_sampling_rate_cap(epsilon: f64, neighbours: Neighbours) -> f64 {
    let eps = match neighbours {
        Neighbours::AddRemove => epsilon,
        Neighbours::ReplaceOne => epsilon / 2.0,
    };
    (-(-eps).exp_m1()).next_down()
}

/// Checks that `epsilon` is a finite positive number.
pub(crate) fn check_epsilon(epsilon: f64) -> Result<(), Error> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid("epsilon", epsilon, "a finite number > 0"))
    }
}

/// Checks that `delta` lies in (0, 1).
pub(crate) fn check_delta(delta: f64) -> Result<(), Error> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("delta", delta, "a number in (0, 1)"))
    }
}
