//! A histogram over a public domain (the central, local and shuffle mechanisms that release an
//! estimate for every domain element): calibrated through the registry, simulated as its
//! round, and published as the document `tally histogram --mechanism M --json` prints and
//! `tally.histogram(mechanism=...)` returns.

use tally_accounting::Guarantee;
use tally_accounting::Neighbours;
use tally_accounting::naming::Parameter;
use tally_accounting::sample_threshold::Analysis;
use tally_accounting::shuffle::ShuffleBound;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_messages::{
    DomainBody, DomainElementBody, DomainHistogramMechanism, DomainHistogramRelease, GuaranteeBody,
    PrivacyTarget,
};
use tally_protocol::diagnosis::delta_warning;
use tally_protocol::{
    BuildDomainRound, DomainRoundVisitor, FederatedDomainRound, ShuffleCalibration,
};

use crate::{DomainMechanism, run_domain_histogram};

/// Why a histogram over a public domain was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DomainReleaseError {
    /// The options do not fit the mechanism, in words naming the fix.
    #[error("{0}")]
    Invalid(String),
    /// The mechanism could not be calibrated or described.
    #[error(transparent)]
    Mechanism(#[from] tally_core::Error),
}

/// The setting every mechanism is calibrated for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DomainSetting {
    /// The public domain.
    pub map: DomainMap,
    /// The number of clients (the shuffle mechanisms are calibrated for them).
    pub clients: u64,
    /// The target `ε`.
    pub epsilon: f64,
    /// The target `δ`.
    pub delta: f64,
    /// The neighbour relation of the central mechanisms.
    pub neighbours: Neighbours,
    /// The amplification bound of shuffled GRR.
    pub bound: ShuffleBound,
    /// The accuracy failure probability of Ghazi et al.'s Count-Min protocol.
    pub beta: f64,
}

/// Simulates a registered mechanism as its round, as `tally histogram` runs it.
pub struct Simulated;

impl DomainRoundVisitor for Simulated {
    type Output = DomainMechanism;

    fn visit<M, R>(self, mechanism: M, round: R) -> DomainMechanism
    where
        M: DomainHistogram + 'static,
        R: FederatedDomainRound,
    {
        DomainMechanism::round(mechanism, round)
    }
}

/// `mechanism` calibrated for `setting` through the registry, handed to `visitor`; a
/// mechanism that publishes coins draws them from `public_coins`.
///
/// # Errors
///
/// The calibration's error where the setting is outside what the mechanism accepts.
pub fn calibrate_with<V: DomainRoundVisitor>(
    mechanism: DomainHistogramMechanism,
    setting: &DomainSetting,
    public_coins: u64,
    visitor: V,
) -> Result<V::Output, tally_core::Error> {
    let privacy = PrivacyTarget {
        epsilon: setting.epsilon,
        delta: setting.delta,
        neighbours: setting.neighbours,
        analysis: Analysis::Tight,
    };
    let shuffle = ShuffleCalibration {
        clients: setting.clients,
        bound: setting.bound,
        beta: setting.beta,
        public_coins,
    };
    mechanism.build(setting.map, &privacy, shuffle, visitor)
}

/// The neighbour relation the guarantee of `mechanism`, asked for under `asked`, is stated
/// under: `asked` for a central mechanism, replace-one for a local or shuffle one. Known before
/// any data is read, so that a budget kept under another relation refuses the release first.
pub fn guarantee_neighbours(mechanism: DomainHistogramMechanism, asked: Neighbours) -> Neighbours {
    if mechanism.is_central() {
        asked
    } else {
        Neighbours::ReplaceOne
    }
}

