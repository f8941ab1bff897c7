//! OptPrefixTree (Chadha et al., "Differentially private heavy hitter detection using
//! federated analytics", arXiv 2307.11749; docs/algorithms.md §6): heavy hitters among users who
//! each hold *many* data points, found by growing a prefix tree one adaptive segment per iteration,
//! each iteration a one-hot + randomized-response report per device summed by secure
//! aggregation.
//!
//! Only §1–§4.1 of the paper were available; the algorithm below is the reconstruction of
//! docs/algorithms.md §6.2 (marked RECON there), with its policies pluggable:
//!
//! * the server keeps a list `P_{t−1}` of live prefixes of length `ℓ_{t−1}` (in symbols of the
//!   public [`Encoding`]), a deny list, and the discovered list `P_disc` of complete words;
//! * iteration `t` asks for prefixes of length `ℓ_t = ℓ_{t−1} + s_t`, where the segment `s_t`
//!   comes from the [`SegmentPolicy`] under the domain cap `C`; the query domain is
//!   `D_t = {p‖u : p ∈ P_{t−1}, u ∈ 𝒜^{s_t}} ∪ {⊥}` minus the strings no word can produce and
//!   the complete words already known (denied or discovered), so `|D_t| ≤ C`;
//! * every device picks one eligible data point (not denied nor discovered, and whose
//!   length-`ℓ_{t−1}` prefix is live) by its [`Selection`] rule, or `⊥` when none is, and sends
//!   the [`UnaryRandomizer`] report (OUE by default, SUE as an option) of the element of `D_t`
//!   it maps to;
//! * the server sees only the sum of the reports, debiases it, and keeps the elements above
//!   the false-positive-controlling threshold of [`select_by_fpr`] (§6.4); kept complete words
//!   move to `P_disc`, the other kept elements become `P_t`;
//! * a run stops after `T` iterations, when nothing is live, or at the maximum code length;
//!   further runs start from the empty prefix with every word found so far denied, under the
//!   same budget.
//!
//! Drive it with [`Task`]: each iteration's query is a round of the round protocol
//! ([`IterationQuery`] answers from a device's multiset of words and sums the reports), which
//! the federated server runs behind its shuffler and `tally-sim` simulates.
//!
//! # Privacy
//!
//! * **Local (secondary):** in every iteration a device's report is a data-dependent selection
//!   followed by an `ε₀`-LDP randomizer over `D_t`, hence `ε₀`-LDP at *device* level
//!   (replace-one: all of one user's data replaced): whatever element `v, v'` two data sets
//!   select, `Pr[R(v) = y] ≤ e^{ε₀} Pr[R(v') = y]`, and a mixture of such distributions stays
//!   within the same factor. `⊥` is an element like any other, so every device sends exactly
//!   one report per iteration whatever its data: the *number* of reports carries no
//!   information. The query of an iteration depends only on earlier sums (post-processing). Over
//!   all iterations the local guarantee is `(T·ε₀, 0)` by basic composition.
//! * **Aggregate (primary):** the server sees only the sum of the `n` reports, a function of
//!   their shuffled multiset, so each iteration is `(ε', δ')`-DP for replace-one device-level
//!   neighbours by amplification by shuffling (FMT23 numerical bound, docs/algorithms.md §8), and
//!   the `T` iterations (of all runs) compose by the chosen [`Composition`]. `ε₀` is solved from
//!   the target by [`tally_accounting::opt_prefix_tree::solve_local_epsilon`]. The guarantee is
//!   reported with [`TrustModel::Shuffle`]: the aggregate model is a derivative of the shuffle
//!   model (secure aggregation reveals less than a shuffler). It assumes every device reports
//!   in every iteration (the simulator does so); with sampled participation the accountant must
//!   be given a lower bound on the reports per iteration.
//!
//! [`Composition`]: tally_accounting::composition::Composition
//! [`TrustModel::Shuffle`]: tally_accounting::TrustModel::Shuffle

mod encoding;
mod round;
mod segment;
mod selection;
mod threshold;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tally_accounting::opt_prefix_tree::LocalEpsilonPlan;
use tally_accounting::{Collusion, Guarantee};

