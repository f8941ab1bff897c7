//! The multi-message shuffle protocols of Ghazi et al. (docs/algorithms.md §5): parameter vectors,
//! the kernel decoder against brute force, unbiasedness and variance of the Hadamard estimates,
//! Count-Min's one-sided queries, the per-client and fast simulation paths against each other
//! and against their exact laws, and the range tree, quantiles and heavy hitters (with a
//! noiseless test-only oracle stub for exactness checks). Statistical tests at α = 1e-6 with
//! fixed seeds.

// Exact comparisons: the stub oracle's answers and the bucket ends are exact in f64.
#![allow(clippy::float_cmp)]

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::{ALPHA, assert_fits, chi2_critical, z_critical};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{Binomial, Discrete};
use tally_accounting::blanket::BlanketAnalysis;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::{Collusion, Guarantee, Neighbours, TrustModel};
use tally_core::Error;
use tally_core::histogram::{DomainHistogram, DomainMap, MessageCost};
use tally_core::protocol::{
    CountedRound, DeviceQuery, DomainRound, Estimates, RoundAggregator, RoundProtocol,
};
use tally_core::shuffle::ghazi_count_min::CountMinHashes;
use tally_core::shuffle::ghazi_hadamard::{brute_force_counts, item_row, kernel_counts};
use tally_core::shuffle::heavy_hitters::decode_levels;
use tally_core::shuffle::range_tree::{ancestors, chosen_node, node_index};
use tally_core::shuffle::{
    GhaziCountMin, GhaziHadamard, RangeCounts, RangeRound, SetHolders, SetOracleRound, SetQuery,
    ShuffleHeavyHitters, ShuffleQuantiles,
};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// The pmf of `Bin(n, p)` over `0..=n`.
fn binomial_probs(n: u64, p: f64) -> Vec<f64> {
    let b = Binomial::new(p, n).unwrap();
    (0..=n).map(|v| b.pmf(v)).collect()
}

/// Two-sample chi-square test of homogeneity of two samples of equal size, cells pooled
/// left to right until each holds at least 10 observations of the two together.
fn assert_same_law(what: &str, a: &[u64], b: &[u64]) {
    assert_eq!(a.len(), b.len());
    let max = *a.iter().chain(b).max().unwrap() as usize;
    let mut ha = vec![0f64; max + 1];
    let mut hb = vec![0f64; max + 1];
    a.iter().for_each(|&v| ha[v as usize] += 1.0);
    b.iter().for_each(|&v| hb[v as usize] += 1.0);
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let mut acc = (0.0, 0.0);
    for (x, y) in ha.into_iter().zip(hb) {
        acc.0 += x;
        acc.1 += y;
        if acc.0 + acc.1 >= 10.0 {
            cells.push(acc);
            acc = (0.0, 0.0);
        }
    }
    if let Some(last) = cells.last_mut() {
        last.0 += acc.0;
        last.1 += acc.1;
    }
    assert!(cells.len() >= 2, "{what}: too few cells");
    let stat: f64 = cells
        .iter()
        .map(|&(x, y)| (x - y) * (x - y) / (x + y))
        .sum();
    let crit = chi2_critical(cells.len() - 1);
    assert!(
        stat <= crit,
        "{what}: homogeneity rejected at alpha = {ALPHA}: statistic {stat:.3} > {crit:.3} \
         (df {})",
        cells.len() - 1
    );
}

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

#[test]
fn section_5_1_vector_through_the_mechanism() {
    // Theorem 4.3's conservative ρ is 559 (`tally-accounting`'s `ghazi_vectors.rs`); the
    // exact analysis of the blanket needs 43.
    let had = GhaziHadamard::new(1 << 20, 1 << 10, 1, 1.0, 1e-6).unwrap();
    assert_eq!(had.params().tau, 20);
    assert_eq!(had.params().rho, 43);
    assert_eq!(had.params().analysis, BlanketAnalysis::Exact);
    assert_eq!(
        DomainHistogram::message_cost(&had),
        Some(MessageCost {
            messages_per_client: 44.0,
            bits_per_message: 220
        })
    );
    assert_eq!(had.name(), "ghazi-hadamard");
    let g = DomainHistogram::guarantee(&had);
    assert_eq!(
        (g.epsilon, g.delta, g.neighbours, g.model),
        (1.0, 1e-6, Neighbours::ReplaceOne, TrustModel::Shuffle)
    );
}

