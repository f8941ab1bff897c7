//! Aggregator-side sampling through the API: a task samples at the aggregator unless it asks
//! its devices to, its rounds tell devices to report every time, and the release counts a
//! Poisson sample of the reports rather than every one (the attack itself, 19 devices that
//! always report at τ = 20, is tested on the aggregator, `aggregator::tests`).

mod common;

use axum::http::Method;
use common::*;
use tally_messages::{HistogramRelease, RoundPolicy, Sampling, TaskInfo};

/// Runs a histogram round at rate 0.5 in which 400 devices all report "a", and returns the
/// round's sampling and the released count of "a".
async fn round_of_400(sampling: Option<Sampling>) -> (Sampling, u64) {
    let db = databases().await.remove(0);
    let (server, router, _) = start(&db.url, (10.0, 1e-5)).await;
    let policy = RoundPolicy {
        min_cohort: 1,
        cohort_target: Some(400),
        ..RoundPolicy::default()
    };
    let mut spec = serde_json::to_value(spec(histogram(0.5), 1.0, policy)).unwrap();
    // Left out, the sampling is the protocol's default.
    match sampling {
        Some(sampling) => spec["sampling"] = serde_json::to_value(sampling).unwrap(),
        None => drop(spec.as_object_mut().unwrap().remove("sampling")),
    }
    let task: TaskInfo = post(&router, "/v1/tasks", &spec).await;
    let round = open_round(&router, &task.id).await;
    let uploads = tokens(&router, &round.round_id, 400)
        .await
        .into_iter()
        .map(|token| (token, Some("a")))
        .collect();
    let (status, text) = call(
        &router,
        Method::POST,
        &format!("/v1/rounds/{}/uploads", round.round_id),
        Some(serde_json::to_string(&batch(uploads)).unwrap()),
    )
    .await;
    assert!(status.is_success(), "{text}");
    let release: HistogramRelease =
        serde_json::from_str(&released(&router, &task.id).await).unwrap();
    server.shutdown().await;
    let count = release.items.iter().find(|i| i.item == "a").unwrap().count;
    (round.sampling, count.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_samples_at_the_aggregator_unless_it_asks_its_devices_to() {
    // By default the round tells devices to report every time, and the aggregator keeps
    // about half the reports (Bin(400, 0.5): all 400 with probability 2^-400).
    let (sampling, count) = round_of_400(None).await;
    assert_eq!(sampling, Sampling::Aggregator);
    assert!((100..300).contains(&count), "{count}");
    // Asked for, device-side sampling counts every report as sampled by its device.
    let (sampling, count) = round_of_400(Some(Sampling::Device)).await;
    assert_eq!(sampling, Sampling::Device);
    assert_eq!(count, 400);
}
