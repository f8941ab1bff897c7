//! The round protocol as traits: one definition of a mechanism's round that every executor
//! (the simulator, the federated server and its devices) drives alike.
//!
//! A round has three sides, after libprio's split of a VDAF into client, aggregator and
//! collector:
//!
//! - [`DeviceQuery`], what the server broadcasts: how a device turns its data into a report
//!   ([`DeviceQuery::respond`], with its own coins) and which reports some device could have
//!   sent ([`DeviceQuery::admits`], the aggregator's check before counting one);
//! - [`RoundProtocol`], the whole round as the server holds it: its query, plus how to make
//!   the aggregator that counts its reports (with the release rule's parameters, which devices
//!   need not know);
//! - [`RoundAggregator`], which [`absorbs`](RoundAggregator::absorb) reports,
//!   [`merges`](RoundAggregator::merge) with other shards and [`releases`](RoundAggregator::release)
//!   only through the mechanism's release rule.
//!
//! A multi-round algorithm is a [`crate::task::Task`] whose queries are such rounds. Its
//! guarantee is fixed when it is built, through `tally-accounting`.
//!
//! Reports cross the wire in one encoding, [`WireReport`]; an executor that holds reports as
//! bytes (the federated runtime) uses the object-safe layer of [`wire`]: a
//! [`wire::DeviceResponder`] answers for a device from its data as text, a
//! [`wire::WireAggregator`] decodes, checks and counts uploaded reports, refusing (never
//! dropping) one that does not decode or is not admitted.
//!
//! # Privacy
//!
//! Each round's guarantee is its mechanism's, stated and computed where the mechanism is
//! defined; the [`TrustModel`] of a round (the guarantee's own, from `tally-accounting`) says
//! whom the guarantee protects against, and so which party must be trusted for it to hold,
//! and an executor enforces the matching boundary (the federated runtime keeps raw reports
//! inside the aggregator of [`RoundProtocol::aggregator`], whose only way out is
//! [`RoundAggregator::release`]).

mod central_histogram;
mod domain_round;
mod estimates;
mod features;
mod fixed_batch;
mod local_histogram;
mod messages;
mod searches;
mod selection_round;
mod shuffled;
mod single_round;
mod threshold_round;
pub mod wire;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
pub use tally_accounting::TrustModel;

pub(crate) use central_histogram::add_noise;
pub use central_histogram::{CentralCounts, CentralHistogramRound, DomainElement, NoisyCounts};
pub use domain_round::{CountedRound, DomainRound};
pub use estimates::Estimates;
pub(crate) use features::to_unit;
pub use features::{BucketOfLevel, SideOfSplit, WholeItem};
pub use fixed_batch::{Ballot, PrefixBallot, TrieHhBatch, TrieHhBatchRound};
pub use local_histogram::{LocalHistogramRound, LocalRandomizer};
pub use messages::{MultiMessage, SingleMessage, decode_messages, encode_messages};
pub use searches::QuantileSearches;
pub use selection_round::{
    ItemReport, PartitionSelectionRound, SelectedItems, SelectionCounts, SelectionReport,
};
pub use shuffled::{Shuffled, ShuffledAggregator, uniform_shuffle};
pub use single_round::SingleRound;
pub use threshold_round::{
    CoinHolder, ReportFeature, SampleThresholdAsk, SampleThresholdCells, SampleThresholdRound,
    ThresholdCell,
};

/// What the server broadcasts for one round: how a device answers it and which reports the
/// aggregator may count.
pub trait DeviceQuery {
    /// A device's data: an item, a number.
    type Input: ?Sized;
    /// What a device sends: one message or several.
    type Report: MultiMessage;

    /// The party this round's guarantee trusts.
    fn trust(&self) -> TrustModel;

    /// The device side: its report for `input`, with its own coins from `rng` where the
    /// mechanism samples or randomizes on the device; `None` to abstain.
    fn respond<R: Rng + ?Sized>(&self, input: &Self::Input, rng: &mut R) -> Option<Self::Report>;

    /// Whether some device could have sent `report` for this round (in range, canonical): the
    /// aggregator's check before it counts a report.
    fn admits(&self, report: &Self::Report) -> bool;

    /// Whether `message` could be one message of a report this round admits: the check of a
    /// message that reaches the aggregator on its own (sealed alone by its device, mixed with
    /// every device's messages by a relay, so that no report is ever whole again). By
    /// default, whether the report made of the message alone is admitted; a round that
    /// admits only whole reports (a fixed number of messages, one in every row) checks the
    /// message's own range instead.
    fn admits_message(&self, message: &<Self::Report as MultiMessage>::Message) -> bool {
        self.admits(&Self::Report::from_message(message.clone()))
    }
}

