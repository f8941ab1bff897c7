//! The error of one element's estimate in a histogram over a public domain, from the law the
//! mechanism's noise follows: its bias, standard deviation and expected absolute error
//! (docs/privacy/planner.md, "Domain mechanisms").
//!
//! Every law here is evaluated exactly, up to floating-point rounding and tails below
//! `e^{−70}` of the mass: the discrete Laplace moments in closed form, the discrete Gaussian
//! ones as sums over the integers, and the binomial laws (randomized response's support counts,
//! Balcer–Cheu's and Ghazi et al.'s blanket noise) by summing their probability mass functions.

use std::fmt;

/// How many standard deviations (plus as many units) a binomial or discrete Gaussian sum
/// extends either side of its mean: the mass beyond is below `e^{−70}`.
const TAIL_WIDTHS: f64 = 12.0;

/// The law of one element's estimate given its true count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErrorLaw {
    /// `estimate = count + X`, `X` discrete Laplace of scale `t`: `P[X = k] ∝ e^{−|k|/t}`.
    DiscreteLaplace {
        /// The scale `t > 0`.
        scale: f64,
    },
    /// `estimate = count + X`, `X` discrete Gaussian: `P[X = k] ∝ e^{−k²/(2σ²)}`.
    DiscreteGaussian {
        /// The variance parameter `σ² > 0`.
        sigma2: f64,
    },
    /// A de-biased support count: `estimate − count = (S − E[S])/gap` with
    /// `S = Bin(n₁, p₁) + Bin(n₂, p₂)`, independent (randomized response's clients that hold
    /// the element and those that do not; Ghazi et al.'s tuples that may collide).
    DebiasedBinomials {
        /// `(n₁, p₁)` and `(n₂, p₂)`.
        parts: [(u64, f64); 2],
        /// The divisor `gap > 0` (`p* − q*` for randomized response).
        gap: f64,
    },
    /// Balcer and Cheu's analyzer: with `M = count + N`, `N ~ Bin(n, p)`, the estimate is
    /// `M − n·p` when `M > n`, else 0.
    ThresholdedBinomial {
        /// The true count.
        count: u64,
        /// The number of clients `n` the protocol is calibrated for.
        clients: u64,
        /// The noise probability `p`.
        p: f64,
    },
}

/// The error of one element's estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateError {
    /// `E[estimate] − count` (zero for every law but the thresholded binomial).
    pub bias: f64,
    /// The standard deviation of the estimate.
    pub standard_deviation: f64,
    /// `E[|estimate − count|]`.
    pub mean_absolute_error: f64,
}

impl ErrorLaw {
    /// The bias, standard deviation and expected absolute error of the estimate.
    pub fn error(&self) -> EstimateError {
        match *self {
            Self::DiscreteLaplace { scale } => discrete_laplace(scale),
            Self::DiscreteGaussian { sigma2 } => discrete_gaussian(sigma2),
            Self::DebiasedBinomials { parts, gap } => debiased_binomials(parts, gap),
            Self::ThresholdedBinomial { count, clients, p } => {
                thresholded_binomial(count, clients, p)
            }
        }
    }
}

impl fmt::Display for ErrorLaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DiscreteLaplace { scale } => {
                write!(f, "count + discrete Laplace, scale {scale:.4}")
            }
            Self::DiscreteGaussian { sigma2 } => {
                write!(f, "count + discrete Gaussian, σ = {:.4}", sigma2.sqrt())
            }
            Self::DebiasedBinomials {
                parts: [(n1, p1), (n2, p2)],
                gap,
            } => write!(
                f,
                "(Bin({n1}, {p1:.4}) + Bin({n2}, {p2:.4}) − mean)/{gap:.4}"
            ),
            Self::ThresholdedBinomial { clients, p, .. } => write!(
                f,
                "count + Bin({clients}, {p:.4}) − {clients}·{p:.4} when above {clients}, else 0"
            ),
        }
    }
}

