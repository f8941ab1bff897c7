//! Balcer–Cheu 2020 Bernoulli-noise protocols in the shuffle model (docs/algorithms.md §7.3;
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

use crate::blanket::{BlanketAnalysis, BlanketCell, MessageChange, least_noise};
use crate::collusion::Collusion;
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// Which Balcer–Cheu protocol a [`BalcerCheu`] calibration is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BalcerCheuProtocol {
    /// The binary-sum protocol `P^zsum`, run at the target `(ε, δ)` itself.
    BinarySum,
    /// The histogram protocol `P^hist`, whose per-cell binary sums run at `(ε/2, δ/2)`.
    Histogram,
}

/// A calibrated Balcer–Cheu protocol: the target guarantee, the number of users, the noise
/// probability `p` of every per-cell binary sum and the analysis that chose it.
#[derive(Clone, Debug, PartialEq)]
pub struct BalcerCheu {
    protocol: BalcerCheuProtocol,
    epsilon: f64,
    delta: f64,
    users: u64,
    /// `(ε', δ')` of each binary sum under the theorem.
    component: (f64, f64),
    noise_probability: f64,
    analysis: BlanketAnalysis,
}

impl BalcerCheu {
    /// The binary-sum protocol `P^zsum` for `n = users` users at target `(epsilon, delta)`,
    /// with the larger `p` (less noise) of Theorem 3.1 and the exact analysis.
    ///
    /// # Errors
    ///
    /// As [`BalcerCheu::with_analysis`], when neither analysis finds a `p ≥ 1/2`.
    pub fn binary_sum(epsilon: f64, delta: f64, users: u64) -> Result<Self, Error> {
        Self::calibrate(BalcerCheuProtocol::BinarySum, (epsilon, delta), users, None)
    }

    /// The histogram protocol `P^hist` for `n = users` users at target `(epsilon, delta)`,
    /// replace-one, with the larger `p` of Theorem 3.2 (every cell's binary sum at
    /// `(epsilon/2, delta/2)`) and the exact analysis (one message moving between two cells).
    ///
    /// # Errors
    ///
    /// As [`BalcerCheu::with_analysis`], when neither analysis finds a `p ≥ 1/2`.
    pub fn histogram(epsilon: f64, delta: f64, users: u64) -> Result<Self, Error> {
        Self::calibrate(BalcerCheuProtocol::Histogram, (epsilon, delta), users, None)
    }

    /// `protocol` calibrated by one analysis only.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `epsilon` is not finite and positive, `delta ∉ (0, 1)` or
    /// `users < 2`. For [`BlanketAnalysis::Theorem`], as [`noise_probability`] at the
    /// component `(ε', δ')`, and `epsilon ∉ (0, 2]` for the histogram; for
    /// [`BlanketAnalysis::Exact`], [`Error::Infeasible`] if not even `p = 1/2` reaches the
    /// target, with the smallest number of users that does.
    pub fn with_analysis(
        protocol: BalcerCheuProtocol,
        (epsilon, delta): (f64, f64),
        users: u64,
        analysis: BlanketAnalysis,
    ) -> Result<Self, Error> {
        Self::calibrate(protocol, (epsilon, delta), users, Some(analysis))
    }

