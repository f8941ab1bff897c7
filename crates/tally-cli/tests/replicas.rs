//! Replicas of `tally serve` (over TLS, with credentials) on one PostgreSQL database share a
//! task's rounds: devices reach any replica, which forwards a round's check-ins and uploads to
//! the replica driving it. One replica is killed (SIGKILL) mid-round, or stopped (SIGSTOP) with
//! its database sessions killed: another takes the task over once its lease lapses, and the
//! task finishes with exactly one release per round and one debit; the stopped replica,
//! resuming, commits nothing for it. Replicas of `tally relay` on one PostgreSQL database
//! share the aggregator's rounds the same way: the one holding a round is killed mid-round,
//! another takes it over, and the task finishes with one release and one debit.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

// Of the starting helpers, the server process uses only the command, the free port and a
// PostgreSQL database.
#[allow(dead_code)]
#[path = "common/listening.rs"]
mod listening;
// Of the server process's helpers, the replicas' tests start and finish their own.
#[allow(dead_code)]
#[path = "common/server.rs"]
mod server;

use listening::{free_port, postgres_database, relay_command, spawn_listening};
use server::{
    COHORT, Invariants, ServerProcess, Tls, Tokens, check_in, spec, task_kind, upload_each, uploads,
};
use tally_client::{AggregatorKey, Client};
use tally_messages::{
    Budget, CredentialSpec, PROTOCOL_VERSION, PopulationSpec, Role, RoundQuery, SealedUpload,
    TaskInfo, TaskState,
};

/// Each replica's lease: a second, so that a takeover comes within the test's patience.
const LEASE: [&str; 2] = ["--lease-duration", "1"];

