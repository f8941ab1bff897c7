//! OptPrefixTree (docs/algorithms.md §6): debiasing, the false-positive threshold rule, data
//! selection, the `⊥` report, the Huffman code, determinism and whole runs.
//!
//! Statistical checks use significance level `1e-6` with fixed seeds.

#[path = "support/stats.rs"]
mod stats;

use std::collections::HashSet;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::{LocalEpsilonPlan, aggregate_guarantee};
use tally_accounting::shuffle::ShuffleBound;
use tally_core::heavy_hitters::{
    Decoded, Encoding, HuffmanCode, IterationQuery, IterationSums, OptPrefixTree,
    OptPrefixTreeConfig, SegmentPolicy, Selection, select_by_fpr,
};
use tally_core::ldp::UnaryVariant;
use tally_core::task::Task;

use rand::Rng;
use statrs::distribution::{ContinuousCDF, Normal};
use stats::{ALPHA, assert_fits};
use tally_sim::{
    AggregationPath, Users, binomial_iteration, run_opt_prefix_tree, run_round, word_multisets,
};

/// The two-sided normal quantile `z_{1 − α/2}` (4.8916 at α = 1e-6).
fn z_critical() -> f64 {
    Normal::standard().inverse_cdf(1.0 - ALPHA / 2.0)
}

/// One iteration's sums over `users` along `path`: the binomial path, or every device
/// answering the round through the round executor.
fn iteration_sums(
    query: &IterationQuery,
    users: Users<'_>,
    vocabulary: &[String],
    path: AggregationPath,
    rng: &mut ChaCha20Rng,
) -> IterationSums {
    match path {
        AggregationPath::Binomial => {
            binomial_iteration(query, users, &query.item_slots(vocabulary), rng)
        }
        AggregationPath::PerReport => {
            run_round(query, &word_multisets(users, vocabulary), rng.next_u64())
        }
    }
}

/// Users as CSR arrays from lists of `(item, multiplicity)`.
struct Data {
    offsets: Vec<usize>,
    items: Vec<u32>,
    multiplicities: Vec<u32>,
}

impl Data {
    fn new(users: &[Vec<(u32, u32)>]) -> Self {
        let mut data = Data {
            offsets: vec![0],
            items: Vec::new(),
            multiplicities: Vec::new(),
        };
        for user in users {
            for &(i, m) in user {
                data.items.push(i);
                data.multiplicities.push(m);
            }
            data.offsets.push(data.items.len());
        }
        data
    }

    fn users(&self) -> Users<'_> {
        Users::new(&self.offsets, &self.items, &self.multiplicities).unwrap()
    }
}

fn plan(local_epsilon: f64, iterations: usize, users: u64) -> LocalEpsilonPlan {
    aggregate_guarantee(
        local_epsilon,
        1e-6,
        iterations,
        users,
        Composition::Basic,
        ShuffleBound::Fmt23,
    )
    .unwrap()
}

