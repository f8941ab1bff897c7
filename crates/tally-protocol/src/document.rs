//! The released result documents, built from tally-core's outputs.
//!
//! A finished federated task returns the same JSON document as `tally heavy-hitters --json`
//! (TrieHH, TrieHH++, single-round, OptPrefixTree, the Count-Min prefix tree), `tally histogram --json`
//! (sample-and-threshold), `tally quantiles --json` (hierarchical histogram, binary search) or
//! `tally range --json` prints for a simulation with the same parameters: both build it here. Item names are strings already (the command line maps its item ids to names first);
//! the caller says what the input was and how it ran.

use serde_json::{Map, Value, json};
use tally_accounting::Guarantee;
use tally_accounting::composition::Composition;
use tally_accounting::key_selection::KeySelection;
use tally_accounting::partition_selection::PartitionSelection as Calibration;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::heavy_hitters::{
    OptPrefixTreeOutput, SegmentPolicy, Selection, TrieHhOutput, TrieNode, TrieOutput,
};
use tally_core::histogram::{PartitionSelection, SampleThreshold, SelectedKey};
use tally_core::ldp::UnaryVariant;
use tally_core::quantiles::{HierarchicalRelease, TreeShape, ValueRange};
use tally_core::shuffle::{RangeCounts, RangeRound, SetOracleRound, ShuffleHeavyHitters};
use tally_messages::{
    GuaranteeBody, HeavyHittersRelease, HistogramRelease, RangeBody, RangeRelease,
    ReleaseDiagnosis, ReleasedItem, TreeRangeRelease, TrieNodeBody,
};

use crate::diagnosis::{ReleaseRule, Remedies, delta_warning, diagnose};
use crate::opt_prefix_tree::{segment_rule, selection_rule};

/// The name of the TrieHH++ document's mechanism.
pub const TRIEHH_PLUS: &str = "triehh++";

/// The name of the TrieHH document's mechanism.
pub const TRIEHH: &str = "triehh";

/// The name of the sample-and-threshold document's mechanism.
pub const SAMPLE_THRESHOLD: &str = "sample-and-threshold";

/// The name of the hierarchical-histogram documents' mechanism.
pub const HIERARCHICAL_HISTOGRAM: &str = "hierarchical histogram";

/// The parameters a hierarchical histogram was configured with, as its quantile and range
/// documents list them.
#[derive(Clone, Copy, Debug)]
pub struct HierarchicalParameters<'a> {
    /// The tree.
    pub shape: TreeShape,
    /// The range the values were rescaled from, if any.
    pub range: Option<ValueRange>,
    /// Whether the tree was made consistent before it was read.
    pub consistent: bool,
    /// How the levels' guarantees compose.
    pub composition: Composition,
    /// The sample-and-threshold mechanism every level ran.
    pub per_level: &'a SampleThreshold,
    /// The number of clients.
    pub population: u64,
}

/// The `parameters` object of a hierarchical histogram's documents.
pub fn hierarchical_parameters(
    parameters: &HierarchicalParameters<'_>,
    release: &HierarchicalRelease,
) -> Value {
    let shape = parameters.shape;
    let params = parameters.per_level.params();
    json!({
        "branching": shape.branching(),
        "levels": shape.levels(),
        "resolution": resolution(parameters.range, 1.0 / shape.leaves() as f64),
        "consistent": parameters.consistent,
        "composition": parameters.composition.name(),
        "sampling_rate": params.sampling_rate(),
        "threshold": params.threshold(),
        "per_round_guarantee": GuaranteeBody::from(parameters.per_level.guarantee()),
        "population": parameters.population,
        "estimated_total": release.total(),
    })
}

/// The document of a range count from a hierarchical `release` (already made consistent if
/// asked) of values rescaled from `range`: the estimated number of values in `[lo, hi)`
/// (in the values' units) and the grid cells the range was snapped to. When nothing was
/// released at level 1 (an estimated total of 0, which the offline command refuses before
/// asking) the fraction is 0, as every quantile is then 0.
///
/// # Errors
///
/// If `[lo, hi)` is not a range of the values' units.
#[allow(clippy::too_many_arguments)] // the fields of the document
pub fn range_count(
    release: &HierarchicalRelease,
    range: Option<ValueRange>,
    (lo, hi): (f64, f64),
    parameters: Value,
    target_delta: f64,
    input: String,
    seed: Option<u64>,
) -> Result<RangeRelease, tally_core::Error> {
    let to_unit = |x: f64| range.map_or(x, |r| r.to_unit(x));
    let to_original = |y: f64| range.map_or(y, |r| r.from_unit(y));
    let (unit_lo, unit_hi) = (to_unit(lo), to_unit(hi));
    let estimate = release.range_count(unit_lo, unit_hi)?;
    let total = release.total();
    let shape = release.shape();
    let grid = |x: f64| to_original(shape.boundary_point(shape.boundary_below(x)));
    Ok(RangeRelease {
        mechanism: HIERARCHICAL_HISTOGRAM.to_owned(),
        parameters,
        guarantee: release.guarantee().into(),
        target_delta,
        input,
        range: RangeBody {
            lo,
            hi,
            grid_lo: grid(unit_lo),
            grid_hi: grid(unit_hi),
        },
        estimate,
        fraction: if total > 0.0 { estimate / total } else { 0.0 },
        estimated_total: total,
        seed,
    })
}

