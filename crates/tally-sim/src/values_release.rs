//! Quantiles and range counts of numbers by sample-and-threshold, and their documents, as
//! `tally quantiles --json` and `tally range --json` print them.

use crate::{
    CountedValues, ExecutionPath, SortedValues, ValueRange, Values, ValuesError,
    run_binary_searches, run_hierarchical, run_hierarchical_counted,
};
use serde_json::{Value, json};
use tally_accounting::composition::Composition;
use tally_accounting::naming::{Naming, Parameter, naming};
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_accounting::{Guarantee, Neighbours};
use tally_core::histogram::{RoundPlan, plan_rounds};
use tally_core::quantiles::{
    BinarySearchConfig, BinarySearchQuantile, HierarchicalConfig, HierarchicalHistogram,
    HierarchicalRelease, MAX_SEARCH_ROUNDS, TreeShape,
};
use tally_core::task::Task;
use tally_messages::{GuaranteeBody, QuantileRow, QuantilesRelease, RangeRelease};
use tally_protocol::document;

/// Why a quantile or range release was refused.
#[derive(Debug, thiserror::Error)]
pub enum ValuesReleaseError {
    /// An argument out of its domain, or a release with nothing in it.
    #[error("{0}")]
    Invalid(String),
    /// Whatever the planner, the accountant or the mechanism reject.
    #[error(transparent)]
    Core(#[from] tally_core::Error),
}

/// How the quantiles are estimated: the wire's and the command line's one type.
pub use tally_messages::QuantileMethod;

/// How a release over numbers is configured (the options `tally quantiles` and `tally range`
/// share).
#[derive(Clone, Copy, Debug)]
pub struct ValuesSettings {
    /// Target `ε` of the whole run.
    pub epsilon: f64,
    /// Target `δ` of the whole run.
    pub delta: f64,
    /// What each round's planner solves for.
    pub target: PlanTarget,
    /// The analysis of each round.
    pub analysis: Analysis,
    /// The neighbour relation.
    pub neighbours: Neighbours,
    /// How the rounds' guarantees compose.
    pub composition: Composition,
    /// Branching factor of the hierarchical histogram.
    pub branching: u32,
    /// Levels of the tree, or rounds of each binary search.
    pub levels: u32,
    /// Whether the hierarchical release is made consistent.
    pub consistent: bool,
}

/// The values a hierarchical histogram runs over: loaded one per client, or counted per leaf
/// of its tree as a file was read ([`CountedValues`]); both give releases equal in law.
#[derive(Debug)]
pub enum HierarchicalValues {
    /// Every client's value.
    Loaded(Values),
    /// The number of clients per leaf.
    Counted(CountedValues),
}

impl HierarchicalValues {
    /// Loaded `values` as a hierarchical run over the tree `shape` takes them: counted per
    /// leaf, as the command line counts a file, so that the same values and seed give the same
    /// release whether they came from a file or from memory; kept loaded when the tree is too
    /// wide to count or when `truth` needs them.
    fn of(values: Values, shape: TreeShape, truth: bool) -> Self {
        if truth || !CountedValues::fits(shape) {
            Self::Loaded(values)
        } else {
            Self::Counted(CountedValues::from_values(&values, shape))
        }
    }

    /// The number of clients.
    pub fn clients(&self) -> u64 {
        match self {
            Self::Loaded(values) => values.len() as u64,
            Self::Counted(values) => values.clients(),
        }
    }

    /// The range the values were rescaled from, if any.
    pub fn range(&self) -> Option<ValueRange> {
        match self {
            Self::Loaded(values) => values.range(),
            Self::Counted(values) => values.range(),
        }
    }

    /// One line saying where the values came from.
    pub fn description(&self) -> &str {
        match self {
            Self::Loaded(values) => values.description(),
            Self::Counted(values) => values.description(),
        }
    }

    /// Maps a point of `[0, 1]` back to the input's units.
    fn to_original(&self, y: f64) -> f64 {
        to_original(self.range(), y)
    }

