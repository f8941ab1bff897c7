//! Partition selection over an unknown domain: a trusted aggregator counts the items the
//! clients report and releases, by [`Method`], the items that pass a noisy threshold (with
//! their noisy counts) or a coin of the optimal probability (keys only).
//!
//! # Privacy
//!
//! The guarantee is [`tally_accounting::partition_selection`]'s, in the central model: the
//! aggregator sees the exact counts of the items the clients hold and must be trusted (or stand
//! for a secure aggregation); the analyst sees only the release. It holds when each client
//! reports at most `k` distinct items (bound them with [`crate::sampling::bound_items`] or
//! [`crate::sampling::choose_items`]). Only items with a count of at least 1 are looked at, so
//! an item no client holds is never released. The noise is drawn by the exact samplers
//! [`DiscreteLaplace`] and [`DiscreteGaussian`] with the calibrated rational parameters, and the
//! truncated geometric's coin is an [`ExactBernoulli`] of the table's double, for which the
//! accountant computed the guarantee. Raw counts live only inside [`SelectionAggregator`], which
//! implements neither `Debug` nor serialization; [`SelectionAggregator::release`] is the only
//! way out.

use rand::Rng;
use rand_distr::Distribution;
use rustc_hash::FxHashMap;
use tally_accounting::partition_selection::{self, Method};
use tally_accounting::{Guarantee, Neighbours};

use crate::Error;
use crate::noise::{DiscreteGaussian, DiscreteLaplace};
use crate::sampling::ExactBernoulli;

/// A calibrated partition selection with its samplers.
#[derive(Clone, Debug)]
pub struct PartitionSelection {
    calibration: partition_selection::PartitionSelection,
    rule: Rule,
}

/// How an item's count decides its release.
#[derive(Clone, Debug)]
enum Rule {
    /// Released when `count + X ≥ threshold`, `X` from the noise.
    Laplace(DiscreteLaplace, u64),
    /// As `Laplace`, with discrete Gaussian noise.
    Gaussian(DiscreteGaussian, u64),
    /// Released when a coin of the table's probability comes up heads.
    Coin,
}

impl PartitionSelection {
    /// Calibrates `method` for `(epsilon, delta)` when each client reports at most `max_items`
    /// distinct items, for `neighbours`
    /// ([`tally_accounting::partition_selection::PartitionSelection::calibrate`]).
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] for whatever the calibration rejects.
    pub fn calibrate(
        method: Method,
        epsilon: f64,
        delta: f64,
        max_items: u32,
        neighbours: Neighbours,
    ) -> Result<Self, Error> {
        let calibration = partition_selection::PartitionSelection::calibrate(
            method, epsilon, delta, max_items, neighbours,
        )?;
        Self::new(calibration)
    }

    /// The selection of a calibration.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if the noise parameters are outside the samplers' range.
    pub fn new(calibration: partition_selection::PartitionSelection) -> Result<Self, Error> {
        let rule = match &calibration {
            partition_selection::PartitionSelection::Laplace(laplace) => {
                Rule::Laplace(DiscreteLaplace::new(laplace.scale())?, laplace.threshold())
            }
            partition_selection::PartitionSelection::Gaussian(gaussian) => Rule::Gaussian(
                DiscreteGaussian::new(gaussian.sigma2())?,
                gaussian.threshold(),
            ),
            partition_selection::PartitionSelection::TruncatedGeometric(_) => Rule::Coin,
        };
        Ok(Self { calibration, rule })
    }

    /// The calibrated parameters.
    pub fn calibration(&self) -> &partition_selection::PartitionSelection {
        &self.calibration
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.calibration.method()
    }

    /// The guarantee of one release.
    pub fn guarantee(&self) -> &Guarantee {
        self.calibration.guarantee()
    }

    /// An empty aggregator.
    pub fn aggregator(&self) -> SelectionAggregator {
        SelectionAggregator {
            counts: FxHashMap::default(),
            selection: self.clone(),
        }
    }

    /// The release of one item held by `count ≥ 1` clients: `None` if it is not released,
    /// else its noisy count (`None` inside for the truncated geometric, which releases the key
    /// only).
    fn decide<R: Rng + ?Sized>(&self, count: u64, rng: &mut R) -> Option<Option<i64>> {
        // Unwrap safety: the aggregator's counts are numbers of clients, far below 2^63.
        let exact = i64::try_from(count).expect("a count fits in i64");
        let passes = |value: i64, threshold: u64| {
            u64::try_from(value)
                .is_ok_and(|v| v >= threshold)
                .then_some(Some(value))
        };
        match &self.rule {
            Rule::Laplace(noise, threshold) => {
                passes(exact.saturating_add(noise.sample(rng)), *threshold)
            }
            Rule::Gaussian(noise, threshold) => {
                passes(exact.saturating_add(noise.sample(rng)), *threshold)
            }
            Rule::Coin => {
                let p = self.calibration.release_probability(count);
                // Unwrap safety: the table holds probabilities.
                let heads = p >= 1.0 || ExactBernoulli::new(p).expect("a probability").sample(rng);
                heads.then_some(None)
            }
        }
    }
}

/// One released item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectedItem {
    /// The item's id.
    pub item: u32,
    /// Its noisy count, for the noise-based methods.
    pub noisy_count: Option<i64>,
}

/// A release with the guarantee it was made with.
#[derive(Clone, Debug)]
pub struct SelectionRelease {
    /// The released items: by decreasing noisy count (ties by id) for the noise-based
    /// methods, by id for the truncated geometric.
    pub items: Vec<SelectedItem>,
    /// The method.
    pub method: Method,
    /// The privacy guarantee of this release.
    pub guarantee: Guarantee,
}

