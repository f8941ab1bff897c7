//! The wire types of tally's federated protocol: JSON over HTTP, versioned.
//!
//! Every path is under [`API_PREFIX`] (`/v1`), and the bodies a device or an analyst sends
//! carry `"version": 1` ([`PROTOCOL_VERSION`]); a server refuses any other version with
//! [`ErrorCode::Malformed`]. `docs/federated/protocol.md` documents the schema with examples;
//! this crate's tests check that every example there parses.
//!
//! | method and path | body | answer |
//! | --- | --- | --- |
//! | `POST /v1/tasks` | [`TaskSpec`] | [`TaskInfo`] (201) |
//! | `GET /v1/tasks` | | `[TaskInfo]` |
//! | `GET /v1/tasks/{id}` | | [`TaskInfo`] |
//! | `POST /v1/tasks/{id}/cancel` | | [`TaskInfo`] |
//! | `GET /v1/tasks/{id}/result` | | [`TaskResult`] |
//! | `GET /v1/rounds` | | `[RoundQuery]`, the open rounds |
//! | `POST /v1/rounds/{id}/check-in` | [`CheckIn`] | [`CheckInGrant`] |
//! | `POST /v1/rounds/{id}/uploads` | [`UploadBatch`] | [`UploadReceipt`] |
//! | `GET /v1/ledger` | | `[LedgerBalance]` |
//! | `POST /v1/populations` | [`PopulationSpec`] | [`PopulationInfo`] (201) |
//! | `GET /v1/populations` | | `[PopulationInfo]` |
//! | `POST /v1/credentials` | [`CredentialSpec`] | [`IssuedCredential`] (201) |
//! | `GET /v1/credentials` | | `[CredentialInfo]` |
//! | `POST /v1/credentials/{id}/revoke` | | [`CredentialInfo`] |
//!
//! Every request but `GET /healthz` carries a bearer credential (`Authorization: Bearer
//! TOKEN`) of one [`Role`]; every body is `Content-Type: application/json`. Errors are an
//! HTTP status with an [`ErrorBody`]. A split-trust deployment (a relay in front of the
//! aggregator) adds the paths of [`split`]'s table.
//!
//! This crate holds wire types and their encodings only. It depends on `tally-accounting` for
//! the names of neighbour relations, analyses and compositions, and never on `tally-core`: the
//! registry (`tally-protocol`) says how each kind of round is published as an [`Ask`] and
//! answered by a device.
#![forbid(unsafe_code)]

mod domain;
mod named;
mod opt_prefix_tree;
mod release;
pub mod split;

use serde::{Deserialize, Serialize};
pub use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection;
use tally_accounting::sample_threshold::Analysis;

pub use domain::{DomainHistogramMechanism, PublicDomain};
pub use opt_prefix_tree::{
    OptPrefixTreeOptions, Randomizer, SegmentRule, SelectionRule, UnknownName, WordEncoding,
};
pub use release::{
    CollusionBody, GuaranteeBody, HeavyHittersRelease, HistogramRelease, QuantileRow,
    QuantilesRelease, RangeBody, RangeRelease, ReleaseDiagnosis, ReleasedItem, TreeRangeRelease,
    TrieNodeBody,
};
pub use release::{DomainBody, DomainElementBody, DomainHistogramRelease};
pub use split::{
    HPKE_KEYS_MEDIA_TYPE, RefusedMessages, RelayReceipt, RelayedBatch, SealedUpload,
    SealedUploadBatch, TrustModel,
};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The prefix of every path of this protocol version.
pub const API_PREFIX: &str = "/v1";

/// What an analyst asks the server to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The population the devices belong to: the privacy-budget ledger is kept per population.
    pub population: String,
    /// How many devices the population has (for TrieHH++ and S&T this sets the default cohort
    /// target; the guarantee does not depend on it).
    pub expected_population: u64,
    /// The privacy target of the whole task.
    pub privacy: PrivacyTarget,
    /// The mechanism or algorithm and its parameters.
    pub kind: TaskKind,
    /// The rounds' schedule and the aggregator's limits.
    pub rounds: RoundPolicy,
    /// Who flips the sample-and-threshold coins: the aggregator (the default), or each
    /// device.
    #[serde(default)]
    pub sampling: Sampling,
}

/// Who flips a sample-and-threshold round's Poisson coins.
///
/// # Privacy
///
/// Sample-and-threshold's guarantee tolerates adversarial data from other devices, not
/// adversarial sampling: devices that always report a value (never flipping their coin) bring
/// it to the threshold whenever one more holder is sampled. With [`Sampling::Aggregator`]
/// every device uploads its report every round and the aggregator keeps each with
/// probability `sampling_rate`, with its own secret randomness, so no device can choose to be
/// sampled; [`Sampling::Device`] (less traffic: unsampled devices abstain) holds only if every
/// device flips its own coin honestly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    /// The aggregator samples the reports it receives.
    #[default]
    Aggregator,
    /// Each device samples itself and abstains when its coin says so.
    Device,
}

impl Sampling {
    /// Its name in the protocol: `aggregator` or `device`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Aggregator => "aggregator",
            Self::Device => "device",
        }
    }
}

/// The privacy target `(ε, δ)` of a task and how its guarantee is computed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyTarget {
    /// The total `ε` of the task.
    pub epsilon: f64,
    /// The total `δ` of the task.
    pub delta: f64,
    /// The neighbour relation the guarantee is stated for.
    #[serde(with = "named", default = "add_remove")]
    pub neighbours: Neighbours,
    /// The S&T analysis that turns parameters into `δ`.
    #[serde(with = "named", default = "tight")]
    pub analysis: Analysis,
}

