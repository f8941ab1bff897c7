//! Ghazi et al.'s range-query tree over the devices' numbers as one server task kind, generic
//! over its `k`-set frequency oracle: one shuffle round of tally-core's [`NumberTreeRound`],
//! read as a range count or as quantiles.

use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::SeedableRng;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::{Collusion, Guarantee, Neighbours};
use tally_core::histogram::SampleThreshold;
use tally_core::protocol::wire::BoundedDomainQuery;
use tally_core::protocol::{DeviceInput, DeviceQuery, Estimates, RoundProtocol, SingleRound};
use tally_core::quantiles::ValueRange;
use tally_core::shuffle::{NumberTreeRound, RangeRound, SetOracleRound, ShuffleQuantiles};
use tally_messages::{
    PrivacyTarget, QuantileRow, QuantilesRelease, RangeTreeMechanism, Sampling, TaskKind, TaskSpec,
    TreeReading,
};

use super::domain::{check_count_min_cohort, check_shuffle_cohort};
use super::{
    CountedAggregate, ElementCounts, Engine, Kind, TaskDefinition, driven, input_description,
    value_range,
};
use crate::PublishedQuery;
use crate::document::{self, TreeDocument};
use crate::shuffler::ShuffledReport;

/// What a range-tree task is asked for, besides its privacy target.
pub(super) struct TreeTask<'a> {
    /// The frequency oracle.
    pub(super) mechanism: RangeTreeMechanism,
    /// The tree's depth `L`.
    pub(super) levels: u32,
    /// The range of the devices' numbers, if not `[0, 1]`.
    pub(super) range: Option<[f64; 2]>,
    /// What is read from the tree.
    pub(super) reading: &'a TreeReading,
    /// Count-Min's `β`, if given.
    pub(super) failure_probability: Option<f64>,
    /// The seed of Count-Min's public hash functions.
    pub(super) public_coins: Option<u64>,
}

impl TaskDefinition for TreeTask<'_> {
    fn name(&self) -> &'static str {
        match self.reading {
            TreeReading::Range { .. } => "range",
            TreeReading::Quantiles(_) => "quantiles",
        }
    }

    fn default_min_cohort(&self, expected_population: u64) -> u64 {
        // Both oracles are Ghazi et al.'s shuffle-model ones.
        expected_population
    }

    fn with_public_coins(&self, draw: &mut dyn FnMut() -> u64) -> Option<TaskKind> {
        let counts_min = self.mechanism == RangeTreeMechanism::GhaziCountMin;
        (counts_min && self.public_coins.is_none()).then(|| TaskKind::RangeTree {
            mechanism: self.mechanism,
            levels: self.levels,
            range: self.range,
            reading: self.reading.clone(),
            failure_probability: self.failure_probability,
            public_coins: Some(draw()),
        })
    }

    fn description(&self, _: Neighbours) -> String {
        let levels = self.levels;
        let [min, max] = self.range.unwrap_or([0.0, 1.0]);
        let what = match self.reading {
            TreeReading::Range { lo, hi } => format!("range count of [{lo}, {hi})"),
            TreeReading::Quantiles(quantiles) => {
                let quantiles: Vec<String> = quantiles.iter().map(f64::to_string).collect();
                format!("quantiles {}", quantiles.join(", "))
            }
        };
        format!(
            "{what} among numbers in [{min}, {max}] from a range-query tree of {levels} \
             levels on {}, one round behind the shuffler",
            self.mechanism.name()
        )
    }

    fn rounds(&self) -> u32 {
        1
    }

    fn quantiles(&self) -> &[f64] {
        match self.reading {
            TreeReading::Range { .. } => &[],
            TreeReading::Quantiles(quantiles) => quantiles,
        }
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        if self.mechanism == RangeTreeMechanism::GhaziCountMin {
            check_count_min_cohort(spec)?;
        }
        build(
            self,
            &spec.privacy,
            spec.expected_population,
            spec.rounds.min_cohort,
            spec.rounds.max_report_bytes,
        )
    }
}

