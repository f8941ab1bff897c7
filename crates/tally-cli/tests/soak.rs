//! The soak run: `tally serve` (over TLS, with credentials) killed with SIGKILL at random
//! points (seeded) hundreds of times while its tasks run, and restarted each time. After every
//! restart it checks what `crash.rs` checks ([`server::Invariants`]): no released result
//! without its ledger debit, a released result or a debit never changes, no task debited twice,
//! the ledger's totals are the sums of the tasks it lists and within the budget, and no
//! uploaded report in any file of the database. Each population's budget runs out along the
//! way (the refusal is counted and the run goes on with a new population), so the budget
//! binds. Not in CI; run (a release build, as deployed):
//!
//! ```text
//! cargo test --release -p tally-cli --test soak -- --ignored --nocapture
//! ```
//!
//! `TALLY_SOAK_KILLS` (default 200) and `TALLY_SOAK_SEED` (default 13) set the run; the
//! PostgreSQL soak needs `TALLY_TEST_POSTGRES_URL` (`source .ci/postgres.sh`).

use std::path::Path;
use std::time::{Duration, Instant};

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

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use server::{
    Invariants, ServerProcess, Tls, Tokens, check_in, ensure_task, finish_tasks, upload_each,
    uploads,
};
use tally_messages::{ErrorCode, TaskState};

/// Each population's budget: a few of the test's tasks, each charged its own guarantee.
const BUDGET: (f64, f64) = (8.0, 1e-5);

/// A variable of the run, or its default.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| v.parse().expect(name))
}

async fn soak(db: &str, dir: Option<&Path>) {
    let kills = setting("TALLY_SOAK_KILLS", 200);
    let seed = setting("TALLY_SOAK_SEED", 13);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let scratch = tempfile::tempdir().unwrap();
    let tls = Tls::create(scratch.path());
    let mut populations = vec![(
        Tokens::create(db, "soak-1", BUDGET).await,
        Invariants::default(),
    )];
    let (mut refusals, mut at_start, mut with_uploads) = (0, 0, 0);
    let started = Instant::now();
    for _ in 0..kills {
        let mut server = ServerProcess::start(db, &tls);
        // Some kills come while the server starts and restores its tasks.
        if rng.random_bool(0.05) {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..40))).await;
            server.kill();
            at_start += 1;
            continue;
        }
        server
            .wait_ready(&server.client(&populations[0].0.analyst))
            .await;
        for (tokens, invariants) in &mut populations {
            invariants.check(&server.client(&tokens.analyst), dir).await;
        }
        let (tokens, invariants) = populations.last_mut().unwrap();
        let analyst = server.client(&tokens.analyst);
        let devices = server.devices(tokens);
        let round = match ensure_task(&analyst, &devices[0], &tokens.population).await {
            Ok(round) => round,
            Err(refused) if refused.code() == Some(ErrorCode::BudgetExceeded) => {
                // This population's budget is spent: go on with a new one.
                refusals += 1;
                let name = format!("soak-{}", populations.len() + 1);
                populations.push((
                    Tokens::create(db, &name, BUDGET).await,
                    Invariants::default(),
                ));
                server.kill();
                continue;
            }
            Err(other) => panic!("creating a task failed: {other}"),
        };
        if let Some(round) = round {
            let tokens = check_in(&devices, &round.round_id).await;
            let all = uploads(&round, tokens, &mut invariants.secrets);
            // A quarter of the rounds get part of their cohort (the round stays open); the
            // rest all of it, and close and release as the kill comes.
            let cut = if rng.random_bool(0.25) {
                rng.random_range(0..all.len())
            } else {
                all.len()
            };
            let delay = Duration::from_micros(rng.random_range(0..150_000));
            let (devices, round_id) = (devices.clone(), round.round_id.clone());
            let batch = all[..cut].to_vec();
            let upload =
                tokio::spawn(async move { upload_each(&devices, &round_id, &batch).await });
            tokio::time::sleep(delay).await;
            server.kill();
            // The upload may have been cut by the kill.
            let _ = upload.await.unwrap();
            with_uploads += 1;
        } else {
            server.kill();
        }
    }
    // Let the last population's tasks finish without kills, and check everything once more.
    let mut server = ServerProcess::start(db, &tls);
    server
        .wait_ready(&server.client(&populations[0].0.analyst))
        .await;
    let (tokens, invariants) = populations.last_mut().unwrap();
    let devices = server.devices(tokens);
    finish_tasks(&server.client(&tokens.analyst), &devices, invariants, dir).await;
    let (mut tasks, mut finished, mut released) = (0, 0, 0);
    for (tokens, invariants) in &mut populations {
        let analyst = server.client(&tokens.analyst);
        invariants.check(&analyst, dir).await;
        let listed = analyst.tasks().await.unwrap();
        tasks += listed.len();
        finished += listed
            .iter()
            .filter(|t| t.state == TaskState::Finished)
            .count();
        released += invariants.results();
    }
    server.kill();
    eprintln!(
        "soak on {}: {kills} kills ({at_start} while starting, {with_uploads} with uploads in \
         flight), {tasks} tasks ({finished} finished, {released} results checked), {} \
         populations ({refusals} budgets spent), 0 violations, {:.0} s (seed {seed})",
        db.split(':').next().unwrap_or(db),
        populations.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(refusals > 0, "no population's budget ran out");
    assert!(finished > 0, "no task finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the soak run: minutes; cargo test --release -p tally-cli --test soak -- --ignored"]
async fn sigkilled_server_keeps_its_promises_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("tally.db").display());
    soak(&db, Some(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the soak run: minutes; cargo test --release -p tally-cli --test soak -- --ignored"]
async fn sigkilled_server_keeps_its_promises_on_postgres() {
    soak(&postgres_database("tally_soak"), None).await;
}