fn add_remove() -> Neighbours {
    Neighbours::AddRemove
}

fn tight() -> Analysis {
    Analysis::Tight
}

/// How a multi-round task's levels compose: `given`, else the default for `neighbours` (tight
/// composition of the S&T loss pair for add/remove, basic for replace-one), as on the command
/// line.
pub fn round_composition(given: Option<Composition>, neighbours: Neighbours) -> Composition {
    given.unwrap_or_else(|| Composition::default_for_rounds(neighbours))
}

/// The mechanism (one round) or multi-round algorithm a task runs, with its parameters.
///
/// Parameters left out are calibrated from the privacy target, as on the command line: give
/// at most one of `sampling_rate` and `threshold`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TaskKind {
    /// One private histogram of the devices' items.
    Histogram {
        /// The mechanism.
        mechanism: HistogramMechanism,
        /// The sampling rate `p_s`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling_rate: Option<f64>,
        /// The threshold `τ`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<u64>,
    },
    /// Heavy-hitter discovery over several rounds.
    HeavyHitters {
        /// The algorithm.
        algorithm: HeavyHittersAlgorithm,
        /// Prefix-tree levels `L`.
        levels: u32,
        /// Characters added per level `g`.
        segment: u32,
        /// Whether devices report only below a surviving prefix.
        restricted: bool,
        /// How the levels' guarantees compose; left out, the default of the task's neighbour
        /// relation ([`Composition::default_for_rounds`]: tight for add/remove, basic for
        /// replace-one), see [`round_composition`].
        #[serde(
            with = "named::optional",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        composition: Option<Composition>,
        /// The per-level sampling rate `p_s`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling_rate: Option<f64>,
        /// The per-level threshold `τ`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<u64>,
    },
    /// Quantiles of the devices' numbers over several rounds.
    Quantiles {
        /// The algorithm.
        method: QuantileMethod,
        /// The quantiles to estimate, each in `[0, 1]`.
        quantiles: Vec<f64>,
        /// The tree's branching factor `β` (hierarchical only; 4 when left out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branching: Option<u32>,
        /// Hierarchical: the tree's levels `L` (its resolution is `β^(−L)` of the range);
        /// binary search: the rounds `h` of each search (resolution `2^(−h)`).
        levels: u32,
        /// Whether to make children sum to their parents before reading the quantiles
        /// (hierarchical only).
        #[serde(default)]
        consistent: bool,
        /// How the levels' guarantees compose; left out, the default of the task's neighbour
        /// relation ([`Composition::default_for_rounds`]: tight for add/remove, basic for
        /// replace-one), see [`round_composition`].
        #[serde(
            with = "named::optional",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        composition: Option<Composition>,
        /// The range `[min, max]` of the devices' numbers; `[0, 1]` when left out. A device
        /// with a number outside it counts at the nearer end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// The per-level sampling rate `p_s`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling_rate: Option<f64>,
        /// The per-level threshold `τ`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<u64>,
    },
    /// Heavy hitters in one sample-and-threshold round over the devices' whole items (`tally
    /// heavy-hitters --algorithm single-round`): the histogram's round, published as a
    /// heavy-hitter release.
    SingleRound {
        /// The sampling rate `p_s`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling_rate: Option<f64>,
        /// The threshold `τ`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<u64>,
    },
    /// The number of devices whose number lies in `[lo, hi)`, from a `β`-ary hierarchical
    /// histogram with one sample-and-threshold histogram of buckets per level (`tally range`).
    Range {
        /// The lower end of the counted range (included), in the devices' units.
        lo: f64,
        /// The upper end (excluded, except that a range ending at the top of `range` includes
        /// it).
        hi: f64,
        /// The tree's branching factor `β` (4 when left out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        branching: Option<u32>,
        /// The tree's levels `L` (its resolution is `β^(−L)` of the range).
        levels: u32,
        /// Whether to make children sum to their parents before counting.
        #[serde(default)]
        consistent: bool,
        /// How the levels' guarantees compose; left out, the default of the task's neighbour
        /// relation, see [`round_composition`].
        #[serde(
            with = "named::optional",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        composition: Option<Composition>,
        /// The range `[min, max]` of the devices' numbers; `[0, 1]` when left out. A device
        /// with a number outside it counts at the nearer end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// The per-level sampling rate `p_s`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sampling_rate: Option<f64>,
        /// The per-level threshold `τ`, if fixed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<u64>,
    },
    /// TrieHH heavy-hitter discovery: each round the aggregator keeps a fixed-size batch of
    /// `m` ballots, drawn uniformly without replacement, and accepts the prefixes with at
    /// least `θ` votes; `θ` and `m` are calibrated from the privacy target over
    /// `expected_population` devices (Corollary 1), and the guarantee is for replace-one
    /// neighbours.
    Triehh {
        /// Rounds `L`.
        levels: u32,
        /// Characters added per round `g`.
        segment: u32,
        /// Keep at most this many non-terminal prefixes per round, by votes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        beam: Option<u32>,
    },
    /// A histogram over a public domain: an estimate for every element, by a mechanism that
    /// needs no threshold.
    DomainHistogram {
        /// The mechanism.
        mechanism: DomainHistogramMechanism,
        /// The public domain and how devices place their items in it.
        domain: PublicDomain,
        /// The seed of the public coins of a mechanism that publishes some with its query
        /// ([`DomainHistogramMechanism::publishes_coins`]: Count-Min's hash functions), from
        /// which every build of the task draws the same ones. Left out, the server draws it
        /// from its own random stream when it creates the task and stores it in the task's
        /// spec. Public: the guarantee holds whatever it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_coins: Option<u64>,
    },
    /// Ghazi et al.'s range-query tree over `2^levels` equal buckets of the devices' numbers,
    /// in one shuffle round (`tally range` and `tally quantiles` with `--mechanism
    /// ghazi-hadamard|ghazi-count-min`): every device sends its bucket's chosen ancestors to
    /// the `k`-set frequency oracle `mechanism` (`k = 1 + levels`), calibrated for
    /// `expected_population` devices; the guarantee (shuffle model, replace-one neighbours) is
    /// the oracle's.
    RangeTree {
        /// The frequency oracle.
        mechanism: RangeTreeMechanism,
        /// The tree's depth `L`: `2^L` buckets.
        levels: u32,
        /// The range `[min, max]` of the devices' numbers; `[0, 1]` when left out. A device
        /// with a number outside it counts at the nearer end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// What is read from the tree.
        reading: TreeReading,
        /// Count-Min's accuracy failure probability `β`, which sets its number of hash rows
        /// ([`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`] when left out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_probability: Option<f64>,
        /// The seed of Count-Min's public hash functions, as for
        /// [`TaskKind::DomainHistogram`]'s `public_coins`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_coins: Option<u64>,
    },
    /// OptPrefixTree heavy-hitter discovery among devices holding many words each: every
    /// device sends one randomized one-hot report per iteration, behind the shuffler; the
    /// guarantee (shuffle model, replace-one neighbours) is computed for `min_cohort` reports
    /// per iteration.
    OptPrefixTree(OptPrefixTreeOptions),
    /// Ghazi et al.'s heavy hitters through a prefix tree of Count-Min oracles (`tally
    /// heavy-hitters --algorithm count-min-prefix-tree`): devices hold integers in
    /// `0..2^domain_bits`; round `i = 1…domain_bits` is one shuffle round of Count-Min over
    /// the length-`i` prefixes at `(ε/L, δ/L)`, calibrated for `expected_population` devices;
    /// the guarantee (shuffle model, replace-one neighbours) is their basic composition. The
    /// release is the items whose every prefix's estimate is at least `threshold / 2`.
    CountMinPrefixTree {
        /// `L`: the devices' items lie in `0..2^L`.
        domain_bits: u32,
        /// The heavy-hitter threshold `τ_HH`.
        threshold: u64,
        /// Count-Min's accuracy failure probability `β` of every level
        /// ([`tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA`] when left out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure_probability: Option<f64>,
        /// The seed of every level's public hash functions, as for
        /// [`TaskKind::DomainHistogram`]'s `public_coins`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_coins: Option<u64>,
    },
    /// TrieHH++ heavy hitters whose levels are partition selections: at each level every
    /// device below a surviving prefix votes for its next prefix, and the aggregator releases
    /// the prefixes whose noisy vote count passes the threshold.
    TriehhPlusSelection {
        /// The partition selection of every level: `laplace-threshold` or
        /// `gaussian-threshold`.
        mechanism: HistogramMechanism,
        /// Prefix-tree levels `L`.
        levels: u32,
        /// Characters added per level `g`.
        segment: u32,
        /// How the levels' guarantees compose; left out, optimal composition (the exact curve
        /// of `L` identical pairs).
        #[serde(
            with = "named::optional",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        composition: Option<Composition>,
    },
}

