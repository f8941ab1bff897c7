//! The federated runtime from the command line: `serve`, `task`, `ledger`.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::Method as SelectionMethod;
use tally_client::Client;
use tally_messages::{
    DomainHistogramMechanism, ErrorCode, HeavyHittersAlgorithm,
    HistogramMechanism as WireMechanism, LedgerBalance, PROTOCOL_VERSION, PrivacyTarget,
    QuantileMethod, RoundPolicy, SegmentRule, TaskInfo, TaskKind, TaskResult, TaskSpec, TaskState,
};
use tally_protocol::definition;
use tally_protocol::shown::{Rounding, delta_number, number};
use tally_sim::Population;
use tally_sim::values_release::DEFAULT_QUANTILES;

use crate::cli::{
    HistogramMechanism, ListenerArgs, Method, RelayArgs, SamplingArg, SegmentArg, ServeArgs,
    ServerArgs, ServerQueryArgs, TaskAlgorithm, TaskCommand, TaskCreateArgs, TaskIdArgs,
    TaskResultArgs,
};
use crate::federated_options::{DEFAULT_LEVELS, GivenOption, PREFIX_OPTIONS, refuse_options};
use crate::output::{
    guarantee_body_line, print_fields, print_heavy_hitters_release, print_histogram_release,
    print_serialized,
};
use crate::quantiles::check_quantiles;
use crate::{federated_domain, federated_range_tree};

/// Rows shown in a result's table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

/// A tokio runtime for one command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `tally serve`.
pub(crate) fn serve(args: &ServeArgs) -> Result<()> {
    init_logging();
    let config = tally_server::ServeConfig {
        listen: args.listen,
        metrics_listen: args.metrics_listen,
        limits: limits(&args.listener),
        tls: tls(&args.listener)?,
        insecure_http: args.listener.insecure_http,
        db: args.db.clone(),
        console_sessions: tally_server::ConsoleSessions {
            idle_timeout: Duration::from_secs(args.console_idle_timeout),
            lifetime: Duration::from_secs(args.console_session_lifetime),
        },
        replication: args.replicas.replication(),
    };
    runtime()?
        .block_on(tally_server::serve(config))
        .with_context(|| format!("the server on {} stopped", args.listen))
}

/// `tally relay`.
pub(crate) fn relay(args: &RelayArgs) -> Result<()> {
    init_logging();
    let aggregator = connect(
        &args.aggregator,
        args.aggregator_ca_cert.as_deref(),
        Some(&args.aggregator_token),
    )?;
    let config = tally_relay::RelayConfig {
        listen: args.listen,
        limits: limits(&args.listener),
        tls: tls(&args.listener)?,
        insecure_http: args.listener.insecure_http,
        db: args.db.clone(),
        options: tally_relay::RelayOptions {
            forward_margin: Duration::from_secs(args.forward_margin),
            cohort_pool: args.cohort_pool,
            max_per_credential: args.max_per_credential,
            replication: args.replicas.replication(),
            ..tally_relay::RelayOptions::new(aggregator)
        },
    };
    runtime()?
        .block_on(tally_relay::serve(config))
        .with_context(|| format!("the relay on {} stopped", args.listen))
}

/// Logs on stderr at the level RUST_LOG sets (info by default).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .init();
}

/// A service's bounds on connections and requests.
fn limits(args: &ListenerArgs) -> tally_server::Limits {
    tally_server::Limits {
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        max_connections: args.max_connections,
        requests_per_second: args.rate_limit,
        ..tally_server::Limits::default()
    }
}

/// A service's TLS certificate and key, if given.
fn tls(args: &ListenerArgs) -> Result<Option<tally_server::Tls>> {
    Ok(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tally_server::Tls::from_pem_files(cert, key)?),
        _ => None,
    })
}

/// `tally task ...`.
pub(crate) fn task(command: &TaskCommand) -> Result<()> {
    match command {
        TaskCommand::Create(args) => create(args),
        TaskCommand::List(args) => list(args),
        TaskCommand::Status(args) => status(args),
        TaskCommand::Result(args) => result(args),
        TaskCommand::Cancel(args) => cancel(args),
    }
}

