//! Tests of the local-DP frequency oracles of `tally_core::ldp` (docs/algorithms.md §7.2, §7.4):
//!
//! 1. the exact ε-LDP ratio, by enumerating every output of every input (no sampling);
//! 2. a mutant check: a randomizer at `2ε` fails that ratio test, so the test can fail;
//! 3. the samplers draw from the distributions the ratio test enumerates (chi-square);
//! 4. unbiasedness of the estimates (z-test with the analytic variance) and the analytic
//!    variance itself (chi-square on the sample variance), with fixed ChaCha20 seeds;
//! 5. the null variances of docs/algorithms.md Appendix A item 9;
//! 6. merging shards gives the same estimate as one aggregator.
//!
//! Statistical tests use significance level 1e-6 each (see `common`).

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::{ALPHA, assert_fits, z_critical};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF};
use tally_core::ldp::{
    Grr, HadamardResponse, LocalHash, Olh, OlhReport, SubsetReport, SubsetSelection,
    SupportProbabilities, UnaryRandomizer, UnaryReport,
};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

const K: u32 = 5;
const EPSILONS: [f64; 3] = [0.5, 1.0, 3.0];

/// The six mechanisms by name, for one domain and ε.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Grr,
    Sue,
    Oue,
    Olh,
    Hr,
    Ss,
}

const KINDS: [Kind; 6] = [
    Kind::Grr,
    Kind::Sue,
    Kind::Oue,
    Kind::Olh,
    Kind::Hr,
    Kind::Ss,
];

/// Every list of `size` increasing items of `0..domain`, and the others of `0..domain` items
/// (every subset by its bit mask), as subset selection's possible outputs and non-outputs.
fn all_lists(domain: u32) -> Vec<Vec<u32>> {
    (0..1u32 << domain)
        .map(|bits| (0..domain).filter(|&i| bits >> i & 1 == 1).collect())
        .collect()
}

/// `max_{x, x', y} P[y | x]/P[y | x']` over the full output table `table[y][x]`, after checking
/// that every input's output distribution sums to 1.
fn max_ratio_of_table(table: &[Vec<f64>]) -> f64 {
    let inputs = table[0].len();
    for x in 0..inputs {
        let total: f64 = table.iter().map(|row| row[x]).sum();
        assert!((total - 1.0).abs() < 1e-12, "input {x}: total {total}");
    }
    let mut worst: f64 = 1.0;
    for row in table {
        for &a in row {
            for &b in row {
                assert!(b > 0.0, "an output impossible for one input");
                worst = worst.max(a / b);
            }
        }
    }
    worst
}

/// The largest privacy ratio of `kind` at `(k, ε)`, by enumerating all outputs and inputs.
fn max_ratio(kind: Kind, k: u32, epsilon: f64) -> f64 {
    match kind {
        Kind::Grr => {
            let m = Grr::new(k, epsilon).unwrap();
            let table: Vec<Vec<f64>> = (0..k)
                .map(|y| (0..k).map(|x| m.output_probability(x, y)).collect())
                .collect();
            max_ratio_of_table(&table)
        }
        Kind::Sue | Kind::Oue => {
            let m = if matches!(kind, Kind::Sue) {
                UnaryRandomizer::sue(k, epsilon)
            } else {
                UnaryRandomizer::oue(k, epsilon)
            }
            .unwrap();
            let table: Vec<Vec<f64>> = (0..1u32 << k)
                .map(|bits| {
                    let y = UnaryReport::from_fn(k, |i| bits >> i & 1 == 1);
                    (0..k).map(|x| m.output_probability(x, &y)).collect()
                })
                .collect();
            max_ratio_of_table(&table)
        }
        Kind::Olh => {
            // The hash is independent of the input: enumerate the values for several hashes
            // (including extreme ones) and take the worst.
            let m = Olh::new(k, epsilon).unwrap();
            let mut r = rng(11);
            let mut hashes = vec![
                LocalHash::new(1, 0).unwrap(),
                LocalHash::new((1 << 61) - 2, (1 << 61) - 2).unwrap(),
            ];
            hashes.extend((0..30).map(|_| LocalHash::random(&mut r)));
            hashes
                .into_iter()
                .map(|hash| {
                    let table: Vec<Vec<f64>> = (0..m.g())
                        .map(|value| {
                            let y = OlhReport { hash, value };
                            (0..k).map(|x| m.output_probability(x, &y)).collect()
                        })
                        .collect();
                    max_ratio_of_table(&table)
                })
                .fold(1.0, f64::max)
        }
        Kind::Hr => {
            let m = HadamardResponse::new(k, epsilon).unwrap();
            let table: Vec<Vec<f64>> = (0..m.order())
                .map(|y| (0..k).map(|x| m.output_probability(x, y)).collect())
                .collect();
            max_ratio_of_table(&table)
        }
        Kind::Ss => {
            // Every subset of the domain: the lists of another size have probability 0 for
            // every input, and so are left out of the table (the rows must sum to 1).
            let m = SubsetSelection::new(k, epsilon).unwrap();
            let table: Vec<Vec<f64>> = all_lists(k)
                .iter()
                .filter(|y| m.admits(y))
                .map(|y| (0..k).map(|x| m.output_probability(x, y)).collect())
                .collect();
            max_ratio_of_table(&table)
        }
    }
}

