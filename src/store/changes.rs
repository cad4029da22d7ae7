//! What a commit changed: one entry per (table, key), with the record before and after.

use std::sync::Arc;

use imbl::hashmap::Entry;

use super::schema::{Record, Row, Table, TableDef};

/// How a record changed in one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The key was absent before the commit and present after.
    Inserted,
    /// The key was present before and after; the record was replaced.
    Updated,
    /// The key was present before and absent after.
    Deleted,
}

/// One record's change in one commit. Several writes to one key inside a transaction fold into
/// one change (insert then delete: no change at all).
///
/// ```
/// use capstore::{ChangeKind, Store, Tool, TOOLS};
/// let store = Store::new();
/// let info = store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first")))?;
/// let change = &info.changes.changes[0];
/// assert_eq!((&*change.table, &*change.key, change.kind), ("tools", "a", ChangeKind::Inserted));
/// assert_eq!(change.after(&TOOLS).map(|t| t.description.as_str()), Some("first"));
/// assert!(change.before(&TOOLS).is_none());
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Clone)]
pub struct Change {
    /// The table's name.
    pub table: Arc<str>,
    pub(crate) table_id: usize,
    /// The record's primary key.
    pub key: Arc<str>,
    /// Inserted, updated or deleted.
    pub kind: ChangeKind,
    pub(crate) before: Option<Row>,
    pub(crate) after: Option<Row>,
}

impl Change {
    /// Whether this change is to the table behind `table`.
    ///
    /// ```
    /// use capstore::{Store, Tool, SKILLS, TOOLS};
    /// let store = Store::new();
    /// let info = store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// assert!(info.changes.changes[0].is(&TOOLS) && !info.changes.changes[0].is(&SKILLS));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn is<R: Record>(&self, table: &Table<R>) -> bool {
        self.table_id == table.id && self.before_or_after_is::<R>()
    }

    fn before_or_after_is<R: Record>(&self) -> bool {
        self.before
            .as_ref()
            .or(self.after.as_ref())
            .is_some_and(|row| row.is::<R>())
    }

    /// The record before the commit, when this change is to `table` and the key existed.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "old")))?;
    /// let info = store.write(|tx| tx.upsert(&TOOLS, Tool::new("a", "new")))?;
    /// assert_eq!(info.changes.changes[0].before(&TOOLS).map(|t| t.description.as_str()), Some("old"));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn before<R: Record>(&self, table: &Table<R>) -> Option<&R> {
        if self.table_id != table.id {
            return None;
        }
        self.before.as_ref()?.downcast_ref::<R>()
    }

    /// The record after the commit, when this change is to `table` and the key still exists.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "old")))?;
    /// let info = store.write(|tx| tx.delete(&TOOLS, "a").map(|_| ()))?;
    /// assert!(info.changes.changes[0].after(&TOOLS).is_none());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn after<R: Record>(&self, table: &Table<R>) -> Option<&R> {
        if self.table_id != table.id {
            return None;
        }
        self.after.as_ref()?.downcast_ref::<R>()
    }
}

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Change")
            .field("table", &self.table)
            .field("key", &self.key)
            .field("kind", &self.kind)
            .finish()
    }
}

/// Everything one commit changed, in the order the transaction first touched each key.
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// let info = store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("b", "x"))?;
///     tx.insert(&TOOLS, Tool::new("a", "y"))
/// })?;
/// assert_eq!(info.changes.version, 1);
/// let keys: Vec<&str> = info.changes.changes.iter().map(|c| &*c.key).collect();
/// assert_eq!(keys, ["b", "a"]);
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ChangeSet {
    /// The version the commit published.
    pub version: u64,
    /// The changes, one per (table, key).
    pub changes: Vec<Change>,
}

impl ChangeSet {
    /// Whether any change touches the table behind `table`.
    ///
    /// ```
    /// use capstore::{Store, Tool, SKILLS, TOOLS};
    /// let store = Store::new();
    /// let info = store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// assert!(info.changes.touches(&TOOLS) && !info.changes.touches(&SKILLS));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn touches<R: Record>(&self, table: &Table<R>) -> bool {
        self.changes.iter().any(|c| c.is(table))
    }

    /// Whether the commit changed nothing.
    ///
    /// ```
    /// assert!(capstore::ChangeSet::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// The changes a write transaction has made so far, folded per (table, key). Persistent, so a
/// savepoint's copy costs O(1).
#[derive(Default, Clone)]
pub(crate) struct PendingChanges {
    entries: imbl::Vector<Pending>,
    position: imbl::HashMap<(usize, Arc<str>), usize>,
}

#[derive(Clone)]
struct Pending {
    table_id: usize,
    key: Arc<str>,
    before: Option<Row>,
    after: Option<Row>,
}

impl PendingChanges {
    /// Records that `key` went from `before` to `after`; the first `before` seen is kept.
    pub fn record(
        &mut self,
        table_id: usize,
        key: Arc<str>,
        before: Option<Row>,
        after: Option<Row>,
    ) {
        match self.position.entry((table_id, Arc::clone(&key))) {
            Entry::Occupied(at) => {
                if let Some(entry) = self.entries.get_mut(*at.get()) {
                    entry.after = after;
                }
            }
            Entry::Vacant(slot) => {
                slot.insert(self.entries.len());
                self.entries.push_back(Pending {
                    table_id,
                    key,
                    before,
                    after,
                });
            }
        }
    }

    /// The net changes, dropping keys whose writes cancelled out.
    pub fn into_change_set(self, version: u64, tables: &[TableDef]) -> ChangeSet {
        let changes = self
            .entries
            .into_iter()
            .filter_map(|e| {
                let kind = e.kind()?;
                Some(Change {
                    table: tables
                        .get(e.table_id)
                        .map_or_else(|| Arc::from(""), |t| t.name.clone()),
                    table_id: e.table_id,
                    key: e.key,
                    kind,
                    before: e.before,
                    after: e.after,
                })
            })
            .collect();
        ChangeSet { version, changes }
    }
}

impl Pending {
    fn kind(&self) -> Option<ChangeKind> {
        match (&self.before, &self.after) {
            (None, None) => None,
            (None, Some(_)) => Some(ChangeKind::Inserted),
            // Writing back the very record that was there is no change.
            (Some(b), Some(a)) if Arc::ptr_eq(b, a) => None,
            (Some(_), Some(_)) => Some(ChangeKind::Updated),
            (Some(_), None) => Some(ChangeKind::Deleted),
        }
    }
}
