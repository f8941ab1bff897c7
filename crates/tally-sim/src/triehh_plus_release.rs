//! Running TrieHH++ heavy hitters and building their document, as `tally heavy-hitters
//! --algorithm triehh++ --json` prints it.

use crate::{
    CountedPopulation, KeyedPopulation, run_keyed_triehh_plus, run_triehh_plus_counted,
    run_triehh_plus_selection_counted,
};
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::Method;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_core::heavy_hitters::{
    LevelMechanism, TrieHhPlus, TrieHhPlusConfig, TrieOutput, keyed_level_mechanism,
    plan_selection_levels, release_prefix_counts,
};
use tally_core::histogram::{SampleThreshold, plan_rounds};
use tally_core::sampling::SamplingKey;
use tally_core::task::Task as _;
use tally_messages::HeavyHittersRelease;
use tally_protocol::document::{self, LevelRelease, TriePlusParameters};

/// How a TrieHH++ run is configured.
#[derive(Clone, Copy, Debug)]
pub struct TriePlusSettings {
    /// Target `ε` of the whole run.
    pub epsilon: f64,
    /// Target `δ` of the whole run.
    pub delta: f64,
    /// Prefix-tree levels `L`.
    pub levels: usize,
    /// Characters added per level `G`.
    pub segment: usize,
    /// Whether devices report only below a surviving prefix.
    pub restricted: bool,
    /// How the levels' guarantees compose.
    pub composition: Composition,
    /// What each level's planner solves for.
    pub target: PlanTarget,
    /// The analysis of each level.
    pub analysis: Analysis,
    /// The neighbour relation.
    pub neighbours: Neighbours,
    /// The partition selection every level runs instead of sample-and-threshold (`target` and
    /// `analysis` then play no part), or `None` for sample-and-threshold.
    pub selection: Option<Method>,
}

impl TriePlusSettings {
    /// The composition a run uses when the caller names none: [`Composition::Optimal`] for
    /// partition-selection levels (the exact curve of `L` identical `(ε', δ')` pairs),
    /// [`Composition::default_for_rounds`] for sample-and-threshold levels.
    pub fn default_composition(selection: Option<Method>, neighbours: Neighbours) -> Composition {
        match selection {
            Some(_) => Composition::Optimal,
            None => Composition::default_for_rounds(neighbours),
        }
    }

    /// The task of a run with these settings whose levels run `per_level`.
    ///
    /// # Errors
    ///
    /// Whatever [`TrieHhPlus::new`] rejects.
    fn task<M: LevelMechanism>(&self, per_level: M) -> Result<TrieHhPlus<M>, tally_core::Error> {
        TrieHhPlus::new(TrieHhPlusConfig {
            levels: self.levels,
            segment: self.segment,
            restricted: self.restricted,
            per_level,
            composition: self.composition,
            total_delta: self.delta,
        })
    }

    /// Refuses a run of no levels (named as the user gives them, not as composition's rounds).
    fn check_levels(&self) -> Result<(), tally_core::Error> {
        if self.levels == 0 {
            return Err(tally_core::Error::InvalidParameter {
                name: "levels",
                value: "0".to_owned(),
                expected: "an integer ≥ 1",
            });
        }
        Ok(())
    }

    /// Refuses sample-and-threshold's options with partition-selection levels: a fixed
    /// sampling rate or threshold, and an analysis other than the default tight one.
    fn check_selection(&self) -> Result<(), tally_core::Error> {
        let fixed = match self.target {
            PlanTarget::MinReleasedCount => None,
            PlanTarget::SamplingRate(rate) => Some(("sampling rate", rate.to_string())),
            PlanTarget::Threshold(threshold) => Some(("threshold", threshold.to_string())),
            PlanTarget::Alpha(alpha) => Some(("alpha", alpha.to_string())),
        };
        if let Some((name, value)) = fixed {
            return Err(tally_core::Error::InvalidParameter {
                name,
                value,
                expected: "none with partition-selection levels, which calibrate their noise \
                           and threshold from ε and δ (drop it)",
            });
        }
        if self.analysis != Analysis::Tight {
            return Err(tally_core::Error::InvalidParameter {
                name: "analysis",
                value: self.analysis.to_string(),
                expected: "the default (tight) with partition-selection levels: the analysis \
                           is sample-and-threshold's (drop it)",
            });
        }
        Ok(())
    }
}

/// Runs TrieHH++ over a counted population (each level one exact binomial per distinct
/// prefix, equal in law to one exact coin per client) with randomness from `seed` and builds
/// its document (`shown_seed` is the seed to show, `None` when the user gave none). A loaded
/// population is counted with [`CountedPopulation::from_population`].
///
/// # Errors
///
/// Whatever the planner and the task reject.
pub fn triehh_plus_counted(
    population: &CountedPopulation,
    settings: &TriePlusSettings,
    seed: u64,
    shown_seed: Option<u64>,
) -> Result<HeavyHittersRelease, tally_core::Error> {
    settings.check_levels()?;
    let clients = population.clients();
    if let Some(method) = settings.selection {
        settings.check_selection()?;
        let per_level = plan_selection_levels(
            method,
            settings.epsilon,
            settings.delta,
            settings.levels,
            settings.composition,
            settings.neighbours,
        )?;
        let task = settings.task(per_level.clone())?;
        let output = run_triehh_plus_selection_counted(population, task, seed)?;
        return Ok(document(
            &output,
            settings,
            LevelRelease::Selection(&per_level),
            clients,
            population.description(),
            shown_seed,
        ));
    }
    release(
        settings,
        shown_seed,
        clients,
        population.description(),
        false,
        |task| Ok(run_triehh_plus_counted(population, task, seed)),
    )
}

