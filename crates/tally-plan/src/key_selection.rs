//! The numbers of `tally plan sample-threshold --report DIR`: the release curves of
//! sample-and-threshold and of the noise-based key selections at the same `(ε, δ)`, the
//! expected relative error of a released estimate, the predicted recall and error on a known
//! population over a sweep of `ε`, and a summary in words. `tally` renders them as
//! `index.html`; [`PlanReport::document`] is `plan.json`.

use serde_json::{Value, json};
use tally_accounting::Neighbours;
use tally_accounting::key_selection::{
    KeySelection, PopulationUtility, curve_counts, gaussian_threshold, laplace_threshold,
    population_utility,
};
use tally_accounting::sample_threshold::{self, Analysis, PlanTarget};

use tally_protocol::plan_document::{PlanError, Planned};
use tally_protocol::shown::PrivacyPair;

/// The values of `ε` the population sweep plans for (with the plan's own `ε`).
pub const SWEEP_EPSILONS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];

/// The release probabilities whose counts the report marks.
pub const MARKED_PROBABILITIES: [f64; 2] = [0.5, 0.95];

/// The most counts a curve is evaluated at.
const CURVE_POINTS: u64 = 400;

/// One key selection of the comparison, calibrated for the report's `(ε, δ)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibrated {
    /// Its name in figures and tables.
    pub name: &'static str,
    /// The selection and its parameters.
    pub selection: KeySelection,
    /// The counts released with probability 50% and 95% ([`MARKED_PROBABILITIES`]).
    pub marked: [Option<u64>; 2],
    /// The count released with probability 99.9%.
    pub release_999: Option<u64>,
}

/// The predicted utility of each selection on the population at one `ε`.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    /// The `ε` planned for.
    pub epsilon: f64,
    /// For each selection in [`PlanReport::selections`] order, its utility, or `None` where
    /// no parameters meet `(ε, δ)`.
    pub utilities: Vec<Option<PopulationUtility>>,
}

/// The population the report predicts utility on.
#[derive(Clone, Debug, PartialEq)]
pub struct PopulationSweep {
    /// What the population is.
    pub description: String,
    /// The number of clients.
    pub clients: u64,
    /// The number of distinct items.
    pub items: usize,
    /// The sweep, by increasing `ε`.
    pub points: Vec<SweepPoint>,
}

/// Everything `index.html` and `plan.json` show.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanReport {
    /// The plan's `--json` document.
    pub plan: Value,
    /// The report's `ε`.
    pub epsilon: f64,
    /// The report's `δ`: the target, or the `δ` given parameters achieve.
    pub delta: f64,
    /// The selections compared, sample-and-threshold as planned first.
    pub selections: Vec<Calibrated>,
    /// The release curves: `(c, P[released | c])` per selection, at the same counts.
    pub release_curves: Vec<Vec<(u64, f64)>>,
    /// The expected relative error `(c, E[|estimate − c|/c | released])` per selection, where
    /// an item held by `c` clients is released with probability at least 1%.
    pub relative_errors: Vec<Vec<(u64, f64)>>,
    /// The counts of the relative-error table.
    pub table_counts: Vec<u64>,
    /// The population sweep, with a population.
    pub population: Option<PopulationSweep>,
    /// The plain-language summary.
    pub summary: String,
}

/// A population to predict on: its description, number of clients and item counts.
#[derive(Clone, Copy, Debug)]
pub struct KnownPopulation<'a> {
    /// What it is.
    pub description: &'a str,
    /// The number of clients.
    pub clients: u64,
    /// The number of clients holding each item.
    pub counts: &'a [u64],
    /// The `k` of recall@k.
    pub top: usize,
}

impl Calibrated {
    /// `selection` named `name`, with its marked counts.
    pub fn new(name: &'static str, selection: KeySelection) -> Self {
        Self {
            name,
            selection,
            marked: MARKED_PROBABILITIES.map(|p| selection.release_point(p)),
            release_999: selection.release_point(0.999),
        }
    }
}

