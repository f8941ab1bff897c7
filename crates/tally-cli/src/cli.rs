//! Command-line arguments.

#[cfg(feature = "federated")]
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::LazyLock;

use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use rand::Rng;
use tally_accounting::partition_selection::Method as SelectionMethod;
use tally_accounting::sample_threshold::PlanTarget;
use tally_messages::DomainHistogramMechanism;

use crate::help_examples;

/// The headings `--help` groups the options under. Every option names one, so that the
/// privacy options stand together whatever struct declares them.
pub(crate) mod heading {
    /// What the data is and where it comes from.
    pub(crate) const INPUT: &str = "Input";
    /// The guarantee: ε, δ, the analysis, the neighbours and what sets them.
    pub(crate) const PRIVACY: &str = "Privacy";
    /// The mechanism or algorithm and its parameters.
    pub(crate) const ALGORITHM: &str = "Algorithm";
    /// OptPrefixTree's own parameters.
    pub(crate) const OPT_PREFIX_TREE: &str = "OptPrefixTree";
    /// What is printed or written, and how.
    pub(crate) const OUTPUT: &str = "Output";
    /// A plan's HTML report and the population it predicts on.
    pub(crate) const REPORT: &str = "Report";
    /// How a run or a benchmark runs (repetitions, concurrency).
    pub(crate) const RUNTIME: &str = "Runtime";
    /// The federated server a command talks to, and the credential it shows.
    #[cfg(feature = "federated")]
    pub(crate) const SERVER: &str = "Server";
    /// The population a federated task asks.
    #[cfg(feature = "federated")]
    pub(crate) const POPULATION: &str = "Population";
    /// How a federated task's rounds run.
    #[cfg(feature = "federated")]
    pub(crate) const ROUNDS: &str = "Rounds";
    /// The devices a command acts as or enrolls.
    #[cfg(feature = "federated")]
    pub(crate) const DEVICES: &str = "Devices";
    /// Where a service listens and keeps its state.
    #[cfg(feature = "federated")]
    pub(crate) const SERVICE: &str = "Service";
    /// A listener's bounds and TLS.
    #[cfg(feature = "federated")]
    pub(crate) const LISTENER: &str = "Listener";
    /// The aggregator a relay forwards to.
    #[cfg(feature = "federated")]
    pub(crate) const AGGREGATOR: &str = "Aggregator";
    /// A population's privacy budget.
    #[cfg(feature = "federated")]
    pub(crate) const BUDGET: &str = "Budget";
    /// The credential a command creates.
    #[cfg(feature = "federated")]
    pub(crate) const CREDENTIAL: &str = "Credential";
    /// The operator's console of a server.
    #[cfg(feature = "federated")]
    pub(crate) const CONSOLE: &str = "Console";
    /// Sharing a PostgreSQL database with other replicas.
    #[cfg(feature = "federated")]
    pub(crate) const REPLICAS: &str = "Replicas";
}

/// Differentially private federated analytics: private histograms, heavy hitters and
/// quantiles over data that stays on users' devices.
#[derive(Debug, Parser)]
#[command(name = "tally", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Draw no progress on stderr (it is drawn only when stderr is a terminal anyway).
    #[arg(help_heading = heading::OUTPUT, long, global = true)]
    pub(crate) quiet: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Calibrate a mechanism's parameters for a target (ε, δ) and explain them.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Release a sample-and-threshold histogram of the input.
    #[command(after_long_help = help_examples::HISTOGRAM)]
    Histogram(HistogramArgs),
    /// Find the frequent items (TrieHH, TrieHH++ or one S&T round over whole items).
    #[command(after_long_help = help_examples::HEAVY_HITTERS)]
    HeavyHitters(HeavyHittersArgs),
    /// Estimate quantiles of numbers (a hierarchical histogram or binary searches).
    #[command(mut_arg("method", rename_analysis))]
    #[command(after_long_help = help_examples::QUANTILES)]
    Quantiles(QuantilesArgs),
    /// Estimate the number of values in a range [lo, hi) from a hierarchical histogram.
    #[command(mut_arg("method", rename_analysis))]
    #[command(after_long_help = help_examples::RANGE)]
    Range(RangeArgs),
    /// Time a mechanism's kernel on generated data.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Reproduce a paper's experiments: CSV, figures and a report with its findings checked.
    #[command(subcommand)]
    Repro(ReproCommand),
    /// Make a secret key for keyed sampling (--sampling-key-file): 256 random bits from the
    /// operating system, as 64 hexadecimal digits, in a file only its owner can read.
    #[command(after_long_help = help_examples::SAMPLING_KEY)]
    SamplingKey(SamplingKeyGenerateArgs),
    /// Run the federated server: tasks, rounds, the secure aggregator and the privacy-budget
    /// ledger (logs on stderr; RUST_LOG sets the level, default info).
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::SERVE)]
    Serve(ServeArgs),
    /// Run the relay of a split-trust deployment, run by another party than the aggregator:
    /// devices enrolled here upload reports sealed to the aggregator's key; the relay picks
    /// each round's cohort, flips its sampling coins, shuffles every message and forwards
    /// them to the aggregator without who sent them (logs on stderr; RUST_LOG sets the
    /// level, default info).
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::RELAY)]
    Relay(RelayArgs),
    /// Create, inspect and cancel federated tasks, and read their results.
    #[cfg(feature = "federated")]
    #[command(subcommand)]
    Task(TaskCommand),
    /// The privacy budget of every population: spent, reserved and remaining (ε, δ).
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::LEDGER)]
    Ledger(ServerQueryArgs),
    /// Act as one device: answer every open round from the one item in a file, until the
    /// tasks end.
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::CLIENT)]
    Client(ClientArgs),
    /// Run simulated devices over HTTP, one per client of a population, until the tasks end;
    /// report uploads per second and latency percentiles.
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::FLEET)]
    Fleet(FleetArgs),
    /// Create, list and revoke the federated server's credentials (operator, analyst,
    /// device), in its database or through a running server.
    #[cfg(feature = "federated")]
    #[command(subcommand)]
    Token(TokenCommand),
    /// Provision the federated server's populations: a task can only name one that exists.
    #[cfg(feature = "federated")]
    #[command(subcommand)]
    Population(PopulationCommand),
    /// Enroll devices of a population: one device credential each.
    #[cfg(feature = "federated")]
    #[command(subcommand)]
    Device(DeviceCommand),
    /// Make a self-signed TLS certificate and key for `tally serve --tls-cert --tls-key` (a
    /// demo or a test; clients trust it with --ca-cert).
    #[cfg(feature = "federated")]
    #[command(after_long_help = help_examples::CERT)]
    Cert(CertArgs),
    /// The aggregator's HPKE keys, which open a split-trust population's sealed reports.
    #[cfg(feature = "federated")]
    #[command(subcommand)]
    HpkeKey(HpkeKeyCommand),
}

/// The secret key of keyed sampling, given as text or in a file.
#[derive(Debug, Args)]
pub(crate) struct SamplingKeyArgs {
    /// A secret key for keyed sampling: the same key gives the same release.
    ///
    /// Sample-and-threshold, the partition selections and TrieHH++: each client's coins and its
    /// one row (its kept items with --max-items-per-client; at each TrieHH++ level, that level's
    /// coin) become keyed functions of its client_id (of its 0-based position when the input has
    /// no ids), so the same key reproduces the release exactly, here, in Python and on Spark.
    /// Rates are rounded down to a multiple of 2^-64 and the guarantee computed for them. At
    /// least 32 hexadecimal digits (128 bits) drawn at random: `tally sampling-key` makes one.
    /// The release is private only while the key stays secret; prefer --sampling-key-file,
    /// which keeps it out of the shell's history and the process list.
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        value_name = "KEY",
        conflicts_with = "sampling_key_file"
    )]
    pub(crate) sampling_key: Option<String>,
    /// A file holding the secret key of --sampling-key, as `tally sampling-key` writes it.
    ///
    /// A trailing newline is ignored.
    #[arg(help_heading = heading::PRIVACY, long, value_name = "FILE")]
    pub(crate) sampling_key_file: Option<PathBuf>,
}

/// Arguments of `tally sampling-key`.
#[derive(Debug, Args)]
pub(crate) struct SamplingKeyGenerateArgs {
    /// The file to write the key to, readable by its owner alone.
    ///
    /// An existing file is refused, so that no key in use is lost.
    #[arg(help_heading = heading::OUTPUT, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
}

#[cfg(feature = "federated")]
#[derive(Debug, Subcommand)]
pub(crate) enum HpkeKeyCommand {
    /// Make a new current key in the aggregator's database (a running `tally serve` serves it
    /// at GET /v1/hpke-keys within two seconds); older keys keep opening reports for the
    /// grace period, then retire.
    #[command(after_long_help = help_examples::HPKE_KEY_ROTATE)]
    Rotate(HpkeKeyRotateArgs),
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct HpkeKeyRotateArgs {
    /// The aggregator's database (sqlite://FILE or postgres://...).
    #[arg(help_heading = heading::SERVICE, long, value_name = "URL")]
    pub(crate) db: String,
    /// Seconds the older keys keep opening reports sealed to them [default: a week, the
    /// longest a round stays open].
    #[arg(help_heading = heading::SERVICE, long, value_name = "SECS")]
    pub(crate) grace_secs: Option<u64>,
}

#[cfg(feature = "federated")]
#[derive(Debug, Subcommand)]
pub(crate) enum DeviceCommand {
    /// Enroll N devices of a population and write their credentials to a file, one per line
    /// (shown this once; the server keeps their hashes). A device credential answers only its
    /// population's rounds and holds at most one upload token per round.
    #[command(after_long_help = help_examples::DEVICE_ENROLL)]
    Enroll(DeviceEnrollArgs),
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct DeviceEnrollArgs {
    #[command(flatten)]
    pub(crate) store: ProvisionArgs,
    /// The (provisioned) population the devices belong to.
    #[arg(help_heading = heading::DEVICES, long, value_name = "NAME")]
    pub(crate) population: String,
    /// --db is a relay's database (`tally relay`): the population is provisioned at the
    /// aggregator, and only its name is checked here.
    #[arg(help_heading = heading::SERVER, long, requires = "db")]
    pub(crate) relay: bool,
    /// How many devices to enroll.
    #[arg(
        help_heading = heading::DEVICES,
        long,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub(crate) count: u32,
    /// The file to write the credentials to (created readable by its owner only; an
    /// existing file is refused).
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) out: PathBuf,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct CertArgs {
    /// A name (DNS name or IP address) the certificate is valid for.
    #[arg(
        help_heading = heading::INPUT,
        long = "name",
        value_name = "NAME",
        default_values_t = ["127.0.0.1".to_owned(), "localhost".to_owned()]
    )]
    pub(crate) names: Vec<String>,
    /// Where to write the certificate (PEM).
    #[arg(help_heading = heading::OUTPUT, long, value_name = "FILE")]
    pub(crate) cert: PathBuf,
    /// Where to write its private key (PEM, readable by its owner only).
    #[arg(help_heading = heading::OUTPUT, long, value_name = "FILE")]
    pub(crate) key: PathBuf,
}

