//! The federated runtime end to end over loopback: `tally serve`, `tally task create`,
//! `tally fleet` / `tally client`, `tally task result` and `tally ledger`.

mod common;
#[path = "common/listening.rs"]
mod listening;
#[path = "common/prefix_tree.rs"]
mod prefix_tree;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Child;

use serde_json::Value;
use tally_accounting::composition::Composition;
use tally_accounting::ghazi::{CountMinParams, HadamardParams};
use tally_messages::{
    HeavyHittersRelease, HistogramRelease, LedgerBalance, QuantilesRelease, TaskInfo, TaskKind,
    TreeReading,
};

use common::{failure, json, tally, temp_file};
use listening::{
    free_port, postgres_database, relay_command, serve_command, spawn_logging, spawn_serve,
};
use prefix_tree::{PREFIX_TREE, PrefixTree};

/// A `tally serve` on a free port with its own SQLite file (or the same server in this
/// process, its aggregator's coins seeded, or a `tally serve` and a `tally relay` in front of
/// it, each with its own SQLite file); stopped when dropped.
struct Server {
    running: Running,
    /// `--server URL --token T` with an analyst's credential over every test population.
    analyst: String,
    /// `--server URL --token T` relaying for the devices of each test population (an
    /// operator's credential).
    devices: HashMap<&'static str, String>,
    /// The server's base URL.
    url: String,
    /// The relay's base URL, in a split deployment.
    relay_url: Option<String>,
    /// Its database.
    db: String,
    /// The relay's database, in a split deployment.
    relay_db: Option<String>,
    /// The directory of its databases and, in a split deployment, of the two processes' logs
    /// (`aggregator.log`, `relay.log`).
    dir: tempfile::TempDir,
}

/// How a test's server runs.
enum Running {
    /// `tally serve`, the binary a deployment runs.
    Process(Child),
    /// [`tally_server::Server::start_seeded`] on a thread of its own, until `stop` is sent.
    InProcess {
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
    /// `tally serve` as the aggregator of split-trust populations, and `tally relay` in front
    /// of it: two processes, two databases.
    Split { aggregator: Child, relay: Child },
}

/// The populations the tests' tasks ask: `test` and `one` keep an add/remove budget of
/// (ε = 10, δ = 1e-5); `words`, `numbers` and [`WEAK_POPULATION`] a replace-one budget
/// ([`REPLACE_ONE_POPULATIONS`]), on which the shuffle, local, OptPrefixTree and TrieHH tasks
/// run and add/remove tasks are charged `(2ε, (1 + e^ε)δ)`.
const POPULATIONS: [&str; 5] = ["test", "one", "words", "numbers", WEAK_POPULATION];

/// The test populations whose budget is kept under replace-one neighbours, (ε = 40, δ = 1e-3)
/// but [`WEAK_POPULATION`]'s.
const REPLACE_ONE_POPULATIONS: [&str; 3] = ["words", "numbers", WEAK_POPULATION];

/// The population of the tests whose tasks fit their reports only at weak parameters (Ghazi et
/// al.'s Hadamard range trees at `δ = 1e-3`, Count-Min at `ε = 1.2`, its range trees at
/// `ε = 3`, its prefix tree at `ε = 3`, and through the relay, for fewer devices, its range
/// tree at `ε = 8` and its prefix tree at `ε = 16`, each at `δ = 1e-3`): its budget is
/// (ε = 60, δ = 1e-2).
const WEAK_POPULATION: &str = "weak";

/// A credential made with `tally token create --db`: the token alone on stdout.
fn token_create(db: &str, role: &str, populations: &[&str]) -> String {
    let mut line = format!("token create --db {db} --role {role} --name {role}");
    for population in populations {
        line.push_str(&format!(" --population {population}"));
    }
    let output = tally(&line);
    assert!(output.status.success(), "{line}: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A SQLite file in `dir` with the test populations of trust model `trust` (`single-party`
/// or `split`), an analyst's credential over them and the credential the fleets reach the
/// server with: the database URL and the two tokens. In single-party the fleets run through
/// an operator's credential, which relays for many devices; in split through a relay, whose
/// credential at the aggregator (of role `relay`) this is.
fn provision(dir: &std::path::Path, trust: &str) -> (String, String, String) {
    provision_at(
        format!("sqlite://{}", dir.join("tally.db").display()),
        trust,
    )
}

/// As [`provision`], in the database `db`.
fn provision_at(db: String, trust: &str) -> (String, String, String) {
    for population in POPULATIONS {
        let replace_one = REPLACE_ONE_POPULATIONS.contains(&population);
        let (epsilon, delta, neighbours) = if population == WEAK_POPULATION {
            (60, 1e-2, "replace-one")
        } else if replace_one {
            (40, 1e-3, "replace-one")
        } else {
            (10, 1e-5, "add-remove")
        };
        // Some tests count chosen uploads exactly: their tasks sample on the devices, which
        // the operator allows.
        let line = format!(
            "population create --db {db} {population} --budget-epsilon {epsilon} \
             --budget-delta {delta} --trust {trust} --allow-device-sampling --neighbours \
             {neighbours}"
        );
        assert!(tally(&line).status.success(), "{line}");
    }
    let analyst = token_create(&db, "analyst", &POPULATIONS);
    let relay = match trust {
        "split" => token_create(&db, "relay", &POPULATIONS),
        _ => token_create(&db, "operator", &[]),
    };
    (db, analyst, relay)
}

impl Server {
    /// `tally serve` as a deployment runs it: its aggregator's coins are the operating
    /// system's.
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (db, analyst, relay) = provision(dir.path(), "single-party");
        let (child, port) = spawn_serve(&db);
        Self::ready(Running::Process(child), port, db, analyst, &relay, dir)
    }

    /// The same server in this process, its aggregator's coins seeded with `seed`
    /// ([`tally_server::Server::start_seeded`], which `tally serve` cannot reach), so that a
    /// fleet sending the same reports in the same order gets the same release.
    fn start_seeded(seed: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (db, analyst, relay) = provision(dir.path(), "single-party");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, port) = std::sync::mpsc::channel();
        let serving = db.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let limits = tally_server::Limits::default();
                let server = tally_server::Server::start_seeded(&serving, &limits, seed)
                    .await
                    .unwrap();
                let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                bound.send(api.local_addr().unwrap().port()).unwrap();
                let listeners = tally_server::Listeners {
                    api,
                    metrics: None,
                    tls: None,
                };
                server
                    .serve(listeners, &limits, async {
                        stopped.await.ok();
                    })
                    .await
                    .unwrap();
                server.shutdown().await;
            });
        });
        let port = port.recv().expect("the server in process did not start");
        let running = Running::InProcess {
            stop: Some(stop),
            thread: Some(thread),
        };
        Self::ready(running, port, db, analyst, &relay, dir)
    }

    /// `tally serve` as the aggregator of split-trust populations and `tally relay` in front
    /// of it, each its own process with its own SQLite file and its log (`RUST_LOG=info`) in
    /// the server's directory. The fleets reach the relay with the relay operator's
    /// credential and fetch the aggregator's key from the aggregator.
    fn start_split() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let aggregator_db = format!("sqlite://{}", dir.path().join("tally.db").display());
        let relay_db = format!("sqlite://{}", dir.path().join("relay.db").display());
        Self::start_split_on(dir, aggregator_db, relay_db)
    }

    /// As [`Server::start_split`], with the aggregator's database `db` and the relay's
    /// `relay_db`.
    fn start_split_on(dir: tempfile::TempDir, db: String, relay_db: String) -> Self {
        let (db, analyst, relay_token) = provision_at(db, "split");
        let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let port = free_port();
        let mut serve = serve_command(&db, port);
        serve.env("RUST_LOG", "info").stderr(log("aggregator.log"));
        let aggregator = spawn_logging(serve, port);
        let url = format!("http://127.0.0.1:{port}");
        let operator = token_create(&relay_db, "operator", &[]);
        let relay_port = free_port();
        let mut relay = relay_command(&relay_db, relay_port, &url, &relay_token);
        relay.env("RUST_LOG", "info").stderr(log("relay.log"));
        let relay = spawn_logging(relay, relay_port);
        let devices = POPULATIONS
            .into_iter()
            .map(|p| {
                let fleet = format!(
                    "--server http://127.0.0.1:{relay_port} --token {operator} --aggregator {url}"
                );
                (p, fleet)
            })
            .collect();
        Self {
            running: Running::Split { aggregator, relay },
            analyst: format!("--server {url} --token {analyst}"),
            devices,
            url,
            relay_url: Some(format!("http://127.0.0.1:{relay_port}")),
            db,
            relay_db: Some(relay_db),
            dir,
        }
    }

    fn ready(
        running: Running,
        port: u16,
        db: String,
        analyst: String,
        relay: &str,
        dir: tempfile::TempDir,
    ) -> Self {
        let url = format!("http://127.0.0.1:{port}");
        let devices = POPULATIONS
            .into_iter()
            .map(|p| (p, format!("--server {url} --token {relay}")))
            .collect();
        Self {
            running,
            analyst: format!("--server {url} --token {analyst}"),
            devices,
            url,
            relay_url: None,
            db,
            relay_db: None,
            dir,
        }
    }
}

impl Server {
    /// `tally task result --json` of task `id`, as the offline command would print it: its
    /// guarantees say the trust model this server ran under (checked here: `split` through a
    /// relay, `single-party` otherwise), which is then set to the simulator's, `single-party`,
    /// so that the document compares with the offline command's field by field.
    fn result(&self, id: &str) -> Value {
        self.as_offline(json(&format!("task result {} {id} --json", self.analyst)))
    }

    /// `document` (a release, or a guarantee this server stated) with its trust models,
    /// checked to be this server's, set to the simulator's.
    fn as_offline(&self, mut document: Value) -> Value {
        let ran = if self.relay_url.is_some() {
            "split"
        } else {
            "single-party"
        };
        let said = offline_trust(&mut document, ran);
        assert!(said > 0, "no trust model in {document}");
        document
    }
}

