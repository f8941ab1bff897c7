//! `tally task create --mechanism M --domain B` (or `--buckets B`) for the mechanisms over a
//! public domain that the federated runtime runs, and `tally task result` of such a task.

use anyhow::{Result, bail};
use tally_messages::{DomainHistogramMechanism, DomainHistogramRelease, TaskKind};

use crate::cli::TaskCreateArgs;
use crate::domain_histogram::public_domain;
use crate::output::{guarantee_body_line, print_fields, print_items};

/// The task of a domain histogram by `mechanism`, from `--domain` or `--buckets`, as `tally
/// histogram` reads them.
pub(crate) fn task_kind(
    args: &TaskCreateArgs,
    mechanism: DomainHistogramMechanism,
) -> Result<TaskKind> {
    let domain =
        tally_protocol::public_domain(public_domain(args.domain, args.buckets, mechanism.name())?);
    Ok(TaskKind::DomainHistogram {
        mechanism,
        domain,
        public_coins: None,
    })
}

/// Refuses `--domain` and `--buckets` for a task that is not over a public domain.
pub(crate) fn refuse_domain(args: &TaskCreateArgs, task: &str) -> Result<()> {
    if args.domain.is_some() || args.buckets.is_some() {
        bail!("--domain and --buckets do not apply to {task}");
    }
    Ok(())
}

/// Prints a domain histogram's release as a table, largest estimates first.
pub(crate) fn print_release(
    release: &DomainHistogramRelease,
    id: &str,
    shown: usize,
) -> Result<()> {
    print_fields(
        &format!("{} histogram (task {id})", release.mechanism),
        &[
            ("input", release.input.clone()),
            ("domain", release.domain.mapping.clone()),
            ("guarantee", guarantee_body_line(&release.guarantee)),
        ],
    )?;
    let mut rows: Vec<_> = release
        .items
        .iter()
        .map(|e| (e.item.to_string(), None, Some(e.estimate)))
        .collect();
    rows.sort_by(|a: &(String, Option<u64>, Option<f64>), b| {
        b.2.unwrap_or(0.0).total_cmp(&a.2.unwrap_or(0.0))
    });
    print_items(&rows, shown)?;
    Ok(())
}
