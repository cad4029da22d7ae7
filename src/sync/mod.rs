//! Replicas of one catalog through a change log in PostgreSQL (feature `postgres`).
//!
//! Several processes (gateways behind a load balancer, a fleet of agent workers) each keep the
//! catalog in their own [`Store`](crate::Store), and share it: every write of the shared tables
//! (`tools`, `skills`, `hooks`; see [`Shared`]) is appended to a log table in PostgreSQL, and
//! every [`Replica`] applies the log, in order, one store transaction per entry. A log version
//! therefore means the same shared tables on every replica ([`Replica::version_of`] reads it from
//! any snapshot). Handlers and embeddings stay local: a replica runs what it can run.
//!
//! The quarantine's trust state travels in the same log (with feature `mcp-live`:
//! `Replica::quarantine`, `shared_quarantine`): a tool approved on one replica is trusted on
//! every replica, and two replicas that see a new server at once agree on its first definitions.
//! So do the gateways' clients (with feature `gateway`: `Replica::clients`, `add_client`,
//! `revoke_client`): a client added once is known by every gateway, and a revoked one refused.
//! Upstream OAuth tokens are shared beside the log, never in it (with feature `mcp-oauth`:
//! `shared_tokens`): one sign-in for every gateway, one refresh at a time.
//!
//! Usage travels in the same log, so that every replica learns from every replica's calls:
//! [`Replica::learn`] appends one turn's evidence (a
//! [`TurnUse`](crate::usage::TurnUse), not rows: an entry `{"learn":{"called":[..],"sent":[..],
//! "previous":[..]}}`), and every replica counts it into its [`USAGE`](crate::USAGE) table when
//! it applies that entry, in version order. Replicas learning at once lose no count (each entry
//! adds to the rows as the entries before it left them), and a log version means the same usage
//! rows on every replica too. Every tool named counts, also one missing from the replica's
//! `tools` table (a gateway's live tools are in its own store only, and every gateway connects
//! the same servers); [`Replica::mirror_into`] copies the usage rows into that store.
//!
//! A stream of turns (a gateway's, `capstore serve --state URL`) goes in batches instead: a
//! [`ReplicaUsageQueue`]
//! ([`Replica::usage_queue`], [`usage`]) appends one entry per replica per interval (by default
//! [`LOG_BATCH_LIMITS`]: 1,000 turns or 1 s), each turn counted exactly once on every replica
//! (a batch sent again after a lost acknowledgement skips what the log holds), on a connection
//! of its own, so catalog and trust writes never queue behind usage.
//!
//! ```text
//!  replica A: write(batch) ──► BEGIN; SELECT head FOR UPDATE; [expected = head?]; INSERT log;
//!                               UPDATE head; NOTIFY; COMMIT  ──► acknowledged (the version)
//!  replica B: LISTEN wakes it ──► SELECT … FROM log WHERE version > $applied ORDER BY version
//!                               ──► one store transaction per entry (changes, usage counted,
//!                                   position)
//! ```
//!
//! # The contract
//! - **Writes** ([`Replica::write`]) are acknowledged once committed in PostgreSQL; writers on
//!   different replicas are ordered by PostgreSQL (a row lock on the log's head), and
//!   [`Replica::write_expecting`] fails with [`SyncError::Conflict`] instead of writing when
//!   the log has moved past the version the caller read. A batch is checked against the local
//!   store first (validators, unique indexes), so a bad record is refused before it is sent.
//! - **Reads** are local and never wait for PostgreSQL: a replica cut off from it goes on
//!   serving its last version, and [`Replica::status`] says that it may be behind.
//! - **Following**: LISTEN/NOTIFY only wakes a follower; the version column is the truth
//!   (`WHERE version > $applied`), and a follower also looks every
//!   [`SyncOptions::poll_interval`], so a missed notification, a restarted server or a dropped
//!   connection loses nothing; entries are applied exactly once, in order (the store's position
//!   row moves in the same transaction as each entry's changes).
//! - **New replicas** start from the compacted snapshot row plus the log after it;
//!   [`compact`] folds the log into that row (`capstore compact --state URL`): the shared
//!   tables, the trust state and the usage rows.
//! - Write the shared tables of a replica's store only through [`Replica::write`], and its usage
//!   only through [`Replica::learn`] or a [`ReplicaUsageQueue`]: a direct store write is local
//!   and would make this replica differ from the others.
//! - An entry a replica cannot apply (a validator refuses a record, a unique index would break,
//!   a field this build cannot read) is refused whole, its changes and its usage evidence alike,
//!   and counted ([`SyncStatus::refused`]); since every replica holds the same tables at that
//!   version, every replica refuses it alike.
//!
//! # What it costs
//! The `tokio-postgres` crate. Per replica two connections (one to write, one to follow).
//! Per write one PostgreSQL transaction (five statements, one round trip each); per entry
//! followed one indexed range read shared by up to 1,000 entries, and one store commit.
//! Per turn learned ([`Replica::learn`]) one write like the above, and on every replica one
//! store commit of an upsert per tool the turn named; per batch of a [`ReplicaUsageQueue`]
//! the same for all its turns, and a third connection per replica.
//! Bootstrap: one read of the snapshot row (the JSON of the shared tables) and a bulk insert.
//! Measured in BENCHMARKS.md ("Replicas through PostgreSQL").
//!
//! # Example
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
//! use capstore::sync::{Batch, Replica, SyncOptions};
//! use capstore::{Tool, TOOLS};
//! use std::time::Duration;
//!
//! let url = "postgres://capstore@127.0.0.1:55432/postgres";
//! let a = Replica::open(url, SyncOptions::default()).await?;
//! let b = Replica::open(url, SyncOptions::default()).await?;
//! let mut batch = Batch::new();
//! batch.put(&TOOLS, Tool::new("read_file", "Read a file").with_source("fs"))?;
//! let version = a.write(batch).await?;
//! let snap = b.wait_for(version, Duration::from_secs(5)).await?;
//! assert!(snap.contains(&TOOLS, "fs/read_file")?);
//! assert_eq!(b.version_of(&snap), version);
//! # Ok(()) }
//! ```