/// A client of `--server`, sending `--token` when given.
pub(crate) fn client(server: &ServerArgs) -> Result<Client> {
    connect(
        &server.server,
        server.ca_cert.as_deref(),
        server.token.as_deref(),
    )
}

/// A client of the server at `url`, trusting only the CA certificates in `ca_cert` when
/// given, and sending `token` when given.
pub(crate) fn connect(url: &str, ca_cert: Option<&Path>, token: Option<&str>) -> Result<Client> {
    let client = match ca_cert {
        Some(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("cannot read the CA certificate {}", path.display()))?;
            Client::with_ca_cert(url, &pem)
                .with_context(|| format!("the CA certificate {}", path.display()))?
        }
        None => Client::new(url)?,
    };
    Ok(match token {
        Some(token) => client.with_token(token),
        None => client,
    })
}

fn create(args: &TaskCreateArgs) -> Result<()> {
    let spec = task_spec(args)?;
    let client = client(&args.server)?;
    let info = runtime()?.block_on(client.create_task(&spec))?;
    if args.privacy.json {
        return print_serialized(&info);
    }
    if args.id_only {
        println!("{}", info.id);
        return Ok(());
    }
    print_task(&info, "task created")
}

/// The task the arguments describe.
fn task_spec(args: &TaskCreateArgs) -> Result<TaskSpec> {
    let kind = match &args.kind.kind_json {
        Some(source) => kind_of_json(source)?,
        None => kind_of_options(args)?,
    };
    let (population, expected_population) = match &args.population.dataset {
        Some(name) => {
            let data = Population::dataset(name)?;
            (name.clone(), data.len() as u64)
        }
        None => (
            // Unwrap safety: clap requires --population with --expected-population when
            // --dataset is absent.
            args.population.population.clone().expect("--population"),
            args.population
                .expected_population
                .expect("--expected-population"),
        ),
    };
    let min_cohort = args
        .min_cohort
        .unwrap_or_else(|| definition(&kind).default_min_cohort(expected_population));
    Ok(TaskSpec {
        version: PROTOCOL_VERSION,
        population,
        expected_population,
        privacy: PrivacyTarget {
            epsilon: args.privacy.target.epsilon,
            delta: args.privacy.target.delta(),
            neighbours: args.privacy.neighbours.into(),
            analysis: args.privacy.analysis.method.into(),
        },
        kind,
        rounds: RoundPolicy {
            min_cohort,
            cohort_target: args.cohort_target,
            deadline_secs: args.deadline_secs,
            max_attempts: args.max_attempts,
            max_report_bytes: args.max_report_bytes,
        },
        sampling: args.sampling.into(),
    })
}

