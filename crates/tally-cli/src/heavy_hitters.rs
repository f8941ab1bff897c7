//! `tally heavy-hitters`: the frequent items of the input.

use std::collections::HashSet;

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::solve_local_epsilon;
use tally_accounting::sample_threshold::Analysis;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::heavy_hitters::{
    Encoding, OptPrefixTree, OptPrefixTreeConfig, SegmentPolicy, Selection, TERMINATOR, TrieHh,
    TrieHhConfig,
};
use tally_core::histogram::SampleThreshold;
use tally_core::ldp::UnaryVariant;
#[cfg(feature = "federated")]
use tally_messages::OptPrefixTreeOptions;
use tally_messages::{
    CollusionBody, GuaranteeBody, HeavyHittersRelease, ReleasedItem, SegmentRule, TrieNodeBody,
};
use tally_protocol::document;
use tally_protocol::opt_prefix_tree;
use tally_sim::triehh_plus_release::{TriePlusSettings, triehh_plus_counted, triehh_plus_keyed};
use tally_sim::{
    AggregationPath, CountedPopulation, EstimateErrors, ExecutionPath, MultiPopulation, Population,
    RedditLikeSpec, english_huffman_code, prefix_estimate_errors, retrieval_scores,
    run_sample_threshold, run_triehh_counted, top_k,
};

use crate::cli::{
    AggregationArg, Algorithm, EncodingArg, Format, HeavyHittersArgs, InputArgs, LevelMechanismArg,
    OptPrefixTreeArgs, RandomizerArg, SegmentArg, SelectionArg,
};
use crate::count_min_prefix_tree;
use crate::input::load_keyed_population;
use crate::input::{load_population, stream_format};
use crate::output::{
    Stage, guarantee_body_line, guarantee_line, parameters_line, print_fields,
    print_heavy_hitters_release, print_items, print_json, print_warning_lines, print_warnings,
};

/// Items scored against the truth when `--top` is not given.
const DEFAULT_TRUTH_K: usize = 20;
/// Rows shown in the human-readable table when `--top` is not given.
const DEFAULT_TABLE_ROWS: usize = 20;