/// The name of the documents of Ghazi et al.'s range-query tree on the frequency oracle
/// named `oracle`.
pub fn range_tree_mechanism(oracle: &str) -> String {
    format!("range-query tree ({oracle})")
}

/// The `parameters` object of a range-query tree's documents: its depth, leaves and their
/// width in the numbers' units (rescaled from `range`), the `users` it was calibrated for
/// and what each sends.
pub fn range_tree_parameters<O: SetOracleRound>(
    tree: &RangeRound<O>,
    range: Option<ValueRange>,
    users: u64,
) -> Value {
    let cost = tree.message_cost();
    json!({
        "levels": tree.domain().ilog2(),
        "buckets": tree.domain(),
        "resolution": resolution(range, 1.0 / f64::from(tree.domain())),
        "users": users,
        "messages_per_client": cost.messages_per_client,
        "bits_per_message": cost.bits_per_message,
    })
}

/// What a range-query tree's document says besides its readings.
#[derive(Clone, Debug)]
pub struct TreeDocument<'a> {
    /// The mechanism's name ([`range_tree_mechanism`]).
    pub mechanism: String,
    /// Its parameters ([`range_tree_parameters`]).
    pub parameters: Value,
    /// The tree's guarantee.
    pub guarantee: &'a Guarantee,
    /// The `δ` asked for.
    pub target_delta: f64,
    /// What the input was.
    pub input: String,
    /// The number of devices (or values).
    pub users: u64,
    /// The seed of a simulation.
    pub seed: Option<u64>,
}

/// The range count of `[lo, hi)` (in the numbers' units, rescaled from `range`) from a
/// one-dimensional range-query tree's release `counts`: the range snapped down to the leaves'
/// boundaries (a range ending at the top includes it), its estimated count and fraction.
pub fn tree_range_count(
    counts: &RangeCounts,
    range: Option<ValueRange>,
    (lo, hi): (f64, f64),
    document: TreeDocument<'_>,
) -> TreeRangeRelease {
    let to_unit = |x: f64| range.map_or(x, |r| r.to_unit(x));
    let to_original = |y: f64| range.map_or(y, |r| r.from_unit(y));
    let buckets = counts.domain();
    let (unit_lo, unit_hi) = (to_unit(lo), to_unit(hi));
    let first = ((unit_lo * f64::from(buckets)).floor() as u32).min(buckets);
    let end = if unit_hi >= 1.0 {
        buckets
    } else {
        ((unit_hi * f64::from(buckets)).floor() as u32).min(buckets)
    };
    let estimate = if end > first {
        counts.count(first, end - 1)
    } else {
        0.0
    };
    let grid = |b: u32| to_original(f64::from(b) / f64::from(buckets));
    TreeRangeRelease {
        mechanism: document.mechanism,
        model: document.guarantee.model.name().to_owned(),
        parameters: document.parameters,
        guarantee: document.guarantee.into(),
        target_delta: document.target_delta,
        input: document.input,
        range: RangeBody {
            lo,
            hi,
            grid_lo: grid(first),
            grid_hi: grid(end),
        },
        estimate,
        fraction: estimate / document.users as f64,
        seed: document.seed,
    }
}

/// The name of the binary-search quantile document's mechanism.
pub const BINARY_SEARCH: &str = "binary search";

/// The parameters binary searches were configured with, as their quantile document lists
/// them.
#[derive(Clone, Copy, Debug)]
pub struct BinarySearchParameters<'a> {
    /// The rounds of each search `h`.
    pub rounds: usize,
    /// The number of searches (one per quantile).
    pub searches: usize,
    /// The range the values were rescaled from, if any.
    pub range: Option<ValueRange>,
    /// How the rounds' guarantees compose.
    pub composition: Composition,
    /// The sample-and-threshold mechanism every round ran.
    pub per_round: &'a SampleThreshold,
    /// The number of clients.
    pub population: u64,
}