mod audit;
#[cfg(feature = "gateway")]
mod clients;
mod log;
mod replica;
#[cfg(feature = "mcp-oauth")]
mod tokens;
#[cfg(feature = "mcp-live")]
mod trust;
pub mod usage;
mod wire;

use std::fmt;
use std::time::Duration;

pub use audit::AuditLog;
#[cfg(feature = "gateway")]
pub use clients::{add_client, list_clients, revoke_client};
pub use replica::{Replica, SyncStatus, compact};
#[cfg(feature = "mcp-oauth")]
pub use tokens::shared_tokens;
#[cfg(feature = "mcp-live")]
pub use trust::shared_quarantine;
pub use usage::{LOG_BATCH_LIMITS, MAX_HELD_TURNS, ReplicaUsageQueue, UsageSendStatus};
pub use wire::{Batch, SHARED_TABLES, Shared};

use crate::store::{SchemaError, StoreError};

/// How a replica reaches PostgreSQL and follows the log.
///
/// ```
/// let options = capstore::sync::SyncOptions::default().with_namespace("team_a")?;
/// assert_eq!(options.namespace, "team_a");
/// assert!(capstore::sync::SyncOptions::default().with_namespace("drop table").is_err());
/// # Ok::<(), capstore::sync::SyncError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The PostgreSQL schema holding the log's tables; replicas of one catalog share it, and one
    /// database can hold several catalogs under different names. Default `capstore`.
    pub namespace: String,
    /// How long connecting may take before it counts as failed. Default 5 s.
    pub connect_timeout: Duration,
    /// How long one statement may take (a paused server must not hang a writer or a follower).
    /// Default 10 s.
    pub query_timeout: Duration,
    /// How often a follower reads the log without having been notified: the bound on how late
    /// a missed notification can make it. Default 1 s.
    pub poll_interval: Duration,
    /// This replica's name, written beside its audit records. Default `replica-<pid>`.
    pub replica: String,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            namespace: "capstore".to_string(),
            connect_timeout: Duration::from_secs(5),
            query_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
            replica: format!("replica-{}", std::process::id()),
        }
    }
}

