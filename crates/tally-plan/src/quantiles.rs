//! The numbers of `tally plan quantiles --report DIR`: the release curve and relative error of
//! the sample-and-threshold round every level runs, beside Laplace and Gaussian thresholding at
//! the level's share of the release's `(ε, δ)` (add/remove neighbours), what the tree's levels
//! resolve, with a population of numbers the probability that each level's buckets are
//! released, and a summary in words. `tally` renders them as `index.html`; [`QuantilesReport::document`] is
//! `plan.json`.
//!
//! # The prediction
//!
//! Level `ℓ` of a hierarchical histogram releases the bucket `b` of `c_b` values when at least
//! `τ` of them are sampled, each with probability `p_s` and fresh coins per level, so
//! `P[released b] = P[Bin(c_b, p_s) ≥ τ]`, exact, and the buckets of a level are released
//! independently (they hold different clients). The expected number of buckets released and
//! the expected share of the values in released buckets are sums of these, exact; the
//! probability that every non-empty bucket of a level is released is their product, exact.

use std::collections::HashMap;

use serde_json::{Value, json};
use tally_accounting::key_selection::KeySelection;
use tally_protocol::shown::PrivacyPair;

use crate::key_selection::{
    NAMES, RoundCurves, count_text, level_share, noise_based, parameters_text, sweep_epsilons,
};
use tally_core::quantiles::TreeShape;
use tally_sim::CountedValues;
use tally_sim::values_release::{QuantileMethod, QuantilesPlan, ValuesSettings};

/// What one level of a hierarchical histogram is expected to release on a population.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelPrediction {
    /// The level, from 1.
    pub level: u32,
    /// The buckets of the level that hold at least one value.
    pub occupied: u64,
    /// The expected number of buckets released, `Σ_b P[released b]`.
    pub expected_released: f64,
    /// The expected share of the values whose bucket is released, `Σ_b c_b·P[released b] / n`.
    pub expected_share: f64,
    /// The probability that every occupied bucket is released, `Π_b P[released b]`.
    pub all_released: f64,
}

/// The population of numbers the report predicts on.
#[derive(Clone, Debug, PartialEq)]
pub struct ValuesPrediction {
    /// What the population is.
    pub description: String,
    /// The number of values (one per client).
    pub clients: u64,
    /// One prediction per level, level 1 first.
    pub levels: Vec<LevelPrediction>,
    /// The same bound over a sweep of `ε`, by increasing `ε`.
    pub sweep: Vec<SweepPoint>,
}

/// The population sweep at one `ε`: the release planned again for it, and each selection's
/// [`suppressed_share_bound`] when every level runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// The `ε` planned for.
    pub epsilon: f64,
    /// Sample-and-threshold as planned at `ε`, then Laplace and Gaussian thresholding at the
    /// level's share of that plan's guarantee ([`level_share`]): each one's name and bound,
    /// `None` where it has no parameters (or is not compared, under replace-one neighbours).
    pub bounds: Vec<(&'static str, Option<f64>)>,
}

impl ValuesPrediction {
    /// The expected share of the values in suppressed buckets, summed over the levels: see
    /// [`suppressed_share_bound`].
    pub fn suppressed_share_bound(&self) -> f64 {
        suppressed_share_bound(&self.levels)
    }
}

/// The expected share of the values in suppressed buckets, summed over `levels`: a bound on
/// the expected share of the values a rank (and so a quantile's rank) misses through
/// suppressed buckets, since a rank reads each value through at most one bucket per level.
pub fn suppressed_share_bound(levels: &[LevelPrediction]) -> f64 {
    levels.iter().map(|l| 1.0 - l.expected_share).sum()
}

