//! Tasks as the federated runtime runs them: a tally-core [`Task`] whose queries are rounds of
//! the round protocol, driven round by round from the releases the aggregator produces, by one
//! generic driver. Nothing here re-implements a mechanism: calibration, the per-round query,
//! the admission rule and the final output all come from tally-core and tally-accounting; the
//! rounds' wire form comes from [`crate::rounds`].
//!
//! This file is the registration point of task kinds: [`Engine::build`] maps each
//! [`TaskKind`] to its task, and each `Kind` says how its task's queries become rounds, how
//! a round's release becomes the task's, and which document the finished task publishes.
//! Kinds that are not sample-and-threshold rounds live in their own files below
//! (`triehh`).

mod triehh;

use rand::Rng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::composition::Composition;
use tally_accounting::sample_threshold::PlanTarget;
use tally_accounting::{Collusion, Guarantee, Neighbours, TrustModel};
use tally_core::heavy_hitters::{
    PrefixRound, TrieHhPlus, TrieHhPlusConfig, TrieHhPlusQuery, TrieOutput,
};
use tally_core::histogram::{
    ReleasedCount, RoundPlan, SampleThreshold, SampleThresholdRelease, plan_rounds,
};
use tally_core::protocol::wire::{
    BoundedDomainQuery, WireAggregator, WireCell, WireRelease, admitting,
};
use tally_core::protocol::{
    BucketOfLevel, CountedRound, DeviceQuery, MultiMessage, QuantileSearches, RoundAggregator,
    RoundProtocol, SampleThresholdRound, SideOfSplit, SingleRound, ThresholdCell, WholeItem,
    WireReport,
};
use tally_core::quantiles::{
    HierarchicalConfig, HierarchicalHistogram, LevelQuery, MAX_SEARCH_ROUNDS, QuantileSearch,
    ThresholdQuery, TreeShape, ValueRange,
};
use tally_core::task::Task;
use tally_messages::{
    Ask, ErrorCode, PrivacyTarget, QuantileMethod, QuantileRow, QuantilesRelease, ReleasedItem,
    Sampling, TaskKind, TaskSpec, round_composition,
};

use crate::document;
use crate::rounds::{PublishedQuery, coin_holder};
use crate::shuffler::{self, ShuffledReport};

mod count_min_prefix_tree;
mod domain;
mod opt_prefix_tree;
mod range_tree;
mod selection;
mod triehh_plus_selection;

/// What a finished federated run's document says its input was.
fn input_description(spec: &TaskSpec) -> String {
    format!(
        "federated: population {} ({} devices expected)",
        spec.population, spec.expected_population
    )
}

/// A task kind as the registry defines it, read off a spec's [`TaskKind`] before anything is
/// calibrated: what the executors and the front ends ask of a kind, and how its task is built.
pub trait TaskDefinition {
    /// The kind's short name, as `tally task list` shows it.
    fn name(&self) -> &'static str;

    /// What the task computes and how, for people; `neighbours` is the task's neighbour
    /// relation (which sets the default composition of its rounds).
    fn description(&self, neighbours: Neighbours) -> String;

    /// The most rounds the task runs.
    fn rounds(&self) -> u32;

    /// The rounds of one pass over the task's levels, each a round to calibrate and run (the
    /// server caps them): its rounds, but for binary searches, the rounds of one search.
    fn levels(&self) -> u32 {
        self.rounds()
    }

    /// The quantiles the task estimates (none for a kind that estimates none).
    fn quantiles(&self) -> &[f64] {
        &[]
    }

    /// Why the console draws no release curve for the task, when its rounds are not
    /// sample-and-threshold rounds.
    fn no_curve_reason(&self) -> &'static str {
        "The task's rounds are not sample-and-threshold rounds: there is no release curve. \
         The guarantee above is what it promises."
    }

    /// Who flips the task's sampling coins, for people, when its spec says `sampling`.
    fn sampling(&self, sampling: Sampling) -> String {
        format!("by the {}", sampling.name())
    }

    /// What the aggregator sees and whom the guarantee holds against, for people, when the
    /// guarantee's trust model does not say it all.
    fn trust(&self) -> Option<&'static str> {
        None
    }

    /// The same task with a seed of its own for its public coins, drawn by `draw`, if its
    /// mechanism publishes some (hash functions every device and the aggregator share) and it
    /// names none yet; `None` (and `draw` not called) otherwise.
    fn with_public_coins(&self, draw: &mut dyn FnMut() -> u64) -> Option<TaskKind> {
        let _ = draw;
        None
    }

    /// A round's minimum cohort when the spec's creator names none, for `expected_population`
    /// devices: [`DEFAULT_MIN_COHORT`], but the expected population for a kind whose
    /// guarantee trusts a shuffler (it holds only when at least the devices it was calibrated
    /// for report).
    fn default_min_cohort(&self, expected_population: u64) -> u64 {
        let _ = expected_population;
        DEFAULT_MIN_COHORT
    }

    /// Calibrates the task `spec` asks for and computes its guarantee.
    ///
    /// # Errors
    ///
    /// A message saying why the task cannot run as asked.
    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String>;
}

/// A round's minimum cohort when the spec's creator names none and the kind trusts no
/// shuffler ([`TaskDefinition::default_min_cohort`]).
pub const DEFAULT_MIN_COHORT: u64 = 100;

/// Gives a new task whose mechanism publishes public coins and whose spec names no seed for
/// them a seed of its own, drawn by `draw` (from the server's stream, seeded only in tests),
/// which is called only then, so a task without public coins leaves the stream as it was:
/// every task gets its own hash functions, and a restarted server rebuilds the same ones from
/// the stored spec ([`TaskDefinition::with_public_coins`]).
///
/// # Privacy
///
/// The coins are public (published in every ask of the task); the guarantee holds whatever
/// they are, as long as they are drawn independently of the devices' data, as here.
pub fn draw_public_coins(kind: &mut TaskKind, mut draw: impl FnMut() -> u64) {
    let seeded = definition(kind).with_public_coins(&mut draw);
    if let Some(seeded) = seeded {
        *kind = seeded;
    }
}

