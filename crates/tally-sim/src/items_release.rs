//! Histograms over clients of several items, each contributing at most `k` distinct items:
//! partition selection (`tally histogram --mechanism laplace-threshold|gaussian-threshold|
//! truncated-geometric`) and sample-and-threshold with one coin per (client, item)
//! (`--max-items-per-client k`), with their documents as `tally histogram --json` prints them.
//!
//! A client with more than `k` distinct items keeps a uniform `k`-subset of them: drawn from a
//! ChaCha stream of the seed ([`tally_core::sampling::bound_items`]), or keyed by the sampling
//! key ([`crate::KeyedItemCounts`], with [`tally_core::sampling::choose_items`]), so the same
//! key keeps the same items here, in Python and on Spark. Sample-and-threshold then flips one
//! coin per kept item (never one per client: docs/privacy/sample-threshold.md, "Several items
//! per client"), keyed ([`tally_core::sampling::KeyedCoin::flip_item`]) or exact from the
//! seed's stream. The noise of a partition selection always comes from the seed's generator,
//! never from the key, one draw per counted item in increasing order of name: the same counts
//! and seed give the same release whatever the order of the rows, and counts summed elsewhere
//! ([`ItemsMechanism::release_counts`], on Spark) the release of the same rows here.

use std::collections::BTreeMap;

use tally_accounting::key_selection::KeySelection;
use tally_accounting::partition_selection::{self as selections, Method, check_max_items};
use tally_accounting::sample_threshold::PlanTarget;
use tally_accounting::{Neighbours, ThresholdedEstimate};
use tally_core::histogram::{PartitionSelection, SampleThreshold};
use tally_core::sampling::{SamplingKey, bound_items};
use tally_messages::HistogramRelease;
use tally_protocol::diagnosis::ReleaseRule;
use tally_protocol::document;

use crate::rng::{Purpose, stream};
use crate::sample_threshold_release::{KEYED_EXECUTION, named};
use crate::{KeyedItemCounts, KeyedPopulation};

/// The execution name of a seeded run in the document.
pub const SEEDED_EXECUTION: &str = "seeded";

/// Where the choice of each client's items (and sample-and-threshold's coins) comes from.
#[derive(Clone, Debug)]
pub enum ItemChoice {
    /// ChaCha streams of the seed.
    Seeded,
    /// Keyed functions of each client's id and items, in round 0.
    Keyed(SamplingKey),
}

impl ItemChoice {
    fn execution(&self) -> &'static str {
        match self {
            Self::Seeded => SEEDED_EXECUTION,
            Self::Keyed(_) => KEYED_EXECUTION,
        }
    }
}

/// The options of one release over clients of several items.
#[derive(Clone, Debug)]
pub struct ItemsRelease {
    /// The bound `k` on each client's distinct items.
    pub max_items: u32,
    /// How each client's items are chosen.
    pub choice: ItemChoice,
    /// The seed of every draw the key does not make.
    pub seed: u64,
    /// The `δ` asked for, shown in the document.
    pub target_delta: f64,
    /// The seed to show (`None` when the user gave none).
    pub shown_seed: Option<u64>,
}

impl ItemsRelease {
    /// The document `build` makes from the number of clients, the target `δ`, the input's
    /// description, the execution and the seed to show, with the bound `k` among its
    /// parameters and in its diagnosis of the release by `rule`.
    fn document(
        &self,
        counted: &ItemCounts,
        rule: &ReleaseRule,
        build: impl FnOnce(u64, f64, String, &str, Option<u64>) -> HistogramRelease,
    ) -> HistogramRelease {
        let chosen = match self.choice {
            ItemChoice::Seeded => "uniformly",
            ItemChoice::Keyed(_) => "by the sampling key",
        };
        let input = format!(
            "{} clients of {}, each contributing at most {} of its distinct items, chosen {chosen}",
            counted.clients, counted.source, self.max_items
        );
        let mut document = build(
            counted.clients,
            self.target_delta,
            input,
            &counted.execution,
            self.shown_seed,
        );
        document.parameters["max_items_per_client"] = serde_json::json!(self.max_items);
        document.diagnosis = Some(document::histogram_diagnosis(
            &document.items,
            counted.clients,
            document.guarantee.delta,
            rule,
            self.max_items,
        ));
        document
    }

