//! Statistical tests of the keyed coins and the keyed row choice of `tally_core::sampling`, at
//! significance level 1e-6 each, with fixed keys (so they are deterministic), plus a pin of the
//! keyed outputs and the vectors of the independent reference `tools/reference/keyed.py`: the
//! command line, the Python package and Spark must agree on them.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::{assert_fits, assert_proportion};
use tally_core::sampling::{
    KeyedCoin, SamplingKey, choose_items, choose_row, keyed_rate, row_score,
};

fn key(secret: &str) -> SamplingKey {
    SamplingKey::derive(secret.as_bytes()).expect("non-empty secret")
}

/// How many of the clients `0..n` (decimal ids) the coin samples in `round`.
fn heads(coin: &KeyedCoin, round: u64, n: u64) -> u64 {
    (0..n)
        .filter(|client| coin.flip(round, client.to_string().as_bytes()))
        .count() as u64
}

#[test]
fn coin_frequency_matches_the_rate_used() {
    for (secret, rate, n) in [
        ("alpha", 0.3, 400_000),
        ("beta", 0.01, 1_000_000),
        ("gamma", 1e-5 + 3e-21, 2_000_000),
    ] {
        let coin = KeyedCoin::new(key(secret), rate).unwrap();
        let used = coin.rate();
        assert_eq!(used.to_bits(), keyed_rate(rate).unwrap().to_bits());
        assert!(used <= rate);
        let what = format!("keyed coin {secret} at rate {rate}");
        assert_proportion(&what, 0, heads(&coin, 0, n), n, used);
    }
}

#[test]
fn coins_of_two_rounds_are_independent() {
    // The four outcomes of (round 0, round 1) for each client against the product of the
    // marginals.
    let coin = KeyedCoin::new(key("rounds"), 0.25).unwrap();
    let mut cells = [0u64; 4];
    for client in 0..400_000u32 {
        let id = client.to_string();
        let cell =
            usize::from(coin.flip(0, id.as_bytes())) * 2 + usize::from(coin.flip(1, id.as_bytes()));
        cells[cell] += 1;
    }
    let p = coin.rate();
    let probs = [(1.0 - p) * (1.0 - p), (1.0 - p) * p, p * (1.0 - p), p * p];
    assert_fits("two rounds' coins", 0, &cells, &probs);
}

#[test]
fn the_chosen_row_is_uniform_over_the_rows() {
    // Rows a, a, b, c, d, a: a is chosen with probability 1/2, b, c and d with 1/6 each.
    let rows = ["a", "b", "a", "c", "d", "a"];
    let key = key("rows");
    let mut counts = [0u64; 4];
    for client in 0..300_000u32 {
        let row = choose_row(&key, 7, client.to_string().as_bytes(), &rows).unwrap();
        counts[usize::from(rows[row].as_bytes()[0] - b'a')] += 1;
    }
    assert_fits(
        "keyed row choice",
        0,
        &counts,
        &[0.5, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0],
    );
}

#[test]
fn keyed_outputs_are_pinned() {
    // A change here changes every keyed sample: the CLI, Python and Spark runs of the same key
    // would no longer agree with releases made before it.
    let coin = KeyedCoin::new(key("pin"), 0.5).unwrap();
    let bits: String = (0..32u32)
        .map(|c| {
            if coin.flip(3, c.to_string().as_bytes()) {
                '1'
            } else {
                '0'
            }
        })
        .collect();
    let score = row_score(&key("pin"), 3, b"client", b"item", 1);
    assert_eq!(
        format!("{bits} {score:016x}"),
        "00000001000111111101011011010010 3301c541783fa5cb"
    );
}

/// The vectors written by `python3 tools/reference/keyed.py` (a pure-Python SipHash-2-4 and
/// BLAKE3 key derivation).
fn reference() -> serde_json::Value {
    serde_json::from_str(include_str!("test_vectors/keyed.json")).expect("valid JSON")
}

#[test]
fn coins_match_the_independent_reference() {
    let vectors = reference();
    let cases = vectors["coins"].as_array().unwrap();
    assert_eq!(cases.len(), 20);
    for case in cases {
        let secret = case["secret"].as_str().unwrap();
        let rate: f64 = case["rate"].as_str().unwrap().parse().unwrap();
        let threshold: u64 = case["threshold"].as_str().unwrap().parse().unwrap();
        let round = case["round"].as_u64().unwrap();
        let coin = KeyedCoin::new(key(secret), rate).unwrap();
        assert_eq!(
            coin.rate().to_bits(),
            (threshold as f64 * 2f64.powi(-64)).to_bits(),
            "{case}"
        );
        let bits: String = (0..64u32)
            .map(|c| {
                if coin.flip(round, c.to_string().as_bytes()) {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(bits, case["coins"].as_str().unwrap(), "{case}");
    }
}

#[test]
fn row_choices_match_the_independent_reference() {
    let vectors = reference();
    let key = key(vectors["row_secret"].as_str().unwrap());
    for case in vectors["rows"].as_array().unwrap() {
        let client = case["client"].as_str().unwrap();
        let items: Vec<&str> = case["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item.as_str().unwrap())
            .collect();
        let first = items.iter().min().unwrap();
        let score: u64 = case["score_first_row"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            row_score(&key, 0, client.as_bytes(), first.as_bytes(), 0),
            score,
            "{case}"
        );
        let row = choose_row(&key, 0, client.as_bytes(), &items).unwrap();
        assert_eq!(items[row], case["chosen"].as_str().unwrap(), "{case}");
    }
}

#[test]
fn bounded_items_and_their_coins_match_the_independent_reference() {
    let vectors = reference();
    let key = key(vectors["row_secret"].as_str().unwrap());
    let coin = KeyedCoin::new(key.clone(), vectors["item_coin_rate"].as_f64().unwrap()).unwrap();
    for case in vectors["bounded"].as_array().unwrap() {
        let client = case["client"].as_str().unwrap();
        let items: Vec<&str> = case["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item.as_str().unwrap())
            .collect();
        let max_items = u32::try_from(case["max_items"].as_u64().unwrap()).unwrap();
        let mut chosen: Vec<&str> = choose_items(&key, 2, client.as_bytes(), &items, max_items)
            .into_iter()
            .map(|position| items[position])
            .collect();
        chosen.sort_unstable();
        let expected: Vec<&str> = case["chosen"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item.as_str().unwrap())
            .collect();
        assert_eq!(chosen, expected, "{case}");
        let bits: String = items
            .iter()
            .map(|item| {
                if coin.flip_item(2, client.as_bytes(), item.as_bytes()) {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(bits, case["item_coins"].as_str().unwrap(), "{case}");
    }
}
