//! Pre- and post-tool-use hooks: matching, order, deny, rewrite, removal, and the one snapshot
//! a call runs against.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use capstore::exec::{register_hook, register_tool, remove_hook};
use capstore::{
    ExecError, Executor, HOOK_HANDLERS, HOOKS, Hook, HookContext, HookEvent, HookOutcome, Store,
    Tool, ToolCall,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// A store with `shell/run`, whose handler counts its runs and echoes its arguments.
fn setup() -> (Store, Arc<AtomicUsize>) {
    let store = Store::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("run", "Run a command").with_source("shell"),
                move |args| {
                    let counter = Arc::clone(&counter);
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        Ok(json!({ "args": args }))
                    }
                },
            )
        })
        .expect("setup");
    (store, runs)
}

fn run_call(args: Value) -> ToolCall {
    ToolCall::new("call-1", "shell/run", args)
}

/// A pre hook that appends its own id to the `trail` array argument.
fn append_id(store: &Store, id: &str, matcher: &str, priority: i32) {
    store
        .write(|tx| {
            let hook = Hook::new(id, HookEvent::PreToolUse, matcher).with_priority(priority);
            register_hook(tx, hook, |ctx: HookContext| async move {
                let mut input = ctx.input;
                if let Some(trail) = input["trail"].as_array_mut() {
                    trail.push(json!(ctx.hook));
                }
                Ok(HookOutcome::RewriteInput(input))
            })
        })
        .expect("register hook");
}

#[tokio::test]
async fn a_denying_hook_stops_the_handler() {
    let (store, runs) = setup();
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("no-rm", HookEvent::PreToolUse, "shell/*"),
                |ctx| async move {
                    let cmd = ctx.input["cmd"].as_str().unwrap_or("");
                    Ok(if cmd.starts_with("rm") {
                        HookOutcome::deny("rm is not allowed")
                    } else {
                        HookOutcome::Continue
                    })
                },
            )
        })
        .expect("hook");
    let executor = Executor::new(store);

    let err = executor
        .execute(run_call(json!({ "cmd": "rm -rf /" })), &[])
        .await;
    assert_eq!(
        err,
        Err(ExecError::HookDenied {
            tool: "shell/run".into(),
            hook: "no-rm".into(),
            reason: "rm is not allowed".into()
        })
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler must not run");

    executor
        .execute(run_call(json!({ "cmd": "ls" })), &[])
        .await
        .expect("allowed");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_deny_stops_later_hooks_too() {
    let (store, runs) = setup();
    let later = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&later);
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("first", HookEvent::PreToolUse, "*").with_priority(1),
                |_| async { Ok(HookOutcome::deny("no")) },
            )?;
            register_hook(
                tx,
                Hook::new("second", HookEvent::PreToolUse, "*").with_priority(2),
                move |_| {
                    seen.fetch_add(1, Ordering::SeqCst);
                    async { Ok(HookOutcome::Continue) }
                },
            )
        })
        .expect("hooks");
    let err = Executor::new(store).execute(run_call(json!({})), &[]).await;
    assert!(matches!(err, Err(ExecError::HookDenied { ref hook, .. }) if hook == "first"));
    assert_eq!(
        (later.load(Ordering::SeqCst), runs.load(Ordering::SeqCst)),
        (0, 0)
    );
}

#[tokio::test]
async fn rewrites_apply_in_priority_then_id_order() {
    let (store, _) = setup();
    // Registered out of order on purpose; equal priorities break ties by id.
    append_id(&store, "c", "shell/run", 5);
    append_id(&store, "a", "run", -1);
    append_id(&store, "b2", "*", 5);
    append_id(&store, "b1", "shell/*", 5);
    append_id(&store, "z", "r?n", -7);
    append_id(&store, "elsewhere", "web/*", -100); // does not match: must not appear
    let out = Executor::new(store)
        .execute(run_call(json!({ "trail": [] })), &[])
        .await
        .expect("runs");
    assert_eq!(
        out.output,
        json!({ "args": { "trail": ["z", "a", "b1", "b2", "c"] } })
    );
}