    /// Runs the hierarchical histogram `task`.
    fn run(&self, task: HierarchicalHistogram, seed: u64) -> HierarchicalRelease {
        match self {
            Self::Loaded(values) => run_hierarchical(values, task, ExecutionPath::default(), seed),
            Self::Counted(values) => run_hierarchical_counted(values, task, seed),
        }
    }
}

/// Maps a point of `[0, 1]` back to the units of values rescaled from `range`.
fn to_original(range: Option<ValueRange>, y: f64) -> f64 {
    range.map_or(y, |range| range.from_unit(y))
}

/// Maps a value in the units of values rescaled from `range` into `[0, 1]`.
fn to_unit(range: Option<ValueRange>, x: f64) -> f64 {
    range.map_or(x, |range| range.to_unit(x))
}

/// The quantiles estimated when none are given.
pub const DEFAULT_QUANTILES: [f64; 3] = [0.1, 0.5, 0.9];

/// One estimated quantile, in the input's units.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The quantile.
    pub quantile: f64,
    /// Its estimate.
    pub value: f64,
    /// The final interval of a binary search.
    pub interval: Option<(f64, f64)>,
}

/// A release and its guarantee.
#[derive(Debug)]
pub struct Released<D> {
    /// The document `--json` prints.
    pub document: D,
    /// The guarantee of the release.
    pub guarantee: Guarantee,
}

/// The message for a value outside `[0, 1]` read without a range to rescale from, which
/// points at `--min` and `--max`; `None` for any other error.
pub fn rescaling_hint(error: &ValuesError) -> Option<String> {
    match error {
        ValuesError::OutOfRange {
            file,
            line,
            value,
            rescaling: false,
            ..
        } => Some(format!(
            "{file}:{line}: value {value} is outside [0, 1]: give {} and {} to rescale the \
             input",
            Parameter("min"),
            Parameter("max")
        )),
        _ => None,
    }
}

/// Refuses a quantile outside `[0, 1]`.
///
/// # Errors
///
/// [`ValuesReleaseError::Invalid`] naming the first such quantile.
pub fn check_quantiles(quantiles: &[f64]) -> Result<(), ValuesReleaseError> {
    if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(ValuesReleaseError::Invalid(format!(
            "invalid quantile {q}: expected numbers in [0, 1], e.g. {}",
            Parameter("quantiles").with(match naming() {
                Naming::Flags => "0.1,0.5,0.9",
                Naming::Keywords => "[0.1, 0.5, 0.9]",
            })
        )));
    }
    Ok(())
}

/// Checks that `[lo, hi)` is a range of the input's units (`range`, else `[0, 1]`).
///
/// # Errors
///
/// [`ValuesReleaseError::Invalid`] for a bound outside the units or `lo > hi`.
pub fn check_range(range: Option<ValueRange>, lo: f64, hi: f64) -> Result<(), ValuesReleaseError> {
    let (min, max) = range.map_or((0.0, 1.0), |r| (r.min(), r.max()));
    for (name, x) in [("lo", lo), ("hi", hi)] {
        if !(min..=max).contains(&x) {
            return Err(ValuesReleaseError::Invalid(format!(
                "invalid {}: expected a number in [{min}, {max}]",
                Parameter(name).with(x)
            )));
        }
    }
    if lo > hi {
        return Err(ValuesReleaseError::Invalid(format!(
            "invalid range: {} is above {}",
            Parameter("lo").with(lo),
            Parameter("hi").with(hi)
        )));
    }
    Ok(())
}

