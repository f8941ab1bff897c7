//! The client and the fleet over loopback HTTP: retries against a failing server, and a fleet
//! against the real server in process.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use tally_client::{Client, ClientError, Fleet, FleetConfig, FleetEvent, RetryPolicy};
use tally_messages::{
    Budget, CredentialSpec, ErrorCode, PROTOCOL_VERSION, PopulationSpec, Role, TaskResult,
    TaskSpec, TaskState,
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
/// cohort floor), an analyst's credential and `devices` enrolled devices.
struct FleetServer {
    server: tally_server::Server,
    url: String,
    analyst: String,
    enrolled: Vec<String>,
    _dir: tempfile::TempDir,
}

impl FleetServer {
    async fn start(devices: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("tally.db").display());
        let population = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "fleet".into(),
            budget: Budget {
                epsilon: 10.0,
                delta: 1e-5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
        };
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
        let enrolled = tally_server::enroll_devices(&db, "fleet", devices)
            .await
            .unwrap();
        let server = tally_server::Server::start(&db).await.unwrap();
        let url = serve(server.router()).await;
        Self {
            server,
            url,
            analyst,
            enrolled,
            _dir: dir,
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
    assert_eq!(
        total.upload_requests, total.accepted,
        "one device per request"
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
async fn devices_refuse_a_task_past_their_own_budget() {
    let FleetServer {
        server,
        url,
        analyst,
        enrolled,
        _dir,
    } = FleetServer::start(60).await;
    let client = Client::new(&url).unwrap().with_token(&analyst);
    // Two tasks of ε = 1 each, which the server's budget of 10 admits; the devices keep a
    // budget of 1.5 of their own.
    let first = client.create_task(&histogram_task(60)).await.unwrap();
    let second = client.create_task(&histogram_task(60)).await.unwrap();
    let config = FleetConfig {
        seed: Some(3),
        poll_interval: Duration::from_millis(20),
        ..FleetConfig::default()
    };
    let items: Vec<String> = (0..60).map(|i| format!("item{}", i % 2)).collect();
    let fleet = Fleet::new(Client::new(&url).unwrap(), items, config)
        .unwrap()
        .with_credentials(enrolled)
        .unwrap()
        .with_ledger(tally_client::DeviceLedger::new(1.5, 1e-5));
    let mut refused = Vec::new();
    let report = fleet
        .run(|event| {
            if let FleetEvent::Refused { query, reason } = event {
                refused.push((query.task_id.clone(), reason.to_string()));
            }
        })
        .await
        .unwrap();
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
