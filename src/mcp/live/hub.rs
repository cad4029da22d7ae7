//! [`McpHub`]: the servers of a configuration, connected and kept in step with a store.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use crate::mcp::ImportReport;
use crate::mcp::config::McpConfig;
use crate::store::Store;

use super::error::LiveError;
use super::quarantine::{HeldTool, Quarantine};
use super::session::{Session, Task};
use super::status::{LiveEvent, LiveOptions, ServerStatus};

/// How one server's start-up went: its tools imported, or why not, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Startup {
    /// The server.
    pub server: String,
    /// The first import, or the first attempt's error.
    pub result: Result<ImportReport, LiveError>,
    /// From spawning (or the first HTTP request) to the tools being selectable, or to the
    /// failure.
    pub elapsed: Duration,
}

/// The servers of an `mcpServers` configuration, connected, their tools imported into a store
/// and kept in step. See the [module docs](super) for what it does and costs.
///
/// Cloning is cheap (one `Arc`); the clones share the connections. The connections end when
/// [`shutdown`](Self::shutdown) is called or the last clone is dropped; the tools stay in the
/// store and then fail with [`CallError::Unavailable`](super::CallError::Unavailable).
///
/// ```no_run
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::mcp::{McpConfig, live::{LiveOptions, McpHub}};
/// let store = capstore::Store::new();
/// let config = McpConfig::from_path(".mcp.json")?;
/// let hub = McpHub::connect(&store, &config, LiveOptions::default()).await;
/// for startup in hub.startup() {
///     match &startup.result {
///         Ok(report) => println!("{}: {} tools", startup.server, report.added.len()),
///         Err(error) => eprintln!("{error}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Hub>,
}

struct Hub {
    store: Store,
    sessions: Vec<Arc<Session>>,
    startup: Vec<Startup>,
    events: broadcast::Sender<LiveEvent>,
    shutdown: watch::Sender<bool>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        // The tasks stop (and their servers with them) at their next wait.
        let _ = self.shutdown.send(true);
    }
}

impl McpHub {
    /// Connects to every server of `config` at once, imports each one's tools into `store`
    /// (namespaced by server name, with a handler per tool that forwards `tools/call`), and
    /// returns when every server has been imported or has failed, each within its own
    /// timeouts: a slow or dead server delays nothing but itself, and never beyond
    /// `connect_timeout + list_timeout`. Servers that failed are retried in the background
    /// with back-off; [`startup`](Self::startup) says how each went.
    ///
    /// Must be called inside a tokio runtime (with the time and process drivers enabled: a
    /// default `#[tokio::main]` or `Runtime::new()` has them).
    pub async fn connect(store: &Store, config: &McpConfig, options: LiveOptions) -> McpHub {
        let (events, _) = broadcast::channel(256);
        let (shutdown, _) = watch::channel(false);
        let mut sessions = Vec::new();
        let mut tasks = Vec::new();
        let mut pending = Vec::new();
        for server in &config.servers {
            let session = Arc::new(Session::new(server, &options));
            let (first, first_rx) = oneshot::channel();
            let task = Task {
                session: Arc::clone(&session),
                config: server.clone(),
                store: store.clone(),
                options: options.clone(),
                events: events.clone(),
                shutdown: shutdown.subscribe(),
            };
            tasks.push(tokio::spawn(task.run(first)));
            pending.push((server.name.clone(), first_rx));
            sessions.push(session);
        }
        let mut startup = Vec::new();
        // The tasks run concurrently; waiting for them in turn takes as long as the slowest.
        for (server, first) in pending {
            let (result, elapsed) = first.await.unwrap_or_else(|_| {
                (
                    Err(LiveError::List {
                        server: server.clone(),
                        reason: "the connection task ended before its first attempt".into(),
                    }),
                    Duration::ZERO,
                )
            });
            startup.push(Startup {
                server,
                result,
                elapsed,
            });
        }
        let hub = McpHub {
            inner: Arc::new(Hub {
                store: store.clone(),
                sessions,
                startup,
                events,
                shutdown,
                tasks: Mutex::new(Vec::new()),
            }),
        };
        if let Some(quarantine) = options.quarantine {
            tasks.push(tokio::spawn(watch_approvals(
                hub.clone_weak(),
                quarantine,
                hub.inner.shutdown.subscribe(),
            )));
        }
        *hub.inner.tasks.lock() = tasks;
        hub
    }

    fn clone_weak(&self) -> std::sync::Weak<Hub> {
        Arc::downgrade(&self.inner)
    }

