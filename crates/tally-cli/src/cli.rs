//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rand::Rng;
use tally_accounting::sample_threshold::PlanTarget;

/// Differentially private federated analytics: private histograms, heavy hitters and
/// quantiles over data that stays on users' devices.
#[derive(Debug, Parser)]
#[command(name = "tally", version, about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Calibrate a mechanism's parameters for a target (ε, δ) and explain them.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Release a sample-and-threshold histogram of the input.
    Histogram(HistogramArgs),
    /// Find the frequent items (TrieHH, TrieHH++ or one S&T round over whole items).
    HeavyHitters(HeavyHittersArgs),
    /// Estimate quantiles of numbers (a hierarchical histogram or binary searches).
    #[command(mut_arg("method", rename_analysis))]
    Quantiles(QuantilesArgs),
    /// Estimate the number of values in a range [lo, hi) from a hierarchical histogram.
    #[command(mut_arg("method", rename_analysis))]
    Range(RangeArgs),
    /// Time a mechanism's kernel on generated data.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Sample-and-threshold: solve for the sampling rate and threshold, or report δ.
    SampleThreshold(PlanArgs),
    /// Amplification by shuffling: the central ε of n shuffled ε₀-LDP reports, or the largest
    /// ε₀ for a central (ε, δ) (replace-one neighbours).
    Shuffle(PlanShuffleArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Time sampling, counting and thresholding on Geometric(1/√B) items.
    SampleThreshold(BenchArgs),
    /// Time a whole TrieHH run (fixed-size batches, votes, threshold) on Geometric(1/√B) items.
    Triehh(BenchTrieHhArgs),
}

/// The analysis that turns (ε, p_s, τ) into δ.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Method {
    /// Lemma 3.2 of the paper: δ = exp(−C_α τ); needs ε ≤ 1.
    ClosedForm,
    /// Theorem 1 of the paper (Chernoff–KL bound).
    Theorem1,
    /// The exact probability of Theorem 1's bad event.
    Exact,
    /// The exact hockey-stick divergence (the tightest; default).
    Tight,
}

impl From<Method> for tally_accounting::sample_threshold::Analysis {
    fn from(method: Method) -> Self {
        match method {
            Method::ClosedForm => Self::ClosedForm,
            Method::Theorem1 => Self::Theorem1,
            Method::Exact => Self::Exact,
            Method::Tight => Self::Tight,
        }
    }
}

/// Which datasets count as neighbours.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum NeighboursArg {
    /// One client present or absent (the S&T theorem's relation; default).
    AddRemove,
    /// One client's data replaced.
    ReplaceOne,
}

impl From<NeighboursArg> for tally_accounting::Neighbours {
    fn from(n: NeighboursArg) -> Self {
        match n {
            NeighboursArg::AddRemove => Self::AddRemove,
            NeighboursArg::ReplaceOne => Self::ReplaceOne,
        }
    }
}

/// The privacy target and the analysis, shared by every sample-and-threshold command.
#[derive(Debug, Args)]
pub(crate) struct PrivacyArgs {
    /// Privacy-loss bound ε (> 0).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) epsilon: f64,
    /// The analysis used to compute δ.
    #[arg(long, value_enum, default_value = "tight")]
    pub(crate) method: Method,
    /// The neighbour relation the guarantee holds for.
    #[arg(long, value_enum, default_value = "add-remove")]
    pub(crate) neighbours: NeighboursArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    /// Target δ in (0, 1). Without it, give both --sampling-rate and --threshold to get δ.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) delta: Option<f64>,
    /// Sampling rate as a fraction α of its largest allowed value 1 − e^(−ε).
    #[arg(long, allow_negative_numbers = true, conflicts_with_all = ["sampling_rate", "threshold"])]
    pub(crate) alpha: Option<f64>,
    /// Sampling rate p_s in (0, 1).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) sampling_rate: Option<f64>,
    /// Threshold τ (≥ 1).
    #[arg(long)]
    pub(crate) threshold: Option<u64>,
}