pub use encoding::{Decoded, Encoding, HuffmanCode};
pub use round::{IterationReport, IterationSumsAggregator, PublishedIteration, WordMultiset};
pub use segment::SegmentPolicy;
pub use selection::Selection;
pub use threshold::{ThresholdChoice, select_by_fpr};

use crate::Error;
use crate::ldp::{UnaryRandomizer, UnaryVariant};
use crate::task::Task;
use encoding::padded_prefix;

/// The parameters of an OptPrefixTree run.
#[derive(Clone, Debug)]
pub struct OptPrefixTreeConfig {
    /// Iterations per run, `T ≥ 1`.
    pub iterations: usize,
    /// Runs, each with the words found by the earlier ones denied, `≥ 1`.
    pub runs: usize,
    /// The domain cap `C`: at most this many elements (`⊥` included) per iteration.
    pub domain_cap: u64,
    /// The target false-positive ratio of the threshold rule, in `(0, 1)`.
    pub fpr: f64,
    /// The devices' data-selection rule.
    pub selection: Selection,
    /// OUE ([`UnaryVariant::Optimized`], default) or SUE ([`UnaryVariant::Symmetric`]).
    pub randomizer: UnaryVariant,
    /// How segment lengths are chosen.
    pub segment: SegmentPolicy,
    /// How words become symbol strings.
    pub encoding: Encoding,
    /// The longest prefix asked for, in symbols (end symbol included); longer words are not
    /// found.
    pub max_length: usize,
    /// Words devices never report (known from elsewhere).
    pub deny: Vec<String>,
    /// The local `ε₀` and the guarantees, for `iterations × runs` iterations.
    pub plan: LocalEpsilonPlan,
}

/// One found word.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundWord {
    /// The word.
    pub word: String,
    /// The debiased estimate of the number of devices that reported it in the iteration that
    /// found it. Estimates of words found in different iterations are not comparable: devices
    /// choose among fewer eligible data points as the tree narrows.
    pub estimate: f64,
    /// The run that found it, from 1.
    pub run: usize,
    /// The iteration of that run, from 1.
    pub iteration: usize,
}

/// What the server learned in one iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationSummary {
    /// The run, from 1.
    pub run: usize,
    /// The iteration within the run, from 1.
    pub iteration: usize,
    /// The prefix length `ℓ_t` asked for, in symbols.
    pub prefix_length: usize,
    /// The segment `s_t`.
    pub segment: usize,
    /// `|D_t|`, `⊥` included.
    pub domain_size: u32,
    /// Live prefixes dropped (smallest estimates) to fit the cap.
    pub pruned: usize,
    /// The null noise scale `σ_t` of the estimates.
    pub sigma: f64,
    /// The threshold `τ_t`.
    pub threshold: f64,
    /// The bound on the expected false positives among the kept elements.
    pub expected_false_positives: f64,
    /// Kept elements that are complete words (moved to the discovered list).
    pub completed: usize,
    /// Kept elements that stay live prefixes.
    pub live: usize,
}

/// The output of an OptPrefixTree run.
#[derive(Clone, Debug)]
pub struct OptPrefixTreeOutput {
    /// Every word found, by decreasing estimate (see [`FoundWord::estimate`]).
    pub words: Vec<FoundWord>,
    /// One summary per iteration run.
    pub iterations: Vec<IterationSummary>,
    /// The aggregate guarantee of the whole task.
    pub guarantee: Guarantee,
    /// The local guarantee of one iteration.
    pub local_guarantee: Guarantee,
    /// The solved local `ε₀` with its accounting.
    pub plan: LocalEpsilonPlan,
}

/// The query domain `D_t` of one iteration and how devices map their words into it.
#[derive(Debug)]
struct QueryDomain {
    /// The live prefixes `P_{t−1}`, by index.
    parents: HashMap<Vec<u8>, u64>,
    /// `|𝒜|^{s_t}`.
    width: u64,
    /// For every `parent·width + u`, its element (or `u32::MAX` if it is not in `D_t`).
    slots: Vec<u32>,
    /// The elements other than `⊥`, as symbol strings, with the word when complete.
    elements: Vec<(Vec<u8>, Option<String>)>,
}

