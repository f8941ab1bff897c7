//! Distribution and stability tests of the exact CKS noise samplers in `tally_core::noise`.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::Distribution;
use tally_core::Error;
use tally_core::noise::{BernoulliExp, DiscreteGaussian, DiscreteLaplace};

/// Counts of `values` in the cells `..=-m`, `-m+1`, …, `m-1`, `m..` (`2m + 1` cells).
fn symmetric_histogram(values: &[i64], m: i64) -> Vec<u64> {
    let mut counts = vec![0u64; (2 * m + 1) as usize];
    for &v in values {
        counts[(v.clamp(-m, m) + m) as usize] += 1;
    }
    counts
}

/// Cell probabilities matching [`symmetric_histogram`] for the pmf `∝ w(|x|)`, with the
/// normalising sum and the two tails summed to `x = cutoff` (where `w` is negligible).
fn symmetric_cells(w: impl Fn(i64) -> f64, m: i64, cutoff: i64) -> Vec<f64> {
    let z: f64 = w(0) + 2.0 * (1..=cutoff).map(&w).sum::<f64>();
    let tail: f64 = (m..=cutoff).map(&w).sum::<f64>() / z;
    let mut cells = vec![tail];
    cells.extend((-m + 1..m).map(|x| w(x.abs()) / z));
    cells.push(tail);
    cells
}

#[test]
fn rejects_invalid_parameters() {
    assert!(matches!(
        BernoulliExp::new((1, 0)),
        Err(Error::InvalidParameter { name: "gamma", .. })
    ));
    for scale in [(0, 1), (1, 0), ((1 << 40) + 1, 1)] {
        assert!(
            matches!(
                DiscreteLaplace::new(scale),
                Err(Error::InvalidParameter { name: "scale", .. })
            ),
            "{scale:?}"
        );
    }
    assert!(DiscreteLaplace::new((1 << 40, 1)).is_ok());
    for sigma2 in [(0, 1), (1, 0)] {
        assert!(
            matches!(
                DiscreteGaussian::new(sigma2),
                Err(Error::InvalidParameter { name: "sigma2", .. })
            ),
            "{sigma2:?}"
        );
    }
    assert!(DiscreteGaussian::new((u64::MAX, 1)).is_ok());
}

#[test]
fn value_stability() {
    let mut rng = ChaCha20Rng::seed_from_u64(2020);
    let lap = DiscreteLaplace::new((7, 2)).unwrap();
    let lap_values: Vec<i64> = (0..12).map(|_| lap.sample(&mut rng)).collect();
    let gauss = DiscreteGaussian::new((4, 1)).unwrap();
    let gauss_values: Vec<i64> = (0..12).map(|_| gauss.sample(&mut rng)).collect();
    let coin = BernoulliExp::new((10, 3)).unwrap();
    let coins: Vec<bool> = (0..12).map(|_| coin.sample(&mut rng)).collect();
    let big = DiscreteGaussian::new((u64::MAX, 3)).unwrap();
    let big_values: Vec<i64> = (0..4).map(|_| big.sample(&mut rng)).collect();
    assert_eq!(lap_values, PINNED_LAPLACE);
    assert_eq!(gauss_values, PINNED_GAUSSIAN);
    assert_eq!(coins, PINNED_COINS);
    assert_eq!(big_values, PINNED_BIG);
}

/// First draws of `DiscreteLaplace(t = 7/2)` for seed 2020.
const PINNED_LAPLACE: [i64; 12] = [-3, -12, -1, 1, 3, 3, 2, 16, -13, 5, -1, 2];
/// The next draws, of `DiscreteGaussian(σ² = 4)`.
const PINNED_GAUSSIAN: [i64; 12] = [3, 0, 4, -3, -2, 1, 0, 1, 1, -2, 2, 3];
/// The next draws, of `BernoulliExp(γ = 10/3)`.
const PINNED_COINS: [bool; 12] = [
    false, false, false, false, false, false, true, false, false, false, false, false,
];
/// The next draws, of `DiscreteGaussian(σ² = (2^64 − 1)/3)` (big-integer exponents).
const PINNED_BIG: [i64; 4] = [-932635662, -2034271770, 2411211656, 1789967971];

#[test]
fn discrete_laplace_fits_pmf() {
    for (seed, (num, den), m) in [(11u64, (1u64, 1u64), 8i64), (12, (7, 2), 20)] {
        let t = num as f64 / den as f64;
        let dist = DiscreteLaplace::new((num, den)).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let values: Vec<i64> = (0..100_000).map(|_| dist.sample(&mut rng)).collect();
        let observed = symmetric_histogram(&values, m);
        let probs = symmetric_cells(|x| (-(x as f64) / t).exp(), m, 2_000);
        common::assert_fits(
            &format!("DiscreteLaplace(t = {t})"),
            seed,
            &observed,
            &probs,
        );
    }
}

#[test]
fn discrete_gaussian_fits_pmf() {
    let seed = 13;
    let dist = DiscreteGaussian::new((4, 1)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let values: Vec<i64> = (0..100_000).map(|_| dist.sample(&mut rng)).collect();
    let m = 10;
    let observed = symmetric_histogram(&values, m);
    let probs = symmetric_cells(|x| (-((x * x) as f64) / 8.0).exp(), m, 200);
    common::assert_fits("DiscreteGaussian(σ² = 4)", seed, &observed, &probs);
}

#[test]
fn bernoulli_exp_frequency() {
    let n = 200_000u64;
    for (seed, (num, den)) in [
        (21u64, (0u64, 1u64)),
        (22, (1, 2)),
        (23, (3, 1)),
        (24, (10, 3)),
    ] {
        let gamma = num as f64 / den as f64;
        let coin = BernoulliExp::new((num, den)).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let successes = (0..n).filter(|_| coin.sample(&mut rng)).count() as u64;
        let p = (-gamma).exp();
        if num == 0 {
            assert_eq!(successes, n);
        } else {
            common::assert_proportion(&format!("BernoulliExp(γ = {gamma})"), seed, successes, n, p);
        }
    }
}