/// Runs TrieHH++ over `population` with keyed coins of `key` (level `ℓ`'s coin of a client
/// is the keyed PRF of `(key, ℓ, client id)`, its one row chosen by the key) and builds its
/// document, showing `shown_seed` (the seed the user gave, which generated synthetic rows;
/// `None` when none was given), as the keyed histogram shows it. Each level's rate is rounded
/// down to a multiple of `2^-64` and the guarantee computed for it.
///
/// # Errors
///
/// Whatever the planner and the task reject.
pub fn triehh_plus_keyed(
    population: &KeyedPopulation,
    settings: &TriePlusSettings,
    key: &SamplingKey,
    shown_seed: Option<u64>,
) -> Result<HeavyHittersRelease, tally_core::Error> {
    release(
        settings,
        shown_seed,
        population.len() as u64,
        population.description(),
        true,
        |task| run_keyed_triehh_plus(population, task, key),
    )
}

/// The document of a keyed TrieHH++ run whose levels were counted elsewhere (on Spark):
/// `levels[ℓ − 1]` holds level `ℓ`'s sampled counts of prefixes (at least those reaching the
/// threshold), for every level the run took, over `clients` clients described by
/// `description`.
///
/// # Errors
///
/// Whatever the planner rejects, or counts for another number of levels than the run takes.
pub fn triehh_plus_keyed_counts(
    levels: Vec<Vec<(String, u64)>>,
    clients: u64,
    description: &str,
    settings: &TriePlusSettings,
) -> Result<HeavyHittersRelease, tally_core::Error> {
    let given = levels.len();
    let mismatch = |expected| tally_core::Error::InvalidParameter {
        name: "levels of counts",
        value: given.to_string(),
        expected,
    };
    release(settings, None, clients, description, true, |mut task| {
        let mut levels = levels.into_iter();
        while let Some(query) = task.next_query() {
            let counts = levels
                .next()
                .ok_or_else(|| mismatch("counts for every level the run takes"))?;
            task.observe(release_prefix_counts(&query.mechanism, counts));
        }
        if levels.next().is_some() {
            return Err(mismatch("no counts past the level the run stops at"));
        }
        Ok(task.finish())
    })
}

/// The mechanism every level of a run with `settings` uses (with keyed coins when `keyed`:
/// the rate rounded down to a multiple of `2^-64`, the guarantee computed for it).
///
/// # Errors
///
/// Whatever the planner rejects.
pub fn per_level_mechanism(
    settings: &TriePlusSettings,
    keyed: bool,
) -> Result<SampleThreshold, tally_core::Error> {
    settings.check_levels()?;
    let per_level = plan_rounds(
        settings.epsilon,
        settings.delta,
        settings.levels,
        settings.composition,
        settings.target,
        settings.analysis,
        settings.neighbours,
    )?
    .per_round;
    if keyed {
        keyed_level_mechanism(&per_level, settings.analysis, settings.neighbours)
    } else {
        Ok(per_level)
    }
}

/// Plans the sample-and-threshold levels (for keyed coins when `keyed`), runs the task with
/// `run` over `clients` clients described by `description`, and builds the document.
///
/// # Errors
///
/// Whatever the planner and the task reject, and partition-selection levels with `keyed`
/// coins (they sample nobody).
fn release(
    settings: &TriePlusSettings,
    shown_seed: Option<u64>,
    clients: u64,
    description: &str,
    keyed: bool,
    run: impl FnOnce(TrieHhPlus) -> Result<TrieOutput, tally_core::Error>,
) -> Result<HeavyHittersRelease, tally_core::Error> {
    if let Some(method) = settings.selection {
        return Err(tally_core::Error::InvalidParameter {
            name: "level mechanism",
            value: method.name().to_owned(),
            expected: "sample-threshold with a sampling key (the key draws sampling coins; \
                       partition-selection levels sample nobody: drop the key)",
        });
    }
    let per_level = per_level_mechanism(settings, keyed)?;
    let task = settings.task(per_level.clone())?;
    let output = run(task)?;
    Ok(document(
        &output,
        settings,
        LevelRelease::SampleThreshold(&per_level),
        clients,
        description,
        shown_seed,
    ))
}

/// The document of a run with `settings` whose levels ran `per_level`.
fn document(
    output: &TrieOutput,
    settings: &TriePlusSettings,
    per_level: LevelRelease<'_>,
    clients: u64,
    description: &str,
    shown_seed: Option<u64>,
) -> HeavyHittersRelease {
    document::triehh_plus(
        output,
        &TriePlusParameters {
            levels: settings.levels,
            segment: settings.segment,
            restricted: settings.restricted,
            composition: settings.composition,
            per_level,
        },
        clients,
        description.to_owned(),
        shown_seed,
    )
}