/// The query of one iteration, broadcast to every device.
#[derive(Clone, Debug)]
pub struct IterationQuery {
    /// The run, from 1.
    pub run: usize,
    /// The iteration within the run, from 1.
    pub iteration: usize,
    /// `ℓ_{t−1}`: the length of the live prefixes.
    pub parent_length: usize,
    /// `s_t`.
    pub segment: usize,
    /// The devices' selection rule.
    pub selection: Selection,
    /// The randomizer over `D_t`.
    pub randomizer: UnaryRandomizer,
    domain: Arc<QueryDomain>,
    encoding: Arc<Encoding>,
    excluded: Arc<HashSet<String>>,
}

impl IterationQuery {
    /// `|D_t|`, `⊥` included.
    pub fn domain_size(&self) -> u32 {
        self.bottom() + 1
    }

    /// The element `⊥` (the last one).
    pub fn bottom(&self) -> u32 {
        // Unwrap safety: |D_t| ≤ C < 2^32 (checked at construction).
        u32::try_from(self.domain.elements.len()).expect("domain below 2^32")
    }

    /// The symbol string of element `e` (not `⊥`).
    pub fn element(&self, e: u32) -> &[u8] {
        &self.domain.elements[e as usize].0
    }

    /// The element a device would report for the data point `word`, or `None` if the word is
    /// not eligible (denied or discovered, not encodable, or below a prefix that is not live).
    pub fn eligible_element(&self, word: &str) -> Option<u32> {
        if self.excluded.contains(word) {
            return None;
        }
        let code = self.encoding.encode(word)?;
        let parent = self
            .domain
            .parents
            .get(&padded_prefix(&code, self.parent_length))?;
        let alphabet = self.encoding.alphabet();
        let tail = padded_prefix(code.get(self.parent_length..).unwrap_or(&[]), self.segment);
        let u = tail
            .iter()
            .fold(0u64, |acc, &s| acc * alphabet + u64::from(s));
        let slot = self.domain.slots[usize::try_from(parent * self.domain.width + u).ok()?];
        (slot != u32::MAX).then_some(slot)
    }

    /// The unbiased estimates `f̂(d) = (Y_d − n q)/(p − q)` of the number of devices that
    /// selected each element (`⊥` last) from the sums, and the null noise scale
    /// `σ = √(n q (1 − q))/(p − q)` (docs/algorithms.md §6.3).
    ///
    /// # Panics
    ///
    /// If the sums do not match this query's domain.
    pub fn estimates(&self, release: &IterationSums) -> (Vec<f64>, f64) {
        assert_eq!(
            release.sums.len(),
            self.domain_size() as usize,
            "sums of another domain"
        );
        let support = self.randomizer.support_probabilities();
        let estimates = release
            .sums
            .iter()
            .map(|&y| support.debias(y as f64, release.reports))
            .collect();
        (estimates, support.null_variance(release.reports).sqrt())
    }

    /// [`IterationQuery::eligible_element`] for every word of `vocabulary`, `u32::MAX` for the
    /// ineligible ones: the table a simulator looks words up in.
    pub fn item_slots(&self, vocabulary: &[String]) -> Vec<u32> {
        vocabulary
            .iter()
            .map(|w| self.eligible_element(w).unwrap_or(u32::MAX))
            .collect()
    }
}

/// The sum of one iteration's reports: all the server sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IterationSums {
    /// `Y_d` for every element of `D_t` (`⊥` last).
    pub sums: Vec<u64>,
    /// The number of reports summed.
    pub reports: u64,
}

/// The OptPrefixTree task. Build it with [`OptPrefixTree::new`] and drive it with [`Task`].
#[derive(Clone, Debug)]
pub struct OptPrefixTree {
    config: OptPrefixTreeConfig,
    encoding: Arc<Encoding>,
    run: usize,
    iteration: usize,
    /// `P_{t−1}` with the estimates that kept them.
    live: Vec<(Vec<u8>, f64)>,
    length: usize,
    next_segment: usize,
    run_over: bool,
    finished: bool,
    excluded: HashSet<String>,
    found: Vec<FoundWord>,
    summaries: Vec<IterationSummary>,
    pending: Option<(IterationQuery, usize)>,
}

