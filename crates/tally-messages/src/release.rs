//! The released result documents: what `tally histogram --json`, `tally heavy-hitters --json`,
//! `tally quantiles --json` and `tally range --json` print, and what a finished federated task
//! returns.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tally_accounting::{Collusion, Guarantee};

/// A guarantee as published next to a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuaranteeBody {
    /// `ε`.
    pub epsilon: f64,
    /// `δ`, an upper bound.
    pub delta: f64,
    /// The neighbour relation, `add-remove` or `replace-one`.
    pub neighbours: String,
    /// The mechanism's model, `central`, `local` or `shuffle`: whom its noise trusts.
    pub model: String,
    /// The analysis that proved it.
    pub method: String,
    /// Which parties saw the reports, `single-party` (one process: a simulation, or a
    /// federated task of a single-party population) or `split` (a relay that saw who sent
    /// each report, an aggregator that saw what they say): the guarantee holds against every
    /// reader of the release and, under `split`, against either party alone.
    #[serde(default)]
    pub trust_model: crate::TrustModel,
    /// For a shuffle-model guarantee, what holds when devices collude with the analyst (the
    /// guarantee itself assumes every other device honest); absent for central and local
    /// guarantees, which do not depend on other devices' honesty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collusion: Option<CollusionBody>,
}

impl From<&Guarantee> for GuaranteeBody {
    fn from(guarantee: &Guarantee) -> Self {
        Self {
            epsilon: guarantee.epsilon,
            delta: guarantee.delta,
            neighbours: guarantee.neighbours.name().to_owned(),
            model: guarantee.model.name().to_owned(),
            method: guarantee.analysis.clone(),
            trust_model: crate::TrustModel::SingleParty,
            collusion: None,
        }
    }
}

impl GuaranteeBody {
    /// The body of `guarantee` with what holds against colluding devices, `collusion`.
    pub fn with_collusion(guarantee: &Guarantee, collusion: Option<&Collusion>) -> Self {
        Self {
            collusion: collusion.map(CollusionBody::from),
            ..Self::from(guarantee)
        }
    }

    /// The `(ε, δ)` a privacy ledger charges for a task whose published guarantee this is:
    /// what holds against the population's colluding fraction where it is stated (every
    /// shuffle-model task's; at fraction 0 it is the guarantee itself), `ε = ∞` where no
    /// finite `ε` holds against them, else the guarantee (central and local guarantees do not
    /// depend on other devices' honesty). The population's ledger on the server and a
    /// device's own ledger charge the same.
    ///
    /// # Privacy
    ///
    /// A shuffle-model guarantee holds only while the other devices' randomness hides a
    /// device's messages; against an analyst with colluding devices it is the collusion
    /// guarantee that holds, so that is what a budget must cover.
    pub fn charged(&self) -> (f64, f64) {
        match &self.collusion {
            Some(collusion) => (collusion.epsilon.unwrap_or(f64::INFINITY), collusion.delta),
            None => (self.epsilon, self.delta),
        }
    }
}

/// What a shuffle-model guarantee keeps when devices collude with the analyst, as published
/// beside it (full precision).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollusionBody {
    /// The fraction of the cohort assumed to collude.
    pub colluding_fraction: f64,
    /// `ε` an honest device keeps against them; `null` when no finite `ε` reaches
    /// [`Self::delta`].
    pub epsilon: Option<f64>,
    /// `δ` it keeps against them.
    pub delta: f64,
    /// `ε` when every other device colludes: the local `ε₀` (pure); `null` (`∞`) for a
    /// protocol whose devices' messages have no local guarantee.
    pub floor: Option<f64>,
}

impl From<&Collusion> for CollusionBody {
    fn from(collusion: &Collusion) -> Self {
        let finite = |value: f64| value.is_finite().then_some(value);
        Self {
            colluding_fraction: collusion.colluding_fraction,
            epsilon: finite(collusion.epsilon),
            delta: collusion.delta,
            floor: finite(collusion.floor),
        }
    }
}

/// One released item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleasedItem {
    /// The item.
    pub item: String,
    /// Its sampled count, where the mechanism releases one.
    pub count: Option<u64>,
    /// Its estimated number of holders in the population, where the mechanism releases one.
    pub estimate: Option<f64>,
}

