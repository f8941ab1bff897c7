//! Replicas of the relay on one PostgreSQL database: each of the aggregator's rounds is held
//! by one of them, under a lease; the others forward it the round's check-ins and uploads;
//! a replica that lost a round's lease forwards nothing.

mod common;

use std::time::{Duration, Instant};

use common::*;
use sqlx::Connection;
use tally_messages::{Sampling, SealedUpload};
use tally_server::Replication;

/// A new database of its own on the PostgreSQL server at `TALLY_TEST_POSTGRES_URL`.
async fn postgres() -> String {
    let base = std::env::var("TALLY_TEST_POSTGRES_URL")
        .expect("TALLY_TEST_POSTGRES_URL names the PostgreSQL server: source .ci/postgres.sh");
    let name = format!("tally_relay_{:016x}", rand::random::<u64>());
    let mut admin = sqlx::PgConnection::connect(&base).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    let (prefix, _) = base.rsplit_once('/').unwrap();
    format!("{prefix}/{name}")
}

/// Where the replica holding round `id`'s lease takes requests, and the lease's epoch, as
/// the database says.
async fn holder(db: &str, id: &str) -> Option<(String, i64)> {
    let mut connection = sqlx::PgConnection::connect(db).await.unwrap();
    let row: Option<(String, i64)> = sqlx::query_as(
        "SELECT p.address, r.epoch FROM relay_rounds r JOIN replicas p ON p.id = r.holder
         WHERE r.round_id = $1",
    )
    .bind(id)
    .fetch_optional(&mut connection)
    .await
    .unwrap();
    row
}

/// How many replicas the database says serve (their address known).
async fn serving(db: &str) -> i64 {
    let mut connection = sqlx::PgConnection::connect(db).await.unwrap();
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM replicas WHERE address <> ''")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    count
}

/// Waits until `check` gives a value, asking every 20 ms for at most 30 s: the value. Fails
/// the test with `never` if it does not come.
async fn wait_for<T, F: Future<Output = Option<T>>>(
    never: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{never}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the database says that `replicas` replicas serve.
async fn wait_serving(db: &str, replicas: i64) {
    let never = format!("{replicas} replica(s) never served");
    wait_for(&never, || async {
        (serving(db).await >= replicas).then_some(())
    })
    .await;
}

/// Waits until the database says that the replica at `address` holds round `id`; its epoch.
async fn held_by(db: &str, id: &str, address: &str) -> i64 {
    let never = format!("{address} never held round {id}");
    wait_for(&never, || async {
        holder(db, id)
            .await
            .and_then(|(at, epoch)| (at == address).then_some(epoch))
    })
    .await
}

/// Two relays on a new database with `devices` enrolled devices, relaying to a new aggregator
/// double, sharing the database as `replication` says: the database, the double's state, and
/// the two relays.
async fn two_relays(devices: u32, replication: Replication) -> (String, Shared, Running, Running) {
    let db = postgres().await;
    let (shared, url) = aggregator().await;
    let credentials = provision(&db, devices).await;
    let a = start(&db, &url, credentials.clone(), replication.clone(), 7).await;
    let b = start(&db, &url, credentials, replication, 8).await;
    (db, shared, a, b)
}

/// Device `token` checks in at `relay` for round `id` and uploads one sealed message marked
/// `mark`.
async fn upload(relay: &Running, token: &str, id: &str, mark: usize) -> String {
    let client = relay.client(token);
    published(&client, id).await;
    let token = client.check_in(id, 1).await.unwrap().tokens.remove(0);
    let messages = vec![sealed(mark)];
    let receipt = client
        .upload_sealed(id, &[SealedUpload { token, messages }])
        .await
        .unwrap();
    assert_eq!((receipt.accepted, receipt.rejected.len()), (1, 0));
    sealed(mark)
}

/// Two relays on one database both publish a round; devices check in and upload at either,
/// and the one holding the round (the other forwards it its share of the requests) sends
/// the aggregator one batch of every upload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn two_relays_on_one_database_share_a_round_and_forward_one_batch() {
    let (_db, shared, a, b) = two_relays(6, Replication::default()).await;
    shared
        .lock()
        .unwrap()
        .rounds
        .push(query("r1", 1, 6, 600, Sampling::Device));
    let mut sent = Vec::new();
    for (i, device) in a.devices.iter().enumerate() {
        let relay = if i % 2 == 0 { &a } else { &b };
        sent.push(upload(relay, device, "r1", i).await);
    }
    let received = received(&shared, 1).await;
    let (id, _, batch) = &received[0];
    assert_eq!((id.as_str(), batch.cohort), ("r1", 6));
    let mut forwarded = batch.messages.clone();
    forwarded.sort_unstable();
    sent.sort_unstable();
    assert_eq!(forwarded, sent);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(shared.lock().unwrap().received.len(), 1);
    a.stop().await;
    b.stop().await;
}

/// Two rounds and two relays: each relay takes one round (its share), so that their uploads
/// spread over both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn two_relays_take_one_round_each() {
    let (db, shared, a, b) = two_relays(1, Replication::default()).await;
    // Both replicas serve, and count each other live, before the rounds open.
    wait_serving(&db, 2).await;
    shared.lock().unwrap().rounds.extend([
        query("r5", 1, 10, 600, Sampling::Device),
        query("r6", 1, 10, 600, Sampling::Device),
    ]);
    for relay in [&a, &b] {
        for id in ["r5", "r6"] {
            published(&relay.client(&relay.operator), id).await;
        }
    }
    let (five, _) = holder(&db, "r5").await.unwrap();
    let (six, _) = holder(&db, "r6").await.unwrap();
    let mut holders = [five, six];
    holders.sort();
    let mut relays = [a.url.clone(), b.url.clone()];
    relays.sort();
    assert_eq!(holders, relays);
    a.stop().await;
    b.stop().await;
}

