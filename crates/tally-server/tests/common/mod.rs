//! Shared by the server's tests: fresh databases, credentials, requests to the router, metric
//! readings.

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderValue, Method, Request, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Connection;
use tally_messages::{
    Budget, CheckIn, CheckInGrant, CredentialSpec, HeavyHittersAlgorithm, HistogramMechanism,
    PROTOCOL_VERSION, PopulationSpec, PrivacyTarget, Role, RoundPolicy, RoundQuery, TaskKind,
    TaskSpec, Upload, UploadBatch,
};
use tempfile::TempDir;
use tower::ServiceExt;

/// A fresh, empty database for one test.
pub struct TestDb {
    pub url: String,
    pub name: &'static str,
    _dir: Option<TempDir>,
}

/// The databases every storage test runs against: a SQLite file always, and PostgreSQL when
/// `TALLY_TEST_POSTGRES_URL` is set (required when `TALLY_REQUIRE_POSTGRES=1`, as in CI).
pub async fn databases() -> Vec<TestDb> {
    let dir = tempfile::tempdir().unwrap();
    let mut dbs = vec![TestDb {
        url: format!("sqlite://{}", dir.path().join("tally.db").display()),
        name: "sqlite",
        _dir: Some(dir),
    }];
    match std::env::var("TALLY_TEST_POSTGRES_URL") {
        Ok(base) => dbs.push(postgres(&base).await),
        Err(_) => assert!(
            std::env::var("TALLY_REQUIRE_POSTGRES").as_deref() != Ok("1"),
            "TALLY_REQUIRE_POSTGRES=1 but TALLY_TEST_POSTGRES_URL is not set"
        ),
    }
    dbs
}

/// A new database on the PostgreSQL server at `base`.
async fn postgres(base: &str) -> TestDb {
    let name = format!("tally_test_{:016x}", rand::random::<u64>());
    let mut admin = sqlx::PgConnection::connect(base).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    TestDb {
        url: format!("{prefix}/{name}"),
        name: "postgres",
        _dir: None,
    }
}

/// The population of the test tasks.
pub const POPULATION: &str = "test";

/// One credential of each role, for population [`POPULATION`].
#[derive(Clone, Debug)]
pub struct Credentials {
    pub operator: String,
    pub analyst: String,
    pub device: String,
}

/// A credential made in the database at `db`, as `tally token create --db` makes it.
pub async fn credential(db: &str, role: Role, name: &str, populations: &[&str]) -> String {
    let spec = CredentialSpec {
        version: PROTOCOL_VERSION,
        role,
        name: name.into(),
        populations: populations.iter().map(|p| (*p).to_owned()).collect(),
    };
    tally_server::create_credential(db, &spec)
        .await
        .unwrap()
        .token
}

/// One credential of each role in the database at `db`.
pub async fn credentials(db: &str) -> Credentials {
    Credentials {
        operator: credential(db, Role::Operator, "operator", &[]).await,
        analyst: credential(db, Role::Analyst, "analyst", &[POPULATION]).await,
        device: credential(db, Role::Device, "devices", &[POPULATION]).await,
    }
}

/// `router` with a credential added to every request that has none: the operator's for
/// `/v1/rounds…` (a relay checking in many devices at once), `/metrics`, `/v1/credentials…`
/// and `/v1/populations…`, the analyst's for the rest. Tests of the API's behaviour go through it; tests of authentication use the bare
/// router.
pub fn signed_in(router: Router, credentials: &Credentials) -> Router {
    let credentials = Arc::new(credentials.clone());
    router.layer(axum::middleware::map_request(
        move |mut request: Request<Body>| {
            let credentials = Arc::clone(&credentials);
            async move {
                let path = request.uri().path();
                let token = if path.starts_with("/v1/rounds")
                    || path == "/metrics"
                    || path.starts_with("/v1/populations")
                    || path.starts_with("/v1/credentials")
                {
                    &credentials.operator
                } else {
                    &credentials.analyst
                };
                let value = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
                request.headers_mut().entry(AUTHORIZATION).or_insert(value);
                request
            }
        },
    ))
}

