//! Balcer–Cheu 2020 Bernoulli-noise protocols in the shuffle model (ALGORITHMS.md §7.3;
//! "Separating Local & Shuffled Differential Privacy via Histograms", ITC 2020, Fig. 1–2 and
//! Theorems 3.1–3.2).
//!
//! * **Binary sum `P^zsum`** (Theorem 3.1): each of `n` users holding `x ∈ {0, 1}` sends
//!   `x + z` copies of the message "1", `z ~ Ber(p)`, with the noise probability
//!   `p = 1 − (50/(ε² n)) ln(2/δ)`. The shuffled messages are `(ε, δ)`-DP for replace-one
//!   neighbours when `ε, δ ∈ (0, 1]` and `n ≥ (100/ε²) ln(2/δ)`, which is `p ∈ [1/2, 1)`.
//! * **Histogram `P^hist`** (Theorem 3.2): a user holding `x ∈ [d]` runs the binary-sum
//!   randomizer once per cell `j` with `b_j = 1[x = j]`. Run with `(ε', δ')` it is
//!   `(2ε', 2δ')`-DP for replace-one (a replacement changes two cells), so the target
//!   `(ε, δ)` is met by running it at `(ε', δ') = (ε/2, δ/2)`: [`BalcerCheu::histogram`].
//!
//! The §7.3 test-vector table (`ε = 1, δ = 1e−8, n = 10⁵ → p = 0.99044309`, …) lists the
//! binary-sum `p` for the `(ε, δ, n)` of the row *directly*: [`noise_probability`] reproduces
//! it. The histogram protocol at the same target uses `noise_probability(ε/2, δ/2, n)`.
//!
//! # Privacy
//!
//! Guarantee `(ε, δ)` in the shuffle model (the anonymous multiset of all messages, as a
//! trusted shuffler outputs it), for replace-one neighbours, by Balcer–Cheu Theorems 3.1/3.2.
//! `p` is rounded **down**: every operation of the noise term `t = (50/(ε² n)) ln(2/δ)` is
//! rounded towards a larger term `t̂ ≥ t`, and `p = 1 − t̂` is then stepped one ulp down. This is
//! safe because a `p̂ = 1 − t̂'` with `t̂' ≥ t` is exactly the theorem's `p` at the same `ε`, `n`
//! and the smaller `δ' = 2 exp(−t̂' ε² n/50) ≤ δ`, and the theorem's validity condition at
//! `δ'` is `t̂' ≤ 1/2`, which is what is checked: so the protocol is `(ε, δ')`-DP, hence
//! `(ε, δ)`-DP. With `n' > n` users the guarantee still holds (the extra users' messages are
//! independent of the differing user's: post-processing), but the analyzer and its error bound
//! assume exactly `n`.

use crate::{Error, Guarantee, Neighbours, TrustModel};

/// Which Balcer–Cheu protocol a [`BalcerCheu`] calibration is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BalcerCheuProtocol {
    /// The binary-sum protocol `P^zsum`, run at the target `(ε, δ)` itself.
    BinarySum,
    /// The histogram protocol `P^hist`, whose per-cell binary sums run at `(ε/2, δ/2)`.
    Histogram,
}

/// A calibrated Balcer–Cheu protocol: the target guarantee, the number of users and the noise
/// probability `p` of every per-cell binary sum.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheu {
    protocol: BalcerCheuProtocol,
    epsilon: f64,
    delta: f64,
    users: u64,
    /// `(ε', δ')` of each binary sum.
    component: (f64, f64),
    noise_probability: f64,
}

impl BalcerCheu {
    /// The binary-sum protocol `P^zsum` for `n = users` users at target `(epsilon, delta)`.
    ///
    /// # Errors
    ///
    /// As [`noise_probability`].
    pub fn binary_sum(epsilon: f64, delta: f64, users: u64) -> Result<Self, Error> {
        Ok(Self {
            protocol: BalcerCheuProtocol::BinarySum,
            epsilon,
            delta,
            users,
            component: (epsilon, delta),
            noise_probability: noise_probability(epsilon, delta, users)?,
        })
    }

