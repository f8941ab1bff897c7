//! Exact privacy accounting of the shuffle protocols whose privacy rests on a binomial blanket:
//! Ghazi et al.'s Count-Min (Algorithm 2) and Hadamard response (Algorithm 1), and Balcer and
//! Cheu's binary sum and histogram (`docs/privacy/shuffle-pld.md`).
//!
//! # The cell pair
//!
//! In each of these protocols the shuffled output is a table of counts, and a cell's count is
//! the real messages sent for it plus a blanket of independent coins drawn by the users:
//!
//! * Count-Min: each of the `τs` cells gets a message from each user's `Ber(γ)` coin, so its
//!   blanket is `Bin(n, γ)`;
//! * Balcer–Cheu: each user sends one noise message for each cell with probability `p`, so
//!   `Bin(n, p)`;
//! * Hadamard response: the analyzer's count for row `j` is the number of tuples in the
//!   hyperplane `H^τ_{2B,j}`; a uniform blanket tuple lies there with probability `π = 2^{−τ}`,
//!   so the `N = ρn` blanket tuples give `Bin(N, π)`; a real tuple generated for another row
//!   `j'` lies there with probability `π` too, independently of whether it lies in `H^τ_j'`
//!   (two distinct non-zero linear forms over GF(2) are independent uniform bits).
//!
//! The other users' real messages are fixed by the data (give them to the adversary: the output
//! is a post-processing of them and the rest). So a user whose message moves from cell `A`
//! (input `D`) to cell `B` (input `D'`) changes the law of two cells only:
//!
//! `P = 1 + Bin(N, p)` against `Q = Bin(N, p) + Ber(θ)`
//!
//! in `A` and the same with `P` and `Q` swapped in `B`, with `θ = 0` for Count-Min and
//! Balcer–Cheu and `θ = π` for Hadamard (the tuple generated for `j'` lands in `H^τ_j` with
//! probability `π`). For Hadamard the pair of the two counts `(c_j, c_{j'})` is exactly
//! sufficient: the likelihood ratio of the whole multiset of `N + 1` exchangeable tuples
//! against all-uniform tuples is `2^τ c_j/(N + 1)` under `D` and `2^τ c_{j'}/(N + 1)` under
//! `D'`, and under all-uniform tuples `c_j` and `c_{j'}` are independent `Bin(N + 1, π)`.
//! The loss of the pair in cell `A` is `ℓ(x) = ln(P(x)/Q(x)) = −ln((1 − θ)·r(x) + θ)` with
//! `r(x) = b(x)/b(x − 1) = (N − x + 1)p/(x(1 − p))`: increasing in `x`, infinite at
//! `x = N + 1` when `θ = 0`, and `−∞` at `x = 0`.
//!
//! A user's change is [`MessageChange::Moved`]`(m)` (`m` messages, each moving between two
//! cells with blankets of their own, independent) or [`MessageChange::Added`] (one message
//! present or not: Balcer–Cheu's binary sum). The `m` moves compose: the product of their
//! pairs dominates the user's change, and both orders of the neighbours are covered because
//! a move's pair is its own mirror image (cell `A` forward is cell `B` backward).
//!
//! **Several messages in one cell.** A user whose set holds `k > 1` items may send several
//! messages to one cell. Split the users into `k` groups of at least `⌊n/k⌋` (for Hadamard,
//! the blanket tuples into `k` groups of at least `⌊N/k⌋`) and give the adversary every
//! group's count separately: the output is their sum, a post-processing. Each moved unit is
//! charged to its own group of its cell, so each is a cell pair with `⌊N/k⌋` coins, and the
//! user's change is dominated by `k` moves per row (fewer moves are a marginal of more).
//!
//! # Computation
//!
//! The pmf of `Bin(N, p)` is enumerated over [`crate::numeric`]'s Bernstein window (each tail
//! beyond at most `e^{−70}`, charged as an infinite loss) by the ratio recurrence from the mode
//! and normalised by its sum, so no `lgamma` of a large `N` is needed; every mass is then an
//! upper bound on the true one within a relative error carried by the distribution. The
//! hockey-stick curve `H_α(P‖Q)` of one cell is evaluated at `α = e^{jh}` on a grid (every loss
//! rounded the safe way, every sum rounded up) and turned into a discrete pair on the grid by
//! connect-the-dots ([`PrivacyLossPair::from_curve`]), which dominates the cell at every `α`;
//! the cells' pairs are then composed ([`crate::pld`]). The result is an upper bound on the
//! exact `δ(ε)` at every grid size: only its tightness depends on `h`.

