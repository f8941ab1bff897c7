//! Bounds on connections and requests. On a server without them, a connection sending its
//! headers one byte at a time stayed open forever and held up the shutdown, a body that never
//! arrived held its request, and one credential could send requests without limit.

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::ErrorCode;
use tally_server::{Limits, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

common::postgres_half!();

/// The API on `api`, in plain HTTP.
fn listeners(api: TcpListener) -> tally_server::Listeners {
    tally_server::Listeners {
        api,
        metrics: None,
        tls: None,
    }
}

/// Far longer than any bound under test: only a failure waits this long.
const GUARD: Duration = Duration::from_secs(120);

/// Sends a request's headers one byte every 100 ms (a slowloris client) until the server
/// closes the connection; true if it did so before the headers were complete.
async fn slowloris(address: std::net::SocketAddr) -> bool {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let headers = format!(
        "GET /healthz HTTP/1.1\r\nHost: {address}\r\nX-Slow: {}\r\n\r\n",
        "a".repeat(600)
    );
    let mut buffer = [0u8; 256];
    for byte in headers.bytes() {
        if stream.write_all(&[byte]).await.is_err() {
            return true;
        }
        // Anything the server sends (a 408) or the end of the stream means it gave up.
        match tokio::time::timeout(Duration::from_millis(100), stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(n)) => {
                let answer = String::from_utf8_lossy(&buffer[..n]);
                assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
                return true;
            }
            Err(_) => {}
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_connections_are_closed_at_the_header_deadline_and_do_not_hold_up_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let limits = Limits {
        header_timeout: Duration::from_secs(1),
        // Only the header deadline can end a slow connection within the guard.
        shutdown_grace: Duration::from_secs(3600),
        ..Limits::default()
    };
    let server = Server::start_with(&db, &limits).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = server.serve(listeners(listener), &limits, async {
        stopped.await.ok();
    });
    let client = async {
        // 60 seconds of headers: the server closes the connection long before.
        assert!(slowloris(address).await, "the slow connection stayed open");
        // A shutdown while a slow connection is sending its headers still ends.
        let slow = tokio::spawn(slowloris(address));
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.send(()).unwrap();
        assert!(slow.await.unwrap());
    };
    tokio::time::timeout(GUARD, async { tokio::join!(serving, client).0 })
        .await
        .expect("the shutdown waited for a slow connection")
        .unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_in_time_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    population(&db, POPULATION, (10.0, 1e-5)).await;
    let credentials = credentials(&db).await;
    let limits = Limits {
        body_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let server = Server::start_with(&db, &limits).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = server.serve(listeners(listener), &limits, async {
        stopped.await.ok();
    });
    let client = async {
        let mut stream = TcpStream::connect(address).await.unwrap();
        // Declares 100 bytes and sends 2.
        let request = format!(
            "POST /v1/tasks HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"",
            credentials.analyst
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut buffer = [0u8; 1024];
        while !String::from_utf8_lossy(&answer).contains("\"code\"") {
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "closed without an answer");
            answer.extend_from_slice(&buffer[..n]);
        }
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("\"timeout\""), "{answer}");
        stop.send(()).unwrap();
    };
    tokio::time::timeout(GUARD, async { tokio::join!(serving, client).0 })
        .await
        .unwrap()
        .unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_past_its_request_rate_gets_429_with_retry_after() {
    for db in databases().await {
        population(&db.url, POPULATION, (10.0, 1e-5)).await;
        let credentials = credentials(&db.url).await;
        let limits = Limits {
            requests_per_second: Some(1),
            ..Limits::default()
        };
        let server = Server::start_with(&db.url, &limits).await.unwrap();
        let router = signed_in(server.router(), &credentials);
        // The analyst's one request of this second passes; its next is refused with when to
        // retry, and refusing it changes nothing.
        let (status, _) = call(&router, Method::GET, "/v1/tasks", None).await;
        assert_eq!(status, StatusCode::OK, "{}", db.name);
        let response = {
            use tower::ServiceExt;
            let request = axum::http::Request::builder()
                .method(Method::POST)
                .uri("/v1/tasks")
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    serde_json::to_string(&spec(
                        histogram(0.5),
                        1.0,
                        tally_messages::RoundPolicy::default(),
                    ))
                    .unwrap(),
                ))
                .unwrap();
            router.clone().oneshot(request).await.unwrap()
        };
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()["retry-after"], "1");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let error: tally_messages::ErrorBody = serde_json::from_slice(&body).unwrap();
        assert_eq!(error.code, ErrorCode::RateLimited);
        // Another credential has a rate of its own: the devices see no round, as the
        // refused task was not created.
        let rounds: Vec<tally_messages::RoundQuery> = get(&router, "/v1/rounds").await;
        assert!(rounds.is_empty(), "{}: {rounds:?}", db.name);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyst_runs_at_most_100_tasks_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let (server, router, _) = start(&db, (1000.0, 0.01)).await;
    let task = || spec(histogram(0.5), 1.0, tally_messages::RoundPolicy::default());
    for _ in 0..100 {
        let _: tally_messages::TaskInfo = post(&router, "/v1/tasks", &task()).await;
    }
    let body = serde_json::to_string(&task()).unwrap();
    let (status, text) = call(&router, Method::POST, "/v1/tasks", Some(body.clone())).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("100 tasks"), "{text}");
    // Once one is cancelled, another may start.
    let tasks: Vec<tally_messages::TaskInfo> = get(&router, "/v1/tasks").await;
    let (status, _) = call(
        &router,
        Method::POST,
        &format!("/v1/tasks/{}/cancel", tasks[0].id),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, text) = call(&router, Method::POST, "/v1/tasks", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_concurrent_tasks_that_fit_the_budget_only_alone_exactly_one_starts() {
    for db in databases().await {
        // Each task's ε = 1 fits a budget of 1.5; both do not (by basic composition, which
        // charges every task of a population without a declared pair).
        let (server, router, _) = start(&db.url, (1.5, 1e-5)).await;
        let body = serde_json::to_string(&spec(
            histogram(0.3),
            1.0,
            tally_messages::RoundPolicy::default(),
        ))
        .unwrap();
        let ((first, _), (second, _)) = tokio::join!(
            call(&router, Method::POST, "/v1/tasks", Some(body.clone())),
            call(&router, Method::POST, "/v1/tasks", Some(body)),
        );
        let mut statuses = [first, second];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::CREATED, StatusCode::CONFLICT],
            "{}",
            db.name
        );
        let ledger: Vec<tally_messages::LedgerBalance> = get(&router, "/v1/ledger").await;
        assert!(
            ledger[0].remaining.epsilon >= 0.0,
            "{}: {ledger:?}",
            db.name
        );
        server.shutdown().await;
    }
}

