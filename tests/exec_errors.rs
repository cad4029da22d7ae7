//! Every failure of `Executor::execute` is a typed error naming the tool, and leaves the store
//! exactly as it was: same snapshot (nothing published), same catalog.

use std::sync::Arc;

use capstore::exec::{register_hook, register_tool};
use capstore::{
    ExecError, Executor, HANDLERS, HandlerError, Hook, HookEvent, HookOutcome, Snapshot, Store,
    TOOLS, Tool, ToolCall, ToolHandler,
};
use serde_json::{Value, json};

fn read_file_tool() -> Tool {
    Tool::new("read_file", "Read a file")
        .with_source("fs")
        .with_input_schema(json!({
            "type": "object",
            "properties": { "path": { "type": "string" }, "limit": { "type": "integer" } },
            "required": ["path"]
        }))
}

/// A store with: `fs/read_file` (works), `bare` (no handler), `fails` (returns an error),
/// `panics` (panics while running) and `panics_early` (panics before returning its future).
fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(tx, read_file_tool(), |args| async move {
                Ok(json!({ "text": format!("contents of {}", args["path"].as_str().unwrap_or("")) }))
            })?;
            tx.insert(&TOOLS, Tool::new("bare", "A tool with no handler"))?;
            register_tool(tx, Tool::new("fails", "Always fails"), |_| async {
                Err::<Value, _>(HandlerError::new("disk on fire"))
            })?;
            register_tool(tx, Tool::new("panics", "Always panics"), |_| async {
                if true {
                    panic!("handler exploded");
                }
                Ok(json!(null))
            })?;
            tx.insert(&TOOLS, Tool::new("panics_early", "Panics before its future"))?;
            tx.upsert(
                &HANDLERS,
                ToolHandler::new("panics_early", |_args: Value| -> std::future::Ready<Result<Value, HandlerError>> {
                    panic!("no future for you")
                }),
            )?;
            Ok::<_, capstore::StoreError>(())
        })
        .expect("setup");
    store
}

fn catalog(snap: &Snapshot) -> Vec<String> {
    let mut keys: Vec<String> = snap
        .iter(&TOOLS)
        .expect("tools")
        .map(|(k, _)| format!("tool:{k}"))
        .collect();
    keys.extend(
        snap.iter(&HANDLERS)
            .expect("handlers")
            .map(|(k, _)| format!("handler:{k}")),
    );
    keys
}

/// Runs `call`, checks the error and that the store did not change at all.
async fn fails_without_trace(executor: &Executor, call: ToolCall, expected: ExecError) {
    let before = executor.store().snapshot();
    let result = executor.execute(call, &[]).await;
    assert_eq!(result, Err(expected.clone()));
    let after = executor.store().snapshot();
    assert!(Arc::ptr_eq(&before, &after), "nothing may be published");
    assert_eq!(after.version(), before.version());
    assert_eq!(catalog(&after), catalog(&before));
    assert!(!expected.tool().is_empty());
}

#[tokio::test]
async fn unknown_tool() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "fs/nope", json!({}));
    fails_without_trace(
        &executor,
        call,
        ExecError::UnknownTool {
            tool: "fs/nope".into(),
        },
    )
    .await;
}

#[tokio::test]
async fn bare_name_of_a_sourced_tool_is_unknown() {
    // Calls name the qualified key; `read_file` alone is not it.
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "read_file", json!({ "path": "a" }));
    fails_without_trace(
        &executor,
        call,
        ExecError::UnknownTool {
            tool: "read_file".into(),
        },
    )
    .await;
}

#[tokio::test]
async fn tool_without_handler() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "bare", json!({}));
    fails_without_trace(
        &executor,
        call,
        ExecError::NoHandler {
            tool: "bare".into(),
        },
    )
    .await;
}

#[tokio::test]
async fn non_object_arguments() {
    let executor = Executor::new(store());
    for (args, kind) in [
        (json!(null), "null"),
        (json!([1, 2]), "array"),
        (json!("a.txt"), "string"),
        (json!(3), "integer"),
    ] {
        let call = ToolCall::new("1", "fs/read_file", args);
        let expected = ExecError::InvalidArguments {
            tool: "fs/read_file".into(),
            reason: format!("must be a JSON object, not {kind}"),
        };
        fails_without_trace(&executor, call, expected).await;
    }
}

#[tokio::test]
async fn missing_required_argument() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "fs/read_file", json!({ "limit": 3 }));
    let expected = ExecError::InvalidArguments {
        tool: "fs/read_file".into(),
        reason: "missing required argument `path`".into(),
    };
    fails_without_trace(&executor, call, expected).await;
}

#[tokio::test]
async fn wrong_primitive_type() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "fs/read_file", json!({ "path": "a", "limit": "ten" }));
    let expected = ExecError::InvalidArguments {
        tool: "fs/read_file".into(),
        reason: "argument `limit` must be integer, not string".into(),
    };
    fails_without_trace(&executor, call, expected).await;
}

#[tokio::test]
async fn handler_error() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "fails", json!({}));
    let expected = ExecError::Handler {
        tool: "fails".into(),
        error: HandlerError::new("disk on fire"),
    };
    fails_without_trace(&executor, call, expected).await;
}

