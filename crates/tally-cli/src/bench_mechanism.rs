//! `tally bench mechanism`: time a whole domain-histogram mechanism (every client randomizes,
//! the server aggregates and decodes; or, for a central mechanism, count and add noise) on
//! Geometric(1/√B) items generated outside the timed region, or on items read from a file so
//! that a peer implementation can be timed on the same data.
//!
//! Run `r` is the simulator's run of `tally histogram` with seed `seed + r`. For mechanisms whose clients send
//! messages, `messages` is the expected number of logical messages all clients send (real and
//! noise), `n` times the mechanism's `messages_per_client`, and `messages_per_second` divides
//! it by the median time.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;
use tally_accounting::Neighbours;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::shuffle::ShuffleBound;
use tally_sim::{DomainMap, Generator, SyntheticSpec};

use crate::bench::Timings;
use crate::cli::BenchMechanismArgs;
use tally_plan::domain::DomainSetting;

use crate::domain_histogram::build_mechanism;
use crate::output::{Stage, guarantee_json, guarantee_line, print_fields, print_json};

pub(crate) fn run(args: &BenchMechanismArgs) -> Result<()> {
    let data = &args.data;
    anyhow::ensure!(data.repeats > 0, "--repeats must be at least 1");
    let domain = u32::try_from(data.domain)
        .ok()
        .filter(|&d| d >= 2)
        .context("--domain must be in [2, 2^32)")?;
    let stage = Stage::start("loading the items");
    let (items, source) = match &args.items {
        Some(path) => (read_items(path, domain)?, format!("{}", path.display())),
        None => {
            let spec = SyntheticSpec::new(
                data.clients,
                Generator::Geometric {
                    domain: data.domain,
                },
            )?;
            (spec.generate(data.seed), "Geometric(1/√B) items".to_owned())
        }
    };
    let setting = DomainSetting {
        map: DomainMap::Integers(domain),
        clients: items.len() as u64,
        epsilon: args.target.epsilon,
        delta: args.target.delta(),
        neighbours: Neighbours::AddRemove,
        bound: ShuffleBound::Fmt23,
        beta: DEFAULT_COUNT_MIN_BETA,
    };
    let built = build_mechanism(args.mechanism, &setting, data.seed)?;
    let mechanism = built.describe();
    stage.next(format!("timing {} runs", data.repeats));
    // Counting the clients' elements is part of every run, as `tally histogram` counts them
    // from its input, by the simulator's counting loop.
    let (timings, estimates) = Timings::measure(data.repeats, |repeat| {
        let counts = tally_sim::count_elements(domain, &items);
        built.run(&counts, data.seed.wrapping_add(repeat))
    });
    drop(stage);
    let clients = items.len() as u64;
    let messages = mechanism
        .message_cost()
        .map(|cost| clients as f64 * cost.messages_per_client);
    let messages_per_second = messages.map(|m| m / timings.median());
    let estimated_total: f64 = estimates.iter().sum();
    let guarantee = mechanism.guarantee();
    if data.json {
        print_json(&json!({
            "benchmark": "mechanism",
            "mechanism": mechanism.name(),
            "clients": clients,
            "domain": domain,
            "items": source,
            "guarantee": guarantee_json(&guarantee),
            "local_guarantee": mechanism.local_guarantee().as_ref().map(guarantee_json),
            "message_cost": mechanism.message_cost().map(|cost| json!({
                "messages_per_client": cost.messages_per_client,
                "bits_per_message": cost.bits_per_message,
            })),
            "threads": rayon::current_num_threads(),
            "repeats": data.repeats,
            "median_seconds": timings.median(),
            "min_seconds": timings.min(),
            "max_seconds": timings.max(),
            "messages": messages,
            "messages_per_second": messages_per_second,
            "estimated_total": estimated_total,
        }))?;
        return Ok(());
    }
    let mut rows = vec![
        ("clients", clients.to_string()),
        ("domain", format!("{domain} ({source})")),
        ("guarantee", guarantee_line(&guarantee)),
    ];
    if let Some(local) = mechanism
        .local_guarantee()
        .filter(|local| *local != guarantee)
    {
        rows.push(("local guarantee", guarantee_line(&local)));
    }
    rows.push(("time", timings.describe()));
    if let (Some(messages), Some(rate)) = (messages, messages_per_second) {
        rows.push((
            "messages",
            format!("{messages:.4e} per run (expected, real + noise), {rate:.4e} per second"),
        ));
    }
    rows.push(("estimated total", format!("{estimated_total:.1}")));
    print_fields(&format!("{}: whole runs", mechanism.name()), &rows).map_err(Into::into)
}

/// Reads one item per line (blank lines skipped), each an integer below `domain`.
fn read_items(path: &Path, domain: u32) -> Result<Vec<u32>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut items = Vec::new();
    for (line, text) in text.lines().enumerate() {
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let item = text
            .parse::<u32>()
            .ok()
            .filter(|&item| item < domain)
            .with_context(|| {
                format!(
                    "{} line {}: {text:?} is not an integer in [0, {domain})",
                    path.display(),
                    line + 1
                )
            })?;
        items.push(item);
    }
    anyhow::ensure!(!items.is_empty(), "{} holds no items", path.display());
    Ok(items)
}
