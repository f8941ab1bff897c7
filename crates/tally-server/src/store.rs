//! The storage layer: tasks, round states, released results and the ledger, in SQLite (the
//! default, a file created on first start) or PostgreSQL, through one set of queries.
//!
//! Raw reports never reach this module: it stores only what a round released (already
//! thresholded) and the bookkeeping around it.

use std::path::Path;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Row};
use tally_accounting::Neighbours;
use tally_core::protocol::wire::WireCell;
use tally_messages::{TaskState, TrustModel};

use crate::ledger::{Charge, LossRounds, TaskBound};
use crate::{ServerError, redacted};

mod relay_rounds;
pub use relay_rounds::RoundPlace;

/// The schema, one statement per entry; every statement is idempotent.
const SCHEMA: [&str; 20] = [
    "CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        population TEXT NOT NULL,
        spec TEXT NOT NULL,
        guarantee TEXT NOT NULL,
        epsilon DOUBLE PRECISION NOT NULL,
        delta DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL,
        error TEXT,
        created_at BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS rounds (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        round BIGINT NOT NULL,
        attempt BIGINT NOT NULL,
        state TEXT NOT NULL,
        uploads BIGINT NOT NULL,
        release TEXT,
        opened_at BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS results (
        task_id TEXT PRIMARY KEY,
        body TEXT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS ledger (
        task_id TEXT PRIMARY KEY,
        population TEXT NOT NULL,
        epsilon DOUBLE PRECISION NOT NULL,
        delta DOUBLE PRECISION NOT NULL,
        at BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS task_losses (
        task_id TEXT PRIMARY KEY,
        sampling_rate DOUBLE PRECISION NOT NULL,
        threshold BIGINT NOT NULL,
        rounds BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS populations (
        name TEXT PRIMARY KEY,
        epsilon DOUBLE PRECISION NOT NULL,
        delta DOUBLE PRECISION NOT NULL,
        min_cohort BIGINT NOT NULL,
        max_task_epsilon DOUBLE PRECISION,
        created_at BIGINT NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS credentials (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        role TEXT NOT NULL,
        populations TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
    )",
    // One row: bumped in the transaction of every change to `credentials`, so that a running
    // server sees a change made beside it (`tally token revoke --db`) by reading one number.
    "CREATE TABLE IF NOT EXISTS credential_changes (
        id BIGINT PRIMARY KEY,
        generation BIGINT NOT NULL
    )",
    "INSERT INTO credential_changes (id, generation) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    // A population's trust model when it is not `single-party` (a table of its own, so that a
    // database made before split-trust deployments needs no migration).
    "CREATE TABLE IF NOT EXISTS population_trust (
        name TEXT PRIMARY KEY,
        trust TEXT NOT NULL
    )",
    // The populations whose operator allowed device-side sampling (a table of its own, so
    // that a population made before the policy existed has no row: not allowed).
    "CREATE TABLE IF NOT EXISTS population_device_sampling (
        name TEXT PRIMARY KEY
    )",
    // A population's declared per-round S&T pair, its share of the budget and the rounds that
    // share covers (a table of its own: a population made before declared pairs has no row, and
    // every one of its tasks is charged by basic composition).
    "CREATE TABLE IF NOT EXISTS population_task_bounds (
        name TEXT PRIMARY KEY,
        sampling_rate DOUBLE PRECISION NOT NULL,
        threshold BIGINT NOT NULL,
        share_epsilon DOUBLE PRECISION NOT NULL,
        share_delta DOUBLE PRECISION NOT NULL,
        rounds BIGINT NOT NULL
    )",
    // The fraction of a population's devices its shuffle-model tasks are charged as colluding
    // with the analyst (a table of its own: a population made before the policy has no row,
    // and its budget assumes honest devices).
    "CREATE TABLE IF NOT EXISTS population_collusion (
        name TEXT PRIMARY KEY,
        colluding_fraction DOUBLE PRECISION NOT NULL
    )",
    // The populations whose budget is kept under replace-one neighbours (a table of its own:
    // a population without a row, made before the relation was chosen among them, is
    // add/remove).
    "CREATE TABLE IF NOT EXISTS population_neighbours (
        name TEXT PRIMARY KEY,
        neighbours TEXT NOT NULL
    )",
    // The aggregator's HPKE key pairs (RFC 9180), by RFC 9458 key id: the private key in
    // base64url, when it was made, and when it stops opening messages (null for the current
    // key, which is the newest one without it).
    "CREATE TABLE IF NOT EXISTS hpke_keys (
        key_id BIGINT PRIMARY KEY,
        secret_key TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        retires_at BIGINT
    )",
    // The console's sign-ins: the SHA-256 of each session's id (never the id), the credential
    // it acts as, and when it began and was last used, in milliseconds since the Unix epoch.
    "CREATE TABLE IF NOT EXISTS console_sessions (
        id_hash TEXT PRIMARY KEY,
        credential_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_seen BIGINT NOT NULL
    )",
    // Who drives each running task's rounds: the replica holding its lease, the lease's
    // epoch (bumped by every takeover, never reused: the fence every dependent write checks),
    // and when it lapses unless renewed, in milliseconds since the Unix epoch.
    "CREATE TABLE IF NOT EXISTS task_leases (
        task_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    )",
    // The live replicas: where the others forward a round's check-ins and uploads to them,
    // and when each was last heard of (milliseconds since the Unix epoch).
    "CREATE TABLE IF NOT EXISTS replicas (
        id TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        seen_at BIGINT NOT NULL
    )",
    // Each round's query as its devices read it (public: every device of the population
    // reads it), so that every replica lists every open round.
    "CREATE TABLE IF NOT EXISTS round_queries (
        round_id TEXT PRIMARY KEY,
        query TEXT NOT NULL
    )",
    // A relay's database: which relay replica holds each of the aggregator's rounds (its
    // lease, as `task_leases`), the aggregator's deadline (seconds since the Unix epoch, when
    // the row may go), and whether its holder closed it (1: forwarded, or nothing below the
    // minimum cohort; never taken over again).
    "CREATE TABLE IF NOT EXISTS relay_rounds (
        round_id TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        deadline BIGINT NOT NULL,
        closed BIGINT NOT NULL
    )",
];

