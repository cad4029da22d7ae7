//! A replica: a store that follows the log, and writes through it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client, GenericClient};

use crate::store::{Snapshot, Store, StoreBuilder, Subscription};
use crate::usage::{BatchLimits, TurnUse};

use super::log::{self, timed};
use super::usage::ReplicaUsageQueue;
use super::wire::{self, Batch, LogPosition, SyncTables, WireEntry, WireTables};
use super::{SyncError, SyncOptions, check_namespace};

/// The first wait before a follower reconnects; it doubles up to [`MAX_BACKOFF`]. Short, so a
/// restarted server on loopback is followed again within a fraction of a second.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between reconnection attempts: a server down for long is retried at least
/// this often, without a replica flooding its log with failures.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Where a replica stands, from [`Replica::status`].
///
/// ```
/// let status = capstore::sync::SyncStatus { version: 3, latest_known: 5, connected: true,
///     refused: 0, last_error: None };
/// assert!(status.is_behind());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SyncStatus {
    /// The log version the replica's store holds.
    pub version: u64,
    /// The highest version the replica knows the log has reached.
    pub latest_known: u64,
    /// Whether the follower is connected and listening. When not, the replica serves its last
    /// version and cannot know how far behind it is.
    pub connected: bool,
    /// Log entries refused so far (see the module doc): the same count on every replica at the
    /// same version.
    pub refused: u64,
    /// The follower's last error, cleared once it is following again.
    pub last_error: Option<String>,
}

impl SyncStatus {
    /// Whether the replica may be behind the log: it is not connected, or it knows of entries
    /// it has not applied yet.
    /// ```
    /// let cut_off = capstore::sync::SyncStatus { version: 5, latest_known: 5, connected: false,
    ///     refused: 0, last_error: Some("reading the log: no answer".into()) };
    /// assert!(cut_off.is_behind()); // it cannot know what it missed
    /// ```
    pub fn is_behind(&self) -> bool {
        !self.connected || self.version < self.latest_known
    }
}

struct Follow {
    connected: bool,
    latest_known: u64,
    last_error: Option<String>,
}

struct Inner {
    url: String,
    options: SyncOptions,
    store: Store,
    /// The log position and trust tables declared on `store`.
    tables: SyncTables,
    /// The connection writes go through; reopened on the next write after it breaks.
    writer: tokio::sync::Mutex<Option<Client>>,
    follow: Mutex<Follow>,
    /// Wakes the follower at once (after a local write) instead of at its next notification.
    wake: Notify,
    /// Woken each time the follower is connected and listening again ([`Replica::open`] waits
    /// for the first).
    following: Notify,
}

/// One replica of a catalog shared through PostgreSQL: a [`Store`] that follows the log, and
/// writes through it. See the [module](super) for the contract.
///
/// Thread-safe (`Send + Sync`); share it in an `Arc`. Its follower runs as a task on the Tokio
/// runtime it was opened on, and stops when the replica is dropped.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
/// use capstore::sync::{Batch, Replica, SyncOptions};
/// use capstore::{Tool, TOOLS};
/// let replica = Replica::open("postgres://capstore@127.0.0.1:55432/postgres", SyncOptions::default()).await?;
/// let seen = replica.version();
/// let mut batch = Batch::new();
/// batch.put(&TOOLS, Tool::new("search", "Search the web").with_source("web"))?;
/// match replica.write_expecting(seen, batch).await {
///     Ok(version) => println!("written as version {version}"),
///     Err(capstore::sync::SyncError::Conflict { actual, .. }) => println!("someone wrote {actual} first"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
pub struct Replica {
    inner: Arc<Inner>,
    follower: JoinHandle<()>,
    /// The runtime it was opened on: its usage queues' tasks run there too.
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("namespace", &self.inner.options.namespace)
            .field("status", &self.status())
            .finish()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

impl Replica {
    /// Opens a replica with a new store of the built-in tables: creates the log's tables if
    /// missing, loads the snapshot and the log after it, then follows. Returns once the store
    /// holds the log's latest version (as of the last read) and the follower is connected and
    /// listening, so [`status`](Self::status) reads connected from the first call; or the
    /// first error (the follower's, if it cannot connect within the connect and query
    /// timeouts).
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// use capstore::sync::{Replica, SyncOptions};
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// let replica = Replica::open(url, SyncOptions::default()).await?;
    /// println!("at log version {}", replica.version());
    /// # Ok(()) }
    /// ```
    pub async fn open(url: &str, options: SyncOptions) -> Result<Replica, SyncError> {
        Replica::open_with(Store::builder(), url, options).await
    }