#[test]
fn exact_ldp_ratio_by_enumeration() {
    for kind in KINDS {
        for k in [2, 3, K] {
            for eps in EPSILONS {
                let ratio = max_ratio(kind, k, eps);
                assert!(
                    ratio <= eps.exp() * (1.0 + 1e-12),
                    "{kind:?} k = {k} ε = {eps}: ratio {ratio} > e^ε = {}",
                    eps.exp()
                );
                // The calibration is tight: the ratio is e^ε up to rounding.
                assert!(
                    ratio >= eps.exp() * (1.0 - 1e-12),
                    "{kind:?} {k} {eps}: {ratio}"
                );
            }
        }
    }
}

#[test]
fn mutant_with_doubled_epsilon_fails_the_ratio_test() {
    for kind in KINDS {
        for eps in EPSILONS {
            let ratio = max_ratio(kind, K, 2.0 * eps);
            assert!(
                ratio > eps.exp() * (1.0 + 1e-12),
                "{kind:?} at 2ε = {}: ratio {ratio} passed the ε = {eps} test",
                2.0 * eps
            );
        }
    }
}

#[test]
fn guarantees_are_pure_replace_one_at_the_requested_epsilon() {
    use tally_accounting::Neighbours;
    let guarantees = [
        Grr::new(K, 1.0).unwrap().guarantee(),
        UnaryRandomizer::sue(K, 1.0).unwrap().guarantee(),
        UnaryRandomizer::oue(K, 1.0).unwrap().guarantee(),
        Olh::new(K, 1.0).unwrap().guarantee(),
        HadamardResponse::new(K, 1.0).unwrap().guarantee(),
        SubsetSelection::new(K, 1.0).unwrap().guarantee(),
    ];
    for g in guarantees {
        assert_eq!(g.epsilon.to_bits(), 1f64.to_bits(), "{g:?}");
        assert_eq!(g.delta.to_bits(), 0f64.to_bits(), "{g:?}");
        assert_eq!(g.neighbours, Neighbours::ReplaceOne);
    }
}

