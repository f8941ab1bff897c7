//! Aggregator-side sampling through the API: a task samples at the aggregator unless it asks
//! its devices to, its rounds tell devices to report every time, and the release counts a
//! Poisson sample of the reports rather than every one; 19 enrolled devices that always
//! report a victim's secret at τ = 20 learn whether the victim holds it under device-side
//! sampling, and nothing under aggregator-side sampling; so only the operator can allow
//! device-side sampling, per population.

mod common;

use axum::http::Method;
use axum::http::StatusCode;
use common::*;
use tally_messages::{
    Budget, HistogramRelease, PROTOCOL_VERSION, PopulationSpec, Role, RoundPolicy, Sampling,
    TaskInfo, TrustModel,
};

/// Runs a histogram round at rate 0.5 in which 400 devices all report "a", and returns the
/// round's sampling and the released count of "a".
async fn round_of_400(sampling: Option<Sampling>) -> (Sampling, u64) {
    let db = databases().await.remove(0);
    let (server, router, _) = start_seeded(&db.url, (10.0, 1e-5), 400).await;
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
    // about half the reports (Bin(400, 0.5), its coins seeded: all 400 with probability
    // 2^-400).
    let (sampling, count) = round_of_400(None).await;
    assert_eq!(sampling, Sampling::Aggregator);
    assert!((100..300).contains(&count), "{count}");
    // Asked for, device-side sampling counts every report as sampled by its device.
    let (sampling, count) = round_of_400(Some(Sampling::Device)).await;
    assert_eq!(sampling, Sampling::Device);
    assert_eq!(count, 400);
}

/// One round of the attack over HTTP with enrolled devices: device 0 is the victim (taking
/// part when `victim`), devices 1 to 19 are dishonest and upload the victim's secret every
/// round whatever the query says, devices 20 to 29 are honest with items of their own. Honest
/// devices answer with tally-client's `Responder` (the real device code) and coins seeded
/// from `seed`. Returns whether the secret was released and whether the victim reported it.
async fn attack_round(
    router: &axum::Router,
    devices: &[String],
    sampling: Sampling,
    victim: bool,
    seed: u64,
) -> (bool, bool) {
    let taking_part = if victim { devices } else { &devices[1..] };
    let spec = attack_task(POPULATION, sampling, taking_part.len() as u64);
    let task: TaskInfo = post(router, "/v1/tasks", &spec).await;
    let round = open_round(router, &task.id).await;
    let responder = tally_client::Responder::new(&round).unwrap();
    let mut coins = tally_client::device_rng(Some(seed));
    let mut victim_reported = false;
    for (i, device) in devices.iter().enumerate() {
        if i == 0 && !victim {
            continue;
        }
        let (status, text) = call_with(
            router,
            device,
            Method::POST,
            &format!("/v1/rounds/{}/check-in", round.round_id),
            Some(r#"{"version":1}"#.into()),
        )
        .await;
        assert!(status.is_success(), "{text}");
        let grant: tally_messages::CheckInGrant = serde_json::from_str(&text).unwrap();
        let report = match i {
            0 => responder.respond_with_rng("secret", &mut coins),
            1..20 => Some("secret".to_owned()),
            _ => responder.respond_with_rng(&format!("other-{i}"), &mut coins),
        };
        victim_reported |= i == 0 && report.is_some();
        // Each device uploads with its own credential: its token is good for no other.
        let batch = tally_messages::UploadBatch {
            version: tally_messages::PROTOCOL_VERSION,
            uploads: vec![tally_messages::Upload {
                token: grant.tokens[0].clone(),
                report,
            }],
        };
        let (status, text) = call_with(
            router,
            device,
            Method::POST,
            &format!("/v1/rounds/{}/uploads", round.round_id),
            Some(serde_json::to_string(&batch).unwrap()),
        )
        .await;
        assert!(status.is_success(), "{text}");
    }
    let release: HistogramRelease =
        serde_json::from_str(&released(router, &task.id).await).unwrap();
    let leaked = release.items.iter().any(|i| i.item == "secret");
    (leaked, victim_reported)
}

/// The attack's task: one S&T round at τ = 20 over `population`, its rounds closing at
/// `cohort` uploads.
fn attack_task(population: &str, sampling: Sampling, cohort: u64) -> tally_messages::TaskSpec {
    let policy = RoundPolicy {
        min_cohort: 1,
        cohort_target: Some(cohort),
        ..RoundPolicy::default()
    };
    let kind = tally_messages::TaskKind::Histogram {
        mechanism: tally_messages::HistogramMechanism::SampleThreshold,
        sampling_rate: None,
        threshold: Some(20),
    };
    tally_messages::TaskSpec {
        population: population.into(),
        sampling,
        ..spec(kind, 1.0, policy)
    }
}

/// The defence against the attack below: device-side sampling is the operator's choice per
/// population, off by default, so an analyst with 19 colluding enrolled devices cannot switch
/// it on for a task: the attack's task is refused at creation with a message naming the
/// operator's flag, and the same task sampling at the aggregator is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyst_cannot_switch_on_device_sampling_for_colluding_devices() {
    for db in databases().await {
        let (server, router, _) = start_seeded(&db.url, (1e4, 0.5), 13).await;
        let guarded = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: "guarded".into(),
            budget: Budget {
                epsilon: 1e4,
                delta: 0.5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: false,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        // The operator's default, as `tally population create` without the flag.
        let default: PopulationSpec = serde_json::from_value(serde_json::json!({
            "version": PROTOCOL_VERSION,
            "name": "guarded",
            "budget": {"epsilon": 1e4, "delta": 0.5},
        }))
        .unwrap();
        assert_eq!(default, guarded);
        tally_server::create_population(&db.url, &guarded)
            .await
            .unwrap();
        let analyst = credential(&db.url, Role::Analyst, "mallory", &["guarded"]).await;
        // The victim and the 19 colluders are enrolled.
        let devices = enroll(&router, "guarded", 20).await;
        assert_eq!(devices.len(), 20);
        let create = |sampling| {
            let body = serde_json::to_string(&attack_task("guarded", sampling, 20)).unwrap();
            call_with(&router, &analyst, Method::POST, "/v1/tasks", Some(body))
        };
        let (status, text) = create(Sampling::Device).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}: {text}",
            db.name
        );
        assert!(text.contains("--allow-device-sampling"), "{text}");
        let (status, text) = create(Sampling::Aggregator).await;
        assert_eq!(status, StatusCode::CREATED, "{}: {text}", db.name);
        server.shutdown().await;
    }
}

