//! A replica's usage sent through the log in batches: one log entry per replica per interval,
//! not one per turn.
//!
//! A gateway serving a few hundred turns a second that appended each turn
//! ([`Replica::learn`](super::Replica::learn)) would spend the log on usage counts: one
//! PostgreSQL transaction, one notification and one store commit on every replica per turn. A [`ReplicaUsageQueue`] holds the turns in memory and
//! appends them as one entry (`{"turns":[...]}`) within [`BatchLimits`] (by default
//! [`LOG_BATCH_LIMITS`]: 1,000 turns or 1 s), and every replica counts that entry's turns, in
//! order, in one store commit when its follower applies it: the same rows as one entry per turn
//! in that order.
//!
//! ```text
//! gateway turn ends ──► ReplicaUsageQueue::push (in memory, never waits)
//! batch due (max_turns, max_delay: the queue's task; flush; the last handle dropped)
//!     ──► own connection, one statement (its own transaction): usage_sent[sender] = last,
//!         unless already there; then move head (its row lock), INSERT log {"turns":[..]},
//!         NOTIFY; COMMIT
//! every replica's follower ──► one store commit counting the batch's turns in order
//! ```
//!
//! - **Exactly once.** Each turn pushed gets the next number of its queue (the *sender*, a name
//!   unique to the queue); the statement that appends a batch also records, in the `usage_sent`
//!   table, its last number, and writes nothing if that row is there already. A batch whose
//!   acknowledgement was lost (a timeout, a dropped connection) stays held, as it is, and is
//!   sent again: written once. The sending replica counts its own turns as every other
//!   replica does: when its follower applies the entry, once.
//! - **Catalog and trust changes never wait behind usage.** The queue sends on a connection of
//!   its own, not the replica's writer's, and holds no lock of the replica or its store: a
//!   catalog write ([`Replica::write`](super::Replica::write)) or a trust decision waits at
//!   most for one batch's append to release the log's head row: one statement, whose entry
//!   reached PostgreSQL before it took the lock, and its commit; at most once per interval per
//!   queue.
//! - **What a crash loses**: the turns held, at most `max_turns` turns or `max_delay` of them
//!   (more while PostgreSQL is unreachable: the queue keeps up to [`MAX_HELD_TURNS`] and then
//!   drops the oldest, counted in [`UsageSendStatus::dropped`]). A batch is one log entry and
//!   one store commit per replica, so no replica ever holds part of one, and no row is written
//!   half.
//!
//! # What it costs
//! A push: a lock and a push onto a list. Per batch: one PostgreSQL statement (prepared, then
//! run) on the queue's own connection (a third per replica, opened at the first batch),
//! the turns as JSON (a few hundred bytes each), and on every replica one store commit (an
//! upsert per tool the batch names). One task on the replica's runtime wakes at each turn that
//! fills a batch and otherwise at most once per `max_delay`.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
//! use capstore::sync::{LOG_BATCH_LIMITS, Replica, SyncOptions};
//! let url = "postgres://capstore@127.0.0.1:55432/postgres";
//! let a = Replica::open(url, SyncOptions::default()).await?;
//! let b = Replica::open(url, SyncOptions::default()).await?;
//! let queue = a.usage_queue(LOG_BATCH_LIMITS);
//! for _ in 0..100 {
//!     queue.push(capstore::usage::TurnUse::new(["fs/cd", "fs/mv"]));
//! }
//! let version = queue.flush().await?.expect("one entry for the hundred turns");
//! let on_b = b.wait_for(version, std::time::Duration::from_secs(5)).await?;
//! assert!(on_b.get(&capstore::USAGE, "fs/mv")?.is_some_and(|u| u.turns >= 100));
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_postgres::Client;

use crate::usage::{BatchLimits, TurnUse};

use super::log::{self, timed};
use super::wire::WireEntry;
use super::{SyncError, SyncOptions};

