//! Reproductions of the experiments in the papers tally implements: one command runs a
//! paper's grid of settings and writes a CSV of every run, figures laid out like the paper's
//! and a markdown report whose table of the paper's findings is evaluated from the data.
//!
//! The output layer is generic and shared by every reproduction:
//!
//! - [`table`]: CSV files of serializable rows, and means with standard errors;
//! - [`figures`]: a grid of line-plot panels (rows × columns, shared legend, optional log
//!   scale, error bars) drawn as PNG and SVG with an embedded font, so rendering needs no
//!   system fonts;
//! - [`report`]: markdown reports with figures, settings and a findings table.
//!
//! Each experiment lives in its own module:
//!
//! - [`sample_threshold`]: Bharadwaj and Cormode (AISTATS 2022) §5, sample-and-threshold against
//!   central Laplace, local Hadamard response and the Balcer–Cheu shuffle histogram
//!   (docs/algorithms.md §7).
//! - [`opt_prefix_tree`]: Chadha et al. (SaTML 2024), OptPrefixTree's captured mass against ε
//!   for its design choices and two single-item comparators (docs/algorithms.md §6).
//!
//! # Determinism
//!
//! Every random draw comes from a ChaCha stream indexed by the position of the run in the grid,
//! so the rows depend only on the settings and the seed, never on the number of threads.
#![forbid(unsafe_code)]

mod error;
pub mod figures;
pub mod opt_prefix_tree;
pub mod report;
pub mod sample_threshold;
pub mod table;

pub use error::Error;