/// Provisions `name` with a budget `(ε, δ)` and no floor or cap of its own, as `tally
/// population create --db` does.
pub async fn population(db: &str, name: &str, budget: (f64, f64)) {
    let spec = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: name.into(),
        budget: Budget {
            epsilon: budget.0,
            delta: budget.1,
        },
        min_cohort: 1,
        max_task_epsilon: None,
    };
    tally_server::create_population(db, &spec).await.unwrap();
}

/// A server on `db` with population [`POPULATION`] provisioned with `budget` and the three
/// credentials, its API signed in (see [`signed_in`]).
pub async fn start(db: &str, budget: (f64, f64)) -> (tally_server::Server, Router, Credentials) {
    population(db, POPULATION, budget).await;
    let credentials = credentials(db).await;
    let (server, router) = restart(db, &credentials).await;
    (server, router, credentials)
}

/// [`start`] with the aggregator's sampling coins seeded with `seed`
/// ([`tally_server::Server::start_seeded`]): the same rounds release the same samples.
pub async fn start_seeded(
    db: &str,
    budget: (f64, f64),
    seed: u64,
) -> (tally_server::Server, Router, Credentials) {
    population(db, POPULATION, budget).await;
    let credentials = credentials(db).await;
    let limits = tally_server::Limits::default();
    let server = tally_server::Server::start_seeded(db, &limits, seed)
        .await
        .unwrap();
    let router = signed_in(both(&server), &credentials);
    (server, router, credentials)
}

/// A server on `db` again, its API and the operator's `/metrics` (two listeners when served)
/// signed in with the `credentials` made before.
pub async fn restart(db: &str, credentials: &Credentials) -> (tally_server::Server, Router) {
    let server = tally_server::Server::start(db).await.unwrap();
    let router = signed_in(both(&server), credentials);
    (server, router)
}

/// The API and the operator's `/metrics` in one router, for tests that read both.
pub fn both(server: &tally_server::Server) -> Router {
    server.router().merge(server.metrics_router())
}

/// Sends one request to the router and returns the status and body.
pub async fn call(
    router: &Router,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    send(router, None, method, path, body).await
}

