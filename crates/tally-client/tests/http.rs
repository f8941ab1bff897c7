//! The client and the fleet over loopback HTTP: retries against a failing server, and a fleet
//! against the real server in process.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use tally_client::{Client, ClientError, Fleet, FleetConfig, FleetEvent, RetryPolicy};
use tally_messages::{
    Budget, CredentialSpec, ErrorCode, PROTOCOL_VERSION, PopulationSpec, RelayedBatch, Role,
    TaskResult, TaskSpec, TaskState,
};
use tokio::net::TcpListener;

/// Serves `router` on a free loopback port and returns its base URL.
async fn serve(router: Router) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        initial: Duration::from_millis(1),
        max: Duration::from_millis(4),
        ..RetryPolicy::default()
    }
}

#[tokio::test]
async fn retries_server_errors_but_not_refusals() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let flaky = Arc::new(AtomicU32::new(0));
    let failing = Arc::clone(&flaky);
    let router = Router::new()
        .route(
            "/v1/tasks",
            get(move || async move {
                if failing.fetch_add(1, Ordering::SeqCst) < 2 {
                    (StatusCode::SERVICE_UNAVAILABLE, "busy".to_owned())
                } else {
                    (StatusCode::OK, "[]".to_owned())
                }
            }),
        )
        .route(
            "/v1/ledger",
            get(move || async move {
                counted.fetch_add(1, Ordering::SeqCst);
                (
                    StatusCode::CONFLICT,
                    r#"{"code":"budget_exceeded","message":"no budget left"}"#,
                )
            }),
        );
    let client = Client::new(&serve(router).await)
        .unwrap()
        .with_retry(quick_retries());

    assert!(client.tasks().await.unwrap().is_empty());
    assert_eq!(flaky.load(Ordering::SeqCst), 3, "two 503s, then success");

    let error = client.ledger().await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a 4xx is not retried");
    assert_eq!(error.code(), Some(ErrorCode::BudgetExceeded));
    assert_eq!(error.status(), Some(409));
    assert!(error.to_string().contains("no budget left"), "{error}");

    // Nothing listens on the port of a dropped listener: every attempt fails to connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nobody = Client::new(&format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_retry(quick_retries());
    match nobody.tasks().await.unwrap_err() {
        ClientError::Transport { attempts, .. } => assert_eq!(attempts, 4),
        other => panic!("expected a transport error, got {other}"),
    }
}

/// An aggregator opens every message of a relayed batch before it answers, which may take
/// longer than an ordinary request may: a batch of 5,000 messages answered after 32 s is
/// waited for (an ordinary request gives up after 30 s and is sent again).
#[tokio::test]
async fn a_relayed_batch_is_given_time_to_be_opened() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let router = Router::new().route(
        "/v1/rounds/r1/relayed",
        post(move || async move {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(32)).await;
            r#"{"accepted":5000,"refused":[]}"#
        }),
    );
    let client = Client::new(&serve(router).await)
        .unwrap()
        .with_retry(quick_retries());
    let batch = RelayedBatch {
        version: PROTOCOL_VERSION,
        attempt: 1,
        cohort: 5000,
        messages: vec!["m".to_owned(); 5000],
    };
    let receipt = client.relay("r1", &batch).await.unwrap();
    assert_eq!(receipt.accepted, 5000);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "answered on the first attempt"
    );
}

/// A server that answers `GET /v1/tasks` with 429 and `Retry-After: {retry_after}` to the
/// first `refusals` requests, then with an empty list; the second value counts the requests.
async fn rate_limiting(refusals: u32, retry_after: &'static str) -> (String, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let router = Router::new().route(
        "/v1/tasks",
        get(move || async move {
            if counted.fetch_add(1, Ordering::SeqCst) < refusals {
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(axum::http::header::RETRY_AFTER, retry_after)],
                    r#"{"code":"rate_limited","message":"slow down"}"#,
                )
            } else {
                (
                    StatusCode::OK,
                    [(axum::http::header::CACHE_CONTROL, "no-store")],
                    "[]",
                )
            }
        }),
    );
    (serve(router).await, calls)
}