/// The task kind the options describe.
fn kind_of_options(args: &TaskCreateArgs) -> Result<TaskKind> {
    // Named in the spec (and so in `task create --json`), as the command line resolves it.
    let composition = Some(args.composition.of_rounds(args.privacy.neighbours.into()));
    if args.beam.is_some() && args.kind.algorithm != Some(TaskAlgorithm::Triehh) {
        bail!("--beam applies to --algorithm triehh only");
    }
    if args.lo.is_some() && args.kind.algorithm != Some(TaskAlgorithm::Range) {
        bail!("--lo and --hi apply to --algorithm range only");
    }
    let domain_mechanism = match args.kind.mechanism {
        Some(HistogramMechanism::Domain(mechanism)) => Some(mechanism),
        _ => None,
    };
    if args.domain_bits.is_some() && args.kind.algorithm != Some(TaskAlgorithm::CountMinPrefixTree)
    {
        bail!("--domain-bits applies to --algorithm count-min-prefix-tree only");
    }
    if domain_mechanism.is_none() {
        federated_domain::refuse_domain(args, "a task over no public domain")?;
    }
    if args.failure_probability.is_some()
        && args.kind.algorithm != Some(TaskAlgorithm::CountMinPrefixTree)
        && args.kind.mechanism
            != Some(HistogramMechanism::Domain(
                DomainHistogramMechanism::GhaziCountMin,
            ))
    {
        bail!("--failure-probability applies to --mechanism ghazi-count-min only");
    }
    if let Some(k) = args.max_items_per_client {
        refuse_items_per_client(args, k)?;
    }
    Ok(match (args.kind.mechanism, args.kind.algorithm) {
        (
            mechanism,
            Some(algorithm @ (TaskAlgorithm::Range | TaskAlgorithm::HierarchicalQuantiles)),
        ) if mechanism.is_some_and(|m| m != HistogramMechanism::SampleThreshold) => {
            federated_range_tree::task_kind(args, mechanism, algorithm)?
        }
        (Some(mechanism), Some(_)) => bail!(
            "--mechanism {} with --algorithm: only range and hierarchical-quantiles take a \
             mechanism (sample-threshold, ghazi-hadamard or ghazi-count-min)",
            mechanism.name()
        ),
        (Some(HistogramMechanism::Domain(mechanism)), None) => {
            if args.failure_probability.is_some() {
                bail!(
                    "--failure-probability applies to --algorithm range|hierarchical-quantiles \
                     --mechanism ghazi-count-min only"
                );
            }
            refuse_options(args, &MULTI_ROUND_OPTIONS, "a domain histogram")?;
            if args.round.sampling_rate.is_some() || args.round.threshold.is_some() {
                bail!("--sampling-rate and --threshold apply to --mechanism sample-threshold only");
            }
            federated_domain::task_kind(args, mechanism)?
        }
        (Some(HistogramMechanism::Selection(method)), None) => selection_kind(args, method)?,
        (Some(HistogramMechanism::SampleThreshold), None) => {
            refuse_options(args, &MULTI_ROUND_OPTIONS, "a one-round histogram")?;
            TaskKind::Histogram {
                mechanism: WireMechanism::SampleThreshold,
                sampling_rate: args.round.sampling_rate,
                threshold: args.round.threshold,
            }
        }
        (None, Some(TaskAlgorithm::TrieHhPlus)) => {
            refuse_options(args, &QUANTILE_OPTIONS, "--algorithm triehh++")?;
            TaskKind::HeavyHitters {
                algorithm: HeavyHittersAlgorithm::TrieHhPlus,
                levels: args.levels.unwrap_or(DEFAULT_LEVELS),
                segment: prefix_segment(args)?,
                restricted: !args.unrestricted,
                composition,
                sampling_rate: args.round.sampling_rate,
                threshold: args.round.threshold,
            }
        }
        (None, Some(algorithm @ TaskAlgorithm::HierarchicalQuantiles)) => {
            refuse_options(args, &PREFIX_OPTIONS, "--algorithm hierarchical-quantiles")?;
            quantile_kind(args, algorithm, composition)?
        }
        (None, Some(algorithm @ TaskAlgorithm::BinarySearchQuantiles)) => {
            refuse_options(args, &PREFIX_OPTIONS, "--algorithm binary-search-quantiles")?;
            refuse_options(args, &TREE_OPTIONS, "--algorithm binary-search-quantiles")?;
            quantile_kind(args, algorithm, composition)?
        }
        (None, Some(TaskAlgorithm::SingleRound)) => {
            refuse_options(args, &MULTI_ROUND_OPTIONS, "--algorithm single-round")?;
            TaskKind::SingleRound {
                sampling_rate: args.round.sampling_rate,
                threshold: args.round.threshold,
            }
        }
        (None, Some(TaskAlgorithm::Range)) => range_kind(args, composition)?,
        (None, Some(TaskAlgorithm::Triehh)) => triehh_kind(args)?,
        (None, Some(TaskAlgorithm::OptPrefixTree)) => opt_prefix_tree_kind(args)?,
        (None, Some(TaskAlgorithm::CountMinPrefixTree)) => {
            refuse_options(
                args,
                &MULTI_ROUND_OPTIONS,
                "--algorithm count-min-prefix-tree",
            )?;
            crate::count_min_prefix_tree::task_kind(args)?
        }
        // Unwrap safety: clap requires one of the three, and the caller reads --kind-json.
        (None, None) => unreachable!("clap requires --mechanism, --algorithm or --kind-json"),
    })
}