use crate::Error;
use crate::numeric::{BINOMIAL_TAIL_EXPONENT, binomial_window};
use crate::pld::{MAX_GRID_POINTS, PrivacyLossPair};

/// The unit roundoff of `f64`.
const UNIT: f64 = f64::EPSILON / 2.0;

/// The grid width of the curves, as a fraction of the `ε` asked about: connect-the-dots is
/// within a fraction of a percent of the exact `ε` at this width (checked against the
/// reference in `tests/blanket_vectors.rs`).
const GRID_FRACTION: f64 = 1.0 / 64.0;

/// The largest grid width, so that a large `ε` keeps a fine curve.
const MAX_STEP: f64 = 0.02;

/// The smallest grid width, so that a tiny `ε` cannot ask for an unbounded grid.
const MIN_STEP: f64 = 1e-4;

/// The widest window of a blanket's values that [`BlanketCell::meets`] sums for its lower
/// bound before composing.
const FLOOR_WINDOW: u64 = 1 << 16;

/// One cell of a shuffled table as a user's message sees it: a blanket of `coins` independent
/// `Ber(probability)` messages, plus the user's own message under one neighbour and, under the
/// other, a stray message with probability `stray` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlanketCell {
    /// The number of independent blanket coins `N`.
    pub coins: u64,
    /// Each coin's probability `p ∈ (0, 1)`.
    pub probability: f64,
    /// The probability `θ ∈ [0, 1)` that the user's message lands in this cell under the
    /// neighbour that sends it elsewhere (`0` for Count-Min and Balcer–Cheu, `2^{−τ}` for
    /// Hadamard response).
    pub stray: f64,
}

/// How one user's messages differ between two neighbouring inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageChange {
    /// One message is sent under one input and not under the other (Balcer–Cheu's binary
    /// sum).
    Added,
    /// This many messages move, each from one cell to another (both cells with a blanket of
    /// their own).
    Moved(u64),
}

impl MessageChange {
    /// The number of cells whose law changes.
    fn cells(self) -> u64 {
        match self {
            Self::Added => 1,
            Self::Moved(moves) => 2 * moves,
        }
    }
}

/// The enumerated pmf of the blanket `Bin(N, p)`: `pmf[i]` bounds `b(first + i)` from above
/// (normalised over the window), within `relative_error`.
struct Blanket {
    first: u64,
    pmf: Vec<f64>,
    relative_error: f64,
}

impl Blanket {
    fn new(coins: u64, p: f64) -> Self {
        let (first, last) = binomial_window(coins, p);
        let mode = ((coins as f64 * p).floor() as u64).clamp(first, last);
        let odds = p / (1.0 - p);
        let mut pmf = vec![0.0; (last - first + 1) as usize];
        let at = |x: u64| (x - first) as usize;
        pmf[at(mode)] = 1.0;
        for x in (first..mode).rev() {
            // b(x)/b(x + 1) = (x + 1)(1 − p)/((N − x)p).
            pmf[at(x)] = pmf[at(x + 1)] * ((x + 1) as f64 / (coins - x) as f64 / odds);
        }
        for x in mode + 1..=last {
            pmf[at(x)] = pmf[at(x - 1)] * ((coins - x + 1) as f64 / x as f64 * odds);
        }
        let total: f64 = pmf.iter().sum();
        for mass in &mut pmf {
            *mass /= total;
        }
        // Four roundings per step of the recurrence (at most the window's length of them),
        // the sum's and the division's. The window holds at least 1 − 2e^{−70} of the mass,
        // so normalising over it only raises every mass.
        let relative_error = (5.0 * pmf.len() as f64 + 4.0) * UNIT;
        Self {
            first,
            pmf,
            relative_error,
        }
    }