pub(crate) fn run(args: &HeavyHittersArgs) -> Result<()> {
    let analysis = Analysis::from(args.privacy.analysis.method);
    let neighbours = Neighbours::from(args.privacy.neighbours);
    let target = args.release.round.target();
    let seed = args.release.seed_or_random();
    let path = ExecutionPath::default();
    let segment = segment_length(args)?;
    anyhow::ensure!(
        !args.sampling_key.given() || args.algorithm == Algorithm::TrieHhPlus,
        "--sampling-key applies to --algorithm triehh++ only"
    );
    anyhow::ensure!(
        args.mechanism == LevelMechanismArg::SampleThreshold
            || args.algorithm == Algorithm::TrieHhPlus,
        "--mechanism applies to --algorithm triehh++ only"
    );
    anyhow::ensure!(
        args.algorithm == Algorithm::CountMinPrefixTree
            || (args.domain_bits.is_none() && args.failure_probability.is_none()),
        "--domain-bits and --failure-probability apply to --algorithm count-min-prefix-tree only"
    );
    let (population, release) = match args.algorithm {
        Algorithm::OptPrefixTree => return opt_prefix_tree(args, seed),
        Algorithm::CountMinPrefixTree => {
            let (mut release, counts) = count_min_prefix_tree::run(args, seed)?;
            if args.truth {
                let threshold = args.release.round.threshold.unwrap_or_default();
                release.truth = Some(count_min_prefix_tree::truth_scores(
                    &release, &counts, threshold,
                ));
            }
            (None, release)
        }
        Algorithm::TrieHh => {
            anyhow::ensure!(
                args.release.round.sampling_rate.is_none()
                    && args.release.round.threshold.is_none(),
                "TrieHH calibrates its own threshold and batch size from (ε, δ); \
                 --sampling-rate and --threshold apply to triehh++ and single-round"
            );
            let (population, counted) = counted_population(args, seed)?;
            let mut config = TrieHhConfig::calibrate(
                args.privacy.target.epsilon,
                args.privacy.target.delta(),
                args.levels,
                counted.clients(),
            )?
            .with_segment(segment);
            if let Some(beam) = args.beam {
                config = config.with_beam(beam);
            }
            let task = TrieHh::new(config)?;
            let stage = Stage::start(format!(
                "growing the prefix tree over {} rounds",
                args.levels
            ));
            let output = run_triehh_counted(&counted, task, seed);
            drop(stage);
            let release =
                document::triehh(&output, counted.description().to_owned(), args.release.seed);
            (population, release)
        }
        Algorithm::SingleRound => {
            let mechanism = SampleThreshold::calibrate(
                args.privacy.target.epsilon,
                args.privacy.target.delta(),
                target,
                analysis,
                neighbours,
            )?;
            let stage = Stage::start("loading the population");
            let population = load_population(&args.input, seed)?;
            stage.next("sampling");
            let release = run_sample_threshold(&population, &mechanism, path, seed);
            drop(stage);
            let items: Vec<ReleasedItem> = release
                .items
                .iter()
                .map(|cell| ReleasedItem {
                    item: name(&population, cell.item),
                    count: Some(cell.count),
                    estimate: Some(cell.estimate),
                })
                .collect();
            let release = document::single_round(
                items,
                &mechanism,
                population.len() as u64,
                population.description().to_owned(),
                args.release.seed,
            );
            (Some(population), release)
        }
        Algorithm::TrieHhPlus => {
            let selection = args.mechanism.selection();
            let settings = TriePlusSettings {
                epsilon: args.privacy.target.epsilon,
                delta: args.privacy.target.delta(),
                levels: args.levels,
                segment,
                restricted: !args.unrestricted,
                composition: args.composition.rule.map_or_else(
                    || TriePlusSettings::default_composition(selection, neighbours),
                    Into::into,
                ),
                target,
                analysis,
                neighbours,
                selection,
            };
            if let Some(key) = args.sampling_key.key()? {
                let _stage = Stage::start("loading the rows");
                let rows = load_keyed_population(&args.input, seed)?;
                let population = if args.truth {
                    Some(load_population(&args.input, seed)?)
                } else {
                    None
                };
                let release = triehh_plus_keyed(&rows, &settings, &key, args.release.seed)?;
                (population, release)
            } else {
                let (population, counted) = counted_population(args, seed)?;
                let stage = Stage::start(format!(
                    "growing the prefix tree over {} levels",
                    args.levels
                ));
                let release = triehh_plus_counted(&counted, &settings, seed, args.release.seed)?;
                drop(stage);
                (population, release)
            }
        }
    };
    print_report(args, population.as_ref(), release)
}

/// The population's items and their counts. Without `--truth` a file is read once into its
/// items' counts and never loaded (`None`); otherwise the population is loaded too, to score
/// the release against.
fn counted_population(
    args: &HeavyHittersArgs,
    seed: u64,
) -> Result<(Option<Population>, CountedPopulation)> {
    if let Some(file) = &args.input.source.input
        && !args.truth
    {
        let stage = Stage::start(format!("counting the items of {}", file.display()));
        let format = stream_format(&args.input, file, seed);
        let counted = CountedPopulation::from_file(file, format, &stage.bytes_read())?;
        return Ok((None, counted));
    }
    let _stage = Stage::start("loading the population");
    let population = load_population(&args.input, seed)?;
    let counted = CountedPopulation::from_population(&population);
    Ok((Some(population), counted))
}

/// The prefix-tree segment of TrieHH and TrieHH++: `--segment N` or `fixed:N`, default 1.
fn segment_length(args: &HeavyHittersArgs) -> Result<usize> {
    match args.segment {
        None => Ok(1),
        Some(SegmentArg::Length(n) | SegmentArg::Policy(SegmentRule::Fixed(n))) => Ok(n),
        Some(SegmentArg::Policy(policy)) => {
            anyhow::ensure!(
                args.algorithm == Algorithm::OptPrefixTree,
                "--segment {policy} is an opt-prefix-tree policy; give a number of characters"
            );
            Ok(1)
        }
    }
}

