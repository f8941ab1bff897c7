//! TrieHH as a server task kind: each round every device casts a ballot and the aggregator
//! draws the fixed-size batch ([`TrieHhBatchRound`]); the task, its calibration and its
//! guarantee are tally-core's [`TrieHh`].

use tally_accounting::{Guarantee, Neighbours};
use tally_core::heavy_hitters::{TrieHh, TrieHhConfig, TrieHhOutput, TrieHhQuery};
use tally_core::histogram::SampleThreshold;
use tally_core::protocol::TrieHhBatchRound;
use tally_messages::{Sampling, TaskSpec};

use super::{Engine, Kind, TaskDefinition, driven, input_description};
use crate::document;

/// A TrieHH task: `levels` rounds of `segment` characters, with an optional `beam`.
pub(super) struct TrieHhTask {
    pub(super) levels: u32,
    pub(super) segment: u32,
    pub(super) beam: Option<u32>,
}

impl TaskDefinition for TrieHhTask {
    fn name(&self) -> &'static str {
        "triehh"
    }

    fn description(&self, _: Neighbours) -> String {
        let TrieHhTask {
            levels, segment, ..
        } = self;
        format!(
            "triehh heavy hitters, {levels} rounds of {segment} character(s), fixed-size \
             batches drawn by the aggregator{}",
            self.beam
                .map_or_else(String::new, |b| format!(", beam {b}"))
        )
    }

    fn rounds(&self) -> u32 {
        self.levels
    }

    fn no_curve_reason(&self) -> &'static str {
        "TrieHH accepts a prefix with enough votes in a batch of ballots drawn without replacement: \
         the console draws no release curve for it. The guarantee above is what it promises."
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        TrieHhKind::build(spec, self.levels, self.segment, self.beam)
    }
}

/// TrieHH with fixed-size batches drawn by the aggregator.
#[derive(Clone)]
pub(super) struct TrieHhKind;

impl TrieHhKind {
    /// The TrieHH task `spec` asks for, `levels` rounds of `segment` characters with an
    /// optional `beam`: `θ` and `m` calibrated by Corollary 1 for the privacy target over the
    /// `expected_population` devices.
    ///
    /// # Errors
    ///
    /// A message saying why the task cannot run: neighbours other than replace-one (the
    /// theorem's), device-side sampling (the batch is the aggregator's), or parameters
    /// tally-core refuses.
    pub(super) fn build(
        spec: &TaskSpec,
        levels: u32,
        segment: u32,
        beam: Option<u32>,
    ) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        if privacy.neighbours != Neighbours::ReplaceOne {
            return Err(
                "TrieHH's guarantee is for replace-one neighbours: give neighbours \
                        replace-one"
                    .to_owned(),
            );
        }
        if spec.sampling != Sampling::Aggregator {
            return Err(
                "TrieHH's batch is drawn by the aggregator: give sampling aggregator".to_owned(),
            );
        }
        let rounds = levels as usize;
        let mut config = TrieHhConfig::calibrate(
            privacy.epsilon,
            privacy.delta,
            rounds,
            spec.expected_population,
        )
        .map_err(|e| e.to_string())?
        .with_segment(segment as usize);
        if let Some(beam) = beam {
            config = config.with_beam(beam as usize);
        }
        let task = TrieHh::new(config).map_err(|e| e.to_string())?;
        Ok(driven(Self, task, rounds))
    }
}

impl Kind for TrieHhKind {
    type Task = TrieHh;
    type Round = TrieHhBatchRound;

    fn round(&self, query: &TrieHhQuery, _: Sampling) -> TrieHhBatchRound {
        TrieHhBatchRound::new(query)
    }