/// Sets every `trust_model` in `document` that says `ran` to the simulator's,
/// `single-party`, and returns how many there were; fails on one that says otherwise.
fn offline_trust(document: &mut Value, ran: &str) -> usize {
    match document {
        Value::Object(fields) => fields
            .iter_mut()
            .map(|(name, value)| {
                if name == "trust_model" {
                    assert_eq!(value, ran, "the trust model");
                    *value = Value::from("single-party");
                    1
                } else {
                    offline_trust(value, ran)
                }
            })
            .sum(),
        Value::Array(values) => values.iter_mut().map(|v| offline_trust(v, ran)).sum(),
        _ => 0,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        match &mut self.running {
            Running::Process(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Running::Split { aggregator, relay } => {
                for child in [relay, aggregator] {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
            Running::InProcess { stop, thread } => {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// `tally task create` calibrates a task as `tally plan` plans it for the same inputs: the
/// task's guarantee, which the server computes from the parameters it chose, is the plan's,
/// for TrieHH++ (`tally plan triehh++`), a sample-and-threshold histogram (`tally plan
/// sample-threshold`) and hierarchical quantiles (`tally plan quantiles`).
#[test]
fn a_task_is_calibrated_as_its_planner_plans_it() {
    let server = Server::start();
    let analyst = &server.analyst;
    let create = |options: String, population: &str| {
        json(&format!(
            "task create {analyst} {options} --population {population} \
             --expected-population 1000 --json"
        ))
    };
    let privacy = "--epsilon 1 --delta 1e-8";
    let plan = json(&format!("plan triehh++ {privacy} --levels 10 --json"));
    let task = create(
        format!("--algorithm triehh++ {privacy} --levels 10"),
        "words",
    );
    assert_eq!(
        task["guarantee"]["epsilon"], plan["composed_epsilon"],
        "{task}"
    );
    let plan = json(&format!("plan sample-threshold {privacy} --json"));
    let task = create(format!("--mechanism sample-threshold {privacy}"), "test");
    assert_eq!(task["guarantee"]["epsilon"], plan["epsilon"], "{task}");
    assert_eq!(task["guarantee"]["delta"], plan["achieved_delta"], "{task}");
    let plan = json(&format!("plan quantiles {privacy} --levels 4 --json"));
    let task = create(
        format!(
            "--algorithm hierarchical-quantiles {privacy} --levels 4 --min 0 --max 1 \
             --quantiles 0.5"
        ),
        "numbers",
    );
    assert_eq!(task["guarantee"], plan["guarantee"], "{task}");
}

#[test]
fn a_histogram_task_runs_over_a_fleet_and_debits_the_ledger() {
    let server = Server::start();
    let analyst = &server.analyst;
    let devices = &server.devices;
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population test --expected-population 3000 --min-cohort 100 --deadline-secs 60 \
         --sampling device --json"
    )));
    let id = &info.id;
    let status = String::from_utf8(tally(&format!("task status {analyst} {id}")).stdout).unwrap();
    assert!(status.contains("running"), "{status}");

    // Not released yet: a clear message with the task's state.
    let early = failure(&format!("task result {analyst} {id}"));
    assert!(
        early.contains("is running") && early.contains("not released yet"),
        "{early}"
    );

    let test_devices = &devices["test"];
    let report = json(&format!(
        "fleet {test_devices} --synthetic uniform:n=3000,domain=5 --task {id} --seed 7 \
         --concurrency 4 --batch 100 --json"
    ));
    let total = &report["total"];
    assert_eq!(report["rounds"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(total["devices"], 3000, "{report}");
    assert_eq!(total["accepted"], 3000, "{report}");
    assert_eq!(total["upload_requests"], 30, "{report}");
    assert!(
        total["rejected"].as_object().unwrap().is_empty(),
        "{report}"
    );
    let reports = total["reports"].as_u64().unwrap();
    assert_eq!(reports + total["abstentions"].as_u64().unwrap(), 3000);
    assert!(
        total["latency_ms"]["p99"].as_f64().unwrap() > 0.0,
        "{report}"
    );

    let output = tally(&format!("task result {analyst} {id} --json"));
    assert!(output.status.success());
    let release: HistogramRelease = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(release.execution, "federated");
    // About 600 devices hold each item: every one is released, with its sampled count, so
    // the counts add up to the reports the fleet uploaded.
    assert_eq!(release.released_items, 5, "{release:?}");
    let counted: u64 = release.items.iter().map(|i| i.count.unwrap()).sum();
    assert_eq!(counted, reports);
    let table = String::from_utf8(tally(&format!("task result {analyst} {id}")).stdout).unwrap();
    assert!(
        table.contains("sample-and-threshold") && table.contains("rank"),
        "{table}"
    );

    let ledger: Vec<LedgerBalance> = parse(json(&format!("ledger {analyst} --json")));
    let test = ledger.iter().find(|b| b.population == "test").unwrap();
    assert_eq!(test.entries.len(), 1);
    assert_eq!(&test.entries[0].task_id, id);
    assert!(
        (test.spent.epsilon - info.guarantee.epsilon).abs() < 1e-12,
        "{test:?}"
    );
    // No declared pair: the task is charged its own guarantee.
    assert!((test.remaining.epsilon - (10.0 - info.guarantee.epsilon)).abs() < 1e-9);
    assert!(test.task_bound.is_none(), "{test:?}");
    let table = String::from_utf8(tally(&format!("ledger {analyst}")).stdout).unwrap();
    assert!(
        table.contains("test") && table.contains("remaining") && table.contains("declared pair"),
        "{table}"
    );
    // The charge rounded up to four significant digits, as every privacy number for people.
    let spent = tally_protocol::shown::privacy_number(info.guarantee.epsilon);
    assert!(table.contains(&format!("({spent}, ")), "{spent}: {table}");

    // One device alone: its round closes at its cohort target of one.
    let created: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population one --expected-population 1 --min-cohort 1 --json"
    )));
    let file = temp_file("device.txt", b"\nbanana\n\n");
    // It checks in with its own enrolled credential.
    let credentials = enroll(&server, "one", 1, "one-device.txt");
    let device = json(&format!(
        "client --server {} --credentials {} --input {} --task {} --seed 1 --json",
        server.url,
        credentials.display(),
        file.display(),
        created.id
    ));
    assert_eq!(device["total"]["accepted"], 1, "{device}");
    let done: TaskInfo = parse(json(&format!(
        "task status {analyst} {} --json",
        created.id
    )));
    assert_eq!(done.state.name(), "finished");
}

/// Enrolls `count` devices of `population` with `tally device enroll --db` into a fresh file
/// and returns its path.
fn enroll(server: &Server, population: &str, count: u32, name: &str) -> std::path::PathBuf {
    let out = std::env::temp_dir().join(format!("tally-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let line = format!(
        "device enroll --db {} --population {population} --count {count} --out {}",
        server.db,
        out.display()
    );
    let output = tally(&line);
    assert!(output.status.success(), "{line}: {output:?}");
    out
}

#[test]
fn enrolled_devices_answer_with_their_own_credentials() {
    let server = Server::start();
    let operator = token_create(&server.db, "operator", &[]);
    let out = std::env::temp_dir().join(format!("tally-cli-test-{}-enrolled", std::process::id()));
    let _ = std::fs::remove_file(&out);
    let enroll_line = format!(
        "device enroll --server {} --token {operator} --population test --count 40 --out {}",
        server.url,
        out.display()
    );
    let output = tally(&enroll_line);
    assert!(output.status.success(), "{output:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 40);
    assert!(lines.iter().all(|l| l.starts_with("tally_")), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    // An existing file is never overwritten, and only a provisioned population enrolls.
    assert!(failure(&enroll_line).contains("cannot create"));
    let elsewhere =
        std::env::temp_dir().join(format!("tally-cli-test-{}-none", std::process::id()));
    let _ = std::fs::remove_file(&elsewhere);
    let error = failure(&format!(
        "device enroll --db {} --population nobody --count 1 --out {}",
        server.db,
        elsewhere.display()
    ));
    assert!(error.contains("no population"), "{error}");
    let info: TaskInfo = parse(json(&format!(
        "task create {} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population test --expected-population 40 --min-cohort 40 --json",
        server.analyst
    )));
    // Each device checks in and uploads with its line of the file (a token is good only for
    // the credential that checked in): one upload request per device.
    let report = json(&format!(
        "fleet --server {} --credentials {} --synthetic uniform:n=40,domain=2 --task {} \
         --seed 3 --batch 8 --json",
        server.url,
        out.display(),
        info.id
    ));
    assert_eq!(report["total"]["accepted"], 40, "{report}");
    assert_eq!(report["total"]["upload_requests"], 40, "{report}");
    let done: TaskInfo = parse(json(&format!(
        "task status {} {} --json",
        server.analyst, info.id
    )));
    assert_eq!(done.state.name(), "finished");
    // Fewer credentials than devices: the fleet says so.
    let error = failure(&format!(
        "fleet --server {} --credentials {} --synthetic uniform:n=41,domain=2",
        server.url,
        out.display()
    ));
    assert!(error.contains("40 credentials for 41 devices"), "{error}");
    // A device with a budget of its own refuses a task past it, and answers within it.
    let task: TaskInfo = parse(json(&format!(
        "task create {} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population one --expected-population 1 --min-cohort 1 --json",
        server.analyst
    )));
    let credentials = enroll(&server, "one", 1, "budget-device.txt");
    let item = temp_file("budget-item.txt", b"banana\n");
    let ledger = std::env::temp_dir().join(format!("tally-cli-test-{}-ledger", std::process::id()));
    let _ = std::fs::remove_file(&ledger);
    let device = |budget: f64| {
        json(&format!(
            "client --server {} --credentials {} --input {} --task {} --seed 1 \
             --device-budget-epsilon {budget} --device-ledger {} --json",
            server.url,
            credentials.display(),
            item.display(),
            task.id,
            ledger.display()
        ))
    };
    let refused = device(0.5);
    assert_eq!(refused["rounds"].as_array().unwrap().len(), 0, "{refused}");
    let answered = device(2.0);
    assert_eq!(answered["total"]["accepted"], 1, "{answered}");
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&ledger).unwrap()).unwrap();
    let spent = &kept["spent"][&server.url]["one"][&task.id]["epsilon"];
    assert_eq!(spent.as_f64(), Some(task.guarantee.epsilon), "{kept}");
    // The ledger tells which tasks the device answered: its owner alone reads it.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ledger).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
}

/// The words of [`four_words_file`] and how many devices hold each.
const FOUR_WORDS: [(&str, u64); 4] = [("the", 900), ("and", 700), ("to", 500), ("rare", 3)];

/// A file of 2,103 devices' words, one a line: 900 "the", 700 "and", 500 "to" and 3 "rare".
fn four_words_file() -> PathBuf {
    words_file("words.txt", &FOUR_WORDS)
}

/// [`four_words_file`] with "the"'s holders moved to "to" (the data of a mutant).
fn moved_words_file() -> PathBuf {
    words_file(
        "moved-words.txt",
        &[("and", 700), ("to", 1400), ("rare", 3)],
    )
}

/// A file `name` of `holders` devices' words, one a line.
fn words_file(name: &str, holders: &[(&str, u64)]) -> PathBuf {
    let words: String = holders
        .iter()
        .flat_map(|&(word, n)| std::iter::repeat_n(format!("{word}\n"), n as usize))
        .collect();
    temp_file(name, words.as_bytes())
}

/// A TrieHH++ task over 2,103 devices (900 "the", 700 "and", 500 "to", 3 "rare") run by a
/// fleet against `server` (whose aggregator's coins may be seeded), one request at a time so
/// that the reports arrive in the same order: its release.
fn triehh_plus_release(server: &Server) -> HeavyHittersRelease {
    let analyst = &server.analyst;
    let devices = &server.devices;
    let file = four_words_file();
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm triehh++ --epsilon 4 --delta 1e-6 \
         --levels 5 --population words --expected-population 2103 --min-cohort 100 --json"
    )));
    // Composed tightly unless told otherwise, and named so in the spec.
    assert!(
        matches!(
            info.spec.kind,
            TaskKind::HeavyHitters {
                composition: Some(Composition::Tight),
                ..
            }
        ),
        "{:?}",
        info.spec.kind
    );
    assert!(
        info.guarantee.method.contains("tight composition"),
        "{:?}",
        info.guarantee
    );
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 300 --concurrency 1 --json",
        devices["words"],
        file.display()
    ));
    let rounds = report["rounds"].as_array().unwrap();
    assert!(rounds.len() >= 3, "{report}");
    assert!(rounds.iter().all(|r| r["accepted"] == 2103), "{report}");
    let release = server.result(&info.id);
    // Under replace-one neighbours (no loss pair) the default is basic composition, as on the
    // command line (created after the fleet ran, which would have answered it too).
    let replace_one: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm triehh++ --epsilon 4 --delta 1e-6 --levels 5 \
         --neighbours replace-one --population words --expected-population 2103 --json"
    )));
    assert!(
        matches!(
            replace_one.spec.kind,
            TaskKind::HeavyHitters {
                composition: Some(Composition::Basic),
                ..
            }
        ),
        "{:?}",
        replace_one.spec.kind
    );
    parse(release)
}

#[test]
fn a_triehh_plus_task_finds_the_frequent_words_over_several_rounds() {
    let release = triehh_plus_release(&Server::start_seeded(2103));
    // The aggregator's seed fixes the sample: the same run releases the same words, counts
    // and prefix tree.
    let again = triehh_plus_release(&Server::start_seeded(2103));
    let released =
        |r: &HeavyHittersRelease| serde_json::to_value((&r.items, &r.trie, r.found_items)).unwrap();
    assert_eq!(released(&again), released(&release));
    assert_triehh_plus_finds_what_the_simulator_finds(&release);
}

/// [`a_triehh_plus_task_finds_the_frequent_words_over_several_rounds`] through the relay,
/// which flips each level's sampling coins.
#[test]
fn a_triehh_plus_task_through_the_relay_finds_what_the_simulator_finds() {
    assert_triehh_plus_finds_what_the_simulator_finds(&triehh_plus_release(&Server::start_split()));
}

/// The frequent words of [`four_words_file`] are found and "rare" is not; the document is
/// `tally heavy-hitters --algorithm triehh++`'s over the same words, and each word's count
/// agrees with the simulator's in distribution at α ≤ 1e-6 (a simulation over moved words is
/// caught).
fn assert_triehh_plus_finds_what_the_simulator_finds(release: &HeavyHittersRelease) {
    let found: Vec<&str> = release.items.iter().map(|i| i.item.as_str()).collect();
    for word in ["the", "and", "to"] {
        assert!(found.contains(&word), "{word} not in {found:?}");
    }
    assert!(!found.contains(&"rare"), "{found:?}");
    // The document of `tally heavy-hitters --algorithm triehh++` over the same words; the
    // counts are sampled by each run.
    let offline = |file: PathBuf| {
        json(&format!(
            "heavy-hitters --algorithm triehh++ --epsilon 4 --delta 1e-6 --levels 5 --input {} \
             --seed 3 --json",
            file.display()
        ))
    };
    let simulated = offline(four_words_file());
    let federated = serde_json::to_value(release).unwrap();
    assert_same_document(
        &federated,
        &simulated,
        &[&[INPUT, SEED, "items", "trie"][..], &FROM_ITEMS].concat(),
    );
    // Each word's count is its last level's sample: the same law in both runs, and a
    // simulation over moved words is caught.
    assert_eq!(
        count_outliers(&federated, &simulated, &FOUR_WORDS),
        Vec::<String>::new()
    );
    let mutant = offline(moved_words_file());
    assert!(
        !count_outliers(&federated, &mutant, &FOUR_WORDS).is_empty(),
        "the mutant passes: {mutant}"
    );
}

/// TrieHH++ over partition-selection levels, a kind given as JSON, over 2,103 devices (900
/// "the", 700 "and", 500 "to", 3 "rare") run by a fleet against `server`: the frequent words
/// are found and "rare" is not, and the document is `tally heavy-hitters --algorithm triehh++
/// --mechanism gaussian-threshold`'s over the same words (its guarantee, per-level parameters
/// and composition; the noise is each run's own).
fn assert_triehh_plus_selection_matches_the_offline_command(server: &Server) {
    let analyst = &server.analyst;
    let kind = temp_file(
        "triehh-plus-selection.json",
        br#"{"type": "triehh-plus-selection", "mechanism": "gaussian-threshold", "levels": 5, "segment": 1}"#,
    );
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --kind-json {} --epsilon 4 --delta 1e-6 --population words \
         --expected-population 2103 --json",
        kind.display()
    )));
    let file = four_words_file();
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 300 --json",
        server.devices["words"],
        file.display()
    ));
    let rounds = report["rounds"].as_array().unwrap();
    assert!(rounds.len() >= 3, "{report}");
    assert!(rounds.iter().all(|r| r["accepted"] == 2103), "{report}");
    let federated = server.result(&info.id);
    let release: HeavyHittersRelease = parse(federated.clone());
    let found: Vec<&str> = release.items.iter().map(|i| i.item.as_str()).collect();
    for word in ["the", "and", "to"] {
        assert!(found.contains(&word), "{word} not in {found:?}");
    }
    assert!(!found.contains(&"rare"), "{found:?}");
    let offline = json(&format!(
        "heavy-hitters --algorithm triehh++ --mechanism gaussian-threshold --epsilon 4 \
         --delta 1e-6 --levels 5 --input {} --seed 3 --json",
        file.display()
    ));
    assert_same_document(
        &federated,
        &offline,
        &[&[INPUT, SEED, "items", "trie"][..], &FROM_ITEMS].concat(),
    );
}

#[test]
fn a_triehh_plus_selection_task_given_as_json_matches_the_offline_command() {
    assert_triehh_plus_selection_matches_the_offline_command(&Server::start());
}

/// [`a_triehh_plus_selection_task_given_as_json_matches_the_offline_command`] through the
/// relay: the aggregator opens the sealed ballots the relay forwards.
#[test]
fn a_triehh_plus_selection_task_through_the_relay_matches_the_offline_command() {
    assert_triehh_plus_selection_matches_the_offline_command(&Server::start_split());
}

/// TrieHH over 2,103 devices (900 "the", 700 "and", 500 "to", 3 "rare") run by a fleet
/// against a server whose aggregator's coins are seeded: the document `tally task result`
/// prints has the words, prefix tree, parameters and guarantee of `tally heavy-hitters
/// --algorithm triehh` over the same words. (The batches are drawn by different coins, so the
/// runs agree in distribution, tested in the registry's `engine::triehh` tests; with these
/// counts every frequent prefix gets far more than `θ` votes in either run.)
#[test]
fn a_triehh_task_releases_what_the_simulator_releases_for_the_same_words() {
    triehh_releases_what_the_simulator_releases(&Server::start_seeded(15));
}

/// [`a_triehh_task_releases_what_the_simulator_releases_for_the_same_words`] through the
/// relay.
#[test]
fn a_triehh_task_through_the_relay_releases_what_the_simulator_releases() {
    triehh_releases_what_the_simulator_releases(&Server::start_split());
}

fn triehh_releases_what_the_simulator_releases(server: &Server) {
    let analyst = &server.analyst;
    let file = four_words_file();
    let privacy = "--epsilon 4 --delta 1e-6 --levels 5 --neighbours replace-one";
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm triehh {privacy} --population words \
         --expected-population 2103 --min-cohort 100 --json"
    )));
    assert!(matches!(info.spec.kind, TaskKind::Triehh { levels: 5, .. }));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 500 --json",
        server.devices["words"],
        file.display()
    ));
    let rounds = report["rounds"].as_array().unwrap();
    // Every device casts a ballot every round, voters or not.
    assert!(rounds.iter().all(|r| r["accepted"] == 2103), "{report}");
    let federated: HeavyHittersRelease = parse(server.result(&info.id));
    let simulated: HeavyHittersRelease = parse(json(&format!(
        "heavy-hitters --algorithm triehh {privacy} --input {} --seed 3 --json",
        file.display()
    )));
    let found: Vec<&str> = federated.items.iter().map(|i| i.item.as_str()).collect();
    assert_eq!(found, ["and", "the", "to"]);
    assert_eq!(rounds.len(), federated.parameters["rounds_run"]);
    let released = |r: &HeavyHittersRelease| {
        serde_json::to_value((&r.mechanism, &r.items, &r.trie, &r.parameters, &r.guarantee))
            .unwrap()
    };
    assert_eq!(released(&federated), released(&simulated));
    let mut guarantee = info.guarantee.clone();
    guarantee.trust_model = simulated.guarantee.trust_model;
    assert_eq!(guarantee, federated.guarantee);
    assert_same_document(
        &serde_json::to_value(&federated).unwrap(),
        &serde_json::to_value(&simulated).unwrap(),
        &[INPUT, SEED],
    );
}

#[test]
fn a_quantile_task_releases_what_the_simulator_releases_for_the_same_parameters() {
    quantile_tasks_release_what_the_simulator_releases(&Server::start());
}

/// [`a_quantile_task_releases_what_the_simulator_releases_for_the_same_parameters`] through
/// the relay, which flips each level's sampling coins.
#[test]
fn a_quantile_task_through_the_relay_releases_what_the_simulator_releases() {
    quantile_tasks_release_what_the_simulator_releases(&Server::start_split());
}

