//! Nothing leaks around the threshold: what the server shows besides the release must not
//! depend on a report the threshold suppressed. On a server whose `/metrics` counted reports
//! and abstentions apart, reports accepted minus the released counts revealed a victim's
//! below-threshold report; `/metrics` was also served to anyone who reached the API.
//!
//! The logs are captured with a subscriber of the test's own: each test runs on one thread
//! (the server's tasks included), where that subscriber is the default.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{ErrorCode, RoundPolicy, TaskInfo};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

common::postgres_half!();

/// What the server logged, as the command line's subscriber prints it (without times or
/// colours), and how many events it logged.
#[derive(Clone, Default)]
struct Logs {
    text: Arc<Mutex<Vec<u8>>>,
    events: Arc<AtomicUsize>,
}

impl Logs {
    /// Captures the server's logs on this thread until the guard is dropped.
    fn capture(&self) -> DefaultGuard {
        let text = Arc::clone(&self.text);
        let format = tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&text)));
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("tally_server=trace"))
            .with(format)
            .with(Counter(Arc::clone(&self.events)));
        tracing::subscriber::set_default(subscriber)
    }

    fn text(&self) -> String {
        String::from_utf8(self.text.lock().unwrap().clone()).unwrap()
    }

    fn events(&self) -> usize {
        self.events.load(Ordering::SeqCst)
    }
}