/// The round every level of a multi-round plan runs, beside the noise-based key selections at
/// the level's share of the plan's guarantee: each selection with its marked counts, its
/// release curve and its expected relative error, on the same counts.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundCurves {
    /// The selections: the round's first, then Laplace and Gaussian thresholding at
    /// [`Self::compared_at`] (those that have parameters there).
    pub selections: Vec<Calibrated>,
    /// Their release curves `(c, P[released | c])`, up to the largest 99.9% point.
    pub release_curves: Vec<Vec<(u64, f64)>>,
    /// Their expected relative errors `(c, E[|estimate − c|/c | released])`.
    pub relative_errors: Vec<Vec<(u64, f64)>>,
    /// The `(ε, δ)` the noise-based selections are calibrated for ([`level_share`]); `None`
    /// under replace-one neighbours, where only the round is drawn.
    pub compared_at: Option<(f64, f64)>,
}

/// The share of a guarantee `(epsilon, delta)` over `levels` rounds that one round gets by
/// basic composition, `(ε/L, δ/L)`, the `(ε, δ)` the noise-based selections are compared at;
/// `None` under replace-one `neighbours`, since the calibrations of Laplace and Gaussian
/// thresholding in [`tally_accounting::key_selection`] hold for add/remove neighbours.
pub fn level_share(
    epsilon: f64,
    delta: f64,
    levels: u64,
    neighbours: Neighbours,
) -> Option<(f64, f64)> {
    let levels = levels.max(1) as f64;
    (neighbours == Neighbours::AddRemove).then(|| (epsilon / levels, delta / levels))
}

impl RoundCurves {
    /// The curves of the round `selection` named `name`, beside Laplace and Gaussian
    /// thresholding at `compared_at` where it is given.
    pub fn new(
        name: &'static str,
        selection: KeySelection,
        compared_at: Option<(f64, f64)>,
    ) -> Self {
        let noise_based =
            compared_at.map_or([None, None], |(epsilon, delta)| noise_based(epsilon, delta));
        let selections: Vec<Calibrated> = std::iter::once(Calibrated::new(name, selection))
            .chain(
                noise_based
                    .into_iter()
                    .zip(&NAMES[2..])
                    .filter_map(|(selection, name)| Some(Calibrated::new(name, selection?))),
            )
            .collect();
        let (release_curves, relative_errors) = curves(&selections);
        Self {
            selections,
            release_curves,
            relative_errors,
            compared_at,
        }
    }

    /// The round's own selection.
    pub fn round(&self) -> &Calibrated {
        &self.selections[0]
    }

    /// The noise-based selections compared with the round.
    pub fn compared(&self) -> &[Calibrated] {
        &self.selections[1..]
    }

    /// The sentence of a summary comparing the round with the noise-based selections, an item
    /// being held by `holders` (`devices`, `values`).
    pub fn comparison_text(&self, holders: &str) -> String {
        match self.compared_at {
            None => " Laplace and Gaussian thresholding are not compared: their calibrations \
                     hold for add/remove neighbours, not replace-one."
                .to_owned(),
            Some((epsilon, delta)) => {
                let compared: Vec<String> = self
                    .compared()
                    .iter()
                    .map(|s| {
                        format!(
                            "{} at the level's share would release half the time at c = {} \
                             and 95% of the time at c = {} {holders}",
                            s.name,
                            count_text(s.marked[0]),
                            count_text(s.marked[1])
                        )
                    })
                    .collect();
                format!(
                    " {}; the level's share of the guarantee by basic composition is {}.",
                    compared.join("; "),
                    PrivacyPair(epsilon, delta)
                )
            }
        }
    }