/// The frequency oracles a [`TaskKind::RangeTree`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RangeTreeMechanism {
    /// Ghazi et al.'s private-coin multi-message Hadamard response.
    GhaziHadamard,
    /// Ghazi et al.'s public-coin Count-Min sketch with binomial blanket noise.
    GhaziCountMin,
}

impl RangeTreeMechanism {
    /// Its name, as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::GhaziHadamard => "ghazi-hadamard",
            Self::GhaziCountMin => "ghazi-count-min",
        }
    }
}

/// What a [`TaskKind::RangeTree`] reads from its tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TreeReading {
    /// The number of devices whose number lies in `[lo, hi)` (`tally range`), in the devices'
    /// units; a range ending at the top of the devices' range includes it.
    Range {
        /// The lower end (included).
        lo: f64,
        /// The upper end (excluded).
        hi: f64,
    },
    /// These quantiles, each in `[0, 1]` (`tally quantiles`).
    Quantiles(Vec<f64>),
}

/// The histogram mechanisms over the devices' items (an unknown domain) the federated runtime
/// runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistogramMechanism {
    /// Sample-and-threshold: each device's own Poisson coin, a threshold in the aggregator.
    SampleThreshold,
    /// Partition selection: every device reports its item, the aggregator adds discrete
    /// Laplace noise to each item's count and releases the items whose noisy count passes a
    /// threshold.
    LaplaceThreshold,
    /// As `laplace-threshold`, with discrete Gaussian noise.
    GaussianThreshold,
    /// Partition selection: every device reports its item, the aggregator releases each item
    /// with the optimal probability of its count (keys only).
    TruncatedGeometric,
}

impl HistogramMechanism {
    /// The partition-selection method this mechanism is; `None` for sample-and-threshold.
    pub fn selection(self) -> Option<partition_selection::Method> {
        match self {
            Self::SampleThreshold => None,
            Self::LaplaceThreshold => Some(partition_selection::Method::LaplaceThreshold),
            Self::GaussianThreshold => Some(partition_selection::Method::GaussianThreshold),
            Self::TruncatedGeometric => Some(partition_selection::Method::TruncatedGeometric),
        }
    }