    /// The counts of the items the clients of `population` contribute: each client's items
    /// bounded to `max_items` and, with `coins` (sample-and-threshold), each kept item sent by
    /// its own coin.
    fn contributions(
        &self,
        population: &KeyedPopulation,
        coins: Option<&SampleThreshold>,
    ) -> Result<ItemCounts, Error> {
        let name = |item: u32| population.item_name(item).unwrap_or_default();
        let mut counts = BTreeMap::new();
        match &self.choice {
            ItemChoice::Seeded => {
                let mut choices = stream(self.seed, Purpose::ItemsPerClient, 0);
                let mut flips = stream(self.seed, Purpose::ItemsPerClient, 1);
                let query = coins.map(SampleThreshold::query);
                for (_, items) in population.client_items() {
                    let kept: Vec<u32> = bound_items(&items, self.max_items, &mut choices)?
                        .into_iter()
                        .map(|position| items[position])
                        .collect();
                    let sent = match &query {
                        Some(query) => query.respond_items(&kept, &mut flips),
                        None => kept,
                    };
                    for item in sent {
                        *counts.entry(name(item).to_owned()).or_insert(0) += 1;
                    }
                }
            }
            ItemChoice::Keyed(key) => {
                check_max_items(self.max_items)?;
                let coin = coins
                    .map(|mechanism| mechanism.keyed_coin(key.clone()))
                    .transpose()?;
                let mut part = KeyedItemCounts::new(key.clone(), self.max_items, coin);
                for (client, items) in population.client_items() {
                    let names: Vec<&str> = items.iter().map(|&item| name(item)).collect();
                    part.absorb_client(client.as_bytes(), &names);
                }
                counts = part
                    .into_counts()
                    .into_iter()
                    .map(|(item, count)| (String::from_utf8_lossy(&item).into_owned(), count))
                    .collect();
            }
        }
        Ok(ItemCounts {
            counts,
            clients: population.len() as u64,
            source: population.source().to_owned(),
            execution: self.choice.execution().to_owned(),
        })
    }
}

/// How many clients contributed each item once each client's items were bounded (and, for
/// sample-and-threshold, its coins flipped), here or elsewhere (the summed partitions of a
/// Spark job): what a release over clients of several items is computed from.
#[derive(Clone, Debug)]
pub struct ItemCounts {
    /// The clients contributing each item, by name; items of count 0 are never released.
    pub counts: BTreeMap<String, u64>,
    /// The number of clients.
    pub clients: u64,
    /// Where the rows came from, for the document's input.
    pub source: String,
    /// The execution the document names.
    pub execution: String,
}

impl ItemCounts {
    /// The items' names, item `i` the `i`-th in increasing order, with their counts: the ids
    /// sample-and-threshold's aggregator counts (a partition selection numbers them the same
    /// way, in [`PartitionSelection::release_named`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] past `u32::MAX` distinct items.
    fn numbered(&self) -> Result<Vec<(&str, u64)>, Error> {
        if u32::try_from(self.counts.len()).is_err() {
            return Err(Error::InvalidParameter {
                name: "distinct items",
                value: self.counts.len().to_string(),
                expected: "at most 2^32 - 1",
            });
        }
        Ok(self
            .counts
            .iter()
            .map(|(name, &count)| (name.as_str(), count))
            .collect())
    }
}

/// The errors of a release over clients of several items.
pub type Error = tally_core::Error;

/// How an item held by `count` clients fares in a release ([`ItemsMechanism::accuracy_at`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemAccuracy {
    /// The clients holding the item, each contributing it.
    pub count: u64,
    /// The probability the item is released.
    pub release_probability: f64,
    /// The expected absolute error of its estimate given that it is released, `None` where no
    /// count is shown or the item is never released.
    pub expected_absolute_error: Option<f64>,
}

