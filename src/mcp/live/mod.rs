//! Live MCP servers (feature `mcp-live`): connect to the servers of an `mcpServers`
//! configuration, import their tools into a store, keep them in step, and run them.
//!
//! [`McpHub::connect`] is the one entry point. For each server of the [`McpConfig`] it
//! - starts the process (stdio: `command`, `args`, `env`, `cwd`; its stderr is kept, never
//!   printed) or opens a Streamable HTTP session, and runs MCP's `initialize` handshake, on the
//!   official Rust SDK (`rmcp`);
//! - lists every page of `tools/list` and imports the list with [`import_server`] (so a live
//!   server's tools are checked and namespaced exactly like a saved list's: `server/name`),
//!   with a [`ToolHandler`](crate::ToolHandler) per tool that forwards `tools/call` over the
//!   connection, all in one transaction. [`Executor::execute`](crate::Executor::execute) then
//!   runs an MCP tool as it runs a Rust one: hooks, events, the unselected-call policy;
//! - on `notifications/tools/list_changed`, lists again and re-imports in one transaction (the
//!   [`ImportReport`] says what was added, changed, removed; [`LiveEvent::ToolsChanged`]);
//! - when the connection ends (the process exits or crashes), keeps the server's tools in the
//!   store, so that the tool list sent to the model, and the provider's prompt cache, do not
//!   change, and makes them fail at once with [`CallError::Unavailable`]; and reconnects with
//!   back-off (500 ms doubling to 30 s), re-importing on success. Other servers are not
//!   affected.
//!
//! # Servers behind OAuth
//! A Streamable HTTP server whose entry has `"oauth": true` (feature `mcp-oauth`) is reached
//! with the token `capstore auth` stored ([`LiveOptions::tokens`] says where tokens are kept),
//! sent per request and refreshed before it expires; without a usable token it is in
//! [`ServerState::SignInRequired`] and its tools fail with [`CallError::SignInRequired`]. See the
//! `oauth` module (with the feature on).
//!
//! # Results and errors
//! A call's output is the MCP result as JSON: `{"content": [...], "structuredContent": ...}`,
//! content blocks and structured content as the server sent them. A result with
//! `isError: true` becomes [`CallError::Tool`] carrying the server's text and the whole result;
//! a JSON-RPC error becomes [`CallError::Protocol`]. The executor reports either as
//! [`ExecError::Handler`](crate::ExecError::Handler), whose error gives the typed
//! [`CallError`] back through [`HandlerError::downcast_ref`](crate::HandlerError::downcast_ref).
//!
//! # Timeouts and cancellation
//! Every wait is bounded ([`LiveOptions`]): start-up and `initialize`, each `tools/list`, each
//! call. A call that times out, or whose future is dropped (the caller gave up, a `select!`
//! chose another branch), is cancelled on the server with `notifications/cancelled`. Selection
//! never waits on a server: it reads a snapshot, and imports are whole transactions.
//!
//! # What it costs
//! Compiling `rmcp` (with `reqwest` and rustls for HTTP) and needing a tokio runtime; at run
//! time, a task per server and one process per stdio server (plus what it starts, e.g. `node`
//! under `npx`, in the same process group, stopped with it). The store holds nothing more than
//! for a saved list, plus one small handler per tool. Measured in BENCHMARKS.md: time from
//! spawn to tools selectable, `tools/call` overhead against a bare `rmcp` client, and
//! list-changed to new snapshot.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::context::{ContextBuilder, Turn};
//! use capstore::mcp::{McpConfig, live::{LiveOptions, McpHub}};
//! use capstore::{Executor, Store, ToolCall, UnselectedCallPolicy};
//! use serde_json::json;
//!
//! let store = Store::new();
//! let config = McpConfig::from_json(r#"{"mcpServers": {
//!     "time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#)?;
//! let hub = McpHub::connect(&store, &config, LiveOptions::default()).await;
//! let selection = ContextBuilder::new().select(&store.snapshot(), &Turn::new("what time is it in Tokyo?"))?;
//! let offered: Vec<String> = selection.keys().map(str::to_string).collect();
//! let executor = Executor::new(store.clone());
//! let call = ToolCall::new("1", "time/get_current_time", json!({"timezone": "Asia/Tokyo"}));
//! let output = executor.execute(call, &offered).await?;
//! println!("{}", output.output["content"][0]["text"]);
//! hub.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! [`import_server`]: crate::mcp::import_server
//! [`ImportReport`]: crate::mcp::ImportReport
//! [`McpConfig`]: crate::mcp::McpConfig

mod error;
mod hub;
#[cfg(feature = "mcp-oauth")]
pub mod oauth;
mod quarantine;
mod session;
mod status;
mod stderr;
#[cfg(feature = "mcp-oauth")]
mod upstream_auth;

pub use error::{CallError, LiveError};
pub use hub::{McpHub, Startup};
pub use quarantine::{
    HeldTool, Quarantine, QuarantineError, QuarantineReason, ToolRecord, Verdict, fingerprint,
    quarantine_path,
};
// For the shared trust state (`capstore::sync`), which keeps the same records in PostgreSQL.
#[cfg(feature = "postgres")]
pub(crate) use quarantine::{EditOutcome, TrustBackend, TrustEdit, TrustState};
// For the page's record of definitions (`gateway::admin`), written as the trust file is.
#[cfg(feature = "gateway")]
pub(crate) use quarantine::write_private;
pub use status::{AuthStatus, LiveEvent, LiveOptions, RefreshCounts, ServerState, ServerStatus};