#[test]
fn invalid_parameters_are_rejected() {
    for (k, eps) in [
        (1, 1.0),
        (0, 1.0),
        (5, 0.0),
        (5, -1.0),
        (5, f64::NAN),
        (5, f64::INFINITY),
    ] {
        assert!(Grr::new(k, eps).is_err(), "{k} {eps}");
        assert!(UnaryRandomizer::sue(k, eps).is_err(), "{k} {eps}");
        assert!(UnaryRandomizer::oue(k, eps).is_err(), "{k} {eps}");
        assert!(Olh::new(k, eps).is_err(), "{k} {eps}");
        assert!(HadamardResponse::new(k, eps).is_err(), "{k} {eps}");
        assert!(SubsetSelection::new(k, eps).is_err(), "{k} {eps}");
    }
    for size in [0, K] {
        assert!(SubsetSelection::with_size(K, 1.0, size).is_err(), "{size}");
    }
    let mut agg = SubsetSelection::with_size(K, 1.0, 2).unwrap().aggregator();
    for bad in [&[1][..], &[1, 1], &[2, 1], &[1, K], &[0, 1, 2]] {
        assert!(agg.absorb(&SubsetReport(bad.to_vec())).is_err(), "{bad:?}");
    }
    assert_eq!(agg.reports(), 0);
    // g = ⌈e^ε + 1⌉ must fit in a u32.
    assert!(Olh::new(K, 30.0).is_err());
    let mut agg = Grr::new(K, 1.0).unwrap().aggregator();
    assert!(agg.absorb(&K).is_err());
    assert_eq!(agg.reports(), 0);
    let mut agg = HadamardResponse::new(K, 1.0).unwrap().aggregator();
    assert!(agg.absorb(8).is_err());
    let mut agg = UnaryRandomizer::oue(K, 1.0).unwrap().aggregator();
    assert!(agg.absorb(&UnaryReport::from_fn(K + 1, |_| true)).is_err());
}

#[test]
fn olh_hash_range_follows_the_brief() {
    // g = ⌈e^ε + 1⌉: e^0.5 + 1 = 2.65, e + 1 = 3.72, e^3 + 1 = 21.09.
    for (eps, g) in [(0.5, 3), (1.0, 4), (3.0, 22)] {
        assert_eq!(Olh::new(K, eps).unwrap().g(), g);
    }
}

/// Samples `draws` reports of item `x` and checks them against `output_probability` (so the
/// ratio test above is about the distributions really sampled).
#[test]
fn samplers_match_the_enumerated_distributions() {
    let draws = 100_000;
    let seed = 2024;
    let eps = 1.0;
    let x = 2;
    let mut r = rng(seed);

    let m = Grr::new(K, eps).unwrap();
    let mut counts = vec![0u64; K as usize];
    for _ in 0..draws {
        counts[m.randomize(x, &mut r) as usize] += 1;
    }
    let probs: Vec<f64> = (0..K).map(|y| m.output_probability(x, y)).collect();
    assert_fits("GRR outputs", seed, &counts, &probs);

    let m = HadamardResponse::new(K, eps).unwrap();
    let mut counts = vec![0u64; m.order() as usize];
    for _ in 0..draws {
        counts[m.randomize(x, &mut r) as usize] += 1;
    }
    let probs: Vec<f64> = (0..m.order()).map(|y| m.output_probability(x, y)).collect();
    assert_fits("HR outputs", seed, &counts, &probs);

    for m in [
        UnaryRandomizer::sue(K, eps).unwrap(),
        UnaryRandomizer::oue(K, eps).unwrap(),
    ] {
        let mut counts = vec![0u64; 1 << K];
        for _ in 0..draws {
            let y = m.randomize(x, &mut r);
            let bits: usize = y.ones().map(|i| 1 << i).sum();
            counts[bits] += 1;
        }
        let probs: Vec<f64> = (0..1u32 << K)
            .map(|bits| m.output_probability(x, &UnaryReport::from_fn(K, |i| bits >> i & 1 == 1)))
            .collect();
        assert_fits(&format!("{:?} outputs", m.variant()), seed, &counts, &probs);
    }

    // OLH: given the hash, whether the value equals h(x) is the keep coin, and otherwise the
    // value is uniform over the other g − 1; check the value's offset from h(x) mod g.
    let m = Olh::new(K, eps).unwrap();
    let g = m.g();
    let mut counts = vec![0u64; g as usize];
    for _ in 0..draws {
        let y = m.randomize(x, &mut r);
        let hx = y.hash.apply(x, g);
        counts[((y.value + g - hx) % g) as usize] += 1;
    }
    let p = m.keep_probability();
    let probs: Vec<f64> = (0..g)
        .map(|d| {
            if d == 0 {
                p
            } else {
                (1.0 - p) / f64::from(g - 1)
            }
        })
        .collect();
    assert_fits("OLH value offsets", seed, &counts, &probs);

    // Subset selection, at a size other than 1 (every subset by its bit mask).
    let m = SubsetSelection::with_size(K, eps, 2).unwrap();
    let lists = all_lists(K);
    let mut counts = vec![0u64; lists.len()];
    for _ in 0..draws {
        let y = m.randomize(x, &mut r);
        counts[y.iter().map(|&i| 1usize << i).sum::<usize>()] += 1;
    }
    let probs: Vec<f64> = lists.iter().map(|y| m.output_probability(x, y)).collect();
    assert_fits("SS outputs", seed, &counts, &probs);
}

