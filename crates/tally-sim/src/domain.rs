//! Placing clients' items in a public domain `0..B` ([`DomainMap`]), and running the
//! histogram mechanisms that need one ([`DomainHistogram`]), each defined as a round, by the
//! round executor ([`run_domain_round`]).

use std::fmt;

use rand_chacha::ChaCha12Rng;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::protocol::DomainRound;

use crate::Error;
use crate::population::Population;
use crate::rng::{Purpose, stream};
use crate::round::run_domain_round;

/// Places a population in a public domain.
pub trait PlaceInDomain {
    /// Every client's domain element.
    ///
    /// # Errors
    ///
    /// [`Error::NotInDomain`] for the first item an integer domain does not hold.
    ///
    /// # Panics
    ///
    /// If the domain is empty (`B = 0`).
    fn apply(self, population: &Population) -> Result<DomainItems, Error>;
}

impl PlaceInDomain for DomainMap {
    fn apply(self, population: &Population) -> Result<DomainItems, Error> {
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

/// A histogram mechanism over a public domain with its round ([`DomainMechanism::round`]), as
/// the simulator runs it: through [`run_domain_round`].
pub struct DomainMechanism(Box<dyn RoundMechanism>);

/// A mechanism and its round, as [`DomainMechanism`] holds them.
pub trait RoundMechanism: Send + Sync {
    /// The mechanism's name, domain and guarantees.
    fn describe(&self) -> &dyn DomainHistogram;

    /// [`run_domain_round`] of the mechanism's round over the clients, `counts[j]` of them
    /// holding element `j`.
    fn run(&self, counts: &[u64], seed: u64) -> Vec<f64>;
}

/// A mechanism `M` with its round `R`.
struct MechanismRound<M, R> {
    mechanism: M,
    round: R,
}

impl<M, R> RoundMechanism for MechanismRound<M, R>
where
    M: DomainHistogram,
    R: DomainRound<Query: Sync, Aggregator: Send> + Send + Sync,
{
    fn describe(&self) -> &dyn DomainHistogram {
        &self.mechanism
    }

    fn run(&self, counts: &[u64], seed: u64) -> Vec<f64> {
        run_domain_round(&self.round, counts, seed)
    }
}

impl DomainMechanism {
    /// `mechanism`, run as its `round`.
    pub fn round<M, R>(mechanism: M, round: R) -> Self
    where
        M: DomainHistogram + 'static,
        R: DomainRound<Query: Sync, Aggregator: Send> + Send + Sync + 'static,
    {
        Self(Box::new(MechanismRound { mechanism, round }))
    }

    /// The mechanism's name, domain and guarantees.
    pub fn describe(&self) -> &dyn DomainHistogram {
        self.0.describe()
    }

    /// [`run_domain_histogram`] over the clients, `counts[j]` of them holding element `j`.
    ///
    /// # Panics
    ///
    /// If `counts` does not have one entry per element of the mechanism's domain.
    pub fn run(&self, counts: &[u64], seed: u64) -> Vec<f64> {
        assert_eq!(
            counts.len(),
            self.describe().domain() as usize,
            "one count per domain element"
        );
        self.0.run(counts, seed)
    }
}

impl fmt::Debug for DomainMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DomainMechanism")
            .field(&self.describe().name())
            .finish()
    }
}

/// Runs `mechanism` over the clients, `counts[j]` of them holding domain element `j`, with
/// randomness from `seed`, and returns its (unclamped) estimate of every element's count: its
/// round runs through [`run_domain_round`] (its aggregator's coins are then those of a federated
/// server seeded with `seed`, see [`crate::aggregator_coins`]).
///
/// # Panics
///
/// If `counts` does not have one entry per element of the mechanism's domain.
pub fn run_domain_histogram(mechanism: &DomainMechanism, counts: &[u64], seed: u64) -> Vec<f64> {
    mechanism.run(counts, seed)
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
