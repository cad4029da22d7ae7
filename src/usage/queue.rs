//! Turns' evidence queued off the turn's path and counted into the store in batches.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::store::{CommitInfo, Store, StoreError};

use super::learn::{TurnUse, learn, learn_all};

/// When a [`UsageQueue`] writes what it holds: as soon as it holds `max_turns` turns, or when
/// a turn is queued `max_delay` or more after the oldest one it holds (whichever comes first),
/// and whenever it is flushed or dropped.
///
/// ```
/// use std::time::Duration;
/// let limits = capstore::usage::BatchLimits::default();
/// assert_eq!((limits.max_turns, limits.max_delay), (64, Duration::from_secs(1)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// The most turns held: the turn that fills the queue writes the batch. 0 and 1 alike
    /// write each turn as it comes.
    pub max_turns: usize,
    /// The longest the oldest turn held waits for a later turn to write it: a turn queued this
    /// long after it writes the batch ([`UsageQueue::flush_if_due`] checks the same without a
    /// turn).
    pub max_delay: Duration,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits {
            max_turns: 64,
            max_delay: Duration::from_secs(1),
        }
    }
}

/// Finished turns' evidence, queued and counted into a store's [`USAGE`](crate::USAGE) table in
/// batches: ending a turn costs a push onto a list, not a store transaction, and a batch is one
/// transaction ([`learn_all`]) whose rows are exactly those of one [`learn`] per turn in the
/// order the turns were queued.
///
/// - **When it writes**: see [`BatchLimits`] (by default at 64 turns, or at a turn queued a
///   second or more after the oldest held), at [`flush`](Self::flush), and when the last
///   handle is dropped. The conversations that use one ([`Chat`](crate::agent::Chat), the
///   agent loop, the gateway, the Python conversation) flush it when they finish.
/// - **What a selection sees**: only written rows. A selection reads one snapshot and never
///   the queue, so a turn's evidence teaches the selections that start after its batch is
///   written (at most `max_turns` turns, or `max_delay` and one more turn, later), never half
///   a batch.
/// - **A crash** (the process killed) loses what the queue held, at most the bounds' worth of
///   turns; a batch is one transaction, so the table never holds part of one. (The store
///   lives in memory: what outlives the process is what was saved to a usage file or sent to
///   replicas.)
///
/// Writing a batch begins a transaction ([`Store::begin`]): do not push, flush, or drop the
/// last handle (or a conversation that flushes when dropped) on a thread that holds a write
/// transaction of the same store; it would wait for itself.
///
/// Cheap to clone; clones share the queue; `Send + Sync`. One queue may serve many
/// conversations of a store (share it with [`Chat::with_usage_queue`](crate::agent::Chat::with_usage_queue)):
/// their turns are counted in the order they were queued.
///
/// ```
/// use capstore::usage::{BatchLimits, TurnUse, UsageQueue};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory").with_source("fs")))?;
/// let queue = UsageQueue::with_limits(store.clone(), BatchLimits { max_turns: 3, ..BatchLimits::default() });
/// assert!(queue.push(TurnUse::new(["fs/cd"]))?.is_none()); // queued, the store as it was
/// assert!(queue.push(TurnUse::new(["fs/cd"]))?.is_none());
/// assert_eq!((store.version(), queue.pending()), (1, 2));
/// let written = queue.push(TurnUse::new(["fs/cd"]))?.expect("the third turn fills the batch");
/// assert_eq!(written.version, 2); // one transaction for the three turns
/// assert_eq!(store.snapshot().get(&USAGE, "fs/cd")?.map(|u| u.turns), Some(3));
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Clone)]
pub struct UsageQueue {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    limits: BatchLimits,
    pending: Mutex<Pending>,
    /// Held while a batch is taken and written, so that batches are written in the order
    /// their turns were queued.
    writing: Mutex<()>,
}

#[derive(Default)]
struct Pending {
    turns: Vec<TurnUse>,
    /// When the oldest turn held was queued.
    since: Option<Instant>,
    /// Batches written so far.
    batches: u64,
}

impl fmt::Debug for UsageQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UsageQueue")
            .field("limits", &self.inner.limits)
            .field("pending", &self.pending())
            .finish()
    }
}

impl UsageQueue {
    /// A queue over `store` with the default [`BatchLimits`].
    ///
    /// ```
    /// let queue = capstore::usage::UsageQueue::new(capstore::Store::new());
    /// assert_eq!(queue.pending(), 0);
    /// ```
    pub fn new(store: Store) -> Self {
        UsageQueue::with_limits(store, BatchLimits::default())
    }

    /// A queue over `store` that writes within `limits`.
    ///
    /// ```
    /// use capstore::usage::{BatchLimits, UsageQueue};
    /// let each_turn = BatchLimits { max_turns: 1, ..BatchLimits::default() };
    /// let queue = UsageQueue::with_limits(capstore::Store::new(), each_turn);
    /// assert_eq!(queue.limits().max_turns, 1);
    /// ```
    pub fn with_limits(store: Store, limits: BatchLimits) -> Self {
        UsageQueue {
            inner: Arc::new(Inner {
                store,
                limits,
                pending: Mutex::new(Pending::default()),
                writing: Mutex::new(()),
            }),
        }
    }

