//! Registering tools and hooks together with their handlers, in one transaction, so that every
//! snapshot sees a tool and its handler (or a hook and its handler) together or not at all.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::handler::HANDLERS;
use super::hook::HOOK_HANDLERS;
use crate::hooks::{HOOKS, Hook};
use crate::skills::{SkillError, unregister_tool};
use crate::store::{StoreError, WriteTxn};
use crate::tools::{Registration, TOOLS, Then, Tool};

use super::handler::{HandlerError, ToolHandler};
use super::hook::{HookContext, HookHandler, HookOutcome};

/// Adds `tool` and its handler inside `tx`, all or nothing. Fails with
/// [`StoreError::DuplicateKey`] when a tool of the same qualified name exists (remove it first
/// with [`remove_tool`], or replace both rows yourself with `upsert`), or
/// [`StoreError::InvalidRecord`] when the tool breaks the table's rules. Returns the key.
///
/// ```
/// use capstore::exec::register_tool;
/// use capstore::{Store, Tool, HANDLERS, TOOLS};
/// use serde_json::json;
///
/// let store = Store::new();
/// store.write(|tx| register_tool(tx, Tool::new("echo", "Echo the input").with_source("util"),
///     |args| async move { Ok(json!({ "echo": args })) }))?;
/// let snap = store.snapshot();
/// assert!(snap.contains(&TOOLS, "util/echo")? && snap.contains(&HANDLERS, "util/echo")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn register_tool<F, Fut>(
    tx: &mut WriteTxn,
    tool: Tool,
    handler: F,
) -> Result<Arc<str>, StoreError>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
{
    tx.all_or_nothing(|tx| {
        let key = tx.insert(&TOOLS, tool)?;
        tx.upsert(&HANDLERS, ToolHandler::new(&*key, handler))?;
        Ok(key)
    })
}

impl Tool {
    /// This tool with its handler, for [`register`] or
    /// [`register_skill`](crate::skills::register_skill): one call writes both, under the
    /// tool's key written once.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::exec::register;
    /// use capstore::{Executor, Store, Tool, ToolCall};
    /// let store = Store::new();
    /// store.write(|tx| register(tx, Tool::new("echo", "Echo the input")
    ///     .with_handler(|args| async move { Ok(args) })))?;
    /// let out = Executor::new(store).execute(ToolCall::new("1", "echo", serde_json::json!({"a": 1})), &[]).await?;
    /// assert_eq!(out.output["a"], 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_handler<F, Fut>(self, handler: F) -> Registration
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HandlerError>> + Send + 'static,
    {
        self.with_handler_for_key(move |key| ToolHandler::new(key, handler))
    }

    /// This tool with a plain, non-async function as its handler
    /// ([`ToolHandler::sync`]'s rules: it runs inside the executor's task, so keep it quick),
    /// for [`register`] or [`register_skill`](crate::skills::register_skill): one call writes
    /// both, under the tool's key written once.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::exec::register;
    /// use capstore::{Executor, Store, Tool, ToolCall};
    /// use serde_json::json;
    /// let store = Store::new();
    /// store.write(|tx| register(tx, Tool::new("add", "Add two numbers").with_source("calc")
    ///     .with_sync_handler(|args| Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))))))?;
    /// let call = ToolCall::new("1", "calc/add", json!({"a": 2, "b": 3}));
    /// assert_eq!(Executor::new(store).execute(call, &[]).await?.output, 5);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_sync_handler<F>(self, handler: F) -> Registration
    where
        F: Fn(Value) -> Result<Value, HandlerError> + Send + Sync + 'static,
    {
        self.with_handler_for_key(move |key| ToolHandler::sync(key, handler))
    }

    /// This tool with the handler `make` builds for its key, written once the tool is in.
    fn with_handler_for_key(
        self,
        make: impl FnOnce(&str) -> ToolHandler + Send + 'static,
    ) -> Registration {
        let then: Then =
            Box::new(move |tx: &mut WriteTxn, key: &str| tx.upsert(&HANDLERS, make(key)).map(drop));
        Registration {
            tool: self,
            then: Some(then),
        }
    }
}

/// Adds a tool and, when it comes with one ([`Tool::with_handler`]), its handler inside `tx`,
/// all or nothing: [`register_tool`]'s rules. Returns the key.
///
/// ```
/// use capstore::exec::register;
/// use capstore::{Store, Tool, HANDLERS, TOOLS};
/// let store = Store::new();
/// store.write(|tx| register(tx, Tool::new("ping", "Ping").with_handler(|v| async move { Ok(v) })))?;
/// assert!(store.snapshot().contains(&HANDLERS, "ping")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn register(tx: &mut WriteTxn, tool: impl Into<Registration>) -> Result<Arc<str>, StoreError> {
    let (tool, then) = tool.into().into_parts();
    tx.all_or_nothing(|tx| {
        let key = tx.insert(&TOOLS, tool)?;
        if let Some(then) = then {
            then(tx, &key)?;
        }
        Ok(key)
    })
}

