//! The ledger through the API: a population's declared S&T pair admits exactly the rounds the
//! reference's `K`-fold composition allows, a task outside the pair is charged by basic
//! composition within the rest of the budget, `remaining` is what the ledger enforces, and a
//! restart recomputes the same from what the store keeps.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{
    Budget, LedgerBalance, PROTOCOL_VERSION, PopulationInfo, PopulationSpec, RoundPolicy,
    TaskBound, TaskInfo, TaskSpec, TrustModel,
};

common::postgres_half!();

/// The most tasks the test creates (below the per-credential cap of running tasks).
const MOST: usize = 40;

/// The vectors of `tools/reference/ledger_filter.py`: `K` for the pair (0.36, 18) within
/// (2, 1e-5).
const VECTORS: &str =
    include_str!("../../tally-accounting/tests/test_vectors/ledger_filter/ledger_filter.json");

/// A one-round S&T histogram at `p_s = 0.36` whose threshold is calibrated for
/// `(ε, δ) = (4, 1e-8)` (at least 18).
fn round_at_the_pair() -> TaskSpec {
    TaskSpec {
        privacy: tally_messages::PrivacyTarget {
            delta: 1e-8,
            ..spec(histogram(0.36), 4.0, RoundPolicy::default()).privacy
        },
        ..spec(histogram(0.36), 4.0, RoundPolicy::default())
    }
}

/// Creates `body` until the budget refuses it; the tasks created and the refusal's text.
async fn fill(router: &axum::Router, body: &str) -> (Vec<TaskInfo>, String) {
    let mut tasks = Vec::new();
    loop {
        let (status, text) = call(router, Method::POST, "/v1/tasks", Some(body.into())).await;
        if status != StatusCode::CREATED {
            assert_eq!(status, StatusCode::CONFLICT, "{text}");
            assert!(text.contains("budget_exceeded"), "{text}");
            return (tasks, text);
        }
        tasks.push(serde_json::from_str(&text).unwrap());
        assert!(tasks.len() < MOST, "the budget never ran out");
    }
}

/// A `POST /v1/tasks` of `body` as `token`.
async fn create_as(router: &axum::Router, token: &str, body: &str) -> (StatusCode, String) {
    call_with(router, token, Method::POST, "/v1/tasks", Some(body.into())).await
}

