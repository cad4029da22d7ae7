//! The log in PostgreSQL: its tables, and the few statements that read and write them.
//!
//! In the schema named by [`SyncOptions::namespace`]:
//! - `head (id = 1, version)`: the latest version. A writer locks this row (`FOR UPDATE`), so
//!   writers on every replica are ordered by PostgreSQL, one at a time, and the versions are
//!   consecutive.
//! - `log (version, changes, written_at)`: one row per write, its change set (or usage
//!   evidence: one turn's, or a usage queue's batch) as JSON text (see `wire`), committed with
//!   the head in one transaction that also `NOTIFY`s followers.
//! - `snapshot (id = 1, version, tables)`: the shared tables (and trust state, clients, usage
//!   rows) at `version`, written by compaction, which then deletes the log rows it folded in.
//! - `audit (id, at, replica, event)`: the gateway's tool-call events (see `audit`).
//! - `trust (server, tool, record)`: the quarantine's trust state now, one row per live tool
//!   (its record as JSON). Written only by the trust API (see `trust`), in the transaction
//!   that appends the same change to the log under the head's lock: it is the state the log
//!   folds to, kept so that a trust decision reads it in that transaction.
//! - `clients (name, record)`: the gateways' clients now (see `clients`), kept the same way:
//!   written with the log entry that carries the change, read by the next add or revoke.
//! - `oauth_tokens (server, credentials, saved_at)`: the upstream OAuth servers' tokens (see
//!   `tokens`), never in the log: each gateway reads the row, a refresh holds an advisory lock.
//! - `usage_sent (sender, seq, at)`: per usage queue (`sync::usage`), the number of the last
//!   of its turns the log holds, moved by the statement that appends them, so that a batch sent
//!   again after a lost acknowledgement is not counted twice. One row per queue ever opened (a
//!   gateway's start), a few dozen bytes.

use std::future::Future;
use std::time::Duration;

use tokio_postgres::{Client, Connection, GenericClient, NoTls, Socket, tls::NoTlsStream};

use super::{SyncError, SyncOptions};

pub(crate) type PgConnection = Connection<Socket, NoTlsStream>;

/// How many log rows a follower reads per query while catching up.
pub(crate) const TAIL_PAGE: i64 = 1000;

/// Runs one PostgreSQL operation under the options' timeout, naming it in the error.
pub(crate) async fn timed<T>(
    timeout: Duration,
    what: &str,
    op: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, SyncError> {
    match tokio::time::timeout(timeout, op).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(SyncError::Postgres {
            what: what.to_string(),
            reason: describe(&e),
        }),
        Err(_) => Err(SyncError::Timeout {
            what: what.to_string(),
            after: timeout,
        }),
    }
}

/// A driver error with its server-side cause, when there is one.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

/// Opens a connection; the caller drives `Connection` (spawned, or polled for notifications).
pub(crate) async fn connect(
    url: &str,
    options: &SyncOptions,
) -> Result<(Client, PgConnection), SyncError> {
    timed(
        options.connect_timeout,
        "connecting to PostgreSQL",
        tokio_postgres::connect(url, NoTls),
    )
    .await
}

/// Opens a connection and spawns its driver on the current runtime.
pub(crate) async fn connect_spawned(url: &str, options: &SyncOptions) -> Result<Client, SyncError> {
    let (client, connection) = connect(url, options).await?;
    tokio::spawn(async move {
        // Its end (an error or a closed socket) shows up as errors on the client's next use.
        let _ = connection.await;
    });
    Ok(client)
}

/// Opens a connection for writers ([`connect_spawned`]) on which PostgreSQL itself ends a
/// transaction left idle for longer than the options' query timeout: a writer cut off from the
/// server mid-write (a dropped network: its socket stays open on the server's side) must not
/// hold the log's head lock, and so every other writer, until TCP gives up hours later.
pub(crate) async fn connect_writer(url: &str, options: &SyncOptions) -> Result<Client, SyncError> {
    let client = connect_spawned(url, options).await?;
    let ms = options.query_timeout.as_millis().clamp(1_000, 86_400_000);
    timed(
        options.query_timeout,
        "limiting idle transactions",
        client.batch_execute(&format!("SET idle_in_transaction_session_timeout = {ms}")),
    )
    .await?;
    Ok(client)
}

/// The channel followers LISTEN on.
pub(crate) fn channel(ns: &str) -> String {
    format!("{ns}_log")
}

