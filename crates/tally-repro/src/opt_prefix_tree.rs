//! Chadha et al., OptPrefixTree (SaTML 2024, seed 001; docs/algorithms.md §6): captured mass
//! against ε on a `reddit-like` population of users with many words, for the paper's design choices
//! and two single-item comparators.
//!
//! # The grid
//!
//! One `reddit-like:users=N,mean_items=K` population (seed `seed`), and for every ε and
//! repetition:
//!
//! | variant | what runs |
//! | --- | --- |
//! | `adaptive` | OptPrefixTree, `max-under-cap` segments, `uniform-support` selection, one run |
//! | `fixed` | the same with a constant segment of [`Config::fixed_segment`] bits |
//! | `max-mass` | the same with `max-mass` segments (tally's heuristic, [`SegmentPolicy::MaxMass`]) |
//! | `weighted` | the same as `adaptive` with `weighted` selection |
//! | `two-runs` | two runs of `T` iterations, the second denying the first's words, one budget |
//! | `triehh++` | TrieHH++ (one S&T histogram per character level), each user contributing one uniformly chosen data point |
//! | `single-round` | one S&T histogram over whole words, each user contributing one uniformly chosen data point |
//!
//! Every variant meets the same `(ε, δ)` for replace-one neighbours at device level: the
//! OptPrefixTree variants in the aggregate model (ε₀ solved by
//! [`solve_local_epsilon_best`]), the S&T comparators in the central model of their sampling
//! and thresholding (a user holds one item there, so device level is client level).
//!
//! # Metrics
//!
//! `captured_mass`: the share of all data points whose word was returned (the paper's
//! utility); `captured_user_mass`: the same weighted by the number of users holding each word;
//! `false_positives`: returned words that are not in the data.
//!
//! # Determinism
//!
//! Run `u` of the grid (ε, then repetition, then variant) draws from ChaCha12 stream `u` of the
//! seed; the one-item populations of repetition `r` from stream `2^32 + r`. Results do not
//! depend on the number of threads.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::Serialize;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::opt_prefix_tree::{
    DEFAULT_COMPOSITIONS, LocalEpsilonPlan, solve_local_epsilon_best,
};
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_accounting::shuffle::ShuffleBound;
use tally_core::heavy_hitters::{
    Encoding, OptPrefixTree, OptPrefixTreeConfig, SegmentPolicy, Selection, TrieHhPlus,
    TrieHhPlusConfig,
};
use tally_core::histogram::{SampleThreshold, plan_rounds};
use tally_core::ldp::UnaryVariant;
use tally_sim::{
    AggregationPath, ExecutionPath, MultiPopulation, Population, RedditLikeSpec,
    english_huffman_code, run_sample_threshold, run_triehh_plus,
};

use crate::Error;
use crate::figures::{GridPlot, Line, PANEL_SIZE, Panel, Point, YAxis};
use crate::report::{Finding, Markdown, Verdict};
use crate::table::{MeanSe, write_csv};

/// A variant of the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// OptPrefixTree with the default policies.
    Adaptive,
    /// A constant segment length.
    Fixed,
    /// The `max-mass` segment policy.
    MaxMass,
    /// Weighted data selection.
    Weighted,
    /// Two runs with a deny list, one budget.
    TwoRuns,
    /// TrieHH++ on one data point per user.
    TrieHhPlus,
    /// Single-round S&T on one data point per user.
    SingleRound,
}

impl Variant {
    /// Every variant, in CSV and legend order.
    pub const ALL: [Self; 7] = [
        Self::Adaptive,
        Self::Fixed,
        Self::MaxMass,
        Self::Weighted,
        Self::TwoRuns,
        Self::TrieHhPlus,
        Self::SingleRound,
    ];