/// The `parameters` object of the binary searches' quantile document (each round's estimated
/// fraction is normalised by the round's own release).
pub fn binary_search_parameters(parameters: &BinarySearchParameters<'_>) -> Value {
    let params = parameters.per_round.params();
    let rounds = parameters.rounds;
    json!({
        "rounds_per_quantile": rounds,
        "searches": parameters.searches,
        "rounds": rounds * parameters.searches,
        "resolution": resolution(parameters.range, 2f64.powi(-(rounds as i32))),
        "normalisation": "released",
        "composition": parameters.composition.name(),
        "sampling_rate": params.sampling_rate(),
        "threshold": params.threshold(),
        "per_round_guarantee": GuaranteeBody::from(parameters.per_round.guarantee()),
        "population": parameters.population,
    })
}

/// The width of a grid cell of `fraction` of `[0, 1]`, in the units of the values (rescaled
/// from `range`, if any).
pub fn resolution(range: Option<ValueRange>, fraction: f64) -> f64 {
    range.map_or(fraction, |r| fraction * (r.max() - r.min()))
}

/// The parameters a TrieHH++ run was configured with, as its document lists them.
#[derive(Clone, Copy, Debug)]
pub struct TriePlusParameters<'a> {
    /// Prefix-tree levels `L` asked for.
    pub levels: usize,
    /// Characters added per level `g`.
    pub segment: usize,
    /// Whether devices reported only below a surviving prefix.
    pub restricted: bool,
    /// How the levels' guarantees compose.
    pub composition: Composition,
    /// The mechanism every level ran.
    pub per_level: LevelRelease<'a>,
}

