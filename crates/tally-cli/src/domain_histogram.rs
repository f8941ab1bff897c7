//! `tally histogram --mechanism M` for the mechanisms over a public domain: central, local and
//! shuffle histograms that release an estimate for every domain element.

use anyhow::{Result, anyhow, bail};
use tally_accounting::Neighbours;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::shuffle::ShuffleBound;
use tally_cli::domain_plan::{DomainSetting, Simulated, calibrate_with};
use tally_messages::{
    DomainBody, DomainElementBody, DomainHistogramMechanism, DomainHistogramRelease, GuaranteeBody,
};
use tally_protocol::diagnosis::delta_warning;
use tally_sim::{DomainCounts, DomainMap, DomainMechanism, PlaceInDomain, run_domain_histogram};

use crate::cli::{DomainArgs, Format, HistogramArgs, InputArgs, PrivacyArgs};
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
    let map = match (domain, buckets) {
        (Some(size), None) => DomainMap::Integers(size),
        (None, Some(size)) => DomainMap::Buckets(size),
        _ => bail!(
            "--mechanism {mechanism} needs a public domain: give --domain B (integer items in [0, B)) or \
             --buckets B (hash items into B buckets); a domain read off the data would reveal \
             which items occur (--mechanism sample-threshold needs none)"
        ),
    };
    if map.size() < 2 {
        bail!("invalid domain size {}: expected at least 2", map.size());
    }
    Ok(map)
}

/// The setting `--domain`'s arguments calibrate a mechanism over `map` for: `clients`, the
/// privacy target, the shuffle bound and Count-Min's failure probability.
pub(crate) fn domain_setting(
    args: &DomainArgs,
    map: DomainMap,
    clients: u64,
    privacy: &PrivacyArgs,
    delta: f64,
) -> DomainSetting {
    DomainSetting {
        map,
        clients,
        epsilon: privacy.epsilon,
        delta,
        neighbours: Neighbours::from(privacy.neighbours),
        bound: ShuffleBound::from(args.bound),
        beta: args.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA),
    }
}

/// `mechanism` calibrated for `setting`, as its registered round; a mechanism that publishes
/// coins draws them from `seed`.
pub(crate) fn build_mechanism(
    mechanism: DomainHistogramMechanism,
    setting: &DomainSetting,
    seed: u64,
) -> Result<DomainMechanism> {
    calibrate_with(mechanism, setting, seed, Simulated).map_err(|e| match mechanism {
        DomainHistogramMechanism::GhaziCountMin => anyhow!(
            "{e}; fewer hash rows need fewer users: raise --failure-probability (now {}) or \
             use a smaller domain",
            setting.beta
        ),
        _ => e.into(),
    })
}

/// Refuses `--failure-probability` for a mechanism other than Count-Min.
pub(crate) fn check_failure_probability(
    args: &DomainArgs,
    mechanism: DomainHistogramMechanism,
) -> Result<()> {
    if args.failure_probability.is_some() && mechanism != DomainHistogramMechanism::GhaziCountMin {
        bail!("--failure-probability applies to --mechanism ghazi-count-min only");
    }
    Ok(())
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
    format: Option<Format>,
    rows_as_clients: bool,
    map: DomainMap,
    seed: u64,
) -> Result<(Stage, Vec<u64>, u64, String)> {
    Ok(match &input.input {
        Some(file) => {
            let format = stream_format(file, format, rows_as_clients, seed);
            let stage = Stage::start(format!("counting the clients of {}", file.display()));
            let counted = DomainCounts::from_file(file, format, map, &stage.bytes_read())?;
            let (clients, description) = (counted.clients(), counted.description().to_owned());
            (stage, counted.counts().to_vec(), clients, description)
        }
        None => {
            let stage = Stage::start("loading the population");
            let population = load_population(input, format, rows_as_clients, seed)?;
            let items = map.apply(&population)?;
            let clients = population.len() as u64;
            let description = population.description().to_owned();
            (stage, items.true_counts().to_vec(), clients, description)
        }
    })
}

