//! TrieHH over populations: the words found, precision 1, determinism, the beam, segments, and
//! the per-round batch checked to be a uniform fixed-size subset (α = 1e-6).

#[path = "support/stats.rs"]
mod stats;

use std::collections::HashMap;

use tally_core::heavy_hitters::{TERMINATOR, TrieHh, TrieHhConfig, TrieHhOutput};
use tally_sim::{Population, run_triehh};

/// A population holding `word` for `count` clients each, interleaved round robin.
fn population(words: &[(&str, u64)]) -> Population {
    let mut left: Vec<u64> = words.iter().map(|&(_, c)| c).collect();
    let mut names = Vec::new();
    while left.iter().any(|&c| c > 0) {
        for (i, c) in left.iter_mut().enumerate() {
            if *c > 0 {
                *c -= 1;
                names.push(words[i].0.to_owned());
            }
        }
    }
    Population::from_names(names, "test words").unwrap()
}

fn task(population: &Population, config: impl FnOnce(TrieHhConfig) -> TrieHhConfig) -> TrieHh {
    let base = TrieHhConfig::calibrate(4.0, 1e-6, 7, population.len() as u64).unwrap();
    TrieHh::new(config(base)).unwrap()
}

/// Frequent words (1000+ holders), a long tail of words held by fewer clients than any
/// threshold, and words in between.
fn words() -> Vec<(&'static str, u64)> {
    let mut words = vec![
        ("apple", 3000),
        ("apply", 2500),
        ("banana", 2000),
        ("band", 1500),
        ("cherry", 1200),
        ("a", 1000),
        ("medium", 150),
        ("mediocre", 120),
    ];
    let tail: &'static [&'static str] = &[
        "zz", "zebra", "zest", "apples", "applied", "bananas", "cherries", "ban", "bandit",
        "cherr", "x", "q", "aa",
    ];
    for (i, &w) in tail.iter().enumerate() {
        words.push((w, 1 + i as u64 % 3));
    }
    words
}

#[test]
fn finds_the_frequent_words_and_never_a_word_with_fewer_holders_than_theta() {
    let words = words();
    let population = population(&words);
    let holders: HashMap<&str, u64> = words.iter().copied().collect();
    let frequent = ["a", "apple", "apply", "banana", "band", "cherry"];
    for seed in 0..20 {
        let task = task(&population, |c| c);
        let theta = task.config().threshold;
        assert_eq!(theta, 10);
        let out = run_triehh(&population, task, seed);
        // Precision 1: every word was voted for by θ sampled clients holding it.
        for word in &out.words {
            let held = holders.get(word.as_str()).copied().unwrap_or(0);
            assert!(
                held >= theta,
                "seed {seed}: found {word:?} held by {held} < θ"
            );
        }
        for word in frequent {
            assert!(
                out.words.iter().any(|w| w == word),
                "seed {seed}: missed {word}"
            );
        }
        assert!(out.words.windows(2).all(|w| w[0] < w[1]));
        // The trie only extends accepted prefixes.
        check_trie(&out);
    }
}

/// Every accepted prefix of round `r > 1` extends a non-terminal prefix of round `r − 1` by one
/// segment, and the words are exactly the terminal prefixes.
fn check_trie(out: &TrieHhOutput) {
    let g = out.config.segment;
    for r in 1..out.accepted.len() {
        for prefix in &out.accepted[r] {
            let chars: Vec<char> = prefix.chars().collect();
            let parent: String = chars[..r * g].iter().collect();
            assert!(
                out.accepted[r - 1].contains(&parent) && !parent.ends_with(TERMINATOR),
                "{prefix:?} in round {} has no live parent",
                r + 1
            );
        }
    }
    let mut words: Vec<String> = out
        .accepted
        .iter()
        .flatten()
        .filter_map(|p| p.strip_suffix(TERMINATOR).map(str::to_owned))
        .collect();
    words.sort();
    assert_eq!(words, out.words);
    assert_eq!(out.rounds_run, out.accepted.len());
}