/// The bounds a [`ReplicaUsageQueue`] sends within by default
/// ([`Replica::usage_queue`](super::Replica::usage_queue)): a batch at 1,000 turns, or once its
/// oldest turn has waited 1 s. A replica at up to 1,000 turns a second appends one log entry a
/// second.
///
/// ```
/// use std::time::Duration;
/// let limits = capstore::sync::LOG_BATCH_LIMITS;
/// assert_eq!((limits.max_turns, limits.max_delay), (1_000, Duration::from_secs(1)));
/// ```
pub const LOG_BATCH_LIMITS: BatchLimits = BatchLimits {
    max_turns: 1_000,
    max_delay: Duration::from_secs(1),
};

/// The most turns a [`ReplicaUsageQueue`] holds while PostgreSQL does not take them; past it
/// the oldest are dropped (and counted). At 500 turns a second, more than three minutes.
///
/// ```
/// assert_eq!(capstore::sync::MAX_HELD_TURNS, 100_000);
/// ```
pub const MAX_HELD_TURNS: usize = 100_000;

/// The most turns one log entry carries: a backlog (after PostgreSQL was away) goes out in
/// entries of at most this many, one after another.
const MAX_ENTRY_TURNS: usize = 5_000;

/// The first wait before a failed batch is tried again; it doubles up to [`MAX_RETRY`].
const MIN_RETRY: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(2);

/// What a [`ReplicaUsageQueue`] has done, from [`ReplicaUsageQueue::status`].
///
/// ```
/// let status = capstore::sync::UsageSendStatus::default();
/// assert_eq!((status.pending, status.entries, status.turns, status.dropped), (0, 0, 0, 0));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageSendStatus {
    /// Turns held, not yet known to be in the log.
    pub pending: usize,
    /// Log entries appended (batches).
    pub entries: u64,
    /// Turns those entries carried.
    pub turns: u64,
    /// Turns dropped because [`MAX_HELD_TURNS`] were held.
    pub dropped: u64,
    /// The last failure to send, cleared by the next batch sent.
    pub last_error: Option<String>,
}

/// A replica's finished turns, queued and appended to the log in batches (see the
/// [module](self) for the guarantees and what they cost). Made by
/// [`Replica::usage_queue`](super::Replica::usage_queue); `capstore serve --state` hands each
/// gateway session's turns to one.
///
/// [`push`](Self::push) never waits; the queue's task (on the replica's runtime) sends a batch
/// when it is due, [`flush`](Self::flush) sends now, and dropping the last handle asks the
/// task to send what is held and stop (it does if the runtime still runs: flush before
/// shutting a runtime down). Cheap to clone; clones share the queue; `Send + Sync`.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
/// use capstore::sync::{LOG_BATCH_LIMITS, Replica, SyncOptions};
/// use capstore::usage::TurnUse;
/// let replica = Replica::open("postgres://capstore@127.0.0.1:55432/postgres", SyncOptions::default()).await?;
/// let queue = replica.usage_queue(LOG_BATCH_LIMITS);
/// queue.push(TurnUse::new(["fs/cd", "fs/mv"]));
/// queue.push(TurnUse::new(["fs/ls"]));
/// let version = queue.flush().await?.expect("two turns held: one entry");
/// let snap = replica.wait_for(version, std::time::Duration::from_secs(5)).await?;
/// assert!(snap.contains(&capstore::USAGE, "fs/ls")?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReplicaUsageQueue {
    handle: Arc<Handle>,
}

/// The last handle's drop closes the queue: its task sends what is held and stops.
struct Handle {
    queue: Arc<Queue>,
    _task: JoinHandle<()>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.queue.closed.store(true, Ordering::SeqCst);
        self.queue.wake.notify_one();
    }
}

struct Queue {
    url: String,
    options: SyncOptions,
    limits: BatchLimits,
    /// The queue's name in `usage_sent`: unique to this queue.
    sender: String,
    held: Mutex<Held>,
    /// Wakes the task: a batch is due, or the queue closed.
    wake: Notify,
    closed: AtomicBool,
    /// The queue's own connection; its lock orders the batches.
    conn: tokio::sync::Mutex<Option<Client>>,
    /// Tells the replica a batch was appended at this version, so it applies it at once
    /// (a no-op once the replica is gone).
    written: Written,
}

