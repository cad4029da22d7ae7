//! What travels through PostgreSQL: change sets of the shared tables as JSON, and how a
//! replica applies one to its store.
//!
//! A log entry is `{"changes":[{"table":"tools","key":"fs/read","after":{...}}, ...]}`: per
//! (table, key) the record after the write, or `null` for a delete. Applying is an upsert or a
//! delete-if-present per change, in order, in one store transaction, so every replica that
//! applies the same entries from the same state reaches the same tables, whatever each one's
//! store held for other reasons. An entry that cannot be applied (a record its validator refuses,
//! a unique index it would break, a table this build does not share) is refused whole, on every
//! replica alike, since they all hold the same state at that version.
//!
//! Beside the catalog's tables the log carries the quarantine's trust state (table `trust`,
//! one [`TrustRow`] per live tool), written only by the trust API (`sync::trust`) and kept in
//! each replica's store in a table of its own, so that every replica judges tools alike; and
//! the clients of the gateways over HTTP (table `clients`, one [`ClientRow`] per client: its
//! name, its token's hash and its scope), written only by `sync::clients`, so that a client
//! added or revoked once is known or refused by every gateway.
//!
//! It also carries what the agents' calls taught ([`USAGE`]), as evidence rather than rows: an
//! entry `{"learn":{"called":[...],"sent":[...],"previous":[...]}}` holds one turn's
//! [`TurnUse`] (`Replica::learn`), and each replica counts it into its own usage rows in
//! version order (`usage::learn_with`, every tool named counting: a gateway's live tools are
//! not in the other replicas' `tools` tables). Two replicas counting the same row at once
//! therefore lose nothing: PostgreSQL orders their entries and every replica adds both. An
//! A batch of turns (`sync::usage`, one entry per replica per interval) is an entry
//! `{"turns":[{"called":[...],...}, ...]}`, counted as one `learn` per turn in that order
//! (`usage::learn_all_with`); a build older than batches refuses such an entry, so upgrade
//! every replica before a gateway sends them. An
//! entry may hold changes and evidence; the changes are applied first, and a failure of either
//! refuses the whole entry. `changes` may be absent (read as none), and a field this build
//! does not know refuses the entry, rather than applying part of what it means.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::hooks::{HOOKS, Hook};
use crate::skills::{SKILLS, Skill};
use crate::store::{
    Change, ChangeSet, Record, Snapshot, StoreBuilder, StoreError, Table, TableSchema, WriteTxn,
};
use crate::tools::{TOOLS, Tool};
use crate::usage::{Known, TurnUse, USAGE, Usage, learn_all_with, learn_with};

use super::SyncError;

/// A record type whose table is shared by every replica: its rows travel through the log.
///
/// Implemented for [`Tool`], [`Skill`] and [`Hook`] (the tables `tools`, `skills`, `hooks`).
/// Handlers (`handlers`, `hook_handlers`) and embeddings (`vectors`) stay local: a replica runs
/// what it can run and embeds with its own model.
/// ```
/// use capstore::sync::Shared;
/// use capstore::{Skill, Tool};
/// assert_eq!(<Tool as Shared>::TABLE, "tools");
/// assert_eq!(Tool::new("read", "Read").with_source("fs").key(), "fs/read");
/// assert_eq!(Skill::new("files", "Work with files").key(), "files");
/// ```
pub trait Shared: Record + Serialize + DeserializeOwned {
    /// The table's name, as the log names it.
    /// ```
    /// assert_eq!(<capstore::Hook as capstore::sync::Shared>::TABLE, "hooks");
    /// ```
    const TABLE: &'static str;
    /// The built-in table's handle.
    /// ```
    /// use capstore::sync::Shared;
    /// let table = <capstore::Tool as Shared>::table();
    /// assert_eq!(capstore::Store::new().snapshot().count(&table)?, 0);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    fn table() -> Table<Self>;
    /// The record's primary key in that table.
    /// ```
    /// use capstore::sync::Shared;
    /// assert_eq!(capstore::Tool::new("get", "Get").with_source("web").key(), "web/get");
    /// ```
    fn key(&self) -> String;
}

impl Shared for Tool {
    const TABLE: &'static str = "tools";
    fn table() -> Table<Tool> {
        TOOLS
    }
    fn key(&self) -> String {
        self.qualified_name()
    }
}