#[tokio::test]
async fn the_handler_gets_the_rewritten_input_and_post_hooks_see_it() {
    let (store, _) = setup();
    let post_saw = Arc::new(Mutex::new(None));
    let log = Arc::clone(&post_saw);
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("sandbox", HookEvent::PreToolUse, "*"),
                |ctx| async move {
                    let mut input = ctx.input;
                    input["sandboxed"] = json!(true);
                    Ok(HookOutcome::RewriteInput(input))
                },
            )?;
            register_hook(
                tx,
                Hook::new("observe", HookEvent::PostToolUse, "*"),
                move |ctx| {
                    *log.lock() = Some(ctx);
                    async { Ok(HookOutcome::Continue) }
                },
            )
        })
        .expect("hooks");
    let out = Executor::new(store)
        .execute(run_call(json!({ "cmd": "ls" })), &[])
        .await
        .expect("runs");
    assert_eq!(
        out.output,
        json!({ "args": { "cmd": "ls", "sandboxed": true } })
    );
    let ctx = post_saw.lock().clone().expect("post hook ran");
    assert_eq!(ctx.event, HookEvent::PostToolUse);
    assert_eq!(
        (ctx.hook.as_str(), ctx.call_id.as_str(), ctx.tool.as_str()),
        ("observe", "call-1", "shell/run")
    );
    assert_eq!(ctx.input, json!({ "cmd": "ls", "sandboxed": true }));
    assert_eq!(ctx.output, Some(out.output.clone()));
}

