//! Tasks as the server runs them: a tally-core mechanism or multi-round task, driven round by
//! round from the releases the aggregator produces. Nothing here re-implements a mechanism:
//! calibration, the per-round query, the validation rule and the final output all come from
//! tally-core and tally-accounting.

use std::collections::VecDeque;

use tally_accounting::Guarantee;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::PlanTarget;
use tally_core::heavy_hitters::{TrieHhPlus, TrieHhPlusConfig, TrieHhPlusQuery};
use tally_core::histogram::{
    ReleasedCount, RoundPlan, SampleThreshold, SampleThresholdRelease, plan_rounds,
};
use tally_core::quantiles::{
    BinarySearchConfig, BinarySearchQuantile, HierarchicalConfig, HierarchicalHistogram,
    LevelQuery, MAX_SEARCH_ROUNDS, QuantileSearch, ThresholdQuery, TreeShape, ValueRange,
};
use tally_core::task::Task;
use tally_messages::{
    Ask, PrivacyTarget, QuantileMethod, QuantileRow, QuantilesRelease, ReleasedItem, TaskKind,
    TaskSpec, round_composition,
};

use crate::aggregator::Cell;
use crate::document;
use crate::ledger::LossRounds;
use crate::round::Validator;

/// What a finished federated run's document says its input was.
fn input_description(spec: &TaskSpec) -> String {
    format!(
        "federated: population {} ({} devices expected)",
        spec.population, spec.expected_population
    )
}

/// A task in progress: its mechanism, where it is, and what it has released.
#[derive(Clone)]
pub(crate) enum Engine {
    /// One sample-and-threshold histogram round.
    Histogram {
        /// The calibrated mechanism.
        mechanism: SampleThreshold,
        /// Whether its round was handed out.
        started: bool,
        /// The release, once there is one.
        released: Option<Vec<Cell>>,
    },
    /// TrieHH++, one S&T histogram of prefixes per level.
    TrieHhPlus {
        /// The tally-core task.
        task: Box<TrieHhPlus>,
        /// The level being run.
        query: Option<TrieHhPlusQuery>,
        /// The per-level mechanism.
        per_level: SampleThreshold,
        /// The configuration, for the released document.
        config: TrieSettings,
    },
    /// Quantiles from a hierarchical histogram, one S&T histogram of buckets per level.
    Quantiles(Box<QuantileEngine>),
    /// Quantiles by binary search, one S&T histogram of two buckets per round.
    Search(Box<SearchEngine>),
}

/// A hierarchical histogram read for quantiles.
#[derive(Clone)]
pub(crate) struct QuantileEngine {
    /// The tally-core task.
    task: HierarchicalHistogram,
    /// The level being run.
    query: Option<LevelQuery>,
    /// The plan of its levels.
    plan: RoundPlan,
    /// The tree.
    shape: TreeShape,
    /// The range the devices' numbers are rescaled from.
    range: Option<ValueRange>,
    /// The quantiles to read.
    quantiles: Vec<f64>,
    /// Whether to make the tree consistent before reading it.
    consistent: bool,
}

/// What a TrieHH++ document reports of its configuration.
#[derive(Clone, Copy)]
pub(crate) struct TrieSettings {
    levels: usize,
    segment: usize,
    restricted: bool,
    composition: Composition,
}

