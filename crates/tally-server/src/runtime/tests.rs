//! Two coordinators on one database (as two replicas are) race for one population's budget: a
//! reservation is one database transaction, so together they admit exactly what one would. A
//! replica that lost a task's lease commits nothing for it: every dependent write checks the
//! lease's fence in its transaction.

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

/// The analyst of the tests' population.
fn analyst() -> Principal {
    Principal {
        id: "analyst".into(),
        role: Role::Analyst,
        populations: vec![POPULATION.into()],
    }
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
                Runtime::start(
                    store,
                    &Limits::default(),
                    AggregatorCoins::Os,
                    &Replication::default(),
                )
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
        let analyst = analyst();
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
    let analyst = analyst();
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
        let runtime = Runtime::start(
            store,
            &Limits::default(),
            AggregatorCoins::Os,
            &Replication::default(),
        )
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
                &Replication::default(),
            )
            .await
            .unwrap();
            assert_eq!(sampling(&runtime), expected, "{name}");
            runtime.shutdown().await;
        }
    }
}

/// The population of the lease tests: a budget for many tasks, a minimum cohort of one.
fn roomy_population() -> StoredPopulation {
    StoredPopulation {
        name: POPULATION.into(),
        epsilon: 100.0,
        delta: 1e-3,
        min_cohort: 1,
        max_task_epsilon: None,
        trust: TrustModel::SingleParty,
        allow_device_sampling: false,
        colluding_fraction: 0.0,
        task_bound: None,
        neighbours: tally_accounting::Neighbours::AddRemove,
        created_at: unix_now(),
    }
}

/// The lease tests' database at `url` (with [`roomy_population`]) and two replicas on it,
/// whose leases last a minute (the tests let them lapse by hand).
async fn two_replicas(url: &str) -> (Store, Arc<Runtime>, Arc<Runtime>) {
    let store = Store::open(url).await.unwrap();
    assert!(store.insert_population(&roomy_population()).await.unwrap());
    let replication = Replication {
        lease: Duration::from_secs(60),
        address: Some("http://127.0.0.1:9".into()),
    };
    let start = || async {
        Runtime::start(
            Store::open(url).await.unwrap(),
            &Limits::default(),
            AggregatorCoins::seeded(7),
            &replication,
        )
        .await
        .unwrap()
    };
    (store, start().await, start().await)
}

/// `count` devices upload a report each to the open round `round`, through `runtime`.
fn upload_reports(runtime: &Runtime, round: &Round, count: usize) {
    for device in 0..count {
        let who = Principal {
            id: format!("device-{device}"),
            role: Role::Device,
            populations: vec![POPULATION.into()],
        };
        let tokens = runtime.check_in(round, &who, 1).unwrap();
        let uploads = vec![tally_messages::Upload {
            token: tokens[0].clone(),
            report: Some("word".into()),
        }];
        let outcome = round.upload(&who.id, uploads).unwrap();
        assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
    }
}

/// The round `runtime` drives for `task`, if any.
async fn driven_round(runtime: &Runtime, task: &str) -> Option<Arc<Round>> {
    runtime
        .tasks
        .lock()
        .await
        .get(task)
        .and_then(|t| t.round.clone())
}

/// Replica A drives a task; its lease lapses (A stalled: stopped, partitioned, its database
/// sessions killed) and replica B takes the task over. A, resuming, closes its round below the
/// minimum cohort: the fence refuses the close and the next round A would open, and A drops
/// the task without marking it failed. Then B stalls and A takes the task back; B, resuming
/// with its round full of reports, closes it: its release and debit are refused, and A's round
/// releases the task once, with one debit. Without the fence, A opens a round of its own
/// beside B's after the short close, and two replicas drive one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_lost_its_lease_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let analyst = analyst();
    for (name, url) in databases(&dir).await {
        let (store, a, b) = two_replicas(&url).await;
        let small_cohort = TaskSpec {
            rounds: RoundPolicy {
                min_cohort: 3,
                ..RoundPolicy::default()
            },
            ..spec()
        };
        let task = a.create_task(small_cohort, &analyst).await.unwrap().id;
        let a_round = driven_round(&a, &task).await.expect("A drives the task");
        b.share_work().await.unwrap();
        assert!(
            driven_round(&b, &task).await.is_none(),
            "{name}: B took a live lease"
        );
        // A stalls past its lease, and B takes the task over.
        store.expire_leases().await.unwrap();
        b.share_work().await.unwrap();
        let b_round = driven_round(&b, &task).await.expect("B took the task over");
        assert_ne!(b_round.query.round_id, a_round.query.round_id);
        // A resumes, and its round closes empty: below the minimum cohort.
        a.close_round(&a_round.query.round_id).await;
        assert!(
            a.tasks.lock().await.is_empty(),
            "{name}: A still drives the task"
        );
        let open: Vec<String> = store
            .rounds(&task)
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.state == RoundState::Open)
            .map(|r| r.id)
            .collect();
        assert_eq!(open.len(), 1, "{name}: open rounds {open:?}");
        assert_eq!(open[0], b_round.query.round_id, "{name}");
        // B stalls in turn with its round full, and A takes the task back.
        upload_reports(&b, &b_round, 3);
        store.expire_leases().await.unwrap();
        a.share_work().await.unwrap();
        let a_round = driven_round(&a, &task).await.expect("A took the task back");
        b.close_round(&b_round.query.round_id).await;
        let info = a.task(&task, &analyst).await.unwrap();
        assert_eq!(info.state, TaskState::Running, "{name}: {info:?}");
        assert_eq!(info.rounds_released, 0, "{name}: B released past its lease");
        assert!(
            store.debits().await.unwrap().is_empty(),
            "{name}: B debited"
        );
        assert!(
            b.tasks.lock().await.is_empty(),
            "{name}: B still drives the task"
        );
        // A's round releases the task, once.
        upload_reports(&a, &a_round, 3);
        a.close_round(&a_round.query.round_id).await;
        let info = a.task(&task, &analyst).await.unwrap();
        assert_eq!(info.state, TaskState::Finished, "{name}: {info:?}");
        assert_eq!(info.rounds_released, 1, "{name}");
        assert_eq!(store.debits().await.unwrap().len(), 1, "{name}");
        assert!(store.result(&task).await.unwrap().is_some(), "{name}");
        a.shutdown().await;
        b.shutdown().await;
    }
}

/// A replica's lease tick drops a task whose lease another replica took: its open round
/// leaves memory at once (devices uploading to it are refused), before any close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stops_driving_a_task_at_the_tick_that_finds_its_lease_gone() {
    let dir = tempfile::tempdir().unwrap();
    let analyst = analyst();
    for (name, url) in databases(&dir).await {
        let (store, a, b) = two_replicas(&url).await;
        let task = a.create_task(spec(), &analyst).await.unwrap().id;
        let a_round = driven_round(&a, &task).await.unwrap();
        store.expire_leases().await.unwrap();
        b.share_work().await.unwrap();
        assert!(driven_round(&b, &task).await.is_some(), "{name}");
        a.share_work().await.unwrap();
        assert!(a.tasks.lock().await.is_empty(), "{name}: A kept the task");
        let round_id = &a_round.query.round_id;
        assert!(
            !a.open.read().unwrap().contains_key(round_id),
            "{name}: A's round stayed open"
        );
        // A now lists B's round and forwards its requests there.
        let rounds = a.open_rounds(&analyst);
        assert_eq!(rounds.len(), 1, "{name}");
        assert_ne!(&rounds[0].round_id, round_id, "{name}");
        a.shutdown().await;
        b.shutdown().await;
    }
}