/// The definition of the task kind `kind`: the one place a task kind is registered, and the
/// only `match` on a task's kind.
pub fn definition(kind: &TaskKind) -> Box<dyn TaskDefinition + '_> {
    match kind {
        TaskKind::Histogram {
            mechanism,
            sampling_rate,
            threshold,
        } => match mechanism.selection() {
            Some(method) => Box::new(selection::SelectionTask {
                method,
                sampling_rate: *sampling_rate,
                threshold: *threshold,
            }),
            None => Box::new(HistogramTask {
                sampling_rate: *sampling_rate,
                threshold: *threshold,
                publication: Publication::Histogram,
            }),
        },
        TaskKind::SingleRound {
            sampling_rate,
            threshold,
        } => Box::new(HistogramTask {
            sampling_rate: *sampling_rate,
            threshold: *threshold,
            publication: Publication::HeavyHitters,
        }),
        TaskKind::HeavyHitters {
            algorithm: _,
            levels,
            segment,
            restricted,
            composition,
            sampling_rate,
            threshold,
        } => Box::new(TriePlusTask {
            levels: *levels,
            segment: *segment,
            restricted: *restricted,
            composition: *composition,
            sampling_rate: *sampling_rate,
            threshold: *threshold,
        }),
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
        } => Box::new(QuantilesTask {
            method: *method,
            quantiles,
            branching: *branching,
            levels: *levels,
            consistent: *consistent,
            composition: *composition,
            range: *range,
            sampling_rate: *sampling_rate,
            threshold: *threshold,
        }),
        TaskKind::Range {
            lo,
            hi,
            branching,
            levels,
            consistent,
            composition,
            range,
            sampling_rate,
            threshold,
        } => Box::new(RangeTask {
            lo: *lo,
            hi: *hi,
            branching: *branching,
            levels: *levels,
            consistent: *consistent,
            composition: *composition,
            range: *range,
            sampling_rate: *sampling_rate,
            threshold: *threshold,
        }),
        TaskKind::Triehh {
            levels,
            segment,
            beam,
        } => Box::new(triehh::TrieHhTask {
            levels: *levels,
            segment: *segment,
            beam: *beam,
        }),
        TaskKind::DomainHistogram {
            mechanism,
            domain,
            public_coins,
        } => Box::new(domain::DomainTask {
            mechanism: *mechanism,
            domain: *domain,
            public_coins: *public_coins,
        }),
        TaskKind::RangeTree {
            mechanism,
            levels,
            range,
            reading,
            failure_probability,
            public_coins,
        } => Box::new(range_tree::TreeTask {
            mechanism: *mechanism,
            levels: *levels,
            range: *range,
            reading,
            failure_probability: *failure_probability,
            public_coins: *public_coins,
        }),
        TaskKind::OptPrefixTree(options) => Box::new(opt_prefix_tree::OptPrefixTreeTask(options)),
        TaskKind::CountMinPrefixTree {
            domain_bits,
            threshold,
            failure_probability,
            public_coins,
        } => Box::new(count_min_prefix_tree::TreeTask {
            domain_bits: *domain_bits,
            threshold: *threshold,
            failure_probability: *failure_probability,
            public_coins: *public_coins,
        }),
        TaskKind::TriehhPlusSelection {
            mechanism,
            levels,
            segment,
            composition,
        } => Box::new(triehh_plus_selection::TrieSelectionTask {
            mechanism: *mechanism,
            levels: *levels,
            segment: *segment,
            composition: *composition,
        }),
    }
}

/// A round opened for devices: what it asks, and the aggregator counting its reports.
pub struct OpenedRound {
    /// What devices are asked.
    pub ask: Ask,
    /// Decodes, checks and counts the round's reports.
    pub aggregator: Box<dyn WireAggregator>,
    /// Why a report the round does not admit is refused.
    pub refusal: ErrorCode,
}

/// A round's aggregator drawn from how many devices hold each datum, without their reports
/// ([`tally_core::protocol::CountedRound::aggregate_counts`]): with the law of every device
/// answering, at a cost of the data's counts.
pub trait CountedAggregate: Send {
    /// The round's aggregator after `holders` devices holding each `data` of `held` answered,
    /// its own coins those [`Engine::counted`] was given and the devices' drawn from `devices`;
    /// `None` when the round cannot draw it from these counts (a datum some device holds
    /// outside its domain, or a protocol calibrated for another number of devices), and then
    /// every device answers.
    fn aggregate(
        self: Box<Self>,
        held: &mut dyn Iterator<Item = (&str, u64)>,
        devices: &mut dyn Rng,
    ) -> Option<Box<dyn WireAggregator>>;
}

/// How a round draws its aggregate from how many devices hold each element, when it can.
type DrawFromCounts<R> = fn(&R, &[u64], &mut dyn Rng) -> Option<<R as RoundProtocol>::Aggregator>;

/// The aggregator of a round drawn from how many devices hold each element of its domain
/// (for example [`CountedRound::aggregate_counts`]): what a kind whose rounds can draw one
/// gives as its [`Kind::counted`].
pub(super) struct ElementCounts<R: RoundProtocol> {
    round: R,
    rng: ChaCha20Rng,
    /// The number of elements.
    size: usize,
    /// The element a device holding a datum counts at, if any.
    element: fn(&R::Query, &str) -> Option<u32>,
    /// The aggregate drawn from how many devices hold each element, if the round can draw it.
    draw: DrawFromCounts<R>,
}

impl<R: RoundProtocol> ElementCounts<R> {
    /// The aggregate of `round`, its own coins `rng`, over `size` elements: a device holding a
    /// datum counts at its `element`, and `draw` draws the aggregate from the counts.
    pub(super) fn boxed(
        round: R,
        rng: ChaCha20Rng,
        size: usize,
        element: fn(&R::Query, &str) -> Option<u32>,
        draw: DrawFromCounts<R>,
    ) -> Option<Box<dyn CountedAggregate>>
    where
        Self: CountedAggregate + 'static,
    {
        Some(Box::new(Self {
            round,
            rng,
            size,
            element,
            draw,
        }))
    }

    /// The aggregate of `round`, a round whose devices hold an element of a public domain
    /// ([`BoundedDomainQuery::domain_map`]), drawn by [`CountedRound::aggregate_counts`].
    pub(super) fn of_domain(round: R, rng: ChaCha20Rng) -> Option<Box<dyn CountedAggregate>>
    where
        R: CountedRound<Query: BoundedDomainQuery>,
        Self: CountedAggregate + 'static,
    {
        let size = round.query().domain_map().size() as usize;
        Self::boxed(
            round,
            rng,
            size,
            |query, data| query.domain_map().element(data),
            |round, counts, rng| round.aggregate_counts(counts, rng),
        )
    }
}