    /// The mechanism of the partition-selection method `method`.
    pub fn of_selection(method: partition_selection::Method) -> Self {
        match method {
            partition_selection::Method::LaplaceThreshold => Self::LaplaceThreshold,
            partition_selection::Method::GaussianThreshold => Self::GaussianThreshold,
            partition_selection::Method::TruncatedGeometric => Self::TruncatedGeometric,
        }
    }
}

/// The multi-round heavy-hitter algorithms the federated runtime runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeavyHittersAlgorithm {
    /// TrieHH++: one sample-and-threshold histogram of prefixes per level.
    #[serde(rename = "triehh++")]
    TrieHhPlus,
}

/// The quantile algorithms over sample-and-threshold rounds, as the simulator, the federated
/// runtime and the command line know them (with the `clap` feature, each variant's doc is its
/// help text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(any(test, feature = "clap"), derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum QuantileMethod {
    /// A β-ary hierarchical histogram: one sample-and-threshold histogram of buckets per level
    /// answers every quantile at once.
    Hierarchical,
    /// One interactive binary search per quantile: one sample-and-threshold histogram of two
    /// buckets (at or below the split point, above it) per round.
    BinarySearch,
}

/// How a task's rounds are run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundPolicy {
    /// No release from a round with fewer uploads (reports and abstentions) than this.
    pub min_cohort: u64,
    /// A round closes once this many devices uploaded; the expected population by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cohort_target: Option<u64>,
    /// A round closes this many seconds after it opened, whatever its cohort.
    pub deadline_secs: u64,
    /// How many times a round that closed below the minimum cohort (or was cut short by a
    /// restart) is run again with a fresh cohort before the task fails.
    pub max_attempts: u32,
    /// The largest report a device may upload, in bytes of UTF-8.
    pub max_report_bytes: u32,
}

/// The largest report size a task may allow ([`RoundPolicy::max_report_bytes`]): a
/// multi-message shuffle protocol's device sends hundreds of messages (Ghazi et al.'s Hadamard
/// protocol, `1 + ρ` tuples), and a fleet's batch of 256 such reports stays well within an
/// upload request's limit.
pub const MAX_REPORT_BYTES: u32 = 32_768;

impl Default for RoundPolicy {
    fn default() -> Self {
        Self {
            min_cohort: 100,
            cohort_target: None,
            deadline_secs: 600,
            max_attempts: 3,
            max_report_bytes: 256,
        }
    }
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Rounds are running.
    Running,
    /// The result is released and readable.
    Finished,
    /// The analyst cancelled it; nothing more is released.
    Cancelled,
    /// A round failed `max_attempts` times; nothing more is released.
    Failed,
}

impl TaskState {
    /// The name used in JSON and in storage.
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }

    /// Parses [`TaskState::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Running, Self::Finished, Self::Cancelled, Self::Failed]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// What the server knows of a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// The task's id.
    pub id: String,
    /// What was asked.
    pub spec: TaskSpec,
    /// The guarantee of the whole task, computed by the server.
    pub guarantee: GuaranteeBody,
    /// Where the task is.
    pub state: TaskState,
    /// Rounds released so far.
    pub rounds_released: u32,
    /// The open round, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_round: Option<String>,
    /// Why the task failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the task was created, in seconds since the Unix epoch.
    pub created_at: i64,
}

/// A finished task's release: the same JSON document `tally histogram --json`,
/// `tally heavy-hitters --json` or `tally quantiles --json` prints for a simulation with the
/// same parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskResult {
    /// A heavy-hitter task's release.
    HeavyHitters(HeavyHittersRelease),
    /// A histogram task's release.
    Histogram(HistogramRelease),
    /// A quantile task's release.
    Quantiles(QuantilesRelease),
    /// A domain histogram task's release.
    DomainHistogram(DomainHistogramRelease),
    /// A range-count task's release.
    Range(RangeRelease),
    /// A range-query tree's range count.
    TreeRange(TreeRangeRelease),
}

/// The query of an open round: what every device is asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundQuery {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The round's id, used to check in and upload.
    pub round_id: String,
    /// The task it belongs to.
    pub task_id: String,
    /// The population it asks.
    pub population: String,
    /// The round of the task, from 1.
    pub round: u32,
    /// Which run of this round it is, from 1 (a round is run again after a restart or a
    /// cohort below the minimum).
    pub attempt: u32,
    /// The round closes at this time, in seconds since the Unix epoch, if not earlier.
    pub deadline: i64,
    /// The largest report accepted, in bytes.
    pub max_report_bytes: u32,
    /// Nothing is released from this round with fewer uploads (reports and abstentions) than
    /// this, and a relay forwards nothing below it.
    pub min_cohort: u64,
    /// The round counts at most this many uploads, and a relay picks at most this many
    /// devices' uploads.
    pub cohort_target: u64,
    /// What a device computes from its data.
    pub ask: Ask,
    /// Who flips the coins of `ask`'s `sampling_rate`: with `aggregator` a device reports
    /// every round (the aggregator samples, or in a split-trust deployment the relay, before
    /// the aggregator receives anything); with `device` it reports with probability
    /// `sampling_rate` and abstains otherwise.
    #[serde(default)]
    pub sampling: Sampling,
}

