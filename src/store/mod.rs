//! A snapshot-versioned, multi-table, in-memory store built on persistent maps.
//!
//! # The contract
//! - **Tables** are declared by a [`TableSchema`]: a primary key, any number of secondary
//!   indexes (unique or not; one, many or no keys per record) and optionally a validator and a
//!   BM25 text index. Declarations are checked when made, with errors naming table and index.
//! - **Snapshots** ([`Snapshot`]) are immutable and versioned. Taking one is an atomic load plus
//!   an `Arc` clone: readers never block, never wait for a writer, and see every table, index and
//!   the text index of one version together, for as long as they keep the snapshot.
//! - **Writes** go through a [`WriteTxn`]; one is open at a time. It sees its own writes, and its
//!   commit publishes them all at once as version + 1. Dropped or aborted, it leaves no trace.
//!   A write that fails (duplicate key, unique violation, validator refusal) changes nothing.
//! - **Changes**: each commit yields a [`ChangeSet`], delivered in version order to callbacks
//!   ([`Store::subscribe`]), async receivers ([`Store::changes`], [`Store::wait_for_version`])
//!   and [`Watcher`]s of a [`WatchSet`].
//! - **Versions per table**: beside the store's one version, a snapshot says at which version
//!   each table last changed ([`Snapshot::table_version`]). A cache computed from some tables
//!   keys on theirs, and a commit to other tables (a turn's usage) leaves it valid; watchers
//!   and [`Store::table_versions`] wake only for the tables they follow.
//!
//! Of ACID, the store gives atomicity, consistency and isolation (snapshot isolation with a
//! single writer, so no anomalies at all); not durability: it lives in memory. Records are
//! shared, immutable values: to change one, write a new one.
//!
//! # What operations cost
//! n = records in the table, m = records matched, i = secondary indexes of the table,
//! t = terms in the record's text, T = tables, s = listeners.
//!
//! | operation | cost |
//! |---|---|
//! | [`Store::snapshot`] | O(1), lock-free |
//! | [`Snapshot::get`], [`Snapshot::contains`] | O(log n) |
//! | [`Snapshot::count`] | O(1) |
//! | [`Snapshot::by`] (a typed index handle such as `TOOLS_BY_SOURCE`), [`Snapshot::by_index`] (by name), [`Snapshot::count_by_index`] | O(log n + m log n), O(log n + m log n), O(log n) |
//! | [`Snapshot::key_prefix`], [`Snapshot::index_prefix`] | O(log n + m), O(log n + m log n) |
//! | [`Snapshot::iter`] | O(n) for all, O(1) per step amortised |
//! | [`Snapshot::search`] | see [`crate::bm25`] |
//! | [`Store::begin`] | O(T) once the writer lock is free |
//! | [`WriteTxn::insert`] / `update` / `upsert` / `delete` | O((1 + keys in i) · log n) plus O(t) text indexing (see [`crate::bm25`]) |
//! | [`WriteTxn::commit`] | O(changes + s) |
//! | dropping a [`WriteTxn`] | O(changes) |
//!
//! # Example
//! ```
//! use capstore::{Store, Tool, TOOLS, TOOLS_BY_SOURCE, TOOLS_BY_TAG};
//!
//! let store = Store::new();
//! store.write(|tx| {
//!     tx.insert(&TOOLS, Tool::new("read_file", "Read a file").with_source("fs").with_tags(["files"]))?;
//!     tx.insert(&TOOLS, Tool::new("search", "Search issues").with_source("github").with_tags(["code"]))
//! })?;
//! let snap = store.snapshot();
//! assert_eq!(snap.by(&TOOLS_BY_SOURCE, "github")?.count(), 1);
//! assert_eq!(snap.by(&TOOLS_BY_TAG, "files")?.key_list().to_string(), "fs/read_file");
//! # Ok::<(), capstore::StoreError>(())
//! ```

mod bulk;
mod changes;
mod error;
mod index_keys;
mod notify;
mod schema;
mod snapshot;
mod table;
mod txn;
mod watch;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch as tokio_watch};