    /// The name used in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Adaptive => "adaptive",
            Self::Fixed => "fixed",
            Self::MaxMass => "max-mass",
            Self::Weighted => "weighted",
            Self::TwoRuns => "two-runs",
            Self::TrieHhPlus => "triehh++",
            Self::SingleRound => "single-round",
        }
    }

    /// The name used in figures and reports (the table in the module docs says what each
    /// runs).
    pub fn title(self) -> &'static str {
        match self {
            Self::Adaptive => "OptPrefixTree",
            Self::Fixed => "fixed seg.",
            Self::MaxMass => "max-mass",
            Self::Weighted => "weighted",
            Self::TwoRuns => "2 runs+deny",
            Self::TrieHhPlus => "TrieHH++",
            Self::SingleRound => "S&T 1-round",
        }
    }

    fn index(self) -> usize {
        Self::ALL
            .iter()
            .position(|&v| v == self)
            .expect("listed variant")
    }
}

/// The settings of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Users of the `reddit-like` population.
    pub users: u64,
    /// Mean data points per user.
    pub mean_items: f64,
    /// The ε values (x axis).
    pub epsilons: Vec<f64>,
    /// δ of every variant.
    pub delta: f64,
    /// OptPrefixTree iterations per run `T`; TrieHH++ levels are [`Config::levels`].
    pub iterations: usize,
    /// The domain cap `C`.
    pub domain_cap: u64,
    /// The target false-positive ratio.
    pub fpr: f64,
    /// The segment of the `fixed` variant, in bits.
    pub fixed_segment: usize,
    /// TrieHH++ levels (one character each).
    pub levels: usize,
    /// Repetitions per setting.
    pub reps: usize,
    /// The seed of every random draw.
    pub seed: u64,
}

impl Config {
    /// The full grid: 200,000 users with 30 data points on average, ε ∈ {1, 2, 4, 8},
    /// δ = 1e−6, T = 5, C = 65,537, FPR = 0.1, fixed segments of 8 bits, TrieHH++ with 10
    /// levels, 3 repetitions.
    pub fn full(seed: u64) -> Self {
        Self {
            users: 200_000,
            mean_items: 30.0,
            epsilons: vec![1.0, 2.0, 4.0, 8.0],
            delta: 1e-6,
            iterations: 5,
            domain_cap: 65_537,
            fpr: 0.1,
            fixed_segment: 8,
            levels: 10,
            reps: 3,
            seed,
        }
    }

    /// A reduced grid for a quick check: 20,000 users, ε ∈ {2, 8}, one repetition.
    pub fn quick(seed: u64) -> Self {
        Self {
            users: 20_000,
            epsilons: vec![2.0, 8.0],
            reps: 1,
            ..Self::full(seed)
        }
    }

    /// The number of runs of the grid.
    pub fn runs(&self) -> usize {
        self.epsilons.len() * self.reps * Variant::ALL.len()
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |name, message: &str| {
            Err(Error::Setting {
                name,
                message: message.to_owned(),
            })
        };
        if self.epsilons.is_empty() || self.epsilons.iter().any(|e| !(*e > 0.0 && *e <= 50.0)) {
            return bad("epsilons", "at least one, each in (0, 50]");
        }
        if self.reps == 0 || self.users < 2 {
            return bad("reps and users", "at least 1 repetition and 2 users");
        }
        Ok(())
    }
}

/// One run of one variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The variant's name.
    pub variant: &'static str,
    /// The target ε.
    pub epsilon: f64,
    /// The repetition, from 0.
    pub rep: usize,
    /// The share of data points captured.
    pub captured_mass: f64,
    /// The user-support variant.
    pub captured_user_mass: f64,
    /// Returned words not in the data.
    pub false_positives: usize,
    /// Returned words.
    pub found: usize,
    /// The local ε₀ (OptPrefixTree variants only).
    pub local_epsilon: Option<f64>,
    /// The composition chosen for the local ε₀ (OptPrefixTree variants only).
    pub composition: Option<&'static str>,
}

/// Means and standard errors over repetitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The variant's name.
    pub variant: &'static str,
    /// The target ε.
    pub epsilon: f64,
    /// Mean captured mass.
    pub captured_mass_mean: f64,
    /// Its standard error.
    pub captured_mass_se: f64,
    /// Mean user-support captured mass.
    pub captured_user_mass_mean: f64,
    /// Its standard error.
    pub captured_user_mass_se: f64,
    /// Mean number of false positives.
    pub false_positives_mean: f64,
    /// Repetitions.
    pub reps: usize,
}