fn quantile_tasks_release_what_the_simulator_releases(server: &Server) {
    let analyst = &server.analyst;
    let devices = &server.devices;
    // 16,000 devices; device i holds 100·(i/16000)², so the share below v is sqrt(v/100).
    let n = 16_000;
    let mut numbers = String::new();
    for i in 0..n {
        let u = f64::from(i) / f64::from(n);
        numbers.push_str(&format!("{}\n", 100.0 * u * u));
    }
    let rank = |v: f64| (v / 100.0).sqrt();
    let file = temp_file("numbers.txt", numbers.as_bytes());
    let options = "--epsilon 4 --delta 1e-6 --levels 3 --min 0 --max 100 --quantiles 0.25,0.5,0.75";
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm hierarchical-quantiles {options} \
         --population numbers --expected-population {n} --min-cohort 100 --json"
    )));
    let report = json(&format!(
        "fleet {} --input {} --seed 5 --batch 1000 --json",
        devices["numbers"],
        file.display()
    ));
    assert_eq!(report["rounds"].as_array().unwrap().len(), 3, "{report}");
    let federated_document = server.result(&info.id);
    let federated: QuantilesRelease = parse(federated_document.clone());
    // Federated tasks default to the command line's rule (tight composition of the S&T loss
    // for add/remove neighbours): the task names it, and the simulator's default matches it.
    assert!(
        matches!(
            info.spec.kind,
            TaskKind::Quantiles {
                composition: Some(Composition::Tight),
                ..
            }
        ),
        "{:?}",
        info.spec.kind
    );
    let simulated_document = json(&format!(
        "quantiles --input {} {options} --seed 5 --json",
        file.display()
    ));
    // The estimates are sampled by each run.
    assert_same_document(
        &federated_document,
        &simulated_document,
        &[INPUT, SEED, "quantiles", "parameters.estimated_total"],
    );
    let simulated: QuantilesRelease = parse(simulated_document);
    assert_eq!(federated.mechanism, simulated.mechanism);
    assert_eq!(federated.guarantee, simulated.guarantee);
    assert_eq!(
        federated.target_delta.to_bits(),
        simulated.target_delta.to_bits()
    );
    // The same parameters, except the estimated total, which each run samples.
    let mut parameters = federated.parameters.clone();
    parameters["estimated_total"] = simulated.parameters["estimated_total"].clone();
    assert_eq!(parameters, simulated.parameters);
    // Both within one leaf (64 of width 100/64) of the truth on either side, plus 6 standard
    // deviations of a rank estimated from a Poisson sample at p_s (rank and total taken as
    // independent): every leaf holds about 126 devices or more, enough to pass the threshold,
    // so no suppressed node biases the ranks.
    let rate = simulated.parameters["sampling_rate"].as_f64().unwrap();
    let noise = 6.0 * (2.0 * 0.25 * (1.0 - rate) / (rate * f64::from(n))).sqrt();
    let leaf = 100.0 / 64.0;
    for (fed, sim) in federated.quantiles.iter().zip(&simulated.quantiles) {
        assert_eq!(fed.quantile.to_bits(), sim.quantile.to_bits());
        let truth = 100.0 * fed.quantile * fed.quantile;
        let grid = rank(truth + leaf) - rank(truth - leaf);
        for value in [fed.value, sim.value] {
            let error = (rank(value) - fed.quantile).abs();
            assert!(error <= grid + noise, "{fed:?} {sim:?}: rank error {error}");
        }
    }
    let table =
        String::from_utf8(tally(&format!("task result {analyst} {}", info.id)).stdout).unwrap();
    assert!(
        table.contains("hierarchical histogram") && table.contains("quantile"),
        "{table}"
    );

    // The same by binary search: the parameters of `tally quantiles --method binary-search`.
    let options = "--epsilon 4 --delta 1e-6 --levels 5 --min 0 --max 100 --quantiles 0.5";
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm binary-search-quantiles {options} \
         --population numbers --expected-population {n} --min-cohort 100 --json"
    )));
    let report = json(&format!(
        "fleet {} --input {} --task {} --seed 6 --batch 1000 --json",
        devices["numbers"],
        file.display(),
        info.id
    ));
    assert_eq!(report["rounds"].as_array().unwrap().len(), 5, "{report}");
    let federated_document = server.result(&info.id);
    let simulated_document = json(&format!(
        "quantiles --input {} {options} --method binary-search --seed 6 --json",
        file.display()
    ));
    assert_same_document(
        &federated_document,
        &simulated_document,
        &[INPUT, SEED, "quantiles"],
    );
    let federated: QuantilesRelease = parse(federated_document);
    let simulated: QuantilesRelease = parse(simulated_document);
    assert_eq!(federated.mechanism, "binary search");
    assert_eq!(federated.parameters, simulated.parameters);
    assert_eq!(federated.guarantee, simulated.guarantee);
    let [lo, hi] = federated.quantiles[0].interval.unwrap();
    assert!((hi - lo - 100.0 / 32.0).abs() < 1e-9, "{federated:?}");

    // Words cannot answer a quantile round: the fleet says so instead of abstaining.
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm hierarchical-quantiles --epsilon 1 \
         --delta 1e-6 --levels 2 --population words --expected-population 100 --json"
    )));
    let words = temp_file("not-numbers.txt", b"apple\npear\n");
    let error = failure(&format!(
        "fleet {} --input {} --task {}",
        devices["words"],
        words.display(),
        info.id
    ));
    assert!(
        error.contains("asks for a number") && error.contains("apple"),
        "{error}"
    );
}

#[test]
fn an_operator_provisions_populations_and_credentials_through_the_server() {
    let server = Server::start();
    let url = &server.url;
    let operator = token_create(&server.db, "operator", &[]);
    let admin = format!("--server {url} --token {operator}");
    let created: tally_messages::PopulationInfo = parse(json(&format!(
        "population create {admin} fresh --budget-epsilon 2 --budget-delta 1e-6 \
         --min-cohort 10 --max-task-epsilon 1 --json"
    )));
    assert_eq!(
        (created.min_cohort, created.max_task_epsilon),
        (10, Some(1.0))
    );
    assert!(!created.allow_device_sampling && created.task_bound.is_none());
    let again = failure(&format!(
        "population create {admin} fresh --budget-epsilon 2 --budget-delta 1e-6"
    ));
    assert!(again.contains("exists already"), "{again}");
    // The operator's policies: device-side sampling and a declared S&T pair, whose share (the
    // whole budget) covers 11 rounds (`tools/reference/ledger_filter.py`).
    let bounded: tally_messages::PopulationInfo = parse(json(&format!(
        "population create {admin} bounded --budget-epsilon 2 --budget-delta 1e-5 \
         --allow-device-sampling --task-bound-rate 0.36 --task-bound-threshold 18 \
         --colluding-fraction 0.1 --json"
    )));
    assert!(bounded.allow_device_sampling);
    assert_eq!(bounded.colluding_fraction.to_bits(), 0.1_f64.to_bits());
    assert_eq!(bounded.task_bound.map(|b| b.rounds), Some(11));
    let listed = String::from_utf8(tally(&format!("population list {admin}")).stdout).unwrap();
    assert!(
        listed.contains("device-side sampling allowed")
            && listed.contains("declared pair p_s ≤ 0.36, τ ≥ 18 covering 11 rounds")
            && listed.contains("against a fraction 0.1 of devices colluding")
            && listed.contains("budget assumes honest devices (colluding fraction 0)"),
        "{listed}"
    );
    let unpaired = tally(&format!(
        "population create {admin} half --budget-epsilon 2 --budget-delta 1e-5 \
         --task-bound-rate 0.36"
    ));
    let error = String::from_utf8(unpaired.stderr).unwrap();
    assert!(
        !unpaired.status.success() && error.contains("--task-bound-threshold"),
        "{error}"
    );
    let output = tally(&format!(
        "token create {admin} --role analyst --population fresh --name bob"
    ));
    assert!(output.status.success(), "{output:?}");
    let bob = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let bob_args = format!("--server {url} --token {bob}");
    // Bob's ledger is his population's only.
    let ledger: Vec<LedgerBalance> = parse(json(&format!("ledger {bob_args} --json")));
    let names: Vec<&str> = ledger.iter().map(|b| b.population.as_str()).collect();
    assert_eq!(names, ["fresh"]);
    // The list shows him, never a secret; revoked, he is refused.
    let listed: Vec<tally_messages::CredentialInfo> =
        parse(json(&format!("token list {admin} --json")));
    let id = bob.split('_').nth(1).unwrap();
    assert!(listed.iter().any(|c| c.id == id && c.name == "bob"));
    let secret = bob.rsplit('_').next().unwrap();
    let table = String::from_utf8(tally(&format!("token list {admin}")).stdout).unwrap();
    assert!(table.contains(id) && !table.contains(secret), "{table}");
    assert!(
        tally(&format!("token revoke {admin} {id}"))
            .status
            .success()
    );
    let refused = failure(&format!("ledger {bob_args}"));
    assert!(
        refused.contains("401") || refused.contains("revoked"),
        "{refused}"
    );
    // An analyst cannot provision.
    let refused = failure(&format!(
        "population create {} other --budget-epsilon 1 --budget-delta 1e-6",
        server.analyst
    ));
    assert!(
        refused.contains("403") || refused.contains("operator"),
        "{refused}"
    );
}

/// A kind given as JSON, the `kind` of a task's spec, makes the task its options make; the
/// options of a kind do not go with it, and JSON that is no kind is refused by name.
#[test]
fn a_kind_given_as_json_makes_the_task_its_options_make() {
    let server = Server::start();
    let analyst = &server.analyst;
    let rest = "--population words --expected-population 1000 --epsilon 1 --delta 1e-8 --json";
    let by_options = json(&format!(
        "task create {analyst} --algorithm triehh++ --levels 6 --segment 2 {rest}"
    ));
    let kind = by_options["spec"]["kind"].to_string();
    let file = temp_file("kind.json", kind.as_bytes());
    let by_json = json(&format!(
        "task create {analyst} --kind-json {} {rest}",
        file.display()
    ));
    assert_eq!(by_json["spec"], by_options["spec"], "{by_json}");
    assert_eq!(by_json["guarantee"], by_options["guarantee"], "{by_json}");
    let output = tally(&format!(
        "task create {analyst} --kind-json {} --levels 3 {rest}",
        file.display()
    ));
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success());
    assert!(
        error.contains("'--kind-json <FILE>' cannot be used with '--levels <LEVELS>'"),
        "{error}"
    );
    let file = temp_file("no-kind.json", br#"{"type": "histogrm"}"#);
    let error = failure(&format!(
        "task create {analyst} --kind-json {} {rest}",
        file.display()
    ));
    assert!(
        error.contains("not a task kind") && error.contains("unknown variant `histogrm`"),
        "{error}"
    );
}

#[test]
fn federated_commands_explain_what_is_wrong() {
    let file = temp_file("two-items.txt", b"apple\npear\n");
    let error = failure(&format!(
        "client --server http://127.0.0.1:9 --input {}",
        file.display()
    ));
    assert!(error.contains("a device holds one item"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --mechanism laplace --epsilon 1 --delta 1e-6 \
         --population p --expected-population 10",
    );
    assert!(error.contains("sample-threshold"), "{error}");
    // An algorithm the runtime does not run: the parser lists the ones it does.
    let output = tally(
        "task create --server http://127.0.0.1:9 --algorithm keyed-triehh++ --epsilon 1 \
         --delta 1e-6 --population p --expected-population 10",
    );
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success());
    assert!(
        error.contains(
            "triehh++, hierarchical-quantiles, binary-search-quantiles, triehh, single-round, \
             range, opt-prefix-tree"
        ),
        "{error}"
    );
    // A range needs both ends, within the devices' units; --lo applies to ranges only.
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm range --epsilon 1 --delta 1e-6 \
         --population p --expected-population 10 --min 0 --max 100 --lo 60 --hi 160",
    );
    assert!(error.contains("--hi 160"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm single-round --epsilon 1 \
         --delta 1e-6 --population p --expected-population 10 --lo 1 --hi 2",
    );
    assert!(error.contains("--algorithm range only"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm single-round --epsilon 1 \
         --delta 1e-6 --population p --expected-population 10 --levels 3",
    );
    assert!(error.contains("--levels does not apply"), "{error}");
    // OptPrefixTree's guarantee is for replace-one neighbours, over whole multisets.
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm opt-prefix-tree --epsilon 1 \
         --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("--neighbours replace-one"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm opt-prefix-tree --levels 3 \
         --neighbours replace-one --epsilon 1 --delta 1e-6 --population p \
         --expected-population 10",
    );
    assert!(error.contains("--levels does not apply"), "{error}");
    // TrieHH's guarantee is for replace-one neighbours, its batch and threshold calibrated.
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm triehh --epsilon 1 --delta 1e-6 \
         --population p --expected-population 10",
    );
    assert!(error.contains("--neighbours replace-one"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm triehh --threshold 5 \
         --neighbours replace-one --epsilon 1 --delta 1e-6 --population p \
         --expected-population 10",
    );
    assert!(error.contains("calibrates its own threshold"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm triehh++ --beam 2 --epsilon 1 \
         --delta 1e-6 --population p --expected-population 10",
    );
    assert!(
        error.contains("--beam applies to --algorithm triehh only"),
        "{error}"
    );
    let error = failure(
        "task create --server http://127.0.0.1:9 --mechanism sample-threshold --levels 3 \
         --epsilon 1 --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("--levels"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm triehh++ --quantiles 0.5 \
         --epsilon 1 --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("--quantiles does not apply"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm hierarchical-quantiles \
         --segment 2 --epsilon 1 --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("--segment does not apply"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm binary-search-quantiles \
         --branching 2 --epsilon 1 --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("--branching does not apply"), "{error}");
    let error = failure(
        "task create --server http://127.0.0.1:9 --algorithm hierarchical-quantiles \
         --quantiles 0.5,1.5 --epsilon 1 --delta 1e-6 --population p --expected-population 10",
    );
    assert!(error.contains("invalid quantile 1.5"), "{error}");
    let error = failure("ledger --server 127.0.0.1:9");
    assert!(error.contains("http://"), "{error}");
}

/// A central domain histogram run by `tally fleet` against a server whose aggregator's coins
/// are seeded with `seed`, and by `tally histogram` with the same seed: `(federated,
/// simulated)` releases.
fn domain_histogram_releases(server: &Server, mechanism: &str, seed: u64) -> (Value, Value) {
    let analyst = &server.analyst;
    // 3,000 devices over the domain 0..16, skewed towards small elements.
    let items: String = (0..3000_u32)
        .map(|i| format!("{}\n", (i % 7) * (i % 5) % 16))
        .collect();
    let file = temp_file("elements.txt", items.as_bytes());
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism {mechanism} --domain 16 --epsilon 1 --delta 1e-6 \
         --population numbers --expected-population 3000 --min-cohort 100 --json"
    )));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --json",
        server.devices["numbers"],
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], 3000, "{report}");
    let federated = server.result(&info.id);
    let simulated = json(&format!(
        "histogram --input {} --mechanism {mechanism} --domain 16 --epsilon 1 --delta 1e-6 \
         --seed {seed} --json --colluding-fraction 0",
        file.display()
    ));
    (federated, simulated)
}

#[test]
fn central_domain_histograms_release_what_the_simulator_releases_byte_for_byte() {
    for (mechanism, seed) in [("laplace", 16), ("gaussian", 17)] {
        let (federated, simulated) =
            domain_histogram_releases(&Server::start_seeded(seed), mechanism, seed);
        assert_eq!(federated["items"].as_array().unwrap().len(), 16);
        // The same estimates, written the same way.
        assert_eq!(
            federated["items"].to_string(),
            simulated["items"].to_string(),
            "{mechanism}"
        );
        for field in ["mechanism", "model", "guarantee", "domain", "target_delta"] {
            assert_eq!(federated[field], simulated[field], "{mechanism}: {field}");
        }
        assert_same_document(&federated, &simulated, &[INPUT, SEED]);
        // The noise is the seeded aggregator's: another seed releases other counts.
        let (_, other) =
            domain_histogram_releases(&Server::start_seeded(seed + 100), mechanism, seed + 100);
        assert_ne!(other["items"], simulated["items"], "{mechanism}");
    }
}

/// The central domain histograms through the relay, whose aggregator draws its noise from the
/// operating system: the document is `tally histogram`'s but for the estimates, and every
/// element's estimate in both releases lies within the noise's bound of its true count at a
/// familywise α below 1e-6 over the 32 estimates (discrete Laplace of scale 1: `|X| < 18`,
/// `P ≤ 1.46·e^−18 ≈ 2.2e-8` each; discrete Gaussian of `σ ≈ 4.23`: `|X| < 24`, 5.67σ,
/// `P ≤ 1.5e-8` each). Counts with element 0's holders moved to element 1 are caught.
#[test]
fn central_domain_histograms_through_the_relay_release_what_the_simulator_releases() {
    let server = Server::start_split();
    let mut truth = [0_i64; 16];
    for i in 0..3000_u32 {
        truth[((i % 7) * (i % 5) % 16) as usize] += 1;
    }
    let mut moved = truth;
    moved[1] += moved[0];
    moved[0] = 0;
    for (mechanism, bound) in [("laplace", 18.0), ("gaussian", 24.0)] {
        let (federated, simulated) = domain_histogram_releases(&server, mechanism, 16);
        assert_same_document(&federated, &simulated, &[INPUT, SEED, "items"]);
        let outliers = |release: &Value, counts: &[i64; 16]| -> Vec<u64> {
            release["items"]
                .as_array()
                .unwrap()
                .iter()
                .zip(counts)
                .filter(|(item, count)| {
                    (item["estimate"].as_f64().unwrap() - **count as f64).abs() >= bound
                })
                .map(|(item, _)| item["item"].as_u64().unwrap())
                .collect()
        };
        for release in [&federated, &simulated] {
            assert_eq!(
                outliers(release, &truth),
                Vec::<u64>::new(),
                "{mechanism}: {release}"
            );
        }
        assert!(
            outliers(&federated, &moved).contains(&0),
            "{mechanism}: the mutant passes"
        );
    }
}

