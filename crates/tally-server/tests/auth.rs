//! The trust boundary of the API: who may do what. Each test is an attack that worked on a
//! server without credentials (any caller created, cancelled and read any task, took upload
//! tokens, read the ledger and the metrics; a web page drove the server with a `text/plain`
//! POST), and must now fail without changing anything.

mod common;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use tally_messages::{
    CredentialInfo, CredentialSpec, ErrorBody, ErrorCode, IssuedCredential, LedgerBalance,
    PROTOCOL_VERSION, Role, RoundPolicy, RoundQuery, TaskInfo, TaskState,
};
use tally_server::Server;
use tower::ServiceExt;

common::postgres_half!();

const BUDGET: (f64, f64) = (10.0, 1e-5);

/// A request to the bare router: the given credential and headers, nothing added.
async fn send(
    router: &Router,
    method: Method,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
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

const JSON: (&str, &str) = ("content-type", "application/json");

fn code_of(text: &str) -> ErrorCode {
    serde_json::from_str::<ErrorBody>(text)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .code
}

fn task_spec() -> String {
    let rounds = RoundPolicy {
        min_cohort: 1,
        cohort_target: Some(1000),
        ..RoundPolicy::default()
    };
    serde_json::to_string(&spec(histogram(0.5), 1.0, rounds)).unwrap()
}

/// A server with one running task, its open round, and the credentials.
struct World {
    server: Server,
    bare: Router,
    signed: Router,
    credentials: Credentials,
    task: TaskInfo,
    round: RoundQuery,
}

async fn world(db: &TestDb) -> World {
    let (server, signed, credentials) = start(&db.url, BUDGET).await;
    let bare = both(&server);
    let task: TaskInfo = post(
        &signed,
        "/v1/tasks",
        &serde_json::from_str::<serde_json::Value>(&task_spec()).unwrap(),
    )
    .await;
    let round = open_round(&signed, &task.id).await;
    World {
        server,
        bare,
        signed,
        credentials,
        task,
        round,
    }
}

/// Every endpoint but `/healthz`, with a body where it takes one.
fn endpoints(world: &World) -> Vec<(Method, String, Option<String>)> {
    let task = &world.task.id;
    let round = &world.round.round_id;
    let credential = serde_json::to_string(&CredentialSpec {
        version: PROTOCOL_VERSION,
        role: Role::Operator,
        name: "intruder".into(),
        populations: vec![],
    })
    .unwrap();
    vec![
        (Method::POST, "/v1/tasks".into(), Some(task_spec())),
        (Method::GET, "/v1/tasks".into(), None),
        (Method::GET, format!("/v1/tasks/{task}"), None),
        (Method::POST, format!("/v1/tasks/{task}/cancel"), None),
        (Method::GET, format!("/v1/tasks/{task}/result"), None),
        (Method::GET, "/v1/rounds".into(), None),
        (
            Method::POST,
            format!("/v1/rounds/{round}/check-in"),
            Some(r#"{"version":1,"devices":10}"#.into()),
        ),
        (
            Method::POST,
            format!("/v1/rounds/{round}/uploads"),
            Some(r#"{"version":1,"uploads":[]}"#.into()),
        ),
        (Method::GET, "/v1/ledger".into(), None),
        (Method::GET, "/metrics".into(), None),
        (Method::POST, "/v1/credentials".into(), Some(credential)),
        (Method::GET, "/v1/credentials".into(), None),
        (
            Method::POST,
            "/v1/credentials/0000000000000000/revoke".into(),
            None,
        ),
    ]
}

/// The task is still the only one, running, and no credential was added.
async fn nothing_changed(world: &World, credentials_before: usize) {
    let tasks: Vec<TaskInfo> = get(&world.signed, "/v1/tasks").await;
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].state, TaskState::Running);
    let credentials: Vec<CredentialInfo> = get(&world.signed, "/v1/credentials").await;
    assert_eq!(credentials.len(), credentials_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_live_credential_are_refused_and_change_nothing() {
    for db in databases().await {
        let world = world(&db).await;
        // The analyst's token with its secret's last digit changed, and garbage.
        let mut forged = world.credentials.analyst.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == '0' { '1' } else { '0' });
        for token in [None, Some(forged.as_str()), Some("tally_x"), Some("")] {
            for (method, path, body) in endpoints(&world) {
                let (status, text) =
                    send(&world.bare, method.clone(), &path, token, &[JSON], body).await;
                assert_eq!(
                    (status, code_of(&text)),
                    (StatusCode::UNAUTHORIZED, ErrorCode::Unauthenticated),
                    "{} {method} {path} with {token:?}",
                    db.name
                );
            }
        }
        let (status, text) = send(&world.bare, Method::GET, "/healthz", None, &[], None).await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "ok\n"));
        nothing_changed(&world, 3).await;
        world.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_reaches_only_its_own_endpoints_populations_and_tasks() {
    for db in databases().await {
        let world = world(&db).await;
        let other_analyst = credential(&db.url, Role::Analyst, "other", &["test", "other"]).await;
        let other_device = credential(&db.url, Role::Device, "other", &["other"]).await;
        let task = &world.task.id;
        let round = &world.round.round_id;
        let Credentials {
            operator,
            analyst,
            device,
        } = &world.credentials;
        let forbidden = [
            // Devices and operators create no task; an analyst only over its populations.
            (
                device,
                Method::POST,
                "/v1/tasks".to_owned(),
                Some(task_spec()),
            ),
            (
                operator,
                Method::POST,
                "/v1/tasks".into(),
                Some(task_spec()),
            ),
            // Someone else's task.
            (
                &other_analyst,
                Method::GET,
                format!("/v1/tasks/{task}"),
                None,
            ),
            (
                &other_analyst,
                Method::POST,
                format!("/v1/tasks/{task}/cancel"),
                None,
            ),
            (
                &other_analyst,
                Method::GET,
                format!("/v1/tasks/{task}/result"),
                None,
            ),
            // An operator reads no result; a device no result and no task of another
            // population.
            (
                operator,
                Method::GET,
                format!("/v1/tasks/{task}/result"),
                None,
            ),
            (
                device,
                Method::GET,
                format!("/v1/tasks/{task}/result"),
                None,
            ),
            (
                device,
                Method::POST,
                format!("/v1/tasks/{task}/cancel"),
                None,
            ),
            (
                &other_device,
                Method::GET,
                format!("/v1/tasks/{task}"),
                None,
            ),
            // Only devices take part in rounds, and only their population's.
            (analyst, Method::GET, "/v1/rounds".into(), None),
            (
                analyst,
                Method::POST,
                format!("/v1/rounds/{round}/check-in"),
                Some(r#"{"version":1}"#.into()),
            ),
            (
                &other_device,
                Method::POST,
                format!("/v1/rounds/{round}/check-in"),
                Some(r#"{"version":1}"#.into()),
            ),
            (
                &other_device,
                Method::POST,
                format!("/v1/rounds/{round}/uploads"),
                Some(r#"{"version":1,"uploads":[]}"#.into()),
            ),
            // Devices read no ledger; only operators see metrics and credentials.
            (device, Method::GET, "/v1/ledger".into(), None),
            (analyst, Method::GET, "/metrics".into(), None),
            (device, Method::GET, "/metrics".into(), None),
            (analyst, Method::GET, "/v1/credentials".into(), None),
            (
                analyst,
                Method::POST,
                "/v1/credentials".into(),
                Some(r#"{"version":1,"role":"operator","name":"me","populations":[]}"#.into()),
            ),
        ];
        for (token, method, path, body) in forbidden {
            let (status, text) = send(
                &world.bare,
                method.clone(),
                &path,
                Some(token),
                &[JSON],
                body,
            )
            .await;
            assert_eq!(
                (status, code_of(&text)),
                (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
                "{} {method} {path}",
                db.name
            );
        }
        // Each sees only its own: the other population's device no round and no task, the
        // other analyst no task (it made none).
        for (token, path) in [(&other_device, "/v1/rounds"), (&other_analyst, "/v1/tasks")] {
            let (status, text) = send(&world.bare, Method::GET, path, Some(token), &[], None).await;
            assert_eq!((status, text.as_str()), (StatusCode::OK, "[]"), "{path}");
        }
        // The other analyst's ledger has population "test" only: "other" is not provisioned.
        let (_, text) = send(
            &world.bare,
            Method::GET,
            "/v1/ledger",
            Some(&other_analyst),
            &[],
            None,
        )
        .await;
        let ledger: Vec<LedgerBalance> = serde_json::from_str(&text).unwrap();
        assert!(ledger.iter().all(|b| b.population == "test"), "{text}");
        nothing_changed(&world, 5).await;
        // The operator may cancel any task (and does, last).
        let (status, _) = send(
            &world.bare,
            Method::POST,
            &format!("/v1/tasks/{task}/cancel"),
            Some(operator),
            &[],
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        world.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_page_cannot_drive_the_server() {
    for db in databases().await {
        let world = world(&db).await;
        let analyst = world.credentials.analyst.as_str();
        // A form or fetch() without preflight: text/plain (a CORS simple request), with or
        // without a credential the page could not have anyway.
        for token in [None, Some(analyst)] {
            let (status, _) = send(
                &world.bare,
                Method::POST,
                "/v1/tasks",
                token,
                &[
                    ("content-type", "text/plain"),
                    ("origin", "http://evil.example"),
                ],
                Some(task_spec()),
            )
            .await;
            assert!(status.is_client_error(), "{status}");
        }
        let (status, text) = send(
            &world.bare,
            Method::POST,
            "/v1/tasks",
            Some(analyst),
            &[("content-type", "text/plain")],
            Some(task_spec()),
        )
        .await;
        assert_eq!(
            (status, code_of(&text)),
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType
            ),
            "{}",
            db.name
        );
        // Any request with an Origin header, even JSON with a credential.
        let (status, text) = send(
            &world.bare,
            Method::GET,
            "/v1/tasks",
            Some(analyst),
            &[("origin", "http://127.0.0.1:8080")],
            None,
        )
        .await;
        assert_eq!(
            (status, code_of(&text)),
            (StatusCode::FORBIDDEN, ErrorCode::Forbidden)
        );
        // DNS rebinding: a page's own name pointed at the loopback server.
        let served = world.server.router_for("127.0.0.1:8080".parse().unwrap());
        for (host, expected) in [
            ("evil.example:8080", StatusCode::FORBIDDEN),
            ("127.0.0.1:8081", StatusCode::FORBIDDEN),
            ("127.0.0.1:8080", StatusCode::OK),
            ("LOCALHOST:8080", StatusCode::OK),
        ] {
            let (status, _) = send(
                &served,
                Method::GET,
                "/v1/tasks",
                Some(analyst),
                &[("host", host)],
                None,
            )
            .await;
            assert_eq!(status, expected, "Host {host}");
        }
        nothing_changed(&world, 3).await;
        world.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_shown_once_stored_as_hashes_and_revocable() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let (server, signed, credentials) = start(&db, BUDGET).await;
    let bare = both(&server);
    // An operator makes an analyst through the API.
    let issued: IssuedCredential = post(
        &signed,
        "/v1/credentials",
        &CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Analyst,
            name: "bob".into(),
            populations: vec!["test".into()],
        },
    )
    .await;
    let bob = issued.token.as_str();
    let (status, _) = send(&bare, Method::GET, "/v1/ledger", Some(bob), &[], None).await;
    assert_eq!(status, StatusCode::OK);
    // Listing never shows a secret.
    let (_, listed) = send(
        &bare,
        Method::GET,
        "/v1/credentials",
        Some(&credentials.operator),
        &[],
        None,
    )
    .await;
    let secrets: Vec<&str> = [bob, &credentials.analyst, &credentials.device]
        .into_iter()
        .map(|t| t.rsplit('_').next().unwrap())
        .collect();
    for secret in &secrets {
        assert!(!listed.contains(secret));
    }
    // Nor does the database, in any of its files.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in &secrets {
            assert!(!text.contains(secret), "a secret is stored in clear");
        }
    }
    // Revoked through the API: refused from the next request on.
    let revoked: CredentialInfo = post(
        &signed,
        &format!("/v1/credentials/{}/revoke", issued.credential.id),
        &(),
    )
    .await;
    assert!(revoked.revoked);
    let (status, _) = send(&bare, Method::GET, "/v1/ledger", Some(bob), &[], None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Revoked in the database (`tally token revoke --db`) while the server runs: the server
    // holds its credentials in memory and sees the change at its next poll of the database
    // (within `CREDENTIALS_STALENESS`, one second); waited for here without timing it, and
    // refused for good once seen.
    let analyst_id = credentials.analyst.split('_').nth(1).unwrap();
    tally_server::revoke_credential(&db, analyst_id)
        .await
        .unwrap();
    let ledger = |token: String| {
        let bare = bare.clone();
        async move { send(&bare, Method::GET, "/v1/ledger", Some(&token), &[], None).await }
    };
    let mut polls = 0;
    while ledger(credentials.analyst.clone()).await.0 != StatusCode::UNAUTHORIZED {
        polls += 1;
        assert!(
            polls < 600,
            "a credential revoked with --db is still accepted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for _ in 0..20 {
        let (status, _) = ledger(credentials.analyst.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // A credential made with --db while the server runs is accepted at once: an id the
    // server does not hold yet is read from the database.
    let carol = credential(&db, Role::Analyst, "carol", &["test"]).await;
    assert_eq!(ledger(carol).await.0, StatusCode::OK);
    // Credentials the roles do not allow are refused.
    for (role, populations) in [
        (Role::Device, vec![]),
        (Role::Operator, vec!["test".to_owned()]),
        (Role::Analyst, vec!["Test ".to_owned()]),
    ] {
        let spec = CredentialSpec {
            version: PROTOCOL_VERSION,
            role,
            name: "x".into(),
            populations,
        };
        let (status, _) = call(
            &signed,
            Method::POST,
            "/v1/credentials",
            Some(serde_json::to_string(&spec).unwrap()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec:?}");
        assert!(tally_server::create_credential(&db, &spec).await.is_err());
    }
    server.shutdown().await;
}
