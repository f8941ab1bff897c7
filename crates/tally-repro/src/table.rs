//! Tabular outputs: CSV files of serializable rows, and summaries over repetitions.

use std::path::Path;

use serde::Serialize;

use crate::Error;

/// Writes `rows` as a CSV file with a header row taken from the field names of `T`.
///
/// Optional fields (`Option`) are written as empty cells; floats use Rust's shortest
/// round-trip form, so the file is byte-identical for identical rows.
///
/// # Errors
///
/// [`Error::Csv`] if the file cannot be created or written.
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), Error> {
    let csv_error = |source| Error::Csv {
        path: path.to_owned(),
        source,
    };
    let mut writer = csv::Writer::from_path(path).map_err(csv_error)?;
    for row in rows {
        writer.serialize(row).map_err(csv_error)?;
    }
    writer.flush().map_err(Error::io(path))
}

/// The mean of repeated measurements with its standard error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MeanSe {
    /// The sample mean.
    pub mean: f64,
    /// The standard error of the mean: the sample standard deviation (with `n − 1`) over
    /// `√n`; 0 for a single value.
    pub se: f64,
    /// The number of values.
    pub n: usize,
}

impl MeanSe {
    /// The mean and standard error of `values`, or `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let se = if n > 1 {
            let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt() / (n as f64).sqrt()
        } else {
            0.0
        };
        Some(Self { mean, se, n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_standard_error() {
        let s = MeanSe::of(&[1.0, 2.0, 3.0, 4.0]).expect("values");
        assert!((s.mean - 2.5).abs() < 1e-12);
        // sd = sqrt(5/3), se = sd/2.
        assert!((s.se - (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(MeanSe::of(&[7.0]).map(|s| s.se), Some(0.0));
        assert_eq!(MeanSe::of(&[]), None);
    }
}
