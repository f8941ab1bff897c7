//! What `tally plan histogram --input FILE` predicts for clients of several items: for each
//! mechanism `tally histogram` runs over them (sample-and-threshold and the partition
//! selections of [`Method`]) and each bound `k` on a client's distinct items in a small grid,
//! the expected number of items the release shows on the data, and the setting that shows the
//! most (docs/privacy/partition-selection.md, "Choosing the method and k").
//!
//! Each setting is calibrated by [`ItemsMechanism::calibrate`], the function the release
//! calls, and its release law is [`ItemsMechanism::release_probability`]. A client holding
//! `m` distinct items keeps each with probability `min(1, k/m)` (a uniform `k`-subset), and
//! different clients choose independently, so the number of clients contributing an item is
//! Poisson-binomial over its holders. Its law is computed exactly, by convolving the holders'
//! coins one at a time (no normal approximation), and the item is released with probability
//! `Σ_c P[c contribute] · P[released | c]`; the expected number of released items is the sum
//! over the items the clients hold (an item nobody holds is never released).

use tally_accounting::partition_selection::{MAX_ITEMS_PER_CLIENT, Method};
use tally_accounting::sample_threshold::PlanTarget;
use tally_accounting::{Neighbours, ThresholdedEstimate};

use crate::KeyedPopulation;
use crate::items_release::{Error, ItemsMechanism};

/// A mechanism over clients of several items: sample-and-threshold (`None`) or a partition
/// selection, in the order of less noise first (the order ties are broken in).
pub const METHODS: [Option<Method>; 4] = [
    None,
    Some(Method::TruncatedGeometric),
    Some(Method::LaplaceThreshold),
    Some(Method::GaussianThreshold),
];

/// The distinct items of each client, as the planner needs them: for each item, the numbers of
/// distinct items of the clients holding it.
#[derive(Clone, Debug)]
pub struct HeldItems {
    /// For each item a client holds, the number of distinct items of each of its holders.
    holders: Vec<Vec<u64>>,
    /// The number of distinct items of each client.
    per_client: Vec<u64>,
}

impl HeldItems {
    /// The held items of `population`, each client's repeated rows of an item counted once.
    pub fn new(population: &KeyedPopulation) -> Self {
        let mut holders = vec![Vec::new(); population.domain_size()];
        let mut per_client = Vec::new();
        for (_, mut items) in population.client_items() {
            items.sort_unstable();
            items.dedup();
            let distinct = items.len() as u64;
            per_client.push(distinct);
            for item in items {
                holders[item as usize].push(distinct);
            }
        }
        holders.retain(|held| !held.is_empty());
        Self {
            holders,
            per_client,
        }
    }

    /// The number of clients.
    pub fn clients(&self) -> u64 {
        self.per_client.len() as u64
    }

    /// The number of distinct items some client holds.
    pub fn distinct_items(&self) -> usize {
        self.holders.len()
    }

    /// The largest number of distinct items of one client.
    pub fn largest(&self) -> u64 {
        self.per_client.iter().copied().max().unwrap_or(0)
    }

    /// The mean over the clients of the number of distinct items each contributes at `k`,
    /// `min(m, k)`: the reports a client sends before any sampling.
    pub fn mean_contributed(&self, k: u64) -> f64 {
        let total: u64 = self.per_client.iter().map(|&m| m.min(k)).sum();
        total as f64 / self.clients().max(1) as f64
    }

    /// The number of clients holding more than `k` distinct items (who lose some at `k`).
    pub fn clients_over(&self, k: u64) -> u64 {
        self.per_client.iter().filter(|&&m| m > k).count() as u64
    }

    /// The law of the number of clients contributing each item when each keeps at most `k`
    /// of its distinct items, uniformly: for each item, `(sure, law)` where `sure` holders
    /// keep it for certain (`m ≤ k`) and `law[j]` is the probability that `j` of the others do.
    pub fn contribution_laws(&self, k: u64) -> Vec<(u64, Vec<f64>)> {
        self.holders
            .iter()
            .map(|held| {
                let sure = held.iter().filter(|&&m| m <= k).count() as u64;
                let coins = held
                    .iter()
                    .filter(|&&m| m > k)
                    .map(|&m| k as f64 / m as f64);
                (sure, poisson_binomial(coins))
            })
            .collect()
    }
}