/// `SELECT` of a stored population's columns `FROM populations`, then `$rest`; its trust
/// model is read from `population_trust` (`single-party` where it has no row), its sampling
/// policy from `population_device_sampling` (device-side sampling allowed where it has a row),
/// its declared pair from `population_task_bounds` (none where it has no row), its colluding
/// fraction from `population_collusion` (0 where it has no row), its neighbour relation from
/// `population_neighbours` (add/remove where it has no row).
macro_rules! select_populations {
    ($rest:literal) => {
        concat!(
            "SELECT name, epsilon, delta, min_cohort, max_task_epsilon, created_at,
                (SELECT trust FROM population_trust
                 WHERE population_trust.name = populations.name) AS trust,
                (SELECT neighbours FROM population_neighbours n
                 WHERE n.name = populations.name) AS neighbours,
                (SELECT COUNT(*) FROM population_device_sampling
                 WHERE population_device_sampling.name = populations.name) AS device_sampling,
                (SELECT sampling_rate FROM population_task_bounds b
                 WHERE b.name = populations.name) AS bound_rate,
                (SELECT threshold FROM population_task_bounds b
                 WHERE b.name = populations.name) AS bound_threshold,
                (SELECT share_epsilon FROM population_task_bounds b
                 WHERE b.name = populations.name) AS bound_epsilon,
                (SELECT share_delta FROM population_task_bounds b
                 WHERE b.name = populations.name) AS bound_delta,
                (SELECT rounds FROM population_task_bounds b
                 WHERE b.name = populations.name) AS bound_rounds,
                (SELECT colluding_fraction FROM population_collusion c
                 WHERE c.name = populations.name) AS colluding_fraction
             FROM populations ",
            $rest
        )
    };
}

/// `SELECT` of a stored task's columns (with its loss rounds, null where it has none), then
/// `$rest`.
macro_rules! select_tasks {
    ($rest:literal) => {
        concat!(
            "SELECT id, owner, population, spec, guarantee, epsilon, delta, state, error,
                    created_at, sampling_rate, threshold, rounds
             FROM tasks LEFT JOIN task_losses ON task_losses.task_id = tasks.id ",
            $rest
        )
    };
}

/// Counts a change to `credentials`, in the transaction that makes it.
const BUMP_CREDENTIAL_GENERATION: &str =
    "UPDATE credential_changes SET generation = generation + 1 WHERE id = 1 RETURNING generation";

/// Where a stored round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoundState {
    /// Accepting uploads (in storage after a crash: cut short by the restart).
    Open,
    /// Released; the release is stored.
    Released,
    /// Closed below the minimum cohort; nothing released.
    Short,
    /// Cut short by a restart or a cancellation; nothing released.
    Aborted,
}

impl RoundState {
    fn name(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Released => "released",
            Self::Short => "short",
            Self::Aborted => "aborted",
        }
    }

    fn from_name(name: &str) -> Result<Self, ServerError> {
        [Self::Open, Self::Released, Self::Short, Self::Aborted]
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| ServerError::Corrupt(format!("round state {name:?}")))
    }
}

/// A task as stored.
#[derive(Clone, Debug)]
pub(crate) struct StoredTask {
    /// Its id.
    pub(crate) id: String,
    /// The id of the analyst credential that created it.
    pub(crate) owner: String,
    /// The population it draws on.
    pub(crate) population: String,
    /// The [`tally_messages::TaskSpec`] as JSON.
    pub(crate) spec: String,
    /// The [`tally_messages::GuaranteeBody`] as JSON.
    pub(crate) guarantee: String,
    /// The guarantee's `ε` (what the ledger debits).
    pub(crate) epsilon: f64,
    /// The guarantee's `δ`.
    pub(crate) delta: f64,
    /// The [`tally_messages::TaskState`] name.
    pub(crate) state: String,
    /// Why it failed, if it did.
    pub(crate) error: Option<String>,
    /// Creation time, seconds since the Unix epoch.
    pub(crate) created_at: i64,
    /// Its S&T rounds, which a declared pair may bound, where they have a loss pair (none for
    /// tasks stored before the ledger kept them: those are charged basically).
    pub(crate) loss: Option<LossRounds>,
}

/// A round as stored.
#[derive(Clone, Debug)]
pub(crate) struct StoredRound {
    /// Its id.
    pub(crate) id: String,
    /// The round of the task, from 1.
    pub(crate) round: u32,
    /// The attempt, from 1.
    pub(crate) attempt: u32,
    /// Where it ended.
    pub(crate) state: RoundState,
    /// The release (JSON), for a released round.
    pub(crate) release: Option<String>,
}

/// A release as the store keeps it: its cells as `[report, count, estimate]`, each report in
/// its wire encoding (a count is an integer, negative only where the release adds noise).
pub(crate) fn encode_release(cells: &[WireCell]) -> String {
    let cells: Vec<(&str, i64, f64)> = cells
        .iter()
        .map(|cell| (cell.key.as_str(), cell.count, cell.estimate))
        .collect();
    // Unwrap safety: cells are strings and numbers.
    serde_json::to_string(&cells).expect("cells serialize")
}

/// Reads back a release [`encode_release`] wrote.
pub(crate) fn decode_release(stored: &str) -> serde_json::Result<Vec<WireCell>> {
    let cells: Vec<(String, i64, f64)> = serde_json::from_str(stored)?;
    Ok(cells
        .into_iter()
        .map(|(key, count, estimate)| WireCell {
            key,
            count,
            estimate,
        })
        .collect())
}

/// One ledger debit as stored.
#[derive(Clone, Debug)]
pub(crate) struct StoredDebit {
    /// The task.
    pub(crate) task_id: String,
    /// The population.
    pub(crate) population: String,
    /// `ε` debited.
    pub(crate) epsilon: f64,
    /// `δ` debited.
    pub(crate) delta: f64,
    /// When, seconds since the Unix epoch.
    pub(crate) at: i64,
}

/// A provisioned population as stored.
#[derive(Clone, Debug)]
pub(crate) struct StoredPopulation {
    /// Its name.
    pub(crate) name: String,
    /// Its `ε` budget.
    pub(crate) epsilon: f64,
    /// Its `δ` budget.
    pub(crate) delta: f64,
    /// The floor of its tasks' minimum cohort.
    pub(crate) min_cohort: u64,
    /// The cap on one task's `ε`.
    pub(crate) max_task_epsilon: Option<f64>,
    /// Who its devices' reports go through.
    pub(crate) trust: TrustModel,
    /// Whether its tasks may ask devices to sample themselves.
    pub(crate) allow_device_sampling: bool,
    /// Its declared per-round pair, if any.
    pub(crate) task_bound: Option<TaskBound>,
    /// The fraction of its devices its shuffle-model tasks are charged as colluding.
    pub(crate) colluding_fraction: f64,
    /// The neighbour relation its budget is kept under.
    pub(crate) neighbours: Neighbours,
    /// Creation time, seconds since the Unix epoch.
    pub(crate) created_at: i64,
}

/// One of the aggregator's HPKE key pairs as stored.
#[derive(Clone, Debug)]
pub(crate) struct StoredKey {
    /// Its RFC 9458 key id.
    pub(crate) key_id: u8,
    /// Its private key, base64url.
    pub(crate) secret_key: String,
    /// Creation time, seconds since the Unix epoch.
    pub(crate) created_at: i64,
    /// When it stops opening messages; `None` while current.
    pub(crate) retires_at: Option<i64>,
}

