//! What the plan page predicts a task releases: the release curve `P[released | true count
//! c]` of its sample-and-threshold rounds at the rate and threshold the server calibrated,
//! beside Laplace and Gaussian thresholding at the same `(ε, δ)`, every number from
//! [`tally_accounting::key_selection`].

use tally_accounting::key_selection::{
    KeySelection, curve_counts, gaussian_threshold, laplace_threshold,
};
use tally_accounting::{Guarantee, Neighbours};

use tally_protocol::ThresholdRounds;

/// The release probabilities whose counts the plan marks.
pub(super) const MARKED_PROBABILITIES: [f64; 2] = [0.5, 0.95];

/// The release probability whose count ends the curve's axis.
const AXIS_END_PROBABILITY: f64 = 0.999;

/// The most counts a curve is drawn at.
const CURVE_POINTS: u64 = 200;

/// One key selection's release curve.
pub(super) struct Curve {
    /// A short key naming the selection in the page (`sample-threshold`, `laplace`,
    /// `gaussian`).
    pub(super) key: &'static str,
    /// The selection and its parameters.
    pub(super) selection: KeySelection,
    /// The counts released with the probabilities of [`MARKED_PROBABILITIES`], `None` where
    /// no count up to [`tally_accounting::key_selection::MAX_RELEASE_POINT`] reaches one.
    pub(super) marked: [Option<u64>; 2],
    /// `(c, P[released | c])` from `c = 0` to [`ReleaseCurves::max_count`].
    pub(super) points: Vec<(u64, f64)>,
}

/// The release curves of one round of a task, sample-and-threshold's first.
pub(super) struct ReleaseCurves {
    /// How many such rounds the task runs (its levels).
    pub(super) rounds: u64,
    /// The `(ε, δ)` Laplace and Gaussian thresholding are calibrated for: the task's, split
    /// evenly over its rounds by basic composition when it runs several; `None` for a task
    /// under replace-one neighbours, since they are calibrated for add/remove neighbours and
    /// are then not drawn.
    pub(super) compared_at: Option<(f64, f64)>,
    /// The largest count drawn: where the last selection releases with probability 99.9%.
    pub(super) max_count: u64,
    /// The curves.
    pub(super) curves: Vec<Curve>,
}

/// The curves of a task whose rounds are `rounds` with guarantee `guarantee`.
pub(super) fn release_curves(rounds: &ThresholdRounds, guarantee: &Guarantee) -> ReleaseCurves {
    let params = *rounds.per_round.params();
    let levels = rounds.rounds.max(1) as u64;
    let compared_at = (guarantee.neighbours == Neighbours::AddRemove).then(|| {
        (
            guarantee.epsilon / levels as f64,
            guarantee.delta / levels as f64,
        )
    });
    let selections = [
        (
            "sample-threshold",
            Some(KeySelection::SampleThreshold(params)),
        ),
        (
            "laplace",
            compared_at
                .and_then(|(epsilon, delta)| laplace_threshold(epsilon, delta).ok())
                .map(KeySelection::Laplace),
        ),
        (
            "gaussian",
            compared_at
                .and_then(|(epsilon, delta)| gaussian_threshold(epsilon, delta).ok())
                .map(KeySelection::Gaussian),
        ),
    ];
    let selections: Vec<(&'static str, KeySelection)> = selections
        .into_iter()
        .filter_map(|(key, selection)| Some((key, selection?)))
        .collect();
    let max_count = selections
        .iter()
        .filter_map(|(_, s)| s.release_point(AXIS_END_PROBABILITY))
        .max()
        .unwrap_or(1);
    let counts = curve_counts(max_count, CURVE_POINTS);
    let curves = selections
        .into_iter()
        .map(|(key, selection)| Curve {
            key,
            selection,
            marked: MARKED_PROBABILITIES.map(|p| selection.release_point(p)),
            points: selection.release_curve(&counts),
        })
        .collect();
    ReleaseCurves {
        rounds: levels,
        compared_at,
        max_count,
        curves,
    }
}

impl Curve {
    /// The selection's name on the page.
    pub(super) fn name(&self) -> &'static str {
        match self.selection {
            KeySelection::SampleThreshold(_) => "Sample-and-threshold (as planned)",
            KeySelection::Laplace(_) => "Laplace thresholding",
            KeySelection::Gaussian(_) => "Gaussian thresholding",
        }
    }

    /// The selection's parameters in symbols.
    pub(super) fn parameters(&self) -> String {
        match self.selection {
            KeySelection::SampleThreshold(params) => format!(
                "p_s = {:.4}, τ = {}",
                params.sampling_rate(),
                params.threshold()
            ),
            KeySelection::Laplace(laplace) => {
                format!("b = {:.3}, T = {:.2}", laplace.scale, laplace.threshold)
            }
            KeySelection::Gaussian(gaussian) => {
                format!("σ = {:.3}, T = {:.2}", gaussian.sigma, gaussian.threshold)
            }
        }
    }
}