/// The mechanism every level of a TrieHH++ run used to release the clients' prefixes.
#[derive(Clone, Copy, Debug)]
pub enum LevelRelease<'a> {
    /// Sample-and-threshold (the paper's).
    SampleThreshold(&'a SampleThreshold),
    /// A noise-based partition selection of one prefix per client.
    Selection(&'a PartitionSelection),
}

/// The document of a TrieHH++ run over `population` clients: its parameters, its guarantee,
/// the complete words by decreasing count and every released node of the prefix tree. No
/// truth scores (the caller adds them when it knows the truth).
pub fn triehh_plus(
    output: &TrieOutput,
    parameters: &TriePlusParameters<'_>,
    population: u64,
    input: String,
    seed: Option<u64>,
) -> HeavyHittersRelease {
    let items: Vec<ReleasedItem> = output
        .heavy_hitters()
        .into_iter()
        .filter_map(|node| {
            Some(ReleasedItem {
                item: node.word()?.to_owned(),
                count: Some(node.count),
                estimate: Some(node.estimate),
            })
        })
        .collect();
    let (level_mechanism, level_fields, level_guarantee, level_rule) = match parameters.per_level {
        LevelRelease::SampleThreshold(mechanism) => {
            let params = mechanism.params();
            (
                "sample-threshold",
                Map::from_iter([
                    ("sampling_rate".to_owned(), json!(params.sampling_rate())),
                    ("threshold".to_owned(), json!(params.threshold())),
                ]),
                mechanism.guarantee(),
                ReleaseRule {
                    exact: false,
                    rule: format!(
                        "at each of up to {} levels every client is sampled at rate {:.4} and \
                         a prefix is kept when its sampled count reaches {}; a word must pass \
                         every level",
                        parameters.levels,
                        params.sampling_rate(),
                        params.threshold()
                    ),
                    ..sample_threshold_rule(mechanism)
                },
            )
        }
        LevelRelease::Selection(selection) => {
            let rule = selection_rule_of(selection);
            (
                selection.method().name(),
                selection_parameters(selection),
                selection.guarantee(),
                ReleaseRule {
                    exact: false,
                    rule: format!(
                        "at each of up to {} levels every client reports one prefix and {}; a \
                         word must pass every level",
                        parameters.levels,
                        rule.rule.replace("item", "prefix")
                    ),
                    ..rule
                },
            )
        }
    };
    let mut fields = Map::from_iter([
        ("levels".to_owned(), json!(parameters.levels)),
        ("levels_run".to_owned(), json!(output.levels_run)),
        ("segment".to_owned(), json!(parameters.segment)),
        ("restricted".to_owned(), json!(parameters.restricted)),
        (
            "composition".to_owned(),
            json!(parameters.composition.name()),
        ),
        ("level_mechanism".to_owned(), json!(level_mechanism)),
    ]);
    fields.extend(level_fields);
    fields.insert(
        "per_level_guarantee".to_owned(),
        json!(GuaranteeBody::from(level_guarantee)),
    );
    fields.insert("population".to_owned(), json!(population));
    HeavyHittersRelease {
        mechanism: TRIEHH_PLUS.to_owned(),
        parameters: Value::Object(fields),
        guarantee: GuaranteeBody::from(&output.guarantee),
        input,
        found_items: items.len(),
        diagnosis: Some(diagnose(
            &items,
            population,
            output.guarantee.delta,
            &level_rule,
            Remedies::HeavyHitters {
                levels: true,
                planner: matches!(parameters.per_level, LevelRelease::SampleThreshold(_))
                    .then_some("tally plan triehh++"),
            },
        )),
        items,
        trie: Some(output.nodes.iter().map(trie_node).collect()),
        truth: None,
        seed,
    }
}

/// The document of a TrieHH run: its parameters, its guarantee, the words found (in `str`
/// order, without counts: TrieHH releases none) and every accepted prefix by round. No truth
/// scores (the caller adds them when it knows the truth).
pub fn triehh(output: &TrieHhOutput, input: String, seed: Option<u64>) -> HeavyHittersRelease {
    let items: Vec<ReleasedItem> = output
        .words
        .iter()
        .map(|word| ReleasedItem {
            item: word.clone(),
            count: None,
            estimate: None,
        })
        .collect();
    let trie = output
        .accepted
        .iter()
        .zip(1..)
        .flat_map(|(prefixes, level)| {
            prefixes.iter().map(move |prefix| TrieNodeBody {
                prefix: prefix.clone(),
                level,
                count: None,
                estimate: None,
            })
        })
        .collect();
    let config = &output.config;
    let clients = config.population;
    // The count whose expected number in a batch of `m` of the `n` clients is the threshold.
    let release_point = (config.batch_size > 0).then(|| {
        u64::try_from(
            (u128::from(config.threshold) * u128::from(clients))
                .div_ceil(u128::from(config.batch_size)),
        )
        .unwrap_or(u64::MAX)
    });
    let diagnosis = diagnose(
        &items,
        clients,
        output.guarantee.delta,
        &ReleaseRule {
            release_point,
            exact: false,
            rule: format!(
                "each of up to {} rounds draws {} of the clients and keeps a prefix that {} of \
                 them hold; a word must pass every round",
                config.rounds, config.batch_size, config.threshold
            ),
            count_kind: "count",
        },
        Remedies::HeavyHitters {
            levels: true,
            planner: None,
        },
    );
    HeavyHittersRelease {
        mechanism: TRIEHH.to_owned(),
        parameters: json!({
            "rounds": config.rounds,
            "rounds_run": output.rounds_run,
            "segment": config.segment,
            "threshold": config.threshold,
            "batch_size": config.batch_size,
            "beam": config.beam,
            "population": config.population,
        }),
        guarantee: GuaranteeBody::from(&output.guarantee),
        input,
        found_items: items.len(),
        diagnosis: Some(diagnosis),
        items,
        trie: Some(trie),
        truth: None,
        seed,
    }
}

fn trie_node(node: &TrieNode) -> TrieNodeBody {
    TrieNodeBody {
        prefix: node.prefix.clone(),
        level: u32::try_from(node.level).unwrap_or(u32::MAX),
        count: Some(node.count),
        estimate: Some(node.estimate),
    }
}

/// The document of a sample-and-threshold histogram over `population` clients: `items` are
/// the released cells by decreasing count, `target_delta` the `δ` asked for, `execution` how
/// it ran (a simulator path, or `federated`).
pub fn sample_threshold(
    items: Vec<ReleasedItem>,
    mechanism: &SampleThreshold,
    population: u64,
    target_delta: f64,
    input: String,
    execution: &str,
    seed: Option<u64>,
) -> HistogramRelease {
    let params = mechanism.params();
    let diagnosis = histogram_diagnosis(
        &items,
        population,
        mechanism.guarantee().delta,
        &sample_threshold_rule(mechanism),
        1,
    );
    HistogramRelease {
        mechanism: SAMPLE_THRESHOLD.to_owned(),
        parameters: json!({
            "sampling_rate": params.sampling_rate(),
            "threshold": params.threshold(),
            "population": population,
            "expected_sample_size": population as f64 * params.sampling_rate(),
        }),
        guarantee: GuaranteeBody::from(mechanism.guarantee()),
        target_delta,
        input,
        execution: execution.to_owned(),
        released_items: items.len(),
        items,
        seed,
        diagnosis: Some(diagnosis),
    }
}

/// The document of a partition selection over `population` clients: `items` are the released
/// items (noisy counts as estimates for the noise-based methods, keys alone for the truncated
/// geometric).
pub fn partition_selection(
    items: Vec<ReleasedItem>,
    selection: &PartitionSelection,
    population: u64,
    target_delta: f64,
    input: String,
    execution: &str,
    seed: Option<u64>,
) -> HistogramRelease {
    let mut parameters = selection_parameters(selection);
    parameters.insert("population".to_owned(), json!(population));
    let diagnosis = histogram_diagnosis(
        &items,
        population,
        selection.guarantee().delta,
        &selection_rule_of(selection),
        1,
    );
    HistogramRelease {
        mechanism: selection.method().name().to_owned(),
        parameters: Value::Object(parameters),
        guarantee: GuaranteeBody::from(selection.guarantee()),
        target_delta,
        input,
        execution: execution.to_owned(),
        released_items: items.len(),
        items,
        seed,
        diagnosis: Some(diagnosis),
    }
}

/// The calibrated parameters of a partition selection, as its documents show them: the noise's
/// scale (Laplace) or standard deviation (Gaussian) and the threshold, or the per-item budget
/// of the truncated geometric's table.
fn selection_parameters(selection: &PartitionSelection) -> Map<String, Value> {
    let fields: [(&str, Value); 2] = match selection.calibration() {
        Calibration::Laplace(laplace) => {
            let (numerator, denominator) = laplace.scale();
            [
                ("scale", json!(numerator as f64 / denominator as f64)),
                ("threshold", json!(laplace.threshold())),
            ]
        }
        Calibration::Gaussian(gaussian) => {
            let (numerator, denominator) = gaussian.sigma2();
            [
                (
                    "sigma",
                    json!((numerator as f64 / denominator as f64).sqrt()),
                ),
                ("threshold", json!(gaussian.threshold())),
            ]
        }
        Calibration::TruncatedGeometric(geometric) => {
            let (epsilon, delta) = geometric.cell_budget();
            [
                ("item_epsilon", json!(epsilon)),
                ("item_delta", json!(delta)),
            ]
        }
    };
    fields
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

/// The items a partition selection released, as a document lists them: the noisy count as
/// the estimate for the noise-based methods, the key alone for the truncated geometric.
pub fn selected_items<K: Into<String>>(selected: Vec<SelectedKey<K>>) -> Vec<ReleasedItem> {
    selected
        .into_iter()
        .map(|item| ReleasedItem {
            item: item.key.into(),
            count: None,
            estimate: item.noisy_count.map(|count| count as f64),
        })
        .collect()
}

/// How sample-and-threshold `mechanism` releases an item: one coin per contribution at its
/// sampling rate, then its threshold on the sampled count.
pub fn sample_threshold_rule(mechanism: &SampleThreshold) -> ReleaseRule {
    let params = *mechanism.params();
    ReleaseRule {
        release_point: KeySelection::SampleThreshold(params).release_point(0.5),
        exact: true,
        rule: format!(
            "each contribution is sampled at rate {:.4} and an item is released when its \
             sampled count reaches {}",
            params.sampling_rate(),
            params.threshold()
        ),
        count_kind: "sampled count",
    }
}

/// How the partition selection `selection` releases an item, from its calibration.
pub fn selection_rule_of(selection: &PartitionSelection) -> ReleaseRule {
    let calibration = selection.calibration();
    let (rule, count_kind) = match calibration {
        Calibration::Laplace(laplace) => {
            let (numerator, denominator) = laplace.scale();
            (
                format!(
                    "each item's count gets Laplace noise of scale {:.3} and the item is \
                     released when its noisy count passes {}",
                    numerator as f64 / denominator as f64,
                    laplace.threshold()
                ),
                "noisy count",
            )
        }
        Calibration::Gaussian(gaussian) => {
            let (numerator, denominator) = gaussian.sigma2();
            (
                format!(
                    "each item's count gets Gaussian noise of σ = {:.3} and the item is \
                     released when its noisy count passes {}",
                    (numerator as f64 / denominator as f64).sqrt(),
                    gaussian.threshold()
                ),
                "noisy count",
            )
        }
        Calibration::TruncatedGeometric(geometric) => {
            let (epsilon, delta) = geometric.cell_budget();
            (
                format!(
                    "each item is released with a probability that grows with its count \
                     (ε = {epsilon:.3}, δ = {delta:.3e} per item)"
                ),
                "count",
            )
        }
    };
    ReleaseRule {
        release_point: calibration.release_point(0.5),
        exact: true,
        rule,
        count_kind,
    }
}

/// The diagnosis of a histogram of `items` over `clients` clients of at most `max_items`
/// distinct items each, released by `rule` with the guarantee's `delta`.
pub fn histogram_diagnosis(
    items: &[ReleasedItem],
    clients: u64,
    delta: f64,
    rule: &ReleaseRule,
    max_items: u32,
) -> ReleaseDiagnosis {
    diagnose(
        items,
        clients,
        delta,
        rule,
        Remedies::Histogram { max_items },
    )
}

/// The name of the single-round heavy-hitter document's mechanism.
pub const SINGLE_ROUND: &str = "single-round heavy hitters (sample-and-threshold)";

/// The document of single-round heavy hitters over `population` clients: one
/// sample-and-threshold histogram of whole items, `items` its released cells by decreasing
/// count. No truth scores (the caller adds them when it knows the truth).
pub fn single_round(
    items: Vec<ReleasedItem>,
    mechanism: &SampleThreshold,
    population: u64,
    input: String,
    seed: Option<u64>,
) -> HeavyHittersRelease {
    let params = mechanism.params();
    HeavyHittersRelease {
        mechanism: SINGLE_ROUND.to_owned(),
        parameters: json!({
            "sampling_rate": params.sampling_rate(),
            "threshold": params.threshold(),
            "population": population,
        }),
        guarantee: GuaranteeBody::from(mechanism.guarantee()),
        input,
        found_items: items.len(),
        diagnosis: Some(diagnose(
            &items,
            population,
            mechanism.guarantee().delta,
            &sample_threshold_rule(mechanism),
            Remedies::HeavyHitters {
                levels: false,
                planner: Some("tally plan sample-threshold"),
            },
        )),
        items,
        trie: None,
        truth: None,
        seed,
    }
}

/// The name of the document of Ghazi et al.'s prefix tree of Count-Min oracles.
pub const COUNT_MIN_PREFIX_TREE: &str = "count-min-prefix-tree";

/// The document of Ghazi et al.'s prefix tree of Count-Min oracles (`tally heavy-hitters
/// --algorithm count-min-prefix-tree`): the heavy hitters `found` by `protocol` (calibrated
/// for `users` devices), by decreasing estimate (no counts: the oracles' estimates are all the
/// release holds), with every level's parameters and message cost.
pub fn count_min_prefix_tree(
    found: &[(u32, f64)],
    protocol: &ShuffleHeavyHitters,
    users: u64,
    input: String,
    seed: Option<u64>,
) -> HeavyHittersRelease {
    let mut found = found.to_vec();
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    let items: Vec<ReleasedItem> = found
        .into_iter()
        .map(|(item, estimate)| ReleasedItem {
            item: item.to_string(),
            count: None,
            estimate: Some(estimate),
        })
        .collect();
    let levels: Vec<Value> = (1_u32..)
        .zip(protocol.levels())
        .map(|(level, round)| {
            let params = round.oracle().protocol().params();
            let cost = round.oracle().message_cost();
            json!({
                "level": level,
                "epsilon": params.epsilon,
                "delta": params.delta,
                "rows": params.rows,
                "width": params.width,
                "gamma": params.gamma,
                "messages_per_client": cost.messages_per_client,
                "bits_per_message": cost.bits_per_message,
            })
        })
        .collect();
    let (messages, bits) = protocol.message_cost();
    let kept_at = protocol.kept_at();
    let diagnosis = diagnose(
        &items,
        users,
        protocol.guarantee().delta,
        &ReleaseRule {
            // An estimate is about the true count: an item holds about the count a prefix is
            // kept at when its estimate passes it half the time.
            release_point: Some(kept_at.max(0.0).ceil() as u64),
            exact: false,
            rule: format!(
                "a prefix is kept at each of {} levels when its Count-Min estimate reaches \
                 {kept_at:.1} (half the threshold {:.1})",
                protocol.levels().len(),
                protocol.threshold()
            ),
            count_kind: "estimate",
        },
        Remedies::HeavyHitters {
            levels: false,
            planner: None,
        },
    );
    HeavyHittersRelease {
        mechanism: COUNT_MIN_PREFIX_TREE.to_owned(),
        parameters: json!({
            "domain_bits": protocol.levels().len(),
            "threshold": protocol.threshold(),
            "failure_probability": protocol.levels()[0].oracle().protocol().params().beta,
            "users": users,
            "messages_per_client": messages,
            "bits_per_message": bits,
            "levels": levels,
        }),
        guarantee: GuaranteeBody::from(protocol.guarantee()),
        input,
        found_items: items.len(),
        diagnosis: Some(diagnosis),
        items,
        trie: None,
        truth: None,
        seed,
    }
}

/// The name of the OptPrefixTree document's mechanism.
pub const OPT_PREFIX_TREE: &str = "opt-prefix-tree";

/// The parameters of an OptPrefixTree run that its output does not carry.
pub struct OptPrefixTreeParameters<'a> {
    /// Iterations per run.
    pub iterations: usize,
    /// Runs.
    pub runs: usize,
    /// The domain cap.
    pub domain_cap: u64,
    /// The target false-positive ratio.
    pub fpr: f64,
    /// The selection rule.
    pub selection: Selection,
    /// OUE or SUE.
    pub randomizer: UnaryVariant,
    /// The encoding's name.
    pub encoding: &'a str,
    /// The segment policy.
    pub segment: SegmentPolicy,
    /// The longest prefix, in symbols.
    pub max_length: usize,
    /// How many words were denied.
    pub deny: usize,
}

/// The document of an OptPrefixTree run, as `tally heavy-hitters --algorithm opt-prefix-tree
/// --json` prints it without what only a simulation knows (the data points, the captured
/// mass, the truth, how the sums were drawn): its parameters with the solved `ε₀` and its
/// accounting, both guarantees, the words found (by decreasing estimate, with the run and
/// iteration that found each), one summary per iteration and the simulation's `seed` (none
/// for a federated run); with `warnings` when the guarantee's `δ ≥ 1/n` for the `population`.
pub fn opt_prefix_tree(
    output: &OptPrefixTreeOutput,
    parameters: &OptPrefixTreeParameters<'_>,
    population: u64,
    input: String,
    seed: Option<u64>,
) -> Value {
    let plan = &output.plan;
    let items: Vec<Value> = output
        .words
        .iter()
        .map(|w| {
            json!({"item": w.word, "count": null, "estimate": w.estimate, "run": w.run, "iteration": w.iteration})
        })
        .collect();
    let iterations: Vec<Value> = output
        .iterations
        .iter()
        .map(|s| {
            json!({
                "run": s.run,
                "iteration": s.iteration,
                "prefix_length": s.prefix_length,
                "segment": s.segment,
                "domain_size": s.domain_size,
                "pruned": s.pruned,
                "sigma": s.sigma,
                "threshold": s.threshold,
                "expected_false_positives": s.expected_false_positives,
                "completed": s.completed,
                "live": s.live,
            })
        })
        .collect();
    let mut document = json!({
        "mechanism": OPT_PREFIX_TREE,
        "parameters": {
            "iterations": parameters.iterations,
            "runs": parameters.runs,
            "iterations_run": output.iterations.len(),
            "domain_cap": parameters.domain_cap,
            "fpr": parameters.fpr,
            "selection": selection_rule(parameters.selection).name(),
            "randomizer": match parameters.randomizer {
                UnaryVariant::Optimized => "oue",
                UnaryVariant::Symmetric => "sue",
            },
            "encoding": parameters.encoding,
            "segment": segment_rule(parameters.segment).to_string(),
            "max_length": parameters.max_length,
            "deny": parameters.deny,
            "local_epsilon": plan.local_epsilon,
            "composition": plan.composition.name(),
            "shuffle_bound": plan.bound.name(),
            "shuffle_bound_proven_for_randomizer": plan.bound != ShuffleBound::Fmt23,
            "users_per_iteration": plan.users,
            "per_iteration_guarantee": GuaranteeBody::from(&plan.per_iteration),
            "population": population,
        },
        "guarantee": GuaranteeBody::from(&output.guarantee),
        "local_guarantee": GuaranteeBody::from(&output.local_guarantee),
        "input": input,
        "found_items": output.words.len(),
        "items": items,
        "iterations": iterations,
        "seed": seed,
    });
    if let Some(warning) = delta_warning(output.guarantee.delta, population) {
        document["warnings"] = json!([warning]);
    }
    document
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::{Analysis, PlanTarget};
    use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig};
    use tally_core::task::Task;

    use super::*;

    fn mechanism() -> SampleThreshold {
        SampleThreshold::calibrate(
            1.0,
            1e-8,
            PlanTarget::Threshold(20),
            Analysis::Tight,
            Neighbours::AddRemove,
        )
        .unwrap()
    }

    /// A federated range task whose level 1 released nothing still has a document a reader
    /// can parse: its fraction is 0, not the `null` that 0/0 serializes to.
    #[test]
    fn a_range_over_an_empty_release_has_fraction_zero() {
        use tally_core::quantiles::{HierarchicalConfig, HierarchicalHistogram};

        let empty = HierarchicalHistogram::new(HierarchicalConfig {
            shape: TreeShape::new(4, 2).unwrap(),
            per_level: mechanism(),
            composition: Composition::Basic,
            total_delta: 2e-8,
        })
        .unwrap()
        .finish();
        let doc = range_count(
            &empty,
            None,
            (0.25, 0.5),
            json!({}),
            2e-8,
            "data".into(),
            None,
        )
        .unwrap();
        assert_eq!(
            (doc.estimate, doc.estimated_total, doc.fraction),
            (0.0, 0.0, 0.0)
        );
        let text = serde_json::to_string(&doc).unwrap();
        assert!(text.contains("\"fraction\":0.0"), "{text}");
    }

    #[test]
    fn a_histogram_document_has_its_parameters_and_items() {
        let mechanism = mechanism();
        let items = vec![
            ReleasedItem {
                item: "the".into(),
                count: Some(40),
                estimate: Some(400.0),
            },
            ReleasedItem {
                item: "and".into(),
                count: Some(21),
                estimate: Some(210.0),
            },
        ];
        let doc = sample_threshold(
            items.clone(),
            &mechanism,
            1000,
            1e-8,
            "data".into(),
            "federated",
            None,
        );
        assert_eq!(doc.mechanism, SAMPLE_THRESHOLD);
        assert_eq!(doc.released_items, 2);
        assert_eq!(doc.items, items);
        assert_eq!(doc.guarantee, GuaranteeBody::from(mechanism.guarantee()));
        assert_eq!((doc.target_delta, doc.seed), (1e-8, None));
        assert_eq!(
            (doc.input.as_str(), doc.execution.as_str()),
            ("data", "federated")
        );
        let rate = mechanism.params().sampling_rate();
        assert_eq!(doc.parameters["sampling_rate"], rate);
        assert_eq!(doc.parameters["threshold"], 20);
        assert_eq!(doc.parameters["population"], 1000);
        assert_eq!(doc.parameters["expected_sample_size"], 1000.0 * rate);
        assert_eq!(doc.parameters.as_object().map(|o| o.len()), Some(4));
    }

    #[test]
    fn a_triehh_plus_document_has_the_words_and_the_whole_trie() {
        let per_level = mechanism();
        let mut task = TrieHhPlus::new(TrieHhPlusConfig {
            levels: 5,
            segment: 1,
            restricted: true,
            per_level: per_level.clone(),
            composition: Composition::Basic,
            total_delta: 5e-8,
        })
        .unwrap();
        let levels: [&[(&str, u64)]; 3] = [
            &[("a", 300)],
            &[("ac", 150), ("ab", 140)],
            &[("ab$", 140), ("ac$", 150)],
        ];
        for cells in levels {
            assert!(task.next_query().is_some());
            task.observe(
                cells
                    .iter()
                    .map(|&(prefix, count)| (prefix.to_owned(), count, count as f64 * 10.0))
                    .collect(),
            );
        }
        // No live prefix is left: the run stops after three of its five levels.
        assert!(task.next_query().is_none());
        let output = task.finish();
        let parameters = TriePlusParameters {
            levels: 5,
            segment: 1,
            restricted: true,
            composition: Composition::Basic,
            per_level: LevelRelease::SampleThreshold(&per_level),
        };
        let doc = triehh_plus(&output, &parameters, 400, "data".into(), Some(3));
        assert_eq!(doc.mechanism, TRIEHH_PLUS);
        assert_eq!(doc.guarantee, GuaranteeBody::from(&output.guarantee));
        assert_eq!(
            (doc.input.as_str(), doc.seed, doc.truth),
            ("data", Some(3), None)
        );
        let words: Vec<(&str, Option<u64>, Option<f64>)> = doc
            .items
            .iter()
            .map(|i| (i.item.as_str(), i.count, i.estimate))
            .collect();
        assert_eq!(
            words,
            [
                ("ac", Some(150), Some(1500.0)),
                ("ab", Some(140), Some(1400.0))
            ]
        );
        assert_eq!(doc.found_items, 2);
        let trie = doc.trie.unwrap();
        let nodes: Vec<(&str, u32, Option<u64>)> = trie
            .iter()
            .map(|n| (n.prefix.as_str(), n.level, n.count))
            .collect();
        assert_eq!(
            nodes,
            [
                ("a", 1, Some(300)),
                ("ac", 2, Some(150)),
                ("ab", 2, Some(140)),
                ("ac$", 3, Some(150)),
                ("ab$", 3, Some(140)),
            ]
        );
        let params = &doc.parameters;
        assert_eq!(
            (params["levels"].as_u64(), params["levels_run"].as_u64()),
            (Some(5), Some(3))
        );
        assert_eq!(params["segment"], 1);
        assert_eq!(params["restricted"], true);
        assert_eq!(params["composition"], Composition::Basic.name());
        assert_eq!(params["threshold"], 20);
        assert_eq!(params["sampling_rate"], per_level.params().sampling_rate());
        assert_eq!(
            params["per_level_guarantee"],
            serde_json::to_value(GuaranteeBody::from(per_level.guarantee())).unwrap()
        );
        assert_eq!(params["population"], 400);
        assert_eq!(params["level_mechanism"], "sample-threshold");
        assert_eq!(params.as_object().map(|o| o.len()), Some(10));
    }
}
