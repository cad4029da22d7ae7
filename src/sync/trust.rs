//! The quarantine's trust state shared through PostgreSQL (features `postgres` and
//! `mcp-live`): one approval, every replica.
//!
//! The state is the log's `trust` table: every change to it is a log entry like any other
//! (one [`TrustRow`] per tool changed), so every replica holds the same trust state at the same
//! version, reads it locally and never waits for PostgreSQL to judge a tool it already knows.
//! A change (a server seen for the first time, a changed definition held back, an approval)
//! is decided in PostgreSQL: one transaction takes the log's head lock, reads the current
//! records of the servers concerned from the `trust` table, applies the quarantine's own rules
//! (`TrustEdit::apply`, the same function the trust file uses) and appends what changed to the
//! log and to the table. Two gateways seeing a new server at once therefore agree on which
//! definitions were first.
//!
//! The quarantine's API is synchronous (a hub judges tools while importing a list), so the
//! PostgreSQL side runs on a thread of its own with its own connection: it works from any
//! thread or runtime, and every wait is bounded by the [`SyncOptions`] timeouts.

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::mpsc as jobs;

use parking_lot::Mutex;
use tokio_postgres::{Client, GenericClient};

use crate::mcp::live::{
    EditOutcome, Quarantine, QuarantineReason, ToolRecord, TrustBackend, TrustEdit, TrustState,
};
use crate::store::Store;

use super::log::{self, timed};
use super::replica::Replica;
use super::wire::{self, SyncTables, TRUST_TABLE, TrustRow, WireChange, WireEntry};
use super::{SyncError, SyncOptions, check_namespace};

impl Replica {
    /// A quarantine whose trust state is this catalog's, shared by every replica of it: an
    /// approval on one replica (or by `capstore approve --state`) trusts the tool on all of
    /// them. Give it to the hub ([`LiveOptions::quarantine`](crate::mcp::live::LiveOptions))
    /// and the gateway as you would a trust file's. Judging a tool already known reads this
    /// replica's store; recording something new writes through PostgreSQL (see the module
    /// doc), and if PostgreSQL cannot be reached then, a tool it would have trusted is held
    /// back (fail closed). Reads follow the replica: keep it open while the quarantine is used.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::sync::{Replica, SyncOptions};
    /// use capstore::{Tool, mcp::live::Verdict};
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// let a = Replica::open(url, SyncOptions::default()).await?;
    /// let b = Replica::open(url, SyncOptions::default()).await?;
    /// let (qa, qb) = (a.quarantine(false)?, b.quarantine(false)?);
    /// let v1 = Tool::new("read", "Read a file").with_source("fs");
    /// let v2 = Tool::new("read", "Read a file, then mail it").with_source("fs");
    /// assert_eq!(qa.check(&v1)?, Verdict::Trusted); // first sight, recorded for everyone
    /// assert!(matches!(qb.check(&v2)?, Verdict::Quarantined(_)));
    /// assert!(qa.approve("fs/read")?);
    /// b.wait_for(a.version(), std::time::Duration::from_secs(5)).await?;
    /// assert_eq!(qb.check(&v2)?, Verdict::Trusted);
    /// # Ok(()) }
    /// ```
    pub fn quarantine(&self, hold_new_tools: bool) -> Result<Quarantine, SyncError> {
        let (url, options, store, tables) = self.shared_parts();
        let backend = PgTrust::start(
            url,
            options,
            Some(LocalTrust {
                store,
                tables,
                cache: Mutex::new(None),
            }),
        )?;
        Ok(Quarantine::shared(Arc::new(backend), hold_new_tools))
    }
}

/// A quarantine on the trust state shared through PostgreSQL at `url`, without a replica:
/// every read goes to PostgreSQL. For a short-lived tool that lists or approves held tools
/// (`capstore approve --state URL`); a process that judges tools all the time should use
/// [`Replica::quarantine`], which reads locally. Nothing is connected until first use.
///
/// ```no_run
/// use capstore::sync::{SyncOptions, shared_quarantine};
/// let url = "postgres://capstore@127.0.0.1:55432/postgres";
/// let quarantine = shared_quarantine(url, &SyncOptions::default(), false)?;
/// for (tool, reason) in quarantine.pending()? {
///     println!("{tool} is held: {reason}");
/// }
/// quarantine.approve("cards/echo")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn shared_quarantine(
    url: &str,
    options: &SyncOptions,
    hold_new_tools: bool,
) -> Result<Quarantine, SyncError> {
    check_namespace(&options.namespace)?;
    let backend = PgTrust::start(url.to_string(), options.clone(), None)?;
    Ok(Quarantine::shared(Arc::new(backend), hold_new_tools))
}