/// What a device computes for one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Ask {
    /// Report your item with probability `sampling_rate` (your own exact Bernoulli coin).
    Item {
        /// The sampling rate `p_s`.
        sampling_rate: f64,
    },
    /// Report your item, always: there is no coin (a partition selection, whose aggregator
    /// adds the noise to the counts).
    ItemReport {},
    /// Report the prefix of `word + '$'` that is `round · segment` characters long, with
    /// probability `sampling_rate`; with `live_parents` set, only when your shorter prefix is
    /// among them.
    Prefix {
        /// The level, from 1.
        level: u32,
        /// Characters per level.
        segment: u32,
        /// The prefixes that survived the previous level, when the task is restricted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        live_parents: Option<Vec<String>>,
        /// The sampling rate `p_s`.
        sampling_rate: f64,
    },
    /// Map your number into `[0, 1]` through `range` (clamping it to the range), and report
    /// `"0"` if it is at most `threshold`, `"1"` otherwise, with probability `sampling_rate`.
    Split {
        /// The split point, in `[0, 1]`.
        threshold: f64,
        /// The range of the numbers; `[0, 1]` when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// The sampling rate `p_s`.
        sampling_rate: f64,
    },
    /// Map your number into `[0, 1]` through `range` (clamping it to the range), and report
    /// the index of its bucket among the `branching^level` equal buckets of the tree's level,
    /// in decimal, with probability `sampling_rate`.
    Bucket {
        /// The level, from 1.
        level: u32,
        /// The tree's levels.
        levels: u32,
        /// The tree's branching factor.
        branching: u32,
        /// The range of the numbers; `[0, 1]` when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// The sampling rate `p_s`.
        sampling_rate: f64,
    },
    /// TrieHH: always upload a ballot, the prefix of `word + '$'` that is `level · segment`
    /// characters long when your prefix of `(level − 1) · segment` characters is among
    /// `live_parents` (any word at level 1) and your word has not ended, else the empty
    /// string ("no vote"). The aggregator, not the device, draws the round's batch.
    PrefixBallot {
        /// The level, from 1.
        level: u32,
        /// Characters per level.
        segment: u32,
        /// The prefixes accepted at the previous level.
        live_parents: Vec<String>,
    },
    /// Place your item in the public `domain` and report its element, in decimal.
    DomainElement {
        /// The public domain.
        domain: PublicDomain,
    },
    /// Shuffle model: place your item in the public `domain`, randomize it by generalized
    /// randomized response at the local `ε₀ = local_epsilon` and report the element you
    /// get, in decimal. The server shuffles the reports before counting them.
    ShuffledGrr {
        /// The public domain.
        domain: PublicDomain,
        /// The local `ε₀` of the randomizer.
        local_epsilon: f64,
    },
    /// Shuffle model, Balcer–Cheu: place your item in the public `domain` and report, as one
    /// comma-separated list in increasing order, your element and every element whose own
    /// coin of probability `noise_probability` succeeds. The server separates every device's
    /// messages and shuffles them all before counting them.
    BalcerCheu {
        /// The public domain.
        domain: PublicDomain,
        /// The probability `p` of each element's noise message.
        noise_probability: f64,
    },
    /// OptPrefixTree: from the words you hold (one per line), pick one eligible word by
    /// `selection` (not `excluded`, encodable, and whose padded code's first
    /// `parent_length + segment` symbols are one of `elements`), or `⊥` (the element after
    /// the last) when none is, and report the randomized one-hot vector of its element.
    OptPrefixTree {
        /// The run, from 1.
        run: u32,
        /// The iteration within the run, from 1.
        iteration: u32,
        /// The live prefixes' length `ℓ_{t−1}`, in symbols.
        parent_length: u32,
        /// The segment `s_t`, in symbols.
        segment: u32,
        /// The elements of `D_t` but `⊥`, in order, each symbol two hexadecimal digits.
        elements: Vec<String>,
        /// The words no device reports (denied or found).
        excluded: Vec<String>,
        /// The data-selection rule.
        #[serde(with = "named")]
        selection: SelectionRule,
        /// OUE or SUE.
        randomizer: Randomizer,
        /// The local `ε₀`.
        local_epsilon: f64,
        /// The public encoding of words.
        encoding: WordEncoding,
    },
    /// Place your item in the public `domain`, randomize its element with your own coins by
    /// the local randomizer of `mechanism` at local `epsilon`, and report the randomized
    /// report in its wire encoding.
    LocalReport {
        /// The local mechanism.
        mechanism: DomainHistogramMechanism,
        /// Its local `ε`.
        epsilon: f64,
        /// The public domain.
        domain: PublicDomain,
    },
    /// Shuffle model, Ghazi et al.'s Hadamard protocol: place your item in the public
    /// `domain` of `B` elements (a power of 2) and report `1 + rho` tuples of `tau`
    /// coordinates in `0..2B`, each coordinate uniform with your own coins: for the first,
    /// among the coordinates `a` with `popcount(a & (x + 1))` even for your element `x`; for
    /// the others, among all. A tuple is the number `Σ a_g·2^{g·log2(2B)}` in lowercase
    /// hexadecimal; the report lists them in increasing order, separated by commas. The
    /// server separates every device's messages and shuffles them all before counting them.
    GhaziHadamard {
        /// The public domain.
        domain: PublicDomain,
        /// The coordinates `τ` of a tuple.
        tau: u32,
        /// The blanket tuples `ρ` of a device.
        rho: u64,
    },
    /// Shuffle model, Ghazi et al.'s range-query tree over `2^levels` buckets: map your number
    /// into `[0, 1]` through `range` (clamping it to the range), take its bucket
    /// `min(⌊x·2^levels⌋, 2^levels − 1)`, and report the set of its chosen ancestors in the
    /// tree (the root and every left child on its path, as oracle items) through `oracle`
    /// (`ghazi-hadamard` or `ghazi-count-min` over the integers `0..2^levels`), for sets of
    /// `1 + levels` items. The server separates every device's messages and shuffles them all
    /// before counting them.
    RangeTree {
        /// The tree's depth `L`.
        levels: u32,
        /// The range of the numbers; `[0, 1]` when left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        range: Option<[f64; 2]>,
        /// The frequency oracle's ask.
        oracle: Box<Ask>,
    },
    /// Shuffle model, Ghazi et al.'s Count-Min protocol: place your item in the public
    /// `domain` and report, as one comma-separated list in increasing order, the cell
    /// `t·width + h_t(x)` of every row `t` for your element `x`, where
    /// `h_t(x) = ((a·x + b) mod (2^61 − 1)) mod width` with `[a, b] = hashes[t]`, and your
    /// blanket: draw `K ~ Bin(rows·width, gamma)` and send `min(K, blanket_cap)` distinct
    /// uniform cells, with your own coins. The server refuses a report of more than
    /// `rows + blanket_cap` cells (`k·rows + blanket_cap` for the `k`-sets of a range tree).
    /// It separates every device's messages and shuffles them all
    /// before counting them.
    GhaziCountMin {
        /// The public domain.
        domain: PublicDomain,
        /// The public hash functions' coefficients `[a, b]`, one pair per row.
        hashes: Vec<[u64; 2]>,
        /// The width `s` of a row.
        width: u64,
        /// The blanket probability `γ` of every cell.
        gamma: f64,
        /// The most blanket cells a device sends, `q`.
        blanket_cap: u64,
    },
    /// Shuffle model, one level of Ghazi et al.'s prefix-tree heavy hitters: read your item as
    /// an integer in `0..2^domain_bits` (abstain otherwise) and report its length-`level`
    /// prefix `x >> (domain_bits − level)` through `oracle` (`ghazi-count-min` over the
    /// integers `0..2^level`), as a set of one item. The server separates every device's
    /// messages and shuffles them all before counting them.
    PrefixLevel {
        /// The level `i`, from 1.
        level: u32,
        /// The tree's depth `L`.
        domain_bits: u32,
        /// The frequency oracle's ask.
        oracle: Box<Ask>,
    },
}

