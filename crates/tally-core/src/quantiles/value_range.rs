//! The range values are rescaled from into `[0, 1]`, the domain of the quantile tasks.

use crate::Error;

/// The range `[min, max]` that values are rescaled from into `[0, 1]`: the simulator reads a
/// file of numbers through it, and a federated device maps its own value through it before
/// answering a quantile round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueRange {
    min: f64,
    max: f64,
}

impl ValueRange {
    /// The range `[min, max]`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] naming `min` unless it is finite, else naming `max` unless
    /// it is finite, above `min`, and `max − min` is finite.
    pub fn new(min: f64, max: f64) -> Result<Self, Error> {
        if !min.is_finite() {
            Err(Error::invalid("min", min, "a finite number"))
        } else if max.is_finite() && min < max && (max - min).is_finite() {
            Ok(Self { min, max })
        } else {
            Err(Error::invalid(
                "max",
                max,
                "a finite number above min (min < max, less than 1.8e308 apart)",
            ))
        }
    }

    /// The lower end.
    pub fn min(&self) -> f64 {
        self.min
    }

    /// The upper end.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Whether `x` lies in `[min, max]`.
    pub fn contains(&self, x: f64) -> bool {
        (self.min..=self.max).contains(&x)
    }

    /// `(x − min)/(max − min)`, clamped to `[0, 1]` (against rounding, and for a device's value
    /// outside the range, which counts at the nearer end).
    pub fn to_unit(&self, x: f64) -> f64 {
        ((x - self.min) / (self.max - self.min)).clamp(0.0, 1.0)
    }

    /// `min + y·(max − min)`, clamped to `[min, max]` against rounding.
    pub fn from_unit(&self, y: f64) -> f64 {
        (self.min + y * (self.max - self.min)).clamp(self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_both_ways_and_clamps() {
        let range = ValueRange::new(100.0, 200.0).unwrap();
        let unit = |x| range.to_unit(x).to_bits();
        assert_eq!(unit(150.0), 0.5_f64.to_bits());
        assert_eq!(unit(50.0), 0.0_f64.to_bits());
        assert_eq!(unit(250.0), 1.0_f64.to_bits());
        assert_eq!(range.from_unit(0.25).to_bits(), 125.0_f64.to_bits());
        assert!(range.contains(200.0) && !range.contains(200.5));
    }

    #[test]
    fn refuses_empty_and_infinite_ranges() {
        for (min, max, named) in [
            (1.0, 1.0, "invalid max = 1"),
            (2.0, 1.0, "invalid max = 1"),
            (f64::NAN, 1.0, "invalid min = NaN"),
            (-f64::MAX, f64::MAX, "invalid max = 1797"),
        ] {
            let error = ValueRange::new(min, max).unwrap_err().to_string();
            assert!(error.starts_with(named), "{error}");
        }
    }
}
