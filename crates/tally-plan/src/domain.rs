//! The numbers of `tally plan histogram`: each mechanism over a public domain calibrated for the
//! same `(ε, δ)`, domain and clients, with the error of one element's estimate across counts
//! (from the mechanism's [`ErrorLaw`]), and with a known population the predicted mean absolute
//! error over a sweep of `ε`, beside sample-and-threshold's. `tally` renders them; the
//! documents here are `--json` and `plan.json`.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tally_accounting::key_selection::{KeySelection, PopulationUtility, population_utility};
use tally_accounting::sample_threshold::{self, Analysis, PlanTarget};
use tally_accounting::{ErrorLaw, EstimateError, Guarantee, TrustModel};
use tally_core::histogram::{DomainHistogram, MessageCost};
use tally_messages::{DomainHistogramMechanism, GuaranteeBody};
use tally_protocol::shown::PrivacyPair;
use tally_protocol::{DomainRoundVisitor, FederatedDomainRound};

pub use tally_sim::domain_release::{DomainSetting, Simulated, calibrate_with};

use crate::key_selection::SWEEP_EPSILONS;

/// The mechanisms in the order the report compares them: central, shuffle, local.
pub const COMPARED: [DomainHistogramMechanism; 12] = [
    DomainHistogramMechanism::Laplace,
    DomainHistogramMechanism::Gaussian,
    DomainHistogramMechanism::BalcerCheu,
    DomainHistogramMechanism::ShuffledGrr,
    DomainHistogramMechanism::GhaziHadamard,
    DomainHistogramMechanism::GhaziCountMin,
    DomainHistogramMechanism::Grr,
    DomainHistogramMechanism::Sue,
    DomainHistogramMechanism::Oue,
    DomainHistogramMechanism::Olh,
    DomainHistogramMechanism::HadamardResponse,
    DomainHistogramMechanism::SubsetSelection,
];

/// One element's error at one true count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorAt {
    /// The true count.
    pub count: u64,
    /// The error of its estimate.
    pub error: EstimateError,
}

/// A mechanism calibrated for the setting.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibratedMechanism {
    /// The mechanism.
    pub mechanism: DomainHistogramMechanism,
    /// The guarantee of the release, in the mechanism's trust model.
    pub guarantee: Guarantee,
    /// The guarantee of one client's report, for the mechanisms that randomize on the client.
    pub local_guarantee: Option<Guarantee>,
    /// What a client sends.
    pub cost: Option<MessageCost>,
    /// The law of the estimate of an element nobody holds (its calibrated parameters), or
    /// `None` where the mechanism's error has no closed form.
    pub law: Option<ErrorLaw>,
    /// The error across [`count_grid`], empty without a law.
    pub errors: Vec<ErrorAt>,
    /// The error at [`table_counts`], empty without a law.
    pub table: Vec<ErrorAt>,
}

/// A mechanism of the comparison: calibrated, or why it cannot be at this setting.
#[derive(Clone, Debug, PartialEq)]
pub enum MechanismPlan {
    /// Calibrated.
    Calibrated(Box<CalibratedMechanism>),
    /// Not available at this setting, with the calibration's reason.
    Unavailable {
        /// The mechanism.
        mechanism: DomainHistogramMechanism,
        /// Why.
        reason: String,
    },
}

impl MechanismPlan {
    /// The mechanism planned.
    pub fn mechanism(&self) -> DomainHistogramMechanism {
        match self {
            Self::Calibrated(calibrated) => calibrated.mechanism,
            Self::Unavailable { mechanism, .. } => *mechanism,
        }
    }

    /// The calibrated mechanism, if any.
    pub fn calibrated(&self) -> Option<&CalibratedMechanism> {
        match self {
            Self::Calibrated(calibrated) => Some(calibrated),
            Self::Unavailable { .. } => None,
        }
    }
}

/// The error at `count` of the mechanism, if its law is known.
pub fn error_at(mechanism: &dyn DomainHistogram, clients: u64, count: u64) -> Option<ErrorAt> {
    let error = mechanism.error_law(clients, count)?.error();
    Some(ErrorAt { count, error })
}

/// Turns a registered mechanism into its description.
struct Describe;

impl DomainRoundVisitor for Describe {
    type Output = Box<dyn DomainHistogram>;

    fn visit<M, R>(self, mechanism: M, _: R) -> Box<dyn DomainHistogram>
    where
        M: DomainHistogram + 'static,
        R: FederatedDomainRound,
    {
        Box::new(mechanism)
    }
}

