//! Privacy of TrieHH (Zhu, Kairouz, McMahan, Sun, Li, AISTATS 2020; docs/algorithms.md §2.3).
//!
//! TrieHH runs `L` rounds. Each round samples `m` of the `n` clients uniformly without
//! replacement, and each sampled client votes for one prefix; prefixes with at least `θ` votes
//! join the trie.
//!
//! **RECON.** The paper's text was not available. The theorem and corollary here are
//! reconstructed from two code bases that agree with each other: the authors' simulation
//! (`triehh/triehh`, "CODE A") and a Facebook re-implementation whose `_set_theta` and
//! `verify_epsilon` say they implement "corollary 1 in paper" ("CODE B").
//!
//! **Theorem (reconstructed).** If `4 ≤ θ ≤ √n` and `s = m/n ≤ 1/(θ+1)`, TrieHH is
//! `(ε, δ)`-DP with `ε = −L ln(1 − θm/n)` and `δ = (θ−2)/((θ−3)·θ!)`. Both code bases treat
//! this `δ` as the *total* over the `L` rounds (there is no factor `L`); whether the paper
//! states it per round could not be checked. The neighbour relation is not recorded in either
//! code base (each client holds one word).
//!
//! **Corollary 1.** From `(ε, δ, L, n)`: take `θ` by a [`ThetaRule`], raise it to at least
//! `e^{ε/L} − 1` (which is equivalent to `s ≤ 1/(θ+1)`), and set
//! `m = ⌊n(1 − e^{−ε/L})/θ⌋`, so that each round costs at most `ε/L`.
//!
//! **CODE B's closed form is not always sufficient.** Its Stirling step loses about
//! `1/(8θ)` in `ln θ!`, which the other steps' slack covers for `θ ≥ 11` but not at `θ = 10`:
//! for `δ ∈ [3.1369e-7, 3.1494e-7)` (exactly
//! `[8/(7√(2π))·e^{−(10.5 ln 10.5 − 10.5)}, 8/(7·10!))`) it gives `θ = 10`, whose `δ` is
//! `8/(7·10!) ≈ 3.1494e-7 > δ`. [`theta_closed_form`] returns CODE B's value as is;
//! [`corollary1`] raises `θ` until the theorem's `δ` meets the target.
//!
//! Rounding: `ε` is inflated by [`crate::composition::EPSILON_MARGIN`] and `δ` by
//! [`crate::numeric::DELTA_MARGIN`]; the batch size is the largest that keeps the inflated `ε`
//! within the target, and `θ` the smallest whose inflated `δ` meets it.

use crate::Error;
use crate::composition::epsilon_upper;
use crate::numeric::{delta_upper, lambert_w0};

/// The largest population the analysis accepts, `2^53`, so that `n` and `θ·m` are exact as
/// `f64`.
pub const MAX_POPULATION: u64 = 1 << 53;

/// The largest `θ` the factorial search tries; its `δ` is below the smallest `f64` long before.
const MAX_THETA_SEARCH: u64 = 10_000;

/// How Corollary 1 chooses the threshold `θ` from `δ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThetaRule {
    /// CODE A: the smallest `θ ≥ start` with `((θ−3)/(θ−2))·θ! ≥ 1/δ` (see
    /// [`theta_factorial`]). The AISTATS code starts at 5, the NeurIPS submission at 9.
    Factorial {
        /// The first `θ` tried, at least 4.
        start: u64,
    },
    /// CODE B: the Stirling-based closed form of [`theta_closed_form`].
    ClosedForm,
}

/// The parameters of a TrieHH run: threshold `θ`, batch size `m`, rounds `L` and population
/// `n`, checked against the theorem's conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TrieHhParams {
    theta: u64,
    batch_size: u64,
    rounds: u64,
    population: u64,
}

