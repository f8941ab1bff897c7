//! Bharadwaj and Cormode, AISTATS 2022, §5 (seed 000; docs/algorithms.md §1 and §7): the
//! sample-and-threshold (S&T) histogram against central, local and shuffle baselines.
//!
//! # The grid
//!
//! For every dataset (Binomial, Geometric, Shakespeare), domain size `B`, and ε, and for
//! `reps` repetitions, every mechanism runs on a Poisson sample of the population:
//!
//! | mechanism | what runs | guarantee |
//! | --- | --- | --- |
//! | `st-paper` | S&T at the paper's calibration: `p_s = α(1 − e^{−ε})`, `τ = ⌈ln(1/δ)/C_α⌉` (Lemma 3.2) | `(ε, δ)`, add-remove |
//! | `st-tight` | S&T at the same `τ` with the largest `p_s` the exact hockey-stick analysis allows at the same `(ε, δ)` | `(ε, δ)`, add-remove |
//! | `laplace` | [`LaplaceHistogram`] on the paper's sample (`Δ₁ = 2`, replace-one) | `(ε, 0)`, central |
//! | `hadamard-response` | [`HadamardResponse`] on the paper's sample | `(ε, 0)`, local |
//! | `balcer-cheu` | the Balcer–Cheu histogram on the paper's sample, where its condition `m ≥ (400/ε²) ln(4/δ)` holds | `(ε, δ)`, shuffle |
//! | `all-zero` | the estimate 0 for every bucket (the sanity line) | perfect |
//!
//! The baselines share one Poisson sample per repetition at the paper's rate, so their
//! expected sample size is the paper's `m = p_s·n`; `st-tight` samples more (that is its gain).
//! Every estimate is scaled to the population (`ĉ/p_s`) and clamped at 0 (post-processing).
//!
//! # Metrics
//!
//! - `mae`: the mean over buckets of `|estimate − true count|`, divided by `n` (the paper's
//!   "absolute error, expressed as a fraction of the total input size");
//! - `recall`: the share of the true top `k = B/10` buckets among the `k` largest positive
//!   estimates ([`tally_sim::top_k`], [`tally_sim::retrieval_scores`]); a bucket estimated at 0
//!   is not recovered.
//!
//! # Simulation shortcut
//!
//! The Balcer–Cheu shuffler output is drawn cell by cell (`#{holders} + Bin(m, p)` messages per
//! cell, as [`BalcerCheuHistogram::run_per_cell`]) but with `rand_distr`'s floating-point
//! binomial sampler instead of the exact one, whose cost grows with `m(1 − p)` per cell (see
//! `docs/repro/sample-threshold.md` for the measurement). This is an approximation used only to
//! measure utility, never for a privacy release. Every other draw uses tally's exact samplers,
//! and the other baselines run as their rounds in the simulator ([`run_domain_round`], from
//! the sample's counts per bucket).
//!
//! # Determinism
//!
//! Run `u` of the grid (in the order dataset, `B`, ε, repetition) draws mechanism `j`'s
//! randomness from ChaCha12 stream `8u + j` of the seed, and the populations from streams of
//! their own, so the results do not depend on the number of threads.

mod findings;
mod output;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::{Binomial, Distribution};
use rayon::prelude::*;
use serde::Serialize;
use tally_accounting::sample_threshold::{Analysis, PlanTarget, plan};
use tally_accounting::{Guarantee, Neighbours};
use tally_core::histogram::{DomainHistogram, LaplaceHistogram, SampleThreshold};
use tally_core::ldp::HadamardResponse;
use tally_core::protocol::LocalHistogramRound;
use tally_core::sampling::PoissonSampler;
use tally_core::shuffle::BalcerCheuHistogram;
use tally_sim::{
    DomainMap, ExecutionPath, Generator, PlaceInDomain, Population, SyntheticSpec,
    retrieval_scores, run_domain_round, run_sample_threshold, top_k,
};

use crate::Error;
use crate::table::MeanSe;

pub use findings::findings;
pub use output::{Outputs, write_outputs};

