//! `tally task create --algorithm range|hierarchical-quantiles --mechanism
//! ghazi-hadamard|ghazi-count-min`: Ghazi et al.'s range-query tree over the devices' numbers,
//! with the options `tally range` and `tally quantiles` take with those mechanisms.

use anyhow::{Result, bail};
use tally_core::quantiles::ValueRange;
use tally_messages::{DomainHistogramMechanism, RangeTreeMechanism, TaskKind, TreeReading};
use tally_sim::values_release::DEFAULT_QUANTILES;

use crate::cli::{HistogramMechanism, TaskAlgorithm, TaskCreateArgs};
use crate::federated_domain::refuse_domain;
use crate::federated_options::{DEFAULT_LEVELS, GivenOption, PREFIX_OPTIONS, refuse_options};
use crate::quantiles::check_quantiles;

/// The options of the sample-and-threshold rounds, which a range-query tree has none of.
const ROUND_OPTIONS: [GivenOption; 5] = [
    ("--branching", |a| a.branching.is_some()),
    ("--composition", |a| a.composition.rule.is_some()),
    ("--sampling-rate", |a| a.round.sampling_rate.is_some()),
    ("--threshold", |a| a.round.threshold.is_some()),
    ("--beam", |a| a.beam.is_some()),
];

/// The task of the range-query tree on `mechanism` read as `algorithm` asks.
pub(crate) fn task_kind(
    args: &TaskCreateArgs,
    mechanism: Option<HistogramMechanism>,
    algorithm: TaskAlgorithm,
) -> Result<TaskKind> {
    let mechanism = match mechanism {
        Some(HistogramMechanism::Domain(DomainHistogramMechanism::GhaziHadamard)) => {
            RangeTreeMechanism::GhaziHadamard
        }
        Some(HistogramMechanism::Domain(DomainHistogramMechanism::GhaziCountMin)) => {
            RangeTreeMechanism::GhaziCountMin
        }
        other => bail!(
            "--mechanism {}: range and quantile tasks take sample-threshold, ghazi-hadamard or \
             ghazi-count-min",
            other.map_or("", HistogramMechanism::name)
        ),
    };
    let name = format!("--mechanism {}", mechanism.name());
    if args.consistent {
        bail!("--consistent applies to --mechanism sample-threshold only");
    }
    refuse_options(args, &ROUND_OPTIONS, &name)?;
    refuse_options(args, &PREFIX_OPTIONS, &name)?;
    refuse_domain(args, "a range-query tree")?;
    let range = args.min.zip(args.max).map(|(min, max)| [min, max]);
    let reading = if algorithm == TaskAlgorithm::Range {
        if args.quantiles.is_some() {
            bail!("--quantiles does not apply to --algorithm range");
        }
        let (Some(lo), Some(hi)) = (args.lo, args.hi) else {
            bail!("--algorithm range counts the devices in [--lo, --hi): give both");
        };
        let value_range = range
            .map(|[min, max]| ValueRange::new(min, max))
            .transpose()?;
        tally_sim::values_release::check_range(value_range, lo, hi)?;
        TreeReading::Range { lo, hi }
    } else {
        let quantiles = args
            .quantiles
            .clone()
            .unwrap_or_else(|| DEFAULT_QUANTILES.to_vec());
        check_quantiles(&quantiles)?;
        TreeReading::Quantiles(quantiles)
    };
    Ok(TaskKind::RangeTree {
        mechanism,
        levels: args.levels.unwrap_or(DEFAULT_LEVELS),
        range,
        reading,
        failure_probability: args.failure_probability,
        public_coins: None,
    })
}