#[cfg(feature = "federated")]
#[derive(Debug, Subcommand)]
pub(crate) enum PopulationCommand {
    /// Create a population with its privacy budget, its tasks' minimum-cohort floor and an
    /// optional cap on one task's ε.
    #[command(after_long_help = help_examples::POPULATION_CREATE)]
    Create(PopulationCreateArgs),
    /// List the populations.
    #[command(after_long_help = help_examples::POPULATION_LIST)]
    List(TokenListArgs),
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct PopulationCreateArgs {
    #[command(flatten)]
    pub(crate) store: ProvisionArgs,
    /// Its exact name: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit.
    pub(crate) name: String,
    /// Its whole ε budget (see --task-bound-rate for how its tasks share it).
    #[arg(help_heading = heading::BUDGET, long, allow_negative_numbers = true)]
    pub(crate) budget_epsilon: f64,
    /// Its whole δ budget.
    #[arg(help_heading = heading::BUDGET, long, allow_negative_numbers = true)]
    pub(crate) budget_delta: f64,
    /// The smallest minimum cohort a task over it may ask (a task may raise it, not lower it).
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 1)]
    pub(crate) min_cohort: u64,
    /// The largest ε one task over it may spend.
    #[arg(help_heading = heading::BUDGET, long, allow_negative_numbers = true)]
    pub(crate) max_task_epsilon: Option<f64>,
    /// Who its devices' reports go through: single-party (they upload to the aggregator) or
    /// split (they upload sealed reports to a relay run by another party; the aggregator
    /// takes them only from the relay and enrolls no device).
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        value_enum,
        default_value_t = TrustArg::SingleParty
    )]
    pub(crate) trust: TrustArg,
    /// Let its tasks ask their devices to sample themselves (`sampling: device`).
    ///
    /// Off by default: device-side sampling holds only if every enrolled device flips its own coin
    /// honestly, and τ − 1 colluding devices that always report cross a threshold τ with one
    /// victim; without it, rounds sample at the aggregator (or the relay).
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) allow_device_sampling: bool,
    /// The one neighbour relation the budget is kept under.
    ///
    /// A task under the other relation is charged what its guarantee gives under this one: an
    /// add-remove (ε, δ) costs (2ε, (1 + e^ε)δ) on a replace-one budget, and a replace-one task
    /// (the shuffle and local mechanisms, OptPrefixTree, TrieHH: each holds for a fixed number
    /// of clients) is refused on an add-remove budget.
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        value_enum,
        default_value_t = NeighboursArg::AddRemove
    )]
    pub(crate) neighbours: NeighboursArg,
    /// Declare a per-round sample-and-threshold pair (add-remove budgets only): tasks whose every
    /// round samples at most this rate (with at least --task-bound-threshold) take one of a fixed
    /// number of rounds, composed tightly within the pair's share of the budget.
    ///
    /// Every other task is charged its own (ε, δ) by basic composition within the rest. Without a
    /// pair every task is charged its own (ε, δ).
    #[arg(
        help_heading = heading::BUDGET,
        long,
        value_name = "P",
        requires = "task_bound_threshold"
    )]
    pub(crate) task_bound_rate: Option<f64>,
    /// The declared pair's smallest threshold.
    #[arg(help_heading = heading::BUDGET, long, value_name = "T", requires = "task_bound_rate")]
    pub(crate) task_bound_threshold: Option<u64>,
    /// The declared pair's share of the ε budget [default: all of it].
    #[arg(
        help_heading = heading::BUDGET,
        long,
        value_name = "E",
        requires_all = ["task_bound_rate", "task_bound_delta"]
    )]
    pub(crate) task_bound_epsilon: Option<f64>,
    /// The declared pair's share of the δ budget [default: all of it].
    #[arg(
        help_heading = heading::BUDGET,
        long,
        value_name = "D",
        requires_all = ["task_bound_rate", "task_bound_epsilon"]
    )]
    pub(crate) task_bound_delta: Option<f64>,
    /// The fraction of its devices that may collude with the analyst, in [0, 1]. A
    /// shuffle-model task's guarantee assumes the other devices honest (their randomness hides
    /// each device's messages): over this population it is charged the guarantee an honest
    /// device keeps when this fraction colludes, and refused when that does not fit the
    /// budget. Central and local tasks are charged as they are. 0 (the default): the budget
    /// assumes honest devices.
    #[arg(help_heading = heading::PRIVACY, long, value_name = "F", default_value_t = 0.0)]
    pub(crate) colluding_fraction: f64,
    /// Print the population as JSON.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Create a credential and print its token (shown this once; the server keeps a hash).
    #[command(after_long_help = help_examples::TOKEN_CREATE)]
    Create(TokenCreateArgs),
    /// List the credentials (never a secret).
    #[command(after_long_help = help_examples::TOKEN_LIST)]
    List(TokenListArgs),
    /// Revoke a credential: the server refuses it from its next request on.
    #[command(after_long_help = help_examples::TOKEN_REVOKE)]
    Revoke(TokenRevokeArgs),
}

/// Where the server's credentials and populations are kept: its database, or a running
/// server.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ProvisionArgs {
    /// The server's database (sqlite://FILE or postgres://...): works without a running
    /// server, and is how the first operator credential is made.
    #[arg(
        help_heading = heading::SERVER,
        long,
        value_name = "URL",
        required_unless_present = "server"
    )]
    pub(crate) db: Option<String>,
    /// A running server's base URL (with --token, an operator's credential).
    #[arg(help_heading = heading::SERVER, long, value_name = "URL", conflicts_with = "db")]
    pub(crate) server: Option<String>,
    /// An operator's credential, with --server.
    #[arg(
        help_heading = heading::SERVER,
        long,
        value_name = "TOKEN",
        env = "TALLY_TOKEN",
        hide_env_values = true,
        requires = "server"
    )]
    pub(crate) token: Option<String>,
    /// Trust only the CA certificate(s) in this PEM file for an https:// --server (a
    /// self-signed certificate; ignored with --db).
    #[arg(
        help_heading = heading::SERVER,
        long,
        value_name = "FILE",
        env = "TALLY_CA_CERT",
        hide_env_values = true
    )]
    pub(crate) ca_cert: Option<PathBuf>,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TokenCreateArgs {
    #[command(flatten)]
    pub(crate) store: ProvisionArgs,
    /// What the credential may do.
    #[arg(help_heading = heading::CREDENTIAL, long, value_enum)]
    pub(crate) role: RoleArg,
    /// A population it acts on (an analyst or a relay: one or more; a device: exactly one).
    #[arg(help_heading = heading::CREDENTIAL, long = "population", value_name = "NAME")]
    pub(crate) populations: Vec<String>,
    /// Who or what holds it.
    #[arg(help_heading = heading::CREDENTIAL, long)]
    pub(crate) name: String,
    /// Print the credential and its token as JSON.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TokenListArgs {
    #[command(flatten)]
    pub(crate) store: ProvisionArgs,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TokenRevokeArgs {
    #[command(flatten)]
    pub(crate) store: ProvisionArgs,
    /// The credential's id (the 16 hex digits after `tally_` in its token).
    pub(crate) id: String,
}

/// A credential's role.
#[cfg(feature = "federated")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RoleArg {
    /// Populations, budgets and credentials.
    Operator,
    /// Creates, reads and cancels its own tasks over its populations.
    Analyst,
    /// A device of one population: checks in and uploads.
    Device,
    /// The relay of one or more split-trust populations: sends each round's sealed reports.
    Relay,
}

#[cfg(feature = "federated")]
impl From<RoleArg> for tally_messages::Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Operator => Self::Operator,
            RoleArg::Analyst => Self::Analyst,
            RoleArg::Device => Self::Device,
            RoleArg::Relay => Self::Relay,
        }
    }
}

/// A population's trust model.
#[cfg(feature = "federated")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum TrustArg {
    /// One aggregator sees who sent each report and what it says.
    SingleParty,
    /// A relay sees who, the aggregator what.
    Split,
}

#[cfg(feature = "federated")]
impl From<TrustArg> for tally_messages::TrustModel {
    fn from(trust: TrustArg) -> Self {
        match trust {
            TrustArg::SingleParty => Self::SingleParty,
            TrustArg::Split => Self::Split,
        }
    }
}

/// The server a command talks to, and the credential it shows.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// The server's base URL, e.g. https://127.0.0.1:8443 or http://127.0.0.1:8080.
    #[arg(help_heading = heading::SERVER, long, value_name = "URL")]
    pub(crate) server: String,
    /// Trust only the CA certificate(s) in this PEM file for an https:// server (a
    /// self-signed certificate).
    #[arg(
        help_heading = heading::SERVER,
        long,
        value_name = "FILE",
        env = "TALLY_CA_CERT",
        hide_env_values = true
    )]
    pub(crate) ca_cert: Option<PathBuf>,
    /// Your credential: an analyst's for tasks and the ledger, an operator's for credentials
    /// and for `client` and `fleet` relaying for devices without --credentials (made by
    /// `tally token create`).
    #[arg(
        help_heading = heading::SERVER,
        long,
        value_name = "TOKEN",
        env = "TALLY_TOKEN",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on.
    #[arg(help_heading = heading::SERVICE, long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Serve the operator's /metrics (an operator token required) on this address; the API's
    /// listener never serves it [default: no metrics].
    #[arg(help_heading = heading::SERVICE, long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub(crate) listener: ListenerArgs,
    /// The database: sqlite://FILE or postgres://USER@HOST/DB [default: sqlite://tally.db in
    /// the working directory, created on first start].
    #[arg(help_heading = heading::SERVICE, long, value_name = "URL")]
    pub(crate) db: Option<String>,
    /// Seconds a console sign-in may go unused before it ends.
    #[arg(
        help_heading = heading::CONSOLE,
        long,
        value_name = "SECS",
        default_value_t = tally_server::ConsoleSessions::default().idle_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) console_idle_timeout: u64,
    /// Seconds a console sign-in lasts at most, however recently it was used.
    #[arg(
        help_heading = heading::CONSOLE,
        long,
        value_name = "SECS",
        default_value_t = tally_server::ConsoleSessions::default().lifetime.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) console_session_lifetime: u64,
    #[command(flatten)]
    pub(crate) replicas: ReplicaArgs,
}