/// The task `task` asks for at `privacy`, its oracle calibrated for `clients` devices (the
/// expected population), with its guarantee.
///
/// # Privacy
///
/// The oracle's guarantee holds only when the analyzer sees the messages of at least the
/// `clients` devices it was calibrated for: a task whose round may release from fewer uploads
/// is refused. A task whose longest report exceeds `max_report_bytes` is refused too (every
/// device would abstain), naming the depths that would fit.
///
/// # Errors
///
/// A message saying why the task cannot run as asked.
pub(super) fn build(
    task: &TreeTask<'_>,
    privacy: &PrivacyTarget,
    clients: u64,
    min_cohort: u64,
    max_report_bytes: u32,
) -> Result<(Engine, Guarantee), String> {
    let name = task.mechanism.name();
    check_shuffle_cohort(name, min_cohort, clients)?;
    match task.reading {
        TreeReading::Quantiles(quantiles) => {
            if quantiles.is_empty() {
                return Err("quantiles: give at least one".to_owned());
            }
            if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
                return Err(format!("quantile {q}: expected numbers in [0, 1]"));
            }
        }
        &TreeReading::Range { lo, hi } => {
            let (min, max) = task.range.map_or((0.0, 1.0), |[min, max]| (min, max));
            if !(min <= lo && lo <= hi && hi <= max) {
                return Err(format!(
                    "range [{lo}, {hi}): expected min ≤ lo ≤ hi ≤ max within [{min}, {max}]"
                ));
            }
        }
    }
    if task.failure_probability.is_some() && task.mechanism != RangeTreeMechanism::GhaziCountMin {
        return Err("failure_probability applies to ghazi-count-min only".to_owned());
    }
    let range = value_range(task.range)?;
    let fits = |levels| tree(task, levels, privacy, clients).map(|t| t.fits(max_report_bytes));
    match tree(task, task.levels, privacy, clients)? {
        Tree::Hadamard(tree) => TreeKind::new(tree, range, task).open(max_report_bytes, fits),
        Tree::CountMin(tree) => TreeKind::new(tree, range, task).open(max_report_bytes, fits),
    }
}

/// A range tree on either oracle.
enum Tree {
    Hadamard(RangeRound<tally_core::shuffle::HadamardRound>),
    CountMin(RangeRound<tally_core::shuffle::CountMinRound>),
}

impl Tree {
    /// Whether its devices' longest report fits `max_report_bytes`.
    fn fits(&self, max_report_bytes: u32) -> bool {
        let longest = match self {
            Self::Hadamard(tree) => tree.query().oracle().longest_report(),
            Self::CountMin(tree) => tree.query().oracle().longest_report(),
        };
        longest <= u64::from(max_report_bytes)
    }
}

/// The tree of `levels` on `task`'s oracle, calibrated for `clients` devices at `privacy`.
fn tree(
    task: &TreeTask<'_>,
    levels: u32,
    privacy: &PrivacyTarget,
    clients: u64,
) -> Result<Tree, String> {
    let (epsilon, delta) = (privacy.epsilon, privacy.delta);
    match task.mechanism {
        RangeTreeMechanism::GhaziHadamard => {
            RangeRound::hadamard(levels, 1, epsilon, delta, clients).map(Tree::Hadamard)
        }
        RangeTreeMechanism::GhaziCountMin => {
            // The same hash functions every time the task is built (a restarted server
            // rebuilds it from its stored spec).
            let mut coins = ChaCha20Rng::seed_from_u64(task.public_coins.unwrap_or(0));
            let beta = task.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA);
            RangeRound::count_min(levels, 1, epsilon, delta, beta, clients, &mut coins)
                .map(Tree::CountMin)
        }
    }
    .map_err(|e| e.to_string())
}

/// The round of a range-query tree over numbers, read as its task asks.
#[derive(Clone)]
struct TreeKind<O: SetOracleRound> {
    tree: RangeRound<O>,
    range: Option<ValueRange>,
    reading: TreeReading,
    mechanism: RangeTreeMechanism,
}

impl<O: SetOracleRound> TreeKind<O> {
    /// The kind of `task` on `tree`, its devices' numbers in `range`.
    fn new(tree: RangeRound<O>, range: Option<ValueRange>, task: &TreeTask<'_>) -> Self {
        Self {
            tree,
            range,
            reading: task.reading.clone(),
            mechanism: task.mechanism,
        }
    }
}