#[test]
fn count_min_parameters_and_minimum_users() {
    // τ = ⌈log2(2·2^14/0.01)⌉ = 22; Lemma 4.10 at ε = 1, δ = 1e-8 needs n ≈ 1.93e6, the
    // exact analysis of the blanket 4,587 (γ = 1/2).
    match GhaziCountMin::new(4_586, 1 << 14, 1, 1.0, 1e-8, 0.01) {
        Err(Error::Accounting(tally_accounting::Error::Infeasible { why, .. })) => {
            assert!(why.contains("at least 4587"), "{why}");
        }
        other => panic!("expected infeasible, got {other:?}"),
    }
    let cm = GhaziCountMin::new(4_000_000, 1 << 14, 1, 1.0, 1e-8, 0.01).unwrap();
    let p = cm.params();
    assert_eq!((p.rows, p.width), (22, 8_000_000));
    // A blanket of about 1,148 messages a cell, against the lemma's 1.01e6.
    assert_eq!(p.analysis, BlanketAnalysis::Exact);
    assert!((1100.0..1200.0).contains(&(p.gamma * 4e6)), "{}", p.gamma);
    assert_eq!(cm.name(), "ghazi-count-min");
    assert_eq!(p.bits_per_message(), 5 + 23);
}

// ---------------------------------------------------------------------------------------------
// Hadamard
// ---------------------------------------------------------------------------------------------

#[test]
fn kernel_decoder_equals_brute_force() {
    // Small n (τ = 3 < log2(2B) = 5: large kernels) and larger n (τ = 12 > 5).
    for (users, seed) in [(8u64, 1u64), (4096, 2)] {
        let had = GhaziHadamard::new(users, 16, 3, 1.0, 0.5).unwrap();
        let mut r = rng(seed);
        let mut tuples = had.empty_tuples();
        for u in 0..20u32 {
            let set: Vec<u32> = (0..u % 4).map(|i| (u + 5 * i) % 16).collect();
            had.randomize(&set, &mut r, &mut tuples);
        }
        assert_eq!(tuples.len() as u64, 20 * had.params().tuples_per_user());
        assert_eq!(kernel_counts(&tuples, 16), brute_force_counts(&tuples, 16));
    }
}

#[test]
fn packed_tuples_round_trip() {
    let had = GhaziHadamard::new(1 << 13, 1 << 10, 1, 1.0, 0.5).unwrap(); // 13 × 11 bits
    let mut r = rng(3);
    let mut tuples = had.empty_tuples();
    let mut expected = Vec::new();
    for _ in 0..50 {
        let t: Vec<u32> = (0..13).map(|_| r.next_u32() & 2047).collect();
        tuples.push(&t);
        expected.push(t);
    }
    let mut out = vec![0u32; 13];
    for (i, t) in expected.iter().enumerate() {
        tuples.get(i, &mut out);
        assert_eq!(&out, t);
    }
}

#[test]
fn real_coordinates_are_uniform_on_the_hadamard_subgroup() {
    // B = 8: coordinates in [16]; item 5 uses row 6 = 0b110, whose even set has 8 elements.
    let had = GhaziHadamard::new(1 << 10, 8, 1, 1.0, 0.5).unwrap();
    let j = item_row(5);
    let mut r = rng(4);
    let mut hist = [0u64; 16];
    let mut tuple = vec![0u32; had.params().tau as usize];
    for _ in 0..2_000 {
        let mut tuples = had.empty_tuples();
        had.randomize(&[5], &mut r, &mut tuples);
        tuples.get(0, &mut tuple);
        for &a in &tuple {
            hist[a as usize] += 1;
        }
    }
    let probs: Vec<f64> = (0..16u32)
        .map(|a| {
            if (a & j).count_ones().is_multiple_of(2) {
                1.0 / 8.0
            } else {
                0.0
            }
        })
        .collect();
    for (a, &p) in probs.iter().enumerate() {
        if p == 0.0 {
            assert_eq!(hist[a], 0, "coordinate {a} is outside H_16,{j}");
        }
    }
    let (obs, p): (Vec<u64>, Vec<f64>) = hist
        .iter()
        .zip(&probs)
        .filter(|&(_, &p)| p > 0.0)
        .map(|(&o, &p)| (o, p))
        .unzip();
    assert_fits("real coordinates", 4, &obs, &p);
}

/// Every element's estimate after one device per item of `items` answered `round`, by its
/// count path ([`CountedRound::aggregate_counts`]) with coins from `rng`.
fn round_estimates<P: DomainRound>(
    round: &P,
    domain: u32,
    items: &[u32],
    rng: &mut ChaCha20Rng,
) -> Vec<f64> {
    let mut holders = vec![0_u64; domain as usize];
    for &x in items {
        holders[x as usize] += 1;
    }
    let answered = round
        .aggregate_counts(&holders, rng)
        .expect("as many devices as the protocol was set up for");
    P::estimates(answered.release())
}