impl<R> CountedAggregate for ElementCounts<R>
where
    R: RoundProtocol<
            Query: DeviceQuery<Report: WireReport + MultiMessage<Message: WireReport> + Clone>
                       + Clone
                       + Send
                       + 'static,
            Aggregator: Send + 'static,
            Release: WireRelease,
        > + Send,
{
    /// The aggregator the round draws from the elements' counts, merged into one with the
    /// round's coins, as the simulator's `run_counted_round` does; shuffled rounds skip the
    /// shuffle, whose permutation their analyzer's release does not see.
    fn aggregate(
        self: Box<Self>,
        held: &mut dyn Iterator<Item = (&str, u64)>,
        devices: &mut dyn Rng,
    ) -> Option<Box<dyn WireAggregator>> {
        let query = self.round.query();
        let mut counts = vec![0_u64; self.size];
        for (data, holders) in held.filter(|&(_, holders)| holders > 0) {
            counts[(self.element)(query, data)? as usize] += holders;
        }
        let answered = (self.draw)(&self.round, &counts, devices)?;
        let mut aggregator = self.round.aggregator(self.rng);
        aggregator.merge(answered);
        Some(admitting(query.clone(), aggregator))
    }
}

/// A task in progress, whatever its kind.
pub struct Engine(Box<dyn FederatedTask>);

impl Clone for Engine {
    fn clone(&self) -> Self {
        Self(self.0.clone_box())
    }
}

impl Engine {
    /// Calibrates the task `spec` asks for and computes its guarantee.
    ///
    /// # Errors
    ///
    /// A message saying why the task cannot run as asked.
    pub fn build(spec: &TaskSpec) -> Result<(Self, Guarantee), String> {
        definition(&spec.kind).build(spec)
    }

    /// The task's sample-and-threshold rounds, whatever its neighbour relation; `None` for a
    /// task of other rounds.
    pub fn threshold_rounds(&self) -> Option<ThresholdRounds> {
        self.0.threshold_rounds()
    }

    /// Moves to the next round; `false` once the task has nothing more to ask.
    pub fn advance(&mut self) -> bool {
        self.0.advance()
    }

    /// The current round's number, from 1.
    pub fn round(&self) -> u32 {
        self.0.round()
    }

    /// Opens the current round: its ask, and an aggregator whose coins (under aggregator-side
    /// `sampling`) come from the secret stream `rng`.
    pub fn open(&self, sampling: Sampling, rng: ChaCha20Rng) -> OpenedRound {
        self.0.open(sampling, rng)
    }

    /// The current round's aggregator as [`Engine::open`] with the same `sampling` and `rng`
    /// opens it, to be drawn from how many devices hold each datum rather than from their
    /// reports, for a round that can (a histogram over a public domain whose round has
    /// [`tally_core::protocol::CountedRound::aggregate_counts`]): a simulator's path, which a
    /// server, never holding the counts, does not take.
    pub fn counted(
        &self,
        sampling: Sampling,
        rng: ChaCha20Rng,
    ) -> Option<Box<dyn CountedAggregate>> {
        self.0.counted(sampling, rng)
    }

    /// Takes the current round's release.
    ///
    /// # Errors
    ///
    /// The report of a cell that is not the one spelling of one of the round's reports (a
    /// corrupt stored release).
    pub fn observe(&mut self, cells: Vec<WireCell>) -> Result<(), String> {
        self.0.observe(cells)
    }

    /// What the task's guarantee keeps when a fraction `colluding_fraction` of its devices
    /// colludes with the analyst, and the floor when every other device does
    /// ([`tally_accounting::collusion`]): `Some` for every task whose guarantee is in the
    /// shuffle model, `None` for the others (central and local guarantees do not rest on other
    /// devices' honesty).
    ///
    /// # Errors
    ///
    /// A message saying why it cannot be computed (`colluding_fraction ∉ [0, 1]`, or a
    /// shuffle-model task without an analysis of collusion).
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, String> {
        self.0.collusion(colluding_fraction)
    }

    /// The released document of a finished task (call once [`Engine::advance`] returned
    /// `false`).
    pub fn document(self, spec: &TaskSpec) -> String {
        self.0.document(spec)
    }
}

/// A task of any kind behind one interface: what the runtime drives.
trait FederatedTask: Send + Sync {
    fn threshold_rounds(&self) -> Option<ThresholdRounds>;
    fn advance(&mut self) -> bool;
    fn round(&self) -> u32;
    fn open(&self, sampling: Sampling, rng: ChaCha20Rng) -> OpenedRound;
    fn counted(&self, sampling: Sampling, rng: ChaCha20Rng) -> Option<Box<dyn CountedAggregate>>;
    fn observe(&mut self, cells: Vec<WireCell>) -> Result<(), String>;
    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, String>;
    fn document(self: Box<Self>, spec: &TaskSpec) -> String;
    fn clone_box(&self) -> Box<dyn FederatedTask>;
}

/// The query of a kind's task.
type QueryOf<K> = <<K as Kind>::Task as Task>::Query;
/// What a round of a kind releases.
type RoundReleaseOf<K> = <<K as Kind>::Round as RoundProtocol>::Release;

