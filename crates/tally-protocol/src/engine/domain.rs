//! Histograms over a public domain as one server task kind, parameterised by the mechanism:
//! each mechanism is a tally-core round registered once, in
//! [`BuildDomainRound::build`], which [`build`] opens as a task.

use std::marker::PhantomData;
use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use tally_accounting::ghazi::DEFAULT_COUNT_MIN_BETA;
use tally_accounting::shuffle::ShuffleBound;
use tally_accounting::{Collusion, Guarantee, Neighbours};
use tally_core::histogram::{DomainHistogram, DomainMap, SampleThreshold};
use tally_core::protocol::SingleRound;
use tally_core::protocol::wire::BoundedDomainQuery;
use tally_messages::{
    DomainBody, DomainElementBody, DomainHistogramMechanism, DomainHistogramRelease, PrivacyTarget,
    PublicDomain, Sampling, TaskKind, TaskSpec,
};

use super::{
    CountedAggregate, ElementCounts, Engine, Kind, TaskDefinition, driven, input_description,
};
use crate::diagnosis::delta_warning;
use crate::{
    BuildDomainRound, DomainRoundVisitor, FederatedDomainRound, ShuffleCalibration, domain_map,
};

/// A histogram over a public domain.
pub(super) struct DomainTask {
    /// The mechanism.
    pub(super) mechanism: DomainHistogramMechanism,
    /// The public domain.
    pub(super) domain: PublicDomain,
    /// The seed of the public coins of a mechanism that publishes some.
    pub(super) public_coins: Option<u64>,
}

impl TaskDefinition for DomainTask {
    fn name(&self) -> &'static str {
        self.mechanism.name()
    }

    fn default_min_cohort(&self, expected_population: u64) -> u64 {
        match self.mechanism.is_shuffled() {
            true => expected_population,
            false => super::DEFAULT_MIN_COHORT,
        }
    }

    fn with_public_coins(&self, draw: &mut dyn FnMut() -> u64) -> Option<TaskKind> {
        (self.mechanism.publishes_coins() && self.public_coins.is_none()).then(|| {
            TaskKind::DomainHistogram {
                mechanism: self.mechanism,
                domain: self.domain,
                public_coins: Some(draw()),
            }
        })
    }

    fn description(&self, _: Neighbours) -> String {
        format!(
            "{} histogram over {}",
            self.mechanism.name(),
            domain_map(self.domain)
        )
    }

    fn rounds(&self) -> u32 {
        1
    }

    fn no_curve_reason(&self) -> &'static str {
        "A histogram over a public domain releases an estimate for every element of the domain: \
         no threshold decides what is released, so there is no release curve. The guarantee above is what it promises."
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        if self.mechanism == DomainHistogramMechanism::GhaziCountMin {
            check_count_min_cohort(spec)?;
        }
        build(
            self.mechanism,
            self.domain,
            self.public_coins,
            &spec.privacy,
            spec.expected_population,
            spec.rounds.min_cohort,
            spec.rounds.max_report_bytes,
        )
    }
}

/// The largest public domain a task may ask for: its one round releases a cell per element.
pub(super) const MAX_DOMAIN: u32 = 1 << 24;

/// The task of `mechanism` over `domain` at `privacy`, calibrated (a shuffle mechanism for
/// `clients` devices, the expected population), its public coins drawn from the seed
/// `public_coins` (see [`draw_public_coins`](super::draw_public_coins)), with its guarantee.
///
/// # Privacy
///
/// A shuffle mechanism's guarantee holds only when the analyzer sees the messages of at least
/// the `clients` devices it was calibrated for (their randomness hides each other's): a task
/// whose rounds may release from fewer uploads (`min_cohort < clients`) is refused.
///
/// A task is refused when its round's longest report
/// ([`BoundedDomainQuery::longest_report`], exact) exceeds `max_report_bytes`: its devices
/// would all abstain (a device abstains whenever that bound is over the limit, before flipping
/// a coin), so the task could never release anything.
///
/// # Errors
///
/// A message saying why the task cannot run as asked.
pub(super) fn build(
    mechanism: DomainHistogramMechanism,
    domain: PublicDomain,
    public_coins: Option<u64>,
    privacy: &PrivacyTarget,
    clients: u64,
    min_cohort: u64,
    max_report_bytes: u32,
) -> Result<(Engine, Guarantee), String> {
    let map = domain_map(domain);
    let size = map.size();
    if !(2..=MAX_DOMAIN).contains(&size) {
        return Err(format!(
            "domain of {size} elements: expected 2 to {MAX_DOMAIN}"
        ));
    }
    if mechanism.is_shuffled() {
        check_shuffle_cohort(mechanism.name(), min_cohort, clients)?;
    }
    // A task's public coins are the same each time it is built (a restarted server rebuilds
    // it from its stored spec). A task stored before tasks carried their own seed was built
    // with seed 0.
    let shuffle = ShuffleCalibration {
        clients,
        bound: ShuffleBound::default(),
        beta: DEFAULT_COUNT_MIN_BETA,
        public_coins: public_coins.unwrap_or(0),
    };
    mechanism
        .build(
            map,
            privacy,
            shuffle,
            Registered {
                map,
                max_report_bytes,
            },
        )
        .map_err(|e| e.to_string())?
}

