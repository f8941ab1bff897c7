//! A split-trust population at the aggregator: its reports arrive only as one relayed batch
//! of sealed messages per round, from a relay credential; the aggregator opens them under the
//! round's binding, drops and counts what does not open or repeats, checks and counts the rest,
//! and releases as in a single-party round, saying `split` beside the guarantee. It enrolls no
//! device of the population and takes no check-in or upload for its rounds.

mod common;

use axum::Router;
use axum::http::{Method, StatusCode};
use common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tally_messages::{
    Budget, CredentialSpec, ErrorBody, ErrorCode, PROTOCOL_VERSION, PopulationSpec,
    RefusedMessages, RelayReceipt, RelayedBatch, Role, RoundPolicy, RoundQuery, Sampling, TaskInfo,
    TrustModel,
};
use tally_seal::{Binding, KeyConfig, KeyPair, decode_key_configs, seal};
use tower::ServiceExt;

common::postgres_half!();

const BUDGET: (f64, f64) = (10.0, 1e-5);
const SPLIT: &str = "split";

/// A split-trust deployment's aggregator: the single-party population and credentials of
/// [`start`], a split-trust population [`SPLIT`], its analyst and its relay.
struct Aggregator {
    server: tally_server::Server,
    router: Router,
    /// Answers without a credential of its own.
    bare: Router,
    analyst: String,
    relay: String,
    /// A device credential of the single-party population.
    device: String,
}

async fn aggregator(db: &str) -> Aggregator {
    let (server, router, credentials) = start(db, BUDGET).await;
    let spec = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: SPLIT.into(),
        budget: Budget {
            epsilon: BUDGET.0,
            delta: BUDGET.1,
        },
        min_cohort: 1,
        max_task_epsilon: None,
        trust: TrustModel::Split,
        allow_device_sampling: true,
        colluding_fraction: 0.0,
        task_bound: None,
        neighbours: tally_messages::Neighbours::AddRemove,
    };
    tally_server::create_population(db, &spec).await.unwrap();
    Aggregator {
        bare: both(&server),
        server,
        router,
        analyst: credential(db, Role::Analyst, "split analyst", &[SPLIT]).await,
        relay: credential(db, Role::Relay, "relay", &[SPLIT]).await,
        device: credentials.device,
    }
}

fn code(text: &str) -> ErrorCode {
    serde_json::from_str::<ErrorBody>(text)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .code
}

