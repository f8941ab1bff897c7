//! Kills `tally serve` with SIGKILL at several points of a round, 24 times, and checks after
//! every restart that no result is readable without its ledger debit, that a released result
//! never changes, and that no uploaded report is on disk. Then lets the surviving tasks finish
//! and checks the same of their results. Runs on SQLite, and on PostgreSQL too when
//! `TALLY_TEST_POSTGRES_URL` is set.

use std::collections::{HashMap, HashSet};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tally_client::{Client, RetryPolicy};
use tally_messages::{
    Budget, CredentialSpec, HeavyHittersAlgorithm, HistogramMechanism, PROTOCOL_VERSION,
    PopulationSpec, PrivacyTarget, Role, RoundPolicy, TaskKind, TaskSpec, TaskState, Upload,
};

/// Kills in all; each of the four kill points is hit six times.
const KILLS: usize = 24;
/// Devices per round (the cohort target).
const COHORT: u32 = 60;

/// An analyst's credential and the enrolled devices' for the test's population.
struct Tokens {
    analyst: String,
    devices: Vec<String>,
}

impl Tokens {
    async fn create(db: &str) -> Self {
        let population = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "crash".into(),
            budget: Budget {
                epsilon: 1000.0,
                delta: 0.5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
        };
        tally_server::create_population(db, &population)
            .await
            .unwrap();
        let analyst = CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Analyst,
            name: "crash".into(),
            populations: vec!["crash".into()],
        };
        let analyst = tally_server::create_credential(db, &analyst)
            .await
            .unwrap()
            .token;
        let devices = tally_server::enroll_devices(db, "crash", COHORT)
            .await
            .unwrap();
        Self { analyst, devices }
    }
}

/// A running `tally serve`, an analyst's client and one client per enrolled device.
struct ServerProcess {
    child: Child,
    client: Client,
    devices: Vec<Client>,
}

impl ServerProcess {
    fn start(db: &str, tokens: &Tokens) -> Self {
        // Bind port 0 to find a free port, then let the server take it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_tally"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--db",
                db,
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = Client::new(&format!("http://127.0.0.1:{port}"))
            .unwrap()
            .with_retry(RetryPolicy::NONE);
        Self {
            child,
            client: client.clone().with_token(&tokens.analyst),
            devices: tokens
                .devices
                .iter()
                .map(|token| client.clone().with_token(token))
                .collect(),
        }
    }

    async fn wait_ready(&mut self) {
        let started = Instant::now();
        while self.client.tasks().await.is_err() {
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "the server exited on start"
            );
            assert!(started.elapsed() < Duration::from_secs(30), "no server");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

fn spec(kind: TaskKind) -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: "crash".into(),
        expected_population: u64::from(COHORT),
        privacy: PrivacyTarget {
            epsilon: 2.0,
            delta: 1e-6,
            neighbours: tally_accounting::Neighbours::AddRemove,
            analysis: tally_accounting::sample_threshold::Analysis::Tight,
        },
        kind,
        rounds: RoundPolicy {
            min_cohort: 1,
            cohort_target: None,
            deadline_secs: 600,
            max_attempts: 3,
            max_report_bytes: 64,
        },
        // The uploads below stand for sampled devices' reports, counted as they come.
        sampling: tally_messages::Sampling::Device,
    }
}

fn task_kind(histogram: bool) -> TaskKind {
    if histogram {
        TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: None,
            threshold: Some(5),
        }
    } else {
        TaskKind::HeavyHitters {
            algorithm: HeavyHittersAlgorithm::TrieHhPlus,
            levels: 3,
            segment: 1,
            restricted: true,
            composition: Some(tally_accounting::composition::Composition::Basic),
            sampling_rate: None,
            threshold: Some(5),
        }
    }
}

/// What every restart must find.
struct Invariants {
    /// Results seen so far, by task.
    results: HashMap<String, String>,
    /// Reports uploaded that must never reach the disk.
    secrets: Vec<String>,
}

impl Invariants {
    async fn check(&mut self, client: &Client, dir: Option<&Path>) {
        let debited: HashSet<String> = client
            .ledger()
            .await
            .unwrap()
            .into_iter()
            .flat_map(|b| b.entries.into_iter().map(|e| e.task_id))
            .collect();
        for task in client.tasks().await.unwrap() {
            match client.result_text(&task.id).await {
                Ok(body) => {
                    assert!(
                        debited.contains(&task.id),
                        "task {} has a result and no debit",
                        task.id
                    );
                    let first = self.results.entry(task.id.clone()).or_insert(body.clone());
                    assert_eq!(*first, body, "the result of {} changed", task.id);
                }
                Err(error) => {
                    assert_ne!(task.state, TaskState::Finished, "{error}");
                    assert!(!self.results.contains_key(&task.id), "a result vanished");
                }
            }
        }
        let Some(dir) = dir else { return };
        for entry in std::fs::read_dir(dir).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            for secret in &self.secrets {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "report {secret} is on disk"
                );
            }
        }
    }
}

