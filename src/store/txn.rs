//! Write transactions: one at a time, isolated until commit, atomic on commit.

use std::fmt;
use std::sync::Arc;

use parking_lot::RawMutex;
use parking_lot::lock_api::ArcMutexGuard;

use super::StoreInner;
use super::changes::{ChangeSet, PendingChanges};
use super::error::StoreError;
use super::schema::{FollowOn, Record, Row, Table};
use super::snapshot::Snapshot;

/// What a commit published.
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// let info = store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// assert_eq!(info.version, 1);
/// assert_eq!(info.changes.changes.len(), 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CommitInfo {
    /// The version of the published snapshot (unchanged when the commit changed nothing).
    pub version: u64,
    /// What changed; empty when nothing did.
    pub changes: Arc<ChangeSet>,
}

/// A write transaction: the only writer while it lives.
///
/// It starts from the latest snapshot, sees its own writes (through [`view`](Self::view)), and
/// publishes them all at once, as version + 1, on [`commit`](Self::commit). Dropping it, or
/// calling [`abort`](Self::abort), discards everything and publishes nothing. Each write either
/// happens whole or returns an error and leaves the transaction as it was, so after an error
/// you may go on, abort or commit the writes that did succeed.
///
/// Begin blocks while another transaction is open; readers are never blocked. Keep transactions
/// short, and do not begin a second one on the same thread while holding one (it would wait for
/// itself).
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
///
/// let store = Store::new();
/// let mut tx = store.begin();
/// tx.insert(&TOOLS, Tool::new("read_file", "Read a file").with_tags(["fs"]))?;
/// assert_eq!(tx.view().count(&TOOLS)?, 1);     // the transaction sees its write
/// assert_eq!(store.snapshot().count(&TOOLS)?, 0); // nobody else does yet
/// let info = tx.commit();
/// assert_eq!((info.version, store.snapshot().count(&TOOLS)?), (1, 1));
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub struct WriteTxn {
    _writer: ArcMutexGuard<RawMutex, ()>,
    txn_id: u64,
    store: Arc<StoreInner>,
    pub(super) working: Snapshot,
    pub(super) pending: PendingChanges,
}

impl fmt::Debug for WriteTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteTxn")
            .field("base_version", &self.working.version)
            .finish()
    }
}

impl WriteTxn {
    pub(crate) fn new(writer: ArcMutexGuard<RawMutex, ()>, store: Arc<StoreInner>) -> Self {
        let working = (*store.current.load_full()).clone();
        let txn_id = store.next_txn_id();
        WriteTxn {
            _writer: writer,
            txn_id,
            store,
            working,
            pending: PendingChanges::default(),
        }
    }

