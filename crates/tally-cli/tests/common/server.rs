//! A `tally serve` process that the crash tests (`crash.rs`, `soak.rs`) kill with SIGKILL and
//! start again: its TLS certificate and credentials, the tasks it runs, the uploads of a round,
//! and the promises every restart must keep.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tally_client::{Client, ClientError, RetryPolicy};

use crate::listening::{free_port, serve_command};
use tally_messages::{
    Ask, Budget, CredentialSpec, HeavyHittersAlgorithm, HistogramMechanism, LedgerBalance,
    PROTOCOL_VERSION, PopulationSpec, PrivacyTarget, Role, RoundPolicy, RoundQuery, TaskInfo,
    TaskKind, TaskSpec, TaskState, Upload,
};

/// Devices per round (the cohort target).
pub(crate) const COHORT: u32 = 60;

/// A self-signed certificate for 127.0.0.1, made by `tally cert`.
pub(crate) struct Tls {
    cert: PathBuf,
    key: PathBuf,
    /// The certificate, which the clients trust.
    ca: Vec<u8>,
}

impl Tls {
    /// Makes the certificate and its key in `dir`.
    pub(crate) fn create(dir: &Path) -> Self {
        let (cert, key) = (dir.join("server.pem"), dir.join("server.key"));
        let made = Command::new(env!("CARGO_BIN_EXE_tally"))
            .arg("cert")
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "tally cert: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let ca = std::fs::read(&cert).unwrap();
        Self { cert, key, ca }
    }

    /// The certificate's file, which a client (`tally relay --aggregator-ca-cert`) trusts.
    pub(crate) fn ca_file(&self) -> &Path {
        &self.cert
    }
}

/// A provisioned population, its analyst's credential and its enrolled devices'.
pub(crate) struct Tokens {
    pub(crate) population: String,
    pub(crate) analyst: String,
    pub(crate) devices: Vec<String>,
}

impl Tokens {
    /// Provisions `population` with `budget` in the database `db` (beside a running server, as
    /// `tally population create --db` may), with an analyst and [`COHORT`] devices.
    pub(crate) async fn create(db: &str, population: &str, budget: (f64, f64)) -> Self {
        let spec = PopulationSpec {
            version: PROTOCOL_VERSION,
            name: population.into(),
            budget: Budget {
                epsilon: budget.0,
                delta: budget.1,
            },
            min_cohort: 1,
            max_task_epsilon: None,
            trust: tally_messages::TrustModel::SingleParty,
            allow_device_sampling: true,
            colluding_fraction: 0.0,
            task_bound: None,
            neighbours: tally_messages::Neighbours::AddRemove,
        };
        tally_server::create_population(db, &spec).await.unwrap();
        let analyst = CredentialSpec {
            version: PROTOCOL_VERSION,
            role: Role::Analyst,
            name: format!("{population}-analyst"),
            populations: vec![population.into()],
        };
        let analyst = tally_server::create_credential(db, &analyst)
            .await
            .unwrap()
            .token;
        let devices = tally_server::enroll_devices(db, population, COHORT)
            .await
            .unwrap();
        Self {
            population: population.into(),
            analyst,
            devices,
        }
    }
}

/// A running `tally serve` over TLS.
pub(crate) struct ServerProcess {
    child: Child,
    /// A client of it without a credential.
    base: Client,
    /// Whether its database is PostgreSQL.
    postgres: bool,
}

impl ServerProcess {
    /// Starts `tally serve` on a free port of 127.0.0.1 with the database `db` and `tls`; on
    /// PostgreSQL with one-second leases, so that the tasks of a server killed before it run
    /// again a second later.
    pub(crate) fn start(db: &str, tls: &Tls) -> Self {
        let lease: &[&str] = if db.starts_with("postgres") {
            &["--lease-duration", "1"]
        } else {
            &[]
        };
        Self::start_with(db, tls, lease)
    }

