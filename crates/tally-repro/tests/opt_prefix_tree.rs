//! The OptPrefixTree reproduction on a tiny grid: every variant runs, the outputs are written,
//! and the rows do not depend on the number of threads.

use std::time::Duration;

use tally_repro::opt_prefix_tree::{Config, Variant, findings, run, write_outputs};

fn tiny() -> Config {
    Config {
        users: 3000,
        epsilons: vec![4.0],
        reps: 1,
        ..Config::quick(3)
    }
}

#[test]
fn tiny_grid_runs_and_writes_its_outputs() {
    let config = tiny();
    let results = run(&config, &|| {}).unwrap();
    assert_eq!(results.rows.len(), config.runs());
    assert_eq!(results.rows.len(), Variant::ALL.len());
    for row in &results.rows {
        assert!((0.0..=1.0).contains(&row.captured_mass), "{row:?}");
    }
    assert_eq!(findings(&results).len(), 6);
    let dir = std::env::temp_dir().join(format!("tally-repro-opt-{}", std::process::id()));
    let outputs = write_outputs(&results, &dir, Duration::from_secs(1)).unwrap();
    for file in [&outputs.runs, &outputs.summary, &outputs.report]
        .into_iter()
        .chain(&outputs.figures)
    {
        assert!(
            std::fs::metadata(file).unwrap().len() > 0,
            "{}",
            file.display()
        );
    }
    let report = std::fs::read_to_string(&outputs.report).unwrap();
    assert!(report.contains("seed: 3") && report.contains("captured-mass.png"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn rows_do_not_depend_on_the_number_of_threads() {
    let config = tiny();
    let rows = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run(&config, &|| {}).unwrap().rows)
    };
    assert_eq!(rows(1), rows(2));
}
