//! The central Laplace and discrete Gaussian histograms: the noise of their rounds (every
//! device answering the query, the aggregator absorbing the reports and releasing) has the
//! calibrated law (chi-square at `α = 1e-6`, fixed seeds), the guarantees match the
//! accounting, and bad inputs are rejected.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::assert_fits;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::Distribution;
use tally_accounting::{Neighbours, TrustModel};
use tally_core::Error;
use tally_core::histogram::{DomainHistogram, DomainMap, GaussianHistogram, LaplaceHistogram};
use tally_core::protocol::{CentralHistogramRound, DeviceQuery, RoundAggregator, RoundProtocol};

const BOTH: [Neighbours; 2] = [Neighbours::AddRemove, Neighbours::ReplaceOne];

/// A fixed input over `0..domain`: element `j` is held by `j mod 7` clients.
fn fixed_items(domain: u32) -> (Vec<u32>, Vec<u64>) {
    let counts: Vec<u64> = (0..domain).map(|j| u64::from(j % 7)).collect();
    let items = (0..domain)
        .flat_map(|j| std::iter::repeat_n(j, (j % 7) as usize))
        .collect();
    (items, counts)
}

/// One release of `round` after every client of `items` answered its query, the
/// aggregator's coins drawn from `rng`.
fn round_release<D>(
    round: &CentralHistogramRound<D>,
    items: &[u32],
    rng: &mut ChaCha20Rng,
) -> Vec<f64>
where
    D: Distribution<i64> + Clone,
{
    let mut aggregator = round.aggregator(ChaCha20Rng::from_rng(&mut *rng));
    for item in items {
        let report = round
            .query()
            .respond(item, rng)
            .expect("an item of the domain");
        aggregator.absorb(report);
    }
    aggregator.release().estimates()
}

/// The noise of `runs` releases of `round` over `domain` on the fixed input, pooled into the
/// cells `..=-m`, `-m+1`, …, `m-1`, `m..`.
fn noise_histogram<D>(
    round: &CentralHistogramRound<D>,
    domain: u32,
    runs: usize,
    seed: u64,
    m: i64,
) -> Vec<u64>
where
    D: Distribution<i64> + Clone,
{
    let (items, counts) = fixed_items(domain);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut cells = vec![0u64; (2 * m + 1) as usize];
    for _ in 0..runs {
        let estimate = round_release(round, &items, &mut rng);
        for (e, &c) in estimate.iter().zip(&counts) {
            assert!(e.fract().abs() < f64::EPSILON, "integer noise");
            let noise = *e as i64 - c as i64;
            cells[(noise.clamp(-m, m) + m) as usize] += 1;
        }
    }
    cells
}

/// Cell probabilities matching [`noise_histogram`] for the pmf `∝ w(|x|)`, summed to `cutoff`.
fn symmetric_cells(w: impl Fn(i64) -> f64, m: i64, cutoff: i64) -> Vec<f64> {
    let z: f64 = w(0) + 2.0 * (1..=cutoff).map(&w).sum::<f64>();
    let tail: f64 = (m..=cutoff).map(&w).sum::<f64>() / z;
    let mut cells = vec![tail];
    cells.extend((-m + 1..m).map(|x| w(x.abs()) / z));
    cells.push(tail);
    cells
}

fn ratio((num, den): (u64, u64)) -> f64 {
    num as f64 / den as f64
}

#[test]
fn laplace_noise_has_the_calibrated_law() {
    for (seed, epsilon) in [(11, 1.0), (12, 0.3)] {
        for neighbours in BOTH {
            let mech = LaplaceHistogram::new(64, epsilon, neighbours).unwrap();
            let t = ratio(mech.scale());
            let m = (4.0 * t).ceil() as i64;
            let round = mech.round(DomainMap::Integers(64)).unwrap();
            let observed = noise_histogram(&round, 64, 400, seed, m);
            let probs = symmetric_cells(|x| (-(x as f64) / t).exp(), m, (60.0 * t) as i64);
            assert_fits(
                &format!("discrete Laplace noise, ε = {epsilon}, {neighbours}"),
                seed,
                &observed,
                &probs,
            );
        }
    }
}

