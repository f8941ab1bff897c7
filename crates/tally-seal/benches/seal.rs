//! The HPKE floor of a sealed report on this machine, one core: sealing one message (the
//! device's cost: an X25519 key generation and exchange, HKDF, ChaCha20-Poly1305) and opening
//! it (the aggregator's: one X25519 exchange, HKDF, ChaCha20-Poly1305), for a 16-byte message.
//! `cargo bench -p tally-seal --bench seal`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_messages::{Ask, PROTOCOL_VERSION, RoundQuery, Sampling};
use tally_seal::{Binding, KeyPair, Keyring, seal};

fn floor(c: &mut Criterion) {
    let query = RoundQuery {
        version: PROTOCOL_VERSION,
        round_id: "r-0123456789abcdef".into(),
        task_id: "t-0123456789abcdef".into(),
        population: "bench".into(),
        round: 1,
        attempt: 1,
        deadline: 1_900_000_000,
        max_report_bytes: 64,
        min_cohort: 1,
        cohort_target: 100,
        ask: Ask::Item {
            sampling_rate: 0.25,
        },
        sampling: Sampling::Aggregator,
    };
    let binding = Binding::of(&query);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let pair = KeyPair::generate(1, &mut rng);
    let config = pair.config();
    let keyring = Keyring::new(vec![pair]);
    let message = "a-sixteen-b-item";
    let mut group = c.benchmark_group("hpke_floor");
    group.throughput(Throughput::Elements(1));
    group.bench_function("seal", |b| {
        b.iter(|| seal(&config, &binding, black_box(message), &mut rng))
    });
    let sealed = seal(&config, &binding, message, &mut rng);
    group.bench_function("open", |b| {
        b.iter(|| keyring.open(&binding, black_box(&sealed)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, floor);
criterion_main!(benches);