/// The target δ, the round parameters the user fixes, and the seed: shared by every command
/// that releases.
#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    /// Target δ in (0, 1) for the whole release.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) delta: f64,
    /// Sampling rate p_s of each S&T round; the threshold is then the smallest that meets the
    /// round's share of (ε, δ).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "threshold")]
    pub(crate) sampling_rate: Option<f64>,
    /// Threshold τ of each S&T round; the sampling rate is then the largest that meets the
    /// round's share of (ε, δ).
    #[arg(long)]
    pub(crate) threshold: Option<u64>,
    /// Seed for a reproducible simulation. Without it the run draws from the operating
    /// system's randomness and prints no seed: a release is private only while its sampling
    /// randomness stays secret.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
}

impl ReleaseArgs {
    /// What the S&T planner solves for: the given rate or threshold, or the pair with the
    /// smallest count a release can show.
    pub(crate) fn target(&self) -> PlanTarget {
        match (self.sampling_rate, self.threshold) {
            (Some(rate), _) => PlanTarget::SamplingRate(rate),
            (None, Some(threshold)) => PlanTarget::Threshold(threshold),
            (None, None) => PlanTarget::MinReleasedCount,
        }
    }

    /// The given seed, or one drawn from the operating system (and never printed).
    pub(crate) fn seed_or_random(&self) -> u64 {
        self.seed.unwrap_or_else(|| rand::rng().next_u64())
    }

    /// The seed for a human-readable report.
    pub(crate) fn seed_description(&self) -> String {
        self.seed.map_or_else(
            || "none (operating-system randomness)".to_owned(),
            |s| s.to_string(),
        )
    }
}

/// Input file formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Format {
    /// One item per line; each line is one client.
    Lines,
    /// `client_id<TAB>item`, several rows per client allowed.
    Tsv,
}

/// Where the population comes from: exactly one of a file, a shipped dataset or a generator.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct InputArgs {
    /// A file of items (`.gz` is decompressed).
    #[arg(long)]
    pub(crate) input: Option<PathBuf>,
    /// A shipped dataset: `shakespeare` (one client per spoken word).
    #[arg(long)]
    pub(crate) dataset: Option<String>,
    /// A generator, e.g. `geometric:n=1000000,domain=16384`, `binomial:n=1000000,domain=1024`,
    /// `zipf:n=1000000,domain=100000,s=1.1`, `uniform:n=1000,domain=10`.
    #[arg(long)]
    pub(crate) synthetic: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct HistogramArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// Format of --input (by default `tsv` for files ending in .tsv or .tsv.gz, else `lines`).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// With --format tsv: make every row its own client instead of one uniformly chosen row
    /// per client.
    #[arg(long)]
    pub(crate) rows_as_clients: bool,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    /// Show only the K items with the largest counts.
    #[arg(long)]
    pub(crate) top: Option<usize>,
}

/// The generated data and the timing loop, shared by every benchmark.
#[derive(Debug, Args)]
pub(crate) struct BenchDataArgs {
    /// Number of clients n.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) clients: u64,
    /// Domain size B; items are Geometric(1/√B), redrawn when ≥ B, named in decimal.
    #[arg(long, default_value_t = 16_384)]
    pub(crate) domain: u64,
    /// Number of timed repetitions.
    #[arg(long, default_value_t = 11)]
    pub(crate) repeats: usize,
    /// Seed of the generated data and of the sampling.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) data: BenchDataArgs,
    /// Sampling rate p_s.
    #[arg(long, default_value_t = 0.01)]
    pub(crate) sampling_rate: f64,
    /// Threshold τ.
    #[arg(long, default_value_t = 20)]
    pub(crate) threshold: u64,
    /// ε at which the mechanism's guarantee is computed (the sampling rate must not exceed
    /// 1 − e^(−ε)).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) epsilon: f64,
}

/// Heavy-hitter algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Algorithm {
    /// TrieHH: a prefix tree over fixed-size batches; releases words without counts.
    #[value(name = "triehh")]
    TrieHh,
    /// TrieHH++: a prefix tree, one S&T histogram per level, with counts on every node.
    #[value(name = "triehh++")]
    TrieHhPlus,
    /// One S&T histogram over whole items (no factor L in the privacy cost).
    SingleRound,
}