/// A request for upload tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckIn {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// How many devices check in: 1 for a device credential, which checks in for itself
    /// only; an operator credential may relay for many at once.
    #[serde(default = "one")]
    pub devices: u32,
}

fn one() -> u32 {
    1
}

/// Single-use upload tokens, one per device that checked in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckInGrant {
    /// The round's query.
    pub query: RoundQuery,
    /// One token per device; each is good for exactly one upload to this round.
    pub tokens: Vec<String>,
}

/// One device's upload: its report or its abstention. A device that checked in always uploads
/// one, so that the number of uploads says nothing about who was sampled (under device-side
/// sampling; under aggregator-side sampling every device reports).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upload {
    /// The token from the device's check-in.
    pub token: String,
    /// The report, or `null` for an abstention (the field is required either way).
    #[serde(deserialize_with = "Option::deserialize")]
    pub report: Option<String>,
}

/// Uploads sent together (one for a device; many from a relay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadBatch {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The uploads.
    pub uploads: Vec<Upload>,
}

/// What happened to a batch of uploads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UploadReceipt {
    /// Uploads accepted (reports and abstentions).
    pub accepted: u32,
    /// Uploads refused, by their index in the batch.
    pub rejected: Vec<Rejection>,
}

/// One refused upload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    /// Its index in the batch.
    pub index: u32,
    /// Why.
    pub code: ErrorCode,
}

/// The spent and remaining budget of one population.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerBalance {
    /// The population.
    pub population: String,
    /// Its total budget.
    pub budget: Budget,
    /// Whether its tasks may ask `sampling: device` (the operator's policy).
    #[serde(default)]
    pub allow_device_sampling: bool,
    /// The neighbour relation its budget and every amount below are under.
    #[serde(with = "named", default = "add_remove")]
    pub neighbours: Neighbours,
    /// Debited by released results: the sum of their charges (each task's guarantee under
    /// [`Self::neighbours`]).
    pub spent: Budget,
    /// Held for tasks that are running but have released nothing yet: the sum of their
    /// charges.
    pub reserved: Budget,
    /// What tasks outside the declared pair ([`Self::task_bound`]) may still spend, as the
    /// server enforces it: the budget less the declared pair's share (the whole budget without
    /// one), less the sum of those tasks' own guarantees, spent and reserved (basic
    /// composition, a filter valid against an adaptive analyst). A task outside the pair is
    /// admitted when its `(ε, δ)` fits in it.
    pub remaining: Budget,
    /// The declared per-round pair and how many of its rounds the tasks within it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_bound: Option<TaskBoundUse>,
    /// The fraction of its devices its shuffle-model tasks are charged as colluding with the
    /// analyst (0: the budget assumes honest devices).
    #[serde(default)]
    pub colluding_fraction: f64,
    /// Every debit, oldest first.
    pub entries: Vec<LedgerEntry>,
}

/// A population's declared per-round sample-and-threshold pair and its use.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskBoundUse {
    /// The declared pair and the rounds its share covers.
    pub bound: TaskBoundInfo,
    /// The rounds the spent and running tasks within the pair take.
    pub rounds_used: u64,
}

/// A per-round sample-and-threshold pair an operator declares with a population's budget: a
/// task whose every round is an S&T round under add/remove neighbours with `sampling_rate ≤
/// P` and `threshold ≥ T` takes one of a fixed number of rounds, composed tightly within
/// `share`; every other task is charged its own `(ε, δ)` by basic composition within the rest
/// of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskBound {
    /// The largest sampling rate `P` of a round within the pair.
    pub sampling_rate: f64,
    /// The smallest threshold `T` of a round within the pair.
    pub threshold: u64,
    /// The share of the budget the pair's rounds compose within; the whole budget when left
    /// out (then no task outside the pair fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Budget>,
}