/// The task kind in the JSON file `source` (`-`: standard input), spelt as a spec's `kind`.
fn kind_of_json(source: &Path) -> Result<TaskKind> {
    let (text, name) = if source == Path::new("-") {
        let text = io::read_to_string(io::stdin()).context("cannot read standard input")?;
        (text, "standard input".to_owned())
    } else {
        let text = std::fs::read_to_string(source)
            .with_context(|| format!("cannot read {}", source.display()))?;
        (text, source.display().to_string())
    };
    serde_json::from_str(&text).with_context(|| {
        format!(
            "--kind-json {name}: not a task kind (the `kind` of a task's spec, as `tally task \
             status ID --json` shows it)"
        )
    })
}

/// The options of the hierarchical quantiles' tree.
const TREE_OPTIONS: [GivenOption; 2] = [
    ("--branching", |a| a.branching.is_some()),
    ("--consistent", |a| a.consistent),
];

/// The options of every quantile task.
const QUANTILE_OPTIONS: [GivenOption; 5] = [
    ("--quantiles", |a| a.quantiles.is_some()),
    ("--min", |a| a.min.is_some()),
    ("--max", |a| a.max.is_some()),
    TREE_OPTIONS[0],
    TREE_OPTIONS[1],
];

/// The options of every multi-round task.
const MULTI_ROUND_OPTIONS: [GivenOption; 9] = [
    ("--levels", |a| a.levels.is_some()),
    ("--composition", |a| a.composition.rule.is_some()),
    PREFIX_OPTIONS[0],
    PREFIX_OPTIONS[1],
    QUANTILE_OPTIONS[0],
    QUANTILE_OPTIONS[1],
    QUANTILE_OPTIONS[2],
    QUANTILE_OPTIONS[3],
    QUANTILE_OPTIONS[4],
];

/// Refuses `--max-items-per-client k` but for a one-round histogram of the devices' items at
/// `k = 1`: a device holds one item and reports it once.
fn refuse_items_per_client(args: &TaskCreateArgs, k: u32) -> Result<()> {
    let histogram = args.kind.algorithm.is_none()
        && matches!(
            args.kind.mechanism,
            Some(HistogramMechanism::SampleThreshold | HistogramMechanism::Selection(_))
        );
    if !histogram {
        bail!(
            "--max-items-per-client applies to --mechanism sample-threshold, laplace-threshold, \
             gaussian-threshold or truncated-geometric only"
        );
    }
    if k != 1 {
        bail!(
            "--max-items-per-client {k}: a device of a federated task holds one item and reports \
             it once, so each contributes at most 1 item; to bound clients of several items to \
             {k} each, run the offline command over their rows (`tally histogram --mechanism \
             ... --max-items-per-client {k} --input FILE`)"
        );
    }
    Ok(())
}

/// A partition-selection histogram task from the arguments: every device reports its item and
/// the aggregator calibrates the noise and threshold from (ε, δ), for one item per device, as
/// `tally histogram --mechanism METHOD` does.
fn selection_kind(args: &TaskCreateArgs, method: SelectionMethod) -> Result<TaskKind> {
    refuse_options(args, &MULTI_ROUND_OPTIONS, "a one-round histogram")?;
    if args.round.sampling_rate.is_some() || args.round.threshold.is_some() {
        bail!(
            "--sampling-rate and --threshold set sample-threshold's parameters; --mechanism \
             {method} calibrates its noise and threshold from --epsilon and --delta: drop them"
        );
    }
    if args.sampling == SamplingArg::Device {
        bail!(
            "--sampling device: --mechanism {method} flips no sampling coin (every device \
             reports its item and the aggregator adds the noise): drop --sampling"
        );
    }
    if !matches!(args.privacy.analysis.method, Method::Tight) {
        bail!(
            "--method chooses the analysis of one-item sample-and-threshold; --mechanism \
             {method} has its own: drop --method"
        );
    }
    Ok(TaskKind::Histogram {
        mechanism: WireMechanism::of_selection(method),
        sampling_rate: None,
        threshold: None,
    })
}