/// A histogram of the split population at sampling rate 0.5 (the relay's coins), sampled
/// aggregator-side (the default), released from at least `min_cohort` devices.
async fn histogram_task(a: &Aggregator, min_cohort: u64) -> TaskInfo {
    let mut task = spec(
        histogram(0.5),
        1.0,
        RoundPolicy {
            min_cohort,
            cohort_target: Some(1000),
            ..RoundPolicy::default()
        },
    );
    task.population = SPLIT.into();
    task.sampling = Sampling::Aggregator;
    let (status, text) = call_with(
        &a.router,
        &a.analyst,
        Method::POST,
        "/v1/tasks",
        Some(serde_json::to_string(&task).unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The open round of `task` as its relay reads it.
async fn relays_round(a: &Aggregator, task: &str) -> RoundQuery {
    let (status, text) = call_with(&a.router, &a.relay, Method::GET, "/v1/rounds", None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let rounds: Vec<RoundQuery> = serde_json::from_str(&text).unwrap();
    rounds
        .into_iter()
        .find(|r| r.task_id == task)
        .unwrap_or_else(|| panic!("no round of {task} in {text}"))
}

/// The aggregator's key configurations, fetched without a credential.
async fn key_configs(router: &Router) -> Vec<KeyConfig> {
    let request = axum::http::Request::get("/v1/hpke-keys")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        tally_messages::HPKE_KEYS_MEDIA_TYPE
    );
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    decode_key_configs(&body).unwrap()
}

/// The relay's one batch for `round`: `(status, body)`.
async fn relay_batch(
    a: &Aggregator,
    round: &RoundQuery,
    cohort: u64,
    messages: Vec<String>,
) -> (StatusCode, String) {
    let batch = RelayedBatch {
        version: PROTOCOL_VERSION,
        attempt: round.attempt,
        cohort,
        messages,
    };
    call_with(
        &a.router,
        &a.relay,
        Method::POST,
        &format!("/v1/rounds/{}/relayed", round.round_id),
        Some(serde_json::to_string(&batch).unwrap()),
    )
    .await
}

/// Devices seal 40 reports of "apple" and one of "pear" for the round; the relay adds a
/// replay of one of them, a report sealed for another round, one sealed to a key of its own
/// id, and one that is not a sealed message: the aggregator counts the 41 (every one, the relay
/// having sampled them), drops and counts the four, releases "apple" with all 40 and says
/// `split` beside the guarantee. A second batch for the round is refused. Without the binding
/// the moved report would be counted, and without the report id the replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_batch_is_opened_checked_counted_and_released() {
    for db in databases().await {
        let a = aggregator(&db.url).await;
        let task = histogram_task(&a, 3).await;
        assert_eq!(task.guarantee.trust_model, TrustModel::Split);
        let round = relays_round(&a, &task.id).await;
        assert_eq!(round.sampling, Sampling::Aggregator);
        let configs = key_configs(&a.bare).await;
        assert_eq!(configs.len(), 1);
        let key = &configs[0];
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let binding = Binding::of(&round);
        let mut messages: Vec<String> = (0..40)
            .map(|_| seal(key, &binding, "apple", &mut rng))
            .collect();
        messages.push(seal(key, &binding, "pear", &mut rng));
        let mut elsewhere = round.clone();
        elsewhere.round_id = "r-0000000000000000".into();
        let own = KeyPair::generate(key.key_id().wrapping_add(1), &mut rng);
        messages.extend([
            messages[0].clone(),
            seal(key, &Binding::of(&elsewhere), "apple", &mut rng),
            seal(&own.config(), &binding, "apple", &mut rng),
            "not sealed".to_owned(),
        ]);
        let (status, text) = relay_batch(&a, &round, 41, messages.clone()).await;
        assert_eq!(status, StatusCode::OK, "{}: {text}", db.name);
        let receipt: RelayReceipt = serde_json::from_str(&text).unwrap();
        assert_eq!(receipt.accepted, 41, "{text}");
        let refused = |code| RefusedMessages { code, count: 1 };
        assert_eq!(
            receipt.refused,
            [
                refused(ErrorCode::DuplicateReport),
                refused(ErrorCode::Malformed),
                refused(ErrorCode::UnknownKey),
                refused(ErrorCode::UnopenedReport),
            ],
            "{text}"
        );
        for reason in [
            "duplicate_report",
            "unopened_report",
            "unknown_key",
            "malformed",
        ] {
            assert_eq!(rejections(&a.router, reason).await, 1, "{reason}");
        }
        let document: serde_json::Value = serde_json::from_str(
            &call_with(
                &a.router,
                &a.analyst,
                Method::GET,
                &format!("/v1/tasks/{}/result", task.id),
                None,
            )
            .await
            .1,
        )
        .unwrap();
        assert_eq!(document["guarantee"]["trust_model"], "split", "{document}");
        let items = document["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{document}");
        assert_eq!(items[0]["item"], "apple");
        assert_eq!(items[0]["count"], 40);
        // The round took its batch: another for it (this one again) is refused.
        let (status, text) = relay_batch(&a, &round, 41, messages).await;
        assert_eq!(status, StatusCode::CONFLICT, "{text}");
        assert_eq!(code(&text), ErrorCode::ClosedRound);
        a.server.shutdown().await;
    }
}

/// A relay that hangs up while its batch is being opened (its request timed out, as a large
/// batch's may) still gets the round counted, closed and released: the aggregator finishes a
/// batch it began whatever happens to the request. Without that the round stayed claimed and
/// open forever: the deadline waits for a batch being opened, and the relay's retry is
/// refused as `already_relayed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_relay_hangs_up_is_still_counted_and_released() {
    let db = &databases().await[0];
    let a = aggregator(&db.url).await;
    let task = histogram_task(&a, 3).await;
    let round = relays_round(&a, &task.id).await;
    let key = &key_configs(&a.bare).await[0];
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let binding = Binding::of(&round);
    // Enough messages that opening them outlasts the request's 20 ms.
    let messages: Vec<String> = (0..1000)
        .map(|_| seal(key, &binding, "apple", &mut rng))
        .collect();
    let hung_up = tokio::time::timeout(
        std::time::Duration::from_millis(20),
        relay_batch(&a, &round, 1000, messages),
    )
    .await;
    assert!(
        hung_up.is_err(),
        "the batch was taken within 20 ms: {hung_up:?}"
    );
    let result = format!("/v1/tasks/{}/result", task.id);
    let started = std::time::Instant::now();
    let document: serde_json::Value = loop {
        let (status, text) = call_with(&a.router, &a.analyst, Method::GET, &result, None).await;
        if status == StatusCode::OK {
            break serde_json::from_str(&text).unwrap();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "the round was never released: {status} {text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(document["items"][0]["item"], "apple", "{document}");
    assert_eq!(document["items"][0]["count"], 1000, "{document}");
    a.server.shutdown().await;
}

/// A batch for fewer devices than the round's minimum cohort, past its cohort target, or
/// with more messages than its devices can send is refused, and nothing of it is counted:
/// the round then takes a batch that is right. Two claims on one round cannot both hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_outside_the_rounds_cohort_are_refused_whole() {
    let db = &databases().await[0];
    let a = aggregator(&db.url).await;
    let task = histogram_task(&a, 5).await;
    let round = relays_round(&a, &task.id).await;
    let key = key_configs(&a.bare).await.remove(0);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let binding = Binding::of(&round);
    let sealed: Vec<String> = (0..4)
        .map(|_| seal(&key, &binding, "apple", &mut rng))
        .collect();
    let (status, text) = relay_batch(&a, &round, 4, sealed.clone()).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert_eq!(code(&text), ErrorCode::BelowMinCohort);
    let (_, text) = relay_batch(&a, &round, 1001, sealed.clone()).await;
    assert_eq!(code(&text), ErrorCode::Oversized, "{text}");
    // A report of at most 256 bytes holds at most 128 messages.
    let flood = vec![sealed[0].clone(); 5 * 128 + 1];
    let (_, text) = relay_batch(&a, &round, 5, flood).await;
    assert_eq!(code(&text), ErrorCode::Oversized, "{text}");
    let mut wrong_attempt = round.clone();
    wrong_attempt.attempt += 1;
    let (_, text) = relay_batch(&a, &wrong_attempt, 5, sealed.clone()).await;
    assert_eq!(code(&text), ErrorCode::ClosedRound, "{text}");
    assert_eq!(rejections(&a.router, "below_min_cohort").await, 1);
    let (status, text) = relay_batch(&a, &round, 5, sealed).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let receipt: RelayReceipt = serde_json::from_str(&text).unwrap();
    assert_eq!((receipt.accepted, receipt.refused.len()), (4, 0));
    a.server.shutdown().await;
}

/// The aggregator of a split-trust population holds none of its devices: it makes no device
/// credential of it (directly or by enrollment, through the API or beside the server), and
/// takes no check-in or upload for its rounds, from an operator relaying either. A relay
/// credential is made only for split-trust populations, takes no upload token, and sends
/// batches only to its own populations' rounds. Without the check on the round's trust model
/// the operator's check-in is granted tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aggregator_refuses_device_credentials_of_a_split_population() {
    let db = &databases().await[0];
    let a = aggregator(&db.url).await;
    let device = CredentialSpec {
        version: PROTOCOL_VERSION,
        role: Role::Device,
        name: "a device".into(),
        populations: vec![SPLIT.into()],
    };
    let (status, text) = call(
        &a.router,
        Method::POST,
        "/v1/credentials",
        Some(serde_json::to_string(&device).unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("enrolled at its relay"), "{text}");
    let refused = tally_server::create_credential(&db.url, &device).await;
    assert!(refused.is_err(), "{refused:?}");
    let (status, text) = call(
        &a.router,
        Method::POST,
        &format!("/v1/populations/{SPLIT}/devices"),
        Some(r#"{"version":1,"count":3}"#.into()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(
        tally_server::enroll_devices(&db.url, SPLIT, 3)
            .await
            .is_err()
    );
    let relay_of_single = CredentialSpec {
        role: Role::Relay,
        name: "relay".into(),
        populations: vec![POPULATION.into()],
        ..device.clone()
    };
    assert!(
        tally_server::create_credential(&db.url, &relay_of_single)
            .await
            .is_err()
    );
    let credentials = tally_server::credentials(&db.url).await.unwrap();
    assert!(
        !credentials
            .iter()
            .any(|c| c.role == Role::Device && c.populations == [SPLIT]),
        "{credentials:?}"
    );

    let task = histogram_task(&a, 1).await;
    let round = relays_round(&a, &task.id).await;
    // The operator (who may relay for single-party devices) reaches neither check-in nor
    // uploads of a split round.
    let (status, text) = call(
        &a.router,
        Method::POST,
        &format!("/v1/rounds/{}/check-in", round.round_id),
        Some(r#"{"version":1,"devices":2}"#.into()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("relayed"), "{text}");
    let (status, _) = call(
        &a.router,
        Method::POST,
        &format!("/v1/rounds/{}/uploads", round.round_id),
        Some(serde_json::to_string(&batch(vec![("0".repeat(32), Some("apple"))])).unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The relay takes no token, and its batch to a single-party round is refused.
    let (status, _) = call_with(
        &a.router,
        &a.relay,
        Method::POST,
        &format!("/v1/rounds/{}/check-in", round.round_id),
        Some(r#"{"version":1}"#.into()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let single: TaskInfo = post(
        &a.router,
        "/v1/tasks",
        &spec(histogram(0.5), 1.0, RoundPolicy::default()),
    )
    .await;
    let single_round = open_round(&a.router, &single.id).await;
    let (status, text) = relay_batch(&a, &single_round, 100, Vec::new()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    // Nor does a device credential (of the single-party population) send a batch.
    let (status, _) = call_with(
        &a.router,
        &a.device,
        Method::POST,
        &format!("/v1/rounds/{}/relayed", round.round_id),
        Some(r#"{"version":1,"attempt":1,"cohort":1,"messages":[]}"#.into()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    a.server.shutdown().await;
}

/// A rotation (`tally hpke-key rotate`) makes a new current key, served first within the
/// server's poll; a report sealed to the old key is still opened within its grace period,
/// and refused as sealed to an unknown key once the old key has retired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_keep_opening_for_their_grace_period() {
    let db = &databases().await[0];
    let a = aggregator(&db.url).await;
    let old = key_configs(&a.bare).await.remove(0);
    let rotated = tally_server::rotate_hpke_key(&db.url, std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_ne!(rotated, old.key_id());
    let configs = served_after_poll(&a.bare, |c| c[0].key_id() == rotated).await;
    assert_eq!(configs.len(), 2);
    assert_eq!(configs[1], old);

    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let task = histogram_task(&a, 1).await;
    let round = relays_round(&a, &task.id).await;
    let binding = Binding::of(&round);
    let to_old = vec![
        seal(&old, &binding, "apple", &mut rng),
        seal(&configs[0], &binding, "apple", &mut rng),
    ];
    let (_, text) = relay_batch(&a, &round, 2, to_old).await;
    let receipt: RelayReceipt = serde_json::from_str(&text).unwrap();
    assert_eq!((receipt.accepted, receipt.refused.len()), (2, 0), "{text}");

    // Rotated again with no grace: only the newest key opens.
    let newest = tally_server::rotate_hpke_key(&db.url, std::time::Duration::ZERO)
        .await
        .unwrap();
    let configs = served_after_poll(&a.bare, |c| c.len() == 1 && c[0].key_id() == newest).await;
    let task = histogram_task(&a, 1).await;
    let round = relays_round(&a, &task.id).await;
    let binding = Binding::of(&round);
    let messages = vec![
        seal(&old, &binding, "apple", &mut rng),
        seal(&configs[0], &binding, "apple", &mut rng),
    ];
    let (_, text) = relay_batch(&a, &round, 2, messages).await;
    let receipt: RelayReceipt = serde_json::from_str(&text).unwrap();
    assert_eq!(receipt.accepted, 1, "{text}");
    assert_eq!(
        receipt.refused,
        [RefusedMessages {
            code: ErrorCode::UnknownKey,
            count: 1
        }]
    );
    a.server.shutdown().await;
}

/// The key configurations served once `done` holds of them (the server reads its keys every
/// two seconds), waiting at most 30 seconds.
async fn served_after_poll(router: &Router, done: impl Fn(&[KeyConfig]) -> bool) -> Vec<KeyConfig> {
    for _ in 0..300 {
        let configs = key_configs(router).await;
        if done(&configs) {
            return configs;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the server did not serve the rotated keys within 30 s");
}