/// The true histogram of the unbiasedness tests: `n = 2000` clients over 8 items.
const TRUE_COUNTS: [u64; 8] = [800, 400, 300, 200, 150, 100, 50, 0];

/// A randomizer plus its aggregator, run end to end over `TRUE_COUNTS`.
trait Oracle {
    fn run(&self, rng: &mut ChaCha20Rng) -> Vec<f64>;
    fn probabilities(&self) -> SupportProbabilities;
    fn variance_at(&self, n: u64, count: u64) -> f64;
}

fn clients() -> impl Iterator<Item = u32> {
    (0u32..)
        .zip(TRUE_COUNTS)
        .flat_map(|(x, c)| (0..c).map(move |_| x))
}

macro_rules! oracle {
    ($ty:ty, |$m:ident, $x:ident, $r:ident, $agg:ident| $absorb:expr) => {
        impl Oracle for $ty {
            fn run(&self, rng: &mut ChaCha20Rng) -> Vec<f64> {
                let $m = self;
                let mut $agg = self.aggregator();
                for $x in clients() {
                    let $r = &mut *rng;
                    $absorb.unwrap();
                }
                $agg.estimate()
            }
            fn probabilities(&self) -> SupportProbabilities {
                self.support_probabilities()
            }
            fn variance_at(&self, n: u64, count: u64) -> f64 {
                <$ty>::variance_at(self, n, count)
            }
        }
    };
}

oracle!(Grr, |m, x, r, agg| agg.absorb(&m.randomize(x, r)));
oracle!(UnaryRandomizer, |m, x, r, agg| agg
    .absorb(&m.randomize(x, r)));
oracle!(Olh, |m, x, r, agg| agg.absorb(&m.randomize(x, r)));
oracle!(HadamardResponse, |m, x, r, agg| agg
    .absorb(m.randomize(x, r)));
oracle!(SubsetSelection, |m, x, r, agg| agg
    .absorb(&SubsetReport(m.randomize(x, r))));

/// `R` independent runs over `TRUE_COUNTS`. For every item: the mean of the `R` estimates is
/// z-tested against the truth with the analytic variance, and `(R − 1) s²/σ²` is tested
/// against `χ²_{R−1}` (two-sided, α = 1e-6 in total). Each estimate is an affine function of a
/// sum of 2000 independent Bernoulli variables, so it is nearly normal: its excess kurtosis `κ`
/// is `O(1/n)` (below 0.01 for every case here), and `Var(s²) = σ⁴ (2/(R − 1) + κ/R)` differs
/// from the normal-theory value by a relative `κ/2`, far inside the test's slack. With
/// `R = 1000` the acceptance band for `s²/σ²` is about `[0.80, 1.23]`, so a variance formula
/// off by a quarter (for instance one that drops the `c(x)` term for the 800-holder item) fails.
fn check_unbiased_with_analytic_variance(name: &str, oracle: &dyn Oracle, seed: u64) {
    const R: usize = 1000;
    let n: u64 = TRUE_COUNTS.iter().sum();
    let mut r = rng(seed);
    let runs: Vec<Vec<f64>> = (0..R).map(|_| oracle.run(&mut r)).collect();
    let chi2 = ChiSquared::new((R - 1) as f64).unwrap();
    let (lo, hi) = (
        chi2.inverse_cdf(ALPHA / 2.0),
        chi2.inverse_cdf(1.0 - ALPHA / 2.0),
    );
    let z_crit = z_critical();
    for (x, &truth) in TRUE_COUNTS.iter().enumerate() {
        let values: Vec<f64> = runs.iter().map(|e| e[x]).collect();
        let mean = values.iter().sum::<f64>() / R as f64;
        let var = oracle.variance_at(n, truth);
        let z = (mean - truth as f64) / (var / R as f64).sqrt();
        assert!(
            z.abs() <= z_crit,
            "{name} item {x}: mean {mean} vs truth {truth}: z = {z:.3}, critical {z_crit:.3}, \
             R = {R}, n = {n}, variance {var}, seed = {seed}"
        );
        let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
        let stat = ss / var;
        assert!(
            (lo..=hi).contains(&stat),
            "{name} item {x}: (R−1)s²/σ² = {stat:.3} outside [{lo:.3}, {hi:.3}] (df = {}), \
             analytic variance {var}, empirical {}, seed = {seed}",
            R - 1,
            ss / (R - 1) as f64
        );
    }
    // The analytic variance is the §7.4 formula in (p*, q*).
    let SupportProbabilities { p, q } = oracle.probabilities();
    let by_hand = n as f64 * q * (1.0 - q) / ((p - q) * (p - q)) + 800.0 * (1.0 - p - q) / (p - q);
    assert!((oracle.variance_at(n, 800) / by_hand - 1.0).abs() < 1e-12);
}