/// The elements of the shuffle loopback tests' 3,000 devices, over the domain 0..16: half
/// hold element 0, the others spread over the domain. With `moved`, element 0's holders hold
/// element 1 instead (the data of a mutant).
fn shuffle_items(moved: bool) -> Vec<u8> {
    (0..3000_u32)
        .map(|i| {
            let element = if i % 2 == 0 { 0 } else { i % 16 };
            format!("{}\n", if moved && element == 0 { 1 } else { element })
        })
        .collect::<String>()
        .into_bytes()
}

/// The secret seed of the shuffle loopback tests' server and simulator.
const SHUFFLE_SEED: u64 = 15;

/// A shuffle histogram over [`shuffle_items`] run by `tally fleet` (device coins from seed 3)
/// against a server whose secret coins are seeded: its release. The task leaves its minimum
/// cohort to the default, the expected population (the server refuses less); asking less is
/// refused.
fn federated_shuffle_histogram(server: &Server, mechanism: &str, epsilon: f64) -> Value {
    let analyst = &server.analyst;
    let file = temp_file("shuffle-elements.txt", &shuffle_items(false));
    let create = format!(
        "task create {analyst} --mechanism {mechanism} --domain 16 --epsilon {epsilon} \
         --delta 1e-6 --population numbers --expected-population 3000 \
         --max-report-bytes 16384 --json"
    );
    let refused = failure(&format!("{create} --min-cohort 2999"));
    assert!(refused.contains("at least 3000"), "{refused}");
    let info: TaskInfo = parse(json(&create));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --json",
        server.devices["numbers"],
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], 3000, "{report}");
    server.result(&info.id)
}

/// The same histogram by `tally histogram --truth` with the same seed, over `items`.
fn simulated_shuffle_histogram(mechanism: &str, epsilon: f64, items: &[u8]) -> Value {
    let file = temp_file("simulated.txt", items);
    json(&format!(
        "histogram --input {} --mechanism {mechanism} --domain 16 --epsilon {epsilon} \
         --delta 1e-6 --seed {SHUFFLE_SEED} --truth --json --colluding-fraction 0",
        file.display()
    ))
}

/// How far apart two independent releases of an element held by `count` of the 3,000
/// devices may lie: 5.7 standard deviations of their difference (normal approximation;
/// two-sided α ≈ 1.2e-8 per element, below 1e-6 over the 16 elements), plus, for
/// Balcer–Cheu, the jump of its analyzer's rule at `count = n` (`n(1 − p) + 1`).
fn shuffle_tolerance(release: &Value, count: f64) -> f64 {
    const N: f64 = 3000.0;
    const K: f64 = 16.0;
    let z = 5.7;
    match release["mechanism"].as_str().unwrap() {
        "shuffled-grr" => {
            let e = release["local_epsilon"].as_f64().unwrap().exp();
            let (p, q) = (e / (e + K - 1.0), 1.0 / (e + K - 1.0));
            let variance = (count * p * (1.0 - p) + (N - count) * q * (1.0 - q)) / (p - q).powi(2);
            z * (2.0 * variance).sqrt()
        }
        "balcer-cheu" => {
            let p = (release["messages_per_client"].as_f64().unwrap() - 1.0) / K;
            z * (2.0 * N * p * (1.0 - p)).sqrt() + N * (1.0 - p) + 1.0
        }
        "ghazi-hadamard" => {
            // Lemma 4.5: the other tuples' spurious decodings, Bin(N − count, 2^−τ) over
            // (1 − 2^−τ), with N = (1 + ρ)n tuples and τ = ⌊log2 n⌋ = 11.
            let tuples = release["messages_per_client"].as_f64().unwrap() * N;
            let q = (-11.0_f64).exp2();
            let variance = (tuples - count) * q / (1.0 - q);
            z * (2.0 * variance).sqrt()
        }
        other => panic!("not a shuffle mechanism: {other}"),
    }
}

/// The elements whose federated and simulated estimates lie further apart than
/// [`shuffle_tolerance`] at their true counts.
fn shuffle_outliers(federated: &Value, simulated: &Value) -> Vec<u64> {
    let (ours, theirs) = (
        federated["items"].as_array().unwrap(),
        simulated["items"].as_array().unwrap(),
    );
    assert_eq!(ours.len(), 16);
    assert_eq!(theirs.len(), 16);
    ours.iter()
        .zip(theirs)
        .filter(|(ours, theirs)| {
            let count = theirs["true_count"].as_f64().unwrap();
            let gap = ours["estimate"].as_f64().unwrap() - theirs["estimate"].as_f64().unwrap();
            gap.abs() > shuffle_tolerance(simulated, count)
        })
        .map(|(ours, _)| ours["item"].as_u64().unwrap())
        .collect()
}

/// Balcer–Cheu, shuffled GRR and Ghazi et al.'s Hadamard protocol run through the server's
/// shuffler by 3,000 devices of
/// `tally fleet` release what the simulator releases, in distribution (the devices' coins
/// differ): every element's two estimates within the tolerance at α ≤ 1e-6, under the same
/// guarantee. A simulator run on data with element 0's holders moved to element 1 is caught.
#[test]
fn stat_shuffle_histograms_release_what_the_simulator_releases_in_distribution() {
    shuffle_histograms_release_what_the_simulator_releases(|| Server::start_seeded(SHUFFLE_SEED));
}

/// [`stat_shuffle_histograms_release_what_the_simulator_releases_in_distribution`] through
/// the relay, which is the shuffler: each device seals each of its messages on its own and
/// the relay permutes all of them together.
#[test]
fn stat_shuffle_histograms_through_the_relay_release_what_the_simulator_releases() {
    shuffle_histograms_release_what_the_simulator_releases(Server::start_split);
}

fn shuffle_histograms_release_what_the_simulator_releases(start: impl Fn() -> Server) {
    for (mechanism, epsilon) in [
        ("shuffled-grr", 1.0),
        ("balcer-cheu", 2.0),
        ("ghazi-hadamard", 1.0),
    ] {
        let federated = federated_shuffle_histogram(&start(), mechanism, epsilon);
        let simulated = simulated_shuffle_histogram(mechanism, epsilon, &shuffle_items(false));
        for field in [
            "mechanism",
            "model",
            "guarantee",
            "local_guarantee",
            "domain",
            "target_delta",
            "messages_per_client",
        ] {
            assert_eq!(federated[field], simulated[field], "{mechanism}: {field}");
        }
        assert_eq!(federated["model"], "shuffle", "{mechanism}");
        // The devices' coins are their own: the estimates agree in distribution (below); the
        // simulation's truth is its own.
        let offline = without(&simulated, &["mean_absolute_error"]);
        assert_same_document(&federated, &offline, &[INPUT, SEED, "items"]);
        assert_eq!(
            shuffle_outliers(&federated, &simulated),
            Vec::<u64>::new(),
            "{mechanism}: {federated} against {simulated}"
        );
        let mutant = simulated_shuffle_histogram(mechanism, epsilon, &shuffle_items(true));
        assert!(
            shuffle_outliers(&federated, &mutant).contains(&0),
            "{mechanism}: the mutant passes: {federated} against {mutant}"
        );
    }
}

/// The Count-Min loopback test's devices, half holding each element.
const COUNT_MIN_DEVICES: u64 = 3000;

/// The smallest `ε` (to 0.1) at which Count-Min's reports for [`COUNT_MIN_DEVICES`] devices
/// over `B = 2` at `δ = 1e-6` fit the largest `--max-report-bytes`, by the exact analysis of
/// the blanket: `γ = 0.0839`, a blanket of 4,531 cells on average capped at 5,019 of the
/// 54,000, so the longest report is 5,028 cells of 5 digits, 30,167 bytes (at `ε = 1.1`: a cap
/// of 5,941, 35,699 bytes). Lemma 4.10 needed `ε = 21.4` for a blanket of that size.
const COUNT_MIN_EPSILON: f64 = 1.2;

/// Count-Min's rows `τ = ⌈log2(2B/β)⌉` for `B = 2` and the server's `β = 0.01`.
const COUNT_MIN_ROWS: u32 = 9;

/// Whether a Count-Min estimate of an element held by `count` devices is one its law admits
/// at familywise α ≤ 1e-6 over the test's eight checks (two releases, two elements, two
/// tails; 1e-7 each).
///
/// The estimate is `min_t C[t, h_t(j)] − γn`, where row `t`'s cell holds the `count` holders,
/// `X_t ~ Bin(n, γ)` blanket messages (independent across rows) and, if the other element's
/// hash collides with `j`'s in that row, its holders too. Collisions only raise a cell, so
/// `P[min ≤ m] ≤ τ·P[X ≤ m]`; at most three of the nine rows collide but with probability
/// below `C(9, 4)/(2n)^4 ≈ 1e-13 ≤ 5e-10` (pairwise-independent hashes over `2n` cells), so
/// `P[min ≥ m] ≤ P[X ≥ m]^(τ−3) + 5e-10`. `γn` is read back from the messages per client,
/// `τ + 2τn·γ`. The devices' capped blankets change that law by at most `nη ≤ 1e-8` in total
/// variation (`docs/privacy/ghazi.md`), which adds at most that to the familywise α.
fn count_min_admits(release: &Value, element: usize, count: f64) -> bool {
    let rows = f64::from(COUNT_MIN_ROWS);
    let blanket = (release["messages_per_client"].as_f64().unwrap() - rows) / (2.0 * rows);
    let estimate = release["items"][element]["estimate"].as_f64().unwrap();
    let gamma = blanket / COUNT_MIN_DEVICES as f64;
    prefix_tree::sketch_minimum_admits(
        estimate,
        count,
        COUNT_MIN_DEVICES,
        gamma,
        COUNT_MIN_ROWS,
        COUNT_MIN_ROWS - 3,
        5e-10,
    )
}

/// Ghazi et al.'s Count-Min protocol, run through the server's shuffler by `tally fleet` over
/// 3,000 devices (`B = 2`, `ε = 1.2`, `δ = 1e-6`: [`COUNT_MIN_EPSILON`]), releases what the
/// simulator releases, in distribution: both releases' estimates lie where the exact law of
/// the sketch's minimum puts them ([`count_min_admits`]), under the same guarantee and
/// parameters. A release of data with element 0's holders moved to element 1 is caught; a
/// smaller `ε`, whose longest report does not fit, is refused, and so is a round that would
/// wait for more devices than the blanket's cap counts.
#[test]
fn a_count_min_histogram_runs_over_a_fleet_where_its_reports_fit() {
    let server = Server::start_seeded(SHUFFLE_SEED);
    let analyst = &server.analyst;
    let text: String = (0..COUNT_MIN_DEVICES)
        .map(|i| format!("{}\n", i % 2))
        .collect();
    let moved: String = (0..COUNT_MIN_DEVICES).map(|_| "1\n").collect();
    let file = temp_file("count-min-elements.txt", text.as_bytes());
    let create = |epsilon: f64, options: &str| {
        format!(
            "task create {analyst} --mechanism ghazi-count-min --domain 2 --epsilon {epsilon} \
             --delta 1e-6 --population {WEAK_POPULATION} --expected-population \
             {COUNT_MIN_DEVICES} --max-report-bytes 32768 {options} --json"
        )
    };
    let refused = failure(&create(1.1, ""));
    assert!(
        refused.contains("longest report a device could send is 35699 bytes"),
        "{refused}"
    );
    let waits = failure(&create(COUNT_MIN_EPSILON, "--cohort-target 3001"));
    assert!(
        waits.contains("cohort_target 3001") && waits.contains("at most 3000"),
        "{waits}"
    );
    let info: TaskInfo = parse(json(&create(COUNT_MIN_EPSILON, "")));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --json",
        server.devices[WEAK_POPULATION],
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], COUNT_MIN_DEVICES, "{report}");
    let federated = json(&format!("task result {analyst} {} --json", info.id));
    let offline = |items: &str| {
        let file = temp_file("count-min-simulated.txt", items.as_bytes());
        json(&format!(
            "histogram --input {} --mechanism ghazi-count-min --domain 2 --epsilon \
             {COUNT_MIN_EPSILON} --delta 1e-6 --seed {SHUFFLE_SEED} --truth --json \
             --colluding-fraction 0",
            file.display()
        ))
    };
    let simulated = offline(&text);
    for field in [
        "mechanism",
        "model",
        "guarantee",
        "domain",
        "target_delta",
        "messages_per_client",
    ] {
        assert_eq!(federated[field], simulated[field], "{field}");
    }
    let half = COUNT_MIN_DEVICES as f64 / 2.0;
    for release in [&federated, &simulated] {
        for element in 0..2 {
            assert!(count_min_admits(release, element, half), "{release}");
        }
    }
    let mutant = offline(&moved);
    assert!(
        !count_min_admits(&mutant, 0, half),
        "the mutant passes: {mutant}"
    );
}

/// The acceptance run of `tally heavy-hitters --algorithm opt-prefix-tree` deployed: one
/// device per speaker of the Shakespeare speakers file, each holding all its words (1,419
/// devices, 835,229 words), through `tally serve`, `tally fleet --whole-clients` and `tally
/// task result`. Every device reports in every iteration; the document is the offline
/// command's for the same options (the same solved `ε₀`, guarantees and parameters; the first
/// iteration, whose query is the root's, with the same domain and noise scale),
/// and it finds the words the simulator finds most often. That each iteration's sums follow
/// the simulator's law at α = 1e-6 is tested on the server's task in
/// `tally-protocol/src/engine/opt_prefix_tree.rs`.
#[test]
fn an_opt_prefix_tree_task_over_whole_speakers_matches_the_offline_command() {
    assert_opt_prefix_tree_task_matches_the_offline_command(&Server::start());
}

/// [`an_opt_prefix_tree_task_over_whole_speakers_matches_the_offline_command`] through the
/// relay: each speaker's device seals its report, the relay shuffles every iteration's.
#[test]
fn an_opt_prefix_tree_task_through_the_relay_matches_the_offline_command() {
    assert_opt_prefix_tree_task_matches_the_offline_command(&Server::start_split());
}

/// The OptPrefixTree task over whole speakers through `server` prints the offline command's
/// document and finds words.
fn assert_opt_prefix_tree_task_matches_the_offline_command(server: &Server) {
    let analyst = &server.analyst;
    let speakers = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/shakespeare/shakespeare_speakers.tsv.gz"
    );
    let options = "--epsilon 8 --delta 1e-6 --neighbours replace-one --domain-cap 4097 \
                   --iterations 4";
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm opt-prefix-tree {options} --population words \
         --expected-population 1419 --min-cohort 1419 --max-report-bytes 1100 --json"
    )));
    assert!(matches!(info.spec.kind, TaskKind::OptPrefixTree(_)));
    let report = json(&format!(
        "fleet {} --input {speakers} --format tsv --whole-clients --seed 3 --batch 200 --json",
        server.devices["words"]
    ));
    let rounds = report["rounds"].as_array().unwrap();
    assert!(!rounds.is_empty());
    assert!(
        rounds
            .iter()
            .all(|r| r["accepted"] == 1419 && r["reports"] == 1419),
        "{report}"
    );
    let federated = server.result(&info.id);
    let simulated = json(&format!(
        "heavy-hitters --algorithm opt-prefix-tree {options} --input {speakers} --format tsv \
         --seed 3 --json --colluding-fraction 0"
    ));
    for key in ["mechanism", "guarantee", "local_guarantee"] {
        assert_eq!(federated[key], simulated[key], "{key}");
    }
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        federated["guarantee"]
    );
    let parameters = federated["parameters"].as_object().unwrap();
    for (key, value) in parameters {
        assert_eq!(&simulated["parameters"][key], value, "{key}");
    }
    let first = |doc: &Value| {
        let it = &doc["iterations"][0];
        (it["domain_size"].clone(), it["sigma"].clone())
    };
    assert_eq!(first(&federated), first(&simulated));
    assert_eq!(
        rounds.len(),
        federated["iterations"].as_array().unwrap().len()
    );
    let words = |doc: &Value| -> Vec<String> {
        doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["item"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!words(&federated).is_empty() && !words(&simulated).is_empty());
    assert_eq!(federated["found_items"], words(&federated).len());
    // The same document but for what only a simulation knows (the captured mass, how it drew
    // the sums, its data points) and what each run samples (the words and the iterations).
    let offline = without(
        &simulated,
        &[
            "captured_mass",
            "captured_user_mass",
            "false_positives",
            "parameters.aggregation",
            "parameters.data_points",
        ],
    );
    assert_same_document(
        &federated,
        &offline,
        &[
            INPUT,
            SEED,
            "items",
            "found_items",
            "iterations",
            "parameters.iterations_run",
        ],
    );
}