/// The public domain of `domain` (integer items in `[0, B)`) or `buckets` (items hashed into
/// `B` buckets): exactly one of them, `B ≥ 2`, for the mechanism named `mechanism`.
///
/// # Errors
///
/// [`DomainReleaseError::Invalid`] for neither or both, or a size below 2.
pub fn public_domain(
    domain: Option<u32>,
    buckets: Option<u32>,
    mechanism: &str,
) -> Result<DomainMap, DomainReleaseError> {
    let map = match (domain, buckets) {
        (Some(size), None) => DomainMap::Integers(size),
        (None, Some(size)) => DomainMap::Buckets(size),
        _ => {
            return Err(DomainReleaseError::Invalid(format!(
                "{} needs a public domain: give {} (integer items in [0, B)) or {} (hash items \
                 into B buckets); a domain read off the data would reveal which items occur \
                 ({} needs none)",
                Parameter("mechanism").with_choice(mechanism),
                Parameter("domain").with("B"),
                Parameter("buckets").with("B"),
                Parameter("mechanism").with_choice("sample-threshold"),
            )));
        }
    };
    if map.size() < 2 {
        return Err(DomainReleaseError::Invalid(format!(
            "invalid domain size {}: expected at least 2",
            map.size()
        )));
    }
    Ok(map)
}

/// The options of the mechanisms over the items clients hold that were given to a mechanism
/// over a public domain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemsOptions {
    /// A sampling key.
    pub sampling_key: bool,
    /// A bound on each client's items.
    pub max_items_per_client: bool,
    /// A fixed sampling rate or threshold.
    pub sampling_rate_or_threshold: bool,
}

/// Refuses the options of sample-and-threshold and the partition selections for a mechanism
/// over a public domain.
///
/// # Errors
///
/// [`DomainReleaseError::Invalid`] naming the first option given and where it applies.
pub fn refuse_items_options(given: ItemsOptions) -> Result<(), DomainReleaseError> {
    let refused = if given.sampling_key {
        format!(
            "{} applies to {} and the partition selections only",
            Parameter("sampling_key"),
            Parameter("mechanism").with_choice("sample-threshold")
        )
    } else if given.max_items_per_client {
        format!(
            "{} applies to {}, laplace-threshold, gaussian-threshold and truncated-geometric \
             only",
            Parameter("max_items_per_client"),
            Parameter("mechanism").with_choice("sample-threshold")
        )
    } else if given.sampling_rate_or_threshold {
        format!(
            "{} and {} apply to {} only",
            Parameter("sampling_rate"),
            Parameter("threshold"),
            Parameter("mechanism").with_choice("sample-threshold")
        )
    } else {
        return Ok(());
    };
    Err(DomainReleaseError::Invalid(refused))
}

/// Refuses a failure probability (`given`) for a mechanism other than Count-Min.
///
/// # Errors
///
/// [`DomainReleaseError::Invalid`] naming the parameter.
pub fn check_failure_probability(
    given: bool,
    mechanism: DomainHistogramMechanism,
) -> Result<(), DomainReleaseError> {
    if given && mechanism != DomainHistogramMechanism::GhaziCountMin {
        return Err(DomainReleaseError::Invalid(format!(
            "{} applies to {} only",
            Parameter("failure_probability"),
            Parameter("mechanism").with_choice("ghazi-count-min")
        )));
    }
    Ok(())
}

/// `mechanism` calibrated for `setting`, as its registered round; a mechanism that publishes
/// coins draws them from `seed`.
///
/// # Errors
///
/// The calibration's error; Count-Min's says how fewer hash rows would fit.
pub fn build_mechanism(
    mechanism: DomainHistogramMechanism,
    setting: &DomainSetting,
    seed: u64,
) -> Result<DomainMechanism, DomainReleaseError> {
    calibrate_with(mechanism, setting, seed, Simulated).map_err(|e| match mechanism {
        DomainHistogramMechanism::GhaziCountMin => DomainReleaseError::Invalid(format!(
            "{e}; fewer hash rows need fewer users: raise {} (now {}) or use a smaller domain",
            Parameter("failure_probability"),
            setting.beta
        )),
        _ => e.into(),
    })
}

