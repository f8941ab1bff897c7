//! Private histograms.

mod sample_and_threshold;

pub use sample_and_threshold::{
    ReleasedCount, SampleThreshold, SampleThresholdAggregator, SampleThresholdQuery,
    SampleThresholdRelease,
};