/// A mechanism calibrated for clients of at most `k` distinct items.
#[derive(Clone, Debug)]
pub enum ItemsMechanism {
    /// A partition selection.
    Selection(PartitionSelection),
    /// Sample-and-threshold with one coin per (client, item).
    SampleThreshold(SampleThreshold),
}

impl ItemsMechanism {
    /// Calibrates the partition selection `method`, or sample-and-threshold for `target` when
    /// `method` is `None` (for the rate a keyed coin uses when `keyed`), for `(epsilon,
    /// delta)` when each client contributes at most `max_items` distinct items.
    ///
    /// # Errors
    ///
    /// Whatever the calibrations reject.
    pub fn calibrate(
        method: Option<Method>,
        epsilon: f64,
        delta: f64,
        max_items: u32,
        target: PlanTarget,
        neighbours: Neighbours,
        keyed: bool,
    ) -> Result<Self, Error> {
        Ok(match method {
            Some(method) => Self::Selection(PartitionSelection::calibrate(
                method, epsilon, delta, max_items, neighbours,
            )?),
            None if keyed => Self::SampleThreshold(SampleThreshold::calibrate_items_keyed(
                epsilon, delta, max_items, target, neighbours,
            )?),
            None => Self::SampleThreshold(SampleThreshold::calibrate_items(
                epsilon, delta, max_items, target, neighbours,
            )?),
        })
    }

