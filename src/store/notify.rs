//! Telling the world about commits: sync callbacks, async channels and watchers.
//!
//! Everything here runs on the committing thread, after the new snapshot is published and while
//! the writer lock is still held, so that every listener sees commits in version order. A
//! listener that panics is caught and counted; it never takes the store or the writer down.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};

use super::changes::ChangeSet;
use super::snapshot::Schema;
use super::watch::WatchState;

type Callback = Arc<dyn Fn(&ChangeSet) + Send + Sync>;

/// How many change sets an async receiver may fall behind before it is told it lagged.
const BROADCAST_CAPACITY: usize = 1024;

pub(crate) struct Notifier {
    subscribers: Mutex<Vec<(u64, Callback)>>,
    next_id: AtomicU64,
    /// Made by the first [`Notifier::changes`]: the channel allocates all its slots up front
    /// (32 KB at 1,024), which a store nobody listens to need not pay. Until then no receiver
    /// exists, so nothing a sender would have sent is missed.
    changes: OnceLock<broadcast::Sender<Arc<ChangeSet>>>,
    version: watch::Sender<u64>,
    /// Per table, in declaration order: the version at which it last changed.
    table_versions: Vec<watch::Sender<u64>>,
    watchers: Mutex<Vec<Weak<WatchState>>>,
    listener_panics: AtomicU64,
}

impl Notifier {
    /// A notifier for a store of `tables` tables.
    pub fn new(tables: usize) -> Self {
        let (version, _) = watch::channel(0);
        Notifier {
            subscribers: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            changes: OnceLock::new(),
            version,
            table_versions: (0..tables).map(|_| watch::channel(0).0).collect(),
            watchers: Mutex::new(Vec::new()),
            listener_panics: AtomicU64::new(0),
        }
    }

    /// Delivers one commit's change set to every listener; `changed` are the positions of the
    /// tables it touches.
    pub fn publish(&self, schema: &Schema, changes: Arc<ChangeSet>, changed: &[usize]) {
        // Copy the list first, so a callback may subscribe or unsubscribe without deadlocking.
        let callbacks: Vec<Callback> = self
            .subscribers
            .lock()
            .iter()
            .map(|(_, cb)| Arc::clone(cb))
            .collect();
        for callback in callbacks {
            if catch_unwind(AssertUnwindSafe(|| callback(&changes))).is_err() {
                self.listener_panics.fetch_add(1, Ordering::Relaxed);
            }
        }
        let watchers: Vec<Arc<WatchState>> = {
            let mut list = self.watchers.lock();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        for watcher in watchers {
            if catch_unwind(AssertUnwindSafe(|| watcher.offer(schema, &changes))).is_err() {
                self.listener_panics.fetch_add(1, Ordering::Relaxed);
            }
        }
        // No receiver is not an error: nobody is listening asynchronously.
        let version = changes.version;
        if let Some(sender) = self.changes.get() {
            let _ = sender.send(changes);
        }
        for id in changed {
            if let Some(sender) = self.table_versions.get(*id) {
                sender.send_replace(version);
            }
        }
        self.version.send_replace(version);
    }

    pub fn subscribe(&self, callback: Callback) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.subscribers.lock().push((id, callback));
        id
    }

    pub fn unsubscribe(&self, id: u64) -> bool {
        let mut list = self.subscribers.lock();
        let before = list.len();
        list.retain(|(sid, _)| *sid != id);
        list.len() != before
    }

    pub fn subscriber_count(&self) -> usize {
        self.subscribers.lock().len()
    }

    pub fn listener_panics(&self) -> u64 {
        self.listener_panics.load(Ordering::Relaxed)
    }

    pub fn changes(&self) -> broadcast::Receiver<Arc<ChangeSet>> {
        self.changes
            .get_or_init(|| broadcast::channel(BROADCAST_CAPACITY).0)
            .subscribe()
    }

    pub fn versions(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// The receiver of table `id`'s versions; `None` for a position the store has no table at.
    pub fn table_versions(&self, id: usize) -> Option<watch::Receiver<u64>> {
        self.table_versions.get(id).map(watch::Sender::subscribe)
    }

    /// Registers a watcher and, under the same lock, runs `missed`: a commit either takes the
    /// lock after this and offers its changes to the watcher, or took it before, and then its
    /// snapshot is visible to `missed` (the lock orders the two).
    pub fn add_watcher(&self, watcher: &Arc<WatchState>, missed: impl FnOnce() -> bool) {
        let mut list = self.watchers.lock();
        list.push(Arc::downgrade(watcher));
        if missed() {
            watcher.fire();
        }
    }
}

/// A registered change callback. Dropping it (or calling [`unsubscribe`](Self::unsubscribe))
/// removes the callback; [`detach`](Self::detach) keeps it for the life of the store.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use capstore::{Store, Tool, TOOLS};
///
/// let store = Store::new();
/// let seen = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&seen);
/// let sub = store.subscribe(move |changes| {
///     counter.fetch_add(changes.changes.len(), Ordering::SeqCst);
/// });
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// sub.unsubscribe();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("c", "d")))?;
/// assert_eq!(seen.load(Ordering::SeqCst), 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[must_use = "dropping a Subscription unsubscribes at once; call `detach` to keep it"]
pub struct Subscription {
    pub(crate) id: u64,
    pub(crate) notifier: Weak<Notifier>,
}

impl Subscription {
    /// Removes the callback. No commit published after this returns calls it (a delivery
    /// already under way on another thread may still finish).
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// store.subscribe(|_| {}).unsubscribe();
    /// assert_eq!(store.subscriber_count(), 0);
    /// ```
    pub fn unsubscribe(self) {
        drop(self);
    }

    /// Keeps the callback registered for as long as the store lives.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// store.subscribe(|_| {}).detach();
    /// assert_eq!(store.subscriber_count(), 1);
    /// ```
    pub fn detach(mut self) {
        self.notifier = Weak::new();
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(notifier) = self.notifier.upgrade() {
            notifier.unsubscribe(self.id);
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}
