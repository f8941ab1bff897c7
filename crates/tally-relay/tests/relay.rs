//! The relay in this process against an aggregator double (an HTTP server in the test that
//! publishes rounds and records the batches it receives): what devices and operators may do
//! at the relay, and what reaches the aggregator.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use tally_client::Client;
use tally_messages::{
    Ask, CredentialSpec, ErrorCode, PROTOCOL_VERSION, RelayReceipt, RelayedBatch, Role, RoundQuery,
    Sampling, SealedUpload,
};
use tally_relay::{Relay, RelayOptions};
use tally_server::Limits;
use tally_server::service::unix_now;

/// What the aggregator double publishes and what it received.
#[derive(Default)]
struct Aggregator {
    rounds: Vec<RoundQuery>,
    /// Every batch, with its round and the credential it came with.
    received: Vec<(String, String, RelayedBatch)>,
}

type Shared = Arc<Mutex<Aggregator>>;

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
async fn aggregator() -> (Shared, String) {
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
fn query(
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

/// A relay in this process relaying to `aggregator`, its coins seeded, with an operator's
/// credential and `devices` enrolled devices of population `p`.
struct Running {
    relay: Option<Relay>,
    url: String,
    operator: String,
    devices: Vec<String>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

async fn relay(aggregator: &str, devices: u32) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("relay.db").display());
    let operator = tally_server::create_credential(
        &db,
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
    let devices = tally_relay::enroll_devices(&db, "p", devices)
        .await
        .unwrap();
    let upstream = Client::new(aggregator)
        .unwrap()
        .with_token("relay-credential");
    let options = RelayOptions {
        forward_margin: Duration::from_secs(1),
        cohort_pool: 1.0,
        max_per_credential: 1_000,
        poll_interval: Duration::from_millis(50),
        ..RelayOptions::new(upstream)
    };
    let limits = Limits::default();
    let relay = Relay::start_seeded(&db, &limits, options, 7).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    let router = relay.router(tally_server::service::HostPolicy::Any);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(async move {
        tally_server::service::serve(listener, router, None, &limits, async {
            stopped.await.ok();
        })
        .await;
    });
    Running {
        relay: Some(relay),
        url: format!("http://{address}"),
        operator,
        devices,
        stop: Some(stop),
        served: Some(served),
        _dir: dir,
    }
}

impl Running {
    fn client(&self, token: &str) -> Client {
        Client::new(&self.url).unwrap().with_token(token)
    }

    async fn stop(mut self) {
        self.stop.take().unwrap().send(()).ok();
        self.served.take().unwrap().await.unwrap();
        self.relay.take().unwrap().shutdown().await;
    }
}

/// Polls the relay until it publishes round `id`.
async fn published(client: &Client, id: &str) -> RoundQuery {
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
async fn received(shared: &Shared, count: usize) -> Vec<(String, String, RelayedBatch)> {
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
fn sealed(mark: usize) -> String {
    format!("{}{mark:04}", "A".repeat(96))
}

/// Five enrolled devices and an operator relaying three more upload to a round whose cohort
/// target is 8 and whose devices flip their own coins: the relay republishes the
/// aggregator's query verbatim, closes the round once it holds 8 uploads and forwards one
/// batch with the relay's credential: the round's attempt, a cohort of 8, and exactly the
/// uploaded messages (an abstention sends none), nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_forwards_one_batch_of_the_messages_with_nothing_else() {
    let (shared, url) = aggregator().await;
    let round = query("r1", 3, 8, 600, Sampling::Device);
    shared.lock().unwrap().rounds.push(round.clone());
    let running = relay(&url, 5).await;
    let mut sent = Vec::new();
    for (i, device) in running.devices.iter().enumerate() {
        let client = running.client(device);
        assert_eq!(published(&client, "r1").await, round);
        let grant = client.check_in("r1", 1).await.unwrap();
        assert_eq!(grant.query, round);
        let messages = if i == 0 { Vec::new() } else { vec![sealed(i)] };
        sent.extend(messages.clone());
        let token = grant.tokens[0].clone();
        let receipt = client
            .upload_sealed("r1", &[SealedUpload { token, messages }])
            .await
            .unwrap();
        assert_eq!((receipt.accepted, receipt.rejected.len()), (1, 0));
    }
    let operator = running.client(&running.operator);
    let tokens = operator.check_in("r1", 3).await.unwrap().tokens;
    let uploads: Vec<SealedUpload> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| SealedUpload {
            token,
            messages: vec![sealed(10 + i), sealed(20 + i)],
        })
        .collect();
    sent.extend(uploads.iter().flat_map(|u| u.messages.clone()));
    operator.upload_sealed("r1", &uploads).await.unwrap();
    let received = received(&shared, 1).await;
    let (id, credential, batch) = &received[0];
    assert_eq!(
        (id.as_str(), credential.as_str()),
        ("r1", "Bearer relay-credential")
    );
    assert_eq!((batch.attempt, batch.cohort), (2, 8));
    let mut forwarded = batch.messages.clone();
    forwarded.sort_unstable();
    sent.sort_unstable();
    assert_eq!(forwarded, sent);
    // The round is over at the relay: no more uploads, and no second batch. It is closed
    // there until the aggregator stops listing it, then forgotten (an unknown round).
    let error = operator.check_in("r1", 1).await.unwrap_err();
    assert!(error.round_is_over(), "{error:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(shared.lock().unwrap().received.len(), 1);
    running.stop().await;
}

/// A round whose minimum cohort is 4 closes at the relay (its deadline less the margin) with
/// the uploads of 3 devices: the relay forwards nothing, and says the round is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_forwards_nothing_below_the_minimum_cohort() {
    let (shared, url) = aggregator().await;
    shared
        .lock()
        .unwrap()
        .rounds
        .push(query("r2", 4, 10, 2, Sampling::Device));
    let running = relay(&url, 3).await;
    for (i, device) in running.devices.iter().enumerate() {
        let client = running.client(device);
        published(&client, "r2").await;
        let token = client.check_in("r2", 1).await.unwrap().tokens.remove(0);
        let messages = vec![sealed(i)];
        client
            .upload_sealed("r2", &[SealedUpload { token, messages }])
            .await
            .unwrap();
    }
    let client = running.client(&running.devices[0]);
    let started = Instant::now();
    while client.check_in("r2", 1).await.is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the round never closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(shared.lock().unwrap().received.is_empty());
    let error = client.check_in("r2", 1).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::ClosedRound));
    running.stop().await;
}

