//! The sample-and-threshold reproduction on its reduced grid: the grid's shape, determinism
//! across thread counts, and the findings table.

use tally_repro::report::Verdict;
use tally_repro::sample_threshold::{self, Config, Mechanism, Results};
use tally_repro::table::write_csv;

fn run_on(threads: usize, config: &Config) -> Results {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
        .install(|| sample_threshold::run(config, &|| {}))
        .expect("the quick grid runs")
}

fn csv_bytes(results: &Results, name: &str) -> Vec<u8> {
    let path = std::env::temp_dir().join(format!(
        "tally-repro-test-{}-{name}.csv",
        std::process::id()
    ));
    write_csv(&path, &results.rows).expect("csv");
    let bytes = std::fs::read(&path).expect("read csv");
    std::fs::remove_file(&path).expect("clean up");
    bytes
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let config = Config {
        reps: 2,
        ..Config::quick(11)
    };
    let one = run_on(1, &config);
    let two = run_on(2, &config);
    assert_eq!(one.rows.len(), config.rows());
    assert_eq!(csv_bytes(&one, "one"), csv_bytes(&two, "two"));
    // A different seed gives different rows.
    let other = run_on(2, &Config { seed: 12, ..config });
    assert_ne!(one.rows, other.rows);
}

#[test]
fn quick_grid_shape_calibrations_and_findings() {
    let config = Config::quick(5);
    let results = run_on(2, &config);
    assert_eq!(results.rows.len(), config.rows());
    assert_eq!(
        results.summaries.len(),
        config.settings() * Mechanism::ALL.len()
    );
    // The paper's calibration: τ = 20 and p_s = (1 − e^{−ε})/6; the tight one samples more.
    for c in &results.calibrations {
        assert_eq!(c.threshold, 20);
        let paper = (1.0 - (-c.epsilon).exp()) / 6.0;
        assert!((c.paper_rate - paper).abs() < 1e-12);
        assert!(c.paper_delta <= 1e-8 && c.tight_delta <= 1e-8);
        assert!(c.tight_rate > 2.0 * c.paper_rate, "{c:?}");
    }
    // Balcer–Cheu's condition fails at ε = 0.1 (m ≈ 15,900 < (400/ε²) ln(4/δ) ≈ 792,000).
    let bc = results
        .summaries
        .iter()
        .filter(|s| s.mechanism == "balcer-cheu" && (s.epsilon - 0.1).abs() < 1e-9);
    for s in bc {
        assert_eq!(s.reps, 0);
        assert_eq!(s.mae_mean, None);
    }
    let findings = sample_threshold::findings(&results);
    assert!(findings.len() >= 15);
    // The quick grid lacks B = 2^8, so the recall claims about it are not tested.
    assert!(
        findings
            .iter()
            .any(|f| f.claim.contains("2⁸") && f.verdict == Verdict::NotTested)
    );
}
