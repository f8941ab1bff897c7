//! The ledger's tight accountant: a population's budget admits more S&T tasks than basic
//! composition would, the tight total never exceeds the basic sum, and a restart recomputes the
//! same totals from what the store keeps.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use tally_accounting::composition::compose_basic;
use tally_messages::{LedgerBalance, RoundPolicy, TaskInfo};

common::postgres_half!();

/// One task of `(ε, δ) = (2, ≤ 1e-6)` by basic composition.
const BUDGET: (f64, f64) = (2.5, 1e-5);

/// The most tasks the test creates (below the per-credential cap of running tasks).
const MOST: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tight_ledger_admits_more_s_and_t_tasks_than_basic_and_survives_a_restart() {
    for db in databases().await {
        let (server, router, credentials) = start(&db.url, BUDGET).await;
        // TrieHH++ over 4 levels at p_s = 0.35, planned by basic composition: each task states
        // (ε, δ) = (2, ≤ 1e-6).
        let body = serde_json::to_string(&spec(triehh_plus(4, 0.35), 2.0, RoundPolicy::default()))
            .unwrap();
        let mut tasks: Vec<TaskInfo> = Vec::new();
        loop {
            let (status, text) = call(&router, Method::POST, "/v1/tasks", Some(body.clone())).await;
            if status != StatusCode::CREATED {
                assert_eq!(status, StatusCode::CONFLICT, "{}: {text}", db.name);
                assert!(text.contains("budget_exceeded"), "{text}");
                break;
            }
            tasks.push(serde_json::from_str(&text).unwrap());
            assert!(tasks.len() < MOST, "{}: the budget never ran out", db.name);
        }
        let guarantee = (tasks[0].guarantee.epsilon, tasks[0].guarantee.delta);
        // What basic composition admits: the most copies whose rounded-up sum fits.
        let basic = (1..=MOST)
            .take_while(|&n| {
                let (e, d) = compose_basic(&vec![guarantee; n]).unwrap();
                e <= BUDGET.0 && d <= BUDGET.1
            })
            .count();
        assert_eq!(basic, 1, "{}: {guarantee:?}", db.name);
        assert!(
            tasks.len() >= 2 * basic,
            "{}: {} tasks",
            db.name,
            tasks.len()
        );
        eprintln!(
            "{}: tight admits {} tasks of {guarantee:?}, basic {basic}",
            db.name,
            tasks.len()
        );

        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        let balance = &ledger[0];
        let sum = (
            balance.spent.epsilon + balance.reserved.epsilon,
            balance.spent.delta + balance.reserved.delta,
        );
        // The basic sum is over the budget; the tight total is within it, and below the sum.
        assert!(sum.0 > BUDGET.0, "{balance:?}");
        assert!(balance.remaining.epsilon < 0.0, "{balance:?}");
        let tight = balance.tight.epsilon_at_budget_delta.unwrap();
        assert!(tight <= BUDGET.0 && tight < sum.0, "{balance:?}");
        assert!(
            balance.tight.delta_at_budget_epsilon <= BUDGET.1,
            "{balance:?}"
        );

        server.shutdown().await;
        let (server, router) = restart(&db.url, &credentials).await;
        let again: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(again[0].tight, balance.tight, "{}", db.name);
        assert_eq!(again[0].reserved, balance.reserved, "{}", db.name);
        // And it still refuses one more.
        let (status, _) = call(&router, Method::POST, "/v1/tasks", Some(body)).await;
        assert_eq!(status, StatusCode::CONFLICT, "{}", db.name);
        server.shutdown().await;
    }
}
