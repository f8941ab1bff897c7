//! Partition selection and per-client contribution bounds on their real code paths against
//! their laws (fixed seeds, `α = 1e-6` per test): each item's release frequency against the
//! accountant's `P[released | c]`, the noisy counts against the discrete Laplace and Gaussian
//! laws, the bounded items against the uniform law on subsets, and the per-item coins of
//! sample-and-threshold against independent Bernoulli coins.

#[allow(dead_code)] // shared helpers; this file uses only some of them
mod common;

use common::{assert_fits, assert_proportion};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::Neighbours;
use tally_accounting::partition_selection::Method;
use tally_accounting::sample_threshold::PlanTarget;
use tally_core::histogram::{PartitionSelection, SampleThreshold};
use tally_core::sampling::{SamplingKey, bound_items, choose_items};

/// Releases of the selection over items `0..counts.len()` (item `j` held by `counts[j]`
/// clients, reported one by one) and how often each item came out; also the noisy counts of
/// the last item, which is always released.
fn run(
    selection: &PartitionSelection,
    counts: &[u64],
    runs: u64,
    seed: u64,
) -> (Vec<u64>, Vec<i64>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut released = vec![0u64; counts.len()];
    let mut last = Vec::new();
    for _ in 0..runs {
        let mut aggregator = selection.aggregator();
        for (item, &count) in counts.iter().enumerate() {
            for _ in 0..count {
                aggregator.absorb(item as u32);
            }
        }
        for selected in aggregator.release(&mut rng).items {
            released[selected.item as usize] += 1;
            if selected.item as usize == counts.len() - 1 {
                last.extend(selected.noisy_count);
            }
        }
    }
    (released, last)
}

/// Counts spread over the selection's release curve, from 1 to far above its 99.9% point.
fn counts_across(selection: &PartitionSelection) -> Vec<u64> {
    let low = selection.calibration().release_point(0.05).unwrap();
    let high = selection.calibration().release_point(0.999).unwrap();
    let mut counts: Vec<u64> = vec![1, low.saturating_sub(1).max(1), low];
    counts.extend((0..=6).map(|i| low + (high - low) * i / 6));
    counts.push(high + 200);
    counts
}

#[test]
fn each_item_is_released_with_the_probability_of_its_count() {
    for (method, seed) in [
        (Method::LaplaceThreshold, 1),
        (Method::GaussianThreshold, 2),
        (Method::TruncatedGeometric, 3),
    ] {
        for neighbours in [Neighbours::AddRemove, Neighbours::ReplaceOne] {
            let selection =
                PartitionSelection::calibrate(method, 1.0, 1e-3, 2, neighbours).unwrap();
            let counts = counts_across(&selection);
            let runs = 4_000;
            let (released, _) = run(&selection, &counts, runs, seed);
            for (&count, &hits) in counts.iter().zip(&released) {
                let p = selection.calibration().release_probability(count);
                assert_proportion(
                    &format!("{method} {neighbours}: item of {count} clients"),
                    seed,
                    hits,
                    runs,
                    p,
                );
            }
        }
    }
}