/// Composition rules for multi-round tasks.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum CompositionArg {
    /// (Σ ε, Σ δ).
    Basic,
    /// Dwork–Rothblum–Vadhan advanced composition.
    Advanced,
    /// Kairouz–Oh–Viswanath optimal composition of identical rounds.
    Optimal,
}

impl From<CompositionArg> for tally_accounting::composition::Composition {
    fn from(c: CompositionArg) -> Self {
        match c {
            CompositionArg::Basic => Self::Basic,
            CompositionArg::Advanced => Self::Advanced,
            CompositionArg::Optimal => Self::Optimal,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct HeavyHittersArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// Format of --input (by default `tsv` for files ending in .tsv or .tsv.gz, else `lines`).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// With --format tsv: make every row its own client.
    #[arg(long)]
    pub(crate) rows_as_clients: bool,
    /// The algorithm.
    #[arg(long, value_enum)]
    pub(crate) algorithm: Algorithm,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    /// Prefix-tree levels L; words of L·G characters or more are not found.
    #[arg(long, default_value_t = 10)]
    pub(crate) levels: usize,
    /// Characters added per level G.
    #[arg(long, default_value_t = 1)]
    pub(crate) segment: usize,
    /// TrieHH++: every client reports at every level, not only below surviving prefixes.
    #[arg(long)]
    pub(crate) unrestricted: bool,
    /// TrieHH: keep at most this many non-terminal prefixes per round (by votes).
    #[arg(long)]
    pub(crate) beam: Option<usize>,
    /// How the levels' guarantees compose.
    #[arg(long, value_enum, default_value = "basic")]
    pub(crate) composition: CompositionArg,
    /// Show only the K most frequent items found (and score against the true top K).
    #[arg(long)]
    pub(crate) top: Option<usize>,
    /// Score the result against the input's true top items: precision, recall, F1.
    #[arg(long)]
    pub(crate) truth: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchTrieHhArgs {
    #[command(flatten)]
    pub(crate) data: BenchDataArgs,
    /// Rounds L.
    #[arg(long, default_value_t = 5)]
    pub(crate) rounds: usize,
    /// Total ε from which Corollary 1 sets the threshold θ and the batch size m.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub(crate) epsilon: f64,
    /// Total δ from which Corollary 1 sets θ (1e-8 gives θ = 12).
    #[arg(long, default_value = "1e-8", allow_negative_numbers = true)]
    pub(crate) delta: f64,
    /// Vote threshold θ instead of Corollary 1's (give --batch-size too).
    #[arg(long, requires = "batch_size")]
    pub(crate) threshold: Option<u64>,
    /// Batch size m instead of Corollary 1's (give --threshold too).
    #[arg(long, requires = "threshold")]
    pub(crate) batch_size: Option<u64>,
    /// Characters per round g.
    #[arg(long, default_value_t = 1)]
    pub(crate) segment: usize,
    /// Keep at most this many non-terminal prefixes per round.
    #[arg(long)]
    pub(crate) beam: Option<usize>,
}

/// In `quantiles` and `range`, `--method` names the quantile algorithm, so the S&T analysis of
/// [`PrivacyArgs`] is `--analysis` there.
fn rename_analysis(arg: clap::Arg) -> clap::Arg {
    arg.long("analysis").value_name("ANALYSIS")
}

/// Quantile algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum QuantileMethod {
    /// A β-ary hierarchical histogram: --levels S&T rounds answer every quantile at once.
    Hierarchical,
    /// One interactive binary search per quantile, --levels S&T rounds each.
    BinarySearch,
}

/// The numbers, the privacy target and the rounds, shared by `quantiles` and `range`.
#[derive(Debug, Args)]
pub(crate) struct ValuesArgs {
    /// A file with one number per line (`.gz` is decompressed); the numbers must lie in
    /// [0, 1] unless --min and --max are given.
    #[arg(long)]
    pub(crate) input: PathBuf,
    /// Rescale the numbers from [MIN, MAX] to [0, 1] (with --max); results are reported in
    /// the input's units.
    #[arg(long, allow_negative_numbers = true, requires = "max")]
    pub(crate) min: Option<f64>,
    /// The upper end of the range to rescale from (with --min).
    #[arg(long, allow_negative_numbers = true, requires = "min")]
    pub(crate) max: Option<f64>,
    /// Branching factor β of the hierarchical histogram.
    #[arg(long, default_value_t = 4)]
    pub(crate) branching: u32,
    /// Levels L of the hierarchical histogram (its resolution is β^(−L)); with
    /// --method binary-search, the rounds h of each search (resolution 2^(−h)).
    #[arg(long, default_value_t = 10)]
    pub(crate) levels: u32,
    /// Post-process the hierarchical histogram so that children sum to their parents
    /// (weighted least squares) before reading it.
    #[arg(long)]
    pub(crate) consistent: bool,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    /// How the rounds' guarantees compose.
    #[arg(long, value_enum, default_value = "basic")]
    pub(crate) composition: CompositionArg,
}

#[derive(Debug, Args)]
pub(crate) struct QuantilesArgs {
    #[command(flatten)]
    pub(crate) values: ValuesArgs,
    /// The quantiles to estimate, comma separated, each in [0, 1].
    #[arg(
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        default_values_t = [0.1, 0.5, 0.9]
    )]
    pub(crate) quantiles: Vec<f64>,
    /// The algorithm (binary search spends --levels rounds per quantile).
    #[arg(
        long = "method",
        id = "quantile_method",
        value_name = "METHOD",
        value_enum,
        default_value = "hierarchical"
    )]
    pub(crate) method: QuantileMethod,
    /// Also print each quantile's true value and rank error (the share of values below the
    /// estimate, minus the quantile): metrics against the input, not a private output.
    #[arg(long)]
    pub(crate) truth: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RangeArgs {
    #[command(flatten)]
    pub(crate) values: ValuesArgs,
    /// The lower end of the range (included), in the input's units.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) lo: f64,
    /// The upper end of the range (excluded, except that a range ending at 1, or at --max,
    /// includes it), in the input's units.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) hi: f64,
    /// The algorithm; range counts come from the hierarchical histogram only.
    #[arg(
        long = "method",
        id = "quantile_method",
        value_name = "METHOD",
        value_enum,
        default_value = "hierarchical"
    )]
    pub(crate) method: QuantileMethod,
}

