//! The native module `tally._tally` of the Python package `tally-dp`.
//!
//! Thin bindings: every function parses its arguments, calls the crates that the `tally`
//! command runs, and returns the document the command prints with `--json`, as a JSON string
//! (the Python layer wraps it in typed objects). Errors become `ValueError`s carrying the
//! command's messages. Long work runs with the GIL released.

use std::hash::Hash;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use numpy::{IntoPyArray as _, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rand::Rng as _;
use rustc_hash::FxHashMap;
use tally_accounting::composition::Composition;
use tally_accounting::filter::BasicFilter;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::naming::Naming;
use tally_accounting::partition_selection::Method as SelectionMethod;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_accounting::shuffle::ShuffleBound;
use tally_accounting::{Guarantee, Neighbours, TrustModel};
use tally_core::heavy_hitters::{KeyedLevel, PrefixRound};
use tally_core::histogram::SampleThreshold;
use tally_core::sampling::{KeyedCoin, SamplingKey, choose_row};
use tally_messages::{DomainHistogramMechanism, HistogramRelease, TaskSpec};
use tally_protocol::compose_plan::{self, ComposeMethod};
use tally_protocol::plan_document;
use tally_protocol::shuffle_plan::ShufflePlan;
use tally_protocol::triehh_plus_plan::TriePlusPlan;
use tally_sim::domain_release::{self, DomainRun, DomainSetting, ItemsOptions};
use tally_sim::items_release::{ItemChoice, ItemCounts, ItemsMechanism, ItemsRelease};
use tally_sim::sample_threshold_release::{self, Sampling};
use tally_sim::triehh_plus_release::{
    TriePlusSettings, per_level_mechanism, triehh_plus_counted, triehh_plus_keyed_counts,
};
use tally_sim::values_release::{self, QuantileMethod, QuantilesPlan, ValuesSettings};
use tally_sim::{
    ClientMode, CountedPopulation, CountedValues, DomainCounts, KeyedItemCounts, KeyedPartCounts,
    KeyedPopulation, PlaceInDomain, Population, StreamFormat, ValueRange,
    sample_threshold_integers, sample_threshold_values,
};

/// A Rust error as a Python `ValueError` with the command line's message.
fn value_error(error: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Parses the privacy analysis (the keyword `method`) and the neighbour relation.
fn analysis_and_neighbours(method: &str, neighbours: &str) -> PyResult<(Analysis, Neighbours)> {
    let analysis = method.parse::<Analysis>().map_err(value_error)?;
    let neighbours = neighbours.parse::<Neighbours>().map_err(value_error)?;
    Ok((analysis, neighbours))
}

/// The privacy analysis given as the keyword `analysis` (where `method` means another choice,
/// as in `tally.quantiles`): the accountant's error names that keyword.
fn analysis_keyword(analysis: &str) -> PyResult<Analysis> {
    analysis.parse::<Analysis>().map_err(|error| match error {
        tally_accounting::Error::InvalidParameter {
            value, expected, ..
        } => value_error(tally_accounting::Error::InvalidParameter {
            name: "analysis",
            value,
            expected,
        }),
        other => value_error(other),
    })
}

/// The keywords every sample-and-threshold release is calibrated from, handed over by the
/// Python layer as one dict (`tally._keywords.calibration`): `method` is the privacy analysis.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Calibration {
    epsilon: f64,
    delta: f64,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
    method: String,
    neighbours: String,
}

impl Calibration {
    /// What the planner solves for, from the arguments given (as `tally histogram` reads them).
    fn target(&self) -> PlanTarget {
        match (self.sampling_rate, self.threshold) {
            (Some(rate), _) => PlanTarget::SamplingRate(rate),
            (None, Some(threshold)) => PlanTarget::Threshold(threshold),
            (None, None) => PlanTarget::MinReleasedCount,
        }
    }

    /// The parsed analysis and neighbour relation.
    fn analysis_and_neighbours(&self) -> PyResult<(Analysis, Neighbours)> {
        analysis_and_neighbours(&self.method, &self.neighbours)
    }
}

/// The keywords of a TrieHH++ run besides its calibration (`tally._keywords.trie`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct TrieShape {
    levels: usize,
    segment: usize,
    restricted: bool,
    composition: Option<String>,
    mechanism: String,
}

/// The keywords of a hierarchical histogram of numbers besides its calibration
/// (`tally._keywords.hierarchy`), shared by quantiles and range counts.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Hierarchy {
    branching: u32,
    levels: u32,
    consistent: bool,
    composition: Option<String>,
}

/// A calibration as given (floats by their bits), with `keyed`: the key of [`calibrated`]'s
/// cache.
type CalibrationKey = (u64, u64, Option<u64>, Option<u64>, String, String, bool);

/// The mechanism `tally histogram` calibrates from these arguments (with `keyed`, for the rate
/// a keyed coin uses). Calibrations are kept for the life of the process: planning costs
/// milliseconds, a release over a large NumPy array little more.
fn calibrated(calibration: &Calibration, keyed: bool) -> PyResult<SampleThreshold> {
    static CACHE: Mutex<Option<FxHashMap<CalibrationKey, SampleThreshold>>> = Mutex::new(None);
    let key = (
        calibration.epsilon.to_bits(),
        calibration.delta.to_bits(),
        calibration.sampling_rate.map(f64::to_bits),
        calibration.threshold,
        calibration.method.clone(),
        calibration.neighbours.clone(),
        keyed,
    );
    let cached = |cache: &Option<FxHashMap<_, SampleThreshold>>| {
        cache.as_ref().and_then(|c| c.get(&key)).cloned()
    };
    // A poisoned lock only means another thread panicked mid-insert: the map is still valid.
    if let Some(mechanism) = cached(&CACHE.lock().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(mechanism);
    }
    let (analysis, neighbours) = calibration.analysis_and_neighbours()?;
    let mechanism = sample_threshold_release::calibrate(
        calibration.epsilon,
        calibration.delta,
        calibration.target(),
        analysis,
        neighbours,
        keyed,
    )
    .map_err(value_error)?;
    CACHE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(FxHashMap::default)
        .insert(key, mechanism.clone());
    Ok(mechanism)
}

/// A column handed over by the Python layer as a `(kind, value)` pair, read in place: a file,
/// integers, Python strings, or the buffers of an Arrow string array.
enum Column<'py> {
    /// `("path", path)`.
    Path(PathBuf),
    /// `("ints", array)`: a contiguous NumPy `int64` array, read where it lies.
    Ints(PyReadonlyArray1<'py, i64>),
    /// `("strings", list of str)`.
    Strings(Vec<String>),
    /// `("arrow-strings", (offsets, data))`: the offsets (`int32` or `int64`, one more than
    /// the rows) and the UTF-8 bytes of an Arrow string array without nulls, as NumPy views of
    /// Arrow's own buffers.
    ArrowStrings(Offsets<'py>, PyReadonlyArray1<'py, u8>),
}

