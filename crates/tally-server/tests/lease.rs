//! One writer per SQLite database (replicas on PostgreSQL), and a database only its owner can
//! read. Two servers on one database each ran the open rounds and could each spend the same
//! budget; the SQLite file was created world-readable.

mod common;

use common::*;
use tally_server::{Server, ServerError};

common::postgres_half!();

/// A second server on a SQLite database refuses to start; on PostgreSQL it starts, as a
/// replica sharing the tasks through their leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_refuses_on_sqlite_and_joins_as_a_replica_on_postgres() {
    for db in databases().await {
        let (server, _, _) = start(&db.url, (10.0, 1e-5)).await;
        match (db.name, Server::start(&db.url).await) {
            ("sqlite", Err(ServerError::Locked(_))) => {}
            ("sqlite", Err(other)) => panic!("sqlite: expected a held lease, got {other}"),
            ("sqlite", Ok(_)) => panic!("sqlite: two servers started on one database"),
            (_, Ok(replica)) => replica.shutdown().await,
            (name, Err(e)) => panic!("{name}: a replica could not start: {e}"),
        }
        // Credentials and populations can still be made beside the running server.
        population(&db.url, "second", (1.0, 1e-6)).await;
        server.shutdown().await;
        // Once the first has stopped, the next one starts.
        let again = Server::start(&db.url).await.unwrap();
        again.shutdown().await;
    }
}

/// The lock follows the SQLite file, not its name: a second server reaching the same file
/// through a symbolic link, a linked directory, a hard link or another spelling of its path
/// refuses to start.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_through_another_name_of_the_sqlite_file_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let (server, _, _) = start(&format!("sqlite://{}", path.display()), (10.0, 1e-5)).await;
    std::os::unix::fs::symlink(&path, dir.path().join("link.db")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("linked-dir")).unwrap();
    std::fs::hard_link(&path, dir.path().join("hard.db")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let names = [
        dir.path().join("link.db"),
        dir.path().join("linked-dir").join("tally.db"),
        dir.path().join("hard.db"),
        dir.path().join("sub").join("..").join("tally.db"),
        dir.path().join(".").join("tally.db"),
    ];
    for name in &names {
        match Server::start(&format!("sqlite://{}", name.display())).await {
            Err(ServerError::Locked(_)) => {}
            Err(other) => panic!("{}: expected a held lease, got {other}", name.display()),
            Ok(_) => panic!("{}: two servers started on one file", name.display()),
        }
    }
    server.shutdown().await;
    // Once the first has stopped, a server starts through the link.
    let again = Server::start(&format!("sqlite://{}", names[0].display()))
        .await
        .unwrap();
    again.shutdown().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let (server, _, _) = start(&format!("sqlite://{}", path.display()), (10.0, 1e-5)).await;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}: mode {mode:o}", path.display());
    server.shutdown().await;
}

/// Replicas starting together on a new PostgreSQL database each make its schema: they take
/// turns (`CREATE TABLE IF NOT EXISTS` run at once by two sessions collides in PostgreSQL's
/// catalog), and every one starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_on_a_new_database_all_start() {
    for db in databases().await {
        if db.name == "sqlite" {
            continue;
        }
        let mut starting = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let url = db.url.clone();
            starting.spawn(async move { Server::start(&url).await });
        }
        while let Some(started) = starting.join_next().await {
            match started.unwrap() {
                Ok(server) => server.shutdown().await,
                Err(e) => panic!("{}: a replica could not start: {e}", db.name),
            }
        }
    }
}

/// A command that writes beside a running service waits its turn at the SQLite write lock
/// instead of failing. A service writes at every lease tick; a command's transaction that read
/// first (the schema) and then asked for the lock met one of those writes being committed and
/// got "database is locked" at once, without the busy wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_beside_a_writing_service_waits_for_the_sqlite_write_lock() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("tally.db").display());
    population(&url, POPULATION, (1.0, 1e-6)).await;
    // Another connection holds the write lock, as a service does while it renews its leases.
    let mut service = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut service)
        .await
        .unwrap();
    sqlx::query("UPDATE credential_changes SET generation = generation")
        .execute(&mut service)
        .await
        .unwrap();
    let enrolling = tokio::spawn({
        let url = url.clone();
        async move { tally_server::enroll_devices(&url, POPULATION, 3).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query("COMMIT").execute(&mut service).await.unwrap();
    match enrolling.await.unwrap() {
        Ok(tokens) => assert_eq!(tokens.len(), 3),
        Err(e) => panic!("the enrollment did not wait for the write lock: {e}"),
    }
}