/// What a queue calls after it appended a batch: the log version written.
pub(super) type Written = Box<dyn Fn(u64) + Send + Sync>;

#[derive(Default)]
struct Held {
    /// The turns not yet in a batch, oldest first, each with when it was pushed.
    turns: VecDeque<(Instant, TurnUse)>,
    /// The number the next turn pushed gets (the first is 1); the front turn's is
    /// `next - turns.len()`.
    next: u64,
    /// The batch being sent, or sent without an acknowledgement: sent again as it is (the same
    /// turns, the same numbers) until the log is known to hold it.
    in_flight: Option<Arc<InFlight>>,
    status: UsageSendStatus,
}

/// A batch: its turns' numbers `first..=through`, as the entry's JSON.
struct InFlight {
    through: u64,
    turns: usize,
    body: String,
}

impl Held {
    fn front_seq(&self) -> u64 {
        self.next - self.turns.len() as u64
    }

    fn pending(&self) -> usize {
        self.turns.len() + self.in_flight.as_ref().map_or(0, |b| b.turns)
    }
}

impl std::fmt::Debug for ReplicaUsageQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaUsageQueue")
            .field("sender", &self.handle.queue.sender)
            .field("limits", &self.handle.queue.limits)
            .field("status", &self.status())
            .finish()
    }
}

/// A name no other queue has: the replica's name, and a hash of the process, the time and a
/// counter.
fn sender_name(replica: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{replica}/{}/{nanos}/{}/{:p}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        &NEXT
    );
    format!("{replica}-{:016x}", crate::fnv::fnv1a_64(seed.as_bytes()))
}

impl ReplicaUsageQueue {
    /// Starts a queue sending to `url` with `options` on `runtime`, waking `replica` after
    /// each batch.
    pub(super) fn start(
        url: String,
        options: SyncOptions,
        limits: BatchLimits,
        runtime: &tokio::runtime::Handle,
        written: Written,
    ) -> ReplicaUsageQueue {
        let queue = Arc::new(Queue {
            sender: sender_name(&options.replica),
            url,
            options,
            limits,
            held: Mutex::new(Held {
                next: 1,
                ..Held::default()
            }),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            conn: tokio::sync::Mutex::new(None),
            written,
        });
        let task = runtime.spawn(run(Arc::clone(&queue)));
        ReplicaUsageQueue {
            handle: Arc::new(Handle { queue, _task: task }),
        }
    }

    /// The bounds it sends within.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let queue = replica.usage_queue(capstore::sync::LOG_BATCH_LIMITS);
    /// assert_eq!(queue.limits().max_turns, 1_000);
    /// # Ok(()) }
    /// ```
    pub fn limits(&self) -> BatchLimits {
        self.handle.queue.limits
    }

    /// Queues a finished turn; never waits. A turn that sent and called nothing is not queued
    /// (`false`). The turn that fills a batch, or comes `max_delay` after the oldest held,
    /// wakes the queue's task to send it; the first turn held wakes it to set its timer.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// use capstore::usage::TurnUse;
    /// let queue = replica.usage_queue(capstore::sync::LOG_BATCH_LIMITS);
    /// assert!(queue.push(TurnUse::new(["fs/cd"])));
    /// assert!(!queue.push(TurnUse::default()), "nothing to learn");
    /// assert_eq!(queue.status().pending, 1);
    /// # Ok(()) }
    /// ```
    pub fn push(&self, turn: TurnUse) -> bool {
        if turn.is_empty() {
            return false;
        }
        let queue = &self.handle.queue;
        let due = {
            let mut held = queue.held.lock();
            if held.turns.len() >= MAX_HELD_TURNS {
                held.turns.pop_front();
                held.status.dropped += 1;
            }
            let now = Instant::now();
            // The first turn held starts the clock: the task learns when it is due.
            let first = held.turns.is_empty();
            held.turns.push_back((now, turn));
            held.next += 1;
            first || queue.due(&held, now)
        };
        if due {
            queue.wake.notify_one();
        }
        true
    }