/// The open round of `task` as `device` lists it, once it is `not` (a round that ended).
async fn next_round(device: &Client, task: &str, not: Option<&str>) -> RoundQuery {
    let started = Instant::now();
    loop {
        let rounds = device.open_rounds().await.unwrap();
        if let Some(round) = rounds
            .into_iter()
            .find(|r| r.task_id == task && Some(r.round_id.as_str()) != not)
        {
            return round;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no new round of task {task}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Feeds `task`'s rounds through `devices` (of one replica) until it ends, and returns it.
async fn finish(analyst: &Client, devices: &[Client], task: &str, invariants: &mut Invariants) {
    let started = Instant::now();
    loop {
        let info: TaskInfo = analyst.task(task).await.unwrap();
        if info.state != TaskState::Running {
            assert_eq!(info.state, TaskState::Finished, "{info:?}");
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "task {task} does not finish: {info:?}"
        );
        if let Some(round) = devices[0]
            .open_rounds()
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.task_id == task)
        {
            let tokens = check_in(devices, &round.round_id).await;
            let all = uploads(&round, tokens, &mut invariants.secrets);
            // The round may close, or move to another replica, under us: the next look
            // finds where it went.
            let _ = upload_each(devices, &round.round_id, &all).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks the ledger and results of `tokens`' population through `analyst`, then that `task`
/// released each of its three levels once and was debited once.
async fn check_once(analyst: &Client, task: &str, invariants: &mut Invariants) {
    invariants.check(analyst, None).await;
    let info = analyst.task(task).await.unwrap();
    check_finished_once(analyst, &info, 3, "\"ab$\"").await;
}

/// Checks that the task `info` shows finished after `rounds` releases, was debited once, and
/// that its result names `item`.
async fn check_finished_once(analyst: &Client, info: &TaskInfo, rounds: u32, item: &str) {
    assert_eq!(info.state, TaskState::Finished, "{info:?}");
    assert_eq!(info.rounds_released, rounds, "{info:?}");
    let ledger = analyst.ledger().await.unwrap();
    let debits = ledger[0]
        .entries
        .iter()
        .filter(|e| e.task_id == info.id)
        .count();
    assert_eq!(debits, 1, "{ledger:?}");
    let result = analyst.result_text(&info.id).await.unwrap();
    assert!(result.contains(item), "{result}");
}

/// Two replicas on a new PostgreSQL database, and a three-level TrieHH++ task that replica A
/// created, and so drives.
struct TwoReplicas {
    a: ServerProcess,
    b: ServerProcess,
    tokens: Tokens,
    task: String,
    /// Holds the replicas' certificate.
    _scratch: tempfile::TempDir,
}

/// [`TwoReplicas`], A's database sessions named `application`.
async fn two_replicas(application: &str) -> TwoReplicas {
    let db = postgres_database("tally_replicas");
    let scratch = tempfile::tempdir().unwrap();
    let tls = Tls::create(scratch.path());
    let tokens = Tokens::create(&db, "replicas", (1000.0, 0.5)).await;
    let a_db = format!("{db}?application_name={application}");
    let mut a = ServerProcess::start_with(&a_db, &tls, &LEASE);
    let mut b = ServerProcess::start_with(&db, &tls, &LEASE);
    let (analyst_a, analyst_b) = (a.client(&tokens.analyst), b.client(&tokens.analyst));
    a.wait_ready(&analyst_a).await;
    b.wait_ready(&analyst_b).await;
    let task = analyst_a
        .create_task(&spec(&tokens.population, task_kind(false)))
        .await
        .unwrap()
        .id;
    TwoReplicas {
        a,
        b,
        tokens,
        task,
        _scratch: scratch,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn two_replicas_finish_a_task_across_one_killed_mid_round() {
    let TwoReplicas {
        a,
        b,
        tokens,
        task,
        _scratch,
    } = two_replicas("tally_a").await;
    let analyst_b = b.client(&tokens.analyst);
    let mut invariants = Invariants::default();
    // The devices reach B alone: B lists A's round and forwards their requests to A, whose
    // round takes its whole cohort and releases the first level.
    let devices = b.devices(&tokens);
    let first = next_round(&devices[0], &task, None).await;
    let issued = check_in(&devices, &first.round_id).await;
    let all = uploads(&first, issued, &mut invariants.secrets);
    upload_each(&devices, &first.round_id, &all).await.unwrap();
    let second = next_round(&devices[0], &task, Some(&first.round_id)).await;
    assert_eq!(second.round, 2, "{second:?}");
    // Half the second level's cohort reaches A (through B), and A is killed.
    let issued = check_in(&devices, &second.round_id).await;
    let all = uploads(&second, issued, &mut invariants.secrets);
    upload_each(&devices, &second.round_id, &all[..all.len() / 2])
        .await
        .unwrap();
    a.kill();
    // B takes the task over once A's lease lapses, and runs the level again.
    let again = next_round(&devices[0], &task, Some(&second.round_id)).await;
    assert_eq!(again.round, 2, "{again:?}");
    finish(&analyst_b, &devices, &task, &mut invariants).await;
    check_once(&analyst_b, &task, &mut invariants).await;
    b.kill();
}

/// A `tally relay` process with leases of a second ([`LEASE`]).
struct RelayProcess {
    child: Child,
    url: String,
}

impl RelayProcess {
    /// `tally relay` on a free port over the database `db`, relaying to the aggregator at
    /// `aggregator` (whose certificate is `ca`) with the relay credential `token`.
    fn start(db: &str, aggregator: &str, token: &str, ca: &Path) -> Self {
        let port = free_port();
        let mut command = relay_command(db, port, aggregator, token);
        command.args(LEASE).arg("--aggregator-ca-cert").arg(ca);
        Self {
            child: spawn_listening(command, port),
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// A client of the relay with `token`.
    fn client(&self, token: &str) -> Client {
        Client::new(&self.url).unwrap().with_token(token)
    }
}

impl Drop for RelayProcess {
    /// SIGKILL: no shutdown code runs (and a test that fails leaves no relay behind).
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Where the relay replica holding round `id` takes requests, and its lease's epoch, as the
/// relays' database `db` says.
fn relay_holder(db: &str, id: &str) -> Option<(String, i64)> {
    let read = Command::new("psql")
        .args([
            db,
            "-tAc",
            &format!(
                "SELECT p.address || ' ' || r.epoch FROM relay_rounds r \
                 JOIN replicas p ON p.id = r.holder WHERE r.round_id = '{id}'"
            ),
        ])
        .output()
        .unwrap();
    assert!(read.status.success(), "{read:?}");
    let line = String::from_utf8_lossy(&read.stdout).trim().to_owned();
    let (address, epoch) = line.split_once(' ')?;
    Some((address.to_owned(), epoch.parse().unwrap()))
}

/// Waits until the relays' database `db` says that a replica holds round `id` (one whose
/// address is `at`, if given); its address and epoch.
async fn wait_relay_holder(db: &str, id: &str, at: Option<&str>) -> (String, i64) {
    let started = Instant::now();
    loop {
        if let Some((address, epoch)) = relay_holder(db, id)
            && at.is_none_or(|at| at == address)
        {
            return (address, epoch);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no relay held round {id} (at {at:?})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Each of `devices` checks in for round `round` and uploads "ab", sealed to `key`; returns
/// how many uploads were accepted.
async fn upload_sealed_each(devices: &[Client], round: &RoundQuery, key: &AggregatorKey) -> u32 {
    let sealer = key.sealer(round);
    let mut accepted = 0;
    for device in devices {
        let token = device
            .check_in(&round.round_id, 1)
            .await
            .unwrap()
            .tokens
            .remove(0);
        let messages = sealer.seal(vec!["ab".to_owned()]);
        let receipt = device
            .upload_sealed(&round.round_id, &[SealedUpload { token, messages }])
            .await
            .unwrap();
        accepted += receipt.accepted;
    }
    accepted
}

/// Two relays on one PostgreSQL database in front of one aggregator, for a split-trust
/// population whose [`COHORT`] devices are enrolled at the relays. Half the round's devices
/// upload through the replica not holding the round, which forwards them to the holder; the
/// holder is killed (SIGKILL), its uploads gone with its memory; the other takes the round
/// over once the lease lapses, every device uploads there, and the task finishes with one
/// release and one debit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn two_relays_finish_a_round_across_its_holder_killed_mid_round() {
    let scratch = tempfile::tempdir().unwrap();
    let tls = Tls::create(scratch.path());
    let db = format!("sqlite://{}", scratch.path().join("tally.db").display());
    let relays_db = postgres_database("tally_relays");
    let population = "split";
    let spec_of_population = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: population.into(),
        budget: Budget {
            epsilon: 10.0,
            delta: 1e-5,
        },
        min_cohort: 1,
        max_task_epsilon: None,
        trust: tally_messages::TrustModel::Split,
        allow_device_sampling: true,
        colluding_fraction: 0.0,
        task_bound: None,
        neighbours: tally_messages::Neighbours::AddRemove,
    };
    tally_server::create_population(&db, &spec_of_population)
        .await
        .unwrap();
    let credential = |role: Role| CredentialSpec {
        version: PROTOCOL_VERSION,
        role,
        name: format!("{role:?}"),
        populations: vec![population.into()],
    };
    let analyst = tally_server::create_credential(&db, &credential(Role::Analyst))
        .await
        .unwrap()
        .token;
    let relay_token = tally_server::create_credential(&db, &credential(Role::Relay))
        .await
        .unwrap()
        .token;
    let devices = tally_relay::enroll_devices(&relays_db, population, COHORT)
        .await
        .unwrap();
    let mut aggregator = ServerProcess::start(&db, &tls);
    let analyst = aggregator.client(&analyst);
    aggregator.wait_ready(&analyst).await;
    let url = aggregator.client("").base_url().to_owned();
    let relays = [
        RelayProcess::start(&relays_db, &url, &relay_token, tls.ca_file()),
        RelayProcess::start(&relays_db, &url, &relay_token, tls.ca_file()),
    ];
    let task = analyst
        .create_task(&spec(population, task_kind(true)))
        .await
        .unwrap()
        .id;
    let round = next_round(&relays[0].client(&devices[0]), &task, None).await;
    next_round(&relays[1].client(&devices[0]), &task, None).await;
    let (address, epoch) = wait_relay_holder(&relays_db, &round.round_id, None).await;
    assert_eq!(epoch, 1);
    let [first, second] = relays;
    let (holder, other) = if address == first.url {
        (first, second)
    } else {
        (second, first)
    };
    let key = AggregatorKey::fetch(&aggregator.client(""), &other.client(&devices[0]))
        .await
        .unwrap();
    let clients: Vec<Client> = devices.iter().map(|t| other.client(t)).collect();
    // Half the devices upload through the other replica, which forwards them to the holder.
    let half = clients.len() / 2;
    assert_eq!(
        upload_sealed_each(&clients[..half], &round, &key).await,
        u32::try_from(half).unwrap()
    );
    drop(holder);
    // The other replica takes the round over once the lease lapses; every device uploads
    // there (those whose upload died with the holder check in again for a new token).
    wait_relay_holder(&relays_db, &round.round_id, Some(&other.url)).await;
    assert_eq!(upload_sealed_each(&clients, &round, &key).await, COHORT);
    let started = Instant::now();
    let info = loop {
        let info: TaskInfo = analyst.task(&task).await.unwrap();
        if info.state != TaskState::Running {
            break info;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "task {task} does not finish: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    check_finished_once(&analyst, &info, 1, "\"ab\"").await;
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// Ends every PostgreSQL session named `application` (as an operator's `pg_terminate_backend`
/// or a failover does); returns how many.
fn kill_sessions(application: &str) -> usize {
    let base = std::env::var("TALLY_TEST_POSTGRES_URL").unwrap();
    let killed = Command::new("psql")
        .args([
            base.as_str(),
            "-tAc",
            &format!(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = '{application}'"
            ),
        ])
        .output()
        .unwrap();
    assert!(killed.status.success(), "{killed:?}");
    String::from_utf8_lossy(&killed.stdout)
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn a_stopped_replica_whose_sessions_were_killed_commits_nothing() {
    // A's sessions carry a name of their own, to be killed.
    let application = format!("tally_a_{:08x}", rand::random::<u32>());
    let TwoReplicas {
        a,
        b,
        tokens,
        task,
        _scratch,
    } = two_replicas(&application).await;
    let (analyst_a, analyst_b) = (a.client(&tokens.analyst), b.client(&tokens.analyst));
    let mut invariants = Invariants::default();
    let devices = b.devices(&tokens);
    let first = next_round(&devices[0], &task, None).await;
    // Most of the first level's cohort reaches A (through B); then A stops, and its database
    // sessions are killed.
    let issued = check_in(&devices, &first.round_id).await;
    let all = uploads(&first, issued, &mut invariants.secrets);
    upload_each(&devices, &first.round_id, &all[..all.len() - 1])
        .await
        .unwrap();
    signal(a.pid(), "STOP");
    assert!(kill_sessions(&application) > 0, "A had no session");
    // B takes the task over and runs the level again; A resumes meanwhile, with its round
    // one upload short of its cohort.
    let again = next_round(&devices[0], &task, Some(&first.round_id)).await;
    assert_eq!(again.round, 1, "{again:?}");
    signal(a.pid(), "CONT");
    // The last device uploads to A's round, directly, completing its cohort: A, closing it,
    // must release nothing (refused at once, or taken and then fenced: either way nothing
    // of A's round is committed, which `check_once` sees below).
    let late = a.client(&tokens.devices[all.len() - 1]);
    let _ = late
        .upload(&first.round_id, std::slice::from_ref(&all[all.len() - 1]))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    finish(&analyst_b, &devices, &task, &mut invariants).await;
    check_once(&analyst_b, &task, &mut invariants).await;
    // A serves on, over new sessions, and reads the same ledger.
    check_once(&analyst_a, &task, &mut invariants).await;
    a.kill();
    b.kill();
}

/// A replica of the soak: its process (none while killed) and the name of its database
/// sessions.
struct Replica {
    process: ServerProcess,
    application: String,
}

impl Replica {
    fn start(db: &str, tls: &Tls, lease: &str) -> Self {
        let application = format!("tally_soak_{:08x}", rand::random::<u32>());
        let process = ServerProcess::start_with(
            &format!("{db}?application_name={application}"),
            tls,
            &["--lease-duration", lease],
        );
        Self {
            process,
            application,
        }
    }

    /// A client of this replica with `token`, retrying as devices do (a replica whose
    /// sessions were just killed may answer 500 once).
    fn client(&self, token: &str) -> Client {
        self.process
            .client(token)
            .with_retry(tally_client::RetryPolicy::default())
    }
}

/// Lets `task`'s round take some uploads through `replica`, as its devices would; errors (a
/// round that closed or moved, a driver stopped or killed) are part of the run.
async fn feed_some(
    replica: &Replica,
    tokens: &Tokens,
    invariants: &mut Invariants,
    rng: &mut impl rand::Rng,
) {
    use rand::RngExt;
    let devices: Vec<Client> = tokens.devices.iter().map(|t| replica.client(t)).collect();
    let Ok(rounds) = devices[0].open_rounds().await else {
        return;
    };
    let Some(round) = rounds.into_iter().next() else {
        return;
    };
    let mut issued = Vec::new();
    for device in &devices {
        match device.check_in(&round.round_id, 1).await {
            Ok(grant) => issued.extend(grant.tokens),
            Err(_) => return,
        }
    }
    let all = uploads(&round, issued, &mut invariants.secrets);
    let cut = if rng.random_bool(0.3) {
        rng.random_range(0..all.len())
    } else {
        all.len()
    };
    let _ = upload_each(&devices, &round.round_id, &all[..cut]).await;
}

/// The soak of the replicas: three `tally serve` processes on one PostgreSQL database, faults
/// at random (seeded): SIGKILL and a restart, SIGSTOP for up to twice the lease then SIGCONT,
/// and the killing of a replica's database sessions, while tasks run and devices talk to any
/// replica. After every fault the invariants of `crash.rs` hold ([`Invariants`]); at the end
/// every task finishes, none fails, and every debit is its task's one. Not in CI; run (a
/// release build, as deployed):
///
/// ```text
/// source .ci/postgres.sh
/// cargo test --release -p tally-cli --test replicas -- --ignored --nocapture
/// ```
///
/// `TALLY_SOAK_FAULTS` (default 200) and `TALLY_SOAK_SEED` (default 13) set the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the replicas' soak: minutes; cargo test --release -p tally-cli --test replicas -- --ignored"]
async fn replicas_keep_their_promises_under_faults() {
    use rand::{RngExt, SeedableRng};
    let setting = |name: &str, default: u64| {
        std::env::var(name).map_or(default, |v| v.parse::<u64>().expect(name))
    };
    let faults = setting("TALLY_SOAK_FAULTS", 200);
    let seed = setting("TALLY_SOAK_SEED", 13);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let db = postgres_database("tally_replica_soak");
    let scratch = tempfile::tempdir().unwrap();
    let tls = Tls::create(scratch.path());
    // The lease, in seconds; stops last up to twice as long.
    const LEASE_SECS: u64 = 2;
    let lease = LEASE_SECS.to_string();
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::start(&db, &tls, &lease)).collect();
    let budget = (8.0, 1e-5);
    let mut populations = vec![(
        Tokens::create(&db, "soak-1", budget).await,
        Invariants::default(),
    )];
    for replica in &mut replicas {
        let analyst = replica.client(&populations[0].0.analyst);
        replica.process.wait_ready(&analyst).await;
    }
    let (mut kills, mut stops, mut long_stops, mut session_kills, mut refusals) =
        (0_u64, 0_u64, 0_u64, 0_u64, 0_u64);
    let mut stopped: Option<(usize, tokio::task::JoinHandle<()>)> = None;
    let started = Instant::now();
    while kills + stops + session_kills < faults {
        // Work through a replica that is not stopped.
        let serving = loop {
            let i = rng.random_range(0..replicas.len());
            if stopped.as_ref().is_none_or(|(s, _)| *s != i) {
                break i;
            }
        };
        let tokens = &populations.last().unwrap().0;
        let analyst = replicas[serving].client(&tokens.analyst);
        let running = analyst
            .tasks()
            .await
            .unwrap()
            .iter()
            .any(|t| t.state == TaskState::Running);
        if !running {
            let kind = task_kind(rng.random_bool(0.5));
            match analyst.create_task(&spec(&tokens.population, kind)).await {
                Ok(_) => {}
                Err(e) if e.code() == Some(tally_messages::ErrorCode::BudgetExceeded) => {
                    refusals += 1;
                    let name = format!("soak-{}", populations.len() + 1);
                    populations.push((
                        Tokens::create(&db, &name, budget).await,
                        Invariants::default(),
                    ));
                    continue;
                }
                Err(e) => panic!("creating a task failed: {e}"),
            }
        }
        let (tokens, invariants) = populations.last_mut().unwrap();
        feed_some(&replicas[serving], tokens, invariants, &mut rng).await;
        // A fault, on any replica not stopped.
        let victim = loop {
            let i = rng.random_range(0..replicas.len());
            if stopped.as_ref().is_none_or(|(s, _)| *s != i) {
                break i;
            }
        };
        match rng.random_range(0..3) {
            0 => {
                let replica = replicas.remove(victim);
                replica.process.kill();
                let mut restarted = Replica::start(&db, &tls, &lease);
                let analyst = restarted.client(&populations[0].0.analyst);
                restarted.process.wait_ready(&analyst).await;
                replicas.insert(victim, restarted);
                kills += 1;
            }
            1 if stopped.is_none() => {
                let pid = replicas[victim].process.pid();
                let pause = Duration::from_millis(rng.random_range(100..2 * LEASE_SECS * 1000));
                if pause > Duration::from_secs(LEASE_SECS) {
                    long_stops += 1;
                }
                signal(pid, "STOP");
                let resume = tokio::spawn(async move {
                    tokio::time::sleep(pause).await;
                    signal(pid, "CONT");
                });
                stopped = Some((victim, resume));
                stops += 1;
            }
            _ => {
                kill_sessions(&replicas[victim].application);
                session_kills += 1;
            }
        }
        if stopped
            .as_ref()
            .is_some_and(|(_, resume)| resume.is_finished())
        {
            stopped = None;
        }
        // The promises hold, read through a replica that is not stopped.
        let reader = (0..replicas.len())
            .find(|i| stopped.as_ref().is_none_or(|(s, _)| s != i))
            .unwrap();
        for (tokens, invariants) in &mut populations {
            invariants
                .check(&replicas[reader].client(&tokens.analyst), None)
                .await;
        }
    }
    if let Some((_, resume)) = stopped.take() {
        resume.await.unwrap();
    }
    // Every task finishes without faults, and none failed.
    let (mut tasks, mut finished, mut released) = (0, 0, 0);
    let last = populations.len() - 1;
    for (i, (tokens, invariants)) in populations.iter_mut().enumerate() {
        let analyst = replicas[0].client(&tokens.analyst);
        if i == last {
            let devices: Vec<Client> = tokens
                .devices
                .iter()
                .map(|t| replicas[1].client(t))
                .collect();
            for task in analyst.tasks().await.unwrap() {
                if task.state == TaskState::Running {
                    finish(&analyst, &devices, &task.id, invariants).await;
                }
            }
        }
        invariants.check(&analyst, None).await;
        let listed = analyst.tasks().await.unwrap();
        for task in &listed {
            assert_ne!(task.state, TaskState::Failed, "{task:?}");
        }
        tasks += listed.len();
        finished += listed
            .iter()
            .filter(|t| t.state == TaskState::Finished)
            .count();
        released += invariants.results();
    }
    for replica in replicas {
        replica.process.kill();
    }
    eprintln!(
        "replicas' soak: {} faults ({kills} SIGKILL, {stops} SIGSTOP of which {long_stops} past \
         the lease, {session_kills} database sessions killed), 3 replicas, {tasks} tasks \
         ({finished} finished, none failed, {released} results checked), {} populations \
         ({refusals} budgets spent), 0 violations, {:.0} s (seed {seed})",
        kills + stops + session_kills,
        populations.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(finished > 0, "no task finished");
}