/// Sends one JSON request, with `token` as its credential when given.
async fn send(
    router: &Router,
    token: Option<&str>,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header(AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request
        .body(body.map_or_else(Body::empty, Body::from))
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A GET that must succeed, parsed.
pub async fn get<T: DeserializeOwned>(router: &Router, path: &str) -> T {
    let (status, body) = call(router, Method::GET, path, None).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A POST of `value` that must succeed, parsed.
pub async fn post<B: Serialize, T: DeserializeOwned>(router: &Router, path: &str, value: &B) -> T {
    let (status, body) = call(
        router,
        Method::POST,
        path,
        Some(serde_json::to_string(value).unwrap()),
    )
    .await;
    assert!(status.is_success(), "{path}: {status} {body}");
    serde_json::from_str(&body).unwrap()
}

/// A rejection counter's value on `/metrics`.
pub async fn rejections(router: &Router, reason: &str) -> u64 {
    let (_, text) = call(router, Method::GET, "/metrics", None).await;
    let prefix = format!("tally_rejections_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
        .parse()
        .unwrap()
}

/// A task spec with the given kind and policy, sampled by the devices.
pub fn spec(kind: TaskKind, epsilon: f64, rounds: RoundPolicy) -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: POPULATION.into(),
        expected_population: 1000,
        privacy: PrivacyTarget {
            epsilon,
            delta: 1e-6,
            neighbours: tally_accounting::Neighbours::AddRemove,
            analysis: tally_accounting::sample_threshold::Analysis::Tight,
        },
        kind,
        rounds,
        // The tests that upload chosen reports count them exactly: devices sample.
        sampling: tally_messages::Sampling::Device,
    }
}

/// `spec` under replace-one neighbours: its rounds have no privacy-loss pair, so the ledger
/// charges it its own `(ε, δ)` by basic composition (for tests of the ledger's bookkeeping
/// rather than of its accountant).
pub fn charged_basically(mut spec: TaskSpec) -> TaskSpec {
    spec.privacy.neighbours = tally_accounting::Neighbours::ReplaceOne;
    spec
}

/// A sample-and-threshold histogram with a fixed sampling rate.
pub fn histogram(sampling_rate: f64) -> TaskKind {
    TaskKind::Histogram {
        mechanism: HistogramMechanism::SampleThreshold,
        sampling_rate: Some(sampling_rate),
        threshold: None,
    }
}

/// A restricted TrieHH++ task with a fixed per-level sampling rate.
pub fn triehh_plus(levels: u32, sampling_rate: f64) -> TaskKind {
    TaskKind::HeavyHitters {
        algorithm: HeavyHittersAlgorithm::TrieHhPlus,
        levels,
        segment: 1,
        restricted: true,
        composition: Some(tally_accounting::composition::Composition::Basic),
        sampling_rate: Some(sampling_rate),
        threshold: None,
    }
}

/// Quantiles 0.1, 0.5 and 0.9 of numbers in `[0, 100]` from a hierarchical histogram with
/// branching 4, a fixed per-level sampling rate and the given levels.
pub fn quantiles(levels: u32, sampling_rate: f64) -> TaskKind {
    TaskKind::Quantiles {
        method: tally_messages::QuantileMethod::Hierarchical,
        quantiles: vec![0.1, 0.5, 0.9],
        branching: Some(4),
        levels,
        consistent: false,
        composition: Some(tally_accounting::composition::Composition::Basic),
        range: Some([0.0, 100.0]),
        sampling_rate: Some(sampling_rate),
        threshold: None,
    }
}

/// The open round of `task`.
pub async fn open_round(router: &Router, task: &str) -> RoundQuery {
    let rounds: Vec<RoundQuery> = get(router, "/v1/rounds").await;
    rounds
        .into_iter()
        .find(|r| r.task_id == task)
        .unwrap_or_else(|| panic!("task {task} has no open round"))
}

/// `devices` tokens for `round`.
pub async fn tokens(router: &Router, round: &str, devices: u32) -> Vec<String> {
    let grant: CheckInGrant = post(
        router,
        &format!("/v1/rounds/{round}/check-in"),
        &CheckIn {
            version: PROTOCOL_VERSION,
            devices,
        },
    )
    .await;
    grant.tokens
}

/// An upload batch.
pub fn batch(uploads: Vec<(String, Option<&str>)>) -> UploadBatch {
    UploadBatch {
        version: PROTOCOL_VERSION,
        uploads: uploads
            .into_iter()
            .map(|(token, report)| Upload {
                token,
                report: report.map(str::to_owned),
            })
            .collect(),
    }
}

/// Sends one request with `token` as its credential and returns the status and body.
pub async fn call_with(
    router: &Router,
    token: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    send(router, Some(token), method, path, body).await
}

/// The released document of `task`, waiting for its last round to be released.
pub async fn released(router: &Router, task: &str) -> String {
    loop {
        let (status, text) = call(
            router,
            Method::GET,
            &format!("/v1/tasks/{task}/result"),
            None,
        )
        .await;
        if status == StatusCode::OK {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Enrolls `count` devices of `population` through the API (the router signed in as the
/// operator) and returns their tokens.
pub async fn enroll(router: &Router, population: &str, count: u32) -> Vec<String> {
    let enrolled: tally_messages::EnrolledDevices = post(
        router,
        &format!("/v1/populations/{population}/devices"),
        &tally_messages::DeviceEnrollment {
            version: PROTOCOL_VERSION,
            count,
        },
    )
    .await;
    assert_eq!(enrolled.tokens.len(), count as usize);
    enrolled.tokens
}
