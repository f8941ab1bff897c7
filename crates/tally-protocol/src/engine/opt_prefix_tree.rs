//! OptPrefixTree as a server task kind: each iteration every device sends one randomized
//! one-hot report of its selected word's element ([`IterationQuery`] is the round), the
//! reports go behind the shuffler (the round's guarantee trusts one) and the analyzer sums
//! them; the task, its iterations and its guarantee are tally-core's [`OptPrefixTree`], with
//! `ε₀` solved by `tally-accounting` as the offline command solves it.

use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::solve_local_epsilon;
use tally_accounting::shuffle::ShuffleBound;
use tally_accounting::{Collusion, Guarantee, Neighbours};
use tally_core::heavy_hitters::{
    Encoding, IterationQuery, IterationSums, OptPrefixTree, OptPrefixTreeConfig,
    OptPrefixTreeOutput,
};
use tally_core::histogram::SampleThreshold;
use tally_messages::{OptPrefixTreeOptions, Sampling, TaskSpec, WordEncoding};

use super::{Engine, Kind, TaskDefinition, driven, input_description};
use crate::document;
use crate::opt_prefix_tree::{encoding, segment_policy, selection, unary_variant};

/// An OptPrefixTree task with its options.
pub(super) struct OptPrefixTreeTask<'a>(pub(super) &'a OptPrefixTreeOptions);

impl TaskDefinition for OptPrefixTreeTask<'_> {
    fn name(&self) -> &'static str {
        "opt-prefix-tree"
    }

    fn description(&self, _: Neighbours) -> String {
        let options = self.0;
        format!(
            "opt-prefix-tree heavy hitters, {} run(s) of {} iteration(s), domain cap {}, \
             segment {}, {} encoding, behind the shuffler",
            options.runs,
            options.iterations,
            options.domain_cap,
            options.segment,
            match options.encoding {
                WordEncoding::Bytes => "bytes",
                WordEncoding::Huffman { .. } => "huffman",
            }
        )
    }

    fn rounds(&self) -> u32 {
        self.0.iterations.saturating_mul(self.0.runs)
    }

    fn no_curve_reason(&self) -> &'static str {
        "OptPrefixTree's reports are randomized one-hot vectors behind the shuffler, with no threshold: \
         there is no release curve. The guarantee above is what it promises."
    }

    fn build(&self, spec: &TaskSpec) -> Result<(Engine, Guarantee), String> {
        OptPrefixTreeKind::build(spec, self.0)
    }
}

/// OptPrefixTree over devices holding many words each.
#[derive(Clone)]
pub(super) struct OptPrefixTreeKind {
    options: OptPrefixTreeOptions,
    encoding: &'static str,
    max_length: usize,
}

/// The longest report of a domain of `domain_cap` elements in its wire encoding
/// (`k:` and `⌈k/4⌉` hexadecimal digits).
fn longest_report(domain_cap: u64) -> u64 {
    domain_cap.to_string().len() as u64 + 1 + domain_cap.div_ceil(4)
}

impl OptPrefixTreeKind {
    /// The OptPrefixTree task `spec` asks for: `ε₀` solved for the privacy target over
    /// `min_cohort` reports per iteration (the fewest a released iteration sums), the
    /// iterations composed as `composition` says (tight when left out).
    ///
    /// # Errors
    ///
    /// A message saying why the task cannot run: neighbours other than replace-one (the
    /// guarantee's), device-side sampling (every device reports every iteration), a domain
    /// cap whose reports would not fit in `max_report_bytes`, or parameters tally-core or
    /// the accountant refuses.
    pub(super) fn build(
        spec: &TaskSpec,
        options: &OptPrefixTreeOptions,
    ) -> Result<(Engine, Guarantee), String> {
        let privacy = &spec.privacy;
        if privacy.neighbours != Neighbours::ReplaceOne {
            return Err(
                "OptPrefixTree's guarantee is for replace-one neighbours: give \
                        neighbours replace-one"
                    .to_owned(),
            );
        }
        if spec.sampling != Sampling::Aggregator {
            return Err(
                "every OptPrefixTree device reports every iteration: give sampling \
                        aggregator"
                    .to_owned(),
            );
        }
        let longest = longest_report(options.domain_cap);
        if longest > u64::from(spec.rounds.max_report_bytes) {
            return Err(format!(
                "a report over a domain cap of {} takes up to {longest} bytes: raise \
                 max_report_bytes ({}) or lower the domain cap",
                options.domain_cap, spec.rounds.max_report_bytes
            ));
        }
        let encoding = encoding(&options.encoding).map_err(|e| e.to_string())?;
        let max_length = options.max_length.map_or(
            match encoding {
                Encoding::Huffman(_) => 96,
                Encoding::Bytes => 24,
            },
            |m| m as usize,
        );
        let (iterations, runs) = (options.iterations as usize, options.runs as usize);
        let bound = if options.unproven_fmt23 {
            ShuffleBound::Fmt23
        } else {
            ShuffleBound::Fmt21
        };
        let plan = solve_local_epsilon(
            privacy.epsilon,
            privacy.delta,
            iterations * runs,
            spec.rounds.min_cohort,
            options.composition.unwrap_or(Composition::Tight),
            bound,
        )
        .map_err(|e| e.to_string())?;
        let kind = Self {
            options: options.clone(),
            encoding: encoding.name(),
            max_length,
        };
        let task = OptPrefixTree::new(OptPrefixTreeConfig {
            iterations,
            runs,
            domain_cap: options.domain_cap,
            fpr: options.fpr,
            selection: selection(options.selection),
            randomizer: unary_variant(options.randomizer),
            segment: segment_policy(options.segment),
            encoding,
            max_length,
            deny: options.deny.clone(),
            plan,
        })
        .map_err(|e| e.to_string())?;
        Ok(driven(kind, task, iterations * runs))
    }
}