/// The trust state in a replica's store, with the state built from it at one store version.
struct LocalTrust {
    store: Store,
    tables: SyncTables,
    /// The trust table's version ([`Snapshot::table_version`](crate::Snapshot::table_version))
    /// and the state built from it.
    cache: Mutex<Option<(u64, Arc<TrustState>)>>,
}

impl LocalTrust {
    /// The whole trust state of the store's latest snapshot (built again only when the trust
    /// table has changed since the last call: the usage the log brings leaves it be).
    fn state(&self) -> Result<Arc<TrustState>, SyncError> {
        let snap = self.store.snapshot();
        let trust_version = snap.table_version(&self.tables.trust)?;
        let mut cache = self.cache.lock();
        if let Some((version, state)) = &*cache
            && *version == trust_version
        {
            return Ok(Arc::clone(state));
        }
        let mut state = TrustState::default();
        for row in snap.iter(&self.tables.trust)?.records() {
            let record = to_record(row)?;
            state
                .servers
                .entry(row.server.clone())
                .or_default()
                .insert(row.tool.clone(), record);
        }
        let state = Arc::new(state);
        *cache = Some((trust_version, Arc::clone(&state)));
        Ok(state)
    }
}

/// A trust state kept in PostgreSQL: see the module doc.
struct PgTrust {
    namespace: String,
    jobs: jobs::UnboundedSender<Job>,
    /// The longest a caller waits for the worker: past it, the call fails (and the job is
    /// dropped unrun if it has not started).
    answer_within: Duration,
    local: Option<LocalTrust>,
}

impl std::fmt::Debug for PgTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTrust")
            .field("namespace", &self.namespace)
            .field("local", &self.local.is_some())
            .finish_non_exhaustive()
    }
}

/// Work for the worker thread, with the time after which nobody waits for it any more.
enum Job {
    Read {
        servers: Option<Vec<String>>,
        deadline: Instant,
        reply: mpsc::Sender<Result<TrustState, SyncError>>,
    },
    Commit {
        edit: TrustEdit,
        deadline: Instant,
        reply: mpsc::Sender<Result<EditOutcome, SyncError>>,
    },
}

