//! `tally client` (one device) and `tally fleet` (many): devices over HTTP.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use rand::Rng;
use tally_client::fleet::RoundReport;
use tally_client::{AggregatorKey, DeviceLedger, Fleet, FleetConfig, FleetEvent, FleetReport};

use crate::cli::{ClientArgs, DeviceArgs, FleetArgs, ServerArgs};
use crate::federated::{client, connect, runtime};
use crate::output::print_serialized;
use tally_core::heavy_hitters::WordMultiset;
use tally_sim::word_multisets;

use crate::heavy_hitters::load_users;
use crate::input::load_population;
use crate::output::{print_fields, write_owner_only};

/// `tally client`: one device, its item read from a file.
pub(crate) fn run_client(args: &ClientArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let item = one_item(&text)
        .with_context(|| format!("{} is not a device's data", args.input.display()))?;
    let config = FleetConfig {
        concurrency: 1,
        batch: 1,
        task: args.devices.task.clone(),
        seed: args.devices.seed,
        ..FleetConfig::default()
    };
    let credentials = read_credentials(args.devices.credentials.as_deref())?;
    if credentials.as_ref().is_some_and(|c| c.len() != 1) {
        bail!("--credentials: a device has one credential, on one line");
    }
    let report = run_fleet(
        &args.server,
        vec![item],
        credentials,
        &args.devices,
        config,
        false,
    )?;
    if args.devices.json {
        return print_serialized(&report);
    }
    print_fields(
        "device",
        &[
            ("rounds", report.rounds.len().to_string()),
            ("uploads accepted", report.total.counts.accepted.to_string()),
            ("uploads refused", refused(&report.total.counts.rejected)),
        ],
    )?;
    Ok(())
}

/// A device's one item: the only non-empty line (trailing `\r` and spaces trimmed).
fn one_item(text: &str) -> Result<String> {
    let mut lines = text
        .lines()
        .map(|line| line.trim_end_matches(['\r', ' ', '\t']))
        .filter(|line| !line.is_empty());
    let Some(item) = lines.next() else {
        bail!("the file is empty: a device holds one item, on one line");
    };
    if lines.next().is_some() {
        bail!(
            "the file has more than one non-empty line: a device holds one item (for many \
             devices use `tally fleet --input FILE`)"
        );
    }
    Ok(item.to_owned())
}

/// `tally fleet`: one device per client of a population.
pub(crate) fn run(args: &FleetArgs) -> Result<()> {
    // The population's sampling (one row per client of a TSV, synthetic data) uses the seed
    // when given; the devices' coins too.
    let seed = args.devices.seed.unwrap_or_else(|| rand::rng().next_u64());
    let (items, description) = if args.whole_clients {
        whole_clients(args, seed)?
    } else {
        let population = load_population(&args.input, seed)?;
        let items = population
            .items()
            .iter()
            .map(|&id| {
                population
                    .item_name(id)
                    .map_or_else(|| id.to_string(), |name| name.into_owned())
            })
            .collect();
        (items, population.description().to_owned())
    };
    let config = FleetConfig {
        concurrency: args.concurrency,
        batch: args.batch,
        task: args.devices.task.clone(),
        seed: args.devices.seed,
        ..FleetConfig::default()
    };
    let credentials = read_credentials(args.devices.credentials.as_deref())?;
    let report = run_fleet(
        &args.server,
        items,
        credentials,
        &args.devices,
        config,
        args.seal_first,
    )?;
    if args.devices.json {
        return print_serialized(&report);
    }
    print_report(&report, &description)
}

/// `--whole-clients`: one device per client, holding all its rows, one per line (the text an
/// OptPrefixTree device reads as its multiset of words); and the input's description.
fn whole_clients(args: &FleetArgs, seed: u64) -> Result<(Vec<String>, String)> {
    let population = load_users(&args.input, seed)?;
    let devices = word_multisets(population.users(), population.vocabulary())
        .iter()
        .map(WordMultiset::text)
        .collect();
    Ok((devices, population.description().to_owned()))
}