/// The law of a sum of independent coins of the given probabilities, convolved one coin at a
/// time: `law[j] = P[j heads]`.
pub fn poisson_binomial(coins: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut law = vec![1.0];
    for p in coins {
        law.push(0.0);
        for j in (1..law.len()).rev() {
            law[j] = law[j] * (1.0 - p) + law[j - 1] * p;
        }
        law[0] *= 1.0 - p;
    }
    law
}

/// The bounds `k` the planner tries: the powers of two below the largest number of distinct
/// items of one client, then that number (at most [`MAX_ITEMS_PER_CLIENT`]); a larger `k`
/// keeps the same items at more noise.
pub fn max_items_grid(largest: u64) -> Vec<u32> {
    let top = largest.clamp(1, u64::from(MAX_ITEMS_PER_CLIENT)) as u32;
    let mut grid: Vec<u32> = (0..).map(|i| 1_u32 << i).take_while(|&k| k < top).collect();
    grid.push(top);
    grid
}

/// The privacy target every setting is calibrated for.
#[derive(Clone, Copy, Debug)]
pub struct ItemsTarget {
    /// `ε`.
    pub epsilon: f64,
    /// `δ`.
    pub delta: f64,
    /// The neighbour relation.
    pub neighbours: Neighbours,
}

/// One setting the planner tried.
#[derive(Clone, Debug)]
pub struct PlannedSetting {
    /// Sample-and-threshold (`None`) or a partition selection.
    pub method: Option<Method>,
    /// The bound `k`.
    pub max_items: u32,
    /// The calibrated mechanism and the expected number of released items, or why it could
    /// not be calibrated.
    pub outcome: Result<Predicted, String>,
}

impl PlannedSetting {
    /// The name `tally histogram --mechanism` takes.
    pub fn name(&self) -> &'static str {
        self.method.map_or("sample-threshold", Method::name)
    }

    /// The expected number of released items (0 when the setting could not be calibrated).
    pub fn expected_released(&self) -> f64 {
        self.outcome.as_ref().map_or(0.0, |p| p.expected_released)
    }
}

/// A calibrated setting and what it releases on the data.
#[derive(Clone, Debug)]
pub struct Predicted {
    /// The mechanism, calibrated as the release calibrates it.
    pub mechanism: ItemsMechanism,
    /// The expected number of released items.
    pub expected_released: f64,
    /// The smallest number of contributing clients released at least half the time.
    pub half_release_point: Option<u64>,
    /// The error of the released estimates.
    pub error: PredictedError,
}

/// The error of the estimates a setting releases, against the number of clients holding
/// each item in the data (so what bounding each client to `k` items drops counts too): the
/// expected error of a released item's estimate given that it is released, averaged over the
/// items weighted by their probability of release, that is the expected sum of the errors of
/// the released estimates over the expected number of released items
/// (docs/privacy/partition-selection.md, "The error of a released estimate").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PredictedError {
    /// The mechanism releases no count (the truncated-geometric selection).
    NoCount,
    /// No item is expected to be released.
    NothingReleased,
    /// The error of the released estimates.
    Estimates {
        /// `Σ_i E[|estimate_i − n_i| · 1{i released}] / E[released items]`, `n_i` the
        /// clients holding item `i`.
        absolute: f64,
        /// `Σ_i E[|estimate_i − n_i| · 1{i released}] / n_i / E[released items]`.
        relative: f64,
    },
}

impl PredictedError {
    /// The error in words for a table: `± A (R%)`, `no count` or `nothing released`.
    pub fn describe(&self) -> String {
        match self {
            Self::NoCount => "no count".to_owned(),
            Self::NothingReleased => "nothing released".to_owned(),
            Self::Estimates { absolute, relative } => {
                format!("{absolute:.1} ({:.1}%)", 100.0 * relative)
            }
        }
    }

    /// The error in a sentence, for the recommendation's words.
    pub fn sentence(&self) -> String {
        match self {
            Self::NoCount => "It shows no count, so no count can be wrong".to_owned(),
            Self::NothingReleased => "No item is expected to be released".to_owned(),
            Self::Estimates { absolute, relative } => format!(
                "A released item's estimate is expected to be off by {absolute:.1} clients \
                 ({:.1}% of the clients holding it in the data, what the bound k drops \
                 included)",
                100.0 * relative
            ),
        }
    }