/// `mechanism` calibrated for `setting`, described (its guarantee, cost and error law).
///
/// # Errors
///
/// The calibration's error where the setting is outside what the mechanism accepts.
pub fn calibrate(
    mechanism: DomainHistogramMechanism,
    setting: &DomainSetting,
) -> Result<Box<dyn DomainHistogram>, tally_core::Error> {
    calibrate_with(mechanism, setting, 0, Describe)
}

/// The counts the error is shown at: 0, then 1, 2, 5, 10, 20, 50, … below `clients`, and
/// `clients`.
pub fn count_grid(clients: u64) -> Vec<u64> {
    let steps = std::iter::successors(Some(1_u64), |c| c.checked_mul(10))
        .flat_map(|decade| [decade, 2 * decade, 5 * decade])
        .take_while(|&c| c < clients);
    let mut grid: Vec<u64> = std::iter::once(0)
        .chain(steps)
        .chain(std::iter::once(clients))
        .collect();
    grid.dedup();
    grid
}

/// The counts of the report's table: an element nobody holds, one held by the average number
/// of clients per element, and one held by every client.
pub fn table_counts(setting: &DomainSetting) -> Vec<u64> {
    let mut counts = vec![
        0,
        setting.clients / u64::from(setting.map.size()),
        setting.clients,
    ];
    counts.dedup();
    counts
}

/// Plans `mechanism` at `setting`.
pub fn plan(mechanism: DomainHistogramMechanism, setting: &DomainSetting) -> MechanismPlan {
    match calibrate(mechanism, setting) {
        Ok(built) => {
            let errors_at = |counts: Vec<u64>| -> Vec<ErrorAt> {
                counts
                    .into_iter()
                    .filter_map(|count| error_at(built.as_ref(), setting.clients, count))
                    .collect()
            };
            let errors = errors_at(count_grid(setting.clients));
            let table = errors_at(table_counts(setting));
            MechanismPlan::Calibrated(Box::new(CalibratedMechanism {
                mechanism,
                guarantee: built.guarantee(),
                local_guarantee: built.local_guarantee(),
                cost: built.message_cost(),
                law: built.error_law(setting.clients, 0),
                errors,
                table,
            }))
        }
        Err(e) => MechanismPlan::Unavailable {
            mechanism,
            reason: e.to_string(),
        },
    }
}

/// A population to predict on: the clients holding each domain element, and each item.
#[derive(Clone, Copy, Debug)]
pub struct DomainPopulation<'a> {
    /// What it is.
    pub description: &'a str,
    /// The number of clients.
    pub clients: u64,
    /// The number of clients holding each domain element.
    pub domain_counts: &'a [u64],
    /// The number of clients holding each distinct item (for sample-and-threshold).
    pub item_counts: &'a [u64],
    /// The `k` of sample-and-threshold's recall@k.
    pub top: usize,
}

/// The predicted mean absolute error of every mechanism at one `ε`.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainSweepPoint {
    /// The `ε` planned for.
    pub epsilon: f64,
    /// For each mechanism of [`COMPARED`], the mean over the domain's elements of
    /// `E|estimate − count|`, or `None` where it is not calibrated or has no law.
    pub mean_absolute_errors: Vec<Option<f64>>,
    /// Sample-and-threshold's utility on the items, where it is planned.
    pub sample_threshold: Option<PopulationUtility>,
}

/// The population sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainSweep {
    /// What the population is.
    pub description: String,
    /// The number of clients (the shuffle mechanisms are calibrated for them).
    pub clients: u64,
    /// The number of distinct items.
    pub items: usize,
    /// The sweep, by increasing `ε`.
    pub points: Vec<DomainSweepPoint>,
}

/// The mean over the elements of `E|estimate − count|`, each distinct count evaluated once.
pub fn mean_absolute_error(
    mechanism: &dyn DomainHistogram,
    clients: u64,
    counts: &[u64],
) -> Option<f64> {
    let mut multiplicity: BTreeMap<u64, u64> = BTreeMap::new();
    for &count in counts {
        *multiplicity.entry(count).or_default() += 1;
    }
    let mut total = 0.0;
    for (&count, &times) in &multiplicity {
        total += times as f64
            * error_at(mechanism, clients, count)?
                .error
                .mean_absolute_error;
    }
    Some(total / counts.len() as f64)
}

