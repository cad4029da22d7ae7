#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
//! capstore: the store an agent keeps its capabilities in (tools, skills, hooks), and the
//! selector that decides, each turn, which tool definitions reach the model.
//!
//! See [`store`] for the snapshot-versioned tables, [`bm25`] for the text index.
//!
//! ```
//! use capstore::{Store, Tool, TOOLS};
//!
//! let store = Store::new();
//! store.write(|tx| {
//!     tx.insert(&TOOLS, Tool::new("get_weather", "Current weather for a city").with_tags(["web"]))?;
//!     tx.insert(&TOOLS, Tool::new("read_file", "Read a file from disk").with_tags(["fs"]))
//! })?;
//! let snap = store.snapshot();
//! let best = &snap.search(&TOOLS, "weather in Paris", 3)?[0];
//! assert_eq!(best.record.name, "get_weather");
//! # Ok::<(), capstore::StoreError>(())
//! ```

pub mod agent;
pub mod bm25;
pub mod catalog;
pub mod context;
pub mod eval;
pub mod events;
pub mod exec;
pub mod hooks;
pub mod mcp;
pub mod provider;
pub mod skills;
pub mod store;
mod tables;
pub mod tools;

pub use events::{Event, EventBus, EventSubscription};
pub use exec::{
    ExecError, Executor, HandlerError, HookContext, HookHandler, HookOutcome, ToolCall,
    ToolHandler, ToolOutput, UnselectedCallPolicy,
};
pub use hooks::{Hook, HookEvent};
pub use skills::Skill;
pub use store::{
    Change, ChangeKind, ChangeSet, CommitInfo, Snapshot, Store, StoreError, Subscription, WatchSet,
    Watcher, WriteTxn,
};
pub use tables::{HANDLERS, HOOK_HANDLERS, HOOKS, SKILLS, TOOLS};
pub use tools::Tool;

/// The README's examples, compiled and run as doctests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