/// A dataset of the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dataset {
    /// Each client's bucket is `Bin(B − 1, 1/2)` ([`Generator::Binomial`]).
    Binomial,
    /// Each client's bucket is `Geometric(1/√B)` truncated to `0..B`
    /// ([`Generator::Geometric`]).
    Geometric,
    /// Shakespeare's word tokens (835,229 clients), each word hashed into `B` buckets
    /// ([`DomainMap::Buckets`]).
    Shakespeare,
}

impl Dataset {
    /// Every dataset, in the paper's column order.
    pub const ALL: [Self; 3] = [Self::Binomial, Self::Geometric, Self::Shakespeare];

    /// The name used in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Binomial => "binomial",
            Self::Geometric => "geometric",
            Self::Shakespeare => "shakespeare",
        }
    }

    /// The name used in figures and reports.
    pub fn title(self) -> &'static str {
        match self {
            Self::Binomial => "Binomial",
            Self::Geometric => "Geometric",
            Self::Shakespeare => "Shakespeare",
        }
    }
}

/// A mechanism of the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// S&T at the paper's calibration (Lemma 3.2).
    SampleThresholdPaper,
    /// S&T at the same threshold with the largest sampling rate of the tight analysis.
    SampleThresholdTight,
    /// The central discrete Laplace histogram.
    Laplace,
    /// Basic Hadamard response (local DP).
    HadamardResponse,
    /// The Balcer–Cheu shuffle histogram.
    BalcerCheu,
    /// The all-zero release.
    AllZero,
}

impl Mechanism {
    /// Every mechanism, in CSV and legend order.
    pub const ALL: [Self; 6] = [
        Self::SampleThresholdPaper,
        Self::SampleThresholdTight,
        Self::Laplace,
        Self::HadamardResponse,
        Self::BalcerCheu,
        Self::AllZero,
    ];

    /// The name used in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Self::SampleThresholdPaper => "st-paper",
            Self::SampleThresholdTight => "st-tight",
            Self::Laplace => "laplace",
            Self::HadamardResponse => "hadamard-response",
            Self::BalcerCheu => "balcer-cheu",
            Self::AllZero => "all-zero",
        }
    }

    /// The name used in figures and reports.
    pub fn title(self) -> &'static str {
        match self {
            Self::SampleThresholdPaper => "S&T (paper)",
            Self::SampleThresholdTight => "S&T (tight)",
            Self::Laplace => "Laplace (central)",
            Self::HadamardResponse => "Hadamard (local)",
            Self::BalcerCheu => "Balcer–Cheu (shuffle)",
            Self::AllZero => "all zero",
        }
    }

    fn index(self) -> usize {
        Self::ALL
            .iter()
            .position(|&m| m == self)
            .expect("listed mechanism")
    }
}

/// The settings of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The datasets (figure columns).
    pub datasets: Vec<Dataset>,
    /// The domain sizes `B` (figure rows), each at least 2.
    pub domains: Vec<u32>,
    /// The ε values (x axis), each in `(0, 1]`.
    pub epsilons: Vec<f64>,
    /// δ of every mechanism that has one.
    pub delta: f64,
    /// The paper's `α`: `p_s = α(1 − e^{−ε})`.
    pub alpha: f64,
    /// Repetitions per setting.
    pub reps: usize,
    /// Clients in each synthetic population (Shakespeare has its own 835,229).
    pub population: u64,
    /// The seed of every random draw.
    pub seed: u64,
}

impl Config {
    /// The paper's grid (docs/algorithms.md §7): all three datasets, `B ∈ {2^6, 2^8, …, 2^14}`,
    /// ε from 0.1 to 1.0 in steps of 0.1, δ = 1e−8, α = 1/6, 10 repetitions, `n = 10^6`.
    pub fn full(seed: u64) -> Self {
        Self {
            datasets: Dataset::ALL.to_vec(),
            domains: vec![1 << 6, 1 << 8, 1 << 10, 1 << 12, 1 << 14],
            epsilons: (1..=10).map(|i| f64::from(i) / 10.0).collect(),
            delta: 1e-8,
            alpha: 1.0 / 6.0,
            reps: 10,
            population: 1_000_000,
            seed,
        }
    }