impl TrieHhParams {
    /// Validates the theorem's conditions: `4 ≤ θ ≤ √n`, `1 ≤ m ≤ n/(θ+1)` (that is,
    /// `s ≤ 1/(θ+1)`), `L ≥ 1` and `1 ≤ n ≤` [`MAX_POPULATION`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming the first violated condition.
    pub fn new(theta: u64, batch_size: u64, rounds: u64, population: u64) -> Result<Self, Error> {
        if theta < 4 {
            return Err(Error::invalid("theta", theta, "an integer ≥ 4"));
        }
        if !(1..=MAX_POPULATION).contains(&population) {
            return Err(Error::invalid(
                "population",
                population,
                "an integer in [1, 2^53]",
            ));
        }
        if u128::from(theta) * u128::from(theta) > u128::from(population) {
            return Err(Error::invalid(
                "theta",
                theta,
                format!("at most √n (n = {population})"),
            ));
        }
        if rounds == 0 {
            return Err(Error::invalid("rounds", 0, "an integer ≥ 1"));
        }
        let max_batch = population / (theta + 1);
        if !(1..=max_batch).contains(&batch_size) {
            return Err(Error::invalid(
                "batch size",
                batch_size,
                format!("between 1 and n/(θ+1) = {max_batch}"),
            ));
        }
        Ok(Self {
            theta,
            batch_size,
            rounds,
            population,
        })
    }

    /// The vote threshold `θ`.
    pub fn theta(&self) -> u64 {
        self.theta
    }

    /// The batch size `m`, the number of clients sampled per round.
    pub fn batch_size(&self) -> u64 {
        self.batch_size
    }

    /// The number of rounds `L` (the longest word, terminator included).
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The population `n`.
    pub fn population(&self) -> u64 {
        self.population
    }

    /// The sampling fraction `s = m/n`.
    pub fn sampling_fraction(&self) -> f64 {
        self.batch_size as f64 / self.population as f64
    }

    /// `ε = −L ln(1 − θm/n)`, inflated by [`crate::composition::EPSILON_MARGIN`].
    pub fn epsilon(&self) -> f64 {
        // θ·m ≤ n ≤ 2^53 and n are exact; one division, ln_1p and a product follow.
        let fraction = (self.theta * self.batch_size) as f64 / self.population as f64;
        epsilon_upper(-(self.rounds as f64) * (-fraction).ln_1p())
    }

    /// `δ = (θ−2)/((θ−3)·θ!)`, the total over all rounds, as [`triehh_delta`].
    pub fn delta(&self) -> f64 {
        delta_of_theta(self.theta)
    }

    /// The pair `(ε, δ)` of the theorem.
    pub fn guarantee(&self) -> (f64, f64) {
        (self.epsilon(), self.delta())
    }
}

/// The `(ε, δ)` of TrieHH with threshold `θ`, batch size `m`, `L` rounds and population `n`
/// (the reconstructed Theorem 1): `ε = −L ln(1 − θm/n)` rounded up, and the total
/// `δ = (θ−2)/((θ−3)·θ!)` rounded up.
///
/// # Errors
///
/// As [`TrieHhParams::new`].
pub fn triehh_guarantee(
    theta: u64,
    batch_size: u64,
    rounds: u64,
    population: u64,
) -> Result<(f64, f64), Error> {
    Ok(TrieHhParams::new(theta, batch_size, rounds, population)?.guarantee())
}

/// The theorem's `δ = (θ−2)/((θ−3)·θ!)`, inflated by [`crate::numeric::DELTA_MARGIN`], and
/// never 0 (below the `f64` range it is the smallest positive `f64`).
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `θ < 4`.
pub fn triehh_delta(theta: u64) -> Result<f64, Error> {
    if theta < 4 {
        return Err(Error::invalid("theta", theta, "an integer ≥ 4"));
    }
    Ok(delta_of_theta(theta))
}

fn delta_of_theta(theta: u64) -> f64 {
    let t = theta as f64;
    let ln_delta = ((t - 2.0) / (t - 3.0)).ln() - libm::lgamma(t + 1.0);
    delta_upper(ln_delta.exp()).max(f64::from_bits(1))
}