/// A kind of task the server runs: its tally-core task, the round each of its queries is
/// (which brings its own aggregator and release rule), and the document it publishes.
trait Kind: Clone + Send + Sync + 'static {
    /// The multi-round task.
    type Task: Task<Query: Clone + Send + Sync> + Clone + Send + Sync + 'static;
    /// One round of the task, as the server holds it.
    type Round: RoundProtocol<
            Query: PublishedQuery + DeviceQuery<Report: ShuffledReport> + Clone + Send + 'static,
            Release: WireRelease,
            Aggregator: Send + 'static,
        >;

    /// The round that asks `query`, its coins flipped as `sampling` says.
    fn round(&self, query: &QueryOf<Self>, sampling: Sampling) -> Self::Round;

    /// The sample-and-threshold mechanism of the round asking `query`, if it is one.
    fn threshold_round(query: &QueryOf<Self>) -> Option<&SampleThreshold>;

    /// The round's release as the task's.
    fn release(
        query: &QueryOf<Self>,
        release: RoundReleaseOf<Self>,
    ) -> <Self::Task as Task>::Release;

    /// What the guarantee of `task` keeps when a fraction `colluding_fraction` of its devices
    /// colludes with the analyst ([`tally_accounting::collusion`]), for a kind whose guarantee
    /// is in the shuffle model; `None` (the default) for a kind whose guarantee does not rest
    /// on other devices' honesty (central and local guarantees). [`Engine::collusion`] refuses
    /// a shuffle-model task whose kind gives `None`.
    ///
    /// # Errors
    ///
    /// What the mechanism's analysis returns.
    fn collusion(
        &self,
        task: &Self::Task,
        colluding_fraction: f64,
    ) -> Result<Option<Collusion>, tally_core::Error> {
        let _ = (task, colluding_fraction);
        Ok(None)
    }

    /// The aggregator of `round` drawn from its devices' data counts, its coins `rng`, for a
    /// kind whose rounds can ([`Engine::counted`]); `None` (the default) otherwise.
    fn counted(&self, round: Self::Round, rng: ChaCha20Rng) -> Option<Box<dyn CountedAggregate>> {
        let _ = (round, rng);
        None
    }

    /// The document of the finished task, whose guarantee was `guarantee`.
    fn document(
        &self,
        guarantee: &Guarantee,
        output: <Self::Task as Task>::Output,
        spec: &TaskSpec,
    ) -> serde_json::Result<String>;
}

/// A task's sample-and-threshold rounds: the mechanism each runs (every round of these tasks
/// runs the same) and how many its guarantee composes.
#[derive(Clone, Debug)]
pub struct ThresholdRounds {
    /// The mechanism of every round.
    pub per_round: SampleThreshold,
    /// How many rounds the task's guarantee composes.
    pub rounds: usize,
}

/// The one generic driver: a task of kind `K`, its current query and round number.
#[derive(Clone)]
struct Driven<K: Kind> {
    kind: K,
    task: K::Task,
    query: Option<QueryOf<K>>,
    round: u32,
    threshold: Option<ThresholdRounds>,
}

/// `task` of `kind` behind [`Engine`], with its guarantee; `rounds` is how many rounds its
/// guarantee composes (for the ledger).
fn driven<K: Kind>(kind: K, task: K::Task, rounds: usize) -> (Engine, Guarantee) {
    let guarantee = task.guarantee().clone();
    // The per-round mechanism is the first query's; every round of these tasks runs the same.
    let threshold = task.clone().next_query().and_then(|query| {
        K::threshold_round(&query).map(|per_round| ThresholdRounds {
            per_round: per_round.clone(),
            rounds,
        })
    });
    let engine = Driven {
        kind,
        task,
        query: None,
        round: 0,
        threshold,
    };
    (Engine(Box::new(engine)), guarantee)
}

impl<K: Kind> Driven<K> {
    fn current(&self) -> &QueryOf<K> {
        // The runtime only asks for the current round between `advance` returning true and
        // the next `advance`.
        self.query.as_ref().expect("a round is running")
    }
}

impl<K: Kind> FederatedTask for Driven<K> {
    fn threshold_rounds(&self) -> Option<ThresholdRounds> {
        self.threshold.clone()
    }

    fn advance(&mut self) -> bool {
        self.query = self.task.next_query();
        self.round += u32::from(self.query.is_some());
        self.query.is_some()
    }

    fn round(&self) -> u32 {
        self.round
    }

    fn open(&self, sampling: Sampling, rng: ChaCha20Rng) -> OpenedRound {
        let query = self.current();
        let round = self.kind.round(query, sampling);
        let ask = round.query().ask();
        let refusal = <K::Round as RoundProtocol>::Query::REFUSAL;
        OpenedRound {
            ask,
            aggregator: shuffler::aggregator(round, rng),
            refusal,
        }
    }

    fn counted(&self, sampling: Sampling, rng: ChaCha20Rng) -> Option<Box<dyn CountedAggregate>> {
        let round = self.kind.round(self.current(), sampling);
        self.kind.counted(round, rng)
    }

    fn observe(&mut self, cells: Vec<WireCell>) -> Result<(), String> {
        let release = RoundReleaseOf::<K>::from_cells(cells)
            .map_err(|cell| format!("released cell {cell:?}"))?;
        let release = K::release(self.current(), release);
        self.task.observe(release);
        Ok(())
    }

    fn collusion(&self, colluding_fraction: f64) -> Result<Option<Collusion>, String> {
        let collusion = self
            .kind
            .collusion(&self.task, colluding_fraction)
            .map_err(|e| e.to_string())?;
        if collusion.is_none() && self.task.guarantee().model == TrustModel::Shuffle {
            return Err(format!(
                "the task's guarantee ({}) is in the shuffle model, but its kind states no \
                 guarantee against colluding devices",
                self.task.guarantee().analysis
            ));
        }
        Ok(collusion)
    }

    fn document(self: Box<Self>, spec: &TaskSpec) -> String {
        let Driven { kind, task, .. } = *self;
        let guarantee = task.guarantee().clone();
        // Unwrap safety: the documents are plain data that always serialize.
        kind.document(&guarantee, task.finish(), spec)
            .expect("release documents serialize")
    }

    fn clone_box(&self) -> Box<dyn FederatedTask> {
        Box::new(self.clone())
    }
}

/// A one-round sample-and-threshold task: `tally histogram` or single-round heavy hitters.
struct HistogramTask {
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
    /// The document it publishes.
    publication: Publication,
}

impl TaskDefinition for HistogramTask {
    fn name(&self) -> &'static str {
        match self.publication {
            Publication::Histogram => "sample-threshold",
            Publication::HeavyHitters => "single-round",
        }
    }

    fn description(&self, _: Neighbours) -> String {
        let what = match self.publication {
            Publication::Histogram => "sample-and-threshold histogram",
            Publication::HeavyHitters => {
                "single-round heavy hitters (one sample-and-threshold histogram of whole items)"
            }
        };
        format!(
            "{what}, {}",
            calibration(self.sampling_rate, self.threshold)
        )
    }

    fn rounds(&self) -> u32 {
        1
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        Histogram::build(
            &spec.privacy,
            plan_target(self.sampling_rate, self.threshold)?,
            self.publication,
        )
    }
}