/// `tally relay`: the relay of a split-trust deployment.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// The address to listen on.
    #[arg(help_heading = heading::SERVICE, long, default_value = "127.0.0.1:8081")]
    pub(crate) listen: SocketAddr,
    #[command(flatten)]
    pub(crate) listener: ListenerArgs,
    /// The relay's database (its operators' and devices' credentials): sqlite://FILE or
    /// postgres://USER@HOST/DB [default: sqlite://relay.db in the working directory].
    #[arg(help_heading = heading::SERVICE, long, value_name = "URL")]
    pub(crate) db: Option<String>,
    /// The aggregator's base URL (`tally serve`), e.g. https://aggregator.example:8443.
    #[arg(help_heading = heading::AGGREGATOR, long, value_name = "URL")]
    pub(crate) aggregator: String,
    /// The relay's credential at the aggregator, of role relay.
    #[arg(
        help_heading = heading::AGGREGATOR,
        long,
        value_name = "TOKEN",
        env = "TALLY_AGGREGATOR_TOKEN",
        hide_env_values = true
    )]
    pub(crate) aggregator_token: String,
    /// Trust only the CA certificate(s) in this PEM file for an https:// --aggregator.
    #[arg(
        help_heading = heading::AGGREGATOR,
        long,
        value_name = "FILE",
        env = "TALLY_AGGREGATOR_CA_CERT",
        hide_env_values = true
    )]
    pub(crate) aggregator_ca_cert: Option<PathBuf>,
    /// Seconds before a round's deadline at which the relay stops taking uploads and forwards its
    /// batch (it must reach the aggregator in time).
    ///
    /// A round whose deadline is nearer when the relay first sees it is not relayed.
    #[arg(help_heading = heading::ROUNDS, long, value_name = "SECS", default_value_t = 10)]
    pub(crate) forward_margin: u64,
    /// The relay holds a round's uploads from up to this many times its cohort target, and
    /// picks the cohort uniformly among them (at least 1; it closes the round early once it
    /// holds that many).
    #[arg(help_heading = heading::ROUNDS, long, value_name = "FACTOR", default_value_t = 2.0)]
    pub(crate) cohort_pool: f64,
    /// The most devices one relaying credential (an operator checking in many devices, such
    /// as `tally fleet` without --credentials) contributes to a round's cohort.
    #[arg(
        help_heading = heading::ROUNDS,
        long,
        value_name = "N",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_per_credential: u64,
    #[command(flatten)]
    pub(crate) replicas: ReplicaArgs,
}

/// How a service (`tally serve`, `tally relay`) shares a PostgreSQL database with other
/// replicas of it.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ReplicaArgs {
    /// Seconds a lease (a task's at a server, a round's at a relay) lasts unless renewed: how
    /// long the other replicas on the same PostgreSQL database wait before they take over the
    /// work of a replica that stopped without saying so (each renews its leases every quarter
    /// of it).
    #[arg(
        help_heading = heading::REPLICAS,
        long,
        value_name = "SECS",
        default_value_t = tally_server::Replication::default().lease.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub(crate) lease_duration: u64,
    /// Where the other replicas on the same PostgreSQL database reach this one, to forward
    /// it the check-ins and uploads of the rounds it holds, e.g. https://10.0.0.7:8443
    /// [default: the address it listens on; required on PostgreSQL when listening on every
    /// address].
    #[arg(help_heading = heading::REPLICAS, long, value_name = "URL")]
    pub(crate) advertise_url: Option<String>,
}

#[cfg(feature = "federated")]
impl ReplicaArgs {
    /// The replication these options ask for.
    pub(crate) fn replication(&self) -> tally_server::Replication {
        tally_server::Replication {
            lease: std::time::Duration::from_secs(self.lease_duration),
            address: self.advertise_url.clone(),
        }
    }
}

/// How a service listens: its bounds and its TLS.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ListenerArgs {
    /// Seconds a client has to send a request's headers (also how long a connection may stay
    /// idle between requests).
    #[arg(help_heading = heading::LISTENER, long, value_name = "SECS", default_value_t = 10)]
    pub(crate) header_timeout: u64,
    /// Seconds a client has to send a request's body.
    #[arg(help_heading = heading::LISTENER, long, value_name = "SECS", default_value_t = 30)]
    pub(crate) body_timeout: u64,
    /// The most connections served at once.
    #[arg(help_heading = heading::LISTENER, long, value_name = "N", default_value_t = 4096)]
    pub(crate) max_connections: usize,
    /// Requests per second each credential may send (429 with Retry-After beyond) [default:
    /// no limit].
    #[arg(help_heading = heading::LISTENER, long, value_name = "N")]
    pub(crate) rate_limit: Option<u32>,
    /// Serve TLS with this PEM certificate chain (with --tls-key).
    #[arg(help_heading = heading::LISTENER, long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(help_heading = heading::LISTENER, long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Serve plain HTTP on an address that is not loopback (credentials and reports cross
    /// the network in clear).
    #[arg(help_heading = heading::LISTENER, long, conflicts_with = "tls_cert")]
    pub(crate) insecure_http: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Subcommand)]
pub(crate) enum TaskCommand {
    /// Create a task over a population's devices: a histogram (sample-and-threshold or a
    /// mechanism over a public domain), heavy hitters (TrieHH++, TrieHH, single-round,
    /// OptPrefixTree), quantiles from a hierarchical histogram or by binary search, or a range
    /// count.
    #[command(after_long_help = help_examples::TASK_CREATE)]
    Create(Box<TaskCreateArgs>),
    /// List every task.
    #[command(after_long_help = help_examples::TASK_LIST)]
    List(ServerQueryArgs),
    /// Show one task: its state, guarantee and rounds.
    #[command(after_long_help = help_examples::TASK_STATUS)]
    Status(TaskIdArgs),
    /// Print a finished task's release (the same JSON as `histogram` / `heavy-hitters` /
    /// `quantiles` / `range`).
    #[command(after_long_help = help_examples::TASK_RESULT)]
    Result(TaskResultArgs),
    /// Cancel a task: nothing more is released.
    #[command(after_long_help = help_examples::TASK_CANCEL)]
    Cancel(TaskIdArgs),
}

/// What a task runs: one mechanism, one multi-round algorithm, or a range or quantile
/// algorithm on a mechanism.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub(crate) struct TaskKindArgs {
    /// A one-round histogram mechanism, any of `tally histogram`'s.
    ///
    /// With laplace-threshold, gaussian-threshold and truncated-geometric every device reports its
    /// item and the aggregator adds the noise, trusted as it sees every report. With --algorithm
    /// range or hierarchical-quantiles, sample-threshold (their default), ghazi-hadamard or
    /// ghazi-count-min (as `tally range` and `tally quantiles` take them).
    #[arg(help_heading = heading::ALGORITHM, long, value_enum)]
    pub(crate) mechanism: Option<HistogramMechanism>,
    /// A multi-round algorithm.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum)]
    pub(crate) algorithm: Option<TaskAlgorithm>,
    /// Any task kind the server runs, as JSON: the `kind` of a task's spec (`tally task
    /// status ID --json` shows it), read from FILE, or from standard input for `-`.
    ///
    /// It holds every parameter of the kind, so no option of --mechanism or --algorithm goes
    /// with it; the population, privacy and round options do.
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_name = "FILE",
        conflicts_with_all = KIND_OPTIONS
    )]
    pub(crate) kind_json: Option<PathBuf>,
}

/// The options that describe a task's kind, which `--kind-json` holds.
#[cfg(feature = "federated")]
const KIND_OPTIONS: [&str; 32] = [
    "mechanism",
    "algorithm",
    "sampling_rate",
    "threshold",
    "max_items_per_client",
    "levels",
    "segment",
    "unrestricted",
    "beam",
    "composition",
    "quantiles",
    "branching",
    "min",
    "max",
    "consistent",
    "lo",
    "hi",
    "failure_probability",
    "domain_bits",
    "domain",
    "buckets",
    "iterations",
    "runs",
    "domain_cap",
    "fpr",
    "selection",
    "randomizer",
    "encoding",
    "max_length",
    "deny",
    "aggregation",
    "unproven_fmt23",
];

/// The multi-round algorithms the federated runtime runs.
#[cfg(feature = "federated")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum TaskAlgorithm {
    /// TrieHH++ heavy hitters: one S&T histogram of prefixes per level (--levels,
    /// --segment, --unrestricted, --composition).
    #[value(name = "triehh++")]
    TrieHhPlus,
    /// Quantiles of the devices' numbers from a β-ary hierarchical histogram, one S&T
    /// histogram of buckets per level (--quantiles, --branching, --levels, --min/--max,
    /// --consistent, --composition); with --mechanism ghazi-hadamard|ghazi-count-min, from
    /// one shuffle round of Ghazi et al.'s range-query tree over 2^levels buckets
    /// (--quantiles, --levels, --min/--max; --failure-probability for Count-Min).
    HierarchicalQuantiles,
    /// Quantiles of the devices' numbers by one binary search per quantile, --levels S&T
    /// rounds of two buckets each (--quantiles, --levels, --min/--max, --composition).
    BinarySearchQuantiles,
    /// TrieHH heavy hitters: each round the aggregator keeps a fixed-size batch of devices'
    /// votes, drawn without replacement, and accepts the prefixes with enough votes; θ and m
    /// from (ε, δ) over --expected-population devices, replace-one neighbours (--levels,
    /// --segment, --beam).
    Triehh,
    /// Heavy hitters in one S&T round over the devices' whole items, as `heavy-hitters
    /// --algorithm single-round` (--sampling-rate or --threshold).
    SingleRound,
    /// The number of devices whose number lies in [--lo, --hi), from a β-ary hierarchical
    /// histogram, one S&T histogram of buckets per level, as `tally range` (--branching,
    /// --levels, --min/--max, --consistent, --composition); with --mechanism
    /// ghazi-hadamard|ghazi-count-min, from one shuffle round of Ghazi et al.'s range-query
    /// tree over 2^levels buckets (--levels, --min/--max; --failure-probability for
    /// Count-Min). The server refuses a task whose reports cannot fit --max-report-bytes and
    /// names the levels that would.
    Range,
    /// OptPrefixTree heavy hitters among devices holding many words each (`tally fleet
    /// --whole-clients`): one randomized one-hot report per device and iteration, behind the
    /// shuffler; ε₀ solved for --min-cohort reports per iteration, replace-one neighbours
    /// (the options of `heavy-hitters --algorithm opt-prefix-tree`).
    OptPrefixTree,
    /// Ghazi et al.'s heavy hitters among devices holding integers in [0, 2^L), as
    /// `heavy-hitters --algorithm count-min-prefix-tree`: one shuffle round of Count-Min per
    /// prefix level at (ε/L, δ/L), replace-one neighbours (--domain-bits L, --threshold τ_HH,
    /// --failure-probability). The server refuses a task with a level whose reports cannot fit
    /// --max-report-bytes.
    CountMinPrefixTree,
}