    /// Sends every turn held now (in entries of at most 5,000 turns), on the queue's
    /// connection; the last log version written, `None` if there was nothing to send (or the
    /// log already held it all). Bounded by the replica's connect and query timeouts per entry.
    ///
    /// Errors: PostgreSQL could not be reached, or refused or timed out the append. The turns
    /// stay held (the task tries again, with a back-off), and a batch the log took before the
    /// failure is not written twice.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let queue = replica.usage_queue(capstore::sync::LOG_BATCH_LIMITS);
    /// queue.push(capstore::usage::TurnUse::new(["fs/cd"]));
    /// assert!(queue.flush().await?.is_some());
    /// assert_eq!(queue.flush().await?, None, "nothing left");
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) -> Result<Option<u64>, SyncError> {
        self.handle.queue.flush().await
    }

    /// What it holds and has sent.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let queue = replica.usage_queue(capstore::sync::LOG_BATCH_LIMITS);
    /// let status = queue.status();
    /// println!("{} entries, {} turns sent, {} held", status.entries, status.turns, status.pending);
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> UsageSendStatus {
        let held = self.handle.queue.held.lock();
        UsageSendStatus {
            pending: held.pending(),
            ..held.status.clone()
        }
    }
}

impl Queue {
    /// Whether the batch is due at `now`: full, or its oldest turn has waited `max_delay`, or
    /// a batch sent before waits for its acknowledgement.
    fn due(&self, held: &Held, now: Instant) -> bool {
        held.in_flight.is_some()
            || held.turns.len() >= self.limits.max_turns.max(1)
            || held
                .turns
                .front()
                .is_some_and(|(at, _)| now.duration_since(*at) >= self.limits.max_delay)
    }

    /// How long until the batch is due by time; `None` with nothing held. A batch in flight
    /// (a flush that failed) is tried again after [`MAX_RETRY`] at the latest.
    fn until_due(&self) -> Option<Duration> {
        let held = self.held.lock();
        if held.in_flight.is_some() {
            return Some(MAX_RETRY);
        }
        held.turns
            .front()
            .map(|(at, _)| self.limits.max_delay.saturating_sub(at.elapsed()))
    }

    async fn flush(&self) -> Result<Option<u64>, SyncError> {
        // The turns held now: those up to this number (and a batch in flight, numbered before).
        let target = self.held.lock().next - 1;
        let mut last = None;
        loop {
            {
                let held = self.held.lock();
                let rest = held.turns.is_empty() || held.front_seq() > target;
                if held.in_flight.is_none() && rest {
                    return Ok(last);
                }
            }
            if let Some(version) = self.send().await? {
                last = Some(version);
            }
        }
    }