#[test]
fn estimates_are_unbiased_with_the_analytic_variance() {
    let k = TRUE_COUNTS.len() as u32;
    let eps = 1.0;
    check_unbiased_with_analytic_variance("GRR", &Grr::new(k, eps).unwrap(), 101);
    check_unbiased_with_analytic_variance("SUE", &UnaryRandomizer::sue(k, eps).unwrap(), 102);
    check_unbiased_with_analytic_variance("OUE", &UnaryRandomizer::oue(k, eps).unwrap(), 103);
    check_unbiased_with_analytic_variance("OLH", &Olh::new(k, eps).unwrap(), 104);
    check_unbiased_with_analytic_variance("HR", &HadamardResponse::new(k, eps).unwrap(), 105);
    // A larger ε, where the unary and hashing schemes differ more.
    check_unbiased_with_analytic_variance("OLH ε=3", &Olh::new(k, 3.0).unwrap(), 106);
    check_unbiased_with_analytic_variance("HR ε=3", &HadamardResponse::new(k, 3.0).unwrap(), 107);
    // Subset selection at ε = 0.5 reports k = 3 of the 8 items, at ε = 1 two.
    for (eps, size, seed) in [(0.5, 3, 108), (1.0, 2, 109)] {
        let m = SubsetSelection::new(k, eps).unwrap();
        assert_eq!(m.size(), size, "ε = {eps}");
        check_unbiased_with_analytic_variance(&format!("SS ε={eps}"), &m, seed);
    }
}

/// docs/algorithms.md Appendix A item 9 (§7.4 test vector): ε = 1, d = 1024, n = 10⁵.
#[test]
fn appendix_a_null_variances() {
    let (d, eps, n) = (1024u32, 1.0f64, 100_000u64);
    let e = eps.exp();
    let nf = n as f64;
    let olh = Olh::new(d, eps).unwrap();
    assert_eq!(olh.g(), 4);
    let g = f64::from(olh.g());
    // (name, implemented, closed form of §7.4, Appendix A value to 5 significant digits)
    let cases = [
        (
            "GRR",
            Grr::new(d, eps).unwrap().variance(n),
            nf * (e + f64::from(d) - 2.0) / ((e - 1.0) * (e - 1.0)),
            3.4707e7_f64,
        ),
        (
            "SUE",
            UnaryRandomizer::sue(d, eps).unwrap().variance(n),
            nf * e.sqrt() / ((e.sqrt() - 1.0) * (e.sqrt() - 1.0)),
            3.9177e5,
        ),
        (
            "OUE",
            UnaryRandomizer::oue(d, eps).unwrap().variance(n),
            nf * 4.0 * e / ((e - 1.0) * (e - 1.0)),
            3.6827e5,
        ),
        (
            "OLH",
            olh.variance(n),
            nf * (e + g - 1.0) * (e + g - 1.0) / ((g - 1.0) * (e - 1.0) * (e - 1.0)),
            3.6917e5,
        ),
        (
            "HR",
            HadamardResponse::new(d, eps).unwrap().variance(n),
            nf * (e + 1.0) * (e + 1.0) / ((e - 1.0) * (e - 1.0)),
            4.6827e5,
        ),
    ];
    for (name, got, closed, table) in cases {
        assert!(
            (got / closed - 1.0).abs() < 1e-12,
            "{name}: {got} vs closed form {closed}"
        );
        // The table rounds to 5 significant digits: within half a unit of the last one.
        let unit = 10f64.powi(table.log10().floor() as i32 - 4);
        assert!(
            (got - table).abs() <= 0.5 * unit,
            "{name}: {got} vs Appendix A {table}"
        );
    }
}