/// `q = e^{−1/t}`: `E|X| = 2q/(1 − q²)` and `Var X = 2q/(1 − q)²`.
fn discrete_laplace(scale: f64) -> EstimateError {
    let q = (-1.0 / scale).exp();
    let one_minus_q = -(-1.0 / scale).exp_m1();
    EstimateError {
        bias: 0.0,
        standard_deviation: (2.0 * q).sqrt() / one_minus_q,
        mean_absolute_error: 2.0 * q / (one_minus_q * (1.0 + q)),
    }
}

/// The sums `Σ_k w(k) e^{−k²/(2σ²)}` over `|k| ≤ 12σ + 12`, by symmetry from `k = 1` up.
fn discrete_gaussian(sigma2: f64) -> EstimateError {
    let last = (TAIL_WIDTHS * (sigma2.sqrt() + 1.0)).ceil() as u64;
    let (mut mass, mut first, mut second) = (0.5, 0.0, 0.0);
    for k in 1..=last {
        let k = k as f64;
        let weight = (-k * k / (2.0 * sigma2)).exp();
        mass += weight;
        first += k * weight;
        second += k * k * weight;
    }
    EstimateError {
        bias: 0.0,
        standard_deviation: (second / mass).sqrt(),
        mean_absolute_error: first / mass,
    }
}

/// The probability mass function of `Bin(n, p)` where it matters: `(first value, masses)`,
/// by the pmf recurrence from the mode, normalized over the window.
fn binomial_window(n: u64, p: f64) -> (u64, Vec<f64>) {
    if n == 0 || p <= 0.0 {
        return (0, vec![1.0]);
    }
    if p >= 1.0 {
        return (n, vec![1.0]);
    }
    let mean = n as f64 * p;
    let reach = TAIL_WIDTHS * ((mean * (1.0 - p)).sqrt() + 1.0);
    let low = (mean - reach).floor().max(0.0) as u64;
    let high = ((mean + reach).ceil() as u64).min(n);
    let mode = (((n + 1) as f64 * p).floor() as u64).clamp(low, high);
    let odds = p / (1.0 - p);
    let mut masses = vec![0.0; (high - low + 1) as usize];
    masses[(mode - low) as usize] = 1.0;
    for v in (mode + 1)..=high {
        // P[v]/P[v − 1] = (n − v + 1)/v · p/(1 − p).
        let previous = masses[(v - 1 - low) as usize];
        masses[(v - low) as usize] = previous * (n - v + 1) as f64 / v as f64 * odds;
    }
    for v in (low..mode).rev() {
        // P[v]/P[v + 1] = (v + 1)/(n − v) · (1 − p)/p.
        let next = masses[(v + 1 - low) as usize];
        masses[(v - low) as usize] = next * (v + 1) as f64 / (n - v) as f64 / odds;
    }
    let total: f64 = masses.iter().sum();
    for mass in &mut masses {
        *mass /= total;
    }
    (low, masses)
}

