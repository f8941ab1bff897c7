//! `tally heavy-hitters --algorithm count-min-prefix-tree`: Ghazi et al.'s heavy hitters
//! through a prefix tree of Count-Min oracles (docs/algorithms.md §5.6), over integer items of
//! `0..2^L`, run by the simulator.

use anyhow::{Result, anyhow, bail};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde_json::{Value, json};
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_core::shuffle::ShuffleHeavyHitters;
use tally_core::shuffle::prefix_level::MAX_DOMAIN_BITS;
use tally_messages::HeavyHittersRelease;
#[cfg(feature = "federated")]
use tally_messages::TaskKind;
use tally_protocol::document;
use tally_sim::{DomainMap, run_shuffle_heavy_hitters};

use crate::cli::HeavyHittersArgs;
#[cfg(feature = "federated")]
use crate::cli::TaskCreateArgs;
use crate::domain_histogram::domain_counts;

/// The protocol's parameters as the command line and a task give them.
pub(crate) struct TreeOptions {
    /// `L`: items lie in `0..2^L`.
    pub(crate) domain_bits: Option<u32>,
    /// `τ_HH`.
    pub(crate) threshold: Option<u64>,
    /// Count-Min's `β`.
    pub(crate) failure_probability: Option<f64>,
}

impl TreeOptions {
    /// `L` and `τ_HH`, both required, and `β` ([`DEFAULT_COUNT_MIN_BETA`] when left out).
    ///
    /// # Errors
    ///
    /// When `L` or `τ_HH` is missing or `L` is outside `1..=31`.
    pub(crate) fn resolve(&self) -> Result<(u32, u64, f64)> {
        let Some(domain_bits) = self.domain_bits else {
            bail!(
                "--algorithm count-min-prefix-tree needs --domain-bits L: items are integers in \
                 [0, 2^L)"
            );
        };
        if !(1..=MAX_DOMAIN_BITS).contains(&domain_bits) {
            bail!("--domain-bits {domain_bits}: expected 1 to {MAX_DOMAIN_BITS}");
        }
        let Some(threshold) = self.threshold else {
            bail!(
                "--algorithm count-min-prefix-tree needs --threshold τ_HH: the items held by at \
                 least that many devices are the heavy hitters"
            );
        };
        Ok((
            domain_bits,
            threshold,
            self.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA),
        ))
    }
}

/// The prefix tree over `0..2^domain_bits` for `users` devices at `(ε, δ)`, with Count-Min's
/// `beta`, reporting the items with estimate at least `threshold / 2`; its public hash
/// functions drawn from the seed `public_coins`, as a task's are.
///
/// # Errors
///
/// What the protocol refuses, with advice when there are too few users.
pub(crate) fn build(
    (domain_bits, threshold, beta): (u32, u64, f64),
    epsilon: f64,
    delta: f64,
    users: u64,
    public_coins: u64,
) -> Result<ShuffleHeavyHitters, String> {
    let mut coins = ChaCha20Rng::seed_from_u64(public_coins);
    ShuffleHeavyHitters::new(
        domain_bits,
        epsilon,
        delta,
        beta,
        users,
        threshold as f64,
        &mut coins,
    )
    .map_err(|e| match e {
        tally_core::Error::Accounting(tally_accounting::Error::Infeasible { .. }) => format!(
            "{e}; each of the {domain_bits} levels runs at ε/{domain_bits}: more devices, a \
             larger ε, fewer --domain-bits or a larger --failure-probability (now {beta}) \
             would make it feasible"
        ),
        e => e.to_string(),
    })
}