#[test]
fn merged_shards_equal_one_aggregator() {
    let k = 8;
    let mut r = rng(7);
    let items: Vec<u32> = (0..500).map(|_| r.random_range(0..k)).collect();

    let m = Grr::new(k, 1.0).unwrap();
    let reports: Vec<u32> = items.iter().map(|&x| m.randomize(x, &mut r)).collect();
    let (mut all, mut a, mut b) = (m.aggregator(), m.aggregator(), m.aggregator());
    for (i, &y) in reports.iter().enumerate() {
        all.absorb(&y).unwrap();
        if i % 3 == 0 {
            a.absorb(&y)
        } else {
            b.absorb(&y)
        }
        .unwrap();
    }
    a.merge(b);
    assert_eq!(a.reports(), all.reports());
    assert_eq!(bits(&a.estimate()), bits(&all.estimate()));

    let m = Olh::new(k, 1.0).unwrap();
    let reports: Vec<OlhReport> = items.iter().map(|&x| m.randomize(x, &mut r)).collect();
    let (mut all, mut a, mut b) = (m.aggregator(), m.aggregator(), m.aggregator());
    for (i, y) in reports.iter().enumerate() {
        all.absorb(y).unwrap();
        if i % 3 == 0 { a.absorb(y) } else { b.absorb(y) }.unwrap();
    }
    a.merge(b);
    assert_eq!(bits(&a.estimate()), bits(&all.estimate()));

    let m = UnaryRandomizer::sue(k, 1.0).unwrap();
    let reports: Vec<UnaryReport> = items.iter().map(|&x| m.randomize(x, &mut r)).collect();
    let (mut all, mut a, mut b) = (m.aggregator(), m.aggregator(), m.aggregator());
    for (i, y) in reports.iter().enumerate() {
        all.absorb(y).unwrap();
        if i % 3 == 0 { a.absorb(y) } else { b.absorb(y) }.unwrap();
    }
    a.merge(b);
    assert_eq!(bits(&a.estimate()), bits(&all.estimate()));

    let m = HadamardResponse::new(k, 1.0).unwrap();
    let reports: Vec<u32> = items.iter().map(|&x| m.randomize(x, &mut r)).collect();
    let (mut all, mut a, mut b) = (m.aggregator(), m.aggregator(), m.aggregator());
    for (i, &y) in reports.iter().enumerate() {
        all.absorb(y).unwrap();
        if i % 3 == 0 { a.absorb(y) } else { b.absorb(y) }.unwrap();
    }
    a.merge(b);
    assert_eq!(bits(&a.estimate()), bits(&all.estimate()));

    let m = SubsetSelection::new(k, 1.0).unwrap();
    let reports: Vec<SubsetReport> = items
        .iter()
        .map(|&x| SubsetReport(m.randomize(x, &mut r)))
        .collect();
    let (mut all, mut a, mut b) = (m.aggregator(), m.aggregator(), m.aggregator());
    for (i, y) in reports.iter().enumerate() {
        all.absorb(y).unwrap();
        if i % 3 == 0 { a.absorb(y) } else { b.absorb(y) }.unwrap();
    }
    a.merge(b);
    assert_eq!(bits(&a.estimate()), bits(&all.estimate()));
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ---------------------------------------------------------------------------------------------
// 7. The unary encodings' aggregate simulation has the law of per-client reports.
// ---------------------------------------------------------------------------------------------

/// The support count of item 0 recovered from its (affine) estimate.
fn support_of_item_0(estimate: &[f64], probabilities: SupportProbabilities, n: u64) -> u64 {
    let SupportProbabilities { p, q } = probabilities;
    (estimate[0] * (p - q) + n as f64 * q).round() as u64
}

#[test]
fn unary_aggregate_simulation_matches_per_client_reports() {
    use statrs::distribution::{Binomial, Discrete};
    // Item 0 is held by 5 of 12 clients; its support count is Bin(5, p) + Bin(7, q).
    let counts = [5u64, 4, 3];
    let n: u64 = counts.iter().sum();
    let clients: Vec<u32> = (0u32..3)
        .flat_map(|x| std::iter::repeat_n(x, counts[x as usize] as usize))
        .collect();
    for (i, oracle) in [
        UnaryRandomizer::sue(3, 1.0).unwrap(),
        UnaryRandomizer::oue(3, 1.0).unwrap(),
    ]
    .into_iter()
    .enumerate()
    {
        let probabilities = oracle.support_probabilities();
        let own = Binomial::new(probabilities.p, counts[0]).unwrap();
        let other = Binomial::new(probabilities.q, n - counts[0]).unwrap();
        let pmf: Vec<f64> = (0..=n)
            .map(|s| {
                (0..=s.min(counts[0]))
                    .map(|a| own.pmf(a) * other.pmf(s - a))
                    .sum()
            })
            .collect();
        let draws = 50_000;
        let seed = 700 + i as u64;
        let mut r = rng(seed);
        let mut per_client = vec![0u64; n as usize + 1];
        let mut aggregate = vec![0u64; n as usize + 1];
        for _ in 0..draws {
            let mut a = oracle.aggregator();
            for &x in &clients {
                a.absorb(&oracle.randomize(x, &mut r)).unwrap();
            }
            per_client[support_of_item_0(&a.estimate(), probabilities, n) as usize] += 1;
            let simulated = oracle.simulate_aggregate(&counts, &mut r);
            assert_eq!(simulated.reports(), n);
            aggregate[support_of_item_0(&simulated.estimate(), probabilities, n) as usize] += 1;
        }
        assert_fits("unary per-client support", seed, &per_client, &pmf);
        assert_fits("unary aggregate support", seed, &aggregate, &pmf);
    }
}

/// The subset size, the probabilities and the null variance against the independent
/// reference `tools/reference/subset_selection.py` (mpmath): the size exactly, `p` within a few
/// ulps of the textbook value (it is stepped down until the ratio provably holds, which
/// `exact_ldp_ratio_by_enumeration` checks), and `q` and the variance to a relative 1e-12.
#[test]
fn subset_selection_matches_the_reference() {
    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("test_vectors/subset_selection/law.json"))
            .expect("valid JSON");
    let number = |v: &serde_json::Value| v.as_str().unwrap().parse::<f64>().unwrap();
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 42);
    for case in cases {
        let domain = case["domain"].as_u64().unwrap() as u32;
        let eps = number(&case["epsilon"]);
        let m = SubsetSelection::new(domain, eps).unwrap();
        assert_eq!(
            u64::from(m.size()),
            case["size"].as_u64().unwrap(),
            "{case}"
        );
        let SupportProbabilities { p, q } = m.support_probabilities();
        let p_ref = number(&case["p"]);
        assert!(((p_ref - p) / p_ref).abs() < 1e-14, "{case}: p = {p}");
        assert!(
            (q / number(&case["q"]) - 1.0).abs() < 1e-12,
            "{case}: q = {q}"
        );
        let variance = m.variance(1);
        assert!(
            (variance / number(&case["variance_per_client"]) - 1.0).abs() < 1e-12,
            "{case}: variance {variance}"
        );
    }
}