/// The results of a run.
#[derive(Clone, Debug)]
pub struct Results {
    /// The settings.
    pub config: Config,
    /// What the population is.
    pub population: String,
    /// One row per run.
    pub rows: Vec<Row>,
    /// One summary per (variant, ε).
    pub summaries: Vec<Summary>,
}

impl Results {
    fn summary(&self, variant: Variant, epsilon: f64) -> Option<&Summary> {
        self.summaries
            .iter()
            .find(|s| s.variant == variant.name() && s.epsilon.to_bits() == epsilon.to_bits())
    }
}

/// The OptPrefixTree configuration of a variant at a solved plan.
fn opt_config(config: &Config, variant: Variant, plan: LocalEpsilonPlan) -> OptPrefixTreeConfig {
    OptPrefixTreeConfig {
        iterations: config.iterations,
        runs: if variant == Variant::TwoRuns { 2 } else { 1 },
        domain_cap: config.domain_cap,
        fpr: config.fpr,
        selection: if variant == Variant::Weighted {
            Selection::Weighted
        } else {
            Selection::UniformSupport
        },
        randomizer: UnaryVariant::Optimized,
        segment: match variant {
            Variant::Fixed => SegmentPolicy::Fixed(config.fixed_segment),
            Variant::MaxMass => SegmentPolicy::MaxMass,
            _ => SegmentPolicy::MaxUnderCap,
        },
        encoding: Encoding::Huffman(english_huffman_code()),
        max_length: 96,
        deny: Vec::new(),
        plan,
    }
}

/// The words a single-item comparator returns.
fn single_item_words(
    variant: Variant,
    population: &Population,
    config: &Config,
    epsilon: f64,
    seed: u64,
) -> Result<Vec<String>, Error> {
    let (analysis, neighbours) = (Analysis::Tight, Neighbours::ReplaceOne);
    let target = PlanTarget::MinReleasedCount;
    Ok(if variant == Variant::TrieHhPlus {
        let per_level = plan_rounds(
            epsilon,
            config.delta,
            config.levels,
            Composition::Basic,
            target,
            analysis,
            neighbours,
        )?
        .per_round;
        let task = TrieHhPlus::new(TrieHhPlusConfig {
            levels: config.levels,
            segment: 1,
            restricted: true,
            per_level,
            composition: Composition::Basic,
            total_delta: config.delta,
        })?;
        let output = run_triehh_plus(population, task, ExecutionPath::default(), seed);
        output
            .heavy_hitters()
            .into_iter()
            .filter_map(|n| n.word().map(str::to_owned))
            .collect()
    } else {
        let mechanism =
            SampleThreshold::calibrate(epsilon, config.delta, target, analysis, neighbours)?;
        run_sample_threshold(population, &mechanism, ExecutionPath::default(), seed)
            .items
            .iter()
            .filter_map(|cell| population.item_name(cell.item).map(|n| n.into_owned()))
            .collect()
    })
}