/// The population a task asks: named with its size, or a shipped dataset.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
#[group(required = true, multiple = true)]
pub(crate) struct PopulationArgs {
    /// The population's name: the privacy-budget ledger is kept per population.
    #[arg(
        help_heading = heading::POPULATION,
        long,
        requires = "expected_population",
        conflicts_with = "dataset"
    )]
    pub(crate) population: Option<String>,
    /// How many devices the population has (the default cohort target).
    #[arg(
        help_heading = heading::POPULATION,
        long,
        requires = "population",
        conflicts_with = "dataset"
    )]
    pub(crate) expected_population: Option<u64>,
    /// A shipped dataset (`shakespeare`): the population takes its name and its number of
    /// clients.
    #[arg(help_heading = heading::POPULATION, long)]
    pub(crate) dataset: Option<String>,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TaskCreateArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) kind: TaskKindArgs,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) round: RoundArgs,
    /// One-round histograms of the devices' items: each device contributes at most K items.
    ///
    /// A device holds one item and reports it once, so K is 1 (the default); bound clients of
    /// several items offline, with `tally histogram --max-items-per-client K`.
    #[arg(help_heading = heading::PRIVACY, long, value_name = "K")]
    pub(crate) max_items_per_client: Option<u32>,
    /// TrieHH++: prefix-tree levels L.
    ///
    /// Hierarchical quantiles and range: the tree's levels L (its resolution is β^(−L) of the
    /// range); binary search: the rounds h of each search (resolution 2^(−h)) [default: 10].
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) levels: Option<u32>,
    /// TrieHH++ and TrieHH: characters added per level G [default: 1].
    ///
    /// Opt-prefix-tree: the segment policy, `fixed:S`, `max-under-cap` (default) or `max-mass`.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) segment: Option<SegmentArg>,
    /// TrieHH++: every device reports at every level, not only below surviving prefixes.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) unrestricted: bool,
    /// TrieHH: keep at most this many non-terminal prefixes per round (by votes).
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) beam: Option<u32>,
    #[command(flatten)]
    pub(crate) composition: CompositionArgs,
    /// Quantiles: the quantiles to estimate, comma separated, each in [0, 1]
    /// [default: 0.1,0.5,0.9].
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    pub(crate) quantiles: Option<Vec<f64>>,
    /// Hierarchical quantiles and range: the tree's branching factor β [default: 4].
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) branching: Option<u32>,
    /// Quantiles and range: the devices' numbers lie in [MIN, MAX] (with --max) [default:
    /// [0, 1]]; a number outside counts at the nearer end.
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true, requires = "max")]
    pub(crate) min: Option<f64>,
    /// Quantiles and range: the upper end of the devices' range (with --min).
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true, requires = "min")]
    pub(crate) max: Option<f64>,
    /// Hierarchical quantiles and range: make children sum to their parents before reading
    /// the tree.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) consistent: bool,
    /// Range: the lower end of the counted range (included), in the devices' units.
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true, requires = "hi")]
    pub(crate) lo: Option<f64>,
    /// Range: the upper end of the counted range (excluded, except that a range ending at
    /// --max, or 1, includes it).
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true, requires = "lo")]
    pub(crate) hi: Option<f64>,
    #[command(flatten)]
    pub(crate) population: PopulationArgs,
    /// No release from a round with fewer uploads (reports and abstentions) than this.
    ///
    /// [default: 100; for a shuffle mechanism, the expected population, whose messages its
    /// guarantee counts on: the server refuses less]
    #[arg(help_heading = heading::ROUNDS, long)]
    pub(crate) min_cohort: Option<u64>,
    /// A round closes once this many devices uploaded [default: the expected population].
    #[arg(help_heading = heading::ROUNDS, long)]
    pub(crate) cohort_target: Option<u64>,
    /// A round closes this many seconds after it opened, whatever its cohort.
    #[arg(help_heading = heading::ROUNDS, long, default_value_t = 600)]
    pub(crate) deadline_secs: u64,
    /// Runs of a round that closed below the minimum cohort before the task fails.
    #[arg(help_heading = heading::ROUNDS, long, default_value_t = 3)]
    pub(crate) max_attempts: u32,
    /// The largest report accepted, in bytes of UTF-8 (devices with longer ones abstain).
    #[arg(help_heading = heading::ROUNDS, long, default_value_t = 256)]
    pub(crate) max_report_bytes: u32,
    /// Who flips the sample-and-threshold coins.
    ///
    /// The aggregator, with its own secret randomness (every device uploads its report every
    /// round), or each device (less traffic; private only if every device flips its coin
    /// honestly).
    #[arg(
        help_heading = heading::ROUNDS,
        long,
        value_enum,
        default_value_t = SamplingArg::Aggregator
    )]
    pub(crate) sampling: SamplingArg,
    /// With --mechanism ghazi-count-min and --algorithm range|hierarchical-quantiles, and
    /// with --algorithm count-min-prefix-tree: the failure probability β of the sketch's
    /// accuracy bound, which sets its number of hash rows [default: 0.01].
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_name = "BETA",
        allow_negative_numbers = true
    )]
    pub(crate) failure_probability: Option<f64>,
    /// --algorithm count-min-prefix-tree: the devices' items are integers in [0, 2^L).
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "L")]
    pub(crate) domain_bits: Option<u32>,
    /// --mechanism laplace|gaussian: items are integers in [0, B).
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "B", conflicts_with = "buckets")]
    pub(crate) domain: Option<u32>,
    /// --mechanism laplace|gaussian: hash every item into one of B buckets.
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "B")]
    pub(crate) buckets: Option<u32>,
    #[command(flatten)]
    pub(crate) opt: OptPrefixTreeArgs,
    /// Print only the new task's id (for scripts: `TASK_ID=$(tally task create ... --id-only)`).
    #[arg(help_heading = heading::OUTPUT, long, conflicts_with = "json")]
    pub(crate) id_only: bool,
}

/// Who flips a round's coins.
#[cfg(feature = "federated")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SamplingArg {
    /// The aggregator samples the reports every device uploads.
    Aggregator,
    /// Each device samples itself (assumes honest devices).
    Device,
}

#[cfg(feature = "federated")]
impl From<SamplingArg> for tally_messages::Sampling {
    fn from(sampling: SamplingArg) -> Self {
        match sampling {
            SamplingArg::Aggregator => Self::Aggregator,
            SamplingArg::Device => Self::Device,
        }
    }
}

/// A server to ask, and how to print its answer (`task list`, `ledger`).
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ServerQueryArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TaskIdArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    /// The task's id.
    pub(crate) id: String,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct TaskResultArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    /// The task's id.
    pub(crate) id: String,
    /// Print the released JSON document exactly as the server stored it.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
    /// Show only the K first items of the table.
    #[arg(help_heading = heading::OUTPUT, long, value_name = "K")]
    pub(crate) top: Option<usize>,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    /// A file holding the device's one item (its first non-empty line).
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) input: PathBuf,
    #[command(flatten)]
    pub(crate) devices: DeviceArgs,
}