/// A declared pair as the server keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskBoundInfo {
    /// The largest sampling rate of a round within the pair.
    pub sampling_rate: f64,
    /// The smallest threshold of a round within the pair.
    pub threshold: u64,
    /// The share of the budget its rounds compose within.
    pub share: Budget,
    /// How many rounds at the pair fit the share: the largest `K` whose `K`-fold tight
    /// composition is within it.
    pub rounds: u64,
}

/// An amount of privacy budget.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// `ε`.
    pub epsilon: f64,
    /// `δ`.
    pub delta: f64,
}

/// One debit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The task that spent it.
    pub task_id: String,
    /// The amount, the task's whole guarantee.
    pub amount: Budget,
    /// When, in seconds since the Unix epoch.
    pub at: i64,
}

/// A population as an operator provisions it: tasks can only name a population that exists.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PopulationSpec {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// Its exact name: 1 to 64 of `a-z`, `0-9`, `.`, `_` and `-`, starting with a letter or
    /// a digit.
    pub name: String,
    /// Its whole privacy budget (see [`Self::task_bound`] for how tasks share it).
    pub budget: Budget,
    /// The smallest `min_cohort` a task over it may ask (a task may raise it, not lower it).
    #[serde(default = "one_u64")]
    pub min_cohort: u64,
    /// The largest `ε` one task over it may spend, if capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_task_epsilon: Option<f64>,
    /// Who its devices' reports go through: `single-party` (the default: devices upload to
    /// the aggregator, which sees who sent what) or `split` (devices upload sealed reports to
    /// a relay, and the aggregator takes them only from relay credentials and enrolls no
    /// device).
    #[serde(default)]
    pub trust: TrustModel,
    /// Whether its tasks may ask `sampling: device` (off by default). Device-side sampling
    /// holds only if every device flips its own coin honestly: enrolled devices that collude
    /// with the analyst report every time, and a threshold of `τ` is crossed by `τ − 1` of them
    /// and a victim whenever the victim's own coin comes up. Only the operator can allow it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_device_sampling: bool,
    /// The per-round sample-and-threshold pair whose rounds compose tightly, if declared;
    /// without one every task is charged its own `(ε, δ)` by basic composition. Only under
    /// add/remove neighbours, the relation of the pair's loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_bound: Option<TaskBound>,
    /// The fraction of its devices that may collude with the analyst, in `[0, 1]` (0, the
    /// default: the budget assumes honest devices). A shuffle-model task's guarantee holds
    /// only while the other devices' randomness hides each device's messages: over such a
    /// population it is charged the guarantee an honest device keeps when this fraction
    /// colludes, and refused when that does not fit the budget. Central and local guarantees
    /// do not depend on other devices' honesty and are charged as they are.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub colluding_fraction: f64,
    /// The one neighbour relation its budget is kept under (`add-remove` by default): a task
    /// whose guarantee is under the other relation is charged what it gives under this one
    /// (an add/remove `(ε, δ)` costs `(2ε, (1 + e^ε) δ)` on a replace-one budget), and a
    /// replace-one task, which holds for a fixed number of clients only, is refused on an
    /// add/remove budget.
    #[serde(with = "named", default = "add_remove")]
    pub neighbours: Neighbours,
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn one_u64() -> u64 {
    1
}

/// A provisioned population.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PopulationInfo {
    /// Its name.
    pub name: String,
    /// Its whole privacy budget.
    pub budget: Budget,
    /// The floor of its tasks' `min_cohort`.
    pub min_cohort: u64,
    /// The cap on one task's `ε`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_task_epsilon: Option<f64>,
    /// Who its devices' reports go through.
    #[serde(default)]
    pub trust: TrustModel,
    /// Whether its tasks may ask `sampling: device`.
    #[serde(default)]
    pub allow_device_sampling: bool,
    /// Its declared per-round pair, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_bound: Option<TaskBoundInfo>,
    /// The fraction of its devices its shuffle-model tasks are charged as colluding (0: the
    /// budget assumes honest devices).
    #[serde(default)]
    pub colluding_fraction: f64,
    /// The neighbour relation its budget is kept under.
    #[serde(with = "named", default = "add_remove")]
    pub neighbours: Neighbours,
    /// When it was created, in seconds since the Unix epoch.
    pub created_at: i64,
}

/// What a credential may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Provisions populations, budgets and credentials; reads every task and the whole
    /// ledger, and may cancel any task; reads no result.
    Operator,
    /// Creates tasks over its populations, reads and cancels its own tasks, reads its own
    /// results and its populations' ledger.
    Analyst,
    /// A device of one population: reads that population's open rounds and tasks, checks in
    /// and uploads.
    Device,
    /// A relay of a split-trust deployment, for one or more populations whose trust model is
    /// [`TrustModel::Split`]: reads their open rounds and sends each round's sealed messages
    /// in one batch (`POST /v1/rounds/{id}/relayed`). It never learns what a report says.
    Relay,
}

impl Role {
    /// The name used in JSON, in storage and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Analyst => "analyst",
            Self::Device => "device",
            Self::Relay => "relay",
        }
    }

    /// Parses [`Role::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Operator, Self::Analyst, Self::Device, Self::Relay]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// What an operator asks for when it creates a credential.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialSpec {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// Its role.
    pub role: Role,
    /// A name for people (who or what holds it).
    pub name: String,
    /// The populations it acts on: one or more for an analyst or a relay, exactly one for a
    /// device, none for an operator.
    #[serde(default)]
    pub populations: Vec<String>,
}