impl Kind for OptPrefixTreeKind {
    type Task = OptPrefixTree;
    type Round = IterationQuery;

    fn collusion(
        &self,
        task: &OptPrefixTree,
        colluding_fraction: f64,
    ) -> Result<Option<Collusion>, tally_core::Error> {
        Ok(Some(task.collusion(colluding_fraction)?))
    }

    fn round(&self, query: &IterationQuery, _: Sampling) -> IterationQuery {
        query.clone()
    }

    /// No S&T loss pair: the ledger charges the task's `(ε, δ)`.
    fn threshold_round(_: &IterationQuery) -> Option<&SampleThreshold> {
        None
    }

    fn release(_: &IterationQuery, sums: IterationSums) -> IterationSums {
        sums
    }

    /// The document `tally heavy-hitters --algorithm opt-prefix-tree --json` prints, without
    /// what only a simulation knows.
    fn document(
        &self,
        _: &Guarantee,
        output: OptPrefixTreeOutput,
        spec: &TaskSpec,
    ) -> serde_json::Result<String> {
        let options = &self.options;
        let parameters = document::OptPrefixTreeParameters {
            iterations: options.iterations as usize,
            runs: options.runs as usize,
            domain_cap: options.domain_cap,
            fpr: options.fpr,
            selection: selection(options.selection),
            randomizer: unary_variant(options.randomizer),
            encoding: self.encoding,
            segment: segment_policy(options.segment),
            max_length: self.max_length,
            deny: options.deny.len(),
        };
        serde_json::to_string_pretty(&document::opt_prefix_tree(
            &output,
            &parameters,
            spec.expected_population,
            input_description(spec),
            None,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::AskResponder;
    use crate::opt_prefix_tree::word_encoding;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use tally_accounting::sample_threshold::Analysis;
    use tally_core::heavy_hitters::{Selection, WordMultiset};
    use tally_core::protocol::wire::WireRelease;
    use tally_core::protocol::{DeviceQuery, TrustModel};
    use tally_core::task::Task;
    use tally_messages::{
        HeavyHittersRelease, PROTOCOL_VERSION, PrivacyTarget, RoundPolicy, SegmentRule,
        SelectionRule, TaskKind,
    };
    use tally_sim::MultiPopulation;

    use super::*;

    /// Significance level of every distribution check.
    const ALPHA: f64 = 1e-6;

    /// The shipped speakers file: 1,419 speakers and all their words.
    fn speakers() -> MultiPopulation {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/shakespeare/shakespeare_speakers.tsv.gz"
        );
        MultiPopulation::from_tsv_file(path).unwrap()
    }

    fn options() -> OptPrefixTreeOptions {
        OptPrefixTreeOptions {
            iterations: 4,
            runs: 1,
            domain_cap: 1025,
            fpr: 0.1,
            selection: SelectionRule::UniformSupport,
            randomizer: tally_messages::Randomizer::Oue,
            encoding: word_encoding(&Encoding::Huffman(tally_sim::english_huffman_code())),
            segment: SegmentRule::MaxUnderCap,
            max_length: None,
            deny: Vec::new(),
            composition: None,
            unproven_fmt23: false,
        }
    }

    fn spec(devices: u64) -> TaskSpec {
        TaskSpec {
            version: PROTOCOL_VERSION,
            population: "speakers".into(),
            expected_population: devices,
            privacy: PrivacyTarget {
                epsilon: 8.0,
                delta: 1e-6,
                neighbours: Neighbours::ReplaceOne,
                analysis: Analysis::Tight,
            },
            kind: TaskKind::OptPrefixTree(options()),
            rounds: RoundPolicy {
                min_cohort: devices,
                max_report_bytes: 300,
                ..RoundPolicy::default()
            },
            sampling: Sampling::Aggregator,
        }
    }

    /// The task the server builds for `spec`, as tally-core's: fed the same releases it asks
    /// the same queries, so a test can read each iteration's query.
    fn shadow(spec: &TaskSpec) -> OptPrefixTree {
        let TaskKind::OptPrefixTree(options) = &spec.kind else {
            unreachable!("an OptPrefixTree spec")
        };
        let encoding = encoding(&options.encoding).unwrap();
        let plan = solve_local_epsilon(
            spec.privacy.epsilon,
            spec.privacy.delta,
            options.iterations as usize,
            spec.rounds.min_cohort,
            Composition::Tight,
            ShuffleBound::Fmt21,
        )
        .unwrap();
        OptPrefixTree::new(OptPrefixTreeConfig {
            iterations: options.iterations as usize,
            runs: 1,
            domain_cap: options.domain_cap,
            fpr: options.fpr,
            selection: selection(options.selection),
            randomizer: unary_variant(options.randomizer),
            segment: segment_policy(options.segment),
            encoding,
            max_length: 96,
            deny: Vec::new(),
            plan,
        })
        .unwrap()
    }

    /// Whether `sums` lies where the exact law of one iteration of `query` over `devices`
    /// puts it with probability at least `1 − α`: element `d`'s sum is a sum of independent
    /// bits, device `i`'s being 1 with probability `π_{i,d} p + (1 − π_{i,d}) q` (`π_{i,d}`
    /// its probability of selecting `d`), so by Bernstein's inequality it lies within
    /// `t_d = L/3 + √(L²/9 + 2 L v_d)` of its mean (`v_d` its variance,
    /// `L = ln(2|D_t|/α)`) with probability at least `1 − α/|D_t|`.
    fn within_law(query: &IterationQuery, devices: &[WordMultiset], sums: &IterationSums) -> bool {
        let size = query.domain_size() as usize;
        let support = query.randomizer.support_probabilities();
        let (p, q) = (support.p, support.q);
        let n = devices.len() as f64;
        let mut mean = vec![n * q; size];
        let mut variance = vec![n * q * (1.0 - q); size];
        for device in devices {
            let eligible: Vec<(u32, u32)> = device
                .words()
                .iter()
                .filter_map(|(w, m)| Some((query.eligible_element(w)?, *m)))
                .collect();
            let mut selected: Vec<(u32, f64)> = Vec::new();
            if eligible.is_empty() {
                selected.push((query.bottom(), 1.0));
            }
            let total: f64 = eligible.iter().map(|&(_, m)| f64::from(m)).sum();
            for &(element, m) in &eligible {
                let share = match query.selection {
                    Selection::UniformSupport => 1.0 / eligible.len() as f64,
                    Selection::Weighted => f64::from(m) / total,
                };
                selected.push((element, share));
            }
            selected.sort_by_key(|&(e, _)| e);
            selected.dedup_by(|b, a| {
                let same = a.0 == b.0;
                if same {
                    a.1 += b.1;
                }
                same
            });
            for (element, share) in selected {
                let bit = share * p + (1.0 - share) * q;
                mean[element as usize] += bit - q;
                variance[element as usize] += bit * (1.0 - bit) - q * (1.0 - q);
            }
        }
        let l = (2.0 * size as f64 / ALPHA).ln();
        sums.reports == devices.len() as u64
            && sums
                .sums
                .iter()
                .zip(mean.iter().zip(&variance))
                .all(|(&y, (&m, &v))| {
                    let t = l / 3.0 + (l * l / 9.0 + 2.0 * l * v.max(0.0)).sqrt();
                    (y as f64 - m).abs() <= t
                })
    }

    /// How a run's sums were made.
    #[derive(Clone, Copy, PartialEq)]
    enum Run {
        /// The server's task, its devices answering the published ask through the wire.
        Federated,
        /// The simulator's binomial path.
        Simulated,
        /// A federated run whose devices always report their first word.
        FirstWord,
    }

    /// Runs the task `run` says; for each iteration, whether its sums were within the law,
    /// and the released document (for federated runs).
    fn iterations(run: Run, seed: u64) -> (Vec<bool>, Option<HeavyHittersRelease>) {
        let population = speakers();
        let devices = tally_sim::word_multisets(population.users(), population.vocabulary());
        let texts: Vec<String> = devices.iter().map(WordMultiset::text).collect();
        let spec = spec(devices.len() as u64);
        let (mut engine, _) = Engine::build(&spec).unwrap();
        let mut task = shadow(&spec);
        let mut coins = ChaCha20Rng::seed_from_u64(seed);
        let mut rng = ChaCha20Rng::seed_from_u64(!seed);
        let mut verdicts = Vec::new();
        while let Some(query) = task.next_query() {
            assert!(engine.advance());
            assert_eq!(query.trust(), TrustModel::Shuffle);
            let opened = engine.open(Sampling::Aggregator, ChaCha20Rng::from_rng(&mut coins));
            let sums = if run == Run::Simulated {
                let slots = query.item_slots(population.vocabulary());
                tally_sim::binomial_iteration(&query, population.users(), &slots, &mut rng)
            } else {
                let responder = opened.ask.responder(Sampling::Aggregator).unwrap();
                let mut aggregator = opened.aggregator;
                for (text, device) in texts.iter().zip(&devices) {
                    let report = match run {
                        Run::FirstWord => {
                            let first = device
                                .words()
                                .iter()
                                .find_map(|(w, _)| query.eligible_element(w))
                                .unwrap_or_else(|| query.bottom());
                            let bits = query.randomizer.randomize(first, &mut rng);
                            tally_core::protocol::WireReport::encode(
                                tally_core::heavy_hitters::IterationReport(bits),
                            )
                        }
                        _ => responder.respond(text, 300, &mut rng).unwrap(),
                    };
                    aggregator.absorb(report).unwrap();
                }
                let cells = aggregator.release();
                engine.observe(cells.clone()).unwrap();
                IterationSums::from_cells(cells).unwrap()
            };
            if run == Run::Simulated {
                engine.observe(sums.clone().into_cells()).unwrap();
            }
            verdicts.push(within_law(&query, &devices, &sums));
            task.observe(sums);
        }
        assert!(!engine.advance());
        let document =
            (run != Run::Simulated).then(|| serde_json::from_str(&engine.document(&spec)).unwrap());
        (verdicts, document)
    }

    /// The federated task on the Shakespeare speakers (1,419 devices, all their words) and
    /// the simulator release, in every iteration, sums inside the exact law of that
    /// iteration's query at α = 1e-6; devices that report their first word instead of a
    /// random selection are caught.
    #[test]
    fn stat_federated_iterations_follow_the_simulators_law() {
        let (federated, document) = iterations(Run::Federated, 1);
        assert!(
            federated.len() >= 2 && federated.iter().all(|&ok| ok),
            "{federated:?}"
        );
        let (simulated, _) = iterations(Run::Simulated, 1);
        assert!(simulated.iter().all(|&ok| ok), "{simulated:?}");
        let (mutant, _) = iterations(Run::FirstWord, 1);
        assert!(
            mutant.iter().any(|&ok| !ok),
            "the mutant passes: {mutant:?}"
        );
        let document = document.unwrap();
        assert_eq!(document.mechanism, "opt-prefix-tree");
        assert_eq!(document.guarantee.model, "shuffle");
        assert!(document.found_items > 0);
    }

    /// The task is refused where its guarantee would not hold or its reports would not fit.
    #[test]
    fn refuses_other_trust_and_oversized_reports() {
        let mut add_remove = spec(100);
        add_remove.privacy.neighbours = Neighbours::AddRemove;
        assert!(Engine::build(&add_remove).is_err());
        let mut device = spec(100);
        device.sampling = Sampling::Device;
        assert!(Engine::build(&device).is_err());
        let mut small = spec(100);
        small.rounds.max_report_bytes = 200;
        assert!(Engine::build(&small).is_err_and(|e| e.contains("max_report_bytes")));
        assert_eq!(longest_report(1025), 5 + 257);
    }
}