    /// The round as `plan.json` lists it, with the noise-based selections under `compared`.
    pub fn document(&self) -> Value {
        let mut documents = self
            .selections
            .iter()
            .zip(&self.release_curves)
            .zip(&self.relative_errors)
            .map(|((s, curve), errors)| selection_document(s, curve, errors));
        let mut round = documents.next().expect("the round's selection");
        round["compared_at"] = json!(self.compared_at.map(|(epsilon, delta)| json!({
            "epsilon": epsilon,
            "delta": delta,
            "composition": "basic",
        })));
        round["compared"] = documents.collect();
        round
    }
}

/// A selection with its curves as `plan.json` lists it.
fn selection_document(
    selection: &Calibrated,
    release_curve: &[(u64, f64)],
    relative_error: &[(u64, f64)],
) -> Value {
    json!({
        "name": selection.name,
        "parameters": parameters_json(&selection.selection),
        "release_50": selection.marked[0],
        "release_95": selection.marked[1],
        "release_999": selection.release_999,
        "release_curve": release_curve,
        "relative_error": relative_error,
    })
}

/// A curve over the true count: `(c, value at c)`.
type CountCurve = Vec<(u64, f64)>;

/// The release curves and expected relative errors of `selections`, on the same counts: up to
/// the largest of their 99.9% points.
fn curves(selections: &[Calibrated]) -> (Vec<CountCurve>, Vec<CountCurve>) {
    let curve_max = selections
        .iter()
        .filter_map(|s| s.release_999)
        .max()
        .unwrap_or(1);
    selections
        .iter()
        .map(|s| {
            (
                release_curve(&s.selection, curve_max),
                relative_error_curve(&s.selection, curve_max),
            )
        })
        .unzip()
}

/// Laplace and Gaussian thresholding calibrated for `(epsilon, delta)`, `None` where the
/// accountant has no parameters.
pub fn noise_based(epsilon: f64, delta: f64) -> [Option<KeySelection>; 2] {
    [
        laplace_threshold(epsilon, delta)
            .ok()
            .map(KeySelection::Laplace),
        gaussian_threshold(epsilon, delta)
            .ok()
            .map(KeySelection::Gaussian),
    ]
}

/// The release curve of `selection`: `(c, P[released | c])` at counts spread evenly over
/// `0..=max`.
pub fn release_curve(selection: &KeySelection, max: u64) -> Vec<(u64, f64)> {
    selection.release_curve(&curve_counts(max, CURVE_POINTS))
}

/// The expected relative error `(c, E[|estimate − c|/c | released])` of `selection` at counts
/// spread evenly over `0..=3·max`, where an item held by `c` clients is released with
/// probability at least 1%.
pub fn relative_error_curve(selection: &KeySelection, max: u64) -> Vec<(u64, f64)> {
    curve_counts(3 * max, CURVE_POINTS)
        .into_iter()
        .filter(|&c| selection.release_probability(c) >= 0.01)
        .filter_map(|c| Some((c, selection.relative_error(c)?)))
        .collect()
}

/// The selections compared at `(ε, δ)`: sample-and-threshold with `params`, with the paper's
/// Theorem 1 calibration for the same `target`, and Laplace and Gaussian thresholding.
fn calibrate_all(
    st: Option<KeySelection>,
    epsilon: f64,
    delta: f64,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
) -> Vec<Option<KeySelection>> {
    let planned_st = st.or_else(|| {
        sample_threshold::plan(epsilon, delta, target, analysis, neighbours)
            .ok()
            .map(|plan| KeySelection::SampleThreshold(plan.params))
    });
    let theorem1 = sample_threshold::plan(epsilon, delta, target, Analysis::Theorem1, neighbours)
        .ok()
        .map(|plan| KeySelection::SampleThreshold(plan.params));
    let [laplace, gaussian] = noise_based(epsilon, delta);
    vec![planned_st, theorem1, laplace, gaussian]
}

/// The names of the selections, in `calibrate_all` order.
pub const NAMES: [&str; 4] = [
    "S&T (as planned)",
    "S&T (paper's Theorem 1)",
    "Laplace thresholding",
    "Gaussian thresholding",
];