/// One sample-and-threshold histogram round of the devices' items.
#[derive(Clone)]
struct Histogram {
    mechanism: SampleThreshold,
    /// The document it publishes.
    publication: Publication,
}

/// What a one-round sample-and-threshold task publishes: the same cells, as the offline
/// command that runs the same round prints them.
#[derive(Clone, Copy)]
enum Publication {
    /// `tally histogram --mechanism sample-threshold`.
    Histogram,
    /// `tally heavy-hitters --algorithm single-round`.
    HeavyHitters,
}

impl Histogram {
    /// The round calibrated for `privacy` and `target`, publishing its `publication`.
    fn build(
        privacy: &PrivacyTarget,
        target: PlanTarget,
        publication: Publication,
    ) -> Result<(Engine, Guarantee), String> {
        let mechanism = SampleThreshold::calibrate(
            privacy.epsilon,
            privacy.delta,
            target,
            privacy.analysis,
            privacy.neighbours,
        )
        .map_err(|e| e.to_string())?;
        let task = SingleRound::new(mechanism.clone(), mechanism.guarantee().clone());
        let kind = Self {
            mechanism,
            publication,
        };
        Ok(driven(kind, task, 1))
    }
}

impl Kind for Histogram {
    type Task = SingleRound<SampleThreshold, Vec<ThresholdCell<String>>>;
    type Round = SampleThresholdRound<WholeItem>;

    fn round(&self, query: &SampleThreshold, sampling: Sampling) -> Self::Round {
        SampleThresholdRound::new(WholeItem, query.clone(), coin_holder(sampling))
    }

    fn threshold_round(query: &SampleThreshold) -> Option<&SampleThreshold> {
        Some(query)
    }

    fn release(
        _: &SampleThreshold,
        cells: Vec<ThresholdCell<String>>,
    ) -> Vec<ThresholdCell<String>> {
        cells
    }

    fn document(
        &self,
        _: &Guarantee,
        output: Option<Vec<ThresholdCell<String>>>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let items = output
            .unwrap_or_default()
            .into_iter()
            .map(|cell| ReleasedItem {
                item: cell.key,
                count: Some(cell.count),
                estimate: Some(cell.estimate),
            })
            .collect();
        let population = spec.expected_population;
        match self.publication {
            Publication::Histogram => serde_json::to_string_pretty(&document::sample_threshold(
                items,
                &self.mechanism,
                population,
                spec.privacy.delta,
                input_description(spec),
                "federated",
                None,
            )),
            Publication::HeavyHitters => serde_json::to_string_pretty(&document::single_round(
                items,
                &self.mechanism,
                population,
                input_description(spec),
                None,
            )),
        }
    }
}

/// A TrieHH++ task.
struct TriePlusTask {
    levels: u32,
    segment: u32,
    restricted: bool,
    composition: Option<Composition>,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
}

impl TaskDefinition for TriePlusTask {
    fn name(&self) -> &'static str {
        "triehh++"
    }

    fn description(&self, neighbours: Neighbours) -> String {
        let TriePlusTask {
            levels, segment, ..
        } = self;
        format!(
            "triehh++ heavy hitters, {levels} levels of {segment} character(s), {}, {} \
             composition, {}",
            if self.restricted {
                "restricted"
            } else {
                "unrestricted"
            },
            round_composition(self.composition, neighbours),
            calibration(self.sampling_rate, self.threshold)
        )
    }

    fn rounds(&self) -> u32 {
        self.levels
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        let composition = round_composition(self.composition, privacy.neighbours);
        let levels = self.levels as usize;
        let plan = plan(
            privacy,
            levels.max(1),
            composition,
            plan_target(self.sampling_rate, self.threshold)?,
        )?;
        let per_level = plan.per_round;
        let task = TrieHhPlus::new(TrieHhPlusConfig {
            levels,
            segment: self.segment as usize,
            restricted: self.restricted,
            per_level: per_level.clone(),
            composition,
            total_delta: privacy.delta,
        })
        .map_err(|e| e.to_string())?;
        let kind = TriePlus {
            levels,
            segment: self.segment as usize,
            restricted: self.restricted,
            composition,
            per_level,
        };
        Ok(driven(kind, task, levels))
    }
}

/// TrieHH++: one S&T histogram of prefixes per level.
#[derive(Clone)]
struct TriePlus {
    levels: usize,
    segment: usize,
    restricted: bool,
    composition: Composition,
    per_level: SampleThreshold,
}

impl Kind for TriePlus {
    type Task = TrieHhPlus;
    type Round = SampleThresholdRound<PrefixRound>;

    fn round(&self, query: &TrieHhPlusQuery, sampling: Sampling) -> Self::Round {
        let prefixes = query.prefixes.clone();
        SampleThresholdRound::new(prefixes, query.mechanism.clone(), coin_holder(sampling))
    }

    fn threshold_round(query: &TrieHhPlusQuery) -> Option<&SampleThreshold> {
        Some(&query.mechanism)
    }

    fn release(_: &TrieHhPlusQuery, cells: Vec<ThresholdCell<String>>) -> Vec<(String, u64, f64)> {
        cells
            .into_iter()
            .map(|cell| (cell.key, cell.count, cell.estimate))
            .collect()
    }

    fn document(
        &self,
        _: &Guarantee,
        output: TrieOutput,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let parameters = document::TriePlusParameters {
            levels: self.levels,
            segment: self.segment,
            restricted: self.restricted,
            composition: self.composition,
            per_level: document::LevelRelease::SampleThreshold(&self.per_level),
        };
        triehh_plus_document(&output, &parameters, spec)
    }
}

/// The document of a finished TrieHH++ task whose run had `parameters`: the offline command's
/// ([`document::triehh_plus`]), over the expected population.
fn triehh_plus_document(
    output: &TrieOutput,
    parameters: &document::TriePlusParameters<'_>,
    spec: &TaskSpec,
) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&document::triehh_plus(
        output,
        parameters,
        spec.expected_population,
        input_description(spec),
        None,
    ))
}

/// A quantile task by sample-and-threshold rounds: a hierarchical histogram or binary
/// searches.
struct QuantilesTask<'a> {
    method: QuantileMethod,
    quantiles: &'a [f64],
    branching: Option<u32>,
    levels: u32,
    consistent: bool,
    composition: Option<Composition>,
    range: Option<[f64; 2]>,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
}