/// The variance of a local mechanism's estimate of an element held by `count` of `n`
/// devices over a domain of `domain` elements at `ε = 1`.
fn local_variance(mechanism: &str, domain: u32, n: u64, count: u64) -> f64 {
    use tally_core::ldp::{Grr, HadamardResponse, Olh, SubsetSelection, UnaryRandomizer};
    let law = match mechanism {
        "grr" => Grr::new(domain, 1.0).unwrap().support_probabilities(),
        "sue" => UnaryRandomizer::sue(domain, 1.0)
            .unwrap()
            .support_probabilities(),
        "oue" => UnaryRandomizer::oue(domain, 1.0)
            .unwrap()
            .support_probabilities(),
        "olh" => Olh::new(domain, 1.0).unwrap().support_probabilities(),
        "hadamard-response" => HadamardResponse::new(domain, 1.0)
            .unwrap()
            .support_probabilities(),
        "subset-selection" => SubsetSelection::new(domain, 1.0)
            .unwrap()
            .support_probabilities(),
        other => panic!("not a local mechanism: {other}"),
    };
    law.variance(n, count)
}

/// The local mechanisms through `tally serve` (the binary) and a fleet of 3,000 devices,
/// each randomizing with its own coins, against `tally histogram` on the same elements: the
/// same document but for the estimates, which the device coins make differ; those agree in
/// distribution. Each release's estimate of every element is within 6 standard deviations of
/// the true count, and the two within 6·√2 of each other (288 tests, each failing by chance
/// with probability below 2e-9: a familywise α below 1e-6). The core rounds' law over many
/// runs is tested in tally-sim's `local_rounds`.
#[test]
fn local_domain_histograms_run_over_a_fleet_as_in_the_simulator() {
    local_domain_histograms_run_as_in_the_simulator(&Server::start());
}

/// [`local_domain_histograms_run_over_a_fleet_as_in_the_simulator`] through the relay.
#[test]
fn local_domain_histograms_through_the_relay_run_as_in_the_simulator() {
    local_domain_histograms_run_as_in_the_simulator(&Server::start_split());
}

fn local_domain_histograms_run_as_in_the_simulator(server: &Server) {
    let analyst = &server.analyst;
    let items: Vec<u32> = (0..3000_u32).map(|i| (i % 7) * (i % 5) % 16).collect();
    let mut truth = [0_u64; 16];
    for &x in &items {
        truth[x as usize] += 1;
    }
    let text: String = items.iter().map(|x| format!("{x}\n")).collect();
    let file = temp_file("local-elements.txt", text.as_bytes());
    for mechanism in [
        "grr",
        "sue",
        "oue",
        "olh",
        "hadamard-response",
        "subset-selection",
    ] {
        let info: TaskInfo = parse(json(&format!(
            "task create {analyst} --mechanism {mechanism} --domain 16 --epsilon 1 \
             --delta 1e-6 --population numbers --expected-population 3000 --min-cohort 100 \
             --json"
        )));
        let report = json(&format!(
            "fleet {} --input {} --seed 3 --json",
            server.devices["numbers"],
            file.display()
        ));
        assert_eq!(report["total"]["accepted"], 3000, "{mechanism}: {report}");
        let federated = server.result(&info.id);
        let simulated = json(&format!(
            "histogram --input {} --mechanism {mechanism} --domain 16 --epsilon 1 \
             --delta 1e-6 --seed 5 --json --colluding-fraction 0",
            file.display()
        ));
        for field in [
            "mechanism",
            "model",
            "guarantee",
            "local_guarantee",
            "local_epsilon",
            "domain",
            "messages_per_client",
            "bits_per_message",
            "target_delta",
        ] {
            assert_eq!(federated[field], simulated[field], "{mechanism}: {field}");
        }
        assert_eq!(federated["model"], "local");
        // The devices' coins are their own: the estimates agree in distribution (below).
        assert_same_document(&federated, &simulated, &[INPUT, SEED, "items"]);
        let estimates = |release: &Value| -> Vec<f64> {
            release["items"]
                .as_array()
                .unwrap()
                .iter()
                .zip(0_u64..)
                .map(|(item, x)| {
                    assert_eq!(item["item"], x);
                    item["estimate"].as_f64().unwrap()
                })
                .collect()
        };
        let (federated, simulated) = (estimates(&federated), estimates(&simulated));
        assert_eq!(federated.len(), 16, "{mechanism}");
        for (x, &count) in truth.iter().enumerate() {
            let sd = local_variance(mechanism, 16, 3000, count).sqrt();
            let (f, s) = (federated[x], simulated[x]);
            assert!(
                (f - count as f64).abs() < 6.0 * sd,
                "{mechanism} {x}: {f} vs {count}"
            );
            assert!(
                (s - count as f64).abs() < 6.0 * sd,
                "{mechanism} {x}: {s} vs {count}"
            );
            assert!(
                (f - s).abs() < 6.0 * std::f64::consts::SQRT_2 * sd,
                "{mechanism} {x}: {f} vs {s}"
            );
        }
    }
}

/// `document` without the fields at the dotted `paths` (each must be there).
fn without(document: &Value, paths: &[&str]) -> Value {
    let mut document = document.clone();
    for path in paths {
        let (parent, field) = path.rsplit_once('.').unwrap_or(("", path));
        let mut node = &mut document;
        for part in parent.split('.').filter(|p| !p.is_empty()) {
            node = &mut node[part];
        }
        let removed = node.as_object_mut().and_then(|o| o.remove(field));
        assert!(removed.is_some(), "no {path} in the document");
    }
    document
}

/// The parts of a diagnosis read from the released items, which differ where the items do.
const FROM_ITEMS: [&str; 2] = ["diagnosis.largest_released_count", "diagnosis.explanation"];

/// Asserts that the document `tally task result --json` printed is the offline command's:
/// the same top-level fields, every value equal but those at the dotted paths of `differ`
/// (which each caller says why cannot match).
fn assert_same_document(federated: &Value, offline: &Value, differ: &[&str]) {
    let fields = |d: &Value| -> Vec<String> { d.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        fields(federated),
        fields(offline),
        "{federated} against {offline}"
    );
    assert_eq!(
        without(federated, differ),
        without(offline, differ),
        "{federated} against {offline}"
    );
}

/// What a document's description of its input says for a federated run and a file.
const INPUT: &str = "input";
/// The seed of a simulation, which a federated run has none of.
const SEED: &str = "seed";

/// A single-round heavy-hitter task over the 2,103 devices of [`four_words_file`] run by a
/// fleet against a server whose aggregator's coins are seeded with `seed`, one request at a
/// time so that the reports arrive in the same order: its release.
fn single_round_release(server: &Server) -> Value {
    let analyst = &server.analyst;
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm single-round --epsilon 1 --delta 1e-6 \
         --population words --expected-population 2103 --min-cohort 100 --json"
    )));
    assert!(matches!(info.spec.kind, TaskKind::SingleRound { .. }));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 300 --concurrency 1 --json",
        server.devices["words"],
        four_words_file().display()
    ));
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{report}");
    assert_eq!(rounds[0]["accepted"], 2103, "{report}");
    let release = server.result(&info.id);
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        release["guarantee"]
    );
    let table =
        String::from_utf8(tally(&format!("task result {analyst} {}", info.id)).stdout).unwrap();
    assert!(table.contains("single-round heavy hitters"), "{table}");
    release
}

/// The released `(word, count)` pairs of a heavy-hitter document.
fn word_counts(release: &Value) -> Vec<(String, u64)> {
    release["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let word = i["item"].as_str().unwrap().to_owned();
            (word, i["count"].as_u64().unwrap())
        })
        .collect()
}

/// The words whose sampled counts in two independent releases of the same sample-and-threshold
/// rounds lie further apart than 5.7 standard deviations of the difference of two
/// Binomial(`holders`, `p_s`) counts (two-sided α ≈ 1.2e-8 per word, below 1e-6 over the
/// words), or that only one of them released. A word's count is one round's sample of its
/// holders: the histogram's, single-round's, or TrieHH++'s at the word's last level.
fn count_outliers(ours: &Value, theirs: &Value, holders: &[(&str, u64)]) -> Vec<String> {
    let rate = ours["parameters"]["sampling_rate"].as_f64().unwrap();
    let theirs: HashMap<String, u64> = word_counts(theirs).into_iter().collect();
    let ours: HashMap<String, u64> = word_counts(ours).into_iter().collect();
    let mut outliers: Vec<String> = ours
        .keys()
        .chain(theirs.keys())
        .filter(|word| {
            let n = holders.iter().find(|(w, _)| w == word).map_or(0, |h| h.1) as f64;
            let tolerance = 5.7 * (2.0 * n * rate * (1.0 - rate)).sqrt();
            match (ours.get(*word), theirs.get(*word)) {
                (Some(&a), Some(&b)) => (a as f64 - b as f64).abs() > tolerance,
                _ => true,
            }
        })
        .cloned()
        .collect();
    outliers.sort();
    outliers.dedup();
    outliers
}

/// `tally task create --algorithm single-round` over 2,103 devices: the same seeded server
/// releases the same document byte for byte; the document is `tally heavy-hitters
/// --algorithm single-round`'s (same fields, parameters and guarantee; the input and seed
/// cannot match, the sampled counts match in distribution at α ≤ 1e-6), and a simulation
/// over data with "the"'s holders moved to "to" is caught.
#[test]
fn a_single_round_task_releases_what_the_offline_command_releases() {
    let federated = single_round_release(&Server::start_seeded(21));
    let again = single_round_release(&Server::start_seeded(21));
    assert_eq!(again.to_string(), federated.to_string());
    assert_single_round_releases_what_the_offline_command_releases(&federated);
}

/// [`a_single_round_task_releases_what_the_offline_command_releases`] through the relay,
/// which flips the sampling coins.
#[test]
fn a_single_round_task_through_the_relay_releases_what_the_offline_command_releases() {
    let federated = single_round_release(&Server::start_split());
    assert_single_round_releases_what_the_offline_command_releases(&federated);
}

/// The document of a single-round task over [`four_words_file`] is `tally heavy-hitters
/// --algorithm single-round`'s, and its counts agree in distribution (a simulation over moved
/// words is caught).
fn assert_single_round_releases_what_the_offline_command_releases(federated: &Value) {
    let holders = FOUR_WORDS;
    let offline = |file: &PathBuf| {
        json(&format!(
            "heavy-hitters --algorithm single-round --epsilon 1 --delta 1e-6 --input {} \
             --seed 3 --json",
            file.display()
        ))
    };
    let simulated = offline(&four_words_file());
    assert_same_document(
        federated,
        &simulated,
        &[&[INPUT, SEED, "items"][..], &FROM_ITEMS].concat(),
    );
    let found: Vec<String> = word_counts(federated).into_iter().map(|w| w.0).collect();
    assert_eq!(found, ["the", "and", "to"]);
    assert_eq!(
        count_outliers(federated, &simulated, &holders),
        Vec::<String>::new()
    );
    let mutant = offline(&moved_words_file());
    assert!(
        !count_outliers(federated, &mutant, &holders).is_empty(),
        "the mutant passes: {mutant}"
    );
}

/// 16,000 devices' numbers in [0, 100]: device i holds 100·(i/16000)².
fn skewed_numbers(shift: f64) -> PathBuf {
    let n = 16_000;
    let numbers: String = (0..n)
        .map(|i| {
            let u = f64::from(i) / f64::from(n);
            format!("{}\n", (100.0 * u * u + shift).min(100.0))
        })
        .collect();
    temp_file(&format!("skewed-{shift}.txt"), numbers.as_bytes())
}

/// The estimated count of a range document.
fn range_estimate(release: &Value) -> f64 {
    release["estimate"].as_f64().unwrap()
}

/// `tally task create --algorithm range` over 16,000 devices: the document is `tally
/// range`'s (same fields, parameters, guarantee and snapped range; the input and seed cannot
/// match, and the sampled estimates match in distribution at α ≤ 1e-6); a simulation over
/// numbers shifted up by 10 is caught.
#[test]
fn a_range_task_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_tally_range_releases(&Server::start());
}

/// [`a_range_task_releases_what_the_offline_command_releases`] through the relay, which
/// flips every level's sampling coins.
#[test]
fn a_range_task_through_the_relay_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_tally_range_releases(&Server::start_split());
}

/// The S&T range task over 16,000 devices through `server`: the document is `tally range`'s
/// and its estimate agrees in distribution (a simulation over shifted numbers is caught).
fn assert_range_task_releases_what_tally_range_releases(server: &Server) {
    let analyst = &server.analyst;
    let file = skewed_numbers(0.0);
    let options = "--epsilon 4 --delta 1e-6 --levels 3 --min 0 --max 100 --lo 10 --hi 60";
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --algorithm range {options} --population numbers \
         --expected-population 16000 --min-cohort 100 --json"
    )));
    assert!(matches!(
        info.spec.kind,
        TaskKind::Range {
            levels: 3,
            composition: Some(Composition::Tight),
            ..
        }
    ));
    let report = json(&format!(
        "fleet {} --input {} --seed 5 --batch 1000 --json",
        server.devices["numbers"],
        file.display()
    ));
    assert_eq!(report["rounds"].as_array().unwrap().len(), 3, "{report}");
    let federated = server.result(&info.id);
    let offline = |file: &PathBuf| {
        json(&format!(
            "range --input {} {options} --seed 5 --json",
            file.display()
        ))
    };
    let simulated = offline(&file);
    // The estimates are sampled by each run.
    let sampled = [
        "estimate",
        "fraction",
        "estimated_total",
        "parameters.estimated_total",
    ];
    assert_same_document(
        &federated,
        &simulated,
        &[&[INPUT, SEED][..], &sampled].concat(),
    );
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        federated["guarantee"]
    );
    // [10, 60) snaps to leaves of width 100/64: [9.375, 59.375), which holds the devices
    // with i/16000 in [sqrt(0.09375), sqrt(0.59375)).
    assert_eq!(federated["range"]["grid_lo"], 9.375);
    assert_eq!(federated["range"]["grid_hi"], 59.375);
    let truth = (0..16_000)
        .map(|i| 100.0 * (f64::from(i) / 16_000.0).powi(2))
        .filter(|v| (9.375..59.375).contains(v))
        .count() as f64;
    // The estimate sums disjoint nodes' count / p_s, each count Binomial(holders, p_s): its
    // variance is truth·(1 − p_s)/p_s; every node holds enough devices to pass the
    // threshold. 5.7 standard deviations: two-sided α ≈ 1.2e-8.
    let rate = federated["parameters"]["sampling_rate"].as_f64().unwrap();
    let sd = (truth * (1.0 - rate) / rate).sqrt();
    for release in [&federated, &simulated] {
        let estimate = range_estimate(release);
        assert!(
            (estimate - truth).abs() < 5.7 * sd,
            "{estimate} against {truth}"
        );
    }
    let gap = |other: &Value| (range_estimate(&federated) - range_estimate(other)).abs();
    assert!(gap(&simulated) < 5.7 * std::f64::consts::SQRT_2 * sd);
    let mutant = offline(&skewed_numbers(10.0));
    assert!(
        gap(&mutant) > 5.7 * std::f64::consts::SQRT_2 * sd,
        "the mutant passes: {mutant}"
    );
    let table =
        String::from_utf8(tally(&format!("task result {analyst} {}", info.id)).stdout).unwrap();
    assert!(
        table.contains("range count") && table.contains("9.375"),
        "{table}"
    );
}

