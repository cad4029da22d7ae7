//! Immutable, versioned views of every table, and the queries they answer.

use std::any::TypeId;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::Arc;

use crate::bm25::{Bm25Index, Explanation};

use super::error::StoreError;
use super::schema::{BUILTIN_SCHEMA, Index, Record, Row, Table, TableDef};
use super::table::TableState;

/// The declared tables of one store, shared by all its snapshots.
pub(crate) struct Schema {
    /// Distinguishes stores built from different builders, so a user table's handle cannot be
    /// used on another store by mistake.
    pub uid: u64,
    /// How many tables, first in `tables`, are the built-in ones (0 when there are none).
    pub builtin_tables: usize,
    pub tables: Vec<TableDef>,
}

impl Schema {
    /// Checks that `table` belongs to this schema and holds records of type `R`. Inlined, the
    /// errors kept out of line: a selection checks table handles a few dozen times, and as
    /// calls the checks cost 0.9% of a select's instructions on a store with skills.
    #[inline]
    pub fn check<R: Record>(&self, table: &Table<R>) -> Result<&TableDef, StoreError> {
        let def = self.check_erased(table.id, table.schema)?;
        if def.type_id == TypeId::of::<R>() {
            return Ok(def);
        }
        Err(wrong_record_type::<R>(def))
    }

    /// Checks that a handle's position and schema id belong to this schema.
    #[inline]
    pub fn check_erased(&self, id: usize, schema: u64) -> Result<&TableDef, StoreError> {
        let belongs = if schema == BUILTIN_SCHEMA {
            self.builtin_tables > 0
        } else {
            schema == self.uid
        };
        match self.tables.get(id) {
            Some(def) if belongs => Ok(def),
            found => Err(foreign_handle(id, found)),
        }
    }
}

/// [`Schema::check`]'s error: the handle is for records of another type than the table's.
#[cold]
#[inline(never)]
fn wrong_record_type<R>(def: &TableDef) -> StoreError {
    StoreError::TableMismatch {
        table: def.name.to_string(),
        reason: format!(
            "the handle is for records of type `{}`; this store holds `{}` there",
            std::any::type_name::<R>(),
            def.type_name
        ),
    }
}

/// [`Schema::check_erased`]'s error: the handle comes from another schema (`found` is the
/// table at its position here, if any).
#[cold]
#[inline(never)]
fn foreign_handle(id: usize, found: Option<&TableDef>) -> StoreError {
    match found {
        Some(def) => StoreError::TableMismatch {
            table: def.name.to_string(),
            reason: "the handle comes from another store's schema".to_string(),
        },
        None => StoreError::TableMismatch {
            table: format!("#{id}"),
            reason: "this store has no table at that position".to_string(),
        },
    }
}

/// One consistent, immutable version of every table, its indexes and its BM25 index.
///
/// Take one with [`Store::snapshot`](super::Store::snapshot): it costs one atomic load and an
/// `Arc` clone, never blocks and is never blocked. It stays valid, and unchanged, for as long as
/// you hold it, whatever is committed later. Inside a write transaction,
/// [`WriteTxn::view`](super::WriteTxn::view) gives a snapshot that shows the transaction's own
/// uncommitted writes.
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
///
/// let store = Store::new();
/// let before = store.snapshot();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("read_file", "Read a file from disk")))?;
/// let after = store.snapshot();
/// assert_eq!((before.version(), before.count(&TOOLS)?), (0, 0));
/// assert_eq!((after.version(), after.count(&TOOLS)?), (1, 1));
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Clone)]
pub struct Snapshot {
    pub(crate) version: u64,
    pub(crate) schema: Arc<Schema>,
    pub(crate) tables: Vec<TableState>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        map.entry(&"version", &self.version);
        for (def, state) in self.schema.tables.iter().zip(&self.tables) {
            map.entry(&&*def.name, &state.rows.len());
        }
        map.finish()
    }
}