#[test]
fn gaussian_noise_has_the_calibrated_law() {
    for (seed, epsilon, delta) in [(21, 1.0, 1e-6), (22, 2.0, 1e-3)] {
        for neighbours in BOTH {
            let mech = GaussianHistogram::new(64, epsilon, delta, neighbours).unwrap();
            let s2 = ratio(mech.sigma2());
            let m = (3.0 * s2.sqrt()).ceil() as i64;
            let round = mech.round(DomainMap::Integers(64)).unwrap();
            let observed = noise_histogram(&round, 64, 400, seed, m);
            let cutoff = (40.0 * s2.sqrt()) as i64 + 10;
            let probs = symmetric_cells(|x| (-((x * x) as f64) / (2.0 * s2)).exp(), m, cutoff);
            assert_fits(
                &format!("discrete Gaussian noise, ε = {epsilon}, δ = {delta}, {neighbours}"),
                seed,
                &observed,
                &probs,
            );
        }
    }
}

#[test]
fn laplace_guarantee_is_pure_and_within_the_request() {
    let mut epsilon = 0.01;
    while epsilon < 10.0 {
        for neighbours in BOTH {
            let mech = LaplaceHistogram::new(16, epsilon, neighbours).unwrap();
            let g = mech.guarantee();
            assert!(g.epsilon <= epsilon && g.epsilon > epsilon * 0.999, "{g:?}");
            assert_eq!(
                (g.delta, g.model, g.neighbours),
                (0.0, TrustModel::Central, neighbours)
            );
            assert_eq!(DomainHistogram::guarantee(&mech), *g);
            let l1 = if neighbours == Neighbours::AddRemove {
                1.0
            } else {
                2.0
            };
            assert!(l1 / ratio(mech.scale()) <= epsilon);
        }
        epsilon *= 1.7;
    }
}

#[test]
fn replace_one_uses_twice_the_laplace_scale() {
    for epsilon in [0.1, 0.3, 1.0, 1.0 / 3.0, 2.5] {
        let add = LaplaceHistogram::new(8, epsilon, Neighbours::AddRemove).unwrap();
        let rep = LaplaceHistogram::new(8, epsilon, Neighbours::ReplaceOne).unwrap();
        let ((an, ad), (rn, rd)) = (add.scale(), rep.scale());
        assert_eq!(
            u128::from(rn) * u128::from(ad),
            2 * u128::from(an) * u128::from(rd),
            "ε = {epsilon}: {:?} vs {:?}",
            add.scale(),
            rep.scale()
        );
        assert_eq!(
            add.guarantee().epsilon.to_bits(),
            rep.guarantee().epsilon.to_bits()
        );
    }
}

#[test]
fn gaussian_guarantee_meets_the_request() {
    for neighbours in BOTH {
        let mech = GaussianHistogram::new(16, 0.5, 1e-8, neighbours).unwrap();
        let g = mech.guarantee();
        assert_eq!(
            (g.epsilon, g.model, g.neighbours),
            (0.5, TrustModel::Central, neighbours)
        );
        assert!(g.delta > 0.0 && g.delta <= 1e-8, "{g:?}");
    }
    // Replace-one needs about twice the variance (Δ₂² = 2).
    let add = GaussianHistogram::new(16, 0.5, 1e-8, Neighbours::AddRemove).unwrap();
    let rep = GaussianHistogram::new(16, 0.5, 1e-8, Neighbours::ReplaceOne).unwrap();
    let r = ratio(rep.sigma2()) / ratio(add.sigma2());
    assert!((1.8..2.2).contains(&r), "{r}");
}

#[test]
fn release_counts_is_the_rounds_release() {
    let (items, counts) = fixed_items(50);
    let lap = LaplaceHistogram::new(50, 0.7, Neighbours::ReplaceOne).unwrap();
    let gauss = GaussianHistogram::new(50, 0.7, 1e-7, Neighbours::ReplaceOne).unwrap();
    let map = DomainMap::Integers(50);
    // The aggregator's coins are the first draw of the generator.
    let coins = || ChaCha20Rng::from_rng(&mut ChaCha20Rng::seed_from_u64(5));
    let as_estimates =
        |released: Vec<i64>| -> Vec<f64> { released.into_iter().map(|v| v as f64).collect() };
    assert_eq!(
        round_release(
            &lap.round(map).unwrap(),
            &items,
            &mut ChaCha20Rng::seed_from_u64(5)
        ),
        as_estimates(lap.release_counts(&counts, &mut coins()))
    );
    assert_eq!(
        round_release(
            &gauss.round(map).unwrap(),
            &items,
            &mut ChaCha20Rng::seed_from_u64(5)
        ),
        as_estimates(gauss.release_counts(&counts, &mut coins()))
    );
    for mech in [&lap as &dyn DomainHistogram, &gauss] {
        assert_eq!(mech.domain(), 50);
        assert!(mech.local_guarantee().is_none() && mech.message_cost().is_none());
    }
    assert_eq!((lap.name(), gauss.name()), ("laplace", "gaussian"));
}