/// The offsets of an Arrow `string` (`int32`) or `large_string` (`int64`) array.
enum Offsets<'py> {
    Narrow(PyReadonlyArray1<'py, i32>),
    Wide(PyReadonlyArray1<'py, i64>),
}

impl<'py> Column<'py> {
    fn extract(pair: &Bound<'py, PyAny>) -> PyResult<Self> {
        let (kind, value): (String, Bound<'py, PyAny>) = pair.extract()?;
        match kind.as_str() {
            "path" => Ok(Self::Path(value.extract()?)),
            "ints" => Ok(Self::Ints(value.extract()?)),
            "strings" => Ok(Self::Strings(value.extract()?)),
            "arrow-strings" => {
                let (offsets, data): (Bound<'py, PyAny>, Bound<'py, PyAny>) = value.extract()?;
                let offsets = match offsets.extract() {
                    Ok(narrow) => Offsets::Narrow(narrow),
                    Err(_) => Offsets::Wide(offsets.extract()?),
                };
                Ok(Self::ArrowStrings(offsets, data.extract()?))
            }
            other => Err(value_error(format!("unknown column kind {other:?}"))),
        }
    }

    /// The values: strings, or the integers themselves.
    fn values(self) -> PyResult<Values> {
        match self {
            Self::Ints(ints) => Ok(Values::Ints(ints.as_slice().map_err(value_error)?.to_vec())),
            other => Ok(Values::Texts(other.texts()?)),
        }
    }

    /// The values as text (integers in decimal, as a file would hold them).
    fn texts(&self) -> PyResult<Vec<String>> {
        let mut texts = Vec::new();
        self.for_each_bytes(|bytes| match std::str::from_utf8(bytes) {
            Ok(text) => {
                texts.push(text.to_owned());
                Ok(())
            }
            Err(error) => Err(value_error(format!(
                "invalid UTF-8 in a string column: {error}"
            ))),
        })?;
        Ok(texts)
    }

    /// The values as bytes (see [`Self::for_each_bytes`]).
    fn bytes(&self) -> PyResult<Vec<Vec<u8>>> {
        let mut values = Vec::new();
        self.for_each_bytes(|value| {
            values.push(value.to_vec());
            Ok(())
        })?;
        Ok(values)
    }

    /// Calls `each` with every value as bytes, in order (see [`ColumnView::for_each_bytes`]).
    fn for_each_bytes(&self, each: impl FnMut(&[u8]) -> PyResult<()>) -> PyResult<()> {
        self.view()?.for_each_bytes(each)
    }

    /// The column's values where they lie, as plain slices that can be read without the GIL.
    fn view(&self) -> PyResult<ColumnView<'_>> {
        match self {
            Self::Path(_) => Err(value_error("expected a column of integers or strings")),
            Self::Strings(values) => Ok(ColumnView::Strings(values)),
            Self::Ints(ints) => Ok(ColumnView::Ints(ints.as_slice().map_err(value_error)?)),
            Self::ArrowStrings(offsets, data) => {
                let offsets = match offsets {
                    Offsets::Narrow(o) => OffsetsView::Narrow(o.as_slice().map_err(value_error)?),
                    Offsets::Wide(o) => OffsetsView::Wide(o.as_slice().map_err(value_error)?),
                };
                Ok(ColumnView::ArrowStrings(
                    offsets,
                    data.as_slice().map_err(value_error)?,
                ))
            }
        }
    }
}

/// A column of integers or strings as slices of its buffers ([`Column::view`]).
enum ColumnView<'a> {
    Ints(&'a [i64]),
    Strings(&'a [String]),
    ArrowStrings(OffsetsView<'a>, &'a [u8]),
}

/// The offsets of an Arrow string array, as a slice.
enum OffsetsView<'a> {
    Narrow(&'a [i32]),
    Wide(&'a [i64]),
}

impl<'a> ColumnView<'a> {
    /// The number of values.
    fn len(&self) -> usize {
        match self {
            Self::Ints(ints) => ints.len(),
            Self::Strings(values) => values.len(),
            Self::ArrowStrings(OffsetsView::Narrow(o), _) => o.len().saturating_sub(1),
            Self::ArrowStrings(OffsetsView::Wide(o), _) => o.len().saturating_sub(1),
        }
    }

    /// The bytes of every string, in order; `None` for integers, which have no bytes to borrow.
    fn strings(&self) -> PyResult<Option<Vec<&'a [u8]>>> {
        match self {
            Self::Ints(_) => Ok(None),
            Self::Strings(values) => Ok(Some(values.iter().map(|v| v.as_bytes()).collect())),
            Self::ArrowStrings(offsets, data) => {
                let offsets = match offsets {
                    OffsetsView::Narrow(o) => o
                        .iter()
                        .map(|&o| usize::try_from(o).ok())
                        .collect::<Option<Vec<_>>>(),
                    OffsetsView::Wide(o) => o
                        .iter()
                        .map(|&o| usize::try_from(o).ok())
                        .collect::<Option<Vec<_>>>(),
                }
                .ok_or_else(|| value_error("negative offset in an Arrow string array"))?;
                offsets
                    .windows(2)
                    .map(|pair| {
                        data.get(pair[0]..pair[1]).ok_or_else(|| {
                            value_error("offsets past the data of an Arrow string array")
                        })
                    })
                    .collect::<PyResult<_>>()
                    .map(Some)
            }
        }
    }

    /// Calls `each` with every value as bytes, in order: a string's UTF-8 bytes, an integer's
    /// decimal form.
    fn for_each_bytes(&self, mut each: impl FnMut(&[u8]) -> PyResult<()>) -> PyResult<()> {
        match self {
            Self::Ints(ints) => {
                let mut text = itoa::Buffer::new();
                ints.iter()
                    .try_for_each(|&v| each(text.format(v).as_bytes()))
            }
            strings => {
                // Unwrap safety: only integers have no strings.
                let strings = strings.strings()?.expect("a string column");
                strings.into_iter().try_for_each(each)
            }
        }
    }
}

/// `tally plan sample-threshold --json`.
#[pyfunction]
#[pyo3(signature = (epsilon, delta=None, sampling_rate=None, threshold=None, alpha=None, method="tight", neighbours="add-remove"))]
fn plan_sample_threshold(
    epsilon: f64,
    delta: Option<f64>,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
    alpha: Option<f64>,
    method: &str,
    neighbours: &str,
) -> PyResult<String> {
    let (analysis, neighbours) = analysis_and_neighbours(method, neighbours)?;
    let planned = plan_document::solve(
        epsilon,
        delta,
        alpha,
        sampling_rate,
        threshold,
        analysis,
        neighbours,
    )
    .map_err(value_error)?;
    Ok(planned.document().to_string())
}

/// `tally plan shuffle --json`.
#[pyfunction]
#[pyo3(signature = (users, delta, local_epsilon=None, epsilon=None, bound="fmt23"))]
fn plan_shuffle(
    users: u64,
    delta: f64,
    local_epsilon: Option<f64>,
    epsilon: Option<f64>,
    bound: &str,
) -> PyResult<String> {
    let bound = bound.parse().map_err(value_error)?;
    let plan =
        ShufflePlan::solve(local_epsilon, epsilon, users, delta, bound).map_err(value_error)?;
    Ok(plan.document().to_string())
}

/// `tally plan compose --json`.
#[pyfunction]
#[pyo3(signature = (epsilon, rounds, delta=0.0, target_delta=None, method="optimal"))]
fn plan_compose(
    epsilon: f64,
    rounds: u64,
    delta: f64,
    target_delta: Option<f64>,
    method: &str,
) -> PyResult<String> {
    let method = method.parse::<ComposeMethod>().map_err(value_error)?;
    let (_, _, document) =
        compose_plan::compose(epsilon, delta, rounds, target_delta, method).map_err(value_error)?;
    Ok(document.to_string())
}

/// `tally plan triehh++ --json`.
#[pyfunction]
#[pyo3(signature = (epsilon, delta, levels, sampling_rate=None, threshold=None, method="tight"))]
fn plan_triehh_plus(
    epsilon: f64,
    delta: f64,
    levels: u64,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
    method: &str,
) -> PyResult<String> {
    let analysis = method.parse::<Analysis>().map_err(value_error)?;
    let plan = TriePlusPlan::solve(epsilon, delta, levels, analysis, sampling_rate, threshold)
        .map_err(value_error)?;
    Ok(plan.document().to_string())
}

/// `tally histogram --json` with the sample-and-threshold mechanism.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.histogram`
fn histogram<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    clients: Option<&Bound<'py, PyAny>>,
    calibration: Calibration,
    seed: Option<u64>,
    sampling_key: Option<&str>,
    rows_as_clients: bool,
    description: Option<String>,
) -> PyResult<HistogramParts<'py>> {
    let key = sampling_key.map(derived_key).transpose()?;
    let mechanism = calibrated(&calibration, key.is_some())?;
    let delta = calibration.delta;
    let run_seed = seed.unwrap_or_else(random_seed);
    let description = description.unwrap_or_else(|| "items from Python".to_owned());
    let items = Column::extract(items)?;
    if let (Column::Path(path), None) = (&items, &key) {
        // A file streams, exactly as `tally histogram --input FILE` reads it.
        let format = stream_format(path, rows_as_clients, run_seed);
        let document = py.detach(|| {
            sample_threshold_release::streamed_histogram(
                path,
                format,
                &mechanism,
                delta,
                run_seed,
                seed,
                &|_| {},
            )
        });
        let document = document.map_err(file_error)?;
        return histogram_parts(py, document);
    }
    let clients = clients.map(Column::extract).transpose()?;
    if clients.is_none() && key.is_none() {
        // One value per client, held in memory: sampled and counted where the values lie.
        let released = match &items {
            Column::Ints(ints) => {
                let values = ints.as_slice().map_err(value_error)?;
                (!values.is_empty()).then(|| {
                    py.detach(|| {
                        let released = sample_threshold_integers(values, &mechanism, run_seed);
                        (
                            named_counts(released, |value| value.to_string()),
                            values.len(),
                        )
                    })
                })
            }
            Column::Strings(_) | Column::ArrowStrings(..) => {
                let texts = items.texts()?;
                (!texts.is_empty()).then(|| {
                    py.detach(|| {
                        let names: Vec<&str> = texts.iter().map(String::as_str).collect();
                        let (ids, names) = intern(&names);
                        let released = sample_threshold_values(&ids, &mechanism, run_seed);
                        let released = named_counts(released, |id| names[id as usize].to_owned());
                        (released, texts.len())
                    })
                })
            }
            Column::Path(_) => None,
        };
        if let Some((counts, clients)) = released {
            let mut document = sample_threshold_release::from_counts(
                counts,
                &mechanism,
                clients as u64,
                delta,
                description,
                IN_MEMORY_EXECUTION,
            );
            document.seed = seed;
            return histogram_parts(py, document);
        }
    }
    let population = Input::read(
        py,
        items,
        clients,
        run_seed,
        rows_as_clients,
        key.is_some(),
        description,
    )?;
    let document = py.detach(|| {
        let sampling = match (&population, key) {
            (Input::Keyed(population), Some(key)) => Sampling::Keyed { population, key },
            (Input::Seeded(population), _) => Sampling::Seeded {
                population,
                seed: run_seed,
            },
            (Input::Keyed(_), None) => unreachable!("keyed rows are read only with a key"),
        };
        sample_threshold_release::histogram(sampling, &mechanism, delta, seed)
    });
    let document = document.map_err(value_error)?;
    histogram_parts(py, document)
}