/// What `tally client` and `tally fleet` share.
#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct DeviceArgs {
    /// The devices' own credentials, one per line (`tally device enroll --out FILE`): device i
    /// checks in with line i.
    ///
    /// Without it, --token (an operator's) relays for every device.
    #[arg(help_heading = heading::DEVICES, long, value_name = "FILE")]
    pub(crate) credentials: Option<PathBuf>,
    /// The devices' own ε budget: they take no part in a task whose guarantee would bring the ε of
    /// every task they answered (basic composition) past it, whatever the server asks.
    ///
    /// Kept in --device-ledger FILE across runs.
    #[arg(help_heading = heading::DEVICES, long, value_name = "E")]
    pub(crate) device_budget_epsilon: Option<f64>,
    /// The devices' own δ budget, with --device-budget-epsilon [default: 1, no bound].
    #[arg(
        help_heading = heading::DEVICES,
        long,
        value_name = "D",
        requires = "device_budget_epsilon"
    )]
    pub(crate) device_budget_delta: Option<f64>,
    /// The file keeping the devices' ledger between runs (JSON: the tasks answered and their
    /// guarantees, per server and population), read when it exists and written after the run.
    #[arg(
        help_heading = heading::DEVICES,
        long,
        value_name = "FILE",
        requires = "device_budget_epsilon"
    )]
    pub(crate) device_ledger: Option<PathBuf>,
    /// Take part only in this task's rounds [default: every task running].
    #[arg(help_heading = heading::DEVICES, long)]
    pub(crate) task: Option<String>,
    /// A split-trust population's devices: --server is their relay's address, and this the
    /// aggregator's own, from which they fetch the key they seal each message of their
    /// reports to (never through the relay; https, or plain http on loopback only).
    #[arg(
        help_heading = heading::DEVICES,
        long,
        value_name = "URL",
        conflicts_with = "aggregator_key"
    )]
    pub(crate) aggregator: Option<String>,
    /// Trust only the CA certificate(s) in this PEM file for an https:// --aggregator.
    #[arg(help_heading = heading::DEVICES, long, value_name = "FILE", requires = "aggregator")]
    pub(crate) aggregator_ca_cert: Option<PathBuf>,
    /// A split-trust population's devices: the aggregator's key pinned, as a file holding
    /// its key configurations (what GET /v1/hpke-keys answers, saved from the aggregator);
    /// --server is the relay's address.
    #[arg(help_heading = heading::DEVICES, long, value_name = "FILE")]
    pub(crate) aggregator_key: Option<PathBuf>,
    /// Seed of the devices' coins (and of a population's sampling), for tests only: a release
    /// is private only while the devices' coins stay secret.
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) seed: Option<u64>,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(feature = "federated")]
#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    #[command(flatten)]
    pub(crate) server: ServerArgs,
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// Requests in flight at most (each checks a batch in, then uploads it).
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 8)]
    pub(crate) concurrency: usize,
    /// Devices per request (1: every device uploads alone).
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 256)]
    pub(crate) batch: usize,
    #[command(flatten)]
    pub(crate) devices: DeviceArgs,
    /// With a TSV file (or a dataset): every device holds all the rows of one client, one per
    /// line, as an OptPrefixTree device needs its whole multiset of words.
    #[arg(help_heading = heading::INPUT, long, conflicts_with = "rows_as_clients")]
    pub(crate) whole_clients: bool,
    /// With --aggregator or --aggregator-key: answer and seal for every device of a round
    /// before the round's clock starts, so that uploads per second and latencies measure the
    /// relay alone (a benchmark).
    #[arg(help_heading = heading::RUNTIME, long)]
    pub(crate) seal_first: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ReproCommand {
    /// Bharadwaj and Cormode (AISTATS 2022) §5: sample-and-threshold against central Laplace, local
    /// Hadamard response and the Balcer–Cheu shuffle histogram (Figures 1 and 2).
    #[command(after_long_help = help_examples::REPRO_SAMPLE_THRESHOLD)]
    SampleThreshold(ReproSampleThresholdArgs),
    /// Chadha et al. (SaTML 2024): OptPrefixTree's captured mass against ε for adaptive vs fixed
    /// segments, uniform vs weighted selection, one vs two runs with a deny list, and TrieHH++ and
    /// single-round S&T as comparators.
    #[command(after_long_help = help_examples::REPRO_OPT_PREFIX_TREE)]
    OptPrefixTree(ReproOptPrefixTreeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ReproOptPrefixTreeArgs {
    /// The directory for runs.csv, summary.csv, the figures and report.md.
    #[arg(help_heading = heading::OUTPUT, long, default_value = "out/opt-prefix-tree")]
    pub(crate) out: PathBuf,
    /// Repetitions per setting [default: 3, or 1 with --quick].
    #[arg(help_heading = heading::RUNTIME, long)]
    pub(crate) reps: Option<usize>,
    /// Users of the reddit-like population [default: 200000, or 20000 with --quick].
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) users: Option<u64>,
    /// The seed of every random draw; results do not depend on the number of threads.
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// A reduced grid (20,000 users, ε ∈ {2, 8}, one repetition) for a quick check.
    #[arg(help_heading = heading::RUNTIME, long)]
    pub(crate) quick: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReproSampleThresholdArgs {
    /// The directory for runs.csv, summary.csv, calibration.csv, the figures and report.md.
    #[arg(help_heading = heading::OUTPUT, long, default_value = "out/sample-threshold")]
    pub(crate) out: PathBuf,
    /// Repetitions per setting [default: 10, or 3 with --quick].
    #[arg(help_heading = heading::RUNTIME, long)]
    pub(crate) reps: Option<usize>,
    /// Clients in each synthetic population (Shakespeare always has 835,229).
    #[arg(help_heading = heading::INPUT, long, default_value_t = 1_000_000)]
    pub(crate) population: u64,
    /// The seed of every random draw; results do not depend on the number of threads.
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// A reduced grid (B ∈ {2^6, 2^10}, ε ∈ {0.1, 0.5, 1}, 3 repetitions) for a quick check.
    #[arg(help_heading = heading::RUNTIME, long)]
    pub(crate) quick: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlanCommand {
    /// Sample-and-threshold: solve for the sampling rate and threshold, or report δ.
    #[command(mut_group(ROUND, |group| group.multiple(true)))]
    #[command(after_long_help = help_examples::PLAN_SAMPLE_THRESHOLD)]
    SampleThreshold(PlanArgs),
    /// Amplification by shuffling: the central ε of n shuffled ε₀-LDP reports, or the largest
    /// ε₀ for a central (ε, δ) (replace-one neighbours).
    #[command(after_long_help = help_examples::PLAN_SHUFFLE)]
    Shuffle(PlanShuffleArgs),
    /// Composition: the total ε (at a total δ) of K rounds that are each (ε, δ)-DP.
    #[command(after_long_help = help_examples::PLAN_COMPOSE)]
    Compose(PlanComposeArgs),
    /// TrieHH++: the per-level sampling rate and threshold whose L levels compose tightly
    /// (S&T privacy-loss distribution, add/remove neighbours) within (ε, δ).
    ///
    /// Given --sampling-rate or --threshold, the other is the one that fits; given both, the
    /// composed ε at δ is reported; given neither, the threshold is that of the smallest count
    /// a level can show at (ε/L, δ/L), as `tally heavy-hitters --algorithm triehh++` chooses
    /// it.
    #[command(name = "triehh++")]
    #[command(mut_group(ROUND, |group| group.multiple(true)))]
    #[command(after_long_help = help_examples::PLAN_TRIEHH_PLUS)]
    TrieHhPlus(PlanTrieArgs),
    /// A mechanism over a public domain: its calibration and guarantee, and the error of one
    /// element's estimate across counts, beside every other such mechanism with --report.
    #[command(mut_arg("delta", |delta| delta.help("Target δ in (0, 1) (pure-ε mechanisms ignore it)")))]
    #[command(after_long_help = help_examples::PLAN_HISTOGRAM)]
    Histogram(PlanHistogramArgs),
    /// Quantiles: the per-level sampling rate and threshold of a hierarchical histogram or of
    /// binary searches, as `tally quantiles` calibrates them, and the release's guarantee.
    #[command(mut_arg("method", rename_analysis))]
    #[command(after_long_help = help_examples::PLAN_QUANTILES)]
    Quantiles(PlanQuantilesArgs),
}

#[derive(Debug, Args)]
pub(crate) struct PlanHistogramArgs {
    /// The mechanism over a public domain, as `tally histogram --mechanism` takes it.
    ///
    /// Without it, the planner chooses over clients of several items: every mechanism `tally
    /// histogram --max-items-per-client K` runs (sample-threshold, laplace-threshold,
    /// gaussian-threshold, truncated-geometric) at K = 1, 2, 4, ... up to the largest client of
    /// --input/--dataset/--synthetic, predicts the released items on that data and the expected
    /// error of a released item's estimate (against the clients holding it, what K drops included;
    /// the truncated geometric shows no count), and recommends one.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum)]
    pub(crate) mechanism: Option<DomainHistogramMechanism>,
    #[command(flatten)]
    pub(crate) domain: DomainArgs,
    /// The number of clients N that report (the shuffle mechanisms are calibrated for them);
    /// required with --mechanism.
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) clients: Option<u64>,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PlanQuantilesArgs {
    /// The algorithm (binary search spends --levels rounds per quantile).
    #[arg(help_heading = heading::ALGORITHM, long, value_enum, default_value = "hierarchical")]
    pub(crate) algorithm: QuantileMethod,
    /// The quantiles to estimate, comma separated, each in [0, 1] (binary search runs one
    /// search per quantile).
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        default_values_t = tally_sim::values_release::DEFAULT_QUANTILES
    )]
    pub(crate) quantiles: Vec<f64>,
    /// Branching factor β of the hierarchical histogram.
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 4)]
    pub(crate) branching: u32,
    /// Levels L of the hierarchical histogram (its resolution is β^(−L)); with
    /// --algorithm binary-search, the rounds h of each search (resolution 2^(−h)).
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 10)]
    pub(crate) levels: u32,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) round: RoundArgs,
    #[command(flatten)]
    pub(crate) composition: CompositionArgs,
    /// Write an HTML report (`index.html`, figures inline) and `plan.json` to this directory.
    ///
    /// The report shows the release curve of every level, the error of a released bucket, and with
    /// --input, the probability that each level's buckets are released.
    #[arg(help_heading = heading::REPORT, long, value_name = "DIR")]
    pub(crate) report: Option<PathBuf>,
    /// A file of numbers, one per line (`.gz` is decompressed), to predict a hierarchical
    /// histogram's releases on (data the analyst may look at, e.g. a proxy).
    ///
    /// In [0, 1] unless --min and --max are given.
    #[arg(help_heading = heading::REPORT, long, requires = "report")]
    pub(crate) input: Option<PathBuf>,
    /// Rescale --input from [MIN, MAX] to [0, 1] (with --max).
    #[arg(
        help_heading = heading::REPORT,
        long,
        allow_negative_numbers = true,
        requires_all = ["max", "input"]
    )]
    pub(crate) min: Option<f64>,
    /// The upper end of the range to rescale --input from (with --min).
    #[arg(help_heading = heading::REPORT, long, allow_negative_numbers = true, requires = "min")]
    pub(crate) max: Option<f64>,
}

#[derive(Debug, Args)]
pub(crate) struct PlanTrieArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Number of levels L (S&T rounds over the same clients).
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) levels: u64,
    #[command(flatten)]
    pub(crate) round: RoundArgs,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
    /// Characters added per level G, for the report's prediction on a population (as
    /// `tally heavy-hitters --segment`).
    #[arg(
        help_heading = heading::REPORT,
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u64).range(1..),
        requires = "report"
    )]
    pub(crate) segment: u64,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Time sampling, counting and thresholding on Geometric(1/√B) items.
    #[command(after_long_help = help_examples::BENCH_SAMPLE_THRESHOLD)]
    SampleThreshold(BenchArgs),
    /// Time a whole TrieHH run (fixed-size batches, votes, threshold) on Geometric(1/√B) items.
    ///
    /// Corollary 1 sets the threshold θ and the batch size m from --epsilon and --delta (δ =
    /// 1e-8 gives θ = 12), unless --threshold and --batch-size give them.
    #[command(mut_arg("epsilon", bench_epsilon), mut_arg("delta", bench_delta))]
    #[command(after_long_help = help_examples::BENCH_TRIEHH)]
    Triehh(BenchTrieHhArgs),
    /// Time a whole domain-histogram mechanism (all clients and the server) on Geometric(1/√B)
    /// items or on items read from a file.
    #[command(mut_arg("epsilon", bench_epsilon), mut_arg("delta", bench_delta))]
    #[command(after_long_help = help_examples::BENCH_MECHANISM)]
    Mechanism(BenchMechanismArgs),
    /// Time the tight composition of S&T rounds in process: building one round's loss pair,
    /// and composing it over the levels with ε at δ.
    #[command(after_long_help = help_examples::BENCH_ST_COMPOSITION)]
    StComposition(BenchStCompositionArgs),
}

#[derive(Debug, Args)]
pub(crate) struct BenchStCompositionArgs {
    /// Per-round sampling rate p_s.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 0.1420227)]
    pub(crate) sampling_rate: f64,
    /// Per-round threshold τ.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 26)]
    pub(crate) threshold: u64,
    /// Number of rounds composed.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 10)]
    pub(crate) levels: u64,
    /// The δ at which ε is computed.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 1e-8)]
    pub(crate) delta: f64,
    /// Number of timed repetitions.
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 11)]
    pub(crate) repeats: usize,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchMechanismArgs {
    #[command(flatten)]
    pub(crate) data: BenchDataArgs,
    /// The mechanism: any of `tally histogram`'s mechanisms over a public domain (central ones
    /// for add-remove neighbours; shuffled-grr with the fmt23 bound; --epsilon is the local ε
    /// of hadamard-response, and pure-ε mechanisms ignore --delta).
    #[arg(help_heading = heading::ALGORITHM, long, value_enum)]
    pub(crate) mechanism: DomainHistogramMechanism,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Time on the items of this file (one integer below --domain per line; --clients is then
    /// ignored) instead of generated ones, so that another implementation can use the same data.
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) items: Option<PathBuf>,
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

/// The privacy target and the analysis, shared by every command that releases or plans a
/// release for a neighbour relation. `D` holds its δ, as in [`TargetArgs`].
#[derive(Debug, Args)]
pub(crate) struct PrivacyArgs<D: Args = TargetDelta> {
    #[command(flatten)]
    pub(crate) target: TargetArgs<D>,
    #[command(flatten)]
    pub(crate) analysis: AnalysisArgs,
    /// The neighbour relation the guarantee holds for.
    #[arg(help_heading = heading::PRIVACY, long, value_enum, default_value = "add-remove")]
    pub(crate) neighbours: NeighboursArg,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

/// The (ε, δ) a release targets, shared by every command that calibrates for one. `D` holds
/// its δ: a target ([`TargetDelta`]), but in `plan sample-threshold`, which computes δ when none
/// is given ([`OptionalDelta`]). The benchmarks give both a default ([`bench_epsilon`],
/// [`bench_delta`]).
#[derive(Debug, Args)]
pub(crate) struct TargetArgs<D: Args = TargetDelta> {
    /// Privacy-loss bound ε (> 0) of the whole release.
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) epsilon: f64,
    #[command(flatten)]
    target_delta: D,
}

impl TargetArgs {
    /// The target δ.
    pub(crate) fn delta(&self) -> f64 {
        self.target_delta.delta
    }
}

impl TargetArgs<OptionalDelta> {
    /// The target δ, if given.
    pub(crate) fn delta(&self) -> Option<f64> {
        self.target_delta.delta
    }
}

/// A benchmark's ε when none is given.
fn bench_epsilon(epsilon: clap::Arg) -> clap::Arg {
    epsilon.required(false).default_value("1")
}

/// A benchmark's δ when none is given.
fn bench_delta(delta: clap::Arg) -> clap::Arg {
    delta.required(false).default_value("1e-8")
}

/// The analysis of a sample-and-threshold round's δ.
#[derive(Debug, Args)]
pub(crate) struct AnalysisArgs {
    /// The analysis used to compute δ (and so the threshold or sampling rate that meets it).
    #[arg(help_heading = heading::PRIVACY, long, value_enum, default_value = "tight")]
    pub(crate) method: Method,
}

/// The δ a release targets (`plan shuffle` takes it alone: its ε is optional, the other
/// direction being --local-epsilon).
#[derive(Debug, Args)]
pub(crate) struct TargetDelta {
    /// Target δ in (0, 1) for the whole release.
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) delta: f64,
}

