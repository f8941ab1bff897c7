//! Enrolled devices: one credential per device, stored as a hash, answering only its own
//! population's rounds and holding at most one upload token per round (a shared device
//! credential could take any number of tokens and so stand for any number of devices).

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{CheckInGrant, CredentialInfo, ErrorBody, ErrorCode, Role, RoundPolicy};

common::postgres_half!();

const BUDGET: (f64, f64) = (10.0, 1e-5);

fn check_in_path(round: &str) -> String {
    format!("/v1/rounds/{round}/check-in")
}

/// A device's check-in for itself, answered with its token.
async fn device_token(router: &axum::Router, device: &str, round: &str) -> String {
    let (status, text) = call_with(
        router,
        device,
        Method::POST,
        &check_in_path(round),
        Some(r#"{"version":1}"#.into()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let grant: CheckInGrant = serde_json::from_str(&text).unwrap();
    assert_eq!(grant.tokens.len(), 1);
    grant.tokens.into_iter().next().unwrap()
}

fn code(text: &str) -> ErrorCode {
    serde_json::from_str::<ErrorBody>(text)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enrolled_device_holds_one_token_per_round_of_its_own_population() {
    for db in databases().await {
        let (server, router, _) = start(&db.url, BUDGET).await;
        population(&db.url, "beta", BUDGET).await;
        let devices = enroll(&router, POPULATION, 3).await;
        let beta = enroll(&router, "beta", 1).await;
        // Stored as device credentials of their population, never showing a secret.
        let listed: Vec<CredentialInfo> = get(&router, "/v1/credentials").await;
        let enrolled: Vec<&CredentialInfo> = listed
            .iter()
            .filter(|c| c.role == Role::Device && c.populations == [POPULATION])
            .collect();
        assert!(enrolled.len() >= 3, "{listed:?}");
        let listing = serde_json::to_string(&listed).unwrap();
        for token in &devices {
            let secret = token.rsplit('_').next().unwrap();
            assert!(!listing.contains(secret));
        }
        let policy = RoundPolicy {
            min_cohort: 1,
            cohort_target: Some(100),
            ..RoundPolicy::default()
        };
        let task: tally_messages::TaskInfo =
            post(&router, "/v1/tasks", &spec(histogram(0.5), 1.0, policy)).await;
        let round = open_round(&router, &task.id).await.round_id;
        // A second check-in in the same round gets the same token, never a second one.
        let first = device_token(&router, &devices[0], &round).await;
        assert_eq!(device_token(&router, &devices[0], &round).await, first);
        let other = device_token(&router, &devices[1], &round).await;
        assert_ne!(other, first);
        // A device checks in for itself only.
        let (status, text) = call_with(
            &router,
            &devices[2],
            Method::POST,
            &check_in_path(&round),
            Some(r#"{"version":1,"devices":19}"#.into()),
        )
        .await;
        assert_eq!(
            (status, code(&text)),
            (StatusCode::FORBIDDEN, ErrorCode::Forbidden),
            "{}",
            db.name
        );
        // Its one token uploads once.
        let (status, text) = call_with(
            &router,
            &devices[0],
            Method::POST,
            &format!("/v1/rounds/{round}/uploads"),
            Some(serde_json::to_string(&batch(vec![(first.clone(), Some("a"))])).unwrap()),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.contains(r#""accepted":1"#), "{text}");
        assert_eq!(device_token(&router, &devices[0], &round).await, first);
        // A device of another population neither sees the round nor checks in to it.
        let (status, text) = call_with(&router, &beta[0], Method::GET, "/v1/rounds", None).await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "[]"));
        let (status, text) = call_with(
            &router,
            &beta[0],
            Method::POST,
            &check_in_path(&round),
            Some(r#"{"version":1}"#.into()),
        )
        .await;
        assert_eq!(
            (status, code(&text)),
            (StatusCode::FORBIDDEN, ErrorCode::Forbidden)
        );
        // Only an operator enrolls, only into a provisioned population, a bounded number.
        let enrollment = Some(r#"{"version":1,"count":1}"#.to_owned());
        let path = format!("/v1/populations/{POPULATION}/devices");
        let (status, _) = call_with(
            &router,
            &devices[0],
            Method::POST,
            &path,
            enrollment.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, text) = call(
            &router,
            Method::POST,
            "/v1/populations/gamma/devices",
            enrollment,
        )
        .await;
        assert_eq!(
            (status, code(&text)),
            (StatusCode::NOT_FOUND, ErrorCode::UnknownPopulation)
        );
        for count in [0, 10_001] {
            let body = format!(r#"{{"version":1,"count":{count}}}"#);
            let (status, text) = call(&router, Method::POST, &path, Some(body)).await;
            assert_eq!(
                (status, code(&text)),
                (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::Oversized),
                "{count}"
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_enrolled_in_the_database_without_a_server() {
    let db = databases().await.remove(0);
    population(&db.url, POPULATION, BUDGET).await;
    let tokens = tally_server::enroll_devices(&db.url, POPULATION, 5)
        .await
        .unwrap();
    assert_eq!(tokens.len(), 5);
    let unique: std::collections::HashSet<&String> = tokens.iter().collect();
    assert_eq!(unique.len(), 5);
    let error = tally_server::enroll_devices(&db.url, "nobody", 1)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no population"), "{error}");
    let credentials = tally_server::credentials(&db.url).await.unwrap();
    assert_eq!(
        credentials
            .iter()
            .filter(|c| c.role == Role::Device && c.populations == [POPULATION])
            .count(),
        5
    );
}