/// The mechanism of `tally.histogram(mechanism=..., max_items_per_client=...)` and of
/// `tally.spark.histogram`, its options checked as the command line checks them.
fn items_mechanism(
    calibration: &Calibration,
    mechanism: &str,
    max_items: u32,
    keyed: bool,
) -> PyResult<ItemsMechanism> {
    let (analysis, neighbours) = calibration.analysis_and_neighbours()?;
    let method = selection_method(mechanism)?;
    if !matches!(analysis, Analysis::Tight) {
        return Err(value_error(format!(
            "method={:?} chooses the analysis of one-item sample-and-threshold; \
             mechanism={mechanism:?} with max_items_per_client= has its own: drop method=",
            calibration.method
        )));
    }
    if method.is_some() && (calibration.sampling_rate.is_some() || calibration.threshold.is_some())
    {
        return Err(value_error(format!(
            "sampling_rate= and threshold= set sample-threshold's parameters; \
             mechanism={mechanism:?} calibrates its noise and threshold from epsilon=, delta= and \
             max_items_per_client=: drop them"
        )));
    }
    ItemsMechanism::calibrate(
        method,
        calibration.epsilon,
        calibration.delta,
        max_items,
        calibration.target(),
        neighbours,
        keyed,
    )
    .map_err(value_error)
}

/// The partition selection `mechanism` names, or `None` for `"sample-threshold"`.
fn selection_method(mechanism: &str) -> PyResult<Option<SelectionMethod>> {
    match mechanism {
        "sample-threshold" => Ok(None),
        name => Ok(Some(name.parse().map_err(value_error)?)),
    }
}

/// `tally histogram --json` with a partition selection (`mechanism` `laplace-threshold`,
/// `gaussian-threshold` or `truncated-geometric`) or sample-and-threshold over clients of at
/// most `max_items_per_client` distinct items (`--max-items-per-client`).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.histogram`
fn items_histogram<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
    clients: Option<&Bound<'py, PyAny>>,
    calibration: Calibration,
    mechanism: &str,
    max_items_per_client: Option<u32>,
    seed: Option<u64>,
    sampling_key: Option<&str>,
    rows_as_clients: bool,
    description: Option<String>,
) -> PyResult<HistogramParts<'py>> {
    let key = sampling_key.map(derived_key).transpose()?;
    let max_items = max_items_per_client.unwrap_or(1);
    let delta = calibration.delta;
    let mechanism = items_mechanism(&calibration, mechanism, max_items, key.is_some())?;
    let run_seed = seed.unwrap_or_else(random_seed);
    let description = description.unwrap_or_else(|| "items from Python".to_owned());
    let items = Column::extract(items)?;
    let clients = clients.map(Column::extract).transpose()?;
    let Input::Keyed(population) = Input::read(
        py,
        items,
        clients,
        run_seed,
        rows_as_clients,
        true,
        description,
    )?
    else {
        unreachable!("rows are read keyed with keyed = true")
    };
    let options = ItemsRelease {
        max_items,
        choice: key.map_or(ItemChoice::Seeded, ItemChoice::Keyed),
        seed: run_seed,
        target_delta: delta,
        shown_seed: seed,
    };
    let document = py
        .detach(|| mechanism.histogram(&population, &options))
        .map_err(value_error)?;
    histogram_parts(py, document)
}

/// The keywords of `tally.histogram` for a mechanism over a public domain
/// (`tally._keywords.domain`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct DomainOptions {
    domain: Option<u32>,
    buckets: Option<u32>,
    bound: String,
    failure_probability: Option<f64>,
    colluding_fraction: f64,
    clamp: bool,
    truth: bool,
}

/// The mechanism over a public domain named `mechanism`.
fn domain_mechanism(mechanism: &str) -> PyResult<DomainHistogramMechanism> {
    DomainHistogramMechanism::named(mechanism).ok_or_else(|| {
        value_error(format!(
            "invalid mechanism={mechanism:?}: expected a mechanism over a public domain"
        ))
    })
}

/// The public domain of `options` for `mechanism`, its options checked.
fn domain_map(
    mechanism: DomainHistogramMechanism,
    options: &DomainOptions,
) -> PyResult<tally_sim::DomainMap> {
    let map = domain_release::public_domain(options.domain, options.buckets, mechanism.name())
        .map_err(value_error)?;
    domain_release::check_failure_probability(options.failure_probability.is_some(), mechanism)
        .map_err(value_error)?;
    Ok(map)
}

/// The setting a mechanism over `map` is calibrated for, for `clients`: the one
/// [`domain_histogram`] runs and [`plan_domain_histogram`] plans.
fn domain_setting(
    calibration: &Calibration,
    options: &DomainOptions,
    map: tally_sim::DomainMap,
    clients: u64,
) -> PyResult<DomainSetting> {
    let (_, neighbours) = calibration.analysis_and_neighbours()?;
    Ok(DomainSetting {
        map,
        clients,
        epsilon: calibration.epsilon,
        delta: calibration.delta,
        neighbours,
        bound: options.bound.parse::<ShuffleBound>().map_err(value_error)?,
        beta: options
            .failure_probability
            .unwrap_or(DEFAULT_COUNT_MIN_BETA),
    })
}

/// `tally plan histogram --mechanism M --json`, and with `report`, `--report DIR` predicting
/// on `items` (and their `item_clients`) when given: the plan's document, and the report
/// page's path.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.plan.histogram`
fn plan_domain_histogram(
    py: Python<'_>,
    mechanism: &str,
    clients: u64,
    calibration: Calibration,
    options: DomainOptions,
    report: Option<PathBuf>,
    items: Option<&Bound<'_, PyAny>>,
    item_clients: Option<&Bound<'_, PyAny>>,
    recall_at: usize,
    population_seed: u64,
    description: Option<String>,
) -> PyResult<(String, Option<PathBuf>)> {
    let mechanism = domain_mechanism(mechanism)?;
    let map = domain_map(mechanism, &options)?;
    if clients == 0 {
        return Err(value_error(format!(
            "invalid clients=0: mechanism={:?} is calibrated for the clients that report; give \
             their number (at least 1)",
            mechanism.name()
        )));
    }
    let setting = domain_setting(&calibration, &options, map, clients)?;
    let planned = py.detach(|| tally_plan::domain::plan(mechanism, &setting));
    if let tally_plan::domain::MechanismPlan::Unavailable { reason, .. } = &planned {
        return Err(value_error(reason));
    }
    let document = serde_json::to_string_pretty(&planned.document()).map_err(value_error)?;
    let Some(dir) = report else {
        return without_report(document, items.map(|_| "items"));
    };
    let population = items
        .map(|items| {
            let items = Column::extract(items)?;
            let item_clients = item_clients.map(Column::extract).transpose()?;
            let description = description.unwrap_or_else(|| "items from Python".to_owned());
            Input::seeded(py, items, item_clients, population_seed, false, description)
        })
        .transpose()?;
    let placed = population
        .as_ref()
        .map(|p| map.apply(p))
        .transpose()
        .map_err(value_error)?;
    let item_counts: Vec<u64> = population
        .iter()
        .flat_map(|p| p.item_counts().iter().map(|&(_, count)| count))
        .collect();
    let known = population.as_ref().zip(placed.as_ref()).map(|(p, placed)| {
        tally_plan::domain::DomainPopulation {
            description: p.description(),
            clients: p.len() as u64,
            domain_counts: placed.true_counts(),
            item_counts: &item_counts,
            top: recall_at,
        }
    });
    let page = py
        .detach(|| {
            let report = tally_plan::domain::build(&setting, mechanism, known);
            tally_plan::page::domain::write(&report, &dir)
        })
        .map_err(report_error)?;
    Ok((document, Some(page)))
}