/// The task of `tally task create --algorithm count-min-prefix-tree`, with the options and
/// defaults of the offline command.
///
/// # Errors
///
/// As [`TreeOptions::resolve`], and for `--sampling-rate` or `--beam`.
#[cfg(feature = "federated")]
pub(crate) fn task_kind(args: &TaskCreateArgs) -> Result<TaskKind> {
    if args.round.sampling_rate.is_some() || args.beam.is_some() {
        bail!("--sampling-rate and --beam do not apply to --algorithm count-min-prefix-tree");
    }
    let (domain_bits, threshold, _) = TreeOptions {
        domain_bits: args.domain_bits,
        threshold: args.round.threshold,
        failure_probability: args.failure_probability,
    }
    .resolve()?;
    Ok(TaskKind::CountMinPrefixTree {
        domain_bits,
        threshold,
        failure_probability: args.failure_probability,
        public_coins: None,
    })
}

/// `tally heavy-hitters --algorithm count-min-prefix-tree`: the release and the input's true
/// counts of each item.
pub(crate) fn run(args: &HeavyHittersArgs, seed: u64) -> Result<(HeavyHittersRelease, Vec<u64>)> {
    if args.release.round.sampling_rate.is_some() {
        bail!("--sampling-rate applies to sample-and-threshold algorithms only");
    }
    let options = TreeOptions {
        domain_bits: args.domain_bits,
        threshold: args.release.round.threshold,
        failure_probability: args.failure_probability,
    }
    .resolve()?;
    let map = DomainMap::Integers(1 << options.0);
    let (stage, counts, clients, description) =
        domain_counts(&args.input, map, seed).map_err(|e| {
            let bits = options.0;
            match e.downcast_ref::<tally_sim::Error>() {
                Some(tally_sim::Error::NotInDomainAt {
                    file, line, item, ..
                }) => anyhow!(
                    "{file}:{line}: item {item:?} is not an integer in [0, 2^{bits}): \
                     --domain-bits {bits} needs integer items below 2^{bits}"
                ),
                Some(tally_sim::Error::NotInDomain { item, .. }) => anyhow!(
                    "item {item:?} is not an integer in [0, 2^{bits}): --domain-bits {bits} \
                     needs integer items below 2^{bits}"
                ),
                _ => e,
            }
        })?;
    let protocol = build(
        options,
        args.privacy.target.epsilon,
        args.privacy.target.delta(),
        clients,
        seed,
    )
    .map_err(|e| anyhow!(e))?;
    stage.next(format!(
        "running {} prefix levels over {clients} clients",
        options.0
    ));
    let found = run_shuffle_heavy_hitters(protocol.clone(), &counts, seed);
    drop(stage);
    let mut release =
        document::count_min_prefix_tree(&found, &protocol, clients, description, args.release.seed);
    release.guarantee.collusion = Some(
        (&protocol
            .collusion(args.release.colluding_fraction)
            .map_err(|e| anyhow!(e))?)
            .into(),
    );
    Ok((release, counts))
}

/// Scores a release against the input's true counts `counts` at the threshold `τ_HH`: the
/// true heavy hitters are the items held by at least `τ_HH` clients; recall is the share of
/// them found, precision the share of the found items that are, and every found item's true
/// count is listed.
pub(crate) fn truth_scores(release: &HeavyHittersRelease, counts: &[u64], threshold: u64) -> Value {
    let heavy: Vec<(usize, u64)> = counts
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, count)| count >= threshold)
        .collect();
    let true_count = |item: &str| item.parse::<usize>().ok().map(|x| counts[x]);
    let hits = release
        .items
        .iter()
        .filter(|f| true_count(&f.item).is_some_and(|c| c >= threshold))
        .count();
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let recall = ratio(hits, heavy.len());
    let precision = ratio(hits, release.items.len());
    let f1 = if recall + precision > 0.0 {
        2.0 * recall * precision / (recall + precision)
    } else {
        0.0
    };
    json!({
        "k": heavy.len(),
        "threshold": threshold,
        "recall": recall,
        "precision": precision,
        "f1": f1,
        "true_heavy_hitters": heavy
            .iter()
            .map(|&(item, count)| json!({"item": item.to_string(), "count": count}))
            .collect::<Vec<_>>(),
        "found_true_counts": release
            .items
            .iter()
            .map(|f| json!({"item": f.item, "count": true_count(&f.item)}))
            .collect::<Vec<_>>(),
    })
}
