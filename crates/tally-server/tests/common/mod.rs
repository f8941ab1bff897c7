//! Shared by the server's tests: fresh databases, credentials, requests to the router in
//! process or to a server over TLS ([`Api`]), metric readings.

#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::path::Path;
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
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tower::ServiceExt;

/// A fresh, empty database for one test.
pub struct TestDb {
    pub url: String,
    pub name: &'static str,
    _dir: Option<TempDir>,
}

/// The databases every storage test runs against: a SQLite file always, and PostgreSQL when
/// the build saw `TALLY_TEST_POSTGRES_URL` (`cfg(tally_postgres)`, `build.rs`; then a missing
/// variable fails the test). Each file whose tests use both declares [`postgres_half`], which
/// shows as ignored when they ran on SQLite alone.
pub async fn databases() -> Vec<TestDb> {
    let dir = tempfile::tempdir().unwrap();
    let mut dbs = vec![TestDb {
        url: format!("sqlite://{}", dir.path().join("tally.db").display()),
        name: "sqlite",
        _dir: Some(dir),
    }];
    if cfg!(tally_postgres) {
        let base = std::env::var("TALLY_TEST_POSTGRES_URL")
            .expect("TALLY_TEST_POSTGRES_URL names the PostgreSQL server: source .ci/postgres.sh");
        dbs.push(postgres(&base).await);
    }
    dbs
}

/// A test that the storage tests of the file declaring it ran on PostgreSQL as well as SQLite:
/// ignored, with the reason shown, when the build had no PostgreSQL server (those tests then
/// pass on SQLite alone). Not every file of tests declares it.
#[allow(unused_macros)]
macro_rules! postgres_half {
    () => {
        #[tokio::test]
        #[cfg_attr(
            not(tally_postgres),
            ignore = "needs PostgreSQL: this file's storage tests ran on SQLite only; source .ci/postgres.sh"
        )]
        async fn the_storage_tests_ran_on_postgres_too() {
            let stores: Vec<_> = common::databases().await.iter().map(|db| db.name).collect();
            assert_eq!(stores, ["sqlite", "postgres"]);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use postgres_half;

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

/// The credential a request to `path` carries when it has none of its own: the operator's
/// for `/v1/rounds…` (a relay checking in many devices at once), `/metrics`,
/// `/v1/credentials…` and `/v1/populations…`, the analyst's for the rest.
fn default_token<'a>(credentials: &'a Credentials, path: &str) -> &'a str {
    if path.starts_with("/v1/rounds")
        || path == "/metrics"
        || path.starts_with("/v1/populations")
        || path.starts_with("/v1/credentials")
    {
        &credentials.operator
    } else {
        &credentials.analyst
    }
}