/// `tally plan quantiles --json`, and with `report`, `--report DIR` predicting on `values`
/// when given: the plan's document, and the report page's path.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.plan.quantiles`
fn plan_quantiles(
    py: Python<'_>,
    quantiles: Vec<f64>,
    calibration: Calibration,
    hierarchy: Hierarchy,
    quantile_method: &str,
    report: Option<PathBuf>,
    values: Option<&Bound<'_, PyAny>>,
    min: Option<f64>,
    max: Option<f64>,
    description: Option<String>,
) -> PyResult<(String, Option<PathBuf>)> {
    let quantile_method = quantile_method_named(quantile_method)?;
    values_release::check_quantiles(&quantiles).map_err(value_error)?;
    let settings = values_settings(&calibration, &hierarchy)?;
    let plan =
        QuantilesPlan::solve(&settings, quantile_method, quantiles.len()).map_err(value_error)?;
    let document = serde_json::to_string_pretty(&plan.document()).map_err(value_error)?;
    let Some(dir) = report else {
        return without_report(document, values.map(|_| "values"));
    };
    let counted = values
        .map(|values| -> PyResult<CountedValues> {
            let shape = tally_plan::quantiles::known_values_tree(&plan).map_err(|refused| {
                let fix = match refused {
                    tally_plan::quantiles::KnownValuesRefused::NotHierarchical => {
                        "drop values= or use method=\"hierarchical\""
                    }
                    _ => "use fewer levels=",
                };
                value_error(format!("values=: {refused}; {fix}"))
            })?;
            let load = load_numbers(values, value_range(min, max)?, description)?;
            let loaded = py.detach(load)?;
            Ok(CountedValues::from_values(&loaded, shape))
        })
        .transpose()?;
    let known = counted
        .as_ref()
        .map(|c| tally_plan::quantiles::KnownValues {
            description: c.description(),
            leaves: c.leaves(),
        });
    let page = py
        .detach(|| {
            let report = tally_plan::quantiles::build(plan, &settings, known);
            tally_plan::page::quantiles::write(&report, &dir)
        })
        .map_err(report_error)?;
    Ok((document, Some(page)))
}

/// A plan's document without a report; `population`, the keyword of a population given to
/// predict on, is refused: it is predicted on in the report only.
fn without_report(
    document: String,
    population: Option<&str>,
) -> PyResult<(String, Option<PathBuf>)> {
    match population {
        Some(keyword) => Err(value_error(format!(
            "{keyword}= is predicted on in the report: give report= a directory, or drop \
             {keyword}="
        ))),
        None => Ok((document, None)),
    }
}

/// A report that could not be written as an `OSError` (a directory or file) or a
/// `ValueError`, with its causes.
fn report_error(error: tally_plan::ReportError) -> PyErr {
    let mut message = error.to_string();
    let mut cause = std::error::Error::source(&error);
    while let Some(inner) = cause {
        message = format!("{message}: {inner}");
        cause = inner.source();
    }
    match error {
        tally_plan::ReportError::NotADirectory(_)
        | tally_plan::ReportError::CreateDirectory { .. }
        | tally_plan::ReportError::Write { .. } => PyOSError::new_err(message),
        _ => value_error(message),
    }
}

/// Whether `mechanism` is one over a public domain (it releases an estimate for every
/// element), the mechanisms [`domain_histogram`] runs.
#[pyfunction]
fn is_domain_mechanism(mechanism: &str) -> bool {
    DomainHistogramMechanism::named(mechanism).is_some()
}

/// `tally histogram --mechanism M --json` for a mechanism `M` over a public domain (central,
/// local or shuffle).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.histogram`
fn domain_histogram(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    clients: Option<&Bound<'_, PyAny>>,
    calibration: Calibration,
    mechanism: &str,
    options: DomainOptions,
    given: (bool, bool),
    seed: Option<u64>,
    rows_as_clients: bool,
    description: Option<String>,
) -> PyResult<String> {
    let mechanism = domain_mechanism(mechanism)?;
    let (sampling_key, max_items_per_client) = given;
    domain_release::refuse_items_options(ItemsOptions {
        sampling_key,
        max_items_per_client,
        sampling_rate_or_threshold: calibration.sampling_rate.is_some()
            || calibration.threshold.is_some(),
    })
    .map_err(value_error)?;
    let map = domain_map(mechanism, &options)?;
    let run_seed = seed.unwrap_or_else(random_seed);
    let description = description.unwrap_or_else(|| "items from Python".to_owned());
    let items = Column::extract(items)?;
    let (truth, clients, description) = if let Column::Path(path) = &items {
        let format = stream_format(path, rows_as_clients, run_seed);
        let counted = py
            .detach(|| DomainCounts::from_file(path, format, map, &|_| {}))
            .map_err(file_error)?;
        let description = counted.description().to_owned();
        (counted.counts().to_vec(), counted.clients(), description)
    } else {
        let clients = clients.map(Column::extract).transpose()?;
        let population = Input::seeded(py, items, clients, run_seed, rows_as_clients, description)?;
        let placed = map.apply(&population).map_err(value_error)?;
        let description = population.description().to_owned();
        (
            placed.true_counts().to_vec(),
            population.len() as u64,
            description,
        )
    };
    let setting = domain_setting(&calibration, &options, map, clients)?;
    let run = DomainRun {
        seed: run_seed,
        shown_seed: seed,
        colluding_fraction: options.colluding_fraction,
        clamp: options.clamp,
        truth: options.truth,
        top: None,
    };
    let released = py
        .detach(|| domain_release::release(mechanism, &setting, &truth, description, &run))
        .map_err(value_error)?;
    serde_json::to_string_pretty(&released.document).map_err(value_error)
}

/// A histogram document as `tally.Release` takes it: the text `--json` prints, the document
/// without its items as JSON (`"items": []`), and the items as a list of dictionaries.
type HistogramParts<'py> = (String, String, Bound<'py, PyList>);