/// The bound of [`suppressed_share_bound`] for each `ε` of [`sweep_epsilons`] around
/// `settings.epsilon`: the release planned again at that `ε` (as `plan` was, with `method`
/// and `searches`), and the noise-based selections at its level's share.
fn sweep(settings: &ValuesSettings, plan: &QuantilesPlan, leaves: &[u64]) -> Vec<SweepPoint> {
    let bound = |selection: &KeySelection| {
        suppressed_share_bound(&predict_levels(leaves, plan.branching, selection))
    };
    sweep_epsilons(settings.epsilon)
        .into_iter()
        .map(|epsilon| {
            let at = ValuesSettings {
                epsilon,
                ..*settings
            };
            let planned = QuantilesPlan::solve(&at, plan.method, plan.searches).ok();
            let round = planned
                .as_ref()
                .map(|p| KeySelection::SampleThreshold(*p.rounds.per_round.params()));
            let compared = planned
                .as_ref()
                .and_then(|p| {
                    let g = &p.guarantee;
                    level_share(g.epsilon, g.delta, p.rounds.rounds as u64, g.neighbours)
                })
                .map_or([None, None], |(e, d)| noise_based(e, d));
            let bounds = std::iter::once(round)
                .chain(compared)
                .zip([NAMES[0], NAMES[2], NAMES[3]])
                .map(|(selection, name)| (name, selection.as_ref().map(bound)))
                .collect();
            SweepPoint { epsilon, bounds }
        })
        .collect()
}

/// Predicts what each level of a tree of `branching` over the counted `leaves` (the number of
/// values in each finest bucket, in order) releases when every level runs `selection`.
///
/// # Panics
///
/// If the number of leaves is not a power of `branching` (a tree's leaves are).
pub fn predict_levels(
    leaves: &[u64],
    branching: u32,
    selection: &KeySelection,
) -> Vec<LevelPrediction> {
    let beta = branching as usize;
    let clients: u64 = leaves.iter().sum();
    let mut probabilities: HashMap<u64, f64> = HashMap::new();
    let mut release = |count: u64| {
        *probabilities
            .entry(count)
            .or_insert_with(|| selection.release_probability(count))
    };
    let mut levels = Vec::new();
    let mut buckets = leaves.to_vec();
    while buckets.len() > 1 {
        let (mut occupied, mut released, mut counted, mut all) = (0, 0.0, 0.0, 1.0);
        for &count in buckets.iter().filter(|&&c| c > 0) {
            let p = release(count);
            occupied += 1;
            released += p;
            counted += count as f64 * p;
            all *= p;
        }
        levels.push(LevelPrediction {
            level: 0,
            occupied,
            expected_released: released,
            expected_share: if clients == 0 {
                0.0
            } else {
                counted / clients as f64
            },
            all_released: all,
        });
        assert_eq!(
            buckets.len() % beta,
            0,
            "leaves are a power of the branching"
        );
        buckets = buckets.chunks(beta).map(|c| c.iter().sum()).collect();
    }
    levels.reverse();
    for (level, prediction) in (1..).zip(&mut levels) {
        prediction.level = level;
    }
    levels
}

/// Everything the quantiles report shows.
#[derive(Clone, Debug)]
pub struct QuantilesReport {
    /// The plan.
    pub plan: QuantilesPlan,
    /// The round every level runs: its marked counts, release curve and relative error, beside
    /// the noise-based selections at the level's share.
    pub level: RoundCurves,
    /// The prediction on a population of numbers (hierarchical histograms only).
    pub population: Option<ValuesPrediction>,
    /// The plain-language summary.
    pub summary: String,
}

/// A population of numbers counted in the plan's tree.
#[derive(Clone, Copy, Debug)]
pub struct KnownValues<'a> {
    /// What it is.
    pub description: &'a str,
    /// The number of values in each leaf of the tree, in order.
    pub leaves: &'a [u64],
}

/// Why a population of numbers cannot be predicted on for a plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KnownValuesRefused {
    /// The plan is a binary search, whose rounds depend on the earlier ones' releases.
    #[error(
        "values predict a hierarchical histogram's releases: a binary search's rounds depend on \
         the earlier ones"
    )]
    NotHierarchical,
    /// The plan's tree has too many leaves to count the values in.
    #[error("a tree of {leaves} leaves is too large to count the values in")]
    TooManyLeaves {
        /// The tree's leaves.
        leaves: u64,
    },
    /// The plan's tree is not one.
    #[error(transparent)]
    Tree(#[from] tally_core::Error),
}

/// The tree that values are counted in to predict `plan`'s releases on them.
///
/// # Errors
///
/// [`KnownValuesRefused`] if the plan's releases cannot be predicted on values.
pub fn known_values_tree(plan: &QuantilesPlan) -> Result<TreeShape, KnownValuesRefused> {
    if plan.method != QuantileMethod::Hierarchical {
        return Err(KnownValuesRefused::NotHierarchical);
    }
    let shape = TreeShape::new(plan.branching, plan.levels)?;
    if !CountedValues::fits(shape) {
        return Err(KnownValuesRefused::TooManyLeaves {
            leaves: shape.leaves(),
        });
    }
    Ok(shape)
}

