//! The relay in this process against an aggregator double (an HTTP server in the test that
//! publishes rounds and records the batches it receives): what devices and operators may do
//! at the relay, and what reaches the aggregator.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tally_client::Client;
use tally_messages::{ErrorCode, RoundQuery, Sampling, SealedUpload};

/// Five enrolled devices and an operator relaying three more upload to a round whose cohort
/// target is 8 and whose devices flip their own coins: the relay republishes the
/// aggregator's query verbatim, closes the round once it holds 8 uploads and forwards one
/// batch with the relay's credential: the round's attempt, a cohort of 8, and exactly the
/// uploaded messages (an abstention sends none), nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_forwards_one_batch_of_the_messages_with_nothing_else() {
    let (shared, url) = aggregator().await;
    let round = query("r1", 3, 8, 600, Sampling::Device);
    shared.lock().unwrap().rounds.push(round.clone());
    let running = relay(&url, 5).await;
    let mut sent = Vec::new();
    for (i, device) in running.devices.iter().enumerate() {
        let client = running.client(device);
        assert_eq!(published(&client, "r1").await, round);
        let grant = client.check_in("r1", 1).await.unwrap();
        assert_eq!(grant.query, round);
        let messages = if i == 0 { Vec::new() } else { vec![sealed(i)] };
        sent.extend(messages.clone());
        let token = grant.tokens[0].clone();
        let receipt = client
            .upload_sealed("r1", &[SealedUpload { token, messages }])
            .await
            .unwrap();
        assert_eq!((receipt.accepted, receipt.rejected.len()), (1, 0));
    }
    let operator = running.client(&running.operator);
    let tokens = operator.check_in("r1", 3).await.unwrap().tokens;
    let uploads: Vec<SealedUpload> = tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| SealedUpload {
            token,
            messages: vec![sealed(10 + i), sealed(20 + i)],
        })
        .collect();
    sent.extend(uploads.iter().flat_map(|u| u.messages.clone()));
    operator.upload_sealed("r1", &uploads).await.unwrap();
    let received = received(&shared, 1).await;
    let (id, credential, batch) = &received[0];
    assert_eq!(
        (id.as_str(), credential.as_str()),
        ("r1", "Bearer relay-credential")
    );
    assert_eq!((batch.attempt, batch.cohort), (2, 8));
    let mut forwarded = batch.messages.clone();
    forwarded.sort_unstable();
    sent.sort_unstable();
    assert_eq!(forwarded, sent);
    // The round is over at the relay: no more uploads, and no second batch. It is closed
    // there until the aggregator stops listing it, then forgotten (an unknown round).
    let error = operator.check_in("r1", 1).await.unwrap_err();
    assert!(error.round_is_over(), "{error:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(shared.lock().unwrap().received.len(), 1);
    running.stop().await;
}

/// A round whose minimum cohort is 4 closes at the relay (its deadline less the margin) with
/// the uploads of 3 devices: the relay forwards nothing, and says the round is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_forwards_nothing_below_the_minimum_cohort() {
    let (shared, url) = aggregator().await;
    shared
        .lock()
        .unwrap()
        .rounds
        .push(query("r2", 4, 10, 2, Sampling::Device));
    let running = relay(&url, 3).await;
    for (i, device) in running.devices.iter().enumerate() {
        let client = running.client(device);
        published(&client, "r2").await;
        let token = client.check_in("r2", 1).await.unwrap().tokens.remove(0);
        let messages = vec![sealed(i)];
        client
            .upload_sealed("r2", &[SealedUpload { token, messages }])
            .await
            .unwrap();
    }
    let client = running.client(&running.devices[0]);
    let started = Instant::now();
    while client.check_in("r2", 1).await.is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the round never closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(shared.lock().unwrap().received.is_empty());
    let error = client.check_in("r2", 1).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::ClosedRound));
    running.stop().await;
}

/// The error code of a refused request.
fn code<T>(result: Result<T, tally_client::ClientError>) -> Option<ErrorCode> {
    result.err().and_then(|e| e.code())
}

/// What a credential may do at the relay: a device sees and answers only its population's
/// rounds, checks in for itself alone and holds one token per round; a token is good for
/// one upload; no credential, a wrong one, or a browser page gets nothing; only an operator
/// enrolls devices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_credential_reaches_only_what_its_role_allows() {
    let (shared, url) = aggregator().await;
    let other = RoundQuery {
        population: "q".into(),
        ..query("r4", 1, 10, 600, Sampling::Device)
    };
    shared
        .lock()
        .unwrap()
        .rounds
        .extend([query("r3", 1, 10, 600, Sampling::Device), other]);
    let running = relay(&url, 1).await;
    let device = running.client(&running.devices[0]);
    let operator = running.client(&running.operator);
    published(&operator, "r4").await;
    published(&device, "r3").await;
    let ids: Vec<String> = device
        .open_rounds()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.round_id)
        .collect();
    assert_eq!(ids, ["r3"]);
    assert_eq!(
        code(device.check_in("r4", 1).await),
        Some(ErrorCode::Forbidden)
    );
    assert_eq!(
        code(device.check_in("r3", 2).await),
        Some(ErrorCode::Forbidden)
    );
    assert_eq!(
        code(device.check_in("r9", 1).await),
        Some(ErrorCode::UnknownRound)
    );
    let token = device.check_in("r3", 1).await.unwrap().tokens.remove(0);
    assert_eq!(
        device.check_in("r3", 1).await.unwrap().tokens,
        std::slice::from_ref(&token)
    );
    let upload = SealedUpload {
        token,
        messages: Vec::new(),
    };
    let first = device
        .upload_sealed("r3", std::slice::from_ref(&upload))
        .await
        .unwrap();
    assert_eq!(first.accepted, 1);
    let second = device.upload_sealed("r3", &[upload]).await.unwrap();
    assert_eq!(second.rejected[0].code, ErrorCode::ReusedToken);
    let stranger = running.client("tally_0123456789abcdef_00");
    assert_eq!(
        code(stranger.open_rounds().await),
        Some(ErrorCode::Unauthenticated)
    );
    let anonymous = Client::new(&running.url).unwrap();
    assert_eq!(
        code(anonymous.open_rounds().await),
        Some(ErrorCode::Unauthenticated)
    );
    assert_eq!(
        code(device.enroll_devices("p", 1).await),
        Some(ErrorCode::Forbidden)
    );
    let enrolled = operator.enroll_devices("p", 2).await.unwrap();
    let newcomer = running.client(&enrolled.tokens[0]);
    assert_eq!(newcomer.check_in("r3", 1).await.unwrap().tokens.len(), 1);
    let page = reqwest::Client::new()
        .get(format!("{}/v1/rounds", running.url))
        .header("origin", "https://example.com")
        .bearer_auth(&running.operator)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 403);
    running.stop().await;
}