/// [`HistogramParts`] of `document`. The items are made as Python objects directly: parsing
/// thousands of them back from the text (their estimates' decimal digits above all) cost
/// more than making them.
fn histogram_parts(py: Python<'_>, mut document: HistogramRelease) -> PyResult<HistogramParts<'_>> {
    let text = serde_json::to_string_pretty(&document).map_err(value_error)?;
    let items = std::mem::take(&mut document.items);
    let head = serde_json::to_string(&document).map_err(value_error)?;
    let (item, count, estimate) = (
        intern!(py, "item"),
        intern!(py, "count"),
        intern!(py, "estimate"),
    );
    let list = PyList::empty(py);
    for released in items {
        let dict = PyDict::new(py);
        dict.set_item(item, released.item)?;
        dict.set_item(count, released.count)?;
        // JSON has no infinities or NaN: the text holds `null` for them.
        dict.set_item(estimate, released.estimate.filter(|e| e.is_finite()))?;
        list.append(dict)?;
    }
    Ok((text, head, list))
}

/// `tally heavy-hitters --algorithm triehh++ --json`.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.heavy_hitters`
fn heavy_hitters(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    clients: Option<&Bound<'_, PyAny>>,
    calibration: Calibration,
    shape: TrieShape,
    seed: Option<u64>,
    rows_as_clients: bool,
    description: Option<String>,
) -> PyResult<String> {
    let settings = trie_settings(&calibration, &shape)?;
    let run_seed = seed.unwrap_or_else(random_seed);
    let items = Column::extract(items)?;
    let clients = clients.map(Column::extract).transpose()?;
    let description = description.unwrap_or_else(|| "items from Python".to_owned());
    let population = Input::seeded(py, items, clients, run_seed, rows_as_clients, description)?;
    let document = py
        .detach(|| {
            let counted = CountedPopulation::from_population(&population);
            triehh_plus_counted(&counted, &settings, run_seed, seed)
        })
        .map_err(value_error)?;
    serde_json::to_string_pretty(&document).map_err(value_error)
}

/// The options of `tally heavy-hitters --algorithm triehh++`, from keyword arguments.
fn trie_settings(calibration: &Calibration, shape: &TrieShape) -> PyResult<TriePlusSettings> {
    let (analysis, neighbours) = calibration.analysis_and_neighbours()?;
    let selection = selection_method(&shape.mechanism)?;
    let composition = match shape.composition.as_deref() {
        None => TriePlusSettings::default_composition(selection, neighbours),
        Some(name) => name.parse().map_err(value_error)?,
    };
    Ok(TriePlusSettings {
        epsilon: calibration.epsilon,
        delta: calibration.delta,
        levels: shape.levels,
        segment: shape.segment,
        restricted: shape.restricted,
        composition,
        target: calibration.target(),
        analysis,
        neighbours,
        selection,
    })
}

/// The options `tally quantiles` and `tally range` share, from keyword arguments.
fn values_settings(calibration: &Calibration, hierarchy: &Hierarchy) -> PyResult<ValuesSettings> {
    let analysis = analysis_keyword(&calibration.method)?;
    let neighbours = calibration
        .neighbours
        .parse::<Neighbours>()
        .map_err(value_error)?;
    Ok(ValuesSettings {
        epsilon: calibration.epsilon,
        delta: calibration.delta,
        target: calibration.target(),
        analysis,
        neighbours,
        composition: round_composition(hierarchy.composition.as_deref(), neighbours)?,
        branching: hierarchy.branching,
        levels: hierarchy.levels,
        consistent: hierarchy.consistent,
    })
}

/// `composition` if given, else the default of multi-round S&T tasks for `neighbours`.
fn round_composition(composition: Option<&str>, neighbours: Neighbours) -> PyResult<Composition> {
    composition.map_or(Ok(Composition::default_for_rounds(neighbours)), |c| {
        c.parse::<Composition>().map_err(value_error)
    })
}

/// `--min` and `--max`: both or neither.
fn value_range(min: Option<f64>, max: Option<f64>) -> PyResult<Option<ValueRange>> {
    match (min, max) {
        (Some(min), Some(max)) => Ok(Some(ValueRange::new(min, max).map_err(value_error)?)),
        (None, None) => Ok(None),
        _ => Err(value_error("give both min= and max=, or neither")),
    }
}

/// Numbers handed over by the Python layer: `("path", path)` or `("floats", bytes)` of
/// native-endian 64-bit floats, read as `tally quantiles --input` reads a file of them.
fn load_numbers(
    numbers: &Bound<'_, PyAny>,
    range: Option<ValueRange>,
    description: Option<String>,
) -> PyResult<impl FnOnce() -> PyResult<tally_sim::Values> + Send> {
    let (kind, value): (String, Bound<'_, PyAny>) = numbers.extract()?;
    let source = match kind.as_str() {
        "path" => Ok(value.extract::<PathBuf>()?),
        "floats" => Err(value.extract::<Vec<u8>>()?),
        other => return Err(value_error(format!("unknown column kind {other:?}"))),
    };
    let description = description.unwrap_or_else(|| "values from Python".to_owned());
    Ok(move || match source {
        Ok(path) => tally_sim::Values::from_file(&path, range).map_err(|error| match error {
            tally_sim::ValuesError::Input(tally_sim::Error::NotFound { .. })
            | tally_sim::ValuesError::Input(tally_sim::Error::Open { .. }) => {
                PyOSError::new_err(error.to_string())
            }
            other => {
                value_error(values_release::rescaling_hint(&other).unwrap_or(other.to_string()))
            }
        }),
        Err(bytes) => {
            // One number per line in Rust's shortest round-trip form, as a file would hold
            // them: the values and the messages are those of the same numbers in a file.
            let mut text = String::with_capacity(bytes.len() * 3);
            for word in bytes.chunks_exact(8) {
                // Unwrap safety: chunks_exact yields 8-byte slices.
                let number = f64::from_ne_bytes(word.try_into().expect("8 bytes"));
                text.push_str(&number.to_string());
                text.push('\n');
            }
            tally_sim::Values::from_reader(Cursor::new(text), &description, range).map_err(
                |error| {
                    value_error(values_release::rescaling_hint(&error).unwrap_or(error.to_string()))
                },
            )
        }
    })
}

/// A refused quantile or range release as a `ValueError`.
struct Refused(PyErr);

impl From<values_release::ValuesReleaseError> for Refused {
    fn from(error: values_release::ValuesReleaseError) -> Self {
        Self(value_error(error))
    }
}

impl From<PyErr> for Refused {
    fn from(error: PyErr) -> Self {
        Self(error)
    }
}

/// `tally quantiles --json` with the sample-and-threshold mechanism.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.quantiles`
fn quantiles(
    py: Python<'_>,
    values: &Bound<'_, PyAny>,
    quantiles: Vec<f64>,
    calibration: Calibration,
    hierarchy: Hierarchy,
    min: Option<f64>,
    max: Option<f64>,
    quantile_method: &str,
    seed: Option<u64>,
    truth: bool,
    description: Option<String>,
) -> PyResult<String> {
    let quantile_method = quantile_method_named(quantile_method)?;
    let settings = values_settings(&calibration, &hierarchy)?;
    let load = load_numbers(values, value_range(min, max)?, description)?;
    let run_seed = seed.unwrap_or_else(random_seed);
    let released = py.detach(|| {
        values_release::quantiles::<Refused>(
            &settings,
            &quantiles,
            quantile_method,
            || Ok(load()?),
            run_seed,
            seed,
            truth,
        )
    });
    let released = released.map_err(|refused| refused.0)?;
    serde_json::to_string_pretty(&released.document).map_err(value_error)
}

/// The quantile method given as the keyword `method`.
fn quantile_method_named(method: &str) -> PyResult<QuantileMethod> {
    match method {
        "hierarchical" => Ok(QuantileMethod::Hierarchical),
        "binary-search" => Ok(QuantileMethod::BinarySearch),
        other => Err(value_error(format!(
            "invalid method={other:?}: expected \"hierarchical\" or \"binary-search\""
        ))),
    }
}

/// `tally range --json` with the sample-and-threshold mechanism.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.range_count`
fn range_count(
    py: Python<'_>,
    values: &Bound<'_, PyAny>,
    lo: f64,
    hi: f64,
    calibration: Calibration,
    hierarchy: Hierarchy,
    min: Option<f64>,
    max: Option<f64>,
    seed: Option<u64>,
    description: Option<String>,
) -> PyResult<String> {
    let settings = values_settings(&calibration, &hierarchy)?;
    let range = value_range(min, max)?;
    let load = load_numbers(values, range, description)?;
    let run_seed = seed.unwrap_or_else(random_seed);
    let released = py.detach(|| {
        values_release::range_count::<Refused>(
            &settings,
            range,
            (lo, hi),
            || Ok(load()?),
            run_seed,
            seed,
        )
    });
    let released = released.map_err(|refused| refused.0)?;
    serde_json::to_string_pretty(&released.document).map_err(value_error)
}

/// A seed from the operating system, never shown (as `tally` does without `--seed`).
fn random_seed() -> u64 {
    rand::rng().next_u64()
}

/// `tally.run_task`: the task `spec` (a spec's JSON) asks for, of any kind the server runs,
/// run as the server runs it over devices holding `data` (one device each, or `holders[i]`
/// devices holding `data[i]` when `holders` is given), its coins from `seed` (a fresh one when
/// `None`); the document the finished task publishes. With `clients` (device `i`'s id) and
/// `sampling_key`, each device's coin of whether to send is keyed by its id.
#[pyfunction]
#[pyo3(signature = (spec, data, holders, seed=None, clients=None, sampling_key=None))]
fn run_task(
    py: Python<'_>,
    spec: &str,
    data: Vec<String>,
    holders: Option<Vec<u64>>,
    seed: Option<u64>,
    clients: Option<Vec<String>>,
    sampling_key: Option<&str>,
) -> PyResult<String> {
    let spec: TaskSpec = serde_json::from_str(spec)
        .map_err(|e| value_error(format!("invalid spec: not a task spec ({e})")))?;
    let seed = seed.unwrap_or_else(random_seed);
    let key = sampling_key.map(derived_key).transpose()?;
    let held: Option<Vec<(String, u64)>> =
        holders.map(|holders| data.iter().cloned().zip(holders).collect());
    let named: Option<Vec<(String, String)>> =
        clients.map(|clients| clients.into_iter().zip(data.iter().cloned()).collect());
    let devices = match (&held, &named, &key) {
        (None, None, None) => tally_sim::Devices::Each(&data),
        (Some(held), None, None) => tally_sim::Devices::Counted(held),
        (None, Some(devices), Some(key)) => tally_sim::Devices::Keyed { devices, key },
        _ => {
            return Err(value_error(
                "invalid devices: keyed devices take both clients= and sampling_key=, and one \
                 datum per device, not their counts",
            ));
        }
    };
    py.detach(|| tally_sim::run_task(&spec, devices, seed))
        .map_err(value_error)
}

/// A column's values.
enum Values {
    Texts(Vec<String>),
    Ints(Vec<i64>),
}

impl Values {
    /// The values as text (integers in decimal).
    fn texts(self) -> Vec<String> {
        match self {
            Self::Texts(values) => values,
            Self::Ints(values) => values.iter().map(i64::to_string).collect(),
        }
    }
}

/// The `execution` a release of one in-memory value per client names: its coins are
/// bit-sliced or drawn by geometric gaps, whichever is cheaper at the rate.
const IN_MEMORY_EXECUTION: &str = "in-memory";

/// Released `(value, count)` cells with their values named by `name`.
fn named_counts<T>(released: Vec<(T, u64)>, name: impl Fn(T) -> String) -> Vec<(String, u64)> {
    released
        .into_iter()
        .map(|(value, count)| (name(value), count))
        .collect()
}

/// Values interned to ids in order of first appearance, with the distinct values by id: the
/// ids [`Population::from_names`] gives the same values written as text.
fn intern<T: Copy + Eq + Hash>(values: &[T]) -> (Vec<u32>, Vec<T>) {
    let mut ids: FxHashMap<T, u32> = FxHashMap::default();
    let mut distinct = Vec::new();
    let items = values
        .iter()
        .map(|&value| {
            *ids.entry(value).or_insert_with(|| {
                distinct.push(value);
                // Unwrap safety: a vocabulary past 2^32 values would not fit in memory here.
                u32::try_from(distinct.len() - 1).expect("fewer than 2^32 distinct items")
            })
        })
        .collect();
    (items, distinct)
}

/// The rows a histogram runs on.
enum Input {
    Seeded(Population),
    Keyed(KeyedPopulation),
}

impl Input {
    /// The rows of a seeded run: [`Self::read`] without keys.
    fn seeded(
        py: Python<'_>,
        items: Column<'_>,
        clients: Option<Column<'_>>,
        seed: u64,
        rows_as_clients: bool,
        description: String,
    ) -> PyResult<Population> {
        match Self::read(
            py,
            items,
            clients,
            seed,
            rows_as_clients,
            false,
            description,
        )? {
            Self::Seeded(population) => Ok(population),
            Self::Keyed(_) => unreachable!("rows are read keyed only with keyed = true"),
        }
    }

    fn read(
        py: Python<'_>,
        items: Column<'_>,
        clients: Option<Column<'_>>,
        seed: u64,
        rows_as_clients: bool,
        keyed: bool,
        description: String,
    ) -> PyResult<Self> {
        if let Column::Path(path) = &items {
            return py.detach(|| read_file(path, seed, rows_as_clients, keyed));
        }
        let clients = clients.map(|clients| clients.texts()).transpose()?;
        let items = if clients.is_some() {
            Values::Texts(items.texts()?)
        } else {
            items.values()?
        };
        py.detach(|| match (clients, keyed) {
            (Some(clients), true) => {
                KeyedPopulation::from_rows(&clients, items.texts(), &description)
                    .map(Self::Keyed)
                    .map_err(value_error)
            }
            (Some(clients), false) => {
                let tsv = tsv_rows(&clients, &items.texts())?;
                let mode = ClientMode::ClientLevel { seed };
                Population::from_tsv_reader(Cursor::new(tsv), &description, mode)
                    .map(Self::Seeded)
                    .map_err(value_error)
            }
            (None, keyed) => {
                let population = match items {
                    Values::Texts(items) => Population::from_names(&items, description),
                    Values::Ints(items) => {
                        let (ids, distinct) = intern(&items);
                        let names = distinct.iter().map(i64::to_string).collect();
                        Population::from_ids(ids, names, description)
                    }
                }
                .map_err(value_error)?;
                Ok(if keyed {
                    Self::Keyed(KeyedPopulation::from_population(&population))
                } else {
                    Self::Seeded(population)
                })
            }
        })
    }
}

/// Whether `tally histogram --input` reads `path` as TSV (`.tsv` and `.tsv.gz`).
fn is_tsv(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".tsv") || name.ends_with(".tsv.gz")
}

/// How `tally histogram --input` streams `path`: TSV rows (each client's chosen by `seed`,
/// unless `rows_as_clients`) or lines.
fn stream_format(path: &Path, rows_as_clients: bool, seed: u64) -> StreamFormat {
    match (is_tsv(path), rows_as_clients) {
        (false, _) => StreamFormat::Lines,
        (true, true) => StreamFormat::Tsv(ClientMode::RowsAsClients),
        (true, false) => StreamFormat::Tsv(ClientMode::ClientLevel { seed }),
    }
}

/// A file that cannot be found or opened is an `OSError`, anything wrong inside it a
/// `ValueError`.
fn file_error(error: tally_sim::Error) -> PyErr {
    match error {
        tally_sim::Error::NotFound { .. } | tally_sim::Error::Open { .. } => {
            PyOSError::new_err(error.to_string())
        }
        other => value_error(other),
    }
}

/// Reads a file as `tally histogram --input` does (`.tsv` and `.tsv.gz` as TSV, else lines).
fn read_file(path: &PathBuf, seed: u64, rows_as_clients: bool, keyed: bool) -> PyResult<Input> {
    let population = match (is_tsv(path), rows_as_clients, keyed) {
        (true, false, true) => {
            return KeyedPopulation::from_tsv_file(path)
                .map(Input::Keyed)
                .map_err(value_error);
        }
        (true, true, _) => Population::from_tsv_file(path, ClientMode::RowsAsClients),
        (true, false, false) => Population::from_tsv_file(path, ClientMode::ClientLevel { seed }),
        (false, ..) => Population::from_lines_file(path),
    }
    .map_err(file_error)?;
    Ok(if keyed {
        Input::Keyed(KeyedPopulation::from_population(&population))
    } else {
        Input::Seeded(population)
    })
}

/// `client_id<TAB>item` rows of two columns, for the TSV reader's client-level choice.
fn tsv_rows(clients: &[String], items: &[String]) -> PyResult<Vec<u8>> {
    if clients.len() != items.len() {
        return Err(value_error(format!(
            "clients and items differ in length: {} and {}",
            clients.len(),
            items.len()
        )));
    }
    let mut tsv = Vec::new();
    for (client, item) in clients.iter().zip(items) {
        if [client, item]
            .iter()
            .any(|s| s.contains(['\t', '\n', '\r']))
        {
            return Err(value_error(
                "client ids and items may not contain tabs or line breaks",
            ));
        }
        tsv.extend_from_slice(client.as_bytes());
        tsv.push(b'\t');
        tsv.extend_from_slice(item.as_bytes());
        tsv.push(b'\n');
    }
    Ok(tsv)
}

/// The calibrated keyed rate and threshold of a keyed histogram: what Spark's tasks need.
#[pyfunction]
fn keyed_parameters(calibration: Calibration) -> PyResult<(f64, u64)> {
    Ok(rate_and_threshold(&calibrated(&calibration, true)?))
}

/// A mechanism's sampling rate and threshold.
fn rate_and_threshold(mechanism: &SampleThreshold) -> (f64, u64) {
    (
        mechanism.params().sampling_rate(),
        mechanism.params().threshold(),
    )
}

/// The sampling key given as text: at least 32 hexadecimal digits.
fn derived_key(key: &str) -> PyResult<SamplingKey> {
    SamplingKey::from_hex_text(key).map_err(value_error)
}

/// The keyed coin of `(key, rate)`.
fn keyed_coin(key: &str, rate: f64) -> PyResult<KeyedCoin> {
    KeyedCoin::new(derived_key(key)?, rate).map_err(value_error)
}

/// Refuses a sampling key shorter than 32 hexadecimal digits, before any job runs.
#[pyfunction]
fn check_sampling_key(key: &str) -> PyResult<()> {
    derived_key(key).map(drop)
}

/// Which clients of the column `clients` the keyed coin of `(key, rate)` samples in round 0,
/// as a NumPy boolean array.
#[pyfunction]
fn keyed_coins<'py>(
    py: Python<'py>,
    key: &str,
    rate: f64,
    clients: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let coin = keyed_coin(key, rate)?;
    let mut heads = Vec::new();
    Column::extract(clients)?.for_each_bytes(|client| {
        heads.push(coin.flip(0, client));
        Ok(())
    })?;
    Ok(heads.into_pyarray(py))
}