/// Builds the report of `plan`, planned from `settings`, predicting on `values` (counted in
/// the tree of [`known_values_tree`]).
pub fn build(
    plan: QuantilesPlan,
    settings: &ValuesSettings,
    values: Option<KnownValues<'_>>,
) -> QuantilesReport {
    let selection = KeySelection::SampleThreshold(*plan.rounds.per_round.params());
    let guarantee = &plan.guarantee;
    let level = RoundCurves::new(
        "S&T per level",
        selection,
        level_share(
            guarantee.epsilon,
            guarantee.delta,
            plan.rounds.rounds as u64,
            guarantee.neighbours,
        ),
    );
    let population = values.map(|known| ValuesPrediction {
        description: known.description.to_owned(),
        clients: known.leaves.iter().sum(),
        levels: predict_levels(known.leaves, plan.branching, &selection),
        sweep: sweep(settings, &plan, known.leaves),
    });
    let summary = summary(&plan, &level, population.as_ref());
    QuantilesReport {
        plan,
        level,
        population,
        summary,
    }
}

/// The plain-language summary.
fn summary(
    plan: &QuantilesPlan,
    curves: &RoundCurves,
    population: Option<&ValuesPrediction>,
) -> String {
    let level = curves.round();
    let guarantee = &plan.guarantee;
    let mut text = format!(
        "The release is {}-DP over {} sample-and-threshold rounds ({}). \
         Each bucket needs about {} values in its range to be released half the time and {} \
         to be released 95% of the time",
        PrivacyPair(guarantee.epsilon, guarantee.delta),
        plan.rounds.rounds,
        parameters_text(&level.selection),
        count_text(level.marked[0]),
        count_text(level.marked[1]),
    );
    if let Some(error) = level.marked[1].and_then(|c| level.selection.relative_error(c)) {
        text += &format!(
            "; a released bucket of {} values is estimated within {:.1}% on average",
            count_text(level.marked[1]),
            100.0 * error
        );
    }
    text += &match plan.method {
        QuantileMethod::Hierarchical => format!(
            ". With {} levels of branching {} the finest bucket is 1/{}^{} = {:.3e} of the \
             range, and every quantile is read from the same tree.",
            plan.levels,
            plan.branching,
            plan.branching,
            plan.levels,
            plan.bucket_width(plan.levels)
        ),
        QuantileMethod::BinarySearch => format!(
            ". Each of the {} binary searches (one per quantile) halves its interval {} times, \
             to 1/2^{} = {:.3e} of the range; a round is answered only when the values on \
             its side of the split are that many.",
            plan.searches,
            plan.levels,
            plan.levels,
            plan.bucket_width(plan.levels)
        ),
    };
    text += &curves.comparison_text("values");
    if let Some(prediction) = population
        && let (Some(first), Some(last)) = (prediction.levels.first(), prediction.levels.last())
    {
        text += &format!(
            " On {} ({} values), level 1 is expected to count {:.1}% of the values and level \
             {} {:.1}%; the suppressed shares summed over the levels, {:.1}%, bound the \
             expected share of the values a quantile's rank misses through suppressed buckets.",
            prediction.description,
            prediction.clients,
            100.0 * first.expected_share,
            last.level,
            100.0 * last.expected_share,
            100.0 * prediction.suppressed_share_bound(),
        );
    }
    text
}

impl QuantilesReport {
    /// `plan.json`: the plan's `--json` document and every number the page shows.
    pub fn document(&self) -> Value {
        let population = self.population.as_ref().map(|p| {
            json!({
                "description": p.description,
                "clients": p.clients,
                "suppressed_share_bound": p.suppressed_share_bound(),
                "levels": p.levels.iter().map(|l| json!({
                    "level": l.level,
                    "occupied_buckets": l.occupied,
                    "expected_released": l.expected_released,
                    "expected_share": l.expected_share,
                    "all_released": l.all_released,
                })).collect::<Vec<_>>(),
                "sweep": p.sweep.iter().map(|point| json!({
                    "epsilon": point.epsilon,
                    "suppressed_share_bound": point.bounds.iter().map(|(name, bound)| json!({
                        "name": name,
                        "bound": bound,
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "plan": self.plan.document(),
            "per_level": self.level.document(),
            "population": population,
            "summary": self.summary,
        })
    }
}
