//! Colluding devices in shuffle tasks through the API: a shuffle-model guarantee holds only
//! while the other devices' randomness hides each device's report, so over a population whose
//! operator set `--colluding-fraction 0.1` a shuffled-GRR task is charged the guarantee an
//! honest device keeps when a tenth of the devices colludes with the analyst (the blanket of
//! the 900 honest reports), and refused when that does not fit the budget, although its own
//! `ε` would.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use tally_messages::{
    Budget, DomainHistogramMechanism, LedgerBalance, PROTOCOL_VERSION, PopulationSpec,
    PublicDomain, Role, RoundPolicy, TaskInfo, TaskKind, TaskSpec, TrustModel,
};
use tally_protocol::Engine;

const COLLUDING: &str = "colluding";

/// A shuffled-GRR task over `0..2` for the 1,000 expected devices at `(epsilon, 1e-6)` on
/// `population`.
fn shuffled_grr(population: &str, epsilon: f64) -> TaskSpec {
    let kind = TaskKind::DomainHistogram {
        mechanism: DomainHistogramMechanism::ShuffledGrr,
        domain: PublicDomain::Integers(2),
        public_coins: None,
    };
    let policy = RoundPolicy {
        min_cohort: 1000,
        cohort_target: Some(1000),
        ..RoundPolicy::default()
    };
    TaskSpec {
        population: population.into(),
        ..replace_one(spec(kind, epsilon, policy))
    }
}

/// The guarantee a task keeps against a tenth of its devices colluding, by the registry's own
/// analysis (what the server charges and publishes).
fn at_a_tenth(spec: &TaskSpec) -> (f64, f64) {
    let (engine, _) = Engine::build(spec).unwrap();
    let collusion = engine.collusion(0.1).unwrap().expect("a shuffle task");
    (collusion.epsilon, collusion.delta)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_population_tolerating_colluders_charges_shuffle_tasks_their_guarantee_against_them() {
    let wide = shuffled_grr(COLLUDING, 1.0);
    let narrow = shuffled_grr(COLLUDING, 0.5);
    let (wide_epsilon, _) = at_a_tenth(&wide);
    let (narrow_epsilon, narrow_delta) = at_a_tenth(&narrow);
    // A budget the task at ε = 1 fits while every device is honest, but not against a tenth
    // of them colluding; the task at ε = 0.5 fits either way.
    let budget = (1.0 + wide_epsilon) / 2.0;
    assert!(
        1.0 < budget && narrow_epsilon < budget,
        "ε = 1 → {wide_epsilon}, ε = 0.5 → {narrow_epsilon}, budget {budget}"
    );
    for db in databases().await {
        let (server, router, _) = start(&db.url, (budget, 1e-5)).await;
        let tolerating = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: COLLUDING.into(),
            budget: Budget {
                epsilon: budget,
                delta: 1e-5,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.1,
            task_bound: None,
            neighbours: tally_messages::Neighbours::ReplaceOne,
        };
        let created = tally_server::create_population(&db.url, &tolerating)
            .await
            .unwrap();
        assert_eq!(created.colluding_fraction.to_bits(), 0.1_f64.to_bits());
        let analyst = credential(&db.url, Role::Analyst, "mallory", &[COLLUDING]).await;
        let create = |spec: &TaskSpec| {
            let body = serde_json::to_string(spec).unwrap();
            call_with(&router, &analyst, Method::POST, "/v1/tasks", Some(body))
        };

        // Over a population that assumes honest devices the task at ε = 1 fits.
        let honest_analyst = swapped(&db.url, (budget, 1e-5)).await;
        let honest: TaskInfo = post_as(
            &router,
            &honest_analyst,
            "/v1/tasks",
            &shuffled_grr(SWAPPED, 1.0),
        )
        .await;
        let floor = honest.guarantee.collusion.expect("a shuffle task").floor;
        assert!(floor.is_some_and(|floor| floor > 1.0), "{floor:?}");

        // Against a tenth of the devices colluding it does not, and the refusal says why.
        let (status, text) = create(&wide).await;
        assert_eq!(status, StatusCode::CONFLICT, "{}: {text}", db.name);
        assert!(
            text.contains("fraction 0.1") && text.contains("left of"),
            "{}: {text}",
            db.name
        );
        // The guarantee it was charged and the budget, for people: four digits, the charge
        // rounded up, the budget down.
        let shown = tally_protocol::shown::privacy_number(wide_epsilon);
        assert!(
            shown.len() < wide_epsilon.to_string().len()
                && text.contains(&format!("keeps against them, ε = {shown}, δ = "))
                && text.contains(&format!("the task needs (ε = {shown}, δ = 1.000e-6)"))
                && !text.contains(&wide_epsilon.to_string())
                && !text.contains(&budget.to_string()),
            "{}: {text}",
            db.name
        );

        // The narrower task fits, and is charged its guarantee against the colluders.
        let (status, text) = create(&narrow).await;
        assert_eq!(status, StatusCode::CREATED, "{}: {text}", db.name);
        let task: TaskInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(task.guarantee.epsilon.to_bits(), 0.5_f64.to_bits());
        let collusion = task.guarantee.collusion.expect("a shuffle task");
        assert_eq!(collusion.colluding_fraction.to_bits(), 0.1_f64.to_bits());
        assert_eq!(collusion.epsilon, Some(narrow_epsilon));
        assert_eq!(collusion.delta.to_bits(), narrow_delta.to_bits());
        let (status, text) = call_with(&router, &analyst, Method::GET, "/v1/ledger", None).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let ledger: Vec<LedgerBalance> = serde_json::from_str(&text).unwrap();
        let balance = ledger
            .iter()
            .find(|b| b.population == COLLUDING)
            .expect("the population's balance");
        assert_eq!(balance.colluding_fraction.to_bits(), 0.1_f64.to_bits());
        assert_eq!(
            (balance.reserved.epsilon, balance.reserved.delta),
            (narrow_epsilon, narrow_delta),
            "{}",
            db.name
        );
        server.shutdown().await;
    }
}
