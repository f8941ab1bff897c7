//! Parameters of the multi-message shuffle protocols of Ghazi, Golowich, Kumar, Pagh and
//! Velingker, "On the Power of Multiple Anonymous Messages" (arXiv 1908.11358v4;
//! docs/algorithms.md §5).
//!
//! Each user holds a set `S ⊂ [B]` of at most `k` items and sends several messages; a trusted
//! shuffler outputs the multiset of all messages. The guarantees are `(ε, δ)`-DP of the
//! shuffled multiset for replace-one neighbours (Definition 2.2: one user's set changes).
//!
//! * [`HadamardParams`]: Algorithm 1 (private-coin Hadamard response). `τ = ⌊log2 n⌋`, and the
//!   number of blanket tuples is the *conservative* `ρ = ⌈(36k²/ε²)·ln(2e·k/(εδ))⌉`, which also
//!   covers the factor 2 by which the last line of Lemma 4.4's proof differs from its statement.
//!   Theorem 4.3's own `ρ` is [`hadamard_rho_theorem`].
//! * [`CountMinParams`]: Algorithm 2 (public-coin Count-Min with binomial blanket noise), with
//!   the explicit privacy condition of Lemma 4.10, `γn ≥ 90τ²k² ln(2τk/δ)/ε²` and `γ ≤ 1/2`,
//!   and every user's blanket capped at [`count_min_blanket_cap`] cells (a share of `δ` pays
//!   for the cap; [`count_min_delta_split`]).
//! * [`heavy_hitter_levels`]: Appendix D's split of the budget over the prefix levels, by basic
//!   composition.
//!
//! # Rounding
//!
//! `ρ` and `γ` are rounded up (more blanket noise), `τ` of Algorithm 1 down (the blanket
//! probability `2^{−τ}` only grows), and the Count-Min `γ` is computed for the number of rows
//! `τ` actually used. Every floating-point requirement is inflated by [`MARGIN`] before it is
//! rounded, which covers the few ulps of error in `ln` and the products.

use std::f64::consts::E;

use crate::blanket::{BlanketAnalysis, BlanketCell, MessageChange, least_noise};
use crate::collusion::Collusion;
use crate::composition::{Composition, compose_basic, split_budget};
use crate::numeric::ln_binomial_upper_tail_chernoff;
use crate::{Error, Guarantee, Neighbours, TrustModel};

/// Relative inflation applied to a floating-point requirement before it is rounded up.
pub const MARGIN: f64 = 1e-12;

/// The default failure probability `β` of the Count-Min accuracy guarantee, which sets the
/// number of rows `τ = ⌈log2(2B/β)⌉`.
pub const DEFAULT_COUNT_MIN_BETA: f64 = 0.01;

/// The largest number of users accepted (`2^40`), so that counts and table sizes stay exact.
pub const MAX_USERS: u64 = 1 << 40;

/// `x` inflated by [`MARGIN`] and rounded up to an integer.
fn ceil_up(x: f64) -> u64 {
    (x * (1.0 + MARGIN)).ceil() as u64
}

fn check_users(users: u64) -> Result<(), Error> {
    if (2..=MAX_USERS).contains(&users) {
        Ok(())
    } else {
        Err(Error::invalid(
            "users",
            users,
            format!("an integer in [2, {MAX_USERS}]"),
        ))
    }
}

fn check_delta(delta: f64) -> Result<(), Error> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("delta", delta, "a number in (0, 1)"))
    }
}

fn check_set_size(set_size: u64) -> Result<(), Error> {
    if (1..=1 << 20).contains(&set_size) {
        Ok(())
    } else {
        Err(Error::invalid(
            "set size",
            set_size,
            "an integer in [1, 2^20]",
        ))
    }
}

/// Checks `ε ∈ (0, 1]`, the range of Lemma 4.4 and Theorem 4.3.
fn check_epsilon_at_most_one(epsilon: f64) -> Result<(), Error> {
    if epsilon > 0.0 && epsilon <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid("epsilon", epsilon, "a number in (0, 1]"))
    }
}

/// The number of coordinates per tuple of Algorithm 1, `τ = ⌊log2 n⌋` (at least 1).
///
/// Rounding `log2 n` down makes `2^{−τ} ≥ 1/n`: the blanket count in `H^τ_{2B,j}`,
/// `Bin(ρn, 2^{−τ})`, has mean at least `ρ`, as the proof of Lemma 4.4 needs.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `2 ≤ n ≤` [`MAX_USERS`].
pub fn hadamard_tau(users: u64) -> Result<u32, Error> {
    check_users(users)?;
    Ok(users.ilog2())
}

/// Theorem 4.3's number of blanket tuples, `(36k²/ε²)·ln(e·k/(εδ))`, unrounded.
///
/// Kept for comparison with the paper (docs/algorithms.md §5.1 test vector: 533.36 at `k = 1`,
/// `ε = 1`, `δ = 10^{−6}`); [`HadamardParams`] uses [`hadamard_rho_conservative`].
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `ε ∈ (0, 1]`, `δ ∈ (0, 1)` and `1 ≤ k ≤ 2^20`.
pub fn hadamard_rho_theorem(set_size: u64, epsilon: f64, delta: f64) -> Result<f64, Error> {
    rho(set_size, epsilon, delta, 1.0)
}

