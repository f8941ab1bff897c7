//! Private histograms.

mod central_noise;
mod domain;
mod gaussian;
mod items_per_client;
mod keyed_sample_threshold;
mod laplace;
mod partition_selection;
mod round_plan;
mod sample_and_threshold;

pub use central_noise::{CentralNoise, CentralNoiseHistogram};
pub(crate) use domain::check_map;
pub use domain::{DomainHistogram, DomainMap, MessageCost, bucket};
pub use gaussian::GaussianHistogram;
pub use laplace::LaplaceHistogram;
pub use partition_selection::{
    PartitionSelection, SelectedItem, SelectedKey, SelectionAggregator, SelectionRelease,
};
pub use round_plan::{RoundPlan, compose_sample_threshold_rounds, plan_rounds};
pub use sample_and_threshold::{
    ReleasedCount, SampleThreshold, SampleThresholdAggregator, SampleThresholdQuery,
    SampleThresholdRelease,
};
