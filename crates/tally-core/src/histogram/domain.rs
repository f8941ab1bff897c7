//! Histogram mechanisms over a public domain: one interface for the central, local and shuffle
//! mechanisms that estimate the count of every element of `0..B`, and how a client's item is
//! placed in that domain ([`DomainMap`]).
//!
//! A mechanism that releases an estimate for every domain element publishes the domain, so
//! the domain must be fixed before the data are seen: either the items are integers below a
//! public bound ([`DomainMap::Integers`]) or any item is hashed into a public number of
//! buckets ([`DomainMap::Buckets`]). A domain read off the data (the distinct items present)
//! would itself reveal which items occur, so it is not offered.

use std::fmt;

use tally_accounting::{Collusion, ErrorLaw, Guarantee};

use crate::Error;

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

/// What one client sends: how many messages and how large each is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MessageCost {
    /// The expected number of messages a client sends.
    pub messages_per_client: f64,
    /// The size of one message in bits.
    pub bits_per_message: u64,
}

/// A histogram mechanism over the public domain `0..B`: each client holds one item in the
/// domain, and the mechanism estimates how many clients hold each domain element.
///
/// Unlike sample-and-threshold, which releases only the items that pass its threshold, these
/// mechanisms release an estimate for *every* domain element, so the domain must be public
/// (fixed before seeing the data).
///
/// # Privacy
///
/// [`guarantee`](Self::guarantee) is the guarantee of the release in the mechanism's own trust
/// model ([`Guarantee::model`]); mechanisms whose clients randomize their own reports also state
/// the local guarantee of one report in [`local_guarantee`](Self::local_guarantee).
pub trait DomainHistogram: Send + Sync {
    /// The mechanism's name as used on the command line (for example `laplace`).
    fn name(&self) -> &'static str;

    /// The domain size `B`.
    fn domain(&self) -> u32;

    /// The guarantee of the release, in the mechanism's trust model.
    fn guarantee(&self) -> Guarantee;

    /// The guarantee of one client's report in the local model, for mechanisms that randomize
    /// on the client.
    fn local_guarantee(&self) -> Option<Guarantee> {
        None
    }

    /// The guarantee an honest device keeps when a fraction `colluding_fraction` of the
    /// devices colludes with the analyst, and the floor when every other device does
    /// ([`tally_accounting::collusion`]), for a shuffle-model mechanism; `None` for central
    /// and local mechanisms, whose guarantees do not rest on other devices' honesty (the
    /// curator's noise, or each device's own, does all the hiding).
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] if `colluding_fraction ∉ [0, 1]` or the analysis fails.
    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, Error> {
        let _ = colluding_fraction;
        Ok(None)
    }

    /// What each client sends, for mechanisms whose clients send messages.
    fn message_cost(&self) -> Option<MessageCost> {
        None
    }

    /// The law of the estimate of an element held by `count` of the `clients` clients that
    /// report, or `None` where it has no closed form (where it depends on the counts of the
    /// other elements).
    fn error_law(&self, clients: u64, count: u64) -> Option<ErrorLaw> {
        let _ = (clients, count);
        None
    }
}

/// Checks that `map` places items in the mechanism's domain `0..domain`.
pub(crate) fn check_map(domain: u32, map: DomainMap) -> Result<(), Error> {
    if map.size() == domain {
        Ok(())
    } else {
        Err(Error::invalid(
            "domain",
            map.size(),
            "the size the mechanism was calibrated for",
        ))
    }
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
}
