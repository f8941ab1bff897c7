//! The aggregator's rate on a relayed batch, one request at a time, beside the HPKE floor
//! (`cargo bench -p tally-seal --bench seal`): 10,000 sealed one-message reports of a
//! split-trust histogram round sent as one `POST /v1/rounds/{id}/relayed` to the server in
//! process (no network), timed from the request to the answer: reading the JSON, opening every
//! message on one core, checking report ids, admitting and counting each, and closing,
//! releasing and committing the round. The devices' sealing and the round's creation are not
//! timed. `cargo bench -p tally-server --bench relayed`.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_messages::{
    Budget, CredentialSpec, PROTOCOL_VERSION, PopulationSpec, RelayedBatch, Role, RoundQuery,
    TaskInfo, TrustModel,
};
use tally_seal::{Binding, KeyConfig, decode_key_configs, seal};
use tower::ServiceExt;

const MESSAGES: u64 = 10_000;

/// A request with `token` and a JSON `body`.
fn request(method: &str, path: &str, token: &str, body: Option<String>) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap()
}

async fn send(router: &Router, request: Request<Body>) -> Vec<u8> {
    let response = router.clone().oneshot(request).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec()
}

/// A new histogram task of the split population, its round, and a batch of `MESSAGES`
/// reports sealed for it.
async fn next_batch(
    router: &Router,
    analyst: &str,
    relay: &str,
    key: &KeyConfig,
    rng: &mut ChaCha20Rng,
) -> (RoundQuery, String) {
    let spec = serde_json::json!({
        "version": PROTOCOL_VERSION, "population": "bench", "expected_population": MESSAGES,
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
        "kind": {"type": "histogram", "mechanism": "sample-threshold", "sampling_rate": 0.5},
        "rounds": {"min_cohort": 1, "deadline_secs": 3600, "max_attempts": 1,
                   "max_report_bytes": 64}
    });
    let task: TaskInfo = serde_json::from_slice(
        &send(
            router,
            request("POST", "/v1/tasks", analyst, Some(spec.to_string())),
        )
        .await,
    )
    .unwrap();
    let rounds: Vec<RoundQuery> =
        serde_json::from_slice(&send(router, request("GET", "/v1/rounds", relay, None)).await)
            .unwrap();
    let round = rounds.into_iter().find(|r| r.task_id == task.id).unwrap();
    let binding = Binding::of(&round);
    let messages = (0..MESSAGES)
        .map(|i| seal(key, &binding, &format!("item-{}", i % 100), rng))
        .collect();
    let batch = RelayedBatch {
        version: PROTOCOL_VERSION,
        attempt: round.attempt,
        cohort: MESSAGES,
        messages,
    };
    (round, serde_json::to_string(&batch).unwrap())
}

fn relayed(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bench.db").display());
    let (server, router, analyst, relay) = tokio.block_on(async {
        let population = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "bench".into(),
            budget: Budget {
                epsilon: 1e9,
                delta: 0.5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::Split,
            allow_device_sampling: false,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        tally_server::create_population(&db, &population)
            .await
            .unwrap();
        let credential = |role, name: &str| CredentialSpec {
            version: PROTOCOL_VERSION,
            role,
            name: name.into(),
            populations: vec!["bench".into()],
        };
        let analyst = tally_server::create_credential(&db, &credential(Role::Analyst, "a"))
            .await
            .unwrap()
            .token;
        let relay = tally_server::create_credential(&db, &credential(Role::Relay, "r"))
            .await
            .unwrap()
            .token;
        let server = tally_server::Server::start(&db).await.unwrap();
        let router = server.router();
        (server, router, analyst, relay)
    });
    let key = tokio.block_on(async {
        let body = send(&router, request("GET", "/v1/hpke-keys", &relay, None)).await;
        decode_key_configs(&body).unwrap().remove(0)
    });
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut group = c.benchmark_group("aggregator");
    group.sample_size(10);
    group.throughput(Throughput::Elements(MESSAGES));
    group.bench_function("relayed_batch_10k", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                tokio.block_on(async {
                    let (round, body) = next_batch(&router, &analyst, &relay, &key, &mut rng).await;
                    let path = format!("/v1/rounds/{}/relayed", round.round_id);
                    let started = Instant::now();
                    send(&router, request("POST", &path, &relay, Some(body))).await;
                    timed += started.elapsed();
                });
            }
            timed
        })
    });
    group.finish();
    tokio.block_on(server.shutdown());
}

criterion_group!(benches, relayed);
criterion_main!(benches);
