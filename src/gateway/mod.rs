//! `capstore serve`: an MCP gateway (feature `gateway`). One MCP server in front of many, for
//! any MCP client (Claude Desktop, Claude Code, Cursor, ...), so that the client's context holds
//! a few tool definitions instead of hundreds.
//!
//! [`Gateway`] is an MCP server (stdio, or Streamable HTTP on a loopback address) whose tools
//! are capstore's own, over a store that an [`McpHub`](crate::mcp::live::McpHub) keeps filled
//! with the upstream servers' tools (and, if you like, a catalog):
//! - [`Mode::Search`] (the default): `search_tools` (a query in, the best tools out, ranked by
//!   capstore's selection, with names, descriptions, input schemas, the reasons and the
//!   skills they belong to) and `call_tool` (a name and arguments in, forwarded to the right
//!   server), plus any pinned tools offered directly.
//! - [`Mode::All`]: every upstream tool under its provider-safe exported name, forwarded;
//!   upstream `list_changed` is passed on to the client.
//!
//! Calls run through the [`Executor`](crate::Executor) (hooks, events), concurrently, each with
//! the hub's call timeout; a client's `notifications/cancelled` cancels the call upstream.
//! Upstream failures come back as `isError` results that name the server and say why;
//! an unknown tool or a malformed request is a JSON-RPC error, and the gateway goes on serving.
//!
//! # Quarantine
//! A gateway is where a malicious or compromised server does harm: a tool approved as "read a
//! file" can later describe itself as "read a file, then send it to ...". Every upstream tool's
//! definition is fingerprinted ([`fingerprint`]: SHA-256 of name, description, input schema)
//! when first seen; a definition that changes later is quarantined, not offered and not
//! callable, until approved (`capstore approve TOOL --mcp-config FILE`, or
//! [`Quarantine::approve`]). New tools of a known server can be held the same way. The state
//! lives in a small file beside the configuration ([`quarantine_path`]), or, for gateways that
//! share a catalog (`capstore serve --state`, feature `postgres`), in PostgreSQL beside it
//! (`capstore::sync::Replica::quarantine`): one approval, every gateway. The quarantine is the
//! live hub's ([`LiveOptions::quarantine`](crate::mcp::live::LiveOptions::quarantine)): held
//! tools never reach the store, so every user of the hub honours it; a gateway that
//! [`follow`](Gateway::follow)s the hub answers calls to them with why, and imports an approval
//! at once.
//!
//! # Learning from the calls it forwards
//! The gateway counts what its clients call into the store's [`usage`](crate::usage), so
//! that `search_tools` brings a tool's prerequisites along with it (`cd` with `mv`, a login
//! with a post). It sees no user messages, so a client session's *turn* is a run of calls: it
//! ends when a `search_tools` follows calls (the model looks for something new), after two
//! minutes without a search or call, or when the session ends. What `search_tools` returned
//! in the turn counts as sent. A session is stdio's one client, or one Streamable HTTP session.
//! Counts only, never arguments; a held tool never runs, so it teaches nothing. Finished turns
//! go on the gateway's [`UsageQueue`](crate::usage::UsageQueue), shared by its sessions and
//! written into the store in batches (its time bound checked at each search and call); a
//! session that ends, and the gateway when dropped, write what it holds. `capstore
//! serve` keeps usage in a file beside the configuration
//! ([`usage_path`](crate::usage::usage_path)), or, with `--state`,
//! in the PostgreSQL log, in batches (a replica's usage queue, one entry per gateway per
//! interval), so every gateway learns from every gateway's calls
//! ([`GatewayOptions::usage_sink`]).
//!
//! # Over HTTP
//! `capstore serve --http 127.0.0.1:PORT` ([`Gateway::serve_http`]) listens on loopback only,
//! and every request first passes an [`HttpGuard`]: its `Host` must be this listener
//! (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`) and its `Origin`, when a browser sends
//! one, a loopback origin of the same port or one given with `--allow-origin`; otherwise the
//! answer is `403 Forbidden` (`Origin: null` included). That is the DNS-rebinding defence the
//! MCP transport specification asks for. Other routes on the same listener reuse the guard.
//!
//! # The admin page
//! Over HTTP, the same listener also serves a page for a person at `/`
//! ([`Gateway::bind_http`], then [`HttpGateway::page_url`]): each server's state (down since
//! when, and why), what `search_tools` answers for a query and why, each held tool's approved
//! and new definitions side by side with Approve (the trust file `capstore approve` writes)
//! and Keep held, and the recent calls. It is behind the [`HttpGuard`] like `/mcp`, and behind
//! a random token besides (whoever drives it can approve a poisoned tool), with a strict
//! Content-Security-Policy; its HTML, script and style sheet are compiled in.
//!
//! # Clients with scopes
//! Over HTTP, a team gives each client its own token and [`Scope`] ([`Clients`], kept hashed
//! beside the configuration; `capstore clients add NAME`): with at least one client, every
//! MCP request must say `Authorization: Bearer TOKEN` (`401` otherwise), and the client's
//! `tools/list`, `search_tools` answers and calls see only its scope. A call outside it is
//! refused with why, and never forwarded; `/metrics` counts the refusals.
//!
//! # Numbers to watch
//! Over HTTP, `GET /metrics` gives the gateway's metrics in the OpenMetrics text format that
//! Prometheus scrapes: calls, errors and their time per server and tool, calls refused (held
//! or unknown tools), `search_tools` answers and their sizes, the store's tools, held tools,
//! and each upstream server's state and tool count. It is behind the listener's [`HttpGuard`]
//! and the admin page's token, sent as `Authorization: Bearer TOKEN` (the token of
//! [`HttpGateway::page_url`]; [`GatewayOptions::admin_token`] fixes it across restarts, so a
//! scraper keeps one). The metrics are counted from the executor's events and the searches.
//!
//! # Traces
//! With feature `otel`, each call the gateway runs is a span in the client's trace, and the
//! call it forwards upstream a span under it: `capstore::trace` says what they hold, how to
//! export them (`capstore serve --otlp-endpoint URL`) and what it costs.
//!
//! # What it costs
//! The `mcp-live` feature's cost, plus the server half of `rmcp`, `hyper` for HTTP, `sha2` and
//! `prometheus-client`. Per request: one snapshot and one selection (`search_tools`, tens of
//! microseconds at 10k tools), or one forwarded call; a session's finished turn is a push onto
//! the usage queue, written in batches. With clients, a request's token is hashed once and the
//! clients file's modification time read. Measured in BENCHMARKS.md. Over HTTP, the admin page
//! records each upstream definition it has not seen (one small file beside the trust file) and
//! costs nothing more until it is opened; an open page asks once a second.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::gateway::{Gateway, GatewayOptions, Quarantine, quarantine_path};
//! use capstore::mcp::{McpConfig, live::{LiveOptions, McpHub}};
//!
//! let path = std::path::Path::new(".mcp.json");
//! let store = capstore::Store::new();
//! let quarantine = Quarantine::open(quarantine_path(path), false);
//! let options = LiveOptions { quarantine: Some(quarantine.clone()), ..LiveOptions::default() };
//! let hub = McpHub::connect(&store, &McpConfig::from_path(path)?, options).await;
//! let gateway = Gateway::new(store, Some(quarantine), GatewayOptions::default());
//! gateway.follow(&hub);
//! gateway.serve_stdio().await?;
//! # Ok(()) }
//! ```

mod admin;
mod clients;
mod guard;
mod http;
mod metrics;
mod server;

/// The quarantine is the live hub's ([`crate::mcp::live`]); re-exported where it started.
pub use crate::mcp::live::{
    Quarantine, QuarantineError, QuarantineReason, ToolRecord, Verdict, fingerprint,
    quarantine_path,
};
pub use clients::{
    Client, ClientRecord, ClientSource, Clients, ClientsError, Scope, TokenRefusal, clients_path,
};
pub use guard::{HttpGuard, Refusal};
pub use http::HttpGateway;
pub use metrics::{ReplicaLag, ReplicaProbe};
pub use server::{Gateway, GatewayError, GatewayOptions, MAX_QUERY_CHARS, Mode, UsageSink};
