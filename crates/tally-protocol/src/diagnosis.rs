//! The diagnosis a histogram or heavy-hitter document carries: when it releases fewer than
//! [`ReleaseDiagnosis::THIN_BELOW`] items, why (the count an item needs from the calibration
//! that ran, the largest count the release shows, the number of clients) and what would help;
//! and a warning whenever `δ ≥ 1/n` for `n` clients.
//!
//! Only what the release already reveals is stated: the calibration's parameters, the number
//! of clients (a parameter of every such document) and the counts of the released items. A
//! count the release withholds (the largest sampled count of an empty release, the true count
//! of any item) is never stated: an empty release says only that every count stayed below the
//! threshold, which the release itself shows.

use tally_accounting::naming::Parameter;
use tally_messages::{ReleaseDiagnosis, ReleasedItem};

/// How a mechanism decides what to release, as the diagnosis states it.
#[derive(Clone, Debug)]
pub struct ReleaseRule {
    /// The smallest number of clients holding an item at which it is released with
    /// probability at least one half (`None` if none up to 2^40).
    pub release_point: Option<u64>,
    /// Whether [`ReleaseRule::release_point`] is exact for the release law.
    pub exact: bool,
    /// The rule in words, ending without a full stop: "each client is sampled at rate 0.0123
    /// and an item is released when its sampled count reaches 15".
    pub rule: String,
    /// What the released counts are: "sampled count", "noisy count".
    pub count_kind: &'static str,
}

/// What a reader could change to release more, as the diagnosis advises.
#[derive(Clone, Copy, Debug)]
pub enum Remedies {
    /// A histogram over clients of at most `max_items` distinct items each.
    Histogram {
        /// The bound on each client's distinct items.
        max_items: u32,
    },
    /// Heavy hitters found by a prefix tree (or one round) with `planner` the command that
    /// shows its calibration, if there is one.
    HeavyHitters {
        /// Whether the algorithm runs levels that share the budget.
        levels: bool,
        /// The planner's command, e.g. `tally plan triehh++`.
        planner: Option<&'static str>,
    },
}

/// The diagnosis of a release of `items` over `clients` clients, run by `rule` with the
/// guarantee's `delta`.
pub fn diagnose(
    items: &[ReleasedItem],
    clients: u64,
    delta: f64,
    rule: &ReleaseRule,
    remedies: Remedies,
) -> ReleaseDiagnosis {
    let largest_released_count = items
        .iter()
        .filter_map(|item| item.count.map(|c| c as f64).or(item.estimate))
        .filter(|count| count.is_finite())
        .reduce(f64::max);
    let thin = items.len() < ReleaseDiagnosis::THIN_BELOW;
    let explanation = if thin {
        explain(items.len(), clients, largest_released_count, rule, remedies)
    } else {
        Vec::new()
    };
    ReleaseDiagnosis {
        clients,
        release_point: rule.release_point,
        release_point_exact: rule.exact,
        largest_released_count,
        thin,
        explanation,
        warnings: delta_warning(delta, clients).into_iter().collect(),
    }
}

/// The warning a guarantee of `delta` over `clients` clients calls for when `δ ≥ 1/n`: a
/// mechanism that publishes one client's data whole, chosen at random, meets such a `δ`.
pub fn delta_warning(delta: f64, clients: u64) -> Option<String> {
    (clients > 0 && delta * clients as f64 >= 1.0).then(|| {
        format!(
            "δ = {delta:.3e} is at least 1/n = {:.3e} for the n = {clients} clients: a \
             mechanism that publishes one client's data whole meets such a δ; choose δ well \
             below 1/n (1/n² = {:.1e} or smaller)",
            1.0 / clients as f64,
            1.0 / (clients as f64 * clients as f64)
        )
    })
}

/// Why a release of `released` items is thin, and what would help.
fn explain(
    released: usize,
    clients: u64,
    largest: Option<f64>,
    rule: &ReleaseRule,
    remedies: Remedies,
) -> Vec<String> {
    let what = match released {
        0 => "Nothing was released".to_owned(),
        1 => "Only 1 item was released".to_owned(),
        n => format!("Only {n} items were released"),
    };
    let mut sentences = vec![format!("{what} from {clients} clients: {}.", rule.rule)];
    let about = if rule.exact { "" } else { "about " };
    sentences.push(match rule.release_point {
        Some(point) if point > clients => format!(
            "An item is released with probability ½ once {about}{point} clients hold it, more \
             than the {clients} clients there are: at these settings no item can be expected \
             to appear."
        ),
        Some(point) => format!(
            "An item is released with probability ½ once {about}{point} of the {clients} \
             clients hold it."
        ),
        None => "No number of clients up to 2^40 releases an item with probability ½ at these \
                 settings."
            .to_owned(),
    });
    sentences.push(match largest {
        Some(largest) => format!(
            "The largest released {} is {largest:.1}; every other item stayed below the \
             threshold.",
            rule.count_kind
        ),
        None if released == 0 => format!(
            "Every item's {} stayed below the threshold (the true counts are not released).",
            rule.count_kind
        ),
        None => "This mechanism releases no counts.".to_owned(),
    });
    sentences.push(advice(remedies));
    sentences
}