    /// The name `tally histogram --mechanism` takes.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Selection(selection) => selection.method().name(),
            Self::SampleThreshold(_) => "sample-threshold",
        }
    }

    /// `P[released | c clients contributed the item]`, the law the release runs: the
    /// selection's ([`tally_accounting::partition_selection::PartitionSelection::release_probability`]),
    /// or `P[Bin(c, p_s) ≥ τ]` for sample-and-threshold, whose `c` contributions are each sent
    /// by their own coin.
    pub fn release_probability(&self, count: u64) -> f64 {
        match self {
            Self::Selection(selection) => selection.calibration().release_probability(count),
            Self::SampleThreshold(mechanism) => {
                KeySelection::SampleThreshold(*mechanism.params()).release_probability(count)
            }
        }
    }

    /// The count at which an item is released with probability ½ (`None` past the largest
    /// count searched): the smallest count a release can be expected to show.
    pub fn release_point(&self) -> Option<u64> {
        tally_accounting::key_selection::release_point(|c| self.release_probability(c), 0.5)
    }

    /// How an item `count` clients hold (each contributing it) fares: the probability it is
    /// released, and the expected absolute error of its estimate when it is (`None` for the
    /// truncated-geometric selection, which shows no count, or an item never released).
    pub fn accuracy_at(&self, count: u64) -> ItemAccuracy {
        let release_probability = self.release_probability(count);
        let expected_absolute_error = self
            .thresholded_estimate()
            .filter(|_| release_probability > 0.0)
            .map(|estimate| {
                estimate.shown_error().expected_absolute_error(count, count) / release_probability
            });
        ItemAccuracy {
            count,
            release_probability,
            expected_absolute_error,
        }
    }

    /// How the release estimates an item's count and when it shows it, or `None` for the
    /// truncated-geometric selection, which shows no count.
    pub fn thresholded_estimate(&self) -> Option<ThresholdedEstimate> {
        let ratio = |(num, den): (u64, u64)| num as f64 / den as f64;
        match self {
            Self::Selection(selection) => match selection.calibration() {
                selections::PartitionSelection::Laplace(s) => {
                    Some(ThresholdedEstimate::DiscreteLaplace {
                        scale: ratio(s.scale()),
                        threshold: s.threshold(),
                    })
                }
                selections::PartitionSelection::Gaussian(s) => {
                    Some(ThresholdedEstimate::DiscreteGaussian {
                        sigma2: ratio(s.sigma2()),
                        threshold: s.threshold(),
                    })
                }
                selections::PartitionSelection::TruncatedGeometric(_) => None,
            },
            Self::SampleThreshold(mechanism) => Some(ThresholdedEstimate::Sampled {
                rate: mechanism.params().sampling_rate(),
                threshold: mechanism.params().threshold(),
            }),
        }
    }

    /// The parameters and guarantee a release over `clients` clients shows in its document.
    pub fn described(&self, clients: u64, target_delta: f64) -> HistogramRelease {
        let input = String::new();
        match self {
            Self::Selection(selection) => document::partition_selection(
                Vec::new(),
                selection,
                clients,
                target_delta,
                input,
                SEEDED_EXECUTION,
                None,
            ),
            Self::SampleThreshold(mechanism) => document::sample_threshold(
                Vec::new(),
                mechanism,
                clients,
                target_delta,
                input,
                SEEDED_EXECUTION,
                None,
            ),
        }
    }

    /// Runs the mechanism over `population` as `options` say and builds the document
    /// ([`selection_histogram`], [`sample_threshold_histogram`]).
    ///
    /// # Errors
    ///
    /// As those.
    pub fn histogram(
        &self,
        population: &KeyedPopulation,
        options: &ItemsRelease,
    ) -> Result<HistogramRelease, Error> {
        match self {
            Self::Selection(selection) => selection_histogram(population, selection, options),
            Self::SampleThreshold(mechanism) => {
                sample_threshold_histogram(population, mechanism, options)
            }
        }
    }

    /// The release from counts made elsewhere ([`crate::KeyedItemCounts`] summed over a
    /// Spark job's partitions), as [`ItemsMechanism::histogram`] releases the counts it makes
    /// itself: `counted` must count each client's items bounded to `options.max_items` (and
    /// for sample-and-threshold sent by their keyed coins).
    ///
    /// # Privacy
    ///
    /// As [`selection_histogram`] and [`sample_threshold_histogram`], given counts made as
    /// they make them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] past `u32::MAX` distinct items.
    pub fn release_counts(
        &self,
        counted: &ItemCounts,
        options: &ItemsRelease,
    ) -> Result<HistogramRelease, Error> {
        match self {
            Self::Selection(selection) => selection_release(selection, counted, options),
            Self::SampleThreshold(mechanism) => {
                sample_threshold_release(mechanism, counted, options)
            }
        }
    }
}

/// Runs the partition selection `selection` over `population`, each client's items bounded as
/// `options` says, and builds the release's document.
///
/// # Privacy
///
/// The guarantee is `selection`'s ([`PartitionSelection::guarantee`]), which holds because
/// every client reports at most `options.max_items` distinct items (`selection` must be
/// calibrated for that bound). The noise is drawn from the seed's generator, one draw per
/// counted item in increasing order of name.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `options.max_items` is 0.
pub fn selection_histogram(
    population: &KeyedPopulation,
    selection: &PartitionSelection,
    options: &ItemsRelease,
) -> Result<HistogramRelease, Error> {
    selection_release(
        selection,
        &options.contributions(population, None)?,
        options,
    )
}

/// The release of `selection` over `counted` and its document.
fn selection_release(
    selection: &PartitionSelection,
    counted: &ItemCounts,
    options: &ItemsRelease,
) -> Result<HistogramRelease, Error> {
    let counts = counted
        .counts
        .iter()
        .map(|(name, &count)| (name.as_str(), count));
    let release = selection.release_named(
        counts,
        &mut stream(options.seed, Purpose::PartitionSelection, 0),
    )?;
    let items = document::selected_items(release);
    Ok(options.document(
        counted,
        &document::selection_rule_of(selection),
        |clients, delta, input, execution, seed| {
            document::partition_selection(items, selection, clients, delta, input, execution, seed)
        },
    ))
}