    /// [`open`](Self::open) with a store from `builder` (your own tables beside the built-in
    /// ones; they stay local). The builder must start from [`Store::builder`].
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// use capstore::store::TableSchema;
    /// use capstore::sync::{Replica, SyncOptions};
    /// let mut builder = capstore::Store::builder();
    /// let notes = builder.table(TableSchema::new("notes", |n: &String| n.clone())).expect("a new table");
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// let replica = Replica::open_with(builder, url, SyncOptions::default()).await?;
    /// replica.store().write(|tx| tx.upsert(&notes, "local only".to_string()))?;
    /// # Ok(()) }
    /// ```
    pub async fn open_with(
        mut builder: StoreBuilder,
        url: &str,
        options: SyncOptions,
    ) -> Result<Replica, SyncError> {
        check_namespace(&options.namespace)?;
        let tables = SyncTables::declare(&mut builder)?;
        let store = builder.build();
        let mut client = log::connect_writer(url, &options).await?;
        log::ensure_schema(&mut client, &options).await?;
        let inner = Arc::new(Inner {
            url: url.to_string(),
            options,
            store,
            tables,
            writer: tokio::sync::Mutex::new(None),
            follow: Mutex::new(Follow {
                connected: false,
                latest_known: 0,
                last_error: None,
            }),
            wake: Notify::new(),
            following: Notify::new(),
        });
        catch_up(&inner, &client).await?;
        *inner.writer.lock().await = Some(client);
        let follower = tokio::spawn(follow(Arc::clone(&inner)));
        let replica = Replica {
            inner,
            follower,
            runtime: tokio::runtime::Handle::current(),
        };
        replica.wait_until_following().await?;
        Ok(replica)
    }

    /// Waits until the follower is connected and listening; its last error (or a timeout) if
    /// it is not within the time one connection attempt may take.
    async fn wait_until_following(&self) -> Result<(), SyncError> {
        let options = &self.inner.options;
        let limit = options.connect_timeout + options.query_timeout * 2 + MAX_BACKOFF;
        let deadline = Instant::now() + limit;
        loop {
            // Registered before the check, so a wake between the two is not lost.
            let woken = self.inner.following.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            {
                let follow = self.inner.follow.lock();
                if follow.connected {
                    return Ok(());
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if tokio::time::timeout(left, woken).await.is_err() {
                let follow = self.inner.follow.lock();
                return Err(match &follow.last_error {
                    Some(reason) => SyncError::Postgres {
                        what: "starting to follow the log".into(),
                        reason: reason.clone(),
                    },
                    None => SyncError::Timeout {
                        what: "starting to follow the log".into(),
                        after: limit,
                    },
                });
            }
        }
    }

    /// The replica's store: read it as any store. Write its shared tables only through
    /// [`write`](Self::write); its other tables (handlers, your own) are local.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let tools = replica.store().snapshot().count(&capstore::TOOLS)?;
    /// # Ok(()) }
    /// ```
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The latest snapshot of the store (as [`Store::snapshot`]).
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let snap = replica.snapshot();
    /// let found = snap.contains(&capstore::TOOLS, "fs/read_file")?;
    /// # Ok(()) }
    /// ```
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.store.snapshot()
    }

    /// What the state shared beside the catalog needs (`sync::trust`, `sync::clients`): where
    /// PostgreSQL is, and the store and tables it is read from.
    #[cfg(feature = "mcp-live")]
    pub(crate) fn shared_parts(&self) -> (String, SyncOptions, Store, SyncTables) {
        (
            self.inner.url.clone(),
            self.inner.options.clone(),
            self.inner.store.clone(),
            self.inner.tables,
        )
    }

    /// The log version the store holds now.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// println!("holding log version {}", replica.version());
    /// # Ok(()) }
    /// ```
    pub fn version(&self) -> u64 {
        self.version_of(&self.inner.store.snapshot())
    }

    /// The log version a snapshot of this replica's store holds: every replica's snapshot at
    /// the same log version has the same shared tables.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let snap = replica.snapshot(); // read from it as long as you like
    /// let version = replica.version_of(&snap); // the same tables on every replica at this version
    /// # Ok(()) }
    /// ```
    pub fn version_of(&self, snapshot: &Snapshot) -> u64 {
        wire::position(snapshot, &self.inner.tables.position).version
    }

    /// Where the replica stands: its version, the latest it knows of, whether it is connected.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let status = replica.status();
    /// if status.is_behind() {
    ///     eprintln!("serving version {}; last error: {:?}", status.version, status.last_error);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> SyncStatus {
        let pos = wire::position(&self.inner.store.snapshot(), &self.inner.tables.position);
        let follow = self.inner.follow.lock();
        SyncStatus {
            version: pos.version,
            latest_known: follow.latest_known.max(pos.version),
            connected: follow.connected,
            refused: pos.refused,
            last_error: follow.last_error.clone(),
        }
    }