/// Appends to the captured text.
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counts the events, whatever their text.
struct Counter(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Counter {
    fn on_event(
        &self,
        _event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `text` with the random task, round and credential ids replaced by their kind.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('-') {
        let (head, tail) = rest.split_at(at);
        let hex = tail[1..].bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(head);
        if hex == 16 {
            out.push_str("-ID");
            rest = &tail[17..];
        } else {
            out.push('-');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// What one run showed besides the release: the release, `/metrics` (its lines sorted) and
/// the logs (ids replaced).
#[derive(Debug, PartialEq)]
struct Seen {
    release: String,
    metrics: String,
    logs: String,
}

/// Runs one histogram round of 60 devices on a fresh server: 50 report "common" (far above
/// the threshold), 9 abstain, and the victim reports `victim` (or abstains). Returns what was
/// seen once it is released, on every test database.
async fn run(victim: Option<&str>) -> Vec<Seen> {
    let mut seen = Vec::new();
    for db in databases().await {
        let logs = Logs::default();
        let guard = logs.capture();
        let (server, router, _) = start(&db.url, (10.0, 1e-5)).await;
        let rounds = RoundPolicy {
            min_cohort: 60,
            cohort_target: Some(60),
            ..RoundPolicy::default()
        };
        let task: TaskInfo = post(&router, "/v1/tasks", &spec(histogram(0.5), 1.0, rounds)).await;
        let round = open_round(&router, &task.id).await;
        let tokens = tokens(&router, &round.round_id, 60).await;
        let uploads = tokens
            .into_iter()
            .enumerate()
            .map(|(i, token)| match i {
                0..50 => (token, Some("common")),
                50..59 => (token, None),
                _ => (token, victim),
            })
            .collect();
        let _: tally_messages::UploadReceipt = post(
            &router,
            &format!("/v1/rounds/{}/uploads", round.round_id),
            &batch(uploads),
        )
        .await;
        // Waits through the task's state, which counts no refusal, as the result would.
        while get::<TaskInfo>(&router, &format!("/v1/tasks/{}", task.id))
            .await
            .state
            == tally_messages::TaskState::Running
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let result = get::<serde_json::Value>(&router, &format!("/v1/tasks/{}/result", task.id))
            .await
            .to_string();
        let release: serde_json::Value = serde_json::from_str(&result).unwrap();
        let (_, metrics) = call(&router, Method::GET, "/metrics", None).await;
        // Series of a family come in no fixed order.
        let mut series: Vec<&str> = metrics.lines().collect();
        series.sort_unstable();
        server.shutdown().await;
        drop(guard);
        seen.push(Seen {
            release: release["items"].to_string(),
            metrics: series.join("\n"),
            logs: without_ids(&logs.text()),
        });
    }
    seen
}

#[tokio::test]
async fn metrics_and_logs_are_the_same_whether_the_victim_reported_or_abstained() {
    let reported = run(Some("the victim's secret")).await;
    let abstained = run(None).await;
    for (with, without) in reported.iter().zip(&abstained) {
        assert!(with.release.contains("common"), "{}", with.release);
        assert!(!with.release.contains("secret"), "{}", with.release);
        assert!(with.logs.contains("round released"), "{}", with.logs);
        assert!(!with.logs.contains("secret"), "{}", with.logs);
        assert_eq!(with, without, "the server tells the victim's report apart");
    }
}

#[tokio::test]
async fn the_api_listener_does_not_serve_metrics() {
    for db in databases().await {
        let (server, _, credentials) = start(&db.url, (10.0, 1e-5)).await;
        // Even the operator's credential reads no metrics through the API's router...
        let api = signed_in(server.router(), &credentials);
        let (status, _) = call(&api, Method::GET, "/metrics", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{}", db.name);
        // ...and the operator's router serves nothing else.
        let operator = signed_in(server.metrics_router(), &credentials);
        let (status, text) = call(&operator, Method::GET, "/metrics", None).await;
        assert_eq!(status, StatusCode::OK, "{}", db.name);
        assert!(text.contains("tally_uploads_total"), "{text}");
        let (status, _) = call(&operator, Method::GET, "/v1/tasks", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{}", db.name);
        server.shutdown().await;
    }
}

/// A newline or an escape sequence in anything a caller sends never makes a log line of its
/// own nor reaches the terminal: each event is one line, and no control character is printed.
#[tokio::test]
async fn caller_strings_never_forge_a_log_line() {
    const FORGED: &str = "x\n ERROR tally_server: forged \u{1b}[2J\r";
    for db in databases().await {
        let logs = Logs::default();
        let guard = logs.capture();
        let (server, router, _) = start(&db.url, (10.0, 1e-5)).await;
        let forged_json = serde_json::to_string(FORGED).unwrap();
        let attempts = [
            // A credential's name, a population's name, a task's population.
            (
                "/v1/credentials",
                format!(
                    r#"{{"version":1,"role":"analyst","name":{forged_json},"populations":["{POPULATION}"]}}"#
                ),
            ),
            (
                "/v1/populations",
                format!(
                    r#"{{"version":1,"name":{forged_json},"budget":{{"epsilon":1,"delta":1e-6}},"min_cohort":1}}"#
                ),
            ),
            (
                "/v1/tasks",
                serde_json::to_string(&tally_messages::TaskSpec {
                    population: FORGED.into(),
                    ..spec(histogram(0.5), 1.0, RoundPolicy::default())
                })
                .unwrap(),
            ),
            // Bad JSON, and a path with an encoded newline.
            ("/v1/tasks", format!("{{\"version\":1,{FORGED}")),
            ("/v1/rounds/r-%0A%20ERROR%20forged/uploads", "{}".into()),
        ];
        for (path, body) in attempts {
            let (status, _) = call(&router, Method::POST, path, Some(body)).await;
            assert!(!status.is_success(), "{path}");
        }
        // Header values a caller controls: a token and a Host.
        let (status, _) = send_raw(
            &router,
            &[
                ("authorization", "Bearer x\tERROR forged"),
                ("host", "evil\tERROR forged"),
            ],
        )
        .await;
        assert_ne!(status, StatusCode::OK);
        assert!(rejections(&router, ErrorCode::Malformed.name()).await > 0);
        // Something is logged: a task of the provisioned population.
        let _: TaskInfo = post(
            &router,
            "/v1/tasks",
            &spec(histogram(0.5), 1.0, RoundPolicy::default()),
        )
        .await;
        server.shutdown().await;
        drop(guard);
        let text = logs.text();
        assert!(logs.events() > 0);
        assert_eq!(
            text.lines().count(),
            logs.events(),
            "a caller's string forged a log line:\n{text}"
        );
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "a control character reached the log:\n{text:?}"
        );
    }
}

/// A GET of `/v1/tasks` with the given raw headers and nothing added.
async fn send_raw(router: &axum::Router, headers: &[(&str, &str)]) -> (StatusCode, String) {
    use tower::ServiceExt;
    let mut request = axum::http::Request::builder().uri("/v1/tasks");
    for (name, value) in headers {
        request = request.header(
            *name,
            axum::http::HeaderValue::from_bytes(value.as_bytes()).unwrap(),
        );
    }
    let request = request.body(axum::body::Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}