/// The conservative number of blanket tuples, `(36k²/ε²)·ln(2e·k/(εδ))`, unrounded.
///
/// Lemma 4.4 with `ε' = ε/k` and `ρ = 36 ln(1/δ')/ε'²` gives, by the last line of its proof,
/// `(kε', 2δ'e^{kε'}/ε')`-DP. Solving `δ = 2δ'e^{ε}k/ε` for `δ'` and using `e^ε ≤ e` for
/// `ε ≤ 1` gives this `ρ` (docs/algorithms.md §5.1, "conservative choice").
///
/// # Errors
///
/// As [`hadamard_rho_theorem`].
pub fn hadamard_rho_conservative(set_size: u64, epsilon: f64, delta: f64) -> Result<f64, Error> {
    rho(set_size, epsilon, delta, 2.0)
}

fn rho(set_size: u64, epsilon: f64, delta: f64, factor: f64) -> Result<f64, Error> {
    check_set_size(set_size)?;
    check_epsilon_at_most_one(epsilon)?;
    check_delta(delta)?;
    let k = set_size as f64;
    Ok(36.0 * k * k / (epsilon * epsilon) * (factor * E * k / (epsilon * delta)).ln())
}

/// The parameters of Algorithm 1, `P^Had = (R^Had, S, A^Had)`, for `n` users with sets of at
/// most `k` items from `[B]`.
///
/// # Privacy
///
/// `(ε, δ)`-DP of the shuffled multiset for replace-one neighbours (one user's set changes),
/// in the shuffle model, for `ε ≤ 1` (Theorem 4.3 with the conservative `ρ`; see
/// [`hadamard_rho_conservative`]). The guarantee needs every user to send exactly `k` real
/// tuples (sets are padded with the ids `B+1, …, 2B−1`) and `ρ` uniform blanket tuples, drawn
/// with private coins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HadamardParams {
    /// The number of users `n`.
    pub users: u64,
    /// The domain size `B`, a power of 2.
    pub domain: u64,
    /// The largest set size `k < B`.
    pub set_size: u64,
    /// The privacy parameter ε.
    pub epsilon: f64,
    /// The privacy parameter δ.
    pub delta: f64,
    /// Coordinates per tuple, `τ = ⌊log2 n⌋`.
    pub tau: u32,
    /// Blanket tuples per user: the smaller of the conservative
    /// `⌈(36k²/ε²)·ln(2e·k/(εδ))⌉` (for `ε ≤ 1`) and the exact analysis's
    /// ([`hadamard_rho_exact`]).
    pub rho: u64,
    /// The analysis that chose `ρ` and proves the guarantee.
    pub analysis: BlanketAnalysis,
}

impl HadamardParams {
    /// Chooses `τ` and `ρ` for `n` users, domain `B`, sets of at most `k` items and `(ε, δ)`:
    /// the smaller `ρ` of the conservative Theorem 4.3 (for `ε ≤ 1`) and the exact analysis.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `2 ≤ n ≤` [`MAX_USERS`], `B` is a power of 2 with
    /// `2 ≤ B ≤ 2^31`, `1 ≤ k < B`, `ε > 0` is finite and `δ ∈ (0, 1)`; [`Error::Infeasible`]
    /// if no `ρ` up to `2^32` reaches `δ` (`ε > 1`, where the theorem does not apply).
    pub fn new(
        users: u64,
        domain: u64,
        set_size: u64,
        epsilon: f64,
        delta: f64,
    ) -> Result<Self, Error> {
        Self::calibrate(users, domain, set_size, (epsilon, delta), None)
    }

    /// As [`HadamardParams::new`], by one analysis only.
    ///
    /// # Errors
    ///
    /// As [`HadamardParams::new`]; for [`BlanketAnalysis::Theorem`] also `ε > 1`.
    pub fn with_analysis(
        users: u64,
        domain: u64,
        set_size: u64,
        (epsilon, delta): (f64, f64),
        analysis: BlanketAnalysis,
    ) -> Result<Self, Error> {
        Self::calibrate(users, domain, set_size, (epsilon, delta), Some(analysis))
    }