    /// The error as the plan's JSON gives it.
    pub fn document(&self) -> serde_json::Value {
        match self {
            Self::NoCount => serde_json::json!({
                "kind": "no count",
                "note": "the truncated-geometric selection releases the items alone, with no count",
            }),
            Self::NothingReleased => serde_json::json!({"kind": "nothing released"}),
            Self::Estimates { absolute, relative } => serde_json::json!({
                "kind": "estimates",
                "expected_absolute_error": absolute,
                "expected_relative_error": relative,
            }),
        }
    }
}

/// Every setting tried and the one recommended.
#[derive(Clone, Debug)]
pub struct ItemsPlan {
    /// The settings, by `k` and then in the order of [`METHODS`].
    pub settings: Vec<PlannedSetting>,
    /// The index of the recommended setting in `settings`.
    pub recommended: usize,
}

impl ItemsPlan {
    /// The recommended setting.
    pub fn recommendation(&self) -> &PlannedSetting {
        &self.settings[self.recommended]
    }

    /// Why the recommended setting was chosen, in words: what it releases against the next
    /// best, whether it adds noise, what the aggregator sees, and what the bound `k` drops.
    pub fn why(&self, held: &HeldItems) -> String {
        let best = self.recommendation();
        let k = u64::from(best.max_items);
        let runner_up = self
            .settings
            .iter()
            .enumerate()
            .filter(|&(i, s)| i != self.recommended && s.outcome.is_ok())
            .map(|(_, s)| s)
            .max_by(|a, b| a.expected_released().total_cmp(&b.expected_released()));
        let against = runner_up.map_or_else(String::new, |s| {
            let error = s.outcome.as_ref().map_or_else(
                |_| String::new(),
                |p| format!(", error {}", p.error.describe()),
            );
            format!(
                ", against {:.1} for the next best ({} at k = {}{error})",
                s.expected_released(),
                s.name(),
                s.max_items
            )
        });
        let how = best.outcome.as_ref().map_or_else(
            |error| format!("no setting could be calibrated ({error})"),
            |p| {
                format!(
                    "{}; {}. {}",
                    noise(&p.mechanism, held.clients()),
                    sees(best.method),
                    p.error.sentence()
                )
            },
        );
        let mut how = how.chars();
        let how: String = how
            .next()
            .map(|first| first.to_uppercase().chain(how).collect())
            .unwrap_or_default();
        format!(
            "{} at k = {} releases the most items in expectation: {:.1} of the {} items the \
             clients hold{against}. {how}. Items no client holds are never shown. Each client \
             contributes at most {k} of its distinct items, chosen uniformly: {} of the {} \
             clients hold more and lose some.",
            best.name(),
            best.max_items,
            best.expected_released(),
            held.distinct_items(),
            held.clients_over(k),
            held.clients(),
        )
    }

    /// The plan as `tally plan histogram --json` prints it (without the command to run).
    pub fn document(&self, held: &HeldItems, target: ItemsTarget) -> serde_json::Value {
        let settings: Vec<serde_json::Value> = self
            .settings
            .iter()
            .map(|setting| {
                let mut row = serde_json::json!({
                    "mechanism": setting.name(),
                    "max_items_per_client": setting.max_items,
                });
                match &setting.outcome {
                    Ok(p) => {
                        let described = p.mechanism.described(held.clients(), target.delta);
                        row["expected_released_items"] = p.expected_released.into();
                        row["half_release_point"] = p.half_release_point.into();
                        row["error"] = p.error.document();
                        row["parameters"] = described.parameters;
                        row["guarantee"] = serde_json::to_value(&described.guarantee)
                            .unwrap_or(serde_json::Value::Null);
                    }
                    Err(error) => row["error"] = error.as_str().into(),
                }
                row
            })
            .collect();
        let best = self.recommendation();
        serde_json::json!({
            "clients": held.clients(),
            "distinct_items": held.distinct_items(),
            "largest_client_items": held.largest(),
            "epsilon": target.epsilon,
            "delta": target.delta,
            "neighbours": target.neighbours.to_string(),
            "prediction": "exact: each item's contributing clients are Poisson-binomial over its holders",
            "error_definition": ERROR_DEFINITION,
            "settings": settings,
            "recommendation": {
                "mechanism": best.name(),
                "max_items_per_client": best.max_items,
                "expected_released_items": best.expected_released(),
                "error": best.outcome.as_ref().map_or(serde_json::Value::Null, |p| p.error.document()),
                "why": self.why(held),
            },
        })
    }
}