/// The replica holding a round loses its lease (as after a stop or a partition longer than
/// the lease: another takes the round over) while it still holds uploads and still believes
/// it holds the round: when its time comes it forwards nothing, and the one batch the
/// aggregator receives is the new holder's. Without the fence on the forward, the old holder
/// sends a second batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn a_relay_that_lost_its_round_forwards_nothing() {
    let replication = Replication {
        lease: Duration::from_secs(60),
        address: None,
    };
    let (db, shared, a, b) = two_relays(4, replication).await;
    // The round closes at the relays in 8 s; the leases last a minute, so that neither
    // replica renews (and learns of the takeover) before then.
    shared
        .lock()
        .unwrap()
        .rounds
        .push(query("r2", 1, 10, 8, Sampling::Device));
    published(&a.client(&a.operator), "r2").await;
    let (address, epoch) = wait_for("nobody held r2", || holder(&db, "r2")).await;
    assert_eq!(epoch, 1);
    let (old, new) = if address == a.url { (&a, &b) } else { (&b, &a) };
    upload(old, &old.devices[0], "r2", 0).await;
    upload(old, &old.devices[1], "r2", 1).await;
    // Another replica takes the round over: the lease's epoch moves on.
    let mut connection = sqlx::PgConnection::connect(&db).await.unwrap();
    sqlx::query(
        "UPDATE relay_rounds SET holder = 'relay-gone', epoch = epoch + 1, expires_at = 0
         WHERE round_id = 'r2'",
    )
    .execute(&mut connection)
    .await
    .unwrap();
    assert_eq!(held_by(&db, "r2", &new.url).await, 3);
    let mut sent = vec![
        upload(new, &new.devices[2], "r2", 2).await,
        upload(new, &new.devices[3], "r2", 3).await,
    ];
    let received = received(&shared, 1).await;
    // Both replicas' time for the round is up by now.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let batches = shared.lock().unwrap().received.clone();
    assert_eq!(batches.len(), 1, "the aggregator received {batches:?}");
    let mut forwarded = received[0].2.messages.clone();
    forwarded.sort_unstable();
    sent.sort_unstable();
    assert_eq!(forwarded, sent);
    a.stop().await;
    b.stop().await;
}

/// A relay that stops hands its rounds over at once: the other replica takes the round at
/// its next look, and the round goes on there (the stopped one's uploads are gone with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn a_relay_that_stops_hands_its_rounds_to_another() {
    let (db, shared, a, b) = two_relays(3, Replication::default()).await;
    shared
        .lock()
        .unwrap()
        .rounds
        .push(query("r3", 1, 2, 600, Sampling::Device));
    published(&a.client(&a.operator), "r3").await;
    published(&b.client(&b.operator), "r3").await;
    let (address, _) = holder(&db, "r3").await.unwrap();
    let (old, new) = if address == a.url { (a, b) } else { (b, a) };
    upload(&old, &old.devices[0], "r3", 0).await;
    old.stop().await;
    assert_eq!(held_by(&db, "r3", &new.url).await, 2);
    let sent = [
        upload(&new, &new.devices[1], "r3", 1).await,
        upload(&new, &new.devices[2], "r3", 2).await,
    ];
    let received = received(&shared, 1).await;
    let mut forwarded = received[0].2.messages.clone();
    forwarded.sort_unstable();
    assert_eq!(forwarded, sent);
    new.stop().await;
}

/// A replica holding the lease of a round it does not hold in memory (a claim committed whose
/// answer was lost) lets the lease lapse at its next renewal instead of renewing it for
/// nothing, so that the round is taken (here by the same replica, at the next epoch) and
/// devices can check in. Renewing every lease it holds, the replica would keep the round
/// from everyone until its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(tally_postgres),
    ignore = "needs PostgreSQL: source .ci/postgres.sh"
)]
async fn a_lease_held_without_its_round_is_let_go() {
    let replication = Replication {
        lease: Duration::from_secs(2),
        address: None,
    };
    let (db, shared, a, b) = two_relays(1, replication).await;
    b.stop().await;
    wait_serving(&db, 1).await;
    let mut connection = sqlx::PgConnection::connect(&db).await.unwrap();
    let (id,): (String,) = sqlx::query_as("SELECT id FROM replicas WHERE address = $1")
        .bind(&a.url)
        .fetch_one(&mut connection)
        .await
        .unwrap();
    // The lease of r7 is A's, for ever, before A ever saw r7.
    let round = query("r7", 1, 10, 600, Sampling::Device);
    sqlx::query(
        "INSERT INTO relay_rounds (round_id, holder, epoch, expires_at, deadline, closed)
         VALUES ('r7', $1, 1, $2, $3, 0)",
    )
    .bind(&id)
    .bind(i64::MAX)
    .bind(round.deadline)
    .execute(&mut connection)
    .await
    .unwrap();
    shared.lock().unwrap().rounds.push(round);
    wait_for("the lease of r7 was never let go", || async {
        (holder(&db, "r7").await.map(|(_, epoch)| epoch) == Some(2)).then_some(())
    })
    .await;
    upload(&a, &a.devices[0], "r7", 0).await;
    a.stop().await;
}
