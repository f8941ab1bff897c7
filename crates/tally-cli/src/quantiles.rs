//! `tally quantiles` and `tally range`: quantiles and range counts of numbers.

use std::io::{self, Write};

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::Analysis;
use tally_core::histogram::{RoundPlan, plan_rounds};
use tally_core::quantiles::{
    BinarySearchConfig, BinarySearchQuantile, HierarchicalConfig, HierarchicalHistogram,
    HierarchicalRelease, MAX_SEARCH_ROUNDS, TreeShape,
};
use tally_sim::{
    ExecutionPath, ValueRange, Values, ValuesError, run_binary_searches, run_hierarchical,
};

use tally_messages::{GuaranteeBody, QuantileRow, QuantilesRelease};
use tally_server::document;

use crate::cli::{QuantileMethod, QuantilesArgs, RangeArgs, ValuesArgs, ValuesMechanism};
use crate::output::{Stage, guarantee_json, guarantee_line, print_fields, print_json};
use crate::shuffle_values;

pub(crate) fn run_quantiles(args: &QuantilesArgs) -> Result<()> {
    let common = &args.values;
    check_quantiles(&args.quantiles)?;
    if common.mechanism != ValuesMechanism::SampleThreshold {
        return shuffle_values::run_quantiles(args);
    }
    let searches = args.quantiles.len();
    match args.method {
        QuantileMethod::Hierarchical => {
            let run = Hierarchical::prepare(common)?;
            let values = load_values(common)?;
            let release = run.execute(&values, common)?;
            let estimates = release.quantiles(&args.quantiles)?;
            let quantiles: Vec<Row> = estimates
                .iter()
                .map(|e| Row {
                    quantile: e.quantile,
                    value: values.to_original(e.value),
                    interval: None,
                })
                .collect();
            let parameters = run.parameters(&values, &release, common);
            report_quantiles(
                common,
                args.truth,
                &values,
                document::HIERARCHICAL_HISTOGRAM,
                parameters,
                release.guarantee(),
                &quantiles,
            )
        }
        QuantileMethod::BinarySearch => {
            if common.consistent {
                bail!("--consistent applies to --method hierarchical only");
            }
            let rounds = common.levels as usize;
            if !(1..=MAX_SEARCH_ROUNDS).contains(&rounds) {
                bail!(
                    "invalid --levels {rounds}: a binary search runs 1 to {MAX_SEARCH_ROUNDS} \
                     rounds"
                );
            }
            let total_rounds = rounds * searches;
            let plan = plan(common, total_rounds)?;
            let config = |quantile| BinarySearchConfig::planned(quantile, rounds, &plan);
            let tasks = args
                .quantiles
                .iter()
                .map(|&q| BinarySearchQuantile::new(config(q)))
                .collect::<Result<Vec<_>, _>>()?;
            let guarantee = config(0.5).guarantee_of(searches)?;
            let values = load_values(common)?;
            let seed = common.release.seed_or_random();
            let stage = Stage::start(format!(
                "{searches} binary searches of {rounds} rounds over {} values",
                values.len()
            ));
            let results = run_binary_searches(&values, tasks, ExecutionPath::default(), seed);
            drop(stage);
            let quantiles: Vec<Row> = results
                .iter()
                .map(|s| {
                    let interval = (values.to_original(s.lo), values.to_original(s.hi));
                    Row {
                        quantile: s.quantile,
                        value: values.to_original(s.value),
                        interval: Some(interval),
                    }
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
            report_quantiles(
                common,
                args.truth,
                &values,
                document::BINARY_SEARCH,
                parameters,
                &guarantee,
                &quantiles,
            )
        }
    }
}

/// The quantiles estimated when `--quantiles` is not given.
pub(crate) const DEFAULT_QUANTILES: [f64; 3] = [0.1, 0.5, 0.9];

/// Refuses a `--quantiles` value outside `[0, 1]`.
pub(crate) fn check_quantiles(quantiles: &[f64]) -> Result<()> {
    if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        bail!("invalid quantile {q}: expected numbers in [0, 1], e.g. --quantiles 0.1,0.5,0.9");
    }
    Ok(())
}

pub(crate) fn run_range(args: &RangeArgs) -> Result<()> {
    let common = &args.values;
    check_range(args)?;
    if common.mechanism != ValuesMechanism::SampleThreshold {
        return shuffle_values::run_range(args);
    }
    if args.method == QuantileMethod::BinarySearch {
        bail!(
            "range counts need --method hierarchical: a binary search finds one quantile, not \
             counts"
        );
    }
    let run = Hierarchical::prepare(common)?;
    let values = load_values(common)?;
    let release = run.execute(&values, common)?;
    let (lo, hi) = (values.to_unit(args.lo), values.to_unit(args.hi));
    let estimate = release.range_count(lo, hi)?;
    let total = release.total();
    let shape = release.shape();
    let grid_lo = values.to_original(shape.boundary_point(shape.boundary_below(lo)));
    let grid_hi = values.to_original(shape.boundary_point(shape.boundary_below(hi)));
    let parameters = run.parameters(&values, &release, common);
    let guarantee = release.guarantee();
    if common.privacy.json {
        print_json(&json!({
            "mechanism": document::HIERARCHICAL_HISTOGRAM,
            "parameters": parameters,
            "guarantee": guarantee_json(guarantee),
            "target_delta": common.release.delta,
            "input": values.description(),
            "range": {"lo": args.lo, "hi": args.hi, "grid_lo": grid_lo, "grid_hi": grid_hi},
            "estimate": estimate,
            "fraction": estimate / total,
            "estimated_total": total,
            "seed": common.release.seed,
        }))?;
        return Ok(());
    }
    print_fields(
        "range count (hierarchical histogram)",
        &[
            ("input", values.description().to_owned()),
            ("guarantee", guarantee_line(guarantee)),
            ("parameters", parameters.to_string()),
            ("seed", common.release.seed_description()),
            (
                "range",
                format!(
                    "[{}, {}) (snapped to the grid: [{grid_lo}, {grid_hi}))",
                    args.lo, args.hi
                ),
            ),
            (
                "estimate",
                format!(
                    "{estimate:.1} values ({:.4} of the estimated total {total:.1})",
                    estimate / total
                ),
            ),
        ],
    )?;
    Ok(())
}

/// Checks that `[--lo, --hi)` is a range of the input's units.
fn check_range(args: &RangeArgs) -> Result<()> {
    let range = value_range(&args.values)?;
    let (min, max) = range.map_or((0.0, 1.0), |r| (r.min(), r.max()));
    for (name, x) in [("--lo", args.lo), ("--hi", args.hi)] {
        if !(min..=max).contains(&x) {
            bail!("invalid {name} {x}: expected a number in [{min}, {max}]");
        }
    }
    if args.lo > args.hi {
        bail!("invalid range: --lo {} is above --hi {}", args.lo, args.hi);
    }
    Ok(())
}

/// One estimated quantile, in the input's units.
pub(crate) struct Row {
    pub(crate) quantile: f64,
    pub(crate) value: f64,
    /// The final interval of a binary search.
    pub(crate) interval: Option<(f64, f64)>,
}

/// A planned hierarchical histogram.
struct Hierarchical {
    plan: RoundPlan,
    task: HierarchicalHistogram,
    shape: TreeShape,
}

impl Hierarchical {
    /// Validates the tree and calibrates its levels, before any data is read.
    fn prepare(common: &ValuesArgs) -> Result<Self> {
        let shape = TreeShape::new(common.branching, common.levels)?;
        let plan = plan(common, common.levels as usize)?;
        let task = HierarchicalHistogram::new(HierarchicalConfig::planned(shape, &plan))?;
        Ok(Self { plan, task, shape })
    }

    /// Runs the levels and post-processes the release as asked.
    fn execute(&self, values: &Values, common: &ValuesArgs) -> Result<HierarchicalRelease> {
        let stage = Stage::start(format!(
            "{} levels over {} values",
            self.shape.levels(),
            values.len()
        ));
        let seed = common.release.seed_or_random();
        let release = run_hierarchical(values, self.task.clone(), ExecutionPath::default(), seed);
        drop(stage);
        if release.total() <= 0.0 {
            let params = release.params();
            bail!(
                "nothing was released at level 1: {} values are too few for threshold {} at \
                 sampling rate {:.6} (a bucket needs about {:.0} values); use fewer --levels or \
                 a larger ε",
                values.len(),
                params.threshold(),
                params.sampling_rate(),
                params.threshold() as f64 / params.sampling_rate()
            );
        }
        Ok(if common.consistent {
            release.consistent()
        } else {
            release
        })
    }

    fn parameters(
        &self,
        values: &Values,
        release: &HierarchicalRelease,
        common: &ValuesArgs,
    ) -> Value {
        document::hierarchical_parameters(
            &document::HierarchicalParameters {
                shape: self.shape,
                range: values.range(),
                consistent: common.consistent,
                composition: self.plan.composition,
                per_level: &self.plan.per_round,
                population: values.len() as u64,
            },
            release,
        )
    }
}

/// Splits the budget over `rounds` and calibrates each round.
fn plan(common: &ValuesArgs, rounds: usize) -> Result<RoundPlan> {
    let target = common.release.target();
    Ok(plan_rounds(
        common.privacy.epsilon,
        common.release.delta,
        rounds,
        Composition::from(common.composition),
        target,
        Analysis::from(common.privacy.method),
        Neighbours::from(common.privacy.neighbours),
    )?)
}

fn value_range(common: &ValuesArgs) -> Result<Option<ValueRange>> {
    match (common.min, common.max) {
        (Some(min), Some(max)) => Ok(Some(ValueRange::new(min, max)?)),
        _ => Ok(None),
    }
}

/// Reads `--input`, rescaling with `--min/--max`.
pub(crate) fn load_values(common: &ValuesArgs) -> Result<Values> {
    let range = value_range(common)?;
    let stage = Stage::start("loading the values");
    let values = Values::from_file(&common.input, range).map_err(|error| match error {
        ValuesError::OutOfRange {
            file,
            line,
            value,
            rescaling: false,
            ..
        } => anyhow!(
            "{file}:{line}: value {value} is outside [0, 1]: give --min and --max to rescale \
             the input"
        ),
        error => error.into(),
    })?;
    drop(stage);
    Ok(values)
}

/// The width of a grid cell of `fraction` of `[0, 1]`, in the input's units.
pub(crate) fn resolution(values: &Values, fraction: f64) -> f64 {
    document::resolution(values.range(), fraction)
}

pub(crate) fn report_quantiles(
    common: &ValuesArgs,
    truth: bool,
    values: &Values,
    mechanism: &str,
    parameters: Value,
    guarantee: &tally_accounting::Guarantee,
    quantiles: &[Row],
) -> Result<()> {
    // Ground truth for the metrics: the true value and the rank error of each row.
    let sorted = truth.then(|| values.sorted());
    let rows = quantiles
        .iter()
        .map(|row| {
            let truth = sorted.as_ref().map(|sorted| {
                (
                    values.to_original(sorted.quantile(row.quantile)),
                    sorted.rank_error(row.quantile, values.to_unit(row.value)),
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
    let release = QuantilesRelease {
        mechanism: mechanism.to_owned(),
        parameters,
        guarantee: GuaranteeBody::from(guarantee),
        target_delta: common.release.delta,
        input: values.description().to_owned(),
        quantiles: rows,
        seed: common.release.seed,
    };
    if common.privacy.json {
        print_json(&serde_json::to_value(&release)?)?;
        return Ok(());
    }
    print_fields(
        &format!("quantiles ({mechanism})"),
        &[
            ("input", release.input.clone()),
            ("guarantee", guarantee_line(guarantee)),
            ("parameters", release.parameters.to_string()),
            ("seed", common.release.seed_description()),
        ],
    )?;
    print_quantile_table(&release.quantiles)
}

/// The estimated quantiles as a table, with their search intervals and truth when known.
pub(crate) fn print_quantile_table(rows: &[QuantileRow]) -> Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out)?;
    writeln!(out, "  {:>10}  {:>16}", "quantile", "value")?;
    for row in rows {
        write!(out, "  {:>10}  {:>16.6}", row.quantile, row.value)?;
        if let Some([lo, hi]) = row.interval {
            write!(out, "  in [{lo:.6}, {hi:.6}]")?;
        }
        if let (Some(true_value), Some(rank_error)) = (row.true_value, row.rank_error) {
            write!(out, "  (true {true_value:.6}, rank error {rank_error:.4})")?;
        }
        writeln!(out)?;
    }
    Ok(())
}