/// Builds the report of `planned`, with `population` for the sweep.
///
/// # Errors
///
/// As the accountant rejects the plan's `(ε, δ)` for a noise-based selection.
pub fn build(
    planned: &Planned,
    population: Option<KnownPopulation<'_>>,
) -> Result<PlanReport, PlanError> {
    let (epsilon, delta, params, analysis, neighbours, target) = match planned {
        Planned::Plan(plan) => (
            plan.epsilon,
            plan.delta,
            plan.params,
            plan.analysis,
            plan.neighbours,
            plan.target,
        ),
        Planned::Delta {
            guarantee, params, ..
        } => (
            guarantee.epsilon,
            guarantee.delta,
            *params,
            guarantee.analysis.parse().unwrap_or(Analysis::Tight),
            guarantee.neighbours,
            PlanTarget::Threshold(params.threshold()),
        ),
    };
    laplace_threshold(epsilon, delta)?;
    let selections: Vec<Calibrated> = calibrate_all(
        Some(KeySelection::SampleThreshold(params)),
        epsilon,
        delta,
        target,
        analysis,
        neighbours,
    )
    .into_iter()
    .zip(NAMES)
    .filter_map(|(selection, name)| Some(Calibrated::new(name, selection?)))
    .collect();

    let (release_curves, relative_errors) = curves(&selections);
    let (st50, st95) = (selections[0].marked[0], selections[0].marked[1]);
    let mut table_counts: Vec<u64> = [
        st50,
        st95,
        selections[0].release_999,
        selections[0].release_999.map(|c| 10 * c),
    ]
    .into_iter()
    .flatten()
    .collect();
    table_counts.dedup();

    let population =
        population.map(|known| sweep(known, epsilon, delta, target, analysis, neighbours));
    let summary = summary(epsilon, delta, &selections, population.as_ref());
    Ok(PlanReport {
        plan: planned.document(),
        epsilon,
        delta,
        selections,
        release_curves,
        relative_errors,
        table_counts,
        population,
        summary,
    })
}

/// The `ε` of a sweep: [`SWEEP_EPSILONS`] with the plan's own `epsilon`, increasing.
pub fn sweep_epsilons(epsilon: f64) -> Vec<f64> {
    let mut epsilons = SWEEP_EPSILONS.to_vec();
    if !epsilons.contains(&epsilon) {
        epsilons.push(epsilon);
        epsilons.sort_by(f64::total_cmp);
    }
    epsilons
}

/// Plans every selection at each `ε` of the sweep and predicts its utility on `known`.
fn sweep(
    known: KnownPopulation<'_>,
    epsilon: f64,
    delta: f64,
    target: PlanTarget,
    analysis: Analysis,
    neighbours: Neighbours,
) -> PopulationSweep {
    let points = sweep_epsilons(epsilon)
        .into_iter()
        .map(|e| SweepPoint {
            epsilon: e,
            utilities: calibrate_all(None, e, delta, target, analysis, neighbours)
                .into_iter()
                .map(|s| s.map(|s| population_utility(known.counts, &s, known.top)))
                .collect(),
        })
        .collect();
    PopulationSweep {
        description: known.description.to_owned(),
        clients: known.clients,
        items: known.counts.len(),
        points,
    }
}

/// A count, or "more than 2^40" where none reaches the probability.
pub fn count_text(count: Option<u64>) -> String {
    count.map_or_else(|| "more than 2^40".to_owned(), |c| c.to_string())
}