pub use changes::{Change, ChangeKind, ChangeSet};
pub use error::{RecordError, SchemaError, StoreError};
pub use notify::Subscription;
pub use schema::{
    Index, IndexSchema, PRIMARY_INDEX, Record, Table, TableSchema, TextFields, TextSchema,
};
pub(crate) use snapshot::{Entry, RowLookup};
pub use snapshot::{IndexValues, KeyList, Rows, Scored, Snapshot};
pub use txn::{CommitInfo, Savepoint, WriteTxn};
pub use watch::{WatchSet, Watcher};

use notify::Notifier;
use schema::TableDef;
pub(crate) use schema::{BUILTIN_SCHEMA, Row};
use snapshot::Schema;
use table::TableState;
use watch::WatchState;

/// Gives each builder's schema its own id; 0 is kept for the built-in tables' handles.
static NEXT_SCHEMA_UID: AtomicU64 = AtomicU64::new(1);

/// Declares the tables of a store, then builds it.
///
/// [`StoreBuilder::new`] starts with no tables; [`Store::builder`] starts with the built-in
/// tables (`tools`, `skills`, `hooks`, `handlers`, `hook_handlers`), to which you may add your own.
///
/// ```
/// use capstore::store::{IndexSchema, TableSchema};
/// use capstore::{Store, TOOLS};
///
/// #[derive(Debug)]
/// struct Subagent { name: String, model: String }
///
/// let mut builder = Store::builder();
/// let subagents = builder.table(
///     TableSchema::new("subagents", |a: &Subagent| a.name.clone())
///         .index(IndexSchema::single("model", |a: &Subagent| Some(a.model.clone()))),
/// )?;
/// let store = builder.build();
/// store.write(|tx| tx.insert(&subagents, Subagent { name: "reviewer".into(), model: "small".into() }))?;
/// let snap = store.snapshot();
/// assert_eq!(snap.first(&subagents, "model", "small")?.map(|a| a.name.as_str()), Some("reviewer"));
/// assert_eq!(snap.count(&TOOLS)?, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StoreBuilder {
    uid: u64,
    /// How many tables, first in `tables`, are the built-in ones (0 when there are none): their
    /// constant handles carry [`BUILTIN_SCHEMA`] rather than `uid`.
    builtin_tables: usize,
    tables: Vec<TableDef>,
}