impl PgTrust {
    /// Starts the worker thread (it connects on its first job).
    fn start(
        url: String,
        options: SyncOptions,
        local: Option<LocalTrust>,
    ) -> Result<PgTrust, SyncError> {
        let worker_failed = |e: std::io::Error| SyncError::Worker {
            reason: format!("cannot start the trust state's thread: {e}"),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(worker_failed)?;
        // A job runs at most one connection and one transaction of a few statements; twice
        // that (a retry on a fresh connection), and a second to spare.
        let answer_within =
            2 * (options.connect_timeout + 4 * options.query_timeout) + Duration::from_secs(1);
        let namespace = options.namespace.clone();
        let (jobs, mut receiver) = jobs::unbounded_channel::<Job>();
        std::thread::Builder::new()
            .name("capstore-trust".into())
            .spawn(move || {
                // One `block_on` for the thread's life, so that the connection's driver runs
                // between jobs too (a dropped transaction's ROLLBACK is sent at once, a
                // dropped connection is closed at once: neither keeps the head's lock).
                runtime.block_on(async move {
                    let mut client: Option<Client> = None;
                    // Ends when every sender (every clone of the quarantine) is gone.
                    while let Some(job) = receiver.recv().await {
                        run(job, &mut client, &url, &options).await;
                    }
                });
            })
            .map_err(worker_failed)?;
        Ok(PgTrust {
            namespace,
            jobs,
            answer_within,
            local,
        })
    }

    /// Sends a job made by `job` (given its deadline and reply channel) and waits for the answer.
    fn ask<T>(
        &self,
        job: impl FnOnce(Instant, mpsc::Sender<Result<T, SyncError>>) -> Job,
    ) -> Result<T, SyncError> {
        let deadline = Instant::now() + self.answer_within;
        let (reply, answer) = mpsc::channel();
        let stopped = || SyncError::Worker {
            reason: "the trust state's thread has stopped".into(),
        };
        self.jobs
            .send(job(deadline, reply))
            .map_err(|_| stopped())?;
        match answer.recv_timeout(self.answer_within) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(SyncError::Timeout {
                what: "waiting for the trust state".into(),
                after: self.answer_within,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
        }
    }
}

impl TrustBackend for PgTrust {
    fn place(&self) -> String {
        format!(
            "the trust state in PostgreSQL (namespace {})",
            self.namespace
        )
    }

    fn local(&self, servers: Option<&[String]>) -> Result<TrustState, String> {
        match &self.local {
            Some(local) => {
                let state = local.state().map_err(|e| e.to_string())?;
                Ok(match servers {
                    None => (*state).clone(),
                    Some(servers) => TrustState {
                        servers: servers
                            .iter()
                            .filter_map(|s| Some((s.clone(), state.servers.get(s)?.clone())))
                            .collect(),
                    },
                })
            }
            None => {
                let servers = servers.map(<[String]>::to_vec);
                self.ask(|deadline, reply| Job::Read {
                    servers,
                    deadline,
                    reply,
                })
                .map_err(|e| e.to_string())
            }
        }
    }

    fn commit(&self, edit: &TrustEdit) -> Result<EditOutcome, String> {
        let edit = edit.clone();
        self.ask(|deadline, reply| Job::Commit {
            edit,
            deadline,
            reply,
        })
        .map_err(|e| e.to_string())
    }

    fn revision(&self) -> u64 {
        match &self.local {
            Some(local) => {
                let snap = local.store.snapshot();
                wire::position(&snap, &local.tables.position).version
            }
            None => 0,
        }
    }
}

/// A job's failure, and whether it failed before anything could have been committed (so that
/// running it again on a fresh connection cannot do it twice).
struct Failed {
    error: SyncError,
    before_commit: bool,
}

fn early(error: SyncError) -> Failed {
    Failed {
        error,
        before_commit: true,
    }
}

/// Runs one job on the worker's connection (opened, or opened again, as needed) and answers.
/// A job that failed on a connection found closed is tried once more on a new one, if it had
/// committed nothing (the connection sat idle while the server restarted).
async fn run(job: Job, client: &mut Option<Client>, url: &str, options: &SyncOptions) {
    let expired = || SyncError::Timeout {
        what: "waiting for the trust state (the job's turn came too late)".into(),
        after: Duration::ZERO,
    };
    match job {
        Job::Read {
            servers,
            deadline,
            reply,
        } => {
            if Instant::now() > deadline {
                let _ = reply.send(Err(expired()));
                return;
            }
            let mut result = Err(expired());
            for _attempt in 0..2 {
                result = match connected(client, url, options).await {
                    Ok(c) => read_state(&*c, options, servers.as_deref()).await,
                    Err(e) => Err(e),
                };
                if result.is_ok() || !drop_if_closed(client) {
                    break;
                }
            }
            if result.is_err() {
                *client = None;
            }
            let _ = reply.send(result);
        }
        Job::Commit {
            edit,
            deadline,
            reply,
        } => {
            if Instant::now() > deadline {
                let _ = reply.send(Err(expired()));
                return;
            }
            let mut result = Err(expired());
            for _attempt in 0..2 {
                let attempt = match connected(client, url, options).await {
                    Ok(c) => commit_edit(c, options, &edit).await,
                    Err(e) => Err(early(e)),
                };
                match attempt {
                    Ok(outcome) => {
                        result = Ok(outcome);
                        break;
                    }
                    Err(failed) => {
                        let again = failed.before_commit && drop_if_closed(client);
                        result = Err(failed.error);
                        if !again {
                            break;
                        }
                    }
                }
            }
            if result.is_err() {
                // A timeout may leave the connection mid-statement: the next job starts afresh.
                *client = None;
            }
            let _ = reply.send(result);
        }
    }
}

/// Drops the connection if it is closed (or was never opened); whether it did.
fn drop_if_closed(client: &mut Option<Client>) -> bool {
    let closed = client.as_ref().is_none_or(Client::is_closed);
    if closed {
        *client = None;
    }
    closed
}

/// The worker's connection, opened (with the log's tables created if missing) when there is
/// none or it closed.
async fn connected<'c>(
    client: &'c mut Option<Client>,
    url: &str,
    options: &SyncOptions,
) -> Result<&'c mut Client, SyncError> {
    if client.as_ref().is_none_or(Client::is_closed) {
        *client = None;
        let mut fresh = log::connect_writer(url, options).await?;
        log::ensure_schema(&mut fresh, options).await?;
        *client = Some(fresh);
    }
    client.as_mut().ok_or_else(|| SyncError::Postgres {
        what: "connecting for the trust state".into(),
        reason: "no connection".into(),
    })
}