/// `tally task create --mechanism sample-threshold` over the 2,103 devices of
/// [`four_words_file`]: `tally task result --json` prints the document of `tally histogram
/// --json` (how each ran, its input and seed cannot match), and the sampled counts agree in
/// distribution at α ≤ 1e-6 (a mutant of the same round is caught by the single-round test).
#[test]
fn a_histogram_task_prints_the_offline_document() {
    let server = Server::start();
    let analyst = &server.analyst;
    let file = four_words_file();
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population words --expected-population 2103 --min-cohort 100 --json"
    )));
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 500 --json",
        server.devices["words"],
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], 2103, "{report}");
    let federated = json(&format!("task result {analyst} {} --json", info.id));
    let offline = json(&format!(
        "histogram --mechanism sample-threshold --epsilon 1 --delta 1e-6 --input {} --seed 3 \
         --json",
        file.display()
    ));
    assert_eq!(federated["execution"], "federated");
    assert_same_document(
        &federated,
        &offline,
        &[&[INPUT, SEED, "execution", "items"][..], &FROM_ITEMS].concat(),
    );
    assert_eq!(federated["released_items"], 3, "{federated}");
    assert_eq!(
        count_outliers(&federated, &offline, &FOUR_WORDS),
        Vec::<String>::new()
    );
}

/// A range-query tree test's numbers in [0, 100] for `devices` devices: device i holds
/// 100·(i/devices)², plus `shift` (at most 100; the data of a mutant).
fn tree_numbers(devices: u32, shift: f64) -> PathBuf {
    let numbers: String = (0..devices)
        .map(|i| format!("{}\n", (tree_number(i, devices) + shift).min(100.0)))
        .collect();
    temp_file(&format!("tree-{devices}-{shift}.txt"), numbers.as_bytes())
}

/// Device i's number in [`tree_numbers`] for `devices` devices.
fn tree_number(i: u32, devices: u32) -> f64 {
    100.0 * (f64::from(i) / f64::from(devices)).powi(2)
}

/// The devices of the range-query tree tests on Hadamard's oracle.
const HADAMARD_TREE_DEVICES: u32 = 3000;

/// The range-query tree tests' shape: 4 leaves (`--levels 2`, sets of `k = 3` nodes) over
/// `[0, 100]`.
const TREE_SHAPE: &str = "--levels 2 --min 0 --max 100";

/// The frequency oracle of a range-query tree test, and its devices, at parameters whose
/// reports fit the largest `--max-report-bytes`.
#[derive(Clone, Copy, Debug)]
enum TreeOracle {
    /// Ghazi et al.'s Hadamard protocol for [`HADAMARD_TREE_DEVICES`] at `ε = 1` and
    /// `δ = 1e-3`: by the exact analysis of its blanket 87 tuples of 9 hexadecimal digits, 869
    /// bytes (Theorem 4.3 needed 3,146 tuples, 31,459 bytes).
    Hadamard,
    /// Count-Min at `β = 1/2` (`τ = 4` rows of `2kn` cells, `k = 3`) for the devices and at the
    /// privacy of a [`CountMinTree`].
    CountMin(CountMinTree),
}

/// The devices and the privacy of a Count-Min range-query tree test. A device sends its
/// `kτ = 12` cells and a blanket of `2kτ·γn` cells on average (`γn` the mean blanket of one
/// cell over all devices), at most the cap `q`.
#[derive(Clone, Copy, Debug)]
struct CountMinTree {
    /// The devices `n`, for which the task is calibrated.
    devices: u32,
    /// Its `ε`.
    epsilon: f64,
    /// Its `δ`.
    delta: f64,
}

/// 3,000 devices at `δ = 1e-6` and the smallest integer `ε` that fits by the exact analysis, 3:
/// `γ = 0.0621` (`γn = 186.4`), a blanket of 4,473 cells on average, capped at 4,978, so at
/// most 4,990 cells of 5 digits, 29,939 bytes (`ε = 2`: 64,751 bytes; Lemma 4.10 needed
/// `ε = 34`).
const COUNT_MIN_TREE: CountMinTree = CountMinTree {
    devices: 3000,
    epsilon: 3.0,
    delta: 1e-6,
};

/// The tree through the relay, where every device seals each of its cells on its own: 13.5
/// million seals for [`COUNT_MIN_TREE`]'s devices, so 100 devices at `ε = 8` and `δ = 1e-3`
/// (within [`WEAK_POPULATION`]'s budget, `δ` below `1/n`). The exact analysis's `γn` hardly
/// falls beyond `ε = 8` (to 24.8 from `ε = 12` on): what remains pays for a moved cell's
/// blanket coming up empty, which only `δ` bounds. `γ = 0.2630` (`γn = 26.3`, standard
/// deviation 4.4), a blanket of 631 cells on average, capped at 784, so at most 796 cells of
/// 4 digits, 3,979 bytes, and about 64,300 seals in all. Its 71 devices in `[0, 50)` are
/// none for the mutant, beyond the gap tolerance `2a = 44`.
const RELAYED_COUNT_MIN_TREE: CountMinTree = CountMinTree {
    devices: 100,
    epsilon: 8.0,
    delta: 1e-3,
};

impl TreeOracle {
    /// Its `--mechanism`.
    fn mechanism(self) -> &'static str {
        match self {
            Self::Hadamard => "ghazi-hadamard",
            Self::CountMin(_) => "ghazi-count-min",
        }
    }

    /// The devices of its tests.
    fn devices(self) -> u32 {
        match self {
            Self::Hadamard => HADAMARD_TREE_DEVICES,
            Self::CountMin(tree) => tree.devices,
        }
    }

    /// Its mechanism, the tree's shape and its privacy options, as `tally task create` and
    /// the offline commands take them.
    fn options(self) -> String {
        let privacy = match self {
            Self::Hadamard => "--epsilon 1 --delta 1e-3".to_owned(),
            Self::CountMin(tree) => format!(
                "--epsilon {} --delta {} --failure-probability 0.5",
                tree.epsilon, tree.delta
            ),
        };
        format!("--mechanism {} {TREE_SHAPE} {privacy}", self.mechanism())
    }

    /// How far one chosen node's estimate may stray from its count, except with probability
    /// at most `1e-7` (over the devices' coins and the public hash functions).
    ///
    /// Hadamard: 5.7 standard deviations (two-sided α ≈ 1.2e-8, normal approximation) of the
    /// estimate of a node nobody holds, the largest (the square root of
    /// `HadamardParams::null_variance`: spurious decodings of every other tuple, Lemma 4.5).
    ///
    /// Count-Min: the estimate is the count plus `min_t (X_t + C_t) − γn`, with the rows'
    /// blankets `X_t ~ Bin(n, γ)` independent and `C_t ≥ 0` the holders of the other 3 nodes
    /// whose cell collides with this one's in row `t`, which happens with probability at most
    /// `p = 3/s` (pairwise-independent hashes over `s = 2kn` cells, drawn independently for
    /// each row). So `P[error ≤ −a] ≤ τ·P[X ≤ γn − a]`, and, as a row's `X_t + C_t` reaches
    /// `γn + a` only if it collides or `X_t` does, `P[error ≥ a] ≤ (p + P[X ≥ γn + a])^τ`;
    /// the tolerance is the least integer `a` with each side at most `4e-8`. The devices'
    /// capped blankets move that law by at most `nη ≤ δ_cap/(1 + e^ε)` in total variation
    /// (`docs/privacy/ghazi.md`; below 5e-10 for [`COUNT_MIN_TREE`], 3.4e-9 for
    /// [`RELAYED_COUNT_MIN_TREE`]). The lower side decides: `a = 70` for 3,000 devices
    /// (`γn = 186.4`), `a = 22` for 100 (`γn = 26.3`).
    fn node_tolerance(self) -> f64 {
        use statrs::distribution::{Binomial, DiscreteCDF};
        let devices = u64::from(self.devices());
        match self {
            Self::Hadamard => {
                let params = HadamardParams::new(devices, 4, 3, 1.0, 1e-3).unwrap();
                5.7 * params.null_variance().sqrt()
            }
            Self::CountMin(tree) => {
                let params =
                    CountMinParams::new(devices, 4, 3, tree.epsilon, tree.delta, 0.5).unwrap();
                let rows = params.rows as i32;
                let mean = params.expected_blanket();
                let collision = 3.0 / params.width as f64;
                let law = Binomial::new(params.gamma, devices).unwrap();
                (1..)
                    .map(f64::from)
                    .find(|&a| {
                        let below = if a > mean {
                            0.0
                        } else {
                            f64::from(rows) * law.cdf((mean - a).floor() as u64)
                        };
                        let at_least = (mean + a).ceil() as u64;
                        let above = (collision + law.sf(at_least - 1)).powi(rows);
                        below <= 4e-8 && above <= 4e-8
                    })
                    .unwrap()
            }
        }
    }

    /// How far two releases' estimates of one node may differ: Hadamard's two normal errors
    /// differ by at most `√2` times the tolerance, Count-Min's by at most twice it (each
    /// within it).
    fn gap_tolerance(self) -> f64 {
        let factor = match self {
            Self::Hadamard => std::f64::consts::SQRT_2,
            Self::CountMin(_) => 2.0,
        };
        factor * self.node_tolerance()
    }
}

/// A range-query tree task of `algorithm` with `options` on `oracle`, run by `oracle`'s
/// devices (`tally fleet`) over [`tree_numbers`] through `server`: its spec, its release and
/// the table `tally task result` prints of it.
fn federated_tree(
    server: &Server,
    oracle: TreeOracle,
    algorithm: &str,
    options: &str,
) -> (TaskInfo, Value, String) {
    let analyst = &server.analyst;
    let create = format!(
        "task create {analyst} --algorithm {algorithm} {} {options} --population \
         {WEAK_POPULATION} --expected-population {} --max-report-bytes 32768 --json",
        oracle.options(),
        oracle.devices()
    );
    let info: TaskInfo = parse(json(&create));
    let report = json(&format!(
        "fleet {} --input {} --seed 5 --json",
        server.devices[WEAK_POPULATION],
        tree_numbers(oracle.devices(), 0.0).display()
    ));
    assert_eq!(report["total"]["accepted"], oracle.devices(), "{report}");
    let release = server.result(&info.id);
    let table = tally(&format!("task result {analyst} {}", info.id));
    assert!(table.status.success(), "{table:?}");
    (info, release, String::from_utf8(table.stdout).unwrap())
}

/// The offline command `command` (`range` or `quantiles`) on `oracle` with `options` over
/// [`tree_numbers`] moved by `shift`.
fn offline_tree(oracle: TreeOracle, command: &str, options: &str, shift: f64) -> Value {
    json(&format!(
        "{command} --input {} {} {options} --seed 5 --json --colluding-fraction 0",
        tree_numbers(oracle.devices(), shift).display(),
        oracle.options()
    ))
}

/// How far a prefix sum of `terms` chosen nodes' estimates on `oracle` may stray from its
/// truth: `terms` times [`TreeOracle::node_tolerance`] (by the union bound).
fn tree_tolerance(oracle: TreeOracle, terms: u32) -> f64 {
    f64::from(terms) * oracle.node_tolerance()
}

/// How many of `devices` devices of [`tree_numbers`] lie in the first `leaves` of the 4
/// leaves.
fn tree_prefix(devices: u32, leaves: u32) -> f64 {
    let top = 25.0 * f64::from(leaves);
    (0..devices)
        .filter(|&i| tree_number(i, devices) < top || leaves == 4)
        .count() as f64
}

/// `tally task create --algorithm range` on `oracle` over its devices: the document is
/// `tally range`'s for the same options (fields, parameters, guarantee and snapped range; the
/// input and seed cannot match), and the two estimates, each one node's (`[0, 50)` is the left
/// child of the root), agree with the truth ([`tree_tolerance`]) and with each other
/// ([`TreeOracle::gap_tolerance`]) at α ≤ 1e-6; a simulation over numbers moved up by 50 is
/// caught.
fn assert_range_task_releases_what_the_offline_command_releases(
    server: &Server,
    oracle: TreeOracle,
) {
    let options = "--lo 0 --hi 50";
    let (info, federated, table) = federated_tree(server, oracle, "range", options);
    let mechanism = oracle.mechanism();
    assert!(
        table.contains(&format!("range count (range-query tree ({mechanism}))"))
            && table.contains("[0, 50)"),
        "{table}"
    );
    let TaskKind::RangeTree {
        mechanism: kind,
        levels: 2,
        reading: TreeReading::Range { .. },
        ..
    } = info.spec.kind
    else {
        panic!("{:?}", info.spec.kind)
    };
    assert_eq!(kind.name(), mechanism);
    assert_eq!(info.spec.rounds.min_cohort, u64::from(oracle.devices()));
    let offline = offline_tree(oracle, "range", options, 0.0);
    assert_same_document(&federated, &offline, &[INPUT, SEED, "estimate", "fraction"]);
    assert_eq!(federated["model"], "shuffle");
    assert_eq!(federated["range"]["grid_hi"], 50.0);
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        federated["guarantee"]
    );
    let truth = tree_prefix(oracle.devices(), 2);
    let tolerance = tree_tolerance(oracle, 1);
    for release in [&federated, &offline] {
        let estimate = range_estimate(release);
        assert!(
            (estimate - truth).abs() < tolerance,
            "{estimate} against {truth}"
        );
    }
    let gap = |other: &Value| (range_estimate(&federated) - range_estimate(other)).abs();
    assert!(gap(&offline) < oracle.gap_tolerance());
    let mutant = offline_tree(oracle, "range", options, 50.0);
    assert!(
        gap(&mutant) > oracle.gap_tolerance(),
        "the mutant passes: {mutant}"
    );
}

/// [`assert_range_task_releases_what_the_offline_command_releases`] on Ghazi et al.'s
/// Hadamard oracle.
#[test]
fn a_ghazi_range_task_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_the_offline_command_releases(
        &Server::start(),
        TreeOracle::Hadamard,
    );
}

/// [`a_ghazi_range_task_releases_what_the_offline_command_releases`] through the relay: each
/// device seals every item of its set on its own, and the relay permutes them all together.
#[test]
fn a_ghazi_range_task_through_the_relay_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_the_offline_command_releases(
        &Server::start_split(),
        TreeOracle::Hadamard,
    );
}

/// [`assert_range_task_releases_what_the_offline_command_releases`] on Count-Min, whose
/// capped reports fit [`COUNT_MIN_TREE`]'s 3,000 devices.
#[test]
fn a_count_min_range_task_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_the_offline_command_releases(
        &Server::start(),
        TreeOracle::CountMin(COUNT_MIN_TREE),
    );
}

/// [`a_count_min_range_task_releases_what_the_offline_command_releases`] through the relay:
/// each device seals each of its cells and blanket cells on its own and the relay permutes
/// them all together, for [`RELAYED_COUNT_MIN_TREE`]'s 100 devices (64,300 seals).
#[test]
fn a_count_min_range_task_through_the_relay_releases_what_the_offline_command_releases() {
    assert_range_task_releases_what_the_offline_command_releases(
        &Server::start_split(),
        TreeOracle::CountMin(RELAYED_COUNT_MIN_TREE),
    );
}

/// The quantiles a release of the range-query tree tests on `oracle` may answer for
/// `quantile` at α ≤ 1e-6: the values `25·j` of the leaves `j` whose prefix sums could be the
/// first at least `q·n` ([`tree_tolerance`] of each of the four prefix sums, by the union
/// bound over them).
fn tree_quantile_admits(oracle: TreeOracle, quantile: f64, value: f64) -> bool {
    let devices = oracle.devices();
    let target = quantile * f64::from(devices);
    // The prefix sum of leaves 0..j is one node's estimate for j = 1, 2 and 4, two for j = 3.
    let slack = |j: u32| tree_tolerance(oracle, if j == 3 { 2 } else { 1 });
    (1..=4_u32).any(|j| {
        (value - 25.0 * f64::from(j)).abs() < 1e-9
            && tree_prefix(devices, j) >= target - slack(j)
            && (j == 1 || tree_prefix(devices, j - 1) < target + slack(j - 1))
    })
}

