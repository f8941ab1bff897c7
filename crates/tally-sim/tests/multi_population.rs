//! Users with multisets of items: TSV loading, the shipped speakers, the `reddit-like`
//! generator and the OptPrefixTree metrics.

use std::io::Cursor;

use tally_sim::{Error, MultiPopulation, RedditLikeSpec, english_word_frequencies};

#[test]
fn tsv_rows_group_into_multisets() {
    let text = "client_id\titem\nu1\tthe\nu2\tcat\r\nu1\tthe\n\nu1\tdog\nu3\tthe\n";
    let p = MultiPopulation::from_tsv_reader(Cursor::new(text), "t.tsv").unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(p.data_points(), 5);
    let the = p.item_id("the").unwrap();
    let dog = p.item_id("dog").unwrap();
    let (items, multiplicities) = p.user(0);
    let mut held: Vec<(u32, u32)> = items
        .iter()
        .copied()
        .zip(multiplicities.iter().copied())
        .collect();
    held.sort_unstable();
    let mut expected = vec![(the, 2), (dog, 1)];
    expected.sort_unstable();
    assert_eq!(held, expected);
    assert_eq!(p.total(the), 3);
    assert_eq!(p.holders(the), 2);
    assert_eq!(p.users().len(), 3);
    assert_eq!(p.top_items(1), vec![("the".to_owned(), 3)]);
}

#[test]
fn tsv_errors_name_the_line() {
    let err =
        MultiPopulation::from_tsv_reader(Cursor::new("a\tb\nno tab\n"), "bad.tsv").unwrap_err();
    assert!(matches!(err, Error::MalformedRow { line: 2, .. }), "{err}");
    let err =
        MultiPopulation::from_tsv_reader(Cursor::new("client_id\titem\n"), "e.tsv").unwrap_err();
    assert!(matches!(err, Error::Empty { .. }), "{err}");
}

#[test]
fn shakespeare_speakers_hold_all_their_words() {
    let p = MultiPopulation::dataset("shakespeare").unwrap();
    assert_eq!(p.len(), 1419);
    assert_eq!(p.data_points(), 835_229);
    let the = p.item_id("the").unwrap();
    // data/README.md: `the` has 27,586 tokens and is used by 1,161 speakers.
    assert_eq!(p.total(the), 27_586);
    assert_eq!(p.holders(the), 1161);
    assert!(MultiPopulation::dataset("nope").is_err());
}

#[test]
fn metrics_count_mass_support_and_false_positives() {
    let p = MultiPopulation::from_users(
        [vec!["a", "a", "b"], vec!["a", "c"], vec!["c"]],
        "test users",
    );
    // 6 data points: a 3, b 1, c 2; holders a 2, b 1, c 2 (sum 5).
    assert!((p.captured_mass(["a", "zzz", "a"]) - 0.5).abs() < 1e-12);
    assert!((p.captured_user_mass(["a", "b"]) - 0.6).abs() < 1e-12);
    assert_eq!(p.false_positives(["a", "zzz", "zzz", "q"]), 2);
    assert!((p.captured_mass(["a", "b", "c"]) - 1.0).abs() < 1e-12);
}

#[test]
fn reddit_like_spec_parses() {
    let spec: RedditLikeSpec = "reddit-like:users=1000,mean_items=30".parse().unwrap();
    assert_eq!(
        spec,
        RedditLikeSpec {
            users: 1000,
            mean_items: 30.0
        }
    );
    assert_eq!(spec.to_string(), "reddit-like:users=1000,mean_items=30");
    for bad in [
        "reddit-like:users=0,mean_items=3",
        "reddit-like:users=10",
        "reddit-like:users=10,mean_items=0.5",
        "reddit-like:users=10,mean_items=3,x=1",
        "zipf:n=10",
    ] {
        assert!(bad.parse::<RedditLikeSpec>().is_err(), "{bad}");
    }
}

#[test]
fn reddit_like_is_seeded_heterogeneous_and_thread_independent() {
    let spec = RedditLikeSpec {
        users: 20_000,
        mean_items: 30.0,
    };
    let generate = |threads: usize, seed: u64| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| MultiPopulation::reddit_like(&spec, seed))
    };
    let one = generate(1, 7);
    let two = generate(2, 7);
    assert_eq!(one.len(), 20_000);
    assert_eq!(one.data_points(), two.data_points());
    for u in [0, 1, 4095, 4096, 19_999] {
        assert_eq!(one.user(u), two.user(u));
    }
    assert_ne!(generate(2, 8).data_points(), one.data_points());
    // The mean size is K (the log-normal has a heavy tail: allow 5%).
    let mean = one.data_points() as f64 / one.len() as f64;
    assert!((mean - 30.0).abs() < 1.5, "mean items {mean}");
    let sizes: Vec<u32> = (0..one.len()).map(|u| one.user(u).1.iter().sum()).collect();
    assert_eq!(*sizes.iter().min().unwrap(), 1);
    assert!(*sizes.iter().max().unwrap() > 300);
    // The global distribution shows through: `the` is the most frequent word.
    assert_eq!(one.top_items(1)[0].0, "the");
    assert_eq!(one.vocabulary().len(), english_word_frequencies().len());
    // The personal tilt: users repeat words more than independent global draws would.
    let repeats: u64 = (0..one.len())
        .map(|u| one.user(u).1.iter().map(|&m| u64::from(m - 1)).sum::<u64>())
        .sum();
    assert!(repeats as f64 > 0.2 * one.data_points() as f64, "{repeats}");
}

#[test]
fn english_word_list_is_filtered() {
    let words = english_word_frequencies();
    assert_eq!(words.len(), 9919);
    assert_eq!(words[0].0, "the");
    assert!(
        words
            .iter()
            .all(|(w, f)| !w.is_empty() && *f > 0.0 && !w.contains('0'))
    );
}