/// Refuses a shuffle mechanism `name` calibrated for `clients` devices whose rounds may
/// release from fewer uploads (`min_cohort < clients`).
///
/// # Privacy
///
/// Its messages hide among those of the devices it was calibrated for; with fewer, a device's
/// would stand out more than the guarantee says.
pub(super) fn check_shuffle_cohort(
    name: &str,
    min_cohort: u64,
    clients: u64,
) -> Result<(), String> {
    if min_cohort < clients {
        return Err(format!(
            "min_cohort {min_cohort}: {name} is calibrated for the expected population of \
             {clients} devices, whose messages hide each other's behind the shuffler; a round \
             must not release from fewer (set min_cohort to at least {clients})"
        ));
    }
    Ok(())
}

/// Refuses a Count-Min task (its histogram, or a range tree on its oracle) whose rounds close
/// only after more than the `clients` devices it is calibrated for upload
/// (`cohort_target > clients`).
///
/// # Privacy
///
/// Every device sends at most `q` of its blanket cells; the share of `δ` that pays for the cap
/// bounds, by the union bound, the chance that one of `clients` devices draws more than `q`
/// ([`tally_accounting::ghazi::count_min_blanket_cap`]). A round that waits for more devices
/// would release more reports than that bound counts.
pub(super) fn check_capped_cohort(
    name: &str,
    cohort_target: Option<u64>,
    clients: u64,
) -> Result<(), String> {
    match cohort_target {
        Some(target) if target > clients => Err(format!(
            "cohort_target {target}: {name} caps every device's blanket for the expected \
             population of {clients} devices, and its guarantee counts at most that many \
             reports (set cohort_target to at most {clients}, or the expected population to \
             the devices a round waits for)"
        )),
        _ => Ok(()),
    }
}

/// Refuses a Count-Min task of `spec` whose rounds would wait for more devices than its blanket
/// cap counts: [`check_capped_cohort`] for the expected population it is calibrated for.
pub(super) fn check_count_min_cohort(spec: &TaskSpec) -> Result<(), String> {
    check_capped_cohort(
        "ghazi-count-min",
        spec.rounds.cohort_target,
        spec.expected_population,
    )
}

/// Makes the task of a registered mechanism's round over `map`, whose devices' reports must
/// fit in `max_report_bytes`.
struct Registered {
    map: DomainMap,
    max_report_bytes: u32,
}

impl DomainRoundVisitor for Registered {
    type Output = Result<(Engine, Guarantee), String>;

    fn visit<M, R>(self, mechanism: M, round: R) -> Self::Output
    where
        M: DomainHistogram + 'static,
        R: FederatedDomainRound,
    {
        // A device abstains, before flipping a coin, when the round's longest report would not
        // fit (so that whether it abstains says nothing of its data).
        let longest = round.query().longest_report();
        if longest > u64::from(self.max_report_bytes) {
            return Err(format!(
                "{}: the longest report a device could send is {longest} bytes, above \
                 max_report_bytes ({}): every device would abstain",
                mechanism.name(),
                self.max_report_bytes
            ));
        }
        let task = SingleRound::new(round, mechanism.guarantee());
        let kind = Domain {
            map: self.map,
            mechanism: Arc::new(mechanism),
            round: PhantomData,
        };
        Ok(driven(kind, task, 1))
    }
}

/// One round over a public domain: every device's element, released by the mechanism's
/// release rule.
struct Domain<R> {
    map: DomainMap,
    mechanism: Arc<dyn DomainHistogram>,
    round: PhantomData<fn() -> R>,
}

impl<R> Clone for Domain<R> {
    fn clone(&self) -> Self {
        Self {
            map: self.map,
            mechanism: Arc::clone(&self.mechanism),
            round: PhantomData,
        }
    }
}