/// The error code of a refused request.
fn code<T>(result: Result<T, tally_client::ClientError>) -> Option<ErrorCode> {
    result.err().and_then(|e| e.code())
}

/// What a credential may do at the relay: a device sees and answers only its population's
/// rounds, checks in for itself alone and holds one token per round; a token is good for
/// one upload; no credential, a wrong one, or a browser page gets nothing; only an operator
/// enrolls devices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_credential_reaches_only_what_its_role_allows() {
    let (shared, url) = aggregator().await;
    let other = RoundQuery {
        population: "q".into(),
        ..query("r4", 1, 10, 600, Sampling::Device)
    };
    shared
        .lock()
        .unwrap()
        .rounds
        .extend([query("r3", 1, 10, 600, Sampling::Device), other]);
    let running = relay(&url, 1).await;
    let device = running.client(&running.devices[0]);
    let operator = running.client(&running.operator);
    published(&operator, "r4").await;
    published(&device, "r3").await;
    let ids: Vec<String> = device
        .open_rounds()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.round_id)
        .collect();
    assert_eq!(ids, ["r3"]);
    assert_eq!(
        code(device.check_in("r4", 1).await),
        Some(ErrorCode::Forbidden)
    );
    assert_eq!(
        code(device.check_in("r3", 2).await),
        Some(ErrorCode::Forbidden)
    );
    assert_eq!(
        code(device.check_in("r9", 1).await),
        Some(ErrorCode::UnknownRound)
    );
    let token = device.check_in("r3", 1).await.unwrap().tokens.remove(0);
    assert_eq!(
        device.check_in("r3", 1).await.unwrap().tokens,
        std::slice::from_ref(&token)
    );
    let upload = SealedUpload {
        token,
        messages: Vec::new(),
    };
    let first = device
        .upload_sealed("r3", std::slice::from_ref(&upload))
        .await
        .unwrap();
    assert_eq!(first.accepted, 1);
    let second = device.upload_sealed("r3", &[upload]).await.unwrap();
    assert_eq!(second.rejected[0].code, ErrorCode::ReusedToken);
    let stranger = running.client("tally_0123456789abcdef_00");
    assert_eq!(
        code(stranger.open_rounds().await),
        Some(ErrorCode::Unauthenticated)
    );
    let anonymous = Client::new(&running.url).unwrap();
    assert_eq!(
        code(anonymous.open_rounds().await),
        Some(ErrorCode::Unauthenticated)
    );
    assert_eq!(
        code(device.enroll_devices("p", 1).await),
        Some(ErrorCode::Forbidden)
    );
    let enrolled = operator.enroll_devices("p", 2).await.unwrap();
    let newcomer = running.client(&enrolled.tokens[0]);
    assert_eq!(newcomer.check_in("r3", 1).await.unwrap().tokens.len(), 1);
    let page = reqwest::Client::new()
        .get(format!("{}/v1/rounds", running.url))
        .header("origin", "https://example.com")
        .bearer_auth(&running.operator)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 403);
    running.stop().await;
}