    /// Appends `batch` to the log as the next version, whatever the log holds now; returns that
    /// version once PostgreSQL has committed it. The replica applies it when its follower
    /// reads it back (at once: it is woken); [`wait_for`](Self::wait_for) the version to read
    /// your own write. An empty batch writes nothing and returns the current version.
    ///
    /// The batch is first checked against the local store (and nothing is sent if it fails).
    /// A failure after the commit was sent (a broken connection, a timeout) leaves it unknown
    /// whether the write happened: read the log (or write with an expected version) to know.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// use capstore::{Tool, TOOLS};
    /// let mut batch = capstore::sync::Batch::new();
    /// batch.put(&TOOLS, Tool::new("read_file", "Read a file").with_source("fs"))?;
    /// let version = replica.write(batch).await?;
    /// let snap = replica.wait_for(version, std::time::Duration::from_secs(5)).await?;
    /// assert!(snap.contains(&TOOLS, "fs/read_file")?);
    /// # Ok(()) }
    /// ```
    pub async fn write(&self, batch: Batch) -> Result<u64, SyncError> {
        self.write_inner(batch, None).await
    }

    /// [`write`](Self::write), only if the log is at version `expected` (the version the
    /// caller's decision was based on); otherwise [`SyncError::Conflict`] and nothing written.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// use capstore::sync::{Batch, SyncError};
    /// let seen = replica.version();
    /// let mut batch = Batch::new();
    /// batch.delete(&capstore::TOOLS, "fs/old_tool");
    /// match replica.write_expecting(seen, batch).await {
    ///     Ok(version) => println!("deleted as version {version}"),
    ///     Err(SyncError::Conflict { actual, .. }) => println!("the log moved to {actual}: look again"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn write_expecting(&self, expected: u64, batch: Batch) -> Result<u64, SyncError> {
        self.write_inner(batch, Some(expected)).await
    }

    async fn write_inner(&self, batch: Batch, expected: Option<u64>) -> Result<u64, SyncError> {
        if batch.is_empty() {
            return Ok(self.version());
        }
        {
            // Checked on a transaction that is then dropped: nothing local changes.
            let mut tx = self.inner.store.begin();
            wire::apply_changes(&mut tx, &self.inner.tables, &batch.changes)?;
        }
        self.append(&WireEntry::changes(batch.changes), expected)
            .await
    }