/// The row each client contributes in round 0, chosen by the key: client `i` of the column
/// `clients` holds the rows `offsets[i]..offsets[i + 1]` of the column `items` (an Arrow list
/// column's offsets and values). Returns the chosen rows' positions in `items`.
#[pyfunction]
fn keyed_rows<'py>(
    py: Python<'py>,
    key: &str,
    clients: &Bound<'py, PyAny>,
    offsets: PyReadonlyArray1<'py, i64>,
    items: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let key = derived_key(key)?;
    let clients = Column::extract(clients)?.bytes()?;
    let items = Column::extract(items)?.bytes()?;
    let offsets = offsets.as_slice().map_err(value_error)?;
    let chosen = py.detach(|| {
        if offsets.len() != clients.len() + 1 {
            return Err(value_error("expected one more offset than clients"));
        }
        clients
            .iter()
            .zip(offsets.windows(2))
            .map(|(client, bounds)| {
                let rows = usize::try_from(bounds[0])
                    .ok()
                    .zip(usize::try_from(bounds[1]).ok())
                    .and_then(|(start, end)| Some((start, items.get(start..end)?)));
                let (start, rows) = rows.ok_or_else(|| value_error("offsets past the items"))?;
                let row = choose_row(&key, 0, client, rows).ok_or_else(|| {
                    value_error(format!(
                        "client {:?} has no rows",
                        String::from_utf8_lossy(client)
                    ))
                })?;
                i64::try_from(start + row).map_err(value_error)
            })
            .collect::<PyResult<Vec<i64>>>()
    })?;
    Ok(chosen.into_pyarray(py))
}

/// The sampled counts of one part of a keyed histogram's rows (a Spark partition), by item,
/// counted by `tally_sim::KeyedPartCounts` batch by batch: integers by value, strings by their
/// text.
#[pyclass(module = "tally._tally")]
struct KeyedCounter {
    /// `None` once [`KeyedCounter::finish`] has taken the counts.
    counts: Option<PartCounts>,
}

/// Counts of integer or of string items, or of clients' several string items.
enum PartCounts {
    Ints(KeyedPartCounts<i64>),
    Texts(KeyedPartCounts<Vec<u8>>),
    Items(KeyedItemCounts),
}

impl KeyedCounter {
    fn counts(&mut self) -> PyResult<&mut PartCounts> {
        self.counts
            .as_mut()
            .ok_or_else(|| value_error("the counter has finished"))
    }
}

#[pymethods]
impl KeyedCounter {
    /// A counter for round 0 of the keyed coin of `(key, rate)`, of integer items if
    /// `integers`, else of strings.
    #[new]
    fn new(key: &str, rate: f64, integers: bool) -> PyResult<Self> {
        let coin = keyed_coin(key, rate)?;
        let counts = if integers {
            PartCounts::Ints(KeyedPartCounts::new(coin, 0))
        } else {
            PartCounts::Texts(KeyedPartCounts::new(coin, 0))
        };
        Ok(Self {
            counts: Some(counts),
        })
    }