/// Runs the grid, calling `progress` after every run.
///
/// # Errors
///
/// [`Error::Setting`] for a bad configuration; whatever a calibration or mechanism rejects.
pub fn run(config: &Config, progress: &(dyn Fn() + Sync)) -> Result<Results, Error> {
    config.validate()?;
    let spec = RedditLikeSpec {
        users: config.users,
        mean_items: config.mean_items,
    };
    let users = MultiPopulation::reddit_like(&spec, config.seed);
    let stream_seed = |index: u64| {
        let mut rng = ChaCha12Rng::seed_from_u64(config.seed);
        rng.set_stream(index);
        rng.next_u64()
    };
    let singles = (0..config.reps)
        .map(|r| users.one_item_per_user(stream_seed((1 << 32) + r as u64)))
        .collect::<Result<Vec<_>, _>>()?;
    let n = users.len() as u64;
    let mut rows = Vec::new();
    let mut index = 0u64;
    for &epsilon in &config.epsilons {
        let solve = |runs: usize| {
            solve_local_epsilon_best(
                epsilon,
                config.delta,
                config.iterations * runs,
                n,
                &DEFAULT_COMPOSITIONS,
                ShuffleBound::Fmt23,
            )
        };
        let (one_run, two_runs) = (solve(1)?, solve(2)?);
        for (rep, single) in singles.iter().enumerate() {
            for variant in Variant::ALL {
                let seed = stream_seed(index);
                index += 1;
                let (words, plan) = match variant {
                    Variant::TrieHhPlus | Variant::SingleRound => (
                        single_item_words(variant, single, config, epsilon, seed)?,
                        None,
                    ),
                    _ => {
                        let plan = if variant == Variant::TwoRuns {
                            two_runs.clone()
                        } else {
                            one_run.clone()
                        };
                        let task = OptPrefixTree::new(opt_config(config, variant, plan.clone()))?;
                        let output =
                            users.run_opt_prefix_tree(task, AggregationPath::Binomial, seed);
                        (
                            output.words.into_iter().map(|w| w.word).collect(),
                            Some(plan),
                        )
                    }
                };
                let found = words.iter().map(String::as_str);
                rows.push(Row {
                    variant: variant.name(),
                    epsilon,
                    rep,
                    captured_mass: users.captured_mass(found.clone()),
                    captured_user_mass: users.captured_user_mass(found.clone()),
                    false_positives: users.false_positives(found),
                    found: words.len(),
                    local_epsilon: plan.as_ref().map(|p| p.local_epsilon),
                    composition: plan.as_ref().map(|p| p.composition.name()),
                });
                progress();
            }
        }
    }
    let summaries = config
        .epsilons
        .iter()
        .flat_map(|&epsilon| Variant::ALL.map(|v| (v, epsilon)))
        .filter_map(|(variant, epsilon)| {
            let of = |f: fn(&Row) -> f64| {
                let values: Vec<f64> = rows
                    .iter()
                    .filter(|r| {
                        r.variant == variant.name() && r.epsilon.to_bits() == epsilon.to_bits()
                    })
                    .map(f)
                    .collect();
                MeanSe::of(&values)
            };
            let (mass, user, fp) = (
                of(|r| r.captured_mass)?,
                of(|r| r.captured_user_mass)?,
                of(|r| r.false_positives as f64)?,
            );
            Some(Summary {
                variant: variant.name(),
                epsilon,
                captured_mass_mean: mass.mean,
                captured_mass_se: mass.se,
                captured_user_mass_mean: user.mean,
                captured_user_mass_se: user.se,
                false_positives_mean: fp.mean,
                reps: mass.n,
            })
        })
        .collect();
    Ok(Results {
        config: config.clone(),
        population: users.description().to_owned(),
        rows,
        summaries,
    })
}

/// The four comparisons: a panel each, with the variants it compares.
const COMPARISONS: [(&str, &[Variant]); 4] = [
    (
        "Segmentation: adaptive vs fixed",
        &[Variant::Adaptive, Variant::Fixed, Variant::MaxMass],
    ),
    (
        "Selection: uniform over support vs weighted",
        &[Variant::Adaptive, Variant::Weighted],
    ),
    (
        "Deny list: one run vs two runs",
        &[Variant::Adaptive, Variant::TwoRuns],
    ),
    (
        "Comparators (one item per user)",
        &[Variant::Adaptive, Variant::TrieHhPlus, Variant::SingleRound],
    ),
];

fn figure(results: &Results, user_support: bool) -> GridPlot {
    let panel = |(title, variants): (&str, &[Variant])| Panel {
        title: title.to_owned(),
        lines: variants
            .iter()
            .map(|&v| Line {
                series: v.index(),
                points: results
                    .config
                    .epsilons
                    .iter()
                    .filter_map(|&e| {
                        let s = results.summary(v, e)?;
                        let (y, error) = if user_support {
                            (s.captured_user_mass_mean, s.captured_user_mass_se)
                        } else {
                            (s.captured_mass_mean, s.captured_mass_se)
                        };
                        Some(Point { x: e, y, error })
                    })
                    .collect(),
                markers: true,
            })
            .collect(),
    };
    GridPlot {
        title: if user_support {
            "Captured mass by user support against ε, ± standard error".to_owned()
        } else {
            "Captured mass (share of all data points) against ε, ± standard error".to_owned()
        },
        series: Variant::ALL.iter().map(|v| v.title().to_owned()).collect(),
        x_label: "ε".to_owned(),
        y_label: "captured mass".to_owned(),
        y_axis: YAxis::Linear { min: 0.0, max: 1.0 },
        panels: vec![
            vec![panel(COMPARISONS[0]), panel(COMPARISONS[1])],
            vec![panel(COMPARISONS[2]), panel(COMPARISONS[3])],
        ],
        panel_size: PANEL_SIZE,
    }
}