    /// Sends the batch in flight, or makes one of up to [`MAX_ENTRY_TURNS`] turns held and
    /// sends it, as one entry; the version written (`None`: the log held it already).
    async fn send(&self) -> Result<Option<u64>, SyncError> {
        let mut conn = self.conn.lock().await;
        let batch = {
            let mut held = self.held.lock();
            match &held.in_flight {
                Some(batch) => Arc::clone(batch),
                None => {
                    let n = held.turns.len().min(MAX_ENTRY_TURNS);
                    if n == 0 {
                        return Ok(None);
                    }
                    let through = held.front_seq() + n as u64 - 1;
                    let turns: Vec<TurnUse> = held.turns.drain(..n).map(|(_, turn)| turn).collect();
                    let body = WireEntry::turns(turns).encode()?;
                    let batch = Arc::new(InFlight {
                        through,
                        turns: n,
                        body,
                    });
                    held.in_flight = Some(Arc::clone(&batch));
                    batch
                }
            }
        };
        let result = match conn.as_mut().filter(|client| !client.is_closed()) {
            Some(client) => append_batch(client, &self.options, &self.sender, &batch).await,
            None => match log::connect_writer(&self.url, &self.options).await {
                Ok(client) => {
                    let client = conn.insert(client);
                    append_batch(client, &self.options, &self.sender, &batch).await
                }
                Err(e) => Err(e),
            },
        };
        let mut held = self.held.lock();
        match result {
            Ok(version) => {
                held.in_flight = None;
                if version.is_some() {
                    held.status.entries += 1;
                    held.status.turns += batch.turns as u64;
                }
                held.status.last_error = None;
                drop(held);
                if let Some(version) = version {
                    (self.written)(version);
                }
                Ok(version)
            }
            Err(e) => {
                // A timeout may leave the connection mid-statement: the next batch starts afresh.
                *conn = None;
                held.status.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// Appends `batch` as the next version unless the log holds it already (the `usage_sent` row
/// of `sender` at its last number or past it), in one statement, its own transaction: the
/// entry's JSON reaches PostgreSQL before the head's row is locked, and the lock is held for
/// that statement and its commit only. The version written, `None` if the log held the batch.
///
/// `usage_sent` is written first, by an upsert that PostgreSQL re-checks against the row's
/// latest version (so two sends of one batch, one stalled on the server, write it once); the
/// head moves, and the entry is inserted, only if it wrote.
async fn append_batch(
    client: &mut Client,
    options: &SyncOptions,
    sender: &str,
    batch: &InFlight,
) -> Result<Option<u64>, SyncError> {
    let ns = &options.namespace;
    let sql = format!(
        "WITH sent AS (
             INSERT INTO {ns}.usage_sent (sender, seq) VALUES ($1, $3)
             ON CONFLICT (sender) DO UPDATE SET seq = EXCLUDED.seq, at = now()
                 WHERE {ns}.usage_sent.seq < EXCLUDED.seq
             RETURNING seq),
         head AS (
             UPDATE {ns}.head SET version = version + 1
             WHERE id = 1 AND EXISTS (SELECT 1 FROM sent)
             RETURNING version),
         entry AS (
             INSERT INTO {ns}.log (version, changes) SELECT version, $2 FROM head),
         notified AS (
             SELECT pg_notify($4, version::text) FROM head)
         SELECT version FROM head, notified"
    );
    let channel = log::channel(ns);
    let through = log::to_sql(batch.through);
    let row = timed(
        options.query_timeout,
        "appending a usage batch",
        client.query_opt(&sql, &[&sender, &batch.body, &through, &channel]),
    )
    .await?;
    Ok(row.map(|row| log::to_version(row.get::<_, i64>(0))))
}

/// The queue's task: sends each batch when it is due, tries a failed one again after a
/// back-off, and, once the queue is closed, sends what is held and stops.
async fn run(queue: Arc<Queue>) {
    let mut retry = Duration::ZERO;
    let mut retry_at: Option<Instant> = None;
    loop {
        let woken = queue.wake.notified();
        let wait = match retry_at {
            Some(at) => Some(at.saturating_duration_since(Instant::now())),
            None => queue.until_due(),
        };
        match wait {
            Some(wait) => {
                tokio::select! {
                    () = woken => {}
                    () = tokio::time::sleep(wait) => {}
                }
            }
            None => woken.await,
        }
        if queue.closed.load(Ordering::SeqCst) {
            // What is held goes now, once; PostgreSQL away, it is lost (the queue's last
            // failure says why).
            let _ = queue.flush().await;
            return;
        }
        let now = Instant::now();
        if retry_at.is_some_and(|at| now < at) {
            continue;
        }
        let due = retry_at.is_some() || queue.due(&queue.held.lock(), now);
        if !due {
            continue;
        }
        match queue.flush().await {
            Ok(_) => {
                retry = Duration::ZERO;
                retry_at = None;
            }
            Err(_) => {
                retry = (retry * 2).clamp(MIN_RETRY, MAX_RETRY);
                retry_at = Some(Instant::now() + retry);
            }
        }
    }
}
