//! Ghazi et al.'s heavy hitters through a prefix tree of Count-Min oracles as one server task
//! kind: tally-core's [`ShuffleHeavyHitters`] task, one shuffle round of
//! [`PrefixLevelRound`] per level, decoded once every level released.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::{Collusion, Guarantee, Neighbours};
use tally_core::histogram::SampleThreshold;
use tally_core::protocol::wire::BoundedDomainQuery;
use tally_core::protocol::{Estimates, RoundProtocol};
use tally_core::shuffle::{CountMinRound, PrefixLevelRound, ShuffleHeavyHitters};
use tally_messages::{PrivacyTarget, Sampling, TaskKind, TaskSpec};

use super::domain::{check_count_min_cohort, check_shuffle_cohort};
use super::{
    CountedAggregate, ElementCounts, Engine, Kind, TaskDefinition, driven, input_description,
};
use crate::document::{self, COUNT_MIN_PREFIX_TREE};

/// What a prefix-tree task is asked for, besides its privacy target.
pub(super) struct TreeTask {
    /// `L`: the devices' items lie in `0..2^L`.
    pub(super) domain_bits: u32,
    /// `τ_HH`.
    pub(super) threshold: u64,
    /// Count-Min's `β`, if given.
    pub(super) failure_probability: Option<f64>,
    /// The seed of the levels' public hash functions.
    pub(super) public_coins: Option<u64>,
}

impl TaskDefinition for TreeTask {
    fn name(&self) -> &'static str {
        COUNT_MIN_PREFIX_TREE
    }

    fn default_min_cohort(&self, expected_population: u64) -> u64 {
        expected_population
    }

    fn with_public_coins(&self, draw: &mut dyn FnMut() -> u64) -> Option<TaskKind> {
        self.public_coins
            .is_none()
            .then(|| TaskKind::CountMinPrefixTree {
                domain_bits: self.domain_bits,
                threshold: self.threshold,
                failure_probability: self.failure_probability,
                public_coins: Some(draw()),
            })
    }

    fn description(&self, _: Neighbours) -> String {
        let TreeTask {
            domain_bits,
            threshold,
            ..
        } = self;
        format!(
            "count-min-prefix-tree heavy hitters among integers in [0, 2^{domain_bits}), \
             threshold {threshold}, {domain_bits} Count-Min rounds behind the shuffler"
        )
    }

    fn rounds(&self) -> u32 {
        self.domain_bits
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        check_count_min_cohort(spec)?;
        build(
            self,
            &spec.privacy,
            spec.expected_population,
            spec.rounds.min_cohort,
            spec.rounds.max_report_bytes,
        )
    }
}

/// The task `task` asks for at `privacy`, every level's oracle calibrated for `clients`
/// devices (the expected population), with its guarantee.
///
/// # Privacy
///
/// Every level's guarantee holds only when the analyzer sees the messages of at least the
/// `clients` devices it was calibrated for: a task whose rounds may release from fewer uploads
/// is refused. A task with a level whose longest report ([`BoundedDomainQuery::longest_report`],
/// exact) exceeds `max_report_bytes` is refused too: that level's devices would all abstain.
///
/// # Errors
///
/// A message saying why the task cannot run as asked.
pub(super) fn build(
    task: &TreeTask,
    privacy: &PrivacyTarget,
    clients: u64,
    min_cohort: u64,
    max_report_bytes: u32,
) -> Result<(Engine, Guarantee), String> {
    check_shuffle_cohort(COUNT_MIN_PREFIX_TREE, min_cohort, clients)?;
    // The same hash functions every time the task is built (a restarted server rebuilds it
    // from its stored spec).
    let mut coins = ChaCha20Rng::seed_from_u64(task.public_coins.unwrap_or(0));
    let protocol = ShuffleHeavyHitters::new(
        task.domain_bits,
        privacy.epsilon,
        privacy.delta,
        task.failure_probability.unwrap_or(DEFAULT_COUNT_MIN_BETA),
        clients,
        task.threshold as f64,
        &mut coins,
    )
    .map_err(|e| format!("{COUNT_MIN_PREFIX_TREE}: {e}"))?;
    for (level, round) in (1..).zip(protocol.levels()) {
        let longest = round.query().longest_report();
        if longest > u64::from(max_report_bytes) {
            return Err(format!(
                "{COUNT_MIN_PREFIX_TREE} level {level} of {}: the longest report a device could \
                 send is {longest} bytes, above max_report_bytes ({max_report_bytes}): every \
                 device would abstain; fewer devices, more ε or δ, or a larger max_report_bytes \
                 (at most 32768) would shorten it",
                task.domain_bits
            ));
        }
    }
    let rounds = protocol.levels().len();
    let kind = PrefixTree {
        protocol: protocol.clone(),
    };
    Ok(driven(kind, protocol, rounds))
}