    /// The store as this transaction sees it: the snapshot it started from plus its own writes.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("a", "b"))?;
    /// assert!(tx.view().get(&TOOLS, "a")?.is_some());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn view(&self) -> &Snapshot {
        &self.working
    }

    /// The version this transaction started from.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(store.begin().base_version(), 0);
    /// ```
    pub fn base_version(&self) -> u64 {
        self.working.version
    }

    /// Adds a record; fails with [`StoreError::DuplicateKey`] if its key is taken. Returns the key.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// assert_eq!(&*tx.insert(&TOOLS, Tool::new("search", "Search").with_source("web"))?, "web/search");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn insert<R: Record>(
        &mut self,
        table: &Table<R>,
        record: R,
    ) -> Result<Arc<str>, StoreError> {
        self.write(table, record, Mode::Insert).map(|(key, _)| key)
    }

    /// Replaces the record under the same key; fails with [`StoreError::NotFound`] if there is
    /// none. Returns the record it replaced.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "old")))?;
    /// let mut tx = store.begin();
    /// let old = tx.update(&TOOLS, Tool::new("a", "new"))?;
    /// assert_eq!(old.description, "old");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn update<R: Record>(&mut self, table: &Table<R>, record: R) -> Result<Arc<R>, StoreError> {
        let (key, old) = self.write(table, record, Mode::Update)?;
        let old = old.and_then(|row| row.downcast::<R>().ok());
        old.ok_or_else(|| StoreError::NotFound {
            table: self.table_name(table.id),
            key,
        })
    }

    /// Inserts or replaces. Returns the replaced record, if any.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// assert!(tx.upsert(&TOOLS, Tool::new("a", "one"))?.is_none());
    /// assert!(tx.upsert(&TOOLS, Tool::new("a", "two"))?.is_some());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn upsert<R: Record>(
        &mut self,
        table: &Table<R>,
        record: R,
    ) -> Result<Option<Arc<R>>, StoreError> {
        let (_, old) = self.write(table, record, Mode::Upsert)?;
        Ok(old.and_then(|row| row.downcast::<R>().ok()))
    }

    /// Removes the record under `key`; fails with [`StoreError::NotFound`] if there is none.
    /// Returns the removed record.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS, StoreError};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// let mut tx = store.begin();
    /// assert_eq!(tx.delete(&TOOLS, "a")?.name, "a");
    /// assert!(matches!(tx.delete(&TOOLS, "a"), Err(StoreError::NotFound { .. })));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn delete<R: Record>(&mut self, table: &Table<R>, key: &str) -> Result<Arc<R>, StoreError> {
        let def = self.working.schema.check(table)?;
        let name = def.name.clone();
        let removed = {
            let schema = Arc::clone(&self.working.schema);
            let def = &schema.tables[table.id];
            self.working.tables[table.id].remove(def, key)
        };
        let Some(old) = removed else {
            return Err(StoreError::NotFound {
                table: name,
                key: Arc::from(key),
            });
        };
        let key: Arc<str> = Arc::from(key);
        self.pending
            .record(table.id, Arc::clone(&key), Some(Arc::clone(&old)), None);
        self.remove_followers(table.id, &key, FollowOn::Removals);
        // The row was written through a handle of type R (checked above), so this succeeds.
        old.downcast::<R>()
            .map_err(|_| StoreError::NotFound { table: name, key })
    }

    /// Publishes every write as one new snapshot (version + 1) and tells subscribers, watchers
    /// and async listeners, in that order, before returning. A transaction that changed nothing
    /// publishes nothing and keeps the version.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(store.begin().commit().version, 0); // nothing written, nothing published
    /// ```
    pub fn commit(self) -> CommitInfo {
        let WriteTxn {
            _writer,
            txn_id: _,
            store,
            mut working,
            pending,
        } = self;
        // One pass: the net changes, or none if every write cancelled out.
        let changes = pending.into_change_set(working.version + 1, &working.schema.tables);
        if changes.is_empty() {
            return CommitInfo {
                version: working.version,
                changes: Arc::new(ChangeSet {
                    version: working.version,
                    changes: Vec::new(),
                }),
            };
        }
        working.version += 1;
        let version = working.version;
        // The tables the change set touches, each once: they move to the new version.
        let mut changed: Vec<usize> = Vec::new();
        for change in &changes.changes {
            if !changed.contains(&change.table_id)
                && let Some(table) = working.tables.get_mut(change.table_id)
            {
                table.version = version;
                changed.push(change.table_id);
            }
        }
        // The writer lock is held, so the published snapshot is this transaction's base.
        let base = store.current.load();
        for (table, before) in working.tables.iter_mut().zip(&base.tables) {
            table.settle_bulk_load(before);
        }
        let changes = Arc::new(changes);
        let schema = Arc::clone(&working.schema);
        store.current.store(Arc::new(working));
        // Still holding the writer lock: listeners see commits in version order.
        store
            .notifier
            .publish(&schema, Arc::clone(&changes), &changed);
        CommitInfo { version, changes }
    }

    /// Marks the transaction's current state, to [roll back to](Self::rollback_to) later: a
    /// way to make a group of writes all-or-nothing inside a larger transaction. O(1).
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("keep", "x"))?;
    /// let mark = tx.savepoint();
    /// tx.insert(&TOOLS, Tool::new("drop", "x"))?;
    /// tx.rollback_to(mark)?;
    /// assert_eq!(tx.view().count(&TOOLS)?, 1);
    /// assert_eq!(tx.commit().changes.changes.len(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            txn_id: self.txn_id,
            store: Arc::clone(&self.store),
            working: self.working.clone(),
            pending: self.pending.clone(),
        }
    }

    /// Returns the transaction to the state it had at `savepoint`, undoing every write since.
    /// A savepoint made by another transaction is refused with
    /// [`StoreError::ForeignSavepoint`] and changes nothing.
    ///
    /// ```
    /// use capstore::{Store, StoreError};
    /// let (a, b) = (Store::new(), Store::new());
    /// let mark = a.begin().savepoint();
    /// assert_eq!(b.begin().rollback_to(mark), Err(StoreError::ForeignSavepoint));
    /// ```
    pub fn rollback_to(&mut self, savepoint: Savepoint) -> Result<(), StoreError> {
        if savepoint.txn_id != self.txn_id || !Arc::ptr_eq(&savepoint.store, &self.store) {
            return Err(StoreError::ForeignSavepoint);
        }
        self.working = savepoint.working;
        self.pending = savepoint.pending;
        Ok(())
    }

    /// Runs `f` on this transaction as one unit: if it returns `Err`, every write it made is
    /// undone (through a [savepoint](Self::savepoint)) and the error returned; the writes made
    /// before the call stay.
    ///
    /// ```
    /// use capstore::{Store, StoreError, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("kept", ""))?;
    /// let failed: Result<(), StoreError> = tx.all_or_nothing(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("undone", ""))?;
    ///     tx.insert(&TOOLS, Tool::new("kept", "")).map(|_| ()) // duplicate: the group fails
    /// });
    /// assert!(failed.is_err());
    /// assert_eq!(tx.view().count(&TOOLS)?, 1);
    /// # Ok::<(), StoreError>(())
    /// ```
    pub fn all_or_nothing<T, E: From<StoreError>>(
        &mut self,
        f: impl FnOnce(&mut WriteTxn) -> Result<T, E>,
    ) -> Result<T, E> {
        let mark = self.savepoint();
        let result = f(self);
        if result.is_err() {
            self.rollback_to(mark)?;
        }
        result
    }

    /// Discards every write. Same as dropping the transaction.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// let mut tx = store.begin();
    /// tx.insert(&TOOLS, Tool::new("a", "b"))?;
    /// tx.abort();
    /// assert_eq!(store.snapshot().count(&TOOLS)?, 0);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn abort(self) {}

    pub(super) fn table_name(&self, id: usize) -> Arc<str> {
        self.working
            .schema
            .tables
            .get(id)
            .map(|t| t.name.clone())
            .unwrap_or_else(|| Arc::from(""))
    }

    fn write<R: Record>(
        &mut self,
        table: &Table<R>,
        record: R,
        mode: Mode,
    ) -> Result<(Arc<str>, Option<Row>), StoreError> {
        let schema = Arc::clone(&self.working.schema);
        let def = schema.check(table)?;
        let prepared = self.working.tables[table.id].prepare(def, Arc::new(record))?;
        if let Some((parent, FollowOn::Belongs)) = def.follows
            && !self.working.tables[parent].rows.contains_key(&prepared.key)
        {
            return Err(StoreError::NoParent {
                table: def.name.clone(),
                key: prepared.key,
                parent: schema.tables[parent].name.clone(),
            });
        }
        let state = &mut self.working.tables[table.id];
        let exists = state.rows.contains_key(&prepared.key);
        match (mode, exists) {
            (Mode::Insert, true) => {
                return Err(StoreError::DuplicateKey {
                    table: def.name.clone(),
                    key: prepared.key,
                });
            }
            (Mode::Update, false) => {
                return Err(StoreError::NotFound {
                    table: def.name.clone(),
                    key: prepared.key,
                });
            }
            _ => {}
        }
        let key = prepared.key.clone();
        let row = Arc::clone(&prepared.row);
        let old = state.put(def, prepared);
        self.pending
            .record(table.id, key.clone(), old.clone(), Some(row));
        self.remove_followers(table.id, &key, FollowOn::Writes);
        Ok((key, old))
    }

    /// Deletes the rows keyed `key` of the tables that follow table `parent`
    /// ([`TableSchema::follows`](super::TableSchema::follows)) on what just happened to the
    /// parent row: `Writes` for an insert or replace (which leaves the tables that follow only
    /// removals), `Removals` for a deletion (which every follower follows).
    pub(super) fn remove_followers(&mut self, parent: usize, key: &Arc<str>, event: FollowOn) {
        let schema = Arc::clone(&self.working.schema);
        for (id, def) in schema.tables.iter().enumerate() {
            let follows = match def.follows {
                Some((of, on)) => {
                    of == parent && (event == FollowOn::Removals || on == FollowOn::Writes)
                }
                None => false,
            };
            if follows && let Some(old) = self.working.tables[id].remove(def, key) {
                self.pending.record(id, Arc::clone(key), Some(old), None);
            }
        }
    }
}

/// A mark in a write transaction's history, made by [`WriteTxn::savepoint`]. Use it only with
/// the transaction that made it: it holds that transaction's whole state at the time.
pub struct Savepoint {
    txn_id: u64,
    store: Arc<StoreInner>,
    working: Snapshot,
    pending: PendingChanges,
}

impl fmt::Debug for Savepoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Savepoint").finish_non_exhaustive()
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Insert,
    Update,
    Upsert,
}
