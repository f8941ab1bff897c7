//! Throughput of the Balcer–Cheu histogram's two execution paths, in logical messages per
//! second (each client's `1 + d·p` messages): every device answering the round's query into
//! one analyzer (on one core), and the counts drawn cell by cell.
//! `cargo bench -p tally-core --bench balcer_cheu`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_core::histogram::{DomainHistogram, DomainMap};
use tally_core::protocol::{DeviceQuery, RoundAggregator, RoundProtocol};
use tally_core::shuffle::BalcerCheuHistogram;

const USERS: u64 = 1_000_000;

fn paths(c: &mut Criterion) {
    let mut group = c.benchmark_group("balcer_cheu");
    group.sample_size(10);
    for domain in [16u32, 1024] {
        let mechanism = BalcerCheuHistogram::new(domain, 1.0, 1e-8, USERS).unwrap();
        let round = mechanism.round(DomainMap::Integers(domain)).unwrap();
        let items: Vec<u32> = (0..USERS).map(|i| (i % u64::from(domain)) as u32).collect();
        let mut holders = vec![0_u64; domain as usize];
        for &item in &items {
            holders[item as usize] += 1;
        }
        let messages = mechanism.message_cost().unwrap().messages_per_client * USERS as f64;
        group.throughput(Throughput::Elements(messages as u64));
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        group.bench_function(format!("per_client_d{domain}"), |b| {
            b.iter(|| {
                let mut analyzer = round.aggregator(ChaCha20Rng::seed_from_u64(0));
                for item in black_box(&items) {
                    let report = round.query().respond(item, &mut rng);
                    analyzer.absorb(report.expect("an item of the domain"));
                }
                analyzer.release()
            })
        });
        group.bench_function(format!("per_cell_d{domain}"), |b| {
            b.iter(|| mechanism.run_per_cell(black_box(&holders), &mut rng))
        });
    }
    group.finish();
}

criterion_group!(benches, paths);
criterion_main!(benches);