impl<O> TreeKind<O>
where
    TreeKind<O>:
        Kind<Round = NumberTreeRound<O>, Task = SingleRound<NumberTreeRound<O>, Estimates>>,
    O: SetOracleRound<Query: BoundedDomainQuery> + Clone,
{
    /// The task of one round, unless its longest report exceeds `max_report_bytes`; then a
    /// message naming the depths `L` for which `fits(L)` says the reports would fit.
    fn open(
        self,
        max_report_bytes: u32,
        fits: impl Fn(u32) -> Result<bool, String>,
    ) -> Result<(Engine, Guarantee), String> {
        let round = self
            .tree
            .over_numbers(self.range)
            .map_err(|e| e.to_string())?;
        let longest = round.query().longest_report();
        if longest > u64::from(max_report_bytes) {
            let fitting: Vec<String> = (1..self.tree.domain().ilog2())
                .filter(|&levels| fits(levels).unwrap_or(false))
                .map(|levels| levels.to_string())
                .collect();
            let advice = if fitting.is_empty() {
                "no smaller number of levels fits either: more ε, more δ, fewer devices or a \
                 larger max_report_bytes (at most 32768) would shorten it"
                    .to_owned()
            } else {
                format!("levels {} would fit", fitting.join(", "))
            };
            return Err(format!(
                "{} range tree of {} levels: the longest report a device could send is \
                 {longest} bytes, above max_report_bytes ({max_report_bytes}): every device \
                 would abstain; {advice}",
                self.mechanism.name(),
                self.tree.domain().ilog2(),
            ));
        }
        let task = SingleRound::new(round, self.tree.guarantee().clone());
        Ok(driven(self, task, 1))
    }
}

