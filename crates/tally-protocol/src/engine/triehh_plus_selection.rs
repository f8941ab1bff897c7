//! TrieHH++ over partition-selection levels as a server task kind: each level every device
//! below a surviving prefix casts a ballot for its next prefix ([`PrefixBallot`]), and the
//! aggregator releases the prefixes whose noisy vote count passes the threshold
//! ([`PartitionSelectionRound`]); the task, its calibration and its guarantee are tally-core's
//! [`TrieHhPlus`] over [`PartitionSelection`] levels, planned as `tally heavy-hitters
//! --algorithm triehh++ --mechanism laplace-threshold|gaussian-threshold` plans them.

use tally_accounting::composition::Composition;
use tally_accounting::partition_selection::Method;
use tally_accounting::sample_threshold::Analysis;
use tally_accounting::{Guarantee, Neighbours};
use tally_core::heavy_hitters::{
    TrieHhPlus, TrieHhPlusConfig, TrieHhPlusQuery, TrieOutput, plan_selection_levels,
    selected_prefixes,
};
use tally_core::histogram::{PartitionSelection, SampleThreshold};
use tally_core::protocol::{PartitionSelectionRound, PrefixBallot, SelectedItems};
use tally_messages::{HistogramMechanism, Sampling, TaskSpec};

use super::{Engine, Kind, TaskDefinition, driven, triehh_plus_document};
use crate::document;

/// What the aggregator sees and whom the guarantee holds against.
const TRUST: &str = "the aggregator adds each level's noise with its own secret randomness: \
    the guarantee holds against the analyst and everyone reading the release, not against the \
    aggregator, which sees every ballot and every prefix's exact count";

/// TrieHH++ whose levels are partition selections of the devices' prefix ballots.
pub(super) struct TrieSelectionTask {
    /// The partition selection of every level.
    pub(super) mechanism: HistogramMechanism,
    /// Prefix-tree levels `L`.
    pub(super) levels: u32,
    /// Characters added per level `g`.
    pub(super) segment: u32,
    /// How the levels compose; `None` for optimal composition.
    pub(super) composition: Option<Composition>,
}

impl TrieSelectionTask {
    /// The composition of the levels: the given one, else [`Composition::Optimal`] (the exact
    /// curve of `L` identical `(ε', δ')` pairs), as the offline command composes them.
    fn composition(&self) -> Composition {
        self.composition.unwrap_or(Composition::Optimal)
    }
}

impl TaskDefinition for TrieSelectionTask {
    fn name(&self) -> &'static str {
        "triehh++-selection"
    }

    fn description(&self, _: Neighbours) -> String {
        let TrieSelectionTask {
            levels, segment, ..
        } = self;
        let method = self
            .mechanism
            .selection()
            .map_or("no partition selection", Method::name);
        format!(
            "triehh++ heavy hitters, {levels} levels of {segment} character(s), restricted, \
             each level a {method} partition selection of the devices' prefix ballots, {} \
             composition",
            self.composition()
        )
    }

    fn rounds(&self) -> u32 {
        self.levels
    }

    fn no_curve_reason(&self) -> &'static str {
        "The task's levels are partition selections, not sample-and-threshold rounds: this page \
         draws no release curve for them. The guarantee above is what it promises."
    }

    fn sampling(&self, _: Sampling) -> String {
        "none: at every level each device below a surviving prefix votes for its next prefix, \
         and under split trust the relay forwards every ballot (there is no sampling coin)"
            .to_owned()
    }

    fn trust(&self) -> Option<&'static str> {
        Some(TRUST)
    }

    /// # Privacy
    ///
    /// Each level is [`plan_selection_levels`]' partition selection, calibrated for one prefix
    /// per device (a device casts one ballot per level, for at most one prefix); the levels
    /// compose by [`TrieHhPlus::new`] ([`tally_core::heavy_hitters::LevelMechanism`]: basic,
    /// advanced, optimal or PLD composition of the per-level pair, each of which holds for
    /// adaptively chosen levels under the task's one neighbour relation). Refuses
    /// sample-and-threshold and the truncated geometric as the level mechanism, device-side
    /// sampling (there is no coin to flip) and an S&T analysis other than the default.
    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        let Some(method) = self.mechanism.selection() else {
            return Err(
                "mechanism sample-threshold: this kind's levels are partition \
                        selections; give laplace-threshold or gaussian-threshold (TrieHH++ over \
                        sample-and-threshold levels is the heavy-hitters kind)"
                    .to_owned(),
            );
        };
        if spec.sampling == Sampling::Device {
            return Err(format!(
                "sampling device: {method} levels flip no sampling coin (every device below a \
                 surviving prefix votes and the aggregator adds the noise); leave sampling at \
                 its default, aggregator"
            ));
        }
        if privacy.analysis != Analysis::Tight {
            return Err(format!(
                "analysis {}: the analysis chooses how sample-and-threshold rounds are \
                 accounted; {method} levels have their own: leave it at its default, tight",
                privacy.analysis.name()
            ));
        }
        let composition = self.composition();
        let levels = self.levels as usize;
        let per_level = plan_selection_levels(
            method,
            privacy.epsilon,
            privacy.delta,
            levels,
            composition,
            privacy.neighbours,
        )
        .map_err(|e| e.to_string())?;
        let task = TrieHhPlus::new(TrieHhPlusConfig {
            levels,
            segment: self.segment as usize,
            restricted: true,
            per_level: per_level.clone(),
            composition,
            total_delta: privacy.delta,
        })
        .map_err(|e| e.to_string())?;
        let kind = TrieSelection {
            levels,
            segment: self.segment as usize,
            composition,
            per_level,
        };
        Ok(driven(kind, task, levels))
    }
}