    /// [`ServerProcess::start`] with more options of `tally serve`.
    pub(crate) fn start_with(db: &str, tls: &Tls, options: &[&str]) -> Self {
        let port = free_port();
        let child = serve_command(db, port)
            .args(options)
            .arg("--tls-cert")
            .arg(&tls.cert)
            .arg("--tls-key")
            .arg(&tls.key)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = Client::with_ca_cert(&format!("https://127.0.0.1:{port}"), &tls.ca)
            .unwrap()
            .with_retry(RetryPolicy::NONE);
        Self {
            child,
            base,
            postgres: db.starts_with("postgres"),
        }
    }

    /// A client of the server with `token`.
    pub(crate) fn client(&self, token: &str) -> Client {
        self.base.clone().with_token(token)
    }

    /// One client per enrolled device of `tokens`.
    pub(crate) fn devices(&self, tokens: &Tokens) -> Vec<Client> {
        tokens.devices.iter().map(|t| self.client(t)).collect()
    }

    /// Waits until the server answers `analyst`, and on PostgreSQL until the leases of a
    /// server killed before it lapsed (a second, [`ServerProcess::start`]) and it took their
    /// tasks over.
    pub(crate) async fn wait_ready(&mut self, analyst: &Client) {
        if self.postgres {
            // The lease, then its lapse seen at a lease tick (every quarter of it) that a busy
            // machine may delay: until then the killed server's open round is still listed,
            // and a request to it is forwarded to that server, out of reach.
            tokio::time::sleep(Duration::from_millis(2000)).await;
        }
        let started = Instant::now();
        while analyst.tasks().await.is_err() {
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "the server exited on start"
            );
            assert!(started.elapsed() < Duration::from_secs(30), "no server");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown code runs.
    pub(crate) fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ServerProcess {
    /// A test that fails leaves no server behind.
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The tasks and the ledger `analyst` reads, as of one moment: the ledger read between two
/// listings of the tasks that agree on every task's state and released rounds. (Read one after
/// the other while rounds are released, the ledger could hold the debit of a round released
/// after the tasks were listed; a round's release and its debit are one transaction, and
/// neither a state nor a count of released rounds goes back.)
async fn snapshot(analyst: &Client) -> (Vec<TaskInfo>, Vec<LedgerBalance>) {
    let progress = |tasks: &[TaskInfo]| -> Vec<(String, TaskState, u32)> {
        tasks
            .iter()
            .map(|t| (t.id.clone(), t.state, t.rounds_released))
            .collect()
    };
    for _ in 0..100 {
        let before = analyst.tasks().await.unwrap();
        let ledger = analyst.ledger().await.unwrap();
        let after = analyst.tasks().await.unwrap();
        if progress(&before) == progress(&after) {
            return (after, ledger);
        }
    }
    panic!("the tasks never held still for three reads in 100 tries");
}

/// A task of `kind` on `population`, planned at `(ε, δ) = (2, 1e-6)`.
pub(crate) fn spec(population: &str, kind: TaskKind) -> TaskSpec {
    TaskSpec {
        version: PROTOCOL_VERSION,
        population: population.into(),
        expected_population: u64::from(COHORT),
        privacy: PrivacyTarget {
            epsilon: 2.0,
            delta: 1e-6,
            neighbours: tally_accounting::Neighbours::AddRemove,
            analysis: tally_accounting::sample_threshold::Analysis::Tight,
        },
        kind,
        rounds: RoundPolicy {
            min_cohort: 1,
            cohort_target: None,
            deadline_secs: 600,
            max_attempts: 3,
            max_report_bytes: 64,
        },
        // The uploads below stand for sampled devices' reports, counted as they come.
        sampling: tally_messages::Sampling::Device,
    }
}

/// An S&T histogram, or a three-level TrieHH++ search, both at threshold 5.
pub(crate) fn task_kind(histogram: bool) -> TaskKind {
    if histogram {
        TaskKind::Histogram {
            mechanism: HistogramMechanism::SampleThreshold,
            sampling_rate: None,
            threshold: Some(5),
        }
    } else {
        TaskKind::HeavyHitters {
            algorithm: HeavyHittersAlgorithm::TrieHhPlus,
            levels: 3,
            segment: 1,
            restricted: true,
            composition: Some(tally_accounting::composition::Composition::Basic),
            sampling_rate: None,
            threshold: Some(5),
        }
    }
}

/// What every restart must find: no result without its debit, no result or debit that
/// changes or vanishes, no task debited twice, ledger totals that are those of the tasks it
/// lists and within the budget, and no uploaded report in any file of the database.
#[derive(Default)]
pub(crate) struct Invariants {
    /// Results seen so far, by task.
    results: HashMap<String, String>,
    /// Debits seen so far, by task: `(ε, δ, at)`.
    debits: HashMap<String, (f64, f64, i64)>,
    /// Reports uploaded that must never reach the disk.
    pub(crate) secrets: Vec<String>,
}

impl Invariants {
    /// How many results were seen.
    pub(crate) fn results(&self) -> usize {
        self.results.len()
    }

    /// Checks what `analyst` (the only analyst of its population) reads, and every file in
    /// `dir` (a SQLite database's directory).
    pub(crate) async fn check(&mut self, analyst: &Client, dir: Option<&Path>) {
        let (tasks, ledger) = snapshot(analyst).await;
        assert_eq!(ledger.len(), 1, "{ledger:?}");
        let balance = &ledger[0];
        let by_id: HashMap<&str, &TaskInfo> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        let mut debited = HashSet::new();
        let mut spent = (0.0, 0.0);
        for entry in &balance.entries {
            let id = entry.task_id.as_str();
            assert!(debited.insert(id), "task {id} is debited twice");
            let task = by_id
                .get(id)
                .unwrap_or_else(|| panic!("a debit for task {id}, which is not listed"));
            let amount = (entry.amount.epsilon, entry.amount.delta, entry.at);
            assert!(
                same(amount.0, task.guarantee.epsilon) && same(amount.1, task.guarantee.delta),
                "task {id} is debited {amount:?}, not its guarantee {:?}",
                task.guarantee
            );
            let first = self.debits.entry(id.to_owned()).or_insert(amount);
            assert!(
                same(first.0, amount.0) && same(first.1, amount.1) && first.2 == amount.2,
                "the debit of {id} changed: {first:?}, now {amount:?}"
            );
            spent = (spent.0 + amount.0, spent.1 + amount.1);
        }
        for id in self.debits.keys() {
            let listed = by_id.get(id.as_str()).map(|t| &t.spec.population);
            if listed == Some(&balance.population) {
                assert!(debited.contains(id.as_str()), "the debit of {id} vanished");
            }
        }
        assert!(
            same(spent.0, balance.spent.epsilon) && same(spent.1, balance.spent.delta),
            "spent {:?} is not the sum of the debits {spent:?}",
            balance.spent
        );
        let reserved = tasks
            .iter()
            .filter(|t| t.state == TaskState::Running && !debited.contains(t.id.as_str()))
            .fold((0.0, 0.0), |(e, d), t| {
                (e + t.guarantee.epsilon, d + t.guarantee.delta)
            });
        assert!(
            close(reserved.0, balance.reserved.epsilon)
                && close(reserved.1, balance.reserved.delta),
            "reserved {:?}, while the running tasks without a debit hold {reserved:?}",
            balance.reserved
        );
        // Without a declared pair every task is charged its own guarantee: what is left is
        // never below zero.
        assert!(
            balance.task_bound.is_some()
                || (balance.remaining.epsilon >= 0.0 && balance.remaining.delta >= 0.0),
            "over the budget {:?}: {balance:?}",
            balance.budget
        );
        for task in &tasks {
            assert_eq!(
                debited.contains(task.id.as_str()),
                task.rounds_released > 0,
                "task {} released {} rounds; its debit: {}",
                task.id,
                task.rounds_released,
                debited.contains(task.id.as_str())
            );
            match analyst.result_text(&task.id).await {
                Ok(body) => {
                    assert!(
                        debited.contains(task.id.as_str()),
                        "task {} has a result and no debit",
                        task.id
                    );
                    let first = self.results.entry(task.id.clone()).or_insert(body.clone());
                    assert_eq!(*first, body, "the result of {} changed", task.id);
                }
                Err(error) => {
                    assert_ne!(task.state, TaskState::Finished, "{error}");
                    assert!(!self.results.contains_key(&task.id), "a result vanished");
                }
            }
        }
        let Some(dir) = dir else { return };
        // Every secret report starts with the mark, which nothing else the server stores holds.
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes
                    .windows(SECRET_MARK.len())
                    .any(|w| w == SECRET_MARK.as_bytes()),
                "an uploaded report is in {}",
                path.display()
            );
        }
    }
}

/// The start of every report that must never reach the disk.
const SECRET_MARK: &str = "secret-";

/// Whether two stored amounts are the same number.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

/// Whether two sums of the same amounts (perhaps added in another order) agree.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
}