/// Plans every mechanism and sample-and-threshold at each `ε` of the sweep (and `setting`'s),
/// calibrated for the population's clients.
pub fn sweep(setting: &DomainSetting, known: DomainPopulation<'_>) -> DomainSweep {
    let mut epsilons = SWEEP_EPSILONS.to_vec();
    if !epsilons.contains(&setting.epsilon) {
        epsilons.push(setting.epsilon);
        epsilons.sort_by(f64::total_cmp);
    }
    let points = epsilons
        .into_iter()
        .map(|epsilon| {
            let at = DomainSetting {
                epsilon,
                clients: known.clients,
                ..*setting
            };
            let mean_absolute_errors = COMPARED
                .iter()
                .map(|&mechanism| {
                    let built = calibrate(mechanism, &at).ok()?;
                    mean_absolute_error(built.as_ref(), known.clients, known.domain_counts)
                })
                .collect();
            let sample_threshold = sample_threshold::plan(
                epsilon,
                setting.delta,
                PlanTarget::MinReleasedCount,
                Analysis::Tight,
                setting.neighbours,
            )
            .ok()
            .map(|plan| {
                population_utility(
                    known.item_counts,
                    &KeySelection::SampleThreshold(plan.params),
                    known.top,
                )
            });
            DomainSweepPoint {
                epsilon,
                mean_absolute_errors,
                sample_threshold,
            }
        })
        .collect();
    DomainSweep {
        description: known.description.to_owned(),
        clients: known.clients,
        items: known.item_counts.len(),
        points,
    }
}

/// Everything the report shows.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainReport {
    /// The setting.
    pub setting: DomainSetting,
    /// The mechanism asked for.
    pub chosen: DomainHistogramMechanism,
    /// Every mechanism of [`COMPARED`], in that order.
    pub mechanisms: Vec<MechanismPlan>,
    /// The sweep, with a population.
    pub population: Option<DomainSweep>,
    /// The plain-language summary.
    pub summary: String,
}

/// Plans every mechanism at `setting`, and with `population` the sweep.
pub fn build(
    setting: &DomainSetting,
    chosen: DomainHistogramMechanism,
    population: Option<DomainPopulation<'_>>,
) -> DomainReport {
    let mechanisms: Vec<MechanismPlan> = COMPARED.iter().map(|&m| plan(m, setting)).collect();
    let population = population.map(|known| sweep(setting, known));
    let summary = summary(setting, chosen, &mechanisms, population.as_ref());
    DomainReport {
        setting: *setting,
        chosen,
        mechanisms,
        population,
        summary,
    }
}

/// The error at `count` of a calibrated mechanism.
fn error_of(calibrated: &CalibratedMechanism, count: u64) -> Option<EstimateError> {
    calibrated
        .table
        .iter()
        .find(|e| e.count == count)
        .map(|e| e.error)
}

/// The plain-language summary.
fn summary(
    setting: &DomainSetting,
    chosen: DomainHistogramMechanism,
    mechanisms: &[MechanismPlan],
    population: Option<&DomainSweep>,
) -> String {
    let mut text = format!(
        "At {}, over {} and {} clients, ",
        PrivacyPair(setting.epsilon, setting.delta),
        setting.map,
        setting.clients
    );
    let chosen_plan = mechanisms.iter().find(|m| m.mechanism() == chosen);
    match chosen_plan {
        Some(MechanismPlan::Calibrated(c)) => match error_of(c, 0) {
            Some(zero) => {
                text += &format!(
                    "{} ({} model) estimates an element nobody holds with a standard deviation \
                     of {:.1} clients and is off by {:.1} on average",
                    chosen.name(),
                    c.guarantee.model.name(),
                    zero.standard_deviation,
                    zero.mean_absolute_error
                );
                if let Some(last) = c.errors.last() {
                    text += &format!(
                        "; an element held by all {} clients, by {:.1}",
                        last.count, last.error.mean_absolute_error
                    );
                }
                text += ".";
            }
            None => {
                text += &format!(
                    "{} is calibrated, but its error depends on how the other elements collide \
                     in its hashed rows and has no closed form here.",
                    chosen.name()
                );
            }
        },
        Some(MechanismPlan::Unavailable { reason, .. }) => {
            text += &format!("{} cannot be calibrated: {reason}.", chosen.name());
        }
        None => {}
    }
    // The mechanisms ranked by their error at the average number of clients per element.
    let average = setting.clients / u64::from(setting.map.size());
    let mut ranked: Vec<(&CalibratedMechanism, f64)> = mechanisms
        .iter()
        .filter_map(MechanismPlan::calibrated)
        .filter_map(|c| Some((c, error_of(c, average)?.mean_absolute_error)))
        .collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    for model in [TrustModel::Central, TrustModel::Shuffle, TrustModel::Local] {
        if let Some((best, error)) = ranked.iter().find(|(c, _)| c.guarantee.model == model) {
            text += &format!(
                " The most accurate {} mechanism here is {}, off by {error:.1} on average for \
                 an element held by {average} clients (the mean per element).",
                model.name(),
                best.mechanism.name()
            );
        }
    }
    if let Some(sweep) = population
        && let Some(point) = sweep
            .points
            .iter()
            .find(|p| p.epsilon.total_cmp(&setting.epsilon).is_eq())
    {
        let position = COMPARED.iter().position(|&m| m == chosen);
        if let Some(Some(error)) = position.and_then(|i| point.mean_absolute_errors.get(i)) {
            text += &format!(
                " On {}, {}'s estimates are off by {error:.1} on average over the domain",
                sweep.description,
                chosen.name()
            );
            if let Some(st) = &point.sample_threshold {
                text += &format!(
                    "; sample-and-threshold releases {:.0} items in expectation, {:.1}% of the \
                     {} most common, off by {:.1} on average",
                    st.expected_released,
                    100.0 * st.recall,
                    st.top,
                    st.mean_absolute_error
                );
            }
            text += ".";
        }
    }
    text
}

