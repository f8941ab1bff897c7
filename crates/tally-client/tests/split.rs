//! Devices of a split-trust population: a fleet seals every message to the aggregator's key,
//! fetched from the aggregator itself, and uploads it to a relay that serves a key of its own
//! (a relay trying to read the reports): the relay opens none, and the aggregator, to which
//! the relay forwards them, opens, counts and releases them all.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use tally_client::{AggregatorKey, Client, ClientError, Fleet, FleetConfig};
use tally_messages::{
    Budget, CheckInGrant, CredentialSpec, PROTOCOL_VERSION, PopulationSpec, RelayedBatch, Role,
    RoundQuery, SealedUploadBatch, TaskInfo, TaskResult, TaskSpec, TaskState, TrustModel,
    UploadReceipt,
};
use tally_seal::{Binding, KeyPair, Keyring, encode_key_configs};
use tokio::net::TcpListener;

/// Serves `router` on a free loopback port and returns its base URL.
async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

/// A relay that reads what it can: it serves a key of its own, keeps every sealed upload,
/// and forwards a round's messages to the aggregator once `cohort` devices uploaded.
#[derive(Clone)]
struct CuriousRelay {
    /// The aggregator, with the relay's credential.
    aggregator: Client,
    /// The relay's credential at the aggregator.
    token: String,
    own_key: KeyPair,
    cohort: usize,
    kept: Arc<Mutex<Vec<String>>>,
    devices: Arc<Mutex<usize>>,
    /// The round it forwarded.
    forwarded: Arc<Mutex<Option<RoundQuery>>>,
}

async fn own_keys(State(relay): State<CuriousRelay>) -> Vec<u8> {
    encode_key_configs(&[relay.own_key.config()])
}

async fn rounds(State(relay): State<CuriousRelay>) -> Json<Vec<RoundQuery>> {
    Json(relay.aggregator.open_rounds().await.unwrap())
}

async fn task_info(State(relay): State<CuriousRelay>, Path(id): Path<String>) -> Json<TaskInfo> {
    Json(relay.aggregator.task(&id).await.unwrap())
}

/// The aggregator's open round `id`.
async fn open_round(relay: &CuriousRelay, id: &str) -> RoundQuery {
    let rounds = relay.aggregator.open_rounds().await.unwrap();
    rounds.into_iter().find(|q| q.round_id == id).unwrap()
}

async fn check_in(State(relay): State<CuriousRelay>, Path(id): Path<String>) -> Json<CheckInGrant> {
    let query = open_round(&relay, &id).await;
    Json(CheckInGrant {
        query,
        tokens: vec!["0".repeat(32)],
    })
}