/// The `trust` table's records of `servers` (all when `None`).
async fn read_state(
    client: &impl GenericClient,
    options: &SyncOptions,
    servers: Option<&[String]>,
) -> Result<TrustState, SyncError> {
    let ns = &options.namespace;
    let rows = match servers {
        Some(servers) => {
            let servers = servers.to_vec();
            timed(
                options.query_timeout,
                "reading the trust state",
                client.query(
                    &format!("SELECT server, tool, record FROM {ns}.trust WHERE server = ANY($1)"),
                    &[&servers],
                ),
            )
            .await?
        }
        None => {
            timed(
                options.query_timeout,
                "reading the trust state",
                client.query(&format!("SELECT server, tool, record FROM {ns}.trust"), &[]),
            )
            .await?
        }
    };
    let mut state = TrustState::default();
    for row in rows {
        let (server, tool, record): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let record: ToolRecord = serde_json::from_str(&record).map_err(|e| SyncError::Decode {
            what: format!("the trust record of {server}/{tool}"),
            reason: e.to_string(),
        })?;
        state
            .servers
            .entry(server)
            .or_default()
            .insert(tool, record);
    }
    Ok(state)
}

/// Decides `edit` on the current state in one transaction holding the log's head lock, and
/// appends what it changed to the log and to the `trust` table. Commits nothing when nothing
/// changed.
async fn commit_edit(
    client: &mut Client,
    options: &SyncOptions,
    edit: &TrustEdit,
) -> Result<EditOutcome, Failed> {
    let ns = &options.namespace;
    let t = options.query_timeout;
    let tx = timed(t, "beginning a trust write", client.transaction())
        .await
        .map_err(early)?;
    let head = log::lock_head(&tx, options).await.map_err(early)?;
    let before = read_state(&tx, options, Some(&edit.servers()))
        .await
        .map_err(early)?;
    let mut after = before.clone();
    let applied = edit.apply(&mut after);
    if !applied.changed {
        // Nothing to write: release the head now.
        timed(t, "ending a trust read", tx.rollback())
            .await
            .map_err(early)?;
        return Ok(applied.outcome);
    }
    let rows = changed_rows(&before, &after).map_err(early)?;
    let (mut servers, mut tools, mut records) = (Vec::new(), Vec::new(), Vec::new());
    let mut changes = Vec::new();
    for (server, tool, record) in &rows {
        let row = to_row(server, tool, record).map_err(early)?;
        let json = serde_json::to_string(record).map_err(|e| early(encode(&row, e)))?;
        let after = serde_json::to_value(&row).map_err(|e| early(encode(&row, e)))?;
        changes.push(WireChange {
            table: TRUST_TABLE.to_string(),
            key: row.key(),
            after: Some(after),
        });
        servers.push(server.clone());
        tools.push(tool.clone());
        records.push(json);
    }
    timed(
        t,
        "writing the trust state",
        tx.execute(
            &format!(
                "INSERT INTO {ns}.trust (server, tool, record)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
                 ON CONFLICT (server, tool) DO UPDATE SET record = EXCLUDED.record"
            ),
            &[&servers, &tools, &records],
        ),
    )
    .await
    .map_err(early)?;
    let body = serde_json::to_string(&WireEntry::changes(changes)).map_err(|e| {
        early(SyncError::Encode {
            table: TRUST_TABLE.into(),
            key: String::new(),
            reason: e.to_string(),
        })
    })?;
    log::append_locked(&tx, options, head, &body)
        .await
        .map_err(early)?;
    timed(t, "committing a trust write", tx.commit())
        .await
        .map_err(|error| Failed {
            error,
            before_commit: false,
        })?;
    Ok(applied.outcome)
}