    fn calibrate(
        users: u64,
        domain: u64,
        set_size: u64,
        (epsilon, delta): (f64, f64),
        only: Option<BlanketAnalysis>,
    ) -> Result<Self, Error> {
        if !(domain.is_power_of_two() && (2..=1 << 31).contains(&domain)) {
            return Err(Error::invalid(
                "domain",
                domain,
                "a power of 2 in [2, 2^31]",
            ));
        }
        check_set_size(set_size)?;
        if set_size >= domain {
            return Err(Error::invalid(
                "set size",
                set_size,
                format!("below the domain size {domain}"),
            ));
        }
        let tau = hadamard_tau(users)?;
        check_delta(delta)?;
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
        }
        let theorem = match only {
            Some(BlanketAnalysis::Exact) => None,
            Some(BlanketAnalysis::Theorem) => Some(ceil_up(hadamard_rho_conservative(
                set_size, epsilon, delta,
            )?)),
            None if epsilon <= 1.0 => Some(ceil_up(hadamard_rho_conservative(
                set_size, epsilon, delta,
            )?)),
            None => None,
        };
        let exact = match only {
            Some(BlanketAnalysis::Theorem) => None,
            _ => Some(hadamard_rho_exact(
                users, set_size, epsilon, delta, theorem,
            )?),
        };
        let (rho, analysis) = match (theorem, exact) {
            (Some(t), Some(e)) if t <= e => (t, BlanketAnalysis::Theorem),
            (_, Some(e)) => (e, BlanketAnalysis::Exact),
            (Some(t), None) => (t, BlanketAnalysis::Theorem),
            (None, None) => unreachable!("one analysis always runs"),
        };
        Ok(Self {
            users,
            domain,
            set_size,
            epsilon,
            delta,
            tau,
            rho,
            analysis,
        })
    }

    /// The blanket cell and the change of one user when only `honest` users' blanket tuples
    /// are secret (see [`hadamard_blanket`]).
    pub fn blanket(&self, honest: u64) -> (BlanketCell, MessageChange) {
        hadamard_blanket(self.tau, self.set_size, honest, self.rho)
    }

    /// The guarantee an honest user keeps when a fraction `colluding_fraction` of the users
    /// colludes with the analyst: the exact analysis of the blanket of the honest users'
    /// tuples alone at the same `δ` ([`crate::collusion`]); no floor (`∞`: a user's real
    /// tuples are not randomized).
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

    /// `log2(2B)`, the bits of one coordinate.
    pub fn coordinate_bits(&self) -> u32 {
        self.domain.ilog2() + 1
    }

    /// The bits of one tuple, `τ·log2(2B)`.
    pub fn tuple_bits(&self) -> u64 {
        u64::from(self.tau) * u64::from(self.coordinate_bits())
    }

    /// Tuples per user, `k + ρ`.
    pub fn tuples_per_user(&self) -> u64 {
        self.set_size + self.rho
    }

    /// `2^{−τ}`, the probability that a tuple not generated for `j` lies in `H^τ_{2B,j}`.
    pub fn collision_probability(&self) -> f64 {
        (-f64::from(self.tau)).exp2()
    }

    /// The expected number of tuples not generated for a given `j` that still count for it,
    /// `(ρ + k)·n·2^{−τ}` (what the analyzer subtracts before dividing by `1 − 2^{−τ}`).
    pub fn expected_spurious(&self) -> f64 {
        (self.tuples_per_user() as f64) * (self.users as f64) * self.collision_probability()
    }

    /// The variance of the de-biased estimate of an item nobody holds,
    /// `(ρ+k)n·2^{−τ}(1 − 2^{−τ})/(1 − 2^{−τ})²` (the error law of Lemma 4.5 with `ζ_j = 0`).
    pub fn null_variance(&self) -> f64 {
        let p = self.collision_probability();
        self.expected_spurious() * (1.0 - p) / ((1.0 - p) * (1.0 - p))
    }

    /// Lemma 4.5's bound on the largest error over all `B` items, holding with probability at
    /// least `1 − β`: `sqrt(3 ln(2B/β)·max{3 ln(2B/β), μ})/(1 − 2^{−τ})`.
    ///
    /// The lemma has `μ = ρ + k` for `τ = log2 n` exactly; with `τ = ⌊log2 n⌋` the mean of the
    /// spurious count is `μ = (ρ + k)·n·2^{−τ}` (at most twice as large), which is used here,
    /// together with the de-biasing factor `1/(1 − 2^{−τ})` the lemma drops.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `β ∈ (0, 1)`.
    pub fn error_bound(&self, beta: f64) -> Result<f64, Error> {
        if !(beta > 0.0 && beta < 1.0) {
            return Err(Error::invalid("beta", beta, "a number in (0, 1)"));
        }
        let l = 3.0 * (2.0 * self.domain as f64 / beta).ln();
        Ok((l * l.max(self.expected_spurious())).sqrt() / (1.0 - self.collision_probability()))
    }

    /// The guarantee: `(ε, δ)`, replace-one, shuffle model, by the analysis that chose `ρ`.
    pub fn guarantee(&self) -> Guarantee {
        let analysis = match self.analysis {
            BlanketAnalysis::Theorem => "GGKPV Theorem 4.3, conservative ρ",
            BlanketAnalysis::Exact => "exact PLD of the binomial blanket",
        };
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis: format!("ghazi-hadamard ({analysis})"),
        }
    }
}

/// The blanket cell and the change of one user of Algorithm 1 with `τ` coordinates, sets of
/// at most `k` items, `n` users and `ρ` blanket tuples each: the count of a row's hyperplane
/// over `⌊ρn/k⌋` uniform tuples (one group per real tuple, `crate::blanket`), each in it
/// with probability `π = 2^{−τ}`, and a real tuple generated for another row landing there
/// with probability `π`: `k` moves.
pub fn hadamard_blanket(
    tau: u32,
    set_size: u64,
    users: u64,
    rho: u64,
) -> (BlanketCell, MessageChange) {
    let pi = (-f64::from(tau)).exp2();
    (
        BlanketCell {
            coins: rho.saturating_mul(users) / set_size,
            probability: pi,
            stray: pi,
        },
        MessageChange::Moved(set_size),
    )
}

