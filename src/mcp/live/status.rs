//! What a live MCP hub reports and is told: its options (timeouts, limits, the trust file),
//! where each server's connection stands, and the events after start-up. Kept apart from the
//! hub so that a session, which reports into them, does not import the hub that runs it.

use std::time::{Duration, SystemTime};

use crate::mcp::ImportReport;

use super::error::LiveError;
use super::quarantine::Quarantine;

/// Timeouts and back-off of an [`McpHub`](super::McpHub). Every wait on a server is bounded by
/// one of them.
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
    /// The most `tools/list` pages read from one server in one listing: a server that keeps
    /// sending a `nextCursor` fails with [`LiveError::Limit`](super::LiveError::Limit) at this
    /// page, not at the list timeout. 1,000 by default.
    pub max_pages: usize,
    /// The most tools one server may offer; a longer list fails the server with
    /// [`LiveError::Limit`](super::LiveError::Limit). 20,000 by default.
    pub max_tools: usize,
    /// The most bytes of one tool's definition (its JSON as received); a larger tool is
    /// dropped alone, and named in [`ServerStatus::dropped`]. 64 KiB by default.
    pub max_tool_bytes: usize,
    /// The trust file every server's tools are checked against before they are imported
    /// ([`Quarantine`]): a tool it holds back (a rug pull, or a new tool with
    /// `hold_new_tools`) stays out of the store, so nothing selects or runs it, until
    /// approved; [`McpHub::held`](super::McpHub::held) says which and why. `None` (the default):
    /// no check.
    pub quarantine: Option<Quarantine>,
    /// Where the tokens of servers with `"oauth"` are kept (feature `mcp-oauth`;
    /// [`TokenStores::beside`](super::oauth::TokenStores::beside) for the file beside the
    /// configuration, as `capstore serve` uses). `None` (the default): such a server is not
    /// connected, and is in [`ServerState::SignInRequired`].
    #[cfg(feature = "mcp-oauth")]
    pub tokens: Option<super::oauth::TokenStores>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            connect_timeout: Duration::from_secs(30),
            list_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
            reconnect_initial: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
            max_pages: 1_000,
            max_tools: 20_000,
            max_tool_bytes: 64 * 1024,
            quarantine: None,
            #[cfg(feature = "mcp-oauth")]
            tokens: None,
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
    /// An OAuth server (`"oauth"` in its entry) with no usable token: never signed in, or its
    /// refresh token was refused. Its tools (if it had any) stay in the store and fail fast
    /// with [`CallError::SignInRequired`](super::CallError::SignInRequired), which names the
    /// command to run; the hub connects again by itself once a new token is stored.
    SignInRequired,
}

/// Where an OAuth server's sign-in stands, in its [`ServerStatus`]. Holds no token.
///
/// ```
/// let auth = capstore::mcp::live::AuthStatus::default();
/// assert!(!auth.signed_in && auth.refreshes.ok == 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthStatus {
    /// A token is stored and was accepted (or refreshed) at the last use: the server is
    /// signed in, even while a refresh fails for a passing reason.
    pub signed_in: bool,
    /// The command that signs in to it (`capstore auth NAME --mcp-config FILE`).
    pub sign_in_command: String,
    /// Its token refreshes so far, by outcome.
    pub refreshes: RefreshCounts,
    /// The last refresh's failure, while it is the latest news (cleared by a successful
    /// refresh or connection).
    pub last_refresh_error: Option<String>,
}

/// How many token refreshes of a server ended each way (see [`AuthStatus`]).
///
/// ```
/// let counts = capstore::mcp::live::RefreshCounts::default();
/// assert_eq!(counts.ok + counts.error + counts.rejected, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefreshCounts {
    /// New tokens saved.
    pub ok: u64,
    /// Failed for a passing reason (a 5xx, the network, the store): the token was kept.
    pub error: u64,
    /// Refused (`invalid_grant`), or nothing to refresh with: sign-in is needed.
    pub rejected: u64,
}

/// A snapshot of one server's state, for display and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Where its connection stands.
    pub state: ServerState,
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
    /// Since when it has been down (reconnecting or stopped); `None` while connecting for
    /// the first time or connected.
    pub down_since: Option<SystemTime>,
    /// The tools of its last `tools/list` that were dropped, each alone, as malformed or too
    /// large: one line each naming the tool, the field and why. Its other tools are imported.
    pub dropped: Vec<String>,
    /// Its sign-in, for a server with `"oauth"` in its entry; `None` for the others.
    pub auth: Option<AuthStatus>,
}

impl ServerStatus {
    pub(crate) fn new(name: &str) -> Self {
        ServerStatus {
            name: name.to_string(),
            state: ServerState::Connecting,
            tools: 0,
            server_info: None,
            protocol_version: None,
            connects: 0,
            last_error: None,
            stderr: Vec::new(),
            down_since: None,
            dropped: Vec::new(),
            auth: None,
        }
    }
}

/// Something that happened to a server after start-up; see
/// [`McpHub::subscribe`](super::McpHub::subscribe).
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