#[test]
fn out_of_domain_items_are_not_answered() {
    let mech = LaplaceHistogram::new(4, 1.0, Neighbours::AddRemove).unwrap();
    let round = mech.round(DomainMap::Integers(4)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert_eq!(round.query().respond(&3, &mut rng), Some(3));
    assert_eq!(round.query().respond(&4, &mut rng), None);
    assert!(mech.round(DomainMap::Integers(5)).is_err());
}

#[test]
fn bad_inputs_are_errors() {
    let n = Neighbours::AddRemove;
    let accounting = |r: Result<(), Error>, what: &str| {
        assert!(matches!(r, Err(Error::Accounting(_))), "{what}: {r:?}");
    };
    for epsilon in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        accounting(LaplaceHistogram::new(8, epsilon, n).map(drop), "laplace ε");
        accounting(
            GaussianHistogram::new(8, epsilon, 1e-6, n).map(drop),
            "gaussian ε",
        );
    }
    for delta in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
        accounting(
            GaussianHistogram::new(8, 1.0, delta, n).map(drop),
            "gaussian δ",
        );
    }
    for domain in [0, 1] {
        assert!(matches!(
            LaplaceHistogram::new(domain, 1.0, n),
            Err(Error::InvalidParameter { name: "domain", .. })
        ));
        assert!(matches!(
            GaussianHistogram::new(domain, 1.0, 1e-6, n),
            Err(Error::InvalidParameter { name: "domain", .. })
        ));
    }
}

/// The cost of one release at the S&T experiments' largest domain: `B = 2^14` cells of exact
/// noise plus counting `10^6` items (the minimum over repetitions, to be robust to a loaded
/// machine). No assertion on time; run with
/// `cargo test --release -p tally-core --test central -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, run in release mode"]
fn timing_large_domain() {
    let domain = 1 << 14;
    let items: Vec<u32> = (0..1_000_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % domain)
        .collect();
    let counts = vec![100u64; domain as usize];
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let min_ms = |f: &mut dyn FnMut() -> f64| {
        let mut best = f64::INFINITY;
        let mut sink = 0.0;
        for _ in 0..50 {
            let start = std::time::Instant::now();
            sink += f();
            best = best.min(start.elapsed().as_secs_f64() * 1e3);
        }
        (best, sink)
    };
    for epsilon in [1.0, 0.1, 0.001] {
        let laplace = LaplaceHistogram::new(domain, epsilon, Neighbours::ReplaceOne).unwrap();
        let gaussian =
            GaussianHistogram::new(domain, epsilon, 1e-8, Neighbours::ReplaceOne).unwrap();
        let lap_round = laplace.round(DomainMap::Integers(domain)).unwrap();
        let gauss_round = gaussian.round(DomainMap::Integers(domain)).unwrap();
        let (lap_full, _) = min_ms(&mut || round_release(&lap_round, &items, &mut rng)[0]);
        let (lap_noise, _) = min_ms(&mut || laplace.release_counts(&counts, &mut rng)[0] as f64);
        let (gauss_full, _) = min_ms(&mut || round_release(&gauss_round, &items, &mut rng)[0]);
        let (gauss_noise, _) = min_ms(&mut || gaussian.release_counts(&counts, &mut rng)[0] as f64);
        println!(
            "ε = {epsilon}: laplace (t = {:?}) {lap_full:.2} ms with 10^6 items, {lap_noise:.2} ms \
             noise only; gaussian (σ² = {:?}) {gauss_full:.2} ms, {gauss_noise:.2} ms noise only",
            laplace.scale(),
            gaussian.sigma2()
        );
    }
}