/// Every population's balance, as the operator reads it.
async fn operator_ledger(router: &axum::Router, operator: &str) -> Vec<LedgerBalance> {
    let (status, text) = call_with(router, operator, Method::GET, "/v1/ledger", None).await;
    assert!(status.is_success(), "{text}");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_pair_admits_the_reference_number_of_rounds_and_survives_a_restart() {
    let vectors: serde_json::Value = serde_json::from_str(VECTORS).unwrap();
    let reference = vectors["declared"]["tasks"].as_u64().unwrap();
    for db in databases().await {
        // The test population has no pair; "declared" has (0.36, 18) over all of (2, 1e-5).
        let (server, router, credentials) = start(&db.url, (2.0, 1e-5)).await;
        let declared = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "declared".into(),
            budget: Budget {
                epsilon: 2.0,
                delta: 1e-5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.0,
            task_bound: Some(TaskBound {
                sampling_rate: 0.36,
                threshold: 18,
                share: None,
            }),
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        let created: PopulationInfo = post(&router, "/v1/populations", &declared).await;
        assert_eq!(created.task_bound.unwrap().rounds, reference, "{}", db.name);
        let analyst = credential(&db.url, tally_messages::Role::Analyst, "d", &["declared"]).await;
        let as_declared = |spec: TaskSpec| TaskSpec {
            population: "declared".into(),
            ..spec
        };
        let mut admitted = 0u64;
        let body = serde_json::to_string(&as_declared(round_at_the_pair())).unwrap();
        let refusal = loop {
            let (status, text) = create_as(&router, &analyst, &body).await;
            if status != StatusCode::CREATED {
                assert_eq!(status, StatusCode::CONFLICT, "{}: {text}", db.name);
                break text;
            }
            admitted += 1;
            assert!(
                admitted < MOST as u64,
                "{}: the pair never ran out",
                db.name
            );
        };
        assert_eq!(admitted, reference, "{}: {refusal}", db.name);
        assert!(
            refusal.contains("round(s) within the declared pair"),
            "{refusal}"
        );
        // A task outside the pair gets the filter, which the pair's share left empty.
        let outside = serde_json::to_string(&as_declared(spec(
            histogram(0.5),
            1.0,
            RoundPolicy::default(),
        )))
        .unwrap();
        let (status, text) = create_as(&router, &analyst, &outside).await;
        assert_eq!(status, StatusCode::CONFLICT, "{}: {text}", db.name);
        assert!(text.contains("outside the pair"), "{text}");

        // Without a pair, S&T tasks are charged their own guarantee: what basic composition
        // admits, and `remaining` never below zero (the tight accountant of the realized
        // sequence used to admit more and show ε remaining far below zero).
        let small = spec(histogram(0.3), 0.6, RoundPolicy::default());
        let (tasks, _) = fill(&router, &serde_json::to_string(&small).unwrap()).await;
        let one = tasks[0].guarantee.epsilon;
        assert_eq!(
            tasks.len(),
            (2.0 / one).floor() as usize,
            "{}: ε = {one}",
            db.name
        );
        let ledger = operator_ledger(&router, &credentials.operator).await;
        let test = ledger.iter().find(|b| b.population == POPULATION).unwrap();
        assert!(test.task_bound.is_none());
        assert!(
            test.remaining.epsilon >= 0.0 && test.remaining.epsilon < one,
            "{}: {test:?}",
            db.name
        );
        assert!(test.remaining.delta >= 0.0, "{test:?}");
        let bounded = ledger.iter().find(|b| b.population == "declared").unwrap();
        let used = bounded.task_bound.unwrap();
        assert_eq!(used.rounds_used, reference);
        assert_eq!(
            bounded.remaining,
            Budget {
                epsilon: 0.0,
                delta: 0.0
            }
        );

        server.shutdown().await;
        let (server, router) = restart(&db.url, &credentials).await;
        let again = operator_ledger(&router, &credentials.operator).await;
        assert_eq!(again, ledger, "{}", db.name);
        let (status, _) = create_as(&router, &analyst, &body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{}", db.name);
        server.shutdown().await;
    }
}

/// A population's budget is kept under one neighbour relation: on an add/remove budget a
/// replace-one task (here shuffled GRR, whose guarantee holds for a fixed number of clients) is
/// refused with the fix; on a replace-one budget an add/remove S&T task is charged
/// `(2ε, (1 + e^ε) δ)`, which the ledger reserves, debits and shows with the relation, and a
/// declared pair (an add/remove loss pair) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_is_kept_under_one_neighbour_relation() {
    for db in databases().await {
        let (server, router, credentials) = start(&db.url, (2.0, 1e-5)).await;
        let shuffled = TaskSpec {
            population: POPULATION.into(),
            ..replace_one(spec(
                tally_messages::TaskKind::DomainHistogram {
                    mechanism: tally_messages::DomainHistogramMechanism::ShuffledGrr,
                    domain: tally_messages::PublicDomain::Integers(2),
                    public_coins: None,
                },
                1.0,
                RoundPolicy {
                    min_cohort: 1000,
                    cohort_target: Some(1000),
                    ..RoundPolicy::default()
                },
            ))
        };
        let body = serde_json::to_string(&shuffled).unwrap();
        let (status, text) = create_as(&router, &credentials.analyst, &body).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}: {text}",
            db.name
        );
        assert!(
            text.contains("replace-one neighbours") && text.contains("--neighbours replace-one"),
            "{text}"
        );

        let replace_one = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "swapped".into(),
            budget: Budget {
                epsilon: 2.0,
                delta: 1e-5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::ReplaceOne,
        };
        let declared = PopulationSpec {
            name: "swapped-pair".into(),
            task_bound: Some(TaskBound {
                sampling_rate: 0.36,
                threshold: 18,
                share: None,
            }),
            ..replace_one.clone()
        };
        let (status, text) = call(
            &router,
            Method::POST,
            "/v1/populations",
            Some(serde_json::to_string(&declared).unwrap()),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{}: {text}", db.name);
        assert!(text.contains("add/remove neighbours"), "{text}");
        let created: PopulationInfo = post(&router, "/v1/populations", &replace_one).await;
        assert_eq!(created.neighbours, tally_messages::Neighbours::ReplaceOne);
        let analyst = credential(&db.url, tally_messages::Role::Analyst, "s", &["swapped"]).await;
        let over_swapped = |spec: TaskSpec| TaskSpec {
            population: "swapped".into(),
            ..spec
        };
        // Its shuffled task is charged its own guarantee.
        let (status, text) = create_as(
            &router,
            &analyst,
            &serde_json::to_string(&over_swapped(shuffled.clone())).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{}: {text}", db.name);
        let own: TaskInfo = serde_json::from_str(&text).unwrap();
        // An add/remove S&T task at ε = 0.4 costs 0.8 here: one fits beside the shuffled
        // task's 1, a second does not, although 1 + 2 · 0.4 ≤ 2.
        let small = serde_json::to_string(&over_swapped(spec(
            histogram(0.3),
            0.4,
            RoundPolicy::default(),
        )))
        .unwrap();
        let (status, text) = create_as(&router, &analyst, &small).await;
        assert_eq!(status, StatusCode::CREATED, "{}: {text}", db.name);
        let converted: TaskInfo = serde_json::from_str(&text).unwrap();
        let (status, text) = create_as(&router, &analyst, &small).await;
        assert_eq!(status, StatusCode::CONFLICT, "{}: {text}", db.name);
        assert!(text.contains("budget_exceeded"), "{text}");
        let ledger = operator_ledger(&router, &credentials.operator).await;
        let balance = ledger.iter().find(|b| b.population == "swapped").unwrap();
        assert_eq!(balance.neighbours, tally_messages::Neighbours::ReplaceOne);
        let (epsilon, delta) = (converted.guarantee.epsilon, converted.guarantee.delta);
        let charged = (2.0 * epsilon, (1.0 + epsilon.exp()) * delta);
        assert!(
            (balance.reserved.epsilon - (own.guarantee.epsilon + charged.0)).abs() < 1e-12,
            "{}: {balance:?}",
            db.name
        );
        let reserved_delta = own.guarantee.delta + charged.1;
        assert!(
            balance.reserved.delta >= reserved_delta
                && balance.reserved.delta < reserved_delta * (1.0 + 1e-12),
            "{}: {balance:?}",
            db.name
        );
        server.shutdown().await;
    }
}