impl TaskDefinition for QuantilesTask<'_> {
    fn name(&self) -> &'static str {
        "quantiles"
    }

    fn description(&self, neighbours: Neighbours) -> String {
        let levels = self.levels;
        let [min, max] = self.range.unwrap_or([0.0, 1.0]);
        let quantiles: Vec<String> = self.quantiles.iter().map(f64::to_string).collect();
        let how = match self.method {
            QuantileMethod::Hierarchical => {
                hierarchical_tree(levels, self.branching, self.consistent)
            }
            QuantileMethod::BinarySearch => {
                format!("binary search, {levels} rounds per quantile")
            }
        };
        format!(
            "quantiles {} of numbers in [{min}, {max}] from {how}, {} composition, {}",
            quantiles.join(", "),
            round_composition(self.composition, neighbours),
            calibration(self.sampling_rate, self.threshold)
        )
    }

    fn rounds(&self) -> u32 {
        match self.method {
            QuantileMethod::Hierarchical => self.levels,
            QuantileMethod::BinarySearch => self
                .levels
                .saturating_mul(u32::try_from(self.quantiles.len()).unwrap_or(u32::MAX)),
        }
    }

    fn levels(&self) -> u32 {
        self.levels
    }

    fn quantiles(&self) -> &[f64] {
        self.quantiles
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        let quantiles = self.quantiles;
        let composition = round_composition(self.composition, privacy.neighbours);
        if quantiles.is_empty() {
            return Err("quantiles: give at least one".to_owned());
        }
        if let Some(q) = quantiles.iter().find(|q| !(0.0..=1.0).contains(*q)) {
            return Err(format!("quantile {q}: expected numbers in [0, 1]"));
        }
        let range = value_range(self.range)?;
        let target = plan_target(self.sampling_rate, self.threshold)?;
        match self.method {
            QuantileMethod::Hierarchical => Hierarchical::build(
                privacy,
                tree_shape(self.branching, self.levels)?,
                composition,
                target,
                range,
                self.consistent,
                Reading::Quantiles(quantiles.to_vec()),
            ),
            QuantileMethod::BinarySearch => {
                if self.branching.is_some() || self.consistent {
                    return Err(
                        "branching and consistent apply to the hierarchical method only".to_owned(),
                    );
                }
                let rounds = self.levels as usize;
                if !(1..=MAX_SEARCH_ROUNDS).contains(&rounds) {
                    return Err(format!(
                        "levels {rounds}: a binary search runs 1 to {MAX_SEARCH_ROUNDS} rounds"
                    ));
                }
                let plan = plan(privacy, rounds * quantiles.len(), composition, target)?;
                let task =
                    QuantileSearches::new(quantiles, rounds, &plan).map_err(|e| e.to_string())?;
                let total = plan.rounds;
                Ok(driven(
                    BinarySearch {
                        plan,
                        rounds,
                        range,
                    },
                    task,
                    total,
                ))
            }
        }
    }
}

/// A range count from a hierarchical histogram of sample-and-threshold rounds.
struct RangeTask {
    lo: f64,
    hi: f64,
    branching: Option<u32>,
    levels: u32,
    consistent: bool,
    composition: Option<Composition>,
    range: Option<[f64; 2]>,
    sampling_rate: Option<f64>,
    threshold: Option<u64>,
}

impl TaskDefinition for RangeTask {
    fn name(&self) -> &'static str {
        "range"
    }

    fn description(&self, neighbours: Neighbours) -> String {
        let (lo, hi) = (self.lo, self.hi);
        let [min, max] = self.range.unwrap_or([0.0, 1.0]);
        format!(
            "range count of [{lo}, {hi}) among numbers in [{min}, {max}] from {}, {} \
             composition, {}",
            hierarchical_tree(self.levels, self.branching, self.consistent),
            round_composition(self.composition, neighbours),
            calibration(self.sampling_rate, self.threshold)
        )
    }

    fn rounds(&self) -> u32 {
        self.levels
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        let (lo, hi) = (self.lo, self.hi);
        let range = value_range(self.range)?;
        let (min, max) = range.map_or((0.0, 1.0), |r| (r.min(), r.max()));
        if !(min <= lo && lo <= hi && hi <= max) {
            return Err(format!(
                "range [{lo}, {hi}): expected min ≤ lo ≤ hi ≤ max within [{min}, {max}]"
            ));
        }
        Hierarchical::build(
            privacy,
            tree_shape(self.branching, self.levels)?,
            round_composition(self.composition, privacy.neighbours),
            plan_target(self.sampling_rate, self.threshold)?,
            range,
            self.consistent,
            Reading::Range(lo, hi),
        )
    }
}

/// Quantiles or a range count from a hierarchical histogram, one S&T histogram of buckets
/// per level.
#[derive(Clone)]
struct Hierarchical {
    /// The plan of its levels.
    plan: RoundPlan,
    /// The tree.
    shape: TreeShape,
    /// The range the devices' numbers are rescaled from.
    range: Option<ValueRange>,
    /// What is read from the tree.
    reading: Reading,
    /// Whether to make the tree consistent before reading it.
    consistent: bool,
}

/// What a hierarchical histogram task reads from its tree.
#[derive(Clone)]
enum Reading {
    /// These quantiles (`tally quantiles`), each in `[0, 1]`.
    Quantiles(Vec<f64>),
    /// The count of `[lo, hi)` in the devices' units (`tally range`), within their range.
    Range(f64, f64),
}

impl Hierarchical {
    /// The tree of `shape` over numbers rescaled from `range`, its levels calibrated for
    /// `privacy` and composed by `composition`, read as `reading` says.
    fn build(
        privacy: &PrivacyTarget,
        shape: TreeShape,
        composition: Composition,
        target: PlanTarget,
        range: Option<ValueRange>,
        consistent: bool,
        reading: Reading,
    ) -> Result<(Engine, Guarantee), String> {
        let plan = plan(privacy, shape.levels() as usize, composition, target)?;
        let task = HierarchicalHistogram::new(HierarchicalConfig::planned(shape, &plan))
            .map_err(|e| e.to_string())?;
        let rounds = plan.rounds;
        let kind = Self {
            plan,
            shape,
            range,
            reading,
            consistent,
        };
        Ok(driven(kind, task, rounds))
    }
}