/// What an operator asks for when it enrolls devices: `count` new device credentials of one
/// population, one per device (each gets at most one upload token per round).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceEnrollment {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub version: u32,
    /// How many devices to enroll (1 to 10 000 per request).
    pub count: u32,
}

/// Devices just enrolled: their bearer tokens, shown this once, one per device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnrolledDevices {
    /// The population they belong to.
    pub population: String,
    /// One device credential's token (`tally_ID_SECRET`) per device.
    pub tokens: Vec<String>,
}

/// A credential as the server shows it: never its secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CredentialInfo {
    /// Its id (the part of the token before the secret).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The populations it acts on.
    pub populations: Vec<String>,
    /// When it was created, in seconds since the Unix epoch.
    pub created_at: i64,
    /// Whether it was revoked (a revoked credential is refused with 401).
    pub revoked: bool,
}

/// A credential just created: the only time its bearer token is shown (the server keeps a
/// hash of it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IssuedCredential {
    /// The credential.
    pub credential: CredentialInfo,
    /// The bearer token, `tally_ID_SECRET`.
    pub token: String,
}

/// Why a request was refused. Each has a counter on the server's `/metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The body is not valid JSON of the expected shape, or has the wrong version.
    Malformed,
    /// The body or a report is larger than allowed.
    Oversized,
    /// No such task.
    UnknownTask,
    /// No such round.
    UnknownRound,
    /// The round is closed.
    ClosedRound,
    /// A prefix report that does not extend a live prefix (or has the wrong length).
    BadPrefix,
    /// A bucket report that is not the decimal index of a bucket of the round's level (or of
    /// a split round's two buckets, or an element of a public domain).
    BadBucket,
    /// A token that was already used.
    ReusedToken,
    /// A token this round never issued.
    UnknownToken,
    /// The task's guarantee exceeds the population's remaining budget.
    BudgetExceeded,
    /// The task cannot be calibrated or run as asked.
    InvalidTask,
    /// The result is not released (yet, or ever).
    NoResult,
    /// The request carries no credential, or one the server does not know or revoked.
    Unauthenticated,
    /// The credential's role or populations do not allow this request, the task is someone
    /// else's, or the request came from a browser page (an `Origin` header or a foreign
    /// `Host`).
    Forbidden,
    /// The body is not declared `Content-Type: application/json`.
    UnsupportedMediaType,
    /// No such credential.
    UnknownCredential,
    /// No such population: an operator provisions populations before tasks name them.
    UnknownPopulation,
    /// A population of that name exists already.
    PopulationExists,
    /// The request's body did not arrive in time.
    Timeout,
    /// The credential sent more requests than its rate allows; retry after the `Retry-After`
    /// header's seconds.
    RateLimited,
    /// The server failed; retry later.
    Internal,
    /// A sealed message to a key id the aggregator does not hold (retired past its grace
    /// period, or never the aggregator's).
    UnknownKey,
    /// A sealed message that does not open under its round's binding: moved from another
    /// task, round or attempt, sealed for a query other than the one the aggregator
    /// published, or altered.
    UnopenedReport,
    /// A sealed message whose report id the round has already seen: a replay or a duplicate.
    DuplicateReport,
    /// A relayed batch for fewer devices than the round's minimum cohort.
    BelowMinCohort,
    /// A second relayed batch for a round, which takes one.
    AlreadyRelayed,
}

impl ErrorCode {
    /// Every code, in the order `/metrics` lists them.
    pub const ALL: [Self; 26] = [
        Self::Malformed,
        Self::Oversized,
        Self::UnknownTask,
        Self::UnknownRound,
        Self::ClosedRound,
        Self::BadPrefix,
        Self::BadBucket,
        Self::ReusedToken,
        Self::UnknownToken,
        Self::BudgetExceeded,
        Self::InvalidTask,
        Self::NoResult,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::UnsupportedMediaType,
        Self::UnknownCredential,
        Self::UnknownPopulation,
        Self::PopulationExists,
        Self::Timeout,
        Self::RateLimited,
        Self::Internal,
        Self::UnknownKey,
        Self::UnopenedReport,
        Self::DuplicateReport,
        Self::BelowMinCohort,
        Self::AlreadyRelayed,
    ];

    /// The name used in JSON and as the `reason` label on `/metrics`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Malformed => "malformed",
            Self::Oversized => "oversized",
            Self::UnknownTask => "unknown_task",
            Self::UnknownRound => "unknown_round",
            Self::ClosedRound => "closed_round",
            Self::BadPrefix => "bad_prefix",
            Self::BadBucket => "bad_bucket",
            Self::ReusedToken => "reused_token",
            Self::UnknownToken => "unknown_token",
            Self::BudgetExceeded => "budget_exceeded",
            Self::InvalidTask => "invalid_task",
            Self::NoResult => "no_result",
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::UnknownCredential => "unknown_credential",
            Self::UnknownPopulation => "unknown_population",
            Self::PopulationExists => "population_exists",
            Self::Timeout => "timeout",
            Self::RateLimited => "rate_limited",
            Self::Internal => "internal",
            Self::UnknownKey => "unknown_key",
            Self::UnopenedReport => "unopened_report",
            Self::DuplicateReport => "duplicate_report",
            Self::BelowMinCohort => "below_min_cohort",
            Self::AlreadyRelayed => "already_relayed",
        }
    }
}

/// The body of every error answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What kind of error.
    pub code: ErrorCode,
    /// What was wrong and what would be valid.
    pub message: String,
}

#[cfg(test)]
mod tests;