/// CODE A's threshold: the smallest `θ ≥ start` with `((θ−3)/(θ−2))·θ! ≥ 1/δ`, that is, whose
/// theorem `δ` ([`triehh_delta`], rounded up) is at most `delta`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `δ ∈ (0, 1)` and `start ≥ 4`.
pub fn theta_factorial(delta: f64, start: u64) -> Result<u64, Error> {
    check_delta(delta)?;
    if start < 4 {
        return Err(Error::invalid("theta start", start, "an integer ≥ 4"));
    }
    let mut theta = start;
    while delta_of_theta(theta) > delta {
        theta += 1;
        // Unreachable: δ(θ) falls below every positive f64 by θ ≈ 180.
        if theta > MAX_THETA_SEARCH {
            return Err(Error::infeasible(
                "theta",
                format!("none up to {MAX_THETA_SEARCH} meets δ = {delta}"),
            ));
        }
    }
    Ok(theta)
}

/// `C = e^{−1}·ln(8/(7·√(2π)·δ))`, the argument of the Lambert W in CODE B's closed form.
/// Appendix A item 5: `C = 9.569539324463468` at `δ = 2.3e-12`.
pub fn theta_closed_form_constant(delta: f64) -> f64 {
    let ln_k = (8.0 / (7.0 * (2.0 * std::f64::consts::PI).sqrt())).ln();
    (ln_k - delta.ln()) / std::f64::consts::E
}

/// CODE B's threshold, `θ = ⌈max{10, exp(W0(C) + 1) − 1/2}⌉` with
/// `C =` [`theta_closed_form_constant`]`(δ)`. A value within a relative `1e-12` below an
/// integer is rounded to the next one (the safe direction).
///
/// This is a Stirling-based sufficient condition for [`theta_factorial`] except on
/// `δ ∈ [3.1369e-7, 3.1494e-7)`, where it gives 10 but 11 is needed (see the module docs);
/// [`corollary1`] corrects for that.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `δ ∈ (0, 1)`.
pub fn theta_closed_form(delta: f64) -> Result<u64, Error> {
    check_delta(delta)?;
    // C ≥ ln(8/(7√(2π)))/e > −1/e for δ < 1, inside the domain of W0.
    let c = theta_closed_form_constant(delta);
    let value = ((lambert_w0(c) + 1.0).exp() - 0.5) * (1.0 + 1e-12);
    Ok(value.max(10.0).ceil() as u64)
}

/// Corollary 1: TrieHH parameters that are `(ε, δ)`-DP over `rounds` rounds for a population
/// of `population` clients.
///
/// 1. `θ = max(rule(δ), ⌈e^{ε/L} − 1⌉)`; infeasible if `θ > √n`.
/// 2. `θ` is raised while the theorem's `δ` exceeds the target (only CODE B's closed form can
///    need this; see the module docs); infeasible if it then passes `√n`.
/// 3. `m` is the largest batch with `m ≤ n/(θ+1)` whose `ε` (rounded up) is at most `ε`:
///    `⌊n(1 − e^{−ε/L})/θ⌋` unless that is within the rounding margin of the boundary.
/// 4. Infeasible if `m < θ` (CODE B's check: no prefix could ever reach the threshold).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε > 0` is finite, `δ ∈ (0, 1)`, `L ≥ 1`,
/// `1 ≤ n ≤` [`MAX_POPULATION`] and, for [`ThetaRule::Factorial`], `start ≥ 4`.
/// [`Error::Infeasible`] as in steps 1, 2 and 4.
pub fn corollary1(
    epsilon: f64,
    delta: f64,
    rounds: u64,
    population: u64,
    rule: ThetaRule,
) -> Result<TrieHhParams, Error> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    check_delta(delta)?;
    if rounds == 0 {
        return Err(Error::invalid("rounds", 0, "an integer ≥ 1"));
    }
    if !(1..=MAX_POPULATION).contains(&population) {
        return Err(Error::invalid(
            "population",
            population,
            "an integer in [1, 2^53]",
        ));
    }
    let per_round = epsilon / rounds as f64;
    let n = population as f64;
    let above_sqrt_n = |theta: u64| u128::from(theta) * u128::from(theta) > u128::from(population);
    let too_large = |theta: u64| {
        Error::infeasible(
            "theta",
            format!("θ = {theta} exceeds √n for n = {population}; lower ε/L or δ's demands"),
        )
    };
    let theta_rule = match rule {
        ThetaRule::Factorial { start } => theta_factorial(delta, start)?,
        ThetaRule::ClosedForm => theta_closed_form(delta)?,
    };
    // θ ≥ e^{ε/L} − 1, compared in f64 first so that a huge value cannot overflow.
    let theta_epsilon = per_round.exp_m1().ceil();
    if theta_epsilon * theta_epsilon > n {
        return Err(too_large(theta_epsilon as u64));
    }
    let mut theta = theta_rule.max(theta_epsilon as u64);
    if above_sqrt_n(theta) {
        return Err(too_large(theta));
    }
    while delta_of_theta(theta) > delta {
        theta += 1;
    }
    if above_sqrt_n(theta) {
        return Err(too_large(theta));
    }
    let max_batch = population / (theta + 1);
    let fits = |m: u64| {
        m <= max_batch && {
            let fraction = (theta * m) as f64 / n;
            epsilon_upper(-(rounds as f64) * (-fraction).ln_1p()) <= epsilon
        }
    };
    let mut batch = ((n * -(-per_round).exp_m1()) / theta as f64).floor() as u64;
    while batch > 0 && !fits(batch) {
        batch -= 1;
    }
    while fits(batch + 1) {
        batch += 1;
    }
    if batch < theta {
        return Err(Error::infeasible(
            "batch size",
            format!(
                "m = {batch} is below θ = {theta} for n = {population}: no prefix could reach \
                 the threshold; raise ε or n"
            ),
        ));
    }
    TrieHhParams::new(theta, batch, rounds, population)
}