fn name(population: &Population, id: u32) -> String {
    population
        .item_name(id)
        .map_or_else(|| id.to_string(), |n| n.into_owned())
}

/// Prints a release (all its items found) with its truth scores when asked (`population` is
/// then the loaded population): the document as JSON, or a summary and a table.
fn print_report(
    args: &HeavyHittersArgs,
    population: Option<&Population>,
    mut release: HeavyHittersRelease,
) -> Result<()> {
    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });
    let truth = population
        .filter(|_| args.truth)
        .map(|population| {
            truth_scores(
                population,
                &release.items,
                release.trie.as_deref(),
                args.top,
            )
        })
        .or(release.truth.take());
    if args.privacy.json {
        release.items.truncate(shown);
        release.truth = truth;
        print_json(&serde_json::to_value(&release)?)?;
        print_warnings(release.diagnosis.as_ref());
        return Ok(());
    }
    let truth_row = truth.as_ref().map(|truth| {
        (
            "against the truth",
            format!(
                "top {}: recall {:.3}, precision {:.3}, F1 {:.3}",
                truth["k"], truth["recall"], truth["precision"], truth["f1"]
            ),
        )
    });
    print_heavy_hitters_release(&release, truth_row.as_slice(), shown)?;
    Ok(())
}

/// Scores the found items against the population's true top `k`: recall is the share of the
/// true top `k` found at all; precision the share of the `k` largest found items that are in
/// the true top `k` (for an algorithm that releases no counts to rank by, the share of all `f`
/// found items that are in the true top `f`).
fn truth_scores(
    population: &Population,
    items: &[ReleasedItem],
    trie: Option<&[TrieNodeBody]>,
    top: Option<usize>,
) -> Value {
    let k = top.unwrap_or(DEFAULT_TRUTH_K);
    let truth = top_k(population, k);
    let truth_names: Vec<&str> = truth.iter().map(|(name, _)| name.as_str()).collect();
    // Without counts there is no top k to pick: score every found item against the true top
    // as many.
    let ranked_by_count = items.iter().all(|f| f.count.is_some());
    let precision_k = if ranked_by_count { k } else { items.len() };
    let precision_truth = top_k(population, precision_k);
    let found_top: Vec<&str> = items
        .iter()
        .take(precision_k)
        .map(|f| f.item.as_str())
        .collect();
    let ranked = retrieval_scores(found_top, precision_truth.iter().map(|(n, _)| n.as_str()));
    let all_found: HashSet<&str> = items.iter().map(|f| f.item.as_str()).collect();
    let hits = truth_names
        .iter()
        .filter(|n| all_found.contains(*n))
        .count();
    let recall = hits as f64 / truth_names.len().max(1) as f64;
    let f1 = if ranked.precision + recall > 0.0 {
        2.0 * ranked.precision * recall / (ranked.precision + recall)
    } else {
        0.0
    };
    let in_data = items
        .iter()
        .filter(|f| population.item_id(&f.item).is_some())
        .count();
    let words = items
        .iter()
        .filter_map(|f| Some((format!("{}{TERMINATOR}", f.item), f.estimate?)));
    let words: Vec<(String, f64)> = words.collect();
    let item_errors =
        prefix_estimate_errors(population, words.iter().map(|(w, e)| (w.as_str(), *e)));
    let node_errors = trie.map(|nodes| {
        prefix_estimate_errors(
            population,
            nodes
                .iter()
                .filter_map(|n| Some((n.prefix.as_str(), n.estimate?))),
        )
    });
    let errors_json = |e: EstimateErrors| {
        json!({
            "estimates": e.estimates,
            "mean_absolute_error": e.mean_absolute_error,
            "mean_relative_error": e.mean_relative_error,
        })
    };
    json!({
        "item_estimate_errors": errors_json(item_errors),
        "trie_estimate_errors": node_errors.map(errors_json),
        "k": k,
        "true_top_k_found": hits,
        "recall": recall,
        "precision": ranked.precision,
        "precision_at": precision_k,
        "f1": f1,
        "found_items_in_data": in_data,
        "true_top_k": truth.iter().map(|(name, count)| json!({"item": name, "count": count})).collect::<Vec<_>>(),
    })
}