impl OptPrefixTree {
    /// The aggregate guarantee when a fraction `colluding_fraction` of the devices colludes
    /// with the analyst ([`LocalEpsilonPlan::collusion`]).
    ///
    /// # Errors
    ///
    /// [`Error::Accounting`] as [`LocalEpsilonPlan::collusion`].
    pub fn collusion(&self, colluding_fraction: f64) -> Result<Collusion, Error> {
        Ok(self.config.plan.collusion(colluding_fraction)?)
    }

    /// Validates the configuration.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] if `iterations`, `runs` or `max_length` is 0, `fpr ∉ (0, 1)`,
    /// the cap does not fit one segment (`|𝒜|^s + 1 > C`, `s = 1` or the fixed `s`), the cap is
    /// `2^32` or more, the plan does not cover `iterations × runs` iterations, or its `ε₀` is
    /// not a valid local ε.
    pub fn new(config: OptPrefixTreeConfig) -> Result<Self, Error> {
        if config.iterations == 0 || config.runs == 0 || config.max_length == 0 {
            return Err(Error::invalid(
                "iterations, runs and max length",
                0,
                "at least 1",
            ));
        }
        if !(config.fpr > 0.0 && config.fpr < 1.0) {
            return Err(Error::invalid("fpr", config.fpr, "a number in (0, 1)"));
        }
        let alphabet = config.encoding.alphabet();
        let s = match config.segment {
            SegmentPolicy::Fixed(s) => s,
            SegmentPolicy::MaxUnderCap | SegmentPolicy::MaxMass => 1,
        };
        if config.domain_cap >= 1 << 32
            || SegmentPolicy::capacity(alphabet, s, config.domain_cap) == 0
        {
            return Err(Error::invalid(
                "domain cap",
                config.domain_cap,
                "below 2^32 and at least |alphabet|^segment + 1",
            ));
        }
        // The randomizer of every iteration is built from the same ε₀: check it once here.
        UnaryRandomizer::new(config.randomizer, 2, config.plan.local_epsilon)?;
        if config.plan.iterations != config.iterations * config.runs {
            return Err(Error::invalid(
                "plan",
                config.plan.iterations,
                "solved for iterations × runs iterations",
            ));
        }
        let excluded = config.deny.iter().cloned().collect();
        Ok(Self {
            encoding: Arc::new(config.encoding.clone()),
            config,
            run: 0,
            iteration: 0,
            live: Vec::new(),
            length: 0,
            next_segment: 0,
            run_over: true,
            finished: false,
            excluded,
            found: Vec::new(),
            summaries: Vec::new(),
            pending: None,
        })
    }

    fn start_run(&mut self) {
        self.run += 1;
        self.iteration = 0;
        self.live = vec![(Vec::new(), 0.0)];
        self.length = 0;
        // The root has no estimate; any positive weight gives the policies one prefix.
        self.next_segment = self.config.segment.segment(
            &[1.0],
            self.encoding.alphabet(),
            self.config.domain_cap,
            self.config.max_length,
        );
        self.run_over = false;
    }

    /// Builds `D_t` from the live prefixes (dropping the weakest ones beyond the cap).
    fn build_domain(&mut self, segment: usize) -> (QueryDomain, usize) {
        let alphabet = self.encoding.alphabet();
        let capacity = SegmentPolicy::capacity(alphabet, segment, self.config.domain_cap);
        let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
        self.live
            .sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let pruned = self.live.len().saturating_sub(capacity);
        self.live.truncate(capacity);
        // Unwrap safety: capacity·alphabet^segment < C < 2^32.
        let width = alphabet.pow(u32::try_from(segment).expect("small segment"));
        let mut slots = Vec::with_capacity(self.live.len() * width as usize);
        let mut elements = Vec::new();
        let mut parents = HashMap::with_capacity(self.live.len());
        for (index, (parent, _)) in self.live.iter().enumerate() {
            parents.insert(parent.clone(), index as u64);
            for u in 0..width {
                let mut symbols = parent.clone();
                symbols.extend((0..segment).rev().map(|j| {
                    // Unwrap safety: a digit is below the alphabet size ≤ 256.
                    u8::try_from(u / alphabet.pow(j as u32) % alphabet).expect("digit")
                }));
                let slot = match self.encoding.decode(&symbols) {
                    Decoded::Invalid => None,
                    Decoded::Complete(word) if self.excluded.contains(&word) => None,
                    Decoded::Complete(word) => Some((symbols, Some(word))),
                    Decoded::Partial => Some((symbols, None)),
                };
                slots.push(match slot {
                    Some(element) => {
                        elements.push(element);
                        // Unwrap safety: fewer than C < 2^32 elements.
                        u32::try_from(elements.len() - 1).expect("domain below 2^32")
                    }
                    None => u32::MAX,
                });
            }
        }
        (
            QueryDomain {
                parents,
                width,
                slots,
                elements,
            },
            pruned,
        )
    }
}

