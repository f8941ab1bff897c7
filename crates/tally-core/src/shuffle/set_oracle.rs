//! `k`-set frequency oracles as rounds (Definition 5.1 of Ghazi, Golowich, Kumar, Pagh and
//! Velingker, arXiv 1908.11358v4): every device holds a set of at most `k` items of `0..B`,
//! and the round releases an estimate of how many sets contain each item. Ghazi et al.'s
//! Hadamard ([`super::HadamardRound`]) and Count-Min ([`super::CountMinRound`]) rounds are
//! such oracles; the range tree ([`super::RangeRound`]) is built on any of them.

use rand::Rng;
use tally_accounting::{Collusion, Guarantee};

use crate::Error;
use crate::histogram::MessageCost;
use crate::protocol::{DeviceQuery, Estimates, RoundProtocol};

/// The query of a `k`-set frequency oracle: how a device holding a set answers.
pub trait SetQuery: DeviceQuery<Input = u32> + Clone + std::fmt::Debug {
    /// The largest set size `k`.
    fn set_size(&self) -> u32;

    /// The report of a device holding `set` (distinct items of the domain, at least one and at
    /// most `k`), with its own coins from `rng`; `None` for any other set.
    fn respond_set<R: Rng + ?Sized>(&self, set: &[u32], rng: &mut R) -> Option<Self::Report>;
}

/// How many devices' sets contain each item, and how many sets have each size: all that the
/// law of a [`SetOracleRound`]'s aggregate depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetHolders {
    /// `of_item[x]`: the number of sets containing item `x`, one entry per item of the domain.
    pub of_item: Vec<u64>,
    /// `of_size[s]`: the number of sets of `s` items (missing entries are 0).
    pub of_size: Vec<u64>,
}

impl SetHolders {
    /// `holders[x]` devices holding the one-item set `{x}`.
    pub fn of_single_items(holders: &[u64]) -> Self {
        Self {
            of_item: holders.to_vec(),
            of_size: vec![0, holders.iter().sum()],
        }
    }

    /// The number of devices.
    pub fn devices(&self) -> u64 {
        self.of_size.iter().sum()
    }

    /// Whether these are the holders of `users` devices' sets over `domain` items: the
    /// precondition of a count path calibrated for `users` devices.
    ///
    /// # Panics
    ///
    /// If there is not one count per item.
    pub fn of_devices(&self, domain: u32, users: u64) -> bool {
        assert_eq!(
            self.of_item.len(),
            domain as usize,
            "one count per domain item"
        );
        self.devices() == users
    }

    /// The number of devices whose set has at most `size` items.
    pub fn at_most(&self, size: usize) -> u64 {
        self.of_size.iter().take(size + 1).sum()
    }
}

/// A `k`-set frequency oracle as a round: its query's [`SetQuery::respond_set`] is the
/// oracle's randomizer, its aggregator the analyzer, its release every item's estimate.
///
/// # Privacy
///
/// An implementation states its guarantee in [`guarantee`](Self::guarantee), for neighbours
/// that change one device's whole set of at most `k` items; protocols built on it (Theorem 5.1)
/// inherit it as long as each device reports one such set.
pub trait SetOracleRound: RoundProtocol<Query: SetQuery, Release = Estimates> {
    /// The domain size `B`.
    fn domain(&self) -> u32;

    /// The guarantee of one round.
    fn guarantee(&self) -> Guarantee;

    /// The guarantee of one round an honest device keeps when a fraction
    /// `colluding_fraction` of the devices colludes with the analyst
    /// ([`tally_accounting::collusion`]).
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] if `colluding_fraction ∉ [0, 1]` or the analysis fails.
    fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error>;

    /// What each device sends.
    fn message_cost(&self) -> MessageCost;

    /// The aggregator after every device answered, drawn with the same law from `holders`
    /// alone (without forming the reports) when the oracle can; its coins, as the devices',
    /// from `rng`. `None` (the default) when every device must answer.
    ///
    /// # Panics
    ///
    /// If `holders` does not have one entry per item.
    fn aggregate_sets<R: Rng + ?Sized>(
        &self,
        holders: &SetHolders,
        rng: &mut R,
    ) -> Option<Self::Aggregator> {
        let _ = (holders, rng);
        None
    }
}

/// Checks the set size `k` of a query over `domain` items: `1 ≤ k < B`.
pub(crate) fn check_set_size(set_size: u32, domain: u32) -> Result<(), Error> {
    if (1..domain).contains(&set_size) {
        Ok(())
    } else {
        Err(Error::invalid("set size", set_size, "in [1, B)"))
    }
}

/// Whether `set` holds at least one and at most `set_size` distinct items, each below `domain`.
pub(crate) fn valid_set(set: &[u32], set_size: u32, domain: u32) -> bool {
    !set.is_empty()
        && set.len() <= set_size as usize
        && set.iter().all(|&x| x < domain)
        && set.iter().enumerate().all(|(i, x)| !set[..i].contains(x))
}