impl Engine {
    /// Calibrates the task `spec` asks for and computes its guarantee.
    ///
    /// # Errors
    ///
    /// A message saying why the task cannot run as asked.
    pub(crate) fn build(spec: &TaskSpec) -> Result<(Self, Guarantee), String> {
        let privacy = &spec.privacy;
        let target = |rate: Option<f64>, threshold: Option<u64>| match (rate, threshold) {
            (Some(_), Some(_)) => Err("give at most one of sampling_rate and threshold".to_owned()),
            (Some(rate), None) => Ok(PlanTarget::SamplingRate(rate)),
            (None, Some(threshold)) => Ok(PlanTarget::Threshold(threshold)),
            (None, None) => Ok(PlanTarget::MinReleasedCount),
        };
        match &spec.kind {
            TaskKind::Histogram {
                mechanism: _,
                sampling_rate,
                threshold,
            } => {
                let mechanism = SampleThreshold::calibrate(
                    privacy.epsilon,
                    privacy.delta,
                    target(*sampling_rate, *threshold)?,
                    privacy.analysis,
                    privacy.neighbours,
                )
                .map_err(|e| e.to_string())?;
                let guarantee = mechanism.guarantee().clone();
                Ok((
                    Self::Histogram {
                        mechanism,
                        started: false,
                        released: None,
                    },
                    guarantee,
                ))
            }
            TaskKind::HeavyHitters {
                algorithm: _,
                levels,
                segment,
                restricted,
                composition,
                sampling_rate,
                threshold,
            } => {
                let composition = &round_composition(*composition, privacy.neighbours);
                let levels = *levels as usize;
                let plan = plan(
                    privacy,
                    levels.max(1),
                    *composition,
                    target(*sampling_rate, *threshold)?,
                )?;
                let per_level = plan.per_round;
                let task = TrieHhPlus::new(TrieHhPlusConfig {
                    levels,
                    segment: *segment as usize,
                    restricted: *restricted,
                    per_level: per_level.clone(),
                    composition: *composition,
                    total_delta: privacy.delta,
                })
                .map_err(|e| e.to_string())?;
                let guarantee = task.guarantee().clone();
                Ok((
                    Self::TrieHhPlus {
                        task: Box::new(task),
                        query: None,
                        per_level,
                        config: TrieSettings {
                            levels,
                            segment: *segment as usize,
                            restricted: *restricted,
                            composition: *composition,
                        },
                    },
                    guarantee,
                ))
            }
            TaskKind::Quantiles {
                method,
                quantiles,
                branching,
                levels,
                consistent,
                composition,
                range,
                sampling_rate,
                threshold,
            } => {
                let composition = &round_composition(*composition, privacy.neighbours);
                if quantiles.is_empty() {
                    return Err("quantiles: give at least one".to_owned());
                }
                if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
                    return Err(format!("quantile {q}: expected numbers in [0, 1]"));
                }
                let range = range
                    .map(|[min, max]| ValueRange::new(min, max))
                    .transpose()
                    .map_err(|e| e.to_string())?;
                let target = target(*sampling_rate, *threshold)?;
                match method {
                    QuantileMethod::Hierarchical => {
                        let shape = TreeShape::new(branching.unwrap_or(DEFAULT_BRANCHING), *levels)
                            .map_err(|e| e.to_string())?;
                        let plan = plan(privacy, *levels as usize, *composition, target)?;
                        let task =
                            HierarchicalHistogram::new(HierarchicalConfig::planned(shape, &plan))
                                .map_err(|e| e.to_string())?;
                        let guarantee = task.guarantee().clone();
                        let engine = QuantileEngine {
                            task,
                            query: None,
                            plan,
                            shape,
                            range,
                            quantiles: quantiles.clone(),
                            consistent: *consistent,
                        };
                        Ok((Self::Quantiles(Box::new(engine)), guarantee))
                    }
                    QuantileMethod::BinarySearch => {
                        if branching.is_some() || *consistent {
                            return Err("branching and consistent apply to the hierarchical \
                                        method only"
                                .to_owned());
                        }
                        let engine = SearchEngine::new(
                            privacy,
                            quantiles,
                            *levels as usize,
                            *composition,
                            target,
                            range,
                        )?;
                        let guarantee = engine.guarantee.clone();
                        Ok((Self::Search(Box::new(engine)), guarantee))
                    }
                }
            }
        }
    }

    /// The task's S&T rounds as the ledger's tight accountant composes them; `None` where
    /// they have no loss pair (replace-one neighbours).
    pub(crate) fn loss_rounds(&self) -> Option<LossRounds> {
        match self {
            Self::Histogram { mechanism, .. } => LossRounds::of(mechanism, 1),
            Self::TrieHhPlus {
                per_level, config, ..
            } => LossRounds::of(per_level, config.levels),
            Self::Quantiles(engine) => LossRounds::of(&engine.plan.per_round, engine.plan.rounds),
            Self::Search(engine) => LossRounds::of(&engine.plan.per_round, engine.plan.rounds),
        }
    }

    /// Moves to the next round; `false` once the task has nothing more to ask.
    pub(crate) fn advance(&mut self) -> bool {
        match self {
            Self::Histogram { started, .. } => !std::mem::replace(started, true),
            Self::TrieHhPlus { task, query, .. } => {
                *query = task.next_query();
                query.is_some()
            }
            Self::Quantiles(engine) => {
                engine.query = engine.task.next_query();
                engine.query.is_some()
            }
            Self::Search(engine) => engine.advance(),
        }
    }

    /// The current round's number, from 1.
    pub(crate) fn round(&self) -> u32 {
        match self {
            Self::Histogram { .. } => 1,
            Self::TrieHhPlus { query, .. } => round_number(current(query).prefixes.round),
            Self::Quantiles(engine) => engine.level().level,
            Self::Search(engine) => engine.round,
        }
    }

    /// What the current round asks devices.
    pub(crate) fn ask(&self) -> Ask {
        match self {
            Self::Histogram { mechanism, .. } => Ask::Item {
                sampling_rate: mechanism.params().sampling_rate(),
            },
            Self::TrieHhPlus { query, .. } => {
                let query = current(query);
                let prefixes = &query.prefixes;
                let live_parents = prefixes.live_parents.as_ref().map(|live| {
                    let mut live: Vec<String> = live.iter().cloned().collect();
                    live.sort_unstable();
                    live
                });
                Ask::Prefix {
                    level: round_number(prefixes.round),
                    segment: round_number(prefixes.segment),
                    live_parents,
                    sampling_rate: query.mechanism.params().sampling_rate(),
                }
            }
            Self::Quantiles(engine) => {
                let query = engine.level();
                Ask::Bucket {
                    level: query.level,
                    levels: engine.shape.levels(),
                    branching: engine.shape.branching(),
                    range: engine.range.map(|r| [r.min(), r.max()]),
                    sampling_rate: query.mechanism.params().sampling_rate(),
                }
            }
            Self::Search(engine) => {
                let query = engine.split();
                Ask::Split {
                    threshold: query.threshold,
                    range: engine.range.map(|r| [r.min(), r.max()]),
                    sampling_rate: query.mechanism.params().sampling_rate(),
                }
            }
        }
    }

    /// How the current round checks reports.
    pub(crate) fn validator(&self) -> Validator {
        match self {
            Self::Histogram { .. } => Validator::Item,
            Self::TrieHhPlus { query, .. } => Validator::Prefix(current(query).prefixes.clone()),
            Self::Quantiles(engine) => Validator::Bucket {
                buckets: engine.level().buckets(),
            },
            Self::Search(_) => Validator::Bucket {
                buckets: ThresholdQuery::BUCKETS as u64,
            },
        }
    }

    /// The mechanism whose release rule the current round's aggregator applies.
    pub(crate) fn mechanism(&self) -> &SampleThreshold {
        match self {
            Self::Histogram { mechanism, .. } => mechanism,
            Self::TrieHhPlus { query, .. } => &current(query).mechanism,
            Self::Quantiles(engine) => &engine.level().mechanism,
            Self::Search(engine) => &engine.split().mechanism,
        }
    }

    /// Takes the current round's release.
    pub(crate) fn observe(&mut self, cells: Vec<Cell>) {
        match self {
            Self::Histogram { released, .. } => *released = Some(cells),
            Self::TrieHhPlus { task, .. } => task.observe(cells),
            Self::Quantiles(engine) => {
                let release = bucket_release(cells, &engine.level().mechanism);
                engine.task.observe(release);
            }
            Self::Search(engine) => engine.observe(cells),
        }
    }

    /// The released document of a finished task (call once [`Engine::advance`] returned
    /// `false`).
    pub(crate) fn document(self, spec: &TaskSpec) -> String {
        let input = input_description(spec);
        let population = spec.expected_population;
        let value = match self {
            Self::Histogram {
                mechanism,
                released,
                ..
            } => {
                let items = released
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(item, count, estimate)| ReleasedItem {
                        item,
                        count: Some(count),
                        estimate: Some(estimate),
                    })
                    .collect();
                serde_json::to_string_pretty(&document::sample_threshold(
                    items,
                    &mechanism,
                    population,
                    spec.privacy.delta,
                    input,
                    "federated",
                    None,
                ))
            }
            Self::TrieHhPlus {
                task,
                per_level,
                config,
                ..
            } => {
                let output = task.finish();
                serde_json::to_string_pretty(&document::triehh_plus(
                    &output,
                    &document::TriePlusParameters {
                        levels: config.levels,
                        segment: config.segment,
                        restricted: config.restricted,
                        composition: config.composition,
                        per_level: &per_level,
                    },
                    population,
                    input,
                    None,
                ))
            }
            Self::Quantiles(engine) => {
                serde_json::to_string_pretty(&engine.document(&spec.privacy, population, input))
            }
            Self::Search(engine) => {
                serde_json::to_string_pretty(&engine.document(&spec.privacy, population, input))
            }
        };
        // Unwrap safety: the documents are plain data that always serialize.
        value.expect("release documents serialize")
    }
}