    /// TrieHH's rounds have no S&T loss pair: the ledger charges the task's `(ε, δ)`.
    fn threshold_round(_: &TrieHhQuery) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &TrieHhQuery, accepted: Vec<String>) -> Vec<String> {
        accepted
    }

    /// The document `tally heavy-hitters --algorithm triehh --json` prints.
    fn document(
        &self,
        _: &Guarantee,
        output: TrieHhOutput,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&document::triehh(&output, input_description(spec), None))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_accounting::numeric::ln_choose;
    use tally_accounting::sample_threshold::Analysis;
    use tally_core::protocol::{DeviceQuery, RoundAggregator, RoundProtocol};
    use tally_core::task::Task;
    use tally_messages::{
        HeavyHittersRelease, PROTOCOL_VERSION, PrivacyTarget, RoundPolicy, TaskKind,
    };

    use super::*;
    use tally_stats_tests::binomial_interval;

    /// Devices, `ε`, `δ` and rounds of the tests' task.
    const N: u64 = 400;
    const EPSILON: f64 = 3.0;
    const DELTA: f64 = 1e-6;
    const LEVELS: u32 = 3;
    /// Devices holding "ab"; the others hold the numbers `0..240` as words.
    const HOLDERS: usize = 160;

    fn words() -> Vec<String> {
        let mut words = vec!["ab".to_owned(); HOLDERS];
        words.extend((0..N as usize - HOLDERS).map(|i| i.to_string()));
        words
    }

    fn spec() -> TaskSpec {
        TaskSpec {
            version: PROTOCOL_VERSION,
            population: "words".into(),
            expected_population: N,
            privacy: PrivacyTarget {
                epsilon: EPSILON,
                delta: DELTA,
                neighbours: Neighbours::ReplaceOne,
                analysis: Analysis::Tight,
            },
            kind: TaskKind::Triehh {
                levels: LEVELS,
                segment: 1,
                beam: None,
            },
            rounds: RoundPolicy::default(),
            sampling: Sampling::Aggregator,
        }
    }

    fn config() -> TrieHhConfig {
        TrieHhConfig::calibrate(EPSILON, DELTA, LEVELS as usize, N).unwrap()
    }

    /// The task run as the server runs it (`engine::run_over_words`): the released document.
    fn federated(words: &[String], seed: u64) -> HeavyHittersRelease {
        serde_json::from_str(&super::super::run_over_words(&spec(), words, seed)).unwrap()
    }

    /// A mutant of the federated run: the batch is drawn from the devices that vote alone
    /// (as if the others abstained and the aggregator drew from what it received), not
    /// from all `n`. Whether "ab" is found.
    fn voters_only(words: &[String], seed: u64) -> bool {
        let mut task = TrieHh::new(config()).unwrap();
        let mut coins = ChaCha20Rng::seed_from_u64(seed);
        let mut devices = ChaCha20Rng::seed_from_u64(!seed);
        while let Some(mut query) = task.next_query() {
            let round = TrieHhBatchRound::new(&query);
            let votes: Vec<_> = words
                .iter()
                .filter_map(|w| round.query().respond(w, &mut devices))
                .filter(|ballot| ballot.0.is_some())
                .collect();
            query.population = (votes.len() as u64).max(query.batch_size);
            let mut aggregator =
                TrieHhBatchRound::new(&query).aggregator(ChaCha20Rng::from_rng(&mut coins));
            votes
                .into_iter()
                .for_each(|ballot| aggregator.absorb(ballot));
            task.observe(aggregator.release());
        }
        task.finish().words.iter().any(|w| w == "ab")
    }

    fn found(release: &HeavyHittersRelease, word: &str) -> bool {
        release.items.iter().any(|item| item.item == word)
    }

    fn accepted_first(release: &HeavyHittersRelease, prefix: &str) -> bool {
        let trie = release.trie.as_deref().unwrap_or_default();
        trie.iter()
            .any(|node| node.level == 1 && node.prefix == prefix)
    }

    /// The federated TrieHH and the simulator's (`tally_sim::run_triehh`) over the same 400
    /// devices: the first round accepts "a" (held by 160) as often as the exact
    /// hypergeometric tail `Pr[HG(n, 160, m) ≥ θ]` says, each path's count over 3,000 runs
    /// inside its binomial interval at α = 1e-6; and whole runs find "ab" equally often, the
    /// two shares within the Hoeffding bound at α = 1e-6, which a mutant drawing the batch
    /// from the voters alone breaks.
    #[test]
    fn stat_federated_triehh_releases_the_simulators_distribution() {
        const RUNS: u64 = 3_000;
        let config = config();
        let (theta, m) = (config.threshold, config.batch_size);
        let words = words();
        let k = HOLDERS as u64;
        let accept_a: f64 = (theta..=m.min(k))
            .map(|v| (ln_choose(k, v) + ln_choose(N - k, m - v) - ln_choose(N, m)).exp())
            .sum();
        assert!(
            (0.2..0.8).contains(&accept_a),
            "θ {theta}, m {m}: {accept_a}"
        );
        let (lo, hi) = binomial_interval(RUNS, accept_a, 1e-6);
        let vocabulary: Vec<String> = words.clone();
        let ids: Vec<u32> = (0..N as u32).collect();
        let population = tally_sim::Population::from_ids(ids, vocabulary, "words").unwrap();
        let (mut sim_a, mut sim_ab, mut fed_a, mut fed_ab, mut mutant_ab) = (0, 0, 0, 0, 0);
        for seed in 0..RUNS {
            let output =
                tally_sim::run_triehh(&population, TrieHh::new(config.clone()).unwrap(), seed);
            sim_a += u64::from(output.accepted[0].iter().any(|p| p == "a"));
            sim_ab += u64::from(output.words.iter().any(|w| w == "ab"));
            let release = federated(&words, seed);
            fed_a += u64::from(accepted_first(&release, "a"));
            fed_ab += u64::from(found(&release, "ab"));
            mutant_ab += u64::from(voters_only(&words, seed));
        }
        for (path, count) in [("simulator", sim_a), ("federated", fed_a)] {
            assert!(
                (lo..=hi).contains(&count),
                "{path}: \"a\" accepted {count} of {RUNS}, expected {lo} to {hi}"
            );
        }
        // Each share lies within sqrt(ln(4/α)/(2·RUNS)) of its mean with probability at
        // least 1 − α/2 (Hoeffding), so equal means differ by at most twice that.
        let bound = 2.0 * ((4.0 / 1e-6_f64).ln() / (2.0 * RUNS as f64)).sqrt();
        let share = |count: u64| count as f64 / RUNS as f64;
        assert!(
            (share(sim_ab) - share(fed_ab)).abs() <= bound,
            "\"ab\" found: simulator {sim_ab}, federated {fed_ab} of {RUNS}"
        );
        assert!(
            (share(sim_ab) - share(mutant_ab)).abs() > bound,
            "the mutant passes: simulator {sim_ab}, voters only {mutant_ab} of {RUNS}"
        );
    }

    /// The document is the offline command's, and the task is refused where its guarantee
    /// would not hold.
    #[test]
    fn the_document_states_the_calibrated_batch_and_refuses_other_trust() {
        let release = federated(&words(), 1);
        let config = config();
        assert_eq!(release.mechanism, "triehh");
        assert_eq!(release.parameters["threshold"], config.threshold);
        assert_eq!(release.parameters["batch_size"], config.batch_size);
        assert_eq!(release.parameters["population"], N);
        assert!(release.items.iter().all(|i| i.count.is_none()));
        let mut add_remove = spec();
        add_remove.privacy.neighbours = Neighbours::AddRemove;
        assert!(Engine::build(&add_remove).is_err());
        let mut device = spec();
        device.sampling = Sampling::Device;
        assert!(Engine::build(&device).is_err());
    }
}