/// Whether `mechanism` adds noise, and what it shows, in words.
fn noise(mechanism: &ItemsMechanism, clients: u64) -> String {
    let parameters = mechanism.described(clients, 0.0).parameters;
    // Counts as they are; other numbers to four significant digits, for people to read.
    let p = |name: &str| match (&parameters[name], parameters[name].as_f64()) {
        (value, _) if value.is_u64() => value.to_string(),
        (_, Some(x)) => format!("{x:.3e}").parse::<f64>().unwrap_or(x).to_string(),
        (value, None) => value.to_string(),
    };
    match mechanism {
        ItemsMechanism::SampleThreshold(_) => format!(
            "no noise is added: each client sends each kept item with probability {}, and an \
             item sent by at least {} clients is shown with its count divided by that \
             probability",
            p("sampling_rate"),
            p("threshold")
        ),
        ItemsMechanism::Selection(selection) => match selection.method() {
            Method::LaplaceThreshold => format!(
                "discrete Laplace noise of scale {} is added to each count, and an item whose \
                 noisy count reaches {} is shown with it",
                p("scale"),
                p("threshold")
            ),
            Method::GaussianThreshold => format!(
                "discrete Gaussian noise of σ = {} is added to each count, and an item whose \
                 noisy count reaches {} is shown with it",
                p("sigma"),
                p("threshold")
            ),
            Method::TruncatedGeometric => "no count is shown, so none is noised: each item \
                 is shown alone, with the optimal probability for its count"
                .to_owned(),
        },
    }
}

/// What the aggregator of `method` sees, in words.
fn sees(method: Option<Method>) -> &'static str {
    match method {
        None => {
            "the aggregator sees only the sampled items, never a client's whole set, and need \
             not be trusted with more"
        }
        Some(_) => {
            "the aggregator sees the exact count of every item the clients report, so it must \
             be trusted with them (under split trust the relay forwards every report, not a \
             sample)"
        }
    }
}

/// Calibrates every mechanism at every `k` of [`max_items_grid`] for `target` and predicts
/// what it releases on `held` (sample-and-threshold with the pair of the smallest count a
/// release can show, as `tally histogram` chooses it without `--sampling-rate` or
/// `--threshold`, for unkeyed coins). Recommends the most expected released items; among
/// settings within a relative `10⁻⁹` of each other, the earlier in [`METHODS`] (less noise),
/// then the smaller `k`.
pub fn plan_items(held: &HeldItems, target: ItemsTarget) -> ItemsPlan {
    let mut settings = Vec::new();
    for k in max_items_grid(held.largest()) {
        let laws = held.contribution_laws(u64::from(k));
        for method in METHODS {
            let outcome = ItemsMechanism::calibrate(
                method,
                target.epsilon,
                target.delta,
                k,
                PlanTarget::MinReleasedCount,
                target.neighbours,
                false,
            )
            .map(|mechanism| predict(mechanism, &laws))
            .map_err(|error: Error| error.to_string());
            settings.push(PlannedSetting {
                method,
                max_items: k,
                outcome,
            });
        }
    }
    let rank = |s: &PlannedSetting| METHODS.iter().position(|&m| m == s.method);
    let mut recommended = 0;
    for (i, setting) in settings.iter().enumerate() {
        let best = &settings[recommended];
        let (a, b) = (setting.expected_released(), best.expected_released());
        let tied = (a - b).abs() <= 1e-9 * a.max(b);
        let better = if tied {
            (rank(setting), setting.max_items) < (rank(best), best.max_items)
        } else {
            a > b
        };
        if better {
            recommended = i;
        }
    }
    ItemsPlan {
        settings,
        recommended,
    }
}

/// What the predicted error of a setting means, as the table and the JSON state it.
pub const ERROR_DEFINITION: &str = "the expected error of a released item's estimate given \
     that it is released, against the number of clients holding the item in the data (what \
     the bound k drops included), averaged over the items weighted by their probability of \
     release; relative: the same of the error divided by the item's holders";

/// The terms `P[C = c]` below this are left out of the predicted error: together they move
/// it by less than `10⁻²⁰` of the largest possible error of one item.
const NEGLIGIBLE: f64 = 1e-30;