/// A TrieHH task from the arguments: the offline command's options (`θ` and `m` are
/// calibrated by the server from the privacy target).
fn triehh_kind(args: &TaskCreateArgs) -> Result<TaskKind> {
    refuse_options(args, &QUANTILE_OPTIONS, "--algorithm triehh")?;
    refuse_options(args, &PREFIX_OPTIONS[1..], "--algorithm triehh")?;
    if args.round.sampling_rate.is_some()
        || args.round.threshold.is_some()
        || args.composition.rule.is_some()
    {
        bail!(
            "TrieHH calibrates its own threshold and batch size from (ε, δ) and composes its \
             rounds by its theorem: --sampling-rate, --threshold and --composition do not apply"
        );
    }
    if Neighbours::from(args.privacy.neighbours) != Neighbours::ReplaceOne {
        bail!("TrieHH's guarantee is for replace-one neighbours: give --neighbours replace-one");
    }
    Ok(TaskKind::Triehh {
        levels: args.levels.unwrap_or(DEFAULT_LEVELS),
        segment: prefix_segment(args)?,
        beam: args.beam,
    })
}

/// The characters per level of a prefix-tree task: `--segment`, a number [default: 1].
fn prefix_segment(args: &TaskCreateArgs) -> Result<u32> {
    match args.segment {
        None => Ok(1),
        Some(SegmentArg::Length(n) | SegmentArg::Policy(SegmentRule::Fixed(n))) => {
            u32::try_from(n).with_context(|| format!("--segment {n}: too long"))
        }
        Some(SegmentArg::Policy(policy)) => {
            bail!("--segment {policy} is an opt-prefix-tree policy; give a number of characters")
        }
    }
}

/// An OptPrefixTree task from the arguments: the offline command's options, `ε₀` solved by
/// the server for `--min-cohort` reports per iteration.
fn opt_prefix_tree_kind(args: &TaskCreateArgs) -> Result<TaskKind> {
    let kind = "--algorithm opt-prefix-tree";
    refuse_options(args, &QUANTILE_OPTIONS, kind)?;
    refuse_options(args, &PREFIX_OPTIONS[1..], kind)?;
    refuse_options(args, &MULTI_ROUND_OPTIONS[..1], kind)?;
    if args.round.sampling_rate.is_some() || args.round.threshold.is_some() {
        bail!("--sampling-rate and --threshold apply to the sample-and-threshold kinds");
    }
    if Neighbours::from(args.privacy.neighbours) != Neighbours::ReplaceOne {
        bail!(
            "OptPrefixTree's guarantee is for replace-one neighbours: give --neighbours \
             replace-one"
        );
    }
    let options = crate::heavy_hitters::opt_prefix_tree_options(
        &args.opt,
        args.segment,
        args.composition.rule.map(Into::into),
    )?;
    Ok(TaskKind::OptPrefixTree(options))
}

/// A quantile task of `algorithm` from the arguments.
fn quantile_kind(
    args: &TaskCreateArgs,
    algorithm: TaskAlgorithm,
    composition: Option<Composition>,
) -> Result<TaskKind> {
    let quantiles = args
        .quantiles
        .clone()
        .unwrap_or_else(|| DEFAULT_QUANTILES.to_vec());
    check_quantiles(&quantiles)?;
    let method = match algorithm {
        TaskAlgorithm::BinarySearchQuantiles => QuantileMethod::BinarySearch,
        _ => QuantileMethod::Hierarchical,
    };
    Ok(TaskKind::Quantiles {
        method,
        quantiles,
        branching: args.branching,
        levels: args.levels.unwrap_or(DEFAULT_LEVELS),
        consistent: args.consistent,
        composition,
        range: args.min.zip(args.max).map(|(min, max)| [min, max]),
        sampling_rate: args.round.sampling_rate,
        threshold: args.round.threshold,
    })
}

/// A range-count task from the arguments: the options of `tally range`.
fn range_kind(args: &TaskCreateArgs, composition: Option<Composition>) -> Result<TaskKind> {
    refuse_options(args, &PREFIX_OPTIONS, "--algorithm range")?;
    refuse_options(args, &QUANTILE_OPTIONS[..1], "--algorithm range")?;
    let (Some(lo), Some(hi)) = (args.lo, args.hi) else {
        bail!("--algorithm range counts the devices in [--lo, --hi): give both");
    };
    let range = match (args.min, args.max) {
        (Some(min), Some(max)) => Some(tally_core::quantiles::ValueRange::new(min, max)?),
        _ => None,
    };
    tally_sim::values_release::check_range(range, lo, hi)?;
    Ok(TaskKind::Range {
        lo,
        hi,
        branching: args.branching,
        levels: args.levels.unwrap_or(DEFAULT_LEVELS),
        consistent: args.consistent,
        composition,
        range: args.min.zip(args.max).map(|(min, max)| [min, max]),
        sampling_rate: args.round.sampling_rate,
        threshold: args.round.threshold,
    })
}