    /// Counts one turn's evidence ([`TurnUse`]: the tools it called, in order, the tools it
    /// sent, the tools the previous turn called) into the [`USAGE`](crate::USAGE) table of
    /// every replica: appends it to the log as the next version and returns that version once
    /// PostgreSQL has committed it, as [`write`](Self::write) does. Every replica, this one
    /// included, counts it when its follower applies that version, in version order, so all
    /// replicas hold the same usage rows at the same version and two replicas learning at once
    /// lose no count. Every tool named counts, whether or not this replica's `tools` table holds
    /// it (a gateway's live tools are its own; every gateway connects the same servers). An empty
    /// turn (nothing sent or called) writes nothing and returns the current version.
    ///
    /// One entry per turn: for a stream of turns (a gateway's), send them in batches with a
    /// [`usage_queue`](Self::usage_queue) instead, one entry per interval.
    ///
    /// Write a replica's usage only this way or through its usage queue: a local
    /// [`learn`](crate::usage::learn) on its store would count on this replica alone. As with `write`, a failure after the commit was sent
    /// leaves it unknown whether the turn was counted; retrying may count it twice.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// use capstore::usage::TurnUse;
    /// let turn = TurnUse::new(["fs/cd", "fs/mv"]).with_sent(["fs/mv", "fs/read"]);
    /// let version = replica.learn(turn).await?;
    /// let snap = replica.wait_for(version, std::time::Duration::from_secs(5)).await?;
    /// assert!(snap.get(&capstore::USAGE, "fs/mv")?.is_some_and(|u| u.calls >= 1));
    /// # Ok(()) }
    /// ```
    pub async fn learn(&self, turn: TurnUse) -> Result<u64, SyncError> {
        if turn.is_empty() {
            return Ok(self.version());
        }
        let entry = WireEntry {
            learn: Some(turn),
            ..WireEntry::default()
        };
        self.append(&entry, None).await
    }

    /// A queue that sends this replica's turns through the log in batches, one entry per batch
    /// (within `limits`; [`LOG_BATCH_LIMITS`](super::LOG_BATCH_LIMITS) suits a gateway), on a
    /// connection of its own, so that catalog and trust writes never wait behind usage. Every
    /// replica, this one included, counts each batch's turns once, when it applies the entry.
    /// See [`ReplicaUsageQueue`] and [its module](super::usage) for the guarantees. Its task runs
    /// on the runtime this replica was opened on.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// use capstore::sync::LOG_BATCH_LIMITS;
    /// let queue = replica.usage_queue(LOG_BATCH_LIMITS);
    /// queue.push(capstore::usage::TurnUse::new(["fs/cd", "fs/mv"]));
    /// queue.flush().await?; // before the runtime stops
    /// # Ok(()) }
    /// ```
    pub fn usage_queue(&self, limits: BatchLimits) -> ReplicaUsageQueue {
        let replica = Arc::downgrade(&self.inner);
        ReplicaUsageQueue::start(
            self.inner.url.clone(),
            self.inner.options.clone(),
            limits,
            &self.runtime,
            Box::new(move |version| {
                if let Some(inner) = replica.upgrade() {
                    written(&inner, version);
                }
            }),
        )
    }

    /// Appends `entry` to the log (if the head is at `expected`, when given) and wakes the
    /// follower; the version written.
    async fn append(&self, entry: &WireEntry, expected: Option<u64>) -> Result<u64, SyncError> {
        let body = entry.encode()?;
        let mut writer = self.inner.writer.lock().await;
        if writer.as_ref().is_none_or(Client::is_closed) {
            *writer = Some(log::connect_writer(&self.inner.url, &self.inner.options).await?);
        }
        let Some(client) = writer.as_mut() else {
            return Err(SyncError::Postgres {
                what: "writing".into(),
                reason: "no connection".into(),
            });
        };
        let result = log::append(client, &self.inner.options, expected, &body).await;
        match &result {
            Ok(version) => note_latest(&self.inner, *version),
            Err(SyncError::Conflict { actual, .. }) => {
                let mut follow = self.inner.follow.lock();
                follow.latest_known = follow.latest_known.max(*actual);
            }
            // A timeout may leave the connection mid-statement: start the next write afresh.
            Err(_) => *writer = None,
        }
        drop(writer);
        self.inner.wake.notify_one();
        result
    }

