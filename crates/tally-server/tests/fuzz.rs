//! Every request handler and the wire decoders behind it, fed generated requests: methods,
//! paths with generated segments, any credential or none, any content type, and bodies that
//! are valid protocol JSON, mutations of it, or arbitrary bytes. No request may panic the
//! server or get a 5xx, and a refused request changes nothing (tasks, ledger, populations,
//! credentials).
//!
//! The default run tries 512 requests; the full run tries 10^5:
//! `cargo test -p tally-server --test fuzz -- --ignored`.

mod common;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tally_messages::{PROTOCOL_VERSION, RoundPolicy, TaskInfo};
use tower::ServiceExt;

/// One generated request.
#[derive(Clone, Debug)]
struct Case {
    method: Method,
    path: String,
    /// Index into the world's credentials (operator, analyst, device), or none, or garbage.
    credential: u8,
    content_type: Option<&'static str>,
    body: Vec<u8>,
}

/// Rounds that stay open for the whole run: no deadline changes the state under a test.
fn a_week() -> RoundPolicy {
    RoundPolicy {
        min_cohort: 1,
        deadline_secs: 7 * 24 * 3600,
        ..RoundPolicy::default()
    }
}

/// A server with one running task and its open round.
struct World {
    server: tally_server::Server,
    router: Router,
    credentials: Credentials,
    task: String,
    round: String,
}

async fn world(db: &str) -> World {
    let (server, signed, credentials) = start(db, (10.0, 1e-5)).await;
    let task: TaskInfo = post(&signed, "/v1/tasks", &spec(histogram(0.5), 1.0, a_week())).await;
    let round = open_round(&signed, &task.id).await.round_id;
    World {
        router: both(&server),
        server,
        credentials,
        task: task.id,
        round,
    }
}