impl SyncOptions {
    /// The same options with another namespace: 1 to 48 characters, lower-case ASCII letters,
    /// digits and `_`, starting with a letter (it is written into SQL as a schema name).
    /// ```
    /// use capstore::sync::{SyncError, SyncOptions};
    /// assert_eq!(SyncOptions::default().with_namespace("team_b")?.namespace, "team_b");
    /// assert!(matches!(
    ///     SyncOptions::default().with_namespace("Team-B"),
    ///     Err(SyncError::BadNamespace { .. })
    /// ));
    /// # Ok::<(), SyncError>(())
    /// ```
    pub fn with_namespace(mut self, namespace: &str) -> Result<SyncOptions, SyncError> {
        check_namespace(namespace)?;
        self.namespace = namespace.to_string();
        Ok(self)
    }
}

fn check_namespace(ns: &str) -> Result<(), SyncError> {
    let ok = (1..=48).contains(&ns.len())
        && ns.starts_with(|c: char| c.is_ascii_lowercase())
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SyncError::BadNamespace {
            namespace: ns.to_string(),
        })
    }
}

/// What can go wrong replicating through PostgreSQL.
#[derive(Debug, Clone, PartialEq)]
/// ```
/// use capstore::sync::SyncError;
/// let e = SyncError::Conflict { expected: 4, actual: 6 };
/// assert!(e.to_string().contains("expected the log at version 4, it is at 6"));
/// let e = SyncError::Timeout { what: "reading the log".into(), after: std::time::Duration::from_secs(3) };
/// assert!(e.to_string().starts_with("reading the log: no answer from PostgreSQL"));
/// ```
pub enum SyncError {
    /// PostgreSQL refused or failed an operation, or the connection broke.
    Postgres {
        /// What was being done.
        what: String,
        /// The driver's or server's message.
        reason: String,
    },
    /// An operation took longer than the options allow (a paused or unreachable server).
    Timeout {
        /// What was being done.
        what: String,
        /// The limit that passed.
        after: Duration,
    },
    /// [`Replica::write_expecting`]: the log was not at the expected version; nothing written.
    Conflict {
        /// The version the writer expected the log to be at.
        expected: u64,
        /// The version it was at.
        actual: u64,
    },
    /// A record could not be written as JSON.
    Encode {
        /// Its table.
        table: String,
        /// Its key.
        key: String,
        /// serde's message.
        reason: String,
    },
    /// Something read from PostgreSQL is not what this build can read.
    Decode {
        /// What was read.
        what: String,
        /// Why it could not be read.
        reason: String,
    },
    /// The local store refused a write (a batch checked before sending, or a snapshot loaded).
    Store(StoreError),
    /// The store the replica was to be built on already declares the replica's table.
    Schema(SchemaError),
    /// A namespace that is not a plain lower-case SQL name.
    BadNamespace {
        /// The name given.
        namespace: String,
    },
    /// The log has no entry right after `applied`, and no snapshot covers it.
    Gap {
        /// The version the replica holds.
        applied: u64,
    },
    /// The thread that runs a shared quarantine's PostgreSQL work could not be started, or
    /// has stopped.
    Worker {
        /// What happened.
        reason: String,
    },
    /// A gateway client could not be added or revoked (its name is taken, or is no client's):
    /// nothing was written.
    Client(String),
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::Postgres { what, reason } => write!(f, "{what}: {reason}"),
            SyncError::Timeout { what, after } => {
                write!(f, "{what}: no answer from PostgreSQL within {after:?}")
            }
            SyncError::Conflict { expected, actual } => write!(
                f,
                "write conflict: expected the log at version {expected}, it is at {actual}; nothing was written"
            ),
            SyncError::Encode { table, key, reason } => {
                write!(f, "cannot encode {table} record {key:?}: {reason}")
            }
            SyncError::Decode { what, reason } => write!(f, "cannot read {what}: {reason}"),
            SyncError::Store(e) => write!(f, "the local store refused the write: {e}"),
            SyncError::Schema(e) => write!(f, "cannot make a replica of this store: {e}"),
            SyncError::BadNamespace { namespace } => write!(
                f,
                "bad namespace {namespace:?}: use 1-48 lower-case letters, digits or '_', starting with a letter"
            ),
            SyncError::Gap { applied } => write!(
                f,
                "the log has no entry after version {applied} and no snapshot covers it"
            ),
            SyncError::Worker { reason } => f.write_str(reason),
            SyncError::Client(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<StoreError> for SyncError {
    fn from(e: StoreError) -> Self {
        SyncError::Store(e)
    }
}