/// The δ `plan sample-threshold` targets, or computes for a given round.
#[derive(Debug, Args)]
pub(crate) struct OptionalDelta {
    /// Target δ in (0, 1). Without it, give both --sampling-rate and --threshold to get δ.
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    delta: Option<f64>,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs<OptionalDelta>,
    /// Sampling rate as a fraction α of its largest allowed value 1 − e^(−ε).
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        allow_negative_numbers = true,
        conflicts_with_all = ["sampling_rate", "threshold"]
    )]
    pub(crate) alpha: Option<f64>,
    #[command(flatten)]
    pub(crate) round: RoundArgs,
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// The default k of a report's predicted recall@k.
pub(crate) const DEFAULT_TOP: usize = 20;

/// `--report DIR` and the population it predicts utility on.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Write an HTML report (`index.html`, figures inline) and `plan.json` to this directory.
    ///
    /// The report shows release curves beside Laplace and Gaussian thresholding, the error of
    /// released estimates, and with a population, predicted recall and error over a sweep of ε;
    /// `plan histogram` without --mechanism: every mechanism's predicted released items and error
    /// against K, the recommended setting marked, and why.
    #[arg(help_heading = heading::REPORT, long, value_name = "DIR")]
    pub(crate) report: Option<PathBuf>,
    /// A population to predict utility on (data the analyst may look at, e.g. a proxy).
    #[command(flatten)]
    pub(crate) population: PlanPopulationArgs,
    /// Format of --input (by default `tsv` for files ending in .tsv or .tsv.gz, else `lines`).
    #[arg(help_heading = heading::REPORT, long, value_enum, requires = "report")]
    pub(crate) format: Option<Format>,
    /// The k of the predicted recall@k: the share of the population's k most frequent items
    /// the release is predicted to show (with --mechanism).
    #[arg(
        help_heading = heading::REPORT,
        long = "recall-at",
        alias = "top",
        value_name = "K",
        default_value_t = DEFAULT_TOP,
        requires = "report"
    )]
    pub(crate) top: usize,
    /// Seed of a --synthetic population and of a TSV file's choice of one row per client.
    #[arg(help_heading = heading::REPORT, long, default_value_t = 0, requires = "report")]
    pub(crate) population_seed: u64,
}

/// The round parameters the user fixes, and the seed: shared by every command that releases.
#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    #[command(flatten)]
    pub(crate) round: RoundArgs,
    /// Seed for a reproducible simulation.
    ///
    /// Without it the run draws from the operating system's randomness and prints no seed: a
    /// release is private only while its sampling randomness stays secret.
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) seed: Option<u64>,
    /// The fraction of the devices assumed to collude with the analyst, in [0, 1], for the
    /// guarantee printed beside a shuffle-model release's (which assumes every other device
    /// honest): what an honest device keeps when this fraction colludes, and the floor when
    /// every other device does. Central and local guarantees do not depend on other devices'
    /// honesty and print none.
    #[arg(help_heading = heading::PRIVACY, long, value_name = "F", default_value_t = 0.1)]
    pub(crate) colluding_fraction: f64,
}

impl ReleaseArgs {
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

/// The id of [`RoundArgs`]' group: a command whose plan reports the guarantee of a given pair
/// lets both be given (`mut_group(ROUND, |group| group.multiple(true))`).
const ROUND: &str = "round";

/// The parameter of each sample-and-threshold round the user fixes, the planner solving for
/// the other: shared by every command that runs or plans S&T rounds. One of them at most,
/// but in the plans that report the guarantee of a given pair.
#[derive(Debug, Args)]
#[group(id = ROUND, multiple = false)]
pub(crate) struct RoundArgs {
    /// Sampling rate p_s of each S&T round; the threshold is then the smallest that meets the
    /// round's share of (ε, δ).
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) sampling_rate: Option<f64>,
    /// Threshold τ of each S&T round; the sampling rate is then the largest that meets the
    /// round's share of (ε, δ).
    ///
    /// --algorithm count-min-prefix-tree takes it as its heavy-hitter threshold τ_HH.
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) threshold: Option<u64>,
}

impl RoundArgs {
    /// What the S&T planner solves each round for: the given sampling rate or threshold, or
    /// the pair with the smallest count a release can show.
    pub(crate) fn target(&self) -> PlanTarget {
        match (self.sampling_rate, self.threshold) {
            (Some(rate), _) => PlanTarget::SamplingRate(rate),
            (None, Some(threshold)) => PlanTarget::Threshold(threshold),
            (None, None) => PlanTarget::MinReleasedCount,
        }
    }
}

/// Input file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// One item per line; each line is one client.
    Lines,
    /// `client_id<TAB>item`, several rows per client allowed.
    Tsv,
}

/// The population a plan's report predicts utility on: at most one of the inputs of
/// [`InputSourceArgs`].
#[derive(Debug, Args)]
#[group(required = false, multiple = false)]
pub(crate) struct PlanPopulationArgs {
    /// A file of items (`.gz` is decompressed) to predict utility on.
    #[arg(help_heading = heading::REPORT, long)]
    pub(crate) input: Option<PathBuf>,
    /// A shipped dataset to predict utility on: `shakespeare` (one client per spoken word).
    #[arg(help_heading = heading::REPORT, long)]
    pub(crate) dataset: Option<String>,
    /// A generated population to predict utility on, e.g. `zipf:n=1000000,domain=100000,s=1.1`.
    #[arg(help_heading = heading::REPORT, long)]
    pub(crate) synthetic: Option<String>,
}

impl ReportArgs {
    /// Refuses a population given without `--report`, which alone predicts on it.
    pub(crate) fn refuse_population_without_report(&self) -> anyhow::Result<()> {
        if self.report.is_none() && self.population.input().is_some() {
            anyhow::bail!(
                "--input/--dataset/--synthetic name the population the report predicts on: \
                 add --report DIR, or drop them"
            );
        }
        Ok(())
    }
}

impl PlanPopulationArgs {
    /// The input, if one is given.
    pub(crate) fn input(&self) -> Option<InputSourceArgs> {
        (self.input.is_some() || self.dataset.is_some() || self.synthetic.is_some()).then(|| {
            InputSourceArgs {
                input: self.input.clone(),
                dataset: self.dataset.clone(),
                synthetic: self.synthetic.clone(),
            }
        })
    }
}

impl ReportArgs {
    /// The population the report predicts on, read as a whole client a line or row.
    pub(crate) fn population_input(&self) -> Option<InputArgs> {
        self.population.input().map(|source| InputArgs {
            source,
            format: self.format,
            rows_as_clients: false,
        })
    }
}

/// The clients' items a command runs on: where they come from, and how a file is read.
#[derive(Debug, Args)]
pub(crate) struct InputArgs {
    #[command(flatten)]
    pub(crate) source: InputSourceArgs,
    /// Format of --input (by default `tsv` for files ending in .tsv or .tsv.gz, else `lines`).
    #[arg(help_heading = heading::INPUT, long, value_enum)]
    pub(crate) format: Option<Format>,
    /// With --format tsv: make every row its own client instead of one uniformly chosen row
    /// per client.
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) rows_as_clients: bool,
}

/// Where the population comes from: exactly one of a file, a shipped dataset or a generator.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub(crate) struct InputSourceArgs {
    /// A file of items (`.gz` is decompressed).
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) input: Option<PathBuf>,
    /// A shipped dataset: `shakespeare` (one client per spoken word).
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) dataset: Option<String>,
    /// A generated population, e.g. `zipf:n=1000000,domain=100000,s=1.1`.
    ///
    /// The generators: `geometric:n=1000000,domain=16384`, `binomial:n=1000000,domain=1024`,
    /// `zipf:n=1000000,domain=100000,s=1.1`, `uniform:n=1000,domain=10`.
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) synthetic: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct HistogramArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    /// Show only the K items with the largest counts.
    #[arg(help_heading = heading::OUTPUT, long, value_name = "K")]
    pub(crate) top: Option<usize>,
    #[command(flatten)]
    pub(crate) sampling_key: SamplingKeyArgs,
    /// The mechanism.
    ///
    /// Sample-and-threshold and the partition selections (laplace-threshold,
    /// gaussian-threshold, truncated-geometric) release only items clients hold; every other
    /// mechanism releases an estimate for each element of a public domain, given by --domain
    /// or --buckets.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum, default_value = "sample-threshold")]
    pub(crate) mechanism: HistogramMechanism,
    /// Each client contributes at most K distinct items instead of one row.
    ///
    /// The K items are chosen uniformly among the client's rows' distinct items (keyed by
    /// --sampling-key when given). Applies to sample-threshold (one coin per client and item,
    /// the tight composition of the per-item rounds) and the partition selections (sensitivity
    /// K; their default K is 1).
    #[arg(help_heading = heading::PRIVACY, long, value_name = "K")]
    pub(crate) max_items_per_client: Option<u32>,
    #[command(flatten)]
    pub(crate) domain: DomainArgs,
    /// Replace negative estimates by 0 (a post-processing; it biases small counts upwards).
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) clamp: bool,
    /// Also report the true counts and the mean absolute error against them.
    ///
    /// These are metrics against the input, not a private output.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) truth: bool,
}