    /// `b(x)`, 0 outside the window.
    fn at(&self, x: i64) -> f64 {
        usize::try_from(x - self.first as i64)
            .ok()
            .and_then(|i| self.pmf.get(i).copied())
            .unwrap_or(0.0)
    }

    fn last(&self) -> u64 {
        self.first + self.pmf.len() as u64 - 1
    }
}

/// The mass each tail of the blanket beyond the window may hold, under `P` or `Q`.
fn tail_mass() -> f64 {
    (-BINOMIAL_TAIL_EXPONENT).exp()
}

impl BlanketCell {
    fn check(&self) -> Result<(), Error> {
        if !(self.probability > 1e-300 && self.probability < 1.0) {
            return Err(Error::invalid(
                "blanket probability",
                self.probability,
                "a number in (0, 1)",
            ));
        }
        if !(self.stray >= 0.0 && self.stray < 1.0) {
            return Err(Error::invalid("stray", self.stray, "a number in [0, 1)"));
        }
        if self.coins > 1 << 52 {
            return Err(Error::invalid("coins", self.coins, "at most 2^52"));
        }
        Ok(())
    }

    /// Lower and upper bounds on the loss `ℓ(x) = −ln((1 − θ)·r(x) + θ)` for `1 ≤ x ≤ N`.
    fn loss_bounds(&self, x: u64) -> (f64, f64) {
        let p = self.probability;
        let r = (self.coins - x + 1) as f64 * p / (x as f64 * (1.0 - p));
        let v = (1.0 - self.stray) * r + self.stray;
        let loss = -v.ln();
        // Eight roundings in v (relative), then the logarithm's.
        let margin = 16.0 * UNIT * (1.0 + loss.abs());
        (loss - margin, loss + margin)
    }

    /// The loss at `x = N + 1`, where `b(x) = 0`: `−ln θ`, infinite for `θ = 0`.
    fn top_loss(&self) -> f64 {
        if self.stray == 0.0 {
            f64::INFINITY
        } else {
            let loss = -self.stray.ln();
            loss + 4.0 * UNIT * (1.0 + loss)
        }
    }