impl fmt::Debug for StoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreBuilder")
            .field(
                "tables",
                &self.tables.iter().map(|t| &*t.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for StoreBuilder {
    fn default() -> Self {
        StoreBuilder::new()
    }
}

impl StoreBuilder {
    /// A builder with no tables at all (use [`Store::builder`] to start from the built-in ones).
    ///
    /// ```
    /// let store = capstore::store::StoreBuilder::new().build();
    /// assert_eq!(store.snapshot().table_names().count(), 0);
    /// ```
    pub fn new() -> Self {
        StoreBuilder {
            uid: NEXT_SCHEMA_UID.fetch_add(1, Ordering::Relaxed),
            builtin_tables: 0,
            tables: Vec::new(),
        }
    }

    /// Declares a table and returns its typed handle. The declaration is checked now: table and
    /// index names, duplicate names, the text index's BM25 parameters.
    ///
    /// ```
    /// use capstore::store::{SchemaError, StoreBuilder, TableSchema};
    /// let mut builder = StoreBuilder::new();
    /// builder.table(TableSchema::new("notes", |n: &String| n.clone()))?;
    /// let err = builder.table(TableSchema::new("notes", |n: &String| n.clone())).unwrap_err();
    /// assert_eq!(err, SchemaError::DuplicateTable { table: "notes".into() });
    /// # Ok::<(), SchemaError>(())
    /// ```
    pub fn table<R: Record>(&mut self, schema: TableSchema<R>) -> Result<Table<R>, SchemaError> {
        if self.tables.iter().any(|t| *t.name == *schema.name()) {
            return Err(SchemaError::DuplicateTable {
                table: schema.name().to_string(),
            });
        }
        if let Some((parent, uid)) = schema.parent() {
            // A handle of this builder's, or a built-in table's in a builder that has them.
            let ours = uid == self.uid || (uid == BUILTIN_SCHEMA && parent < self.builtin_tables);
            if !ours || parent >= self.tables.len() {
                return Err(SchemaError::UnknownParent {
                    table: schema.name().to_string(),
                });
            }
        }
        let def = schema.into_def()?;
        self.tables.push(def);
        Ok(Table::new(self.tables.len() - 1, self.uid))
    }

    /// A builder whose first `count` tables are the built-in ones, declared by `declare`; they
    /// must come first so their constant handles fit. The caller (`crate::tables`) names the
    /// built-in tables: the store only counts them.
    pub(crate) fn with_builtins(
        count: usize,
        declare: impl FnOnce(&mut StoreBuilder) -> Result<(), SchemaError>,
    ) -> Result<StoreBuilder, SchemaError> {
        let mut builder = StoreBuilder::new();
        // Set first: a built-in table may follow another by its constant handle.
        builder.builtin_tables = count;
        declare(&mut builder)?;
        Ok(builder)
    }

    /// Builds an empty store (version 0) with the declared tables.
    ///
    /// ```
    /// let store = capstore::Store::builder().build();
    /// assert_eq!(store.snapshot().version(), 0);
    /// ```
    pub fn build(self) -> Store {
        // One state per declared table, in the same order: handles index both by position.
        let tables: Vec<TableState> = self.tables.iter().map(TableState::new).collect();
        let notifier = Arc::new(Notifier::new(tables.len()));
        let schema = Arc::new(Schema {
            uid: self.uid,
            builtin_tables: self.builtin_tables,
            tables: self.tables,
        });
        let snapshot = Snapshot {
            version: 0,
            schema,
            tables,
        };
        Store {
            inner: Arc::new(StoreInner {
                current: ArcSwap::from_pointee(snapshot),
                writer: Arc::new(Mutex::new(())),
                notifier,
                txns: AtomicU64::new(0),
            }),
        }
    }
}

pub(crate) struct StoreInner {
    pub current: ArcSwap<Snapshot>,
    writer: Arc<Mutex<()>>,
    pub notifier: Arc<Notifier>,
    txns: AtomicU64,
}

impl StoreInner {
    /// A number unique to each write transaction of this store, for savepoint checks.
    pub fn next_txn_id(&self) -> u64 {
        self.txns.fetch_add(1, Ordering::Relaxed)
    }
}

/// A handle to one store: cheap to clone, `Send + Sync`, shared by every thread of an agent.
///
/// [`Store::new`] gives a store with the built-in tables (`tools`, `skills`, `hooks`, and the
/// `handlers` and `hook_handlers` that hold executable code)
/// ([`TOOLS`](crate::TOOLS), [`SKILLS`](crate::SKILLS), [`HOOKS`](crate::HOOKS)).
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
///
/// let store = Store::new();
/// let reader = store.clone();
/// let handle = std::thread::spawn(move || reader.snapshot().count(&TOOLS));
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// assert!(handle.join().expect("reader thread").is_ok());
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("snapshot", &*self.inner.current.load())
            .finish()
    }
}