/// `tally task create --algorithm hierarchical-quantiles` on `oracle` over its devices: the
/// document is `tally quantiles`'s for the same options but for its input, seed and
/// quantiles, and every quantile of both is one the truth admits at α ≤ 1e-6
/// ([`tree_quantile_admits`]); a simulation over numbers moved up by 50 is caught.
fn assert_quantile_task_releases_what_the_offline_command_releases(oracle: TreeOracle) {
    let options = "--quantiles 0.1,0.5,0.9";
    let server = Server::start();
    let (info, federated, table) =
        federated_tree(&server, oracle, "hierarchical-quantiles", options);
    assert!(
        table.contains(&format!(
            "quantiles (range-query tree ({})",
            oracle.mechanism()
        )),
        "{table}"
    );
    assert!(matches!(
        info.spec.kind,
        TaskKind::RangeTree {
            reading: TreeReading::Quantiles(_),
            ..
        }
    ));
    let offline = offline_tree(oracle, "quantiles", options, 0.0);
    assert_same_document(&federated, &offline, &[INPUT, SEED, "quantiles"]);
    let outliers = |release: &Value| -> Vec<f64> {
        let rows = release["quantiles"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        rows.iter()
            .map(|row| {
                (
                    row["quantile"].as_f64().unwrap(),
                    row["value"].as_f64().unwrap(),
                )
            })
            .filter(|&(quantile, value)| !tree_quantile_admits(oracle, quantile, value))
            .map(|(quantile, _)| quantile)
            .collect()
    };
    assert_eq!(outliers(&federated), Vec::<f64>::new(), "{federated}");
    assert_eq!(outliers(&offline), Vec::<f64>::new(), "{offline}");
    let mutant = offline_tree(oracle, "quantiles", options, 50.0);
    assert!(!outliers(&mutant).is_empty(), "the mutant passes: {mutant}");
}

/// [`assert_quantile_task_releases_what_the_offline_command_releases`] on Ghazi et al.'s
/// Hadamard oracle.
#[test]
fn a_ghazi_quantile_task_releases_what_the_offline_command_releases() {
    assert_quantile_task_releases_what_the_offline_command_releases(TreeOracle::Hadamard);
}

/// [`assert_quantile_task_releases_what_the_offline_command_releases`] on Count-Min.
#[test]
fn a_count_min_quantile_task_releases_what_the_offline_command_releases() {
    assert_quantile_task_releases_what_the_offline_command_releases(TreeOracle::CountMin(
        COUNT_MIN_TREE,
    ));
}

/// A Count-Min range-query tree at the default `β = 0.01` does not fit the largest
/// `--max-report-bytes` at a small `ε` (see `docs/federated/runtime.md`): for 20,000 devices at
/// `ε = 2`, `δ = 1e-3` and `--levels 2` (`τ = 10` rows, `k = 3`), its blanket is capped at
/// 24,200 cells (about 194 KB of report) by the exact analysis, and with `--levels 1` (`τ = 9`,
/// `k = 2`) at 6,030 (about 42 KB): `tally task create` refuses it with the longest report and
/// says that no smaller tree fits either. The same tree on Hadamard's oracle for 3,000 devices
/// at `ε = 0.14`, `--levels 3` (3,842 blanket tuples, about 46 KB) is refused naming
/// `--levels 2` (2,162 tuples, about 22 KB), which fits.
#[test]
fn a_ghazi_count_min_tree_is_refused_for_its_report_size() {
    let server = Server::start();
    let analyst = &server.analyst;
    let create = |mechanism: &str, options: &str| {
        failure(&format!(
            "task create {analyst} --algorithm range --mechanism {mechanism} --lo 0 --hi 50 \
             --min 0 --max 100 {options} --population {WEAK_POPULATION} \
             --max-report-bytes 32768"
        ))
    };
    let count_min = create(
        "ghazi-count-min",
        "--epsilon 2 --delta 1e-3 --levels 2 --expected-population 20000",
    );
    assert!(
        count_min.contains("ghazi-count-min range tree of 2 levels")
            && count_min.contains("above max_report_bytes (32768)")
            && count_min.contains("no smaller number of levels fits either"),
        "{count_min}"
    );
    let devices = format!("--expected-population {HADAMARD_TREE_DEVICES}");
    let hadamard = create(
        "ghazi-hadamard",
        &format!("--epsilon 0.14 --delta 1e-3 --levels 3 {devices}"),
    );
    assert!(
        hadamard.contains("every device would abstain; levels 2 would fit"),
        "{hadamard}"
    );
    // The options of the sample-and-threshold rounds do not apply.
    let consistent = create(
        "ghazi-hadamard",
        &format!("--epsilon 1 --delta 1e-3 --consistent {devices}"),
    );
    assert!(
        consistent.contains("--consistent applies to --mechanism sample-threshold only"),
        "{consistent}"
    );
    let local = create("grr", &format!("--epsilon 1 --delta 1e-3 {devices}"));
    assert!(local.contains("--mechanism grr"), "{local}");
}

/// `tally task create --algorithm count-min-prefix-tree` run by [`PREFIX_TREE`]'s 3,000
/// `tally fleet` devices through `tally serve` (at the weak parameters of
/// `common/prefix_tree.rs`, where level 2's longest report fits `--max-report-bytes 32768`
/// with its blanket capped): one round per level, and the document is the offline command's
/// for the same options but for its input, seed and items. Both paths draw their public hash
/// functions and device coins from different streams (the server's seeded stream, the
/// command's seed), so the two releases are equal in distribution, not byte for byte: each
/// finds the heavy item alone with an estimate the protocol's law admits at α ≤ 1e-6
/// ([`prefix_tree::PrefixTree::admits`], two releases); an offline release over data whose
/// heavy item moved is caught.
#[test]
fn a_count_min_prefix_tree_task_releases_what_the_offline_command_releases() {
    assert_count_min_prefix_tree_task_releases_what_the_offline_command_releases(
        &Server::start_seeded(SHUFFLE_SEED),
        &PREFIX_TREE,
    );
}

/// [`a_count_min_prefix_tree_task_releases_what_the_offline_command_releases`] through the
/// relay: each device seals each of its level's cells on its own, and the relay permutes
/// every message of the level's round together, for [`RELAYED_PREFIX_TREE`]'s 100 devices.
#[test]
fn a_count_min_prefix_tree_task_through_the_relay_releases_what_the_offline_command_releases() {
    assert_count_min_prefix_tree_task_releases_what_the_offline_command_releases(
        &Server::start_split(),
        &RELAYED_PREFIX_TREE,
    );
}

/// The prefix tree through the relay, where every device seals each of its cells on its own
/// ([`PREFIX_TREE`]'s 3,000 devices would seal 21 million): 100 devices, 5 holding each light
/// item, `τ_HH = 50`, at `ε = 16` and `δ = 1e-3` (8 and 5e-4 a level, within
/// [`WEAK_POPULATION`]'s budget). Level 1 has nine rows of `2n = 200` cells, `γn = 9.35`
/// (standard deviation 2.91) by the exact analysis, a blanket averaging 168 cells, capped at
/// 261 (1,349 bytes at most); level 2 ten rows, `γn = 9.46` (2.93), 189 cells on average,
/// capped at 287, so its longest report is 297 cells of at most 4 digits, 1,484 bytes: about
/// 37,600 seals in all.
///
/// Its law ([`prefix_tree::PrefixTree::admits`]): the light prefix `0` (10 holders) is found
/// only if every row of its cell that no heavier prefix collides with holds at least
/// `τ_HH/2 − 10 = 15` more blanket messages than `γn`, which a row does with probability below
/// 4.1e-6 (scipy), three rows below 1e-16, and more than six of the nine rows collide (each
/// with probability at most `3·2/2n = 0.03`) with probability below 7.5e-10; the light item `3`
/// (5 holders) needs 20 more, below 6.9e-9 a row. The heavy item's cells hold 85 real messages,
/// far above `τ_HH/2 + γn`. More than six of the ten rows of level 2 collide with probability
/// below 2.5e-9 (`collided_rows`). The capped blankets move the releases' law by
/// `nη ≤ δ_cap/(1 + e^ε) ≤ 1.7e-9` a level in total variation.
const RELAYED_PREFIX_TREE: PrefixTree = PrefixTree {
    devices: 100,
    light: 5,
    threshold: 50,
    epsilon: 16.0,
    delta: 1e-3,
    collided_rows: 6,
};

/// The Count-Min prefix-tree task of `tree` through `server`: the offline command's document,
/// and the heavy item found with an admitted estimate.
fn assert_count_min_prefix_tree_task_releases_what_the_offline_command_releases(
    server: &Server,
    tree: &PrefixTree,
) {
    let analyst = &server.analyst;
    let devices = tree.devices;
    let create = |extra: &str| {
        format!(
            "task create {analyst} {} --population {WEAK_POPULATION} --expected-population \
             {devices} --max-report-bytes 32768 {extra} --json",
            tree.options()
        )
    };
    // The blanket cap's union bound counts the calibrated devices: no round may wait for more.
    let waits = failure(&create(&format!("--cohort-target {}", devices + 1)));
    assert!(
        waits.contains("caps every device's blanket")
            && waits.contains(&format!("at most {devices}")),
        "{waits}"
    );
    let info: TaskInfo = parse(json(&create("")));
    let TaskKind::CountMinPrefixTree {
        domain_bits: 2,
        threshold,
        failure_probability: None,
        public_coins: Some(_),
    } = info.spec.kind
    else {
        panic!("{:?}", info.spec.kind)
    };
    assert_eq!(threshold, tree.threshold);
    assert_eq!(info.spec.rounds.min_cohort, devices);
    let items = |heavy: u32| {
        temp_file(
            &format!("prefix-tree-{devices}-{heavy}.txt"),
            tree.items(heavy).as_bytes(),
        )
    };
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --json",
        server.devices[WEAK_POPULATION],
        items(2).display()
    ));
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{report}");
    assert_eq!(report["total"]["accepted"], 2 * devices, "{report}");
    let federated = server.result(&info.id);
    let table = tally(&format!("task result {analyst} {}", info.id));
    assert!(table.status.success(), "{table:?}");
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("count-min-prefix-tree heavy hitters"));
    // The release holds fewer than 3 words: the table explains it as the document does.
    assert_eq!(federated["diagnosis"]["thin"], true, "{federated}");
    for sentence in federated["diagnosis"]["explanation"].as_array().unwrap() {
        assert!(table.contains(sentence.as_str().unwrap()), "{table}");
    }
    let offline = |heavy: u32| {
        json(&format!(
            "heavy-hitters --input {} {} --seed {SHUFFLE_SEED} --json --colluding-fraction 0",
            items(heavy).display(),
            tree.options()
        ))
    };
    let simulated = offline(2);
    assert_same_document(
        &federated,
        &simulated,
        &[&[INPUT, SEED, "items"][..], &FROM_ITEMS].concat(),
    );
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        federated["guarantee"]
    );
    assert!(tree.admits(&federated, 2), "{federated}");
    assert!(tree.admits(&simulated, 2), "{simulated}");
    let mutant = offline(3);
    assert!(!tree.admits(&mutant, 2), "the mutant passes: {mutant}");
}

/// The acceptance test's 3,000 devices' words, and how many devices hold each.
const THREE_THOUSAND_WORDS: [(&str, u64); 4] =
    [("the", 1200), ("and", 1000), ("to", 797), ("rare", 3)];

/// The ids (the 16 hex digits after `tally_`) of the credentials in the file `path`, one
/// token a line.
fn credential_ids(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|token| token["tally_".len().."tally_".len() + 16].to_owned())
        .collect()
}

/// The bytes of every file of the SQLite database in `dir` named `name` (with its journal
/// and write-ahead log, when there are), and of the log `log`.
fn database_and_log(dir: &std::path::Path, name: &str, log: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(dir.join(log)).unwrap();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        if let Ok(more) = std::fs::read(dir.join(format!("{name}{suffix}"))) {
            bytes.extend(more);
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The acceptance run of a split deployment: a sample-and-threshold histogram over 3,000
/// devices, each with its own credential enrolled at the relay, through `tally relay` in
/// front of `tally serve` (two processes, two databases). The relay flips the sampling coins
/// at the rate the aggregator published; the document is `tally histogram`'s (its fields,
/// parameters and guarantee but for the trust model, `split`; its input and seed cannot
/// match) and the sampled counts agree with the simulator's in distribution at α ≤ 1e-6; a
/// simulation over data with "the"'s holders moved to "to" is caught. Neither the
/// aggregator's database nor its log holds the id of any device credential or of the relay's
/// operator (the same check finds every one of them in the relay's database).
#[test]
fn a_histogram_through_the_relay_releases_what_the_simulator_releases() {
    let server = Server::start_split();
    let ids = assert_histogram_through_the_relay(&server);
    let dir = server.dir.path();
    let relay = database_and_log(dir, "relay.db", "relay.log");
    let aggregator = database_and_log(dir, "tally.db", "aggregator.log");
    assert_known_only_to_the_relay(&ids, &relay, &aggregator);
}

/// [`a_histogram_through_the_relay_releases_what_the_simulator_releases`] with the relay and
/// the aggregator each on a PostgreSQL database of its own (ignored without
/// `TALLY_TEST_POSTGRES_URL`; `.ci/run` requires it): the databases are read with `pg_dump`.
#[test]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
fn a_histogram_through_the_relay_on_postgres_releases_what_the_simulator_releases() {
    let db = postgres_database("tally_split_aggregator");
    let relay_db = postgres_database("tally_split_relay");
    let server = Server::start_split_on(tempfile::tempdir().unwrap(), db.clone(), relay_db.clone());
    let ids = assert_histogram_through_the_relay(&server);
    let dump = |db: &str, log: &str| {
        let dumped = std::process::Command::new("pg_dump")
            .args(["--data-only", db])
            .output()
            .unwrap();
        assert!(dumped.status.success(), "{dumped:?}");
        let mut bytes = std::fs::read(server.dir.path().join(log)).unwrap();
        bytes.extend(dumped.stdout);
        bytes
    };
    assert_known_only_to_the_relay(
        &ids,
        &dump(&relay_db, "relay.log"),
        &dump(&db, "aggregator.log"),
    );
}

/// Every id of `ids` is in the relay's database and log (`relay`), none in the aggregator's
/// (`aggregator`).
fn assert_known_only_to_the_relay(ids: &[String], relay: &[u8], aggregator: &[u8]) {
    for id in ids {
        assert!(contains(relay, id), "the relay does not hold {id}");
        assert!(!contains(aggregator, id), "the aggregator holds {id}");
    }
}

/// Runs the histogram of [`a_histogram_through_the_relay_releases_what_the_simulator_releases`]
/// through the split deployment `server` and checks its release; returns the ids of the
/// device credentials and of the relay's operator.
fn assert_histogram_through_the_relay(server: &Server) -> Vec<String> {
    let analyst = &server.analyst;
    let dir = server.dir.path();
    let credentials = dir.join("devices.txt");
    let line = format!(
        "device enroll --db {} --relay --population words --count 3000 --out {}",
        server.relay_db.as_deref().unwrap(),
        credentials.display()
    );
    assert!(tally(&line).status.success(), "{line}");
    let file = words_file("three-thousand-words.txt", &THREE_THOUSAND_WORDS);
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population words --expected-population 3000 --min-cohort 100 --json"
    )));
    let report = json(&format!(
        "fleet --server {} --credentials {} --aggregator {} --input {} --seed 3 --batch 500 \
         --json",
        server.relay_url.as_deref().unwrap(),
        credentials.display(),
        server.url,
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], 3000, "{report}");
    let federated = json(&format!("task result {analyst} {} --json", info.id));
    assert_eq!(
        federated["guarantee"]["trust_model"], "split",
        "{federated}"
    );
    let offline = |file: &PathBuf| {
        json(&format!(
            "histogram --mechanism sample-threshold --epsilon 1 --delta 1e-6 --input {} \
             --seed 3 --json",
            file.display()
        ))
    };
    let simulated = offline(&file);
    let differ = [INPUT, SEED, "execution", "items", "guarantee.trust_model"];
    assert_same_document(&federated, &simulated, &[&differ[..], &FROM_ITEMS].concat());
    assert_eq!(federated["released_items"], 3, "{federated}");
    assert_eq!(
        count_outliers(&federated, &simulated, &THREE_THOUSAND_WORDS),
        Vec::<String>::new()
    );
    let moved = words_file(
        "three-thousand-moved.txt",
        &[("and", 1000), ("to", 1997), ("rare", 3)],
    );
    assert!(!count_outliers(&federated, &offline(&moved), &THREE_THOUSAND_WORDS).is_empty());
    let mut ids = credential_ids(&credentials);
    let operator = server.devices["words"].split(" --token ").nth(1).unwrap();
    ids.push(operator["tally_".len().."tally_".len() + 16].to_owned());
    ids
}

