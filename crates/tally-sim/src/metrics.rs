//! Utility metrics against the population's ground truth.

use std::collections::HashSet;

use rustc_hash::FxHashMap;
use tally_core::heavy_hitters::TERMINATOR;

use crate::population::Population;

/// The `k` most frequent items of the population with their counts, by decreasing count (ties
/// by name).
pub fn top_k(population: &Population, k: usize) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = population
        .item_counts()
        .iter()
        .map(|&(id, count)| {
            // Unwrap safety: held ids have names.
            (
                population.item_name(id).expect("id in domain").into_owned(),
                count,
            )
        })
        .collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts.truncate(k);
    counts
}

/// Precision, recall and F1 of a set of found items against the true top items.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetrievalScores {
    /// The share of found items that are true top items.
    pub precision: f64,
    /// The share of true top items that were found.
    pub recall: f64,
    /// The harmonic mean of precision and recall.
    pub f1: f64,
    /// How many true top items were found.
    pub hits: usize,
}

/// Scores `found` against `truth`. An empty `found` has precision 1 (it claims nothing false).
pub fn retrieval_scores<'a>(
    found: impl IntoIterator<Item = &'a str>,
    truth: impl IntoIterator<Item = &'a str>,
) -> RetrievalScores {
    let truth: HashSet<&str> = truth.into_iter().collect();
    let found: HashSet<&str> = found.into_iter().collect();
    let hits = found.intersection(&truth).count();
    let precision = if found.is_empty() {
        1.0
    } else {
        hits as f64 / found.len() as f64
    };
    let recall = if truth.is_empty() {
        1.0
    } else {
        hits as f64 / truth.len() as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    RetrievalScores {
        precision,
        recall,
        f1,
        hits,
    }
}

/// How far released estimates are from the truth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EstimateErrors {
    /// How many estimates were scored.
    pub estimates: usize,
    /// The mean of `|estimate − truth|`.
    pub mean_absolute_error: f64,
    /// The mean of `|estimate − truth| / truth` (released nodes always have a true count
    /// above zero: nothing absent from the data can be released).
    pub mean_relative_error: f64,
}

/// Scores estimates of prefix-tree nodes: each `(prefix, estimate)` against the number of
/// clients whose word followed by the terminator `'$'` starts with `prefix`. So `"th"` is
/// scored against the holders of every word starting with `th`, and a whole word written
/// `"the$"` against the holders of `the`.
pub fn prefix_estimate_errors<'a>(
    population: &Population,
    estimates: impl IntoIterator<Item = (&'a str, f64)>,
) -> EstimateErrors {
    let mut truth: FxHashMap<String, u64> = FxHashMap::default();
    for &(id, count) in population.item_counts() {
        // Unwrap safety: held ids have names.
        let word = population.item_name(id).expect("id in domain");
        let mut prefix = String::with_capacity(word.len() + 1);
        for c in word.chars().chain(std::iter::once(TERMINATOR)) {
            prefix.push(c);
            *truth.entry(prefix.clone()).or_insert(0) += count;
        }
    }
    let (mut n, mut absolute, mut relative) = (0usize, 0.0, 0.0);
    for (prefix, estimate) in estimates {
        let true_count = truth.get(prefix).copied().unwrap_or(0) as f64;
        let error = (estimate - true_count).abs();
        n += 1;
        absolute += error;
        relative += if true_count > 0.0 {
            error / true_count
        } else {
            f64::INFINITY
        };
    }
    let mean = |total: f64| if n == 0 { 0.0 } else { total / n as f64 };
    EstimateErrors {
        estimates: n,
        mean_absolute_error: mean(absolute),
        mean_relative_error: mean(relative),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_hits() {
        let s = retrieval_scores(["a", "b", "x"], ["a", "b", "c", "d"]);
        assert_eq!(s.hits, 2);
        assert!((s.precision - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.recall - 0.5).abs() < 1e-12);
        assert!((s.f1 - 4.0 / 7.0).abs() < 1e-12);
        assert!(retrieval_scores([], ["a"]).f1.abs() < 1e-12);
    }

    #[test]
    fn prefix_errors_count_every_word_below_a_node() {
        let population =
            Population::from_names(["the", "then", "the", "a"], "test").expect("population");
        let errors = prefix_estimate_errors(&population, [("th", 4.0), ("the$", 2.0), ("a$", 2.0)]);
        assert_eq!(errors.estimates, 3);
        // |4 − 3| + |2 − 2| + |2 − 1| over 3.
        assert!((errors.mean_absolute_error - 2.0 / 3.0).abs() < 1e-12);
        assert!((errors.mean_relative_error - (1.0 / 3.0 + 1.0) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn top_k_orders_by_count_then_name() {
        let population =
            Population::from_names(["b", "a", "b", "c", "a", "b"], "test").expect("population");
        assert_eq!(
            top_k(&population, 2),
            [("b".to_owned(), 3), ("a".to_owned(), 2)]
        );
    }
}