/// How a domain histogram is run and shown.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DomainRun {
    /// The seed of the mechanism's randomness (and of its public coins).
    pub seed: u64,
    /// The seed to show, `None` when the user gave none.
    pub shown_seed: Option<u64>,
    /// The fraction of colluding devices the shuffle guarantees are also stated at.
    pub colluding_fraction: f64,
    /// Raise negative estimates to 0.
    pub clamp: bool,
    /// Publish each element's true count and the mean absolute error (a simulation's truth).
    pub truth: bool,
    /// Publish only this many elements, by decreasing estimate (all, in element order, if
    /// `None`).
    pub top: Option<usize>,
}

/// A released domain histogram: its document and what a table of it shows.
#[derive(Clone, Debug)]
pub struct DomainReleased {
    /// The document.
    pub document: DomainHistogramRelease,
    /// The guarantee of the release.
    pub guarantee: Guarantee,
    /// The guarantee of one report, for the mechanisms that randomize on the client.
    pub local_guarantee: Option<Guarantee>,
    /// The estimate of every element.
    pub estimates: Vec<f64>,
    /// The elements by decreasing estimate.
    pub order: Vec<u32>,
    /// The mean absolute error over the domain.
    pub mean_absolute_error: f64,
}

/// Runs `mechanism` calibrated for `setting` on `truth` (the number of clients holding each
/// element of `setting.map`'s domain, from clients described by `description`).
///
/// # Errors
///
/// The calibration's error, and a colluding fraction the mechanism cannot state.
pub fn release(
    mechanism: DomainHistogramMechanism,
    setting: &DomainSetting,
    truth: &[u64],
    description: String,
    run: &DomainRun,
) -> Result<DomainReleased, DomainReleaseError> {
    let built = build_mechanism(mechanism, setting, run.seed)?;
    let described = built.describe();
    let mut estimates = run_domain_histogram(&built, truth, run.seed);
    if run.clamp {
        for e in &mut estimates {
            *e = e.max(0.0);
        }
    }
    let guarantee = described.guarantee();
    let collusion = described.collusion(run.colluding_fraction)?;
    let local_guarantee = described.local_guarantee();
    let cost = described.message_cost();
    let map = setting.map;
    let mean_absolute_error = estimates
        .iter()
        .zip(truth)
        .map(|(e, &t)| (e - t as f64).abs())
        .sum::<f64>()
        / f64::from(map.size());
    let mut order: Vec<u32> = (0..map.size()).collect();
    order.sort_by(|&a, &b| estimates[b as usize].total_cmp(&estimates[a as usize]));
    let shown_truth = run.truth.then_some(truth);
    let element = |x: u32| DomainElementBody {
        item: x,
        estimate: estimates[x as usize],
        true_count: shown_truth.map(|truth| truth[x as usize]),
    };
    let items = match run.top {
        Some(top) => order.iter().take(top).map(|&x| element(x)).collect(),
        None => (0..map.size()).map(element).collect(),
    };
    let document = DomainHistogramRelease {
        mechanism: described.name().to_owned(),
        model: guarantee.model.name().to_owned(),
        guarantee: GuaranteeBody::with_collusion(&guarantee, collusion.as_ref()),
        local_guarantee: local_guarantee.as_ref().map(Into::into),
        local_epsilon: local_guarantee.as_ref().map(|g| g.epsilon),
        target_delta: setting.delta,
        domain: DomainBody {
            size: map.size(),
            mapping: map.to_string(),
        },
        messages_per_client: cost.map(|c| c.messages_per_client),
        bits_per_message: cost.map(|c| c.bits_per_message),
        clamped: run.clamp,
        input: description,
        clients: setting.clients,
        items,
        seed: run.shown_seed,
        mean_absolute_error: run.truth.then_some(mean_absolute_error),
        warnings: delta_warning(guarantee.delta, setting.clients)
            .into_iter()
            .collect(),
    };
    Ok(DomainReleased {
        document,
        guarantee,
        local_guarantee,
        estimates,
        order,
        mean_absolute_error,
    })
}