/// Makes sure a task is running and returns its open round, if it has one now.
async fn ensure_task(server: &ServerProcess) -> Option<tally_messages::RoundQuery> {
    let client = &server.client;
    let tasks = client.tasks().await.unwrap();
    if !tasks.iter().any(|t| t.state == TaskState::Running) {
        // Histograms and TrieHH++ in turn.
        let kind = task_kind(tasks.len() % 2 == 0);
        client.create_task(&spec(kind)).await.unwrap();
    }
    server.devices[0]
        .open_rounds()
        .await
        .unwrap()
        .into_iter()
        .next()
}

/// Every enrolled device checks in for itself: one token each.
async fn check_in(devices: &[Client], round_id: &str) -> Vec<String> {
    let mut tokens = Vec::with_capacity(devices.len());
    for device in devices {
        tokens.extend(device.check_in(round_id, 1).await.unwrap().tokens);
    }
    tokens
}

/// The uploads of one round: 40 devices hold "ab" (enough to pass the threshold at every
/// level), 20 hold a report seen nowhere else (never released, and never to be stored).
fn uploads(
    round: &tally_messages::RoundQuery,
    tokens: Vec<String>,
    secrets: &mut Vec<String>,
) -> Vec<Upload> {
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| {
            let report = match &round.ask {
                tally_messages::Ask::Item { .. } if i >= 40 => {
                    let secret = format!("secret-{}-{i}", round.round_id);
                    secrets.push(secret.clone());
                    Some(secret)
                }
                tally_messages::Ask::Item { .. } => Some("ab".to_owned()),
                tally_messages::Ask::Prefix { level, .. } => Some(
                    match level {
                        1 => "a",
                        2 => "ab",
                        _ => "ab$",
                    }
                    .to_owned(),
                ),
                ask @ (tally_messages::Ask::Bucket { .. } | tally_messages::Ask::Split { .. }) => {
                    panic!("the crash test runs no quantile task: {ask:?}")
                }
            };
            Upload { token, report }
        })
        .collect()
}

async fn crash_repeatedly(db: &str, dir: Option<&Path>) {
    let mut invariants = Invariants {
        results: HashMap::new(),
        secrets: Vec::new(),
    };
    let tokens = Tokens::create(db).await;
    for iteration in 0..KILLS {
        let mut server = ServerProcess::start(db, &tokens);
        server.wait_ready().await;
        invariants.check(&server.client, dir).await;
        if let Some(round) = ensure_task(&server).await {
            let devices = &server.devices;
            match iteration % 4 {
                // Killed with the round open and empty.
                0 => {}
                // 1: killed mid-round, half the cohort uploaded; 2 and 3: all of it.
                1..=3 => {
                    let tokens = check_in(devices, &round.round_id).await;
                    let all = uploads(&round, tokens, &mut invariants.secrets);
                    let cut = if iteration % 4 == 1 {
                        all.len() / 2
                    } else {
                        all.len()
                    };
                    devices[0]
                        .upload(&round.round_id, &all[..cut])
                        .await
                        .unwrap();
                    // 2: killed while the round closes; 3: after it had time to release.
                    if iteration % 4 == 3 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                _ => unreachable!(),
            }
        }
        server.kill();
    }
    assert!(
        !invariants.results.is_empty(),
        "no result was released between kills"
    );
    // Let every task finish without kills, and check what they released.
    let mut server = ServerProcess::start(db, &tokens);
    server.wait_ready().await;
    let client = &server.client;
    let devices = &server.devices;
    let started = Instant::now();
    loop {
        let tasks = client.tasks().await.unwrap();
        if tasks.iter().all(|t| t.state != TaskState::Running) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "tasks do not finish"
        );
        for round in devices[0].open_rounds().await.unwrap() {
            let tokens = check_in(devices, &round.round_id).await;
            let all = uploads(&round, tokens, &mut invariants.secrets);
            // The round may close under us: that is fine.
            let _ = devices[0].upload(&round.round_id, &all).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    invariants.check(client, dir).await;
    let tasks = client.tasks().await.unwrap();
    let finished = tasks
        .iter()
        .filter(|t| t.state == TaskState::Finished)
        .count();
    assert!(finished >= 2, "{finished} tasks finished: {tasks:?}");
    assert!(
        tasks.iter().any(|t| t.rounds_released == 3),
        "no TrieHH++ task ran its three levels: {tasks:?}"
    );
    for task in &tasks {
        let body = client.result_text(&task.id).await.unwrap();
        assert!(body.contains("\"ab\""), "{body}");
    }
    assert!(!invariants.secrets.is_empty());
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_never_show_an_undebited_result_a_changed_result_or_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    crash_repeatedly(&db, Some(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_keep_their_promises_on_postgres() {
    let Ok(base) = std::env::var("TALLY_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var("TALLY_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "TALLY_REQUIRE_POSTGRES=1 but TALLY_TEST_POSTGRES_URL is not set"
        );
        return;
    };
    // A database of its own, so that restarts abort no other test's rounds.
    let name = format!("tally_crash_{:016x}", rand::random::<u64>());
    let admin = Command::new("psql")
        .args([base.as_str(), "-qc", &format!("CREATE DATABASE {name}")])
        .status()
        .unwrap();
    assert!(admin.success());
    let (prefix, _) = base.rsplit_once('/').unwrap();
    crash_repeatedly(&format!("{prefix}/{name}"), None).await;
}
