//! The numbers of `tally plan triehh++ --report DIR`: the release curve and relative error of
//! one level's sample-and-threshold round at the plan's per-level parameters, beside Laplace and
//! Gaussian thresholding at the level's share of the plan's `(ε, δ)`, the predicted
//! recall of the heavy hitters on a known population over a sweep of `ε`, and a summary in
//! words. `tally` renders them as `index.html`; [`TriePlusReport::document`] is `plan.json`.
//!
//! # The prediction
//!
//! A word is found when the terminal prefix `word + '$'` is released at the level it ends in.
//! With devices reporting only below a surviving prefix (the restricted variant, the default),
//! that happens exactly when each of the word's level prefixes is released: the prefix's
//! reporters at a level are then all the devices whose word has that prefix (they all share
//! its parent, which survived), and each level samples with fresh coins. So, with `c_ℓ` the
//! number of devices whose word has the word's level-`ℓ` prefix,
//! `P[found] = Π_ℓ P[Bin(c_ℓ, p_s) ≥ τ]`, exact. The prefixes are those
//! [`PrefixRound::report`] gives, so the prediction follows the implementation's segments and
//! terminator; a word of `L·g` characters or more is never found.

use std::collections::HashMap;

use serde_json::{Value, json};
use tally_accounting::Neighbours;
use tally_accounting::key_selection::KeySelection;
use tally_core::heavy_hitters::{PrefixRound, TERMINATOR};

use crate::key_selection::{
    RoundCurves, count_text, level_share, parameters_json, parameters_text, sweep_epsilons,
};
use tally_protocol::shown::PrivacyPair;
use tally_protocol::triehh_plus_plan::TriePlusPlan;

/// What TrieHH++ is expected to find in one population.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrieUtility {
    /// The number of top words `k` the recall is over (at most the number of words).
    pub top: usize,
    /// Predicted recall@k: `(1/k)·Σ_{i ≤ k} P[found w_i]` over the `k` words with the largest
    /// counts (ties broken by the word, in byte order).
    pub recall: f64,
    /// The expected number of words found, `Σ_w P[found w]`.
    pub expected_found: f64,
    /// The mean absolute error of the found words' estimates, as a ratio of expectations:
    /// `Σ_w E[|estimate_w − c_w|·1{found w}] / Σ_w P[found w]` (0 when nothing is expected to
    /// be found).
    pub mean_absolute_error: f64,
}

/// A population's words and how TrieHH++ with `segment` characters per level and `levels`
/// levels splits them into prefixes.
#[derive(Clone, Debug)]
pub struct PrefixCounts {
    /// `(word, devices holding it)`, by decreasing count, ties by the word.
    words: Vec<(String, u64)>,
    /// For each word (in `words` order), the devices whose word has each of its level
    /// prefixes, level 1 first; empty when the word cannot be found within the levels.
    paths: Vec<Vec<u64>>,
}

impl PrefixCounts {
    /// Counts the level prefixes of `items` (`(word, devices holding it)`, each word once).
    pub fn new(items: &[(String, u64)], segment: usize, levels: usize) -> Self {
        let rounds: Vec<PrefixRound> = (1..=levels)
            .map(|round| PrefixRound {
                round,
                segment,
                live_parents: None,
            })
            .collect();
        let mut reporters: Vec<HashMap<String, u64>> = vec![HashMap::new(); levels];
        for (word, count) in items {
            for (round, level) in rounds.iter().zip(&mut reporters) {
                let Some(prefix) = round.report(word) else {
                    break;
                };
                *level.entry(prefix).or_default() += count;
            }
        }
        let mut words = items.to_vec();
        words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let paths = words
            .iter()
            .map(|(word, _)| {
                let prefixes: Vec<String> = rounds.iter().map_while(|r| r.report(word)).collect();
                if !prefixes.last().is_some_and(|p| p.ends_with(TERMINATOR)) {
                    return Vec::new();
                }
                prefixes
                    .iter()
                    .zip(&reporters)
                    .map(|(prefix, level)| level[prefix])
                    .collect()
            })
            .collect();
        Self { words, paths }
    }

    /// The words by decreasing count, ties by the word.
    pub fn words(&self) -> &[(String, u64)] {
        &self.words
    }

    /// For each word (in [`Self::words`] order) when every level runs `selection`: the
    /// probability that all its prefixes above the terminal one are released, and the
    /// terminal prefix's count (`None` for a word the levels cannot reach).
    fn ancestors(&self, selection: &KeySelection) -> Vec<(f64, Option<u64>)> {
        let mut released: HashMap<u64, f64> = HashMap::new();
        let mut probability = |count: u64| {
            *released
                .entry(count)
                .or_insert_with(|| selection.release_probability(count))
        };
        self.paths
            .iter()
            .map(|path| match path.split_last() {
                Some((&terminal, above)) => (
                    above.iter().map(|&c| probability(c)).product(),
                    Some(terminal),
                ),
                None => (0.0, None),
            })
            .collect()
    }