/// A record found by a full-text search, with its BM25 score.
#[derive(Debug)]
pub struct Scored<'s, R> {
    /// The record's primary key.
    pub key: Arc<str>,
    /// The BM25 score (higher is more relevant; never NaN).
    pub score: f32,
    /// The record.
    pub record: &'s R,
}

/// The values of one index with how many records carry each, in value order.
pub type IndexValues<'s> = Box<dyn Iterator<Item = (&'s Arc<str>, usize)> + 's>;

/// Records of one table in primary-key order, as returned by the snapshot's queries.
///
/// Each item is `(primary key, record)`.
pub struct Rows<'s, R> {
    inner: Box<dyn Iterator<Item = (&'s Arc<str>, &'s Row)> + 's>,
    _record: PhantomData<fn() -> R>,
}

impl<'s, R: Record> Rows<'s, R> {
    fn new(inner: impl Iterator<Item = (&'s Arc<str>, &'s Row)> + 's) -> Self {
        Rows {
            inner: Box::new(inner),
            _record: PhantomData,
        }
    }

    /// Only the records, without their keys.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first")))?;
    /// let names: Vec<String> = store.snapshot().iter(&TOOLS)?.records().map(|t| t.name.clone()).collect();
    /// assert_eq!(names, ["a"]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn records(self) -> impl Iterator<Item = &'s R> + 's {
        self.map(|(_, r)| r)
    }

    /// Only the primary keys.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first").with_source("fs")))?;
    /// let snap = store.snapshot();
    /// let keys: Vec<&str> = snap.iter(&TOOLS)?.keys().map(|k| &**k).collect();
    /// assert_eq!(keys, ["fs/a"]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn keys(self) -> impl Iterator<Item = &'s Arc<str>> + 's {
        self.map(|(k, _)| k)
    }

    /// The primary keys as a [`KeyList`], which prints them comma-separated: the rows of a
    /// look-up, ready to show.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS, TOOLS_BY_SOURCE};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("read", "Read a file").with_source("fs"))?;
    ///     tx.insert(&TOOLS, Tool::new("write", "Write a file").with_source("fs"))
    /// })?;
    /// let snap = store.snapshot();
    /// let keys = snap.by(&TOOLS_BY_SOURCE, "fs")?.key_list();
    /// assert_eq!(keys.to_string(), "fs/read, fs/write");
    /// assert_eq!(keys.len(), 2);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn key_list(self) -> KeyList<'s> {
        KeyList(self.keys().map(|key| &**key).collect())
    }
}

/// Keys borrowed from a snapshot, in order: a look-up's primary keys ([`Rows::key_list`]), a
/// dependency closure's tools ([`Closure::tools`](crate::skills::Closure::tools)). `Display`
/// prints them comma-separated (nothing for none); it derefs to the slice of keys.
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("ping", "Ping a host")))?;
/// let snap = store.snapshot();
/// let keys = snap.iter(&TOOLS)?.key_list();
/// assert_eq!((keys.to_string(), keys[0]), ("ping".to_string(), "ping"));
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyList<'s>(Vec<&'s str>);

impl<'s> From<Vec<&'s str>> for KeyList<'s> {
    fn from(keys: Vec<&'s str>) -> Self {
        KeyList(keys)
    }
}

impl<'s> std::ops::Deref for KeyList<'s> {
    type Target = [&'s str];

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::fmt::Display for KeyList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, key) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(key)?;
        }
        Ok(())
    }
}

impl<'s, R: Record> Iterator for Rows<'s, R> {
    type Item = (&'s Arc<str>, &'s R);

    fn next(&mut self) -> Option<Self::Item> {
        // Every row of the table was written through a handle of type `R` (checked by
        // `Schema::check`), so the downcast succeeds; a row that did not would be skipped.
        for (key, row) in self.inner.by_ref() {
            if let Some(record) = row.downcast_ref::<R>() {
                return Some((key, record));
            }
        }
        None
    }
}