/// `E|A + B − E[A + B]|/gap` with `A`, `B` independent binomials: for each value `a` of the
/// narrower law, `E|B − t|` at `t = E[A + B] − a` from prefix sums of the other's masses.
fn debiased_binomials(parts: [(u64, f64); 2], gap: f64) -> EstimateError {
    let variance: f64 = parts.iter().map(|&(n, p)| n as f64 * p * (1.0 - p)).sum();
    let mean: f64 = parts.iter().map(|&(n, p)| n as f64 * p).sum();
    let (start_a, masses_a) = binomial_window(parts[0].0, parts[0].1);
    let (start_b, masses_b) = binomial_window(parts[1].0, parts[1].1);
    let ((start_a, masses_a), (start_b, masses_b)) = if masses_a.len() <= masses_b.len() {
        ((start_a, masses_a), (start_b, masses_b))
    } else {
        ((start_b, masses_b), (start_a, masses_a))
    };
    // Values of B relative to the centre of its window, to keep the prefix sums small.
    let centre = start_b + masses_b.len() as u64 / 2;
    let mut below_mass = Vec::with_capacity(masses_b.len() + 1);
    let mut below_first = Vec::with_capacity(masses_b.len() + 1);
    let (mut mass, mut first) = (0.0, 0.0);
    below_mass.push(0.0);
    below_first.push(0.0);
    for (i, &m) in masses_b.iter().enumerate() {
        mass += m;
        first += m * ((start_b + i as u64) as f64 - centre as f64);
        below_mass.push(mass);
        below_first.push(first);
    }
    let (total_mass, total_first) = (mass, first);
    let mut absolute = 0.0;
    for (i, &weight) in masses_a.iter().enumerate() {
        let a = (start_a + i as u64) as f64;
        // t relative to the centre of B's window.
        let t = mean - a - centre as f64;
        let index =
            ((t.floor() + (centre - start_b) as f64 + 1.0).max(0.0) as usize).min(masses_b.len());
        let (m, f) = (below_mass[index], below_first[index]);
        absolute += weight * (t * m - f + (total_first - f) - t * (total_mass - m));
    }
    EstimateError {
        bias: 0.0,
        standard_deviation: variance.sqrt() / gap,
        mean_absolute_error: absolute / gap,
    }
}

/// The moments of `f(count + N) − count` over `N ~ Bin(n, p)`, `f(m) = m − np` above `n`
/// and 0 below.
fn thresholded_binomial(count: u64, clients: u64, p: f64) -> EstimateError {
    let (start, masses) = binomial_window(clients, p);
    let shift = clients as f64 * p;
    let errors: Vec<f64> = (0..masses.len() as u64)
        .map(|i| {
            let messages = count + start + i;
            let estimate = if messages > clients {
                messages as f64 - shift
            } else {
                0.0
            };
            estimate - count as f64
        })
        .collect();
    let weighted = |f: &dyn Fn(f64) -> f64| -> f64 {
        masses.iter().zip(&errors).map(|(m, &e)| m * f(e)).sum()
    };
    let bias = weighted(&|e| e);
    // The variance about the bias, not `E[e²] − bias²`, which cancels when the error is
    // almost always `−count`.
    EstimateError {
        bias,
        standard_deviation: weighted(&|e| (e - bias) * (e - bias)).sqrt(),
        mean_absolute_error: weighted(&|e| e.abs()),
    }
}

/// How a release over an unknown domain estimates the count of an item that `c` clients
/// contributed, and when it shows the item (docs/privacy/partition-selection.md, "The error
/// of a released estimate"). The truncated-geometric selection shows no count and has no
/// entry here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThresholdedEstimate {
    /// `c + X`, `X` discrete Laplace of scale `t` (`P[X = x] ∝ e^{−|x|/t}`), shown when
    /// `c + X ≥ T`.
    DiscreteLaplace {
        /// The scale `t > 0`.
        scale: f64,
        /// The threshold `T`.
        threshold: u64,
    },
    /// `c + X`, `X` discrete Gaussian (`P[X = x] ∝ e^{−x²/(2σ²)}`), shown when `c + X ≥ T`.
    DiscreteGaussian {
        /// The variance parameter `σ² > 0`.
        sigma2: f64,
        /// The threshold `T`.
        threshold: u64,
    },
    /// Sample-and-threshold: each contribution is sent with probability `p`, the item is
    /// shown when its sent count `S ~ Bin(c, p)` reaches `τ`, with the estimate `S/p`.
    Sampled {
        /// The sampling rate `p ∈ (0, 1]`.
        rate: f64,
        /// The threshold `τ`.
        threshold: u64,
    },
}