    /// `P[found]` of each word (in [`Self::words`] order) when every level runs
    /// `selection`.
    pub fn found_probabilities(&self, selection: &KeySelection) -> Vec<f64> {
        self.ancestors(selection)
            .into_iter()
            .map(|(above, terminal)| {
                terminal.map_or(0.0, |c| above * selection.release_probability(c))
            })
            .collect()
    }

    /// The predicted utility of TrieHH++ with every level running `selection`, recall over
    /// the `top` most common words.
    pub fn utility(&self, selection: &KeySelection, top: usize) -> TrieUtility {
        let ancestors = self.ancestors(selection);
        let top = top.min(ancestors.len());
        // The terminal level's release is independent of the levels above it, so a found
        // word's error is its ancestors' release probability times the terminal level's
        // released absolute error (the terminal prefix's devices are the word's own).
        let (mut found, mut expected_found, mut absolute_error) = (Vec::new(), 0.0, 0.0);
        for (above, terminal) in ancestors {
            let (p, error) = terminal.map_or((0.0, 0.0), |c| {
                (
                    above * selection.release_probability(c),
                    above * selection.released_absolute_error(c),
                )
            });
            found.push(p);
            expected_found += p;
            absolute_error += error;
        }
        TrieUtility {
            top,
            recall: if top == 0 {
                0.0
            } else {
                found[..top].iter().sum::<f64>() / top as f64
            },
            expected_found,
            mean_absolute_error: if expected_found > 0.0 {
                absolute_error / expected_found
            } else {
                0.0
            },
        }
    }
}

/// One `ε` of the population sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct TrieSweepPoint {
    /// The `ε` planned for.
    pub epsilon: f64,
    /// The per-level selection planned for it, or `None` where no parameters meet it.
    pub selection: Option<KeySelection>,
    /// The predicted utility, with a selection.
    pub utility: Option<TrieUtility>,
}

/// The population the report predicts on.
#[derive(Clone, Debug, PartialEq)]
pub struct TrieSweep {
    /// What the population is.
    pub description: String,
    /// The number of devices.
    pub clients: u64,
    /// The number of distinct words.
    pub words: usize,
    /// The sweep, by increasing `ε`.
    pub points: Vec<TrieSweepPoint>,
    /// The top words at the plan's `ε`: `(word, count, P[found])`.
    pub top_words: Vec<(String, u64, f64)>,
}

/// Everything the TrieHH++ report shows.
#[derive(Clone, Debug)]
pub struct TriePlusReport {
    /// The plan.
    pub plan: TriePlusPlan,
    /// Characters added per level `g`.
    pub segment: usize,
    /// One level's selection with its marked counts, release curve and relative error, beside
    /// the noise-based selections at the level's share.
    pub level: RoundCurves,
    /// The population sweep, with a population.
    pub population: Option<TrieSweep>,
    /// The plain-language summary.
    pub summary: String,
}

/// A population of words to predict on.
#[derive(Clone, Copy, Debug)]
pub struct KnownWords<'a> {
    /// What it is.
    pub description: &'a str,
    /// The number of devices.
    pub clients: u64,
    /// `(word, devices holding it)`, each word once.
    pub items: &'a [(String, u64)],
    /// The `k` of recall@k.
    pub top: usize,
}

/// What the sweep's plans hold fixed: the given sampling rate and threshold of the plan.
#[derive(Clone, Copy, Debug)]
pub struct SweepTarget {
    /// The per-level sampling rate given to the plan.
    pub sampling_rate: Option<f64>,
    /// The per-level threshold given to the plan.
    pub threshold: Option<u64>,
}

/// Builds the report of `plan` (with `segment` characters per level), predicting on `words`
/// with plans for the sweep's `ε` solved as `target` says.
pub fn build(
    plan: TriePlusPlan,
    segment: usize,
    target: SweepTarget,
    words: Option<KnownWords<'_>>,
) -> TriePlusReport {
    // TrieHH++'s levels are calibrated for add/remove neighbours.
    let level = RoundCurves::new(
        "S&T per level",
        KeySelection::SampleThreshold(plan.params),
        level_share(plan.epsilon, plan.delta, plan.levels, Neighbours::AddRemove),
    );
    let population = words.map(|known| sweep(&plan, segment, target, known));
    let summary = summary(&plan, segment, &level, population.as_ref());
    TriePlusReport {
        plan,
        segment,
        level,
        population,
        summary,
    }
}