    /// The hockey-stick curve `H_α(P‖Q)` of the cell at `α = e^{jh}`, from the grid index
    /// `lowest ≤ 0` up, rounded up, and that index.
    fn curve(&self, step: f64) -> Result<(i64, Vec<f64>), Error> {
        let blanket = Blanket::new(self.coins, self.probability);
        let theta = self.stray;
        let tail = 2.0 * tail_mass();
        let rel = blanket.relative_error + 8.0 * UNIT;
        let p_mass = |x: u64| blanket.at(x as i64 - 1);
        let q_mass =
            |x: u64| (1.0 - theta) * blanket.at(x as i64) + theta * blanket.at(x as i64 - 1);
        // Outcomes x ∈ [first, last + 1]; x = 0 has P = 0, x = N + 1 has Q = 0 when θ = 0.
        let lo = blanket.first.max(1);
        let hi = blanket.last() + 1;
        let finite_hi = if hi == self.coins + 1 { hi - 1 } else { hi };
        let losses: Vec<(f64, f64)> = (lo..=finite_hi).map(|x| self.loss_bounds(x)).collect();
        let (top_p, top_loss) = if hi == self.coins + 1 {
            (p_mass(hi), self.top_loss())
        } else {
            (0.0, f64::NEG_INFINITY)
        };
        let p_infinite = if top_loss.is_infinite() { top_p } else { 0.0 };
        let q_infinite = if blanket.first == 0 { q_mass(0) } else { 0.0 };
        let smallest = losses.first().map_or(0.0, |l| l.0);
        let largest = if top_loss.is_finite() {
            top_loss
        } else {
            losses.last().map_or(0.0, |l| l.1)
        };
        let lowest = ((smallest / step).floor() as i64).min(0);
        let highest = ((largest / step).ceil() as i64).max(0);
        if (highest - lowest) as u64 >= MAX_GRID_POINTS {
            return Err(Error::invalid(
                "step",
                step,
                format!("a grid of at most {MAX_GRID_POINTS} points over the cell's losses"),
            ));
        }
        let mut curve = Vec::with_capacity((highest - lowest + 1) as usize);
        for index in lowest..=highest {
            let epsilon = index as f64 * step;
            let value = if index >= 0 {
                // Σ_{ℓ(x) > ε} P(x)(1 − e^{ε − ℓ(x)}), walked down from the largest loss.
                let mut sum = 0.0;
                if top_loss.is_finite() && top_loss > epsilon {
                    sum += top_p * -(epsilon - top_loss).exp_m1();
                }
                for (i, &(_, upper)) in losses.iter().enumerate().rev() {
                    if upper <= epsilon {
                        break;
                    }
                    sum += p_mass(lo + i as u64) * -(epsilon - upper).exp_m1();
                }
                p_infinite + tail + sum * (1.0 + rel + (losses.len() as f64 + 4.0) * UNIT)
            } else {
                // 1 − α + α·H_{1/α}(Q‖P), with H_{1/α}(Q‖P) = Σ_{ℓ(x) < ε} Q(x)(1 − e^{ℓ(x) − ε}),
                // walked up from the smallest loss.
                let mut sum = 0.0;
                for (i, &(lower, _)) in losses.iter().enumerate() {
                    if lower >= epsilon {
                        break;
                    }
                    sum += q_mass(lo + i as u64) * -(lower - epsilon).exp_m1();
                }
                let removing =
                    q_infinite + tail + sum * (1.0 + rel + (losses.len() as f64 + 4.0) * UNIT);
                let alpha = epsilon.exp();
                (-epsilon.exp_m1() + alpha * removing) * (1.0 + 4.0 * f64::EPSILON)
            };
            curve.push(value.min(1.0));
        }
        Ok((lowest, curve))
    }