    /// Keeps `other`'s shared tables (`tools`, `skills`, `hooks`) and its usage rows
    /// ([`USAGE`](crate::USAGE)) following this replica's: copies them now (one transaction),
    /// then applies each later change as this replica's store commits it. For a store that also
    /// holds records of its own (a gateway's live servers' tools with their handlers): those
    /// stay, unless the log writes the same key. The usage rows copied include those of tools
    /// only `other` holds (its live tools, counted through [`learn`](Self::learn)), so its
    /// selections bring their companions. Dropping the returned subscription stops the copying.
    ///
    /// Each change is copied on the committing thread, in version order, into `other` (one
    /// transaction per commit): `other` must not be written while a transaction on it is held
    /// by the thread that drives this replica.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let gateway_store = capstore::Store::new(); // also holds this process's own tools
    /// let mirroring = replica.mirror_into(&gateway_store)?; // keep it while mirroring
    /// # drop(mirroring);
    /// # Ok(()) }
    /// ```
    pub fn mirror_into(&self, other: &Store) -> Result<Subscription, SyncError> {
        let target = other.clone();
        // Subscribe first, under the writer lock of the replica's store, so that no commit
        // falls between the copy and the subscription.
        let guard = self.inner.store.begin();
        let snap = guard.view().clone();
        let subscription = self.inner.store.subscribe(move |changes| {
            // A refused copy (the other store's own rule) leaves that store as it was; the
            // replica goes on regardless.
            let _ = target.write(|tx| wire::copy_changes(tx, changes));
        });
        other.write(|tx| wire::copy_tables(tx, &snap))?;
        drop(guard);
        Ok(subscription)
    }