impl QuantileEngine {
    fn level(&self) -> &LevelQuery {
        // The runtime only asks for the current round between `advance` returning true and
        // the next `advance`.
        self.query.as_ref().expect("a level is running")
    }

    /// The document `tally quantiles --json` prints for the same parameters.
    fn document(self, privacy: &PrivacyTarget, population: u64, input: String) -> QuantilesRelease {
        let release = self.task.finish();
        let release = if self.consistent {
            release.consistent()
        } else {
            release
        };
        let to_original = |y: f64| self.range.map_or(y, |r| r.from_unit(y));
        let quantiles = self
            .quantiles
            .iter()
            .map(|&quantile| QuantileRow {
                quantile,
                // Unwrap safety: the quantiles were checked to lie in [0, 1] when the task
                // was built.
                value: to_original(release.quantile(quantile).expect("a quantile in [0, 1]")),
                interval: None,
                true_value: None,
                rank_error: None,
            })
            .collect();
        let parameters = document::hierarchical_parameters(
            &document::HierarchicalParameters {
                shape: self.shape,
                range: self.range,
                consistent: self.consistent,
                composition: self.plan.composition,
                per_level: &self.plan.per_round,
                population,
            },
            &release,
        );
        QuantilesRelease {
            mechanism: document::HIERARCHICAL_HISTOGRAM.to_owned(),
            parameters,
            guarantee: release.guarantee().into(),
            target_delta: privacy.delta,
            input,
            quantiles,
            seed: None,
        }
    }
}

