//! Hook handlers: what a hook of the `hooks` table does when it runs, stored in the built-in
//! `hook_handlers` table.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::hooks::{HOOKS, HookEvent};
use crate::store::{BUILTIN_SCHEMA, Table, TableSchema};

use super::handler::{BoxFuture, HandlerError};

/// What a hook decided.
///
/// | outcome | pre-tool-use | post-tool-use |
/// |---|---|---|
/// | `Continue` | go on | go on |
/// | `Deny` | stop: [`ExecError::HookDenied`](super::ExecError::HookDenied), the tool does not run | refused: [`ExecError::InvalidHookOutcome`](super::ExecError::InvalidHookOutcome) |
/// | `RewriteInput` | later hooks and the handler get the new arguments (checked again like the model's) | refused, as above |
/// | `RewriteOutput` | refused, as above | later hooks and the caller get the new output |
///
/// A refused outcome fails the call rather than being ignored: a hook that means to deny and
/// is registered on the wrong event should be noticed, not silently let everything through.
///
/// ```
/// use capstore::HookOutcome;
/// assert_eq!(HookOutcome::deny("no"), HookOutcome::Deny { reason: "no".into() });
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum HookOutcome {
    /// Go on unchanged.
    Continue,
    /// Refuse the call (pre-tool-use only).
    Deny {
        /// Why, for the model and for logs.
        reason: String,
    },
    /// Replace the arguments (pre-tool-use only).
    RewriteInput(Value),
    /// Replace the output (post-tool-use only).
    RewriteOutput(Value),
}

impl HookOutcome {
    /// A denial with a reason.
    ///
    /// ```
    /// assert!(matches!(capstore::HookOutcome::deny("x"), capstore::HookOutcome::Deny { .. }));
    /// ```
    pub fn deny(reason: impl Into<String>) -> Self {
        HookOutcome::Deny {
            reason: reason.into(),
        }
    }

    /// The variant's name, for errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            HookOutcome::Continue => "Continue",
            HookOutcome::Deny { .. } => "Deny",
            HookOutcome::RewriteInput(_) => "RewriteInput",
            HookOutcome::RewriteOutput(_) => "RewriteOutput",
        }
    }
}

/// What a hook is told about the call it runs around.
///
/// ```
/// use capstore::{HookContext, HookEvent};
/// use serde_json::json;
/// let ctx = HookContext {
///     event: HookEvent::PreToolUse,
///     hook: "audit".into(),
///     call_id: "c1".into(),
///     tool: "shell/run".into(),
///     input: json!({ "cmd": "ls" }),
///     output: None,
/// };
/// assert_eq!(ctx.input["cmd"], "ls");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HookContext {
    /// Pre- or post-tool-use.
    pub event: HookEvent,
    /// The id of the hook being run.
    pub hook: String,
    /// The call's id.
    pub call_id: String,
    /// The tool's qualified name.
    pub tool: String,
    /// The arguments, as rewritten by the hooks before this one.
    pub input: Value,
    /// The output (post-tool-use only), as rewritten by the hooks before this one.
    pub output: Option<Value>,
}

/// A hook handler's function.
pub(crate) type HookFn =
    Arc<dyn Fn(HookContext) -> BoxFuture<Result<HookOutcome, HandlerError>> + Send + Sync>;

/// The code a hook runs: a record of the built-in [`HOOK_HANDLERS`](crate::HOOK_HANDLERS)
/// table, keyed by the hook's id. A hook without one is skipped when tools run.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), capstore::HandlerError> {
/// use capstore::{HookContext, HookEvent, HookHandler, HookOutcome};
/// let deny_rm = HookHandler::new("deny-rm", |ctx: HookContext| async move {
///     Ok(match ctx.input["cmd"].as_str() {
///         Some(cmd) if cmd.starts_with("rm ") => HookOutcome::deny("rm is not allowed"),
///         _ => HookOutcome::Continue,
///     })
/// });
/// let ctx = HookContext {
///     event: HookEvent::PreToolUse, hook: "deny-rm".into(), call_id: "1".into(),
///     tool: "shell/run".into(), input: serde_json::json!({ "cmd": "rm -rf /" }), output: None,
/// };
/// assert!(matches!(deny_rm.call(ctx).await?, HookOutcome::Deny { .. }));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HookHandler {
    /// The id of the hook it belongs to (the record's key).
    pub hook: String,
    f: HookFn,
}

impl HookHandler {
    /// A hook handler from an async closure.
    ///
    /// ```
    /// use capstore::{HookHandler, HookOutcome};
    /// let h = HookHandler::new("audit", |_ctx| async { Ok(HookOutcome::Continue) });
    /// assert_eq!(h.hook, "audit");
    /// ```
    pub fn new<F, Fut>(hook: impl Into<String>, f: F) -> Self
    where
        F: Fn(HookContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<HookOutcome, HandlerError>> + Send + 'static,
    {
        HookHandler {
            hook: hook.into(),
            f: Arc::new(move |ctx| Box::pin(f(ctx))),
        }
    }

    /// A hook handler from a plain function returning the outcome.
    ///
    /// ```
    /// use capstore::{HookHandler, HookOutcome};
    /// let h = HookHandler::sync("audit", |_ctx| HookOutcome::Continue);
    /// assert_eq!(h.hook, "audit");
    /// ```
    pub fn sync<F>(hook: impl Into<String>, f: F) -> Self
    where
        F: Fn(HookContext) -> HookOutcome + Send + Sync + 'static,
    {
        HookHandler {
            hook: hook.into(),
            f: Arc::new(move |ctx| Box::pin(std::future::ready(Ok(f(ctx))))),
        }
    }

    /// Starts the handler on `ctx`. Panics are not caught here; the executor catches them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), capstore::HandlerError> {
    /// use capstore::{HookContext, HookEvent, HookHandler, HookOutcome};
    /// let h = HookHandler::sync("a", |_| HookOutcome::Continue);
    /// let ctx = HookContext { event: HookEvent::PostToolUse, hook: "a".into(), call_id: "1".into(),
    ///     tool: "t".into(), input: serde_json::json!({}), output: Some(serde_json::json!(1)) };
    /// assert_eq!(h.call(ctx).await?, HookOutcome::Continue);
    /// # Ok(())
    /// # }
    /// ```
    pub fn call(&self, ctx: HookContext) -> BoxFuture<Result<HookOutcome, HandlerError>> {
        (self.f)(ctx)
    }
}

impl fmt::Debug for HookHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookHandler")
            .field("hook", &self.hook)
            .finish_non_exhaustive()
    }
}

/// The declaration of the built-in `hook_handlers` table. Primary key: the hook's id; each
/// handler belongs to its hook: written only while the hook is there, removed with it.
pub(crate) fn schema() -> TableSchema<HookHandler> {
    TableSchema::new("hook_handlers", |h: &HookHandler| h.hook.clone()).belongs_to(&HOOKS)
}

// Position 4 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `hook_handlers` table (see [`HookHandler`]): key = the hook's id; no indexes.
/// Fill it with [`register_hook`](crate::exec::register_hook).
///
/// ```
/// use capstore::{Hook, HookEvent, HookOutcome, Store, HOOK_HANDLERS};
/// let store = Store::new();
/// store.write(|tx| capstore::exec::register_hook(tx, Hook::new("a", HookEvent::PreToolUse, "*"),
///     |_| async { Ok(HookOutcome::Continue) }))?;
/// assert!(store.snapshot().contains(&HOOK_HANDLERS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOK_HANDLERS: Table<HookHandler> = Table::new(4, BUILTIN_SCHEMA);