impl<R: FederatedDomainRound> Kind for Domain<R> {
    type Task = SingleRound<R, R::Release>;
    type Round = R;

    /// The round itself: its coins are the devices' own or the aggregator's, whatever the
    /// task's sampling.
    fn round(&self, round: &R, _: Sampling) -> R {
        round.clone()
    }

    /// No sample-and-threshold loss pair: the ledger composes its `(ε, δ)`.
    fn threshold_round(_: &R) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &R, release: R::Release) -> R::Release {
        release
    }

    fn collusion(
        &self,
        _: &Self::Task,
        colluding_fraction: f64,
    ) -> Result<Option<Collusion>, tally_core::Error> {
        self.mechanism.collusion(colluding_fraction)
    }

    /// The round's own [`CountedRound::aggregate_counts`] over its domain's elements.
    fn counted(&self, round: R, rng: ChaCha20Rng) -> Option<Box<dyn CountedAggregate>> {
        ElementCounts::of_domain(round, rng)
    }

    /// The document `tally histogram --mechanism M --json` prints for the same parameters
    /// (no truth, no seed, not clamped).
    fn document(
        &self,
        guarantee: &Guarantee,
        output: Option<R::Release>,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let estimates = output.map(R::estimates).unwrap_or_default();
        let local = self.mechanism.local_guarantee();
        let cost = self.mechanism.message_cost();
        serde_json::to_string_pretty(&DomainHistogramRelease {
            mechanism: self.mechanism.name().to_owned(),
            model: guarantee.model.name().to_owned(),
            guarantee: guarantee.into(),
            local_guarantee: local.as_ref().map(Into::into),
            local_epsilon: local.as_ref().map(|g| g.epsilon),
            target_delta: spec.privacy.delta,
            domain: DomainBody {
                size: self.map.size(),
                mapping: self.map.to_string(),
            },
            messages_per_client: cost.map(|c| c.messages_per_client),
            bits_per_message: cost.map(|c| c.bits_per_message),
            clamped: false,
            input: input_description(spec),
            clients: spec.expected_population,
            items: estimates
                .into_iter()
                .zip(0_u32..)
                .map(|(estimate, item)| DomainElementBody {
                    item,
                    estimate,
                    true_count: None,
                })
                .collect(),
            seed: None,
            mean_absolute_error: None,
            warnings: delta_warning(guarantee.delta, spec.expected_population)
                .into_iter()
                .collect(),
        })
    }
}

#[cfg(test)]
mod shuffle_tests {
    use crate::AskResponder;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_accounting::sample_threshold::Analysis;
    use tally_accounting::{Neighbours, TrustModel};
    use tally_core::protocol::Estimates;
    use tally_core::protocol::wire::WireRelease;
    use tally_messages::Ask;

    use super::*;
    use crate::engine::drawn_from_counts;
    use tally_messages::MAX_REPORT_BYTES;

    /// The privacy target of the shuffle tests' tasks.
    fn shuffle_privacy() -> PrivacyTarget {
        PrivacyTarget {
            epsilon: 2.0,
            delta: 1e-6,
            neighbours: Neighbours::ReplaceOne,
            analysis: Analysis::Tight,
        }
    }

    /// The task of `mechanism` over `0..domain` at [`shuffle_privacy`] for 3,000 devices, all
    /// of which every round waits for.
    fn for_3000_devices(mechanism: DomainHistogramMechanism, domain: u32) -> (Engine, Guarantee) {
        build(
            mechanism,
            PublicDomain::Integers(domain),
            None,
            &shuffle_privacy(),
            3000,
            3000,
            MAX_REPORT_BYTES,
        )
        .unwrap()
    }

