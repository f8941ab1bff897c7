//! TLS: a fleet's round over `https` with a certificate made at test time, and the clients
//! that must not get through: one speaking plain HTTP to the TLS listener, and one trusting
//! another CA. On a server without TLS, reports and credentials crossed the wire in clear.

mod common;

use std::time::Duration;

use common::*;
use tally_client::{Client, ClientError, Fleet, FleetConfig, RetryPolicy};
use tally_messages::{RoundPolicy, TaskState};
use tally_server::{Listeners, ServeConfig};
use tokio::net::TcpListener;

common::postgres_half!();

/// One attempt, so that a refused connection fails at once.
fn once() -> RetryPolicy {
    RetryPolicy {
        attempts: 1,
        ..RetryPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_runs_over_tls_and_neither_plain_http_nor_another_ca_gets_through() {
    let dir = tempfile::tempdir().unwrap();
    let ca = certificate(dir.path(), "server");
    let other_ca = certificate(dir.path(), "other");
    for db in databases().await {
        let (server, _, credentials) = start(&db.url, (10.0, 1e-5)).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let listeners = Listeners {
            api: listener,
            metrics: None,
            tls: Some(tls(dir.path(), "server")),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let limits = tally_server::Limits::default();
        let serving = server.serve(listeners, &limits, async {
            stopped.await.ok();
        });
        let https = format!("https://{address}");
        let clients = async {
            // Plain HTTP to the TLS listener, and TLS trusting another CA: both fail before
            // anything is sent, and nothing is created.
            let plain = Client::new(&format!("http://{address}"))
                .unwrap()
                .with_token(&credentials.analyst)
                .with_retry(once());
            let rounds = RoundPolicy {
                min_cohort: 50,
                cohort_target: Some(50),
                deadline_secs: 600,
                ..RoundPolicy::default()
            };
            let task_spec = spec(histogram(0.5), 1.0, rounds);
            let refused = plain.create_task(&task_spec).await.unwrap_err();
            assert!(
                matches!(refused, ClientError::Transport { .. }),
                "{refused}"
            );
            let stranger = Client::with_ca_cert(&https, other_ca.as_bytes())
                .unwrap()
                .with_token(&credentials.analyst)
                .with_retry(once());
            let refused = stranger.create_task(&task_spec).await.unwrap_err();
            assert!(
                matches!(&refused, ClientError::Transport { detail, .. } if detail.contains("certificate")),
                "{refused}"
            );
            let analyst = Client::with_ca_cert(&https, ca.as_bytes())
                .unwrap()
                .with_token(&credentials.analyst);
            assert!(analyst.tasks().await.unwrap().is_empty(), "{}", db.name);

            // A fleet of 80 devices, relayed by the operator, runs the round over TLS.
            let task = analyst.create_task(&task_spec).await.unwrap();
            let devices = Client::with_ca_cert(&https, ca.as_bytes())
                .unwrap()
                .with_token(&credentials.operator);
            let items: Vec<String> = (0..80).map(|i| format!("item{}", i % 2)).collect();
            let config = FleetConfig {
                concurrency: 8,
                batch: 10,
                task: Some(task.id.clone()),
                seed: Some(13),
                poll_interval: Duration::from_millis(20),
            };
            let report = Fleet::new(devices, items, config)
                .unwrap()
                .run(|_| {})
                .await
                .unwrap();
            assert!(report.total.counts.accepted >= 50, "{}", db.name);
            let info = analyst.task(&task.id).await.unwrap();
            assert_eq!(info.state, TaskState::Finished, "{}", db.name);
            let text = analyst.result_text(&task.id).await.unwrap();
            assert!(text.contains("item"), "{text}");
            stop.send(()).unwrap();
        };
        tokio::join!(serving, clients).0.unwrap();
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_beyond_loopback_needs_insecure_http() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    let config = ServeConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        metrics_listen: None,
        db: Some(db),
        limits: tally_server::Limits::default(),
        tls: None,
        insecure_http: false,
        console_sessions: tally_server::ConsoleSessions::default(),
        replication: tally_server::Replication::default(),
    };
    let refused = tally_server::serve(config).await.unwrap_err().to_string();
    assert!(refused.contains("--insecure-http"), "{refused}");
    assert!(refused.contains("--tls-cert"), "{refused}");
    // The refusal comes before the database is touched.
    assert!(!dir.path().join("tally.db").exists());
}