#[test]
fn noisy_counts_follow_the_calibrated_noise() {
    let laplace = PartitionSelection::calibrate(
        Method::LaplaceThreshold,
        1.0,
        1e-3,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    let gaussian = PartitionSelection::calibrate(
        Method::GaussianThreshold,
        1.0,
        1e-3,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    let geometric = PartitionSelection::calibrate(
        Method::TruncatedGeometric,
        1.0,
        1e-3,
        1,
        Neighbours::AddRemove,
    )
    .unwrap();
    let count = 500;
    for (selection, seed) in [(&laplace, 10), (&gaussian, 11)] {
        let (released, noisy) = run(selection, &[count], 20_000, seed);
        assert_eq!(released[0], 20_000, "far above the threshold");
        // The noise law from the accountant's own release curve: P[X ≥ a] = P[released | T − a].
        let threshold = match selection.calibration() {
            tally_accounting::partition_selection::PartitionSelection::Laplace(s) => s.threshold(),
            tally_accounting::partition_selection::PartitionSelection::Gaussian(s) => s.threshold(),
            tally_accounting::partition_selection::PartitionSelection::TruncatedGeometric(_) => {
                unreachable!("a noise-based selection")
            }
        };
        let at_least = |a: i64| {
            selection
                .calibration()
                .release_probability((threshold as i64 - a) as u64)
        };
        let m = 12;
        let mut observed = vec![0u64; 2 * m as usize + 1];
        for value in noisy {
            let noise = (value - count as i64).clamp(-m, m);
            observed[(noise + m) as usize] += 1;
        }
        let mut probs = vec![1.0 - at_least(-m + 1)];
        probs.extend((-m + 1..m).map(|x| at_least(x) - at_least(x + 1)));
        probs.push(at_least(m));
        assert_fits(
            &format!("{} noise", selection.method()),
            seed,
            &observed,
            &probs,
        );
    }
    let (_, noisy) = run(&geometric, &[count], 100, 12);
    assert!(
        noisy.is_empty(),
        "the truncated geometric releases keys only"
    );
}

#[test]
fn items_nobody_holds_are_never_released() {
    let selection =
        PartitionSelection::calibrate(Method::LaplaceThreshold, 8.0, 0.4, 1, Neighbours::AddRemove)
            .unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for _ in 0..200 {
        let mut aggregator = selection.aggregator();
        aggregator.absorb_many(3, 0);
        aggregator.absorb(5);
        let release = aggregator.release(&mut rng);
        assert!(release.items.iter().all(|s| s.item == 5));
    }
}

/// The index of a 2-subset of `0..4` among the six.
fn pair_index(mut pair: Vec<usize>) -> usize {
    pair.sort_unstable();
    let all = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]];
    all.iter().position(|p| p[..] == pair[..]).expect("a pair")
}

#[test]
fn bounded_items_are_a_uniform_subset_of_the_distinct_items() {
    // Four distinct items in six rows: the two kept are uniform over the six pairs, whatever
    // the multiplicities.
    let rows = ["a", "b", "a", "c", "d", "a"];
    let item_of = |position: usize| usize::from(rows[position].as_bytes()[0] - b'a');
    let seed = 5;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut observed = [0u64; 6];
    for _ in 0..30_000 {
        let kept = bound_items(&rows, 2, &mut rng).unwrap();
        observed[pair_index(kept.into_iter().map(item_of).collect())] += 1;
    }
    assert_fits("bound_items", seed, &observed, &[1.0 / 6.0; 6]);
    let key = SamplingKey::derive(b"bounded").unwrap();
    let mut observed = [0u64; 6];
    for client in 0..30_000u32 {
        let kept = choose_items(&key, 0, client.to_string().as_bytes(), &rows, 2);
        observed[pair_index(kept.into_iter().map(item_of).collect())] += 1;
    }
    assert_fits("choose_items", 0, &observed, &[1.0 / 6.0; 6]);
}

#[test]
fn a_client_of_several_items_flips_one_independent_coin_per_item() {
    let mechanism = SampleThreshold::calibrate_items(
        1.0,
        1e-8,
        2,
        PlanTarget::Threshold(20),
        Neighbours::AddRemove,
    )
    .unwrap();
    let p = mechanism.params().sampling_rate();
    let query = mechanism.query();
    let seed = 6;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut observed = [0u64; 4];
    for _ in 0..40_000 {
        let sent = query.respond_items(&["x", "y"], &mut rng);
        let cell = usize::from(sent.contains(&"x")) + 2 * usize::from(sent.contains(&"y"));
        observed[cell] += 1;
    }
    let q = 1.0 - p;
    assert_fits(
        "per-item coins",
        seed,
        &observed,
        &[q * q, p * q, q * p, p * p],
    );
}
