//! The HTTP API as deployed, over TLS with bearer credentials: every rejection reason with
//! its counter (read from the operator's `/metrics` listener), single-use tokens under
//! concurrency, the budget ledger, the minimum cohort, durable, byte-stable results and
//! restarts, each against every configured database.

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{
    ErrorBody, ErrorCode, LedgerBalance, RoundPolicy, RoundQuery, TaskInfo, TaskResult, TaskSpec,
    TaskState, UploadReceipt,
};

common::postgres_half!();

const BUDGET: (f64, f64) = (2.0, 1e-5);

fn policy(min_cohort: u64, cohort_target: u64) -> RoundPolicy {
    RoundPolicy {
        min_cohort,
        cohort_target: Some(cohort_target),
        deadline_secs: 600,
        max_attempts: 3,
        max_report_bytes: 16,
    }
}

async fn error_code(
    router: &TlsApi,
    method: Method,
    path: &str,
    body: Option<String>,
) -> (StatusCode, ErrorCode) {
    let (status, text) = call(router, method, path, body).await;
    let error: ErrorBody = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, error.code)
}

/// A server with a TrieHH++ task whose first level is open, and four tokens for it.
struct Open {
    server: Served,
    router: TlsApi,
    task: TaskInfo,
    uploads: String,
    tokens: Vec<String>,
    db: &'static str,
}

async fn open_task(db: &common::TestDb) -> Open {
    let Started {
        server,
        router,
        task,
        ..
    } = start_with_task(db, &spec(triehh_plus(3, 0.2), 1.0, policy(1, 1000))).await;
    let round = open_round(&router, &task.id).await;
    let tokens = tokens(&router, &round.round_id, 4).await;
    Open {
        server,
        router,
        task,
        uploads: format!("/v1/rounds/{}/uploads", round.round_id),
        tokens,
        db: db.name,
    }
}

/// A server on `db` with one task of `spec` created, and its credentials.
struct Started {
    server: Served,
    router: TlsApi,
    task: TaskInfo,
    credentials: Credentials,
}

async fn start_with_task(db: &common::TestDb, spec: &TaskSpec) -> Started {
    let (server, router, credentials) = start_tls(&db.url, BUDGET).await;
    let task: TaskInfo = post(&router, "/v1/tasks", spec).await;
    Started {
        server,
        router,
        task,
        credentials,
    }
}