/// What would release more.
fn advice(remedies: Remedies) -> String {
    match remedies {
        Remedies::Histogram { max_items: 1 } => format!(
            "What would help: a larger ε (the count an item needs falls as ε grows); when a \
             client holds several items, counting each client's up to K distinct items ({}) \
             rather than one row per client; `tally plan histogram` on the same input, ε and δ \
             compares every mechanism and K on the data and recommends one.",
            Parameter("max_items_per_client").with("K")
        ),
        Remedies::Histogram { max_items } => format!(
            "What would help: a larger ε (the count an item needs falls as ε grows); a different \
             bound on each client's items than {max_items} ({}: a smaller bound needs fewer \
             clients per item but keeps fewer of each client's items); `tally plan histogram` \
             on the same input, ε and δ predicts the released items of every mechanism and \
             bound on the data and recommends one.",
            Parameter("max_items_per_client")
        ),
        Remedies::HeavyHitters { levels, planner } => {
            let levels = if levels {
                "; fewer levels or a longer segment (each level spends part of the budget)"
            } else {
                ""
            };
            let plan = planner.map_or_else(String::new, |planner| {
                format!("; `{planner}` with the same ε and δ shows the calibration")
            });
            format!(
                "What would help: a larger ε (the count an item needs falls as ε grows){levels}\
                 {plan}."
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(release_point: Option<u64>) -> ReleaseRule {
        ReleaseRule {
            release_point,
            exact: true,
            rule: "an item is released when its sampled count reaches 20".to_owned(),
            count_kind: "sampled count",
        }
    }

    fn item(count: u64) -> ReleasedItem {
        ReleasedItem {
            item: count.to_string(),
            count: Some(count),
            estimate: Some(count as f64 * 10.0),
        }
    }

    #[test]
    fn an_empty_release_states_the_count_it_needs_and_no_withheld_count() {
        let diagnosis = diagnose(
            &[],
            1419,
            1e-8,
            &rule(Some(2400)),
            Remedies::Histogram { max_items: 1 },
        );
        assert!(diagnosis.thin);
        assert_eq!(diagnosis.largest_released_count, None);
        let text = diagnosis.explanation.join(" ");
        assert!(
            text.starts_with("Nothing was released from 1419 clients"),
            "{text}"
        );
        assert!(
            text.contains("once 2400 clients hold it, more than the 1419"),
            "{text}"
        );
        assert!(text.contains("stayed below the threshold"), "{text}");
        assert!(text.contains("--max-items-per-client"), "{text}");
        assert!(text.contains("tally plan histogram"), "{text}");
        assert!(diagnosis.warnings.is_empty());
    }

    #[test]
    fn a_thin_release_states_its_largest_released_count() {
        let diagnosis = diagnose(
            &[item(40), item(21)],
            10_000,
            1e-8,
            &rule(Some(300)),
            Remedies::Histogram { max_items: 8 },
        );
        assert_eq!(diagnosis.largest_released_count, Some(40.0));
        let text = diagnosis.explanation.join(" ");
        assert!(text.starts_with("Only 2 items were released"), "{text}");
        assert!(
            text.contains("largest released sampled count is 40.0"),
            "{text}"
        );
        assert!(text.contains("than 8"), "{text}");
    }

    #[test]
    fn a_full_release_explains_nothing() {
        let items: Vec<_> = (20..20 + ReleaseDiagnosis::THIN_BELOW as u64)
            .map(item)
            .collect();
        let diagnosis = diagnose(
            &items,
            10_000,
            1e-8,
            &rule(Some(300)),
            Remedies::HeavyHitters {
                levels: true,
                planner: None,
            },
        );
        assert!(!diagnosis.thin);
        assert!(diagnosis.explanation.is_empty());
    }

    #[test]
    fn delta_of_one_over_n_or_more_warns() {
        assert!(delta_warning(1e-3, 999).is_none());
        let warning = delta_warning(1e-3, 1000).unwrap();
        assert!(warning.contains("at least 1/n"), "{warning}");
        assert!(delta_warning(0.0, 1000).is_none());
        assert!(delta_warning(1.0, 0).is_none());
    }
}