    fn calibrate(
        protocol: BalcerCheuProtocol,
        (epsilon, delta): (f64, f64),
        users: u64,
        only: Option<BlanketAnalysis>,
    ) -> Result<Self, Error> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
        }
        let component = match protocol {
            BalcerCheuProtocol::BinarySum => (epsilon, delta),
            // Halving is exact in binary floating point (no underflow for δ ≥ 2^-1021).
            BalcerCheuProtocol::Histogram => (epsilon / 2.0, delta / 2.0),
        };
        let theorem = || -> Result<f64, Error> {
            if protocol == BalcerCheuProtocol::Histogram && epsilon > 2.0 {
                return Err(Error::invalid("epsilon", epsilon, "a number in (0, 2]"));
            }
            noise_probability(component.0, component.1, users)
        };
        let exact = || exact_noise_probability(protocol, epsilon, delta, users);
        let (noise_probability, analysis) = match only {
            Some(BlanketAnalysis::Theorem) => (theorem()?, BlanketAnalysis::Theorem),
            Some(BlanketAnalysis::Exact) => (exact()?, BlanketAnalysis::Exact),
            None => match (theorem(), exact()) {
                (Ok(t), Ok(e)) if t >= e => (t, BlanketAnalysis::Theorem),
                (_, Ok(e)) => (e, BlanketAnalysis::Exact),
                (Ok(t), Err(_)) => (t, BlanketAnalysis::Theorem),
                (Err(_), Err(e)) => return Err(e),
            },
        };
        Ok(Self {
            protocol,
            epsilon,
            delta,
            users,
            component,
            noise_probability,
            analysis,
        })
    }

    /// Which protocol this is.
    pub fn protocol(&self) -> BalcerCheuProtocol {
        self.protocol
    }

    /// The analysis that chose `p` and proves the guarantee.
    pub fn analysis(&self) -> BlanketAnalysis {
        self.analysis
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

    /// The `(ε', δ')` each per-cell binary sum runs at under the theorem: the target for
    /// [`BalcerCheuProtocol::BinarySum`], half of it for [`BalcerCheuProtocol::Histogram`].
    pub fn component(&self) -> (f64, f64) {
        self.component
    }

    /// The noise probability `p ∈ [1/2, 1)` (rounded down) of every per-cell binary sum.
    pub fn noise_probability(&self) -> f64 {
        self.noise_probability
    }

    /// The blanket cell and the change of one user when only `honest` users' noise coins are
    /// secret (`n` for the guarantee itself).
    pub fn blanket(&self, honest: u64) -> (BlanketCell, MessageChange) {
        blanket_of(self.protocol, honest, self.noise_probability)
    }

    /// The guarantee an honest user keeps when a fraction `colluding_fraction` of the users
    /// colludes with the analyst: the exact analysis of the honest users' noise alone at the
    /// same `δ` ([`crate::collusion`]), whichever analysis calibrated `p`; no floor (`∞`: a
    /// user's real message is not randomized).
    ///
    /// # Errors
    ///
    /// As [`crate::honest_users`] and [`BlanketCell::epsilon`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        Collusion::of_blanket(
            colluding_fraction,
            self.users,
            (self.epsilon, self.delta),
            |honest| self.blanket(honest),
        )
    }

    /// The guarantee: `(ε, δ)`, replace-one, in the shuffle model.
    pub fn guarantee(&self) -> Guarantee {
        let analysis = match (self.analysis, self.protocol) {
            (BlanketAnalysis::Theorem, BalcerCheuProtocol::BinarySum) => {
                "Balcer–Cheu 2020 Thm 3.1 (binary sum)".to_string()
            }
            (BlanketAnalysis::Theorem, BalcerCheuProtocol::Histogram) => format!(
                "Balcer–Cheu 2020 Thm 3.2 (histogram; per-cell binary sums at ε' = {}, δ' = {})",
                self.component.0, self.component.1
            ),
            (BlanketAnalysis::Exact, BalcerCheuProtocol::BinarySum) => {
                "Balcer–Cheu 2020 binary sum (exact PLD of the binomial blanket)".to_string()
            }
            (BlanketAnalysis::Exact, BalcerCheuProtocol::Histogram) => {
                "Balcer–Cheu 2020 histogram (exact PLD of the binomial blanket)".to_string()
            }
        };
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis,
        }
    }

    /// The per-query error bound `α` for one binary sum (one histogram cell), as a
    /// *frequency* (count divided by `n`): with probability at least `1 − β`,
    /// `|estimate − true frequency| ≤ α`. For all `d` cells simultaneously, use `β/d` (union
    /// bound). Rounded up.
    ///
    /// Under the theorem it is Theorem 3.1's
    /// `α = (50/(ε'² n)) ln(2/δ') + sqrt((200/(ε' n)) ln(2/δ') ln(2/β))` at the component
    /// `(ε', δ')`, for `β ∈ [δ'^25, 1)`. Under the exact analysis it is `(1 − p) + t/n` with
    /// Bernstein's deviation `t` of `Bin(n, p)` at `β` (two-sided): the analyzer is off by the
    /// noise's deviation when it releases, and releases 0 only for a frequency below
    /// `1 − p + t/n`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `β ∈ (0, 1)` (and `β ≥ δ'^25` under the theorem).
    pub fn error_bound(&self, beta: f64) -> Result<f64, Error> {
        let n = self.users as f64;
        match self.analysis {
            BlanketAnalysis::Theorem => {
                let (eps, delta) = self.component;
                if !(beta < 1.0 && beta > 0.0 && beta.ln() >= 25.0 * delta.ln()) {
                    return Err(Error::invalid("beta", beta, "a number in [δ'^25, 1)"));
                }
                let ln_delta = (2.0 / delta).ln();
                let bias = 50.0 / (eps * eps * n) * ln_delta;
                let spread = (200.0 / (eps * n) * ln_delta * (2.0 / beta).ln()).sqrt();
                // A few ulps of slack for the rounding of the terms above.
                Ok((bias + spread) * (1.0 + 1e-12))
            }
            BlanketAnalysis::Exact => {
                if !(beta < 1.0 && beta > 0.0) {
                    return Err(Error::invalid("beta", beta, "a number in (0, 1)"));
                }
                let p = self.noise_probability;
                let l = (2.0 / beta).ln();
                let variance = n * p * (1.0 - p);
                let deviation = l / 3.0 + (l * l / 9.0 + 2.0 * variance * l).sqrt();
                Ok(((1.0 - p) + deviation / n) * (1.0 + 1e-12))
            }
        }
    }
}