/// A credential as stored: its secret only as a hash.
#[derive(Clone, Debug)]
pub(crate) struct StoredCredential {
    /// Its id.
    pub(crate) id: String,
    /// Its name.
    pub(crate) name: String,
    /// The [`tally_messages::Role`] name.
    pub(crate) role: String,
    /// Its populations, a JSON list.
    pub(crate) populations: String,
    /// `SHA-256` of its secret, in hex.
    pub(crate) secret_hash: String,
    /// Creation time, seconds since the Unix epoch.
    pub(crate) created_at: i64,
    /// When it was revoked, if it was.
    pub(crate) revoked_at: Option<i64>,
}

/// A console session as stored: its id only as a hash.
#[derive(Clone, Debug)]
pub(crate) struct StoredSession {
    /// `SHA-256` of its id, in hex.
    pub(crate) id_hash: String,
    /// The credential it acts as.
    pub(crate) credential_id: String,
    /// When it began, milliseconds since the Unix epoch.
    pub(crate) created_at: i64,
}

/// When a console session ends: the instants (milliseconds since the Unix epoch) before which
/// its last use, and its beginning, make it expired.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SessionCutoffs {
    /// A session last used before this is idle too long.
    pub(crate) last_seen: i64,
    /// A session begun before this is too old.
    pub(crate) created_at: i64,
}

/// What a round's release commits, all in one transaction.
pub(crate) struct ReleaseCommit<'a> {
    /// The lease its replica drives the task under.
    pub(crate) fence: &'a Fence,
    /// The round.
    pub(crate) round_id: &'a str,
    /// Uploads it accepted.
    pub(crate) uploads: u64,
    /// What it released (JSON).
    pub(crate) release: &'a str,
    /// The task's debit, with the first release of the task.
    pub(crate) debit: Option<StoredDebit>,
    /// The task's final document, when this round finishes the task.
    pub(crate) result: Option<(&'a str, &'a str)>,
}

/// A running task's lease as the replica driving it holds it: every write that depends on it
/// (a round opened or closed, a release, a debit, a failure) checks, inside its transaction,
/// that the lease is still this replica's at this epoch and that the task still runs, and
/// fails with [`ServerError::LeaseLost`] otherwise. A takeover bumps the epoch, so a replica
/// that lost its lease (stopped, partitioned, its database sessions killed) commits nothing
/// once another replica took the task over, whatever its clock says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    /// The task.
    pub(crate) task_id: String,
    /// The replica holding the lease.
    pub(crate) holder: String,
    /// The lease's epoch when this replica took it.
    pub(crate) epoch: i64,
}

/// An open round of a task another replica drives: its query, and where that replica takes
/// the round's check-ins and uploads.
#[derive(Clone, Debug)]
pub(crate) struct RemoteRound {
    /// The round's query as stored (JSON).
    pub(crate) query: String,
    /// The driving replica's address.
    pub(crate) address: String,
}

/// What a task's rounds say of it: how many released, and the open one if any.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoundsSummary {
    /// Released rounds.
    pub(crate) released: u32,
    /// The open round's id.
    pub(crate) open: Option<String>,
}

/// The one writer's hold on a SQLite database, for the life of a server or a relay: a second
/// one on the same file refuses to start, so that two processes never run the same rounds or
/// spend the same budget twice. (On PostgreSQL there is none: servers and relays run as
/// replicas, each task or round held by one of them under a lease, [`Fence`].) An in-memory
/// SQLite database holds none either: no other process can open it.
pub(crate) struct WriterLease {
    /// An exclusive `flock` on a SQLite database file itself, released when it closes: it
    /// belongs to the file (its device and inode), so that every name of the file (a symbolic
    /// link, a hard link, another spelling of its path) meets it. SQLite's own locks are POSIX
    /// record locks, which a `flock` does not touch.
    _file: Option<std::fs::File>,
}

/// The key of the PostgreSQL advisory lock held while the schema is made (per database).
const SCHEMA_LOCK_KEY: i64 = 0x7461_6c6c_7901;

/// The key of the PostgreSQL advisory lock held while a database's first HPKE key is made.
const KEYS_LOCK_KEY: i64 = 0x7461_6c6c_7902;

/// The durable state of a server.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    pool: AnyPool,
    /// Whether the database is PostgreSQL (else SQLite).
    postgres: bool,
}

impl Store {
    /// Opens (creating it if needed) the database at `url`: `sqlite://FILE` or
    /// `postgres://...`. A SQLite file is created on first open.
    ///
    /// # Errors
    ///
    /// [`ServerError::Storage`] if the database cannot be reached or the schema not created.
    pub(crate) async fn open(url: &str) -> Result<Self, ServerError> {
        install_default_drivers();
        if let Some(path) = sqlite_path(url) {
            create_private(Path::new(path))?;
        }
        let url = if url.starts_with("sqlite:") && !url.contains('?') {
            format!("{url}?mode=rwc")
        } else {
            url.to_owned()
        };
        let pool = AnyPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await?;
        let postgres = url.starts_with("postgres");
        let mut tx = begin_write(&pool, postgres).await?;
        if postgres {
            // `CREATE TABLE IF NOT EXISTS` is not safe against itself on PostgreSQL: replicas
            // (or a replica and `tally token create --db`) starting together on a new database
            // would collide in its catalog. One at a time, then (SQLite's writes are one at a
            // time already).
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(SCHEMA_LOCK_KEY)
                .execute(&mut *tx)
                .await?;
        }
        for statement in SCHEMA {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(Self { pool, postgres })
    }

    /// Takes a SQLite database's writer lease, or fails if another process holds it.
    ///
    /// # Errors
    ///
    /// [`ServerError::Locked`] if another process holds it, [`ServerError`] if the lock file
    /// fails.
    pub(crate) fn lease(url: &str) -> Result<WriterLease, ServerError> {
        let Some(path) = sqlite_path(url) else {
            return Ok(WriterLease { _file: None });
        };
        let file = create_private(Path::new(path))?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLease { _file: Some(file) }),
            Err(std::fs::TryLockError::WouldBlock) => Err(ServerError::Locked(redacted(url))),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }

    /// Begins a transaction that writes (see [`begin_write`]).
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, ServerError> {
        begin_write(&self.pool, self.postgres).await
    }

    /// Whether many replicas may share this database (PostgreSQL; SQLite has one writer).
    pub(crate) fn shared(&self) -> bool {
        self.postgres
    }