    /// The bounds it writes within.
    ///
    /// ```
    /// let queue = capstore::usage::UsageQueue::new(capstore::Store::new());
    /// assert_eq!(queue.limits(), capstore::usage::BatchLimits::default());
    /// ```
    pub fn limits(&self) -> BatchLimits {
        self.inner.limits
    }

    /// The store it writes to.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// let queue = capstore::usage::UsageQueue::new(store.clone());
    /// assert_eq!(queue.store().version(), store.version());
    /// ```
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// How many turns it holds, not yet written.
    ///
    /// ```
    /// use capstore::usage::{TurnUse, UsageQueue};
    /// let queue = UsageQueue::new(capstore::Store::new());
    /// queue.push(TurnUse::new(["fs/cd"]))?;
    /// assert_eq!(queue.pending(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn pending(&self) -> usize {
        self.inner.pending.lock().turns.len()
    }

    /// How many batches it has written (each one transaction).
    ///
    /// ```
    /// use capstore::usage::{TurnUse, UsageQueue};
    /// let queue = UsageQueue::new(capstore::Store::new());
    /// queue.push(TurnUse::new(["fs/cd"]))?;
    /// queue.flush()?;
    /// assert_eq!(queue.batches(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn batches(&self) -> u64 {
        self.inner.pending.lock().batches
    }

    /// Queues a finished turn (a [`UsageRecorder::finish_turn`](super::UsageRecorder::finish_turn)),
    /// and writes the batch if the turn fills it or came `max_delay` after the oldest held
    /// ([`BatchLimits`]). A turn that sent and called nothing is not queued. Returns the
    /// batch's commit when it wrote one.
    ///
    /// Errors: the store refused the batch (as [`flush`](Self::flush)).
    ///
    /// See the [type's example](Self).
    pub fn push(&self, turn: TurnUse) -> Result<Option<CommitInfo>, StoreError> {
        if turn.is_empty() {
            return Ok(None);
        }
        let due = {
            let mut pending = self.inner.pending.lock();
            let now = Instant::now();
            let since = *pending.since.get_or_insert(now);
            pending.turns.push(turn);
            pending.turns.len() >= self.inner.limits.max_turns
                || now.duration_since(since) >= self.inner.limits.max_delay
        };
        if due { self.flush() } else { Ok(None) }
    }

    /// Writes the batch if its oldest turn has waited `max_delay` or more: what a timer calls,
    /// so that evidence waits no longer than that without new turns.
    ///
    /// ```
    /// use capstore::usage::{TurnUse, UsageQueue};
    /// let queue = UsageQueue::new(capstore::Store::new());
    /// queue.push(TurnUse::new(["fs/cd"]))?;
    /// assert!(queue.flush_if_due()?.is_none()); // a second has not passed
    /// assert_eq!(queue.pending(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn flush_if_due(&self) -> Result<Option<CommitInfo>, StoreError> {
        let due = self
            .inner
            .pending
            .lock()
            .since
            .is_some_and(|since| since.elapsed() >= self.inner.limits.max_delay);
        if due { self.flush() } else { Ok(None) }
    }

    /// Writes every turn held, now, in one transaction; `None` when it held none.
    ///
    /// Errors: the store refused a turn's counts (a rule of the store's own); the turns are
    /// then written one by one in the same transaction, each whole or not at all, and the
    /// first refusal returned: the turns refused are dropped, as writing each alone would
    /// have dropped them, and the others counted.
    ///
    /// ```
    /// use capstore::usage::{TurnUse, UsageQueue};
    /// use capstore::{Store, Tool, TOOLS, USAGE};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("cd", "Change directory")))?;
    /// let queue = UsageQueue::new(store.clone());
    /// queue.push(TurnUse::new(["cd"]))?;
    /// assert!(queue.flush()?.is_some());
    /// assert!(queue.flush()?.is_none(), "nothing left");
    /// assert_eq!(store.snapshot().get(&USAGE, "cd")?.map(|u| u.turns), Some(1));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn flush(&self) -> Result<Option<CommitInfo>, StoreError> {
        self.inner.flush()
    }
}

impl Inner {
    fn flush(&self) -> Result<Option<CommitInfo>, StoreError> {
        let _writing = self.writing.lock();
        let turns = {
            let mut pending = self.pending.lock();
            pending.since = None;
            std::mem::take(&mut pending.turns)
        };
        if turns.is_empty() {
            return Ok(None);
        }
        let mut tx = self.store.begin();
        let whole = tx.all_or_nothing(|tx| learn_all(tx, &turns));
        let mut refused = whole.err();
        if refused.is_some() {
            // One by one: only the turns the store refuses are lost.
            refused = None;
            for turn in &turns {
                if let Err(e) = tx.all_or_nothing(|tx| learn(tx, turn)) {
                    refused.get_or_insert(e);
                }
            }
        }
        let info = tx.commit();
        self.pending.lock().batches += 1;
        match refused {
            Some(e) => Err(e),
            None => Ok(Some(info)),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle gone: what it holds is written (a refusal has no one to go to).
        let _ = self.flush();
    }
}
