//! The executor: runs one tool call against one snapshot, with its policy, hooks and events.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

use super::handler::HANDLERS;
use crate::events::EventBus;
use crate::hooks::HookEvent;
use crate::store::Store;
use crate::tools::TOOLS;
use crate::usage::UsageRecorder;

use super::args::check_arguments;
use super::call::{ToolCall, ToolOutput, UnselectedCallPolicy};
use super::catch::guarded;
use super::error::ExecError;
use super::pipeline::{CallInfo, matching_hooks, run_post, run_pre};
use super::report::CallReport;

/// Runs tool calls: cheap to clone (clones share the store, the bus and the kept set),
/// `Send + Sync`, usable from many tasks at once. Its async code needs no particular runtime.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use capstore::exec::register_tool;
/// use capstore::{Executor, Store, Tool, ToolCall, UnselectedCallPolicy};
/// use serde_json::json;
///
/// let store = Store::new();
/// store.write(|tx| register_tool(tx, Tool::new("add", "Add two numbers"), |args| async move {
///     Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)))
/// }))?;
/// let executor = Executor::new(store).with_policy(UnselectedCallPolicy::AllowAndKeep);
/// let out = executor.execute(ToolCall::new("c1", "add", json!({ "a": 2, "b": 3 })), &[]).await?;
/// assert_eq!(out.output, 5);
/// assert_eq!(executor.kept_tools(), ["add"]); // it was not offered, so it is kept from now on
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Executor {
    store: Store,
    policy: UnselectedCallPolicy,
    events: Option<EventBus>,
    kept: Arc<Mutex<BTreeSet<String>>>,
    usage: Option<UsageRecorder>,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("policy", &self.policy)
            .field("events", &self.events.is_some())
            .field("kept", &*self.kept.lock())
            .field("usage", &self.usage.is_some())
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor over `store` with the [`Allow`](UnselectedCallPolicy::Allow) policy and no
    /// event bus.
    ///
    /// ```
    /// let executor = capstore::Executor::new(capstore::Store::new());
    /// assert_eq!(executor.policy(), capstore::UnselectedCallPolicy::Allow);
    /// ```
    pub fn new(store: Store) -> Self {
        Executor {
            store,
            policy: UnselectedCallPolicy::default(),
            events: None,
            kept: Arc::new(Mutex::new(BTreeSet::new())),
            usage: None,
        }
    }

    /// Sets the policy for calls to tools not offered this turn.
    ///
    /// ```
    /// use capstore::{Executor, Store, UnselectedCallPolicy};
    /// let executor = Executor::new(Store::new()).with_policy(UnselectedCallPolicy::Deny);
    /// assert_eq!(executor.policy(), UnselectedCallPolicy::Deny);
    /// ```
    pub fn with_policy(mut self, policy: UnselectedCallPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Emits each call's events on `bus` (see [`execute`](Self::execute) for which, in what
    /// order).
    ///
    /// ```
    /// use capstore::{EventBus, Executor, Store};
    /// let executor = Executor::new(Store::new()).with_events(EventBus::new());
    /// # let _ = executor;
    /// ```
    pub fn with_events(mut self, bus: EventBus) -> Self {
        self.events = Some(bus);
        self
    }

    /// Records each call that succeeds into `recorder` (the tool's name, in order), for
    /// [`usage`](crate::usage) to learn from when the conversation's turn ends (queued on a
    /// [`UsageQueue`](crate::usage::UsageQueue), or written alone with
    /// [`UsageRecorder::commit_turn`]). One recorder per conversation: give each
    /// conversation's clone of the executor its own. A call that fails teaches nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::exec::register_tool;
    /// use capstore::usage::UsageRecorder;
    /// use capstore::{Executor, Store, Tool, ToolCall, USAGE};
    /// let store = Store::new();
    /// store.write(|tx| register_tool(tx, Tool::new("ping", "Ping"), |v| async move { Ok(v) }))?;
    /// let recorder = UsageRecorder::new();
    /// let executor = Executor::new(store.clone()).with_usage(recorder.clone());
    /// executor.execute(ToolCall::new("1", "ping", serde_json::json!({})), &[]).await?;
    /// recorder.commit_turn(&store)?;
    /// assert_eq!(store.snapshot().get(&USAGE, "ping")?.map(|u| u.calls), Some(1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_usage(mut self, recorder: UsageRecorder) -> Self {
        self.usage = Some(recorder);
        self
    }

    /// The recorder calls are recorded into, if any ([`with_usage`](Self::with_usage)).
    ///
    /// ```
    /// assert!(capstore::Executor::new(capstore::Store::new()).usage().is_none());
    /// ```
    pub fn usage(&self) -> Option<&UsageRecorder> {
        self.usage.as_ref()
    }

    /// The policy for calls to tools not offered this turn.
    ///
    /// ```
    /// let executor = capstore::Executor::new(capstore::Store::new());
    /// assert_eq!(executor.policy(), capstore::UnselectedCallPolicy::Allow);
    /// ```
    pub fn policy(&self) -> UnselectedCallPolicy {
        self.policy
    }

    /// The store it runs calls against.
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// let executor = capstore::Executor::new(store.clone());
    /// assert_eq!(executor.store().version(), store.version());
    /// ```
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The tools called while not offered under
    /// [`AllowAndKeep`](UnselectedCallPolicy::AllowAndKeep), sorted: tool selection should keep
    /// offering them. Tools removed from the store since stay listed until
    /// [released](Self::release_kept).
    ///
    /// ```
    /// assert!(capstore::Executor::new(capstore::Store::new()).kept_tools().is_empty());
    /// ```
    pub fn kept_tools(&self) -> Vec<String> {
        self.kept.lock().iter().cloned().collect()
    }

    /// Stops keeping one tool; returns whether it was kept.
    ///
    /// ```
    /// assert!(!capstore::Executor::new(capstore::Store::new()).release_kept("a"));
    /// ```
    pub fn release_kept(&self, tool: &str) -> bool {
        self.kept.lock().remove(tool)
    }

    /// Stops keeping every tool.
    ///
    /// ```
    /// let executor = capstore::Executor::new(capstore::Store::new());
    /// executor.clear_kept();
    /// assert!(executor.kept_tools().is_empty());
    /// ```
    pub fn clear_kept(&self) {
        self.kept.lock().clear();
    }

    /// Runs one call. `selected` holds the qualified names of the tools the model was offered
    /// this turn; calls to other registered tools follow the [policy](UnselectedCallPolicy).
    ///
    /// The whole call uses one snapshot, taken first: tool, handler and hooks are those of one
    /// version (reported in [`ToolOutput::version`]), whatever is committed meanwhile. The
    /// steps, each failing with the [`ExecError`] named:
    /// 1. the tool must exist ([`UnknownTool`](ExecError::UnknownTool));
    /// 2. if it is not in `selected`: refused under `Deny` ([`NotSelected`](ExecError::NotSelected)),
    ///    kept under `AllowAndKeep` (even if a later step fails: the model meant to use it);
    /// 3. the arguments must be an object with the schema's `required` properties and matching
    ///    primitive `type`s ([`InvalidArguments`](ExecError::InvalidArguments));
    /// 4. the tool must have a handler ([`NoHandler`](ExecError::NoHandler)), checked before any
    ///    hook runs so hooks never act on a call that cannot run;
    /// 5. the pre-tool-use hooks whose matcher applies run in (priority, id) order: `Deny`
    ///    stops the call ([`HookDenied`](ExecError::HookDenied)), `RewriteInput` replaces the
    ///    arguments for later hooks and the handler;
    /// 6. the handler runs, its panics caught ([`Handler`](ExecError::Handler),
    ///    [`HandlerPanicked`](ExecError::HandlerPanicked));
    /// 7. the post-tool-use hooks run in the same order; `RewriteOutput` replaces the output.
    ///
    /// A hook that errs or panics fails the call ([`HookFailed`](ExecError::HookFailed)), as
    /// does one returning an outcome its event does not allow
    /// ([`InvalidHookOutcome`](ExecError::InvalidHookOutcome)). Nothing here writes to the
    /// store (handlers may, themselves).
    ///
    /// With an event bus, each call emits, in this order: `ToolCallStarted`; `HookDenied` if a
    /// hook denied it; then exactly one of `ToolCallFinished` or `ToolCallFailed` (also when
    /// the call's future is dropped before it ends). All on the thread polling the call.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use capstore::{ExecError, Executor, Store, ToolCall, UnselectedCallPolicy};
    /// let executor = Executor::new(Store::new()).with_policy(UnselectedCallPolicy::Deny);
    /// let err = executor.execute(ToolCall::new("1", "nope", serde_json::json!({})), &[]).await;
    /// assert_eq!(err, Err(ExecError::UnknownTool { tool: "nope".into() }));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn execute(
        &self,
        call: ToolCall,
        selected: &[String],
    ) -> Result<ToolOutput, ExecError> {
        let started = Instant::now();
        let report = CallReport::start(self.events.as_ref(), &call.id, &call.name);
        let result = self.run(call, selected, started).await;
        match &result {
            Ok(out) => {
                if let Some(usage) = &self.usage {
                    usage.called(&out.tool);
                }
                report.finished(out.elapsed)
            }
            Err(error) => report.failed(error),
        }
        result
    }

    async fn run(
        &self,
        call: ToolCall,
        selected: &[String],
        started: Instant,
    ) -> Result<ToolOutput, ExecError> {
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let snap = self.store.snapshot();
        let store_error = |error| ExecError::Store {
            tool: name.clone(),
            error,
        };
        let tool = snap
            .get_arc(&TOOLS, &name)
            .map_err(store_error)?
            .ok_or_else(|| ExecError::UnknownTool { tool: name.clone() })?;
        self.check_policy(&name, selected)?;
        // Parsed once per call, for this check and any hook's rewrite.
        let schema = tool.input_schema.to_value();
        check_arguments(&schema, &arguments).map_err(|reason| ExecError::InvalidArguments {
            tool: name.clone(),
            reason,
        })?;
        let handler = snap
            .get_arc(&HANDLERS, &name)
            .map_err(store_error)?
            .ok_or_else(|| ExecError::NoHandler { tool: name.clone() })?;
        let pre = matching_hooks(&snap, HookEvent::PreToolUse, &name).map_err(store_error)?;
        let post = matching_hooks(&snap, HookEvent::PostToolUse, &name).map_err(store_error)?;

        let info = CallInfo {
            call_id: &id,
            tool: &name,
            input_schema: &schema,
        };
        let args = run_pre(&pre, &info, arguments).await?;
        let output = match guarded(|| handler.call(args.clone())).await {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => {
                return Err(ExecError::Handler {
                    tool: name.clone(),
                    error,
                });
            }
            Err(message) => {
                return Err(ExecError::HandlerPanicked {
                    tool: name.clone(),
                    message,
                });
            }
        };
        let output = run_post(&post, &info, &args, output).await?;
        Ok(ToolOutput {
            call_id: id,
            tool: name,
            output,
            version: snap.version(),
            elapsed: started.elapsed(),
        })
    }

    fn check_policy(&self, tool: &str, selected: &[String]) -> Result<(), ExecError> {
        if selected.iter().any(|s| s == tool) {
            return Ok(());
        }
        match self.policy {
            UnselectedCallPolicy::Allow => Ok(()),
            UnselectedCallPolicy::Deny => Err(ExecError::NotSelected {
                tool: tool.to_string(),
            }),
            UnselectedCallPolicy::AllowAndKeep => {
                self.kept.lock().insert(tool.to_string());
                Ok(())
            }
        }
    }
}