/// One binary search per quantile, run one after the other.
#[derive(Clone)]
pub(crate) struct SearchEngine {
    /// The searches not started yet, in the order asked.
    waiting: VecDeque<BinarySearchQuantile>,
    /// The search being run.
    running: Option<BinarySearchQuantile>,
    /// Its round being run.
    query: Option<ThresholdQuery>,
    /// The finished searches, in the order asked.
    finished: Vec<QuantileSearch>,
    /// The task's round being run, from 1.
    round: u32,
    /// The plan of all the rounds.
    plan: RoundPlan,
    /// The rounds of each search.
    rounds: usize,
    /// The range the devices' numbers are rescaled from.
    range: Option<ValueRange>,
    /// The guarantee of all the searches.
    guarantee: Guarantee,
}

impl SearchEngine {
    /// Calibrates `quantiles.len() · rounds` rounds within the task's privacy target, as
    /// `tally quantiles --method binary-search` does.
    fn new(
        privacy: &PrivacyTarget,
        quantiles: &[f64],
        rounds: usize,
        composition: Composition,
        target: PlanTarget,
        range: Option<ValueRange>,
    ) -> Result<Self, String> {
        if !(1..=MAX_SEARCH_ROUNDS).contains(&rounds) {
            return Err(format!(
                "levels {rounds}: a binary search runs 1 to {MAX_SEARCH_ROUNDS} rounds"
            ));
        }
        let plan = plan(privacy, rounds * quantiles.len(), composition, target)?;
        let config = |quantile| BinarySearchConfig::planned(quantile, rounds, &plan);
        let waiting = quantiles
            .iter()
            .map(|&q| BinarySearchQuantile::new(config(q)))
            .collect::<Result<VecDeque<_>, _>>()
            .map_err(|e| e.to_string())?;
        let guarantee = config(0.5)
            .guarantee_of(quantiles.len())
            .map_err(|e| e.to_string())?;
        Ok(Self {
            waiting,
            running: None,
            query: None,
            finished: Vec::new(),
            round: 0,
            plan,
            rounds,
            range,
            guarantee,
        })
    }

