//! `tally quantiles` and `tally range`: quantiles and range counts of numbers.

use anyhow::Result;
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::Analysis;
use tally_core::quantiles::TreeShape;
use tally_messages::RangeRelease;
use tally_sim::values_release::{self, HierarchicalValues, Released, ValuesSettings};
use tally_sim::{CountedValues, Values};

use crate::cli::{QuantileMethod, QuantilesArgs, RangeArgs, ValuesArgs, ValuesMechanism};
use crate::output::{Stage, guarantee_line, parameters_line, print_fields, print_json};
use crate::shuffle_values;
use crate::values::{load_values, print_quantiles, value_range, values_error};

pub(crate) use tally_sim::values_release::check_quantiles;

pub(crate) fn run_quantiles(args: &QuantilesArgs) -> Result<()> {
    let common = &args.values;
    check_quantiles(&args.quantiles)?;
    if common.mechanism != ValuesMechanism::SampleThreshold {
        if args.method == QuantileMethod::BinarySearch {
            anyhow::bail!(
                "--method binary-search runs sample-and-threshold rounds: with --mechanism \
                 ghazi-* the quantiles are read from one range-query tree (leave --method out)"
            );
        }
        return shuffle_values::run_quantiles(args);
    }
    let mut running = None;
    let (seed, shown_seed) = (common.release.seed_or_random(), common.release.seed);
    let Released { document, .. } = match args.method {
        QuantileMethod::Hierarchical => values_release::hierarchical_quantiles(
            &settings(common),
            &args.quantiles,
            |shape| hierarchical_values(common, shape, args.truth, &mut running),
            seed,
            shown_seed,
            args.truth,
        )?,
        QuantileMethod::BinarySearch => values_release::quantiles(
            &settings(common),
            &args.quantiles,
            values_release::QuantileMethod::BinarySearch,
            || load_then_run(common, &mut running),
            seed,
            shown_seed,
            args.truth,
        )?,
    };
    drop(running);
    print_quantiles(common, &document)
}

pub(crate) fn run_range(args: &RangeArgs) -> Result<()> {
    let common = &args.values;
    values_release::check_range(value_range(common)?, args.lo, args.hi)?;
    if common.mechanism != ValuesMechanism::SampleThreshold {
        return shuffle_values::run_range(args);
    }
    if args.method == QuantileMethod::BinarySearch {
        anyhow::bail!(
            "range counts need --method hierarchical: a binary search finds one quantile, not \
             counts"
        );
    }
    let mut running = None;
    let Released {
        document,
        guarantee,
    } = values_release::hierarchical_range_count(
        &settings(common),
        value_range(common)?,
        (args.lo, args.hi),
        |shape| hierarchical_values(common, shape, false, &mut running),
        common.release.seed_or_random(),
        common.release.seed,
    )?;
    drop(running);
    if common.privacy.json {
        print_json(&serde_json::to_value(&document)?)?;
        return Ok(());
    }
    print_range(
        &document,
        &guarantee_line(&guarantee),
        &[("seed", common.release.seed_description())],
    )
}

/// Prints a range-count document for people, with `extra` rows after its parameters.
pub(crate) fn print_range(
    document: &RangeRelease,
    guarantee: &str,
    extra: &[(&str, String)],
) -> Result<()> {
    let (estimate, total) = (document.estimate, document.estimated_total);
    let range = &document.range;
    let mut rows = vec![
        ("input", document.input.clone()),
        ("guarantee", guarantee.to_owned()),
        ("parameters", parameters_line(&document.parameters)),
    ];
    rows.extend(extra.iter().cloned());
    rows.push((
        "range",
        format!(
            "[{}, {}) (snapped to the grid: [{}, {}))",
            range.lo, range.hi, range.grid_lo, range.grid_hi
        ),
    ));
    rows.push((
        "estimate",
        format!(
            "{estimate:.1} values ({:.4} of the estimated total {total:.1})",
            estimate / total
        ),
    ));
    print_fields("range count (hierarchical histogram)", &rows)?;
    Ok(())
}

/// Reads `--input` and starts the spinner of the run that follows, left in `running`.
fn load_then_run(common: &ValuesArgs, running: &mut Option<Stage>) -> Result<Values> {
    let values = load_values(common)?;
    *running = Some(Stage::start(format!(
        "estimating over {} values",
        values.len()
    )));
    Ok(values)
}

/// The values of `--input` for a hierarchical histogram of `shape`: read once into their
/// counts per leaf when the tree is small enough and no truth is asked (which needs every
/// value), loaded otherwise; starts the spinner of the run that follows, left in `running`.
fn hierarchical_values(
    common: &ValuesArgs,
    shape: TreeShape,
    truth: bool,
    running: &mut Option<Stage>,
) -> Result<HierarchicalValues> {
    if truth || !CountedValues::fits(shape) {
        return load_then_run(common, running).map(HierarchicalValues::Loaded);
    }
    let range = value_range(common)?;
    let stage = Stage::start(format!("counting the values of {}", common.input.display()));
    let counted = CountedValues::from_file(&common.input, range, shape, &stage.bytes_read())
        .map_err(values_error)?;
    drop(stage);
    *running = Some(Stage::start(format!(
        "estimating over {} values",
        counted.clients()
    )));
    Ok(HierarchicalValues::Counted(counted))
}

/// The settings of a release over numbers, from the command line.
fn settings(common: &ValuesArgs) -> ValuesSettings {
    ValuesSettings {
        epsilon: common.privacy.target.epsilon,
        delta: common.privacy.target.delta(),
        target: common.release.round.target(),
        analysis: Analysis::from(common.privacy.analysis.method),
        neighbours: Neighbours::from(common.privacy.neighbours),
        composition: common
            .composition
            .of_rounds(Neighbours::from(common.privacy.neighbours)),
        branching: common.branching,
        levels: common.levels,
        consistent: common.consistent,
    }
}
