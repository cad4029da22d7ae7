//! Watching a query result: a set of table, key, index-value and prefix interests that fires
//! once, as soon as a commit may have changed any of them (go-memdb's `WatchSet`).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::changes::ChangeSet;
use super::error::StoreError;
use super::schema::{Record, Row, Table, TableDef};
use super::snapshot::Schema;

/// The parts of the store a reader depends on. Build it alongside the queries whose results you
/// want to keep fresh, then hand it to [`Store::watch`](super::Store::watch).
///
/// ```
/// use capstore::{Store, Tool, TOOLS, WatchSet};
/// let store = Store::new();
/// let snap = store.snapshot();
/// let web_tools = snap.by_index(&TOOLS, "tags", "web")?.count();
/// let watcher = store.watch(&WatchSet::new().index(&TOOLS, "tags", "web"), snap.version())?;
/// assert!(!watcher.is_fired());
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("mail", "Send mail").with_tags(["email"])))?;
/// assert!(!watcher.is_fired(), "an unrelated write does not fire");
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("fetch", "Fetch a page").with_tags(["web"])))?;
/// assert!(watcher.is_fired());
/// # let _ = web_tools;
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WatchSet {
    items: Vec<WatchItem>,
}

#[derive(Debug, Clone)]
enum WatchItem {
    Table(usize, u64),
    Key(usize, u64, String),
    Index(usize, u64, String, String),
    IndexPrefix(usize, u64, String, String),
}

impl WatchSet {
    /// An empty set (a watcher on it never fires).
    ///
    /// ```
    /// assert!(capstore::WatchSet::new().is_empty());
    /// ```
    pub fn new() -> Self {
        WatchSet::default()
    }

    /// Whether the set watches nothing.
    ///
    /// ```
    /// use capstore::{TOOLS, WatchSet};
    /// assert!(!WatchSet::new().table(&TOOLS).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Watches every record of a table (for example a whole listing, or a text search).
    ///
    /// ```
    /// use capstore::{SKILLS, WatchSet};
    /// let set = WatchSet::new().table(&SKILLS);
    /// # let _ = set;
    /// ```
    pub fn table<R: Record>(mut self, table: &Table<R>) -> Self {
        self.items.push(WatchItem::Table(table.id, table.schema));
        self
    }

    /// Watches one primary key (its insertion, update or deletion).
    ///
    /// ```
    /// use capstore::{TOOLS, WatchSet};
    /// let set = WatchSet::new().key(&TOOLS, "github/search");
    /// # let _ = set;
    /// ```
    pub fn key<R: Record>(mut self, table: &Table<R>, key: &str) -> Self {
        self.items
            .push(WatchItem::Key(table.id, table.schema, key.to_string()));
        self
    }

    /// Watches the records carrying `value` in `index`: fires when a record gains or loses the
    /// value, or a record carrying it changes.
    ///
    /// ```
    /// use capstore::{TOOLS, WatchSet};
    /// let set = WatchSet::new().index(&TOOLS, "source", "github");
    /// # let _ = set;
    /// ```
    pub fn index<R: Record>(mut self, table: &Table<R>, index: &str, value: &str) -> Self {
        self.items.push(WatchItem::Index(
            table.id,
            table.schema,
            index.to_string(),
            value.to_string(),
        ));
        self
    }

    /// Watches the records carrying any value that starts with `prefix` in `index` (`"id"` for
    /// primary keys).
    ///
    /// ```
    /// use capstore::{TOOLS, WatchSet};
    /// let set = WatchSet::new().index_prefix(&TOOLS, "id", "github/");
    /// # let _ = set;
    /// ```
    pub fn index_prefix<R: Record>(mut self, table: &Table<R>, index: &str, prefix: &str) -> Self {
        self.items.push(WatchItem::IndexPrefix(
            table.id,
            table.schema,
            index.to_string(),
            prefix.to_string(),
        ));
        self
    }

    /// Checks every item against the schema and resolves index names to positions.
    pub(crate) fn resolve(&self, schema: &Schema) -> Result<Vec<Interest>, StoreError> {
        self.items
            .iter()
            .map(|item| {
                let (id, uid) = match item {
                    WatchItem::Table(id, uid)
                    | WatchItem::Key(id, uid, _)
                    | WatchItem::Index(id, uid, _, _)
                    | WatchItem::IndexPrefix(id, uid, _, _) => (*id, *uid),
                };
                let def = schema.check_erased(id, uid)?;
                Ok(match item {
                    WatchItem::Table(..) => Interest::Table(id),
                    WatchItem::Key(_, _, key) => Interest::Key(id, key.clone()),
                    WatchItem::Index(_, _, index, value) => {
                        Interest::Index(id, def.index_position(index)?, value.clone(), false)
                    }
                    WatchItem::IndexPrefix(_, _, index, prefix) => {
                        Interest::Index(id, def.index_position(index)?, prefix.clone(), true)
                    }
                })
            })
            .collect()
    }
}