impl<O> Kind for TreeKind<O>
where
    O: SetOracleRound<
            Query: PublishedQuery
                       + BoundedDomainQuery
                       + DeviceQuery<Report: ShuffledReport>
                       + Clone
                       + Send
                       + Sync
                       + 'static,
            Aggregator: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    type Task = SingleRound<NumberTreeRound<O>, Estimates>;
    type Round = NumberTreeRound<O>;

    /// The round itself: its devices' coins are their own.
    fn round(&self, round: &NumberTreeRound<O>, _: Sampling) -> NumberTreeRound<O> {
        round.clone()
    }

    /// No sample-and-threshold loss pair: the ledger composes its `(ε, δ)`.
    fn threshold_round(_: &NumberTreeRound<O>) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &NumberTreeRound<O>, release: Estimates) -> Estimates {
        release
    }

    fn collusion(
        &self,
        _: &Self::Task,
        colluding_fraction: f64,
    ) -> Result<Option<Collusion>, tally_core::Error> {
        Ok(Some(self.tree.collusion(colluding_fraction)?))
    }

    /// The oracle's aggregate from how many devices' numbers fall in each leaf
    /// ([`NumberTreeRound::aggregate_leaf_counts`]); a datum that is no number draws nothing.
    fn counted(
        &self,
        round: NumberTreeRound<O>,
        rng: ChaCha20Rng,
    ) -> Option<Box<dyn CountedAggregate>> {
        let leaves = round.query().tree().domain() as usize;
        ElementCounts::boxed(
            round,
            rng,
            leaves,
            |query, data| Some(query.leaf(f64::read(data, |x| *x)?)),
            |round, counts, rng| round.aggregate_leaf_counts(counts, rng),
        )
    }

    /// The document `tally range --mechanism M --json` or `tally quantiles --mechanism M
    /// --json` prints for the same parameters (no seed).
    fn document(
        &self,
        guarantee: &Guarantee,
        output: Option<Estimates>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let buckets = self.tree.domain() as usize;
        let counts = self
            .tree
            .read(output.unwrap_or_else(|| Estimates(vec![0.0; buckets])));
        let users = spec.expected_population;
        let about = TreeDocument {
            mechanism: document::range_tree_mechanism(self.mechanism.name()),
            parameters: document::range_tree_parameters(&self.tree, self.range, users),
            guarantee,
            target_delta: spec.privacy.delta,
            input: input_description(spec),
            users,
            seed: None,
        };
        match &self.reading {
            &TreeReading::Range { lo, hi } => serde_json::to_string_pretty(
                &document::tree_range_count(&counts, self.range, (lo, hi), about),
            ),
            TreeReading::Quantiles(quantiles) => {
                // Unwrap safety: the tree is one-dimensional.
                let protocol = ShuffleQuantiles::new(self.tree.clone(), users)
                    .expect("a one-dimensional tree");
                let sketch = protocol.sketch(counts);
                let to_original = |y: f64| self.range.map_or(y, |r| r.from_unit(y));
                serde_json::to_string_pretty(&QuantilesRelease {
                    mechanism: about.mechanism,
                    parameters: about.parameters,
                    guarantee: guarantee.into(),
                    target_delta: about.target_delta,
                    input: about.input,
                    quantiles: quantiles
                        .iter()
                        .map(|&quantile| QuantileRow {
                            quantile,
                            value: to_original(sketch.quantile(quantile)),
                            interval: None,
                            true_value: None,
                            rank_error: None,
                        })
                        .collect(),
                    seed: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::sample_threshold::Analysis;
    use tally_messages::{PROTOCOL_VERSION, RoundPolicy, TaskKind};

    use super::*;
    use crate::engine::drawn_from_counts;

    /// A range tree of 3 levels over `[0, 1]` for 3,000 devices at `ε = 8`, counting
    /// `[0.25, 0.75)`, that waits for 3,001.
    fn spec(mechanism: RangeTreeMechanism) -> TaskSpec {
        TaskSpec {
            version: PROTOCOL_VERSION,
            population: "numbers".into(),
            expected_population: 3000,
            privacy: PrivacyTarget {
                epsilon: 8.0,
                delta: 1e-6,
                neighbours: Neighbours::ReplaceOne,
                analysis: Analysis::Tight,
            },
            kind: TaskKind::RangeTree {
                mechanism,
                levels: 3,
                range: None,
                reading: TreeReading::Range { lo: 0.25, hi: 0.75 },
                failure_probability: None,
                public_coins: Some(1),
            },
            rounds: RoundPolicy {
                min_cohort: 3000,
                cohort_target: Some(3001),
                ..RoundPolicy::default()
            },
            sampling: Sampling::Aggregator,
        }
    }

    /// A tree round opened for a simulator draws its aggregator from how many devices'
    /// numbers fall in each leaf, on either oracle: the range's 2,000 devices (a number below
    /// the range counts at its low end, outside `[0.25, 0.75)`) stand out as when every device
    /// answers; a datum that is no number draws nothing (every device answers instead).
    #[test]
    fn a_tree_round_draws_its_aggregator_from_the_devices_counts() {
        // Count-Min's reports fit the largest limit at ε = 54 and 2 levels.
        for (mechanism, epsilon, depth) in [
            (RangeTreeMechanism::GhaziHadamard, 8.0, 3),
            (RangeTreeMechanism::GhaziCountMin, 54.0, 2),
        ] {
            let mut spec = spec(mechanism);
            spec.privacy.epsilon = epsilon;
            if let TaskKind::RangeTree { levels, .. } = &mut spec.kind {
                *levels = depth;
            }
            spec.rounds.cohort_target = None;
            spec.rounds.max_report_bytes = tally_messages::MAX_REPORT_BYTES;
            let (mut engine, _) = Engine::build(&spec).unwrap();
            assert!(engine.advance());
            let aggregate = |held: &[(&str, u64)]| drawn_from_counts(&engine, held);
            let not_a_number = [("0.3", 2_999), ("apple", 1)];
            assert!(aggregate(&not_a_number).is_none(), "{mechanism:?}");
            let held = [("0.3", 1_200), ("0.7", 800), ("0.9", 500), ("-4", 500)];
            let aggregator = aggregate(&held).expect("drawn");
            engine.observe(aggregator.release()).unwrap();
            let document: serde_json::Value =
                serde_json::from_str(&engine.document(&spec)).unwrap();
            let estimate = document["estimate"].as_f64().expect("an estimate");
            assert!(
                (estimate - 2_000.0).abs() < 300.0,
                "{mechanism:?}: {document}"
            );
        }
    }

    /// A Count-Min range tree whose rounds would wait for more devices than its blanket cap
    /// counts is refused, as the Count-Min histogram and prefix tree are; Ghazi's Hadamard tree
    /// caps nothing and is not refused for it.
    #[test]
    fn a_count_min_tree_waits_for_at_most_the_devices_its_cap_counts() {
        let refused = Engine::build(&spec(RangeTreeMechanism::GhaziCountMin))
            .err()
            .expect("refused");
        assert!(
            refused.contains("cohort_target 3001") && refused.contains("at most 3000"),
            "{refused}"
        );
        let hadamard = Engine::build(&spec(RangeTreeMechanism::GhaziHadamard)).err();
        assert!(
            hadamard
                .as_ref()
                .is_none_or(|message| !message.contains("cohort_target")),
            "{hadamard:?}"
        );
    }
}
