//! Predicted utility of a key selection on a known population (a proxy the analyst may look
//! at): recall of the top items and the error of the released counts, exact from the release
//! law of every item (no simulation).

use std::collections::BTreeMap;

use super::KeySelection;

/// What a key selection is expected to release from one population.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PopulationUtility {
    /// The number of top items `k` the recall is over (at most the number of items).
    pub top: usize,
    /// Predicted recall@k: the expected fraction of the `k` items with the largest counts
    /// that is released, `(1/k)·Σ_{i ≤ k} P[released | c_i]`.
    pub recall: f64,
    /// The expected number of items released, `Σ_i P[released | c_i]`.
    pub expected_released: f64,
    /// The mean absolute error of the released counts, as a ratio of expectations:
    /// `Σ_i E[|estimate_i − c_i|·1{released_i}] / Σ_i P[released | c_i]` (0 when nothing is
    /// expected to be released).
    pub mean_absolute_error: f64,
}

/// The predicted utility of `selection` on the items with true `counts` (in any order; ties
/// at the `top`-th count do not matter, as equal counts have equal laws).
pub fn population_utility(
    counts: &[u64],
    selection: &KeySelection,
    top: usize,
) -> PopulationUtility {
    let mut sorted = counts.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let top = top.min(sorted.len());
    // Items with the same count share their law: evaluate it once per distinct count.
    let mut multiplicity: BTreeMap<u64, u64> = BTreeMap::new();
    for &count in &sorted {
        *multiplicity.entry(count).or_default() += 1;
    }
    let mut released = BTreeMap::new();
    let (mut expected_released, mut absolute_error) = (0.0, 0.0);
    for (&count, &items) in &multiplicity {
        let probability = selection.release_probability(count);
        released.insert(count, probability);
        expected_released += items as f64 * probability;
        absolute_error += items as f64 * selection.released_absolute_error(count);
    }
    let recall = if top == 0 {
        0.0
    } else {
        sorted[..top].iter().map(|c| released[c]).sum::<f64>() / top as f64
    };
    PopulationUtility {
        top,
        recall,
        expected_released,
        mean_absolute_error: if expected_released > 0.0 {
            absolute_error / expected_released
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample_threshold::SampleThresholdParams;

    #[test]
    fn recall_averages_the_top_items_release_probabilities() {
        let params = SampleThresholdParams::new(0.5, 3).expect("valid");
        let selection = KeySelection::SampleThreshold(params);
        let counts = [1, 8, 4, 6, 2];
        let utility = population_utility(&counts, &selection, 2);
        let expected = (selection.release_probability(8) + selection.release_probability(6)) / 2.0;
        assert!((utility.recall - expected).abs() < 1e-15);
        let all: f64 = counts
            .iter()
            .map(|&c| selection.release_probability(c))
            .sum();
        assert!((utility.expected_released - all).abs() < 1e-12);
        let error: f64 = counts
            .iter()
            .map(|&c| selection.released_absolute_error(c))
            .sum();
        assert!((utility.mean_absolute_error - error / all).abs() < 1e-12);
    }
}