/// Histogram mechanisms (`--mechanism`): sample-and-threshold, the partition selections over
/// an unknown domain, and every mechanism over a public domain that
/// [`DomainHistogramMechanism`] registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HistogramMechanism {
    /// Sample-and-threshold: only items whose sampled count reaches the threshold (central).
    SampleThreshold,
    /// A partition selection: the items whose noisy count passes a threshold, or the
    /// truncated geometric's coin (central).
    Selection(SelectionMethod),
    /// A mechanism that releases an estimate for every element of a public domain.
    Domain(DomainHistogramMechanism),
}

impl HistogramMechanism {
    /// The name as written on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::SampleThreshold => "sample-threshold",
            Self::Selection(method) => method.name(),
            Self::Domain(mechanism) => mechanism.name(),
        }
    }
}

impl ValueEnum for HistogramMechanism {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<HistogramMechanism>> = LazyLock::new(|| {
            std::iter::once(HistogramMechanism::SampleThreshold)
                .chain(SelectionMethod::ALL.map(HistogramMechanism::Selection))
                .chain(
                    DomainHistogramMechanism::value_variants()
                        .iter()
                        .map(|&mechanism| HistogramMechanism::Domain(mechanism)),
                )
                .collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Self::SampleThreshold => Some(PossibleValue::new("sample-threshold").help(
                "Sample-and-threshold: only items whose sampled count reaches the threshold \
                 (central)",
            )),
            Self::Selection(method) => {
                let help = match method {
                    SelectionMethod::LaplaceThreshold => {
                        "Discrete Laplace noise on every held item's count, released at or above \
                         a threshold, with its noisy count (central, no public domain)"
                    }
                    SelectionMethod::GaussianThreshold => {
                        "Discrete Gaussian noise on every held item's count, released at or \
                         above a threshold, with its noisy count (central, no public domain)"
                    }
                    SelectionMethod::TruncatedGeometric => {
                        "The optimal partition selection (Desfontaines et al. 2022): each held \
                         item released by a coin of its count's probability, keys only \
                         (central, no public domain)"
                    }
                };
                Some(PossibleValue::new(method.name()).help(help))
            }
            Self::Domain(mechanism) => mechanism.to_possible_value(),
        }
    }
}

/// The public domain of the mechanisms that estimate every domain element.
#[derive(Debug, Args)]
pub(crate) struct DomainArgs {
    /// Items are integers in [0, B).
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "B", conflicts_with = "buckets")]
    pub(crate) domain: Option<u32>,
    /// Hash every item into one of B buckets (the same bucket on every run).
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "B")]
    pub(crate) buckets: Option<u32>,
    /// For --mechanism shuffled-grr: the amplification-by-shuffling analysis.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum, default_value = "fmt23")]
    pub(crate) bound: ShuffleBoundArg,
    /// For --mechanism ghazi-count-min: the failure probability β of the accuracy bound,
    /// which sets the number of hash rows τ = ⌈log2(2B/β)⌉.
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_name = "BETA",
        allow_negative_numbers = true
    )]
    pub(crate) failure_probability: Option<f64>,
}

/// The generated data and the timing loop, shared by every benchmark.
#[derive(Debug, Args)]
pub(crate) struct BenchDataArgs {
    /// Number of clients n.
    #[arg(help_heading = heading::INPUT, long, default_value_t = 1_000_000)]
    pub(crate) clients: u64,
    /// Domain size B; items are Geometric(1/√B), redrawn when ≥ B, named in decimal.
    #[arg(help_heading = heading::INPUT, long, default_value_t = 16_384)]
    pub(crate) domain: u64,
    /// Number of timed repetitions.
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 11)]
    pub(crate) repeats: usize,
    /// Seed of the generated data and of the sampling.
    #[arg(help_heading = heading::RUNTIME, long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) data: BenchDataArgs,
    /// Sampling rate p_s.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 0.01)]
    pub(crate) sampling_rate: f64,
    /// Threshold τ.
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 20)]
    pub(crate) threshold: u64,
    /// ε at which the mechanism's guarantee is computed (the sampling rate must not exceed
    /// 1 − e^(−ε)).
    #[arg(help_heading = heading::PRIVACY, long, default_value_t = 1.0)]
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
    /// OptPrefixTree (Apple): users with many data points, one-hot + randomized-response
    /// reports summed by secure aggregation, aggregate (ε, δ) by amplification by shuffling.
    OptPrefixTree,
    /// Ghazi et al.'s heavy hitters (Appendix D), shuffle model: integer items in
    /// [0, 2^L) (--domain-bits L), one Count-Min frequency oracle per prefix level at
    /// (ε/L, δ/L), replace-one neighbours; releases the items whose every prefix's estimate
    /// is at least --threshold/2 (--threshold is τ_HH; --failure-probability is each
    /// oracle's β).
    CountMinPrefixTree,
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
    /// The privacy-loss-distribution accountant on identical rounds (the optimal curve by
    /// convolution, rounded up).
    Pld,
    /// The S&T rounds' own privacy-loss distribution, composed (add/remove neighbours; the
    /// default for TrieHH++ and quantiles there).
    Tight,
}

/// How a multi-round release's rounds compose: shared by every command that runs or plans
/// one.
#[derive(Debug, Args)]
pub(crate) struct CompositionArgs {
    /// How the rounds' guarantees compose [default: tight for add-remove neighbours, basic for
    /// replace-one].
    ///
    /// By default `heavy-hitters` composes TrieHH++'s partition-selection levels optimally, and
    /// opt-prefix-tree's iterations tightly: the T-fold composition of the shuffle clone pair's
    /// privacy-loss distribution.
    #[arg(
        id = "composition",
        help_heading = heading::PRIVACY,
        long = "composition",
        value_name = "COMPOSITION",
        value_enum
    )]
    pub(crate) rule: Option<CompositionArg>,
}

impl CompositionArgs {
    /// The composition of a multi-round S&T release: the given one, else tight for add/remove
    /// neighbours (the tight accountant's loss pair is add/remove) and basic for replace-one.
    pub(crate) fn of_rounds(
        &self,
        neighbours: tally_accounting::Neighbours,
    ) -> tally_accounting::composition::Composition {
        self.rule.map_or_else(
            || tally_accounting::composition::Composition::default_for_rounds(neighbours),
            Into::into,
        )
    }
}

impl From<CompositionArg> for tally_accounting::composition::Composition {
    fn from(c: CompositionArg) -> Self {
        match c {
            CompositionArg::Basic => Self::Basic,
            CompositionArg::Advanced => Self::Advanced,
            CompositionArg::Optimal => Self::Optimal,
            CompositionArg::Pld => Self::Pld,
            CompositionArg::Tight => Self::Tight,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct HeavyHittersArgs {
    #[command(flatten)]
    pub(crate) input: InputArgs,
    /// The algorithm.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum)]
    pub(crate) algorithm: Algorithm,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    /// Prefix-tree levels L; words of L·G characters or more are not found.
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 10)]
    pub(crate) levels: usize,
    /// Characters added per level G (default 1).
    ///
    /// For opt-prefix-tree the segment policy: `fixed:S` (S symbols per iteration), `max-under-cap`
    /// (default) or `max-mass`.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) segment: Option<SegmentArg>,
    /// TrieHH++: every client reports at every level, not only below surviving prefixes.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) unrestricted: bool,
    /// TrieHH: keep at most this many non-terminal prefixes per round (by votes).
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) beam: Option<usize>,
    /// TrieHH++: how each level releases the clients' prefixes.
    ///
    /// `sample-threshold` (the paper's: each client is sampled, a prefix kept when its sampled
    /// count reaches the threshold), or a partition selection, `laplace-threshold` or
    /// `gaussian-threshold` (central: the aggregator counts every client's prefix and noise
    /// decides; no sampling).
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        default_value = "sample-threshold",
        value_name = "MECHANISM"
    )]
    pub(crate) mechanism: LevelMechanismArg,
    #[command(flatten)]
    pub(crate) composition: CompositionArgs,
    /// Show only the K most frequent items found (and score against the true top K).
    #[arg(help_heading = heading::OUTPUT, long, value_name = "K")]
    pub(crate) top: Option<usize>,
    /// Score the result against the input's true top items: precision, recall, F1.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) truth: bool,
    /// count-min-prefix-tree: items are integers in [0, 2^L) (L from 1 to 31).
    #[arg(help_heading = heading::ALGORITHM, long, value_name = "L")]
    pub(crate) domain_bits: Option<u32>,
    /// count-min-prefix-tree: the failure probability β of each level's sketch, which sets its
    /// number of hash rows [default: 0.01].
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_name = "BETA",
        allow_negative_numbers = true
    )]
    pub(crate) failure_probability: Option<f64>,
    #[command(flatten)]
    pub(crate) sampling_key: SamplingKeyArgs,
    #[command(flatten)]
    pub(crate) opt: OptPrefixTreeArgs,
}

/// `heavy-hitters --mechanism`: how each TrieHH++ level releases prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LevelMechanismArg {
    /// Sample-and-threshold.
    SampleThreshold,
    /// A partition selection.
    Selection(SelectionMethod),
}

impl LevelMechanismArg {
    /// The partition selection, if the levels run one.
    pub(crate) fn selection(self) -> Option<SelectionMethod> {
        match self {
            Self::SampleThreshold => None,
            Self::Selection(method) => Some(method),
        }
    }
}

impl std::str::FromStr for LevelMechanismArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "sample-threshold" {
            return Ok(Self::SampleThreshold);
        }
        s.parse().map(Self::Selection).map_err(|_| {
            "expected sample-threshold, laplace-threshold or gaussian-threshold".to_owned()
        })
    }
}

/// `--segment`: a number of characters, or an OptPrefixTree segment policy.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SegmentArg {
    /// A plain number.
    Length(usize),
    /// `fixed:S`, `max-under-cap` or `max-mass`.
    Policy(tally_messages::SegmentRule),
}

impl std::str::FromStr for SegmentArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.parse::<usize>() {
            Ok(0) => Err("the segment must be at least 1".to_owned()),
            Ok(n) => Ok(Self::Length(n)),
            Err(_) => s.parse().map(Self::Policy).map_err(|e| e.to_string()),
        }
    }
}

