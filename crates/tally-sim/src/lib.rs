//! The tally simulator: mechanisms run over an in-memory population of clients.
//!
//! A [`Population`] is a list of clients, each holding one item, with items interned to dense
//! `u32` ids. It is the ground truth for metrics ([`Population::true_count`]); aggregators never
//! expose raw counts. Populations come from files, from a dataset shipped inside the binary,
//! or from a synthetic generator. A [`MultiPopulation`] holds users with *many* data points
//! each (multisets of items), for OptPrefixTree: from TSV rows, the shipped Shakespeare
//! speakers, or the `reddit-like` generator ([`RedditLikeSpec`]). [`run_sample_threshold`]
//! then runs one sample-and-threshold histogram round over the population along one of three
//! [`ExecutionPath`]s, deterministically for a seed. [`run_keyed_sample_threshold`] runs a
//! round with keyed coins instead (a secret key, no seed) over a [`KeyedPopulation`], which
//! keeps the clients' ids; [`KeyedPartCounts`] counts such a round part by part (one Spark
//! partition each), for the parts' counts to be summed elsewhere, and [`KeyedItemCounts`] does
//! the same for clients of several items ([`items_release`]).
//!
//! # Input formats
//!
//! Both file formats are UTF-8 with `\n` line endings; a trailing `\r` is stripped (so `\r\n`
//! files load), a byte-order mark at the start is dropped, and lines that are empty or hold
//! only whitespace are skipped. Files whose name ends in `.gz` are decompressed.
//!
//! - **lines** ([`Population::from_lines_file`]): one item per line, each line one client.
//!   The item is the whole line, kept verbatim.
//! - **tsv** ([`Population::from_tsv_file`]): `client_id<TAB>item`, one row per data point and
//!   several rows per client allowed. A first row whose first field is `client_id` is a header
//!   and skipped. Each row has exactly one tab and two non-empty fields. With
//!   [`ClientMode::ClientLevel`] each distinct `client_id` is one client holding one item
//!   chosen uniformly among its rows (seeded); with [`ClientMode::RowsAsClients`] each row is
//!   a client.
//!
//! Errors name the file and line: `data.tsv:3: expected client_id<TAB>item, found a line with
//! no tab`.
//!
//! [`stream_sample_threshold`] runs an S&T round straight from such a file without loading it:
//! the file is read in chunks cut at line boundaries and processed on all cores, each client's
//! coin is drawn before its line is parsed (a [`LineSampling`], exact Poisson gap skipping by
//! [`PoissonLines`]), and only sampled lines are counted. Memory holds a few chunks and one
//! count per distinct sampled item, plus one chosen row per client for client-level TSV.
//! [`CountedPopulation::from_file`] reads such a file once into its distinct items' counts,
//! which is all that [`run_triehh_plus_counted`] needs: each level draws one exact binomial
//! per distinct prefix instead of one coin per client.
//!
//! # Datasets and synthetic data
//!
//! [`Population::dataset`] loads a shipped dataset by name ([`DATASETS`]); `shakespeare` gives
//! 835,229 clients, one per spoken word token of 38 plays. [`Population::synthetic`] draws
//! from a [`SyntheticSpec`] such as `zipf:n=1000000,domain=100000,s=1.1`.
//!
//! # Released documents
//!
//! [`sample_threshold_release`], [`triehh_plus_release`] and [`values_release`] run a
//! simulation and build its document through the registry's builders
//! (`tally_protocol::document`): what `tally histogram`, `tally heavy-hitters --algorithm
//! triehh++`, `tally quantiles` and `tally range` print with `--json`, and what the Python
//! package's `to_json()` returns.
//!
//! # Randomness
//!
//! Every draw comes from a ChaCha12 generator seeded with `seed_from_u64(seed)`; each job (and
//! each fixed-size chunk of a parallel job) uses its own ChaCha stream, so results depend only
//! on the inputs and the seed, never on the number of threads.
//!
//! # Example
//!
//! ```
//! use tally_accounting::Neighbours;
//! use tally_accounting::sample_threshold::{Analysis, SampleThresholdParams};
//! use tally_core::histogram::SampleThreshold;
//! use tally_sim::{ExecutionPath, Population, run_sample_threshold};
//!
//! let population = Population::synthetic(&"zipf:n=100000,domain=1000,s=1.1".parse()?, 1);
//! let params = SampleThresholdParams::new(0.25, 20)?;
//! let mechanism = SampleThreshold::new(params, 1.0, Analysis::Tight, Neighbours::AddRemove)?;
//! let release = run_sample_threshold(&population, &mechanism, ExecutionPath::GapSkipping, 7);
//! for cell in &release.items {
//!     assert!(cell.count >= 20);
//!     let name = population.item_name(cell.item).unwrap();
//!     println!("{name}: {} (true {})", cell.estimate, population.true_count(cell.item));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod counted;
mod dataset;
mod domain;
pub mod domain_release;
mod error;
mod execute;
mod heavy_hitters;
pub mod items_plan;
pub mod items_release;
mod keyed;
mod keyed_counts;
mod keyed_triehh;
mod load;
mod metrics;
mod multi_population;
mod opt_prefix_tree;
mod parallel;
mod population;
mod quantiles;
mod rng;
mod round;
pub mod sample_threshold_release;
mod sampled_values;
mod stream;
mod stream_domain;
mod stream_histogram;
mod stream_tsv;
mod stream_values;
mod synthetic;
mod task;
mod text;
mod triehh;
pub mod triehh_plus_release;
mod values;
pub mod values_release;

pub use counted::{CountedPopulation, run_triehh_plus_counted, run_triehh_plus_selection_counted};
pub use dataset::{DATASETS, english_word_frequencies};
pub use domain::{
    DomainItems, DomainMechanism, PlaceInDomain, RoundMechanism, mechanism_rng,
    run_domain_histogram,
};
pub use error::Error;
pub use execute::{ExecutionPath, run_sample_threshold};
pub use heavy_hitters::{run_prefix_round, run_shuffle_heavy_hitters, run_triehh_plus};
pub use keyed::{KeyedPopulation, run_keyed_sample_threshold};
pub use keyed_counts::{KeyedItemCounts, KeyedPartCounts};
pub use keyed_triehh::run_keyed_triehh_plus;
pub use metrics::{
    EstimateErrors, RetrievalScores, prefix_estimate_errors, retrieval_scores, top_k,
};
pub use multi_population::{
    FAVOURITES, MultiPopulation, RedditLikeSpec, TILT, english_huffman_code,
};
pub use opt_prefix_tree::{
    AggregationPath, Users, binomial_iteration, run_opt_prefix_tree, word_multisets,
};
pub use population::{ClientMode, Population, Source};
pub use quantiles::{
    run_binary_search, run_binary_searches, run_hierarchical, run_hierarchical_counted, run_level,
    run_threshold_round,
};
pub use round::{aggregator_coins, run_counted_round, run_domain_round, run_round};
pub use sampled_values::{sample_threshold_integers, sample_threshold_values};
pub use stream_domain::{DomainCounts, count_elements};
pub use stream_histogram::{
    LineCoins, LineSampling, PoissonCoins, PoissonLines, StreamFormat, StreamedRelease,
    stream_sample_threshold,
};
pub use stream_values::CountedValues;
pub use synthetic::{Generator, SyntheticSpec};
pub use tally_core::histogram::{DomainMap, bucket};
pub use tally_core::quantiles::ValueRange;
pub use task::{Devices, run_task};
pub use triehh::{run_triehh, run_triehh_counted};
pub use values::{SortedValues, Values, ValuesError};
