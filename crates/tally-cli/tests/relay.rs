//! `tally relay` as its own process: what reaches an aggregator through it. The aggregator
//! here is a double in the test process that publishes rounds and records every batch, so
//! that the test sees exactly what a curious aggregator sees.

#[allow(dead_code)] // `json`, `failure` and `temp_file` are not needed here.
mod common;
#[allow(dead_code)] // `tally serve` is not started here.
#[path = "common/listening.rs"]
mod listening;

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use tally_client::Client;
use tally_messages::{
    Ask, PROTOCOL_VERSION, RelayReceipt, RelayedBatch, RoundQuery, Sampling, SealedUpload,
};
use tally_stats_tests::binomial_interval;

use common::tally;
use listening::{free_port, relay_command, spawn_listening};

/// What the aggregator double publishes and what it received.
#[derive(Default)]
struct Aggregator {
    rounds: Vec<RoundQuery>,
    received: Vec<(String, RelayedBatch)>,
}

type Shared = Arc<Mutex<Aggregator>>;

async fn rounds(State(shared): State<Shared>) -> Json<Vec<RoundQuery>> {
    Json(shared.lock().unwrap().rounds.clone())
}

async fn relayed(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    Json(batch): Json<RelayedBatch>,
) -> Json<RelayReceipt> {
    let mut aggregator = shared.lock().unwrap();
    aggregator.rounds.retain(|r| r.round_id != id);
    let accepted = batch.messages.len() as u64;
    aggregator.received.push((id, batch));
    Json(RelayReceipt {
        accepted,
        refused: Vec::new(),
    })
}

/// The aggregator double on a free port: its state and base URL.
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

/// `tally relay` on a free port with its own SQLite file, relaying to `aggregator`, closing a
/// round as soon as it holds its cohort target; `devices` devices of population `p`
/// enrolled there. Killed when dropped.
struct RelayProcess {
    child: Child,
    url: String,
    devices: Vec<String>,
    _dir: tempfile::TempDir,
}

impl RelayProcess {
    fn start(aggregator: &str, devices: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("relay.db").display());
        let file = dir.path().join("devices.txt");
        let line = format!(
            "device enroll --db {db} --relay --population p --count {devices} --out {}",
            file.display()
        );
        assert!(tally(&line).status.success(), "{line}");
        let devices = std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        let port = free_port();
        let relay = relay_command(&db, port, aggregator, "relay-token");
        Self {
            child: spawn_listening(relay, port),
            url: format!("http://127.0.0.1:{port}"),
            devices,
            _dir: dir,
        }
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Devices of the linking test's rounds, each sending two messages.
const DEVICES: usize = 8;
/// Rounds of the linking test.
const ROUNDS: usize = 1_000;

/// A sealed message of device `device`'s message `which` (the relay checks only its
/// alphabet and length): 99 base64url characters, 74 bytes, a plaintext of 3 bytes.
fn sealed(device: usize, which: char) -> String {
    format!("{}{which}{device}", "A".repeat(97))
}

/// The device whose message `message` is.
fn sender(message: &str) -> char {
    message.chars().last().unwrap()
}

/// A curious aggregator that sees every batch through `tally relay` (its own process, its
/// coins the operating system's) cannot link a message to its device or to its arrival.
/// In each of 1,000 rounds, 8 enrolled devices check in and upload one after the other,
/// device `i` two sealed messages; the aggregator, knowing the order of arrival, guesses
/// that the first message it receives is the first device's, and that the first two come
/// from one device. The first is right as often as `Binomial(1000, 1/8)` allows at
/// α = 1e-6, the second as often as `Binomial(1000, 1/15)` allows, as for one uniform
/// permutation of all 16 messages; every batch holds exactly the messages sent and nothing
/// that names a device. Without the relay's permutation (a mutant that forwards in upload
/// order) the first guess is right every time.
#[test]
fn stat_a_curious_aggregator_cannot_link_a_message_to_its_device_or_its_arrival() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (shared, url) = aggregator().await;
        let deadline = tally_server::service::unix_now() + 600;
        shared.lock().unwrap().rounds = (0..ROUNDS)
            .map(|r| RoundQuery {
                version: PROTOCOL_VERSION,
                round_id: format!("r{r}"),
                task_id: "t".into(),
                population: "p".into(),
                round: 1,
                attempt: 1,
                deadline,
                max_report_bytes: 16,
                min_cohort: DEVICES as u64,
                cohort_target: DEVICES as u64,
                ask: Ask::Item { sampling_rate: 0.5 },
                sampling: Sampling::Device,
            })
            .collect();
        let relay = RelayProcess::start(&url, DEVICES as u32);
        let devices: Vec<Client> = relay
            .devices
            .iter()
            .map(|token| Client::new(&relay.url).unwrap().with_token(token))
            .collect();
        let started = Instant::now();
        while devices[0].open_rounds().await.unwrap().len() < ROUNDS {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the rounds never opened"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let rounds: Vec<_> = (0..ROUNDS)
            .map(|r| {
                let devices = devices.clone();
                tokio::spawn(async move {
                    let id = format!("r{r}");
                    for (i, device) in devices.iter().enumerate() {
                        let token = device.check_in(&id, 1).await.unwrap().tokens.remove(0);
                        let messages = vec![sealed(i, 'a'), sealed(i, 'b')];
                        let upload = SealedUpload { token, messages };
                        let receipt = device.upload_sealed(&id, &[upload]).await.unwrap();
                        assert_eq!(receipt.accepted, 1);
                    }
                })
            })
            .collect();
        for round in rounds {
            round.await.unwrap();
        }
        let started = Instant::now();
        while shared.lock().unwrap().received.len() < ROUNDS {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "batches missing"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut sent: Vec<String> = (0..DEVICES)
            .flat_map(|i| [sealed(i, 'a'), sealed(i, 'b')])
            .collect();
        sent.sort_unstable();
        let (mut first, mut together) = (0, 0);
        for (_, batch) in &shared.lock().unwrap().received {
            assert_eq!((batch.attempt, batch.cohort), (1, DEVICES as u64));
            let mut messages = batch.messages.clone();
            first += u64::from(sender(&messages[0]) == '0');
            together += u64::from(sender(&messages[0]) == sender(&messages[1]));
            messages.sort_unstable();
            assert_eq!(messages, sent, "exactly the messages sent");
        }
        let rounds = ROUNDS as u64;
        let (lo, hi) = binomial_interval(rounds, 1.0 / DEVICES as f64, 1e-6);
        assert!(
            (lo..=hi).contains(&first),
            "the first device's message came first {first} times, expected {lo} to {hi}"
        );
        let (lo, hi) = binomial_interval(rounds, 1.0 / (2 * DEVICES - 1) as f64, 1e-6);
        assert!(
            (lo..=hi).contains(&together),
            "one device's messages came first and second {together} times, expected {lo} to {hi}"
        );
    });
}
