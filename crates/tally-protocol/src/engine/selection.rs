//! Partition selection as a federated task (`tally task create --kind histogram --mechanism
//! laplace-threshold|gaussian-threshold|truncated-geometric`): one round in which every device
//! reports its item and the aggregator releases by [`PartitionSelection`], calibrated as the
//! offline `tally histogram --mechanism …` calibrates it, its document the offline one.

use tally_accounting::partition_selection::Method;
use tally_accounting::sample_threshold::Analysis;
use tally_accounting::{Guarantee, Neighbours};
use tally_core::histogram::{PartitionSelection, SampleThreshold};
use tally_core::protocol::{PartitionSelectionRound, SelectedItems, SingleRound};
use tally_messages::{Sampling, TaskSpec};

use super::{Engine, Kind, TaskDefinition, driven, input_description};
use crate::document;

/// The distinct items each device contributes: a device holds one item.
const ITEMS_PER_DEVICE: u32 = 1;

/// What the aggregator of a partition selection sees and whom the guarantee holds against.
const TRUST: &str = "the aggregator adds the noise (or flips the coins) with its own \
    secret randomness: the guarantee holds against the analyst and everyone reading the \
    release, not against the aggregator, which sees every report and every item's exact count";

/// Who flips a partition selection's coins.
const NO_SAMPLING: &str = "none: every device reports its item, and under split trust the relay \
    forwards every report (there is no sampling coin)";

/// A partition-selection histogram of the devices' items.
pub(super) struct SelectionTask {
    /// The method.
    pub(super) method: Method,
    /// A sampling rate the spec gives, which the task refuses.
    pub(super) sampling_rate: Option<f64>,
    /// A threshold the spec gives, which the task refuses.
    pub(super) threshold: Option<u64>,
}

impl TaskDefinition for SelectionTask {
    fn name(&self) -> &'static str {
        self.method.name()
    }

    fn description(&self, _: Neighbours) -> String {
        format!(
            "{} partition selection of the devices' items, one item per device, calibrated \
             for (ε, δ)",
            self.method
        )
    }

    fn rounds(&self) -> u32 {
        1
    }

    fn no_curve_reason(&self) -> &'static str {
        "The task's round is a partition selection, not a sample-and-threshold round: this page \
         draws no release curve for it (`tally plan histogram` draws its curve). The guarantee \
         above is what it promises."
    }

    fn sampling(&self, _: Sampling) -> String {
        NO_SAMPLING.to_owned()
    }

    fn trust(&self) -> Option<&'static str> {
        Some(TRUST)
    }

    /// # Privacy
    ///
    /// Calibrated by [`PartitionSelection::calibrate`] for one item per device (each device
    /// reports once, its one item), as the offline command calibrates it for
    /// `--max-items-per-client 1`. Refuses device-side sampling (there is no coin to flip: a
    /// spec asking for one asks for something this task does not do), a sampling rate or
    /// threshold (the selection calibrates its own from `(ε, δ)`) and an S&T analysis other
    /// than the default (a partition selection has its own).
    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        if self.sampling_rate.is_some() || self.threshold.is_some() {
            return Err(format!(
                "sampling_rate and threshold set sample-threshold's parameters; {} calibrates \
                 its noise and threshold from (ε, δ): leave them out",
                self.method
            ));
        }
        if spec.sampling == Sampling::Device {
            return Err(format!(
                "sampling device: {} flips no sampling coin (every device reports its item and \
                 the aggregator adds the noise); leave sampling at its default, aggregator",
                self.method
            ));
        }
        if privacy.analysis != Analysis::Tight {
            return Err(format!(
                "analysis {}: the analysis chooses how one-item sample-and-threshold is \
                 accounted; {} has its own: leave it at its default, tight",
                privacy.analysis.name(),
                self.method
            ));
        }
        let selection = PartitionSelection::calibrate(
            self.method,
            privacy.epsilon,
            privacy.delta,
            ITEMS_PER_DEVICE,
            privacy.neighbours,
        )
        .map_err(|e| e.to_string())?;
        let task = SingleRound::new(selection.clone(), selection.guarantee().clone());
        Ok(driven(Selection { selection }, task, 1))
    }
}

/// A calibrated partition selection over the devices' items.
#[derive(Clone)]
struct Selection {
    selection: PartitionSelection,
}

