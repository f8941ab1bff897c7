//! Nothing leaks around the threshold: what the server shows besides the release must not
//! depend on a report the threshold suppressed. On a server whose `/metrics` counted reports
//! and abstentions apart, reports accepted minus the released counts revealed a victim's
//! below-threshold report.

mod common;

use axum::http::Method;
use common::*;
use tally_messages::{RoundPolicy, TaskInfo};

/// Runs one histogram round of 60 devices on a fresh server: 50 report "common" (far above
/// the threshold), 9 abstain, and the victim reports `victim` (or abstains). Returns the
/// release and `/metrics` (its lines sorted) once it is released, on every test database.
async fn run(victim: Option<&str>) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    for db in databases().await {
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
        let result = released(&router, &task.id).await;
        let release: serde_json::Value = serde_json::from_str(&result).unwrap();
        let (_, metrics) = call(&router, Method::GET, "/metrics", None).await;
        // Series of a family come in no fixed order.
        let mut series: Vec<&str> = metrics.lines().collect();
        series.sort_unstable();
        seen.push((release["items"].to_string(), series.join("\n")));
        server.shutdown().await;
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_the_same_whether_the_victim_reported_or_abstained() {
    let reported = run(Some("the victim's secret")).await;
    let abstained = run(None).await;
    for ((release, metrics), (release_without, metrics_without)) in reported.iter().zip(&abstained)
    {
        assert!(release.contains("common"), "{release}");
        assert!(!release.contains("secret"), "{release}");
        assert_eq!(release, release_without);
        assert_eq!(
            metrics, metrics_without,
            "/metrics tells the victim's report apart"
        );
    }
}