async fn sealed_uploads(
    State(relay): State<CuriousRelay>,
    Path(id): Path<String>,
    Json(batch): Json<SealedUploadBatch>,
) -> Json<UploadReceipt> {
    let accepted = batch.uploads.len();
    let forward = {
        let mut kept = relay.kept.lock().unwrap();
        let mut devices = relay.devices.lock().unwrap();
        for upload in batch.uploads {
            kept.extend(upload.messages);
        }
        *devices += accepted;
        (*devices == relay.cohort).then(|| kept.clone())
    };
    if let Some(messages) = forward {
        let round = open_round(&relay, &id).await;
        let batch = RelayedBatch {
            version: PROTOCOL_VERSION,
            attempt: round.attempt,
            cohort: relay.cohort as u64,
            messages,
        };
        let answer = reqwest::Client::new()
            .post(format!(
                "{}/v1/rounds/{id}/relayed",
                relay.aggregator.base_url()
            ))
            .bearer_auth(&relay.token)
            .json(&batch)
            .send()
            .await
            .unwrap();
        assert!(
            answer.status().is_success(),
            "{}",
            answer.text().await.unwrap()
        );
        *relay.forwarded.lock().unwrap() = Some(round);
    }
    Json(UploadReceipt {
        accepted: u32::try_from(accepted).unwrap(),
        rejected: Vec::new(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_serving_its_own_key_reads_nothing_devices_seal() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let population = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: "split".into(),
        budget: Budget {
            epsilon: 10.0,
            delta: 1e-5,
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
        populations: vec!["split".into()],
    };
    let analyst = tally_server::create_credential(&db, &credential(Role::Analyst, "analyst"))
        .await
        .unwrap()
        .token;
    let relay_token = tally_server::create_credential(&db, &credential(Role::Relay, "relay"))
        .await
        .unwrap()
        .token;
    let server = tally_server::Server::start(&db).await.unwrap();
    let aggregator_url = serve(server.router()).await;
    let analyst = Client::new(&aggregator_url).unwrap().with_token(&analyst);
    let task: TaskSpec = serde_json::from_value(serde_json::json!({
        "version": PROTOCOL_VERSION,
        "population": "split",
        "expected_population": 60,
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
        "kind": {"type": "histogram", "mechanism": "sample-threshold", "sampling_rate": 0.5},
        "rounds": {"min_cohort": 60, "cohort_target": 60, "deadline_secs": 60,
                   "max_attempts": 1, "max_report_bytes": 64}
    }))
    .unwrap();
    let task = analyst.create_task(&task).await.unwrap();
    assert_eq!(task.guarantee.trust_model, TrustModel::Split);

    let relay = CuriousRelay {
        aggregator: Client::new(&aggregator_url)
            .unwrap()
            .with_token(&relay_token),
        token: relay_token,
        own_key: KeyPair::generate(0, &mut rand::rng()),
        cohort: 60,
        kept: Arc::default(),
        devices: Arc::default(),
        forwarded: Arc::default(),
    };
    let relay_url = serve(
        Router::new()
            .route("/v1/hpke-keys", get(own_keys))
            .route("/v1/rounds", get(rounds))
            .route("/v1/tasks/{id}", get(task_info))
            .route("/v1/rounds/{id}/check-in", post(check_in))
            .route("/v1/rounds/{id}/sealed-uploads", post(sealed_uploads))
            .with_state(relay.clone()),
    )
    .await;
    let through_relay = Client::new(&relay_url).unwrap();

    // The key must come from the aggregator: the relay's address (serving its own key) is
    // refused, as is plain HTTP beyond loopback; the aggregator's own address is taken.
    let refused = AggregatorKey::fetch(&through_relay, &through_relay).await;
    assert!(
        matches!(refused, Err(ClientError::AggregatorKey { .. })),
        "{refused:?}"
    );
    let far = Client::new("http://192.0.2.1:8080").unwrap();
    let refused = AggregatorKey::fetch(&far, &through_relay).await;
    assert!(
        matches!(refused, Err(ClientError::AggregatorKey { .. })),
        "{refused:?}"
    );
    let key = AggregatorKey::fetch(&Client::new(&aggregator_url).unwrap(), &through_relay)
        .await
        .unwrap();
    let pinned = reqwest::get(format!("{aggregator_url}/v1/hpke-keys"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(AggregatorKey::pinned(&pinned).unwrap(), key);
    assert!(AggregatorKey::pinned(b"not a key").is_err());

    let items: Vec<String> = (0..60)
        .map(|i| if i < 50 { "apple" } else { "pear" }.to_owned())
        .collect();
    let config = FleetConfig {
        task: Some(task.id.clone()),
        batch: 1,
        concurrency: 1,
        ..FleetConfig::default()
    };
    let fleet = Fleet::new(through_relay, items, config)
        .unwrap()
        .with_aggregator_key(key);
    let report = fleet.run(|_| {}).await.unwrap();
    assert_eq!(report.rounds.len(), 1);

    // The relay kept every device's one message and opens none with the key it served.
    let kept = relay.kept.lock().unwrap().clone();
    assert_eq!(kept.len(), 60);
    let round = relay.forwarded.lock().unwrap().clone().unwrap();
    let own = Keyring::new(vec![relay.own_key.clone()]);
    for message in &kept {
        assert!(own.open(&Binding::of(&round), message).is_err());
    }
    let info = analyst.task(&task.id).await.unwrap();
    assert_eq!(info.state, TaskState::Finished);
    let TaskResult::Histogram(release) = analyst.result(&task.id).await.unwrap() else {
        panic!("not a histogram");
    };
    assert_eq!(release.guarantee.trust_model, TrustModel::Split);
    let apple = release.items.iter().find(|i| i.item == "apple").unwrap();
    assert_eq!(apple.count, Some(50));
    server.shutdown().await;
}