/// The options of `--algorithm opt-prefix-tree`.
#[derive(Debug, Args)]
pub(crate) struct OptPrefixTreeArgs {
    /// OptPrefixTree: iterations T per run.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, default_value_t = 5)]
    pub(crate) iterations: usize,
    /// OptPrefixTree: runs, each denying the words found by the earlier ones (one shared budget).
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, default_value_t = 1)]
    pub(crate) runs: usize,
    /// OptPrefixTree: domain cap C, the most elements (⊥ included) one iteration may query.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, default_value_t = 65_537)]
    pub(crate) domain_cap: u64,
    /// OptPrefixTree: target false-positive ratio of the threshold rule, in (0, 1).
    #[arg(
        help_heading = heading::OPT_PREFIX_TREE,
        long,
        default_value_t = 0.1,
        allow_negative_numbers = true
    )]
    pub(crate) fpr: f64,
    /// OptPrefixTree: how a device picks the data point it reports.
    #[arg(
        help_heading = heading::OPT_PREFIX_TREE,
        long,
        value_enum,
        default_value = "uniform-support"
    )]
    pub(crate) selection: SelectionArg,
    /// OptPrefixTree: the one-hot + randomized-response variant.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, value_enum, default_value = "oue")]
    pub(crate) randomizer: RandomizerArg,
    /// OptPrefixTree: how words become symbols.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, value_enum, default_value = "huffman")]
    pub(crate) encoding: EncodingArg,
    /// OptPrefixTree: the longest prefix asked for, in symbols (bits for huffman, bytes for
    /// bytes), end symbol included; default 96 bits or 24 bytes.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long)]
    pub(crate) max_length: Option<usize>,
    /// OptPrefixTree: a file of words (one per line) that devices never report.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long)]
    pub(crate) deny: Option<PathBuf>,
    /// OptPrefixTree: how the simulator sums the reports (both are exact in distribution).
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long, value_enum, default_value = "binomial")]
    pub(crate) aggregation: AggregationArg,
    /// OptPrefixTree: solve ε₀ by the FMT23 amplification bound instead of FMT21's.
    ///
    /// UNPROVEN for the OUE/SUE one-hot randomizers: FMT23 needs R(x) ≥ (R(x0) + R(x1))/(e^ε₀ + 1)
    /// for every report, which a report with both x0's and x1's bits set and x's clear violates
    /// (the best factor is e^−ε₀, FMT21's). The JSON then says the bound is unproven.
    #[arg(help_heading = heading::OPT_PREFIX_TREE, long)]
    pub(crate) unproven_fmt23: bool,
}

/// OptPrefixTree data-selection rules.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SelectionArg {
    /// Uniformly over the distinct eligible data points (the paper's choice).
    UniformSupport,
    /// Proportionally to the data points' multiplicities.
    Weighted,
}

/// One-hot + randomized-response variants.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum RandomizerArg {
    /// Optimized unary encoding: p = 1/2, q = 1/(e^ε₀ + 1).
    Oue,
    /// Symmetric unary encoding (basic RAPPOR).
    Sue,
}

/// OptPrefixTree encodings.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum EncodingArg {
    /// A binary Huffman code over characters plus an end symbol, from the shipped English
    /// word list's character frequencies (public data).
    Huffman,
    /// UTF-8 bytes and a zero end byte.
    Bytes,
}

/// How the simulator sums OptPrefixTree reports.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum AggregationArg {
    /// Each element's sum as two exact binomials (fast).
    Binomial,
    /// Every device's full report, then the sum (slow; for checking).
    PerReport,
}

#[derive(Debug, Args)]
pub(crate) struct BenchTrieHhArgs {
    #[command(flatten)]
    pub(crate) data: BenchDataArgs,
    /// Rounds L.
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 5)]
    pub(crate) rounds: usize,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    /// Vote threshold θ instead of Corollary 1's (give --batch-size too).
    #[arg(help_heading = heading::PRIVACY, long, requires = "batch_size")]
    pub(crate) threshold: Option<u64>,
    /// Batch size m instead of Corollary 1's (give --threshold too).
    #[arg(help_heading = heading::PRIVACY, long, requires = "threshold")]
    pub(crate) batch_size: Option<u64>,
    /// Characters per round g.
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 1)]
    pub(crate) segment: usize,
    /// Keep at most this many non-terminal prefixes per round.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) beam: Option<usize>,
}

/// In `quantiles` and `range`, `--method` names the quantile algorithm, so the S&T analysis of
/// [`PrivacyArgs`] is `--analysis` there.
fn rename_analysis(arg: clap::Arg) -> clap::Arg {
    arg.long("analysis").value_name("ANALYSIS")
}

/// Quantile algorithms (`--method` of `quantiles` and `range`, `--algorithm` of `plan
/// quantiles`): the wire's type, which the simulator runs too.
pub(crate) use tally_messages::QuantileMethod;

/// The numbers, the privacy target and the rounds, shared by `quantiles` and `range`.
#[derive(Debug, Args)]
pub(crate) struct ValuesArgs {
    /// A file with one number per line (`.gz` is decompressed); the numbers must lie in
    /// [0, 1] unless --min and --max are given.
    #[arg(help_heading = heading::INPUT, long)]
    pub(crate) input: PathBuf,
    /// Rescale the numbers from [MIN, MAX] to [0, 1] (with --max); results are reported in
    /// the input's units.
    #[arg(help_heading = heading::INPUT, long, allow_negative_numbers = true, requires = "max")]
    pub(crate) min: Option<f64>,
    /// The upper end of the range to rescale from (with --min).
    #[arg(help_heading = heading::INPUT, long, allow_negative_numbers = true, requires = "min")]
    pub(crate) max: Option<f64>,
    /// Branching factor β of the hierarchical histogram.
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 4)]
    pub(crate) branching: u32,
    /// Levels L of the hierarchical histogram (its resolution is β^(−L)).
    ///
    /// With --method binary-search, the rounds h of each search (resolution 2^(−h)); with
    /// --mechanism ghazi-*, the depth of the binary range-query tree (2^L buckets).
    #[arg(help_heading = heading::ALGORITHM, long, default_value_t = 10)]
    pub(crate) levels: u32,
    /// Post-process the hierarchical histogram so that children sum to their parents
    /// (weighted least squares) before reading it.
    #[arg(help_heading = heading::ALGORITHM, long)]
    pub(crate) consistent: bool,
    #[command(flatten)]
    pub(crate) privacy: PrivacyArgs,
    #[command(flatten)]
    pub(crate) release: ReleaseArgs,
    #[command(flatten)]
    pub(crate) composition: CompositionArgs,
    /// The trust model and mechanism.
    ///
    /// Sample-and-threshold rounds (central), or one round of Ghazi et al.'s range-query tree over
    /// 2^levels buckets through a multi-message shuffle frequency oracle.
    #[arg(help_heading = heading::ALGORITHM, long, value_enum, default_value = "sample-threshold")]
    pub(crate) mechanism: ValuesMechanism,
    /// With --mechanism ghazi-count-min: the failure probability β of the sketch's accuracy
    /// bound, which sets its number of hash rows.
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_name = "BETA",
        allow_negative_numbers = true
    )]
    pub(crate) failure_probability: Option<f64>,
}

/// Mechanisms for quantiles and range counts (`--mechanism`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ValuesMechanism {
    /// Sample-and-threshold rounds (--method chooses the algorithm; central model).
    SampleThreshold,
    /// Range-query tree over the multi-message Hadamard-response oracle (shuffle model).
    GhaziHadamard,
    /// Range-query tree over the Count-Min oracle with binomial blanket noise (shuffle model).
    GhaziCountMin,
}

#[derive(Debug, Args)]
pub(crate) struct QuantilesArgs {
    #[command(flatten)]
    pub(crate) values: ValuesArgs,
    /// The quantiles to estimate, comma separated, each in [0, 1].
    #[arg(
        help_heading = heading::ALGORITHM,
        long,
        value_delimiter = ',',
        allow_negative_numbers = true,
        default_values_t = tally_sim::values_release::DEFAULT_QUANTILES
    )]
    pub(crate) quantiles: Vec<f64>,
    /// The algorithm (binary search spends --levels rounds per quantile).
    #[arg(
        help_heading = heading::ALGORITHM,
        long = "method",
        id = "quantile_method",
        value_name = "METHOD",
        value_enum,
        default_value = "hierarchical"
    )]
    pub(crate) method: QuantileMethod,
    /// Also print each quantile's true value and rank error.
    ///
    /// The rank error is the share of values below the estimate, minus the quantile: metrics
    /// against the input, not a private output.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) truth: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RangeArgs {
    #[command(flatten)]
    pub(crate) values: ValuesArgs,
    /// The lower end of the range (included), in the input's units.
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true)]
    pub(crate) lo: f64,
    /// The upper end of the range (excluded, except that a range ending at 1, or at --max,
    /// includes it), in the input's units.
    #[arg(help_heading = heading::ALGORITHM, long, allow_negative_numbers = true)]
    pub(crate) hi: f64,
    /// The algorithm; range counts come from the hierarchical histogram only.
    #[arg(
        help_heading = heading::ALGORITHM,
        long = "method",
        id = "quantile_method",
        value_name = "METHOD",
        value_enum,
        default_value = "hierarchical"
    )]
    pub(crate) method: QuantileMethod,
}

/// Amplification-by-shuffling analyses (docs/algorithms.md §8).
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
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        allow_negative_numbers = true,
        conflicts_with = "epsilon"
    )]
    pub(crate) local_epsilon: Option<f64>,
    /// Central ε: report the largest local ε₀ that meets it.
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) epsilon: Option<f64>,
    /// Number of users n whose reports are shuffled.
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) users: u64,
    /// The central δ.
    #[command(flatten)]
    pub(crate) delta: TargetDelta,
    /// The amplification bound.
    #[arg(help_heading = heading::PRIVACY, long, value_enum, default_value = "fmt23")]
    pub(crate) bound: ShuffleBoundArg,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

/// Accountants for `plan compose`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ComposeMethodArg {
    /// (K·ε, K·δ); ignores --target-delta.
    Basic,
    /// Dwork–Rothblum–Vadhan advanced composition, with slack --target-delta − K·δ.
    Advanced,
    /// Kairouz–Oh–Viswanath optimal composition (exact, rounded up). Default.
    Optimal,
    /// The privacy-loss-distribution accountant (the same curve by convolution, rounded up).
    Pld,
    /// Rényi DP of pure ε-DP rounds (needs --delta 0), converted by Canonne–Kamath–Steinke.
    Rdp,
}

#[derive(Debug, Args)]
pub(crate) struct PlanComposeArgs {
    /// ε of each round.
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) epsilon: f64,
    /// δ of each round, in [0, 1).
    #[arg(
        help_heading = heading::PRIVACY,
        long,
        allow_negative_numbers = true,
        default_value_t = 0.0
    )]
    pub(crate) delta: f64,
    /// Number of rounds K.
    #[arg(help_heading = heading::PRIVACY, long)]
    pub(crate) rounds: u64,
    /// Total δ at which to report the total ε (all methods but basic).
    #[arg(help_heading = heading::PRIVACY, long, allow_negative_numbers = true)]
    pub(crate) target_delta: Option<f64>,
    /// The accountant.
    #[arg(help_heading = heading::PRIVACY, long, value_enum, default_value = "optimal")]
    pub(crate) method: ComposeMethodArg,
    /// Print JSON instead of a table.
    #[arg(help_heading = heading::OUTPUT, long)]
    pub(crate) json: bool,
}

#[cfg(test)]
mod tests;