/// Estimates `quantiles` of the values `load` reads (after the run is planned, so that bad
/// settings are refused before any data is read) with randomness from `seed`, and builds the
/// document (`shown_seed` is the seed to show; with `truth`, each row also has its true value
/// and rank error).
///
/// # Errors
///
/// Whatever `load`, the planner and the mechanism reject.
#[allow(clippy::too_many_arguments)] // the options of `tally quantiles`
pub fn quantiles<E: From<ValuesReleaseError>>(
    settings: &ValuesSettings,
    quantiles: &[f64],
    method: QuantileMethod,
    load: impl FnOnce() -> Result<Values, E>,
    seed: u64,
    shown_seed: Option<u64>,
    truth: bool,
) -> Result<Released<QuantilesRelease>, E> {
    check_quantiles(quantiles)?;
    match method {
        QuantileMethod::Hierarchical => hierarchical_quantiles(
            settings,
            quantiles,
            |shape| load().map(|values| HierarchicalValues::of(values, shape, truth)),
            seed,
            shown_seed,
            truth,
        ),
        QuantileMethod::BinarySearch => {
            let searches = quantiles.len();
            let BinarySearches {
                plan,
                rounds,
                guarantee,
            } = BinarySearches::prepare(settings, searches)?;
            let tasks = quantiles
                .iter()
                .map(|&q| BinarySearchQuantile::new(BinarySearchConfig::planned(q, rounds, &plan)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(ValuesReleaseError::from)?;
            let values = load()?;
            let results = run_binary_searches(&values, tasks, ExecutionPath::default(), seed);
            let rows: Vec<Row> = results
                .iter()
                .map(|s| Row {
                    quantile: s.quantile,
                    value: values.to_original(s.value),
                    interval: Some((values.to_original(s.lo), values.to_original(s.hi))),
                })
                .collect();
            let parameters =
                document::binary_search_parameters(&document::BinarySearchParameters {
                    rounds,
                    searches,
                    range: values.range(),
                    composition: plan.composition,
                    per_round: &plan.per_round,
                    population: values.len() as u64,
                });
            let sorted = truth.then(|| values.sorted());
            let document = quantiles_document(
                values.description(),
                values.range(),
                sorted.as_ref(),
                document::BINARY_SEARCH,
                parameters,
                &guarantee,
                &rows,
                settings.delta,
                shown_seed,
            );
            Ok(Released {
                document,
                guarantee,
            })
        }
    }
}

/// Estimates `quantiles` with a hierarchical histogram over the values `load` reads or counts
/// in the planned tree it is given (after the run is planned, so that bad settings are refused
/// before any data is read), as [`quantiles`] does. With `truth`, `load` must load the values.
///
/// # Errors
///
/// Whatever `load`, the planner and the mechanism reject, and `truth` with counted values.
pub fn hierarchical_quantiles<E: From<ValuesReleaseError>>(
    settings: &ValuesSettings,
    quantiles: &[f64],
    load: impl FnOnce(TreeShape) -> Result<HierarchicalValues, E>,
    seed: u64,
    shown_seed: Option<u64>,
    truth: bool,
) -> Result<Released<QuantilesRelease>, E> {
    check_quantiles(quantiles)?;
    let run = Hierarchical::prepare(settings)?;
    let values = load(run.shape)?;
    let sorted = match (truth, &values) {
        (false, _) => None,
        (true, HierarchicalValues::Loaded(values)) => Some(values.sorted()),
        (true, HierarchicalValues::Counted(_)) => {
            return Err(ValuesReleaseError::Invalid(
                "the true quantiles need the values loaded, not counted".to_owned(),
            )
            .into());
        }
    };
    let release = run.execute(&values, seed)?;
    let estimates = release
        .quantiles(quantiles)
        .map_err(ValuesReleaseError::from)?;
    let rows: Vec<Row> = estimates
        .iter()
        .map(|e| Row {
            quantile: e.quantile,
            value: values.to_original(e.value),
            interval: None,
        })
        .collect();
    let parameters = run.parameters(&values, &release);
    let document = quantiles_document(
        values.description(),
        values.range(),
        sorted.as_ref(),
        document::HIERARCHICAL_HISTOGRAM,
        parameters,
        release.guarantee(),
        &rows,
        settings.delta,
        shown_seed,
    );
    Ok(Released {
        document,
        guarantee: release.guarantee().clone(),
    })
}

/// Estimates the number of values in `[lo, hi)` of the values `load` reads, with a
/// hierarchical histogram, and builds the document.
///
/// # Errors
///
/// Whatever `load`, the planner and the mechanism reject, and a range outside the input's
/// units (checked before `load`).
pub fn range_count<E: From<ValuesReleaseError>>(
    settings: &ValuesSettings,
    range: Option<ValueRange>,
    (lo, hi): (f64, f64),
    load: impl FnOnce() -> Result<Values, E>,
    seed: u64,
    shown_seed: Option<u64>,
) -> Result<Released<RangeRelease>, E> {
    hierarchical_range_count(
        settings,
        range,
        (lo, hi),
        |shape| load().map(|values| HierarchicalValues::of(values, shape, false)),
        seed,
        shown_seed,
    )
}

/// As [`range_count`], over the values `load` reads or counts in the planned tree it is
/// given.
///
/// # Errors
///
/// As [`range_count`].
pub fn hierarchical_range_count<E: From<ValuesReleaseError>>(
    settings: &ValuesSettings,
    range: Option<ValueRange>,
    (lo, hi): (f64, f64),
    load: impl FnOnce(TreeShape) -> Result<HierarchicalValues, E>,
    seed: u64,
    shown_seed: Option<u64>,
) -> Result<Released<RangeRelease>, E> {
    check_range(range, lo, hi)?;
    let run = Hierarchical::prepare(settings)?;
    let values = load(run.shape)?;
    let release = run.execute(&values, seed)?;
    let parameters = run.parameters(&values, &release);
    let document = document::range_count(
        &release,
        values.range(),
        (lo, hi),
        parameters,
        settings.delta,
        values.description().to_owned(),
        shown_seed,
    )
    .map_err(ValuesReleaseError::from)?;
    Ok(Released {
        document,
        guarantee: release.guarantee().clone(),
    })
}

/// The document of estimated quantiles over the values described by `input` (rescaled from
/// `range`), with the truth of each row when their `sorted` values are given.
#[allow(clippy::too_many_arguments)] // the fields of the document
pub fn quantiles_document(
    input: &str,
    range: Option<ValueRange>,
    sorted: Option<&SortedValues>,
    mechanism: &str,
    parameters: Value,
    guarantee: &Guarantee,
    quantiles: &[Row],
    target_delta: f64,
    seed: Option<u64>,
) -> QuantilesRelease {
    // Ground truth for the metrics: the true value and the rank error of each row.
    let rows = quantiles
        .iter()
        .map(|row| {
            let truth = sorted.map(|sorted| {
                (
                    to_original(range, sorted.quantile(row.quantile)),
                    sorted.rank_error(row.quantile, to_unit(range, row.value)),
                )
            });
            QuantileRow {
                quantile: row.quantile,
                value: row.value,
                interval: row.interval.map(|(lo, hi)| [lo, hi]),
                true_value: truth.map(|t| t.0),
                rank_error: truth.map(|t| t.1),
            }
        })
        .collect();
    QuantilesRelease {
        mechanism: mechanism.to_owned(),
        parameters,
        guarantee: GuaranteeBody::from(guarantee),
        target_delta,
        input: input.to_owned(),
        quantiles: rows,
        seed,
    }
}

/// The binary searches of a quantile release, planned before any data is read.
struct BinarySearches {
    plan: RoundPlan,
    rounds: usize,
    guarantee: Guarantee,
}

impl BinarySearches {
    /// Validates the rounds and calibrates them for `searches` searches of `settings.levels`
    /// rounds each, all composed.
    fn prepare(settings: &ValuesSettings, searches: usize) -> Result<Self, ValuesReleaseError> {
        if settings.consistent {
            return Err(ValuesReleaseError::Invalid(format!(
                "{} applies to {} only",
                Parameter("consistent"),
                Parameter("method").with_choice("hierarchical")
            )));
        }
        let rounds = settings.levels as usize;
        if !(1..=MAX_SEARCH_ROUNDS).contains(&rounds) {
            return Err(ValuesReleaseError::Invalid(format!(
                "invalid {}: a binary search runs 1 to {MAX_SEARCH_ROUNDS} rounds",
                Parameter("levels").with(rounds)
            )));
        }
        let plan = plan(settings, rounds * searches)?;
        let guarantee = BinarySearchConfig::planned(0.5, rounds, &plan).guarantee_of(searches)?;
        Ok(Self {
            plan,
            rounds,
            guarantee,
        })
    }
}

/// How a quantile release is calibrated, before any data is read: the rounds, the
/// sample-and-threshold mechanism every round runs, and the guarantee of them all, as
/// [`quantiles`] plans them.
#[derive(Clone, Debug)]
pub struct QuantilesPlan {
    /// The algorithm.
    pub method: QuantileMethod,
    /// The levels of the tree, or the rounds of each binary search.
    pub levels: u32,
    /// The branching factor of each level: `β` for the tree, 2 for a binary search.
    pub branching: u32,
    /// The number of passes over the levels: 1 for the tree, one per quantile for binary
    /// searches.
    pub searches: usize,
    /// The calibration of the rounds, all `levels·searches` of them composed.
    pub rounds: RoundPlan,
    /// The guarantee of the whole release.
    pub guarantee: Guarantee,
}

impl QuantilesPlan {
    /// Plans the release `settings` describe with `method`, for `searches` quantiles (each a
    /// search of its own with [`QuantileMethod::BinarySearch`]; the tree answers any number at
    /// once).
    ///
    /// # Errors
    ///
    /// As [`quantiles`] refuses the settings: an invalid tree or number of rounds,
    /// `consistent` with binary searches, or whatever the planner and the accountant reject.
    pub fn solve(
        settings: &ValuesSettings,
        method: QuantileMethod,
        searches: usize,
    ) -> Result<Self, ValuesReleaseError> {
        match method {
            QuantileMethod::Hierarchical => {
                let run = Hierarchical::prepare(settings)?;
                Ok(Self {
                    method,
                    levels: run.shape.levels(),
                    branching: run.shape.branching(),
                    searches: 1,
                    guarantee: run.task.guarantee().clone(),
                    rounds: run.plan,
                })
            }
            QuantileMethod::BinarySearch => {
                let searches_plan = BinarySearches::prepare(settings, searches)?;
                Ok(Self {
                    method,
                    levels: settings.levels,
                    branching: 2,
                    searches,
                    guarantee: searches_plan.guarantee,
                    rounds: searches_plan.plan,
                })
            }
        }
    }

    /// The width of a bucket at `level` (from 1) as a share of the range: `β^(−level)`.
    pub fn bucket_width(&self, level: u32) -> f64 {
        f64::from(self.branching).powi(-(level as i32))
    }

    /// The plan as `tally plan quantiles --json` prints it: the rounds' parameters and
    /// guarantees under the names `tally quantiles --json` gives them.
    pub fn document(&self) -> Value {
        let mechanism = &self.rounds.per_round;
        let params = mechanism.params();
        let mut document = json!({
            "mechanism": match self.method {
                QuantileMethod::Hierarchical => document::HIERARCHICAL_HISTOGRAM,
                QuantileMethod::BinarySearch => document::BINARY_SEARCH,
            },
            "levels": self.levels,
            "branching": self.branching,
            "searches": self.searches,
            "rounds": self.rounds.rounds,
            "composition": self.rounds.composition.name(),
            "sampling_rate": params.sampling_rate(),
            "threshold": params.threshold(),
            "smallest_released_count": params.threshold() as f64 / params.sampling_rate(),
            "finest_bucket": self.bucket_width(self.levels),
            "per_round_guarantee": GuaranteeBody::from(mechanism.guarantee()),
            "guarantee": GuaranteeBody::from(&self.guarantee),
            "target_delta": self.rounds.total_delta,
        });
        if self.method == QuantileMethod::BinarySearch {
            document["rounds_per_quantile"] = json!(self.levels);
        }
        document
    }
}

/// A planned hierarchical histogram.
struct Hierarchical {
    plan: RoundPlan,
    task: HierarchicalHistogram,
    shape: TreeShape,
    consistent: bool,
}

impl Hierarchical {
    /// Validates the tree and calibrates its levels, before any data is read.
    fn prepare(settings: &ValuesSettings) -> Result<Self, ValuesReleaseError> {
        let shape = TreeShape::new(settings.branching, settings.levels)?;
        let plan = plan(settings, settings.levels as usize)?;
        let task = HierarchicalHistogram::new(HierarchicalConfig::planned(shape, &plan))?;
        Ok(Self {
            plan,
            task,
            shape,
            consistent: settings.consistent,
        })
    }

    /// Runs the levels and post-processes the release as asked.
    fn execute(
        &self,
        values: &HierarchicalValues,
        seed: u64,
    ) -> Result<HierarchicalRelease, ValuesReleaseError> {
        let release = values.run(self.task.clone(), seed);
        if release.total() <= 0.0 {
            let params = release.params();
            return Err(ValuesReleaseError::Invalid(format!(
                "nothing was released at level 1: {} values are too few for threshold {} at \
                 sampling rate {:.6} (a bucket needs about {:.0} values); lower {} or use \
                 a larger ε",
                values.clients(),
                params.threshold(),
                params.sampling_rate(),
                params.threshold() as f64 / params.sampling_rate(),
                Parameter("levels")
            )));
        }
        Ok(if self.consistent {
            release.consistent()
        } else {
            release
        })
    }

    fn parameters(&self, values: &HierarchicalValues, release: &HierarchicalRelease) -> Value {
        document::hierarchical_parameters(
            &document::HierarchicalParameters {
                shape: self.shape,
                range: values.range(),
                consistent: self.consistent,
                composition: self.plan.composition,
                per_level: &self.plan.per_round,
                population: values.clients(),
            },
            release,
        )
    }
}

/// Splits the budget over `rounds` and calibrates each round.
fn plan(settings: &ValuesSettings, rounds: usize) -> Result<RoundPlan, ValuesReleaseError> {
    Ok(plan_rounds(
        settings.epsilon,
        settings.delta,
        rounds,
        settings.composition,
        settings.target,
        settings.analysis,
        settings.neighbours,
    )?)
}