#[test]
fn same_seed_same_output_and_seeds_differ() {
    let population = population(&words());
    let run = |seed| run_triehh(&population, task(&population, |c| c), seed);
    assert_eq!(run(7), run(7));
    let first = run(0);
    // "medium" (150 holders) gets 6.5 votes per round on average against θ = 10: some
    // seeds find it and some do not.
    assert!((1..30).any(|seed| run(seed).accepted != first.accepted));
}

#[test]
fn runs_stop_when_a_round_accepts_nothing() {
    let population = population(&[("ab", 3000), ("x", 5)]);
    let out = run_triehh(&population, task(&population, |c| c), 3);
    // "a", "ab", "ab$", then an empty round.
    assert_eq!(out.words, ["ab"]);
    assert_eq!(out.rounds_run, 4);
    assert!(out.accepted[3].is_empty());
    assert_eq!(out.config.rounds, 7);
}

#[test]
fn beam_keeps_at_most_b_non_terminal_prefixes_per_round() {
    let words = [
        ("aa", 2000),
        ("bb", 1900),
        ("cc", 1800),
        ("dd", 1700),
        ("e", 1600),
        ("f", 1500),
    ];
    let population = population(&words);
    for seed in 0..10 {
        let all = run_triehh(&population, task(&population, |c| c), seed);
        assert_eq!(all.words, ["aa", "bb", "cc", "dd", "e", "f"]);
        let beamed = run_triehh(&population, task(&population, |c| c.with_beam(2)), seed);
        check_trie(&beamed);
        for round in &beamed.accepted {
            let open = round.iter().filter(|p| !p.ends_with(TERMINATOR)).count();
            assert!(open <= 2, "seed {seed}: {round:?}");
        }
        // Round 1 keeps the two first letters with the most votes; "a" and "b" have the most
        // holders, but sampling decides.
        assert_eq!(beamed.accepted[0].len(), 2);
        // Terminal prefixes are never cut by the beam: round 2 keeps "e$" and "f$" if the
        // beam kept "e" and "f", and the two-letter words of the kept first letters.
        assert_eq!(beamed.words.len(), 2);
        assert!(beamed.words.iter().all(|w| all.words.contains(w)));
    }
    // Terminal prefixes do not count against the beam.
    let population = population_with_terminals();
    for seed in 0..10 {
        let out = run_triehh(&population, task(&population, |c| c.with_beam(1)), seed);
        // Round 2: "a$" always kept, and exactly one of "ab", "ac", "ad".
        let round_2 = &out.accepted[1];
        assert!(round_2.contains(&"a$".to_owned()), "{round_2:?}");
        assert_eq!(round_2.len(), 2, "{round_2:?}");
        assert_eq!(out.words.len(), 2);
    }
}

fn population_with_terminals() -> Population {
    population(&[("a", 3000), ("ab", 2000), ("ac", 2000), ("ad", 2000)])
}

#[test]
fn segments_of_two_characters() {
    let population = population(&[
        ("apple", 3000),
        ("apply", 3000),
        ("banana", 3000),
        ("cat", 3000),
        ("zz", 3),
    ]);
    for seed in 0..5 {
        let out = run_triehh(&population, task(&population, |c| c.with_segment(2)), seed);
        assert_eq!(out.words, ["apple", "apply", "banana", "cat"]);
        assert_eq!(out.accepted[0], ["ap", "ba", "ca"]);
        // "cat$" ends inside round 2's segment; "apple$" is complete after round 3 and
        // "banana$" (7 characters) after round 4.
        assert_eq!(out.accepted[1], ["appl", "bana", "cat$"]);
        assert_eq!(out.accepted[2], ["apple$", "apply$", "banana"]);
        assert_eq!(out.accepted[3], ["banana$"]);
        assert_eq!(out.rounds_run, 5);
        check_trie(&out);
    }
}

#[test]
#[should_panic(expected = "configured for 1000 clients")]
fn refuses_a_population_of_another_size() {
    let population = population(&[("a", 999)]);
    let task = TrieHh::new(TrieHhConfig::calibrate(4.0, 1e-6, 3, 1000).unwrap()).unwrap();
    let _ = run_triehh(&population, task, 1);
}

