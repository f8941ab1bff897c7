//! Private histograms.

mod round_plan;
mod sample_and_threshold;

pub use round_plan::{RoundPlan, plan_rounds};
pub use sample_and_threshold::{
    ReleasedCount, SampleThreshold, SampleThresholdAggregator, SampleThresholdQuery,
    SampleThresholdRelease,
};
