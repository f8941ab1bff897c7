//! Throughput of the Balcer–Cheu histogram's two execution paths, in logical messages per
//! second (each client's `1 + d·p` messages): `cargo bench -p tally-core --bench balcer_cheu`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_core::histogram::DomainHistogram;
use tally_core::shuffle::BalcerCheuHistogram;

const USERS: u64 = 1_000_000;

fn paths(c: &mut Criterion) {
    let mut group = c.benchmark_group("balcer_cheu");
    group.sample_size(10);
    for domain in [16u32, 1024] {
        let mechanism = BalcerCheuHistogram::new(domain, 1.0, 1e-8, USERS).unwrap();
        let items: Vec<u32> = (0..USERS).map(|i| (i % u64::from(domain)) as u32).collect();
        let messages = mechanism.message_cost().unwrap().messages_per_client * USERS as f64;
        group.throughput(Throughput::Elements(messages as u64));
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        group.bench_function(format!("per_client_d{domain}"), |b| {
            b.iter(|| mechanism.run_per_client(black_box(&items), &mut rng))
        });
        group.bench_function(format!("per_cell_d{domain}"), |b| {
            b.iter(|| mechanism.run_per_cell(black_box(&items), &mut rng))
        });
    }
    group.finish();
}

criterion_group!(benches, paths);
criterion_main!(benches);