/// The largest number of blanket tuples per user [`hadamard_rho_exact`] tries.
const MAX_RHO: u64 = 1 << 32;

/// The smallest `ρ ≥ 1` at which the exact analysis proves Algorithm 1 `(ε, δ)`-DP for `n`
/// users with sets of at most `k` items, searched below `known` (a `ρ` known to pass, such as
/// the theorem's) when given.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `2 ≤ n ≤` [`MAX_USERS`], `ε > 0` is finite and
/// `δ ∈ (0, 1)`; [`Error::Infeasible`] if no `ρ ≤ 2^32` passes.
pub fn hadamard_rho_exact(
    users: u64,
    set_size: u64,
    epsilon: f64,
    delta: f64,
    known: Option<u64>,
) -> Result<u64, Error> {
    let tau = hadamard_tau(users)?;
    check_delta(delta)?;
    let passes = |rho: u64| -> Result<bool, Error> {
        let (cell, change) = hadamard_blanket(tau, set_size, users, rho);
        cell.meets(change, epsilon, delta)
    };
    if passes(1)? {
        return Ok(1);
    }
    let mut high = match known {
        Some(rho) if passes(rho)? => rho,
        _ => {
            let mut rho = 2;
            while !passes(rho)? {
                if rho >= MAX_RHO {
                    return Err(Error::infeasible(
                        "blanket tuples",
                        format!("not even ρ = {MAX_RHO} reaches δ = {delta} at ε = {epsilon}"),
                    ));
                }
                rho *= 2;
            }
            rho
        }
    };
    let mut low = 1;
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if passes(mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(high)
}

/// The number of Count-Min rows, `τ = ⌈log2(2B/β)⌉`.
///
/// Rounding up only lowers the accuracy failure probability; privacy is then computed for
/// this `τ` (Lemma 4.10's condition grows with `τ`).
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `1 ≤ B ≤ 2^32` and `β ∈ (0, 1)`.
pub fn count_min_rows(domain: u64, beta: f64) -> Result<u32, Error> {
    if !(1..=1 << 32).contains(&domain) {
        return Err(Error::invalid("domain", domain, "an integer in [1, 2^32]"));
    }
    if !(beta > 0.0 && beta < 1.0) {
        return Err(Error::invalid("beta", beta, "a number in (0, 1)"));
    }
    // The smallest t with 2^t ≥ 2B/β, corrected for the rounding of log2 (powers of 2 are
    // exact in both directions).
    let x = 2.0 * domain as f64 / beta;
    let mut rows = x.log2().ceil();
    while (rows - 1.0).exp2() >= x {
        rows -= 1.0;
    }
    while rows.exp2() < x {
        rows += 1.0;
    }
    Ok(rows as u32)
}

/// Lemma 4.10's lower bound on the expected blanket count per cell,
/// `γn ≥ 90·τ²·k²·ln(2τk/δ)/ε²`, unrounded.
///
/// docs/algorithms.md Appendix A item 8: `τ = 28`, `k = 1`, `ε = 1`, `δ = 10^{−6}` gives
/// 1,258,851.2.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `τ ≥ 1`, `1 ≤ k ≤ 2^20`, `ε ∈ (0, 3τk]` (so that
/// Lemma 4.12's `α = ε/(3τk)` is at most 1) and `δ ∈ (0, 1)`.
pub fn count_min_blanket_requirement(
    rows: u32,
    set_size: u64,
    epsilon: f64,
    delta: f64,
) -> Result<f64, Error> {
    if rows == 0 {
        return Err(Error::invalid("rows", rows, "an integer ≥ 1"));
    }
    check_set_size(set_size)?;
    check_delta(delta)?;
    let tk = f64::from(rows) * set_size as f64;
    if !(epsilon > 0.0 && epsilon <= 3.0 * tk) {
        return Err(Error::invalid(
            "epsilon",
            epsilon,
            format!("a number in (0, 3τk] = (0, {}]", 3.0 * tk),
        ));
    }
    Ok(90.0 * tk * tk * (2.0 * tk / delta).ln() / (epsilon * epsilon))
}

/// The parameters of Algorithm 2, `P^CM`, for `n` users with sets of at most `k` items from
/// `[B]`.
///
/// # Privacy
///
/// `(ε, δ)`-DP of the shuffled multiset for replace-one neighbours, in the shuffle model:
/// Lemma 4.10 at `δ_L` (`γn ≥ 90τ²k² ln(2τk/δ_L)/ε²` and `γ ≤ 1/2`) for the uncapped
/// protocol, plus `δ_cap` for capping every user's blanket at `q` cells
/// ([`count_min_blanket_cap`]), with `δ_L + δ_cap = δ` ([`count_min_delta_split`]). The hash
/// functions are public coins (known to the adversary); every user flips an independent
/// `Ber(γ)` coin per cell with private coins, and sends at most `q` of the cells that came up.
/// The `n` of the cap's union bound is the calibrated `users`: a release must hold the reports
/// of at most `n` users.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CountMinParams {
    /// The number of users `n`.
    pub users: u64,
    /// The domain size `B`.
    pub domain: u64,
    /// The largest set size `k`.
    pub set_size: u64,
    /// The privacy parameter ε.
    pub epsilon: f64,
    /// The privacy parameter δ (the target: Lemma 4.10's share and the cap's together).
    pub delta: f64,
    /// Lemma 4.10's share of `δ`, `δ_L` ([`count_min_delta_split`]); the cap has `δ − δ_L`.
    pub lemma_delta: f64,
    /// The accuracy failure probability `β` the rows were chosen for.
    pub beta: f64,
    /// Rows (hash functions), `τ = ⌈log2(2B/β)⌉`.
    pub rows: u32,
    /// Columns per row, `s = 2kn`.
    pub width: u64,
    /// The blanket probability per user and cell (Lemma 4.10 at `δ_L`), rounded up.
    pub gamma: f64,
    /// The most blanket cells a user sends, `q` ([`count_min_blanket_cap`]): a user whose
    /// `K ~ Bin(τs, γ)` exceeds it sends a uniform `q` of its `K` cells.
    pub blanket_cap: u64,
    /// The analysis that chose `γ` and proves the guarantee at `δ_L`.
    pub analysis: BlanketAnalysis,
}

