//! Histograms over clients of several items, each contributing at most `k` distinct items:
//! partition selection (`tally histogram --mechanism laplace-threshold|gaussian-threshold|
//! truncated-geometric`) and sample-and-threshold with one coin per (client, item)
//! (`--max-items-per-client k`), with their documents as `tally histogram --json` prints them.
//!
//! A client with more than `k` distinct items keeps a uniform `k`-subset of them: drawn from a
//! ChaCha stream of the seed ([`tally_core::sampling::bound_items`]), or keyed by the sampling
//! key ([`tally_core::sampling::choose_items`]), so the same key keeps the same items here, in
//! Python and on Spark. Sample-and-threshold then flips one coin per kept item (never one per
//! client: docs/privacy/sample-threshold.md, "Several items per client"), keyed
//! ([`tally_core::sampling::KeyedCoin::flip_item`]) or exact from the seed's stream. The noise
//! of a partition selection always comes from the seed's generator, never from the key.

use tally_accounting::Neighbours;
use tally_accounting::partition_selection::Method;
use tally_accounting::sample_threshold::PlanTarget;
use tally_core::histogram::{PartitionSelection, SampleThreshold, SelectionRelease};
use tally_core::sampling::{SamplingKey, bound_items, choose_items};
use tally_messages::{HistogramRelease, ReleasedItem};
use tally_protocol::document;

use crate::KeyedPopulation;
use crate::rng::{Purpose, stream};
use crate::sample_threshold_release::{KEYED_EXECUTION, named};

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
    /// parameters.
    fn document(
        &self,
        population: &KeyedPopulation,
        build: impl FnOnce(u64, f64, String, &str, Option<u64>) -> HistogramRelease,
    ) -> HistogramRelease {
        let chosen = match self.choice {
            ItemChoice::Seeded => "uniformly",
            ItemChoice::Keyed(_) => "by the sampling key",
        };
        let input = format!(
            "{} clients of {}, each contributing at most {} of its distinct items, chosen {chosen}",
            population.len(),
            population.source(),
            self.max_items
        );
        let mut document = build(
            population.len() as u64,
            self.target_delta,
            input,
            self.choice.execution(),
            self.shown_seed,
        );
        document.parameters["max_items_per_client"] = serde_json::json!(self.max_items);
        document
    }

    /// Each client's id and its at most `max_items` distinct item ids.
    fn bounded(&self, population: &KeyedPopulation) -> Result<Vec<(String, Vec<u32>)>, Error> {
        let mut rng = stream(self.seed, Purpose::ItemsPerClient, 0);
        population
            .client_items()
            .into_iter()
            .map(|(client, items)| {
                let kept = match &self.choice {
                    ItemChoice::Seeded => bound_items(&items, self.max_items, &mut rng)?,
                    ItemChoice::Keyed(key) => {
                        let names: Vec<&str> = items
                            .iter()
                            .map(|&item| population.item_name(item).unwrap_or_default())
                            .collect();
                        choose_items(key, 0, client.as_bytes(), &names, self.max_items)
                    }
                };
                let kept = kept.into_iter().map(|position| items[position]).collect();
                Ok((client, kept))
            })
            .collect()
    }
}

/// The errors of a release over clients of several items.
pub type Error = tally_core::Error;

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
}

/// Runs the partition selection `selection` over `population`, each client's items bounded as
/// `options` says, and builds the release's document.
///
/// # Privacy
///
/// The guarantee is `selection`'s ([`PartitionSelection::guarantee`]), which holds because
/// every client reports at most `options.max_items` distinct items (`selection` must be
/// calibrated for that bound). The noise is drawn from the seed's generator.
///
/// # Errors
///
/// [`Error::InvalidParameter`] if `options.max_items` is 0.
pub fn selection_histogram(
    population: &KeyedPopulation,
    selection: &PartitionSelection,
    options: &ItemsRelease,
) -> Result<HistogramRelease, Error> {
    let mut aggregator = selection.aggregator();
    for (_, items) in options.bounded(population)? {
        for item in items {
            aggregator.absorb(item);
        }
    }
    let release = aggregator.release(&mut stream(options.seed, Purpose::PartitionSelection, 0));
    let items = selection_items(&release, population);
    Ok(
        options.document(population, |clients, delta, input, execution, seed| {
            document::partition_selection(items, selection, clients, delta, input, execution, seed)
        }),
    )
}

/// The released items with their names: the noisy count as the estimate where there is one.
fn selection_items(release: &SelectionRelease, population: &KeyedPopulation) -> Vec<ReleasedItem> {
    release
        .items
        .iter()
        .map(|selected| ReleasedItem {
            item: population
                .item_name(selected.item)
                .map_or_else(|| selected.item.to_string(), str::to_owned),
            count: None,
            estimate: selected.noisy_count.map(|count| count as f64),
        })
        .collect()
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
    let bounded = options.bounded(population)?;
    let mut aggregator = mechanism.aggregator(population.domain_size());
    match &options.choice {
        ItemChoice::Seeded => {
            let query = mechanism.query();
            let mut rng = stream(options.seed, Purpose::ItemsPerClient, 1);
            for (_, items) in &bounded {
                aggregator.absorb_all(&query.respond_items(items, &mut rng));
            }
        }
        ItemChoice::Keyed(key) => {
            let coin = mechanism.keyed_coin(key.clone())?;
            for (client, items) in &bounded {
                for &item in items {
                    let name = population.item_name(item).unwrap_or_default();
                    if coin.flip_item(0, client.as_bytes(), name.as_bytes()) {
                        aggregator.absorb(item);
                    }
                }
            }
        }
    }
    let items = named(&aggregator.release(), |id| {
        population.item_name(id).map(str::to_owned)
    });
    Ok(
        options.document(population, |clients, delta, input, execution, seed| {
            document::sample_threshold(items, mechanism, clients, delta, input, execution, seed)
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2000 clients: each holds `common-0..common-5` and three items of its own.
    fn population() -> KeyedPopulation {
        let mut clients = Vec::new();
        let mut items = Vec::new();
        for c in 0..2000 {
            for i in 0..6 {
                clients.push(format!("u{c}"));
                items.push(format!("common-{i}"));
            }
            for i in 0..3 {
                clients.push(format!("u{c}"));
                items.push(format!("own-{c}-{i}"));
            }
        }
        KeyedPopulation::from_rows(&clients, &items, "test rows").unwrap()
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
    fn bounding_keeps_at_most_k_distinct_items_per_client() {
        let population = population();
        let key = SamplingKey::derive(b"items").unwrap();
        for choice in [ItemChoice::Seeded, ItemChoice::Keyed(key)] {
            let bounded = options(4, choice).bounded(&population).unwrap();
            assert_eq!(bounded.len(), 2000);
            for (_, items) in &bounded {
                let mut distinct = items.clone();
                distinct.sort_unstable();
                distinct.dedup();
                assert_eq!(distinct.len(), 4);
            }
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
}