/// A record of a snapshot with its stored key ([`Snapshot::entry`]).
pub(crate) struct Entry<'s, R> {
    /// The stored primary key.
    pub key: &'s Arc<str>,
    /// The record.
    pub record: &'s R,
    /// The row holding it (`record` is its content).
    row: &'s Row,
}

/// A table's rows in one snapshot, its handle checked: records of type `R` by primary key.
pub(crate) struct RowLookup<'s, R> {
    rows: &'s imbl::OrdMap<Arc<str>, Row>,
    /// The table's text index, if it has one: it keeps each row with the row's document (the
    /// table writes both together), and finds a document by key with a hash and one compare,
    /// where the rows' B-tree compares the key with a dozen others.
    text: Option<&'s Bm25Index>,
    record: PhantomData<fn() -> R>,
}

// Not derived: a derive would ask `R: Copy`.
impl<R> Clone for RowLookup<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for RowLookup<'_, R> {}

impl<'s, R: Record> RowLookup<'s, R> {
    /// The record under `key`, as [`Snapshot::entry`] finds it.
    pub fn entry(&self, key: &str) -> Option<Entry<'s, R>> {
        // Through the text index first (a skill's tools are looked up as they rank: on a
        // synthetic catalog of 100 tools the B-tree's key compares were a tenth of a
        // selection); a row is in the B-tree alone only if the index left its document out.
        if let Some((key, row)) = self.text.and_then(|text| text.attached(key)) {
            return Entry::of_row(key, row);
        }
        self.rows
            .get_key_value(key)
            .and_then(|(key, row)| Entry::of_row(key, row))
    }
}

impl<'s, R: Record> Entry<'s, R> {
    /// The entry of `row`, stored under `key`, if it holds an `R`. For a row reached without a
    /// look-up: the one a table's text index keeps with the record's document (a search hit's
    /// attachment), which is the row the table holds under that key in the same snapshot.
    pub fn of_row(key: &'s Arc<str>, row: &'s Row) -> Option<Self> {
        Some(Entry {
            key,
            record: row.downcast_ref::<R>()?,
            row,
        })
    }
}

// Not derived: a derive would ask `R: Copy`.
impl<R> Clone for Entry<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Entry<'_, R> {}

impl<R: Record> Entry<'_, R> {
    /// The record as a shared pointer that outlives the snapshot. Always `Some`: the entry was
    /// made only for a row of type `R`.
    pub fn shared(&self) -> Option<Arc<R>> {
        Arc::clone(self.row).downcast::<R>().ok()
    }
}