    /// A counter of clients of several string items for `tally.spark.histogram(mechanism=...,
    /// max_items_per_client=...)`: each client keeps at most `max_items` of its distinct items
    /// chosen by `key`, and sends each by a keyed coin of `rate` if given (sample-and-threshold)
    /// or all of them if not (a partition selection).
    #[staticmethod]
    fn items(key: &str, max_items: u32, rate: Option<f64>) -> PyResult<Self> {
        let coin = rate.map(|rate| keyed_coin(key, rate)).transpose()?;
        Ok(Self {
            counts: Some(PartCounts::Items(KeyedItemCounts::new(
                derived_key(key)?,
                max_items,
                coin,
            ))),
        })
    }

    /// Rows taken as clients: client `clients[i]` holds `items[i]` alone.
    fn absorb_rows(
        &mut self,
        py: Python<'_>,
        clients: &Bound<'_, PyAny>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (clients, items) = (Column::extract(clients)?, Column::extract(items)?);
        let (clients, items) = (clients.view()?, items.view()?);
        if clients.len() != items.len() {
            return Err(value_error("clients and items differ in length"));
        }
        let counts = self.counts()?;
        py.detach(|| {
            let mut row = 0;
            match (counts, &items) {
                (PartCounts::Ints(counts), ColumnView::Ints(items)) => {
                    clients.for_each_bytes(|client| {
                        counts.absorb_row(client, &items[row]);
                        row += 1;
                        Ok(())
                    })
                }
                (PartCounts::Texts(counts), items) => {
                    let items = items
                        .strings()?
                        .ok_or_else(|| value_error("expected string items"))?;
                    clients.for_each_bytes(|client| {
                        counts.absorb_row(client, items[row]);
                        row += 1;
                        Ok(())
                    })
                }
                (PartCounts::Ints(_), _) => Err(value_error("expected integer items")),
                (PartCounts::Items(_), _) => Err(value_error(
                    "a counter of clients' several items absorbs whole clients (absorb_clients)",
                )),
            }
        })
    }

    /// Clients with all their rows: client `i` of the column `clients` holds the rows
    /// `runs[i]..runs[i + 1]` of the column `items` (strings).
    fn absorb_clients(
        &mut self,
        py: Python<'_>,
        clients: &Bound<'_, PyAny>,
        runs: PyReadonlyArray1<'_, i64>,
        items: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (clients, items) = (Column::extract(clients)?, Column::extract(items)?);
        let (clients, items) = (clients.view()?, items.view()?);
        let runs = runs.as_slice().map_err(value_error)?;
        if runs.len() != clients.len() + 1 {
            return Err(value_error("expected one more run offset than clients"));
        }
        let counts = self.counts()?;
        if matches!(counts, PartCounts::Ints(_)) {
            return Err(value_error("clients' rows are counted as strings"));
        }
        py.detach(|| {
            let items = items
                .strings()?
                .ok_or_else(|| value_error("expected string items"))?;
            let mut client = 0;
            clients.for_each_bytes(|id| {
                let rows = usize::try_from(runs[client])
                    .ok()
                    .zip(usize::try_from(runs[client + 1]).ok())
                    .and_then(|(start, end)| items.get(start..end))
                    .filter(|rows| !rows.is_empty())
                    .ok_or_else(|| value_error("run offsets past the items or empty"))?;
                match counts {
                    PartCounts::Texts(counts) => counts.absorb_client(id, rows),
                    PartCounts::Items(counts) => counts.absorb_client(id, rows),
                    PartCounts::Ints(_) => unreachable!("refused above"),
                }
                client += 1;
                Ok(())
            })
        })
    }

    /// The counts, taken out of the counter: `(items, counts, clients)`, with `items` a NumPy
    /// `int64` array, or for strings the `(offsets, data)` of an Arrow `large_string` array as
    /// NumPy `int64` and `uint8` arrays; `counts` an `int64` array in the same order;
    /// `clients` the number of clients absorbed.
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<i64>>, u64)> {
        let counts = self
            .counts
            .take()
            .ok_or_else(|| value_error("the counter has finished"))?;
        let whole = |count: u64| i64::try_from(count).map_err(value_error);
        match counts {
            PartCounts::Ints(counts) => {
                let clients = counts.clients();
                let (items, counts): (Vec<i64>, Vec<u64>) =
                    counts.into_counts().into_iter().unzip();
                let counts = counts
                    .into_iter()
                    .map(whole)
                    .collect::<PyResult<Vec<_>>>()?;
                Ok((
                    items.into_pyarray(py).into_any(),
                    counts.into_pyarray(py),
                    clients,
                ))
            }
            PartCounts::Texts(_) | PartCounts::Items(_) => {
                let (clients, cells) = match counts {
                    PartCounts::Texts(counts) => (counts.clients(), counts.into_counts()),
                    PartCounts::Items(counts) => (counts.clients(), counts.into_counts()),
                    PartCounts::Ints(_) => unreachable!("matched above"),
                };
                let mut offsets = Vec::with_capacity(cells.len() + 1);
                let mut data = Vec::new();
                let mut tallies = Vec::with_capacity(cells.len());
                offsets.push(0i64);
                for (item, count) in cells {
                    data.extend_from_slice(&item);
                    offsets.push(i64::try_from(data.len()).map_err(value_error)?);
                    tallies.push(whole(count)?);
                }
                let items = (offsets.into_pyarray(py), data.into_pyarray(py));
                Ok((
                    items.into_pyobject(py)?.into_any(),
                    tallies.into_pyarray(py),
                    clients,
                ))
            }
        }
    }
}

/// The document of a keyed histogram counted elsewhere (on Spark): `counts` are the sampled
/// counts of the items that reached the threshold, `clients` the number of clients.
#[pyfunction]
fn keyed_counts_document(
    counts: Vec<(String, u64)>,
    clients: u64,
    input: String,
    calibration: Calibration,
) -> PyResult<String> {
    let mechanism = calibrated(&calibration, true)?;
    let document = sample_threshold_release::from_counts(
        counts,
        &mechanism,
        clients,
        calibration.delta,
        input,
        "spark (keyed)",
    );
    serde_json::to_string_pretty(&document).map_err(value_error)
}

/// The keyed rate and threshold of `tally.spark.histogram(mechanism=...,
/// max_items_per_client=...)`'s coins, what Spark's tasks need: `None` for a partition
/// selection, whose clients send every item they keep.
#[pyfunction]
fn keyed_items_parameters(
    calibration: Calibration,
    mechanism: &str,
    max_items_per_client: Option<u32>,
) -> PyResult<Option<(f64, u64)>> {
    let max_items = max_items_per_client.unwrap_or(1);
    Ok(
        match items_mechanism(&calibration, mechanism, max_items, true)? {
            ItemsMechanism::Selection(_) => None,
            ItemsMechanism::SampleThreshold(mechanism) => Some(rate_and_threshold(&mechanism)),
        },
    )
}

/// The document of a release over clients of several items counted on Spark: `counts` sum
/// the partitions' `KeyedCounter.items` counts (for sample-and-threshold, at least those that
/// reach the threshold; for a partition selection, all), `clients` the number of clients;
/// the selection's noise comes from `seed` (or the operating system).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // the keyword arguments of `tally.spark.histogram`
fn keyed_items_document(
    py: Python<'_>,
    counts: Vec<(String, u64)>,
    clients: u64,
    source: String,
    calibration: Calibration,
    mechanism: &str,
    max_items_per_client: Option<u32>,
    sampling_key: &str,
    seed: Option<u64>,
) -> PyResult<String> {
    let max_items = max_items_per_client.unwrap_or(1);
    let mechanism = items_mechanism(&calibration, mechanism, max_items, true)?;
    let options = ItemsRelease {
        max_items,
        choice: ItemChoice::Keyed(derived_key(sampling_key)?),
        seed: seed.unwrap_or_else(random_seed),
        target_delta: calibration.delta,
        shown_seed: seed,
    };
    let counted = ItemCounts {
        counts: counts.into_iter().collect(),
        clients,
        source,
        execution: "spark (keyed)".to_owned(),
    };
    let document = py
        .detach(|| mechanism.release_counts(&counted, &options))
        .map_err(value_error)?;
    serde_json::to_string_pretty(&document).map_err(value_error)
}

/// The keyed per-level rate and threshold of a keyed TrieHH++ run: what Spark's tasks need.
#[pyfunction]
fn keyed_triehh_parameters(calibration: Calibration, shape: TrieShape) -> PyResult<(f64, u64)> {
    let settings = trie_settings(&calibration, &shape)?;
    let mechanism = per_level_mechanism(&settings, true).map_err(value_error)?;
    Ok(rate_and_threshold(&mechanism))
}

