//! Populations of numbers: each client holds one value, kept in `[0, 1]` for the quantile and
//! range tasks of [`tally_core::quantiles`].
//!
//! See [`Values`] for the input format.

use std::io::BufRead;
use std::path::Path;

use rand::Rng;
use rayon::prelude::*;

use tally_core::quantiles::ValueRange;

use crate::Error;
use crate::load::open;
use crate::rng::{Purpose, stream};

/// Values per chunk (one ChaCha stream each) of [`Values::uniform`].
const UNIFORM_CHUNK: usize = 1 << 16;

/// The longest offending text quoted in an error.
const QUOTE_LIMIT: usize = 40;

/// Why a file of numbers could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValuesError {
    /// The file could not be opened or read, is not UTF-8, or holds no value.
    #[error(transparent)]
    Input(#[from] Error),
    /// A line is not a number.
    #[error("{file}:{line}: expected a number, found {found:?}")]
    NotANumber {
        /// The input's name.
        file: String,
        /// The 1-based line number.
        line: u64,
        /// The line's text (shortened if long).
        found: String,
    },
    /// A line is NaN or infinite.
    #[error("{file}:{line}: expected a finite number, found {found}")]
    NotFinite {
        /// The input's name.
        file: String,
        /// The 1-based line number.
        line: u64,
        /// The line's text.
        found: String,
    },
    /// A value lies outside `[0, 1]`, or outside the given range.
    #[error(
        "{file}:{line}: value {value} is outside [{min}, {max}]{}",
        if *rescaling { "" } else { " (values must lie in [0, 1] unless a range to rescale from is given)" }
    )]
    OutOfRange {
        /// The input's name.
        file: String,
        /// The 1-based line number.
        line: u64,
        /// The value.
        value: f64,
        /// The smallest allowed value.
        min: f64,
        /// The largest allowed value.
        max: f64,
        /// Whether a range to rescale from was given.
        rescaling: bool,
    },
}

/// A population of clients each holding one number, stored rescaled into `[0, 1]`.
///
/// # Input format
///
/// A UTF-8 text file with one number per line, each line one client (the same line rules as
/// the item files: a trailing `\r` is stripped, a byte-order mark at the start is dropped,
/// blank lines are skipped, files ending in `.gz` are decompressed). Surrounding whitespace is
/// ignored; a number is anything Rust's `f64` parser reads (`0.25`, `1e-3`, `-7`). NaN and
/// infinities are rejected.
///
/// Without a [`ValueRange`] every value must lie in `[0, 1]`. With one, every value must lie in
/// `[min, max]` and is rescaled to `(x − min)/(max − min)`; results are mapped back with
/// [`Values::to_original`]. Errors name the file and line: `data.txt:3: value 1.5 is outside
/// [0, 1] (values must lie in [0, 1] unless a range to rescale from is given)`.
///
/// Its `Debug` form is a summary, not the values.
#[derive(Clone)]
pub struct Values {
    values: Vec<f64>,
    range: Option<ValueRange>,
    description: String,
}

impl Values {
    /// Loads a file with one number per line (see [`Values`]); with `range`,
    /// values in `[min, max]` are rescaled into `[0, 1]`.
    ///
    /// # Errors
    ///
    /// [`ValuesError::Input`] if the file cannot be opened or read, is not UTF-8 or holds no
    /// number; [`ValuesError::NotANumber`], [`ValuesError::NotFinite`] or
    /// [`ValuesError::OutOfRange`] naming the first bad line.
    pub fn from_file(
        path: impl AsRef<Path>,
        range: Option<ValueRange>,
    ) -> Result<Self, ValuesError> {
        let path = path.as_ref();
        Self::from_reader(open(path)?, &path.display().to_string(), range)
    }