/// Reads the users of an opt-prefix-tree run: whole multisets per `client_id` for TSV files
/// and datasets, `reddit-like:…` or a one-item generator for `--synthetic`, one data point
/// per line for line files.
pub(crate) fn load_users(input: &InputArgs, seed: u64) -> Result<MultiPopulation> {
    anyhow::ensure!(
        !input.rows_as_clients,
        "--rows-as-clients does not apply to opt-prefix-tree: each client keeps all its rows"
    );
    let (source, format) = (&input.source, input.format);
    if let Some(name) = &source.dataset {
        return Ok(MultiPopulation::dataset(name)?);
    }
    if let Some(spec) = &source.synthetic
        && spec.starts_with("reddit-like")
    {
        let spec: RedditLikeSpec = spec.parse().context("bad --synthetic")?;
        return Ok(MultiPopulation::reddit_like(&spec, seed));
    }
    if let Some(file) = &source.input
        && (matches!(format, Some(Format::Tsv))
            || (format.is_none() && {
                let name = file.to_string_lossy();
                name.ends_with(".tsv") || name.ends_with(".tsv.gz")
            }))
    {
        return Ok(MultiPopulation::from_tsv_file(file)?);
    }
    let population = load_population(input, seed)?;
    Ok(MultiPopulation::from_population(&population))
}

/// The segment policy of `--segment` (a number `S` is `fixed:S`; `max-under-cap` by default).
fn segment_policy(segment: Option<SegmentArg>) -> SegmentPolicy {
    match segment {
        None => SegmentPolicy::MaxUnderCap,
        Some(SegmentArg::Length(s)) => SegmentPolicy::Fixed(s),
        Some(SegmentArg::Policy(rule)) => opt_prefix_tree::segment_policy(rule),
    }
}

/// The public encoding `--encoding` names.
fn encoding(arg: EncodingArg) -> Encoding {
    match arg {
        EncodingArg::Huffman => Encoding::Huffman(english_huffman_code()),
        EncodingArg::Bytes => Encoding::Bytes,
    }
}

/// The words of `--deny FILE`, one per non-empty line.
fn deny_list(opt: &OptPrefixTreeArgs) -> Result<Vec<String>> {
    let Some(file) = &opt.deny else {
        return Ok(Vec::new());
    };
    Ok(std::fs::read_to_string(file)
        .with_context(|| format!("cannot read --deny {}", file.display()))?
        .lines()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect())
}

fn selection(arg: SelectionArg) -> Selection {
    match arg {
        SelectionArg::UniformSupport => Selection::UniformSupport,
        SelectionArg::Weighted => Selection::Weighted,
    }
}

fn randomizer(arg: RandomizerArg) -> UnaryVariant {
    match arg {
        RandomizerArg::Oue => UnaryVariant::Optimized,
        RandomizerArg::Sue => UnaryVariant::Symmetric,
    }
}

