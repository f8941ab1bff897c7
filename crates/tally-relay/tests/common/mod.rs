//! The relay in this process against an aggregator double (an HTTP server in the test that
//! publishes rounds and records the batches it receives), shared by the relay's tests.
// Each file of tests uses its part of this module.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use tally_client::Client;
use tally_messages::{
    Ask, CredentialSpec, PROTOCOL_VERSION, RelayReceipt, RelayedBatch, Role, RoundQuery, Sampling,
};
use tally_relay::{Relay, RelayOptions};
use tally_server::service::unix_now;
use tally_server::{Limits, Replication};

/// What the aggregator double publishes and what it received.
#[derive(Default)]
pub struct Aggregator {
    pub rounds: Vec<RoundQuery>,
    /// Every batch, with its round and the credential it came with.
    pub received: Vec<(String, String, RelayedBatch)>,
}

pub type Shared = Arc<Mutex<Aggregator>>;

async fn rounds(State(shared): State<Shared>) -> Json<Vec<RoundQuery>> {
    Json(shared.lock().unwrap().rounds.clone())
}

async fn relayed(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    Json(batch): Json<RelayedBatch>,
) -> Json<RelayReceipt> {
    let credential = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut aggregator = shared.lock().unwrap();
    aggregator.rounds.retain(|r| r.round_id != id);
    let accepted = batch.messages.len() as u64;
    aggregator.received.push((id, credential, batch));
    Json(RelayReceipt {
        accepted,
        refused: Vec::new(),
    })
}

/// The aggregator double on a free port: its shared state and base URL.
pub async fn aggregator() -> (Shared, String) {
    let shared = Shared::default();
    let router = Router::new()
        .route("/v1/rounds", get(rounds))
        .route("/v1/rounds/{id}/relayed", post(relayed))
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (shared, url)
}

/// A round of population `p` asking for items, closing at the relay in `secs` seconds (its
/// deadline one second later: the relay's margin).
pub fn query(
    id: &str,
    min_cohort: u64,
    cohort_target: u64,
    secs: i64,
    sampling: Sampling,
) -> RoundQuery {
    RoundQuery {
        version: PROTOCOL_VERSION,
        round_id: id.into(),
        task_id: format!("t-{id}"),
        population: "p".into(),
        round: 1,
        attempt: 2,
        deadline: unix_now() + secs + 1,
        max_report_bytes: 16,
        min_cohort,
        cohort_target,
        ask: Ask::Item { sampling_rate: 0.5 },
        sampling,
    }
}

/// A relay in this process, serving on a free loopback port, with the credentials of its
/// database: an operator's, and enrolled devices of population `p`.
pub struct Running {
    relay: Option<Arc<Relay>>,
    pub url: String,
    pub operator: String,
    pub devices: Vec<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

/// The credentials made in a relay's database: an operator's, and `devices` enrolled
/// devices of population `p`.
pub async fn provision(db: &str, devices: u32) -> (String, Vec<String>) {
    let operator = tally_server::create_credential(
        db,
        &CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Operator,
            name: "relay operator".into(),
            populations: Vec::new(),
        },
    )
    .await
    .unwrap()
    .token;
    let devices = tally_relay::enroll_devices(db, "p", devices).await.unwrap();
    (operator, devices)
}

/// A relay in this process on the database at `db` (provisioned with `credentials`)
/// relaying to `aggregator`, its coins seeded with `seed`, sharing the database with other
/// replicas as `replication` says.
pub async fn start(
    db: &str,
    aggregator: &str,
    (operator, devices): (String, Vec<String>),
    replication: Replication,
    seed: u64,
) -> Running {
    let upstream = Client::new(aggregator)
        .unwrap()
        .with_token("relay-credential");
    let options = RelayOptions {
        forward_margin: Duration::from_secs(1),
        cohort_pool: 1.0,
        max_per_credential: 1_000,
        poll_interval: Duration::from_millis(50),
        replication,
        ..RelayOptions::new(upstream)
    };
    let limits = Limits::default();
    let relay = Relay::start_seeded(db, &limits, options, seed)
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let relay = Arc::new(relay);
    let serving = Arc::clone(&relay);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        serving
            .serve(listener, None, &limits, async {
                stopped.await.ok();
            })
            .await
            .unwrap();
    });
    Running {
        relay: Some(relay),
        url,
        operator,
        devices,
        stop: Some(stop),
        served: Some(served),
        _dir: None,
    }
}

/// A relay in this process on a SQLite database of its own relaying to `aggregator`, its
/// coins seeded, with an operator's credential and `devices` enrolled devices of population
/// `p`.
pub async fn relay(aggregator: &str, devices: u32) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("relay.db").display());
    let credentials = provision(&db, devices).await;
    let mut running = start(&db, aggregator, credentials, Replication::default(), 7).await;
    running._dir = Some(dir);
    running
}

impl Running {
    pub fn client(&self, token: &str) -> Client {
        Client::new(&self.url).unwrap().with_token(token)
    }

    pub async fn stop(mut self) {
        self.stop.take().unwrap().send(()).ok();
        self.served.take().unwrap().await.unwrap();
        let relay =
            Arc::into_inner(self.relay.take().unwrap()).expect("the relay is served no more");
        relay.shutdown().await;
    }
}

/// Polls the relay until it publishes round `id`.
pub async fn published(client: &Client, id: &str) -> RoundQuery {
    let started = Instant::now();
    loop {
        if let Some(query) = client
            .open_rounds()
            .await
            .unwrap()
            .into_iter()
            .find(|q| q.round_id == id)
        {
            return query;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "round {id} never opened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the aggregator double received `count` batches.
pub async fn received(shared: &Shared, count: usize) -> Vec<(String, String, RelayedBatch)> {
    let started = Instant::now();
    loop {
        let received = shared.lock().unwrap().received.clone();
        if received.len() >= count {
            return received;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no batch arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A sealed message of `bytes` bytes (the relay checks only its alphabet and length), ending
/// with `mark` so that the test can follow it.
pub fn sealed(mark: usize) -> String {
    format!("{}{mark:04}", "A".repeat(96))
}
