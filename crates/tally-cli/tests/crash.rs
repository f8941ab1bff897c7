//! Kills `tally serve` (over TLS, with credentials) with SIGKILL at several points of a round,
//! 24 times, and checks after every restart that no result is readable without its ledger
//! debit, that a released result or a debit never changes, that no task is debited twice and
//! the ledger stays within its budget, and that no uploaded report is on disk. Then lets the
//! surviving tasks finish and checks the same of their results. Runs on SQLite, and on
//! PostgreSQL too when `TALLY_TEST_POSTGRES_URL` is set. `soak.rs` does the same at random
//! points, hundreds of times.

use std::path::Path;
use std::time::Duration;

// Of the starting helpers, the server process uses only the command, the free port and a
// PostgreSQL database.
#[allow(dead_code)]
#[path = "common/listening.rs"]
mod listening;
// Of the server process's helpers, only the replicas' tests signal it by its id.
#[allow(dead_code)]
#[path = "common/server.rs"]
mod server;

use listening::postgres_database;

use server::{
    Invariants, ServerProcess, Tls, Tokens, check_in, ensure_task, finish_tasks, upload_each,
    uploads,
};

/// Kills in all; each of the four kill points is hit six times.
const KILLS: usize = 24;

async fn crash_repeatedly(db: &str, dir: Option<&Path>) {
    let scratch = tempfile::tempdir().unwrap();
    let tls = Tls::create(scratch.path());
    let mut invariants = Invariants::default();
    let tokens = Tokens::create(db, "crash", (1000.0, 0.5)).await;
    for iteration in 0..KILLS {
        let mut server = ServerProcess::start(db, &tls);
        let analyst = server.client(&tokens.analyst);
        server.wait_ready(&analyst).await;
        invariants.check(&analyst, dir).await;
        let devices = server.devices(&tokens);
        if let Some(round) = ensure_task(&analyst, &devices[0], &tokens.population)
            .await
            .unwrap()
        {
            match iteration % 4 {
                // Killed with the round open and empty.
                0 => {}
                // 1: killed mid-round, half the cohort uploaded; 2 and 3: all of it.
                1..=3 => {
                    let tokens = check_in(&devices, &round.round_id).await;
                    let all = uploads(&round, tokens, &mut invariants.secrets);
                    let cut = if iteration % 4 == 1 {
                        all.len() / 2
                    } else {
                        all.len()
                    };
                    upload_each(&devices, &round.round_id, &all[..cut])
                        .await
                        .unwrap();
                    // 2: killed while the round closes; 3: after it had time to release.
                    if iteration % 4 == 3 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                _ => unreachable!(),
            }
        }
        server.kill();
    }
    assert!(
        invariants.results() > 0,
        "no result was released between kills"
    );
    // Let every task finish without kills, and check what they released.
    let mut server = ServerProcess::start(db, &tls);
    let analyst = server.client(&tokens.analyst);
    server.wait_ready(&analyst).await;
    invariants.check(&analyst, dir).await;
    let tasks = finish_tasks(&analyst, &server.devices(&tokens), &mut invariants, dir).await;
    let finished = tasks
        .iter()
        .filter(|t| t.state == tally_messages::TaskState::Finished)
        .count();
    assert!(finished >= 2, "{finished} tasks finished: {tasks:?}");
    assert!(
        tasks.iter().any(|t| t.rounds_released == 3),
        "no TrieHH++ task ran its three levels: {tasks:?}"
    );
    assert!(!invariants.secrets.is_empty());
    server.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_servers_never_show_an_undebited_result_a_changed_result_or_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    crash_repeatedly(&db, Some(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn killed_servers_keep_their_promises_on_postgres() {
    crash_repeatedly(&postgres_database("tally_crash"), None).await;
}