/// A whole round as the server holds it: the query it broadcasts and its aggregator.
pub trait RoundProtocol {
    /// What devices are asked.
    type Query: DeviceQuery;
    /// What the round publishes.
    type Release;
    /// Counts the round's reports and applies its release rule.
    type Aggregator: RoundAggregator<Report = <Self::Query as DeviceQuery>::Report, Release = Self::Release>;

    /// The broadcast query.
    fn query(&self) -> &Self::Query;

    /// An empty aggregator for this round, drawing whatever secret coins it flips (e.g. the
    /// Poisson sample of aggregator-side sampling) from `rng`.
    fn aggregator(&self, rng: ChaCha20Rng) -> Self::Aggregator;
}

/// The aggregator of one round: the only place its raw reports are counted.
pub trait RoundAggregator {
    /// What it counts.
    type Report;
    /// What it publishes.
    type Release;

    /// Counts one admitted report.
    fn absorb(&mut self, report: Self::Report);

    /// Counts `times` devices' copies of one admitted report: in law, what `times` calls of
    /// [`RoundAggregator::absorb`] count. By default those calls; an aggregator that counts
    /// (and samples) reports overrides it with one step.
    fn absorb_repeated(&mut self, report: Self::Report, times: u64)
    where
        Self::Report: Clone,
    {
        for _ in 0..times {
            self.absorb(report.clone());
        }
    }

    /// Adds another shard's reports of the same round to this one.
    fn merge(&mut self, other: Self);

    /// Applies the round's release rule: the only way counts leave.
    fn release(self) -> Self::Release;
}

/// How a report is written on the wire: one encoding per report type, strict both ways, so
/// that every report has exactly one spelling and an upload either decodes or is refused.
pub trait WireReport: Sized {
    /// The report as sent (taken by value: a text report is its own encoding, moved, not
    /// copied).
    fn encode(self) -> String;

    /// The report an upload spells, or `None` if it is not the one spelling of any.
    fn decode(text: String) -> Option<Self>;
}

impl WireReport for String {
    fn encode(self) -> String {
        self
    }

    fn decode(text: String) -> Option<Self> {
        Some(text)
    }
}

impl WireReport for u32 {
    /// Decimal, no sign, no leading zero.
    fn encode(self) -> String {
        self.to_string()
    }

    fn decode(text: String) -> Option<Self> {
        decode_decimal(&text)
    }
}

impl WireReport for u64 {
    /// Decimal, no sign, no leading zero.
    fn encode(self) -> String {
        self.to_string()
    }

    fn decode(text: String) -> Option<Self> {
        decode_decimal(&text)
    }
}

/// The unsigned integer `text` spells in canonical decimal (no sign, no leading zero).
fn decode_decimal<T: std::str::FromStr>(text: &str) -> Option<T> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

/// A device's data as the type a round's query takes, read from the text a device holds.
pub trait DeviceInput {
    /// Calls `answer` with `text` read as this type, or returns `None` if it is not one.
    fn read<T>(text: &str, answer: impl FnOnce(&Self) -> T) -> Option<T>;
}

impl DeviceInput for str {
    fn read<T>(text: &str, answer: impl FnOnce(&Self) -> T) -> Option<T> {
        Some(answer(text))
    }
}

impl DeviceInput for f64 {
    /// A finite number, surrounding whitespace ignored.
    fn read<T>(text: &str, answer: impl FnOnce(&Self) -> T) -> Option<T> {
        let x = text.trim().parse::<f64>().ok().filter(|x| x.is_finite())?;
        Some(answer(&x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_has_one_spelling() {
        for good in [0_u32, 7, 15, u32::MAX] {
            assert_eq!(u32::decode(good.encode()), Some(good));
        }
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            " 1",
            "1.0",
            "0x1",
            "4294967296",
            "99999999999999999999999",
        ] {
            assert_eq!(u32::decode(bad.to_owned()), None, "{bad:?}");
        }
    }

    #[test]
    fn numbers_are_finite_and_trimmed() {
        assert_eq!(f64::read(" 0.5\t", |x| *x), Some(0.5));
        for bad in ["apple", "", "NaN", "inf", "-inf"] {
            assert_eq!(f64::read(bad, |x| *x), None, "{bad:?}");
        }
        assert_eq!(str::read("apple", str::len), Some(5));
    }
}
