//! [`McpHub`]: the servers of a configuration, connected and kept in step with a store.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use crate::mcp::ImportReport;
use crate::mcp::config::McpConfig;
use crate::store::Store;

use super::error::LiveError;
use super::session::{Session, Task};

/// Timeouts and back-off of an [`McpHub`]. Every wait on a server is bounded by one of them.
///
/// ```
/// use std::time::Duration;
/// let options = capstore::mcp::live::LiveOptions { call_timeout: Duration::from_secs(5), ..Default::default() };
/// assert_eq!(options.connect_timeout, Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveOptions {
    /// Starting a server and its `initialize` answer. 30 s by default: `npx` or `uvx` may
    /// have to unpack a package first; a server that is installed answers in well under 1 s.
    pub connect_timeout: Duration,
    /// Every page of one `tools/list`. 30 s by default.
    pub list_timeout: Duration,
    /// One `tools/call`. 60 s by default: tools that fetch or compute can be slow, and the
    /// model waits anyway; a call still running then is cancelled on the server.
    pub call_timeout: Duration,
    /// The first wait before reconnecting to a server that went away or could not be reached;
    /// doubled after each failure up to `reconnect_max`. 500 ms by default.
    pub reconnect_initial: Duration,
    /// The longest wait between two attempts. 30 s by default: a server that is down for good
    /// costs one start-up every half minute.
    pub reconnect_max: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            connect_timeout: Duration::from_secs(30),
            list_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            reconnect_initial: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
        }
    }
}

/// Where a server's connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// Starting, or running `initialize` and `tools/list`.
    Connecting,
    /// Connected; its tools are in the store and callable.
    Ready,
    /// Gone or never reached; waiting to try again. Its tools (if it had any) stay in the store
    /// and fail fast with [`CallError::Unavailable`](super::CallError::Unavailable).
    Reconnecting,
    /// The hub was shut down.
    Stopped,
}

/// A snapshot of one server's state, for display and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Where its connection stands.
    pub state: ServerState,
    /// When it last came up ([`Ready`](ServerState::Ready)) or last stopped being up (any other
    /// state): a server that keeps failing to reconnect, between
    /// [`Connecting`](ServerState::Connecting) and [`Reconnecting`](ServerState::Reconnecting),
    /// has been down since its first failure.
    pub since: std::time::SystemTime,
    /// How many tools it offered at the last successful `tools/list`.
    pub tools: usize,
    /// `name version` from its `initialize` answer.
    pub server_info: Option<String>,
    /// The protocol version it answered with.
    pub protocol_version: Option<String>,
    /// How many times it has been connected to (a reconnect counts).
    pub connects: u32,
    /// The last failure (connecting, listing, importing, or the connection ending), cleared by
    /// the next successful connection.
    pub last_error: Option<String>,
    /// The last lines it wrote to its stderr (stdio servers), oldest first.
    pub stderr: Vec<String>,
}

impl ServerStatus {
    pub(crate) fn new(name: &str) -> Self {
        ServerStatus {
            name: name.to_string(),
            state: ServerState::Connecting,
            since: std::time::SystemTime::now(),
            tools: 0,
            server_info: None,
            protocol_version: None,
            connects: 0,
            last_error: None,
            stderr: Vec::new(),
        }
    }
}

/// Something that happened to a server after start-up; see [`McpHub::subscribe`].
#[derive(Debug, Clone, PartialEq)]
pub enum LiveEvent {
    /// The server sent `notifications/tools/list_changed`, and its new list was imported (in
    /// one transaction; the report says what was added, changed and removed).
    ToolsChanged {
        /// The import.
        report: ImportReport,
        /// From the notification to the new snapshot.
        elapsed: Duration,
    },
    /// The connection ended (the process exited or crashed, the HTTP session was lost).
    Down {
        /// The server.
        server: String,
        /// Why, with the end of its stderr when it wrote any.
        reason: String,
    },
    /// Connected again after being down; its tools were re-imported.
    Reconnected {
        /// The server.
        server: String,
        /// The import.
        report: ImportReport,
    },
    /// A reconnection or a re-import failed; the store kept what it had.
    Failed {
        /// Why.
        error: LiveError,
    },
}

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
            let session = Arc::new(Session::new(&server.name, options.call_timeout));
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
        McpHub {
            inner: Arc::new(Hub {
                store: store.clone(),
                sessions,
                startup,
                events,
                shutdown,
                tasks: Mutex::new(tasks),
            }),
        }
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

    /// A handle that does not keep the hub alive (for the gateway's admin page, which must
    /// not keep connections open after the hub's last owner let it go).
    pub(crate) fn downgrade(&self) -> WeakHub {
        WeakHub(Arc::downgrade(&self.inner))
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

/// See [`McpHub::downgrade`].
#[derive(Clone)]
pub(crate) struct WeakHub(Weak<Hub>);

impl WeakHub {
    /// Each server's current state, or `None` once the hub is gone.
    pub(crate) fn status(&self) -> Option<Vec<ServerStatus>> {
        self.0.upgrade().map(|hub| McpHub { inner: hub }.status())
    }
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.status())
            .finish_non_exhaustive()
    }
}