/// TrieHH++ over partition-selection levels, calibrated.
#[derive(Clone)]
struct TrieSelection {
    levels: usize,
    segment: usize,
    composition: Composition,
    per_level: PartitionSelection,
}

impl Kind for TrieSelection {
    type Task = TrieHhPlus<PartitionSelection>;
    type Round = PartitionSelectionRound<PrefixBallot>;

    fn round(&self, query: &TrieHhPlusQuery<PartitionSelection>, _: Sampling) -> Self::Round {
        let ballot = PrefixBallot(query.prefixes.clone());
        PartitionSelectionRound::over(ballot, query.mechanism.clone())
    }

    /// The levels have no S&T loss pair: the ledger charges the task's `(ε, δ)`.
    fn threshold_round(_: &TrieHhPlusQuery<PartitionSelection>) -> Option<&SampleThreshold> {
        None
    }

    fn release(
        _: &TrieHhPlusQuery<PartitionSelection>,
        release: SelectedItems,
    ) -> Vec<(String, u64, f64)> {
        selected_prefixes(release.0)
    }

    /// The document `tally heavy-hitters --algorithm triehh++ --mechanism METHOD --json`
    /// prints.
    fn document(
        &self,
        _: &Guarantee,
        output: TrieOutput,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let parameters = document::TriePlusParameters {
            levels: self.levels,
            segment: self.segment,
            restricted: true,
            composition: self.composition,
            per_level: document::LevelRelease::Selection(&self.per_level),
        };
        triehh_plus_document(&output, &parameters, spec)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_core::heavy_hitters::release_prefix_selection;
    use tally_core::task::Task;
    use tally_messages::{
        HeavyHittersRelease, PROTOCOL_VERSION, PrivacyTarget, RoundPolicy, TaskKind,
    };
    use tally_sim::triehh_plus_release::{TriePlusSettings, triehh_plus_counted};
    use tally_sim::{CountedPopulation, Population};

    use super::super::run_over_words;
    use super::*;

    const EPSILON: f64 = 2.0;
    const DELTA: f64 = 1e-6;
    const LEVELS: u32 = 4;

    /// 3,000 devices: "ab" held by 1,200, "ba" by 900, "abc" by 600, and 300 words of their
    /// own.
    fn words() -> Vec<String> {
        let mut words = Vec::new();
        for (word, holders) in [("ab", 1200), ("ba", 900), ("abc", 600)] {
            words.extend(std::iter::repeat_n(word.to_owned(), holders));
        }
        words.extend((0..300).map(|i| format!("own{i}")));
        words
    }

    fn spec(mechanism: HistogramMechanism) -> TaskSpec {
        TaskSpec {
            version: PROTOCOL_VERSION,
            population: "words".into(),
            expected_population: words().len() as u64,
            privacy: PrivacyTarget {
                epsilon: EPSILON,
                delta: DELTA,
                neighbours: Neighbours::AddRemove,
                analysis: Analysis::Tight,
            },
            kind: TaskKind::TriehhPlusSelection {
                mechanism,
                levels: LEVELS,
                segment: 1,
                composition: None,
            },
            rounds: RoundPolicy::default(),
            sampling: Sampling::Aggregator,
        }
    }

    /// The same run without the wire, the server or the round protocol: tally-core's task,
    /// each level's votes counted here from the words and released by
    /// [`release_prefix_selection`] with the level's stream of `seed`, and the document built
    /// from the output.
    fn reference(spec: &TaskSpec, words: &[String], seed: u64) -> String {
        let (engine, guarantee) = Engine::build(spec).unwrap();
        drop(engine);
        let TaskKind::TriehhPlusSelection { mechanism, .. } = spec.kind else {
            unreachable!("a partition-selection TrieHH++ spec");
        };
        let per_level = plan_selection_levels(
            mechanism.selection().unwrap(),
            EPSILON,
            DELTA,
            LEVELS as usize,
            Composition::Optimal,
            Neighbours::AddRemove,
        )
        .unwrap();
        let mut task = TrieHhPlus::new(TrieHhPlusConfig {
            levels: LEVELS as usize,
            segment: 1,
            restricted: true,
            per_level: per_level.clone(),
            composition: Composition::Optimal,
            total_delta: DELTA,
        })
        .unwrap();
        assert_eq!(task.guarantee(), &guarantee);
        let mut coins = ChaCha20Rng::seed_from_u64(seed);
        while let Some(query) = task.next_query() {
            let mut votes: BTreeMap<String, u64> = BTreeMap::new();
            for prefix in words.iter().filter_map(|w| query.prefixes.report(w)) {
                *votes.entry(prefix).or_insert(0) += 1;
            }
            let mut rng = ChaCha20Rng::from_rng(&mut coins);
            task.observe(release_prefix_selection(&query.mechanism, votes, &mut rng).unwrap());
        }
        let kind = TrieSelection {
            levels: LEVELS as usize,
            segment: 1,
            composition: Composition::Optimal,
            per_level,
        };
        kind.document(&guarantee, task.finish(), spec).unwrap()
    }

    /// The federated task releases, byte for byte, what tally-core's task releases over the
    /// same votes with the same streams, for both noise-based selections and several seeds:
    /// the ballots of "no vote" count toward nothing and each level's noise is the
    /// aggregator's.
    #[test]
    fn the_federated_task_releases_what_the_core_task_releases_from_the_votes() {
        let words = words();
        for mechanism in [
            HistogramMechanism::LaplaceThreshold,
            HistogramMechanism::GaussianThreshold,
        ] {
            let spec = spec(mechanism);
            for seed in 0..4 {
                let federated = run_over_words(&spec, &words, seed);
                assert_eq!(federated, reference(&spec, &words, seed), "{mechanism:?}");
                let release: HeavyHittersRelease = serde_json::from_str(&federated).unwrap();
                let found: Vec<&str> = release.items.iter().map(|i| i.item.as_str()).collect();
                for word in ["ab", "ba", "abc"] {
                    assert!(found.contains(&word), "{mechanism:?} {seed}: {found:?}");
                }
            }
        }
    }

    /// The guarantee, the per-level parameters and the document's fields are the offline
    /// command's (`tally heavy-hitters --algorithm triehh++ --mechanism METHOD`, through
    /// [`triehh_plus_counted`]) for the same target.
    #[test]
    fn the_task_is_planned_as_the_offline_command_plans_it() {
        let words = words();
        let ids: Vec<u32> = (0..words.len() as u32).collect();
        let loaded = Population::from_ids(ids, words.clone(), "words").unwrap();
        let population = CountedPopulation::from_population(&loaded);
        for (mechanism, method) in [
            (
                HistogramMechanism::LaplaceThreshold,
                Method::LaplaceThreshold,
            ),
            (
                HistogramMechanism::GaussianThreshold,
                Method::GaussianThreshold,
            ),
        ] {
            let settings = TriePlusSettings {
                epsilon: EPSILON,
                delta: DELTA,
                levels: LEVELS as usize,
                segment: 1,
                restricted: true,
                composition: TriePlusSettings::default_composition(
                    Some(method),
                    Neighbours::AddRemove,
                ),
                target: tally_accounting::sample_threshold::PlanTarget::MinReleasedCount,
                analysis: Analysis::Tight,
                neighbours: Neighbours::AddRemove,
                selection: Some(method),
            };
            let offline = triehh_plus_counted(&population, &settings, 7, None).unwrap();
            let federated: HeavyHittersRelease =
                serde_json::from_str(&run_over_words(&spec(mechanism), &words, 7)).unwrap();
            assert_eq!(federated.guarantee, offline.guarantee, "{method}");
            assert_eq!(federated.parameters, offline.parameters, "{method}");
            assert_eq!(federated.mechanism, offline.mechanism, "{method}");
        }
    }

    /// Refused where the guarantee would not hold or the options mean nothing.
    #[test]
    fn the_task_refuses_what_its_levels_cannot_run() {
        let refusal = |spec: &TaskSpec| Engine::build(spec).err().expect("refused");
        let sample_threshold = spec(HistogramMechanism::SampleThreshold);
        assert!(refusal(&sample_threshold).contains("laplace-threshold or gaussian-threshold"));
        let truncated = spec(HistogramMechanism::TruncatedGeometric);
        assert!(
            refusal(&truncated).contains("truncated"),
            "{}",
            refusal(&truncated)
        );
        let mut device = spec(HistogramMechanism::GaussianThreshold);
        device.sampling = Sampling::Device;
        assert!(refusal(&device).contains("sampling device"));
        let mut analysis = spec(HistogramMechanism::GaussianThreshold);
        analysis.privacy.analysis = Analysis::ClosedForm;
        assert!(refusal(&analysis).contains("leave it at its default"));
        let mut tight = spec(HistogramMechanism::GaussianThreshold);
        tight.kind = TaskKind::TriehhPlusSelection {
            mechanism: HistogramMechanism::GaussianThreshold,
            levels: LEVELS,
            segment: 1,
            composition: Some(Composition::Tight),
        };
        assert!(refusal(&tight).contains("tight"), "{}", refusal(&tight));
    }
}