/// An error as JSON.
fn error_json(error: &EstimateError) -> Value {
    json!({
        "bias": error.bias,
        "standard_deviation": error.standard_deviation,
        "mean_absolute_error": error.mean_absolute_error,
    })
}

impl MechanismPlan {
    /// The plan as JSON: the guarantee, what a client sends, the law and the error by count.
    pub fn document(&self) -> Value {
        match self {
            Self::Calibrated(c) => json!({
                "mechanism": c.mechanism.name(),
                "model": c.guarantee.model.name(),
                "guarantee": GuaranteeBody::from(&c.guarantee),
                "local_epsilon": c.local_guarantee.as_ref().map(|g| g.epsilon),
                "messages_per_client": c.cost.map(|c| c.messages_per_client),
                "bits_per_message": c.cost.map(|c| c.bits_per_message),
                "error_law": c.law.map(|law| law.to_string()),
                "errors": c.errors.iter().map(|e| {
                    let mut row = error_json(&e.error);
                    row["count"] = json!(e.count);
                    row
                }).collect::<Vec<_>>(),
            }),
            Self::Unavailable { mechanism, reason } => json!({
                "mechanism": mechanism.name(),
                "unavailable": reason,
            }),
        }
    }
}

impl DomainReport {
    /// `plan.json`: every number the page shows.
    pub fn document(&self) -> Value {
        let population = self.population.as_ref().map(|sweep| {
            json!({
                "description": sweep.description,
                "clients": sweep.clients,
                "items": sweep.items,
                "sweep": sweep.points.iter().map(|p| json!({
                    "epsilon": p.epsilon,
                    "mean_absolute_error": COMPARED.iter().zip(&p.mean_absolute_errors)
                        .map(|(m, e)| json!({"mechanism": m.name(), "mean_absolute_error": e}))
                        .collect::<Vec<_>>(),
                    "sample_threshold": p.sample_threshold.map(|u| json!({
                        "recall": u.recall,
                        "top": u.top,
                        "expected_released": u.expected_released,
                        "mean_absolute_error": u.mean_absolute_error,
                    })),
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "mechanism": self.chosen.name(),
            "domain": self.setting.map.to_string(),
            "clients": self.setting.clients,
            "epsilon": self.setting.epsilon,
            "delta": self.setting.delta,
            "mechanisms": self.mechanisms.iter().map(MechanismPlan::document).collect::<Vec<_>>(),
            "population": population,
            "summary": self.summary,
        })
    }
}

#[cfg(test)]
mod tests {
    use tally_accounting::Neighbours;
    use tally_accounting::shuffle::ShuffleBound;
    use tally_core::histogram::DomainMap;
    use tally_sim::domain_release::guarantee_neighbours;

    use super::{COMPARED, DomainSetting, calibrate};

    /// The relation a budget charges before reading data is the one each calibrated
    /// mechanism's guarantee states, under either relation asked for.
    #[test]
    fn the_relation_known_before_the_data_is_the_guarantee_s() {
        for asked in [Neighbours::AddRemove, Neighbours::ReplaceOne] {
            let setting = DomainSetting {
                map: DomainMap::Integers(16),
                clients: 100_000,
                epsilon: 1.0,
                delta: 1e-8,
                neighbours: asked,
                bound: ShuffleBound::default(),
                beta: 0.01,
            };
            for mechanism in COMPARED {
                let built = calibrate(mechanism, &setting).expect("calibrated");
                assert_eq!(
                    built.guarantee().neighbours,
                    guarantee_neighbours(mechanism, asked),
                    "{} asked under {asked:?}",
                    mechanism.name()
                );
            }
        }
    }
}
