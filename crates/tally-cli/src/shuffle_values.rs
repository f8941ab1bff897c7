//! `tally quantiles` and `tally range` with `--mechanism ghazi-*`: one round of Ghazi et al.'s
//! range-query tree (Algorithms 3/4, Appendix E) over a multi-message shuffle frequency oracle.

use anyhow::{Result, anyhow, bail};
use serde_json::Value;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_core::shuffle::{RangeCounts, RangeRound, SetOracleRound, ShuffleQuantiles};
use tally_messages::TreeRangeRelease;
use tally_protocol::document::{self, TreeDocument};
use tally_sim::Values;
use tally_sim::values_release::Row;

use crate::cli::{QuantilesArgs, RangeArgs, ValuesArgs, ValuesMechanism};
use crate::output::{Stage, guarantee_body_line, parameters_line, print_fields, print_json};
use crate::values::{load_values, report_quantiles};

/// Loads the values `common` names and runs `command` on the range-query tree of the mechanism
/// it names, calibrated for their number (which it publishes), with the run's seed (from which
/// Count-Min's public hash functions are drawn).
fn with_tree(common: &ValuesArgs, command: impl TreeCommand) -> Result<()> {
    if common.consistent {
        bail!("--consistent applies to --mechanism sample-threshold only");
    }
    if common.failure_probability.is_some() && common.mechanism != ValuesMechanism::GhaziCountMin {
        bail!("--failure-probability applies to --mechanism ghazi-count-min only");
    }
    let values = load_values(common)?;
    let seed = common.release.seed_or_random();
    let (epsilon, delta, users) = (
        common.privacy.target.epsilon,
        common.privacy.target.delta(),
        values.len() as u64,
    );
    match common.mechanism {
        ValuesMechanism::SampleThreshold => unreachable!("handled by the S&T commands"),
        ValuesMechanism::GhaziHadamard => {
            let tree = RangeRound::hadamard(common.levels, 1, epsilon, delta, users)?;
            command.run(tree, &values, seed)
        }
        ValuesMechanism::GhaziCountMin => {
            let beta = common.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA);
            let mut public_coins = tally_sim::mechanism_rng(seed);
            let tree = RangeRound::count_min(
                common.levels,
                1,
                epsilon,
                delta,
                beta,
                users,
                &mut public_coins,
            )
            .map_err(|e| {
                anyhow!(
                    "{e}; fewer hash rows and tree levels need fewer users: raise \
                     --failure-probability (now {beta}) or lower --levels"
                )
            })?;
            command.run(tree, &values, seed)
        }
    }
}

/// What a command does with the tree over the values, whichever its oracle.
trait TreeCommand {
    fn run<O>(self, tree: RangeRound<O>, values: &Values, seed: u64) -> Result<()>
    where
        O: SetOracleRound<Query: Sync, Aggregator: Send> + Sync;
}

/// The shared JSON parameters of a run.
fn parameters<O: SetOracleRound>(tree: &RangeRound<O>, values: &Values) -> Value {
    document::range_tree_parameters(tree, values.range(), values.len() as u64)
}

/// The mechanism's name in the output.
fn name(common: &ValuesArgs) -> String {
    document::range_tree_mechanism(match common.mechanism {
        ValuesMechanism::GhaziCountMin => "ghazi-count-min",
        _ => "ghazi-hadamard",
    })
}

/// The number of values in each of `buckets` buckets of the unit interval (bucket
/// `min(⌊x·B⌋, B−1)`).
fn bucket_counts(values: &Values, bucket: impl Fn(f64) -> u32, buckets: u32) -> Vec<u64> {
    let mut counts = vec![0_u64; buckets as usize];
    for &x in values.as_slice() {
        counts[bucket(x) as usize] += 1;
    }
    counts
}

/// The tree's release over the values' buckets, by the simulator's round executor.
fn simulate<O>(tree: &RangeRound<O>, counts: &[u64], values: &Values, seed: u64) -> RangeCounts
where
    O: SetOracleRound<Query: Sync, Aggregator: Send> + Sync,
{
    let stage = Stage::start(format!("one shuffle round over {} values", values.len()));
    let release = tally_sim::run_counted_round(tree, counts, seed);
    drop(stage);
    release
}

