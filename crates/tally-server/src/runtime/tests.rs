//! Two coordinators on one database (as two server processes would be, past the writer lease)
//! race for one population's budget: a reservation is one database transaction, so together
//! they admit exactly what one would.

use sqlx::Connection;
use tally_accounting::composition::compose_basic;
use tally_messages::{HistogramMechanism, PrivacyTarget, RoundPolicy, Sampling, TaskKind};

use super::*;
use crate::store::StoredPopulation;

/// How many tasks the population's budget admits.
const ADMITS: usize = 4;

/// How many creations each coordinator attempts.
const ATTEMPTS: usize = 3 * ADMITS;

const POPULATION: &str = "raced";

/// A fresh database: a SQLite file always, and one on the PostgreSQL server at
/// `TALLY_TEST_POSTGRES_URL` when the build saw it (`cfg(tally_postgres)`, `build.rs`; then a
/// missing variable fails the test).
async fn databases(dir: &tempfile::TempDir) -> Vec<(&'static str, String)> {
    let mut urls = vec![(
        "sqlite",
        format!("sqlite://{}", dir.path().join("tally.db").display()),
    )];
    if cfg!(tally_postgres) {
        let base = std::env::var("TALLY_TEST_POSTGRES_URL")
            .expect("TALLY_TEST_POSTGRES_URL names the PostgreSQL server: source .ci/postgres.sh");
        let name = format!("tally_race_{:016x}", rand::random::<u64>());
        let mut admin = sqlx::PgConnection::connect(&base).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        let (prefix, _) = base.rsplit_once('/').unwrap();
        urls.push(("postgres", format!("{prefix}/{name}")));
    }
    urls
}

/// The race below ran on PostgreSQL as well as SQLite: ignored, with the reason shown, when the
/// build had no PostgreSQL server (the race then passes on SQLite alone).
#[tokio::test]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: the coordinators' race ran on SQLite only; source .ci/postgres.sh"
)]
async fn the_race_ran_on_postgres_too() {
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<_> = databases(&dir)
        .await
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(stores, ["sqlite", "postgres"]);
}

/// A one-round S&T histogram: without a declared pair the ledger charges it its own `(ε, δ)`
/// by basic composition, so the budget admits a known number of them.
fn spec() -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: POPULATION.into(),
        expected_population: 1000,
        privacy: PrivacyTarget {
            epsilon: 1.0,
            delta: 1e-7,
            neighbours: tally_accounting::Neighbours::AddRemove,
            analysis: tally_accounting::sample_threshold::Analysis::Tight,
        },
        kind: TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: Some(0.2),
            threshold: None,
        },
        rounds: RoundPolicy::default(),
        sampling: Sampling::Aggregator,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_coordinators_on_one_database_admit_only_what_the_budget_admits() {
    let dir = tempfile::tempdir().unwrap();
    let (_, guarantee) = Engine::build(&spec()).unwrap();
    let one = (guarantee.epsilon, guarantee.delta);
    let budget = compose_basic(&[one; ADMITS]).unwrap();
    // One task more is over the budget by the ledger's basic composition.
    let over = compose_basic(&[one; ADMITS + 1]).unwrap();
    assert!(over.0 > budget.0);
    for (name, url) in databases(&dir).await {
        let mut coordinators = Vec::new();
        for _ in 0..2 {
            // Each its own pool, as each process has.
            let store = Store::open(&url).await.unwrap();
            coordinators.push(
                Runtime::start(store, &Limits::default(), AggregatorCoins::Os)
                    .await
                    .unwrap(),
            );
        }
        let population = StoredPopulation {
            name: POPULATION.into(),
            epsilon: budget.0,
            delta: budget.1,
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: false,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_accounting::Neighbours::AddRemove,
            created_at: unix_now(),
        };
        assert!(
            Store::open(&url)
                .await
                .unwrap()
                .insert_population(&population)
                .await
                .unwrap()
        );
        let analyst = Principal {
            id: "analyst".into(),
            role: Role::Analyst,
            populations: vec![POPULATION.into()],
        };
        let mut racing = tokio::task::JoinSet::new();
        for _ in 0..ATTEMPTS {
            for coordinator in &coordinators {
                let (coordinator, analyst) = (Arc::clone(coordinator), analyst.clone());
                racing.spawn(async move { coordinator.create_task(spec(), &analyst).await });
            }
        }
        let mut admitted = 0;
        while let Some(outcome) = racing.join_next().await {
            match outcome.unwrap() {
                Ok(_) => admitted += 1,
                Err(e) => assert_eq!(e.code, ErrorCode::BudgetExceeded, "{name}: {e:?}"),
            }
        }
        assert_eq!(
            admitted, ADMITS,
            "{name}: tasks admitted on a budget for {ADMITS}"
        );
        let stored = Store::open(&url).await.unwrap().tasks().await.unwrap();
        assert_eq!(stored.len(), ADMITS, "{name}");
        for coordinator in coordinators {
            coordinator.shutdown().await;
        }
    }
}

/// A running task that asks its devices to sample, stored before its population had a sampling
/// policy (no row in `population_device_sampling`: not allowed), samples at the aggregator
/// once the server restarts; on a population that allows it, it keeps sampling on the devices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_device_sampled_task_samples_at_the_aggregator_without_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let analyst = Principal {
        id: "analyst".into(),
        role: Role::Analyst,
        populations: vec![POPULATION.into()],
    };
    for (name, url) in databases(&dir).await {
        let store = Store::open(&url).await.unwrap();
        let population = StoredPopulation {
            name: POPULATION.into(),
            epsilon: 100.0,
            delta: 1e-3,
            min_cohort: 1,
            max_task_epsilon: None,
            trust: TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_accounting::Neighbours::AddRemove,
            created_at: unix_now(),
        };
        assert!(store.insert_population(&population).await.unwrap());
        let runtime = Runtime::start(store, &Limits::default(), AggregatorCoins::Os)
            .await
            .unwrap();
        let device_sampled = TaskSpec {
            sampling: Sampling::Device,
            ..spec()
        };
        runtime.create_task(device_sampled, &analyst).await.unwrap();
        let sampling = |runtime: &Runtime| {
            let rounds = runtime.open_rounds(&analyst);
            assert_eq!(rounds.len(), 1, "{name}");
            rounds[0].sampling
        };
        assert_eq!(sampling(&runtime), Sampling::Device, "{name}");
        runtime.shutdown().await;
        drop(runtime);
        // Restarted as it stands, the task keeps its devices' sampling; restarted on a
        // database older than the policy (no row), it samples at the aggregator.
        for (older, expected) in [(false, Sampling::Device), (true, Sampling::Aggregator)] {
            if older {
                let mut database = sqlx::AnyConnection::connect(&url).await.unwrap();
                sqlx::query("DELETE FROM population_device_sampling")
                    .execute(&mut database)
                    .await
                    .unwrap();
            }
            let runtime = Runtime::start(
                Store::open(&url).await.unwrap(),
                &Limits::default(),
                AggregatorCoins::Os,
            )
            .await
            .unwrap();
            assert_eq!(sampling(&runtime), expected, "{name}");
            runtime.shutdown().await;
        }
    }
}