impl Store {
    /// The latest committed snapshot. Lock-free; never blocks, never blocks a writer.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(store.snapshot().version(), store.version());
    /// ```
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.current.load_full()
    }

    /// The latest committed version.
    ///
    /// ```
    /// assert_eq!(capstore::Store::new().version(), 0);
    /// ```
    pub fn version(&self) -> u64 {
        self.inner.current.load().version
    }

    /// Starts a write transaction, waiting while another one is open.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("a", "b"))?;
    /// tx.commit();
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn begin(&self) -> WriteTxn {
        let guard = self.inner.writer.lock_arc();
        WriteTxn::new(guard, Arc::clone(&self.inner))
    }

    /// Starts a write transaction if no other one is open, without waiting.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// let tx = store.begin();
    /// assert!(store.try_begin().is_none());
    /// drop(tx);
    /// assert!(store.try_begin().is_some());
    /// ```
    pub fn try_begin(&self) -> Option<WriteTxn> {
        let guard = self.inner.writer.try_lock_arc()?;
        Some(WriteTxn::new(guard, Arc::clone(&self.inner)))
    }

    /// Runs `f` in a transaction and commits if it returns `Ok`; on `Err` nothing is published
    /// and the error is returned.
    ///
    /// ```
    /// use capstore::{Store, StoreError, Tool, TOOLS};
    /// let store = Store::new();
    /// let result = store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("a", "b"))?;
    ///     tx.insert(&TOOLS, Tool::new("a", "again")) // fails: the whole transaction is dropped
    /// });
    /// assert!(matches!(result, Err(StoreError::DuplicateKey { .. })));
    /// assert_eq!(store.snapshot().count(&TOOLS)?, 0);
    /// # Ok::<(), StoreError>(())
    /// ```
    pub fn write<T, E>(
        &self,
        f: impl FnOnce(&mut WriteTxn) -> Result<T, E>,
    ) -> Result<CommitInfo, E> {
        let mut tx = self.begin();
        f(&mut tx)?;
        Ok(tx.commit())
    }

    /// Looks up a table's handle by name and record type.
    ///
    /// ```
    /// use capstore::{Store, Tool};
    /// let store = Store::new();
    /// let tools = store.table::<Tool>("tools")?;
    /// assert_eq!(store.snapshot().count(&tools)?, 0);
    /// assert!(store.table::<String>("tools").is_err());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn table<R: Record>(&self, name: &str) -> Result<Table<R>, StoreError> {
        let snapshot = self.inner.current.load();
        let schema = &snapshot.schema;
        let id = schema
            .tables
            .iter()
            .position(|t| &*t.name == name)
            .ok_or_else(|| StoreError::UnknownTable {
                table: name.to_string(),
            })?;
        let uid = if id < schema.builtin_tables {
            BUILTIN_SCHEMA
        } else {
            schema.uid
        };
        let table = Table::new(id, uid);
        schema.check(&table)?;
        Ok(table)
    }

    /// Calls `callback` with every commit's change set, in version order, on the committing
    /// thread (while it still holds the writer lock: keep callbacks quick, and do not write to
    /// the store from one). A callback that panics is caught and counted
    /// ([`listener_panics`](Self::listener_panics)); the commit is not affected.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let versions = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&versions);
    /// let _sub = store.subscribe(move |changes| log.lock().unwrap().push(changes.version));
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// store.write(|tx| tx.delete(&TOOLS, "a").map(|_| ()))?;
    /// assert_eq!(*versions.lock().unwrap(), [1, 2]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn subscribe(&self, callback: impl Fn(&ChangeSet) + Send + Sync + 'static) -> Subscription {
        let id = self.inner.notifier.subscribe(Arc::new(callback));
        Subscription {
            id,
            notifier: Arc::downgrade(&self.inner.notifier),
        }
    }

    /// How many callbacks are subscribed.
    ///
    /// ```
    /// assert_eq!(capstore::Store::new().subscriber_count(), 0);
    /// ```
    pub fn subscriber_count(&self) -> usize {
        self.inner.notifier.subscriber_count()
    }

    /// How many times a callback or watcher panicked (each panic was caught).
    ///
    /// ```
    /// assert_eq!(capstore::Store::new().listener_panics(), 0);
    /// ```
    pub fn listener_panics(&self) -> u64 {
        self.inner.notifier.listener_panics()
    }

    /// An async receiver of every change set committed from now on. A receiver more than 1,024
    /// commits behind gets `RecvError::Lagged` and resumes from the oldest kept.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut rx = store.changes();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// assert_eq!(rx.recv().await?.version, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn changes(&self) -> broadcast::Receiver<Arc<ChangeSet>> {
        self.inner.notifier.changes()
    }

    /// A `tokio::sync::watch` receiver of the latest committed version.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(*store.versions().borrow(), 0);
    /// ```
    pub fn versions(&self) -> tokio_watch::Receiver<u64> {
        self.inner.notifier.versions()
    }

    /// A `tokio::sync::watch` receiver of the version at which the table behind `table` last
    /// changed ([`Snapshot::table_version`]): it wakes only for commits that change that
    /// table, so a follower of the tools is not woken by a turn's learning. Errors: a handle of
    /// another store.
    ///
    /// ```
    /// use capstore::usage::{TurnUse, learn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tools = store.table_versions(&TOOLS)?;
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
    /// assert!(tools.has_changed().unwrap_or(false));
    /// assert_eq!(*tools.borrow_and_update(), 1);
    /// store.write(|tx| learn(tx, &TurnUse::new(["cd"])))?;
    /// assert!(!tools.has_changed().unwrap_or(true), "a usage write does not wake it");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn table_versions<R: Record>(
        &self,
        table: &Table<R>,
    ) -> Result<tokio_watch::Receiver<u64>, StoreError> {
        let snapshot = self.inner.current.load();
        snapshot.schema.check(table)?;
        self.inner
            .notifier
            .table_versions(table.id)
            .ok_or_else(|| StoreError::TableMismatch {
                table: format!("#{}", table.id),
                reason: "this store has no table at that position".to_string(),
            })
    }

    /// Waits (async) until the store's version is at least `version`, then returns the latest
    /// snapshot.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), capstore::StoreError> {
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let writer = store.clone();
    /// std::thread::spawn(move || writer.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b"))));
    /// let snap = store.wait_for_version(1).await;
    /// assert!(snap.version() >= 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_for_version(&self, version: u64) -> Arc<Snapshot> {
        let mut versions = self.versions();
        // The sender lives as long as `self`, so `wait_for` cannot fail while we hold `self`;
        // if it ever did, the latest snapshot is still the right answer to return.
        let _ = versions.wait_for(|v| *v >= version).await;
        self.snapshot()
    }

    /// Watches a set of query interests, relative to the snapshot version the caller read them
    /// at: if a commit after `since_version` may have changed them, the watcher fires (at once,
    /// if that commit already happened). Unknown index names are an error. Only commits that
    /// change a watched table count: a watch on `tools` read at version 1 does not fire for
    /// usage written at version 2, whenever it is registered ([`Snapshot::table_version`]).
    ///
    /// ```
    /// use capstore::usage::{TurnUse, learn};
    /// use capstore::{Store, Tool, TOOLS, WatchSet};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
    /// let seen = store.snapshot();
    /// store.write(|tx| learn(tx, &TurnUse::new(["cd"])))?;
    /// let w = store.watch(&WatchSet::new().table(&TOOLS), seen.version())?;
    /// assert!(!w.is_fired(), "the commit since was usage alone");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    ///
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS, WatchSet};
    /// let store = Store::new();
    /// let seen = store.snapshot();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// // Registered after the commit, but relative to the older snapshot: fires at once.
    /// let w = store.watch(&WatchSet::new().table(&TOOLS), seen.version())?;
    /// assert!(w.is_fired());
    /// assert!(store.watch(&WatchSet::new().index(&TOOLS, "nope", "x"), 0).is_err());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn watch(&self, set: &WatchSet, since_version: u64) -> Result<Watcher, StoreError> {
        let snapshot = self.snapshot();
        let interests = set.resolve(&snapshot.schema)?;
        let state = Arc::new(WatchState::new(interests));
        // A commit after `since_version` either offers its changes to the new watcher or was
        // published before it registered; in that case fire conservatively.
        let current = &self.inner.current;
        self.inner.notifier.add_watcher(&state, || {
            let now = current.load();
            now.version > since_version
                && state.tables().any(|id| {
                    now.tables
                        .get(id)
                        .is_some_and(|table| table.version > since_version)
                })
        });
        Ok(Watcher { state })
    }
}

#[cfg(test)]
mod attachment_tests;
#[cfg(test)]
mod bulk_tests;
#[cfg(test)]
mod tests;
