//! TrieHH (docs/algorithms.md §2): calibration through `tally-accounting` (the §2.3 table), the
//! task as a state machine driven by hand-made releases, the aggregator's threshold and beam, the
//! TFF unit-test vectors of §2.5, and the fixed-size sampler (`uniform_subset`) checked to be
//! an exactly uniform subset at α = 1e-6.

#[allow(dead_code)]
mod common;

use common::{assert_fits, assert_proportion};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{Discrete, Hypergeometric};
use tally_accounting::Neighbours;
use tally_accounting::triehh::ThetaRule;
use tally_core::Error;
use tally_core::heavy_hitters::tff::{
    ServerState, TffConfig, VoteMatrix, extend_prefixes, extended_prefix_candidates, top_elements,
};
use tally_core::heavy_hitters::{
    TRIEHH_ANALYSIS, TrieHh, TrieHhAggregator, TrieHhConfig, TrieHhQuery,
};
use tally_core::sampling::uniform_subset;
use tally_core::task::Task;

const N: u64 = 1_000_000;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// `x` rounded to `digits` significant digits.
fn sig(x: f64, digits: i32) -> f64 {
    let scale = 10_f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

fn config(threshold: u64, batch_size: u64, rounds: usize) -> TrieHhConfig {
    TrieHhConfig {
        population: N,
        rounds,
        segment: 1,
        threshold,
        batch_size,
        beam: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Calibration: docs/algorithms.md §2.3 through TrieHhConfig::calibrate and TrieHh::new.
// ---------------------------------------------------------------------------------------------

#[test]
fn test_vec_section_2_3_table_through_the_task() {
    // (δ, ε, L, θ, m at n = 10^6, (θ−2)/((θ−3)θ!) to 3 digits)
    let table = [
        (2.3e-12, 4.0, 10, 15, 21_978, 8.28e-13_f64),
        (2.3e-12, 1.0, 10, 15, 6_344, 8.28e-13),
        (1e-6, 1.0, 10, 10, 9_516, 3.15e-7),
        (1e-8, 2.0, 10, 12, 15_105, 2.32e-9),
    ];
    for (delta, epsilon, rounds, theta, m, theta_delta) in table {
        for rule in [None, Some(ThetaRule::ClosedForm)] {
            let config = match rule {
                None => TrieHhConfig::calibrate(epsilon, delta, rounds, N).unwrap(),
                Some(rule) => {
                    TrieHhConfig::calibrate_with(epsilon, delta, rounds, N, rule).unwrap()
                }
            };
            assert_eq!(
                (config.threshold, config.batch_size),
                (theta, m),
                "δ = {delta}, ε = {epsilon}, {rule:?}"
            );
            assert_eq!(
                (config.rounds, config.segment, config.beam),
                (rounds, 1, None)
            );
            let mut task = TrieHh::new(config).unwrap();
            let g = task.guarantee().clone();
            assert!(g.epsilon <= epsilon && g.delta <= delta, "{g:?}");
            assert!(g.epsilon > 0.999 * epsilon, "m is the largest batch: {g:?}");
            assert_eq!(sig(g.delta, 3).to_bits(), theta_delta.to_bits(), "{g:?}");
            assert_eq!(g.neighbours, Neighbours::ReplaceOne);
            assert_eq!(g.analysis, TRIEHH_ANALYSIS);
            // The query carries exactly the calibrated batch and threshold, every round.
            let query = task.next_query().unwrap();
            assert_eq!(
                (query.batch_size, query.threshold, query.population),
                (m, theta, N)
            );
        }
    }
}

#[test]
fn guarantee_of_given_parameters_follows_the_theorem() {
    // ε = −L ln(1 − θm/n), δ = (θ−2)/((θ−3)θ!): θ = 12, m = 15105, L = 5.
    let task = TrieHh::new(config(12, 15_105, 5)).unwrap();
    let g = task.guarantee();
    let epsilon = -5.0 * (-(12.0 * 15_105.0) / 1e6_f64).ln_1p();
    assert!(
        g.epsilon >= epsilon && g.epsilon <= epsilon * (1.0 + 1e-9),
        "{g:?}"
    );
    assert_eq!(sig(g.delta, 3).to_bits(), 2.32e-9_f64.to_bits());
    // Segments and beams do not change the guarantee.
    let other = TrieHh::new(TrieHhConfig {
        segment: 3,
        beam: Some(4),
        ..config(12, 15_105, 5)
    })
    .unwrap();
    assert_eq!(other.guarantee(), g);
}

#[test]
fn invalid_configurations_are_rejected() {
    let name = |config: TrieHhConfig| match TrieHh::new(config) {
        Err(Error::InvalidParameter { name, .. }) => name.to_owned(),
        Err(Error::Accounting(e)) => format!("accounting: {e}"),
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => "ok".to_owned(),
    };
    assert_eq!(name(config(12, 15_105, 0)), "rounds");
    assert_eq!(name(config(0, 15_105, 5)), "threshold");
    assert_eq!(name(config(12, 0, 5)), "batch_size");
    assert_eq!(name(config(12, N + 1, 5)), "batch_size");
    assert_eq!(
        name(TrieHhConfig {
            segment: 0,
            ..config(12, 15_105, 5)
        }),
        "segment"
    );
    assert_eq!(
        name(TrieHhConfig {
            beam: Some(0),
            ..config(12, 15_105, 5)
        }),
        "beam"
    );
    // Outside the theorem: θ < 4, θ > √n, m > n/(θ+1).
    for bad in [
        config(3, 100, 5),
        config(1001, 100, 5),
        config(12, N / 13 + 1, 5),
    ] {
        assert!(name(bad).starts_with("accounting"));
    }
    assert_eq!(name(config(12, N / 13, 5)), "ok");
    // Corollary 1 with a batch below θ.
    assert!(matches!(
        TrieHhConfig::calibrate(0.001, 1e-8, 10, 1000),
        Err(Error::Accounting(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// The task as a state machine.
// ---------------------------------------------------------------------------------------------

fn respond(query: &TrieHhQuery, word: &str) -> Option<String> {
    query.respond(word)
}

#[test]
fn task_extends_only_accepted_prefixes_and_stops_when_nothing_is_new() {
    let mut task = TrieHh::new(config(12, 15_105, 10)).unwrap();
    let q = task.next_query().unwrap();
    assert_eq!(q.prefixes.round, 1);
    assert_eq!(respond(&q, "abc").as_deref(), Some("a"));
    assert_eq!(respond(&q, "").as_deref(), Some("$"));
    task.observe(strings(&["b", "a", "x$", "a"]));

    let q = task.next_query().unwrap();
    assert_eq!(q.prefixes.round, 2);
    assert_eq!(respond(&q, "abc").as_deref(), Some("ab"));
    assert_eq!(respond(&q, "a").as_deref(), Some("a$"));
    assert_eq!(respond(&q, "zzz"), None); // "z" was not accepted
    assert_eq!(respond(&q, "x"), None); // "x$" is a complete word, not a parent
    task.observe(strings(&["ab", "a$"]));

    let q = task.next_query().unwrap();
    assert_eq!(respond(&q, "abc").as_deref(), Some("abc"));
    assert_eq!(respond(&q, "ab").as_deref(), Some("ab$"));
    assert_eq!(respond(&q, "bcd"), None); // "bc" was not accepted
    task.observe(Vec::new());

    assert!(task.next_query().is_none());
    assert!(task.next_query().is_none());
    let out = task.finish();
    assert_eq!(out.words, strings(&["a", "x"]));
    assert_eq!(
        out.accepted,
        vec![
            strings(&["a", "b", "x$"]),
            strings(&["a$", "ab"]),
            Vec::new()
        ]
    );
    assert_eq!(out.rounds_run, 3);
    assert_eq!(out.config, config(12, 15_105, 10));
}

#[test]
fn task_runs_at_most_l_rounds() {
    let mut task = TrieHh::new(config(12, 15_105, 2)).unwrap();
    for prefix in ["a", "ab"] {
        assert!(task.next_query().is_some());
        task.observe(strings(&[prefix]));
    }
    assert!(task.next_query().is_none());
    let out = task.finish();
    assert_eq!(out.rounds_run, 2);
    assert!(out.words.is_empty(), "no terminal prefix was accepted");
}

// ---------------------------------------------------------------------------------------------
// The aggregator: threshold, beam, shards.
// ---------------------------------------------------------------------------------------------

fn aggregator(threshold: u64, beam: Option<usize>, votes: &[(&str, u64)]) -> TrieHhAggregator {
    let mut task = TrieHh::new(TrieHhConfig {
        beam,
        ..config(threshold, 15_105, 5)
    })
    .unwrap();
    let mut aggregator = task.next_query().unwrap().aggregator();
    for &(prefix, count) in votes {
        aggregator.absorb_many(prefix.to_owned(), count);
    }
    aggregator
}

const VOTES: &[(&str, u64)] = &[
    ("d", 12),
    ("a", 20),
    ("e", 11),
    ("c", 15),
    ("b", 15),
    ("a$", 12),
    ("z$", 30),
    ("q$", 3),
];

#[test]
fn aggregator_releases_the_prefixes_reaching_the_threshold_in_str_order() {
    assert_eq!(
        aggregator(12, None, VOTES).release(),
        strings(&["a", "a$", "b", "c", "d", "z$"])
    );
    // One vote at a time, in two shards, gives the same release.
    let mut one = aggregator(12, None, &[]);
    let mut two = aggregator(12, None, &[]);
    for (i, &(prefix, count)) in VOTES.iter().enumerate() {
        for _ in 0..count {
            if i % 2 == 0 {
                one.absorb(prefix.to_owned());
            } else {
                two.absorb(prefix.to_owned());
            }
        }
    }
    one.merge(two);
    assert_eq!(one.release(), strings(&["a", "a$", "b", "c", "d", "z$"]));
    assert!(
        aggregator(12, None, &[("a", 11), ("b", 0)])
            .release()
            .is_empty()
    );
}

#[test]
fn beam_keeps_the_top_non_terminal_prefixes_and_every_terminal_one() {
    // Non-terminal and accepted: a 20, b 15, c 15, d 12. Beam 2: a, then b (ties by prefix).
    assert_eq!(
        aggregator(12, Some(2), VOTES).release(),
        strings(&["a", "a$", "b", "z$"])
    );
    assert_eq!(
        aggregator(12, Some(1), VOTES).release(),
        strings(&["a", "a$", "z$"])
    );
    assert_eq!(
        aggregator(12, Some(3), VOTES).release(),
        strings(&["a", "a$", "b", "c", "z$"])
    );
    // A beam at least the number of accepted prefixes changes nothing.
    for beam in [4, 100] {
        assert_eq!(
            aggregator(12, Some(beam), VOTES).release(),
            aggregator(12, None, VOTES).release()
        );
    }
    // The beam never admits a prefix below the threshold.
    assert_eq!(
        aggregator(16, Some(3), VOTES).release(),
        strings(&["a", "z$"])
    );
}

// ---------------------------------------------------------------------------------------------
// TFF TrieHH: the unit-test vectors of `triehh_tf_test.py` (docs/algorithms.md §2.5).
// ---------------------------------------------------------------------------------------------

fn rows(matrix: &VoteMatrix) -> Vec<Vec<u64>> {
    (0..matrix.rows()).map(|i| matrix.row(i).to_vec()).collect()
}

fn matrix(rows: &[&[u64]]) -> VoteMatrix {
    VoteMatrix::from_rows(rows).unwrap()
}

const ABCDE: &[char] = &['a', 'b', 'c', 'd', 'e'];

#[test]
fn test_vec_tff_client_votes() {
    // test_client_update_works_as_expected: round 1, one sub-round, 10 prefixes, 10 words.
    let config = TffConfig::new(ABCDE, 10, 10, 1, 1).unwrap();
    let words = ["a", "", "abc", "bac", "abb", "aaa", "acc", "hi"];
    let votes = config
        .client_votes(&words, &strings(&["a", "b", "c", "d", "e"]), 1)
        .unwrap();
    let mut expected = vec![vec![0u64; 6]; 10];
    expected[0] = vec![1, 2, 1, 0, 0, 1]; // aa, ab ×2, ac, a$
    expected[1] = vec![1, 0, 0, 0, 0, 0]; // ba
    assert_eq!(rows(&votes), expected);
    // test_client_update_works_on_empty_local_datasets / _on_empty_discovered_prefixes.
    let none: [&str; 0] = [];
    let zeros = vec![vec![0u64; 6]; 10];
    let discovered = strings(&["a", "b", "c", "d", "e"]);
    assert_eq!(
        rows(&config.client_votes(&none, &discovered, 1).unwrap()),
        zeros
    );
    assert_eq!(rows(&config.client_votes(&words, &[], 1).unwrap()), zeros);
}

#[test]
fn tff_client_keeps_its_most_frequent_words_lower_cased() {
    let words = ["b", "a", "C", "a", "c", "c", "a", "b", "d"];
    assert_eq!(top_elements(&words, 10), ["b", "a", "C", "c", "d"]);
    // a 3, b 2, c 2, C 1, d 1: ties in order of first appearance.
    assert_eq!(top_elements(&words, 2), ["a", "b"]);
    assert_eq!(top_elements(&words, 3), ["a", "b", "c"]);
    // With max_user_contribution = 2 the client votes for its words "a" and "b" only; "C" is
    // lower-cased into a second vote for "c" when it is kept.
    let config = TffConfig::new(ABCDE, 3, 2, 1, 1).unwrap();
    let votes = config.client_votes(&words, &strings(&[""]), 0).unwrap();
    assert_eq!(votes.row(0), [1, 1, 0, 0, 0, 0]);
    let config = TffConfig::new(ABCDE, 3, 10, 1, 1).unwrap();
    let votes = config.client_votes(&words, &strings(&[""]), 0).unwrap();
    assert_eq!(votes.row(0), [1, 1, 2, 1, 0, 0]);
}

#[test]
fn test_vec_tff_extend_prefixes() {
    let abcd = ['a', 'b', 'c', 'd'];
    let discovered = strings(&["a", "b", "c"]);
    assert_eq!(
        extended_prefix_candidates(&discovered, &abcd),
        strings(&[
            "aa", "ab", "ac", "ad", "ba", "bb", "bc", "bd", "ca", "cb", "cc", "cd"
        ])
    );
    let votes = [4, 2, 3, 0, 7, 1, 0, 0, 0, 0, 0, 8];
    // Threshold 1, at most 3: the top three by votes.
    let mut got = extend_prefixes(&votes, &discovered, &abcd, 3, 1);
    got.sort();
    assert_eq!(got, strings(&["aa", "ba", "cd"]));
    // Threshold 3, at most 20: the threshold alone.
    assert_eq!(
        extend_prefixes(&votes, &discovered, &abcd, 20, 3),
        strings(&["aa", "ac", "ba", "cd"])
    );
}

fn su_st_state(num_sub_rounds: u64, threshold: u64) -> (TffConfig, ServerState) {
    let config =
        TffConfig::new(&['a', 'n', 's', 't', 'u'], 4, 10, num_sub_rounds, threshold).unwrap();
    let accumulated = matrix(&[
        &[1, 2, 1, 0, 0, 0],
        &[1, 2, 1, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0],
    ]);
    (
        config,
        ServerState::resume(strings(&["su", "st"]), 3, accumulated),
    )
}

#[test]
fn test_vec_tff_sub_round_accumulation_and_decoding() {
    let sub_round = matrix(&[
        &[3, 3, 1, 0, 0, 0],
        &[5, 1, 1, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0],
        &[0, 0, 0, 0, 0, 0],
    ]);
    // Accumulated [[4,5,2,0,0,0],[6,3,2,0,0,0]]: sua 4, sun 5, sus 2, sta 6, stn 3, sts 2.
    for (threshold, expected) in [
        (1, &["sta", "stn", "sua", "sun"][..]),
        (5, &["sta", "sun"][..]),
    ] {
        // Round 3 with 2 (or 1) sub-rounds per round: (3 + 1) is a multiple, so it decodes.
        for sub_rounds in [1, 2] {
            let (config, mut state) = su_st_state(sub_rounds, threshold);
            config.server_update(&mut state, &sub_round).unwrap();
            let mut discovered = state.discovered_prefixes().to_vec();
            discovered.sort();
            assert_eq!(discovered, strings(expected), "threshold {threshold}");
            assert!(state.heavy_hitters().is_empty());
            assert_eq!(rows(state.accumulated_votes()), vec![vec![0; 6]; 4]);
            assert_eq!(state.round_num(), 4);
        }
    }
}

#[test]
fn test_vec_tff_sub_rounds_accumulate_without_decoding() {
    // test_server_update_does_not_decode_in_a_subround: round 0 of 2 sub-rounds.
    let config = TffConfig::new(ABCDE, 10, 10, 2, 1).unwrap();
    let mut state = config.initial_state();
    let mut sub_rows = vec![vec![0u64; 6]; 10];
    sub_rows[0] = vec![1, 2, 1, 2, 0, 0];
    sub_rows[1] = vec![2, 0, 0, 0, 0, 0];
    let refs: Vec<&[u64]> = sub_rows.iter().map(Vec::as_slice).collect();
    let sub_round = matrix(&refs);
    config.server_update(&mut state, &sub_round).unwrap();
    assert_eq!(state.discovered_prefixes(), strings(&[""]));
    assert_eq!(rows(state.accumulated_votes()), sub_rows);
    assert_eq!(state.round_num(), 1);
    // test_accumulate_server_votes_works_as_expected: the next sub-round adds up, then decodes.
    config.server_update(&mut state, &sub_round).unwrap();
    assert_eq!(state.round_num(), 2);
    assert_eq!(state.discovered_prefixes(), strings(&["a", "b", "c", "d"]));
    // A sub-round of the wrong shape is refused.
    assert!(
        config
            .server_update(&mut state, &VoteMatrix::zeros(3, 6))
            .is_err()
    );
}

#[test]
fn test_vec_tff_server_update() {
    let sub_round = |first: &[u64], second: &[u64], third: &[u64], columns: usize| {
        let mut all = vec![first.to_vec(), second.to_vec(), third.to_vec()];
        all.resize(10, vec![0; columns]);
        let refs: Vec<&[u64]> = all.iter().map(Vec::as_slice).collect();
        matrix(&refs)
    };
    // test_server_update_works_as_expected / _threshold_works_as_expected.
    for (threshold, expected) in [
        (
            1,
            &["aa", "ab", "ac", "ad", "ae", "ba", "bb", "bc", "bd", "be"][..],
        ),
        (5, &["aa", "ab", "ac", "ad", "ae", "ba"][..]),
    ] {
        let config = TffConfig::new(ABCDE, 10, 10, 1, threshold).unwrap();
        let mut state =
            ServerState::resume(strings(&["a", "b", "c", "d", "e"]), 1, config.zero_votes());
        let votes = sub_round(&[10, 9, 8, 7, 6, 0], &[5, 4, 3, 2, 1, 0], &[0; 6], 6);
        config.server_update(&mut state, &votes).unwrap();
        assert_eq!(state.discovered_prefixes(), strings(expected));
        assert!(state.heavy_hitters().is_empty());
    }
    // test_server_update_finds_heavy_hitters / _with_threshold: 20 candidates, 10 kept at most.
    for (threshold, expected, heavy) in [
        (
            1,
            &["aa", "ab", "ac", "ad", "ba", "bb", "bc", "ca", "cb"][..],
            vec![("a".to_owned(), 6), ("b".to_owned(), 4)],
        ),
        (
            5,
            &["aa", "ab", "ac", "ad", "ba"][..],
            vec![("a".to_owned(), 6)],
        ),
    ] {
        let config = TffConfig::new(&['a', 'b', 'c', 'd'], 10, 10, 1, threshold).unwrap();
        let mut state =
            ServerState::resume(strings(&["a", "b", "c", "d", "$"]), 1, config.zero_votes());
        let votes = sub_round(&[10, 9, 8, 7, 6], &[5, 4, 3, 0, 4], &[2, 1, 0, 0, 0], 5);
        config.server_update(&mut state, &votes).unwrap();
        assert_eq!(state.discovered_prefixes(), strings(expected));
        assert_eq!(state.heavy_hitters(), heavy);
    }
    // test_server_update_works_on_empty_discovered_prefixes: nothing changes.
    let config = TffConfig::new(ABCDE, 10, 10, 1, 1).unwrap();
    let mut state = ServerState::resume(Vec::new(), 1, config.zero_votes());
    let votes = sub_round(&[10, 9, 8, 7, 6, 0], &[0; 6], &[0; 6], 6);
    config.server_update(&mut state, &votes).unwrap();
    assert!(state.is_done());
    assert_eq!(state.round_num(), 1);
    assert_eq!(rows(state.accumulated_votes()), vec![vec![0; 6]; 10]);
}

#[test]
fn tff_end_to_end_finds_the_shared_words() {
    // Four clients, two sub-rounds per round: "sun" and "star" are held by three clients
    // each, "moon" by one; with threshold 2 × 3 (every client votes in both sub-rounds).
    let clients: [&[&str]; 4] = [
        &["sun", "star", "Sun"],
        &["sun", "moon"],
        &["star", "sun"],
        &["star"],
    ];
    let alphabet: Vec<char> = ('a'..='z').collect();
    let config = TffConfig::new(&alphabet, 8, 2, 2, 6).unwrap();
    let mut state = config.initial_state();
    while !state.is_done() && state.round_num() < 40 {
        let mut sum = config.zero_votes();
        for words in clients {
            let votes = config
                .client_votes(words, state.discovered_prefixes(), state.round_num())
                .unwrap();
            sum.accumulate(&votes).unwrap();
        }
        config.server_update(&mut state, &sum).unwrap();
    }
    assert!(state.is_done());
    let mut words: Vec<&str> = state
        .heavy_hitters()
        .iter()
        .map(|(w, _)| w.as_str())
        .collect();
    words.sort_unstable();
    assert_eq!(words, ["star", "sun"]);
    assert!(state.heavy_hitters().iter().all(|&(_, count)| count == 6));
}

#[test]
fn tff_configurations_are_validated() {
    assert!(TffConfig::new(&[], 10, 10, 1, 1).is_err());
    assert!(TffConfig::new(&['a', '$'], 10, 10, 1, 1).is_err());
    assert!(TffConfig::new(&['a', 'a'], 10, 10, 1, 1).is_err());
    assert!(TffConfig::new(&['a'], 0, 10, 1, 1).is_err());
    assert!(TffConfig::new(&['a'], 10, 0, 1, 1).is_err());
    assert!(TffConfig::new(&['a'], 10, 10, 0, 1).is_err());
    let config = TffConfig::new(&['a'], 1, 10, 1, 1).unwrap();
    assert!(
        config
            .client_votes(&["a"], &strings(&["a", "b"]), 1)
            .is_err()
    );
    assert!(VoteMatrix::from_rows(&[&[1, 2], &[3]]).is_err());
}

// ---------------------------------------------------------------------------------------------
// The fixed-size sampler: every m-subset equally likely.
// ---------------------------------------------------------------------------------------------

#[test]
fn value_stability_uniform_subset() {
    let mut rng = ChaCha20Rng::seed_from_u64(20261122);
    let small = uniform_subset(50, 6, &mut rng).unwrap();
    let complement = uniform_subset(12, 9, &mut rng).unwrap();
    let sparse = uniform_subset(1 << 40, 3, &mut rng).unwrap();
    let got = format!("{small:?} {complement:?} {sparse:?}");
    assert_eq!(
        got,
        "[5, 12, 17, 23, 34, 44] [0, 1, 2, 3, 6, 8, 9, 10, 11] \
         [363223614617, 392272409240, 835547716174]",
        "\n{got}"
    );
}

/// Draws `draws` subsets of size `s` of `0..n`, returning inclusion counts per bucket of
/// `n / buckets` consecutive indices (`n` a multiple of `buckets`), and checks each subset's
/// size, order and range.
fn bucket_inclusions(n: u64, s: u64, buckets: u64, draws: u64, seed: u64) -> Vec<u64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut counts = vec![0u64; buckets as usize];
    for _ in 0..draws {
        let subset = uniform_subset(n, s, &mut rng).unwrap();
        assert_eq!(subset.len() as u64, s);
        assert!(subset.windows(2).all(|w| w[0] < w[1]));
        assert!(subset.last().is_none_or(|&i| i < n));
        for i in subset {
            counts[(u128::from(i) * u128::from(buckets) / u128::from(n)) as usize] += 1;
        }
    }
    counts
}

#[test]
fn stat_uniform_subset_includes_every_client_equally_often() {
    // The bitset path (TrieHH's n = 10^6, m = 15105), the hash path (n = 2^40) and the
    // complement path (s > n/2), 100 buckets of equal size each.
    for (n, s, draws, seed) in [
        (1_000_000u64, 15_105u64, 100u64, 11u64),
        (100 << 34, 200, 5_000, 12),
        (1_000, 700, 2_000, 13),
    ] {
        let counts = bucket_inclusions(n, s, 100, draws, seed);
        assert_fits(
            &format!("uniform_subset({n}, {s}) inclusions per bucket"),
            seed,
            &counts,
            &[0.01; 100],
        );
    }
}

#[test]
fn stat_uniform_subset_is_a_uniform_subset() {
    // n = 40, s = 8: the overlap with a fixed set of 10 clients is Hypergeometric(40, 10, 8),
    // each client is included with probability s/n, and each pair with s(s−1)/(n(n−1)).
    let (n, s, draws, seed) = (40u64, 8u64, 200_000u64, 14u64);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut overlap = vec![0u64; 9];
    let mut single = vec![0u64; n as usize];
    let (mut pair_near, mut pair_far) = (0, 0);
    for _ in 0..draws {
        let subset = uniform_subset(n, s, &mut rng).unwrap();
        overlap[subset.iter().filter(|&&i| i < 10).count()] += 1;
        for &i in &subset {
            single[i as usize] += 1;
        }
        let has = |i| subset.binary_search(&i).is_ok();
        pair_near += u64::from(has(0) && has(1));
        pair_far += u64::from(has(3) && has(38));
    }
    let hypergeometric = Hypergeometric::new(n, 10, s).unwrap();
    let probs: Vec<f64> = (0..=8).map(|k| hypergeometric.pmf(k)).collect();
    assert_fits("overlap with 10 fixed clients", seed, &overlap, &probs);
    assert_fits(
        "inclusions per client",
        seed,
        &single,
        &[1.0 / n as f64; 40],
    );
    let pair = (s * (s - 1)) as f64 / (n * (n - 1)) as f64;
    assert_proportion("pair (0, 1) included", seed, pair_near, draws, pair);
    assert_proportion("pair (3, 38) included", seed, pair_far, draws, pair);
}
