//! Reading the population a command runs on.

use std::path::Path;

use anyhow::{Context, Result};
use tally_sim::{ClientMode, KeyedPopulation, Population, StreamFormat, SyntheticSpec};

use crate::cli::{Format, InputArgs, ReportArgs};

/// Reads the population named by the input arguments.
pub(crate) fn load_population(input: &InputArgs, seed: u64) -> Result<Population> {
    let mode = if input.rows_as_clients {
        ClientMode::RowsAsClients
    } else {
        ClientMode::ClientLevel { seed }
    };
    let source = &input.source;
    if let Some(file) = &source.input {
        return Ok(match input_format(file, input.format) {
            Format::Lines => Population::from_lines_file(file)?,
            Format::Tsv => Population::from_tsv_file(file, mode)?,
        });
    }
    if let Some(name) = &source.dataset {
        return Ok(Population::dataset(name)?);
    }
    // Unwrap safety: clap requires exactly one of the three inputs.
    let spec = source.synthetic.as_deref().expect("one input is required");
    let spec: SyntheticSpec = spec.parse().context("bad --synthetic")?;
    Ok(Population::synthetic(&spec, seed))
}

/// How `input`'s `file` streams: its format (as [`input_format`] says), with TSV clients
/// formed as [`load_population`] forms them.
pub(crate) fn stream_format(input: &InputArgs, file: &Path, seed: u64) -> StreamFormat {
    match input_format(file, input.format) {
        Format::Lines => StreamFormat::Lines,
        Format::Tsv if input.rows_as_clients => StreamFormat::Tsv(ClientMode::RowsAsClients),
        Format::Tsv => StreamFormat::Tsv(ClientMode::ClientLevel { seed }),
    }
}

/// The format of `file`: `format` if given, else `tsv` for `.tsv` and `.tsv.gz` files and
/// `lines` otherwise.
pub(crate) fn input_format(file: &Path, format: Option<Format>) -> Format {
    if let Some(format) = format {
        return format;
    }
    let name = file.to_string_lossy();
    if name.ends_with(".tsv") || name.ends_with(".tsv.gz") {
        Format::Tsv
    } else {
        Format::Lines
    }
}

/// Reads the population a plan's report predicts on, if the arguments name one.
pub(crate) fn load_report_population(report: &ReportArgs) -> Result<Option<Population>> {
    report
        .population_input()
        .map(|input| load_population(&input, report.population_seed))
        .transpose()
}

/// The rows a keyed round runs on: a TSV file's rows with their client ids (unless
/// --rows-as-clients), otherwise every client of the population named by its position.
pub(crate) fn load_keyed_population(input: &InputArgs, seed: u64) -> Result<KeyedPopulation> {
    if let Some(file) = &input.source.input
        && !input.rows_as_clients
        && matches!(input_format(file, input.format), Format::Tsv)
    {
        return Ok(KeyedPopulation::from_tsv_file(file)?);
    }
    let population = load_population(input, seed)?;
    Ok(KeyedPopulation::from_population(&population))
}