#[test]
fn hadamard_estimates_are_unbiased_with_the_lemma_4_5_variance() {
    let n = 1usize << 10;
    let had = GhaziHadamard::new(n as u64, 16, 1, 1.0, 1e-6).unwrap();
    let p = *had.params();
    assert_eq!((p.tau, p.rho), (10, 43));
    // 300 users hold item 3, 100 item 7, the rest item 0; nobody holds 12.
    let items: Vec<u32> = (0..n)
        .map(|i| match i {
            0..300 => 3,
            300..400 => 7,
            _ => 0,
        })
        .collect();
    let runs = 400;
    let mut r = rng(20);
    let round = had.round(DomainMap::Integers(16)).unwrap();
    let estimates: Vec<Vec<f64>> = (0..runs)
        .map(|_| round_estimates(&round, 16, &items, &mut r))
        .collect();
    let q = p.collision_probability();
    let z = z_critical();
    for (item, truth) in [(3usize, 300.0), (7, 100.0), (0, 624.0), (12, 0.0)] {
        // Lemma 4.5: (Bin(N − ζ, 2^{−τ}) − (N − ζ)2^{−τ})/(1 − 2^{−τ}), N = (ρ+k)n.
        let others = (p.tuples_per_user() * n as u64) as f64 - truth;
        let var = others * q * (1.0 - q) / ((1.0 - q) * (1.0 - q));
        let col: Vec<f64> = estimates.iter().map(|e| e[item]).collect();
        let mean = col.iter().sum::<f64>() / runs as f64;
        // The de-bias subtracts (ρ+k)n·2^{−τ}, which counts the ζ real tuples as spurious:
        // E[x̂] = ζ exactly, since ζ(1 − 2^{−τ})/(1 − 2^{−τ}) = ζ.
        assert!(
            (mean - truth).abs() <= z * (var / runs as f64).sqrt(),
            "item {item}: mean {mean} vs {truth}"
        );
        let s2 = col.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (runs - 1) as f64;
        // (R−1)s²/σ² is close to χ²(R−1) (the counts are nearly normal, mean ≈ 44).
        let lo = statrs::distribution::ChiSquared::new((runs - 1) as f64).unwrap();
        use statrs::distribution::ContinuousCDF;
        let stat = (runs - 1) as f64 * s2 / var;
        assert!(
            stat >= lo.inverse_cdf(ALPHA / 2.0) && stat <= lo.inverse_cdf(1.0 - ALPHA / 2.0),
            "item {item}: sample variance {s2} vs {var}"
        );
    }
    // (ρ+k)n·2^{−τ} = 44: variance 44(1 − q)/(1 − q)².
    let want = 44.0 * (1.0 - q) / (1.0 - q).powi(2);
    assert!((p.null_variance() - want).abs() <= 1e-12 * want);
}

// ---------------------------------------------------------------------------------------------
// Count-Min
// ---------------------------------------------------------------------------------------------

/// n = 256, B = 4, β = 0.5 (τ = 4 rows), ε = 10, δ = 0.1: Lemma 4.10 needs γn ≥ 63.1.
fn small_count_min() -> GhaziCountMin {
    GhaziCountMin::new(256, 4, 1, 10.0, 0.1, 0.5).unwrap()
}

#[test]
fn count_min_is_one_sided_and_clamped() {
    let cm = small_count_min();
    let items: Vec<u32> = (0..256).map(|i| [0, 0, 0, 1][i % 4]).collect();
    let truth = [192.0, 64.0, 0.0, 0.0];
    for seed in 0..20 {
        let mut r = rng(40 + seed);
        let hashes = CountMinHashes::draw(cm.params(), &mut r);
        let mut messages = Vec::new();
        for &x in &items {
            cm.randomize(&hashes, &[x], &mut r, &mut messages);
        }
        let table = cm.analyze(&hashes, &messages);
        for x in 0..4u32 {
            let one = table.one_sided(x);
            // Never below truth: every real message of x lands in each of x's cells.
            assert!(one >= truth[x as usize], "{x}: {one}");
            assert_eq!(table.estimate(x), table.estimate_unclamped(x).max(0.0));
            assert!(table.estimate(x) >= 0.0);
        }
    }
}

#[test]
fn count_min_messages_decode_to_the_table() {
    let cm = small_count_min();
    let mut r = rng(41);
    let hashes = CountMinHashes::draw(cm.params(), &mut r);
    let mut messages = Vec::new();
    for u in 0..256u32 {
        cm.randomize(&hashes, &[u % 4], &mut r, &mut messages);
    }
    let table = cm.analyze(&hashes, &messages);
    for x in 0..4u32 {
        assert!(table.one_sided(x) >= 64.0);
    }
    let total: u64 = (0..cm.params().rows)
        .flat_map(|t| (0..cm.params().width).map(move |l| (t, l)))
        .map(|(t, l)| table.count(t, l))
        .sum();
    assert_eq!(total, messages.len() as u64);
}