/// Amplification-by-shuffling analyses (ALGORITHMS.md §8).
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum ShuffleBoundArg {
    /// Feldman–McMillan–Talwar 2021 numerical bound (clone probability e^(−ε₀)); rests on
    /// FMT21 Thm 3.2 and Apple's reference code: the conservative choice.
    Fmt21,
    /// FMT23 "stronger clone" numerical bound (clone probability 2/(e^ε₀+1)); tighter, but
    /// covering every ε₀-LDP randomizer rests on a monotonicity claim of FMT23 not verified
    /// here (exact for binary randomized response). Default.
    Fmt23,
    /// FMT21 Theorem 3.1 closed form; valid when ε₀ ≤ ln(n/(16 ln(4/δ))), otherwise no
    /// amplification is claimed.
    ClosedForm,
}

#[derive(Debug, Args)]
pub(crate) struct PlanShuffleArgs {
    /// Local ε₀ of each user's randomizer: report the central ε.
    #[arg(long, allow_negative_numbers = true, conflicts_with = "epsilon")]
    pub(crate) local_epsilon: Option<f64>,
    /// Central ε: report the largest local ε₀ that meets it.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) epsilon: Option<f64>,
    /// Number of users n whose reports are shuffled.
    #[arg(long)]
    pub(crate) users: u64,
    /// Central δ in (0, 1).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) delta: f64,
    /// The amplification bound.
    #[arg(long, value_enum, default_value = "fmt23")]
    pub(crate) bound: ShuffleBoundArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}