fn list(args: &ServerQueryArgs) -> Result<()> {
    let client = client(&args.server)?;
    let tasks = runtime()?.block_on(client.tasks())?;
    if args.json {
        return print_serialized(&tasks);
    }
    let mut out = io::stdout().lock();
    if tasks.is_empty() {
        writeln!(out, "no tasks")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<20} {:<10} {:<18} {:<20} {:>7} {:>10} {:>10}",
        "id", "state", "kind", "population", "rounds", "ε", "δ"
    )?;
    for task in &tasks {
        writeln!(
            out,
            "{:<20} {:<10} {:<18} {:<20} {:>7} {:>10.4} {:>10.3e}",
            task.id,
            task.state.name(),
            definition(&task.spec.kind).name(),
            task.spec.population,
            format!(
                "{}/{}",
                task.rounds_released,
                definition(&task.spec.kind).rounds()
            ),
            task.guarantee.epsilon,
            task.guarantee.delta,
        )?;
    }
    Ok(())
}

fn status(args: &TaskIdArgs) -> Result<()> {
    let client = client(&args.server)?;
    let info = runtime()?.block_on(client.task(&args.id))?;
    if args.json {
        return print_serialized(&info);
    }
    print_task(&info, "task")
}

fn cancel(args: &TaskIdArgs) -> Result<()> {
    let client = client(&args.server)?;
    let info = runtime()?.block_on(client.cancel_task(&args.id))?;
    if args.json {
        return print_serialized(&info);
    }
    print_task(&info, "task cancelled")
}

fn result(args: &TaskResultArgs) -> Result<()> {
    let client = client(&args.server)?;
    let rt = runtime()?;
    let body = match rt.block_on(client.result_text(&args.id)) {
        Ok(body) => body,
        Err(error) if error.code() == Some(ErrorCode::NoResult) => {
            let info = rt.block_on(client.task(&args.id))?;
            bail!("{}", no_result_message(&info));
        }
        Err(error) => return Err(error.into()),
    };
    if args.json {
        // The stored document byte for byte, then a newline like every JSON output.
        let mut out = io::stdout().lock();
        out.write_all(body.as_bytes())?;
        if !body.ends_with('\n') {
            writeln!(out)?;
        }
        return Ok(());
    }
    let release: TaskResult = serde_json::from_str(&body)
        .with_context(|| format!("the result of task {} is not a release document", args.id))?;
    let shown = args.top.unwrap_or(DEFAULT_TABLE_ROWS);
    match release {
        TaskResult::Histogram(release) => print_histogram_release(
            &format!("{} histogram", release.mechanism),
            &release,
            &[("task", args.id.clone())],
            shown,
        )?,
        TaskResult::HeavyHitters(release) => {
            print_heavy_hitters_release(&release, &[("task", args.id.clone())], shown)?
        }
        TaskResult::Quantiles(release) => {
            crate::values::print_quantiles_release(&release, &[("task", args.id.clone())])?;
        }
        TaskResult::DomainHistogram(release) => {
            federated_domain::print_release(&release, &args.id, shown)?;
        }
        TaskResult::Range(release) => {
            let guarantee = guarantee_body_line(&release.guarantee);
            crate::quantiles::print_range(&release, &guarantee, &[("task", args.id.clone())])?;
        }
        TaskResult::TreeRange(release) => {
            let guarantee = guarantee_body_line(&release.guarantee);
            crate::shuffle_values::print_range(&release, &guarantee, ("task", args.id.clone()))?;
        }
    }
    Ok(())
}

/// Why a task has no result to show.
fn no_result_message(info: &TaskInfo) -> String {
    match info.state {
        TaskState::Running => format!(
            "task {} is running ({} of {} rounds released); its result is not released yet",
            info.id,
            info.rounds_released,
            definition(&info.spec.kind).rounds()
        ),
        TaskState::Finished => format!("task {} is finished but has no stored result", info.id),
        TaskState::Cancelled => format!("task {} was cancelled; it has no result", info.id),
        TaskState::Failed => format!(
            "task {} failed{}; it has no result",
            info.id,
            info.error
                .as_deref()
                .map_or_else(String::new, |e| format!(": {e}"))
        ),
    }
}