/// The attack through the API with enrolled devices, every coin seeded (the devices' and the
/// aggregator's): under `--sampling device` the secret is released exactly when the victim's
/// own coin came up (and never without the victim); under aggregator-side sampling, never in
/// 200 rounds (all 20 holders would have to be kept,
/// `p_s^20 ≈ 8e-10` per round at `p_s ≈ 0.35`). The same attack runs 200 rounds each way on
/// the aggregator itself in `aggregator::tests::dishonest_devices_cannot_choose_to_be_sampled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_reporting_devices_reveal_nothing_under_aggregator_sampling() {
    const TRIALS: u64 = 200;
    /// Rounds of the device-side attack, enough to see it.
    const SHOWN: u64 = 30;
    let db = databases().await.remove(0);
    // The aggregator's coins are fixed too, so that every run sees the same rounds. The
    // population allows device-side sampling (`common::population`): the operator's choice.
    let (server, router, _) = start_seeded(&db.url, (1e4, 0.5), 13).await;
    let devices = enroll(&router, POPULATION, 30).await;
    let mut device_side = 0;
    for seed in 0..SHOWN {
        let (leaked, victim_reported) =
            attack_round(&router, &devices, Sampling::Device, true, seed).await;
        assert_eq!(leaked, victim_reported, "seed {seed}");
        device_side += u64::from(leaked);
    }
    // About p_s · 30 ≈ 10 rounds tell that the victim holds the secret.
    assert!(device_side >= 3, "{device_side} of {SHOWN}");
    for seed in 0..10 {
        let (leaked, _) = attack_round(&router, &devices, Sampling::Device, false, seed).await;
        assert!(!leaked, "seed {seed}");
    }
    for seed in 0..TRIALS {
        let (leaked, _) = attack_round(&router, &devices, Sampling::Aggregator, true, seed).await;
        assert!(!leaked, "seed {seed}");
    }
    server.shutdown().await;
}