#[tokio::test]
async fn handler_panic_is_caught_and_the_executor_still_works() {
    let executor = Executor::new(store());
    let call = ToolCall::new("1", "panics", json!({}));
    let expected = ExecError::HandlerPanicked {
        tool: "panics".into(),
        message: "handler exploded".into(),
    };
    fails_without_trace(&executor, call, expected).await;

    let call = ToolCall::new("2", "panics_early", json!({}));
    let expected = ExecError::HandlerPanicked {
        tool: "panics_early".into(),
        message: "no future for you".into(),
    };
    fails_without_trace(&executor, call, expected).await;

    let ok = executor
        .execute(
            ToolCall::new("3", "fs/read_file", json!({ "path": "a.txt" })),
            &[],
        )
        .await
        .expect("still usable after a panic");
    assert_eq!(ok.output, json!({ "text": "contents of a.txt" }));
}

#[tokio::test]
async fn hook_failures_leave_no_trace_either() {
    let store = store();
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("errs", HookEvent::PreToolUse, "errs_on"),
                |_| async { Err(HandlerError::new("hook broke")) },
            )?;
            register_hook(
                tx,
                Hook::new("panics", HookEvent::PostToolUse, "panics_on"),
                |_| async {
                    if true {
                        panic!("hook exploded");
                    }
                    Ok(HookOutcome::Continue)
                },
            )?;
            register_hook(
                tx,
                Hook::new("bad-pre", HookEvent::PreToolUse, "bad_pre"),
                |_| async { Ok(HookOutcome::RewriteOutput(json!(1))) },
            )?;
            register_hook(
                tx,
                Hook::new("bad-post", HookEvent::PostToolUse, "bad_post"),
                |_| async { Ok(HookOutcome::deny("too late")) },
            )?;
            register_hook(
                tx,
                Hook::new("bad-rewrite", HookEvent::PreToolUse, "bad_rewrite"),
                |_| async { Ok(HookOutcome::RewriteInput(json!({ "path": 7 }))) },
            )?;
            for name in ["errs_on", "panics_on", "bad_pre", "bad_post", "bad_rewrite"] {
                let tool = Tool::new(name, "").with_input_schema(json!({
                    "type": "object", "properties": { "path": { "type": "string" } }
                }));
                register_tool(tx, tool, |args| async move { Ok(args) })?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("setup");
    let executor = Executor::new(store);
    let cases = [
        (
            "errs_on",
            ExecError::HookFailed { tool: "errs_on".into(), hook: "errs".into(), message: "hook broke".into() },
        ),
        (
            "panics_on",
            ExecError::HookFailed {
                tool: "panics_on".into(),
                hook: "panics".into(),
                message: "panicked: hook exploded".into(),
            },
        ),
        (
            "bad_pre",
            ExecError::InvalidHookOutcome {
                tool: "bad_pre".into(),
                hook: "bad-pre".into(),
                event: HookEvent::PreToolUse,
                outcome: "RewriteOutput",
            },
        ),
        (
            "bad_post",
            ExecError::InvalidHookOutcome {
                tool: "bad_post".into(),
                hook: "bad-post".into(),
                event: HookEvent::PostToolUse,
                outcome: "Deny",
            },
        ),
        (
            "bad_rewrite",
            ExecError::InvalidArguments {
                tool: "bad_rewrite".into(),
                reason: "as rewritten by hook `bad-rewrite`: argument `path` must be string, not integer"
                    .into(),
            },
        ),
    ];
    for (tool, expected) in cases {
        fails_without_trace(&executor, ToolCall::new("1", tool, json!({})), expected).await;
    }
}

#[test]
fn errors_display_with_the_tool_name() {
    let errors = [
        ExecError::UnknownTool { tool: "t".into() },
        ExecError::NotSelected { tool: "t".into() },
        ExecError::InvalidArguments {
            tool: "t".into(),
            reason: "r".into(),
        },
        ExecError::NoHandler { tool: "t".into() },
        ExecError::HookDenied {
            tool: "t".into(),
            hook: "h".into(),
            reason: "r".into(),
        },
        ExecError::HookFailed {
            tool: "t".into(),
            hook: "h".into(),
            message: "m".into(),
        },
        ExecError::InvalidHookOutcome {
            tool: "t".into(),
            hook: "h".into(),
            event: HookEvent::PreToolUse,
            outcome: "RewriteOutput",
        },
        ExecError::Handler {
            tool: "t".into(),
            error: HandlerError::new("e"),
        },
        ExecError::HandlerPanicked {
            tool: "t".into(),
            message: "m".into(),
        },
    ];
    for error in errors {
        assert_eq!(error.tool(), "t");
        assert!(error.to_string().contains("`t`"), "{error}");
    }
}

#[tokio::test]
async fn a_store_without_builtin_tables_is_a_typed_error() {
    let bare = capstore::store::StoreBuilder::new().build();
    let result = Executor::new(bare)
        .execute(ToolCall::new("1", "x", json!({})), &[])
        .await;
    assert!(
        matches!(result, Err(ExecError::Store { ref tool, .. }) if tool == "x"),
        "{result:?}"
    );
}
