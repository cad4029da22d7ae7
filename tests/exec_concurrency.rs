//! Many tasks execute calls while another thread registers and removes tools and hooks. Every
//! call either succeeds or fails with an expected typed error, never panics; each call sees
//! one snapshot (hooks registered together run together), and a tool is never seen without
//! its handler.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use capstore::exec::{register_hook, register_tool, remove_hook, remove_tool};
use capstore::{
    Event, EventBus, ExecError, Executor, HOOKS, Hook, HookContext, HookEvent, HookOutcome, Store,
    TOOLS, Tool, ToolCall, UnselectedCallPolicy,
};
use parking_lot::Mutex;
use serde_json::json;

const TOOLS_N: usize = 8;
const TASKS: usize = 8;
const CALLS_PER_TASK: usize = 250;
const ROUNDS: usize = 300;

fn tool_name(i: usize) -> String {
    format!("t{i}")
}

fn add_tool(store: &Store, name: &str) {
    let echo = name.to_string();
    store
        .write(|tx| {
            register_tool(tx, Tool::new(name, "").with_source("svc"), move |args| {
                let echo = echo.clone();
                async move {
                    // Yield once so calls interleave with each other and with commits.
                    tokio::task::yield_now().await;
                    Ok(json!({ "tool": echo, "trail": args["trail"] }))
                }
            })
        })
        .expect("register tool");
}

fn append(ctx: HookContext) -> HookOutcome {
    let mut input = ctx.input;
    if let Some(trail) = input["trail"].as_array_mut() {
        trail.push(json!(ctx.hook));
    }
    HookOutcome::RewriteInput(input)
}

