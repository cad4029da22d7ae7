//! Running the hooks of one event around a call: which apply, in what order, and what their
//! outcomes do.

use std::sync::Arc;

use serde_json::Value;

use super::hook::HOOK_HANDLERS;
use crate::hooks::{HOOKS, HookEvent};
use crate::store::{Snapshot, StoreError};

use super::args::check_arguments;
use super::catch::guarded;
use super::error::ExecError;
use super::glob::matcher_matches;
use super::hook::{HookContext, HookHandler, HookOutcome};

/// The handlers of the hooks on `event` whose matcher applies to `tool`, priority ascending,
/// then id ascending. Hooks without a handler are left out: a hook record alone has no code
/// to run (it may be declared for another runner, or its handler not attached yet).
pub(crate) fn matching_hooks(
    snap: &Snapshot,
    event: HookEvent,
    tool: &str,
) -> Result<Vec<Arc<HookHandler>>, StoreError> {
    let mut hooks: Vec<(i32, &str)> = snap
        .by_index(&HOOKS, "event", event.as_str())?
        .filter(|(_, hook)| matcher_matches(&hook.matcher, tool))
        .map(|(id, hook)| (hook.priority, &**id))
        .collect();
    hooks.sort_unstable();
    let mut handlers = Vec::with_capacity(hooks.len());
    for (_, id) in hooks {
        if let Some(handler) = snap.get_arc(&HOOK_HANDLERS, id)? {
            handlers.push(handler);
        }
    }
    Ok(handlers)
}

/// One call's identity, as the hooks are told it.
pub(crate) struct CallInfo<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input_schema: &'a Value,
}

/// Runs the pre-tool-use hooks in order; returns the arguments for the handler.
pub(crate) async fn run_pre(
    hooks: &[Arc<HookHandler>],
    call: &CallInfo<'_>,
    mut args: Value,
) -> Result<Value, ExecError> {
    for hook in hooks {
        let ctx = context(hook, call, HookEvent::PreToolUse, args.clone(), None);
        match run_one(hook, call, ctx).await? {
            HookOutcome::Continue => {}
            HookOutcome::Deny { reason } => {
                return Err(ExecError::HookDenied {
                    tool: call.tool.to_string(),
                    hook: hook.hook.clone(),
                    reason,
                });
            }
            HookOutcome::RewriteInput(new_args) => {
                // The handler relies on the same guarantees whoever wrote the arguments.
                check_arguments(call.input_schema, &new_args).map_err(|reason| {
                    ExecError::InvalidArguments {
                        tool: call.tool.to_string(),
                        reason: format!("as rewritten by hook `{}`: {reason}", hook.hook),
                    }
                })?;
                args = new_args;
            }
            other @ HookOutcome::RewriteOutput(_) => {
                return Err(invalid(hook, call, HookEvent::PreToolUse, &other));
            }
        }
    }
    Ok(args)
}

/// Runs the post-tool-use hooks in order; returns the output for the caller.
pub(crate) async fn run_post(
    hooks: &[Arc<HookHandler>],
    call: &CallInfo<'_>,
    args: &Value,
    mut output: Value,
) -> Result<Value, ExecError> {
    for hook in hooks {
        let ctx = context(
            hook,
            call,
            HookEvent::PostToolUse,
            args.clone(),
            Some(output.clone()),
        );
        match run_one(hook, call, ctx).await? {
            HookOutcome::Continue => {}
            HookOutcome::RewriteOutput(new_output) => output = new_output,
            other => return Err(invalid(hook, call, HookEvent::PostToolUse, &other)),
        }
    }
    Ok(output)
}

fn context(
    hook: &HookHandler,
    call: &CallInfo<'_>,
    event: HookEvent,
    input: Value,
    output: Option<Value>,
) -> HookContext {
    HookContext {
        event,
        hook: hook.hook.clone(),
        call_id: call.call_id.to_string(),
        tool: call.tool.to_string(),
        input,
        output,
    }
}

/// Runs one hook; its error or panic fails the call (hooks guard tools, so they fail closed).
async fn run_one(
    hook: &HookHandler,
    call: &CallInfo<'_>,
    ctx: HookContext,
) -> Result<HookOutcome, ExecError> {
    let failed = |message: String| ExecError::HookFailed {
        tool: call.tool.to_string(),
        hook: hook.hook.clone(),
        message,
    };
    match guarded(|| hook.call(ctx)).await {
        Ok(Ok(outcome)) => Ok(outcome),
        Ok(Err(error)) => Err(failed(error.message)),
        Err(panic) => Err(failed(format!("panicked: {panic}"))),
    }
}

fn invalid(
    hook: &HookHandler,
    call: &CallInfo<'_>,
    event: HookEvent,
    outcome: &HookOutcome,
) -> ExecError {
    ExecError::InvalidHookOutcome {
        tool: call.tool.to_string(),
        hook: hook.hook.clone(),
        event,
        outcome: outcome.name(),
    }
}