/// `tally ledger`.
pub(crate) fn ledger(args: &ServerQueryArgs) -> Result<()> {
    let client = client(&args.server)?;
    let balances: Vec<LedgerBalance> = runtime()?.block_on(client.ledger())?;
    if args.json {
        return print_serialized(&balances);
    }
    let mut out = io::stdout().lock();
    if balances.is_empty() {
        writeln!(
            out,
            "no population yet (an operator creates them: tally population create)"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<20} {:>11} {:>15} {:>10} {:>24} {:>24} {:>24} {:>24} {:>28}",
        "population",
        "neighbours",
        "device sampling",
        "colluding",
        "budget (ε, δ)",
        "spent (ε, δ)",
        "reserved (ε, δ)",
        "remaining (ε, δ)",
        "declared pair: rounds used",
    )?;
    for balance in &balances {
        // Every amount a bound on privacy loss is rounded up; what is left, down.
        let pair = |b: &tally_messages::Budget, rounding: Rounding| {
            format!(
                "({}, {})",
                number(b.epsilon, rounding),
                delta_number(b.delta, rounding)
            )
        };
        writeln!(
            out,
            "{:<20} {:>11} {:>15} {:>10} {:>24} {:>24} {:>24} {:>24} {:>28}",
            balance.population,
            balance.neighbours.name(),
            if balance.allow_device_sampling {
                "allowed"
            } else {
                "not allowed"
            },
            balance.colluding_fraction,
            pair(&balance.budget, Rounding::Up),
            pair(&balance.spent, Rounding::Up),
            pair(&balance.reserved, Rounding::Up),
            pair(&balance.remaining, Rounding::Down),
            balance.task_bound.map_or_else(
                || "none".to_owned(),
                |bound| format!(
                    "(≤ {}, ≥ {}): {} of {}",
                    bound.bound.sampling_rate,
                    bound.bound.threshold,
                    bound.rounds_used,
                    bound.bound.rounds
                )
            ),
        )?;
    }
    writeln!(
        out,
        "every amount is under the population's neighbours, to four significant digits (rounded \
         up, and remaining down): a task's charge is its (ε, δ) under them; spent and reserved add the charges; remaining is what the server enforces for \
         tasks outside the declared pair (p_s ≤ P, τ ≥ T): the budget less the pair's share, less \
         their (ε, δ) by basic composition; tasks within the pair take the pair's rounds; \
         colluding is the fraction of devices a population's shuffle tasks are charged against \
         (0: the budget assumes honest devices)"
    )?;
    Ok(())
}

/// A task's fields, for people.
fn print_task(info: &TaskInfo, title: &str) -> Result<()> {
    let spec = &info.spec;
    let kind = definition(&spec.kind);
    let mut rows = vec![
        ("id", info.id.clone()),
        ("state", info.state.name().to_owned()),
        ("kind", kind.description(spec.privacy.neighbours)),
        (
            "population",
            format!(
                "{} ({} devices expected)",
                spec.population, spec.expected_population
            ),
        ),
        ("guarantee", guarantee_body_line(&info.guarantee)),
        (
            "rounds released",
            format!("{} of {}", info.rounds_released, kind.rounds()),
        ),
        (
            "round policy",
            format!(
                "minimum cohort {}, cohort target {}, deadline {} s, {} attempts",
                spec.rounds.min_cohort,
                spec.rounds
                    .cohort_target
                    .unwrap_or(spec.expected_population),
                spec.rounds.deadline_secs,
                spec.rounds.max_attempts
            ),
        ),
        ("sampling", kind.sampling(spec.sampling)),
    ];
    if let Some(trust) = kind.trust() {
        rows.push(("trust", trust.to_owned()));
    }
    if let Some(round) = &info.open_round {
        rows.push(("open round", round.clone()));
    }
    if let Some(error) = &info.error {
        rows.push(("error", error.clone()));
    }
    print_fields(title, &rows)?;
    Ok(())
}