impl Shared for Skill {
    const TABLE: &'static str = "skills";
    fn table() -> Table<Skill> {
        SKILLS
    }
    fn key(&self) -> String {
        self.name.clone()
    }
}

impl Shared for Hook {
    const TABLE: &'static str = "hooks";
    fn table() -> Table<Hook> {
        HOOKS
    }
    fn key(&self) -> String {
        self.id.clone()
    }
}

/// The names of the shared tables, in the order snapshots list them.
///
/// ```
/// assert_eq!(capstore::sync::SHARED_TABLES, ["tools", "skills", "hooks"]);
/// ```
pub const SHARED_TABLES: [&str; 3] = [Tool::TABLE, Skill::TABLE, Hook::TABLE];

/// The log's name for the quarantine's trust state (not a catalog table: no [`Batch`] writes it).
pub(crate) const TRUST_TABLE: &str = "trust";

/// One live tool's trust record as the log and the replicas' stores hold it: the fields of the
/// quarantine's `ToolRecord` (fingerprints, and why it is held: `"changed"` or `"new"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TrustRow {
    pub server: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl TrustRow {
    /// Its key: `server/tool`.
    pub(crate) fn key(&self) -> String {
        format!("{}/{}", self.server, self.tool)
    }
}

/// The log's name for the gateways' clients (not a catalog table: no [`Batch`] writes it).
pub(crate) const CLIENTS_TABLE: &str = "clients";

/// One gateway client as the log and the replicas' stores hold it: its name, its token's
/// SHA-256 and its scope, which travels as JSON the gateway reads (`gateway::Scope`), so that
/// every build applies a client's entry alike, with the gateway or without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClientRow {
    pub name: String,
    pub token_sha256: String,
    pub scope: Value,
}

impl ClientRow {
    /// Its key: the client's name.
    pub(crate) fn key(&self) -> String {
        self.name.clone()
    }
}

/// The store tables a replica adds to the built-in ones: where it is in the log, the trust
/// state and the gateways' clients. Declared the same way on every replica's store (and
/// compaction's scratch store).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyncTables {
    pub position: Table<LogPosition>,
    pub trust: Table<TrustRow>,
    pub clients: Table<ClientRow>,
}

impl SyncTables {
    /// Declares the tables on `builder`.
    pub(crate) fn declare(builder: &mut StoreBuilder) -> Result<SyncTables, SyncError> {
        let position = builder
            .table(position_schema())
            .map_err(SyncError::Schema)?;
        let trust = builder
            .table(TableSchema::new(TRUST_STORE_TABLE, TrustRow::key))
            .map_err(SyncError::Schema)?;
        let clients = builder
            .table(TableSchema::new(CLIENTS_STORE_TABLE, ClientRow::key))
            .map_err(SyncError::Schema)?;
        Ok(SyncTables {
            position,
            trust,
            clients,
        })
    }
}

/// The name of the store table holding [`TrustRow`]s.
pub(crate) const TRUST_STORE_TABLE: &str = "sync_trust";

/// The name of the store table holding [`ClientRow`]s.
pub(crate) const CLIENTS_STORE_TABLE: &str = "sync_clients";

/// One change of a log entry: the record after it, `None` for a delete.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireChange {
    pub table: String,
    pub key: String,
    pub after: Option<Value>,
}

/// One log entry's body: changes of the shared tables, and one turn's usage evidence (see the
/// module doc). Entries written before usage travelled hold only `changes`.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireEntry {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<WireChange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learn: Option<TurnUse>,
    /// A replica's batch of turns (`sync::usage`), counted in this order after `learn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnUse>,
}

impl WireEntry {
    /// An entry of changes only.
    pub(crate) fn changes(changes: Vec<WireChange>) -> WireEntry {
        WireEntry {
            changes,
            ..WireEntry::default()
        }
    }

    /// An entry of a batch of turns' evidence only.
    pub(crate) fn turns(turns: Vec<TurnUse>) -> WireEntry {
        WireEntry {
            turns,
            ..WireEntry::default()
        }
    }

    /// The entry as the log's JSON text.
    pub(crate) fn encode(&self) -> Result<String, SyncError> {
        serde_json::to_string(self).map_err(|e| SyncError::Encode {
            table: "log".into(),
            key: String::new(),
            reason: e.to_string(),
        })
    }
}