/// `tally histogram --mechanism M` for `mechanism`, a mechanism over a public domain.
pub(crate) fn run(args: &HistogramArgs, mechanism: DomainHistogramMechanism) -> Result<()> {
    if args.release.sampling_rate.is_some() || args.release.threshold.is_some() {
        bail!("--sampling-rate and --threshold apply to --mechanism sample-threshold only");
    }
    let map = domain_map(&args.domain, mechanism.name())?;

    let seed = args.release.seed_or_random();
    let (stage, truth, clients, description) =
        domain_counts(&args.input, args.format, args.rows_as_clients, map, seed)?;
    check_failure_probability(&args.domain, mechanism)?;
    let setting = domain_setting(
        &args.domain,
        map,
        clients,
        &args.privacy,
        args.release.delta,
    );
    let built = build_mechanism(mechanism, &setting, seed)?;
    let mechanism = built.describe();
    stage.next(format!(
        "running {} over {clients} clients",
        mechanism.name()
    ));
    let mut estimates = run_domain_histogram(&built, &truth, seed);
    drop(stage);
    if args.clamp {
        for e in &mut estimates {
            *e = e.max(0.0);
        }
    }

    let guarantee = mechanism.guarantee();
    let collusion = mechanism.collusion(args.release.colluding_fraction)?;
    let published = GuaranteeBody::with_collusion(&guarantee, collusion.as_ref());
    let local = mechanism.local_guarantee();
    let cost = mechanism.message_cost();
    let mean_absolute_error = estimates
        .iter()
        .zip(&truth)
        .map(|(e, &t)| (e - t as f64).abs())
        .sum::<f64>()
        / f64::from(map.size());
    // The elements by decreasing estimate, for the table and --top.
    let mut order: Vec<u32> = (0..map.size()).collect();
    order.sort_by(|&a, &b| estimates[b as usize].total_cmp(&estimates[a as usize]));
    let warnings: Vec<String> = delta_warning(guarantee.delta, clients)
        .into_iter()
        .collect();
    print_warning_lines(&warnings);
    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });

    if args.privacy.json {
        let truth = args.truth.then_some(truth.as_slice());
        let items = if args.top.is_some() {
            order
                .iter()
                .take(shown)
                .map(|&x| element_json(x, &estimates, truth))
                .collect()
        } else {
            (0..map.size())
                .map(|x| element_json(x, &estimates, truth))
                .collect()
        };
        print_serialized(&DomainHistogramRelease {
            mechanism: mechanism.name().to_owned(),
            model: guarantee.model.name().to_owned(),
            guarantee: published,
            local_guarantee: local.as_ref().map(Into::into),
            local_epsilon: local.as_ref().map(|g| g.epsilon),
            target_delta: args.release.delta,
            domain: DomainBody {
                size: map.size(),
                mapping: map.to_string(),
            },
            messages_per_client: cost.map(|c| c.messages_per_client),
            bits_per_message: cost.map(|c| c.bits_per_message),
            clamped: args.clamp,
            input: description,
            clients,
            items,
            seed: args.release.seed,
            mean_absolute_error: args.truth.then_some(mean_absolute_error),
            warnings,
        })?;
        return Ok(());
    }
    let mut fields = vec![
        ("input", description),
        ("domain", map.to_string()),
        ("guarantee", guarantee_body_line(&published)),
    ];
    if let Some(local) = local.as_ref().filter(|local| **local != guarantee) {
        fields.push(("local guarantee", guarantee_line(local)));
    }
    if let Some(cost) = cost {
        fields.push((
            "messages",
            format!(
                "{:.1} per client, {} bits each",
                cost.messages_per_client, cost.bits_per_message
            ),
        ));
    }
    if args.truth {
        fields.push((
            "mean absolute error",
            format!("{mean_absolute_error:.2} per element"),
        ));
    }
    fields.push(("seed", args.release.seed_description()));
    print_fields(&format!("{} histogram", mechanism.name()), &fields)?;
    let rows: Vec<_> = order
        .iter()
        .map(|&x| (x.to_string(), None, Some(estimates[x as usize])))
        .collect();
    print_items(&rows, shown)?;
    Ok(())
}

/// One domain element's estimate (and, with `truth`, its true count).
fn element_json(element: u32, estimates: &[f64], truth: Option<&[u64]>) -> DomainElementBody {
    DomainElementBody {
        item: element,
        estimate: estimates[element as usize],
        true_count: truth.map(|truth| truth[element as usize]),
    }
}