fn config(
    plan: LocalEpsilonPlan,
    encoding: Encoding,
    segment: SegmentPolicy,
) -> OptPrefixTreeConfig {
    OptPrefixTreeConfig {
        iterations: plan.iterations,
        runs: 1,
        domain_cap: 1 << 16,
        fpr: 0.1,
        selection: Selection::UniformSupport,
        randomizer: UnaryVariant::Optimized,
        segment,
        encoding,
        max_length: 16,
        deny: Vec::new(),
        plan,
    }
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

/// The estimates of one iteration are unbiased for the number of devices that selected each
/// element, for both simulation paths and both randomizers.
#[test]
fn debiased_estimates_are_unbiased() {
    let vocabulary = words(&["apple", "avocado", "banana", "cherry"]);
    // 300 users: 150 hold only "apple", 90 "banana", 60 "cherry" and "avocado"... each user
    // holds one word so the selected counts are known: a → 150 + 30, b → 90, c → 30.
    let mut users = Vec::new();
    users.extend((0..150).map(|_| vec![(0, 2)]));
    users.extend((0..30).map(|_| vec![(1, 1)]));
    users.extend((0..90).map(|_| vec![(2, 1)]));
    users.extend((0..30).map(|_| vec![(3, 5)]));
    let data = Data::new(&users);
    let n = 300u64;
    for (variant, path, trials) in [
        (UnaryVariant::Optimized, AggregationPath::Binomial, 400),
        (UnaryVariant::Symmetric, AggregationPath::Binomial, 400),
        (UnaryVariant::Optimized, AggregationPath::PerReport, 60),
    ] {
        let mut cfg = config(plan(2.0, 1, n), Encoding::Bytes, SegmentPolicy::Fixed(1));
        cfg.randomizer = variant;
        let mut task = OptPrefixTree::new(cfg).unwrap();
        let query = task.next_query().unwrap();
        assert_eq!(query.domain_size(), 257, "256 bytes and ⊥");
        let slots = query.item_slots(&vocabulary);
        let (a, b, c) = (slots[0], slots[2], slots[3]);
        assert_eq!(slots[0], slots[1], "apple and avocado share the prefix 'a'");
        let truth = [
            (a, 180.0),
            (b, 90.0),
            (c, 30.0),
            (query.bottom(), 0.0),
            (query.bottom() - 1, 0.0),
        ];
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut sums = vec![0.0; truth.len()];
        for _ in 0..trials {
            let release = iteration_sums(&query, data.users(), &vocabulary, path, &mut rng);
            assert_eq!(release.reports, n);
            let (estimates, _) = query.estimates(&release);
            for (s, &(e, _)) in sums.iter_mut().zip(&truth) {
                *s += estimates[e as usize];
            }
        }
        let support = query.randomizer.support_probabilities();
        for (&(e, count), sum) in truth.iter().zip(sums) {
            let mean = sum / trials as f64;
            let sd = (support.variance(n, count as u64) / trials as f64).sqrt();
            assert!(
                (mean - count).abs() <= z_critical() * sd,
                "{variant:?} {path:?}: element {e}: mean estimate {mean}, truth {count}, sd {sd}"
            );
        }
    }
}

/// On a null population (every device reports `⊥`), the threshold rule keeps anything at all
/// in at most a fraction `FPR` of iterations, so the expected false-positive ratio is at most
/// `FPR`.
#[test]
fn threshold_controls_false_positives_on_a_null_population() {
    let vocabulary = words(&["x"]);
    let n = 2000u64;
    let data = Data::new(&vec![vec![(0, 3)]; n as usize]);
    let trials = 400u64;
    let fpr = 0.2;
    let mut with_false_positives = 0u64;
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    for _ in 0..trials {
        let mut cfg = config(plan(2.0, 1, n), Encoding::Bytes, SegmentPolicy::Fixed(1));
        cfg.fpr = fpr;
        // Denying the only word makes every device report ⊥.
        cfg.deny = words(&["x"]);
        let output = run_opt_prefix_tree(
            OptPrefixTree::new(cfg).unwrap(),
            data.users(),
            &vocabulary,
            AggregationPath::Binomial,
            &mut rng,
        );
        let kept = output.iterations[0].completed + output.iterations[0].live;
        with_false_positives += u64::from(kept > 0);
    }
    // One-sided: the Wilson lower bound of Pr[any false positive] is at most FPR.
    let z = z_critical();
    let (k, t) = (with_false_positives as f64, trials as f64);
    let phat = k / t;
    let lower = (phat + z * z / (2.0 * t)
        - z * (phat * (1.0 - phat) / t + z * z / (4.0 * t * t)).sqrt())
        / (1.0 + z * z / t);
    assert!(
        lower <= fpr,
        "{with_false_positives} of {trials} null iterations kept something"
    );
}

/// With real signals among null elements, the average share of kept elements that nobody
/// selected stays at most `FPR` (Hoeffding margin at level 1e-6).
#[test]
fn threshold_controls_the_false_positive_ratio_with_signal() {
    let vocabulary = words(&["a", "b", "c", "d"]);
    let n = 3000u64;
    // σ ≈ 26 at ε₀ = 3: the four signals are 8σ to 15σ.
    let mut users = vec![vec![(0, 1)]; 400];
    users.extend(vec![vec![(1, 1)]; 300]);
    users.extend(vec![vec![(2, 1)]; 250]);
    users.extend(vec![vec![(3, 1)]; 200]);
    users.resize(n as usize, Vec::new());
    let data = Data::new(&users);
    let trials = 300;
    let fpr = 0.1;
    let mut cfg = config(plan(3.0, 1, n), Encoding::Bytes, SegmentPolicy::Fixed(1));
    cfg.fpr = fpr;
    let query = OptPrefixTree::new(cfg).unwrap().next_query().unwrap();
    let slots = query.item_slots(&vocabulary);
    let real: HashSet<usize> = slots.iter().map(|&s| s as usize).collect();
    assert_eq!(real.len(), 4);
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let mut ratio_sum = 0.0;
    let mut kept_real = 0;
    for _ in 0..trials {
        let release = binomial_iteration(&query, data.users(), &slots, &mut rng);
        let (estimates, sigma) = query.estimates(&release);
        let choice = select_by_fpr(&estimates[..query.bottom() as usize], sigma, fpr);
        let false_kept = choice.kept.iter().filter(|k| !real.contains(k)).count();
        kept_real += choice.kept.len() - false_kept;
        ratio_sum += false_kept as f64 / choice.kept.len().max(1) as f64;
    }
    let mean = ratio_sum / trials as f64;
    let margin = ((1e6f64).ln() / (2.0 * trials as f64)).sqrt();
    assert!(mean <= fpr + margin, "mean false-positive ratio {mean}");
    // The signals are strong enough to be kept nearly always.
    assert!(kept_real >= 4 * trials * 9 / 10, "{kept_real}");
}

/// `uniform-support` picks each distinct eligible data point with probability `1/k`,
/// `weighted` with probability proportional to its multiplicity.
#[test]
fn selection_rules_pick_as_specified() {
    // Two data points share element 1.
    let eligible = [(0u32, 1u32), (1, 5), (2, 2), (1, 3)];
    let draws = 200_000;
    for (selection, probs, seed) in [
        (Selection::UniformSupport, [0.25, 0.5, 0.25], 1u64),
        (Selection::Weighted, [1.0 / 11.0, 8.0 / 11.0, 2.0 / 11.0], 2),
    ] {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut observed = [0u64; 3];
        for _ in 0..draws {
            observed[selection.choose(&eligible, &mut rng).unwrap() as usize] += 1;
        }
        assert_fits(&format!("{selection:?}"), &observed, &probs);
    }
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    assert_eq!(Selection::Weighted.choose(&[], &mut rng), None);
    assert_eq!(Selection::UniformSupport.choose(&[], &mut rng), None);
}

/// Every device sends exactly one report per iteration whether or not it has eligible data:
/// the number of reports is the number of devices, and a population with nothing eligible puts
/// all its mass on `⊥`.
#[test]
fn bottom_keeps_the_report_count_independent_of_the_data() {
    let vocabulary = words(&["hello", "world"]);
    let n = 500usize;
    let eligible = Data::new(&vec![vec![(0, 1), (1, 4)]; n]);
    let nothing = Data::new(&vec![Vec::new(); n]);
    let mut cfg = config(
        plan(4.0, 1, n as u64),
        Encoding::Bytes,
        SegmentPolicy::Fixed(1),
    );
    cfg.domain_cap = 300;
    let mut task = OptPrefixTree::new(cfg).unwrap();
    let query = task.next_query().unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    for path in [AggregationPath::PerReport, AggregationPath::Binomial] {
        let full = iteration_sums(&query, eligible.users(), &vocabulary, path, &mut rng);
        let empty = iteration_sums(&query, nothing.users(), &vocabulary, path, &mut rng);
        assert_eq!(full.reports, n as u64);
        assert_eq!(empty.reports, n as u64);
        assert_eq!(full.sums.len(), empty.sums.len());
        let (estimates, sigma) = query.estimates(&empty);
        let bottom = estimates[query.bottom() as usize];
        assert!(
            (bottom - n as f64).abs() <= z_critical() * 2.0 * sigma,
            "⊥ estimate {bottom}"
        );
    }
}

/// The Huffman code is prefix-free and optimal on a small example, and decodes words.
#[test]
fn huffman_code_is_prefix_free_and_optimal() {
    // Weights 1, 1, 2, 4 (a, b, c, ⊣): the optimal lengths are 3, 3, 2, 1.
    let code = HuffmanCode::new(&[('a', 1.0), ('b', 1.0), ('c', 2.0)], 4.0).unwrap();
    let codes: Vec<&[u8]> = vec![
        code.char_code('a').unwrap(),
        code.char_code('b').unwrap(),
        code.char_code('c').unwrap(),
        code.end_code(),
    ];
    let lengths: Vec<usize> = codes.iter().map(|c| c.len()).collect();
    assert_eq!(lengths, vec![3, 3, 2, 1]);
    for (i, x) in codes.iter().enumerate() {
        for (j, y) in codes.iter().enumerate() {
            assert!(i == j || !y.starts_with(x), "{x:?} is a prefix of {y:?}");
        }
    }
    // Kraft equality: a full binary tree.
    let kraft: f64 = lengths.iter().map(|&l| 0.5f64.powi(l as i32)).sum();
    assert!((kraft - 1.0).abs() < f64::EPSILON);
    let encoding = Encoding::Huffman(code);
    for word in ["abc", "", "ccc", "ba"] {
        let bits = encoding.encode(word).unwrap();
        assert_eq!(encoding.decode(&bits), Decoded::Complete(word.to_owned()));
    }
    let abc = encoding.encode("abc").unwrap();
    assert_eq!(encoding.decode(&abc[..2]), Decoded::Partial);
    // The end symbol followed by anything but padding is no word's prefix.
    let mut after_end = encoding.encode("").unwrap();
    after_end.push(1);
    assert_eq!(encoding.decode(&after_end), Decoded::Invalid);
    assert_eq!(encoding.encode("abd"), None);
}

fn small_population() -> (Vec<String>, Data) {
    // Zipf-like: word i held (with multiplicity) by about 4000/(i+1) of 4000 users.
    let vocabulary: Vec<String> = (0..40).map(|i| format!("w{i:02}")).collect();
    let users: Vec<Vec<(u32, u32)>> = (0..4000u32)
        .map(|u| {
            (0..40u32)
                .filter(|&i| u % (i + 1) == 0)
                .map(|i| (i, 1 + u % 3))
                .collect()
        })
        .collect();
    (vocabulary, Data::new(&users))
}

/// Whole runs find the frequent words, are deterministic for a seed whatever the number of
/// threads, and a second run with the first run's words denied finds new ones only.
#[test]
fn runs_are_deterministic_and_second_runs_deny_found_words() {
    let (vocabulary, data) = small_population();
    let n = 4000;
    let run = |runs: usize, threads: usize| {
        let mut cfg = config(
            plan(6.0, 4 * runs, n),
            Encoding::Bytes,
            SegmentPolicy::MaxUnderCap,
        );
        cfg.iterations = 4;
        cfg.runs = runs;
        cfg.domain_cap = 1 << 17;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut rng = ChaCha20Rng::seed_from_u64(21);
            run_opt_prefix_tree(
                OptPrefixTree::new(cfg).unwrap(),
                data.users(),
                &vocabulary,
                AggregationPath::Binomial,
                &mut rng,
            )
        })
    };
    let one = run(1, 1);
    let again = run(1, 2);
    assert_eq!(one.words, again.words);
    assert_eq!(one.iterations, again.iterations);
    let found: Vec<&str> = one.words.iter().map(|w| w.word.as_str()).collect();
    assert!(
        found.contains(&"w00") && found.contains(&"w01"),
        "{found:?}"
    );
    let two = run(2, 2);
    let mut seen = HashSet::new();
    for w in &two.words {
        assert!(seen.insert(w.word.clone()), "{} found twice", w.word);
    }
    assert!(two.iterations.iter().any(|s| s.run == 2));
    assert_eq!(two.guarantee, two.plan.aggregate);
}

