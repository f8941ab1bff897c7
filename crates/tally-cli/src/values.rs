//! The numbers of `tally quantiles` and `tally range`: reading them, and printing a quantiles
//! release, whatever mechanism made it.

use std::io::{self, Write};

use anyhow::{Result, anyhow};
use tally_messages::{QuantileRow, QuantilesRelease};
use tally_sim::values_release::{self, Row};
use tally_sim::{ValueRange, Values, ValuesError};

use crate::cli::{QuantilesArgs, ValuesArgs};
use crate::output::{Stage, guarantee_body_line, parameters_line, print_fields, print_json};

/// The range `--min/--max` rescale the numbers from, if given.
pub(crate) fn value_range(common: &ValuesArgs) -> Result<Option<ValueRange>> {
    match (common.min, common.max) {
        (Some(min), Some(max)) => Ok(Some(ValueRange::new(min, max)?)),
        _ => Ok(None),
    }
}

/// Reads `--input`, rescaling with `--min/--max`.
pub(crate) fn load_values(common: &ValuesArgs) -> Result<Values> {
    let range = value_range(common)?;
    let stage = Stage::start("loading the values");
    let values = Values::from_file(&common.input, range).map_err(values_error)?;
    drop(stage);
    Ok(values)
}

/// A values error, pointing at `--min` and `--max` when rescaling would help.
pub(crate) fn values_error(error: ValuesError) -> anyhow::Error {
    match values_release::rescaling_hint(&error) {
        Some(message) => anyhow!(message),
        None => error.into(),
    }
}

/// Prints the release of `quantiles`, estimated from `values` by `mechanism` under
/// `guarantee` (and `collusion`), with the true values when `--truth` asks.
pub(crate) fn report_quantiles(
    args: &QuantilesArgs,
    values: &Values,
    mechanism: &str,
    parameters: serde_json::Value,
    guarantee: &tally_accounting::Guarantee,
    collusion: &tally_accounting::Collusion,
    quantiles: &[Row],
) -> Result<()> {
    let common = &args.values;
    let sorted = args.truth.then(|| values.sorted());
    let mut release = values_release::quantiles_document(
        values.description(),
        values.range(),
        sorted.as_ref(),
        mechanism,
        parameters,
        guarantee,
        quantiles,
        common.privacy.target.delta(),
        common.release.seed,
    );
    release.guarantee.collusion = Some(collusion.into());
    print_quantiles(common, &release)
}

/// Prints a quantiles document, as JSON with `--json`.
pub(crate) fn print_quantiles(common: &ValuesArgs, release: &QuantilesRelease) -> Result<()> {
    if common.privacy.json {
        print_json(&serde_json::to_value(release)?)?;
        return Ok(());
    }
    print_quantiles_release(release, &[("seed", common.release.seed_description())])
}

/// Prints a quantiles release for people, the same offline and federated: its title, input,
/// guarantee and parameters, then `extra` rows (the seed, the task) and the quantiles.
pub(crate) fn print_quantiles_release(
    release: &QuantilesRelease,
    extra: &[(&str, String)],
) -> Result<()> {
    let mut rows = vec![
        ("input", release.input.clone()),
        ("guarantee", guarantee_body_line(&release.guarantee)),
        ("parameters", parameters_line(&release.parameters)),
    ];
    rows.extend_from_slice(extra);
    print_fields(&format!("quantiles ({})", release.mechanism), &rows)?;
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