/// Removes a tool and its handler inside `tx`, all or nothing, by the skills' ownership rule:
/// refused with [`SkillError::ToolInUse`] while a skill lists the tool (see
/// [`unregister_tool`]). Returns the removed tool.
///
/// ```
/// use capstore::exec::{register_tool, remove_tool};
/// use capstore::{Store, Tool, HANDLERS};
/// let store = Store::new();
/// store.write(|tx| register_tool(tx, Tool::new("echo", ""), |args| async move { Ok(args) }))?;
/// store.write(|tx| remove_tool(tx, "echo"))?;
/// assert!(!store.snapshot().contains(&HANDLERS, "echo")?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn remove_tool(tx: &mut WriteTxn, key: &str) -> Result<Tool, SkillError> {
    // Its handler belongs to it (the `handlers` table's rule): it goes in the same step.
    unregister_tool(tx, key)
}

/// Adds `hook` and its handler inside `tx`, all or nothing. Fails with
/// [`StoreError::DuplicateKey`] when a hook of the same id exists, or
/// [`StoreError::InvalidRecord`] when the hook breaks the table's rules. Returns the id.
///
/// ```
/// use capstore::exec::register_hook;
/// use capstore::{Hook, HookEvent, HookOutcome, Store, HOOKS, HOOK_HANDLERS};
///
/// let store = Store::new();
/// store.write(|tx| register_hook(tx, Hook::new("no-rm", HookEvent::PreToolUse, "shell/*"),
///     |ctx| async move {
///         Ok(if ctx.input["cmd"] == "rm" { HookOutcome::deny("no rm") } else { HookOutcome::Continue })
///     }))?;
/// let snap = store.snapshot();
/// assert!(snap.contains(&HOOKS, "no-rm")? && snap.contains(&HOOK_HANDLERS, "no-rm")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn register_hook<F, Fut>(
    tx: &mut WriteTxn,
    hook: Hook,
    handler: F,
) -> Result<Arc<str>, StoreError>
where
    F: Fn(HookContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HookOutcome, HandlerError>> + Send + 'static,
{
    insert_hook(tx, hook, |id| HookHandler::new(id, handler))
}

/// Adds `hook` and a plain, non-async function as its handler ([`HookHandler::sync`]) inside
/// `tx`, all or nothing: [`register_hook`]'s rules, the hook's id written once. Returns the id.
///
/// ```
/// use capstore::exec::register_sync_hook;
/// use capstore::{Hook, HookEvent, HookOutcome, Store, HOOK_HANDLERS};
///
/// let store = Store::new();
/// store.write(|tx| register_sync_hook(tx, Hook::new("no-rm", HookEvent::PreToolUse, "shell/*"),
///     |ctx| if ctx.input["cmd"] == "rm" { HookOutcome::deny("no rm") } else { HookOutcome::Continue }))?;
/// assert!(store.snapshot().contains(&HOOK_HANDLERS, "no-rm")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn register_sync_hook<F>(
    tx: &mut WriteTxn,
    hook: Hook,
    handler: F,
) -> Result<Arc<str>, StoreError>
where
    F: Fn(HookContext) -> HookOutcome + Send + Sync + 'static,
{
    insert_hook(tx, hook, |id| HookHandler::sync(id, handler))
}

/// `hook` and the handler `make` builds for its id, all or nothing; the id.
fn insert_hook(
    tx: &mut WriteTxn,
    hook: Hook,
    make: impl FnOnce(&str) -> HookHandler,
) -> Result<Arc<str>, StoreError> {
    tx.all_or_nothing(|tx| {
        let id = tx.insert(&HOOKS, hook)?;
        tx.upsert(&HOOK_HANDLERS, make(&id))?;
        Ok(id)
    })
}

/// Removes a hook and its handler inside `tx`, all or nothing; from the commit on, calls no
/// longer run it. Fails with [`StoreError::NotFound`] when there is no such hook. Returns the
/// removed hook.
///
/// ```
/// use capstore::exec::{register_hook, remove_hook};
/// use capstore::{Hook, HookEvent, HookOutcome, Store, HOOKS, HOOK_HANDLERS};
/// let store = Store::new();
/// store.write(|tx| register_hook(tx, Hook::new("audit", HookEvent::PostToolUse, "*"),
///     |_| async { Ok(HookOutcome::Continue) }))?;
/// let removed = store.write(|tx| remove_hook(tx, "audit").map(|h| h.id.clone()))?;
/// let snap = store.snapshot();
/// assert_eq!((snap.count(&HOOKS)?, snap.count(&HOOK_HANDLERS)?), (0, 0));
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn remove_hook(tx: &mut WriteTxn, id: &str) -> Result<Arc<Hook>, StoreError> {
    // Its handler belongs to it (the `hook_handlers` table's rule): it goes in the same step.
    tx.delete(&HOOKS, id)
}