/// The prefix tree's levels, each a shuffle round of Count-Min over its prefixes.
#[derive(Clone)]
struct PrefixTree {
    /// The task as built, for its document's parameters.
    protocol: ShuffleHeavyHitters,
}

impl Kind for PrefixTree {
    type Task = ShuffleHeavyHitters;
    type Round = PrefixLevelRound<CountMinRound>;

    /// The level's round itself: its devices' coins are their own.
    fn round(
        &self,
        round: &PrefixLevelRound<CountMinRound>,
        _: Sampling,
    ) -> PrefixLevelRound<CountMinRound> {
        round.clone()
    }

    /// No sample-and-threshold loss pair: the ledger composes its `(ε, δ)`.
    fn threshold_round(_: &PrefixLevelRound<CountMinRound>) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &PrefixLevelRound<CountMinRound>, release: Estimates) -> Estimates {
        release
    }

    fn collusion(
        &self,
        _: &Self::Task,
        colluding_fraction: f64,
    ) -> Result<Option<Collusion>, tally_core::Error> {
        Ok(Some(self.protocol.collusion(colluding_fraction)?))
    }

    /// The level's [`CountedRound::aggregate_counts`](tally_core::protocol::CountedRound)
    /// over the items' prefixes.
    fn counted(
        &self,
        round: PrefixLevelRound<CountMinRound>,
        rng: ChaCha20Rng,
    ) -> Option<Box<dyn CountedAggregate>> {
        ElementCounts::of_domain(round, rng)
    }

    /// The document `tally heavy-hitters --algorithm count-min-prefix-tree --json` prints for
    /// the same parameters (no seed, no truth).
    fn document(
        &self,
        _: &Guarantee,
        found: Vec<(u32, f64)>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&document::count_min_prefix_tree(
            &found,
            &self.protocol,
            spec.expected_population,
            input_description(spec),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::{AskResponder, PublishedQuery};
    use tally_accounting::Neighbours;
    use tally_accounting::sample_threshold::Analysis;
    use tally_core::protocol::DeviceQuery;
    use tally_core::protocol::WireReport;
    use tally_core::protocol::wire::WireRelease;
    use tally_core::task::Task;
    use tally_messages::{Ask, PROTOCOL_VERSION, RoundPolicy, TaskKind};

    use super::*;
    use crate::engine::drawn_from_counts;
    use tally_messages::MAX_REPORT_BYTES;

    /// The devices of the tests (the longest report does not depend on them: every device's
    /// blanket is capped).
    const DEVICES: u64 = 3000;

    /// The task over `0..4` at `τ_HH = 160`, `ε = 54` (27 a level, the largest level 1's nine
    /// rows take) and `δ = 1e-6`, with hash functions from the seed 5.
    fn task() -> TreeTask {
        TreeTask {
            domain_bits: 2,
            threshold: 160,
            failure_probability: None,
            public_coins: Some(5),
        }
    }

    fn privacy() -> PrivacyTarget {
        privacy_at(54.0)
    }

    fn privacy_at(epsilon: f64) -> PrivacyTarget {
        PrivacyTarget {
            epsilon,
            delta: 1e-6,
            neighbours: Neighbours::ReplaceOne,
            analysis: Analysis::Tight,
        }
    }

    /// Every level is published as its own ask, whose responder (what a device rebuilds)
    /// answers as tally-core's level query with the same coins: the devices use the hash
    /// functions the server drew for that level. Fed the devices' wire reports, level by
    /// level, the task releases the heavy item.
    #[test]
    fn each_level_is_published_and_answered_as_built() {
        let (mut engine, guarantee) =
            build(&task(), &privacy(), DEVICES, DEVICES, MAX_REPORT_BYTES).unwrap();
        assert!(guarantee.epsilon <= 54.0 && guarantee.delta <= 1e-6);
        let mut shadow = ShuffleHeavyHitters::new(
            2,
            54.0,
            1e-6,
            DEFAULT_COUNT_MIN_BETA,
            DEVICES,
            160.0,
            &mut ChaCha20Rng::seed_from_u64(5),
        )
        .unwrap();
        let mut devices = ChaCha20Rng::seed_from_u64(6);
        for level in 1..=2_u32 {
            assert!(engine.advance());
            let query = shadow.next_query().unwrap();
            let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::seed_from_u64(7));
            assert_eq!(opened.ask, query.query().ask());
            let Ask::PrefixLevel {
                level: published,
                domain_bits: 2,
                ..
            } = opened.ask
            else {
                panic!("{:?}", opened.ask)
            };
            assert_eq!(published, level);
            let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
            let bytes = MAX_REPORT_BYTES as usize;
            let mut ours = ChaCha20Rng::seed_from_u64(u64::from(level));
            let mut theirs = ChaCha20Rng::seed_from_u64(u64::from(level));
            assert_eq!(
                responder.respond("3", bytes, &mut ours),
                DeviceQuery::respond(query.query(), &3, &mut theirs).map(WireReport::encode)
            );
            let mut aggregator = opened.aggregator;
            for i in 0..DEVICES {
                let item = if i < 60 { i % 4 } else { 2 };
                let report = responder
                    .respond(&item.to_string(), bytes, &mut devices)
                    .unwrap();
                aggregator.absorb(report).unwrap();
            }
            let cells = aggregator.release();
            engine.observe(cells).unwrap();
            shadow.observe(Estimates(vec![0.0; 2 << (level - 1)]));
        }
        assert!(!engine.advance());
        let spec = TaskSpec {
            version: PROTOCOL_VERSION,
            population: "items".into(),
            expected_population: DEVICES,
            privacy: privacy(),
            kind: TaskKind::CountMinPrefixTree {
                domain_bits: 2,
                threshold: 160,
                failure_probability: None,
                public_coins: Some(5),
            },
            rounds: RoundPolicy::default(),
            sampling: Sampling::Aggregator,
        };
        let document: serde_json::Value = serde_json::from_str(&engine.document(&spec)).unwrap();
        assert_eq!(document["items"][0]["item"], "2", "{document}");
        assert_eq!(document["found_items"], 1, "{document}");
    }

    /// Every level opened for a simulator draws its aggregator from how many devices hold
    /// each item: the common item's prefix stands out as when every device answers, and an
    /// item outside `0..2^L` draws nothing (every device answers instead).
    #[test]
    fn each_level_draws_its_aggregator_from_the_devices_counts() {
        let (mut engine, _) =
            build(&task(), &privacy(), DEVICES, DEVICES, MAX_REPORT_BYTES).unwrap();
        for level in 1..=2_usize {
            assert!(engine.advance());
            let aggregate = |held: &[(&str, u64)]| drawn_from_counts(&engine, held);
            let held = [("0", 20), ("1", 20), ("2", 2_940), ("3", 20)];
            let aggregator = aggregate(&held).expect("drawn");
            let cells = aggregator.release();
            let estimates = Estimates::from_cells(cells.clone()).unwrap().0;
            // Level 1's prefixes are 0 (items 0, 1) and 1 (items 2, 3); level 2's the items.
            assert_eq!(estimates.len(), 2 << (level - 1));
            let heavy = if level == 1 { 1 } else { 2 };
            assert!(estimates[heavy] > 2_000.0, "level {level}: {estimates:?}");
            let out_of_domain = [("2", 2_999), ("4", 1)];
            assert!(aggregate(&out_of_domain).is_none(), "level {level}");
            engine.observe(cells).unwrap();
        }
    }

    /// The fit is checked at every level: at `ε = 2.5` (1.25 a level, calibrated by the exact
    /// analysis of the blanket) level 1's longest report fits the largest `max_report_bytes`
    /// (29,843 bytes) but level 2's (ten rows to level 1's nine, a blanket capped at 6,125
    /// cells: 36,809 bytes) does not. A task whose rounds could release from fewer devices than
    /// calibrated for is refused, and so is one for fewer devices than the accountant needs
    /// (26 at `ε = 54`).
    #[test]
    fn a_task_is_refused_for_any_level_that_cannot_fit_or_a_small_cohort() {
        let message = build(
            &task(),
            &privacy_at(2.5),
            DEVICES,
            DEVICES,
            MAX_REPORT_BYTES,
        )
        .err()
        .expect("refused");
        assert!(
            message.contains("count-min-prefix-tree level 2 of 2")
                && message.contains("every device would abstain"),
            "{message}"
        );
        let message = build(&task(), &privacy(), DEVICES, DEVICES - 1, MAX_REPORT_BYTES)
            .err()
            .expect("refused");
        assert!(
            message.contains(&format!("at least {DEVICES}")),
            "{message}"
        );
        let message = build(&task(), &privacy(), 25, 25, MAX_REPORT_BYTES)
            .err()
            .expect("refused");
        assert!(message.contains("users (got 25)"), "{message}");
    }
}