impl Kind for Hierarchical {
    type Task = HierarchicalHistogram;
    type Round = SampleThresholdRound<BucketOfLevel>;

    fn round(&self, query: &LevelQuery, sampling: Sampling) -> Self::Round {
        let feature = BucketOfLevel {
            shape: query.shape,
            level: query.level,
            range: self.range,
        };
        SampleThresholdRound::new(feature, query.mechanism.clone(), coin_holder(sampling))
    }

    fn threshold_round(query: &LevelQuery) -> Option<&SampleThreshold> {
        Some(&query.mechanism)
    }

    fn release(query: &LevelQuery, cells: Vec<ThresholdCell<u32>>) -> SampleThresholdRelease {
        bucket_release(cells, &query.mechanism)
    }

    /// The document `tally quantiles --json` or `tally range --json` prints for the same
    /// parameters.
    fn document(
        &self,
        _: &Guarantee,
        release: tally_core::quantiles::HierarchicalRelease,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let release = if self.consistent {
            release.consistent()
        } else {
            release
        };
        let to_original = |y: f64| self.range.map_or(y, |r| r.from_unit(y));
        let parameters = document::hierarchical_parameters(
            &document::HierarchicalParameters {
                shape: self.shape,
                range: self.range,
                consistent: self.consistent,
                composition: self.plan.composition,
                per_level: &self.plan.per_round,
                population: spec.expected_population,
            },
            &release,
        );
        let quantiles = match &self.reading {
            Reading::Quantiles(quantiles) => quantiles,
            &Reading::Range(lo, hi) => {
                // Unwrap safety: the range was checked to lie within the devices' units when
                // the task was built.
                let document = document::range_count(
                    &release,
                    self.range,
                    (lo, hi),
                    parameters,
                    spec.privacy.delta,
                    input_description(spec),
                    None,
                )
                .expect("a range within the devices' units");
                return serde_json::to_string_pretty(&document);
            }
        };
        let quantiles = quantiles
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
        serde_json::to_string_pretty(&QuantilesRelease {
            mechanism: document::HIERARCHICAL_HISTOGRAM.to_owned(),
            parameters,
            guarantee: release.guarantee().into(),
            target_delta: spec.privacy.delta,
            input: input_description(spec),
            quantiles,
            seed: None,
        })
    }
}

/// Quantiles by binary search, one S&T histogram of two buckets per round.
#[derive(Clone)]
struct BinarySearch {
    /// The plan of all the rounds.
    plan: RoundPlan,
    /// The rounds of each search.
    rounds: usize,
    /// The range the devices' numbers are rescaled from.
    range: Option<ValueRange>,
}

impl Kind for BinarySearch {
    type Task = QuantileSearches;
    type Round = SampleThresholdRound<SideOfSplit>;

    fn round(&self, query: &ThresholdQuery, sampling: Sampling) -> Self::Round {
        let feature = SideOfSplit {
            threshold: query.threshold,
            range: self.range,
        };
        SampleThresholdRound::new(feature, query.mechanism.clone(), coin_holder(sampling))
    }

    fn threshold_round(query: &ThresholdQuery) -> Option<&SampleThreshold> {
        Some(&query.mechanism)
    }

    fn release(query: &ThresholdQuery, cells: Vec<ThresholdCell<u32>>) -> SampleThresholdRelease {
        bucket_release(cells, &query.mechanism)
    }

    /// The document `tally quantiles --method binary-search --json` prints for the same
    /// parameters.
    fn document(
        &self,
        guarantee: &Guarantee,
        searches: Vec<QuantileSearch>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let to_original = |y: f64| self.range.map_or(y, |r| r.from_unit(y));
        let quantiles = searches
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
            searches: searches.len(),
            range: self.range,
            composition: self.plan.composition,
            per_round: &self.plan.per_round,
            population: spec.expected_population,
        });
        serde_json::to_string_pretty(&QuantilesRelease {
            mechanism: document::BINARY_SEARCH.to_owned(),
            parameters,
            guarantee: guarantee.into(),
            target_delta: spec.privacy.delta,
            input: input_description(spec),
            quantiles,
            seed: None,
        })
    }
}

/// A round's released buckets as tally-core's release of `mechanism`.
fn bucket_release(
    cells: Vec<ThresholdCell<u32>>,
    mechanism: &SampleThreshold,
) -> SampleThresholdRelease {
    SampleThresholdRelease {
        items: cells
            .into_iter()
            .map(|cell| ReleasedCount {
                item: cell.key,
                count: cell.count,
                estimate: cell.estimate,
            })
            .collect(),
        params: *mechanism.params(),
        guarantee: mechanism.guarantee().clone(),
    }
}

/// What a sample-and-threshold task's rounds are calibrated for: a fixed `sampling_rate` or
/// `threshold` (at most one), else the smallest count a round can release.
fn plan_target(sampling_rate: Option<f64>, threshold: Option<u64>) -> Result<PlanTarget, String> {
    match (sampling_rate, threshold) {
        (Some(_), Some(_)) => Err("give at most one of sampling_rate and threshold".to_owned()),
        (Some(rate), None) => Ok(PlanTarget::SamplingRate(rate)),
        (None, Some(threshold)) => Ok(PlanTarget::Threshold(threshold)),
        (None, None) => Ok(PlanTarget::MinReleasedCount),
    }
}

/// How a sample-and-threshold task's rounds are calibrated, for people.
fn calibration(sampling_rate: Option<f64>, threshold: Option<u64>) -> String {
    match (sampling_rate, threshold) {
        (Some(rate), _) => format!("sampling rate {rate}"),
        (None, Some(threshold)) => format!("threshold {threshold}"),
        (None, None) => "calibrated for the smallest releasable count".to_owned(),
    }
}

/// A hierarchical task's tree as its description says it: `levels` levels of `branching`
/// ([`DEFAULT_BRANCHING`] when left out), made consistent or not.
fn hierarchical_tree(levels: u32, branching: Option<u32>, consistent: bool) -> String {
    format!(
        "a hierarchical histogram, {levels} levels of branching {}{}",
        branching.unwrap_or(DEFAULT_BRANCHING),
        if consistent { ", made consistent" } else { "" },
    )
}