    /// The shuffle mechanisms are published as their own asks, their devices' responders and
    /// the rounds the driver opens trust a shuffler, so `shuffler::aggregator` puts the
    /// analyzer behind `Shuffled` (whose input the server's `shuffler.rs` tests); 3,000
    /// devices' wire reports go through and every element is released, the common one
    /// standing out.
    #[test]
    fn shuffle_mechanisms_run_behind_the_shuffler() {
        for mechanism in [
            DomainHistogramMechanism::BalcerCheu,
            DomainHistogramMechanism::ShuffledGrr,
        ] {
            let (mut engine, guarantee) = for_3000_devices(mechanism, 16);
            assert_eq!(guarantee.model, TrustModel::Shuffle, "{mechanism:?}");
            assert!(engine.advance());
            let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::seed_from_u64(1));
            assert!(
                matches!(opened.ask, Ask::BalcerCheu { .. } | Ask::ShuffledGrr { .. }),
                "{:?}",
                opened.ask
            );
            let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
            assert_eq!(responder.trust(), TrustModel::Shuffle);
            let mut aggregator = opened.aggregator;
            let mut devices = ChaCha20Rng::seed_from_u64(2);
            for i in 0..3000_u32 {
                let element = if i % 2 == 0 { 0 } else { i % 16 };
                let report = responder
                    .respond(&element.to_string(), 256, &mut devices)
                    .unwrap();
                aggregator.absorb(report).unwrap();
            }
            assert!(aggregator.absorb("16".to_owned()).is_err());
            let estimates = Estimates::from_cells(aggregator.release()).unwrap().0;
            assert_eq!(estimates.len(), 16);
            assert!(estimates[0] > 1000.0, "{mechanism:?}: {estimates:?}");
        }
    }

    /// A round opened for a simulator draws its aggregator from the devices' counts where its
    /// round can (not GRR's, shuffled or not): the common element stands out as when every device
    /// answers; a datum outside the domain, or a Balcer-Cheu population other than the 3,000
    /// devices its protocol was calibrated for, draws nothing (every device answers instead).
    #[test]
    fn a_domain_round_draws_its_aggregator_from_the_devices_counts() {
        let held = |zeros: u64, rest: &'static str| [("0", zeros), ("5", 1_000), (rest, 500)];
        for mechanism in [
            DomainHistogramMechanism::BalcerCheu,
            DomainHistogramMechanism::ShuffledGrr,
            DomainHistogramMechanism::Laplace,
            DomainHistogramMechanism::Oue,
            DomainHistogramMechanism::Grr,
        ] {
            // Shuffled GRR's and GRR's rounds have no draw from counts: their devices answer.
            let draws = !matches!(
                mechanism,
                DomainHistogramMechanism::ShuffledGrr | DomainHistogramMechanism::Grr
            );
            let (mut engine, _) = for_3000_devices(mechanism, 16);
            assert!(engine.advance());
            let aggregate = |held: &[(&str, u64)]| drawn_from_counts(&engine, held);
            let Some(aggregator) = aggregate(&held(1_500, "15")) else {
                assert!(!draws, "{mechanism:?}: not drawn from the counts");
                continue;
            };
            assert!(draws, "{mechanism:?}");
            let estimates = Estimates::from_cells(aggregator.release()).unwrap().0;
            assert_eq!(estimates.len(), 16);
            assert!(estimates[0] > 1_000.0, "{mechanism:?}: {estimates:?}");
            assert!(aggregate(&held(1_500, "16")).is_none(), "{mechanism:?}");
            let other_population = aggregate(&held(1_499, "15")).is_some();
            assert_eq!(
                other_population,
                mechanism != DomainHistogramMechanism::BalcerCheu,
                "{mechanism:?}"
            );
        }
    }

    /// Every mechanism states what its guarantee keeps against colluding devices exactly when
    /// that guarantee is in the shuffle model: never less than the guarantee, the guarantee
    /// itself when nobody colludes; central and local guarantees state none (they do not rest
    /// on other devices' honesty).
    #[test]
    fn every_shuffle_mechanism_states_its_guarantee_against_colluding_devices() {
        use DomainHistogramMechanism as M;
        for mechanism in [
            M::Grr,
            M::Sue,
            M::Oue,
            M::Olh,
            M::HadamardResponse,
            M::SubsetSelection,
            M::Laplace,
            M::Gaussian,
            M::BalcerCheu,
            M::ShuffledGrr,
            M::GhaziHadamard,
            M::GhaziCountMin,
        ] {
            let (engine, guarantee) = for_3000_devices(mechanism, 2);
            let shuffled = guarantee.model == TrustModel::Shuffle;
            assert_eq!(shuffled, mechanism.is_shuffled(), "{mechanism:?}");
            let tenth = engine.collusion(0.1).unwrap();
            assert_eq!(tenth.is_some(), shuffled, "{mechanism:?}");
            if let Some(tenth) = tenth {
                assert!(
                    tenth.epsilon >= guarantee.epsilon,
                    "{mechanism:?}: {tenth:?}"
                );
                let none = engine.collusion(0.0).unwrap().unwrap();
                assert_eq!(
                    (none.epsilon.to_bits(), none.delta.to_bits()),
                    (guarantee.epsilon.to_bits(), guarantee.delta.to_bits()),
                    "{mechanism:?}"
                );
                assert!(engine.collusion(1.5).is_err(), "{mechanism:?}");
            }
        }
    }

    /// A shuffle task whose rounds could release from fewer devices than its mechanism was
    /// calibrated for is refused: with fewer messages to hide among, a device's would stand
    /// out more than the guarantee says.
    #[test]
    fn a_shuffle_task_that_could_release_from_fewer_devices_is_refused() {
        let privacy = shuffle_privacy();
        for mechanism in [
            DomainHistogramMechanism::BalcerCheu,
            DomainHistogramMechanism::ShuffledGrr,
        ] {
            let refused = build(
                mechanism,
                PublicDomain::Integers(16),
                None,
                &privacy,
                3000,
                2999,
                MAX_REPORT_BYTES,
            );
            let message = refused.err().expect("refused");
            assert!(message.contains("at least 3000"), "{message}");
        }
        let central = build(
            DomainHistogramMechanism::Laplace,
            PublicDomain::Integers(16),
            None,
            &privacy,
            3000,
            1,
            MAX_REPORT_BYTES,
        );
        assert!(central.is_ok());
    }

    /// A task whose devices' reports cannot fit in its `max_report_bytes` is refused up
    /// front (its devices would all abstain): Count-Min's blanket messages never fit, and
    /// Ghazi's Hadamard tuples for 3,000 devices fit in 16 KiB but not in 256 bytes.
    #[test]
    fn a_task_whose_reports_cannot_fit_is_refused() {
        let privacy = PrivacyTarget {
            epsilon: 1.0,
            ..shuffle_privacy()
        };
        let build_with = |mechanism, clients, max_report_bytes| {
            build(
                mechanism,
                PublicDomain::Integers(16),
                None,
                &privacy,
                clients,
                clients,
                max_report_bytes,
            )
        };
        let count_min = build_with(
            DomainHistogramMechanism::GhaziCountMin,
            3_000_000,
            MAX_REPORT_BYTES,
        );
        let message = count_min.err().expect("refused");
        assert!(message.contains("every device would abstain"), "{message}");
        let hadamard = DomainHistogramMechanism::GhaziHadamard;
        let fits = build_with(hadamard, 3000, 16_384);
        assert!(fits.is_ok(), "{:?}", fits.err());
        let message = build_with(hadamard, 3000, 256).err().expect("refused");
        assert!(message.contains("max_report_bytes (256)"), "{message}");
    }

    /// The fit is checked on the exact longest report, not on the expected one: Count-Min
    /// for 350 devices over `0..2` at `ε = 3` sends about 1,865 bytes of messages in
    /// expectation, but a device may send its own cells and its blanket's cap of 1,137 cells,
    /// 5,729 bytes in decimal.
    #[test]
    fn a_task_is_refused_on_its_longest_report() {
        let privacy = PrivacyTarget {
            epsilon: 3.0,
            ..shuffle_privacy()
        };
        let build_with = |max_report_bytes| {
            build(
                DomainHistogramMechanism::GhaziCountMin,
                PublicDomain::Integers(2),
                Some(1),
                &privacy,
                350,
                350,
                max_report_bytes,
            )
        };
        let count_min =
            tally_core::shuffle::GhaziCountMin::new(350, 2, 1, 3.0, 1e-6, DEFAULT_COUNT_MIN_BETA)
                .unwrap();
        let cost = count_min.message_cost().unwrap();
        let bytes = cost.messages_per_client * cost.bits_per_message.div_ceil(8) as f64;
        assert!(bytes < 1_900.0, "{cost:?}");
        assert_eq!(count_min.params().blanket_cap, 1137);
        let message = build_with(4_096).err().expect("refused");
        assert!(
            message.contains("longest report a device could send is 5729 bytes"),
            "{message}"
        );
        assert!(build_with(MAX_REPORT_BYTES).is_ok());
    }

    /// A Count-Min task whose rounds wait for more devices than its cap counts is refused; one
    /// that waits for as many or fewer (or for the default, the expected population) is not.
    #[test]
    fn a_count_min_round_waits_for_at_most_the_devices_its_cap_counts() {
        let refused = check_capped_cohort("ghazi-count-min", Some(3001), 3000).unwrap_err();
        assert!(
            refused.contains("cohort_target 3001")
                && refused.contains("set cohort_target to at most 3000"),
            "{refused}"
        );
        for target in [None, Some(3000), Some(2000)] {
            assert!(check_capped_cohort("ghazi-count-min", target, 3000).is_ok());
        }
    }
}