fn check_delta(delta: f64) -> Result<(), Error> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("delta", delta, "a number in (0, 1)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = 1_000_000;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    /// Rounds to `digits` significant digits, as the spec's table prints.
    fn sig(x: f64, digits: i32) -> f64 {
        let scale = 10_f64.powi(digits - 1 - x.abs().log10().floor() as i32);
        (x * scale).round() / scale
    }

    #[test]
    fn test_vec_section_2_3_table() {
        // (δ, ε, L, θ, s, m at n = 10^6, (θ−2)/((θ−3)θ!))
        let table = [
            (2.3e-12, 4.0, 10, 15, 0.021_978_7, 21_978, 8.28e-13),
            (2.3e-12, 1.0, 10, 15, 0.006_344_17, 6_344, 8.28e-13),
            (1e-6, 1.0, 10, 10, 0.009_516_26, 9_516, 3.15e-7),
            (1e-8, 2.0, 10, 12, 0.015_105_8, 15_105, 2.32e-9),
        ];
        for (delta, eps, rounds, theta, s, m, theta_delta) in table {
            for rule in [
                ThetaRule::Factorial { start: 5 },
                ThetaRule::Factorial { start: 9 },
                ThetaRule::ClosedForm,
            ] {
                let params = corollary1(eps, delta, rounds, N, rule).unwrap();
                assert_eq!(params.theta(), theta, "δ = {delta}, ε = {eps}, {rule:?}");
                assert_eq!(params.batch_size(), m, "δ = {delta}, ε = {eps}, {rule:?}");
                let (achieved_eps, achieved_delta) = params.guarantee();
                assert!(achieved_eps <= eps && achieved_delta <= delta);
                assert!(close(sig(achieved_delta, 3), theta_delta, 1e-12));
            }
            // The table's s is the unfloored (1 − e^{−ε/L})/θ.
            let unfloored = -(-eps / rounds as f64).exp_m1() / theta as f64;
            assert!(close(sig(unfloored, 6), s, 1e-12), "{unfloored} vs {s}");
        }
    }

    #[test]
    fn test_vec_appendix_a_item_5() {
        let c = theta_closed_form_constant(2.3e-12);
        assert!(close(c, 9.569_539_324_463_468, 1e-14), "{c}");
        let w = lambert_w0(c);
        assert!(close(w, 1.717_636_088_484_928_2, 1e-14), "{w}");
        assert!(close((w + 1.0).exp() - 0.5, 14.64, 1e-3));
        assert_eq!(theta_closed_form(2.3e-12).unwrap(), 15);
        assert_eq!(theta_factorial(2.3e-12, 5).unwrap(), 15);
    }

    #[test]
    fn test_vec_closed_form_band_is_corrected() {
        // Inside [3.1369e-7, 3.1494e-7) CODE B gives 10 but δ(10) = 8/(7·10!) ≈ 3.1494e-7.
        let delta = 3.142e-7;
        assert_eq!(theta_closed_form(delta).unwrap(), 10);
        assert_eq!(theta_factorial(delta, 4).unwrap(), 11);
        assert!(triehh_delta(10).unwrap() > delta);
        let params = corollary1(1.0, delta, 10, N, ThetaRule::ClosedForm).unwrap();
        assert_eq!(params.theta(), 11);
        assert!(params.delta() <= delta);
    }

    #[test]
    fn theta_is_raised_to_the_epsilon_floor() {
        // ε/L = 8: θ ≥ e^8 − 1 = 2979.96 → 2980, and m/n ≤ 1/(θ+1).
        let params = corollary1(8.0, 1e-6, 1, 100_000_000, ThetaRule::ClosedForm).unwrap();
        assert_eq!(params.theta(), 2980);
        assert!(params.batch_size() * 2981 <= 100_000_000);
    }

    #[test]
    fn corollary_reports_infeasible_parameters() {
        // n = 99: θ = 10 > √99.
        assert!(matches!(
            corollary1(1.0, 1e-6, 10, 99, ThetaRule::ClosedForm),
            Err(Error::Infeasible { what: "theta", .. })
        ));
        // n = 100: θ = 10 = √n, but m = ⌊100·0.0952/10⌋ = 0 < θ.
        assert!(matches!(
            corollary1(1.0, 1e-6, 10, 100, ThetaRule::ClosedForm),
            Err(Error::Infeasible {
                what: "batch size",
                ..
            })
        ));
        // e^{25} − 1 dwarfs √(10^6).
        assert!(matches!(
            corollary1(50.0, 1e-6, 2, N, ThetaRule::ClosedForm),
            Err(Error::Infeasible { what: "theta", .. })
        ));
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(TrieHhParams::new(3, 10, 1, 1000).is_err());
        assert!(TrieHhParams::new(40, 10, 1, 1599).is_err()); // θ > √n
        assert!(TrieHhParams::new(10, 1, 0, 1000).is_err());
        assert!(TrieHhParams::new(10, 0, 1, 1000).is_err());
        assert!(TrieHhParams::new(4, 4, 1, 16).is_err()); // m > n/(θ+1) = 3
        assert!(TrieHhParams::new(4, 3, 1, 16).is_ok());
        assert!(TrieHhParams::new(4, 1, 1, MAX_POPULATION + 1).is_err());
        assert!(triehh_delta(3).is_err());
        assert!(theta_factorial(1e-6, 3).is_err());
        assert!(theta_factorial(0.0, 5).is_err());
        assert!(theta_closed_form(1.0).is_err());
        for bad in [
            corollary1(0.0, 1e-6, 10, N, ThetaRule::ClosedForm),
            corollary1(f64::NAN, 1e-6, 10, N, ThetaRule::ClosedForm),
            corollary1(1.0, 0.0, 10, N, ThetaRule::ClosedForm),
            corollary1(1.0, 1e-6, 0, N, ThetaRule::ClosedForm),
            corollary1(1.0, 1e-6, 10, 0, ThetaRule::ClosedForm),
            corollary1(1.0, 1e-6, 10, N, ThetaRule::Factorial { start: 2 }),
        ] {
            assert!(
                matches!(bad, Err(Error::InvalidParameter { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn guarantee_matches_the_formula() {
        let (eps, delta) = triehh_guarantee(15, 21_978, 10, N).unwrap();
        let exact = -10.0 * (1.0 - 15.0 * 21_978.0 / 1e6_f64).ln();
        assert!(eps >= exact && close(eps, exact, 2e-12));
        // 13/(12·15!) = 13/15692092416000.
        let exact = 13.0 / 15_692_092_416_000.0;
        assert!(delta >= exact && close(delta, exact, 2e-6));
        assert!(triehh_delta(400).unwrap() > 0.0);
    }
}