    /// Waits until the store holds log version `version` (or later) and returns that snapshot;
    /// [`SyncError::Timeout`] if it does not within `timeout`.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let replica = capstore::sync::Replica::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let snap = replica.wait_for(42, std::time::Duration::from_secs(5)).await?;
    /// assert!(replica.version_of(&snap) >= 42);
    /// # Ok(()) }
    /// ```
    pub async fn wait_for(
        &self,
        version: u64,
        timeout: Duration,
    ) -> Result<Arc<Snapshot>, SyncError> {
        let deadline = Instant::now() + timeout;
        let mut versions = self.inner.store.versions();
        loop {
            let snap = self.inner.store.snapshot();
            if self.version_of(&snap) >= version {
                return Ok(snap);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let changed = tokio::time::timeout(left, versions.changed()).await;
            if !matches!(changed, Ok(Ok(()))) {
                return Err(SyncError::Timeout {
                    what: format!("waiting for log version {version}"),
                    after: timeout,
                });
            }
        }
    }
}

/// The follower: connect, LISTEN, catch up, wait for a notification (or the poll interval),
/// catch up again; on any error, reconnect after a back-off. Runs until the replica is dropped.
async fn follow(inner: Arc<Inner>) {
    let mut backoff = MIN_BACKOFF;
    loop {
        let started = Instant::now();
        let err = follow_once(&inner).await;
        {
            let mut follow = inner.follow.lock();
            follow.connected = false;
            follow.last_error = Some(err.to_string());
        }
        if started.elapsed() > MAX_BACKOFF {
            backoff = MIN_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Follows on one connection until it fails; returns why.
async fn follow_once(inner: &Inner) -> SyncError {
    let (client, mut connection) = match log::connect(&inner.url, &inner.options).await {
        Ok(pair) => pair,
        Err(e) => return e,
    };
    // The connection's driver: notifications in, the end of the connection as a closed channel.
    let (tx, mut notified) = mpsc::unbounded_channel::<u64>();
    let driver = tokio::spawn(async move {
        while let Some(message) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().parse().unwrap_or(0)).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    let _stop_driver = AbortOnDrop(driver);
    let channel = log::channel(&inner.options.namespace);
    if let Err(e) = timed(
        inner.options.query_timeout,
        "listening for the log",
        client.batch_execute(&format!("LISTEN {channel}")),
    )
    .await
    {
        return e;
    }
    // Listening now, so no later entry goes unnoticed; the head read after it says how far the
    // log is. Connected from here: until the entries up to the head are applied, the status
    // says behind by its versions, not by a connection it has.
    match log::head(&client, &inner.options).await {
        Ok(head) => note_latest(inner, head),
        Err(e) => return e,
    }
    {
        let mut follow = inner.follow.lock();
        follow.connected = true;
        follow.last_error = None;
    }
    inner.following.notify_waiters();
    loop {
        if let Err(e) = catch_up(inner, &client).await {
            return e;
        }
        tokio::select! {
            v = notified.recv() => match v {
                Some(v) => note_latest(inner, v),
                None => return SyncError::Postgres {
                    what: "following the log".into(),
                    reason: "the connection closed".into(),
                },
            },
            () = inner.wake.notified() => {}
            () = tokio::time::sleep(inner.options.poll_interval) => {}
        }
        while let Ok(v) = notified.try_recv() {
            note_latest(inner, v);
        }
    }
}

struct AbortOnDrop(JoinHandle<()>);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Another writer of this process (a usage queue) appended `version`: the follower reads it at
/// once.
fn written(inner: &Inner, version: u64) {
    note_latest(inner, version);
    inner.wake.notify_one();
}

fn note_latest(inner: &Inner, version: u64) {
    let mut follow = inner.follow.lock();
    follow.latest_known = follow.latest_known.max(version);
}

/// Applies the log after the store's position until there is nothing more to read; loads the
/// snapshot instead where compaction removed the entries it needs.
async fn catch_up(inner: &Inner, client: &impl GenericClient) -> Result<(), SyncError> {
    // Each round applies entries or loads a snapshot, so it moves forward; a round that cannot
    // (the log and the snapshot disagree) ends in an error after a few tries, not a spin.
    let mut stuck = 0;
    loop {
        let applied = wire::position(&inner.store.snapshot(), &inner.tables.position).version;
        let rows = log::tail(client, &inner.options, applied).await?;
        match rows.first() {
            Some((first, _)) if *first == applied + 1 => {
                let full = rows.len() as i64 == log::TAIL_PAGE;
                // On a blocking thread: a page of large entries (a usage batch of a thousand
                // turns) is milliseconds of work, which would hold a runtime worker that the
                // gateway's requests and the replica's own writes need.
                let (store, tables) = (inner.store.clone(), inner.tables);
                let last =
                    tokio::task::spawn_blocking(move || apply_rows(&store, &tables, applied, rows))
                        .await
                        .map_err(|e| SyncError::Worker {
                            reason: format!("applying the log after version {applied}: {e}"),
                        })??;
                note_latest(inner, last);
                stuck = 0;
                if !full {
                    return Ok(());
                }
            }
            first => {
                let head = log::head(client, &inner.options).await?;
                note_latest(inner, head);
                if first.is_none() && head <= applied {
                    return Ok(());
                }
                // Entries after `applied` are missing from the log: compaction took them.
                match log::snapshot(client, &inner.options).await? {
                    Some((version, tables)) if version > applied => {
                        load_snapshot(inner, version, tables).await?;
                        stuck = 0;
                    }
                    _ => {
                        // Or a write committed between the two reads: read again.
                        stuck += 1;
                        if stuck > 3 {
                            return Err(SyncError::Gap { applied });
                        }
                    }
                }
            }
        }
    }
}

/// Applies consecutive rows after `applied`, each in its own store transaction; returns the last
/// version applied.
fn apply_rows(
    store: &Store,
    tables: &SyncTables,
    mut applied: u64,
    rows: Vec<(u64, String)>,
) -> Result<u64, SyncError> {
    for (version, body) in rows {
        if version != applied + 1 {
            break;
        }
        store.write(|tx| wire::apply_entry(tx, tables, version, &body))?;
        applied = version;
    }
    Ok(applied)
}

/// Replaces the shared tables with a snapshot row's, as one store transaction (on a blocking
/// thread: at registry scale it is a bulk load of about a second).
async fn load_snapshot(inner: &Inner, version: u64, tables: String) -> Result<(), SyncError> {
    let store = inner.store.clone();
    let local = inner.tables;
    let task = tokio::task::spawn_blocking(move || -> Result<(), SyncError> {
        let tables: WireTables = serde_json::from_str(&tables).map_err(|e| SyncError::Decode {
            what: format!("the snapshot at version {version}"),
            reason: e.to_string(),
        })?;
        let refused = tables.refused;
        store.write(|tx| -> Result<(), SyncError> {
            wire::replace_tables(tx, &local, tables)?;
            tx.upsert(&local.position, LogPosition { version, refused })?;
            Ok(())
        })?;
        Ok(())
    });
    task.await.map_err(|e| SyncError::Decode {
        what: format!("the snapshot at version {version}"),
        reason: e.to_string(),
    })?
}

/// Folds the log into the snapshot row: the shared tables at the head, then deletes the log
/// rows it folded. Writers wait meanwhile (it holds the head's row lock); replicas behind it
/// load the snapshot. Returns the version compacted to. `capstore compact --state URL`.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
/// let url = "postgres://capstore@127.0.0.1:55432/postgres";
/// let version = capstore::sync::compact(url, &capstore::sync::SyncOptions::default()).await?;
/// println!("the log starts after version {version}");
/// # Ok(()) }
/// ```
pub async fn compact(url: &str, options: &SyncOptions) -> Result<u64, SyncError> {
    check_namespace(&options.namespace)?;
    let mut client = log::connect_spawned(url, options).await?;
    log::ensure_schema(&mut client, options).await?;
    let ns = &options.namespace;
    let t = options.query_timeout;
    let tx = timed(t, "beginning compaction", client.transaction()).await?;
    let head = log::lock_head(&tx, options).await?;
    // A scratch replica's store, filled exactly as a follower fills its own.
    let mut builder = Store::builder();
    let local = SyncTables::declare(&mut builder)?;
    let scratch = builder.build();
    if let Some((version, tables)) = log::snapshot(&tx, options).await? {
        let tables: WireTables = serde_json::from_str(&tables).map_err(|e| SyncError::Decode {
            what: format!("the snapshot at version {version}"),
            reason: e.to_string(),
        })?;
        let refused = tables.refused;
        scratch.write(|w| -> Result<(), SyncError> {
            wire::replace_tables(w, &local, tables)?;
            w.upsert(&local.position, LogPosition { version, refused })?;
            Ok(())
        })?;
    }
    loop {
        let applied = wire::position(&scratch.snapshot(), &local.position).version;
        if applied >= head {
            break;
        }
        let rows = log::tail(&tx, options, applied).await?;
        if rows.first().is_none_or(|(v, _)| *v != applied + 1) {
            return Err(SyncError::Gap { applied });
        }
        for (version, body) in rows {
            if version > head {
                break;
            }
            scratch.write(|w| wire::apply_entry(w, &local, version, &body))?;
        }
    }
    let snap = scratch.snapshot();
    let pos = wire::position(&snap, &local.position);
    let tables = wire::encode_tables(&snap, &local, pos.refused)?;
    let v = log::to_sql(head);
    timed(
        t,
        "writing the snapshot",
        tx.execute(
            &format!(
                "INSERT INTO {ns}.snapshot (id, version, tables) VALUES (1, $1, $2)
                 ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, tables = EXCLUDED.tables"
            ),
            &[&v, &tables],
        ),
    )
    .await?;
    timed(
        t,
        "deleting the folded log",
        tx.execute(&format!("DELETE FROM {ns}.log WHERE version <= $1"), &[&v]),
    )
    .await?;
    timed(t, "committing compaction", tx.commit()).await?;
    Ok(head)
}