    /// The privacy-loss pair of one message added to this cell (`P = 1 + Bin(N, p)` against
    /// `Q = Bin(N, p) + Ber(θ)`) on the grid `step`: it dominates the cell at every `α`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] unless `p ∈ (0, 1)`, `θ ∈ [0, 1)`, `N ≤ 2^52` and
    /// `step > 0` is finite and puts the cell's losses on at most [`MAX_GRID_POINTS`] points.
    pub fn loss_pair(&self, step: f64) -> Result<PrivacyLossPair, Error> {
        self.check()?;
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::invalid("step", step, "a finite number > 0"));
        }
        let (lowest, curve) = self.curve(step)?;
        PrivacyLossPair::from_curve(step, lowest, &curve)
    }

    /// The privacy-loss pair of a user's `change` with blankets like this cell, on the grid
    /// `step` (see the module docs).
    ///
    /// # Errors
    ///
    /// As [`BlanketCell::loss_pair`], and [`Error::InvalidParameter`] for `Moved(0)`.
    pub fn change_pair(&self, change: MessageChange, step: f64) -> Result<PrivacyLossPair, Error> {
        let added = self.loss_pair(step)?;
        match change {
            MessageChange::Added => Ok(added),
            MessageChange::Moved(0) => Err(Error::invalid("moves", 0, "at least 1")),
            MessageChange::Moved(moves) => {
                let mirror = PrivacyLossPair {
                    forward: added.backward.clone(),
                    backward: added.forward.clone(),
                };
                // Cell A forward with cell B forward (A's backward): the same in both orders.
                let one = added.forward.compose(&mirror.forward)?;
                Ok(PrivacyLossPair::symmetric(one.self_compose(moves)?))
            }
        }
    }

    /// An upper bound on `δ(ε)` of a user's `change` with blankets like this cell.
    ///
    /// # Errors
    ///
    /// As [`BlanketCell::change_pair`], and [`Error::InvalidParameter`] unless `ε ≥ 0` is
    /// finite.
    pub fn delta(&self, change: MessageChange, epsilon: f64) -> Result<f64, Error> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        self.change_pair(change, grid_step(epsilon, change))?
            .delta(epsilon)
    }

    /// Whether the exact analysis proves a user's `change` with blankets like this cell
    /// `(ε, δ)`-DP: whether [`BlanketCell::delta`] is at most `delta`.
    ///
    /// A cell whose own pair is already above `delta` at `ε` is refused without composing the
    /// change's pairs, which costs seconds for a thin blanket at a small `ε`. The pair of the
    /// change holds the cell's pair in both orders among its factors (the cell itself for
    /// [`MessageChange::Added`]; cell `A` forward and cell `B`, its mirror image, for each
    /// move), and the hockey-stick divergence of a product is at least that of a factor (the
    /// factor is a post-processing of the product), so [`BlanketCell::delta`], an upper bound
    /// on the change's, is above `delta` too. The shortcut therefore never changes the answer;
    /// were its lower bound wrong, it could only refuse, the safe direction.
    ///
    /// # Errors
    ///
    /// As [`BlanketCell::delta`].
    pub fn meets(&self, change: MessageChange, epsilon: f64, delta: f64) -> Result<bool, Error> {
        self.check()?;
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::invalid("epsilon", epsilon, "a finite number ≥ 0"));
        }
        if self.cell_delta_floor(epsilon) > delta {
            return Ok(false);
        }
        Ok(self.delta(change, epsilon)? <= delta)
    }

    /// A lower bound on the exact `δ(ε)` of the cell's own pair, the larger of its two
    /// orders: `Σ_x (P(x) − e^ε Q(x))_+` and the same with `P` and `Q` swapped, over the
    /// Bernstein window of `Bin(N, p)`, each mass by the ratio recurrence from the mode and
    /// normalised by the window's sum, less a margin of `1e-9·(1 + e^ε)`. The terms left out
    /// are non-negative; the masses beyond the window, taken as 0 at its edges, weigh at most
    /// `e^{−70}` each, and the recurrence's rounding a relative `1e-11` or so: both far inside
    /// the margin.
    /// `0` for a window of more than [`FLOOR_WINDOW`] values, where the blanket is thick and
    /// the composition cheap.
    fn cell_delta_floor(&self, epsilon: f64) -> f64 {
        let (n, p, stray) = (self.coins, self.probability, self.stray);
        let (lo, hi) = binomial_window(n, p);
        if hi - lo > FLOOR_WINDOW {
            return 0.0;
        }
        // Unnormalised masses of Bin(N, p) on lo..=hi, 1 at the mode (clipped to the window).
        let mode = (((n + 1) as f64 * p).floor() as u64).clamp(lo, hi);
        let odds = p / (1.0 - p);
        let mut mass = vec![0.0; (hi - lo + 1) as usize];
        let at = |x: u64| (x - lo) as usize;
        mass[at(mode)] = 1.0;
        for x in mode..hi {
            mass[at(x + 1)] = mass[at(x)] * ((n - x) as f64 / (x + 1) as f64 * odds);
        }
        for x in (lo + 1..=mode).rev() {
            mass[at(x - 1)] = mass[at(x)] * (x as f64 / (n - x + 1) as f64 / odds);
        }
        let total: f64 = mass.iter().sum();
        let b = |x: u64| {
            if (lo..=hi).contains(&x) {
                mass[at(x)] / total
            } else {
                0.0
            }
        };
        let e = epsilon.exp();
        let (mut forward, mut backward) = (0.0_f64, 0.0_f64);
        for x in lo..=hi + 1 {
            let with = x.checked_sub(1).map_or(0.0, b);
            let without = (1.0 - stray) * b(x) + stray * with;
            forward += (with - e * without).max(0.0);
            backward += (without - e * with).max(0.0);
        }
        forward.max(backward) - 1e-9 * (1.0 + e)
    }

    /// The smallest `ε` (rounded up) at which a user's `change` with blankets like this cell is
    /// `(ε, δ)`-DP: solved on a coarse grid, then again on the grid that `ε` calls for.
    ///
    /// # Errors
    ///
    /// As [`BlanketCell::change_pair`]; [`Error::InvalidParameter`] unless `δ ∈ (0, 1)`;
    /// [`Error::Infeasible`] if no `ε` reaches `δ` (the infinite-loss mass is above it).
    pub fn epsilon(&self, change: MessageChange, delta: f64) -> Result<f64, Error> {
        let coarse = self.change_pair(change, MAX_STEP)?.epsilon(delta)?;
        let fine = self
            .change_pair(change, grid_step(coarse, change))?
            .epsilon(delta)?;
        Ok(fine.min(coarse))
    }
}