/// The blanket cell and change of `protocol` with `honest` users' coins at noise
/// probability `p`: every cell's noise is `Bin(honest, p)`; the binary sum adds one message,
/// the histogram moves one between two cells.
fn blanket_of(protocol: BalcerCheuProtocol, honest: u64, p: f64) -> (BlanketCell, MessageChange) {
    let change = match protocol {
        BalcerCheuProtocol::BinarySum => MessageChange::Added,
        BalcerCheuProtocol::Histogram => MessageChange::Moved(1),
    };
    (
        BlanketCell {
            coins: honest,
            probability: p,
            stray: 0.0,
        },
        change,
    )
}

/// The largest noise probability `p ∈ [1/2, 1)` (to a relative `1e-3` in `1 − p`, on the safe
/// side) at which the exact analysis proves `protocol` `(ε, δ)`-DP for `n` users.
///
/// # Errors
///
/// [`Error::Infeasible`] if not even `p = 1/2` does, naming the smallest `n` that would.
fn exact_noise_probability(
    protocol: BalcerCheuProtocol,
    epsilon: f64,
    delta: f64,
    users: u64,
) -> Result<f64, Error> {
    if users < 2 {
        return Err(Error::invalid("users", users, "at least 2"));
    }
    let passes_with = |users: u64, absent: f64| -> Result<bool, Error> {
        let p = 1.0 - absent;
        if p >= 1.0 {
            return Ok(false);
        }
        let (cell, change) = blanket_of(protocol, users, p);
        cell.meets(change, epsilon, delta)
    };
    if let Some(absent) = least_noise(0.5, |absent| passes_with(users, absent))? {
        return Ok(1.0 - absent);
    }
    let mut fewest = users;
    while !passes_with(fewest, 0.5)? {
        if fewest >= 1 << 40 {
            return Err(Error::infeasible(
                "noise probability",
                format!("not even 2^40 users reach δ = {delta} at ε = {epsilon}"),
            ));
        }
        fewest *= 2;
    }
    let mut low = users;
    while fewest - low > 1 {
        let mid = low + (fewest - low) / 2;
        if passes_with(mid, 0.5)? {
            fewest = mid;
        } else {
            low = mid;
        }
    }
    Err(Error::invalid(
        "users",
        users,
        format!(
            "at least {fewest} users for ε = {epsilon}, δ = {delta} (the exact analysis at the \
             most noise, p = 1/2)"
        ),
    ))
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

    /// With nobody colluding the guarantee stands; with a tenth and a half of the users
    /// colluding it is the exact blanket of the others' noise, larger the more collude; with
    /// every other user colluding a user's one real message is in the clear.
    #[test]
    fn colluders_leave_the_honest_users_noise() {
        let histogram = BalcerCheu::histogram(1.0, 1e-6, 20_000).unwrap();
        let honest = histogram.collusion(0.0).unwrap();
        assert_eq!((honest.epsilon, honest.delta), (1.0, 1e-6));
        assert!(honest.floor.is_infinite());
        let tenth = histogram.collusion(0.1).unwrap();
        let (cell, change) = histogram.blanket(18_000);
        let exact = cell.epsilon(change, 1e-6).unwrap();
        assert_eq!(tenth.epsilon.to_bits(), exact.max(1.0).to_bits());
        assert!(tenth.epsilon > 1.0, "{tenth:?}");
        let half = histogram.collusion(0.5).unwrap();
        assert!(half.epsilon > tenth.epsilon, "{half:?} vs {tenth:?}");
        assert_eq!(half.delta.to_bits(), 1e-6_f64.to_bits());
        let alone = histogram.collusion(1.0).unwrap();
        assert!(
            alone.epsilon.is_infinite() && alone.floor.is_infinite(),
            "{alone:?}"
        );
        assert!(histogram.collusion(1.5).is_err());
    }

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