impl Snapshot {
    /// The version: 0 for an empty store, then one more for every commit that changed something.
    ///
    /// ```
    /// use capstore::Store;
    /// assert_eq!(Store::new().snapshot().version(), 0);
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The version at which the table behind `table` last changed: the version of the latest
    /// commit, up to this snapshot's, whose change set holds a change to it (0 if none has). A
    /// commit that changes other tables leaves it as it was, so a value computed from one
    /// table's rows stays right for as long as this number does: key a cache on it (the export
    /// names of [`ToolExport::cached`](crate::provider::ToolExport::cached) follow `tools`, and
    /// a turn's learning, which writes only `usage`, leaves them be). Never more than
    /// [`version`](Self::version).
    ///
    /// ```
    /// use capstore::usage::{TurnUse, learn};
    /// use capstore::{Store, Tool, TOOLS, USAGE};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs")))?;
    /// store.write(|tx| learn(tx, &TurnUse::new(["fs/cd"])))?;
    /// let snap = store.snapshot();
    /// assert_eq!(snap.version(), 2);
    /// assert_eq!(snap.table_version(&TOOLS)?, 1); // the usage write left the tools as they were
    /// assert_eq!(snap.table_version(&USAGE)?, 2);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn table_version<R: Record>(&self, table: &Table<R>) -> Result<u64, StoreError> {
        Ok(self.resolve(table)?.1.version)
    }

    /// The names of the tables, in declaration order.
    ///
    /// ```
    /// use capstore::Store;
    /// let snap = Store::new().snapshot();
    /// assert_eq!(
    ///     snap.table_names().collect::<Vec<_>>(),
    ///     ["tools", "skills", "hooks", "handlers", "hook_handlers", "vectors", "usage"]
    /// );
    /// ```
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.schema.tables.iter().map(|t| &*t.name)
    }

    /// The name of the table behind a handle.
    ///
    /// ```
    /// use capstore::{Store, TOOLS};
    /// assert_eq!(Store::new().snapshot().table_name(&TOOLS)?, "tools");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn table_name<R: Record>(&self, table: &Table<R>) -> Result<&str, StoreError> {
        Ok(&self.schema.check(table)?.name)
    }

    #[inline]
    pub(crate) fn resolve<R: Record>(
        &self,
        table: &Table<R>,
    ) -> Result<(&TableDef, &TableState), StoreError> {
        let def = self.schema.check(table)?;
        // `tables` and `schema.tables` always have the same length: both are built from the
        // schema and never resized.
        match self.tables.get(table.id) {
            Some(state) => Ok((def, state)),
            None => Err(StoreError::TableMismatch {
                table: def.name.to_string(),
                reason: "snapshot holds no state for this table".to_string(),
            }),
        }
    }

    /// The record under a primary key.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("search", "Search issues").with_source("github")))?;
    /// let snap = store.snapshot();
    /// assert_eq!(snap.get(&TOOLS, "github/search")?.map(|t| t.name.as_str()), Some("search"));
    /// assert!(snap.get(&TOOLS, "search")?.is_none());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn get<R: Record>(&self, table: &Table<R>, key: &str) -> Result<Option<&R>, StoreError> {
        let (_, state) = self.resolve(table)?;
        Ok(state.rows.get(key).and_then(|row| row.downcast_ref::<R>()))
    }

    /// The record under a primary key as a shared pointer that outlives the snapshot.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// let tool = store.snapshot().get_arc(&TOOLS, "a")?.expect("present");
    /// assert_eq!(tool.description, "b");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn get_arc<R: Record>(
        &self,
        table: &Table<R>,
        key: &str,
    ) -> Result<Option<Arc<R>>, StoreError> {
        let (_, state) = self.resolve(table)?;
        Ok(state
            .rows
            .get(key)
            .and_then(|row| Arc::clone(row).downcast::<R>().ok()))
    }

    /// One table's rows, checked once, for many [`RowLookup::entry`] lookups (a selection looks
    /// up a dozen tools, and checking the table handle each time was a fifth of a lookup).
    pub(crate) fn lookup<R: Record>(
        &self,
        table: &Table<R>,
    ) -> Result<RowLookup<'_, R>, StoreError> {
        let (_, state) = self.resolve(table)?;
        Ok(RowLookup {
            rows: &state.rows,
            text: state.text.as_ref(),
            record: PhantomData,
        })
    }

    /// The record under a primary key with its stored key and row, borrowed from the snapshot:
    /// a reader that gathers many records and keeps few (`ContextBuilder::select`) copies no
    /// key and bumps no count until it keeps one ([`Entry::shared`]).
    pub(crate) fn entry<R: Record>(
        &self,
        table: &Table<R>,
        key: &str,
    ) -> Result<Option<Entry<'_, R>>, StoreError> {
        Ok(self.lookup(table)?.entry(key))
    }

    /// Whether a record exists under a primary key.
    ///
    /// ```
    /// use capstore::{Store, TOOLS};
    /// assert!(!Store::new().snapshot().contains(&TOOLS, "a")?);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn contains<R: Record>(&self, table: &Table<R>, key: &str) -> Result<bool, StoreError> {
        Ok(self.resolve(table)?.1.rows.contains_key(key))
    }

    /// The number of records in a table. O(1).
    ///
    /// ```
    /// use capstore::{Store, HOOKS};
    /// assert_eq!(Store::new().snapshot().count(&HOOKS)?, 0);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn count<R: Record>(&self, table: &Table<R>) -> Result<usize, StoreError> {
        Ok(self.resolve(table)?.1.rows.len())
    }

    /// Every record of a table in primary-key order.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("b", "second"))?;
    ///     tx.insert(&TOOLS, Tool::new("a", "first"))
    /// })?;
    /// let keys: Vec<String> = store.snapshot().iter(&TOOLS)?.map(|(k, _)| k.to_string()).collect();
    /// assert_eq!(keys, ["a", "b"]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn iter<R: Record>(&self, table: &Table<R>) -> Result<Rows<'_, R>, StoreError> {
        let (_, state) = self.resolve(table)?;
        Ok(Rows::new(state.rows.iter()))
    }

    /// The records whose primary key starts with `prefix`, in key order.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("search", "Search code").with_source("github"))?;
    ///     tx.insert(&TOOLS, Tool::new("search", "Search pages").with_source("web"))
    /// })?;
    /// assert_eq!(store.snapshot().key_prefix(&TOOLS, "github/")?.count(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn key_prefix<'s, R: Record>(
        &'s self,
        table: &Table<R>,
        prefix: &'s str,
    ) -> Result<Rows<'s, R>, StoreError> {
        let (_, state) = self.resolve(table)?;
        let range = state
            .rows
            .range::<_, str>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix));
        Ok(Rows::new(range))
    }

    /// The records carrying `value` in the index named `index` (`"id"` is the primary key), in
    /// primary-key order.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("fetch", "Fetch a URL").with_tags(["web", "http"]))?;
    ///     tx.insert(&TOOLS, Tool::new("read_file", "Read a file").with_tags(["fs"]))
    /// })?;
    /// let snap = store.snapshot();
    /// let web: Vec<&str> = snap.by_index(&TOOLS, "tags", "web")?.map(|(_, t)| t.name.as_str()).collect();
    /// assert_eq!(web, ["fetch"]);
    /// assert!(snap.by_index(&TOOLS, "colour", "red").is_err());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn by_index<R: Record>(
        &self,
        table: &Table<R>,
        index: &str,
        value: &str,
    ) -> Result<Rows<'_, R>, StoreError> {
        let (def, state) = self.resolve(table)?;
        match def.index_position(index)? {
            None => Ok(Rows::new(state.rows.get_key_value(value).into_iter())),
            Some(i) => {
                let keys = state.indexes[i].get(value);
                let rows = &state.rows;
                Ok(Rows::new(
                    keys.into_iter()
                        .flat_map(|set| set.iter())
                        .filter_map(move |k| rows.get_key_value(k)),
                ))
            }
        }
    }

    /// The records carrying `value` in the index `index` names: [`by_index`](Self::by_index)
    /// with a typed handle.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS, TOOLS_BY_TAG};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("fetch", "Fetch a page").with_tags(["web"])))?;
    /// assert_eq!(store.snapshot().by(&TOOLS_BY_TAG, "web")?.count(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn by<R: Record>(&self, index: &Index<R>, value: &str) -> Result<Rows<'_, R>, StoreError> {
        self.by_index(&index.table, index.name, value)
    }

    /// How many records carry `value` in the index `index` names:
    /// [`count_by_index`](Self::count_by_index) with a typed handle.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent, Store, HOOKS, HOOKS_BY_EVENT};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PostToolUse, "*")))?;
    /// assert_eq!(store.snapshot().count_by(&HOOKS_BY_EVENT, "post-tool-use")?, 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn count_by<R: Record>(&self, index: &Index<R>, value: &str) -> Result<usize, StoreError> {
        self.count_by_index(&index.table, index.name, value)
    }

    /// The first record (in primary-key order) carrying `value` in `index`; for a unique index,
    /// the record.
    ///
    /// ```
    /// use capstore::{Hook, HookEvent, Store, HOOKS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PreToolUse, "*")))?;
    /// assert!(store.snapshot().first(&HOOKS, "event", "pre-tool-use")?.is_some());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn first<R: Record>(
        &self,
        table: &Table<R>,
        index: &str,
        value: &str,
    ) -> Result<Option<&R>, StoreError> {
        Ok(self.by_index(table, index, value)?.next().map(|(_, r)| r))
    }

    /// How many records carry `value` in `index`. O(log n).
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("fetch", "Fetch").with_tags(["web"])))?;
    /// assert_eq!(store.snapshot().count_by_index(&TOOLS, "tags", "web")?, 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn count_by_index<R: Record>(
        &self,
        table: &Table<R>,
        index: &str,
        value: &str,
    ) -> Result<usize, StoreError> {
        let (def, state) = self.resolve(table)?;
        Ok(match def.index_position(index)? {
            None => usize::from(state.rows.contains_key(value)),
            Some(i) => state.indexes[i].get(value).map_or(0, |keys| keys.len()),
        })
    }

    /// Every value present in `index`, in order, with how many records carry it.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("fetch", "Fetch").with_tags(["web", "http"]))?;
    ///     tx.insert(&TOOLS, Tool::new("crawl", "Crawl").with_tags(["web"]))
    /// })?;
    /// let tags: Vec<(String, usize)> = store.snapshot().index_values(&TOOLS, "tags")?
    ///     .map(|(v, n)| (v.to_string(), n)).collect();
    /// assert_eq!(tags, [("http".to_string(), 1), ("web".to_string(), 2)]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn index_values<R: Record>(
        &self,
        table: &Table<R>,
        index: &str,
    ) -> Result<IndexValues<'_>, StoreError> {
        let (def, state) = self.resolve(table)?;
        Ok(match def.index_position(index)? {
            None => Box::new(state.rows.keys().map(|k| (k, 1))),
            Some(i) => Box::new(state.indexes[i].iter().map(|(v, keys)| (v, keys.len()))),
        })
    }

    /// The records carrying any value that starts with `prefix` in `index`, each once, in
    /// primary-key order.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("fetch", "Fetch").with_tags(["web", "webhook"]))?;
    ///     tx.insert(&TOOLS, Tool::new("send", "Send").with_tags(["email"]))
    /// })?;
    /// assert_eq!(store.snapshot().index_prefix(&TOOLS, "tags", "web")?.count(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn index_prefix<'s, R: Record>(
        &'s self,
        table: &Table<R>,
        index: &str,
        prefix: &'s str,
    ) -> Result<Rows<'s, R>, StoreError> {
        let (def, state) = self.resolve(table)?;
        let Some(i) = def.index_position(index)? else {
            return self.key_prefix(table, prefix);
        };
        let mut found: BTreeMap<&Arc<str>, &Row> = BTreeMap::new();
        let values = state.indexes[i]
            .range::<_, str>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(v, _)| v.starts_with(prefix));
        for (_, keys) in values {
            for key in keys.iter() {
                if let Some((k, row)) = state.rows.get_key_value(key) {
                    found.insert(k, row);
                }
            }
        }
        Ok(Rows::new(found.into_iter()))
    }

    /// The `k` records of a text-indexed table that best match `query` by BM25, best first;
    /// ties break by primary key, so the same query always gives the same list.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("get_weather", "Current weather for a city"))?;
    ///     tx.insert(&TOOLS, Tool::new("send_email", "Send an email message"))
    /// })?;
    /// let snap = store.snapshot();
    /// let hits = snap.search(&TOOLS, "what's the weather in Paris?", 5)?;
    /// assert_eq!(hits[0].record.name, "get_weather");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn search<R: Record>(
        &self,
        table: &Table<R>,
        query: &str,
        k: usize,
    ) -> Result<Vec<Scored<'_, R>>, StoreError> {
        let (def, state, index) = self.text(table)?;
        let terms = self.tokenize_with(def, query);
        Ok(index
            .search(&terms, k)
            .into_iter()
            .filter_map(|hit| {
                let record = state.rows.get(&*hit.key)?.downcast_ref::<R>()?;
                Some(Scored {
                    key: hit.key,
                    score: hit.score,
                    record,
                })
            })
            .collect())
    }

    /// Why a record scores what it does for `query`: each query term's tf, df, document length,
    /// average length, idf and contribution. `None` when the key is not in the table.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Current weather for a city")))?;
    /// let why = store.snapshot().explain(&TOOLS, "get_weather", "weather")?.expect("indexed");
    /// assert_eq!(why.terms[0].term, "weather");
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn explain<R: Record>(
        &self,
        table: &Table<R>,
        key: &str,
        query: &str,
    ) -> Result<Option<Explanation>, StoreError> {
        let (def, _, index) = self.text(table)?;
        let terms = self.tokenize_with(def, query);
        Ok(index.explain(key, &terms))
    }

    /// The table's BM25 index as of this snapshot, for corpus statistics and term-level search.
    ///
    /// ```
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("read_file", "Read a file")))?;
    /// assert_eq!(store.snapshot().text_index(&TOOLS)?.stats().n_docs, 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn text_index<R: Record>(&self, table: &Table<R>) -> Result<&Bm25Index, StoreError> {
        Ok(self.text(table)?.2)
    }

    /// Turns text into terms exactly as the table's text index does for documents.
    ///
    /// ```
    /// use capstore::{Store, TOOLS};
    /// let terms = Store::new().snapshot().tokenize(&TOOLS, "getWeather for Paris")?;
    /// assert_eq!(terms, ["get", "weather", "paris"]);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn tokenize<R: Record>(
        &self,
        table: &Table<R>,
        text: &str,
    ) -> Result<Vec<String>, StoreError> {
        let (def, _, _) = self.text(table)?;
        Ok(self.tokenize_with(def, text))
    }

    /// [`tokenize`](Self::tokenize) into one buffer: `text`'s terms appended to `buf` back to
    /// back, the end of each pushed to `ends` (a turn's query without a `String` per term).
    pub(crate) fn tokenize_flat<R: Record>(
        &self,
        table: &Table<R>,
        text: &str,
        buf: &mut String,
        ends: &mut Vec<usize>,
    ) -> Result<(), StoreError> {
        let (def, _, _) = self.text(table)?;
        if let Some(t) = &def.text {
            t.tokenizer.tokenize_flat(text, buf, ends);
        }
        Ok(())
    }

    /// Whether two tables' text indexes tokenize alike, so that a query tokenized for one
    /// serves the other. False if either has no text index.
    pub(crate) fn same_tokenizer<A: Record, B: Record>(&self, a: &Table<A>, b: &Table<B>) -> bool {
        match (self.text(a), self.text(b)) {
            (Ok((da, _, _)), Ok((db, _, _))) => match (&da.text, &db.text) {
                (Some(ta), Some(tb)) => ta.tokenizer.config() == tb.tokenizer.config(),
                _ => false,
            },
            _ => false,
        }
    }

    fn tokenize_with(&self, def: &TableDef, text: &str) -> Vec<String> {
        def.text
            .as_ref()
            .map(|t| t.tokenizer.tokenize(text))
            .unwrap_or_default()
    }

    fn text<R: Record>(
        &self,
        table: &Table<R>,
    ) -> Result<(&TableDef, &TableState, &Bm25Index), StoreError> {
        let (def, state) = self.resolve(table)?;
        match &state.text {
            Some(index) => Ok((def, state, index)),
            None => Err(StoreError::NoTextIndex {
                table: def.name.clone(),
            }),
        }
    }
}