    /// The histogram protocol `P^hist` for `n = users` users at target `(epsilon, delta)`,
    /// replace-one: every cell's binary sum runs at `(epsilon/2, delta/2)` (Theorem 3.2), so
    /// `epsilon ∈ (0, 2]`, `delta ∈ (0, 1)` and `n ≥ (400/ε²) ln(4/δ)`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `epsilon ∉ (0, 2]` or `delta ∉ (0, 1)`; otherwise as
    /// [`noise_probability`] for `(epsilon/2, delta/2, users)`.
    pub fn histogram(epsilon: f64, delta: f64, users: u64) -> Result<Self, Error> {
        if !(epsilon.is_finite() && epsilon > 0.0 && epsilon <= 2.0) {
            return Err(Error::invalid("epsilon", epsilon, "a number in (0, 2]"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
        }
        // Halving is exact in binary floating point (no underflow for δ ≥ 2^-1021).
        let component = (epsilon / 2.0, delta / 2.0);
        Ok(Self {
            protocol: BalcerCheuProtocol::Histogram,
            epsilon,
            delta,
            users,
            component,
            noise_probability: noise_probability(component.0, component.1, users)?,
        })
    }

    /// Which protocol this is.
    pub fn protocol(&self) -> BalcerCheuProtocol {
        self.protocol
    }

    /// The target ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The target δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The number of users `n` the calibration is for.
    pub fn users(&self) -> u64 {
        self.users
    }

    /// The `(ε', δ')` each per-cell binary sum runs at: the target for
    /// [`BalcerCheuProtocol::BinarySum`], half of it for [`BalcerCheuProtocol::Histogram`].
    pub fn component(&self) -> (f64, f64) {
        self.component
    }

    /// The noise probability `p ∈ [1/2, 1)` (rounded down) of every per-cell binary sum.
    pub fn noise_probability(&self) -> f64 {
        self.noise_probability
    }

    /// The guarantee: `(ε, δ)`, replace-one, in the shuffle model.
    pub fn guarantee(&self) -> Guarantee {
        let analysis = match self.protocol {
            BalcerCheuProtocol::BinarySum => "Balcer–Cheu 2020 Thm 3.1 (binary sum)".to_string(),
            BalcerCheuProtocol::Histogram => format!(
                "Balcer–Cheu 2020 Thm 3.2 (histogram; per-cell binary sums at ε' = {}, δ' = {})",
                self.component.0, self.component.1
            ),
        };
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis,
        }
    }

    /// The per-query error bound `α` of Theorem 3.1 for one binary sum (one histogram cell),
    /// as a *frequency* (count divided by `n`): with probability at least `1 − β`,
    /// `|estimate − true frequency| ≤ α` with
    /// `α = (50/(ε'² n)) ln(2/δ') + sqrt((200/(ε' n)) ln(2/δ') ln(2/β))`, at the component
    /// `(ε', δ')`. For all `d` cells simultaneously, use `β/d` (union bound). Rounded up.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `β ∈ [δ'^25, 1)`, the range Theorem 3.1 covers.
    pub fn error_bound(&self, beta: f64) -> Result<f64, Error> {
        let (eps, delta) = self.component;
        if !(beta < 1.0 && beta > 0.0 && beta.ln() >= 25.0 * delta.ln()) {
            return Err(Error::invalid("beta", beta, "a number in [δ'^25, 1)"));
        }
        let n = self.users as f64;
        let ln_delta = (2.0 / delta).ln();
        let bias = 50.0 / (eps * eps * n) * ln_delta;
        let spread = (200.0 / (eps * n) * ln_delta * (2.0 / beta).ln()).sqrt();
        // A few ulps of slack for the rounding of the terms above.
        Ok((bias + spread) * (1.0 + 1e-12))
    }
}

/// `x` rounded up by one ulp, a safe upper bound on the exact value of a correctly rounded
/// (or within-one-ulp) operation whose result is `x > 0`.
fn up(x: f64) -> f64 {
    x.next_up()
}

/// `x` rounded down by one ulp (see [`up`]).
fn down(x: f64) -> f64 {
    x.next_down()
}

/// The binary-sum noise probability `p = 1 − (50/(ε² n)) ln(2/δ)` (Balcer–Cheu Fig. 1),
/// rounded down: at most the exact real value, and within a few ulps of it.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `epsilon ∉ (0, 1]`, `delta ∉ (0, 1]`, or
/// `n < (100/ε²) ln(2/δ)` (equivalently `p < 1/2`; checked on a rigorous upper bound of the
/// noise term, so a value within rounding error of the boundary is rejected).
pub fn noise_probability(epsilon: f64, delta: f64, n: u64) -> Result<f64, Error> {
    if !(epsilon.is_finite() && epsilon > 0.0 && epsilon <= 1.0) {
        return Err(Error::invalid("epsilon", epsilon, "a number in (0, 1]"));
    }
    if !(delta > 0.0 && delta <= 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1]"));
    }
    rounded_p(epsilon, delta, n).ok_or_else(|| {
        // min_users cannot fail here: ε and δ were validated above.
        let needed = min_users(epsilon, delta).map_or_else(|e| e.to_string(), |m| m.to_string());
        Error::invalid(
            "users",
            n,
            format!("at least (100/ε²) ln(2/δ) = {needed} users for ε = {epsilon}, δ = {delta}"),
        )
    })
}

