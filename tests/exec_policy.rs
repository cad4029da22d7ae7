//! The unselected-call policies: a registered tool the model was not offered this turn is run
//! (Allow), refused (Deny), or run and kept selected from then on (AllowAndKeep).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use capstore::exec::register_tool;
use capstore::{ExecError, Executor, Store, Tool, ToolCall, UnselectedCallPolicy};
use serde_json::json;

/// A store with tools `a` and `b` (each counting its runs) and `needs_x` (requires `x`).
fn setup() -> (Store, Arc<AtomicUsize>) {
    let store = Store::new();
    let runs = Arc::new(AtomicUsize::new(0));
    store
        .write(|tx| {
            for name in ["a", "b"] {
                let runs = Arc::clone(&runs);
                register_tool(tx, Tool::new(name, ""), move |_| {
                    let runs = Arc::clone(&runs);
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(json!("ran"))
                    }
                })?;
            }
            let schema = json!({ "type": "object", "required": ["x"] });
            register_tool(
                tx,
                Tool::new("needs_x", "").with_input_schema(schema),
                |_| async { Ok(json!("ran")) },
            )
        })
        .expect("setup");
    (store, runs)
}

fn call(name: &str) -> ToolCall {
    ToolCall::new("c", name, json!({}))
}

fn offered(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn allow_runs_unselected_calls_and_keeps_nothing() {
    let (store, runs) = setup();
    let executor = Executor::new(store);
    assert_eq!(executor.policy(), UnselectedCallPolicy::Allow);
    let out = executor
        .execute(call("b"), &offered(&["a"]))
        .await
        .expect("allowed");
    assert_eq!(out.output, "ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(executor.kept_tools().is_empty());
}

#[tokio::test]
async fn deny_refuses_unselected_calls_before_they_run() {
    let (store, runs) = setup();
    let executor = Executor::new(store).with_policy(UnselectedCallPolicy::Deny);
    let err = executor.execute(call("b"), &offered(&["a"])).await;
    assert_eq!(err, Err(ExecError::NotSelected { tool: "b".into() }));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The selected one runs.
    executor
        .execute(call("a"), &offered(&["a"]))
        .await
        .expect("selected");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(executor.kept_tools().is_empty());
}

#[tokio::test]
async fn deny_still_reports_unknown_tools_as_unknown() {
    let (store, _) = setup();
    let executor = Executor::new(store).with_policy(UnselectedCallPolicy::Deny);
    let err = executor.execute(call("zzz"), &[]).await;
    assert_eq!(err, Err(ExecError::UnknownTool { tool: "zzz".into() }));
}

#[tokio::test]
async fn allow_and_keep_runs_and_remembers_unselected_tools() {
    let (store, runs) = setup();
    let executor = Executor::new(store).with_policy(UnselectedCallPolicy::AllowAndKeep);
    executor
        .execute(call("b"), &offered(&["a"]))
        .await
        .expect("allowed");
    executor
        .execute(call("a"), &offered(&["a"]))
        .await
        .expect("selected");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        executor.kept_tools(),
        ["b"],
        "only the unselected call is kept"
    );

    // Clones share the kept set (the context builder may hold one, the agent loop another).
    let clone = executor.clone();
    clone.execute(call("a"), &[]).await.expect("allowed");
    assert_eq!(executor.kept_tools(), ["a", "b"]);

    assert!(executor.release_kept("a"));
    assert!(!executor.release_kept("a"));
    assert_eq!(clone.kept_tools(), ["b"]);
    executor.clear_kept();
    assert!(clone.kept_tools().is_empty());
}

#[tokio::test]
async fn allow_and_keep_keeps_a_tool_whose_call_then_fails() {
    // The model meant to use it: keeping it offered lets it retry with proper arguments.
    let (store, _) = setup();
    let executor = Executor::new(store).with_policy(UnselectedCallPolicy::AllowAndKeep);
    let err = executor.execute(call("needs_x"), &[]).await;
    assert!(
        matches!(err, Err(ExecError::InvalidArguments { .. })),
        "{err:?}"
    );
    assert_eq!(executor.kept_tools(), ["needs_x"]);
}

#[tokio::test]
async fn allow_and_keep_does_not_keep_unknown_tools() {
    let (store, _) = setup();
    let executor = Executor::new(store).with_policy(UnselectedCallPolicy::AllowAndKeep);
    let err = executor.execute(call("zzz"), &[]).await;
    assert_eq!(err, Err(ExecError::UnknownTool { tool: "zzz".into() }));
    assert!(executor.kept_tools().is_empty());
}

#[test]
fn policies_serialize_in_kebab_case() {
    let names: Vec<String> = [
        UnselectedCallPolicy::Allow,
        UnselectedCallPolicy::Deny,
        UnselectedCallPolicy::AllowAndKeep,
    ]
    .iter()
    .map(|p| serde_json::to_string(p).expect("serialize"))
    .collect();
    assert_eq!(names, ["\"allow\"", "\"deny\"", "\"allow-and-keep\""]);
}