/// The aggregator's key a split-trust population's devices seal to (`--aggregator` or
/// `--aggregator-key`), or `None` for a single-party population's.
fn aggregator_key(
    relay: &tally_client::Client,
    devices: &DeviceArgs,
) -> Result<Option<AggregatorKey>> {
    if let Some(path) = &devices.aggregator_key {
        let body =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        return Ok(Some(AggregatorKey::pinned(&body)?));
    }
    let Some(url) = &devices.aggregator else {
        return Ok(None);
    };
    let aggregator = connect(url, devices.aggregator_ca_cert.as_deref(), None)?;
    Ok(Some(
        runtime()?.block_on(AggregatorKey::fetch(&aggregator, relay))?,
    ))
}

/// The device credentials of a file, one per non-empty line.
fn read_credentials(path: Option<&Path>) -> Result<Option<Vec<String>>> {
    let Some(path) = path else { return Ok(None) };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let credentials: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if credentials.is_empty() {
        bail!("{} holds no credential", path.display());
    }
    Ok(Some(credentials))
}

/// Runs the devices until their tasks end, with a progress bar on a terminal: each with its
/// own credential when `credentials` are given, else through the server credential relaying
/// for all of them; with `seal_first`, each round's reports sealed before its clock starts.
fn run_fleet(
    server: &ServerArgs,
    items: Vec<String>,
    credentials: Option<Vec<String>>,
    devices: &DeviceArgs,
    config: FleetConfig,
    seal_first: bool,
) -> Result<FleetReport> {
    let relay = client(server)?;
    let key = aggregator_key(&relay, devices)?;
    let mut fleet = Fleet::new(relay, items, config)?;
    match (key, seal_first) {
        (Some(key), true) => fleet = fleet.with_aggregator_key(key).sealing_first(),
        (Some(key), false) => fleet = fleet.with_aggregator_key(key),
        (None, true) => bail!(
            "--seal-first seals to the aggregator's key: give --aggregator URL or \
             --aggregator-key FILE"
        ),
        (None, false) => {}
    }
    if let Some(credentials) = credentials {
        fleet = fleet.with_credentials(credentials)?;
    }
    if let Some(ledger) = read_ledger(devices)? {
        fleet = fleet.with_ledger(ledger);
    }
    let bar = progress_bar();
    let report = runtime()?.block_on(fleet.run(|event| match event {
        FleetEvent::RoundStarted { query, devices } => {
            bar.set_style(round_style());
            bar.set_length(*devices as u64);
            bar.set_position(0);
            bar.set_message(format!(
                "task {} round {} (attempt {})",
                query.task_id, query.round, query.attempt
            ));
        }
        FleetEvent::Uploaded { devices, .. } => bar.inc(*devices as u64),
        FleetEvent::RoundFinished(report) => bar.println(round_line(report)),
        FleetEvent::Refused { query, reason } => bar.println(format!(
            "refused task {} round {}: {reason}",
            query.task_id, query.round
        )),
        FleetEvent::Waiting => {
            bar.set_style(wait_style());
            bar.set_message("waiting for an open round");
        }
        _ => {}
    }));
    bar.finish_and_clear();
    // What was spent is kept even when the run failed part way.
    if let (Some(path), Some(ledger)) = (&devices.device_ledger, fleet.ledger()) {
        let text = serde_json::to_string_pretty(&ledger)?;
        write_owner_only(path, (text + "\n").as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(report?)
}

/// The devices' ledger: read from --device-ledger when it exists (with the budget given
/// now), else empty; `None` without --device-budget-epsilon.
fn read_ledger(devices: &DeviceArgs) -> Result<Option<DeviceLedger>> {
    let Some(epsilon) = devices.device_budget_epsilon else {
        return Ok(None);
    };
    let delta = devices.device_budget_delta.unwrap_or(1.0);
    let mut ledger = match &devices.device_ledger {
        Some(path) if path.exists() => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str::<DeviceLedger>(&text)
                .with_context(|| format!("{} is not a device ledger", path.display()))?
        }
        _ => DeviceLedger::new(epsilon, delta),
    };
    ledger.budget_epsilon = epsilon;
    ledger.budget_delta = delta;
    Ok(Some(ledger))
}

/// A bar on stderr, drawn only when stderr is a terminal.
fn progress_bar() -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0).with_style(wait_style());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn round_style() -> ProgressStyle {
    // Unwrap safety: the template is a constant that parses.
    ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} devices ({per_sec})")
        .expect("valid template")
}

