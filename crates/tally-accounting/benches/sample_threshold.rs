//! Speed of the S&T analyses and solvers: `cargo bench -p tally-accounting`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tally_accounting::Neighbours;
use tally_accounting::sample_threshold::{
    Analysis, PlanTarget, SampleThresholdParams, delta, max_sampling_rate, plan,
};

fn tight_delta(c: &mut Criterion) {
    let mut group = c.benchmark_group("tight_delta");
    // ε = 1 with the largest rate each threshold allows at δ = 1e-8, the costliest case.
    for threshold in [20, 100] {
        let rate = max_sampling_rate(1.0, 1e-8, threshold, Analysis::Tight, Neighbours::AddRemove)
            .unwrap();
        let params = SampleThresholdParams::new(rate, threshold).unwrap();
        group.bench_function(format!("tau_{threshold}"), |b| {
            b.iter(|| {
                delta(
                    1.0,
                    black_box(&params),
                    Analysis::Tight,
                    Neighbours::AddRemove,
                )
            })
        });
    }
    group.finish();
}

fn solvers(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve_tight");
    group.bench_function("max_rate_tau_20", |b| {
        b.iter(|| {
            max_sampling_rate(
                1.0,
                1e-8,
                black_box(20),
                Analysis::Tight,
                Neighbours::AddRemove,
            )
        })
    });
    group.bench_function("min_released_count", |b| {
        b.iter(|| {
            plan(
                black_box(1.0),
                1e-8,
                PlanTarget::MinReleasedCount,
                Analysis::Tight,
                Neighbours::AddRemove,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, tight_delta, solvers);
criterion_main!(benches);