/// Users with empty sets send blanket only: a fixed cell's count is `Bin(n, γ)`.
#[test]
fn count_min_blanket_cells_are_binomial() {
    let cm = small_count_min();
    let (n, gamma) = (cm.params().users, cm.params().gamma);
    let runs = 400;
    let mut r = rng(50);
    let mut hist = vec![0u64; n as usize + 1];
    for _ in 0..runs {
        let hashes = CountMinHashes::draw(cm.params(), &mut r);
        let mut messages = Vec::new();
        for _ in 0..n {
            cm.randomize(&hashes, &[], &mut r, &mut messages);
        }
        hist[cm.analyze(&hashes, &messages).count(1, 17) as usize] += 1;
    }
    assert_fits("blanket cell", 50, &hist, &binomial_probs(n, gamma));
}

// ---------------------------------------------------------------------------------------------
// Range tree, quantiles and heavy hitters
// ---------------------------------------------------------------------------------------------

/// The query of a noiseless k-set oracle: a device sends its set. TEST ONLY: it has no privacy
/// at all.
#[derive(Clone, Debug, PartialEq)]
struct ExactQuery {
    domain: u32,
    set_size: u32,
}

impl DeviceQuery for ExactQuery {
    type Input = u32;
    type Report = Vec<u32>;

    fn trust(&self) -> TrustModel {
        TrustModel::Shuffle
    }

    fn respond<R: Rng + ?Sized>(&self, item: &u32, rng: &mut R) -> Option<Vec<u32>> {
        self.respond_set(&[*item], rng)
    }

    fn admits(&self, report: &Vec<u32>) -> bool {
        report.len() <= self.set_size as usize && report.iter().all(|&x| x < self.domain)
    }
}

impl SetQuery for ExactQuery {
    fn set_size(&self) -> u32 {
        self.set_size
    }

    fn respond_set<R: Rng + ?Sized>(&self, set: &[u32], _: &mut R) -> Option<Vec<u32>> {
        let report = set.to_vec();
        self.admits(&report).then_some(report)
    }
}

/// A noiseless k-set oracle round: the exact number of sets containing each item, by the
/// devices' reports or from the holders.
#[derive(Clone, Debug)]
struct ExactOracle(ExactQuery);

/// Its aggregator: every item's count.
struct ExactCounts(Vec<f64>);

impl RoundAggregator for ExactCounts {
    type Report = Vec<u32>;
    type Release = Estimates;

    fn absorb(&mut self, report: Vec<u32>) {
        for j in report {
            self.0[j as usize] += 1.0;
        }
    }

    fn merge(&mut self, other: Self) {
        for (count, more) in self.0.iter_mut().zip(other.0) {
            *count += more;
        }
    }

    fn release(self) -> Estimates {
        Estimates(self.0)
    }
}

impl RoundProtocol for ExactOracle {
    type Query = ExactQuery;
    type Release = Estimates;
    type Aggregator = ExactCounts;

    fn query(&self) -> &ExactQuery {
        &self.0
    }

    fn aggregator(&self, _: ChaCha20Rng) -> ExactCounts {
        ExactCounts(vec![0.0; self.0.domain as usize])
    }
}

impl SetOracleRound for ExactOracle {
    fn domain(&self) -> u32 {
        self.0.domain
    }

    fn guarantee(&self) -> Guarantee {
        Guarantee {
            epsilon: f64::INFINITY,
            delta: 1.0,
            neighbours: Neighbours::ReplaceOne,
            model: TrustModel::Shuffle,
            analysis: "none (test stub)".to_owned(),
        }
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        Ok(Collusion {
            colluding_fraction,
            epsilon: f64::INFINITY,
            delta: 1.0,
            floor: f64::INFINITY,
        })
    }

    fn message_cost(&self) -> MessageCost {
        MessageCost {
            messages_per_client: 1.0,
            bits_per_message: 0,
        }
    }

    fn aggregate_sets<R: Rng + ?Sized>(
        &self,
        holders: &SetHolders,
        _: &mut R,
    ) -> Option<ExactCounts> {
        Some(ExactCounts(
            holders.of_item.iter().map(|&count| count as f64).collect(),
        ))
    }
}

fn exact_tree(bits: u32, dims: u32) -> RangeRound<ExactOracle> {
    let oracle = ExactOracle(ExactQuery {
        domain: 1 << (bits * dims),
        set_size: (bits + 1).pow(dims),
    });
    RangeRound::with_oracle(bits, dims, oracle).unwrap()
}

/// The release of `round` after a device at every leaf of `leaves` answered with coins from
/// `rng`.
fn devices_answer<O: SetOracleRound>(
    round: &RangeRound<O>,
    leaves: &[u32],
    rng: &mut ChaCha20Rng,
) -> RangeCounts {
    let mut aggregator = round.aggregator(ChaCha20Rng::seed_from_u64(0));
    for leaf in leaves {
        aggregator.absorb(round.query().respond(leaf, rng).unwrap());
    }
    aggregator.release()
}