/// Whether `a`'s mean captured mass is not significantly below `b`'s at every ε (at most two
/// combined standard errors below), with the numbers.
fn compare(results: &Results, a: Variant, b: Variant) -> (Verdict, String) {
    let pairs: Vec<(f64, &Summary, &Summary)> = results
        .config
        .epsilons
        .iter()
        .filter_map(|&e| Some((e, results.summary(a, e)?, results.summary(b, e)?)))
        .collect();
    if pairs.is_empty() {
        return (Verdict::NotTested, String::new());
    }
    let evidence = pairs
        .iter()
        .map(|(e, x, y)| {
            format!(
                "ε = {e}: {:.3} ± {:.3} vs {:.3} ± {:.3}",
                x.captured_mass_mean, x.captured_mass_se, y.captured_mass_mean, y.captured_mass_se
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let holds = pairs.iter().all(|(_, x, y)| {
        let se = x.captured_mass_se.hypot(y.captured_mass_se);
        x.captured_mass_mean >= y.captured_mass_mean - 2.0 * se
    });
    (Verdict::from_bool(holds), evidence)
}

/// The paper's claims (seed 001, §1 and §4), evaluated on the run.
pub fn findings(results: &Results) -> Vec<Finding> {
    let claims = [
        (
            "Adaptive segmentation captures no less mass (within two standard errors) than a constant segment length, at every ε",
            "seed 001 §1 (contributions), §4",
            Variant::Adaptive,
            Variant::Fixed,
        ),
        (
            "Choosing uniformly from the support captures no less mass (within two standard errors) than sampling from the user's empirical distribution, at every ε",
            "seed 001 §1, §4",
            Variant::Adaptive,
            Variant::Weighted,
        ),
        (
            "A second run with a deny list (budget split between runs) captures no less mass (within two standard errors) than one run, at every ε",
            "seed 001 §1, §4",
            Variant::TwoRuns,
            Variant::Adaptive,
        ),
        (
            "The max-mass segment policy captures no less mass (within two standard errors) than max-under-cap, at every ε",
            "tally's heuristic (docs/algorithms.md §6.5 leaves the objective open)",
            Variant::MaxMass,
            Variant::Adaptive,
        ),
        (
            "OptPrefixTree over all of a user's data captures no less mass (within two standard errors) than TrieHH++ on one data point per user, at every ε",
            "comparison added here",
            Variant::Adaptive,
            Variant::TrieHhPlus,
        ),
        (
            "OptPrefixTree captures no less mass (within two standard errors) than single-round S&T on one data point per user, at every ε",
            "comparison added here",
            Variant::Adaptive,
            Variant::SingleRound,
        ),
    ];
    claims
        .into_iter()
        .map(|(claim, source, a, b)| {
            let (verdict, evidence) = compare(results, a, b);
            Finding {
                claim: claim.to_owned(),
                source: source.to_owned(),
                verdict,
                evidence,
            }
        })
        .collect()
}

/// The files a run wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Outputs {
    /// One row per run (`runs.csv`).
    pub runs: PathBuf,
    /// Means and standard errors (`summary.csv`).
    pub summary: PathBuf,
    /// The figures, PNG and SVG.
    pub figures: Vec<PathBuf>,
    /// The report (`report.md`).
    pub report: PathBuf,
}

/// Writes `runs.csv`, `summary.csv`, the figures (`captured-mass`, `captured-user-mass`, each
/// `.png` and `.svg`) and `report.md` into `dir` (created if missing).
///
/// # Errors
///
/// [`Error::Io`], [`Error::Csv`] or [`Error::Figure`] if a file cannot be written.
pub fn write_outputs(results: &Results, dir: &Path, wall_time: Duration) -> Result<Outputs, Error> {
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let runs = dir.join("runs.csv");
    write_csv(&runs, &results.rows)?;
    let summary = dir.join("summary.csv");
    write_csv(&summary, &results.summaries)?;
    let mut figures = Vec::new();
    for (stem, user_support) in [("captured-mass", false), ("captured-user-mass", true)] {
        figures.extend(figure(results, user_support).write_png_and_svg(dir, stem)?);
    }
    let report = dir.join("report.md");
    write_report(results, wall_time).write(&report)?;
    Ok(Outputs {
        runs,
        summary,
        figures,
        report,
    })
}

fn write_report(results: &Results, wall_time: Duration) -> Markdown {
    let config = &results.config;
    let mut doc = Markdown::new(
        "OptPrefixTree: captured mass against ε, after Chadha et al., \"Differentially Private \
         Heavy Hitter Detection using Federated Analytics\" (SaTML 2024)",
    );
    doc.paragraph(
        "OptPrefixTree (Chadha et al., docs/algorithms.md §6; reconstructed from §1–§4.1 of the \
         paper, see docs/privacy/opt-prefix-tree.md) on a synthetic Reddit-like population of \
         users with many words, for the paper's design choices (adaptive segmentation, \
         selection uniform over the support, a second run with a deny list) and two \
         single-item comparators that see one uniformly chosen data point per user. Every \
         variant meets the same (ε, δ) for replace-one device-level neighbours.",
    );
    doc.heading(2, "Settings");
    let one_run: Vec<String> = results
        .rows
        .iter()
        .filter(|r| r.variant == Variant::Adaptive.name() && r.rep == 0)
        .map(|r| {
            format!(
                "ε = {}: ε₀ = {:.4} ({})",
                r.epsilon,
                r.local_epsilon.unwrap_or(f64::NAN),
                r.composition.unwrap_or("-")
            )
        })
        .collect();
    doc.bullets([
        format!("population: {}", results.population),
        format!(
            "ε: {}; δ = {:e}",
            config
                .epsilons
                .iter()
                .map(|e| format!("{e}"))
                .collect::<Vec<_>>()
                .join(", "),
            config.delta
        ),
        format!(
            "OptPrefixTree: T = {} iterations per run, C = {}, FPR = {}, OUE, Huffman code \
             from the shipped English word list, max length 96 bits, aggregate (ε, δ) by FMT23 \
             amplification with the best of basic, advanced and optimal composition; fixed \
             segment = {} bits",
            config.iterations, config.domain_cap, config.fpr, config.fixed_segment
        ),
        format!("local ε₀ (one run): {}", one_run.join("; ")),
        format!(
            "TrieHH++: {} levels of one character, basic composition, tight S&T analysis, \
             replace-one; single-round S&T: tight analysis, replace-one",
            config.levels
        ),
        format!("repetitions: {}", config.reps),
        format!("seed: {}", config.seed),
        format!(
            "wall time: {:.1} s on {} rayon threads",
            wall_time.as_secs_f64(),
            rayon::current_num_threads()
        ),
    ]);
    doc.heading(2, "Captured mass");
    doc.image("Captured mass against ε", "captured-mass.png");
    doc.heading(2, "Captured mass by user support");
    doc.image(
        "Captured mass by user support against ε",
        "captured-user-mass.png",
    );
    doc.heading(2, "Findings, evaluated on this run");
    doc.findings(&findings(results));
    doc.heading(2, "Summary");
    let rows: Vec<Vec<String>> = results
        .summaries
        .iter()
        .map(|s| {
            vec![
                s.variant.to_owned(),
                format!("{}", s.epsilon),
                format!("{:.4} ± {:.4}", s.captured_mass_mean, s.captured_mass_se),
                format!(
                    "{:.4} ± {:.4}",
                    s.captured_user_mass_mean, s.captured_user_mass_se
                ),
                format!("{:.1}", s.false_positives_mean),
            ]
        })
        .collect();
    doc.table(
        &[
            "variant",
            "ε",
            "captured mass",
            "by user support",
            "false positives",
        ],
        &rows,
    );
    doc
}