impl Task for OptPrefixTree {
    type Query = IterationQuery;
    type Release = IterationSums;
    type Output = OptPrefixTreeOutput;

    fn next_query(&mut self) -> Option<IterationQuery> {
        if self.finished {
            return None;
        }
        if self.run_over {
            if self.run == self.config.runs {
                self.finished = true;
                return None;
            }
            self.start_run();
        }
        let segment = self.next_segment;
        let (domain, pruned) = self.build_domain(segment);
        // Unwrap safety: the domain has at most C − 1 < 2^32 elements besides ⊥.
        let size = u32::try_from(domain.elements.len() + 1).expect("domain below 2^32");
        let randomizer = UnaryRandomizer::new(
            self.config.randomizer,
            size.max(2),
            self.config.plan.local_epsilon,
        )
        // Unwrap safety: ε₀ was checked in `new`, and the domain has at least 2 elements.
        .expect("a valid local epsilon");
        self.iteration += 1;
        let query = IterationQuery {
            run: self.run,
            iteration: self.iteration,
            parent_length: self.length,
            segment,
            selection: self.config.selection,
            randomizer,
            domain: Arc::new(domain),
            encoding: Arc::clone(&self.encoding),
            excluded: Arc::new(self.excluded.clone()),
        };
        self.pending = Some((query.clone(), pruned));
        Some(query)
    }

    /// Takes the sum of the iteration's reports.
    ///
    /// # Panics
    ///
    /// If no query is pending or the sums do not match its domain.
    fn observe(&mut self, release: IterationSums) {
        let (query, pruned) = self.pending.take().expect("a pending query");
        let (estimates, sigma) = query.estimates(&release);
        let candidates = &query.domain.elements;
        let estimates = &estimates[..candidates.len()];
        let choice = select_by_fpr(estimates, sigma, self.config.fpr);
        let mut live = Vec::new();
        let mut completed = 0;
        for &k in &choice.kept {
            let (symbols, word) = &candidates[k];
            match word {
                Some(word) => {
                    completed += 1;
                    self.excluded.insert(word.clone());
                    self.found.push(FoundWord {
                        word: word.clone(),
                        estimate: estimates[k],
                        run: self.run,
                        iteration: self.iteration,
                    });
                }
                None => live.push((symbols.clone(), estimates[k])),
            }
        }
        self.length += query.segment;
        self.summaries.push(IterationSummary {
            run: self.run,
            iteration: self.iteration,
            prefix_length: self.length,
            segment: query.segment,
            domain_size: query.domain_size(),
            pruned,
            sigma,
            threshold: choice.threshold,
            expected_false_positives: choice.expected_false_positives,
            completed,
            live: live.len(),
        });
        let remaining = self.config.max_length.saturating_sub(self.length);
        self.run_over =
            live.is_empty() || self.iteration == self.config.iterations || remaining == 0;
        let estimates: Vec<f64> = live.iter().map(|(_, e)| *e).collect();
        self.next_segment = self.config.segment.segment(
            &estimates,
            self.encoding.alphabet(),
            self.config.domain_cap,
            remaining,
        );
        self.live = live;
    }

    fn finish(self) -> OptPrefixTreeOutput {
        let mut words = self.found;
        words.sort_by(|a, b| {
            b.estimate
                .total_cmp(&a.estimate)
                .then_with(|| a.word.cmp(&b.word))
        });
        OptPrefixTreeOutput {
            words,
            iterations: self.summaries,
            guarantee: self.config.plan.aggregate.clone(),
            local_guarantee: self.config.plan.local.clone(),
            plan: self.config.plan,
        }
    }

    fn guarantee(&self) -> &Guarantee {
        &self.config.plan.aggregate
    }
}