/// `p̂ = 1 − t̂'`: one ulp below `fl(1 − t̂)` for the upper bound `t̂` of the noise term, so
/// `p̂ ≤ 1 − t`; `None` unless `p̂ ≥ 1/2` (Theorem 3.1's condition at the smaller `δ'` that
/// `p̂` is exact for; see the module's Privacy section).
fn rounded_p(epsilon: f64, delta: f64, n: u64) -> Option<f64> {
    let term = noise_term_upper(epsilon, delta, n);
    if term > 0.5 {
        return None;
    }
    let p = down(1.0 - term);
    (p >= 0.5).then_some(p)
}

/// A rigorous upper bound on `(50/(ε² n)) ln(2/δ)` (`+∞` for `n = 0`).
fn noise_term_upper(epsilon: f64, delta: f64, n: u64) -> f64 {
    if n == 0 {
        return f64::INFINITY;
    }
    // ln is accurate to within one ulp: one step up of each rounded operation bounds it.
    let ln_two_over_delta = up(up(2.0 / delta).ln());
    let numerator = up(50.0 * ln_two_over_delta);
    let denominator = down(down(epsilon * epsilon) * down(n as f64));
    up(numerator / denominator)
}

/// The smallest number of users `n` for which [`noise_probability`] accepts `(epsilon,
/// delta)`: the validity condition `n ≥ (100/ε²) ln(2/δ)` of Theorem 3.1, with the same
/// conservative rounding.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `epsilon ∉ (0, 1]` or `delta ∉ (0, 1]`.
pub fn min_users(epsilon: f64, delta: f64) -> Result<u64, Error> {
    if !(epsilon.is_finite() && epsilon > 0.0 && epsilon <= 1.0) {
        return Err(Error::invalid("epsilon", epsilon, "a number in (0, 1]"));
    }
    if !(delta > 0.0 && delta <= 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1]"));
    }
    let estimate = (100.0 / (epsilon * epsilon) * (2.0 / delta).ln()).ceil() as u64;
    // Step past the rounding of the estimate to the first n the rigorous check accepts.
    let mut n = estimate.saturating_sub(2).max(1);
    while rounded_p(epsilon, delta, n).is_none() {
        n += 1;
    }
    while n > 1 && rounded_p(epsilon, delta, n - 1).is_some() {
        n -= 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_term_bounds_the_plain_formula() {
        let plain = 50.0 / (0.25 * 1e4) * (2.0f64 / 1e-6).ln();
        let upper = noise_term_upper(0.5, 1e-6, 10_000);
        assert!(upper >= plain && upper <= plain * (1.0 + 1e-14));
    }

    #[test]
    fn min_users_is_the_boundary() {
        let n = min_users(1.0, 1e-6).unwrap();
        assert!(noise_probability(1.0, 1e-6, n).is_ok());
        assert!(noise_probability(1.0, 1e-6, n - 1).is_err());
    }
}