impl Kind for Selection {
    type Task = SingleRound<PartitionSelection, SelectedItems>;
    type Round = PartitionSelectionRound;

    fn round(&self, query: &PartitionSelection, _: Sampling) -> PartitionSelectionRound {
        PartitionSelectionRound::new(query.clone())
    }

    fn threshold_round(_: &PartitionSelection) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &PartitionSelection, release: SelectedItems) -> SelectedItems {
        release
    }

    /// The offline command's document (`tally histogram --mechanism … --json`), for one item
    /// per device.
    fn document(
        &self,
        _: &Guarantee,
        output: Option<SelectedItems>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let items = document::selected_items(output.map(|items| items.0).unwrap_or_default());
        let mut release = document::partition_selection(
            items,
            &self.selection,
            spec.expected_population,
            spec.privacy.delta,
            input_description(spec),
            "federated",
            None,
        );
        release.parameters["max_items_per_client"] = serde_json::json!(ITEMS_PER_DEVICE);
        serde_json::to_string_pretty(&release)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_accounting::partition_selection::{
        self as accounting, GaussianSelection, LaplaceSelection,
    };
    use tally_core::protocol::wire::WireAggregator;
    use tally_messages::{
        HistogramMechanism, PROTOCOL_VERSION, PrivacyTarget, RoundPolicy, TaskKind,
    };
    use tally_stats_tests::binomial_interval;

    use super::*;
    use crate::{AskResponder, shuffler};

    const EPSILON: f64 = 1.0;
    const DELTA: f64 = 1e-6;
    /// Rounds per checked count, each its aggregator's coins from its own seed.
    const RUNS: u64 = 2_000;
    const ALPHA: f64 = 1e-6;
    /// The release probabilities the checked counts are chosen at.
    const LEVELS: [f64; 3] = [0.15, 0.5, 0.85];

    fn spec(method: Method) -> TaskSpec {
        TaskSpec {
            version: PROTOCOL_VERSION,
            population: "words".into(),
            expected_population: 1000,
            privacy: PrivacyTarget {
                epsilon: EPSILON,
                delta: DELTA,
                neighbours: Neighbours::AddRemove,
                analysis: Analysis::Tight,
            },
            kind: TaskKind::Histogram {
                mechanism: HistogramMechanism::of_selection(method),
                sampling_rate: None,
                threshold: None,
            },
            rounds: RoundPolicy::default(),
            sampling: Sampling::Aggregator,
        }
    }

    /// In how many of [`RUNS`] rounds, the aggregator of each opened by `open` with its coins
    /// seeded by the run's number, `count` devices' reports of one item release it.
    fn releases(open: &dyn Fn(ChaCha20Rng) -> Box<dyn WireAggregator>, count: u64) -> u64 {
        (0..RUNS)
            .filter(|&run| {
                let mut aggregator = open(ChaCha20Rng::seed_from_u64(run));
                for _ in 0..count {
                    aggregator.absorb("x".to_owned()).unwrap();
                }
                !aggregator.release().is_empty()
            })
            .count() as u64
    }

    /// The counts at which the task's selection releases an item with probability
    /// [`LEVELS`], each with the exact interval its number of releases lies in at `α`.
    fn checked_counts(calibration: &accounting::PartitionSelection) -> Vec<(u64, (u64, u64))> {
        LEVELS
            .iter()
            .map(|&level| {
                let count = (1..10_000)
                    .find(|&c| calibration.release_probability(c) >= level)
                    .expect("a count below 10000");
                let p = calibration.release_probability(count);
                (count, binomial_interval(RUNS, p, ALPHA))
            })
            .collect()
    }

    /// The task of `method` as the server runs it (built from its spec, its round opened with
    /// the aggregator's coins, its devices answering the published ask) releases an item of
    /// `c` holders as often as the calibration's law says at every checked count, and each
    /// mutant selection, run through the same round and wire aggregator, leaves the law's
    /// interval at some count.
    fn check(method: Method, mutants: &[(&str, accounting::PartitionSelection)]) {
        let (mut engine, guarantee) = Engine::build(&spec(method)).unwrap();
        assert!(engine.advance());
        assert!(engine.threshold_rounds().is_none());
        let real = PartitionSelection::calibrate(method, EPSILON, DELTA, 1, Neighbours::AddRemove)
            .unwrap();
        assert_eq!(&guarantee, real.guarantee());
        // Every device reports its item whatever the coins: there are none on its side.
        let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::seed_from_u64(0));
        let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
        let mut device = ChaCha20Rng::seed_from_u64(1);
        assert!((0..100).all(|_| responder.respond("x", 8, &mut device).as_deref() == Some("x")));
        let counts = checked_counts(real.calibration());
        let federated = |rng| engine.open(Sampling::Aggregator, rng).aggregator;
        for &(count, (lo, hi)) in &counts {
            let released = releases(&federated, count);
            assert!(
                (lo..=hi).contains(&released),
                "{method}: {released} releases of {RUNS} at count {count}, law [{lo}, {hi}]"
            );
        }
        // The same coins give the same release: the draws are the aggregator's stream's.
        assert_eq!(
            releases(&federated, counts[1].0),
            releases(&federated, counts[1].0)
        );
        for (name, mutant) in mutants {
            let round =
                PartitionSelectionRound::new(PartitionSelection::new(mutant.clone()).unwrap());
            let open = |rng| shuffler::aggregator(round.clone(), rng);
            let misfits: Vec<(u64, u64)> = counts
                .iter()
                .map(|&(count, _)| (count, releases(&open, count)))
                .zip(&counts)
                .filter(|((_, released), (_, (lo, hi)))| !(lo..=hi).contains(&released))
                .map(|(misfit, _)| misfit)
                .collect();
            assert!(!misfits.is_empty(), "{method}: {name} not caught");
        }
    }

    #[test]
    fn a_laplace_threshold_task_draws_its_noise_from_the_aggregators_coins() {
        let real = LaplaceSelection::calibrate(EPSILON, DELTA, 1, Neighbours::AddRemove).unwrap();
        let (n, d) = real.scale();
        let laplace = |scale| {
            accounting::PartitionSelection::Laplace(
                LaplaceSelection::new(scale, real.threshold(), 1, Neighbours::AddRemove).unwrap(),
            )
        };
        check(
            Method::LaplaceThreshold,
            &[
                ("no noise", laplace((1, 1000))),
                ("half scale", laplace((n, 2 * d))),
            ],
        );
    }

    #[test]
    fn a_gaussian_threshold_task_draws_its_noise_from_the_aggregators_coins() {
        let real = GaussianSelection::calibrate(EPSILON, DELTA, 1, Neighbours::AddRemove).unwrap();
        let (n, d) = real.sigma2();
        let gaussian = |sigma2| {
            accounting::PartitionSelection::Gaussian(
                GaussianSelection::new(sigma2, real.threshold(), EPSILON, 1, Neighbours::AddRemove)
                    .unwrap(),
            )
        };
        check(
            Method::GaussianThreshold,
            &[
                ("no noise", gaussian((1, 1_000_000))),
                ("half deviation", gaussian((n, 4 * d))),
            ],
        );
    }

    #[test]
    fn a_truncated_geometric_task_flips_its_coins_with_the_aggregators_randomness() {
        let table = |epsilon| {
            accounting::PartitionSelection::calibrate(
                Method::TruncatedGeometric,
                epsilon,
                DELTA,
                1,
                Neighbours::AddRemove,
            )
            .unwrap()
        };
        check(
            Method::TruncatedGeometric,
            &[
                ("table for 2ε", table(2.0 * EPSILON)),
                ("table for ε/2", table(EPSILON / 2.0)),
            ],
        );
    }

    #[test]
    fn a_selection_task_refuses_what_it_does_not_do() {
        let mut device = spec(Method::LaplaceThreshold);
        device.sampling = Sampling::Device;
        let error = Engine::build(&device).err().unwrap();
        assert!(error.contains("flips no sampling coin"), "{error}");
        let mut fixed = spec(Method::GaussianThreshold);
        fixed.kind = TaskKind::Histogram {
            mechanism: HistogramMechanism::GaussianThreshold,
            sampling_rate: None,
            threshold: Some(20),
        };
        let error = Engine::build(&fixed).err().unwrap();
        assert!(
            error.contains("calibrates its noise and threshold"),
            "{error}"
        );
        let mut analysis = spec(Method::TruncatedGeometric);
        analysis.privacy.analysis = Analysis::Exact;
        let error = Engine::build(&analysis).err().unwrap();
        assert!(error.contains("has its own"), "{error}");
    }
}
