//! The shuffler boundary: which aggregator a round's uploads go into, by the trust model of
//! the round's guarantee.
//!
//! A round whose guarantee trusts a shuffler ([`TrustModel::Shuffle`]) gets its aggregator
//! behind tally-core's [`Shuffled`]: the server's upload path hands each admitted report over
//! without its token, credential or position (its `round.rs` never passes them on), the
//! shuffler holds
//! the reports, and at close permutes them with its own secret coins (an exactly uniform
//! permutation) before the round's analyzer sees any. Every other round feeds its aggregator
//! directly, as before (a sample-and-threshold aggregator only counts, and its coins are
//! flipped per report). Nothing about an individual report reaches the logs, the metrics or
//! an error: a refused upload is answered with its round kind's error code alone.
//!
//! # Privacy
//!
//! The boundary is in code, inside the one server process, not a separate trusted party: the
//! process that holds the reports before the shuffle also runs the analyzer and its coins
//! come from the same secret source (`docs/federated/threat-model.md`). What it guarantees is
//! that the analyzer's input, and so everything the round releases, is independent of who
//! sent which report and in which order.

use rand_chacha::ChaCha20Rng;
use tally_core::protocol::wire::{WireAggregator, WireRelease, wire_aggregator};
use tally_core::protocol::{
    DeviceQuery, MultiMessage, RoundProtocol, Shuffled, TrustModel, WireReport,
};

/// An empty aggregator for `round`, behind the shuffler when the round's guarantee trusts
/// one, its secret coins drawn from `rng`.
pub fn aggregator<P>(round: P, rng: ChaCha20Rng) -> Box<dyn WireAggregator>
where
    P: RoundProtocol<Query: DeviceQuery<Report: ShuffledReport> + Clone + Send + 'static>,
    P::Release: WireRelease,
    P::Aggregator: Send + 'static,
{
    match round.query().trust() {
        TrustModel::Shuffle => wire_aggregator(&Shuffled(round), rng),
        _ => wire_aggregator(&round, rng),
    }
}

/// A report as the shuffler takes it: its wire encoding, and the messages it splits into,
/// each with its own wire encoding (the messages a split-trust population's devices seal
/// apart), cloned for devices that send the same report.
pub trait ShuffledReport:
    WireReport + MultiMessage<Message: WireReport + Send + 'static> + Clone + Send + 'static
{
}

impl<T> ShuffledReport for T where
    T: WireReport + MultiMessage<Message: WireReport + Send + 'static> + Clone + Send + 'static
{
}
