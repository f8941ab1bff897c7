//! The store over TLS to PostgreSQL: `tally serve --db 'postgres://…?sslmode=verify-full&
//! sslrootcert=FILE'` connects only to a server whose certificate the CA in FILE signed for
//! the host named, and its session is encrypted; a CA that did not sign it is refused. Runs
//! against the cluster `.ci/postgres.sh` starts (TALLY_TEST_POSTGRES_URL, and the CA it made
//! in TALLY_TEST_POSTGRES_CA); ignored when the build saw neither TALLY_TEST_POSTGRES_URL nor
//! TALLY_REQUIRE_POSTGRES=1 (`build.rs`).

mod common;

use sqlx::{Connection, Row};
use tally_messages::{Budget, PROTOCOL_VERSION, PopulationSpec};
use tally_server::Server;

/// The PostgreSQL database of [`common::databases`] and the CA file of its server.
async fn postgres_with_ca() -> (common::TestDb, String) {
    let ca = std::env::var("TALLY_TEST_POSTGRES_CA")
        .expect("TALLY_TEST_POSTGRES_CA names the server's CA: source .ci/postgres.sh");
    let db = common::databases()
        .await
        .into_iter()
        .find(|db| db.name == "postgres")
        .unwrap();
    (db, ca)
}

/// `url` asking for a verified TLS session trusting the CA in `ca`.
fn verified(url: &str, ca: &str) -> String {
    format!("{url}?sslmode=verify-full&sslrootcert={ca}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL with TLS: source .ci/postgres.sh"
)]
async fn the_store_connects_to_postgres_over_verified_tls_and_refuses_another_ca() {
    let (db, ca) = postgres_with_ca().await;
    let url = verified(&db.url, &ca);

    // The connection the store makes is a TLS session.
    let mut session = sqlx::PgConnection::connect(&url).await.unwrap();
    let row = sqlx::query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&mut session)
        .await
        .unwrap();
    assert!(row.get::<bool, _>("ssl"), "the session is not encrypted");
    session.close().await.unwrap();

    // The server starts on it, and what the store writes reads back.
    let population = PopulationSpec {
        version: PROTOCOL_VERSION,
        name: "tls".into(),
        budget: Budget {
            epsilon: 1.0,
            delta: 1e-6,
        },
        min_cohort: 1,
        max_task_epsilon: None,
        trust: tally_messages::TrustModel::SingleParty,
        allow_device_sampling: false,
        colluding_fraction: 0.0,
        task_bound: None,
        neighbours: tally_messages::Neighbours::AddRemove,
    };
    tally_server::create_population(&url, &population)
        .await
        .unwrap();
    let server = Server::start(&url).await.unwrap();
    server.shutdown().await;
    let names: Vec<String> = tally_server::populations(&url)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["tls"]);

    // A CA that did not sign the server's certificate: nothing connects.
    let dir = tempfile::tempdir().unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let other_ca = dir.path().join("other-ca.pem");
    std::fs::write(&other_ca, other.cert.pem()).unwrap();
    let wrong = verified(&db.url, &other_ca.display().to_string());
    let error = Server::start(&wrong)
        .await
        .err()
        .expect("a server whose certificate another CA signed was trusted");
    // Refused for the certificate, not for anything else about the connection.
    assert!(
        matches!(error, tally_server::ServerError::Storage(_))
            && error.to_string().contains("UnknownIssuer"),
        "{error}"
    );
    let refused = sqlx::PgConnection::connect(&wrong).await.unwrap_err();
    assert!(refused.to_string().contains("UnknownIssuer"), "{refused}");
}