/// Makes sure `analyst` has a task running on `population` (a histogram and a TrieHH++ search
/// in turn), and returns an open round, if there is one now.
///
/// # Errors
///
/// The server's refusal to create the task (`budget_exceeded` once the budget is spent).
pub(crate) async fn ensure_task(
    analyst: &Client,
    device: &Client,
    population: &str,
) -> Result<Option<RoundQuery>, ClientError> {
    let tasks = analyst.tasks().await.unwrap();
    if !tasks.iter().any(|t| t.state == TaskState::Running) {
        let kind = task_kind(tasks.len() % 2 == 0);
        analyst.create_task(&spec(population, kind)).await?;
    }
    Ok(device.open_rounds().await.unwrap().into_iter().next())
}

/// Every enrolled device checks in for itself: one token each.
pub(crate) async fn check_in(devices: &[Client], round_id: &str) -> Vec<String> {
    let mut tokens = Vec::with_capacity(devices.len());
    for device in devices {
        tokens.extend(device.check_in(round_id, 1).await.unwrap().tokens);
    }
    tokens
}

/// Uploads `uploads[i]` with `devices[i]`'s own credential, one request each (an upload token
/// is good only for the credential that checked it in), stopping at the first error.
pub(crate) async fn upload_each(
    devices: &[Client],
    round_id: &str,
    uploads: &[Upload],
) -> Result<(), ClientError> {
    for (device, upload) in devices.iter().zip(uploads) {
        device
            .upload(round_id, std::slice::from_ref(upload))
            .await?;
    }
    Ok(())
}