/// One released node of a prefix tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrieNodeBody {
    /// The prefix, ending in `'$'` for a complete word.
    pub prefix: String,
    /// The level that released it, from 1.
    pub level: u32,
    /// Its sampled count, where the algorithm releases one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Its estimated number of holders, where the algorithm releases one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
}

/// A heavy-hitter release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeavyHittersRelease {
    /// The algorithm's name.
    pub mechanism: String,
    /// Its parameters (their names depend on the algorithm).
    pub parameters: Value,
    /// The guarantee of the whole release.
    pub guarantee: GuaranteeBody,
    /// What the data was.
    pub input: String,
    /// How many items were found.
    pub found_items: usize,
    /// The items, by decreasing count.
    pub items: Vec<ReleasedItem>,
    /// The released prefix tree, for prefix-tree algorithms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trie: Option<Vec<TrieNodeBody>>,
    /// Scores against the true top items, when the truth was known (simulations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<Value>,
    /// The simulation's seed (none for a federated run or an unseeded one).
    pub seed: Option<u64>,
    /// Why the release holds few items and what would release more, with the warnings its
    /// parameters call for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<ReleaseDiagnosis>,
}

/// A histogram release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramRelease {
    /// The mechanism's name.
    pub mechanism: String,
    /// Its parameters.
    pub parameters: Value,
    /// The guarantee of the release.
    pub guarantee: GuaranteeBody,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// What the data was.
    pub input: String,
    /// How it was executed: a simulator path, or `federated`.
    pub execution: String,
    /// How many items were released.
    pub released_items: usize,
    /// The items, by decreasing count.
    pub items: Vec<ReleasedItem>,
    /// The simulation's seed (none for a federated run or an unseeded one).
    pub seed: Option<u64>,
    /// Why the release holds few items and what would release more, with the warnings its
    /// parameters call for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<ReleaseDiagnosis>,
}

/// What a reader of a release needs to make sense of few or no released items: what an item
/// needs to be released, the largest count the release itself shows, the number of clients,
/// and what would help; and the warnings its parameters call for. Every number in it is a
/// parameter of the calibration, the number of clients the document already states, or read
/// from the released items: nothing the release does not reveal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReleaseDiagnosis {
    /// The number of clients the release ran over.
    pub clients: u64,
    /// How many clients must hold an item for the mechanism to release it with probability one
    /// half, from the calibration that ran (`None` when no count up to 2^40 reaches it).
    pub release_point: Option<u64>,
    /// Whether `release_point` is exact for the release law (`false`: an approximation, as for
    /// a prefix tree, whose items must pass every level).
    pub release_point_exact: bool,
    /// The largest count among the released items (a sampled or noisy count, as the release
    /// shows it), `None` when the release shows no count.
    pub largest_released_count: Option<f64>,
    /// Whether the release is thin: fewer than [`ReleaseDiagnosis::THIN_BELOW`] items.
    pub thin: bool,
    /// Why the release is thin and what would help, one sentence each (empty when it is not
    /// thin).
    pub explanation: Vec<String>,
    /// Warnings about the parameters, one sentence each: `δ ≥ 1/n` for `n` clients.
    pub warnings: Vec<String>,
}

impl ReleaseDiagnosis {
    /// A release of fewer items than this is thin and explains itself.
    pub const THIN_BELOW: usize = 3;
}

/// A quantile release.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantilesRelease {
    /// The algorithm's name.
    pub mechanism: String,
    /// Its parameters (their names depend on the algorithm).
    pub parameters: Value,
    /// The guarantee of the whole release.
    pub guarantee: GuaranteeBody,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// What the data was.
    pub input: String,
    /// The estimated quantiles, in the order asked.
    pub quantiles: Vec<QuantileRow>,
    /// The simulation's seed (none for a federated run or an unseeded one).
    pub seed: Option<u64>,
}