impl CountMinParams {
    /// Chooses `τ`, `s`, `γ` and the blanket cap `q`, with `γ` the smaller of Lemma 4.10's and
    /// the exact analysis's ([`count_min_gamma_exact`]) at `δ_L`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] for parameters outside the ranges of [`count_min_rows`],
    /// for `k ∉ [1, 2^20]`, `ε` not finite and positive, `δ ∉ (0, 1)`, `n` outside
    /// `[2,` [`MAX_USERS`]`]` or a table with `B·s ≥ 2^61`; [`Error::Infeasible`] if neither
    /// analysis finds `γ ≤ 1/2`, with the smallest `n` that works.
    pub fn new(
        users: u64,
        domain: u64,
        set_size: u64,
        epsilon: f64,
        delta: f64,
        beta: f64,
    ) -> Result<Self, Error> {
        Self::calibrate(users, domain, set_size, (epsilon, delta), beta, None)
    }

    /// As [`CountMinParams::new`], by one analysis only.
    ///
    /// # Errors
    ///
    /// As [`CountMinParams::new`]; for [`BlanketAnalysis::Theorem`] also `ε > 3τk`, where
    /// Lemma 4.10 does not apply.
    pub fn with_analysis(
        users: u64,
        domain: u64,
        set_size: u64,
        (epsilon, delta): (f64, f64),
        beta: f64,
        analysis: BlanketAnalysis,
    ) -> Result<Self, Error> {
        Self::calibrate(
            users,
            domain,
            set_size,
            (epsilon, delta),
            beta,
            Some(analysis),
        )
    }