/// The plain-language summary.
fn summary(
    epsilon: f64,
    delta: f64,
    selections: &[Calibrated],
    population: Option<&PopulationSweep>,
) -> String {
    let st = &selections[0];
    let mut text = format!(
        "At {}, sample-and-threshold ({}) releases an item held by \
         {} clients half the time and one held by {} clients 95% of the time",
        PrivacyPair(epsilon, delta),
        parameters_text(&st.selection),
        count_text(st.marked[0]),
        count_text(st.marked[1]),
    );
    if let Some(error) = st.marked[1].and_then(|c| st.selection.relative_error(c)) {
        text += &format!(
            "; the released estimate of such an item is off by {:.1}% on average",
            100.0 * error
        );
    }
    text += ". At the same (ε, δ), ";
    let others: Vec<String> = selections[1..]
        .iter()
        .map(|s| {
            format!(
                "{} needs {} and {} clients",
                s.name,
                count_text(s.marked[0]),
                count_text(s.marked[1])
            )
        })
        .collect();
    text += &others.join(", ");
    text += ".";
    let point = population.and_then(|sweep| {
        let point = sweep
            .points
            .iter()
            .find(|p| p.epsilon.total_cmp(&epsilon).is_eq())?;
        Some((sweep, point))
    });
    if let Some((sweep, point)) = point
        && let Some(Some(st)) = point.utilities.first()
    {
        let recall: Vec<String> = point
            .utilities
            .iter()
            .zip(selections)
            .filter_map(|(u, s)| Some(format!("{} {:.1}%", s.name, 100.0 * u.as_ref()?.recall)))
            .collect();
        text += &format!(
            " On {} ({} clients, {} items), the expected share of the {} most common items \
             released is {}; sample-and-threshold's released counts are off by {:.1} on \
             average.",
            sweep.description,
            sweep.clients,
            sweep.items,
            st.top,
            recall.join(", "),
            st.mean_absolute_error,
        );
    }
    text
}

/// The parameters of a selection in words.
pub fn parameters_text(selection: &KeySelection) -> String {
    match selection {
        KeySelection::SampleThreshold(params) => format!(
            "sampling rate {:.4}, threshold {}",
            params.sampling_rate(),
            params.threshold()
        ),
        KeySelection::Laplace(l) => format!("scale {:.3}, threshold {:.2}", l.scale, l.threshold),
        KeySelection::Gaussian(g) => format!("σ {:.3}, threshold {:.2}", g.sigma, g.threshold),
    }
}

/// The parameters of a selection as JSON.
pub fn parameters_json(selection: &KeySelection) -> Value {
    match selection {
        KeySelection::SampleThreshold(params) => json!({
            "sampling_rate": params.sampling_rate(),
            "threshold": params.threshold(),
        }),
        KeySelection::Laplace(l) => json!({"scale": l.scale, "threshold": l.threshold}),
        KeySelection::Gaussian(g) => json!({"sigma": g.sigma, "threshold": g.threshold}),
    }
}

impl PlanReport {
    /// `plan.json`: the plan's `--json` document and every number the page shows.
    pub fn document(&self) -> Value {
        let selections: Vec<Value> = self
            .selections
            .iter()
            .zip(&self.release_curves)
            .zip(&self.relative_errors)
            .map(|((s, curve), errors)| {
                let mut document = selection_document(s, curve, errors);
                document["table"] = self
                    .table_counts
                    .iter()
                    .map(|&c| {
                        json!({
                            "count": c,
                            "release_probability": s.selection.release_probability(c),
                            "relative_error": s.selection.relative_error(c),
                        })
                    })
                    .collect();
                document
            })
            .collect();
        let population = self.population.as_ref().map(|sweep| {
            json!({
                "description": sweep.description,
                "clients": sweep.clients,
                "items": sweep.items,
                "sweep": sweep.points.iter().map(|p| json!({
                    "epsilon": p.epsilon,
                    "selections": p.utilities.iter().zip(NAMES).map(|(u, name)| json!({
                        "name": name,
                        "recall": u.map(|u| u.recall),
                        "top": u.map(|u| u.top),
                        "expected_released": u.map(|u| u.expected_released),
                        "mean_absolute_error": u.map(|u| u.mean_absolute_error),
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "plan": self.plan,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "selections": selections,
            "population": population,
            "summary": self.summary,
        })
    }
}