/// Plans the levels at each `ε` of the sweep and predicts TrieHH++'s utility on `known`.
fn sweep(
    plan: &TriePlusPlan,
    segment: usize,
    target: SweepTarget,
    known: KnownWords<'_>,
) -> TrieSweep {
    let counts = PrefixCounts::new(known.items, segment, plan.levels as usize);
    let points = sweep_epsilons(plan.epsilon)
        .into_iter()
        .map(|epsilon| {
            let selection = if epsilon.total_cmp(&plan.epsilon).is_eq() {
                Some(KeySelection::SampleThreshold(plan.params))
            } else {
                TriePlusPlan::solve(
                    epsilon,
                    plan.delta,
                    plan.levels,
                    plan.analysis,
                    target.sampling_rate,
                    target.threshold,
                )
                .ok()
                .map(|p| KeySelection::SampleThreshold(p.params))
            };
            TrieSweepPoint {
                epsilon,
                selection,
                utility: selection.map(|s| counts.utility(&s, known.top)),
            }
        })
        .collect();
    let found = counts.found_probabilities(&KeySelection::SampleThreshold(plan.params));
    let top_words = counts
        .words()
        .iter()
        .zip(found)
        .take(known.top)
        .map(|((word, count), p)| (word.clone(), *count, p))
        .collect();
    TrieSweep {
        description: known.description.to_owned(),
        clients: known.clients,
        words: known.items.len(),
        points,
        top_words,
    }
}

/// The plain-language summary.
fn summary(
    plan: &TriePlusPlan,
    segment: usize,
    curves: &RoundCurves,
    population: Option<&TrieSweep>,
) -> String {
    let level = curves.round();
    let mut text = format!(
        "At {} over {} levels of {segment} character(s), each level \
         ({}) releases a prefix held by {} devices half the time and one held by {} devices \
         95% of the time; a word is found only when each of its prefixes is released at its \
         level (every prefix is held by at least the word's devices)",
        PrivacyPair(plan.epsilon, plan.delta),
        plan.levels,
        parameters_text(&level.selection),
        count_text(level.marked[0]),
        count_text(level.marked[1]),
    );
    if let Some(error) = level.marked[1].and_then(|c| level.selection.relative_error(c)) {
        text += &format!(
            "; the estimate of a word held by {} devices is off by {:.1}% on average when it \
             is released",
            count_text(level.marked[1]),
            100.0 * error
        );
    }
    text += ".";
    text += &curves.comparison_text("devices");
    let at_plan = population.and_then(|sweep| {
        let point = sweep
            .points
            .iter()
            .find(|p| p.epsilon.total_cmp(&plan.epsilon).is_eq())?;
        Some((sweep, point.utility?))
    });
    if let Some((sweep, utility)) = at_plan {
        text += &format!(
            " On {} ({} devices, {} distinct words), the expected share of the {} most common \
             words found is {:.1}%, about {:.1} words are expected to be found in all, and a \
             found word's estimate is off by {:.1} devices on average.",
            sweep.description,
            sweep.clients,
            sweep.words,
            utility.top,
            100.0 * utility.recall,
            utility.expected_found,
            utility.mean_absolute_error,
        );
        if let Some(best) = sweep
            .points
            .iter()
            .filter(|p| p.utility.is_some_and(|u| u.recall >= 0.95))
            .map(|p| p.epsilon)
            .next()
        {
            text += &format!(" The sweep first finds 95% of them at ε = {best}.");
        }
    }
    text
}

impl TriePlusReport {
    /// `plan.json`: the plan's `--json` document and every number the page shows.
    pub fn document(&self) -> Value {
        let population = self.population.as_ref().map(|sweep| {
            json!({
                "description": sweep.description,
                "clients": sweep.clients,
                "words": sweep.words,
                "sweep": sweep.points.iter().map(|p| json!({
                    "epsilon": p.epsilon,
                    "per_level": p.selection.as_ref().map(parameters_json),
                    "recall": p.utility.map(|u| u.recall),
                    "top": p.utility.map(|u| u.top),
                    "expected_found": p.utility.map(|u| u.expected_found),
                    "mean_absolute_error": p.utility.map(|u| u.mean_absolute_error),
                })).collect::<Vec<_>>(),
                "top_words": sweep.top_words.iter().map(|(word, count, p)| json!({
                    "word": word,
                    "count": count,
                    "found_probability": p,
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "plan": self.plan.document(),
            "segment": self.segment,
            "per_level": self.level.document(),
            "population": population,
            "summary": self.summary,
        })
    }
}