/// The aggregator of a partition selection: the exact count of every item reported. Its raw
/// counts cannot be read.
pub struct SelectionAggregator {
    counts: FxHashMap<u32, u64>,
    selection: PartitionSelection,
}

impl SelectionAggregator {
    /// Absorbs one report of `item`.
    pub fn absorb(&mut self, item: u32) {
        self.absorb_many(item, 1);
    }

    /// Absorbs `count` reports of `item` at once.
    pub fn absorb_many(&mut self, item: u32, count: u64) {
        *self.counts.entry(item).or_insert(0) += count;
    }

    /// Adds another shard's reports to this one.
    pub fn merge(&mut self, other: Self) {
        for (item, count) in other.counts {
            self.absorb_many(item, count);
        }
    }

    /// Decides every item with a count of at least 1, in increasing id order (so that a seeded
    /// generator gives the same release whatever the order of the reports), each with its own
    /// independent draw. This is the only way raw counts leave.
    pub fn release<R: Rng + ?Sized>(self, rng: &mut R) -> SelectionRelease {
        let mut counts: Vec<(u32, u64)> = self.counts.into_iter().filter(|&(_, c)| c > 0).collect();
        counts.sort_unstable();
        let mut items: Vec<SelectedItem> = counts
            .into_iter()
            .filter_map(|(item, count)| {
                self.selection
                    .decide(count, rng)
                    .map(|noisy_count| SelectedItem { item, noisy_count })
            })
            .collect();
        items.sort_by(|a, b| b.noisy_count.cmp(&a.noisy_count).then(a.item.cmp(&b.item)));
        SelectionRelease {
            items,
            method: self.selection.method(),
            guarantee: self.selection.guarantee().clone(),
        }
    }
}

/// One released item of a release over named counts ([`PartitionSelection::release_named`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedKey<K> {
    /// The item.
    pub key: K,
    /// Its noisy count, for the noise-based methods.
    pub noisy_count: Option<i64>,
}

impl PartitionSelection {
    /// The release of the items `counts` names, each with the number of clients that
    /// contributed it (a key named twice counts the sum): every item numbered in increasing
    /// order of its key and released by [`SelectionAggregator::release`] with draws from
    /// `rng`, so the same counts and generator give the same release whatever the order of
    /// `counts`. The release order is [`SelectionRelease::items`]'. What the offline command
    /// and a federated task's aggregator both release.
    ///
    /// # Privacy
    ///
    /// As [`SelectionAggregator::release`]: `rng` must be secret from everyone the guarantee
    /// protects against, and every client must have contributed each key at most once and at
    /// most as many keys as the selection was calibrated for.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] past `u32::MAX` distinct items.
    pub fn release_named<K: Ord, R: Rng + ?Sized>(
        &self,
        counts: impl IntoIterator<Item = (K, u64)>,
        rng: &mut R,
    ) -> Result<Vec<SelectedKey<K>>, Error> {
        let mut summed = std::collections::BTreeMap::new();
        for (key, count) in counts {
            *summed.entry(key).or_insert(0_u64) += count;
        }
        if u32::try_from(summed.len()).is_err() {
            return Err(Error::invalid(
                "distinct items",
                summed.len(),
                "at most 2^32 - 1",
            ));
        }
        let mut aggregator = self.aggregator();
        for (item, &count) in (0..).zip(summed.values()) {
            aggregator.absorb_many(item, count);
        }
        let release = aggregator.release(rng);
        let mut keys: Vec<Option<K>> = summed.into_keys().map(Some).collect();
        Ok(release
            .items
            .into_iter()
            .map(|selected| SelectedKey {
                // Unwrap safety: every released id numbers one key and is released once.
                key: keys[selected.item as usize].take().expect("a released id"),
                noisy_count: selected.noisy_count,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;

    #[test]
    fn named_counts_release_in_key_order_whatever_their_order() {
        let selection = PartitionSelection::calibrate(
            Method::LaplaceThreshold,
            1.0,
            1e-6,
            1,
            Neighbours::AddRemove,
        )
        .unwrap();
        let counts = [("pear", 40), ("apple", 500), ("fig", 1), ("kiwi", 300)];
        let rng = || ChaCha20Rng::seed_from_u64(9);
        let forward = selection.release_named(counts, &mut rng()).unwrap();
        let mut reversed = counts;
        reversed.reverse();
        let backward = selection.release_named(reversed, &mut rng()).unwrap();
        assert_eq!(forward, backward);
        // The same draws as the aggregator over the keys numbered in increasing order.
        let mut aggregator = selection.aggregator();
        for (id, count) in [(0, 500), (1, 1), (2, 300), (3, 40)] {
            aggregator.absorb_many(id, count);
        }
        let names = ["apple", "fig", "kiwi", "pear"];
        let by_id: Vec<SelectedKey<&str>> = aggregator
            .release(&mut rng())
            .items
            .into_iter()
            .map(|item| SelectedKey {
                key: names[item.item as usize],
                noisy_count: item.noisy_count,
            })
            .collect();
        assert_eq!(forward, by_id);
        assert_eq!(forward[0].key, "apple");
        assert!(forward.iter().all(|item| item.key != "fig"));
        // A key named twice counts the sum.
        let split = selection
            .release_named(
                [
                    ("apple", 200),
                    ("kiwi", 300),
                    ("apple", 300),
                    ("pear", 40),
                    ("fig", 1),
                ],
                &mut rng(),
            )
            .unwrap();
        assert_eq!(split, forward);
    }
}