#[tokio::test]
async fn post_hooks_rewrite_the_output_in_order() {
    let (store, _) = setup();
    store
        .write(|tx| {
            for (id, priority) in [("wrap", 2), ("redact", 1)] {
                let hook =
                    Hook::new(id, HookEvent::PostToolUse, "shell/run").with_priority(priority);
                register_hook(tx, hook, |ctx| async move {
                    let output = ctx.output.unwrap_or(Value::Null);
                    Ok(HookOutcome::RewriteOutput(match ctx.hook.as_str() {
                        "redact" => json!("[redacted]"),
                        _ => json!({ "wrapped": output }),
                    }))
                })?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("hooks");
    let out = Executor::new(store)
        .execute(run_call(json!({ "cmd": "cat secrets" })), &[])
        .await
        .expect("runs");
    // redact (priority 1) ran first, then wrap (priority 2) wrapped its result.
    assert_eq!(out.output, json!({ "wrapped": "[redacted]" }));
}

#[tokio::test]
async fn a_removed_hook_no_longer_runs() {
    let (store, runs) = setup();
    store
        .write(|tx| {
            register_hook(
                tx,
                Hook::new("deny-all", HookEvent::PreToolUse, "*"),
                |_| async { Ok(HookOutcome::deny("closed")) },
            )
        })
        .expect("hook");
    let executor = Executor::new(store.clone());
    assert!(matches!(
        executor.execute(run_call(json!({})), &[]).await,
        Err(ExecError::HookDenied { .. })
    ));

    let removed = store
        .write(|tx| remove_hook(tx, "deny-all").map(|h| h.id.clone()))
        .expect("remove");
    assert_eq!(removed.version, 3);
    let snap = store.snapshot();
    assert_eq!(
        (
            snap.count(&HOOKS).expect("hooks"),
            snap.count(&HOOK_HANDLERS).expect("handlers")
        ),
        (0, 0)
    );

    executor
        .execute(run_call(json!({})), &[])
        .await
        .expect("no longer denied");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(matches!(
        store.write(|tx| remove_hook(tx, "deny-all")),
        Err(capstore::StoreError::NotFound { .. })
    ));
}

#[tokio::test]
async fn a_hook_without_a_handler_is_skipped() {
    let (store, runs) = setup();
    // Declared only (e.g. loaded from a config file for another runner): no code to run.
    store
        .write(|tx| tx.insert(&HOOKS, Hook::new("declared", HookEvent::PreToolUse, "*")))
        .expect("insert");
    Executor::new(store)
        .execute(run_call(json!({})), &[])
        .await
        .expect("runs");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn hooks_do_not_run_for_a_call_that_cannot_run() {
    let store = Store::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    store
        .write(|tx| {
            tx.insert(&capstore::TOOLS, Tool::new("no_handler", ""))?;
            register_hook(
                tx,
                Hook::new("audit", HookEvent::PreToolUse, "*"),
                move |_| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { Ok(HookOutcome::Continue) }
                },
            )
        })
        .expect("setup");
    let executor = Executor::new(store).with_policy(capstore::UnselectedCallPolicy::Deny);
    for (name, offered) in [
        ("no_handler", true),
        ("no_handler", false),
        ("missing", true),
    ] {
        let selected = if offered {
            vec![name.to_string()]
        } else {
            Vec::new()
        };
        assert!(
            executor
                .execute(ToolCall::new("1", name, json!({})), &selected)
                .await
                .is_err()
        );
    }
    let bad_args = ToolCall::new("1", "no_handler", json!([]));
    assert!(
        executor
            .execute(bad_args, &["no_handler".to_string()])
            .await
            .is_err()
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_call_uses_the_snapshot_it_started_with() {
    // The handler registers a post hook that would rewrite the output: the running call must
    // not see it (it started on the previous version), the next call must.
    let store = Store::new();
    let writer = store.clone();
    store
        .write(|tx| {
            register_tool(tx, Tool::new("install", ""), move |_| {
                let writer = writer.clone();
                async move {
                    let exists = writer.snapshot().contains(&HOOKS, "late").unwrap_or(true);
                    if !exists {
                        writer
                            .write(|tx| {
                                register_hook(
                                    tx,
                                    Hook::new("late", HookEvent::PostToolUse, "*"),
                                    |_| async {
                                        Ok(HookOutcome::RewriteOutput(json!("rewritten")))
                                    },
                                )
                            })
                            .map_err(|e| capstore::HandlerError::new(e.to_string()))?;
                    }
                    Ok(json!("original"))
                }
            })
        })
        .expect("setup");
    let executor = Executor::new(store);
    let first = executor
        .execute(ToolCall::new("1", "install", json!({})), &[])
        .await
        .expect("first");
    assert_eq!(
        (first.output.clone(), first.version),
        (json!("original"), 1)
    );
    let second = executor
        .execute(ToolCall::new("2", "install", json!({})), &[])
        .await
        .expect("second");
    assert_eq!(
        (second.output.clone(), second.version),
        (json!("rewritten"), 2)
    );
}

#[tokio::test]
async fn register_helpers_are_all_or_nothing() {
    let store = Store::new();
    store
        .write(|tx| register_tool(tx, Tool::new("dup", ""), |a| async move { Ok(a) }))
        .expect("first");
    let mut tx = store.begin();
    // A duplicate tool, and an invalid hook (empty matcher): both refused, nothing written.
    assert!(register_tool(&mut tx, Tool::new("dup", ""), |a| async move { Ok(a) }).is_err());
    assert!(
        register_hook(
            &mut tx,
            Hook::new("h", HookEvent::PreToolUse, ""),
            |_| async { Ok(HookOutcome::Continue) }
        )
        .is_err()
    );
    assert_eq!(tx.commit().changes.changes.len(), 0);
    assert_eq!(store.version(), 1);
    let snap = store.snapshot();
    assert_eq!(snap.count(&capstore::HANDLERS).expect("handlers"), 1);
    assert_eq!(snap.count(&HOOK_HANDLERS).expect("hook handlers"), 0);
}

#[tokio::test]
async fn remove_tool_removes_its_handler_and_respects_skills() {
    use capstore::exec::remove_tool;
    use capstore::skills::{SkillError, register_skill};
    use capstore::{HANDLERS, Skill};

    let store = Store::new();
    store
        .write(|tx| {
            register_tool(tx, Tool::new("solo", ""), |a| async move { Ok(a) })?;
            register_tool(tx, Tool::new("listed", ""), |a| async move { Ok(a) })?;
            register_skill(
                tx,
                Skill::new("s", "").with_tools(["listed"]),
                Vec::<capstore::Tool>::new(),
            )
        })
        .expect("setup");
    store.write(|tx| remove_tool(tx, "solo")).expect("remove");
    assert!(
        !store
            .snapshot()
            .contains(&HANDLERS, "solo")
            .expect("handlers")
    );
    let refused = store.write(|tx| remove_tool(tx, "listed"));
    assert!(
        matches!(refused, Err(SkillError::ToolInUse { .. })),
        "{refused:?}"
    );
    assert!(
        store
            .snapshot()
            .contains(&HANDLERS, "listed")
            .expect("handlers")
    );
}