/// No name, id or text of the API may hold a NUL character: PostgreSQL cannot store one and
/// answered 500 to a credential named with one; SQLite stored it. Refused as malformed (400)
/// on both stores, in a JSON body and in a path, while a backslash followed by `u0000` (no NUL)
/// is an ordinary name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_character_anywhere_in_a_request_is_refused_as_malformed() {
    for db in databases().await {
        let (server, router, _) = start(&db.url, (10.0, 1e-5)).await;
        let credential = |name: &str| {
            serde_json::json!({
                "version": tally_messages::PROTOCOL_VERSION,
                "role": "analyst",
                "name": name,
                "populations": [POPULATION],
            })
            .to_string()
        };
        for (method, path, body) in [
            (
                Method::POST,
                "/v1/credentials".to_owned(),
                Some(credential("alice\u{0}")),
            ),
            (Method::GET, "/v1/tasks/abc%00".to_owned(), None),
            (
                Method::POST,
                "/v1/populations/beta%00/devices".to_owned(),
                Some(r#"{"version":1,"count":1}"#.to_owned()),
            ),
            (Method::GET, "/v1/tasks?state=%00".to_owned(), None),
        ] {
            let (status, text) = call(&router, method.clone(), &path, body).await;
            assert_eq!(
                status,
                StatusCode::BAD_REQUEST,
                "{}: {method} {path}: {text}",
                db.name
            );
            assert!(text.contains("NUL character"), "{}: {text}", db.name);
            assert!(text.contains(ErrorCode::Malformed.name()), "{text}");
        }
        // A backslash, then "u0000": an escaped backslash in JSON, not a NUL.
        let body = credential("alice\\u0000");
        assert!(body.contains(r#""alice\\u0000""#), "{body}");
        let (status, text) = call(&router, Method::POST, "/v1/credentials", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{}: {text}", db.name);
        server.shutdown().await;
    }
}
