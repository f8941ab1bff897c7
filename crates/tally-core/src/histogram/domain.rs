//! Histogram mechanisms over a public domain: one interface for the central, local and shuffle
//! mechanisms that estimate the count of every element of `0..B`.

use rand::Rng;
use tally_accounting::Guarantee;

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

    /// What each client sends, for mechanisms whose clients send messages.
    fn message_cost(&self) -> Option<MessageCost> {
        None
    }

    /// Runs the mechanism on the clients' items (one per client, each below
    /// [`domain`](Self::domain)) and returns the estimated count of every domain element,
    /// unclamped (estimates may be negative).
    ///
    /// # Panics
    ///
    /// If an item is outside the domain.
    fn estimate_counts(&self, items: &[u32], rng: &mut dyn Rng) -> Vec<f64>;
}

/// Counts how many of `items` equal each element of `0..domain`.
///
/// # Panics
///
/// If an item is outside the domain.
pub(crate) fn count_items(domain: u32, items: &[u32]) -> Vec<u64> {
    let mut counts = vec![0u64; domain as usize];
    for &item in items {
        assert!(item < domain, "item {item} outside the domain 0..{domain}");
        counts[item as usize] += 1;
    }
    counts
}
