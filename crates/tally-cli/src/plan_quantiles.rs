//! `tally plan quantiles`: the per-level sample-and-threshold parameters of a quantile release
//! and its guarantee, as `tally quantiles` calibrates them.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Result, anyhow};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::Analysis;
use tally_plan::page;
use tally_plan::quantiles::{self, KnownValues, KnownValuesRefused};
use tally_sim::values_release::{QuantilesPlan, ValuesSettings};
use tally_sim::{CountedValues, ValueRange};

use crate::cli::{PlanQuantilesArgs, QuantileMethod};
use crate::output::{Stage, guarantee_line, print_fields, print_json, save_report};
use crate::quantiles::check_quantiles;
use crate::values::values_error;

pub(crate) fn run(args: &PlanQuantilesArgs) -> Result<()> {
    check_quantiles(&args.quantiles)?;
    let plan = QuantilesPlan::solve(&settings(args), args.algorithm, args.quantiles.len())?;
    if let Some(dir) = &args.report {
        write_report(&plan, args, dir)?;
    }
    if args.privacy.json {
        return Ok(print_json(&plan.document())?);
    }
    print_plan(&plan)
}

/// Builds the report of `plan`, on the numbers of `--input` counted in its tree, and writes
/// it.
fn write_report(plan: &QuantilesPlan, args: &PlanQuantilesArgs, dir: &Path) -> Result<()> {
    let counted = match &args.input {
        None => None,
        Some(input) => {
            let shape = quantiles::known_values_tree(plan).map_err(|refused| {
                let fix = match refused {
                    KnownValuesRefused::NotHierarchical => {
                        "drop --input or use --algorithm hierarchical"
                    }
                    _ => "use fewer --levels",
                };
                anyhow!("--input: {refused}; {fix}")
            })?;
            let range = match (args.min, args.max) {
                (Some(min), Some(max)) => Some(ValueRange::new(min, max)?),
                _ => None,
            };
            let stage = Stage::start(format!("counting the values of {}", input.display()));
            let counted = CountedValues::from_file(input, range, shape, &stage.bytes_read())
                .map_err(values_error)?;
            drop(stage);
            Some(counted)
        }
    };
    let known = counted.as_ref().map(|c| KnownValues {
        description: c.description(),
        leaves: c.leaves(),
    });
    let report = quantiles::build(plan.clone(), &settings(args), known);
    save_report(dir, |dir| page::quantiles::write(&report, dir))
}

/// The settings `tally quantiles` would run with for the same options.
fn settings(args: &PlanQuantilesArgs) -> ValuesSettings {
    let neighbours = Neighbours::from(args.privacy.neighbours);
    ValuesSettings {
        epsilon: args.privacy.target.epsilon,
        delta: args.privacy.target.delta(),
        target: args.round.target(),
        analysis: Analysis::from(args.privacy.analysis.method),
        neighbours,
        composition: args.composition.of_rounds(neighbours),
        branching: args.branching,
        levels: args.levels,
        consistent: false,
    }
}

/// The plan for people: its fields, then a row per level.
fn print_plan(plan: &QuantilesPlan) -> Result<()> {
    let mechanism = &plan.rounds.per_round;
    let params = mechanism.params();
    let (rate, threshold) = (params.sampling_rate(), params.threshold());
    let (title, passes) = match plan.method {
        QuantileMethod::Hierarchical => (
            format!(
                "quantiles plan: hierarchical histogram ({} levels, branching {})",
                plan.levels, plan.branching
            ),
            "one tree answers every quantile".to_owned(),
        ),
        QuantileMethod::BinarySearch => (
            format!(
                "quantiles plan: binary search ({} rounds each)",
                plan.levels
            ),
            format!("{} searches, one per quantile", plan.searches),
        ),
    };
    print_fields(
        &title,
        &[
            ("guarantee", guarantee_line(&plan.guarantee)),
            ("target delta", format!("{:e}", plan.rounds.total_delta)),
            (
                "rounds",
                format!(
                    "{} ({passes}), composed {}",
                    plan.rounds.rounds, plan.rounds.composition
                ),
            ),
            ("per-round guarantee", guarantee_line(mechanism.guarantee())),
            ("sampling rate", format!("{rate:.6} (every round)")),
            ("threshold", format!("{threshold} (every round)")),
            (
                "smallest count shown",
                format!(
                    "{:.1} values in a bucket (threshold / rate)",
                    threshold as f64 / rate
                ),
            ),
        ],
    )?;
    let mut out = io::stdout().lock();
    writeln!(out)?;
    let (unit, width) = match plan.method {
        QuantileMethod::Hierarchical => ("level", "bucket width"),
        QuantileMethod::BinarySearch => ("round", "interval width"),
    };
    writeln!(
        out,
        "  {unit:>6}  {:>14}  {width:>14}  {:>13}  {:>9}",
        "buckets", "sampling rate", "threshold"
    )?;
    for level in 1..=plan.levels {
        // A binary search's round asks one question of two buckets, whatever its depth.
        let buckets = match plan.method {
            QuantileMethod::Hierarchical => u64::from(plan.branching)
                .checked_pow(level)
                .map_or_else(|| format!("{}^{level}", plan.branching), |b| b.to_string()),
            QuantileMethod::BinarySearch => "2".to_owned(),
        };
        writeln!(
            out,
            "  {level:>6}  {buckets:>14}  {:>14.6e}  {rate:>13.6}  {threshold:>9}",
            plan.bucket_width(level),
        )?;
    }
    Ok(())
}
