//! Provisioned populations: the ledger bypasses that worked when a population's budget was
//! created by the first task naming it ("hist1", "hist1 " and "HIST1" each got a budget of
//! their own; the same devices answered "alpha" and "beta", each with its own budget) must now
//! fail, and an operator's floor on the minimum cohort and cap on a task's ε hold.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{
    Budget, ErrorBody, ErrorCode, LedgerBalance, PROTOCOL_VERSION, PopulationInfo, PopulationSpec,
    Role, RoundPolicy, TaskInfo, TaskSpec,
};

common::postgres_half!();

const BUDGET: (f64, f64) = (10.0, 1e-5);

fn rounds(min_cohort: u64) -> RoundPolicy {
    RoundPolicy {
        min_cohort,
        cohort_target: Some(1000),
        ..RoundPolicy::default()
    }
}

/// A histogram task of `ε` over `population`, charged to its budget by basic composition (no
/// declared pair), so that the budget counts tasks plainly.
fn task(population: &str, epsilon: f64, min_cohort: u64) -> TaskSpec {
    let mut spec = spec(histogram(0.3), epsilon, rounds(min_cohort));
    spec.population = population.into();
    spec
}

async fn refusal(router: &axum::Router, spec: &TaskSpec) -> (StatusCode, ErrorCode) {
    let (status, text) = call(
        router,
        Method::POST,
        "/v1/tasks",
        Some(serde_json::to_string(spec).unwrap()),
    )
    .await;
    let body: ErrorBody = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, body.code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_population_gets_no_budget_of_its_own() {
    for db in databases().await {
        let (server, router, _) = start(&db.url, BUDGET).await;
        // Spend "test" to the end: 9 tasks of ε = 1 fit in ε = 10, the tenth's δ does not
        // matter, an eleventh cannot.
        let mut created = 0;
        while call(
            &router,
            Method::POST,
            "/v1/tasks",
            Some(serde_json::to_string(&task(POPULATION, 1.0, 1)).unwrap()),
        )
        .await
        .0 == StatusCode::CREATED
        {
            created += 1;
            assert!(created <= 10, "{}: more than the budget", db.name);
        }
        assert!(created >= 9, "{created} tasks");
        // Other spellings of the name are not names, and a valid name nobody provisioned is
        // unknown: none of them is given a budget.
        for name in ["test ", "TEST", " test", "Test", "test\n"] {
            assert_eq!(
                refusal(&router, &task(name, 1.0, 1)).await,
                (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidTask),
                "{} {name:?}",
                db.name
            );
        }
        let analyst = credential(&db.url, Role::Analyst, "a", &["test2"]).await;
        let (status, text) = call_as(&router, &analyst, &task("test2", 1.0, 1)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
        assert!(text.contains("unknown_population"), "{text}");
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(ledger.len(), 1, "{ledger:?}");
        assert!(ledger[0].remaining.epsilon < 1.0);
        server.shutdown().await;
    }
}

/// A POST of `spec` to `/v1/tasks` with `token` instead of the default analyst's.
async fn call_as(router: &axum::Router, token: &str, spec: &TaskSpec) -> (StatusCode, String) {
    call_as_path(router, token, "/v1/tasks", spec).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_of_one_population_cannot_answer_another() {
    for db in databases().await {
        let (server, router, credentials) = start(&db.url, BUDGET).await;
        population(&db.url, "beta", BUDGET).await;
        let analyst = credential(&db.url, Role::Analyst, "b", &["beta"]).await;
        let (status, text) = call_as(&router, &analyst, &task("beta", 9.0, 1)).await;
        assert_eq!(status, StatusCode::CREATED, "{text}");
        let beta: TaskInfo = serde_json::from_str(&text).unwrap();
        // The "test" devices neither see beta's round nor get tokens for it.
        let device = &credentials.device;
        let (status, text) = call_with(&router, device, Method::GET, "/v1/rounds", None).await;
        assert_eq!(
            (status, text.as_str()),
            (StatusCode::OK, "[]"),
            "{}",
            db.name
        );
        let round = open_round(&router, &beta.id).await;
        let (status, _) = call_with(
            &router,
            device,
            Method::POST,
            &format!("/v1/rounds/{}/check-in", round.round_id),
            Some(r#"{"version":1}"#.into()),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{}", db.name);
        // The "test" analyst cannot spend beta's budget either.
        assert_eq!(
            refusal(&router, &task("beta", 1.0, 1)).await,
            (StatusCode::FORBIDDEN, ErrorCode::Forbidden)
        );
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_sets_the_cohort_floor_and_the_cap_per_task() {
    for db in databases().await {
        let (server, router, _) = start(&db.url, BUDGET).await;
        let floor = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "guarded".into(),
            budget: Budget {
                epsilon: 10.0,
                delta: 1e-5,
            },
            min_cohort: 50,
            max_task_epsilon: Some(2.0),
            trust: tally_messages::TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        let created: PopulationInfo = post(&router, "/v1/populations", &floor).await;
        assert_eq!(
            (created.min_cohort, created.max_task_epsilon),
            (50, Some(2.0))
        );
        let (status, _) = call(
            &router,
            Method::POST,
            "/v1/populations",
            Some(serde_json::to_string(&floor).unwrap()),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "a population is created once");
        let analyst = credential(&db.url, Role::Analyst, "g", &["guarded"]).await;
        for (spec, allowed) in [
            (task("guarded", 1.0, 10), false),
            (task("guarded", 3.0, 60), false),
            (task("guarded", 1.0, 60), true),
        ] {
            let (status, text) = call_as(&router, &analyst, &spec).await;
            let expected = if allowed {
                StatusCode::CREATED
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            assert_eq!(status, expected, "{}: {text}", db.name);
        }
        // Only an operator provisions, and names are exact.
        let (status, _) = call_as_path(&router, &analyst, "/v1/populations", &floor).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let bad = PopulationSpec {
            name: "Guarded".into(),
            ..floor
        };
        let (status, _) = call(
            &router,
            Method::POST,
            "/v1/populations",
            Some(serde_json::to_string(&bad).unwrap()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        server.shutdown().await;
    }
}

/// A POST of `body` to `path` with `token`.
async fn call_as_path<T: serde::Serialize>(
    router: &axum::Router,
    token: &str,
    path: &str,
    body: &T,
) -> (StatusCode, String) {
    let body = Some(serde_json::to_string(body).unwrap());
    call_with(router, token, Method::POST, path, body).await
}