    /// The live tools the quarantine holds back now ([`LiveOptions::quarantine`]), with why,
    /// in server then list order. They are not in the store: nothing selects or runs them.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// for held in hub.held() { eprintln!("{} is quarantined: {}", held.key, held.why); }
    /// # }
    /// ```
    pub fn held(&self) -> Vec<HeldTool> {
        self.inner.sessions.iter().flat_map(|s| s.held()).collect()
    }

    /// The definition of the held tool `key` (`server/name`) as its server offers it now
    /// (name, description, input schema: what [`fingerprint`](super::fingerprint) hashes and
    /// an approval would trust), for a person to read before approving. `None` when the hub
    /// does not hold it. It is not in the store: this is the one place to read it.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// for held in hub.held() {
    ///     if let Some(tool) = hub.held_definition(&held.key) {
    ///         eprintln!("{} now says: {}", held.key, tool.description);
    ///     }
    /// }
    /// # }
    /// ```
    pub fn held_definition(&self, key: &str) -> Option<crate::tools::Tool> {
        self.inner
            .sessions
            .iter()
            .find_map(|session| session.held_definition(key))
    }

    /// Re-reads the trust file and imports the held tools it now trusts (after
    /// `capstore approve`, or [`Quarantine::approve`]); returns how many servers' tools
    /// changed. The hub also does this by itself within about a second of the file changing;
    /// call it to have an approval take effect at once.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// hub.recheck();
    /// # }
    /// ```
    pub fn recheck(&self) -> usize {
        recheck(&self.inner)
    }

    /// How each server's start-up went, in the configuration's (name) order.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// let failed: Vec<_> = hub.startup().iter().filter(|s| s.result.is_err()).collect();
    /// # }
    /// ```
    pub fn startup(&self) -> &[Startup] {
        &self.inner.startup
    }

    /// Each server's current state, in name order.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// for status in hub.status() { println!("{} {:?} {} tools", status.name, status.state, status.tools); }
    /// # }
    /// ```
    pub fn status(&self) -> Vec<ServerStatus> {
        self.inner.sessions.iter().map(|s| s.status()).collect()
    }

    /// Events from now on: list changes imported, servers going down and coming back, failed
    /// attempts. A receiver that falls more than 256 events behind misses the oldest.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// let mut events = hub.subscribe();
    /// while let Ok(event) = events.recv().await { println!("{event:?}"); }
    /// # }
    /// ```
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.inner.events.subscribe()
    }

    /// The store the servers' tools are imported into.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// let snapshot = hub.store().snapshot();
    /// # }
    /// ```
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Stops every connection (stdio servers are closed, then killed with what they started if
    /// they linger) and waits for them, at most a few seconds. The tools stay in the store;
    /// calls to them fail with [`CallError::Unavailable`](super::CallError::Unavailable).
    /// Remove them with [`remove_server`](crate::mcp::remove_server) if you want them gone.
    ///
    /// ```no_run
    /// # async fn f(hub: capstore::mcp::live::McpHub) {
    /// hub.shutdown().await;
    /// # }
    /// ```
    pub async fn shutdown(&self) {
        let _ = self.inner.shutdown.send(true);
        let tasks = std::mem::take(&mut *self.inner.tasks.lock());
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// How often the trust file's modification time is looked at for approvals.
const APPROVAL_POLL: Duration = Duration::from_secs(1);

/// Imports what an approval trusts, for every session with held tools; the number of servers
/// whose tools changed. Reports failures as events.
fn recheck(hub: &Hub) -> usize {
    let mut changed = 0;
    for session in &hub.sessions {
        match session.recheck(&hub.store) {
            None => {}
            Some(Ok(report)) => {
                changed += 1;
                let _ = hub.events.send(LiveEvent::ToolsChanged {
                    report,
                    elapsed: Duration::ZERO,
                });
            }
            Some(Err(error)) => {
                let _ = hub.events.send(LiveEvent::Failed {
                    error: LiveError::Import {
                        server: session.name.clone(),
                        error,
                    },
                });
            }
        }
    }
    changed
}

/// Re-checks held tools whenever the trust state changes (the file, or the shared state), until
/// the hub stops.
async fn watch_approvals(
    hub: std::sync::Weak<Hub>,
    quarantine: Quarantine,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut seen = quarantine.revision();
    loop {
        tokio::select! {
            () = tokio::time::sleep(APPROVAL_POLL) => {}
            _ = shutdown.changed() => return,
        }
        let now = quarantine.revision();
        if now == seen {
            continue;
        }
        seen = now;
        let Some(hub) = hub.upgrade() else { return };
        recheck(&hub);
    }
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.status())
            .finish_non_exhaustive()
    }
}