/// The release of `round` by its count path after a device at every leaf of `leaves` answered.
fn counts_answer<O: SetOracleRound>(
    round: &RangeRound<O>,
    leaves: &[u32],
    rng: &mut ChaCha20Rng,
) -> RangeCounts {
    let mut counts = vec![0_u64; round.domain() as usize];
    for &leaf in leaves {
        counts[leaf as usize] += 1;
    }
    round
        .aggregate_counts(&counts, rng)
        .expect("as many devices as the oracle was set up for")
        .release()
}

#[test]
fn appendix_a_item_12() {
    let order: Vec<(u32, u32)> = (1..=4).map(chosen_node).collect();
    assert_eq!(order, [(0, 1), (1, 1), (2, 1), (2, 3)]);
    for (j, &(t, s)) in order.iter().enumerate() {
        assert_eq!(node_index(t, s), j as u32);
    }
    // One user per leaf: y_{0,1} = 4, y_{1,1} = 2, y_{2,1} = y_{2,3} = 1.
    let counts = devices_answer(&exact_tree(2, 1), &[0, 1, 2, 3], &mut rng(60));
    assert_eq!(counts.nodes(), &[4.0, 2.0, 1.0, 1.0]);
    // P(3) = y_{1,1} + y_{2,3}; z_4 = y_{0,1} − y_{1,1} − y_{2,3}.
    assert_eq!(counts.prefix(3), 3.0);
    assert_eq!(counts.count(3, 3), 1.0);
    // Leaf 3 (the paper's leaf 4) reports only the root.
    let mut a = Vec::new();
    ancestors(2, 3, &mut a);
    assert_eq!(a, [0]);
    ancestors(2, 2, &mut a);
    assert_eq!(a, [0, 3]);
}

#[test]
fn range_tree_is_exact_with_exact_answers() {
    let mut r = rng(61);
    let leaves: Vec<u32> = (0..500).map(|_| r.next_u32() % 16).collect();
    let tree = exact_tree(4, 1);
    let counts = devices_answer(&tree, &leaves, &mut r);
    // The count path draws the oracle's aggregate from the sets the leaves report.
    assert_eq!(counts_answer(&tree, &leaves, &mut r), counts);
    for lo in 0..16 {
        for hi in lo..16 {
            let truth = leaves.iter().filter(|&&x| (lo..=hi).contains(&x)).count() as f64;
            assert_eq!(counts.count(lo, hi), truth, "[{lo}, {hi}]");
        }
    }
    // Two dimensions, B0 = 4: every box.
    let points: Vec<u32> = (0..300).map(|_| r.next_u32() % 16).collect();
    let tree = exact_tree(2, 2);
    let counts = devices_answer(&tree, &points, &mut r);
    assert_eq!(counts_answer(&tree, &points, &mut r), counts);
    for (lo0, hi0, lo1, hi1) in (0..4).flat_map(|a| {
        (a..4).flat_map(move |b| (0..4).flat_map(move |c| (c..4).map(move |d| (a, b, c, d))))
    }) {
        let truth = points
            .iter()
            .filter(|&&p| (lo0..=hi0).contains(&(p % 4)) && (lo1..=hi1).contains(&(p / 4)))
            .count() as f64;
        assert_eq!(counts.box_count(&[lo0, lo1], &[hi0, hi1]), truth);
    }
}

#[test]
fn range_tree_with_the_hadamard_oracle() {
    let n = 1u64 << 10;
    let tree = RangeRound::hadamard(2, 1, 1.0, 1e-3, n).unwrap();
    let g = tree.guarantee();
    assert_eq!(
        (g.epsilon, g.delta, g.model),
        (1.0, 1e-3, TrustModel::Shuffle)
    );
    let had = GhaziHadamard::new(n, 4, 3, 1.0, 1e-3).unwrap();
    assert_eq!(
        tree.message_cost(),
        DomainHistogram::message_cost(&had).unwrap()
    );
    let leaves: Vec<u32> = (0..n as u32)
        .map(|i| [0, 1, 1, 3][(i % 4) as usize])
        .collect();
    let counts = counts_answer(&tree, &leaves, &mut rng(62));
    // Each range is at most 2·log2 B node estimates, each within Lemma 4.5's bound at β = 1e-6.
    let bound = 4.0 * had.params().error_bound(1e-6).unwrap();
    for (lo, hi, truth) in [(0, 0, 256.0), (1, 2, 512.0), (0, 3, 1024.0), (2, 2, 0.0)] {
        let c = counts.count(lo, hi);
        assert!((c - truth).abs() <= bound, "[{lo}, {hi}]: {c} vs {truth}");
    }
    assert!(matches!(
        RangeRound::count_min(2, 1, 1.0, 1e-3, DEFAULT_COUNT_MIN_BETA, n, &mut rng(62)),
        Err(Error::Accounting(
            tally_accounting::Error::Infeasible { .. }
        ))
    ));
}