fn body(uploads: Vec<(String, Option<&str>)>) -> Option<String> {
    Some(serde_json::to_string(&batch(uploads)).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        let (status, code) = error_code(
            router,
            Method::POST,
            &open.uploads,
            Some("{not json".into()),
        )
        .await;
        assert_eq!(
            (status, code),
            (StatusCode::BAD_REQUEST, ErrorCode::Malformed),
            "{}",
            open.db
        );
        let mut wrong_version = batch(vec![(open.tokens[0].clone(), None)]);
        wrong_version.version = 2;
        let (_, code) = error_code(
            router,
            Method::POST,
            &open.uploads,
            Some(serde_json::to_string(&wrong_version).unwrap()),
        )
        .await;
        assert_eq!(code, ErrorCode::Malformed);
        let (_, code) = error_code(
            router,
            Method::POST,
            "/v1/tasks",
            Some(r#"{"version":1}"#.into()),
        )
        .await;
        assert_eq!(code, ErrorCode::Malformed);
        assert_eq!(rejections(router, "malformed").await, 3);
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_and_reports_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        // A body past the limit is refused before it is read: a request that declares 17 MiB
        // and sends none of it is answered.
        let (status, text) = router.declare_body(&open.uploads, 17 << 20).await;
        let code = serde_json::from_str::<ErrorBody>(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}"))
            .code;
        assert_eq!(
            (status, code),
            (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::Oversized),
            "{}",
            open.db
        );
        // A report past the task's cap is refused, and its token spent.
        let long = "t".repeat(17);
        let receipt: UploadReceipt = post(
            router,
            &open.uploads,
            &batch(vec![(open.tokens[0].clone(), Some(long.as_str()))]),
        )
        .await;
        assert_eq!(
            (receipt.accepted, receipt.rejected[0].code),
            (0, ErrorCode::Oversized)
        );
        let receipt: UploadReceipt = post(
            router,
            &open.uploads,
            &batch(vec![(open.tokens[0].clone(), Some("t"))]),
        )
        .await;
        assert_eq!(receipt.rejected[0].code, ErrorCode::ReusedToken);
        assert_eq!(rejections(router, "oversized").await, 2);
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tasks_and_rounds_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        let (status, code) = error_code(router, Method::GET, "/v1/tasks/t-nope", None).await;
        assert_eq!(
            (status, code),
            (StatusCode::NOT_FOUND, ErrorCode::UnknownTask),
            "{}",
            open.db
        );
        let (_, code) = error_code(router, Method::POST, "/v1/tasks/t-nope/cancel", None).await;
        assert_eq!(code, ErrorCode::UnknownTask);
        let (_, code) = error_code(router, Method::GET, "/v1/tasks/t-nope/result", None).await;
        assert_eq!(code, ErrorCode::UnknownTask);
        assert_eq!(rejections(router, "unknown_task").await, 3);
        let (status, code) = error_code(
            router,
            Method::POST,
            "/v1/rounds/r-nope/uploads",
            body(vec![]),
        )
        .await;
        assert_eq!(
            (status, code),
            (StatusCode::NOT_FOUND, ErrorCode::UnknownRound)
        );
        assert_eq!(rejections(router, "unknown_round").await, 1);
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_to_a_closed_round_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        let cancelled: TaskInfo =
            post(router, &format!("/v1/tasks/{}/cancel", open.task.id), &()).await;
        assert_eq!(cancelled.state, TaskState::Cancelled);
        let (status, code) = error_code(
            router,
            Method::POST,
            &open.uploads,
            body(vec![(open.tokens[3].clone(), None)]),
        )
        .await;
        assert_eq!(
            (status, code),
            (StatusCode::CONFLICT, ErrorCode::ClosedRound),
            "{}",
            open.db
        );
        assert_eq!(rejections(router, "closed_round").await, 1);
        // A cancelled task has no result and released nothing: no debit, nothing reserved.
        let (_, code) = error_code(
            router,
            Method::GET,
            &format!("/v1/tasks/{}/result", open.task.id),
            None,
        )
        .await;
        assert_eq!(code, ErrorCode::NoResult);
        let ledger: Vec<LedgerBalance> = get(router, "/v1/ledger").await;
        assert!(ledger[0].entries.is_empty());
        assert_eq!(ledger[0].reserved.epsilon.to_bits(), 0.0_f64.to_bits());
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_that_extend_no_live_prefix_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        // Level 1 takes one character, or the terminator alone.
        for (token, report) in open.tokens.iter().zip(["th", "", "a$b"]) {
            let receipt: UploadReceipt = post(
                router,
                &open.uploads,
                &batch(vec![(token.clone(), Some(report))]),
            )
            .await;
            assert_eq!(
                receipt.rejected[0].code,
                ErrorCode::BadPrefix,
                "{report:?} on {}",
                open.db
            );
        }
        let receipt: UploadReceipt = post(
            router,
            &open.uploads,
            &batch(vec![(open.tokens[3].clone(), Some("$"))]),
        )
        .await;
        assert_eq!(receipt.accepted, 1);
        assert_eq!(rejections(router, "bad_prefix").await, 3);
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_that_name_no_bucket_of_the_level_are_refused_and_counted() {
    // Quantile and range tasks ask the same rounds of a hierarchical histogram.
    for kind in [quantiles(3, 0.2), range(10.0, 60.0, 3, 0.2)] {
        for db in databases().await {
            let Started {
                server,
                router,
                task,
                ..
            } = start_with_task(&db, &spec(kind.clone(), 1.0, policy(1, 1000))).await;
            let round = open_round(&router, &task.id).await;
            assert!(
                matches!(
                    round.ask,
                    tally_messages::Ask::Bucket {
                        level: 1,
                        levels: 3,
                        branching: 4,
                        range: Some([0.0, 100.0]),
                        ..
                    }
                ),
                "{round:?}"
            );
            let uploads = format!("/v1/rounds/{}/uploads", round.round_id);
            let tokens = tokens(&router, &round.round_id, 6).await;
            // Level 1 of a 4-ary tree has buckets 0 to 3, each written one way.
            let reports = ["4", "03", "-1", "0.5", "x", "3"];
            let uploads_batch = tokens
                .iter()
                .cloned()
                .zip(reports.map(Some))
                .collect::<Vec<_>>();
            let receipt: UploadReceipt = post(&router, &uploads, &batch(uploads_batch)).await;
            assert_eq!(receipt.accepted, 1, "{}", db.name);
            let codes: Vec<ErrorCode> = receipt.rejected.iter().map(|r| r.code).collect();
            assert_eq!(codes, [ErrorCode::BadBucket; 5], "{}", db.name);
            assert_eq!(rejections(&router, "bad_bucket").await, 5);
            server.shutdown().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_and_unknown_tokens_are_refused_and_counted() {
    for db in databases().await {
        let open = open_task(&db).await;
        let router = &open.router;
        let token = open.tokens[2].clone();
        let receipt: UploadReceipt = post(
            router,
            &open.uploads,
            &batch(vec![(token.clone(), Some("t")), (token, None)]),
        )
        .await;
        assert_eq!(receipt.accepted, 1);
        assert_eq!(
            receipt.rejected[0].code,
            ErrorCode::ReusedToken,
            "{}",
            open.db
        );
        assert_eq!(rejections(router, "reused_token").await, 1);
        let receipt: UploadReceipt = post(
            router,
            &open.uploads,
            &batch(vec![("0".repeat(32), None), ("zz".into(), None)]),
        )
        .await;
        assert_eq!(receipt.rejected.len(), 2);
        assert_eq!(receipt.rejected[1].code, ErrorCode::UnknownToken);
        assert_eq!(rejections(router, "unknown_token").await, 2);
        open.server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_is_accepted_once_among_a_hundred_concurrent_uploads() {
    for db in databases().await {
        let Started {
            server,
            router,
            task,
            ..
        } = start_with_task(&db, &spec(histogram(0.5), 1.0, policy(1, 1000))).await;
        let round = open_round(&router, &task.id).await;
        let token = tokens(&router, &round.round_id, 1).await.remove(0);
        let body = serde_json::to_string(&batch(vec![(token, Some("same"))])).unwrap();
        let path = format!("/v1/rounds/{}/uploads", round.round_id);
        let handles: Vec<_> = (0..100)
            .map(|_| {
                let (router, path, body) = (router.clone(), path.clone(), body.clone());
                tokio::spawn(async move { call(&router, Method::POST, &path, Some(body)).await })
            })
            .collect();
        let mut accepted = 0;
        for handle in handles {
            let (status, text) = handle.await.unwrap();
            assert_eq!(status, StatusCode::OK);
            let receipt: UploadReceipt = serde_json::from_str(&text).unwrap();
            accepted += receipt.accepted;
            if receipt.accepted == 0 {
                assert_eq!(receipt.rejected[0].code, ErrorCode::ReusedToken);
            }
        }
        assert_eq!(accepted, 1, "{}", db.name);
        assert_eq!(rejections(&router, "reused_token").await, 99);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_refuses_what_the_budget_cannot_cover() {
    for db in databases().await {
        // Charged by basic composition (no declared pair).
        let (server, router, _) = start_tls(&db.url, (1.5, 1e-5)).await;
        let first: TaskInfo = post(
            &router,
            "/v1/tasks",
            &spec(histogram(0.3), 1.0, policy(1, 1000)),
        )
        .await;
        let body = serde_json::to_string(&spec(histogram(0.3), 0.8, policy(1, 1000))).unwrap();
        let (status, code) =
            error_code(&router, Method::POST, "/v1/tasks", Some(body.clone())).await;
        assert_eq!(
            (status, code),
            (StatusCode::CONFLICT, ErrorCode::BudgetExceeded),
            "{}",
            db.name
        );
        assert_eq!(rejections(&router, "budget_exceeded").await, 1);
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(
            ledger[0].reserved.epsilon.to_bits(),
            first.guarantee.epsilon.to_bits()
        );
        // Cancelled before any release, the first task's reservation is freed.
        let _: TaskInfo = post(&router, &format!("/v1/tasks/{}/cancel", first.id), &()).await;
        let (status, _) = call(&router, Method::POST, "/v1/tasks", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED);
        // An impossible calibration is an invalid task, not a budget question.
        let bad = serde_json::to_string(&spec(histogram(0.99), 0.1, policy(1, 1000))).unwrap();
        let (status, code) = error_code(&router, Method::POST, "/v1/tasks", Some(bad)).await;
        assert_eq!(
            (status, code),
            (StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidTask)
        );
        // Quantile tasks that cannot run as asked, each refused with its reason.
        use tally_messages::QuantileMethod::{BinarySearch, Hierarchical};
        let kind = |method, quantiles: &[f64], branching, levels, range| {
            tally_messages::TaskKind::Quantiles {
                method,
                quantiles: quantiles.to_vec(),
                branching,
                levels,
                consistent: false,
                composition: Some(tally_accounting::composition::Composition::Basic),
                range,
                sampling_rate: Some(0.2),
                threshold: None,
            }
        };
        let cases = [
            (
                "quantile 1.5",
                kind(Hierarchical, &[0.5, 1.5], None, 3, None),
            ),
            (
                "min < max",
                kind(Hierarchical, &[0.5], None, 3, Some([5.0, 5.0])),
            ),
            ("branching", kind(Hierarchical, &[0.5], Some(1), 3, None)),
            (
                "hierarchical method only",
                kind(BinarySearch, &[0.5], Some(4), 3, None),
            ),
            ("1 to 52 rounds", kind(BinarySearch, &[0.5], None, 60, None)),
        ];
        for (reason, kind) in cases {
            let text = serde_json::to_string(&spec(kind, 1.0, policy(1, 1000))).unwrap();
            let (status, body) = call(&router, Method::POST, "/v1/tasks", Some(text)).await;
            let error: ErrorBody = serde_json::from_str(&body).unwrap();
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reason}: {body}");
            assert_eq!(error.code, ErrorCode::InvalidTask);
            assert!(
                error.message.contains(reason),
                "{reason}: {}",
                error.message
            );
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_below_the_minimum_cohort_releases_nothing_and_runs_again() {
    for db in databases().await {
        let mut rounds = policy(3, 1000);
        rounds.deadline_secs = 1;
        rounds.max_attempts = 2;
        let Started {
            server,
            router,
            task,
            ..
        } = start_with_task(&db, &spec(histogram(0.5), 1.0, rounds)).await;
        let first = open_round(&router, &task.id).await;
        let token = tokens(&router, &first.round_id, 1).await.remove(0);
        let _: UploadReceipt = post(
            &router,
            &format!("/v1/rounds/{}/uploads", first.round_id),
            &batch(vec![(token, Some("a"))]),
        )
        .await;
        // The deadline passes with one upload: the round is run again with a fresh cohort.
        let second = loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
            if info
                .open_round
                .as_deref()
                .is_some_and(|r| r != first.round_id)
            {
                break open_round(&router, &task.id).await;
            }
        };
        assert_eq!((second.round, second.attempt), (1, 2), "{}", db.name);
        // The second attempt is short too: the task fails, with no result and no debit.
        let info = loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
            if info.state != TaskState::Running {
                break info;
            }
        };
        assert_eq!(info.state, TaskState::Failed);
        assert!(info.error.unwrap().contains("minimum cohort"));
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert!(ledger[0].entries.is_empty());
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_result_is_debited_durable_and_byte_stable() {
    for db in databases().await {
        let Started {
            server,
            router,
            task,
            credentials,
        } = start_with_task(&db, &spec(histogram(0.5), 1.0, policy(10, 300))).await;
        let round = open_round(&router, &task.id).await;
        let tokens = tokens(&router, &round.round_id, 300).await;
        // 200 devices hold "common", 100 hold "rare-i" each; half of them were sampled.
        let uploads = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    t,
                    (i % 2 == 0).then_some(if i < 200 { "common" } else { "rare" }),
                )
            })
            .collect();
        let receipt: UploadReceipt = post(
            &router,
            &format!("/v1/rounds/{}/uploads", round.round_id),
            &batch(uploads),
        )
        .await;
        assert_eq!(receipt.accepted, 300);
        let result_path = format!("/v1/tasks/{}/result", task.id);
        let mut waited = 0;
        let body = loop {
            let (status, body) = call(&router, Method::GET, &result_path, None).await;
            if status == StatusCode::OK {
                break body;
            }
            waited += 1;
            assert!(waited < 500, "no result: {body}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let TaskResult::Histogram(release) = serde_json::from_str(&body).unwrap() else {
            panic!("not a histogram: {body}");
        };
        assert_eq!(release.execution, "federated");
        assert_eq!(release.items[0].item, "common");
        assert_eq!(release.items[0].count, Some(100));
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(ledger[0].entries.len(), 1, "{}", db.name);
        assert_eq!(ledger[0].entries[0].task_id, task.id);
        assert_eq!(
            ledger[0].spent.epsilon.to_bits(),
            task.guarantee.epsilon.to_bits()
        );
        server.shutdown().await;

        // After a restart the same bytes come back, and the task is still finished.
        let (server, router) = restart_tls(&db.url, &credentials).await;
        let (status, again) = call(&router, Method::GET, &result_path, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(again, body);
        let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
        assert_eq!((info.state, info.rounds_released), (TaskState::Finished, 1));
        let (status, text) = call(&router, Method::GET, "/healthz", None).await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "ok\n"));
        server.shutdown().await;
    }
}

/// Uploads `count` reports of `report` and abstentions up to `devices` to `round`.
async fn upload_all(router: &TlsApi, round: &RoundQuery, devices: u32, count: usize, report: &str) {
    let tokens = tokens(router, &round.round_id, devices).await;
    let uploads = tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, (i < count).then_some(report)))
        .collect();
    let receipt: UploadReceipt = post(
        router,
        &format!("/v1/rounds/{}/uploads", round.round_id),
        &batch(uploads),
    )
    .await;
    assert!(receipt.rejected.is_empty(), "{receipt:?}");
}

/// The open round of `task` at `level`, once the previous one is released.
async fn round_at(router: &TlsApi, task: &str, level: u32) -> RoundQuery {
    loop {
        let open: Vec<RoundQuery> = get(router, "/v1/rounds").await;
        if let Some(query) = open
            .into_iter()
            .find(|q| q.task_id == task && q.round == level)
        {
            return query;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quantile_task_resumes_after_a_restart_from_its_stored_levels() {
    for db in databases().await {
        let Started {
            server,
            router,
            task,
            credentials,
        } = start_with_task(&db, &spec(quantiles(2, 0.2), 1.0, policy(5, 50))).await;
        // Level 1 (4 buckets of [0, 100]): 48 of 50 devices report bucket 2, [50, 75).
        let level1 = open_round(&router, &task.id).await;
        upload_all(&router, &level1, 50, 48, "2").await;
        let level2 = round_at(&router, &task.id, 2).await;
        server.shutdown().await;

        let (server, router) = restart_tls(&db.url, &credentials).await;
        let again = open_round(&router, &task.id).await;
        assert_eq!((again.round, again.attempt), (2, 2), "{}", db.name);
        assert_eq!(again.ask, level2.ask);
        // Level 2 (16 buckets): the same devices in bucket 9, [56.25, 62.5).
        upload_all(&router, &again, 50, 48, "9").await;
        let result = released(&router, &task.id).await;
        let TaskResult::Quantiles(release) = serde_json::from_str(&result).unwrap() else {
            panic!("a quantile task releases quantiles: {result}");
        };
        // All the estimated mass lies in [56.25, 62.5): every quantile is its upper end.
        for row in &release.quantiles {
            assert_eq!(row.value.to_bits(), 62.5_f64.to_bits(), "{row:?}");
        }
        assert_eq!(release.parameters["estimated_total"], 48.0 / 0.2);
        let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
        assert_eq!((info.state, info.rounds_released), (TaskState::Finished, 2));
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_aborts_the_open_round_and_runs_it_again_with_a_fresh_cohort() {
    for db in databases().await {
        let Started {
            server,
            router,
            task,
            credentials,
        } = start_with_task(&db, &spec(triehh_plus(4, 0.2), 1.0, policy(5, 50))).await;
        // Level 1: 50 devices, 45 of them report "a".
        let level1 = open_round(&router, &task.id).await;
        upload_all(&router, &level1, 50, 45, "a").await;
        let level2 = round_at(&router, &task.id, 2).await;
        let old_tokens = common::tokens(&router, &level2.round_id, 3).await;
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(
            ledger[0].entries.len(),
            1,
            "the first release debits the task"
        );
        // A stop mid-round: the round is dropped unreleased.
        server.shutdown().await;

        let (server, router) = restart_tls(&db.url, &credentials).await;
        let again = open_round(&router, &task.id).await;
        assert_ne!(again.round_id, level2.round_id, "{}", db.name);
        assert_eq!((again.round, again.attempt), (2, 2));
        assert_eq!(
            again.ask, level2.ask,
            "the same query, rebuilt from the stored release"
        );
        // The old round's tokens are worthless: its round is closed.
        let (_, code) = error_code(
            &router,
            Method::POST,
            &format!("/v1/rounds/{}/uploads", level2.round_id),
            Some(serde_json::to_string(&batch(vec![(old_tokens[0].clone(), None)])).unwrap()),
        )
        .await;
        assert_eq!(code, ErrorCode::ClosedRound);
        let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
        assert_eq!((info.state, info.rounds_released), (TaskState::Running, 1));
        let ledger: Vec<LedgerBalance> = get(&router, "/v1/ledger").await;
        assert_eq!(ledger[0].entries.len(), 1, "no second debit");
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_does_not_recalibrate_finished_tasks() {
    for db in databases().await {
        let Started {
            server,
            router,
            task,
            credentials,
        } = start_with_task(&db, &spec(histogram(0.5), 1.0, policy(10, 300))).await;
        let round = open_round(&router, &task.id).await;
        upload_all(&router, &round, 300, 200, "common").await;
        let result_path = format!("/v1/tasks/{}/result", task.id);
        let body = loop {
            let (status, text) = call(&router, Method::GET, &result_path, None).await;
            if status == StatusCode::OK {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        server.shutdown().await;
        // A stored spec that no longer calibrates: only recalibrating would notice.
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
        sqlx::query("UPDATE tasks SET spec = replace(spec, $1, $2)")
            .bind("\"sampling_rate\":0.5")
            .bind("\"sampling_rate\":1.0")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;

        let (server, router) = restart_tls(&db.url, &credentials).await;
        let (status, again) = call(&router, Method::GET, &result_path, None).await;
        assert_eq!((status, again), (StatusCode::OK, body), "{}", db.name);
        let info: TaskInfo = get(&router, &format!("/v1/tasks/{}", task.id)).await;
        assert_eq!(info.state, TaskState::Finished);
        assert_eq!(info.guarantee, task.guarantee);
        assert_eq!(
            info.spec.kind,
            histogram(1.0),
            "the stored spec was changed to one that does not calibrate"
        );
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_past_the_bounds_are_refused_with_what_is_allowed() {
    for db in databases().await {
        let (server, router, _) = start_tls(&db.url, BUDGET).await;
        let base = spec(histogram(0.5), 1.0, policy(1, 1000));
        let mut too_long = base.clone();
        too_long.rounds.deadline_secs = 1 << 40;
        let mut too_many_attempts = base.clone();
        too_many_attempts.rounds.max_attempts = 1000;
        let mut too_large = base.clone();
        too_large.expected_population = 1 << 40;
        // Rounds that close at the expected population, below the minimum cohort.
        let mut never_releases = base.clone();
        never_releases.expected_population = 10;
        never_releases.rounds.min_cohort = 100;
        never_releases.rounds.cohort_target = None;
        let mut past_the_population = base.clone();
        past_the_population.rounds.cohort_target = Some(u64::MAX);
        let too_deep = spec(triehh_plus(300, 0.2), 1.0, policy(1, 1000));
        let mut too_many_quantiles = spec(quantiles(3, 0.2), 1.0, policy(1, 1000));
        if let tally_messages::TaskKind::Quantiles { quantiles, .. } = &mut too_many_quantiles.kind
        {
            *quantiles = (0..=200).map(|i| f64::from(i) / 200.0).collect();
        }
        for (spec, says) in [
            (too_long, "deadline_secs: 1 to"),
            (too_many_attempts, "max_attempts: 1 to"),
            (too_large, "expected_population: at most"),
            (
                never_releases,
                "expected_population (10) is below min_cohort (100)",
            ),
            (too_deep, "levels 300: at most 64"),
            (
                past_the_population,
                "above the expected population of 1000 devices",
            ),
            (too_many_quantiles, "quantiles: at most"),
            (
                spec(range(60.0, 10.0, 3, 0.2), 1.0, policy(1, 1000)),
                "range [60, 10)",
            ),
            (
                spec(range(10.0, 160.0, 3, 0.2), 1.0, policy(1, 1000)),
                "within [0, 100]",
            ),
        ] {
            let (status, text) = call(
                &router,
                Method::POST,
                "/v1/tasks",
                Some(serde_json::to_string(&spec).unwrap()),
            )
            .await;
            assert_eq!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{}: {text}",
                db.name
            );
            assert!(text.contains(says), "{text}");
        }
        let tasks: Vec<TaskInfo> = get(&router, "/v1/tasks").await;
        assert!(tasks.is_empty());
        server.shutdown().await;
    }
}

/// A Count-Min task over `0..2` for 350 devices at `ε = 27` (its longest report fits in
/// 32 KiB), over [`SWAPPED`] (its guarantee is under replace-one neighbours).
fn count_min_spec() -> TaskSpec {
    let kind = tally_messages::TaskKind::DomainHistogram {
        mechanism: tally_messages::DomainHistogramMechanism::GhaziCountMin,
        domain: tally_messages::PublicDomain::Integers(2),
        public_coins: None,
    };
    let mut spec = replace_one(spec(kind, 27.0, policy(350, 350)));
    spec.expected_population = 350;
    spec.rounds.max_report_bytes = 32_768;
    spec
}

/// The seed of a Count-Min task's public coins, as the server stored it.
fn public_coins(task: &TaskInfo) -> u64 {
    match task.spec.kind {
        tally_messages::TaskKind::DomainHistogram {
            public_coins: Some(seed),
            ..
        } => seed,
        ref kind => panic!("no public coins in {kind:?}"),
    }
}

/// Each Count-Min task gets hash functions of its own, drawn from the server's stream when it
/// is created (the same for a server seeded alike) and stored with its spec, so that a
/// restarted server publishes the same ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_min_task_keeps_its_own_hash_functions_across_a_restart() {
    let budget = (100.0, 1e-3);
    let mut seeds = Vec::new();
    for db in databases().await.into_iter().chain(databases().await) {
        let (server, router, credentials) = start_seeded(&db.url, budget, 7).await;
        let analyst = swapped(&db.url, budget).await;
        let first: TaskInfo = post_as(&router, &analyst, "/v1/tasks", &count_min_spec()).await;
        let second: TaskInfo = post_as(&router, &analyst, "/v1/tasks", &count_min_spec()).await;
        let asked = open_round(&router, &first.id).await.ask;
        let other = open_round(&router, &second.id).await.ask;
        assert_ne!(public_coins(&first), public_coins(&second), "{}", db.name);
        assert_ne!(asked, other, "{}", db.name);
        seeds.push(public_coins(&first));
        server.shutdown().await;

        let (server, router) = restart(&db.url, &credentials).await;
        let again = open_round(&router, &first.id).await;
        assert_eq!(again.attempt, 2, "{}", db.name);
        assert_eq!(again.ask, asked, "{}", db.name);
        server.shutdown().await;
    }
    // Servers seeded alike draw the same coins for the same first task.
    assert!(seeds.windows(2).all(|w| w[0] == w[1]), "{seeds:?}");
}