    /// A reduced grid for tests: all datasets, `B ∈ {2^6, 2^10}`, ε ∈ {0.1, 0.5, 1.0},
    /// 3 repetitions.
    pub fn quick(seed: u64) -> Self {
        Self {
            domains: vec![1 << 6, 1 << 10],
            epsilons: vec![0.1, 0.5, 1.0],
            reps: 3,
            ..Self::full(seed)
        }
    }

    /// The number of settings (dataset, `B`, ε).
    pub fn settings(&self) -> usize {
        self.datasets.len() * self.domains.len() * self.epsilons.len()
    }

    /// The number of runs: settings times repetitions (the progress total).
    pub fn runs(&self) -> usize {
        self.settings() * self.reps
    }

    /// The number of CSV rows: one per run and mechanism.
    pub fn rows(&self) -> usize {
        self.runs() * Mechanism::ALL.len()
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |name, message: &str| {
            Err(Error::Setting {
                name,
                message: message.to_owned(),
            })
        };
        if self.datasets.is_empty() || self.domains.is_empty() || self.epsilons.is_empty() {
            return bad("grid", "needs at least one dataset, domain size and ε");
        }
        if self.domains.iter().any(|&b| b < 2) {
            return bad("domains", "every domain size must be at least 2");
        }
        if self.epsilons.iter().any(|&e| !(e > 0.0 && e <= 1.0)) {
            return bad("epsilons", "every ε must lie in (0, 1]");
        }
        if self.reps == 0 {
            return bad("reps", "must be at least 1");
        }
        if self.population == 0 {
            return bad("population", "must be at least 1");
        }
        Ok(())
    }
}

/// The two S&T calibrations at one ε.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// The target ε.
    pub epsilon: f64,
    /// The target δ.
    pub delta: f64,
    /// The threshold `τ` of both calibrations.
    pub threshold: u64,
    /// The paper's sampling rate `α(1 − e^{−ε})`.
    pub paper_rate: f64,
    /// The δ the paper's closed form gives at that rate.
    pub paper_delta: f64,
    /// The largest sampling rate the tight analysis allows at `(ε, δ, τ)`.
    pub tight_rate: f64,
    /// The tight δ at that rate.
    pub tight_delta: f64,
}

/// Both S&T mechanisms at `(epsilon, delta)` with the paper's `alpha`, and their calibration.
///
/// # Errors
///
/// Whatever the planner rejects (for example ε above 1, where the closed form does not apply).
pub fn calibrate(
    epsilon: f64,
    delta: f64,
    alpha: f64,
) -> Result<(SampleThreshold, SampleThreshold, Calibration), Error> {
    let neighbours = Neighbours::AddRemove;
    let paper = plan(
        epsilon,
        delta,
        PlanTarget::Alpha(alpha),
        Analysis::ClosedForm,
        neighbours,
    )?;
    let threshold = paper.params.threshold();
    let tight = plan(
        epsilon,
        delta,
        PlanTarget::Threshold(threshold),
        Analysis::Tight,
        neighbours,
    )?;
    let calibration = Calibration {
        epsilon,
        delta,
        threshold,
        paper_rate: paper.params.sampling_rate(),
        paper_delta: paper.achieved_delta,
        tight_rate: tight.params.sampling_rate(),
        tight_delta: tight.achieved_delta,
    };
    Ok((
        SampleThreshold::new(paper.params, epsilon, paper.analysis, neighbours)?,
        SampleThreshold::new(tight.params, epsilon, tight.analysis, neighbours)?,
        calibration,
    ))
}