/// Registers or removes the pair of hooks `pair-a` and `pair-b`, always in one transaction.
fn toggle_pair(store: &Store) {
    let present = store.snapshot().contains(&HOOKS, "pair-a").expect("hooks");
    store
        .write(|tx| {
            if present {
                remove_hook(tx, "pair-a")?;
                remove_hook(tx, "pair-b")?;
            } else {
                for id in ["pair-a", "pair-b"] {
                    register_hook(
                        tx,
                        Hook::new(id, HookEvent::PreToolUse, "svc/*"),
                        |ctx| async move { Ok(append(ctx)) },
                    )?;
                }
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("toggle pair");
}

fn toggle_deny(store: &Store) {
    let present = store
        .snapshot()
        .contains(&HOOKS, "deny-odd")
        .expect("hooks");
    store
        .write(|tx| {
            if present {
                remove_hook(tx, "deny-odd").map(|_| ())
            } else {
                let hook = Hook::new("deny-odd", HookEvent::PreToolUse, "t?").with_priority(-1);
                register_hook(tx, hook, |ctx| async move {
                    Ok(if ctx.input["odd"] == true {
                        HookOutcome::deny("odd")
                    } else {
                        HookOutcome::Continue
                    })
                })
                .map(|_| ())
            }
        })
        .expect("toggle deny");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_stay_typed_while_the_catalog_churns() {
    let store = Store::new();
    for i in 0..TOOLS_N {
        add_tool(&store, &tool_name(i));
    }
    let bus = EventBus::new();
    let events: Arc<Mutex<Vec<Event>>> = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let _sub = bus.subscribe(move |e| {
        if e.call_id().is_some() {
            log.lock().push(e.clone());
        }
    });
    let executor = Executor::new(store.clone())
        .with_policy(UnselectedCallPolicy::AllowAndKeep)
        .with_events(bus);

    // The writer makes ROUNDS rounds of commits and waits for some calls to finish between
    // rounds; the tasks call until the writer is done (and at least CALLS_PER_TASK times), so
    // calls and commits really interleave on any scheduler.
    let writer_done = Arc::new(AtomicBool::new(false));
    let calls_done = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, writer_done, calls_done) = (
            store.clone(),
            Arc::clone(&writer_done),
            Arc::clone(&calls_done),
        );
        thread::spawn(move || {
            for i in 0..ROUNDS {
                let seen = calls_done.load(Ordering::Relaxed);
                while calls_done.load(Ordering::Relaxed) == seen {
                    thread::yield_now();
                }
                let name = tool_name(i % TOOLS_N);
                let key = format!("svc/{name}");
                if store.snapshot().contains(&TOOLS, &key).expect("tools") {
                    store
                        .write(|tx| remove_tool(tx, &key))
                        .expect("remove tool");
                } else {
                    add_tool(&store, &name);
                }
                if i % 3 == 0 {
                    toggle_pair(&store);
                }
                if i % 5 == 0 {
                    toggle_deny(&store);
                }
            }
            writer_done.store(true, Ordering::Relaxed);
        })
    };

    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let (executor, writer_done, calls_done) = (
            executor.clone(),
            Arc::clone(&writer_done),
            Arc::clone(&calls_done),
        );
        tasks.push(tokio::spawn(async move {
            let mut outcomes: HashMap<&'static str, usize> = HashMap::new();
            let mut versions = std::collections::BTreeSet::new();
            let mut n = 0;
            while n < CALLS_PER_TASK || !writer_done.load(Ordering::Relaxed) {
                let tool = format!("svc/{}", tool_name((task + n) % TOOLS_N));
                let selected = if n % 2 == 0 {
                    vec![tool.clone()]
                } else {
                    Vec::new()
                };
                let call = ToolCall::new(
                    format!("{task}-{n}"),
                    &tool,
                    json!({ "trail": [], "odd": n % 2 == 1 }),
                );
                let kind = match executor.execute(call, &selected).await {
                    Ok(out) => {
                        versions.insert(out.version);
                        let trail = &out.output["trail"];
                        assert!(
                            *trail == json!([]) || *trail == json!(["pair-a", "pair-b"]),
                            "hooks registered together must run together, got {trail}"
                        );
                        "ok"
                    }
                    Err(ExecError::UnknownTool { tool: t }) => {
                        assert_eq!(t, tool);
                        "unknown"
                    }
                    Err(ExecError::HookDenied { hook, .. }) => {
                        assert_eq!(hook, "deny-odd");
                        assert_eq!(n % 2, 1, "only odd calls are denied");
                        "denied"
                    }
                    Err(other) => panic!("unexpected error: {other}"),
                };
                *outcomes.entry(kind).or_default() += 1;
                calls_done.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
            (outcomes, versions)
        }));
    }
    let mut totals: HashMap<&'static str, usize> = HashMap::new();
    let mut versions = std::collections::BTreeSet::new();
    for task in tasks {
        let (outcomes, seen) = task.await.expect("no task panicked");
        for (kind, n) in outcomes {
            *totals.entry(kind).or_default() += n;
        }
        versions.extend(seen);
    }
    writer.join().expect("writer did not panic");

    let calls = totals.values().sum::<usize>();
    assert_eq!(calls as u64, calls_done.load(Ordering::Relaxed));
    assert!(calls >= TASKS * CALLS_PER_TASK);
    assert!(totals.get("ok").copied().unwrap_or(0) > 0, "{totals:?}");
    // Successful calls ran against many versions: commits happened between them.
    assert!(
        versions.len() > ROUNDS / 10,
        "{} versions seen",
        versions.len()
    );

    // Per call: Started first, one terminal event last, HookDenied only just before Failed.
    let mut per_call: HashMap<String, Vec<&'static str>> = HashMap::new();
    for e in events.lock().iter() {
        per_call
            .entry(e.call_id().unwrap_or("").to_string())
            .or_default()
            .push(e.kind());
    }
    assert_eq!(per_call.len(), calls);
    for (call, kinds) in per_call {
        let ok = matches!(
            kinds.as_slice(),
            ["tool_call_started", "tool_call_finished"]
                | ["tool_call_started", "tool_call_failed"]
                | ["tool_call_started", "hook_denied", "tool_call_failed"]
        );
        assert!(ok, "call {call}: {kinds:?}");
    }
    // Kept tools come from the unselected (odd) calls that found their tool.
    assert!(executor.kept_tools().iter().all(|t| t.starts_with("svc/t")));
}

#[test]
fn executor_and_its_futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let executor = Executor::new(Store::new());
    send_sync(&executor);
    let selected: Vec<String> = Vec::new();
    let future = executor.execute(ToolCall::new("1", "x", json!({})), &selected);
    send(&future);
}