/// The writes of one replicated write, built up before it is sent: puts (insert or replace)
/// and deletes of the shared tables, applied in this order.
///
/// ```
/// use capstore::sync::Batch;
/// use capstore::{Skill, Tool, SKILLS, TOOLS};
/// let mut batch = Batch::new();
/// batch.put(&TOOLS, Tool::new("read_file", "Read a file").with_source("fs"))?;
/// batch.put(&SKILLS, Skill::new("files", "Work with files"))?;
/// batch.delete(&TOOLS, "fs/old_tool");
/// assert_eq!(batch.len(), 3);
/// # Ok::<(), capstore::sync::SyncError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub(crate) changes: Vec<WireChange>,
}

impl Batch {
    /// An empty batch.
    /// ```
    /// assert!(capstore::sync::Batch::new().is_empty());
    /// ```
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Inserts `record`, or replaces the one under its key. Fails only if the record cannot be
    /// written as JSON.
    /// ```
    /// use capstore::{Tool, TOOLS};
    /// let mut batch = capstore::sync::Batch::new();
    /// batch
    ///     .put(&TOOLS, Tool::new("a", "A").with_source("s"))?
    ///     .put(&TOOLS, Tool::new("b", "B").with_source("s"))?;
    /// assert_eq!(batch.len(), 2);
    /// # Ok::<(), capstore::sync::SyncError>(())
    /// ```
    pub fn put<R: Shared>(&mut self, _table: &Table<R>, record: R) -> Result<&mut Self, SyncError> {
        let after = serde_json::to_value(&record).map_err(|e| SyncError::Encode {
            table: R::TABLE.to_string(),
            key: record.key(),
            reason: e.to_string(),
        })?;
        self.changes.push(WireChange {
            table: R::TABLE.to_string(),
            key: record.key(),
            after: Some(after),
        });
        Ok(self)
    }

    /// Deletes the record under `key`, if there is one when the batch is applied.
    /// ```
    /// let mut batch = capstore::sync::Batch::new();
    /// batch.delete(&capstore::SKILLS, "files").delete(&capstore::TOOLS, "fs/read");
    /// assert_eq!(batch.len(), 2);
    /// ```
    pub fn delete<R: Shared>(&mut self, _table: &Table<R>, key: &str) -> &mut Self {
        self.changes.push(WireChange {
            table: R::TABLE.to_string(),
            key: key.to_string(),
            after: None,
        });
        self
    }

    /// How many writes the batch holds.
    /// ```
    /// let mut batch = capstore::sync::Batch::new();
    /// batch.delete(&capstore::HOOKS, "audit");
    /// assert_eq!(batch.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether the batch holds no write.
    /// ```
    /// let mut batch = capstore::sync::Batch::new();
    /// assert!(batch.is_empty());
    /// batch.delete(&capstore::TOOLS, "fs/read");
    /// assert!(!batch.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Where a replica's store is in the log: one row, key `"log"`, written in the same store
/// transaction as each change set applied, so every snapshot says which log version it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogPosition {
    pub version: u64,
    /// Entries refused so far (see the module doc).
    pub refused: u64,
}

/// The name of the store table holding [`LogPosition`].
pub(crate) const POSITION_TABLE: &str = "sync_position";
pub(crate) const POSITION_KEY: &str = "log";

pub(crate) fn position_schema() -> TableSchema<LogPosition> {
    TableSchema::new(POSITION_TABLE, |_: &LogPosition| POSITION_KEY.to_string())
}

/// The log position a snapshot holds (0 before anything was applied).
pub(crate) fn position(snap: &Snapshot, table: &Table<LogPosition>) -> LogPosition {
    snap.get(table, POSITION_KEY)
        .ok()
        .flatten()
        .copied()
        .unwrap_or(LogPosition {
            version: 0,
            refused: 0,
        })
}