/// One run of one mechanism: a CSV row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The dataset ([`Dataset::name`]).
    pub dataset: &'static str,
    /// The domain size `B`.
    pub domain: u32,
    /// The target ε.
    pub epsilon: f64,
    /// The target δ.
    pub delta: f64,
    /// The mechanism ([`Mechanism::name`]).
    pub mechanism: &'static str,
    /// The repetition, from 0.
    pub rep: usize,
    /// The population size `n`.
    pub population: u64,
    /// The sampling rate the mechanism's clients were sampled at.
    pub sampling_rate: f64,
    /// The expected sample size `p_s·n`.
    pub expected_sample: f64,
    /// The realized sample size (baselines only: S&T never reveals it).
    pub sample_size: Option<u64>,
    /// The S&T threshold.
    pub threshold: Option<u64>,
    /// The realized guarantee's ε (none where the mechanism is not applicable).
    pub guarantee_epsilon: Option<f64>,
    /// The realized guarantee's δ.
    pub guarantee_delta: Option<f64>,
    /// Whether the mechanism's conditions held (Balcer–Cheu needs a large enough sample).
    pub applicable: bool,
    /// The mean absolute error per bucket as a fraction of `n`.
    pub mae: Option<f64>,
    /// The recall of the true top `k = B/10` buckets.
    pub recall: Option<f64>,
    /// How many buckets have a positive estimate.
    pub released: Option<u32>,
    /// The largest true frequency of a bucket estimated at 0 (0 if none).
    pub max_omitted_frequency: Option<f64>,
}

/// The mean and standard error of each metric over the repetitions of one setting and
/// mechanism.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The dataset.
    pub dataset: &'static str,
    /// The domain size `B`.
    pub domain: u32,
    /// The target ε.
    pub epsilon: f64,
    /// The mechanism.
    pub mechanism: &'static str,
    /// The sampling rate.
    pub sampling_rate: f64,
    /// The repetitions where the mechanism was applicable.
    pub reps: usize,
    /// The mean of `mae`.
    pub mae_mean: Option<f64>,
    /// The standard error of `mae`.
    pub mae_se: Option<f64>,
    /// The mean recall.
    pub recall_mean: Option<f64>,
    /// The standard error of the recall.
    pub recall_se: Option<f64>,
    /// The mean number of buckets with a positive estimate.
    pub released_mean: Option<f64>,
    /// The largest true frequency of a bucket estimated at 0, over the repetitions.
    pub max_omitted_frequency: Option<f64>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct Results {
    /// The settings.
    pub config: Config,
    /// The S&T calibrations, one per ε.
    pub calibrations: Vec<Calibration>,
    /// One row per run and mechanism, in grid order.
    pub rows: Vec<Row>,
    /// One summary per setting and mechanism, in grid order.
    pub summaries: Vec<Summary>,
}

impl Results {
    /// The summary of `mechanism` at `(dataset, domain, epsilon)`, if the grid has it.
    pub fn summary(
        &self,
        dataset: Dataset,
        domain: u32,
        epsilon: f64,
        mechanism: Mechanism,
    ) -> Option<&Summary> {
        self.summaries.iter().find(|s| {
            s.dataset == dataset.name()
                && s.domain == domain
                && (s.epsilon - epsilon).abs() < 1e-9
                && s.mechanism == mechanism.name()
        })
    }
}

/// A population placed in `0..B` with its ground truth.
struct Setting {
    dataset: Dataset,
    population: Population,
    domain: u32,
    true_counts: Vec<u64>,
    /// The names (decimal ids) of the true top `k` buckets.
    top: Vec<String>,
    /// Every bucket's name, for [`retrieval_scores`].
    names: Vec<String>,
}

/// One ε: both S&T mechanisms.
struct Level {
    epsilon: f64,
    paper: SampleThreshold,
    tight: SampleThreshold,
}