/// One estimated quantile, in the input's units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuantileRow {
    /// The quantile asked for, in `[0, 1]`.
    pub quantile: f64,
    /// Its estimated value.
    pub value: f64,
    /// The final interval of a binary search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// The true value, when the truth was known (simulations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub true_value: Option<f64>,
    /// The share of values below the estimate minus the quantile, when the truth was known
    /// (simulations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_error: Option<f64>,
}

/// A range-count release: the estimated number of values in a range, from a hierarchical
/// histogram. What `tally range --json` prints, and what a finished range task returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeRelease {
    /// The algorithm's name.
    pub mechanism: String,
    /// Its parameters.
    pub parameters: Value,
    /// The guarantee of the release.
    pub guarantee: GuaranteeBody,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// What the data was.
    pub input: String,
    /// The range asked for and the grid cells it was snapped to.
    pub range: RangeBody,
    /// The estimated number of values in the snapped range.
    pub estimate: f64,
    /// `estimate / estimated_total` (0 when the estimated total is 0).
    pub fraction: f64,
    /// The estimated number of values in all.
    pub estimated_total: f64,
    /// The simulation's seed (none for a federated run or an unseeded one).
    pub seed: Option<u64>,
}

/// The range count of Ghazi et al.'s range-query tree (`tally range --mechanism ghazi-* --json`,
/// and a finished [`crate::TaskKind::RangeTree`] task reading a range).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TreeRangeRelease {
    /// `range-query tree (ORACLE)`.
    pub mechanism: String,
    /// The trust model, `shuffle`.
    pub model: String,
    /// The tree's and the oracle's parameters.
    pub parameters: Value,
    /// The guarantee.
    pub guarantee: GuaranteeBody,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// Where the numbers came from.
    pub input: String,
    /// The range asked for, and the leaves' boundaries it snapped to.
    pub range: RangeBody,
    /// The estimated count of the snapped range.
    pub estimate: f64,
    /// The estimate over the number of devices.
    pub fraction: f64,
    /// The seed of a simulation; `null` for a federated run.
    pub seed: Option<u64>,
}

/// A counted range: `[lo, hi)` as asked and as snapped down to the tree's leaf grid, in the
/// values' units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeBody {
    /// The lower end asked for.
    pub lo: f64,
    /// The upper end asked for.
    pub hi: f64,
    /// The lower end on the grid.
    pub grid_lo: f64,
    /// The upper end on the grid.
    pub grid_hi: f64,
}

/// The release of a histogram over a public domain: an estimate for every element (or, with
/// `--top`, the largest ones). What `tally histogram --mechanism M --json` prints for a
/// mechanism over a public domain, and what a finished domain-histogram task returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainHistogramRelease {
    /// The mechanism's name.
    pub mechanism: String,
    /// The trust model of its guarantee.
    pub model: String,
    /// The guarantee of the release.
    pub guarantee: GuaranteeBody,
    /// The guarantee of one report in the local model, for mechanisms that randomize on the
    /// device.
    pub local_guarantee: Option<GuaranteeBody>,
    /// Its `ε`.
    pub local_epsilon: Option<f64>,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// The public domain.
    pub domain: DomainBody,
    /// The expected number of messages a client sends, for mechanisms that send messages.
    pub messages_per_client: Option<f64>,
    /// The bits of one message.
    pub bits_per_message: Option<u64>,
    /// Whether negative estimates were raised to 0.
    pub clamped: bool,
    /// What the data was.
    pub input: String,
    /// The number of clients.
    pub clients: u64,
    /// The elements' estimates.
    pub items: Vec<DomainElementBody>,
    /// The seed of a simulation.
    pub seed: Option<u64>,
    /// The mean absolute error over the domain, when the truth was known (simulations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_absolute_error: Option<f64>,
    /// Warnings about the parameters, one sentence each: `δ ≥ 1/n` for `n` clients (every
    /// element of the domain is released, so the release is never thin).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A public domain as published.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainBody {
    /// Its size `B`.
    pub size: u32,
    /// How items are placed in it.
    pub mapping: String,
}

/// One domain element's estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DomainElementBody {
    /// The element.
    pub item: u32,
    /// Its estimated count.
    pub estimate: f64,
    /// Its true count, when known (simulations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub true_count: Option<u64>,
}