/// The prefixes clients report at level `level` of a keyed TrieHH++ run (`None` for a client
/// whose coin for the level comes up tails, or whose word has no report): client `i` of the
/// column `clients` holds the word `words[i]`. `live` holds the prefixes released at the
/// previous level (restricted runs), or is `None`.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // one level's query
fn keyed_prefixes(
    py: Python<'_>,
    key: &str,
    rate: f64,
    level: usize,
    segment: usize,
    live: Option<Vec<String>>,
    clients: &Bound<'_, PyAny>,
    words: &Bound<'_, PyAny>,
) -> PyResult<Vec<Option<String>>> {
    let coin = keyed_coin(key, rate)?;
    let prefixes = PrefixRound {
        round: level,
        segment,
        live_parents: live.map(|live| Arc::new(live.into_iter().collect())),
    };
    let keyed = KeyedLevel::with_coin(coin, prefixes);
    let ids = Column::extract(clients)?.bytes()?;
    let words = Column::extract(words)?.texts()?;
    if ids.len() != words.len() {
        return Err(value_error("clients and words differ in length"));
    }
    Ok(py.detach(|| {
        ids.iter()
            .zip(&words)
            .map(|(client, word)| keyed.report(client, word))
            .collect()
    }))
}

/// The document of a keyed TrieHH++ run counted elsewhere (on Spark): `levels[l]` holds level
/// `l + 1`'s sampled counts of the prefixes that reached the threshold, `clients` the number of
/// clients.
#[pyfunction]
fn keyed_triehh_document(
    levels_counts: Vec<Vec<(String, u64)>>,
    clients: u64,
    input: String,
    calibration: Calibration,
    shape: TrieShape,
) -> PyResult<String> {
    let settings = trie_settings(&calibration, &shape)?;
    let document =
        triehh_plus_keyed_counts(levels_counts, clients, &input, &settings).map_err(value_error)?;
    serde_json::to_string_pretty(&document).map_err(value_error)
}

/// The `(ε, δ)` a budget kept under `budget_neighbours` charges for a release of `(epsilon,
/// delta)` under `neighbours` (`tally_accounting::Guarantee::under`, the server ledger's rule).
#[pyfunction]
fn charge_under(
    epsilon: f64,
    delta: f64,
    neighbours: &str,
    budget_neighbours: &str,
) -> PyResult<(f64, f64)> {
    let guarantee = Guarantee {
        epsilon,
        delta,
        neighbours: neighbours.parse().map_err(value_error)?,
        // Neither changes what the guarantee costs under another relation.
        model: TrustModel::Central,
        analysis: String::new(),
    };
    let budget_neighbours = budget_neighbours.parse().map_err(value_error)?;
    guarantee.under(budget_neighbours).map_err(value_error)
}

/// The neighbour relation a histogram by `mechanism` asked for under `neighbours` states its
/// guarantee under, known before any data is read (a budget charges it first).
#[pyfunction]
fn histogram_neighbours(mechanism: &str, neighbours: &str) -> PyResult<String> {
    let asked = neighbours.parse::<Neighbours>().map_err(value_error)?;
    let stated = DomainHistogramMechanism::named(mechanism).map_or(asked, |domain| {
        domain_release::guarantee_neighbours(domain, asked)
    });
    Ok(stated.to_string())
}

/// What `charges` spend together by basic composition, rounded up (`BasicFilter::spent`).
#[pyfunction]
fn filter_spent(charges: Vec<(f64, f64)>) -> (f64, f64) {
    BasicFilter::spent(&charges)
}

/// Whether the filter of `budget` admits `charge` after `charges`, and what it has left after
/// `charges` (rounded down).
#[pyfunction]
fn filter_admits(
    budget: (f64, f64),
    charges: Vec<(f64, f64)>,
    charge: (f64, f64),
) -> PyResult<(bool, (f64, f64))> {
    let filter = BasicFilter::new(budget.0, budget.1).map_err(value_error)?;
    let left = filter.remaining(BasicFilter::spent(&charges));
    Ok((filter.admits(&charges, charge), left))
}

/// `(count, release probability, expected absolute error of a shown estimate)`.
type AccuracyAt = (u64, f64, Option<f64>);

/// The accuracy of a histogram's mechanism, calibrated as the release was (`mechanism`,
/// `max_items_per_client` and `keyed` as given to it): the count released with probability ½,
/// and at each of `counts` the release probability and the expected absolute error of a shown
/// estimate (`None` without a count).
#[pyfunction]
fn histogram_accuracy(
    calibration: Calibration,
    mechanism: &str,
    max_items_per_client: Option<u32>,
    keyed: bool,
    counts: Vec<u64>,
) -> PyResult<(Option<u64>, Vec<AccuracyAt>)> {
    let mechanism = match (mechanism, max_items_per_client) {
        ("sample-threshold", None) => {
            ItemsMechanism::SampleThreshold(calibrated(&calibration, keyed)?)
        }
        (name, max_items) => items_mechanism(&calibration, name, max_items.unwrap_or(1), keyed)?,
    };
    let accuracy = counts
        .into_iter()
        .map(|count| {
            let at = mechanism.accuracy_at(count);
            (at.count, at.release_probability, at.expected_absolute_error)
        })
        .collect();
    Ok((mechanism.release_point(), accuracy))
}

/// The accuracy of a mechanism over a public domain, calibrated as the release was (for its
/// `clients`): every element is shown (the release point is 0), and at each of `counts` its
/// estimate's expected absolute error (`None` where the error has no closed form; unclamped,
/// so an upper bound for a clamped release).
#[pyfunction]
fn domain_accuracy(
    calibration: Calibration,
    mechanism: &str,
    options: DomainOptions,
    clients: u64,
    counts: Vec<u64>,
) -> PyResult<(Option<u64>, Vec<AccuracyAt>)> {
    let mechanism = domain_mechanism(mechanism)?;
    let map = domain_map(mechanism, &options)?;
    let setting = domain_setting(&calibration, &options, map, clients)?;
    let built = tally_plan::domain::calibrate(mechanism, &setting).map_err(value_error)?;
    let accuracy = counts
        .into_iter()
        .map(|count| {
            let error = tally_plan::domain::error_at(built.as_ref(), clients, count)
                .map(|at| at.error.mean_absolute_error);
            (count, 1.0, error)
        })
        .collect();
    Ok((Some(0), accuracy))
}

/// `(ε = …, δ = …)` for people, both rounded up to four significant digits, as the command
/// line prints them (`tally_protocol::shown`).
#[pyfunction]
fn privacy_pair(epsilon: f64, delta: f64) -> String {
    tally_protocol::shown::PrivacyPair(epsilon, delta).to_string()
}

/// The native module.
#[pymodule]
fn _tally(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // The package's version is the crate's: one source of truth (maturin reads it too).
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The crates' messages name parameters as this package's keyword arguments (`delta=`).
    tally_accounting::naming::name_parameters_as(Naming::Keywords).map_err(|chosen| {
        value_error(format!(
            "parameters are already named as {chosen:?} in this process"
        ))
    })?;
    module.add_function(wrap_pyfunction!(privacy_pair, module)?)?;
    module.add_function(wrap_pyfunction!(plan_sample_threshold, module)?)?;
    module.add_function(wrap_pyfunction!(plan_shuffle, module)?)?;
    module.add_function(wrap_pyfunction!(plan_compose, module)?)?;
    module.add_function(wrap_pyfunction!(plan_triehh_plus, module)?)?;
    module.add_function(wrap_pyfunction!(plan_domain_histogram, module)?)?;
    module.add_function(wrap_pyfunction!(plan_quantiles, module)?)?;
    module.add_function(wrap_pyfunction!(histogram, module)?)?;
    module.add_function(wrap_pyfunction!(run_task, module)?)?;
    module.add_function(wrap_pyfunction!(items_histogram, module)?)?;
    module.add_function(wrap_pyfunction!(is_domain_mechanism, module)?)?;
    module.add_function(wrap_pyfunction!(charge_under, module)?)?;
    module.add_function(wrap_pyfunction!(histogram_neighbours, module)?)?;
    module.add_function(wrap_pyfunction!(histogram_accuracy, module)?)?;
    module.add_function(wrap_pyfunction!(domain_accuracy, module)?)?;
    module.add_function(wrap_pyfunction!(filter_spent, module)?)?;
    module.add_function(wrap_pyfunction!(filter_admits, module)?)?;
    module.add_function(wrap_pyfunction!(domain_histogram, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_items_parameters, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_items_document, module)?)?;
    module.add_function(wrap_pyfunction!(heavy_hitters, module)?)?;
    module.add_function(wrap_pyfunction!(quantiles, module)?)?;
    module.add_function(wrap_pyfunction!(range_count, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_parameters, module)?)?;
    module.add_function(wrap_pyfunction!(check_sampling_key, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_coins, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_rows, module)?)?;
    module.add_class::<KeyedCounter>()?;
    module.add_function(wrap_pyfunction!(keyed_counts_document, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_triehh_parameters, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_prefixes, module)?)?;
    module.add_function(wrap_pyfunction!(keyed_triehh_document, module)?)?;
    Ok(())
}