/// Protocol bodies the handlers take, valid as they are.
fn valid_bodies(world: &World) -> Vec<String> {
    vec![
        serde_json::to_string(&spec(histogram(0.5), 1.0, a_week())).unwrap(),
        format!(r#"{{"version":{PROTOCOL_VERSION},"devices":3}}"#),
        format!(
            r#"{{"version":{PROTOCOL_VERSION},"uploads":[{{"token":"x","report":"item"}},{{"token":"y","report":null}}]}}"#
        ),
        format!(
            r#"{{"version":{PROTOCOL_VERSION},"name":"other","budget":{{"epsilon":1,"delta":1e-6}},"min_cohort":1}}"#
        ),
        format!(
            r#"{{"version":{PROTOCOL_VERSION},"role":"analyst","name":"n","populations":["{POPULATION}"]}}"#
        ),
        world.task.clone(),
    ]
}

fn requests(world: &World) -> impl Strategy<Value = Case> {
    let segment = prop_oneof![
        Just(world.task.clone()),
        Just(world.round.clone()),
        "[a-z0-9%._-]{0,20}",
        "\\PC{0,12}".prop_map(|s| s.replace(['/', '?', '#', ' '], "")),
    ];
    let path = (
        0..12usize,
        segment.clone(),
        prop_oneof![Just(String::new()), "/[a-z-]{0,10}"],
    )
        .prop_map(|(template, id, tail)| match template {
            0 => "/v1/tasks".to_owned(),
            1 => format!("/v1/tasks/{id}"),
            2 => format!("/v1/tasks/{id}/cancel"),
            3 => format!("/v1/tasks/{id}/result"),
            4 => "/v1/rounds".to_owned(),
            5 => format!("/v1/rounds/{id}/check-in"),
            6 => format!("/v1/rounds/{id}/uploads"),
            7 => "/v1/ledger".to_owned(),
            8 => "/v1/populations".to_owned(),
            9 => "/v1/credentials".to_owned(),
            10 => format!("/v1/credentials/{id}/revoke"),
            _ => format!("/{id}{tail}"),
        });
    let valid = valid_bodies(world);
    let body = prop_oneof![
        proptest::sample::select(valid.clone()).prop_map(String::into_bytes),
        // A valid body with a few bytes changed, cut short, or both.
        (
            proptest::sample::select(valid),
            proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            any::<prop::sample::Index>(),
            any::<bool>(),
        )
            .prop_map(|(body, edits, cut, truncate)| {
                let mut bytes = body.into_bytes();
                for (at, byte) in edits {
                    let at = at.index(bytes.len());
                    bytes[at] = byte;
                }
                if truncate {
                    bytes.truncate(cut.index(bytes.len() + 1));
                }
                bytes
            }),
        proptest::collection::vec(any::<u8>(), 0..64),
        // JSON of the right shape with values out of range.
        (any::<i64>(), any::<f64>(), "\\PC{0,8}").prop_map(|(n, x, s)| {
            format!(
                r#"{{"version":{PROTOCOL_VERSION},"devices":{n},"uploads":[{{"token":{s:?},"report":{x}}}],"name":{s:?},"budget":{{"epsilon":{x},"delta":{x}}},"min_cohort":{n},"role":"device","populations":[{s:?}]}}"#
            )
            .into_bytes()
        }),
    ];
    (
        prop_oneof![Just(Method::GET), Just(Method::POST), Just(Method::DELETE)],
        path,
        0..5u8,
        prop_oneof![
            Just(Some("application/json")),
            Just(Some("text/plain")),
            Just(None)
        ],
        body,
    )
        .prop_map(|(method, path, credential, content_type, body)| Case {
            method,
            path,
            credential,
            content_type,
            body,
        })
}

/// What a refused request must not change, as the operator and the analyst read it.
async fn state(world: &World) -> Vec<String> {
    let mut seen = Vec::new();
    for (path, token) in [
        ("/v1/tasks", &world.credentials.operator),
        ("/v1/ledger", &world.credentials.operator),
        ("/v1/populations", &world.credentials.operator),
        ("/v1/credentials", &world.credentials.operator),
        ("/v1/tasks", &world.credentials.analyst),
    ] {
        let request = Request::builder()
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let response = world.router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        seen.push(String::from_utf8(body.to_vec()).unwrap());
    }
    seen
}

async fn send(world: &World, case: &Case) -> StatusCode {
    let mut request = Request::builder()
        .method(case.method.clone())
        .uri(&case.path);
    let token = match case.credential {
        0 => Some(world.credentials.operator.as_str()),
        1 => Some(world.credentials.analyst.as_str()),
        2 => Some(world.credentials.device.as_str()),
        3 => Some("tally_0000000000000000_garbage"),
        _ => None,
    };
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(content_type) = case.content_type {
        request = request.header("content-type", content_type);
    }
    let request = request.body(Body::from(case.body.clone())).unwrap();
    let response = world.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    // The whole answer is produced without failing.
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    status
}

fn fuzz(cases: u32) {
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let world = runtime.block_on(world(&db));
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&requests(&world), |case| {
        runtime.block_on(async {
            // Only a path that parses is a request (the HTTP layer refuses the rest).
            if case.path.parse::<axum::http::Uri>().is_err() {
                return Ok(());
            }
            let before = state(&world).await;
            let status = send(&world, &case).await;
            prop_assert!(!status.is_server_error(), "{status} for {case:?}");
            if !status.is_success() {
                let after = state(&world).await;
                prop_assert_eq!(&before, &after, "a refused request changed the state");
            }
            Ok::<(), TestCaseError>(())
        })
    });
    runtime.block_on(world.server.shutdown());
    result.unwrap();
}

#[test]
fn generated_requests_never_fail_the_server_and_refusals_change_nothing() {
    fuzz(512);
}

/// `cargo test -p tally-server --test fuzz -- --ignored` (10^5 requests).
#[test]
#[ignore = "10^5 requests: cargo test -p tally-server --test fuzz -- --ignored"]
fn generated_requests_never_fail_the_server_and_refusals_change_nothing_100k() {
    fuzz(100_000);
}