/// The range round's count path ([`CountedRound::aggregate_counts`], through the sets its leaves
/// report) has the law of every device answering (n = 16, B = 4, k = 3, leaves reporting 2 or
/// 3 nodes and padding: every node's raw count), and a count path fed moved leaves (all at the
/// last, which reports the root alone) is caught.
#[test]
fn range_tree_devices_and_count_path_agree_in_distribution() {
    let n = 16_u32;
    let tree = RangeRound::hadamard(2, 1, 1.0, 0.1, u64::from(n)).unwrap();
    let params = *tree.oracle().protocol().params();
    // The raw count behind a node's de-biased estimate.
    let raw = |counts: RangeCounts| -> Vec<u64> {
        counts
            .nodes()
            .iter()
            .map(|e| {
                (e * (1.0 - params.collision_probability()) + params.expected_spurious()).round()
                    as u64
            })
            .collect()
    };
    // Node 1, the left half, holds them all: ρ = 1651 blanket tuples per device make the
    // spurious count's deviation about 40, so the mutant must move many.
    let leaves: Vec<u32> = (0..n).map(|i| i % 2).collect();
    let moved = vec![3_u32; n as usize];
    let runs = 2_000;
    let (mut devices, mut counted, mut mutant) = (vec![], vec![], vec![]);
    let (mut r, mut c) = (rng(66), rng(67));
    for _ in 0..runs {
        devices.push(raw(devices_answer(&tree, &leaves, &mut r)));
        counted.push(raw(counts_answer(&tree, &leaves, &mut c)));
        mutant.push(raw(counts_answer(&tree, &moved, &mut c)));
    }
    let column = |runs: &[Vec<u64>], j: usize| -> Vec<u64> { runs.iter().map(|r| r[j]).collect() };
    for j in 0..4 {
        assert_same_law(
            &format!("node {j}"),
            &column(&devices, j),
            &column(&counted, j),
        );
    }
    let caught = std::panic::catch_unwind(|| {
        assert_same_law("mutant", &column(&devices, 1), &column(&mutant, 1));
    });
    assert!(caught.is_err(), "the mutant passes");
}

#[test]
fn quantiles_with_exact_answers() {
    let n = 1000u64;
    let q = ShuffleQuantiles::new(exact_tree(6, 1), n).unwrap();
    let values: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
    let buckets: Vec<u32> = values.iter().map(|&x| q.bucket(x)).collect();
    let sketch = q.sketch(devices_answer(q.tree(), &buckets, &mut rng(63)));
    // B = 64 buckets: the median's bucket ends at 32/64.
    assert_eq!(sketch.quantile(0.5), 0.5);
    assert_eq!(sketch.quantile(0.1), 7.0 / 64.0);
    assert_eq!(sketch.quantile(1.0), 1.0);
    assert_eq!(q.bucket(1.0), 63);
    assert!(ShuffleQuantiles::new(exact_tree(2, 2), n).is_err());
}

#[test]
fn heavy_hitters_with_exact_answers() {
    let mut items = vec![9u32; 200];
    items.extend(vec![22; 60]);
    items.extend(vec![23; 40]); // prefix 1011 has 100 ≥ 50 but each leaf is split
    items.extend((0..32).cycle().take(64));
    // Every level's exact counts of the items' prefixes.
    let levels: Vec<Vec<f64>> = (1..=5)
        .map(|level| {
            let mut counts = vec![0.0; 1 << level];
            for &x in &items {
                counts[(x >> (5 - level)) as usize] += 1.0;
            }
            counts
        })
        .collect();
    assert_eq!(decode_levels(&levels, 100.0), [(9, 202.0), (22, 62.0)]);
    // The Count-Min construction needs millions of users at ε/L.
    match ShuffleHeavyHitters::new(5, 1.0, 1e-6, 0.01, 10_000, 100.0, &mut rng(64)) {
        Err(Error::Accounting(tally_accounting::Error::Infeasible { why, .. })) => {
            assert!(why.contains("users"), "{why}");
        }
        other => panic!("expected infeasible, got {other:?}"),
    }
}