/// A ChaCha12 generator on stream `stream` of `seed`.
fn stream_rng(seed: u64, stream: u64) -> ChaCha12Rng {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Population streams start here, far above the runs' `8u + j`.
const POPULATION_STREAMS: u64 = 1 << 48;

fn build_setting(
    dataset: Dataset,
    domain: u32,
    index: u64,
    config: &Config,
    shakespeare: Option<&Population>,
) -> Result<Setting, Error> {
    let population = match (dataset, shakespeare) {
        (Dataset::Shakespeare, Some(words)) => DomainMap::Buckets(domain)
            .apply(words)?
            .into_population("shakespeare")?,
        _ => {
            let domain = u64::from(domain);
            let generator = match dataset {
                Dataset::Geometric => Generator::Geometric { domain },
                _ => Generator::Binomial { domain },
            };
            let spec = SyntheticSpec::new(config.population, generator)?;
            let seed = stream_rng(config.seed, POPULATION_STREAMS + index).next_u64();
            Population::synthetic(&spec, seed)
        }
    };
    let mut true_counts = population.true_counts();
    true_counts.resize(domain as usize, 0);
    let k = (domain as usize / 10).max(1);
    let top = top_k(&population, k)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    Ok(Setting {
        dataset,
        population,
        domain,
        true_counts,
        top,
        names: (0..domain).map(|x| x.to_string()).collect(),
    })
}

/// Runs the grid of `config` in parallel (on the current rayon pool), calling `progress`
/// once per finished run ([`Config::runs`] calls in all).
///
/// # Errors
///
/// [`Error::Setting`] for an invalid configuration, and errors from loading data or building
/// a mechanism.
pub fn run(config: &Config, progress: &(dyn Fn() + Sync)) -> Result<Results, Error> {
    config.validate()?;
    let mut levels = Vec::new();
    let mut calibrations = Vec::new();
    for &epsilon in &config.epsilons {
        let (paper, tight, calibration) = calibrate(epsilon, config.delta, config.alpha)?;
        levels.push(Level {
            epsilon,
            paper,
            tight,
        });
        calibrations.push(calibration);
    }
    let shakespeare = if config.datasets.contains(&Dataset::Shakespeare) {
        Some(Population::dataset("shakespeare")?)
    } else {
        None
    };
    let mut settings = Vec::new();
    for &dataset in &config.datasets {
        for &domain in &config.domains {
            let index = settings.len() as u64;
            settings.push(build_setting(
                dataset,
                domain,
                index,
                config,
                shakespeare.as_ref(),
            )?);
        }
    }
    let units: Vec<(usize, usize, usize)> = (0..settings.len())
        .flat_map(|s| (0..levels.len()).flat_map(move |l| (0..config.reps).map(move |r| (s, l, r))))
        .collect();
    let per_unit: Vec<Vec<Row>> = units
        .par_iter()
        .enumerate()
        .map(|(u, &(s, l, rep))| {
            let rows = run_unit(&settings[s], &levels[l], rep, u as u64, config);
            progress();
            rows
        })
        .collect::<Result<_, Error>>()?;
    let summaries = per_unit
        .chunks(config.reps)
        .flat_map(|reps| {
            Mechanism::ALL
                .iter()
                .map(move |m| summarize(reps, m.index()))
        })
        .collect();
    Ok(Results {
        config: config.clone(),
        calibrations,
        rows: per_unit.into_iter().flatten().collect(),
        summaries,
    })
}

fn summarize(reps: &[Vec<Row>], mechanism: usize) -> Summary {
    let rows: Vec<&Row> = reps.iter().map(|r| &r[mechanism]).collect();
    let first = rows[0];
    let values =
        |f: fn(&Row) -> Option<f64>| -> Vec<f64> { rows.iter().filter_map(|r| f(r)).collect() };
    let mae = MeanSe::of(&values(|r| r.mae));
    let recall = MeanSe::of(&values(|r| r.recall));
    let released = MeanSe::of(&values(|r| r.released.map(f64::from)));
    let omitted = values(|r| r.max_omitted_frequency);
    Summary {
        dataset: first.dataset,
        domain: first.domain,
        epsilon: first.epsilon,
        mechanism: first.mechanism,
        sampling_rate: first.sampling_rate,
        reps: rows.iter().filter(|r| r.applicable).count(),
        mae_mean: mae.map(|s| s.mean),
        mae_se: mae.map(|s| s.se),
        recall_mean: recall.map(|s| s.mean),
        recall_se: recall.map(|s| s.se),
        released_mean: released.map(|s| s.mean),
        max_omitted_frequency: omitted.into_iter().reduce(f64::max),
    }
}

/// The metrics of one estimate of every bucket's population count.
struct Scores {
    mae: f64,
    recall: f64,
    released: u32,
    max_omitted_frequency: f64,
}

fn score(setting: &Setting, estimates: &[f64]) -> Scores {
    let n = setting.population.len() as f64;
    let b = setting.domain as usize;
    let mae = estimates
        .iter()
        .zip(&setting.true_counts)
        .map(|(&e, &c)| (e - c as f64).abs())
        .sum::<f64>()
        / n
        / b as f64;
    let mut found: Vec<usize> = (0..b).filter(|&x| estimates[x] > 0.0).collect();
    let released = found.len() as u32;
    found.sort_by(|&x, &y| estimates[y].total_cmp(&estimates[x]).then(x.cmp(&y)));
    found.truncate(setting.top.len());
    let recall = retrieval_scores(
        found.iter().map(|&x| setting.names[x].as_str()),
        setting.top.iter().map(String::as_str),
    )
    .recall;
    let max_omitted = (0..b)
        .filter(|&x| estimates[x] <= 0.0)
        .map(|x| setting.true_counts[x])
        .max()
        .unwrap_or(0);
    Scores {
        mae,
        recall,
        released,
        max_omitted_frequency: max_omitted as f64 / n,
    }
}

/// The Balcer–Cheu histogram's estimates when `holders[j]` of its calibrated `n` clients
/// hold bucket `j`, with the shuffler's per-cell counts drawn by `rand_distr`'s floating-point
/// binomial sampler: a utility-measurement shortcut (see the module docs), otherwise
/// [`BalcerCheuHistogram::run_per_cell`] followed by the paper's analyzer.
///
/// # Privacy
///
/// Not a privacy mechanism: it simulates the output distribution of [`BalcerCheuHistogram`]
/// (`(ε, δ)`-DP, replace-one, shuffle model) up to floating-point error of the binomial
/// sampler, to measure its utility. Releases must use [`BalcerCheuHistogram`].
fn balcer_cheu_utility<R: Rng + ?Sized>(
    protocol: &BalcerCheuHistogram,
    holders: &[u64],
    rng: &mut R,
) -> Vec<f64> {
    let n = protocol.users();
    assert_eq!(
        holders.iter().sum::<u64>(),
        n,
        "calibrated for another sample size"
    );
    // Unwrap safety: the calibration's p lies in [1/2, 1).
    let noise = Binomial::new(n, protocol.noise_probability()).expect("p in [1/2, 1)");
    let counts: Vec<u64> = holders
        .iter()
        .map(|&held| held + noise.sample(rng))
        .collect();
    protocol
        .analyze(&counts)
        .into_iter()
        .map(|f| f * n as f64)
        .collect()
}

/// A baseline's estimates and their guarantee.
type Released = (Vec<f64>, Guarantee);

/// Runs every mechanism once on `setting` at `level`; run number `unit`.
fn run_unit(
    setting: &Setting,
    level: &Level,
    rep: usize,
    unit: u64,
    config: &Config,
) -> Result<Vec<Row>, Error> {
    let n = setting.population.len() as u64;
    let b = setting.domain;
    let epsilon = level.epsilon;
    let rng = |m: Mechanism| stream_rng(config.seed, 8 * unit + m.index() as u64);
    let paper_rate = level.paper.params().sampling_rate();
    let row = |m: Mechanism, rate: f64| Row {
        dataset: setting.dataset.name(),
        domain: b,
        epsilon,
        delta: config.delta,
        mechanism: m.name(),
        rep,
        population: n,
        sampling_rate: rate,
        expected_sample: rate * n as f64,
        sample_size: None,
        threshold: None,
        guarantee_epsilon: None,
        guarantee_delta: None,
        applicable: false,
        mae: None,
        recall: None,
        released: None,
        max_omitted_frequency: None,
    };
    let scored = |mut row: Row, estimates: &[f64], (eps, delta): (f64, f64)| {
        let s = score(setting, estimates);
        row.applicable = true;
        row.guarantee_epsilon = Some(eps);
        row.guarantee_delta = Some(delta);
        row.mae = Some(s.mae);
        row.recall = Some(s.recall);
        row.released = Some(s.released);
        row.max_omitted_frequency = Some(s.max_omitted_frequency);
        row
    };
    let mut rows = Vec::with_capacity(Mechanism::ALL.len());

    for (m, st) in [
        (Mechanism::SampleThresholdPaper, &level.paper),
        (Mechanism::SampleThresholdTight, &level.tight),
    ] {
        let seed = rng(m).next_u64();
        let release =
            run_sample_threshold(&setting.population, st, ExecutionPath::GapSkipping, seed);
        let mut estimates = vec![0.0; b as usize];
        for cell in &release.items {
            estimates[cell.item as usize] = cell.estimate;
        }
        let mut r = row(m, st.params().sampling_rate());
        r.threshold = Some(st.params().threshold());
        let g = &release.guarantee;
        rows.push(scored(r, &estimates, (g.epsilon, g.delta)));
    }

    // The baselines' shared Poisson sample at the paper's rate (its own stream: index 7).
    let mut sample_rng = stream_rng(config.seed, 8 * unit + 7);
    let sampler = PoissonSampler::new(paper_rate)?;
    let items = setting.population.items();
    let sample: Vec<u32> = sampler
        .indices(n, &mut sample_rng)
        .map(|i| items[i as usize])
        .collect();
    let expected = (paper_rate * n as f64).floor() as u64;
    let mut holders = vec![0_u64; b as usize];
    for &item in &sample {
        holders[item as usize] += 1;
    }
    let map = DomainMap::Integers(b);
    let laplace = LaplaceHistogram::new(b, epsilon, Neighbours::ReplaceOne)?;
    let hadamard = HadamardResponse::new(b, epsilon)?;
    let seed = |m: Mechanism| rng(m).next_u64();
    let baselines: [(Mechanism, Option<Released>); 3] = [
        (
            Mechanism::Laplace,
            Some((
                run_domain_round(&laplace.round(map)?, &holders, seed(Mechanism::Laplace)),
                laplace.guarantee().clone(),
            )),
        ),
        (
            Mechanism::HadamardResponse,
            Some((
                run_domain_round(
                    &LocalHistogramRound::new(map, hadamard.clone())?,
                    &holders,
                    seed(Mechanism::HadamardResponse),
                ),
                hadamard.guarantee(),
            )),
        ),
        (
            Mechanism::BalcerCheu,
            // Applicable when the condition holds at the expected sample size; a realized
            // sample just below the bound is recorded as not applicable for that repetition.
            BalcerCheuHistogram::new(b, epsilon, config.delta, expected)
                .and_then(|_| {
                    BalcerCheuHistogram::new(b, epsilon, config.delta, sample.len() as u64)
                })
                .ok()
                .map(|protocol| {
                    let estimates =
                        balcer_cheu_utility(&protocol, &holders, &mut rng(Mechanism::BalcerCheu));
                    (estimates, protocol.guarantee())
                }),
        ),
    ];
    for (m, released) in baselines {
        let mut r = row(m, paper_rate);
        r.sample_size = Some(sample.len() as u64);
        rows.push(match released {
            Some((estimates, g)) => {
                let estimates: Vec<f64> = estimates
                    .into_iter()
                    .map(|c| c.max(0.0) / paper_rate)
                    .collect();
                scored(r, &estimates, (g.epsilon, g.delta))
            }
            None => r,
        });
    }

    // A constant output: (0, 0)-DP.
    let zero = row(Mechanism::AllZero, paper_rate);
    rows.push(scored(zero, &vec![0.0; b as usize], (0.0, 0.0)));
    Ok(rows)
}