/// The tree's branching factor when a hierarchical task gives none.
const DEFAULT_BRANCHING: u32 = 4;

/// The tree of a hierarchical task: `branching` ([`DEFAULT_BRANCHING`] when left out) and
/// `levels`.
fn tree_shape(branching: Option<u32>, levels: u32) -> Result<TreeShape, String> {
    TreeShape::new(branching.unwrap_or(DEFAULT_BRANCHING), levels).map_err(|e| e.to_string())
}

/// The range `[min, max]` a task's devices' numbers are rescaled from, if it gives one.
fn value_range(range: Option<[f64; 2]>) -> Result<Option<ValueRange>, String> {
    range
        .map(|[min, max]| ValueRange::new(min, max))
        .transpose()
        .map_err(|e| e.to_string())
}

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

/// Runs the task `spec` asks for as the server runs it, through its wire form, over devices
/// holding `words`: each round every device answers the published ask (coins from the stream
/// `!seed`), and the round's aggregator draws its coins from the round's stream of `seed`. The
/// released document.
#[cfg(test)]
fn run_over_words(spec: &TaskSpec, words: &[String], seed: u64) -> String {
    use rand::SeedableRng;

    use crate::AskResponder;

    let (mut engine, _) = Engine::build(spec).unwrap();
    let mut coins = ChaCha20Rng::seed_from_u64(seed);
    let mut devices = ChaCha20Rng::seed_from_u64(!seed);
    while engine.advance() {
        let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::from_rng(&mut coins));
        let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
        let mut aggregator = opened.aggregator;
        for word in words {
            let report = responder.respond(word, 256, &mut devices).unwrap();
            aggregator.absorb(report).unwrap();
        }
        engine.observe(aggregator.release()).unwrap();
    }
    engine.document(spec)
}

/// The aggregator the open round of `engine` draws from devices holding `held` (`held[i].1`
/// devices holding `held[i].0`), its own coins seeded with 1 and the devices' with 2; `None`
/// when the round cannot draw one from these counts.
///
/// # Panics
///
/// If the round's kind draws none from counts at all ([`Engine::counted`]).
#[cfg(test)]
fn drawn_from_counts(engine: &Engine, held: &[(&str, u64)]) -> Option<Box<dyn WireAggregator>> {
    use rand::SeedableRng;

    engine
        .counted(Sampling::Aggregator, ChaCha20Rng::seed_from_u64(1))
        .expect("the round draws from counts")
        .aggregate(
            &mut held.iter().copied(),
            &mut ChaCha20Rng::seed_from_u64(2),
        )
}

#[cfg(test)]
mod tests {
    use tally_messages::{
        DomainHistogramMechanism, HistogramMechanism, PublicDomain, RangeTreeMechanism, TreeReading,
    };

    use super::*;

    /// A domain histogram and a range tree over Count-Min (and a Count-Min prefix tree) with
    /// `counting_min`, or over mechanisms that publish no coins, each with the public coins
    /// `seed`.
    fn kinds(counting_min: bool, seed: Option<u64>) -> Vec<TaskKind> {
        let (domain, tree) = match counting_min {
            true => (
                DomainHistogramMechanism::GhaziCountMin,
                RangeTreeMechanism::GhaziCountMin,
            ),
            false => (
                DomainHistogramMechanism::Grr,
                RangeTreeMechanism::GhaziHadamard,
            ),
        };
        let mut kinds = vec![
            TaskKind::DomainHistogram {
                mechanism: domain,
                domain: PublicDomain::Integers(16),
                public_coins: seed,
            },
            TaskKind::RangeTree {
                mechanism: tree,
                levels: 4,
                range: None,
                reading: TreeReading::Quantiles(vec![0.5]),
                failure_probability: None,
                public_coins: seed,
            },
        ];
        if counting_min {
            kinds.push(TaskKind::CountMinPrefixTree {
                domain_bits: 8,
                threshold: 5,
                failure_probability: None,
                public_coins: seed,
            });
        }
        kinds
    }

    /// A task whose mechanism publishes public coins and that names no seed gets one, drawn
    /// once from the stream, and keeps everything else; every other task (another mechanism,
    /// a seed already named) stays as it was and draws nothing, so that the server's stream,
    /// and the byte-for-byte loopback tests on it, see no change.
    #[test]
    fn only_a_task_of_public_coins_without_a_seed_draws_one() {
        for (kind, seeded) in kinds(true, None).into_iter().zip(kinds(true, Some(7))) {
            let mut drawn = kind;
            let mut draws = 0;
            draw_public_coins(&mut drawn, || {
                draws += 1;
                7
            });
            assert_eq!((draws, &drawn), (1, &seeded));
        }
        let histogram = TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: None,
            threshold: None,
        };
        let mut unseeded = kinds(false, None);
        unseeded.push(histogram);
        for kind in unseeded.into_iter().chain(kinds(true, Some(3))) {
            let mut drawn = kind.clone();
            draw_public_coins(&mut drawn, || panic!("{kind:?} drew a seed"));
            assert_eq!(drawn, kind);
        }
    }

    /// A kind whose guarantee trusts a shuffler (the Ghazi et al. oracles, the shuffled
    /// histograms) waits for the devices it was calibrated for when its creator names no
    /// minimum cohort; a local or sample-and-threshold one for [`DEFAULT_MIN_COHORT`].
    #[test]
    fn a_shuffled_kind_waits_for_its_expected_population_by_default() {
        let minimum = |kind: &TaskKind| definition(kind).default_min_cohort(3000);
        for kind in kinds(true, None) {
            assert_eq!(minimum(&kind), 3000, "{kind:?}");
        }
        let [grr, hadamard_tree] = <[TaskKind; 2]>::try_from(kinds(false, None)).unwrap();
        assert_eq!(minimum(&grr), DEFAULT_MIN_COHORT);
        assert_eq!(minimum(&hadamard_tree), 3000);
        let balcer_cheu = TaskKind::DomainHistogram {
            mechanism: DomainHistogramMechanism::BalcerCheu,
            domain: PublicDomain::Integers(16),
            public_coins: None,
        };
        assert_eq!(minimum(&balcer_cheu), 3000);
        let histogram = TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: None,
            threshold: None,
        };
        assert_eq!(minimum(&histogram), DEFAULT_MIN_COHORT);
    }
}