    /// Moves to the next round of the running search, or to the next search.
    fn advance(&mut self) -> bool {
        loop {
            if let Some(search) = &mut self.running {
                self.query = search.next_query();
                if self.query.is_some() {
                    self.round += 1;
                    return true;
                }
                if let Some(done) = self.running.take() {
                    self.finished.push(done.finish());
                }
            }
            match self.waiting.pop_front() {
                Some(search) => self.running = Some(search),
                None => return false,
            }
        }
    }

    fn split(&self) -> &ThresholdQuery {
        // The runtime only asks for the current round between `advance` returning true and
        // the next `advance`.
        self.query.as_ref().expect("a search round is running")
    }

    fn observe(&mut self, cells: Vec<Cell>) {
        let release = bucket_release(cells, &self.split().mechanism);
        if let Some(search) = &mut self.running {
            search.observe(release);
        }
    }

    /// The document `tally quantiles --method binary-search --json` prints for the same
    /// parameters.
    fn document(self, privacy: &PrivacyTarget, population: u64, input: String) -> QuantilesRelease {
        let to_original = |y: f64| self.range.map_or(y, |r| r.from_unit(y));
        let quantiles = self
            .finished
            .iter()
            .map(|search| QuantileRow {
                quantile: search.quantile,
                value: to_original(search.value),
                interval: Some([to_original(search.lo), to_original(search.hi)]),
                true_value: None,
                rank_error: None,
            })
            .collect();
        let parameters = document::binary_search_parameters(&document::BinarySearchParameters {
            rounds: self.rounds,
            searches: self.finished.len(),
            range: self.range,
            composition: self.plan.composition,
            per_round: &self.plan.per_round,
            population,
        });
        QuantilesRelease {
            mechanism: document::BINARY_SEARCH.to_owned(),
            parameters,
            guarantee: (&self.guarantee).into(),
            target_delta: privacy.delta,
            input,
            quantiles,
            seed: None,
        }
    }
}

/// A round's released buckets as tally-core's release of `mechanism`. The round's validator
/// admitted only the decimal indices of its buckets, so every cell names one.
fn bucket_release(cells: Vec<Cell>, mechanism: &SampleThreshold) -> SampleThresholdRelease {
    SampleThresholdRelease {
        items: cells
            .into_iter()
            .filter_map(|(item, count, estimate)| {
                Some(ReleasedCount {
                    item: item.parse().ok()?,
                    count,
                    estimate,
                })
            })
            .collect(),
        params: *mechanism.params(),
        guarantee: mechanism.guarantee().clone(),
    }
}

/// The tree's branching factor when a hierarchical task gives none.
const DEFAULT_BRANCHING: u32 = 4;

/// Splits the task's privacy target over `rounds` S&T rounds and calibrates them.
fn plan(
    privacy: &PrivacyTarget,
    rounds: usize,
    composition: Composition,
    target: PlanTarget,
) -> Result<RoundPlan, String> {
    plan_rounds(
        privacy.epsilon,
        privacy.delta,
        rounds,
        composition,
        target,
        privacy.analysis,
        privacy.neighbours,
    )
    .map_err(|e| e.to_string())
}

fn current(query: &Option<TrieHhPlusQuery>) -> &TrieHhPlusQuery {
    // The runtime only asks for the current round between `advance` returning true and the
    // next `advance`.
    query.as_ref().expect("a level is running")
}

fn round_number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