/// A resolved watch item: table position, and for indexes the index position (`None` for the
/// primary key), the value and whether it is a prefix.
#[derive(Debug, Clone)]
pub(crate) enum Interest {
    Table(usize),
    Key(usize, String),
    Index(usize, Option<usize>, String, bool),
}

impl Interest {
    /// The position of the table the interest is in.
    fn table(&self) -> usize {
        match self {
            Interest::Table(id) | Interest::Key(id, _) | Interest::Index(id, ..) => *id,
        }
    }

    fn matches(&self, schema: &Schema, changes: &ChangeSet) -> bool {
        changes.changes.iter().any(|change| {
            let rows = || change.before.iter().chain(change.after.iter());
            match self {
                Interest::Table(id) => change.table_id == *id,
                Interest::Key(id, key) => change.table_id == *id && *change.key == **key,
                Interest::Index(id, position, value, prefix) => {
                    if change.table_id != *id {
                        return false;
                    }
                    let hit = |v: &str| {
                        if *prefix {
                            v.starts_with(value.as_str())
                        } else {
                            v == value
                        }
                    };
                    match position {
                        None => hit(&change.key),
                        // The raw extracted values: `keys_of` would sort, dedup and allocate
                        // them (under the writer lock) only for `any` to look at them.
                        Some(i) => schema
                            .tables
                            .get(*id)
                            .and_then(|def: &TableDef| def.indexes.get(*i))
                            .is_some_and(|index| {
                                rows().any(|row: &Row| (index.keys)(&**row).iter().any(|v| hit(v)))
                            }),
                    }
                }
            }
        })
    }
}

/// Fires once, when a commit after the watched version may have changed what a [`WatchSet`]
/// covers. "May": a change to a record that matched before or matches after fires it, even if
/// the query's answer ends up the same. Drop it to stop watching; make a new one to watch again.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), capstore::StoreError> {
/// use capstore::{Store, Tool, TOOLS, WatchSet};
/// let store = Store::new();
/// let watcher = store.watch(&WatchSet::new().table(&TOOLS), store.snapshot().version())?;
/// let writer = store.clone();
/// std::thread::spawn(move || writer.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b"))));
/// watcher.fired().await;
/// assert!(watcher.is_fired());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Watcher {
    pub(crate) state: Arc<WatchState>,
}

#[derive(Debug)]
pub(crate) struct WatchState {
    interests: Vec<Interest>,
    fired: Mutex<bool>,
    condvar: Condvar,
    notify: Notify,
}

impl WatchState {
    pub fn new(interests: Vec<Interest>) -> Self {
        WatchState {
            interests,
            fired: Mutex::new(false),
            condvar: Condvar::new(),
            notify: Notify::new(),
        }
    }

    /// The positions of the tables its interests are in (a table may come more than once).
    pub fn tables(&self) -> impl Iterator<Item = usize> + '_ {
        self.interests.iter().map(Interest::table)
    }

    /// Fires the watcher if `changes` touch any of its interests.
    pub fn offer(&self, schema: &Schema, changes: &ChangeSet) {
        if self.interests.iter().any(|i| i.matches(schema, changes)) {
            self.fire();
        }
    }

    pub fn fire(&self) {
        let mut fired = self.fired.lock();
        if !*fired {
            *fired = true;
            self.condvar.notify_all();
            self.notify.notify_waiters();
        }
    }
}

impl Watcher {
    /// Whether a commit may have changed the watched results.
    ///
    /// ```
    /// use capstore::{Store, TOOLS, WatchSet};
    /// let store = Store::new();
    /// let w = store.watch(&WatchSet::new().table(&TOOLS), 0)?;
    /// assert!(!w.is_fired());
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn is_fired(&self) -> bool {
        *self.state.fired.lock()
    }

    /// Blocks the thread until the watcher fires or `timeout` passes; returns whether it fired.
    ///
    /// ```
    /// use std::time::Duration;
    /// use capstore::{Store, TOOLS, WatchSet};
    /// let store = Store::new();
    /// let w = store.watch(&WatchSet::new().table(&TOOLS), 0)?;
    /// assert!(!w.wait_timeout(Duration::from_millis(1)));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let mut fired = self.state.fired.lock();
        if !*fired {
            let _ = self.state.condvar.wait_for(&mut fired, timeout);
        }
        *fired
    }

    /// Waits (async) until the watcher fires. Cancel-safe.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), capstore::StoreError> {
    /// use capstore::{Store, Tool, TOOLS, WatchSet};
    /// let store = Store::new();
    /// let w = store.watch(&WatchSet::new().key(&TOOLS, "a"), 0)?;
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// w.fired().await; // returns at once: it already fired
    /// # Ok(())
    /// # }
    /// ```
    pub async fn fired(&self) {
        loop {
            let notified = self.state.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register interest before checking, so a fire between the check and the await is
            // not lost.
            notified.as_mut().enable();
            if self.is_fired() {
                return;
            }
            notified.await;
        }
    }
}