    /// Reads one number per line from `reader`; `name` stands for the input in messages. The
    /// reader must already be decompressed.
    ///
    /// # Errors
    ///
    /// As [`Values::from_file`], except for opening.
    pub fn from_reader(
        mut reader: impl BufRead,
        name: &str,
        range: Option<ValueRange>,
    ) -> Result<Self, ValuesError> {
        let mut values = Vec::new();
        let mut buf = Vec::new();
        let mut line = 0u64;
        loop {
            buf.clear();
            let read = reader
                .read_until(b'\n', &mut buf)
                .map_err(|source| Error::Read {
                    file: name.to_owned(),
                    line: line + 1,
                    source,
                })?;
            if read == 0 {
                break;
            }
            line += 1;
            let mut bytes = buf.as_slice();
            if line == 1
                && let Some(rest) = bytes.strip_prefix("\u{feff}".as_bytes())
            {
                bytes = rest;
            }
            let text = std::str::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
                file: name.to_owned(),
                line,
            })?;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            values.push(parse_value(text, name, line, range)?);
        }
        if values.is_empty() {
            return Err(Error::Empty {
                file: name.to_owned(),
                what: " or holds only blank lines",
            }
            .into());
        }
        let description = describe_file(values.len() as u64, name, range);
        Ok(Self {
            values,
            range,
            description,
        })
    }

    /// Values already in `[0, 1]`, given in memory; errors name value `i` as line `i + 1` of
    /// `description`.
    ///
    /// # Errors
    ///
    /// [`ValuesError::Input`] if `values` is empty, [`ValuesError::NotFinite`] or
    /// [`ValuesError::OutOfRange`] for the first bad value.
    pub fn from_unit_values(
        values: Vec<f64>,
        description: impl Into<String>,
    ) -> Result<Self, ValuesError> {
        let description = description.into();
        if values.is_empty() {
            return Err(Error::Empty {
                file: description,
                what: "",
            }
            .into());
        }
        for (i, &value) in values.iter().enumerate() {
            check_value(value, &value.to_string(), &description, i as u64 + 1, None)?;
        }
        Ok(Self {
            values,
            range: None,
            description,
        })
    }

    /// `n` values drawn independently and uniformly from `[0, 1)` (multiples of `2^−53`) with
    /// ChaCha12 streams of `seed`, in parallel chunks, so the result depends only on `n` and
    /// `seed`.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn uniform(n: usize, seed: u64) -> Self {
        assert!(n > 0, "a population needs at least one client");
        let mut values = vec![0.0; n];
        values
            .par_chunks_mut(UNIFORM_CHUNK)
            .enumerate()
            .for_each(|(index, chunk)| {
                let mut rng = stream(seed, Purpose::Values, index as u64);
                for value in chunk {
                    *value = (rng.next_u64() >> 11) as f64 * (-53f64).exp2();
                }
            });
        Self {
            values,
            range: None,
            description: format!("{n} values drawn uniformly from [0, 1) with seed {seed}"),
        }
    }

    /// The number of clients.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there is no client; never true for loaded or generated values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Each client's value in `[0, 1]` (after rescaling).
    pub fn as_slice(&self) -> &[f64] {
        &self.values
    }

    /// The range the values were rescaled from, if any.
    pub fn range(&self) -> Option<ValueRange> {
        self.range
    }

    /// Maps a point of `[0, 1]` back to the input's units (the identity without a range).
    pub fn to_original(&self, y: f64) -> f64 {
        self.range.map_or(y, |range| range.from_unit(y))
    }

    /// Maps a value in the input's units into `[0, 1]` (the identity without a range; the
    /// result is clamped to `[0, 1]` with one).
    pub fn to_unit(&self, x: f64) -> f64 {
        self.range.map_or(x, |range| range.to_unit(x))
    }

    /// One line saying where the values came from.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The values sorted, for ground-truth quantiles and counts (metrics only).
    pub fn sorted(&self) -> SortedValues {
        let mut sorted = self.values.clone();
        sorted.par_sort_unstable_by(f64::total_cmp);
        SortedValues(sorted)
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Values")
            .field("clients", &self.values.len())
            .field("range", &self.range)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

/// Values in increasing order: the exact quantiles and counts that estimates are measured
/// against.
#[derive(Clone, Debug)]
pub struct SortedValues(Vec<f64>);

impl SortedValues {
    /// The empirical `q`-quantile: the `⌈q·n⌉`-th smallest value (the smallest for `q = 0`),
    /// the smallest `v` with at least `q·n` values `≤ v`.
    ///
    /// # Panics
    ///
    /// Unless `q ∈ [0, 1]`.
    pub fn quantile(&self, q: f64) -> f64 {
        assert!((0.0..=1.0).contains(&q), "quantile {q} not in [0, 1]");
        let n = self.0.len();
        let k = ((q * n as f64).ceil() as usize).clamp(1, n);
        self.0[k - 1]
    }

    /// The number of values below `x`.
    pub fn count_below(&self, x: f64) -> u64 {
        self.0.partition_point(|&v| v < x) as u64
    }

    /// The number of values in `[lo, hi)`.
    pub fn count_in(&self, lo: f64, hi: f64) -> u64 {
        self.count_below(hi).saturating_sub(self.count_below(lo))
    }

    /// The fraction of values below `x`.
    pub fn cdf_below(&self, x: f64) -> f64 {
        self.count_below(x) as f64 / self.0.len() as f64
    }

    /// The rank error of a quantile estimate: how far the share of values below `value` is
    /// from `quantile`.
    pub fn rank_error(&self, quantile: f64, value: f64) -> f64 {
        (self.cdf_below(value) - quantile).abs()
    }
}

/// How a file of `clients` values named `name`, read with `range`, is described.
pub(crate) fn describe_file(clients: u64, name: &str, range: Option<ValueRange>) -> String {
    match range {
        None => format!("{clients} values in [0, 1], one per non-blank line of {name}"),
        Some(r) => format!(
            "{clients} values in [{}, {}] rescaled to [0, 1], one per non-blank line of {name}",
            r.min(),
            r.max()
        ),
    }
}

/// Parses one non-blank, trimmed line.
pub(crate) fn parse_value(
    text: &str,
    file: &str,
    line: u64,
    range: Option<ValueRange>,
) -> Result<f64, ValuesError> {
    let value: f64 = text.parse().map_err(|_| ValuesError::NotANumber {
        file: file.to_owned(),
        line,
        found: quote(text),
    })?;
    check_value(value, text, file, line, range)?;
    Ok(range.map_or(value, |range| range.to_unit(value)))
}

/// Checks that `value` is finite and inside the range (`[0, 1]` without one).
fn check_value(
    value: f64,
    text: &str,
    file: &str,
    line: u64,
    range: Option<ValueRange>,
) -> Result<(), ValuesError> {
    if !value.is_finite() {
        return Err(ValuesError::NotFinite {
            file: file.to_owned(),
            line,
            found: quote(text),
        });
    }
    let (min, max) = range.map_or((0.0, 1.0), |r| (r.min(), r.max()));
    if !(min..=max).contains(&value) {
        return Err(ValuesError::OutOfRange {
            file: file.to_owned(),
            line,
            value,
            min,
            max,
            rescaling: range.is_some(),
        });
    }
    Ok(())
}

/// `text`, shortened to [`QUOTE_LIMIT`] characters.
fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE_LIMIT {
        text.to_owned()
    } else {
        let mut short: String = text.chars().take(QUOTE_LIMIT).collect();
        short.push('…');
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, range: Option<ValueRange>) -> Result<Values, ValuesError> {
        Values::from_reader(text.as_bytes(), "v.txt", range)
    }

    #[test]
    fn reads_numbers_skipping_blank_lines() {
        let v = read("\u{feff}0.5\r\n\n  1e-1 \n1\n0\n", None).unwrap();
        assert_eq!(v.as_slice(), &[0.5, 0.1, 1.0, 0.0]);
        assert_eq!(v.len(), 4);
        assert!(v.range().is_none());
        assert_eq!(v.to_original(0.25).to_bits(), 0.25_f64.to_bits());
    }

    #[test]
    fn errors_name_the_line() {
        let err = read("0.5\n\nabc\n", None).unwrap_err();
        assert_eq!(err.to_string(), "v.txt:3: expected a number, found \"abc\"");
        let err = read("0.5\nNaN\n", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "v.txt:2: expected a finite number, found NaN"
        );
        let err = read("0.5\n-inf\n", None).unwrap_err();
        assert!(matches!(err, ValuesError::NotFinite { line: 2, .. }));
        let err = read("1.5\n", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "v.txt:1: value 1.5 is outside [0, 1] (values must lie in [0, 1] unless a range to \
             rescale from is given)"
        );
        let range = ValueRange::new(10.0, 20.0).unwrap();
        let err = read("15\n25\n", Some(range)).unwrap_err();
        assert_eq!(err.to_string(), "v.txt:2: value 25 is outside [10, 20]");
        let err = read("\n \n", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "v.txt: no clients: the input is empty or holds only blank lines"
        );
        let err = read(&"9".repeat(100).replace('9', "x"), None).unwrap_err();
        assert!(err.to_string().ends_with("…\""), "{err}");
    }

    #[test]
    fn rescales_with_a_range() {
        let range = ValueRange::new(10.0, 20.0).unwrap();
        let v = read("10\n15\n20\n", Some(range)).unwrap();
        assert_eq!(v.as_slice(), &[0.0, 0.5, 1.0]);
        assert_eq!(v.to_original(0.25).to_bits(), 12.5_f64.to_bits());
        assert_eq!(v.to_unit(12.5).to_bits(), 0.25_f64.to_bits());
        assert!(ValueRange::new(1.0, 1.0).is_err());
        assert!(ValueRange::new(0.0, f64::INFINITY).is_err());
        assert!(ValueRange::new(-f64::MAX, f64::MAX).is_err());
    }

    #[test]
    fn missing_files_say_so() {
        let err = Values::from_file("/nonexistent/values.txt", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot open /nonexistent/values.txt: file not found"
        );
    }

    #[test]
    fn uniform_values_are_deterministic_and_uniform() {
        let a = Values::uniform(200_000, 5);
        assert_eq!(a.as_slice(), Values::uniform(200_000, 5).as_slice());
        assert_ne!(a.as_slice(), Values::uniform(200_000, 6).as_slice());
        let sorted = a.sorted();
        // Kolmogorov–Smirnov at α = 1e-6: D < sqrt(ln(2/α)/(2n)) ≈ 0.0060.
        let n = a.len() as f64;
        let d = (0..=1000)
            .map(|i| {
                let x = f64::from(i) / 1000.0;
                (sorted.cdf_below(x) - x).abs()
            })
            .fold(0.0, f64::max);
        assert!(d < ((2.0f64 / 1e-6).ln() / (2.0 * n)).sqrt(), "{d}");
        assert!(a.as_slice().iter().all(|&x| (0.0..1.0).contains(&x)));
    }

    #[test]
    fn empirical_quantiles_and_counts() {
        let v = Values::from_unit_values(vec![0.4, 0.1, 0.3, 0.2], "mem").unwrap();
        let s = v.sorted();
        assert_eq!(s.quantile(0.0).to_bits(), 0.1_f64.to_bits());
        assert_eq!(s.quantile(0.25).to_bits(), 0.1_f64.to_bits());
        assert_eq!(s.quantile(0.26).to_bits(), 0.2_f64.to_bits());
        assert_eq!(s.quantile(1.0).to_bits(), 0.4_f64.to_bits());
        assert_eq!(s.count_below(0.3), 2);
        assert_eq!(s.count_in(0.2, 0.4), 2);
        assert!(Values::from_unit_values(vec![0.5, 2.0], "mem").is_err());
        assert!(Values::from_unit_values(vec![], "mem").is_err());
    }
}