// ---------------------------------------------------------------------------------------------
// The batch is a uniform m-subset, drawn afresh each round.
// ---------------------------------------------------------------------------------------------

fn choose(n: u64, k: u64) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The probability of each acceptance pattern (bit `i` set when word `i` gets at least `θ`
/// votes) when `m` of the clients are drawn without replacement: the votes are multivariate
/// hypergeometric.
fn pattern_probabilities(holders: &[u64], m: u64, theta: u64) -> Vec<f64> {
    let n: u64 = holders.iter().sum();
    let mut probs = vec![0.0; 1 << holders.len()];
    let mut counts = vec![0u64; holders.len()];
    fn walk(
        i: usize,
        left: u64,
        holders: &[u64],
        counts: &mut [u64],
        theta: u64,
        probs: &mut [f64],
        weight: f64,
    ) {
        if i + 1 == holders.len() {
            if left > holders[i] {
                return;
            }
            counts[i] = left;
            let w = weight * choose(holders[i], left);
            let pattern = counts
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c >= theta)
                .fold(0, |p, (j, _)| p | 1 << j);
            probs[pattern] += w;
            return;
        }
        for c in 0..=left.min(holders[i]) {
            counts[i] = c;
            let w = weight * choose(holders[i], c);
            walk(i + 1, left - c, holders, counts, theta, probs, w);
        }
    }
    walk(0, m, holders, &mut counts, theta, &mut probs, 1.0);
    let total = choose(n, m);
    probs.iter().map(|p| p / total).collect()
}

#[test]
fn stat_each_round_votes_with_a_uniform_batch_without_replacement() {
    // n = 100 clients, batches of m = 20, θ = 4, one round: words "a".."d" held by 10, 20,
    // 30, 40 clients. Each word's votes are its sampled holders, so the pattern of accepted
    // words follows the multivariate hypergeometric law of a uniform 20-subset. Sampling with
    // replacement (multinomial votes) would give χ² ≈ 445 on 20000 runs; Poisson sampling
    // (no fixed total) differs as much.
    let holders = [10u64, 20, 30, 40];
    let population = population(&[("a", 10), ("b", 20), ("c", 30), ("d", 40)]);
    let config = TrieHhConfig {
        population: 100,
        rounds: 1,
        segment: 1,
        threshold: 4,
        batch_size: 20,
        beam: None,
    };
    let task = TrieHh::new(config.clone()).unwrap();
    let mut observed = vec![0u64; 16];
    for seed in 0..20_000 {
        let out = run_triehh(&population, task.clone(), seed);
        let pattern = ["a", "b", "c", "d"]
            .iter()
            .enumerate()
            .filter(|(_, w)| out.accepted[0].iter().any(|p| p == *w))
            .fold(0, |p, (j, _)| p | 1 << j);
        observed[pattern] += 1;
    }
    let probs = pattern_probabilities(&holders, 20, 4);
    stats::assert_fits("acceptance patterns of one round", &observed, &probs);

    // Rounds draw fresh batches: with three rounds over one-letter words, the round-2 votes
    // for "a$" are the holders of "a" in a new batch, independent of round 1's. The pattern
    // of round 2 given that "a" was accepted in round 1 has the same law.
    let config = TrieHhConfig {
        rounds: 2,
        ..config
    };
    let task = TrieHh::new(config).unwrap();
    let mut both = 0u64;
    let mut first = 0u64;
    let runs = 20_000;
    for seed in 0..runs {
        let out = run_triehh(&population, task.clone(), seed);
        if out.accepted[0].iter().any(|p| p == "d") {
            first += 1;
            if out
                .accepted
                .get(1)
                .is_some_and(|r| r.iter().any(|p| p == "d$"))
            {
                both += 1;
            }
        }
    }
    let p_d: f64 = probs
        .iter()
        .enumerate()
        .filter(|&(pattern, _)| pattern & 0b1000 != 0)
        .map(|(_, p)| p)
        .sum();
    stats::assert_fits(
        "round 1 accepts d, round 2 accepts d$ given round 1 did",
        &[runs - first, first - both, both],
        &[1.0 - p_d, p_d * (1.0 - p_d), p_d * p_d],
    );
}