/// Timing at the report's size (no assertion on time): run with
/// `cargo test --release -p tally-core --test ghazi -- --ignored --nocapture timing`.
#[test]
#[ignore = "minutes in release mode; prints timings"]
fn timing_at_a_million_users() {
    use std::time::Instant;
    let n = 1_000_000usize;
    let b = 1u32 << 14;
    let items: Vec<u32> = (0..n as u32).map(|i| (i * 7919) % b).collect();
    let had = GhaziHadamard::new(n as u64, b, 1, 1.0, 1e-8).unwrap();
    let start = Instant::now();
    let round = had.round(DomainMap::Integers(b)).unwrap();
    let est = round_estimates(&round, b, &items, &mut rng(70));
    println!(
        "hadamard fast n={n} B={b} tau={} rho={}: {:.2} s (est[0] = {:.1})",
        had.params().tau,
        had.params().rho,
        start.elapsed().as_secs_f64(),
        est[0]
    );
    // Count-Min: n = 10^6 is infeasible (γ > 1/2); time the exact per-cell blanket draws at
    // the smallest feasible n and extrapolate to the τ·s cells of a run.
    let (lemma_delta, _) = tally_accounting::ghazi::count_min_delta_split(1e-8).unwrap();
    let min = tally_accounting::ghazi::count_min_min_users(22, 1, 1.0, lemma_delta).unwrap();
    let cm = GhaziCountMin::new(min, b, 1, 1.0, 1e-8, 0.01).unwrap();
    let p = *cm.params();
    let mut r = rng(72);
    let draws = 200;
    let start = Instant::now();
    let mut sum = 0u64;
    for _ in 0..draws {
        sum += tally_core::sampling::exact_binomial(p.users, p.gamma, &mut r);
    }
    let per = start.elapsed().as_secs_f64() / draws as f64;
    println!(
        "count-min n={} tau={} s={} gamma={:.4}: {:.3} ms per exact Bin(n, γ) cell (mean {:.0}); \
         {:.2e} cells → {:.2e} s single-threaded",
        p.users,
        p.rows,
        p.width,
        p.gamma,
        per * 1e3,
        sum as f64 / draws as f64,
        f64::from(p.rows) * p.width as f64,
        per * f64::from(p.rows) * p.width as f64
    );
}

#[test]
fn two_dimensional_boxes_with_the_hadamard_oracle() {
    // B0 = 4, d = 2: B = 16 cells, k = 3² = 9 ancestors per point.
    let n = 1u64 << 10;
    let tree = RangeRound::hadamard(2, 2, 1.0, 1e-3, n).unwrap();
    let had = GhaziHadamard::new(n, 16, 9, 1.0, 1e-3).unwrap();
    assert_eq!(tree.guarantee().epsilon, 1.0);
    // Points (x, y) flattened as x + 4y: 512 at (1, 2), 256 at (3, 3), 256 at (0, 0).
    let points: Vec<u32> = (0..n as u32)
        .map(|i| [1 + 4 * 2, 1 + 4 * 2, 3 + 4 * 3, 0][(i % 4) as usize])
        .collect();
    let counts = counts_answer(&tree, &points, &mut rng(65));
    // A box is at most (2·2)² = 16 node estimates, each within Lemma 4.5's bound.
    let bound = 16.0 * had.params().error_bound(1e-6).unwrap();
    for (lo, hi, truth) in [
        ([0, 0], [3, 3], 1024.0),
        ([1, 2], [1, 2], 512.0),
        ([1, 0], [3, 3], 768.0),
        ([2, 0], [2, 3], 0.0),
    ] {
        let c = counts.box_count(&lo, &hi);
        assert!(
            (c - truth).abs() <= bound,
            "{lo:?}..={hi:?}: {c} vs {truth}"
        );
    }
}

#[test]
fn count_min_as_a_domain_histogram() {
    let cm = small_count_min();
    let items: Vec<u32> = (0..256).map(|i| i % 4).collect();
    let mut r = rng(66);
    let hashes = CountMinHashes::draw(cm.params(), &mut r);
    let est = round_estimates(
        &cm.round(DomainMap::Integers(4), hashes).unwrap(),
        4,
        &items,
        &mut r,
    );
    assert_eq!(est.len(), 4);
    let g = DomainHistogram::guarantee(&cm);
    assert_eq!((g.epsilon, g.model), (10.0, TrustModel::Shuffle));
    let cost = DomainHistogram::message_cost(&cm).unwrap();
    let p = cm.params();
    assert!((cost.messages_per_client - (4.0 + 4.0 * 512.0 * p.gamma)).abs() < 1e-9);
    assert_eq!(cost.bits_per_message, 2 + 9);
}

// ---------------------------------------------------------------------------------------------
// Hadamard as a round
// ---------------------------------------------------------------------------------------------