    /// Says that replica `id` is alive at `now` and takes check-ins and uploads at `address`.
    pub(crate) async fn heartbeat(
        &self,
        id: &str,
        address: &str,
        now: i64,
    ) -> Result<(), ServerError> {
        sqlx::query(
            "INSERT INTO replicas (id, address, seen_at) VALUES ($1, $2, $3)
             ON CONFLICT (id) DO UPDATE SET address = excluded.address, seen_at = excluded.seen_at",
        )
        .bind(id)
        .bind(address)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The replicas heard of since `since` (replica `id`, asking, among them).
    pub(crate) async fn live_replicas(&self, since: i64) -> Result<u64, ServerError> {
        let row = sqlx::query("SELECT COUNT(*) AS live FROM replicas WHERE seen_at >= $1")
            .bind(since)
            .fetch_one(&self.pool)
            .await?;
        stored_count("replicas", row.try_get("live")?)
    }

    /// Forgets replica `id` and lets its leases (of tasks, or of a relay's rounds) lapse now,
    /// for its graceful shutdown: the others take its work over at their next look.
    pub(crate) async fn leave(&self, id: &str) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        for statement in [
            "UPDATE task_leases SET expires_at = 0 WHERE holder = $1",
            "UPDATE relay_rounds SET expires_at = 0 WHERE holder = $1",
        ] {
            sqlx::query(statement).bind(id).execute(&mut *tx).await?;
        }
        sqlx::query("DELETE FROM replicas WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Lets every lease lapse: a SQLite database's one writer, starting, knows that whoever
    /// held them is gone.
    pub(crate) async fn expire_leases(&self) -> Result<(), ServerError> {
        for statement in [
            "UPDATE task_leases SET expires_at = 0",
            "UPDATE relay_rounds SET expires_at = 0",
        ] {
            sqlx::query(statement).execute(&self.pool).await?;
        }
        Ok(())
    }

    /// The running tasks no live lease covers at `now` (never leased, or lapsed), oldest
    /// first.
    pub(crate) async fn unleased_tasks(&self, now: i64) -> Result<Vec<String>, ServerError> {
        let rows = sqlx::query(
            "SELECT tasks.id AS id FROM tasks
             LEFT JOIN task_leases ON task_leases.task_id = tasks.id
             WHERE tasks.state = $1
               AND (task_leases.task_id IS NULL OR task_leases.expires_at < $2)
             ORDER BY tasks.created_at, tasks.id",
        )
        .bind(TaskState::Running.name())
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| Ok(r.try_get("id")?)).collect()
    }

    /// Takes running task `task_id`'s lease for replica `holder` until `expires_at`, if no
    /// live lease covers it at `now`: the epoch goes up by one (from 1 for a task never
    /// leased), and the task's rounds still open (opened under an earlier epoch, their
    /// reports gone with the replica that held them) are aborted in the same transaction.
    /// Returns the fence, and how many rounds it aborted; `None` if another replica holds a
    /// live lease or the task no longer runs.
    pub(crate) async fn take_lease(
        &self,
        task_id: &str,
        holder: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<Option<(Fence, u64)>, ServerError> {
        let mut tx = self.begin_write().await?;
        let taken = sqlx::query(
            "INSERT INTO task_leases (task_id, holder, epoch, expires_at)
             SELECT id, $1, 1, $2 FROM tasks WHERE id = $3 AND state = $4
             ON CONFLICT (task_id) DO UPDATE
             SET holder = excluded.holder, epoch = task_leases.epoch + 1,
                 expires_at = excluded.expires_at
             WHERE task_leases.expires_at < $5
             RETURNING epoch",
        )
        .bind(holder)
        .bind(expires_at)
        .bind(task_id)
        .bind(TaskState::Running.name())
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = taken else {
            tx.rollback().await?;
            return Ok(None);
        };
        let epoch: i64 = row.try_get("epoch")?;
        let aborted = sqlx::query("UPDATE rounds SET state = $1 WHERE task_id = $2 AND state = $3")
            .bind(RoundState::Aborted.name())
            .bind(task_id)
            .bind(RoundState::Open.name())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        let fence = Fence {
            task_id: task_id.to_owned(),
            holder: holder.to_owned(),
            epoch,
        };
        Ok(Some((fence, aborted)))
    }

    /// Renews every lease replica `holder` still holds on a running task until `expires_at`,
    /// and returns them (task and epoch): a lease another replica took over, or of a task
    /// cancelled beside it, is not among them.
    pub(crate) async fn renew_leases(
        &self,
        holder: &str,
        expires_at: i64,
    ) -> Result<Vec<(String, i64)>, ServerError> {
        let rows = sqlx::query(
            "UPDATE task_leases SET expires_at = $1
             WHERE holder = $2 AND task_id IN (SELECT id FROM tasks WHERE state = $3)
             RETURNING task_id, epoch",
        )
        .bind(expires_at)
        .bind(holder)
        .bind(TaskState::Running.name())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("task_id")?, r.try_get("epoch")?)))
            .collect()
    }

    /// The lease of a new task, in `tx`: its creator's replica drives it from the start.
    async fn lease_new_task(
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        fence: &Fence,
        expires_at: i64,
    ) -> Result<(), ServerError> {
        sqlx::query(
            "INSERT INTO task_leases (task_id, holder, epoch, expires_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(&fence.task_id)
        .bind(&fence.holder)
        .bind(fence.epoch)
        .bind(expires_at)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// Stores a new population (with its trust model, sampling policy, declared pair and
    /// colluding fraction, in the same transaction); `false` if one of that name exists.
    pub(crate) async fn insert_population(
        &self,
        population: &StoredPopulation,
    ) -> Result<bool, ServerError> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(
            "INSERT INTO populations (name, epsilon, delta, min_cohort, max_task_epsilon, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&population.name)
        .bind(population.epsilon)
        .bind(population.delta)
        .bind(to_i64(population.min_cohort))
        .bind(population.max_task_epsilon)
        .bind(population.created_at)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        if population.trust != TrustModel::SingleParty {
            sqlx::query("INSERT INTO population_trust (name, trust) VALUES ($1, $2)")
                .bind(&population.name)
                .bind(population.trust.name())
                .execute(&mut *tx)
                .await?;
        }
        if population.neighbours != Neighbours::AddRemove {
            sqlx::query("INSERT INTO population_neighbours (name, neighbours) VALUES ($1, $2)")
                .bind(&population.name)
                .bind(population.neighbours.name())
                .execute(&mut *tx)
                .await?;
        }
        if population.allow_device_sampling {
            sqlx::query("INSERT INTO population_device_sampling (name) VALUES ($1)")
                .bind(&population.name)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(bound) = &population.task_bound {
            sqlx::query(
                "INSERT INTO population_task_bounds
                 (name, sampling_rate, threshold, share_epsilon, share_delta, rounds)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&population.name)
            .bind(bound.sampling_rate)
            .bind(to_i64(bound.threshold))
            .bind(bound.share.0)
            .bind(bound.share.1)
            .bind(to_i64(bound.rounds))
            .execute(&mut *tx)
            .await?;
        }
        if population.colluding_fraction > 0.0 {
            sqlx::query(
                "INSERT INTO population_collusion (name, colluding_fraction) VALUES ($1, $2)",
            )
            .bind(&population.name)
            .bind(population.colluding_fraction)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// The aggregator's HPKE key pairs, newest first.
    pub(crate) async fn keys(&self) -> Result<Vec<StoredKey>, ServerError> {
        let rows = sqlx::query(
            "SELECT key_id, secret_key, created_at, retires_at FROM hpke_keys
             ORDER BY created_at DESC, key_id DESC",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let key_id: i64 = row.try_get("key_id")?;
                Ok(StoredKey {
                    key_id: u8::try_from(key_id)
                        .map_err(|_| ServerError::Corrupt(format!("HPKE key id {key_id}")))?,
                    secret_key: row.try_get("secret_key")?,
                    created_at: row.try_get("created_at")?,
                    retires_at: row.try_get("retires_at")?,
                })
            })
            .collect()
    }

    /// Makes `key` the current key, in one transaction: every key retired by `now` is
    /// deleted, the others retire at `retire_at` at the latest, and `key` replaces any key of
    /// its id.
    pub(crate) async fn rotate_key(
        &self,
        key: &StoredKey,
        now: i64,
        retire_at: i64,
    ) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM hpke_keys WHERE retires_at <= $1 OR key_id = $2")
            .bind(now)
            .bind(i64::from(key.key_id))
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE hpke_keys SET retires_at = $1 WHERE retires_at IS NULL OR retires_at > $1",
        )
        .bind(retire_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO hpke_keys (key_id, secret_key, created_at, retires_at)
             VALUES ($1, $2, $3, NULL)",
        )
        .bind(i64::from(key.key_id))
        .bind(&key.secret_key)
        .bind(key.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores `key` as the current key unless the database has one (its first start), in
    /// a transaction replicas starting together take in turn.
    pub(crate) async fn insert_first_key(&self, key: &StoredKey) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        if self.postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(KEYS_LOCK_KEY)
                .execute(&mut *tx)
                .await?;
        }
        let current = sqlx::query("SELECT key_id FROM hpke_keys WHERE retires_at IS NULL")
            .fetch_optional(&mut *tx)
            .await?;
        if current.is_none() {
            sqlx::query(
                "INSERT INTO hpke_keys (key_id, secret_key, created_at, retires_at)
                 VALUES ($1, $2, $3, NULL)",
            )
            .bind(i64::from(key.key_id))
            .bind(&key.secret_key)
            .bind(key.created_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The population `name`, if provisioned.
    pub(crate) async fn population(
        &self,
        name: &str,
    ) -> Result<Option<StoredPopulation>, ServerError> {
        let row = sqlx::query(select_populations!("WHERE name = $1"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(population_of).transpose()
    }

    /// Every population, by name.
    pub(crate) async fn populations(&self) -> Result<Vec<StoredPopulation>, ServerError> {
        let rows = sqlx::query(select_populations!("ORDER BY name"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(population_of).collect()
    }

    /// Stores a new task if `admit` accepts it beside what its population's tasks already
    /// charge to it (the debits of released tasks and the reservations of running ones),
    /// all in one transaction that no other writer on the database can interleave with: on
    /// SQLite it takes the write lock first (`BEGIN IMMEDIATE`), on PostgreSQL it locks the
    /// population's row. Two handles on one database (two processes) therefore never both
    /// admit a task the budget covers only once. The task's lease (`fence`, until
    /// `expires_at`) is stored with it.
    ///
    /// # Errors
    ///
    /// What `admit` returns (nothing is stored then), or [`ServerError`] (as `E`) if the
    /// database fails or the population does not exist.
    pub(crate) async fn insert_task_within_budget<E: From<ServerError>>(
        &self,
        task: &StoredTask,
        (fence, expires_at): (&Fence, i64),
        admit: impl FnOnce(&StoredPopulation, Vec<Charge>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut tx = self.begin_write().await?;
        let lock = if self.postgres {
            select_populations!("WHERE name = $1 FOR UPDATE")
        } else {
            select_populations!("WHERE name = $1")
        };
        let population = sqlx::query(lock)
            .bind(&task.population)
            .fetch_optional(&mut *tx)
            .await
            .map_err(ServerError::from)?
            .as_ref()
            .map(population_of)
            .transpose()?
            .ok_or_else(|| ServerError::Invalid(format!("no population {:?}", task.population)))?;
        // What the population's tasks charge: the debits of those that released (oldest
        // first), then the reservations of those running that did not yet. One statement, so
        // one snapshot (on PostgreSQL, taken after the row lock): a release committing
        // meanwhile moves a task from one part to the other, never out of both.
        let rows = sqlx::query(
            "SELECT ledger.epsilon AS epsilon, ledger.delta AS delta,
                    sampling_rate, threshold, rounds,
                    0 AS reserved, ledger.at AS at, ledger.task_id AS id
             FROM ledger LEFT JOIN task_losses ON task_losses.task_id = ledger.task_id
             WHERE ledger.population = $1
             UNION ALL
             SELECT tasks.epsilon AS epsilon, tasks.delta AS delta,
                    sampling_rate, threshold, rounds,
                    1 AS reserved, 0 AS at, tasks.id AS id
             FROM tasks LEFT JOIN task_losses ON task_losses.task_id = tasks.id
             WHERE tasks.population = $2 AND tasks.state = $3
               AND NOT EXISTS (SELECT 1 FROM ledger WHERE ledger.task_id = tasks.id)
             ORDER BY reserved, at, id",
        )
        .bind(&task.population)
        .bind(&task.population)
        .bind(TaskState::Running.name())
        .fetch_all(&mut *tx)
        .await
        .map_err(ServerError::from)?;
        let charges = rows
            .iter()
            .map(|r| {
                Ok(Charge {
                    epsilon: r.try_get("epsilon")?,
                    delta: r.try_get("delta")?,
                    rounds: stored_loss(r)?,
                })
            })
            .collect::<Result<Vec<_>, ServerError>>()?;
        if let Err(refused) = admit(&population, charges) {
            tx.rollback().await.map_err(ServerError::from)?;
            return Err(refused);
        }
        insert_task(&mut tx, task).await?;
        Self::lease_new_task(&mut tx, fence, expires_at).await?;
        tx.commit().await.map_err(ServerError::from)?;
        Ok(())
    }

    /// Every task, oldest first.
    pub(crate) async fn tasks(&self) -> Result<Vec<StoredTask>, ServerError> {
        let rows = sqlx::query(select_tasks!("ORDER BY created_at, id"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(task_of).collect()
    }

    /// Task `id`, if there is one.
    pub(crate) async fn task(&self, id: &str) -> Result<Option<StoredTask>, ServerError> {
        let row = sqlx::query(select_tasks!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(task_of).transpose()
    }

    /// How many tasks of the analyst credential `owner` run.
    pub(crate) async fn running_tasks_of(&self, owner: &str) -> Result<u64, ServerError> {
        let row =
            sqlx::query("SELECT COUNT(*) AS running FROM tasks WHERE owner = $1 AND state = $2")
                .bind(owner)
                .bind(TaskState::Running.name())
                .fetch_one(&self.pool)
                .await?;
        stored_count("running tasks", row.try_get("running")?)
    }

    /// How many tasks run.
    pub(crate) async fn running_tasks(&self) -> Result<u64, ServerError> {
        let row = sqlx::query("SELECT COUNT(*) AS running FROM tasks WHERE state = $1")
            .bind(TaskState::Running.name())
            .fetch_one(&self.pool)
            .await?;
        stored_count("running tasks", row.try_get("running")?)
    }

    /// Fails the task `fence` drives, saying why.
    pub(crate) async fn fail_task(&self, fence: &Fence, error: &str) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, fence).await?;
        sqlx::query("UPDATE tasks SET state = $1, error = $2 WHERE id = $3")
            .bind(TaskState::Failed.name())
            .bind(error)
            .bind(&fence.task_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Cancels running task `id` (from any replica): its state, and its rounds still open
    /// aborted, in one transaction; the replica driving it commits nothing for it afterwards
    /// (its [`Fence`] checks that the task runs). `false` if it was not running.
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<bool, ServerError> {
        let mut tx = self.begin_write().await?;
        let cancelled = sqlx::query("UPDATE tasks SET state = $1 WHERE id = $2 AND state = $3")
            .bind(TaskState::Cancelled.name())
            .bind(id)
            .bind(TaskState::Running.name())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        sqlx::query("UPDATE rounds SET state = $1 WHERE task_id = $2 AND state = $3")
            .bind(RoundState::Aborted.name())
            .bind(id)
            .bind(RoundState::Open.name())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(cancelled)
    }

    /// Records a newly opened round of the task `fence` drives, with its query (JSON).
    pub(crate) async fn insert_round(
        &self,
        fence: &Fence,
        id: &str,
        (round, attempt): (u32, u32),
        opened_at: i64,
        query: &str,
    ) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, fence).await?;
        sqlx::query(
            "INSERT INTO rounds (id, task_id, round, attempt, state, uploads, release, opened_at)
             VALUES ($1, $2, $3, $4, $5, 0, NULL, $6)",
        )
        .bind(id)
        .bind(&fence.task_id)
        .bind(i64::from(round))
        .bind(i64::from(attempt))
        .bind(RoundState::Open.name())
        .bind(opened_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO round_queries (round_id, query) VALUES ($1, $2)")
            .bind(id)
            .bind(query)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Closes a round of the task `fence` drives without a release (`Short` or `Aborted`).
    pub(crate) async fn close_round(
        &self,
        fence: &Fence,
        id: &str,
        state: RoundState,
        uploads: u64,
    ) -> Result<(), ServerError> {
        debug_assert!(matches!(state, RoundState::Short | RoundState::Aborted));
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, fence).await?;
        sqlx::query("UPDATE rounds SET state = $1, uploads = $2 WHERE id = $3 AND state = $4")
            .bind(state.name())
            .bind(to_i64(uploads))
            .bind(id)
            .bind(RoundState::Open.name())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every task's released rounds and open round, by task.
    pub(crate) async fn rounds_summary(
        &self,
    ) -> Result<rustc_hash::FxHashMap<String, RoundsSummary>, ServerError> {
        let rows = sqlx::query("SELECT task_id, id, state FROM rounds WHERE state IN ($1, $2)")
            .bind(RoundState::Released.name())
            .bind(RoundState::Open.name())
            .fetch_all(&self.pool)
            .await?;
        let mut summary = rustc_hash::FxHashMap::<String, RoundsSummary>::default();
        for row in &rows {
            let entry = summary.entry(row.try_get("task_id")?).or_default();
            if row.try_get::<String, _>("state")? == RoundState::Open.name() {
                entry.open = Some(row.try_get("id")?);
            } else {
                entry.released += 1;
            }
        }
        Ok(summary)
    }

    /// The open rounds of tasks another replica than `holder` drives under a lease live at
    /// `now`, by round id.
    pub(crate) async fn remote_rounds(
        &self,
        holder: &str,
        now: i64,
    ) -> Result<Vec<(String, RemoteRound)>, ServerError> {
        let rows = sqlx::query(
            "SELECT rounds.id AS id, round_queries.query AS query, replicas.address AS address
             FROM rounds
             JOIN round_queries ON round_queries.round_id = rounds.id
             JOIN task_leases ON task_leases.task_id = rounds.task_id
             JOIN replicas ON replicas.id = task_leases.holder
             WHERE rounds.state = $1 AND task_leases.holder <> $2
               AND task_leases.expires_at >= $3",
        )
        .bind(RoundState::Open.name())
        .bind(holder)
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("id")?,
                    RemoteRound {
                        query: r.try_get("query")?,
                        address: r.try_get("address")?,
                    },
                ))
            })
            .collect()
    }

    /// Whether round `id` exists (open or closed).
    pub(crate) async fn round_exists(&self, id: &str) -> Result<bool, ServerError> {
        let row = sqlx::query("SELECT 1 AS found FROM rounds WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.is_some())
    }

    /// A task's rounds, in order.
    pub(crate) async fn rounds(&self, task_id: &str) -> Result<Vec<StoredRound>, ServerError> {
        let rows = sqlx::query(
            "SELECT id, round, attempt, state, release FROM rounds
             WHERE task_id = $1 ORDER BY round, attempt",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let state: String = r.try_get("state")?;
                Ok(StoredRound {
                    id: r.try_get("id")?,
                    round: to_u32(r.try_get("round")?)?,
                    attempt: to_u32(r.try_get("attempt")?)?,
                    state: RoundState::from_name(&state)?,
                    release: r.try_get("release")?,
                })
            })
            .collect()
    }

    /// Commits a round's release: the round's state and release, the task's debit (with its
    /// first release), and its final result and state (with its last), atomically. Nothing of
    /// the release may be shown before this returns.
    pub(crate) async fn commit_release(
        &self,
        commit: ReleaseCommit<'_>,
    ) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, commit.fence).await?;
        let released = sqlx::query(
            "UPDATE rounds SET state = $1, uploads = $2, release = $3 WHERE id = $4 AND state = $5",
        )
        .bind(RoundState::Released.name())
        .bind(to_i64(commit.uploads))
        .bind(commit.release)
        .bind(commit.round_id)
        .bind(RoundState::Open.name())
        .execute(&mut *tx)
        .await?;
        if released.rows_affected() != 1 {
            return Err(ServerError::LeaseLost(commit.fence.task_id.clone()));
        }
        if let Some(debit) = &commit.debit {
            sqlx::query(
                "INSERT INTO ledger (task_id, population, epsilon, delta, at) VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&debit.task_id)
            .bind(&debit.population)
            .bind(debit.epsilon)
            .bind(debit.delta)
            .bind(debit.at)
            .execute(&mut *tx)
            .await?;
        }
        if let Some((task_id, body)) = commit.result {
            sqlx::query("INSERT INTO results (task_id, body) VALUES ($1, $2)")
                .bind(task_id)
                .bind(body)
                .execute(&mut *tx)
                .await?;
            sqlx::query("UPDATE tasks SET state = 'finished' WHERE id = $1")
                .bind(task_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// A finished task's released document, exactly as stored.
    pub(crate) async fn result(&self, task_id: &str) -> Result<Option<String>, ServerError> {
        let row = sqlx::query("SELECT body FROM results WHERE task_id = $1")
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get("body")).transpose()?)
    }

    /// Every debit, oldest first.
    pub(crate) async fn debits(&self) -> Result<Vec<StoredDebit>, ServerError> {
        let rows = sqlx::query(
            "SELECT task_id, population, epsilon, delta, at FROM ledger ORDER BY at, task_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(StoredDebit {
                    task_id: r.try_get("task_id")?,
                    population: r.try_get("population")?,
                    epsilon: r.try_get("epsilon")?,
                    delta: r.try_get("delta")?,
                    at: r.try_get("at")?,
                })
            })
            .collect()
    }

    /// Stores new credentials, all or none (one transaction).
    pub(crate) async fn insert_credentials(
        &self,
        credentials: &[StoredCredential],
    ) -> Result<i64, ServerError> {
        let mut tx = self.begin_write().await?;
        for credential in credentials {
            sqlx::query(
                "INSERT INTO credentials (id, name, role, populations, secret_hash, created_at, revoked_at)
                 VALUES ($1, $2, $3, $4, $5, $6, NULL)",
            )
            .bind(&credential.id)
            .bind(&credential.name)
            .bind(&credential.role)
            .bind(&credential.populations)
            .bind(&credential.secret_hash)
            .bind(credential.created_at)
            .execute(&mut *tx)
            .await?;
        }
        let generation = bump_credential_generation(&mut tx).await?;
        tx.commit().await?;
        Ok(generation)
    }

    /// The credentials' generation: it changes whenever a credential is added or revoked, by
    /// this process or another.
    pub(crate) async fn credential_generation(&self) -> Result<i64, ServerError> {
        let row = sqlx::query("SELECT generation FROM credential_changes WHERE id = 1")
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get("generation")?)
    }

    /// The credential `id`, revoked or not.
    pub(crate) async fn credential(
        &self,
        id: &str,
    ) -> Result<Option<StoredCredential>, ServerError> {
        let row = sqlx::query(
            "SELECT id, name, role, populations, secret_hash, created_at, revoked_at
             FROM credentials WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(credential_of).transpose()
    }

    /// Every credential, oldest first.
    pub(crate) async fn credentials(&self) -> Result<Vec<StoredCredential>, ServerError> {
        let rows = sqlx::query(
            "SELECT id, name, role, populations, secret_hash, created_at, revoked_at
             FROM credentials ORDER BY created_at, id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(credential_of).collect()
    }

    /// Revokes the credential `id` (at `at`, unless it was revoked before) and returns it.
    pub(crate) async fn revoke_credential(
        &self,
        id: &str,
        at: i64,
    ) -> Result<(Option<StoredCredential>, i64), ServerError> {
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE credentials SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(at)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        // Its console sessions end with it.
        sqlx::query("DELETE FROM console_sessions WHERE credential_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let generation = bump_credential_generation(&mut tx).await?;
        tx.commit().await?;
        Ok((self.credential(id).await?, generation))
    }

    /// Stores a new console session, and drops every session expired by `cutoffs`.
    pub(crate) async fn insert_session(
        &self,
        session: &StoredSession,
        cutoffs: SessionCutoffs,
    ) -> Result<(), ServerError> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM console_sessions WHERE last_seen < $1 OR created_at < $2")
            .bind(cutoffs.last_seen)
            .bind(cutoffs.created_at)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO console_sessions (id_hash, credential_id, created_at, last_seen)
             VALUES ($1, $2, $3, $3)",
        )
        .bind(&session.id_hash)
        .bind(&session.credential_id)
        .bind(session.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The credential of the console session whose id hashes to `id_hash`, which is used
    /// `now` (milliseconds since the Unix epoch), if it is stored and not expired by
    /// `cutoffs`; an expired one is dropped.
    pub(crate) async fn use_session(
        &self,
        id_hash: &str,
        now: i64,
        cutoffs: SessionCutoffs,
    ) -> Result<Option<String>, ServerError> {
        let row = sqlx::query(
            "UPDATE console_sessions SET last_seen = $1
             WHERE id_hash = $2 AND last_seen >= $3 AND created_at >= $4
             RETURNING credential_id",
        )
        .bind(now)
        .bind(id_hash)
        .bind(cutoffs.last_seen)
        .bind(cutoffs.created_at)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(row) => Ok(Some(row.try_get("credential_id")?)),
            None => {
                self.delete_session(id_hash).await?;
                Ok(None)
            }
        }
    }

    /// Drops the console session whose id hashes to `id_hash`, if it is stored.
    pub(crate) async fn delete_session(&self, id_hash: &str) -> Result<(), ServerError> {
        sqlx::query("DELETE FROM console_sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Closes the pool, waiting for connections to finish.
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

/// Checks in `tx` that `fence` still holds: its replica holds the task's lease at its epoch,
/// and the task runs. The check writes the lease's row (leaving it as it is), so that on
/// PostgreSQL a takeover waits for `tx` to end, and `tx` never commits beside one.
///
/// # Errors
///
/// [`ServerError::LeaseLost`] if it does not hold.
async fn check_fence(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    fence: &Fence,
) -> Result<(), ServerError> {
    let held = sqlx::query(
        "UPDATE task_leases SET epoch = epoch
         WHERE task_id = $1 AND holder = $2 AND epoch = $3
           AND EXISTS (SELECT 1 FROM tasks WHERE tasks.id = $4 AND tasks.state = $5)",
    )
    .bind(&fence.task_id)
    .bind(&fence.holder)
    .bind(fence.epoch)
    .bind(&fence.task_id)
    .bind(TaskState::Running.name())
    .execute(&mut **tx)
    .await?;
    if held.rows_affected() == 1 {
        Ok(())
    } else {
        Err(ServerError::LeaseLost(fence.task_id.clone()))
    }
}

/// Counts a change to `credentials` in `tx`, the transaction that makes it; returns the
/// generation the change makes.
async fn bump_credential_generation(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
) -> Result<i64, ServerError> {
    let row = sqlx::query(BUMP_CREDENTIAL_GENERATION)
        .fetch_one(&mut **tx)
        .await?;
    Ok(row.try_get("generation")?)
}

/// Begins a transaction that writes. On SQLite it takes the write lock at once (`BEGIN
/// IMMEDIATE`), waiting its turn behind another writer: a transaction that reads first and asks
/// for the lock later gets `SQLITE_BUSY` at once, without the busy wait, when another
/// connection is committing (SQLite refuses what could deadlock), and a command such as
/// `tally device enroll --db` beside a running service, which writes at every lease tick,
/// failed with "database is locked".
async fn begin_write(
    pool: &AnyPool,
    postgres: bool,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, ServerError> {
    Ok(if postgres {
        pool.begin().await?
    } else {
        pool.begin_with("BEGIN IMMEDIATE").await?
    })
}

/// Inserts `task` and its loss rounds in `tx`.
async fn insert_task(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    task: &StoredTask,
) -> Result<(), ServerError> {
    sqlx::query(
        "INSERT INTO tasks (id, owner, population, spec, guarantee, epsilon, delta, state, error, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&task.id)
    .bind(&task.owner)
    .bind(&task.population)
    .bind(&task.spec)
    .bind(&task.guarantee)
    .bind(task.epsilon)
    .bind(task.delta)
    .bind(&task.state)
    .bind(task.error.as_deref())
    .bind(task.created_at)
    .execute(&mut **tx)
    .await?;
    if let Some(loss) = &task.loss {
        sqlx::query(
            "INSERT INTO task_losses (task_id, sampling_rate, threshold, rounds)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(&task.id)
        .bind(loss.sampling_rate)
        .bind(to_i64(loss.threshold))
        .bind(to_i64(loss.rounds))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The file of a SQLite URL (`sqlite://FILE` or `sqlite:FILE`, without its `?options`), or
/// `None` for another database or an in-memory one.
fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then_some(path)
}

/// Opens `path`, creating it readable and writable by its owner only (0600) if it does not
/// exist: the database holds the ledger and credential hashes.
fn create_private(path: &Path) -> Result<std::fs::File, ServerError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    Ok(options.open(path)?)
}

fn task_of(r: &sqlx::any::AnyRow) -> Result<StoredTask, ServerError> {
    Ok(StoredTask {
        id: r.try_get("id")?,
        owner: r.try_get("owner")?,
        population: r.try_get("population")?,
        spec: r.try_get("spec")?,
        guarantee: r.try_get("guarantee")?,
        epsilon: r.try_get("epsilon")?,
        delta: r.try_get("delta")?,
        state: r.try_get("state")?,
        error: r.try_get("error")?,
        created_at: r.try_get("created_at")?,
        loss: stored_loss(r)?,
    })
}

fn population_of(row: &sqlx::any::AnyRow) -> Result<StoredPopulation, ServerError> {
    let min_cohort: i64 = row.try_get("min_cohort")?;
    Ok(StoredPopulation {
        name: row.try_get("name")?,
        epsilon: row.try_get("epsilon")?,
        delta: row.try_get("delta")?,
        min_cohort: u64::try_from(min_cohort)
            .map_err(|_| ServerError::Corrupt(format!("min_cohort {min_cohort}")))?,
        max_task_epsilon: row.try_get("max_task_epsilon")?,
        trust: match row.try_get::<Option<String>, _>("trust")?.as_deref() {
            None => TrustModel::SingleParty,
            Some(name) => TrustModel::from_name(name)
                .ok_or_else(|| ServerError::Corrupt(format!("trust model {name:?}")))?,
        },
        allow_device_sampling: row.try_get::<i64, _>("device_sampling")? > 0,
        task_bound: stored_bound(row)?,
        colluding_fraction: row
            .try_get::<Option<f64>, _>("colluding_fraction")?
            .unwrap_or(0.0),
        neighbours: match row.try_get::<Option<String>, _>("neighbours")? {
            None => Neighbours::AddRemove,
            Some(name) => name
                .parse()
                .map_err(|_| ServerError::Corrupt(format!("neighbours {name:?}")))?,
        },
        created_at: row.try_get("created_at")?,
    })
}

/// A population's [`TaskBound`] from the columns of `population_task_bounds` (all null where it
/// has none).
fn stored_bound(row: &sqlx::any::AnyRow) -> Result<Option<TaskBound>, ServerError> {
    let sampling_rate: Option<f64> = row.try_get("bound_rate")?;
    let threshold: Option<i64> = row.try_get("bound_threshold")?;
    let epsilon: Option<f64> = row.try_get("bound_epsilon")?;
    let delta: Option<f64> = row.try_get("bound_delta")?;
    let rounds: Option<i64> = row.try_get("bound_rounds")?;
    let (Some(sampling_rate), Some(threshold), Some(epsilon), Some(delta), Some(rounds)) =
        (sampling_rate, threshold, epsilon, delta, rounds)
    else {
        return Ok(None);
    };
    Ok(Some(TaskBound {
        sampling_rate,
        threshold: stored_count("task bound threshold", threshold)?,
        share: (epsilon, delta),
        rounds: stored_count("task bound rounds", rounds)?,
    }))
}

/// A task's [`LossRounds`] from the columns of `task_losses` (all null where it has none).
fn stored_loss(row: &sqlx::any::AnyRow) -> Result<Option<LossRounds>, ServerError> {
    let sampling_rate: Option<f64> = row.try_get("sampling_rate")?;
    let threshold: Option<i64> = row.try_get("threshold")?;
    let rounds: Option<i64> = row.try_get("rounds")?;
    let (Some(sampling_rate), Some(threshold), Some(rounds)) = (sampling_rate, threshold, rounds)
    else {
        return Ok(None);
    };
    Ok(Some(LossRounds {
        sampling_rate,
        threshold: stored_count("task loss threshold", threshold)?,
        rounds: stored_count("task loss rounds", rounds)?,
    }))
}

/// A stored count, which no valid row has negative.
fn stored_count(what: &str, n: i64) -> Result<u64, ServerError> {
    u64::try_from(n).map_err(|_| ServerError::Corrupt(format!("{what} {n}")))
}

fn credential_of(row: &sqlx::any::AnyRow) -> Result<StoredCredential, ServerError> {
    Ok(StoredCredential {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        role: row.try_get("role")?,
        populations: row.try_get("populations")?,
        secret_hash: row.try_get("secret_hash")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u32(n: i64) -> Result<u32, ServerError> {
    u32::try_from(n).map_err(|_| ServerError::Corrupt(format!("round number {n}")))
}
