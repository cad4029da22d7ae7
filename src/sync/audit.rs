//! The audit of tool calls in PostgreSQL: the event tape's records (see
//! [`EventTape`](crate::events::EventTape)) in one table that every replica appends to.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::events::{Event, EventBus, EventSubscription};

use super::log::{self, timed};
use super::{SyncError, SyncOptions, check_namespace};

/// How many events one insert carries at most: a burst of calls costs a few round trips.
const AUDIT_BATCH: usize = 256;

struct Counters {
    written: AtomicU64,
    failed: AtomicU64,
}

/// Appends events to the `audit` table of the log's schema, one row per event (the event's
/// JSON, the replica's name, the time), from a background task: [`write`](Self::write) never
/// waits for PostgreSQL. Events that cannot be written (the server is down and the reconnection
/// fails) are counted in [`failed`](Self::failed) and dropped, as the file tape does.
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
/// use capstore::sync::{AuditLog, SyncOptions};
/// let url = "postgres://capstore@127.0.0.1:55432/postgres";
/// let audit = AuditLog::open(url, SyncOptions::default()).await?;
/// let bus = capstore::EventBus::new();
/// let _recording = audit.record(&bus);
/// bus.emit(&capstore::Event::CatalogChanged { version: 1, changes: 1 });
/// audit.flush().await;
/// let events = AuditLog::read(url, &SyncOptions::default()).await?;
/// assert!(!events.is_empty());
/// # Ok(()) }
/// ```
pub struct AuditLog {
    sender: mpsc::UnboundedSender<Message>,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

enum Message {
    Event(String),
    Flush(tokio::sync::oneshot::Sender<()>),
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("written", &self.written())
            .field("failed", &self.failed())
            .finish()
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AuditLog {
    /// Connects (creating the tables if missing) and starts the writing task on the current
    /// Tokio runtime.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// use capstore::sync::{AuditLog, SyncOptions};
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// let audit = AuditLog::open(url, SyncOptions::default()).await?;
    /// assert_eq!((audit.written(), audit.failed()), (0, 0));
    /// # Ok(()) }
    /// ```
    pub async fn open(url: &str, options: SyncOptions) -> Result<AuditLog, SyncError> {
        check_namespace(&options.namespace)?;
        let mut client = log::connect_spawned(url, &options).await?;
        log::ensure_schema(&mut client, &options).await?;
        let (sender, receiver) = mpsc::unbounded_channel();
        let counters = Arc::new(Counters {
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        });
        let task = tokio::spawn(write_events(
            url.to_string(),
            options,
            client,
            receiver,
            Arc::clone(&counters),
        ));
        Ok(AuditLog {
            sender,
            counters,
            task,
        })
    }

    /// Queues one event for the table.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let audit = capstore::sync::AuditLog::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// audit.write(&capstore::Event::CatalogChanged { version: 7, changes: 2 });
    /// audit.flush().await;
    /// # Ok(()) }
    /// ```
    pub fn write(&self, event: &Event) {
        queue(&self.sender, &self.counters, event);
    }

    /// Queues every event `bus` emits from now on, until the subscription is dropped.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let audit = capstore::sync::AuditLog::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// let bus = capstore::EventBus::new();
    /// let recording = audit.record(&bus); // drop it to stop recording
    /// bus.emit(&capstore::Event::CatalogChanged { version: 1, changes: 1 });
    /// # drop(recording);
    /// # Ok(()) }
    /// ```
    pub fn record(&self, bus: &EventBus) -> EventSubscription {
        let sender = self.sender.clone();
        let counters = Arc::clone(&self.counters);
        bus.subscribe(move |event| queue(&sender, &counters, event))
    }

    /// Waits until every event queued before the call is written (or counted as failed).
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let audit = capstore::sync::AuditLog::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// audit.write(&capstore::Event::CatalogChanged { version: 1, changes: 1 });
    /// audit.flush().await;
    /// assert_eq!(audit.written() + audit.failed(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) {
        let (done, wait) = tokio::sync::oneshot::channel();
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }

    /// How many events were written.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let audit = capstore::sync::AuditLog::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// println!("{} events audited", audit.written());
    /// # Ok(()) }
    /// ```
    pub fn written(&self) -> u64 {
        self.counters.written.load(Ordering::Relaxed)
    }

    /// How many events could not be written.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// # let audit = capstore::sync::AuditLog::open("postgres://capstore@127.0.0.1:55432/postgres", Default::default()).await?;
    /// if audit.failed() > 0 {
    ///     eprintln!("{} events could not be audited", audit.failed());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }

    /// Every audited event with the replica that wrote it, oldest first.
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), capstore::sync::SyncError> {
    /// use capstore::sync::{AuditLog, SyncOptions};
    /// let url = "postgres://capstore@127.0.0.1:55432/postgres";
    /// for (replica, event) in AuditLog::read(url, &SyncOptions::default()).await? {
    ///     println!("{replica}: {event:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read(url: &str, options: &SyncOptions) -> Result<Vec<(String, Event)>, SyncError> {
        check_namespace(&options.namespace)?;
        let client = log::connect_spawned(url, options).await?;
        let ns = &options.namespace;
        let rows = timed(
            options.query_timeout,
            "reading the audit",
            client.query(
                &format!("SELECT replica, event FROM {ns}.audit ORDER BY id"),
                &[],
            ),
        )
        .await?;
        rows.iter()
            .map(|row| {
                let replica: String = row.get(0);
                let event: String = row.get(1);
                serde_json::from_str(&event)
                    .map(|e| (replica, e))
                    .map_err(|e| SyncError::Decode {
                        what: "an audit record".into(),
                        reason: e.to_string(),
                    })
            })
            .collect()
    }
}

/// Sends one event's JSON to the writing task; counts it as failed if that cannot be done.
fn queue(sender: &mpsc::UnboundedSender<Message>, counters: &Counters, event: &Event) {
    let sent = serde_json::to_string(event)
        .ok()
        .is_some_and(|json| sender.send(Message::Event(json)).is_ok());
    if !sent {
        counters.failed.fetch_add(1, Ordering::Relaxed);
    }
}

async fn write_events(
    url: String,
    options: SyncOptions,
    client: tokio_postgres::Client,
    mut receiver: mpsc::UnboundedReceiver<Message>,
    counters: Arc<Counters>,
) {
    let mut client = Some(client);
    let ns = options.namespace.clone();
    while let Some(first) = receiver.recv().await {
        let mut events = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Event(json) => events.push(json),
                Message::Flush(done) => flushes.push(done),
            }
            next = if events.len() < AUDIT_BATCH {
                receiver.try_recv().ok()
            } else {
                None
            };
        }
        if !events.is_empty() {
            if client
                .as_ref()
                .is_none_or(tokio_postgres::Client::is_closed)
            {
                client = log::connect_spawned(&url, &options).await.ok();
            }
            let n = events.len() as u64;
            let written = match &client {
                Some(c) => timed(
                    options.query_timeout,
                    "writing the audit",
                    c.execute(
                        &format!(
                            "INSERT INTO {ns}.audit (replica, event)
                             SELECT $1, e FROM unnest($2::text[]) AS e"
                        ),
                        &[&options.replica, &events],
                    ),
                )
                .await
                .is_ok(),
                None => false,
            };
            if written {
                counters.written.fetch_add(n, Ordering::Relaxed);
            } else {
                counters.failed.fetch_add(n, Ordering::Relaxed);
                client = None;
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}