/// The uploads of one round: 40 devices hold "ab" (enough to pass the threshold at every
/// level), 20 hold a report seen nowhere else (never released, and never to be stored).
pub(crate) fn uploads(
    round: &RoundQuery,
    tokens: Vec<String>,
    secrets: &mut Vec<String>,
) -> Vec<Upload> {
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| {
            let report = match &round.ask {
                Ask::Item { .. } if i >= 40 => {
                    let secret = format!("{SECRET_MARK}{}-{i}", round.round_id);
                    secrets.push(secret.clone());
                    Some(secret)
                }
                Ask::Item { .. } => Some("ab".to_owned()),
                Ask::Prefix { level, .. } => Some(
                    match level {
                        1 => "a",
                        2 => "ab",
                        _ => "ab$",
                    }
                    .to_owned(),
                ),
                ask => panic!("the crash tests run only histograms and TrieHH++: {ask:?}"),
            };
            Upload { token, report }
        })
        .collect()
}

/// Lets every task of `analyst` finish without kills, feeding its rounds from `devices`, and
/// checks what they released.
pub(crate) async fn finish_tasks(
    analyst: &Client,
    devices: &[Client],
    invariants: &mut Invariants,
    dir: Option<&Path>,
) -> Vec<TaskInfo> {
    let started = Instant::now();
    loop {
        let tasks = analyst.tasks().await.unwrap();
        if tasks.iter().all(|t| t.state != TaskState::Running) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "tasks do not finish"
        );
        for round in devices[0].open_rounds().await.unwrap() {
            let tokens = check_in(devices, &round.round_id).await;
            let all = uploads(&round, tokens, &mut invariants.secrets);
            // The round may close under us: that is fine.
            let _ = upload_each(devices, &round.round_id, &all).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    invariants.check(analyst, dir).await;
    let tasks = analyst.tasks().await.unwrap();
    for task in &tasks {
        let body = analyst.result_text(&task.id).await.unwrap();
        assert!(body.contains("\"ab\""), "{body}");
    }
    tasks
}