/// A device's report is one tuple of its item's `H_{2B,j}` and `ρ` others, admitted, and
/// spelled once on the wire; malformed spellings are refused.
#[test]
fn a_hadamard_report_is_admitted_and_has_one_spelling() {
    use tally_core::protocol::{DeviceQuery, MultiMessage, RoundProtocol, WireReport};
    use tally_core::shuffle::HadamardTuples;
    let had = GhaziHadamard::new(64, 8, 1, 1.0, 0.1).unwrap();
    let round = had.round(DomainMap::Integers(8)).unwrap();
    let query = round.query();
    assert_eq!(
        (query.tau(), query.rho()),
        (had.params().tau, had.params().rho)
    );
    let m = had.params().coordinate_bits();
    let mut r = rng(40);
    for item in 0..8_u32 {
        let report = query.respond(&item, &mut r).unwrap();
        assert!(query.admits(&report));
        let text = report.clone().encode();
        let decoded = HadamardTuples::decode(text.clone()).unwrap();
        assert_eq!(decoded.clone().encode(), text);
        assert!(query.admits(&decoded));
        let tuples = decoded.into_messages();
        assert_eq!(tuples.len() as u64, 1 + had.params().rho);
        // Some tuple lies in the item's H_{2B,j}: its coordinates, m bits each from the
        // lowest, all have even parity with row j.
        let j = u128::from(item_row(item));
        let in_row = |hex: &str| {
            let value = u128::from_str_radix(hex, 16).unwrap();
            (0..had.params().tau).all(|g| {
                let a = (value >> (g * m)) & ((1 << m) - 1);
                (a & j).count_ones().is_multiple_of(2)
            })
        };
        assert!(text.split(',').any(in_row), "{text}");
    }
    assert_eq!(query.respond(&8, &mut r), None);
    for bad in ["", ",", "01", "A", "2,1", "1,,2", "x"] {
        assert_eq!(HadamardTuples::decode(bad.to_owned()), None, "{bad:?}");
    }
    // The right number of tuples, each of τm bits at most.
    let short = HadamardTuples::decode("1,2".to_owned()).unwrap();
    assert!(!query.admits(&short));
    let wide = format!("1{}", ",1".repeat(had.params().rho as usize - 1)) + ",fffffffffffff";
    assert!(!query.admits(&HadamardTuples::decode(wide).unwrap()));
}

/// The round's analyzer decodes reports as the kernel decoder does; its count path
/// ([`SetOracleRound::aggregate_sets`]) has the law of every device answering, for devices
/// holding sets of 1 to `k = 3` items, so that padding rows are sent (n = 16, B = 8, τ = 4:
/// the raw counts of a held and a null item and their total), and a count path fed the wrong
/// holders is caught.
#[test]
fn hadamard_round_devices_and_count_path_agree_in_distribution() {
    let n = 16_u32;
    let had = GhaziHadamard::new(u64::from(n), 8, 3, 1.0, 0.1).unwrap();
    let round = had.round(DomainMap::Integers(8)).unwrap();
    let sets: Vec<Vec<u32>> = (0..n)
        .map(|i| [vec![0], vec![1, 2], vec![3, 4, 0]][(i % 3) as usize].clone())
        .collect();
    let runs = 3_000;
    let coins = || ChaCha20Rng::seed_from_u64(0);
    let raw_of = |devices: bool, sets: &[Vec<u32>], r: &mut ChaCha20Rng| -> Vec<u64> {
        if devices {
            let mut aggregator = round.aggregator(coins());
            for set in sets {
                aggregator.absorb(round.query().respond_set(set, r).unwrap());
            }
            aggregator.raw().to_vec()
        } else {
            let mut holders = SetHolders {
                of_item: vec![0; 8],
                of_size: vec![0; 4],
            };
            for set in sets {
                set.iter().for_each(|&x| holders.of_item[x as usize] += 1);
                holders.of_size[set.len()] += 1;
            }
            round.aggregate_sets(&holders, r).unwrap().raw().to_vec()
        }
    };
    let mut samples = [[vec![], vec![], vec![]], [vec![], vec![], vec![]]];
    for (k, devices) in [true, false].into_iter().enumerate() {
        let mut r = rng(50 + k as u64);
        for _ in 0..runs {
            let raw = raw_of(devices, &sets, &mut r);
            samples[k][0].push(raw[0]);
            samples[k][1].push(raw[6]);
            samples[k][2].push(raw.iter().sum::<u64>());
        }
    }
    for (what, index) in [("held", 0), ("null", 1), ("total", 2)] {
        assert_same_law(what, &samples[0][index], &samples[1][index]);
    }
    let p = had.params();
    let mut hist = vec![0u64; (p.tuples_per_user() * u64::from(n) + 1) as usize];
    samples[1][1].iter().for_each(|&v| hist[v as usize] += 1);
    assert_fits(
        "count path null count",
        50,
        &hist,
        &binomial_probs(p.tuples_per_user() * u64::from(n), 1.0 / 16.0),
    );
    // The mutant: every device holding item 1.
    let mut r = rng(52);
    let moved = vec![vec![1]; n as usize];
    let mutant: Vec<u64> = (0..runs)
        .map(|_| raw_of(false, &moved, &mut r)[0])
        .collect();
    let caught = std::panic::catch_unwind(|| assert_same_law("mutant", &samples[0][0], &mutant));
    assert!(caught.is_err(), "the mutant passes");
}
