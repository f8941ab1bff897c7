//! What a device reports in each kind of sample-and-threshold round: its item, the prefix of
//! its word at a prefix-tree level ([`PrefixRound`]), the bucket of its number at a level of a
//! tree, or the side of a split point its number lies on.

use super::ReportFeature;
use crate::heavy_hitters::PrefixRound;
use crate::quantiles::{ThresholdQuery, TreeShape, ValueRange};

/// The item itself (the S&T histogram's round).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WholeItem;

impl ReportFeature for WholeItem {
    type Input = str;
    type Key = String;

    fn key(&self, item: &str) -> Option<String> {
        Some(item.to_owned())
    }

    fn admits(&self, _: &String) -> bool {
        true
    }
}

impl ReportFeature for PrefixRound {
    type Input = str;
    type Key = String;

    /// [`PrefixRound::report`].
    fn key(&self, word: &str) -> Option<String> {
        self.report(word)
    }

    /// [`PrefixRound::admits`].
    fn admits(&self, prefix: &String) -> bool {
        PrefixRound::admits(self, prefix)
    }
}

/// The bucket of a device's number among the `β^level` equal buckets of one level of a tree,
/// the number first mapped into `[0, 1]` through `range` (and clamped to it; `[0, 1]` itself
/// when `None`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketOfLevel {
    /// The tree.
    pub shape: TreeShape,
    /// The level, `1..=L`.
    pub level: u32,
    /// The range the numbers are rescaled from; `[0, 1]` when `None`.
    pub range: Option<ValueRange>,
}

impl ReportFeature for BucketOfLevel {
    type Input = f64;
    type Key = u32;

    fn key(&self, x: &f64) -> Option<u32> {
        Some(self.shape.bucket(self.level, to_unit(self.range, *x)))
    }

    fn admits(&self, bucket: &u32) -> bool {
        u64::from(*bucket) < self.shape.buckets(self.level)
    }
}

/// Which side of a split point a device's number lies on, mapped into `[0, 1]` through `range`
/// (and clamped to it; `[0, 1]` itself when `None`): [`ThresholdQuery::AT_OR_BELOW`] or [`ThresholdQuery::ABOVE`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SideOfSplit {
    /// The split point, in `[0, 1]`.
    pub threshold: f64,
    /// The range the numbers are rescaled from; `[0, 1]` when `None`.
    pub range: Option<ValueRange>,
}

impl ReportFeature for SideOfSplit {
    type Input = f64;
    type Key = u32;

    fn key(&self, x: &f64) -> Option<u32> {
        Some(ThresholdQuery::split(
            self.threshold,
            to_unit(self.range, *x),
        ))
    }

    fn admits(&self, side: &u32) -> bool {
        (*side as usize) < ThresholdQuery::BUCKETS
    }
}

/// `x` mapped into `[0, 1]` through `range`, or clamped to `[0, 1]` without one.
pub(crate) fn to_unit(range: Option<ValueRange>, x: f64) -> f64 {
    range.map_or(x.clamp(0.0, 1.0), |range| range.to_unit(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_lies_below_the_levels_count() {
        let feature = BucketOfLevel {
            shape: TreeShape::new(4, 3).unwrap(),
            level: 2,
            range: Some(ValueRange::new(100.0, 200.0).unwrap()),
        };
        // 170 is 0.7 of the range, in [11/16, 12/16); numbers outside clamp to the ends.
        assert_eq!(feature.key(&170.0), Some(11));
        assert_eq!(feature.key(&-5.0), Some(0));
        assert_eq!(feature.key(&1e9), Some(15));
        assert!(feature.admits(&15));
        assert!(!feature.admits(&16));
    }

    #[test]
    fn a_split_has_two_sides() {
        let feature = SideOfSplit {
            threshold: 0.375,
            range: Some(ValueRange::new(0.0, 200.0).unwrap()),
        };
        assert_eq!(feature.key(&75.0), Some(ThresholdQuery::AT_OR_BELOW));
        assert_eq!(feature.key(&75.1), Some(ThresholdQuery::ABOVE));
        assert!(feature.admits(&1));
        assert!(!feature.admits(&2));
    }
}
