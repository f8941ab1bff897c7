//! `tally histogram --mechanism M` for the mechanisms over a public domain: central, local and
//! shuffle histograms that release an estimate for every domain element.

use anyhow::Result;
use tally_accounting::Neighbours;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::shuffle::ShuffleBound;
use tally_messages::DomainHistogramMechanism;
pub(crate) use tally_sim::domain_release::build_mechanism;
use tally_sim::domain_release::{self, DomainRun, DomainSetting};
use tally_sim::{DomainCounts, DomainMap, PlaceInDomain};

use crate::cli::{DomainArgs, HistogramArgs, InputArgs, PrivacyArgs};
use crate::input::{load_population, stream_format};
use crate::output::{
    Stage, guarantee_body_line, guarantee_line, print_fields, print_items, print_serialized,
    print_warning_lines,
};

/// Rows shown in the human-readable table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

/// The public domain from `--domain` or `--buckets`, for the mechanism named `mechanism`.
pub(crate) fn domain_map(args: &DomainArgs, mechanism: &str) -> Result<DomainMap> {
    public_domain(args.domain, args.buckets, mechanism)
}

/// The public domain of `--domain B` or `--buckets B` (exactly one of them, `B ≥ 2`), for the
/// mechanism named `mechanism` (offline or as a task).
pub(crate) fn public_domain(
    domain: Option<u32>,
    buckets: Option<u32>,
    mechanism: &str,
) -> Result<DomainMap> {
    Ok(domain_release::public_domain(domain, buckets, mechanism)?)
}

/// The setting `--domain`'s arguments calibrate a mechanism over `map` for: `clients`, the
/// privacy target, the shuffle bound and Count-Min's failure probability.
pub(crate) fn domain_setting(
    args: &DomainArgs,
    map: DomainMap,
    clients: u64,
    privacy: &PrivacyArgs,
) -> DomainSetting {
    DomainSetting {
        map,
        clients,
        epsilon: privacy.target.epsilon,
        delta: privacy.target.delta(),
        neighbours: Neighbours::from(privacy.neighbours),
        bound: ShuffleBound::from(args.bound),
        beta: args.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA),
    }
}

/// Refuses `--failure-probability` for a mechanism other than Count-Min.
pub(crate) fn check_failure_probability(
    args: &DomainArgs,
    mechanism: DomainHistogramMechanism,
) -> Result<()> {
    Ok(domain_release::check_failure_probability(
        args.failure_probability.is_some(),
        mechanism,
    )?)
}

/// The input's clients placed in `map`'s domain: a progress stage, the number holding each
/// element, the number of clients and the input's description. A file streams into the counts,
/// all a domain round needs; a dataset or synthetic population is loaded and placed.
///
/// # Errors
///
/// As the loaders, and for an item an integer domain does not hold (naming it).
pub(crate) fn domain_counts(
    input: &InputArgs,
    map: DomainMap,
    seed: u64,
) -> Result<(Stage, Vec<u64>, u64, String)> {
    Ok(match &input.source.input {
        Some(file) => {
            let format = stream_format(input, file, seed);
            let stage = Stage::start(format!("counting the clients of {}", file.display()));
            let counted = DomainCounts::from_file(file, format, map, &stage.bytes_read())?;
            let (clients, description) = (counted.clients(), counted.description().to_owned());
            (stage, counted.counts().to_vec(), clients, description)
        }
        None => {
            let stage = Stage::start("loading the population");
            let population = load_population(input, seed)?;
            let items = map.apply(&population)?;
            let clients = population.len() as u64;
            let description = population.description().to_owned();
            (stage, items.true_counts().to_vec(), clients, description)
        }
    })
}

/// `tally histogram --mechanism M` for `mechanism`, a mechanism over a public domain.
pub(crate) fn run(args: &HistogramArgs, mechanism: DomainHistogramMechanism) -> Result<()> {
    let map = domain_map(&args.domain, mechanism.name())?;

    let seed = args.release.seed_or_random();
    let (stage, truth, clients, description) = domain_counts(&args.input, map, seed)?;
    check_failure_probability(&args.domain, mechanism)?;
    let setting = domain_setting(&args.domain, map, clients, &args.privacy);
    stage.next(format!(
        "running {} over {clients} clients",
        mechanism.name()
    ));
    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });
    let run = DomainRun {
        seed,
        shown_seed: args.release.seed,
        colluding_fraction: args.release.colluding_fraction,
        clamp: args.clamp,
        truth: args.truth,
        top: args.top,
    };
    let released = domain_release::release(mechanism, &setting, &truth, description, &run)?;
    drop(stage);
    let document = &released.document;
    print_warning_lines(&document.warnings);

    if args.privacy.json {
        print_serialized(document)?;
        return Ok(());
    }
    let mut fields = vec![
        ("input", document.input.clone()),
        ("domain", map.to_string()),
        ("guarantee", guarantee_body_line(&document.guarantee)),
    ];
    if let Some(local) = released
        .local_guarantee
        .as_ref()
        .filter(|local| **local != released.guarantee)
    {
        fields.push(("local guarantee", guarantee_line(local)));
    }
    if let (Some(messages), Some(bits)) = (document.messages_per_client, document.bits_per_message)
    {
        fields.push((
            "messages",
            format!("{messages:.1} per client, {bits} bits each"),
        ));
    }
    if args.truth {
        fields.push((
            "mean absolute error",
            format!("{:.2} per element", released.mean_absolute_error),
        ));
    }
    fields.push(("seed", args.release.seed_description()));
    print_fields(&format!("{} histogram", document.mechanism), &fields)?;
    let rows: Vec<_> = released
        .order
        .iter()
        .map(|&x| (x.to_string(), None, Some(released.estimates[x as usize])))
        .collect();
    print_items(&rows, shown)?;
    Ok(())
}