impl ThresholdedEstimate {
    /// The evaluator of [`ShownError::expected_absolute_error`] for this law (the discrete
    /// Gaussian's tails tabulated once).
    pub fn shown_error(&self) -> ShownError {
        ShownError(match *self {
            Self::DiscreteLaplace { scale, threshold } => Prepared::Laplace { scale, threshold },
            Self::DiscreteGaussian { sigma2, threshold } => Prepared::Gaussian {
                tails: GaussianTails::new(sigma2),
                threshold,
            },
            Self::Sampled { rate, threshold } => Prepared::Sampled { rate, threshold },
        })
    }
}

/// `E[|estimate − truth| · 1{shown}]` of a [`ThresholdedEstimate`], for an item `c` clients
/// contributed and `truth` clients hold.
#[derive(Clone, Debug)]
pub struct ShownError(Prepared);

/// A [`ThresholdedEstimate`] ready to evaluate.
#[derive(Clone, Debug)]
enum Prepared {
    Laplace {
        scale: f64,
        threshold: u64,
    },
    Gaussian {
        tails: GaussianTails,
        threshold: u64,
    },
    Sampled {
        rate: f64,
        threshold: u64,
    },
}

impl ShownError {
    /// `E[|estimate − truth| · 1{shown}]` when `contributed` clients sent the item and
    /// `truth` hold it (the error counts what bounding each client's items dropped, too); 0
    /// when none contributed (the item is never shown). Dividing by `P[shown]` gives the
    /// expected error of the estimate given that it is shown.
    pub fn expected_absolute_error(&self, contributed: u64, truth: u64) -> f64 {
        if contributed == 0 {
            return 0.0;
        }
        match &self.0 {
            &Prepared::Laplace { scale, threshold } => {
                noisy_count_error(contributed, truth, threshold, |x| laplace_tail(scale, x))
            }
            Prepared::Gaussian { tails, threshold } => {
                noisy_count_error(contributed, truth, *threshold, |x| tails.at(x))
            }
            &Prepared::Sampled { rate, threshold } => {
                let (start, masses) = binomial_window(contributed, rate);
                (start..)
                    .zip(&masses)
                    .filter(|&(sent, _)| sent >= threshold)
                    .map(|(sent, mass)| mass * (sent as f64 / rate - truth as f64).abs())
                    .sum()
            }
        }
    }
}

/// `E[|c + X − n| · 1{c + X ≥ T}]` for integer noise `X` whose upper tails are
/// `tail(x) = (P[X ≥ x], E[X · 1{X ≥ x}])`: with `l = T − c` and `y = n − c`, the part at
/// or above `max(l, y)` and the part in `[l, y)`.
fn noisy_count_error(
    count: u64,
    truth: u64,
    threshold: u64,
    tail: impl Fn(i64) -> (f64, f64),
) -> f64 {
    let low = threshold as i64 - count as i64;
    let target = truth as i64 - count as i64;
    let y = target as f64;
    let split = low.max(target);
    let (mass, first) = tail(split);
    let above = first - y * mass;
    let below = if low < target {
        let (mass_low, first_low) = tail(low);
        let (mass_y, first_y) = tail(target);
        y * (mass_low - mass_y) - (first_low - first_y)
    } else {
        0.0
    };
    (above + below).max(0.0)
}

/// `(P[X ≥ x], E[X · 1{X ≥ x}])` for `X` discrete Laplace of scale `t`, `q = e^{−1/t}`: for
/// `x ≥ 1`, `q^x/(1 + q)` and `q^x (x(1 − q) + q)/((1 + q)(1 − q))`; for `x ≤ 0`, by
/// symmetry, `1 − P[X ≥ 1 − x]` and `E[X · 1{X ≥ 1 − x}]` (`E[X] = 0`).
fn laplace_tail(scale: f64, x: i64) -> (f64, f64) {
    let upper = |x: i64| {
        let x = x as f64;
        let q = (-1.0 / scale).exp();
        let one_minus_q = -(-1.0 / scale).exp_m1();
        let qx = (-x / scale).exp();
        (
            qx / (1.0 + q),
            qx * (x * one_minus_q + q) / ((1.0 + q) * one_minus_q),
        )
    };
    if x >= 1 {
        upper(x)
    } else {
        let (mass, first) = upper(1 - x);
        (1.0 - mass, first)
    }
}