/// An iteration's query survives publication: a device rebuilds the same elements, the same
/// eligibility of every word and the same report for the same coins, for both encodings, also
/// past the first iteration (live prefixes, found words excluded).
#[test]
fn a_published_iteration_is_the_query_devices_answer() {
    use tally_core::heavy_hitters::{IterationSums, WordMultiset};
    use tally_core::protocol::{DeviceQuery, RoundAggregator, RoundProtocol};
    let vocabulary = words(&["apple", "apply", "ape", "banana", "bandana", "cherry", "x"]);
    let huffman = HuffmanCode::from_words(vocabulary.iter().map(|w| (w.as_str(), 1.0))).unwrap();
    for encoding in [Encoding::Bytes, Encoding::Huffman(huffman)] {
        let mut task = OptPrefixTree::new(config(
            plan(4.0, 3, 1000),
            encoding,
            SegmentPolicy::MaxUnderCap,
        ))
        .unwrap();
        let device = WordMultiset::from_words(["apple", "apple", "cherry", "x"]);
        while let Some(query) = task.next_query() {
            let published = query.publish();
            let rebuilt =
                tally_core::heavy_hitters::IterationQuery::from_published(published.clone())
                    .unwrap();
            assert_eq!(rebuilt.publish(), published);
            assert_eq!(
                rebuilt.item_slots(&vocabulary),
                query.item_slots(&vocabulary)
            );
            let mut a = ChaCha20Rng::seed_from_u64(9);
            let mut b = ChaCha20Rng::seed_from_u64(9);
            assert_eq!(
                query.respond(&device, &mut a),
                rebuilt.respond(&device, &mut b)
            );
            // A corrupt publication is refused.
            let mut short = published;
            if let Some(first) = short.elements.first_mut() {
                first.pop();
                assert!(tally_core::heavy_hitters::IterationQuery::from_published(short).is_err());
            }
            // Feed the task strong sums for "apple"'s element so that the tree grows.
            let mut aggregator = query.aggregator(ChaCha20Rng::seed_from_u64(0));
            let mut rng = ChaCha20Rng::seed_from_u64(1);
            for _ in 0..1000 {
                let report = query.respond(&device, &mut rng).unwrap();
                assert!(query.admits(&report));
                aggregator.absorb(report);
            }
            let sums: IterationSums = aggregator.release();
            assert_eq!(sums.reports, 1000);
            task.observe(sums);
        }
    }
}

