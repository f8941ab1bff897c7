//! The wire types of a split-trust deployment: a relay that knows who sent a report but not
//! what it says, and an aggregator that knows what but not who.
//!
//! | hop | method and path | body | answer |
//! | --- | --- | --- | --- |
//! | device → aggregator | `GET /v1/hpke-keys` | | the key configurations ([`HPKE_KEYS_MEDIA_TYPE`]) |
//! | device → relay | `GET /v1/rounds` | | `[RoundQuery]`, the aggregator's, verbatim |
//! | device → relay | `POST /v1/rounds/{id}/check-in` | [`CheckIn`](crate::CheckIn) | [`CheckInGrant`](crate::CheckInGrant) |
//! | device → relay | `POST /v1/rounds/{id}/sealed-uploads` | [`SealedUploadBatch`] | [`UploadReceipt`](crate::UploadReceipt) |
//! | relay → aggregator | `GET /v1/rounds` | | `[RoundQuery]` |
//! | relay → aggregator | `POST /v1/rounds/{id}/relayed` | [`RelayedBatch`] | [`RelayReceipt`] |
//!
//! A device seals every message of its report to the aggregator's public key (HPKE, RFC 9180),
//! with the task, the round and a digest of the round's query bound as associated data, so the
//! relay carries ciphertexts it cannot read and cannot move to another round. The relay keeps
//! a round's uploads until the round closes, picks the cohort, flips the sampling coins of a
//! sample-and-threshold round, permutes every message of the round with its own secret coins,
//! and forwards them in one [`RelayedBatch`] that carries no device identity, order or timing.

use serde::{Deserialize, Serialize};

/// The media type of the aggregator's public key configurations, as RFC 9458 (Oblivious HTTP)
/// section 3.2 encodes them: each configuration preceded by its length in two bytes.
pub const HPKE_KEYS_MEDIA_TYPE: &str = "application/ohttp-keys";

/// One device's upload to the relay: its sealed messages, or none for an abstention.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedUpload {
    /// The token from the device's check-in at the relay.
    pub token: String,
    /// The report's messages, each sealed on its own (base64url, no padding): one for a report
    /// of one message, several for a shuffle-model report, none for an abstention. The relay
    /// never reads them.
    pub messages: Vec<String>,
}

/// Sealed uploads sent to the relay together (one for a device; many from a fleet).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealedUploadBatch {
    /// The protocol version, [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    pub version: u32,
    /// The uploads.
    pub uploads: Vec<SealedUpload>,
}

/// What the relay forwards to the aggregator when one of its rounds closes: the sealed
/// messages of the cohort it picked (of the sampled devices only, in a sample-and-threshold
/// round), uniformly permuted, with nothing that names a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayedBatch {
    /// The protocol version, [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    pub version: u32,
    /// The round's attempt the messages answer ([`RoundQuery::attempt`](crate::RoundQuery)).
    pub attempt: u32,
    /// How many devices the relay picked for the cohort (before any sampling coin): the
    /// aggregator refuses a batch below the round's minimum cohort.
    pub cohort: u64,
    /// The sealed messages, permuted.
    pub messages: Vec<String>,
}

/// What the aggregator did with a [`RelayedBatch`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RelayReceipt {
    /// Messages opened, admitted and counted.
    pub accepted: u64,
    /// Messages refused, by reason (a reason appears only when its count is positive).
    pub refused: Vec<RefusedMessages>,
}

/// How many messages of a batch were refused for one reason.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RefusedMessages {
    /// Why.
    pub code: crate::ErrorCode,
    /// How many.
    pub count: u64,
}

/// Which parties a task's guarantee trusts, printed beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustModel {
    /// One process is relay and aggregator: it sees who sent each report and what it says,
    /// and the guarantee holds against everyone but that process.
    #[default]
    SingleParty,
    /// A relay sees who but not what, and an aggregator what but not who; the guarantee
    /// holds against either of them alone (not against both colluding).
    Split,
}

impl TrustModel {
    /// Its name in the protocol: `single-party` or `split`.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleParty => "single-party",
            Self::Split => "split",
        }
    }

    /// Parses [`TrustModel::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::SingleParty, Self::Split]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

impl crate::Ask {
    /// The rate of the sample-and-threshold coin this ask's devices are sampled with, for an
    /// ask that has one (items, prefixes, splits and buckets): under
    /// [`Sampling::Aggregator`](crate::Sampling::Aggregator) a relay flips it for every device
    /// of the cohort it picked and forwards only the sampled devices' messages. `None` for an
    /// ask without sampling coins.
    pub fn sampling_rate(&self) -> Option<f64> {
        match self {
            Self::Item { sampling_rate }
            | Self::Prefix { sampling_rate, .. }
            | Self::Split { sampling_rate, .. }
            | Self::Bucket { sampling_rate, .. } => Some(*sampling_rate),
            Self::ItemReport {}
            | Self::PrefixBallot { .. }
            | Self::DomainElement { .. }
            | Self::ShuffledGrr { .. }
            | Self::BalcerCheu { .. }
            | Self::OptPrefixTree { .. }
            | Self::LocalReport { .. }
            | Self::GhaziHadamard { .. }
            | Self::RangeTree { .. }
            | Self::GhaziCountMin { .. }
            | Self::PrefixLevel { .. } => None,
        }
    }
}