/// Applies one change to `table` (named `name` in the log): the record after it upserted (its
/// key checked against the change's), or the key deleted (already gone is fine).
fn apply_record<R: Record + DeserializeOwned>(
    tx: &mut WriteTxn,
    table: &Table<R>,
    name: &str,
    key: impl Fn(&R) -> String,
    change: &WireChange,
) -> Result<(), SyncError> {
    match &change.after {
        Some(value) => {
            let record = R::deserialize(value).map_err(|e| SyncError::Decode {
                what: format!("{name} record {:?}", change.key),
                reason: e.to_string(),
            })?;
            if key(&record) != change.key {
                return Err(SyncError::Decode {
                    what: format!("{name} record {:?}", change.key),
                    reason: format!("the record's key is {:?}", key(&record)),
                });
            }
            tx.upsert(table, record)?;
        }
        None => match tx.delete(table, &change.key) {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        },
    }
    Ok(())
}

/// [`apply_record`] for a shared table.
fn apply_one<R: Shared>(tx: &mut WriteTxn, change: &WireChange) -> Result<(), SyncError> {
    apply_record(tx, &R::table(), R::TABLE, Shared::key, change)
}

/// Applies one entry's changes to `tx`; on error the caller rolls them back.
pub(crate) fn apply_changes(
    tx: &mut WriteTxn,
    tables: &SyncTables,
    changes: &[WireChange],
) -> Result<(), SyncError> {
    for change in changes {
        match change.table.as_str() {
            Tool::TABLE => apply_one::<Tool>(tx, change)?,
            Skill::TABLE => apply_one::<Skill>(tx, change)?,
            Hook::TABLE => apply_one::<Hook>(tx, change)?,
            TRUST_TABLE => apply_record(tx, &tables.trust, TRUST_TABLE, TrustRow::key, change)?,
            CLIENTS_TABLE => {
                apply_record(tx, &tables.clients, CLIENTS_TABLE, ClientRow::key, change)?
            }
            other => {
                return Err(SyncError::Decode {
                    what: format!("a change to {other:?}"),
                    reason: format!(
                        "shared tables are {SHARED_TABLES:?}, {TRUST_TABLE:?} and {CLIENTS_TABLE:?}"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Applies one entry's changes, then counts its usage evidence (its one turn, then its batch),
/// to `tx`; on error the caller rolls both back.
pub(crate) fn apply_body(
    tx: &mut WriteTxn,
    tables: &SyncTables,
    entry: &WireEntry,
) -> Result<(), SyncError> {
    apply_changes(tx, tables, &entry.changes)?;
    if let Some(turn) = &entry.learn {
        learn_with(tx, turn, Known::Any)?;
    }
    if !entry.turns.is_empty() {
        learn_all_with(tx, &entry.turns, Known::Any)?;
    }
    Ok(())
}

/// Applies one log entry as its own store transaction's content: the changes and the evidence
/// (all or none) and the new position. Returns whether the entry was applied (false: refused,
/// position moved).
pub(crate) fn apply_entry(
    tx: &mut WriteTxn,
    tables: &SyncTables,
    version: u64,
    body: &str,
) -> Result<bool, StoreError> {
    let mut pos = position(tx.view(), &tables.position);
    let applied = match serde_json::from_str::<WireEntry>(body) {
        Ok(entry) => tx
            .all_or_nothing(|tx| apply_body(tx, tables, &entry).map_err(Refused::from))
            .is_ok(),
        Err(_) => false,
    };
    pos.version = version;
    if !applied {
        pos.refused += 1;
    }
    tx.upsert(&tables.position, pos)?;
    Ok(applied)
}

/// An entry's refusal, carrying the store error that `all_or_nothing` needs to roll back with.
struct Refused;
impl From<SyncError> for Refused {
    fn from(_: SyncError) -> Self {
        Refused
    }
}
impl From<StoreError> for Refused {
    fn from(_: StoreError) -> Self {
        Refused
    }
}

/// The shared tables as a compacted snapshot row holds them (read side).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireTables {
    #[serde(default)]
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub skills: Vec<Skill>,
    #[serde(default)]
    pub hooks: Vec<Hook>,
    /// The trust state (absent from snapshots written before it was shared).
    #[serde(default)]
    pub trust: Vec<TrustRow>,
    /// The gateways' clients (absent from snapshots written before they were shared).
    #[serde(default)]
    pub clients: Vec<ClientRow>,
    /// The usage rows (absent from snapshots written before usage was shared).
    #[serde(default)]
    pub usage: Vec<Usage>,
    /// Entries refused up to the snapshot's version.
    #[serde(default)]
    pub refused: u64,
}

/// The same, borrowed from a snapshot (write side).
#[derive(Serialize)]
struct WireTablesRef<'s> {
    tools: Vec<&'s Tool>,
    skills: Vec<&'s Skill>,
    hooks: Vec<&'s Hook>,
    trust: Vec<&'s TrustRow>,
    clients: Vec<&'s ClientRow>,
    usage: Vec<&'s Usage>,
    refused: u64,
}

/// The shared tables of `snap` (and its trust state, clients and usage) as the JSON of a snapshot row.
pub(crate) fn encode_tables(
    snap: &Snapshot,
    tables: &SyncTables,
    refused: u64,
) -> Result<String, SyncError> {
    let tables = WireTablesRef {
        tools: snap.iter(&TOOLS)?.records().collect(),
        skills: snap.iter(&SKILLS)?.records().collect(),
        hooks: snap.iter(&HOOKS)?.records().collect(),
        trust: snap.iter(&tables.trust)?.records().collect(),
        clients: snap.iter(&tables.clients)?.records().collect(),
        usage: snap.iter(&USAGE)?.records().collect(),
        refused,
    };
    serde_json::to_string(&tables).map_err(|e| SyncError::Encode {
        table: "snapshot".into(),
        key: String::new(),
        reason: e.to_string(),
    })
}

/// Makes `tx`'s shared tables (and trust state, clients and usage) exactly `tables` (a compacted
/// snapshot): bulk inserts into empty tables, otherwise deletes what is not in it and upserts
/// the rest.
pub(crate) fn replace_tables(
    tx: &mut WriteTxn,
    local: &SyncTables,
    tables: WireTables,
) -> Result<(), StoreError> {
    replace_table(tx, &TOOLS, tables.tools, Shared::key)?;
    replace_table(tx, &SKILLS, tables.skills, Shared::key)?;
    replace_table(tx, &HOOKS, tables.hooks, Shared::key)?;
    replace_table(tx, &local.trust, tables.trust, TrustRow::key)?;
    replace_table(tx, &local.clients, tables.clients, ClientRow::key)?;
    // After the tools: a tool the snapshot no longer holds took its usage row with it.
    replace_table(tx, &USAGE, tables.usage, |u: &Usage| u.tool.clone())?;
    Ok(())
}

fn replace_table<R: Record>(
    tx: &mut WriteTxn,
    table: &Table<R>,
    records: Vec<R>,
    key: impl Fn(&R) -> String,
) -> Result<(), StoreError> {
    if tx.view().count(table)? == 0 {
        tx.insert_many(table, records)?;
        return Ok(());
    }
    let keep: std::collections::HashSet<String> = records.iter().map(key).collect();
    let gone: Vec<Arc<str>> = tx
        .view()
        .iter(table)?
        .map(|(key, _)| Arc::clone(key))
        .filter(|key| !keep.contains(&**key))
        .collect();
    for key in gone {
        tx.delete(table, &key)?;
    }
    for record in records {
        tx.upsert(table, record)?;
    }
    Ok(())
}

/// Copies one commit's changes of the shared tables and the usage table into another store's
/// transaction.
pub(crate) fn copy_changes(tx: &mut WriteTxn, changes: &ChangeSet) -> Result<(), StoreError> {
    for change in &changes.changes {
        copy_change(tx, change, &TOOLS)?;
        copy_change(tx, change, &SKILLS)?;
        copy_change(tx, change, &HOOKS)?;
        copy_change(tx, change, &USAGE)?;
    }
    Ok(())
}

fn copy_change<R: Record + Clone>(
    tx: &mut WriteTxn,
    change: &Change,
    table: &Table<R>,
) -> Result<(), StoreError> {
    if !change.is(table) {
        return Ok(());
    }
    match change.after(table) {
        Some(record) => {
            tx.upsert(table, record.clone())?;
        }
        None => match tx.delete(table, &change.key) {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        },
    }
    Ok(())
}

/// Upserts every shared record and usage row of `snap` into another store's transaction.
pub(crate) fn copy_tables(tx: &mut WriteTxn, snap: &Snapshot) -> Result<(), StoreError> {
    copy_table(tx, snap, &TOOLS)?;
    copy_table(tx, snap, &SKILLS)?;
    copy_table(tx, snap, &HOOKS)?;
    copy_table(tx, snap, &USAGE)?;
    Ok(())
}

fn copy_table<R: Record + Clone>(
    tx: &mut WriteTxn,
    snap: &Snapshot,
    table: &Table<R>,
) -> Result<(), StoreError> {
    for (_, record) in snap.iter(table)? {
        tx.upsert(table, record.clone())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CommitInfo, Store};

    fn replica_store() -> (Store, SyncTables) {
        let mut builder = Store::builder();
        let tables = SyncTables::declare(&mut builder).expect("tables");
        (builder.build(), tables)
    }

    /// Applies one entry as a follower does: whether it was applied, and the commit.
    fn apply(store: &Store, tables: &SyncTables, version: u64, body: &str) -> (bool, CommitInfo) {
        let mut tx = store.begin();
        let applied = apply_entry(&mut tx, tables, version, body).expect("applies or refuses");
        (applied, tx.commit())
    }

    fn usage_rows(snap: &Snapshot) -> Vec<Usage> {
        snap.iter(&USAGE)
            .expect("usage")
            .records()
            .cloned()
            .collect()
    }

    #[test]
    fn a_learn_entry_round_trips_and_entries_without_it_still_read() {
        let entry = WireEntry {
            changes: Vec::new(),
            turns: Vec::new(),
            learn: Some(
                TurnUse::new(["fs/cd", "fs/mv", "fs/cd"])
                    .with_sent(["fs/mv"])
                    .with_previous(["fs/ls"]),
            ),
        };
        let text = entry.encode().expect("encodes");
        assert_eq!(
            text,
            r#"{"learn":{"called":["fs/cd","fs/mv","fs/cd"],"sent":["fs/mv"],"previous":["fs/ls"]}}"#
        );
        assert_eq!(serde_json::from_str::<WireEntry>(&text).ok(), Some(entry));

        // An entry of changes (as every build before usage travelled wrote it) reads the same,
        // and is written the same.
        let old = r#"{"changes":[{"table":"tools","key":"fs/a","after":null}]}"#;
        let read: WireEntry = serde_json::from_str(old).expect("reads");
        assert_eq!(read.learn, None);
        assert_eq!(read.changes.len(), 1);
        assert_eq!(read.encode().expect("encodes"), old);
        // Changes and evidence in one entry.
        let both = r#"{"changes":[],"learn":{"called":["a"]}}"#;
        let read: WireEntry = serde_json::from_str(both).expect("reads");
        assert_eq!(read.learn, Some(TurnUse::new(["a"])));

        // What this build cannot read is not half-read.
        for bad in [
            r#"{"changes":[],"forget":{"called":["a"]}}"#,
            r#"{"learn":{"called":["a"],"weight":3}}"#,
            r#"{"learn":{"sent":["a"]}}"#,
        ] {
            assert!(serde_json::from_str::<WireEntry>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn evidence_counts_every_tool_named_and_is_refused_with_its_entry() {
        let (store, tables) = replica_store();
        // No tool in the store: the evidence counts anyway (a gateway's live tools).
        let body = r#"{"learn":{"called":["live/a","live/b"],"sent":["live/b"]}}"#;
        assert!(apply(&store, &tables, 1, body).0);
        let snap = store.snapshot();
        let b = snap.get(&USAGE, "live/b").expect("reads").expect("learned");
        assert_eq!((b.turns, b.calls, b.sent, b.sent_and_called), (1, 1, 1, 1));
        assert_eq!(b.companion("live/a").map(|c| c.before), Some(1));
        let before = usage_rows(&snap);

        // A change no build can apply refuses the evidence beside it; so does evidence this
        // build cannot read, and an entry that is not JSON.
        for (version, body) in [
            (
                2,
                r#"{"changes":[{"table":"nope","key":"k","after":null}],"learn":{"called":["live/a"]}}"#,
            ),
            (3, r#"{"learn":{"called":["live/a"],"weight":1}}"#),
            (4, "not json"),
        ] {
            assert!(!apply(&store, &tables, version, body).0, "{body}");
        }
        let snap = store.snapshot();
        assert_eq!(usage_rows(&snap), before);
        assert_eq!(
            position(&snap, &tables.position),
            LogPosition {
                version: 4,
                refused: 3
            }
        );
    }

    #[test]
    fn a_batch_entry_counts_its_turns_as_one_entry_per_turn_would() {
        let turns = vec![
            TurnUse::new(["fs/cd", "live/x"]).with_sent(["fs/cd"]),
            TurnUse::new(["live/x", "fs/cd", "live/x"]).with_previous(["fs/cd", "live/x"]),
            TurnUse::new(["fs/mv"]),
        ];
        let (batched, batched_tables) = replica_store();
        let body = WireEntry::turns(turns.clone()).encode().expect("encodes");
        assert!(
            body.starts_with(r#"{"turns":[{"called":["fs/cd","live/x"]"#),
            "{body}"
        );
        assert!(apply(&batched, &batched_tables, 1, &body).0);
        let (each, each_tables) = replica_store();
        for (version, turn) in (1..).zip(&turns) {
            let body = WireEntry {
                learn: Some(turn.clone()),
                ..WireEntry::default()
            };
            let body = body.encode().expect("encodes");
            assert!(apply(&each, &each_tables, version, &body).0);
        }
        assert_eq!(
            usage_rows(&batched.snapshot()),
            usage_rows(&each.snapshot())
        );
        assert_eq!(usage_rows(&batched.snapshot()).len(), 3);

        // A batch beside a change no build can apply is refused with it, whole.
        let bad = r#"{"changes":[{"table":"nope","key":"k","after":null}],"turns":[{"called":["fs/mv"]}]}"#;
        assert!(!apply(&batched, &batched_tables, 2, bad).0);
        assert_eq!(
            usage_rows(&batched.snapshot()),
            usage_rows(&each.snapshot())
        );
    }

    #[test]
    fn a_snapshot_row_carries_the_usage_rows() {
        let (store, tables) = replica_store();
        let cd = Tool::new("cd", "Change directory").with_source("fs");
        let put = WireEntry::changes(vec![WireChange {
            table: Tool::TABLE.into(),
            key: cd.key(),
            after: Some(serde_json::to_value(&cd).expect("encodes")),
        }]);
        let put = put.encode().expect("encodes");
        for (version, body) in [
            (1, put.as_str()),
            (2, r#"{"learn":{"called":["fs/cd","live/x"]}}"#),
            (3, r#"{"learn":{"called":["live/x"],"previous":["fs/cd"]}}"#),
        ] {
            assert!(apply(&store, &tables, version, body).0, "{body}");
        }
        let snap = store.snapshot();
        assert_eq!(usage_rows(&snap).len(), 2);
        let row = encode_tables(&snap, &tables, 0).expect("encodes");

        // Into an empty store (a new replica), and over one that holds other rows (a replica
        // behind the snapshot): the same usage either way.
        let (fresh, fresh_tables) = replica_store();
        let (behind, behind_tables) = replica_store();
        apply(
            &behind,
            &behind_tables,
            1,
            r#"{"learn":{"called":["gone/y"]}}"#,
        );
        for (target, local) in [(&fresh, &fresh_tables), (&behind, &behind_tables)] {
            let read: WireTables = serde_json::from_str(&row).expect("reads");
            target
                .write(|tx| replace_tables(tx, local, read))
                .expect("loads");
            assert_eq!(usage_rows(&target.snapshot()), usage_rows(&snap));
        }
        // A snapshot row written before usage travelled reads as no usage.
        let old: WireTables = serde_json::from_str(r#"{"tools":[],"refused":0}"#).expect("reads");
        assert!(old.usage.is_empty());
    }

    #[test]
    fn a_mirror_copies_usage_rows_and_their_changes() {
        let (store, tables) = replica_store();
        apply(&store, &tables, 1, r#"{"learn":{"called":["live/a"]}}"#);
        let other = Store::new();
        other
            .write(|tx| copy_tables(tx, &store.snapshot()))
            .expect("copies");
        let (_, info) = apply(
            &store,
            &tables,
            2,
            r#"{"learn":{"called":["live/a","live/b"]}}"#,
        );
        other
            .write(|tx| copy_changes(tx, &info.changes))
            .expect("copies");
        assert_eq!(usage_rows(&other.snapshot()), usage_rows(&store.snapshot()));
        assert_eq!(usage_rows(&other.snapshot()).len(), 2);
    }
}