struct Quantiles<'a>(&'a QuantilesArgs);

impl TreeCommand for Quantiles<'_> {
    fn run<O>(self, tree: RangeRound<O>, values: &Values, seed: u64) -> Result<()>
    where
        O: SetOracleRound<Query: Sync, Aggregator: Send> + Sync,
    {
        let Self(args) = self;
        let common = &args.values;
        let parameters = parameters(&tree, values);
        let protocol = ShuffleQuantiles::new(tree, values.len() as u64)?;
        let counts = bucket_counts(values, |x| protocol.bucket(x), protocol.tree().domain());
        let sketch = protocol.sketch(simulate(protocol.tree(), &counts, values, seed));
        let rows: Vec<Row> = args
            .quantiles
            .iter()
            .map(|&q| Row {
                quantile: q,
                value: values.to_original(sketch.quantile(q)),
                interval: None,
            })
            .collect();
        report_quantiles(
            args,
            values,
            &name(common),
            parameters,
            protocol.guarantee(),
            &protocol.collusion(common.release.colluding_fraction)?,
            &rows,
        )
    }
}

pub(crate) fn run_quantiles(args: &QuantilesArgs) -> Result<()> {
    with_tree(&args.values, Quantiles(args))
}

struct Range<'a>(&'a RangeArgs);

impl TreeCommand for Range<'_> {
    fn run<O>(self, tree: RangeRound<O>, values: &Values, seed: u64) -> Result<()>
    where
        O: SetOracleRound<Query: Sync, Aggregator: Send> + Sync,
    {
        report_range(self.0, values, seed, &tree)
    }
}

pub(crate) fn run_range(args: &RangeArgs) -> Result<()> {
    with_tree(&args.values, Range(args))
}

fn report_range<O>(args: &RangeArgs, values: &Values, seed: u64, tree: &RangeRound<O>) -> Result<()>
where
    O: SetOracleRound<Query: Sync, Aggregator: Send> + Sync,
{
    let common = &args.values;
    let buckets = tree.domain();
    let leaf = |x: f64| ((x * f64::from(buckets)).floor() as u32).min(buckets - 1);
    let counts = simulate(tree, &bucket_counts(values, leaf, buckets), values, seed);
    let mut release = document::tree_range_count(
        &counts,
        values.range(),
        (args.lo, args.hi),
        TreeDocument {
            mechanism: name(common),
            parameters: parameters(tree, values),
            guarantee: tree.guarantee(),
            target_delta: common.privacy.target.delta(),
            input: values.description().to_owned(),
            users: values.len() as u64,
            seed: common.release.seed,
        },
    );
    release.guarantee.collusion =
        Some((&tree.collusion(common.release.colluding_fraction)?).into());
    if common.privacy.json {
        print_json(&serde_json::to_value(&release)?)?;
        return Ok(());
    }
    print_range(
        &release,
        &guarantee_body_line(&release.guarantee),
        ("seed", common.release.seed_description()),
    )
}

/// Prints a range-query tree's range count for people, with `extra` after its parameters.
pub(crate) fn print_range(
    release: &TreeRangeRelease,
    guarantee: &str,
    extra: (&str, String),
) -> Result<()> {
    let range = &release.range;
    let users = release.parameters["users"].as_u64().unwrap_or_default();
    print_fields(
        &format!("range count ({})", release.mechanism),
        &[
            ("input", release.input.clone()),
            ("guarantee", guarantee.to_owned()),
            ("parameters", parameters_line(&release.parameters)),
            extra,
            (
                "range",
                format!(
                    "[{}, {}) (snapped to the grid: [{}, {}))",
                    range.lo, range.hi, range.grid_lo, range.grid_hi
                ),
            ),
            (
                "estimate",
                format!(
                    "{:.1} values ({:.4} of the {users} values)",
                    release.estimate, release.fraction
                ),
            ),
        ],
    )?;
    Ok(())
}