/// Creates the schema and its tables if missing. Safe to run from many replicas at once (a
/// transaction-scoped advisory lock serialises the `CREATE`s).
pub(crate) async fn ensure_schema(
    client: &mut Client,
    options: &SyncOptions,
) -> Result<(), SyncError> {
    let ns = &options.namespace;
    let t = options.query_timeout;
    let tx = timed(t, "beginning the schema set-up", client.transaction()).await?;
    timed(
        t,
        "locking the schema set-up",
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&ns]),
    )
    .await?;
    let sql = format!(
        "CREATE SCHEMA IF NOT EXISTS {ns};
         CREATE TABLE IF NOT EXISTS {ns}.head (
             id int PRIMARY KEY CHECK (id = 1), version bigint NOT NULL);
         INSERT INTO {ns}.head VALUES (1, 0) ON CONFLICT DO NOTHING;
         CREATE TABLE IF NOT EXISTS {ns}.log (
             version bigint PRIMARY KEY, changes text NOT NULL,
             written_at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE IF NOT EXISTS {ns}.snapshot (
             id int PRIMARY KEY CHECK (id = 1), version bigint NOT NULL, tables text NOT NULL);
         CREATE TABLE IF NOT EXISTS {ns}.audit (
             id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(),
             replica text NOT NULL, event text NOT NULL);
         CREATE TABLE IF NOT EXISTS {ns}.trust (
             server text NOT NULL, tool text NOT NULL, record text NOT NULL,
             PRIMARY KEY (server, tool));
         CREATE TABLE IF NOT EXISTS {ns}.clients (
             name text PRIMARY KEY, record text NOT NULL);
         CREATE TABLE IF NOT EXISTS {ns}.oauth_tokens (
             server text PRIMARY KEY, credentials text NOT NULL,
             saved_at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE IF NOT EXISTS {ns}.usage_sent (
             sender text PRIMARY KEY, seq bigint NOT NULL,
             at timestamptz NOT NULL DEFAULT now());"
    );
    timed(t, "creating the log's tables", tx.batch_execute(&sql)).await?;
    timed(t, "committing the schema set-up", tx.commit()).await
}

/// Locks the log's head row until `tx` ends (writers and compaction take it in turn) and
/// returns the version it holds.
pub(crate) async fn lock_head(
    tx: &tokio_postgres::Transaction<'_>,
    options: &SyncOptions,
) -> Result<u64, SyncError> {
    let ns = &options.namespace;
    let head = timed(
        options.query_timeout,
        "locking the log's head",
        tx.query_one(
            &format!("SELECT version FROM {ns}.head WHERE id = 1 FOR UPDATE"),
            &[],
        ),
    )
    .await?;
    Ok(to_version(head.get::<_, i64>(0)))
}

/// Appends one change set as the next version, if the head is `expected` (when given).
/// Returns the version written. Acknowledged only once PostgreSQL has committed it.
pub(crate) async fn append(
    client: &mut Client,
    options: &SyncOptions,
    expected: Option<u64>,
    changes: &str,
) -> Result<u64, SyncError> {
    let t = options.query_timeout;
    let tx = timed(t, "beginning a write", client.transaction()).await?;
    let head = lock_head(&tx, options).await?;
    if let Some(expected) = expected
        && expected != head
    {
        // Dropping the transaction rolls it back.
        return Err(SyncError::Conflict {
            expected,
            actual: head,
        });
    }
    let version = append_locked(&tx, options, head, changes).await?;
    timed(t, "committing a write", tx.commit()).await?;
    Ok(version)
}

/// In a transaction holding the head's lock (at `head`): inserts `changes` as version
/// `head + 1`, moves the head there and notifies followers (on commit). Returns that version.
pub(crate) async fn append_locked(
    tx: &tokio_postgres::Transaction<'_>,
    options: &SyncOptions,
    head: u64,
    changes: &str,
) -> Result<u64, SyncError> {
    let ns = &options.namespace;
    let t = options.query_timeout;
    let version = head + 1;
    let v = to_sql(version);
    timed(
        t,
        "appending to the log",
        tx.execute(
            &format!("INSERT INTO {ns}.log (version, changes) VALUES ($1, $2)"),
            &[&v, &changes],
        ),
    )
    .await?;
    timed(
        t,
        "moving the log's head",
        tx.execute(
            &format!("UPDATE {ns}.head SET version = $1 WHERE id = 1"),
            &[&v],
        ),
    )
    .await?;
    timed(
        t,
        "notifying followers",
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&channel(ns), &version.to_string()],
        ),
    )
    .await?;
    Ok(version)
}

/// The latest version.
pub(crate) async fn head(
    client: &impl GenericClient,
    options: &SyncOptions,
) -> Result<u64, SyncError> {
    let ns = &options.namespace;
    let row = timed(
        options.query_timeout,
        "reading the log's head",
        client.query_one(&format!("SELECT version FROM {ns}.head WHERE id = 1"), &[]),
    )
    .await?;
    Ok(to_version(row.get::<_, i64>(0)))
}

/// Up to [`TAIL_PAGE`] entries after `after`, in version order.
pub(crate) async fn tail(
    client: &impl GenericClient,
    options: &SyncOptions,
    after: u64,
) -> Result<Vec<(u64, String)>, SyncError> {
    let ns = &options.namespace;
    let rows = timed(
        options.query_timeout,
        "reading the log",
        client.query(
            &format!(
                "SELECT version, changes FROM {ns}.log WHERE version > $1 ORDER BY version LIMIT $2"
            ),
            &[&to_sql(after), &TAIL_PAGE],
        ),
    )
    .await?;
    Ok(rows
        .iter()
        .map(|row| (to_version(row.get::<_, i64>(0)), row.get::<_, String>(1)))
        .collect())
}

/// The compacted snapshot, if compaction ever ran: its version and tables (JSON).
pub(crate) async fn snapshot(
    client: &impl GenericClient,
    options: &SyncOptions,
) -> Result<Option<(u64, String)>, SyncError> {
    let ns = &options.namespace;
    let row = timed(
        options.query_timeout,
        "reading the snapshot",
        client.query_opt(
            &format!("SELECT version, tables FROM {ns}.snapshot WHERE id = 1"),
            &[],
        ),
    )
    .await?;
    Ok(row.map(|row| (to_version(row.get::<_, i64>(0)), row.get::<_, String>(1))))
}

pub(crate) fn to_version(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(crate) fn to_sql(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
