#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
#![doc = include_str!("../README.md")]
//!
//! ## Modules
//!
//! [`store`]: the snapshot-versioned tables, transactions, change sets and watches.
//! [`bm25`]: the tokenizer, scoring with explanations, and the index kept inside snapshots.
//! [`tools`], [`skills`], [`hooks`]: the built-in records and their rules.
//! [`context`]: the per-turn selection. [`catalog`]: catalog files and the bundled catalog.
//! [`mcp`]: MCP `tools/list` import, `mcpServers` configurations, and (feature `mcp-live`)
//! live servers. `gateway` (feature `gateway`): `capstore serve`, an MCP server in front of
//! others; `trace` (feature `otel`): OpenTelemetry traces of its calls. [`provider`]: OpenAI and Anthropic tool shapes.
//! [`exec`], [`events`], [`agent`]: running tools with hooks, the event bus (and its JSONL
//! tape), a minimal loop with approvals and record/replay. `models` (feature `models`):
//! OpenAI-compatible and Anthropic model adapters.
//! [`usage`]: what the agent's own calls teach selection (companions, learned and declared).
//! [`eval`]: selection-quality metrics. `sync` (feature `postgres`): replicas of one catalog
//! through a change log in PostgreSQL. `rig` (feature `rig`): capstore as the index that picks
//! a [rig](https://docs.rs/rig/0.44.0) agent's tools, and its handlers as rig tools.
//!
//! ## Features
//! A crate that adds `capstore` with its defaults builds the store, BM25, selection, usage,
//! execution and the agent loop: none of the parts below, each a feature away. `mcp-live`:
//! `mcp::live`, connecting to MCP servers (the official `rmcp` SDK, tokio's process and time
//! drivers). `gateway`: the MCP gateway (rmcp's server half, hyper, sha2). `models`: the model
//! adapters (reqwest with rustls, as `mcp-live` already uses). `minilm`: `embed::MiniLm`, the
//! sentence embedder all-MiniLM-L6-v2 run on the CPU in pure Rust (candle and the `tokenizers`
//! crate), its weights read from a directory and never downloaded. `postgres`: `sync`, replicas
//! sharing one catalog through PostgreSQL (`tokio-postgres`). The `capstore` command line is
//! its own package in this repository (`cli`, `capstore-cli`), which turns on what it needs.
//! `rig`: `capstore::rig`, the adapter for rig's agents (rig's facade crate with only its agent
//! runtime; Rust 1.95). `otel`: `capstore::trace`, the gateway's calls as OpenTelemetry spans
//! exported over OTLP/HTTP (the OpenTelemetry SDK and OTLP exporter, on reqwest).

pub mod agent;
pub mod bm25;
pub mod catalog;
pub mod context;
pub mod embed;
mod error;
pub mod eval;
pub mod events;
pub mod exec;
mod fnv;
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod hooks;
pub mod mcp;
#[cfg(feature = "models")]
pub mod models;
pub mod provider;
#[cfg(feature = "rig")]
pub mod rig;
pub mod skills;
pub mod store;
#[cfg(feature = "postgres")]
pub mod sync;
mod tables;
pub mod tools;
#[cfg(feature = "otel")]
pub mod trace;
pub mod usage;

pub use embed::VECTORS;
pub use error::{Error, Result};
pub use events::{Event, EventBus, EventSubscription};
pub use exec::{
    ExecError, Executor, HANDLERS, HOOK_HANDLERS, HandlerError, HookContext, HookHandler,
    HookOutcome, ToolCall, ToolHandler, ToolOutput, UnselectedCallPolicy,
};
pub use hooks::{HOOKS, HOOKS_BY_EVENT, HOOKS_BY_MATCHER, Hook, HookEvent};
pub use skills::{
    SKILLS, SKILLS_BY_CATEGORY, SKILLS_BY_DEPENDENCY, SKILLS_BY_TAG, SKILLS_BY_TOOL, Skill,
};
pub use store::{
    Change, ChangeKind, ChangeSet, CommitInfo, Snapshot, Store, StoreError, Subscription, WatchSet,
    Watcher, WriteTxn,
};
pub use tools::{
    InputSchema, TOOLS, TOOLS_BY_NAME, TOOLS_BY_SKILL, TOOLS_BY_SOURCE, TOOLS_BY_TAG, Tool,
};
pub use usage::USAGE;