/// The upper tails `(P[X ≥ x], E[X · 1{X ≥ x}])` of `X ~ N_Z(0, σ²)` over `|x| ≤ 12σ + 12`
/// (the mass beyond is below `e^{−70}`), normalised over that window.
#[derive(Clone, Debug)]
struct GaussianTails {
    reach: i64,
    mass: Vec<f64>,
    first: Vec<f64>,
}

impl GaussianTails {
    fn new(sigma2: f64) -> Self {
        let reach = (TAIL_WIDTHS * (sigma2.sqrt() + 1.0)).ceil() as i64;
        let weights: Vec<f64> = (-reach..=reach)
            .map(|x| (-(x * x) as f64 / (2.0 * sigma2)).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut mass = vec![0.0; weights.len() + 1];
        let mut first = vec![0.0; weights.len() + 1];
        for (i, w) in weights.iter().enumerate().rev() {
            let x = i as i64 - reach;
            mass[i] = mass[i + 1] + w / total;
            first[i] = first[i + 1] + x as f64 * w / total;
        }
        Self { reach, mass, first }
    }

    fn at(&self, x: i64) -> (f64, f64) {
        let index = (x.clamp(-self.reach, self.reach + 1) + self.reach) as usize;
        (self.mass[index], self.first[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `E|S − E S|` by direct convolution of the two pmfs.
    fn convolved(parts: [(u64, f64); 2]) -> f64 {
        let (sa, ma) = binomial_window(parts[0].0, parts[0].1);
        let (sb, mb) = binomial_window(parts[1].0, parts[1].1);
        let mean: f64 = parts.iter().map(|&(n, p)| n as f64 * p).sum();
        let mut total = 0.0;
        for (i, &x) in ma.iter().enumerate() {
            for (j, &y) in mb.iter().enumerate() {
                total += x * y * ((sa + i as u64 + sb + j as u64) as f64 - mean).abs();
            }
        }
        total
    }

    #[test]
    fn prefix_sums_agree_with_the_convolution() {
        for parts in [
            [(10, 0.7), (990, 0.1)],
            [(0, 0.5), (5000, 0.01)],
            [(300, 0.5), (3, 0.9)],
            [(1, 0.73), (49, 0.0625)],
        ] {
            let fast = debiased_binomials(parts, 1.0).mean_absolute_error;
            let slow = convolved(parts);
            assert!(
                (fast - slow).abs() <= 1e-10 * slow,
                "{parts:?}: {fast} vs {slow}"
            );
        }
    }

    #[test]
    fn laplace_tails_in_closed_form_match_their_sums() {
        for scale in [0.7_f64, 3.0, 25.0] {
            let q = (-1.0 / scale).exp();
            let reach = (80.0 * scale) as i64 + 50;
            let pmf = |x: i64| (1.0 - q) / (1.0 + q) * q.powi(x.abs() as i32);
            for at in [-40, -3, 0, 1, 2, 17, 90] {
                let (mass, first) = laplace_tail(scale, at);
                let summed: f64 = (at..=reach).map(pmf).sum();
                let first_summed: f64 = (at..=reach).map(|x| x as f64 * pmf(x)).sum();
                assert!(
                    (mass - summed).abs() < 1e-12,
                    "{scale} {at}: {mass} vs {summed}"
                );
                assert!(
                    (first - first_summed).abs() < 1e-10,
                    "{scale} {at}: {first} vs {first_summed}"
                );
            }
        }
    }

    #[test]
    fn a_point_mass_has_no_error() {
        let error = debiased_binomials([(4, 1.0), (0, 0.5)], 1.0);
        assert!(error.mean_absolute_error.abs() < 1e-12);
        assert!(error.standard_deviation.abs() < 1e-12);
    }
}
