//! Placing clients' items in a public domain `0..B`, and running the histogram mechanisms
//! that need one ([`DomainHistogram`]).
//!
//! A mechanism that releases an estimate for every domain element publishes the domain, so
//! the domain must be fixed before the data are seen: either the items are integers below a
//! public bound ([`DomainMap::Integers`]) or any item is hashed into a public number of
//! buckets ([`DomainMap::Buckets`]). A domain read off the data (the distinct items present)
//! would itself reveal which items occur, so it is not offered.

use std::fmt;

use rand_chacha::ChaCha12Rng;
use tally_core::histogram::DomainHistogram;

use crate::Error;
use crate::population::Population;
use crate::rng::{Purpose, stream};

/// How items map to the public domain `0..B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DomainMap {
    /// Items are integers in `0..B`, written in decimal.
    Integers(u32),
    /// Any item goes to bucket `xxh3_64(utf-8 bytes) mod B`, the same bucket on every run and
    /// platform.
    Buckets(u32),
}

impl DomainMap {
    /// The domain size `B`.
    pub fn size(self) -> u32 {
        match self {
            Self::Integers(size) | Self::Buckets(size) => size,
        }
    }

    /// The domain element of the item named `name`, or `None` if an integer domain does not
    /// hold it.
    pub fn element(self, name: &str) -> Option<u32> {
        match self {
            Self::Integers(size) => name.trim().parse::<u32>().ok().filter(|&x| x < size),
            Self::Buckets(size) => Some(bucket(name, size)),
        }
    }

    /// Every client's domain element.
    ///
    /// # Errors
    ///
    /// [`Error::NotInDomain`] for the first item an integer domain does not hold.
    ///
    /// # Panics
    ///
    /// If the domain is empty (`B = 0`).
    pub fn apply(self, population: &Population) -> Result<DomainItems, Error> {
        assert!(self.size() > 0, "an empty domain");
        // Map each distinct item once, then every client through the table.
        let table = (0..population.domain_size() as u32)
            .map(|id| {
                // Unwrap safety: every id below the domain size has a name.
                let name = population.item_name(id).expect("an id of the vocabulary");
                if population.true_count(id) == 0 {
                    return Ok(0);
                }
                self.element(&name).ok_or_else(|| Error::NotInDomain {
                    item: name.into_owned(),
                    size: self.size(),
                })
            })
            .collect::<Result<Vec<u32>, Error>>()?;
        let items: Vec<u32> = population
            .items()
            .iter()
            .map(|&id| table[id as usize])
            .collect();
        let mut true_counts = vec![0u64; self.size() as usize];
        for &x in &items {
            true_counts[x as usize] += 1;
        }
        Ok(DomainItems {
            map: self,
            items,
            true_counts,
        })
    }
}

impl fmt::Display for DomainMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integers(size) => write!(f, "integer items in [0, {size})"),
            Self::Buckets(size) => write!(f, "items hashed into {size} buckets"),
        }
    }
}

/// The bucket of `name` among `buckets`: the 64-bit XXH3 hash of its UTF-8 bytes, reduced
/// by multiply-shift (`⌊h·B/2^64⌋`, which maps the hash range onto the buckets evenly).
pub fn bucket(name: &str, buckets: u32) -> u32 {
    let hash = xxhash_rust::xxh3::xxh3_64(name.as_bytes());
    // Unwrap safety: the product's high word is below `buckets ≤ u32::MAX`.
    u32::try_from((u128::from(hash) * u128::from(buckets)) >> 64).expect("below the bucket count")
}

/// A population placed in a public domain: each client's domain element, and the true count
/// of every element (the ground truth for metrics).
#[derive(Clone)]
pub struct DomainItems {
    map: DomainMap,
    items: Vec<u32>,
    true_counts: Vec<u64>,
}

impl DomainItems {
    /// How the items were mapped.
    pub fn map(&self) -> DomainMap {
        self.map
    }

    /// Each client's domain element.
    pub fn items(&self) -> &[u32] {
        &self.items
    }

    /// The number of clients holding each domain element.
    pub fn true_counts(&self) -> &[u64] {
        &self.true_counts
    }

    /// A population whose clients hold these domain elements, named in decimal, for the
    /// mechanisms that take a [`Population`]; `source` describes the original input.
    ///
    /// # Errors
    ///
    /// As [`Population::from_ids`].
    pub fn into_population(self, source: &str) -> Result<Population, Error> {
        let names = (0..self.map.size()).map(|x| x.to_string()).collect();
        let description = format!("{source}, {}", self.map);
        Population::from_ids(self.items, names, description)
    }
}

impl fmt::Debug for DomainItems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DomainItems")
            .field("map", &self.map)
            .field("clients", &self.items.len())
            .finish_non_exhaustive()
    }
}

/// Runs `mechanism` over the clients' domain elements with randomness from `seed`, and
/// returns its (unclamped) estimate of every element's count.
///
/// # Panics
///
/// If the mechanism's domain differs from the items' domain.
pub fn run_domain_histogram(
    mechanism: &dyn DomainHistogram,
    items: &DomainItems,
    seed: u64,
) -> Vec<f64> {
    assert_eq!(
        mechanism.domain(),
        items.map.size(),
        "the mechanism's domain is not the items' domain"
    );
    mechanism.estimate_counts(&items.items, &mut mechanism_rng(seed))
}

/// The generator of a one-round mechanism run with `seed` (its own ChaCha stream, apart from
/// the streams that load or generate data with the same seed).
pub fn mechanism_rng(seed: u64) -> ChaCha12Rng {
    stream(seed, Purpose::DomainMechanism, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_spread() {
        // Pinned (the XXH3-64 values from the reference Python `xxhash` package): the bucket of
        // a name must never change across versions or platforms.
        assert_eq!(bucket("the", 1 << 10), 812);
        assert_eq!(bucket("Hamlet", 1 << 10), 1000);
        let mut counts = [0u32; 16];
        for i in 0..16_000 {
            counts[bucket(&format!("word{i}"), 16) as usize] += 1;
        }
        // Binomial(16000, 1/16): mean 1000, sd ≈ 31; 6 sd either side.
        assert!(
            counts.iter().all(|&c| (814..=1186).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn integer_domains_accept_only_integers_below_the_size() {
        let map = DomainMap::Integers(10);
        assert_eq!(map.element("7"), Some(7));
        assert_eq!(map.element("10"), None);
        assert_eq!(map.element("-1"), None);
        assert_eq!(map.element("word"), None);
    }

    #[test]
    fn a_population_outside_the_integer_domain_is_refused() {
        let population = Population::from_names(["1", "2", "x"].map(String::from), "test").unwrap();
        let err = DomainMap::Integers(4).apply(&population).unwrap_err();
        assert!(err.to_string().contains("\"x\""), "{err}");
        let items = DomainMap::Integers(4)
            .apply(&Population::from_names(["1", "3", "3"].map(String::from), "t").unwrap())
            .unwrap();
        assert_eq!(items.true_counts(), &[0, 1, 0, 2]);
    }
}