    fn calibrate(
        users: u64,
        domain: u64,
        set_size: u64,
        (epsilon, delta): (f64, f64),
        beta: f64,
        only: Option<BlanketAnalysis>,
    ) -> Result<Self, Error> {
        check_users(users)?;
        check_set_size(set_size)?;
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
        }
        let rows = count_min_rows(domain, beta)?;
        let (lemma_delta, cap_delta) = count_min_delta_split(delta)?;
        let width = 2 * set_size * users;
        if u128::from(domain) * u128::from(width) >= 1 << 61 {
            return Err(Error::invalid(
                "users",
                users,
                "a table with B·2kn below 2^61",
            ));
        }
        let lemma_applies = epsilon <= 3.0 * f64::from(rows) * set_size as f64;
        let theorem = match only {
            Some(BlanketAnalysis::Exact) => None,
            Some(BlanketAnalysis::Theorem) => Some(count_min_gamma_lemma(
                rows,
                set_size,
                users,
                epsilon,
                lemma_delta,
            )?),
            None if lemma_applies => Some(count_min_gamma_lemma(
                rows,
                set_size,
                users,
                epsilon,
                lemma_delta,
            )?),
            None => None,
        }
        .filter(|&gamma| gamma <= 0.5);
        let exact = match only {
            Some(BlanketAnalysis::Theorem) => None,
            _ => count_min_gamma_exact(rows, set_size, users, epsilon, lemma_delta)?,
        };
        let chosen = match (theorem, exact) {
            (Some(t), Some(e)) if t <= e => Some((t, BlanketAnalysis::Theorem)),
            (_, Some(e)) => Some((e, BlanketAnalysis::Exact)),
            (Some(t), None) => Some((t, BlanketAnalysis::Theorem)),
            (None, None) => None,
        };
        let Some((gamma, analysis)) = chosen else {
            let fewest = if only == Some(BlanketAnalysis::Theorem) {
                count_min_min_users(rows, set_size, epsilon, lemma_delta)?
            } else {
                count_min_min_users_exact(rows, set_size, epsilon, lemma_delta)?
            };
            let which = if only == Some(BlanketAnalysis::Theorem) {
                "Lemma 4.10"
            } else {
                "the exact analysis"
            };
            return Err(Error::infeasible(
                "blanket probability",
                format!(
                    "{which} needs a blanket probability γ ≤ 1/2 at ε = {epsilon}, δ_L = \
                     {lemma_delta:.3e} (0.99·δ), so at least {fewest} users (got {users})"
                ),
            ));
        };
        let blanket_cap =
            count_min_blanket_cap(u64::from(rows) * width, gamma, users, epsilon, cap_delta)?;
        Ok(Self {
            users,
            domain,
            set_size,
            epsilon,
            delta,
            lemma_delta,
            beta,
            rows,
            width,
            gamma,
            blanket_cap,
            analysis,
        })
    }

    /// The blanket cell and the change of one user for these parameters when only `honest`
    /// users' coins are secret (see [`count_min_blanket`]).
    pub fn blanket(&self, honest: u64) -> (BlanketCell, MessageChange) {
        count_min_blanket(self.rows, self.set_size, honest, self.gamma)
    }

    /// The guarantee an honest user keeps when a fraction `colluding_fraction` of the users
    /// colludes with the analyst: the exact analysis of the honest users' blanket alone at
    /// `δ_L` ([`Self::exact_epsilon`]), and the cap's share paid at that `ε`: the cap bounds
    /// `nη ≤ δ_cap/(1 + e^ε)` at the target `ε` ([`count_min_blanket_cap`]), so at the larger
    /// `ε_c` the capped protocol pays `nη(1 + e^{ε_c}) ≤ δ_cap·(1 + e^{ε_c})/(1 + e^ε)`
    /// (rounded up). No floor (`∞`: a user's real messages are not randomized).
    ///
    /// # Errors
    ///
    /// As [`crate::honest_users`] and [`BlanketCell::epsilon`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        Collusion::over_honest(
            colluding_fraction,
            self.users,
            (self.epsilon, self.delta),
            f64::INFINITY,
            |honest| {
                let Some(epsilon) = self.exact_epsilon(honest)? else {
                    return Ok((f64::INFINITY, self.delta));
                };
                let cap_delta = self.delta - self.lemma_delta;
                let growth = (1.0 + epsilon.exp()) / (1.0 + self.epsilon.exp());
                // A few roundings in the product and the sum: a relative 1e-12 covers them.
                let delta = (self.lemma_delta + cap_delta * growth) * (1.0 + 1e-12);
                Ok((epsilon, delta.min(1.0)))
            },
        )
    }

    /// The smallest `ε` at which the uncapped protocol is `(ε, δ_L)`-DP by the exact analysis
    /// when only `honest` of the users keep their coins secret (`n` for the guarantee itself):
    /// `None` if no `ε` reaches `δ_L`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `1 ≤ honest ≤ n`.
    pub fn exact_epsilon(&self, honest: u64) -> Result<Option<f64>, Error> {
        if !(1..=self.users).contains(&honest) {
            return Err(Error::invalid(
                "honest users",
                honest,
                format!("an integer in [1, {}]", self.users),
            ));
        }
        let (cell, change) = self.blanket(honest);
        match cell.epsilon(change, self.lemma_delta) {
            Ok(epsilon) => Ok(Some(epsilon)),
            Err(Error::Infeasible { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The expected number of messages per user: at most `k·τ` real ones plus `τ·s·γ` blanket
    /// (an upper bound on the capped blanket's mean).
    pub fn expected_messages_per_user(&self) -> f64 {
        let cells = f64::from(self.rows) * self.width as f64;
        (self.set_size * u64::from(self.rows)) as f64 + cells * self.gamma
    }

    /// The bits of one message `(t, ℓ)`, `⌈log2 τ⌉ + ⌈log2 s⌉`.
    pub fn bits_per_message(&self) -> u64 {
        u64::from(u64::from(self.rows).next_power_of_two().ilog2())
            + u64::from(self.width.next_power_of_two().ilog2())
    }

    /// The expected blanket count of one cell over all users, `γn`, which the query subtracts.
    pub fn expected_blanket(&self) -> f64 {
        self.gamma * self.users as f64
    }

    /// The guarantee: `(ε, δ)`, replace-one, shuffle model (Lemma 4.10 or the exact analysis
    /// at `δ_L`, and the cap's `δ − δ_L`).
    pub fn guarantee(&self) -> Guarantee {
        let analysis = match self.analysis {
            BlanketAnalysis::Theorem => "GGKPV Lemma 4.10",
            BlanketAnalysis::Exact => "exact PLD of the binomial blanket",
        };
        Guarantee {
            epsilon: self.epsilon,
            delta: self.delta,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis: format!("ghazi-count-min ({analysis}, blanket capped)"),
        }
    }
}

/// The smallest `n` with `γ ≤ 1/2` under Lemma 4.10 at `δ`: `⌈2·90τ²k² ln(2τk/δ)/ε²⌉`
/// (inflated by [`MARGIN`]). [`CountMinParams::new`] runs the lemma at the share
/// [`count_min_delta_split`] leaves it of its target, so the fewest users it accepts for a
/// target `δ` are this function's at that share.
///
/// # Errors
///
/// As [`count_min_blanket_requirement`].
pub fn count_min_min_users(
    rows: u32,
    set_size: u64,
    epsilon: f64,
    delta: f64,
) -> Result<u64, Error> {
    Ok(ceil_up(
        2.0 * count_min_blanket_requirement(rows, set_size, epsilon, delta)?,
    ))
}

/// Lemma 4.10's blanket probability for `n` users, `γ = 90τ²k² ln(2τk/δ)/(ε²n)` inflated by
/// [`MARGIN`] and rounded up (it may exceed 1/2, where the lemma gives nothing).
///
/// # Errors
///
/// As [`count_min_blanket_requirement`].
fn count_min_gamma_lemma(
    rows: u32,
    set_size: u64,
    users: u64,
    epsilon: f64,
    delta: f64,
) -> Result<f64, Error> {
    let need = count_min_blanket_requirement(rows, set_size, epsilon, delta)?;
    Ok((need * (1.0 + MARGIN) / users as f64).next_up())
}

/// The blanket cell and the change of one user of Count-Min with `τ` rows, sets of at most `k`
/// items and `n` users at blanket probability `γ`: every row's `k` real messages move between
/// cells, each charged to its own group of `⌊n/k⌋` users' coins (`crate::blanket`), so `τk`
/// moves of cells with `⌊n/k⌋` coins of probability `γ`.
pub fn count_min_blanket(
    rows: u32,
    set_size: u64,
    users: u64,
    gamma: f64,
) -> (BlanketCell, MessageChange) {
    (
        BlanketCell {
            coins: users / set_size,
            probability: gamma,
            stray: 0.0,
        },
        MessageChange::Moved(u64::from(rows) * set_size),
    )
}

/// The smallest blanket probability `γ ≤ 1/2` (to a relative `1e-3`, the upper end) at which
/// the exact analysis proves the uncapped Count-Min `(ε, δ)`-DP for `n` users, or `None` if
/// `γ = 1/2` does not.
///
/// # Errors
///
/// [`Error::InvalidParameter`] for an `ε` that is not finite and positive or a `δ ∉ (0, 1)`.
pub fn count_min_gamma_exact(
    rows: u32,
    set_size: u64,
    users: u64,
    epsilon: f64,
    delta: f64,
) -> Result<Option<f64>, Error> {
    check_delta(delta)?;
    least_noise(0.5, |gamma| {
        let (cell, change) = count_min_blanket(rows, set_size, users, gamma);
        cell.meets(change, epsilon, delta)
    })
}

/// The smallest `n` for which [`count_min_gamma_exact`] finds a `γ ≤ 1/2`.
///
/// # Errors
///
/// As [`count_min_gamma_exact`], and [`Error::Infeasible`] if not even [`MAX_USERS`] users
/// suffice.
pub fn count_min_min_users_exact(
    rows: u32,
    set_size: u64,
    epsilon: f64,
    delta: f64,
) -> Result<u64, Error> {
    check_delta(delta)?;
    let passes = |users: u64| -> Result<bool, Error> {
        let (cell, change) = count_min_blanket(rows, set_size, users, 0.5);
        cell.meets(change, epsilon, delta)
    };
    let mut high = 2_u64;
    while !passes(high)? {
        if high >= MAX_USERS {
            return Err(Error::infeasible(
                "users",
                format!("not even {MAX_USERS} users reach δ = {delta} at ε = {epsilon}"),
            ));
        }
        high = (2 * high).min(MAX_USERS);
    }
    let mut low = high / 2;
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if passes(mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(high.max(2))
}

/// The share of a Count-Min target `δ` that pays for capping the blanket (1/100).
pub const COUNT_MIN_CAP_SHARE: f64 = 0.01;

/// Splits a Count-Min target `δ` into `(δ_L, δ_cap)`: Lemma 4.10 runs at
/// `δ_L = δ·(1 − 1/100)`, rounded down, and the blanket cap gets the remainder
/// `δ_cap = δ − δ_L` (about `δ/100`). The subtraction is exact (Sterbenz: `δ/2 ≤ δ_L ≤ δ`), so
/// `δ_L + δ_cap = δ` holds in floating point too.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `δ ∈ (0, 1)`.
pub fn count_min_delta_split(delta: f64) -> Result<(f64, f64), Error> {
    check_delta(delta)?;
    let lemma = (delta * (1.0 - COUNT_MIN_CAP_SHARE)).next_down();
    Ok((lemma, delta - lemma))
}

/// The cap `q` on one user's blanket: the smallest `q ≥ ⌈Nγ⌉` with
/// `η = Pr[Bin(N, γ) > q] ≤ δ_cap/(n·(1 + e^ε))`, for the `N = τs` cells, where the tail is
/// bounded by the Chernoff bound [`ln_binomial_upper_tail_chernoff`] (rigorous for any `N`)
/// and the budget is rounded down and its logarithm tightened by [`MARGIN`]. `N` itself (no
/// cap) if nothing smaller passes.
///
/// # Privacy
///
/// Let `M` be Algorithm 2 and `M'` the protocol whose users send `min(K, q)` of their
/// `K ~ Bin(N, γ)` blanket cells (a uniform subset of that size), coupled on the same coins.
/// The two outputs differ only on `E = {some user has K > q}`, an event of the users' own
/// coins, never of their data, with `Pr[E] ≤ nη` whatever the data. So for every set `S` of
/// outputs and neighbours `D, D'`, if `M` is `(ε, δ_L)`-DP,
/// `Pr[M'(D) ∈ S] ≤ Pr[M(D) ∈ S] + nη ≤ e^ε·Pr[M(D') ∈ S] + δ_L + nη
/// ≤ e^ε·Pr[M'(D') ∈ S] + δ_L + nη·(1 + e^ε)`: `M'` is `(ε, δ_L + nη(1 + e^ε))`-DP, and
/// `(ε, δ_L + δ_cap)`-DP for this `q`.
///
/// # Errors
///
/// [`Error::InvalidParameter`] unless `N ≥ 1`, `γ ∈ (0, 1)`, `2 ≤ n ≤` [`MAX_USERS`],
/// `ε > 0` and `δ_cap ∈ (0, 1)`.
pub fn count_min_blanket_cap(
    cells: u64,
    gamma: f64,
    users: u64,
    epsilon: f64,
    cap_delta: f64,
) -> Result<u64, Error> {
    if cells == 0 {
        return Err(Error::invalid("cells", cells, "at least 1"));
    }
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(Error::invalid("gamma", gamma, "a number in (0, 1)"));
    }
    check_users(users)?;
    if !(epsilon > 0.0 && epsilon.is_finite()) {
        return Err(Error::invalid("epsilon", epsilon, "a positive number"));
    }
    check_delta(cap_delta)?;
    let budget = cap_delta / (users as f64 * (1.0 + epsilon.exp())) * (1.0 - MARGIN);
    let ln_budget = budget.ln() * (1.0 + MARGIN);
    let fits = |cap: u64| ln_binomial_upper_tail_chernoff(cap + 1, cells, gamma) <= ln_budget;
    // The tail bound falls as the cap grows and vanishes at `N`: the least cap that fits.
    let (mut low, mut high) = (((cells as f64) * gamma).ceil() as u64, cells);
    low = low.min(high);
    while low < high {
        let mid = low + (high - low) / 2;
        if fits(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Ok(low)
}

/// Appendix D's budget split over the prefix levels (see [`heavy_hitter_levels`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelBudget {
    /// `(ε_level, δ_level)`, each level's share, rounded down.
    pub per_level: (f64, f64),
    /// `(ε_total, δ_total)` of all levels by basic composition, at most the target.
    pub total: (f64, f64),
}

/// Appendix D's budget split: `L` prefix levels, each run at `(ε/L, δ/L)` (rounded down by
/// [`split_budget`]), and the total by basic composition ([`compose_basic`]), which is at most
/// `(ε, δ)`.
///
/// # Errors
///
/// Whatever [`split_budget`] rejects (`ε ≤ 0`, `δ ∉ [0, 1)`, `L = 0`).
pub fn heavy_hitter_levels(epsilon: f64, delta: f64, levels: u64) -> Result<LevelBudget, Error> {
    let per_level = split_budget(epsilon, delta, levels, Composition::Basic)?;
    let total = compose_basic(&vec![per_level; levels as usize])?;
    Ok(LevelBudget { per_level, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_5_1_vector() {
        let p = HadamardParams::with_analysis(
            1 << 20,
            1 << 10,
            1,
            (1.0, 1e-6),
            BlanketAnalysis::Theorem,
        )
        .unwrap();
        assert_eq!(p.tau, 20);
        assert_eq!(p.rho, 559);
        assert_eq!(p.tuple_bits(), 220);
        let thm = hadamard_rho_theorem(1, 1.0, 1e-6).unwrap();
        assert!((thm - 533.36).abs() < 0.005, "{thm}");
        assert_eq!(ceil_up(thm), 534);
    }

    /// A Count-Min calibration for too few users says how many it needs, with `δ_L` rounded
    /// for people to read, not `0.99·δ` to the last bit.
    #[test]
    fn too_few_users_for_count_min_are_refused_with_a_readable_delta() {
        let refused = CountMinParams::with_analysis(
            100,
            16,
            1,
            (1.0, 1e-6),
            DEFAULT_COUNT_MIN_BETA,
            BlanketAnalysis::Theorem,
        )
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("δ_L = 9.900e-7 (0.99·δ), so at least") && refused.contains("got 100"),
            "{refused}"
        );
    }

    #[test]
    fn appendix_a_item_8() {
        let need = count_min_blanket_requirement(28, 1, 1.0, 1e-6).unwrap();
        assert!((need - 1_258_851.2).abs() < 0.05, "{need}");
    }
}
