//! Executing tool calls: handlers, the unselected-call policy, and the hooks that run around
//! each call.
//!
//! - **Handlers** live in the store, in the built-in [`HANDLERS`] and
//!   [`HOOK_HANDLERS`] tables, keyed like the tool (qualified name) or
//!   hook (id) they belong to. Register a tool or hook with its handler in one transaction,
//!   async or plain ([`register`] with [`Tool::with_handler`](crate::Tool::with_handler) or
//!   [`Tool::with_sync_handler`](crate::Tool::with_sync_handler); [`register_hook`],
//!   [`register_sync_hook`]), and every snapshot has both or neither; remove them the same way
//!   ([`remove_tool`], [`remove_hook`]).
//! - **Hooks** of the `hooks` table run around a call when their matcher applies to the tool
//!   ([`matcher_matches`]: exact or `*`/`?` glob, on the qualified or the bare name), in
//!   ascending priority, then id. What each [`HookOutcome`] does is tabled there.
//! - **The [`Executor`]** runs a [`ToolCall`] against one snapshot, step by step as
//!   [`Executor::execute`] lists, and emits its events on an optional
//!   [`EventBus`](crate::EventBus). Every failure is an [`ExecError`] naming the tool, and none
//!   changes the store.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use capstore::exec::{register_hook, register_tool};
//! use capstore::{ExecError, Executor, Hook, HookEvent, HookOutcome, Store, Tool, ToolCall};
//! use serde_json::json;
//!
//! let store = Store::new();
//! store.write(|tx| {
//!     register_tool(tx, Tool::new("run", "Run a shell command").with_source("shell"),
//!         |args| async move { Ok(json!({ "ran": args["cmd"] })) })?;
//!     register_hook(tx, Hook::new("no-rm", HookEvent::PreToolUse, "shell/*"), |ctx| async move {
//!         let rm = ctx.input["cmd"].as_str().is_some_and(|c| c.starts_with("rm"));
//!         Ok(if rm { HookOutcome::deny("rm is not allowed") } else { HookOutcome::Continue })
//!     })
//! })?;
//! let executor = Executor::new(store);
//! let offered = ["shell/run".to_string()];
//! let ok = executor.execute(ToolCall::new("1", "shell/run", json!({ "cmd": "ls" })), &offered).await?;
//! assert_eq!(ok.output, json!({ "ran": "ls" }));
//! let denied = executor.execute(ToolCall::new("2", "shell/run", json!({ "cmd": "rm -rf /" })), &offered).await;
//! assert!(matches!(denied, Err(ExecError::HookDenied { .. })));
//! # Ok(())
//! # }
//! ```

mod args;
mod call;
mod catch;
mod error;
mod executor;
mod glob;
mod handler;
mod hook;
mod pipeline;
mod register;
mod report;

pub use call::{ToolCall, ToolOutput, UnselectedCallPolicy};
pub use error::ExecError;
pub use executor::Executor;
pub use glob::{glob_match, matcher_matches};
pub use handler::{BoxFuture, HANDLERS, HandlerError, ToolHandler};
pub use hook::{HOOK_HANDLERS, HookContext, HookHandler, HookOutcome};
pub use register::{
    register, register_hook, register_sync_hook, register_tool, remove_hook, remove_tool,
};

pub(crate) use handler::schema as handler_schema;
pub(crate) use hook::schema as hook_handler_schema;
