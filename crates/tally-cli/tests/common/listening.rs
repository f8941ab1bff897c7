//! Starting a local server process for a test (`tally serve`, a WebDriver) and waiting until it
//! listens, and a PostgreSQL database of its own. Included with `#[path]` by the tests that start servers.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free local port: bound to port 0, then released for a child process to take.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `command` (its output discarded) and waits until it listens on `port`; fails the test
/// if it exits first or takes more than 30 s.
pub(crate) fn spawn_listening(mut command: Command, port: u16) -> Child {
    command.stderr(Stdio::null());
    spawn_logging(command, port)
}

/// [`spawn_listening`], the command's stderr (its log) left as `command` sets it.
pub(crate) fn spawn_logging(mut command: Command, port: u16) -> Child {
    let mut child = command.stdout(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{command:?} exited on start"
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{command:?} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The command of `tally serve` on 127.0.0.1:`port` over the database `db`, logging warnings
/// only.
pub(crate) fn serve_command(db: &str, port: u16) -> Command {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_tally"));
    serve
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--db",
            db,
        ])
        .env("RUST_LOG", "warn");
    serve
}

/// `tally serve` on a free local port over the database `db`, listening: the process and its
/// port.
pub(crate) fn spawn_serve(db: &str) -> (Child, u16) {
    let port = free_port();
    (spawn_listening(serve_command(db, port), port), port)
}

/// The command of `tally relay` on 127.0.0.1:`port` over the database `db`, relaying to the
/// aggregator at `aggregator` with the relay credential `token`: it forwards a round a second
/// before its deadline or as soon as it holds the round's cohort target, and counts up to a
/// million devices of one relaying credential (a fleet relayed by the relay's operator).
pub(crate) fn relay_command(db: &str, port: u16, aggregator: &str, token: &str) -> Command {
    let mut relay = Command::new(env!("CARGO_BIN_EXE_tally"));
    relay
        .args([
            "relay",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--db",
            db,
        ])
        .args(["--aggregator", aggregator, "--aggregator-token", token])
        .args(["--forward-margin", "1", "--cohort-pool", "1"])
        .args(["--max-per-credential", "1000000"])
        .env("RUST_LOG", "warn");
    relay
}

/// A new database of its own on the PostgreSQL server at `TALLY_TEST_POSTGRES_URL`, named
/// `{prefix}_{random}`, so that restarts abort no other test's rounds. The tests that call it
/// are ignored unless the build saw that variable (`cfg(tally_postgres)`, `build.rs`); run
/// without it, they fail here.
pub(crate) fn postgres_database(prefix: &str) -> String {
    let base = std::env::var("TALLY_TEST_POSTGRES_URL")
        .expect("TALLY_TEST_POSTGRES_URL names the PostgreSQL server: source .ci/postgres.sh");
    let name = format!("{prefix}_{:016x}", rand::random::<u64>());
    let admin = Command::new("psql")
        .args([base.as_str(), "-qc", &format!("CREATE DATABASE {name}")])
        .status()
        .unwrap();
    assert!(admin.success());
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}")
}