/// Which analysis calibrates a blanket protocol and proves its guarantee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlanketAnalysis {
    /// The paper's theorem (Ghazi et al.'s Lemma 4.10 or Theorem 4.3, Balcer–Cheu's
    /// Theorem 3.1 or 3.2).
    Theorem,
    /// The exact privacy-loss distribution of the blanket (this module).
    Exact,
}

impl BlanketAnalysis {
    /// The analysis as the guarantee names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Theorem => "theorem",
            Self::Exact => "exact PLD of the binomial blanket",
        }
    }
}

/// The relative width at which [`least_noise`] stops.
const NOISE_TOLERANCE: f64 = 1e-3;

/// The smallest noise parameter `x ∈ (0, upper]` (a blanket probability, or `1 − p`) at which
/// `passes(x)`, to a relative [`NOISE_TOLERANCE`], by bisection on `ln x` from `upper`, where
/// it must hold; `None` if it does not. The answer is a value at which `passes` held, whether
/// or not `passes` is monotone.
///
/// # Errors
///
/// Whatever `passes` returns.
pub(crate) fn least_noise(
    upper: f64,
    passes: impl Fn(f64) -> Result<bool, Error>,
) -> Result<Option<f64>, Error> {
    if !passes(upper)? {
        return Ok(None);
    }
    let mut high = upper;
    let mut low = upper / 2.0;
    while passes(low)? {
        high = low;
        low /= 2.0;
        if low < 1e-300 {
            return Ok(Some(high));
        }
    }
    while high / low - 1.0 > NOISE_TOLERANCE {
        let mid = (low * high).sqrt();
        if passes(mid)? {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(Some(high))
}

/// The grid width for questions about `ε`: `ε/m` with `m = ⌈√cells/`[`GRID_FRACTION`]`⌉`, so
/// that `ε` is a grid point (where connect-the-dots is exact) and the cells' discretisation
/// errors, which add up over the composition, stay a small fraction of `ε`; within
/// [`MIN_STEP`] and [`MAX_STEP`].
pub(crate) fn grid_step(epsilon: f64, change: MessageChange) -> f64 {
    let points = ((change.cells() as f64).sqrt() / GRID_FRACTION).ceil();
    let step = epsilon / points;
    if step < MIN_STEP {
        MIN_STEP
    } else if step > MAX_STEP {
        epsilon / (epsilon / MAX_STEP).ceil()
    } else {
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numeric::ln_binomial_pmf;

    /// The exact `δ(ε)` of one cell, both orders, by direct summation over every outcome.
    fn brute_force(cell: BlanketCell, epsilon: f64) -> f64 {
        let n = cell.coins;
        let b = |x: i64| {
            if x < 0 || x > n as i64 {
                0.0
            } else {
                ln_binomial_pmf(x as u64, n, cell.probability).exp()
            }
        };
        let e = epsilon.exp();
        let (mut forward, mut backward) = (0.0, 0.0);
        for x in 0..=n as i64 + 1 {
            let p = b(x - 1);
            let q = (1.0 - cell.stray) * b(x) + cell.stray * b(x - 1);
            forward += (p - e * q).max(0.0);
            backward += (q - e * p).max(0.0);
        }
        f64::max(forward, backward)
    }

    /// Cells with and without a stray message.
    const CELLS: [BlanketCell; 3] = [
        BlanketCell {
            coins: 40,
            probability: 0.3,
            stray: 0.0,
        },
        BlanketCell {
            coins: 200,
            probability: 0.9,
            stray: 0.0,
        },
        BlanketCell {
            coins: 64,
            probability: 0.25,
            stray: 0.25,
        },
    ];

    #[test]
    fn one_cell_is_never_below_the_exact_curve() {
        for cell in CELLS {
            for epsilon in [0.05, 0.2, 0.5, 1.0] {
                let exact = brute_force(cell, epsilon);
                let pair = cell.change_pair(MessageChange::Added, 0.01).unwrap();
                let bound = pair.delta(epsilon).unwrap();
                assert!(
                    bound >= exact * (1.0 - 1e-9),
                    "{cell:?} at {epsilon}: {bound} < {exact}"
                );
                // Connect-the-dots on the grid: exact at grid points.
                assert!(
                    bound <= exact * 1.001 + 1e-12,
                    "{cell:?} at {epsilon}: {bound} vs {exact}"
                );
            }
        }
    }

    /// [`CELLS`], a thin one and a thick one.
    fn floor_cells() -> impl Iterator<Item = BlanketCell> {
        let half = |coins| BlanketCell {
            coins,
            probability: 0.5,
            stray: 0.0,
        };
        CELLS.into_iter().chain([half(2), half(5_000)])
    }

    #[test]
    fn the_cells_floor_is_below_its_exact_delta_and_close_to_it() {
        for cell in floor_cells() {
            for epsilon in [0.0, 0.01, 0.1, 0.5, 1.0, 3.0] {
                let exact = brute_force(cell, epsilon);
                let floor = cell.cell_delta_floor(epsilon);
                assert!(floor <= exact, "{cell:?} at {epsilon}: {floor} > {exact}");
                assert!(
                    exact - floor <= 2e-9 * (1.0 + epsilon.exp()),
                    "{cell:?} at {epsilon}: {floor} far below {exact}"
                );
            }
        }
        let thick = BlanketCell {
            coins: 1 << 40,
            probability: 0.5,
            stray: 0.0,
        };
        assert_eq!(thick.cell_delta_floor(0.1).to_bits(), 0.0_f64.to_bits());
    }

    /// `meets` answers as the analysis does on either side of its `δ` and just below the
    /// cell's floor, refusing there by the floor alone.
    #[test]
    fn meets_answers_as_the_analysis_does() {
        let mut refused_by_the_floor = 0;
        for cell in floor_cells() {
            for change in [MessageChange::Added, MessageChange::Moved(8)] {
                for epsilon in [0.5, 2.0] {
                    let analysed = cell.delta(change, epsilon).unwrap();
                    let floor = cell.cell_delta_floor(epsilon);
                    for target in [
                        analysed * (1.0 - 1e-6),
                        analysed * (1.0 + 1e-6),
                        floor * (1.0 - 1e-3),
                    ] {
                        if !(target > 0.0 && target < 1.0) {
                            continue;
                        }
                        assert_eq!(
                            cell.meets(change, epsilon, target).unwrap(),
                            analysed <= target,
                            "{cell:?}, {change:?} at {epsilon}, δ = {target}"
                        );
                        if floor > target {
                            refused_by_the_floor += 1;
                        }
                    }
                }
            }
        }
        assert!(refused_by_the_floor >= 10, "{refused_by_the_floor}");
    }
}
