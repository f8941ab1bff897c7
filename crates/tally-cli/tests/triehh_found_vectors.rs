//! The TrieHH++ planner's `P[found]`, recall@k, expected number of words found and mean absolute
//! error against the vectors of the independent scipy reference (`python3
//! tools/reference/triehh_found.py` writes `tests/test_vectors/triehh_found/`).

use serde_json::Value;
use tally_accounting::key_selection::KeySelection;
use tally_accounting::sample_threshold::SampleThresholdParams;
use tally_plan::triehh_plus::PrefixCounts;

/// A double written as its shortest decimal string.
fn number(value: &Value) -> f64 {
    value.as_str().expect("a string").parse().expect("a double")
}

fn close(name: &str, ours: f64, theirs: f64) {
    assert!(
        (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1e-3),
        "{name}: {ours} against {theirs}"
    );
}

#[test]
fn predictions_match_the_scipy_reference() {
    let text = include_str!("test_vectors/triehh_found/found.json");
    let vectors: Value = serde_json::from_str(text).expect("vectors parse");
    let items: Vec<(String, u64)> = vectors["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["word"].as_str().unwrap().to_owned(),
                w["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let cases = vectors["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let segment = case["segment"].as_u64().unwrap() as usize;
        let levels = case["levels"].as_u64().unwrap() as usize;
        let top = case["top"].as_u64().unwrap() as usize;
        let params = SampleThresholdParams::new(
            number(&case["sampling_rate"]),
            case["threshold"].as_u64().unwrap(),
        )
        .expect("valid parameters");
        let selection = KeySelection::SampleThreshold(params);
        let prefixes = PrefixCounts::new(&items, segment, levels);
        let found = prefixes.found_probabilities(&selection);
        let expected = case["words"].as_array().unwrap();
        assert_eq!(found.len(), expected.len());
        for ((word, ours), theirs) in prefixes.words().iter().zip(&found).zip(expected) {
            assert_eq!(word.0, theirs["word"].as_str().unwrap(), "word order");
            close(
                &format!("P[found {}]", word.0),
                *ours,
                number(&theirs["found"]),
            );
        }
        let utility = prefixes.utility(&selection, top);
        close("recall", utility.recall, number(&case["recall"]));
        close(
            "expected found",
            utility.expected_found,
            number(&case["expected_found"]),
        );
        close(
            "mean absolute error",
            utility.mean_absolute_error,
            number(&case["mean_absolute_error"]),
        );
    }
}