fn wait_style() -> ProgressStyle {
    // Unwrap safety: the template is a constant that parses.
    ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template")
}

fn round_line(report: &RoundReport) -> String {
    format!(
        "task {} round {} (attempt {}): {} uploads accepted ({} reports, {} abstentions), \
         {:.0} uploads/s, p99 {:.1} ms",
        report.task_id,
        report.round,
        report.attempt,
        report.counts.accepted,
        report.counts.reports,
        report.counts.abstentions,
        report.uploads_per_sec,
        report.latency_ms.p99
    )
}

fn refused(rejected: &std::collections::BTreeMap<String, u64>) -> String {
    if rejected.is_empty() {
        return "none".to_owned();
    }
    rejected
        .iter()
        .map(|(code, n)| format!("{n} {code}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_report(report: &FleetReport, input: &str) -> Result<()> {
    let total = &report.total;
    let latency = &total.latency_ms;
    print_fields(
        "fleet",
        &[
            ("input", input.to_owned()),
            (
                "devices",
                format!(
                    "{} ({} requests in flight, {} devices per request)",
                    report.devices, report.concurrency, report.batch
                ),
            ),
            ("rounds", report.rounds.len().to_string()),
            (
                "uploads accepted",
                format!(
                    "{} ({} reports, {} abstentions)",
                    total.counts.accepted, total.counts.reports, total.counts.abstentions
                ),
            ),
            ("uploads refused", refused(&total.counts.rejected)),
            (
                "throughput",
                format!(
                    "{:.0} uploads/s over {:.2} s in rounds ({:.2} s in all)",
                    total.uploads_per_sec, total.busy_secs, total.wall_secs
                ),
            ),
            (
                "upload latency",
                format!(
                    "p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} requests)",
                    latency.p50,
                    latency.p90,
                    latency.p99,
                    latency.max,
                    total.counts.upload_requests
                ),
            ),
        ],
    )?;
    if report.rounds.is_empty() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    writeln!(out)?;
    writeln!(
        out,
        "  {:<20} {:>5} {:>7} {:>9} {:>9} {:>11} {:>8} {:>10} {:>9} {:>9}",
        "task",
        "round",
        "attempt",
        "accepted",
        "reports",
        "abstentions",
        "refused",
        "uploads/s",
        "p50 ms",
        "p99 ms"
    )?;
    for round in &report.rounds {
        let refused: u64 = round.counts.rejected.values().sum();
        writeln!(
            out,
            "  {:<20} {:>5} {:>7} {:>9} {:>9} {:>11} {:>8} {:>10.0} {:>9.2} {:>9.2}",
            round.task_id,
            round.round,
            round.attempt,
            round.counts.accepted,
            round.counts.reports,
            round.counts.abstentions,
            refused,
            round.uploads_per_sec,
            round.latency_ms.p50,
            round.latency_ms.p99
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_holds_exactly_one_item() {
        assert_eq!(one_item("\n  \nword\r\n\n").unwrap(), "word");
        assert_eq!(one_item("two words\n").unwrap(), "two words");
        let error = one_item("a\nb\n").unwrap_err().to_string();
        assert!(error.contains("a device holds one item"), "{error}");
        assert!(one_item("\n\n").is_err());
    }
}