/// The options of a federated OptPrefixTree task (`tally task create --algorithm
/// opt-prefix-tree`): the offline command's, with the Huffman code's table and the deny
/// list's words written out, for the server to run.
#[cfg(feature = "federated")]
pub(crate) fn opt_prefix_tree_options(
    opt: &OptPrefixTreeArgs,
    segment: Option<SegmentArg>,
    composition: Option<Composition>,
) -> Result<OptPrefixTreeOptions> {
    anyhow::ensure!(
        matches!(opt.aggregation, AggregationArg::Binomial),
        "--aggregation chooses how the simulator sums reports; a federated task sums the \
         devices' own"
    );
    let count = |n: usize, name: &str| {
        u32::try_from(n).with_context(|| format!("--{name} {n}: at most {}", u32::MAX))
    };
    Ok(OptPrefixTreeOptions {
        iterations: count(opt.iterations, "iterations")?,
        runs: count(opt.runs, "runs")?,
        domain_cap: opt.domain_cap,
        fpr: opt.fpr,
        selection: opt_prefix_tree::selection_rule(selection(opt.selection)),
        randomizer: opt_prefix_tree::randomizer(randomizer(opt.randomizer)),
        encoding: opt_prefix_tree::word_encoding(&encoding(opt.encoding)),
        segment: opt_prefix_tree::segment_rule(segment_policy(segment)),
        max_length: opt.max_length.map(|m| count(m, "max-length")).transpose()?,
        deny: deny_list(opt)?,
        composition,
        unproven_fmt23: opt.unproven_fmt23,
    })
}

