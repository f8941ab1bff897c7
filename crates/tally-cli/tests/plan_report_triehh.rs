//! `tally plan triehh++ --report DIR`: the files it writes, and its predicted recall and number
//! of words found against simulated TrieHH++ runs.

#[allow(dead_code)] // `temp_file` is not needed here.
mod common;
#[allow(dead_code)] // `assert_not_compared`: TrieHH++ plans are for add/remove neighbours.
mod report_files;

use common::{json, tally};
use report_files::{assert_compared_at_level_share, scratch, written_report};
use std::collections::HashSet;
use tally_accounting::Neighbours;
use tally_accounting::composition::Composition;
use tally_accounting::key_selection::KeySelection;
use tally_accounting::sample_threshold::{Analysis, PlanTarget};
use tally_plan::triehh_plus::PrefixCounts;
use tally_sim::triehh_plus_release::{TriePlusSettings, per_level_mechanism, triehh_plus_counted};
use tally_sim::{CountedPopulation, Population};

const PLAN: &str = "plan triehh++ --epsilon 1 --delta 1e-8 --levels 4";

#[test]
fn report_is_written_with_its_figures_and_numbers() {
    let dir = scratch("plan-report-trie-written");
    let (html, report) = written_report(
        &format!(
            "{PLAN} --report {} --synthetic zipf:n=5000,domain=500,s=1.2 --top 8",
            dir.display()
        ),
        &dir,
    );
    // Four figures inline: release curve, relative error, recall and words found by ε.
    assert_eq!(html.matches("<svg").count(), 4, "figures");
    assert_eq!(report["plan"], json(&format!("{PLAN} --json")));
    let level = &report["per_level"];
    let rate = report["plan"]["per_level"]["sampling_rate"]
        .as_f64()
        .unwrap();
    let threshold = report["plan"]["per_level"]["threshold"].as_u64().unwrap();
    let selection = KeySelection::SampleThreshold(
        tally_accounting::sample_threshold::SampleThresholdParams::new(rate, threshold).unwrap(),
    );
    assert_eq!(level["release_50"].as_u64(), selection.release_point(0.5));
    assert_eq!(level["release_95"].as_u64(), selection.release_point(0.95));
    // Beside Laplace and Gaussian thresholding at the level's share, (1/4, 1e-8/4).
    assert_compared_at_level_share(
        level,
        &html,
        report["summary"].as_str().unwrap(),
        (1.0, 1e-8),
        4,
    );
    let sweep = report["population"]["sweep"].as_array().unwrap();
    assert_eq!(sweep.len(), 6);
    assert!(sweep.iter().all(|p| p["top"] == 8));
    // Recall grows with ε, up to a hair near 1: each ε gets its own threshold (that of the
    // smallest count a level can show, as the run chooses it), and a pair with a smaller
    // releasable count can find a frequent word with a little less probability.
    let recalls: Vec<f64> = sweep
        .iter()
        .map(|p| p["recall"].as_f64().unwrap())
        .collect();
    assert!(
        recalls.windows(2).all(|w| w[0] <= w[1] + 1e-5),
        "{recalls:?}"
    );
    assert!(recalls[0] < 0.5 && recalls[5] > 0.999, "{recalls:?}");
    assert_eq!(
        report["population"]["top_words"].as_array().unwrap().len(),
        8
    );
    // Without a report, a population or a segment is refused.
    let refused = tally(&format!("{PLAN} --segment 2"));
    assert!(!refused.status.success());
    let refused = tally(&format!("{PLAN} --dataset shakespeare"));
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--report"));
}

/// Words whose level prefixes are held by counts around a level's 50% release point: some
/// share their prefixes (`ab`, `abc`, `abd`), most are alone below their first letter, so
/// that a word's ancestors matter as much as its own level.
fn population(center: u64) -> Population {
    let firsts = ["a", "b", "c", "d", "e", "f", "g", "h", "k", "m"];
    let mut names: Vec<String> = Vec::new();
    for (i, first) in firsts.iter().enumerate() {
        for (j, rest) in ["", "b", "bc", "bd"].iter().enumerate() {
            // Counts from 0.7 to 1.6 of the center, different for every word.
            let share = 0.7 + 0.9 * ((7 * i + 3 * j) % 23) as f64 / 22.0;
            let count = (share * center as f64).round() as usize;
            names.extend(std::iter::repeat_n(format!("{first}{rest}"), count));
        }
    }
    Population::from_names(names, "words around the release point").expect("words")
}

/// Predicted recall@k and expected number of words found, against the means of 200
/// simulated restricted TrieHH++ runs along the counted path (seeds 0..200): within 5.3
/// standard errors (two-sided `α = 1.2e-7` per check, normal approximation; below `1e-6` over
/// both).
#[test]
fn predicted_recall_matches_simulated_runs() {
    let settings = TriePlusSettings {
        epsilon: 1.0,
        delta: 1e-8,
        levels: 4,
        segment: 1,
        restricted: true,
        composition: Composition::Tight,
        target: PlanTarget::Threshold(10),
        analysis: Analysis::Tight,
        neighbours: Neighbours::AddRemove,
        selection: None,
    };
    let params = *per_level_mechanism(&settings, false)
        .expect("plan")
        .params();
    let selection = KeySelection::SampleThreshold(params);
    let center = selection.release_point(0.5).expect("reached");
    let counted = CountedPopulation::from_population(&population(center));
    let prefixes = PrefixCounts::new(counted.items(), settings.segment, settings.levels);
    let top = 20;
    let predicted = prefixes.utility(&selection, top);
    let found = prefixes.found_probabilities(&selection);
    // The recall is uncertain: most top words are found with probability far from 0 and 1.
    assert!(
        found[..top]
            .iter()
            .filter(|&&p| p > 0.05 && p < 0.95)
            .count()
            > top / 2,
        "{found:?}"
    );
    let top_words: Vec<&str> = prefixes.words()[..top]
        .iter()
        .map(|(w, _)| w.as_str())
        .collect();

    let runs = 200;
    let (mut recalls, mut founds) = (Vec::new(), Vec::new());
    for seed in 0..runs {
        let release = triehh_plus_counted(&counted, &settings, seed, Some(seed)).expect("run");
        let words: HashSet<&str> = release.items.iter().map(|i| i.item.as_str()).collect();
        recalls.push(top_words.iter().filter(|w| words.contains(*w)).count() as f64 / top as f64);
        founds.push(words.len() as f64);
    }
    for (name, samples, expected) in [
        ("recall@20", &recalls, predicted.recall),
        ("words found", &founds, predicted.expected_found),
    ] {
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = samples.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let standard_error = (variance / n).sqrt();
        assert!(standard_error > 0.0, "{name}");
        assert!(
            (mean - expected).abs() <= 5.3 * standard_error,
            "{name}: simulated {mean} ± {standard_error}, predicted {expected}"
        );
    }
}