#[tokio::test]
async fn a_429_is_waited_out_for_its_retry_after_within_the_policys_bounds() {
    // Two refusals asking for 1 s each are waited out, even by a client that retries no
    // other failure: a refused request was not acted on.
    let policy = RetryPolicy {
        rate_limited_attempts: 2,
        ..quick_retries()
    };
    let (url, calls) = rate_limiting(2, "1").await;
    let client = Client::new(&url).unwrap().with_retry(RetryPolicy {
        attempts: 1,
        ..policy
    });
    assert!(client.tasks().await.unwrap().is_empty());
    assert_eq!(calls.load(Ordering::SeqCst), 3, "two 429s, then success");

    // One refusal more than the policy waits out: a clear error, after 3 requests.
    let (url, calls) = rate_limiting(3, "1").await;
    let client = Client::new(&url).unwrap().with_retry(policy);
    let error = client.tasks().await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    match &error {
        ClientError::RateLimited {
            refusals, waited, ..
        } => {
            assert_eq!(*refusals, 3);
            assert!(*waited >= Duration::from_secs(2), "{waited:?}");
        }
        other => panic!("expected a rate-limit error, got {other}"),
    }
    assert_eq!(
        (error.status(), error.code()),
        (Some(429), Some(ErrorCode::RateLimited))
    );
    assert!(error.to_string().contains("--rate-limit"), "{error}");

    // A wait past the policy's total is not waited at all.
    let (url, calls) = rate_limiting(1, "3600").await;
    let client = Client::new(&url).unwrap();
    match client.tasks().await.unwrap_err() {
        ClientError::RateLimited {
            refusals,
            waited,
            retry_after,
            ..
        } => assert_eq!(
            (refusals, waited, retry_after),
            (1, Duration::ZERO, Some(Duration::from_secs(3600)))
        ),
        other => panic!("expected a rate-limit error, got {other}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A client that retries nothing gives up at the first 429.
    let (url, calls) = rate_limiting(1, "1").await;
    let client = Client::new(&url).unwrap().with_retry(RetryPolicy::NONE);
    assert!(matches!(
        client.tasks().await.unwrap_err(),
        ClientError::RateLimited { refusals: 1, .. }
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// A sample-and-threshold task over 500 devices whose round closes at `cohort_target`.
fn histogram_task(cohort_target: u64) -> TaskSpec {
    // Written as JSON so that the privacy target's defaults (add-remove neighbours, tight
    // analysis) come from the protocol.
    serde_json::from_value(serde_json::json!({
        "version": PROTOCOL_VERSION,
        "population": "fleet",
        "expected_population": 500,
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
        "kind": {"type": "histogram", "mechanism": "sample-threshold"},
        "rounds": {
            "min_cohort": 50,
            "cohort_target": cohort_target,
            "deadline_secs": 60,
            "max_attempts": 3,
            "max_report_bytes": 64
        }
    }))
    .unwrap()
}

/// A server in process on a loopback port with population "fleet" (budget (10, 1e-5), no
/// cohort floor), an analyst's and an operator's credential and `devices` enrolled devices.
struct FleetServer {
    server: tally_server::Server,
    url: String,
    analyst: String,
    /// An operator's credential, for `/metrics`.
    operator: String,
    enrolled: Vec<String>,
    _dir: tempfile::TempDir,
}

/// The database of a [`FleetServer`], before a server runs on it.
struct FleetDb {
    url: String,
    analyst: String,
    operator: String,
    enrolled: Vec<String>,
    dir: tempfile::TempDir,
}

impl FleetDb {
    /// A fresh database with population "fleet" (budget (10, 1e-5), no cohort floor), an
    /// analyst's and an operator's credential and `devices` enrolled devices.
    async fn new(devices: u32) -> Self {
        Self::with_population(devices, |_| {}).await
    }

    /// [`FleetDb::new`] with population "fleet" changed by `change`.
    async fn with_population(devices: u32, change: impl FnOnce(&mut PopulationSpec)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("tally.db").display());
        let mut population = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "fleet".into(),
            budget: Budget {
                epsilon: 10.0,
                delta: 1e-5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: tally_messages::TrustModel::SingleParty,
            allow_device_sampling: false,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        change(&mut population);
        tally_server::create_population(&db, &population)
            .await
            .unwrap();
        let analyst = CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Analyst,
            name: "analyst".into(),
            populations: vec!["fleet".into()],
        };
        let analyst = tally_server::create_credential(&db, &analyst)
            .await
            .unwrap()
            .token;
        let operator = CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Operator,
            name: "operator".into(),
            populations: Vec::new(),
        };
        let operator = tally_server::create_credential(&db, &operator)
            .await
            .unwrap()
            .token;
        let enrolled = tally_server::enroll_devices(&db, "fleet", devices)
            .await
            .unwrap();
        Self {
            url: db,
            analyst,
            operator,
            enrolled,
            dir,
        }
    }
}

impl FleetServer {
    async fn start(devices: u32) -> Self {
        Self::start_with(devices, &tally_server::Limits::default()).await
    }

    /// [`FleetServer::start`] with the given bounds on requests.
    async fn start_with(devices: u32, limits: &tally_server::Limits) -> Self {
        Self::start_on(FleetDb::new(devices).await, limits).await
    }

    /// A server bound by `limits` on the database `db`.
    async fn start_on(db: FleetDb, limits: &tally_server::Limits) -> Self {
        let server = tally_server::Server::start_with(&db.url, limits)
            .await
            .unwrap();
        let url = serve(server.router()).await;
        Self {
            server,
            url,
            analyst: db.analyst,
            operator: db.operator,
            enrolled: db.enrolled,
            _dir: db.dir,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_stops_uploading_when_its_round_closes() {
    // Every device checks in with its own enrolled credential.
    let FleetServer {
        server,
        url,
        analyst,
        operator: _,
        enrolled,
        _dir,
    } = FleetServer::start(500).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);

    // 500 devices, single-report uploads, a round that closes after 300.
    let task = client.create_task(&histogram_task(300)).await.unwrap();
    let items: Vec<String> = (0..500).map(|i| format!("item{}", i % 4)).collect();
    let config = FleetConfig {
        concurrency: 16,
        batch: 1,
        task: Some(task.id.clone()),
        seed: Some(5),
        poll_interval: Duration::from_millis(20),
    };
    let fleet = Fleet::new(Client::new(&url).unwrap(), items, config)
        .unwrap()
        .with_credentials(enrolled)
        .unwrap();
    let mut uploaded = 0;
    let mut finished = 0;
    let report = fleet
        .run(|event| match event {
            FleetEvent::Uploaded { devices, .. } => uploaded += devices,
            FleetEvent::RoundFinished(_) => finished += 1,
            _ => {}
        })
        .await
        .unwrap();
    let total = &report.total.counts;
    assert_eq!(report.rounds.len(), 1);
    assert_eq!(finished, 1);
    assert!(
        (300..=500).contains(&total.accepted),
        "{} accepted: the round closes at 300",
        total.accepted
    );
    assert_eq!(total.devices as usize, uploaded);
    assert_eq!(total.accepted, total.reports + total.abstentions);
    // Devices that checked in just before the round closed found it closed when uploading.
    assert!(total.devices >= total.accepted);
    // One device per request; a device whose upload arrived after the 300th was answered,
    // but not counted.
    assert!(
        (total.accepted..=total.devices).contains(&total.upload_requests),
        "{} upload requests for {} accepted of {} devices",
        total.upload_requests,
        total.accepted,
        total.devices
    );
    assert!(total.rejected.is_empty(), "{:?}", total.rejected);

    let info = client.task(&task.id).await.unwrap();
    assert_eq!(info.state, TaskState::Finished);
    let text = client.result_text(&task.id).await.unwrap();
    assert_eq!(client.result_text(&task.id).await.unwrap(), text);
    assert!(matches!(
        client.result(&task.id).await.unwrap(),
        TaskResult::Histogram(_)
    ));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_past_the_cohort_target_is_cut_without_being_refused() {
    // An operator checks devices in 40 at a time, one batch after another, for a round that
    // closes at 60: the second batch fills the round with its first 20 uploads, and its other
    // 20 devices are turned away as late, not refused for what they sent.
    let FleetServer {
        server,
        url,
        analyst,
        operator,
        enrolled: _,
        _dir,
    } = FleetServer::start(1).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);
    let task = client.create_task(&histogram_task(60)).await.unwrap();
    let items: Vec<String> = (0..120).map(|i| format!("item{}", i % 4)).collect();
    let config = FleetConfig {
        concurrency: 1,
        batch: 40,
        task: Some(task.id.clone()),
        seed: Some(8),
        poll_interval: Duration::from_millis(20),
    };
    let fleet = Fleet::new(
        Client::new(&url).unwrap().with_token(&operator),
        items,
        config,
    )
    .unwrap();
    let report = fleet.run(|_| {}).await.unwrap();
    let total = &report.total.counts;
    assert_eq!(total.accepted, 60);
    assert_eq!(total.devices, 80, "the third batch found the round closed");
    assert_eq!(total.upload_requests, 2);
    assert!(total.rejected.is_empty(), "{:?}", total.rejected);
    assert_eq!(
        client.task(&task.id).await.unwrap().state,
        TaskState::Finished
    );
    server.shutdown().await;
}

/// A fleet of `items`, each device with its `enrolled` credential, keeping `ledger`, run with
/// `seed` until no task runs: the fleet, its report and the tasks its ledger refused, each
/// with why.
async fn run_keeping(
    url: &str,
    items: Vec<String>,
    enrolled: Vec<String>,
    seed: u64,
    ledger: tally_client::DeviceLedger,
) -> (Fleet, tally_client::FleetReport, Vec<(String, String)>) {
    let config = FleetConfig {
        seed: Some(seed),
        poll_interval: Duration::from_millis(20),
        ..FleetConfig::default()
    };
    let fleet = Fleet::new(Client::new(url).unwrap(), items, config)
        .unwrap()
        .with_credentials(enrolled)
        .unwrap()
        .with_ledger(ledger);
    let mut refused = Vec::new();
    let report = fleet
        .run(|event| {
            if let FleetEvent::Refused { query, reason } = event {
                refused.push((query.task_id.clone(), reason.to_string()));
            }
        })
        .await
        .unwrap();
    (fleet, report, refused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_refuse_a_task_past_their_own_budget() {
    let FleetServer {
        server,
        url,
        analyst,
        operator: _,
        enrolled,
        _dir,
    } = FleetServer::start(60).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);
    // Two tasks of ε = 1 each, which the server's budget of 10 admits; the devices keep a
    // budget of 1.5 of their own.
    let first = client.create_task(&histogram_task(60)).await.unwrap();
    let second = client.create_task(&histogram_task(60)).await.unwrap();
    let items: Vec<String> = (0..60).map(|i| format!("item{}", i % 2)).collect();
    let ledger = tally_client::DeviceLedger::new(1.5, 1e-5);
    let (fleet, report, refused) = run_keeping(&url, items, enrolled, 3, ledger).await;
    // The fleet answers whichever task it meets first and refuses the other.
    assert_eq!(report.rounds.len(), 1, "{report:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let answered = &report.rounds[0].task_id;
    let other = if *answered == first.id {
        &second
    } else {
        &first
    };
    assert_eq!(refused[0].0, other.id);
    assert!(refused[0].1.contains("left of its budget"), "{refused:?}");
    let ledger = fleet.ledger().unwrap();
    assert_eq!(
        ledger.total(),
        (other.guarantee.epsilon, other.guarantee.delta)
    );
    assert_eq!(
        client.task(answered).await.unwrap().state,
        TaskState::Finished
    );
    // The server still asks for the other task; the devices gave it nothing.
    let waiting = client.task(&other.id).await.unwrap();
    assert_eq!(
        (waiting.state, waiting.rounds_released),
        (TaskState::Running, 0)
    );
    server.shutdown().await;
}

/// A shuffled-GRR histogram over {0, 1} at `ε = 1` for the 100 devices of population "fleet",
/// replace-one as every shuffle protocol.
fn shuffled_grr_task() -> TaskSpec {
    serde_json::from_value(serde_json::json!({
        "version": PROTOCOL_VERSION,
        "population": "fleet",
        "expected_population": 100,
        "privacy": {"epsilon": 1.0, "delta": 1e-6, "neighbours": "replace-one"},
        "kind": {
            "type": "domain-histogram",
            "mechanism": "shuffled-grr",
            "domain": {"integers": 2}
        },
        "rounds": {
            "min_cohort": 100,
            "cohort_target": 100,
            "deadline_secs": 60,
            "max_attempts": 3,
            "max_report_bytes": 64
        }
    }))
    .unwrap()
}

/// Devices in a population that tolerates a tenth of them colluding with the analyst keep
/// their own ledger at what holds against the colluders, as the population's ledger does:
/// two shuffle tasks of `ε = 1` would fit a device budget of `1 + ε_F` under honest devices,
/// but at `ε_F > 1` each against the colluders only one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_charge_a_shuffle_task_its_guarantee_against_colluding_devices() {
    let db = FleetDb::with_population(100, |population| {
        population.colluding_fraction = 0.1;
        population.neighbours = tally_messages::Neighbours::ReplaceOne;
    })
    .await;
    let FleetServer {
        server,
        url,
        analyst,
        operator: _,
        enrolled,
        _dir,
    } = FleetServer::start_on(db, &tally_server::Limits::default()).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);
    let first = client.create_task(&shuffled_grr_task()).await.unwrap();
    let second = client.create_task(&shuffled_grr_task()).await.unwrap();
    let collusion = first.guarantee.collusion.expect("a shuffle task");
    let against = collusion
        .epsilon
        .expect("a finite ε against a tenth colluding");
    assert!(
        first.guarantee.epsilon <= 1.0 && against > 1.0,
        "{:?}",
        first.guarantee
    );
    let items: Vec<String> = (0..100).map(|i| (i % 2).to_string()).collect();
    let ledger = tally_client::DeviceLedger::new(1.0 + against, 1e-3);
    let (fleet, report, refused) = run_keeping(&url, items, enrolled, 4, ledger).await;
    assert_eq!(report.rounds.len(), 1, "{report:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let answered = &report.rounds[0].task_id;
    assert!(
        *answered == first.id || *answered == second.id,
        "{answered}"
    );
    assert_ne!(refused[0].0, *answered);
    assert!(refused[0].1.contains("left of its budget"), "{refused:?}");
    let (epsilon, delta) = fleet.ledger().unwrap().total();
    assert_eq!(
        (epsilon.to_bits(), delta.to_bits()),
        (against.to_bits(), collusion.delta.to_bits())
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_and_an_analyst_finish_under_a_small_rate_limit() {
    // One request per second per credential: each device's upload comes right after its
    // check-in and is refused once, the fleet's polling and the analyst's reads are refused
    // whenever they come sooner; every one of them is waited out.
    let limits = tally_server::Limits {
        requests_per_second: Some(1),
        ..tally_server::Limits::default()
    };
    let FleetServer {
        server,
        url,
        analyst,
        operator,
        enrolled,
        _dir,
    } = FleetServer::start_with(60, &limits).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);
    let task = client.create_task(&histogram_task(60)).await.unwrap();
    let items: Vec<String> = (0..60).map(|i| format!("item{}", i % 2)).collect();
    let config = FleetConfig {
        concurrency: 8,
        batch: 1,
        task: Some(task.id.clone()),
        seed: Some(9),
        poll_interval: Duration::from_millis(20),
    };
    let report = Fleet::new(Client::new(&url).unwrap(), items, config)
        .unwrap()
        .with_credentials(enrolled)
        .unwrap()
        .run(|_| {})
        .await
        .unwrap();
    let total = &report.total.counts;
    assert_eq!(total.accepted, 60, "{report:?}");
    assert!(total.rejected.is_empty(), "{:?}", total.rejected);
    for _ in 0..3 {
        assert_eq!(
            client.task(&task.id).await.unwrap().state,
            TaskState::Finished
        );
    }
    assert!(matches!(
        client.result(&task.id).await.unwrap(),
        TaskResult::Histogram(_)
    ));
    // The limit did refuse requests (each device's upload at least, sent right after its
    // check-in): the fleet finished by waiting them out.
    let metrics = serve(server.metrics_router()).await;
    let text = reqwest::Client::new()
        .get(format!("{metrics}/metrics"))
        .bearer_auth(&operator)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let refused: u64 = text
        .lines()
        .find_map(|line| line.strip_prefix(r#"tally_rejections_total{reason="rate_limited"} "#))
        .unwrap_or_else(|| panic!("no rate_limited count in {text}"))
        .parse()
        .unwrap();
    assert!(refused >= 30, "{refused} requests refused");
    server.shutdown().await;
}

/// A server serving on a listener of its own until it is stopped.
struct Running {
    server: Arc<tally_server::Server>,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Starts a server on the database `db` and serves it on `listener`.
    async fn start(db: &str, listener: TcpListener) -> Self {
        let server = Arc::new(tally_server::Server::start(db).await.unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = {
            let server = Arc::clone(&server);
            tokio::spawn(async move {
                let listeners = tally_server::Listeners {
                    api: listener,
                    metrics: None,
                    tls: None,
                };
                let stopped = async {
                    // A dropped sender stops the server as well.
                    let _ = stopped.await;
                };
                let limits = tally_server::Limits::default();
                server.serve(listeners, &limits, stopped).await.unwrap();
            })
        };
        Self {
            server,
            stop,
            serving,
        }
    }

    /// Stops taking requests, lets those in flight finish, and shuts the server down (its
    /// open rounds close unreleased and run again at the next start), as `tally serve` does on
    /// SIGTERM.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.serving.await.unwrap();
        let Ok(server) = Arc::try_unwrap(self.server) else {
            panic!("the server is still shared");
        };
        server.shutdown().await;
    }
}

/// Devices with the client's default retries ride out a server restart: the server is stopped
/// just after the first upload of a round, stays down 4 s (every request meets a refused
/// connection) and starts again on the same port and database; the devices' requests are
/// retried with backoff through the gap, the round cut short is over for them, and they finish
/// the task in the round the restart runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_finish_their_task_across_a_server_restart() {
    let db = FleetDb::new(200).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let url = format!("http://{address}");
    let first = Running::start(&db.url, listener).await;
    let client = Client::new(&url).unwrap().with_token(&db.analyst);
    let task = client.create_task(&histogram_task(200)).await.unwrap();
    let items: Vec<String> = (0..200).map(|i| format!("item{}", i % 4)).collect();
    let config = FleetConfig {
        concurrency: 1,
        batch: 1,
        task: Some(task.id.clone()),
        seed: Some(11),
        poll_interval: Duration::from_millis(20),
    };
    let fleet = Fleet::new(Client::new(&url).unwrap(), items, config)
        .unwrap()
        .with_credentials(db.enrolled.clone())
        .unwrap();
    let (first_upload, uploaded) = tokio::sync::oneshot::channel();
    let devices = tokio::spawn(async move {
        let mut first_upload = Some(first_upload);
        fleet
            .run(|event| {
                if let FleetEvent::Uploaded { .. } = event
                    && let Some(signal) = first_upload.take()
                {
                    let _ = signal.send(());
                }
            })
            .await
    });
    uploaded.await.unwrap();
    first.stop().await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        reqwest::get(format!("{url}/healthz")).await.is_err(),
        "the server is down"
    );
    let second = Running::start(&db.url, TcpListener::bind(address).await.unwrap()).await;
    let report = devices.await.unwrap().unwrap();
    // The round cut short, then the one run again, which the 200 devices filled.
    assert_eq!(report.rounds.len(), 2, "{report:?}");
    let attempts: Vec<u32> = report.rounds.iter().map(|r| r.attempt).collect();
    assert_eq!(attempts, [1, 2], "{report:?}");
    assert_eq!(report.rounds[1].counts.accepted, 200, "{report:?}");
    assert_eq!(
        client.task(&task.id).await.unwrap().state,
        TaskState::Finished
    );
    assert!(matches!(
        client.result(&task.id).await.unwrap(),
        TaskResult::Histogram(_)
    ));
    second.stop().await;
}