/// The Sybil threshold attack through the relay: 19 colluding devices (enrolled at the
/// relay, as any dishonest party can enroll devices) always report a victim's secret, 10
/// honest devices hold items of their own, and the victim holds the secret, at a threshold
/// of 20. The relay flips every picked device's sampling coin with its own secret
/// randomness, so the colluders are sampled like everyone and the secret needs all 20
/// holders kept (`p_s^20`): over 10 tasks it is released in none. Without the relay's coins
/// (a mutant relay forwarding every upload) all 20 holders are counted and it is released
/// in every one.
#[test]
fn colluding_devices_cannot_choose_to_be_sampled_through_the_relay() {
    let server = Server::start_split();
    let analyst = &server.analyst;
    let file = words_file(
        "sybil-words.txt",
        &[
            ("secret", 20),
            ("h0", 1),
            ("h1", 1),
            ("h2", 1),
            ("h3", 1),
            ("h4", 1),
            ("h5", 1),
            ("h6", 1),
            ("h7", 1),
            ("h8", 1),
            ("h9", 1),
        ],
    );
    for trial in 0..10 {
        let info: TaskInfo = parse(json(&format!(
            "task create {analyst} --mechanism sample-threshold --epsilon 0.5 --delta 1e-6 \
             --threshold 20 --population test --expected-population 30 --min-cohort 30 --json"
        )));
        // Sealed before each round's clock starts: the release is the same as sealing as
        // the devices go.
        let report = json(&format!(
            "fleet {} --input {} --task {} --seal-first --json",
            server.devices["test"],
            file.display(),
            info.id
        ));
        assert_eq!(report["total"]["accepted"], 30, "{report}");
        let release = json(&format!("task result {analyst} {} --json", info.id));
        let released: Vec<String> = word_counts(&release).into_iter().map(|w| w.0).collect();
        assert!(
            !released.iter().any(|w| w == "secret"),
            "trial {trial}: the secret was released: {release}"
        );
    }
}

/// A TCP proxy on a free loopback port in front of `target`, keeping every byte clients
/// send through it: its port, and those bytes. As a reverse proxy does, it names its target in
/// the requests' `Host` (the relay answers only the names of its own loopback port).
fn recording_proxy(
    runtime: &tokio::runtime::Runtime,
    target: u16,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let keeping = std::sync::Arc::clone(&seen);
    runtime.spawn(async move {
        loop {
            let (client, _) = listener.accept().await.unwrap();
            let upstream = tokio::net::TcpStream::connect(("127.0.0.1", target))
                .await
                .unwrap();
            let (mut client_in, mut client_out) = client.into_split();
            let (mut upstream_in, mut upstream_out) = upstream.into_split();
            let keeping = std::sync::Arc::clone(&keeping);
            let (ours, theirs) = (format!("127.0.0.1:{port}"), format!("127.0.0.1:{target}"));
            tokio::spawn(async move {
                let mut buffer = vec![0; 1 << 16];
                // Bytes read but not yet sent: a tail that may begin our own name.
                let mut pending: Vec<u8> = Vec::new();
                while let Ok(n @ 1..) = client_in.read(&mut buffer).await {
                    keeping.lock().unwrap().extend_from_slice(&buffer[..n]);
                    pending.extend_from_slice(&buffer[..n]);
                    let mut renamed = Vec::with_capacity(pending.len());
                    let mut rest = &pending[..];
                    while !rest.is_empty() {
                        if let Some(after) = rest.strip_prefix(ours.as_bytes()) {
                            renamed.extend_from_slice(theirs.as_bytes());
                            rest = after;
                        } else {
                            renamed.push(rest[0]);
                            rest = &rest[1..];
                        }
                    }
                    let held = (1..ours.len())
                        .rev()
                        .find(|&k| renamed.ends_with(&ours.as_bytes()[..k]))
                        .unwrap_or(0);
                    let (send, keep) = renamed.split_at(renamed.len() - held);
                    if upstream_out.write_all(send).await.is_err() {
                        break;
                    }
                    pending = keep.to_vec();
                }
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut upstream_in, &mut client_out).await;
            });
        }
    });
    (port, seen)
}

/// The spellings of `secret` a byte stream could carry it in: itself, and its base64url
/// encodings at each of the three alignments (the characters that depend on its neighbours
/// left out).
fn spellings(secret: &str) -> Vec<String> {
    use base64::Engine;
    let mut spellings = vec![secret.to_owned()];
    for offset in 0..3 {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret.as_bytes());
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        let skip = (offset * 4).div_ceil(3) + 1;
        spellings.push(encoded[skip..encoded.len() - 2].to_owned());
    }
    spellings
}

/// A curious relay never holds a plaintext: 200 devices hold a planted secret item, which
/// the aggregator releases, and their reports reach the aggregator through the relay. The
/// secret (or any base64url spelling of it) appears nowhere in what the relay received (every
/// byte the devices sent it, through a recording proxy), in its database, in its log (at
/// `RUST_LOG=info`) or in the errors it answered to refused uploads (a reused token, an
/// oversized message). Sealing nothing (a mutant device sending its report's bytes in
/// base64url) is caught by the same check.
#[test]
fn a_curious_relay_never_holds_a_plaintext() {
    let server = Server::start_split();
    let analyst = &server.analyst;
    let secret = "plantedsecret-7f3a9c1e";
    let file = temp_file(
        "planted-secret.txt",
        format!("{secret}\n").repeat(200).as_bytes(),
    );
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
         --population test --expected-population 200 --min-cohort 100 --json"
    )));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let relay_url = server.relay_url.clone().unwrap();
    let relay_port: u16 = relay_url.rsplit(':').next().unwrap().parse().unwrap();
    let (proxy, seen) = recording_proxy(&runtime, relay_port);
    let operator = server.devices["test"].split(" --token ").nth(1).unwrap();
    let operator = operator.split(' ').next().unwrap();
    let fleet = format!(
        "fleet --server http://127.0.0.1:{proxy} --token {operator} --aggregator {} --input {} \
         --task {} --json",
        server.url,
        file.display(),
        info.id
    );
    let report = json(&fleet);
    assert_eq!(report["total"]["accepted"], 200, "{report}");
    let release = json(&format!("task result {analyst} {} --json", info.id));
    let released: Vec<String> = word_counts(&release).into_iter().map(|w| w.0).collect();
    assert_eq!(released, [secret], "{release}");
    // Refused uploads to a round of the relay: what the relay answers names a code alone.
    let errors = runtime.block_on(async {
        let client = tally_client::Client::new(&format!("http://127.0.0.1:{proxy}"))
            .unwrap()
            .with_token(operator);
        let created: TaskInfo = parse(json(&format!(
            "task create {analyst} --mechanism sample-threshold --epsilon 1 --delta 1e-6 \
             --population test --expected-population 200 --min-cohort 100 --json"
        )));
        let round = loop {
            let open = client.open_rounds().await.unwrap();
            if let Some(round) = open.into_iter().find(|q| q.task_id == created.id) {
                break round;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        let token = client
            .check_in(&round.round_id, 1)
            .await
            .unwrap()
            .tokens
            .remove(0);
        let upload = tally_messages::SealedUpload {
            token,
            messages: vec!["A".repeat(4096)],
        };
        let first = client
            .upload_sealed(&round.round_id, std::slice::from_ref(&upload))
            .await
            .unwrap();
        let second = client
            .upload_sealed(&round.round_id, &[upload])
            .await
            .unwrap();
        format!("{first:?} {second:?}")
    });
    assert!(
        errors.contains("Oversized") && errors.contains("ReusedToken"),
        "{errors}"
    );
    let mut relay_side = seen.lock().unwrap().clone();
    relay_side.extend(database_and_log(server.dir.path(), "relay.db", "relay.log"));
    relay_side.extend(errors.as_bytes());
    assert!(
        contains(&relay_side, "sealed-uploads"),
        "the proxy saw no upload"
    );
    for spelling in spellings(secret) {
        assert!(
            !contains(&relay_side, &spelling),
            "the relay held {spelling:?}"
        );
    }
    // The check finds a report sent unsealed.
    use base64::Engine;
    let unsealed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("{}{secret}", "r".repeat(16)));
    assert!(
        spellings(secret)
            .iter()
            .any(|s| unsealed.contains(s.as_str()))
    );
}

/// The items of the partition-selection tests' 290 devices and how many hold each: "heavy"
/// far above every method's release point at (1, 1e-6), "mid" near it, and 50 items held by
/// one device each, never to be shown.
fn selection_holders() -> Vec<(String, u64)> {
    let mut holders = vec![("heavy".to_owned(), 200), ("mid".to_owned(), 40)];
    holders.extend((0..50).map(|i| (format!("own-{i}"), 1)));
    holders
}

/// The significance of each check of a partition-selection release against its law.
const SELECTION_ALPHA: f64 = 1e-6;

/// `tally task create --mechanism METHOD` over the devices of [`selection_holders`], run by a
/// fleet against `server`: its document, checked against `tally histogram --mechanism METHOD`
/// over the same devices (same fields, parameters and guarantee; the input, seed, execution
/// and released items cannot match) and against the calibration's law at α ≤ 1e-6
/// ([`assert_admissible_selection`]); the task's table says who sees what.
fn selection_task_matches_the_offline_command(server: &Server, method: &str) -> Value {
    let analyst = &server.analyst;
    let holders = selection_holders();
    let pairs: Vec<(&str, u64)> = holders.iter().map(|(w, n)| (w.as_str(), *n)).collect();
    let file = words_file(&format!("selection-{method}.txt"), &pairs);
    let devices: u64 = holders.iter().map(|h| h.1).sum();
    let info: TaskInfo = parse(json(&format!(
        "task create {analyst} --mechanism {method} --epsilon 1 --delta 1e-6 \
         --population words --expected-population {devices} --min-cohort 100 --json"
    )));
    assert!(
        matches!(info.spec.kind, TaskKind::Histogram { .. }),
        "{:?}",
        info.spec.kind
    );
    let table =
        String::from_utf8(tally(&format!("task status {analyst} {}", info.id)).stdout).unwrap();
    for said in [
        "relay forwards every report",
        "not against the aggregator, which sees every report",
    ] {
        assert!(table.contains(said), "{table}");
    }
    let report = json(&format!(
        "fleet {} --input {} --seed 3 --batch 100 --json",
        server.devices["words"],
        file.display()
    ));
    assert_eq!(report["total"]["accepted"], devices, "{report}");
    let federated = server.result(&info.id);
    assert_eq!(federated["execution"], "federated");
    assert_eq!(
        server.as_offline(serde_json::to_value(&info.guarantee).unwrap()),
        federated["guarantee"]
    );
    let offline = json(&format!(
        "histogram --mechanism {method} --epsilon 1 --delta 1e-6 --input {} --seed 3 --json",
        file.display()
    ));
    assert_same_document(
        &federated,
        &offline,
        &[
            &[INPUT, SEED, "execution", "items", "released_items"][..],
            &FROM_ITEMS,
        ]
        .concat(),
    );
    assert_admissible_selection(&federated, method, &holders);
    assert_admissible_selection(&offline, method, &holders);
    federated
}

/// Asserts that `release`, a partition selection by `method` at (1, 1e-6) over devices of one
/// item each held as `holders` says, is admissible at α ≤ 1e-6 under the calibration's law
/// (`tally_accounting`'s `release_probability`): every item released with probability above
/// `1 − α` is shown, none released with probability below `α` is (an item no device holds has
/// probability 0), and every noisy count lies within the noise's two-sided `α` quantile of
/// its item's count. Fails if the law makes no item certain and another impossible (the test
/// would check nothing).
fn assert_admissible_selection(release: &Value, method: &str, holders: &[(String, u64)]) {
    use tally_accounting::Neighbours;
    use tally_accounting::partition_selection::PartitionSelection;

    let calibration =
        PartitionSelection::calibrate(method.parse().unwrap(), 1.0, 1e-6, 1, Neighbours::AddRemove)
            .unwrap();
    let law = |word: &str| {
        let count = holders.iter().find(|h| h.0 == word).map_or(0, |h| h.1);
        (count, calibration.release_probability(count))
    };
    let shown: HashMap<String, Option<f64>> = release["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["item"].as_str().unwrap().to_owned(),
                i["estimate"].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        shown.len() as u64,
        release["released_items"].as_u64().unwrap()
    );
    assert!(law("heavy").1 > 1.0 - SELECTION_ALPHA && law("own-0").1 < SELECTION_ALPHA);
    for (word, _) in holders {
        let p = law(word).1;
        if p > 1.0 - SELECTION_ALPHA {
            assert!(
                shown.contains_key(word),
                "{method}: {word} missing: {release}"
            );
        }
    }
    // The noise's two-sided α quantile: discrete Laplace of scale b has P[|X| ≥ t] ≤
    // 2·exp(−(t − 1)/b); a discrete Gaussian of σ, at most the continuous one's tail plus a
    // lattice step, within 5.1σ + 1.
    let parameters = &release["parameters"];
    let tolerance = match method {
        "laplace-threshold" => {
            Some(1.0 + parameters["scale"].as_f64().unwrap() * (2.0 / SELECTION_ALPHA).ln())
        }
        "gaussian-threshold" => Some(1.0 + 5.1 * parameters["sigma"].as_f64().unwrap()),
        _ => None,
    };
    for (word, estimate) in &shown {
        let (count, p) = law(word);
        assert!(
            p >= SELECTION_ALPHA,
            "{method}: {word} (p = {p:e}) shown: {release}"
        );
        match (tolerance, estimate) {
            (Some(tolerance), Some(noisy)) => assert!(
                (noisy - count as f64).abs() <= tolerance,
                "{method}: {word} held by {count}, shown {noisy} (tolerance {tolerance})"
            ),
            (None, None) => {}
            _ => panic!("{method}: {word}'s estimate {estimate:?}"),
        }
    }
}

/// `tally task create --mechanism laplace-threshold` over a fleet releases what `tally
/// histogram --mechanism laplace-threshold` releases, as the law says.
#[test]
fn a_laplace_threshold_task_releases_what_the_offline_command_releases() {
    let release = selection_task_matches_the_offline_command(&Server::start(), "laplace-threshold");
    assert!(
        release["parameters"]["scale"].as_f64().is_some(),
        "{release}"
    );
}

/// [`a_laplace_threshold_task_releases_what_the_offline_command_releases`] for the Gaussian
/// threshold, through the relay, which forwards every report (no sampling coin).
#[test]
fn a_gaussian_threshold_task_through_the_relay_releases_what_the_offline_command_releases() {
    let release =
        selection_task_matches_the_offline_command(&Server::start_split(), "gaussian-threshold");
    assert!(
        release["parameters"]["sigma"].as_f64().is_some(),
        "{release}"
    );
}

/// [`a_laplace_threshold_task_releases_what_the_offline_command_releases`] for the truncated
/// geometric, which releases keys alone.
#[test]
fn a_truncated_geometric_task_releases_what_the_offline_command_releases() {
    let release =
        selection_task_matches_the_offline_command(&Server::start(), "truncated-geometric");
    let items = release["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["estimate"].is_null()), "{release}");
}

/// `tally task create` refuses a partition selection asked for what it cannot do: several
/// items per device, sample-and-threshold's parameters or device-side coins, no `δ`; and the
/// server refuses a population too small for a round to release (as for sample-and-threshold).
#[test]
fn a_partition_selection_task_is_refused_what_it_cannot_do() {
    let create = "task create --server http://127.0.0.1:9 --epsilon 1 --population p \
                  --expected-population 300";
    let error = failure(&format!(
        "{create} --mechanism laplace-threshold --delta 1e-6 --max-items-per-client 2"
    ));
    assert!(
        error.contains("holds one item") && error.contains("tally histogram --mechanism"),
        "{error}"
    );
    let error = failure(&format!(
        "{create} --algorithm triehh++ --delta 1e-6 --max-items-per-client 1"
    ));
    assert!(
        error.contains("--max-items-per-client applies to"),
        "{error}"
    );
    let error = failure(&format!(
        "{create} --mechanism gaussian-threshold --delta 1e-6 --threshold 20"
    ));
    assert!(
        error.contains("calibrates its noise and threshold"),
        "{error}"
    );
    let error = failure(&format!(
        "{create} --mechanism truncated-geometric --delta 1e-6 --sampling device"
    ));
    assert!(error.contains("flips no sampling coin"), "{error}");
    let output = tally(&format!("{create} --mechanism laplace-threshold"));
    let error = String::from_utf8(output.stderr).unwrap();
    assert!(!output.status.success());
    assert!(error.contains("--delta"), "{error}");
    let server = Server::start();
    for mechanism in ["sample-threshold", "laplace-threshold"] {
        let error = failure(&format!(
            "task create {} --mechanism {mechanism} --epsilon 1 --delta 1e-6 --population words \
             --expected-population 10",
            server.analyst
        ));
        assert!(
            error.contains("expected_population (10) is below min_cohort (100)"),
            "{mechanism}: {error}"
        );
    }
}