/// Runs one round of the sample-and-threshold `mechanism` over `population`, each client's
/// items bounded as `options` says and each kept item sent by its own coin, and builds the
/// release's document.
///
/// # Privacy
///
/// `mechanism` must be calibrated for `options.max_items` items per client
/// ([`SampleThreshold::calibrate_items`], or [`SampleThreshold::calibrate_items_keyed`] for
/// keyed coins), whose guarantee composes the per-item coins.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `options.max_items` is 0; for keyed coins, as
/// [`SampleThreshold::keyed_coin`].
pub fn sample_threshold_histogram(
    population: &KeyedPopulation,
    mechanism: &SampleThreshold,
    options: &ItemsRelease,
) -> Result<HistogramRelease, Error> {
    let counted = options.contributions(population, Some(mechanism))?;
    sample_threshold_release(mechanism, &counted, options)
}

/// The release of `mechanism` over the sent counts `counted` and its document.
fn sample_threshold_release(
    mechanism: &SampleThreshold,
    counted: &ItemCounts,
    options: &ItemsRelease,
) -> Result<HistogramRelease, Error> {
    let names = counted.numbered()?;
    let mut aggregator = mechanism.aggregator(names.len());
    for (item, &(_, count)) in (0..).zip(&names) {
        aggregator.absorb_many(item, count);
    }
    let items = named(&aggregator.release(), |id| {
        names.get(id as usize).map(|&(name, _)| name.to_owned())
    });
    Ok(options.document(
        counted,
        &document::sample_threshold_rule(mechanism),
        |clients, delta, input, execution, seed| {
            document::sample_threshold(items, mechanism, clients, delta, input, execution, seed)
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2000 clients: each holds `common-0..common-5` and three items of its own.
    fn population() -> KeyedPopulation {
        from_rows(&rows())
    }

    fn options(max_items: u32, choice: ItemChoice) -> ItemsRelease {
        ItemsRelease {
            max_items,
            choice,
            seed: 5,
            target_delta: 1e-8,
            shown_seed: Some(5),
        }
    }

    #[test]
    fn bounding_keeps_k_distinct_items_of_each_client() {
        let population = population();
        let key = SamplingKey::derive(b"items").unwrap();
        for choice in [ItemChoice::Seeded, ItemChoice::Keyed(key)] {
            let counted = options(4, choice).contributions(&population, None).unwrap();
            assert_eq!(counted.clients, 2000);
            // Each client keeps exactly 4 of its 9 distinct items, each at most once.
            assert_eq!(counted.counts.values().sum::<u64>(), 2000 * 4);
            assert!(counted.counts.values().all(|&count| count <= 2000));
        }
    }

    #[test]
    fn selections_release_common_items_and_never_own_ones() {
        let population = population();
        for method in Method::ALL {
            let selection =
                PartitionSelection::calibrate(method, 1.0, 1e-8, 4, Neighbours::AddRemove).unwrap();
            let document =
                selection_histogram(&population, &selection, &options(4, ItemChoice::Seeded))
                    .unwrap();
            assert_eq!(document.mechanism, method.name());
            assert_eq!(document.parameters["max_items_per_client"], 4);
            // Each common item is kept by about 2000·4/9 ≈ 889 clients, far above the release
            // points at k = 4 (below 90); an own item by one client.
            assert_eq!(document.released_items, 6, "{method}: {:?}", document.items);
            assert!(document.items.iter().all(|i| i.item.starts_with("common")));
        }
    }

    #[test]
    fn keyed_sample_threshold_is_a_function_of_the_key() {
        let population = population();
        let mechanism = SampleThreshold::calibrate_items_keyed(
            1.0,
            1e-8,
            4,
            PlanTarget::Threshold(20),
            Neighbours::AddRemove,
        )
        .unwrap();
        let key = SamplingKey::derive(b"items").unwrap();
        let mut first = options(4, ItemChoice::Keyed(key.clone()));
        let a = sample_threshold_histogram(&population, &mechanism, &first).unwrap();
        first.seed = 6;
        let b = sample_threshold_histogram(&population, &mechanism, &first).unwrap();
        assert_eq!(a.items, b.items);
        assert!(
            a.items.iter().any(|i| i.item.starts_with("common")),
            "{:?}",
            a.items
        );
        assert_eq!(a.execution, KEYED_EXECUTION);
        assert!(
            a.guarantee.method.contains("composition"),
            "{}",
            a.guarantee.method
        );
    }

    /// The population's rows, client by client.
    fn rows() -> Vec<(String, String)> {
        (0..2000)
            .flat_map(|c| {
                let common = (0..6).map(move |i| (format!("u{c}"), format!("common-{i}")));
                let own = (0..3).map(move |i| (format!("u{c}"), format!("own-{c}-{i}")));
                common.chain(own)
            })
            .collect()
    }

    fn from_rows(rows: &[(String, String)]) -> KeyedPopulation {
        let (clients, items): (Vec<&str>, Vec<&str>) = rows
            .iter()
            .map(|(client, item)| (client.as_str(), item.as_str()))
            .unzip();
        KeyedPopulation::from_rows(clients, items, "test rows").unwrap()
    }

    #[test]
    fn a_seeded_selection_does_not_depend_on_the_order_of_the_rows() {
        let mut rows = rows();
        let forward = from_rows(&rows);
        rows.reverse();
        let backward = from_rows(&rows);
        let selection = PartitionSelection::calibrate(
            Method::GaussianThreshold,
            1.0,
            1e-8,
            9,
            Neighbours::AddRemove,
        )
        .unwrap();
        let options = options(9, ItemChoice::Seeded);
        let a = selection_histogram(&forward, &selection, &options).unwrap();
        let b = selection_histogram(&backward, &selection, &options).unwrap();
        assert_eq!(a.released_items, 6);
        assert_eq!(a.items, b.items);
    }

    #[test]
    fn counts_summed_over_parts_release_what_the_whole_rows_release() {
        let population = population();
        let key = SamplingKey::derive(b"parts").unwrap();
        let options = options(4, ItemChoice::Keyed(key.clone()));
        let selection = PartitionSelection::calibrate(
            Method::LaplaceThreshold,
            1.0,
            1e-8,
            4,
            Neighbours::AddRemove,
        )
        .unwrap();
        let sample_threshold = SampleThreshold::calibrate_items_keyed(
            1.0,
            1e-8,
            4,
            PlanTarget::Threshold(20),
            Neighbours::AddRemove,
        )
        .unwrap();
        for mechanism in [
            ItemsMechanism::Selection(selection),
            ItemsMechanism::SampleThreshold(sample_threshold.clone()),
        ] {
            let coin = match &mechanism {
                ItemsMechanism::Selection(_) => None,
                ItemsMechanism::SampleThreshold(m) => Some(m.keyed_coin(key.clone()).unwrap()),
            };
            // Three parts, each client's rows in one part, in reverse order.
            let mut parts = vec![KeyedItemCounts::new(key.clone(), 4, coin); 3];
            for (c, (client, items)) in population.client_items().into_iter().enumerate() {
                let mut names: Vec<&str> = items
                    .iter()
                    .map(|&item| population.item_name(item).unwrap())
                    .collect();
                names.reverse();
                parts[c % 3].absorb_client(client.as_bytes(), &names);
            }
            let mut counts = BTreeMap::new();
            let mut clients = 0;
            for part in parts {
                clients += part.clients();
                for (item, count) in part.into_counts() {
                    *counts.entry(String::from_utf8(item).unwrap()).or_insert(0) += count;
                }
            }
            let counted = ItemCounts {
                counts,
                clients,
                source: population.source().to_owned(),
                execution: KEYED_EXECUTION.to_owned(),
            };
            let whole = mechanism.histogram(&population, &options).unwrap();
            assert!(whole.released_items > 0);
            assert_eq!(mechanism.release_counts(&counted, &options).unwrap(), whole);
        }
    }
}