fn encode(row: &TrustRow, e: serde_json::Error) -> SyncError {
    SyncError::Encode {
        table: TRUST_TABLE.into(),
        key: row.key(),
        reason: e.to_string(),
    }
}

/// The records `after` holds differently from `before`. Edits only add and change records; a
/// record gone would be a bug in them, and is refused rather than written as a delete.
fn changed_rows(
    before: &TrustState,
    after: &TrustState,
) -> Result<Vec<(String, String, ToolRecord)>, SyncError> {
    for (server, tools) in &before.servers {
        for tool in tools.keys() {
            if after
                .servers
                .get(server)
                .is_none_or(|t| !t.contains_key(tool))
            {
                return Err(SyncError::Encode {
                    table: TRUST_TABLE.into(),
                    key: format!("{server}/{tool}"),
                    reason: "a trust edit removed a record; trust records are never removed".into(),
                });
            }
        }
    }
    let mut rows = Vec::new();
    for (server, tools) in &after.servers {
        for (tool, record) in tools {
            let old = before.servers.get(server).and_then(|t| t.get(tool));
            if old != Some(record) {
                rows.push((server.clone(), tool.clone(), record.clone()));
            }
        }
    }
    Ok(rows)
}

/// A quarantine record as a log row.
fn to_row(server: &str, tool: &str, record: &ToolRecord) -> Result<TrustRow, SyncError> {
    let reason = match record.reason {
        None => None,
        Some(reason) => match serde_json::to_value(reason) {
            Ok(serde_json::Value::String(name)) => Some(name),
            other => {
                return Err(SyncError::Encode {
                    table: TRUST_TABLE.into(),
                    key: format!("{server}/{tool}"),
                    reason: format!("a quarantine reason encoded as {other:?}"),
                });
            }
        },
    };
    Ok(TrustRow {
        server: server.to_string(),
        tool: tool.to_string(),
        trusted: record.trusted.clone(),
        pending: record.pending.clone(),
        reason,
    })
}

/// A log row as a quarantine record.
fn to_record(row: &TrustRow) -> Result<ToolRecord, SyncError> {
    let reason = match &row.reason {
        None => None,
        Some(name) => Some(
            serde_json::from_value::<QuarantineReason>(serde_json::Value::String(name.clone()))
                .map_err(|e| SyncError::Decode {
                    what: format!("the trust record of {}", row.key()),
                    reason: e.to_string(),
                })?,
        ),
    };
    Ok(ToolRecord {
        trusted: row.trusted.clone(),
        pending: row.pending.clone(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_rows() {
        for record in [
            ToolRecord {
                trusted: Some("a".into()),
                pending: None,
                reason: None,
            },
            ToolRecord {
                trusted: Some("a".into()),
                pending: Some("b".into()),
                reason: Some(QuarantineReason::Changed),
            },
            ToolRecord {
                trusted: None,
                pending: Some("b".into()),
                reason: Some(QuarantineReason::New),
            },
        ] {
            let row = to_row("s", "t", &record).expect("a row");
            assert_eq!(to_record(&row).expect("a record"), record);
        }
        let bad = TrustRow {
            server: "s".into(),
            tool: "t".into(),
            trusted: None,
            pending: None,
            reason: Some("because".into()),
        };
        assert!(matches!(to_record(&bad), Err(SyncError::Decode { .. })));
    }

    #[test]
    fn only_changed_records_are_written_and_none_is_ever_removed() {
        let record = |t: &str| ToolRecord {
            trusted: Some(t.into()),
            pending: None,
            reason: None,
        };
        let mut before = TrustState::default();
        before
            .servers
            .entry("s".into())
            .or_default()
            .insert("a".into(), record("1"));
        let mut after = before.clone();
        after
            .servers
            .entry("s".into())
            .or_default()
            .insert("b".into(), record("2"));
        let rows = changed_rows(&before, &after).expect("rows");
        assert_eq!(rows, [("s".into(), "b".into(), record("2"))]);
        assert!(changed_rows(&after, &before).is_err());
    }
}