/// `--algorithm opt-prefix-tree`.
fn opt_prefix_tree(args: &HeavyHittersArgs, seed: u64) -> Result<()> {
    anyhow::ensure!(
        args.release.round.sampling_rate.is_none() && args.release.round.threshold.is_none(),
        "--sampling-rate and --threshold apply to triehh++ and single-round"
    );
    let opt = &args.opt;
    let stage = Stage::start("loading the users");
    let population = load_users(&args.input, seed)?;
    let users = population.len() as u64;
    let encoding = encoding(opt.encoding);
    let max_length = opt.max_length.unwrap_or(match opt.encoding {
        EncodingArg::Huffman => 96,
        EncodingArg::Bytes => 24,
    });
    let segment = segment_policy(args.segment);
    let deny = deny_list(opt)?;
    stage.next("solving the local ε₀");
    let total_iterations = opt.iterations * opt.runs;
    let (epsilon, delta) = (args.privacy.target.epsilon, args.privacy.target.delta());
    // FMT21's clone factor e^−ε₀ holds for every ε₀-LDP randomizer, OUE and SUE included;
    // FMT23's premise fails for them (see docs/privacy/opt-prefix-tree.md).
    let bound = if opt.unproven_fmt23 {
        ShuffleBound::Fmt23
    } else {
        ShuffleBound::Fmt21
    };
    // By default the iterations compose tightly: the T-fold composition of the clone pair's
    // privacy-loss distribution (docs/privacy/opt-prefix-tree.md).
    let composition = args.composition.rule.map_or(Composition::Tight, Into::into);
    let plan = solve_local_epsilon(epsilon, delta, total_iterations, users, composition, bound)?;
    let (selection, randomizer) = (selection(opt.selection), randomizer(opt.randomizer));
    let path = match opt.aggregation {
        AggregationArg::Binomial => AggregationPath::Binomial,
        AggregationArg::PerReport => AggregationPath::PerReport,
    };
    let encoding_name = encoding.name();
    let task = OptPrefixTree::new(OptPrefixTreeConfig {
        iterations: opt.iterations,
        runs: opt.runs,
        domain_cap: opt.domain_cap,
        fpr: opt.fpr,
        selection,
        randomizer,
        segment,
        encoding,
        max_length,
        deny: deny.clone(),
        plan,
    })?;
    stage.next(format!(
        "{total_iterations} iteration(s) over {users} users"
    ));
    let output = population.run_opt_prefix_tree(task, path, seed);
    drop(stage);
    let words: Vec<&str> = output.words.iter().map(|w| w.word.as_str()).collect();
    let captured_mass = population.captured_mass(words.iter().copied());
    let captured_user_mass = population.captured_user_mass(words.iter().copied());
    let false_positives = population.false_positives(words.iter().copied());
    let mut document = document::opt_prefix_tree(
        &output,
        &document::OptPrefixTreeParameters {
            iterations: opt.iterations,
            runs: opt.runs,
            domain_cap: opt.domain_cap,
            fpr: opt.fpr,
            selection,
            randomizer,
            encoding: encoding_name,
            segment,
            max_length,
            deny: deny.len(),
        },
        users,
        population.description().to_owned(),
        args.release.seed,
    );
    let collusion = output
        .plan
        .collusion(args.release.colluding_fraction)
        .map_err(|e| anyhow!(e))?;
    document["guarantee"]["collusion"] = json!(CollusionBody::from(&collusion));
    document["parameters"]["aggregation"] = json!(match path {
        AggregationPath::Binomial => "binomial",
        AggregationPath::PerReport => "per-report",
    });
    document["parameters"]["data_points"] = json!(population.data_points());
    let warnings: Vec<String> = document
        .get("warnings")
        .and_then(|warnings| serde_json::from_value(warnings.clone()).ok())
        .unwrap_or_default();
    print_warning_lines(&warnings);
    let parameters = document["parameters"].clone();
    let shown = args.top.unwrap_or(if args.privacy.json {
        usize::MAX
    } else {
        DEFAULT_TABLE_ROWS
    });
    let truth = args.truth.then(|| {
        // Estimates from different iterations count devices choosing among different eligible
        // sets, so they do not rank the words: as for TrieHH, precision is the share of all
        // `f` found words that are in the true top `f`.
        let k = args.top.unwrap_or(DEFAULT_TRUTH_K);
        let top = population.top_items(k);
        let all = retrieval_scores(words.iter().copied(), top.iter().map(|(n, _)| n.as_str()));
        let top_f = population.top_items(words.len());
        let ranked = retrieval_scores(words.iter().copied(), top_f.iter().map(|(n, _)| n.as_str()));
        json!({
            "k": k,
            "true_top_k_found": all.hits,
            "recall": all.recall,
            "precision": ranked.precision,
            "precision_at": words.len(),
            "f1": if ranked.precision + all.recall > 0.0 {
                2.0 * ranked.precision * all.recall / (ranked.precision + all.recall)
            } else {
                0.0
            },
            "found_items_in_data": words.len() - false_positives,
            "true_top_k": top.iter().map(|(name, count)| json!({"item": name, "count": count})).collect::<Vec<_>>(),
        })
    });
    if args.privacy.json {
        let mut out = document;
        if let Some(items) = out["items"].as_array_mut() {
            items.truncate(shown);
        }
        out["captured_mass"] = json!(captured_mass);
        out["captured_user_mass"] = json!(captured_user_mass);
        out["false_positives"] = json!(false_positives);
        if let Some(truth) = truth {
            out["truth"] = truth;
        }
        print_json(&out)?;
        return Ok(());
    }
    let mut rows = vec![
        ("input", population.description().to_owned()),
        (
            "guarantee",
            guarantee_body_line(&GuaranteeBody::with_collusion(
                &output.guarantee,
                Some(&collusion),
            )),
        ),
        ("local guarantee", guarantee_line(&output.local_guarantee)),
        ("parameters", parameters_line(&parameters)),
        ("found items", output.words.len().to_string()),
        (
            "captured mass",
            format!(
                "{captured_mass:.4} of all data points, {captured_user_mass:.4} by user support; \
                 {false_positives} false positives"
            ),
        ),
    ];
    if let Some(truth) = &truth {
        rows.push((
            "against the truth",
            format!(
                "top {}: recall {:.3}, precision {:.3} (of all {} found), F1 {:.3}",
                truth["k"],
                truth["recall"].as_f64().unwrap_or(f64::NAN),
                truth["precision"].as_f64().unwrap_or(f64::NAN),
                truth["precision_at"],
                truth["f1"].as_f64().unwrap_or(f64::NAN)
            ),
        ));
    }
    print_fields("opt-prefix-tree", &rows)?;
    let rows: Vec<_> = output
        .words
        .iter()
        .map(|w| (w.word.clone(), None, Some(w.estimate)))
        .collect();
    print_items(&rows, shown)?;
    Ok(())
}