/// `router` with a credential added to every request that has none (see [`default_token`]).
/// Tests of the API's behaviour go through it; tests of authentication use the bare router.
pub fn signed_in(router: Router, credentials: &Credentials) -> Router {
    let credentials = Arc::new(credentials.clone());
    router.layer(axum::middleware::map_request(
        move |mut request: Request<Body>| {
            let credentials = Arc::clone(&credentials);
            async move {
                let token = default_token(&credentials, request.uri().path());
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
    population_under(db, name, budget, tally_messages::Neighbours::AddRemove).await;
}

/// [`population`] with its budget kept under `neighbours`.
async fn population_under(
    db: &str,
    name: &str,
    budget: (f64, f64),
    neighbours: tally_messages::Neighbours,
) {
    let spec = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: name.into(),
        budget: Budget {
            epsilon: budget.0,
            delta: budget.1,
        },
        min_cohort: 1,
        max_task_epsilon: None,
        trust: tally_messages::TrustModel::SingleParty,
        // The tests that upload chosen reports count them exactly: their tasks sample on the
        // devices, which the operator allows here.
        allow_device_sampling: true,
        colluding_fraction: 0.0,
        task_bound: None,
        neighbours,
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

/// Where a test's requests go: the router in process, or a server over TLS ([`TlsApi`]). A
/// request without a token of its own carries the default credential of its path (see
/// [`signed_in`]).
pub trait Api: Clone + Send + Sync + 'static {
    /// Sends one JSON request, with `token` as its credential when given, and returns the
    /// status and body.
    fn send(
        &self,
        token: Option<&str>,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> impl Future<Output = (StatusCode, String)> + Send;
}

impl Api for Router {
    async fn send(
        &self,
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
        let response = self.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }
}

/// Sends one request and returns the status and body.
pub async fn call<A: Api>(
    api: &A,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    api.send(None, method, path, body).await
}

/// A GET that must succeed, parsed.
pub async fn get<T: DeserializeOwned>(router: &impl Api, path: &str) -> T {
    let (status, body) = call(router, Method::GET, path, None).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A POST of `value` that must succeed, parsed.
pub async fn post<B: Serialize, T: DeserializeOwned>(
    router: &impl Api,
    path: &str,
    value: &B,
) -> T {
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

/// [`post`] with the credential `token`.
pub async fn post_as<B: Serialize, T: DeserializeOwned>(
    router: &impl Api,
    token: &str,
    path: &str,
    value: &B,
) -> T {
    let body = Some(serde_json::to_string(value).unwrap());
    let (status, body) = call_with(router, token, Method::POST, path, body).await;
    assert!(status.is_success(), "{path}: {status} {body}");
    serde_json::from_str(&body).unwrap()
}

/// A rejection counter's value on `/metrics`.
pub async fn rejections<A: Api>(router: &A, reason: &str) -> u64 {
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

/// The population whose budget is kept under replace-one neighbours, for the tasks whose
/// guarantee is (see [`swapped`]).
pub const SWAPPED: &str = "swapped";

/// Provisions [`SWAPPED`] with `budget` under replace-one neighbours; an analyst's credential
/// over it.
pub async fn swapped(db: &str, budget: (f64, f64)) -> String {
    population_under(db, SWAPPED, budget, tally_messages::Neighbours::ReplaceOne).await;
    credential(db, Role::Analyst, "swapped-analyst", &[SWAPPED]).await
}

/// `spec` under replace-one neighbours, over [`SWAPPED`].
pub fn replace_one(mut spec: TaskSpec) -> TaskSpec {
    spec.privacy.neighbours = tally_accounting::Neighbours::ReplaceOne;
    spec.population = SWAPPED.into();
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

/// The count of `[lo, hi)` among numbers in `[0, 100]` from a hierarchical histogram with
/// branching 4, a fixed per-level sampling rate and the given levels.
pub fn range(lo: f64, hi: f64, levels: u32, sampling_rate: f64) -> TaskKind {
    TaskKind::Range {
        lo,
        hi,
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
pub async fn open_round<A: Api>(router: &A, task: &str) -> RoundQuery {
    let rounds: Vec<RoundQuery> = get(router, "/v1/rounds").await;
    rounds
        .into_iter()
        .find(|r| r.task_id == task)
        .unwrap_or_else(|| panic!("task {task} has no open round"))
}

/// `devices` tokens for `round`.
pub async fn tokens<A: Api>(router: &A, round: &str, devices: u32) -> Vec<String> {
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
pub async fn call_with<A: Api>(
    router: &A,
    token: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, String) {
    router.send(Some(token), method, path, body).await
}

/// The released document of `task`, waiting for its last round to be released.
pub async fn released<A: Api>(router: &A, task: &str) -> String {
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
pub async fn enroll<A: Api>(router: &A, population: &str, count: u32) -> Vec<String> {
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

/// A self-signed certificate for `127.0.0.1` and `localhost`, written as `NAME.pem` and
/// `NAME.key` in `dir`; returns the certificate's PEM.
pub fn certificate(dir: &Path, name: &str) -> String {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let pem = made.cert.pem();
    std::fs::write(dir.join(format!("{name}.pem")), &pem).unwrap();
    std::fs::write(
        dir.join(format!("{name}.key")),
        made.signing_key.serialize_pem(),
    )
    .unwrap();
    pem
}

/// The TLS configuration of the certificate [`certificate`] wrote as `NAME` in `dir`.
pub fn tls(dir: &Path, name: &str) -> tally_server::Tls {
    tally_server::Tls::from_pem_files(
        &dir.join(format!("{name}.pem")),
        &dir.join(format!("{name}.key")),
    )
    .unwrap()
}

/// A server serving its API and the operator's `/metrics` over TLS on two loopback
/// listeners, as `tally serve --tls-cert --tls-key --metrics-listen` does.
pub struct Served {
    server: Arc<tally_server::Server>,
    serving: JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
    _dir: TempDir,
}

impl Served {
    /// Stops serving (the requests in flight finish) and shuts the server down.
    pub async fn shutdown(self) {
        self.stop.send(()).unwrap();
        self.serving.await.unwrap();
        let server = Arc::try_unwrap(self.server)
            .unwrap_or_else(|_| panic!("the server is still shared after serving"));
        server.shutdown().await;
    }
}

/// Requests to a [`Served`] server over TLS, trusting its certificate alone, each with a
/// bearer credential (its own, or the default of its path: see [`default_token`]).
#[derive(Clone)]
pub struct TlsApi {
    http: reqwest::Client,
    api: String,
    metrics: String,
    credentials: Arc<Credentials>,
    /// The server's certificate, for [`TlsApi::declare_body`]'s own connection.
    ca_pem: Arc<str>,
}

impl TlsApi {
    /// A POST to `path` (the default credential of its path) whose headers declare a body of
    /// `length` bytes and that sends none of it: the answer shows what the server does before
    /// it reads a body. (An HTTP client sending a large body may see its connection reset by
    /// a server that answered early, before it reads the answer.)
    pub async fn declare_body(&self, path: &str, length: usize) -> (StatusCode, String) {
        use rustls::pki_types::pem::PemObject;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let address = self.api.strip_prefix("https://").unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut stream = connector.connect(name, tcp).await.unwrap();
        let token = default_token(&self.credentials, path);
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {length}\r\n\
             Connection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.flush().await.unwrap();
        let mut answer = Vec::new();
        // The server closes the connection after answering (with or without TLS's
        // close_notify): what arrived before is the answer.
        stream.read_to_end(&mut answer).await.ok();
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse::<u16>().unwrap();
        (StatusCode::from_u16(status).unwrap(), body.to_owned())
    }
}

impl Api for TlsApi {
    async fn send(
        &self,
        token: Option<&str>,
        method: Method,
        path: &str,
        body: Option<String>,
    ) -> (StatusCode, String) {
        let base = if path == "/metrics" {
            &self.metrics
        } else {
            &self.api
        };
        let token = token.unwrap_or_else(|| default_token(&self.credentials, path));
        let method = reqwest::Method::from_bytes(method.as_str().as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method, format!("{base}{path}"))
            .header("content-type", "application/json")
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.unwrap();
        let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
        (status, response.text().await.unwrap())
    }
}

/// [`start`] over TLS: population [`POPULATION`] provisioned with `budget`, the three
/// credentials, and the server on `db` serving over TLS.
pub async fn start_tls(db: &str, budget: (f64, f64)) -> (Served, TlsApi, Credentials) {
    population(db, POPULATION, budget).await;
    let credentials = credentials(db).await;
    let (served, api) = restart_tls(db, &credentials).await;
    (served, api, credentials)
}

/// A server on `db` again, serving over TLS with a fresh certificate, and a client trusting
/// it with the `credentials` made before.
pub async fn restart_tls(db: &str, credentials: &Credentials) -> (Served, TlsApi) {
    let dir = tempfile::tempdir().unwrap();
    let pem = certificate(dir.path(), "server");
    let server = Arc::new(tally_server::Server::start(db).await.unwrap());
    let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (api_address, metrics_address) = (api.local_addr().unwrap(), metrics.local_addr().unwrap());
    let listeners = tally_server::Listeners {
        api,
        metrics: Some(metrics),
        tls: Some(tls(dir.path(), "server")),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn({
        let server = Arc::clone(&server);
        async move {
            let limits = tally_server::Limits::default();
            let shutdown = async {
                stopped.await.ok();
            };
            server.serve(listeners, &limits, shutdown).await.unwrap();
        }
    });
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let http = reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let api = TlsApi {
        http,
        api: format!("https://{api_address}"),
        metrics: format!("https://{metrics_address}"),
        credentials: Arc::new(credentials.clone()),
        ca_pem: Arc::from(pem.as_str()),
    };
    let served = Served {
        server,
        serving,
        stop,
        _dir: dir,
    };
    (served, api)
}