/// The expected number of items `mechanism` releases, and the error of their estimates, when
/// item `i` is contributed by `laws[i].0` clients for certain and by `j` more with
/// probability `laws[i].1[j]` (and held by `laws[i].0 + laws[i].1.len() − 1`).
fn predict(mechanism: ItemsMechanism, laws: &[(u64, Vec<f64>)]) -> Predicted {
    let most = laws
        .iter()
        .map(|(sure, law)| sure + law.len() as u64 - 1)
        .max()
        .unwrap_or(0);
    let released: Vec<f64> = (0..=most)
        .map(|c| mechanism.release_probability(c))
        .collect();
    let expected_released = laws
        .iter()
        .map(|(sure, law)| {
            law.iter()
                .zip(&released[*sure as usize..])
                .map(|(p, r)| p * r)
                .sum::<f64>()
        })
        .sum();
    let half_release_point =
        tally_accounting::key_selection::release_point(|c| mechanism.release_probability(c), 0.5);
    let error = predicted_error(mechanism.thresholded_estimate(), laws, expected_released);
    Predicted {
        mechanism,
        expected_released,
        half_release_point,
        error,
    }
}

/// The error ([`PredictedError`]) of the estimates `estimate` releases (`None`: no count)
/// over items whose contributions follow `laws` as [`HeldItems::contribution_laws`] gives
/// them, `expected_released` the expected number of released items.
pub fn predicted_error(
    estimate: Option<ThresholdedEstimate>,
    laws: &[(u64, Vec<f64>)],
    expected_released: f64,
) -> PredictedError {
    let Some(estimate) = estimate else {
        return PredictedError::NoCount;
    };
    if expected_released <= 0.0 {
        return PredictedError::NothingReleased;
    }
    let shown = estimate.shown_error();
    let (mut absolute, mut relative) = (0.0, 0.0);
    for (sure, law) in laws {
        let holders = sure + law.len() as u64 - 1;
        let item: f64 = (*sure..)
            .zip(law)
            .filter(|&(_, &p)| p >= NEGLIGIBLE)
            .map(|(c, p)| p * shown.expected_absolute_error(c, holders))
            .sum();
        absolute += item;
        relative += item / holders as f64;
    }
    PredictedError::Estimates {
        absolute: absolute / expected_released,
        relative: relative / expected_released,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_binomial_matches_the_binomial() {
        let law = poisson_binomial([0.3; 4]);
        let binomial = [0.2401, 0.4116, 0.2646, 0.0756, 0.0081];
        for (a, b) in law.iter().zip(binomial) {
            assert!((a - b).abs() < 1e-15, "{law:?}");
        }
        // Mixed coins: P[0] = 0.5·0.9, P[2] = 0.5·0.1.
        let law = poisson_binomial([0.5, 0.1]);
        assert!((law[0] - 0.45).abs() < 1e-15 && (law[2] - 0.05).abs() < 1e-15);
        assert_eq!(poisson_binomial([]), vec![1.0]);
    }

    #[test]
    fn the_grid_stops_at_the_largest_client() {
        assert_eq!(max_items_grid(1), vec![1]);
        assert_eq!(max_items_grid(5), vec![1, 2, 4, 5]);
        assert_eq!(max_items_grid(8), vec![1, 2, 4, 8]);
        assert_eq!(
            max_items_grid(3000),
            vec![1, 2, 4, 8, 16, 32, 64, MAX_ITEMS_PER_CLIENT]
        );
    }

    fn held(rows: &[(&str, &str)]) -> HeldItems {
        let (clients, items): (Vec<&str>, Vec<&str>) = rows.iter().copied().unzip();
        HeldItems::new(&KeyedPopulation::from_rows(clients, items, "rows").unwrap())
    }

    #[test]
    fn repeated_rows_count_once_and_keep_probabilities_are_k_over_m() {
        let held = held(&[("a", "x"), ("a", "x"), ("a", "y"), ("b", "x")]);
        assert_eq!((held.clients(), held.largest()), (2, 2));
        assert_eq!(held.clients_over(1), 1);
        let laws = held.contribution_laws(1);
        // x: b keeps it surely, a with 1/2; y: a with 1/2.
        assert!(laws.contains(&(1, vec![0.5, 0.5])));
        assert!(laws.contains(&(0, vec![0.5, 0.5])));
    }
}
