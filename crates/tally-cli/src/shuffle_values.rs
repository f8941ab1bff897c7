//! `tally quantiles` and `tally range` with `--mechanism ghazi-*`: one round of Ghazi et al.'s
//! range-query tree (Algorithms 3/4, Appendix E) over a multi-message shuffle frequency oracle.

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_core::shuffle::{RangeOracle, RangeTree, ShuffleQuantiles};
use tally_sim::Values;

use crate::cli::{QuantilesArgs, RangeArgs, ValuesArgs, ValuesMechanism};
use crate::output::{Stage, guarantee_json, guarantee_line, print_fields, print_json};
use crate::quantiles::{Row, load_values, report_quantiles, resolution};

/// The oracle of a Ghazi mechanism.
fn oracle(common: &ValuesArgs) -> Result<RangeOracle> {
    if common.consistent {
        bail!("--consistent applies to --mechanism sample-threshold only");
    }
    let oracle = match common.mechanism {
        ValuesMechanism::SampleThreshold => unreachable!("handled by the S&T commands"),
        ValuesMechanism::GhaziHadamard => RangeOracle::Hadamard,
        ValuesMechanism::GhaziCountMin => RangeOracle::CountMin {
            beta: common.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA),
        },
    };
    if common.failure_probability.is_some() && common.mechanism != ValuesMechanism::GhaziCountMin {
        bail!("--failure-probability applies to --mechanism ghazi-count-min only");
    }
    Ok(oracle)
}

/// The range-query tree over `oracle` for the values, calibrated for their number (which it
/// publishes).
fn tree(common: &ValuesArgs, oracle: RangeOracle, values: &Values) -> Result<RangeTree> {
    RangeTree::new(
        common.levels,
        oracle,
        common.privacy.epsilon,
        common.release.delta,
        values.len() as u64,
    )
    .map_err(|e| match oracle {
        RangeOracle::CountMin { beta } => anyhow!(
            "{e}; fewer hash rows and tree levels need fewer users: raise \
             --failure-probability (now {beta}) or lower --levels"
        ),
        RangeOracle::Hadamard => anyhow!("{e}"),
    })
}

/// The shared JSON parameters of a run.
fn parameters(tree: &RangeTree, values: &Values, common: &ValuesArgs) -> Value {
    let cost = tree.message_cost();
    json!({
        "levels": common.levels,
        "buckets": tree.domain(),
        "resolution": resolution(values, 1.0 / f64::from(tree.domain())),
        "users": values.len(),
        "messages_per_client": cost.messages_per_client,
        "bits_per_message": cost.bits_per_message,
    })
}

/// The mechanism's name in the output.
fn name(common: &ValuesArgs) -> &'static str {
    match common.mechanism {
        ValuesMechanism::GhaziCountMin => "range-query tree (ghazi-count-min)",
        _ => "range-query tree (ghazi-hadamard)",
    }
}

pub(crate) fn run_quantiles(args: &QuantilesArgs) -> Result<()> {
    let common = &args.values;
    let oracle = oracle(common)?;
    let values = load_values(common)?;
    let tree = tree(common, oracle, &values)?;
    let parameters = parameters(&tree, &values, common);
    let sketch_builder = ShuffleQuantiles::with_tree(tree, values.len() as u64)?;
    let seed = common.release.seed_or_random();
    let stage = Stage::start(format!("one shuffle round over {} values", values.len()));
    let sketch = sketch_builder.run(values.as_slice(), &mut tally_sim::mechanism_rng(seed));
    drop(stage);
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
        common,
        args.truth,
        &values,
        name(common),
        parameters,
        &sketch_builder.guarantee(),
        &rows,
    )
}

pub(crate) fn run_range(args: &RangeArgs) -> Result<()> {
    let common = &args.values;
    let oracle = oracle(common)?;
    let values = load_values(common)?;
    let tree = tree(common, oracle, &values)?;
    let buckets = tree.domain();
    // Snap [lo, hi) to bucket boundaries below, as the hierarchical histogram does; a range
    // ending at the top includes it.
    let (lo, hi) = (values.to_unit(args.lo), values.to_unit(args.hi));
    let first = ((lo * f64::from(buckets)).floor() as u32).min(buckets);
    let end = if hi >= 1.0 {
        buckets
    } else {
        ((hi * f64::from(buckets)).floor() as u32).min(buckets)
    };
    let seed = common.release.seed_or_random();
    let stage = Stage::start(format!("one shuffle round over {} values", values.len()));
    let leaves: Vec<u32> = values
        .as_slice()
        .iter()
        .map(|&x| ((x * f64::from(buckets)).floor() as u32).min(buckets - 1))
        .collect();
    let counts = tree.run(&leaves, &mut tally_sim::mechanism_rng(seed));
    drop(stage);
    let estimate = if end > first {
        counts.count(first, end - 1)
    } else {
        0.0
    };
    let grid = |b: u32| values.to_original(f64::from(b) / f64::from(buckets));
    let (grid_lo, grid_hi) = (grid(first), grid(end));
    let guarantee = tree.guarantee();
    let parameters = parameters(&tree, &values, common);
    if common.privacy.json {
        print_json(&json!({
            "mechanism": name(common),
            "model": guarantee.model.name(),
            "parameters": parameters,
            "guarantee": guarantee_json(&guarantee),
            "target_delta": common.release.delta,
            "input": values.description(),
            "range": {"lo": args.lo, "hi": args.hi, "grid_lo": grid_lo, "grid_hi": grid_hi},
            "estimate": estimate,
            "fraction": estimate / values.len() as f64,
            "seed": common.release.seed,
        }))?;
        return Ok(());
    }
    print_fields(
        &format!("range count ({})", name(common)),
        &[
            ("input", values.description().to_owned()),
            ("guarantee", guarantee_line(&guarantee)),
            ("parameters", parameters.to_string()),
            ("seed", common.release.seed_description()),
            (
                "range",
                format!(
                    "[{}, {}) (snapped to the grid: [{grid_lo}, {grid_hi}))",
                    args.lo, args.hi
                ),
            ),
            (
                "estimate",
                format!(
                    "{estimate:.1} values ({:.4} of the {} values)",
                    estimate / values.len() as f64,
                    values.len()
                ),
            ),
        ],
    )?;
    Ok(())
}