/// A device's report is its selected element randomized: over many devices holding
/// `{a ×3, b}`, uniform-support selection sends `a`'s element half of the time, so the sum at
/// `a`'s element is `Bin(n/2·…)`: its mean `n(p + q)/2` within 5.3σ (α ≤ 1e-6); a device that
/// always reports its first word is caught.
#[test]
fn stat_devices_select_then_randomize() {
    use tally_core::heavy_hitters::WordMultiset;
    use tally_core::protocol::{DeviceQuery, RoundAggregator, RoundProtocol};
    let mut task = OptPrefixTree::new(config(
        plan(2.0, 1, 1000),
        Encoding::Bytes,
        SegmentPolicy::Fixed(1),
    ))
    .unwrap();
    let query = task.next_query().unwrap();
    let a = query.eligible_element("a").unwrap();
    let device = WordMultiset::from_words(["a", "a", "a", "b"]);
    const N: u64 = 20_000;
    let support = query.randomizer.support_probabilities();
    // Each device's bit at `a` is 1 with probability (p + q)/2: a sum of N such bits.
    let mean_bit = (support.p + support.q) / 2.0;
    let (mean, sigma) = (
        N as f64 * mean_bit,
        (N as f64 * mean_bit * (1.0 - mean_bit)).sqrt(),
    );
    let sum_at_a = |first_word: bool| {
        let mut aggregator = query.aggregator(ChaCha20Rng::seed_from_u64(0));
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for _ in 0..N {
            let report = if first_word {
                let element = query.eligible_element("a").unwrap();
                tally_core::heavy_hitters::IterationReport(
                    query.randomizer.randomize(element, &mut rng),
                )
            } else {
                query.respond(&device, &mut rng).unwrap()
            };
            aggregator.absorb(report);
        }
        aggregator.release().sums[a as usize] as f64
    };
    let honest = sum_at_a(false);
    assert!(
        (honest - mean).abs() <= 5.3 * sigma,
        "{honest} vs {mean} ± {sigma}"
    );
    let mutant = sum_at_a(true);
    assert!(
        (mutant - mean).abs() > 5.3 * sigma,
        "the mutant passes: {mutant}"
    );
}
