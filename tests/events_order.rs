//! The exact events of a call (success, denial, failure, cancellation), of a whole turn, and
//! `CatalogChanged` from store commits in version order.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use capstore::exec::{register_hook, register_tool};
use capstore::{
    Event, EventBus, EventSubscription, Executor, HandlerError, Hook, HookEvent, HookOutcome,
    Store, TOOLS, Tool, ToolCall,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// Records every event; `elapsed` is zeroed so sequences compare exactly.
fn record(bus: &EventBus) -> (Arc<Mutex<Vec<Event>>>, EventSubscription) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let sub = bus.subscribe(move |event| {
        let mut event = event.clone();
        if let Event::ToolCallFinished { elapsed, .. } = &mut event {
            *elapsed = Duration::ZERO;
        }
        log.lock().push(event);
    });
    (events, sub)
}

fn started(call_id: &str, tool: &str) -> Event {
    Event::ToolCallStarted {
        call_id: call_id.into(),
        tool: tool.into(),
    }
}

fn finished(call_id: &str, tool: &str) -> Event {
    Event::ToolCallFinished {
        call_id: call_id.into(),
        tool: tool.into(),
        elapsed: Duration::ZERO,
    }
}

fn failed(call_id: &str, tool: &str, error: &str) -> Event {
    Event::ToolCallFailed {
        call_id: call_id.into(),
        tool: tool.into(),
        error: error.into(),
    }
}

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("run", "").with_source("shell"),
                |args| async move { Ok(args) },
            )?;
            register_tool(tx, Tool::new("fails", ""), |_| async {
                Err::<Value, _>(HandlerError::new("nope"))
            })?;
            register_tool(tx, Tool::new("hangs", ""), |_| async {
                std::future::pending::<()>().await;
                Ok(json!(null))
            })?;
            register_hook(
                tx,
                Hook::new("no-rm", HookEvent::PreToolUse, "shell/*"),
                |ctx| async move {
                    Ok(if ctx.input["cmd"] == "rm" {
                        HookOutcome::deny("rm is not allowed")
                    } else {
                        HookOutcome::Continue
                    })
                },
            )
        })
        .expect("setup");
    store
}

#[tokio::test]
async fn a_successful_call() {
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let executor = Executor::new(store()).with_events(bus);
    executor
        .execute(
            ToolCall::new("c1", "shell/run", json!({ "cmd": "ls" })),
            &[],
        )
        .await
        .expect("ok");
    assert_eq!(
        *events.lock(),
        [started("c1", "shell/run"), finished("c1", "shell/run")]
    );
}

#[tokio::test]
async fn a_denied_call() {
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let executor = Executor::new(store()).with_events(bus);
    let result = executor
        .execute(
            ToolCall::new("c2", "shell/run", json!({ "cmd": "rm" })),
            &[],
        )
        .await;
    let error = result.expect_err("denied").to_string();
    assert_eq!(
        error,
        "tool `shell/run`: denied by hook `no-rm`: rm is not allowed"
    );
    assert_eq!(
        *events.lock(),
        [
            started("c2", "shell/run"),
            Event::HookDenied {
                call_id: "c2".into(),
                hook: "no-rm".into(),
                tool: "shell/run".into(),
                reason: "rm is not allowed".into(),
            },
            failed("c2", "shell/run", &error),
        ]
    );
}

#[tokio::test]
async fn failing_calls() {
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let executor = Executor::new(store()).with_events(bus);
    let handler = executor
        .execute(ToolCall::new("c3", "fails", json!({})), &[])
        .await;
    let unknown = executor
        .execute(ToolCall::new("c4", "missing", json!({})), &[])
        .await;
    let bad_args = executor
        .execute(ToolCall::new("c5", "shell/run", json!(7)), &[])
        .await;
    let [handler, unknown, bad_args] =
        [handler, unknown, bad_args].map(|r| r.expect_err("fails").to_string());
    assert_eq!(handler, "tool `fails` failed: nope");
    assert_eq!(
        *events.lock(),
        [
            started("c3", "fails"),
            failed("c3", "fails", &handler),
            started("c4", "missing"),
            failed("c4", "missing", &unknown),
            started("c5", "shell/run"),
            failed("c5", "shell/run", &bad_args),
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_still_ends_with_failed() {
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let executor = Executor::new(store()).with_events(bus);
    let call = executor.execute(ToolCall::new("c6", "hangs", json!({})), &[]);
    let timed_out = tokio::time::timeout(Duration::from_millis(20), call).await;
    assert!(timed_out.is_err(), "the handler never finishes");
    assert_eq!(
        *events.lock(),
        [
            started("c6", "hangs"),
            failed(
                "c6",
                "hangs",
                "cancelled: the call was dropped before it finished"
            ),
        ]
    );
}

#[tokio::test]
async fn a_whole_turn_in_order() {
    let store = Store::new();
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let _follow = bus.follow_store(&store);
    store
        .write(|tx| register_tool(tx, Tool::new("echo", ""), |a| async move { Ok(a) }))
        .expect("register"); // tool + handler: one commit, two changes

    // What the agent's turn loop and selector emit, around the executor's own events.
    bus.emit(&Event::TurnStarted {
        turn: 1,
        message: "echo hi".into(),
    });
    bus.emit(&Event::SelectionMade {
        turn: 1,
        version: store.version(),
        tools: vec!["echo".into()],
        selection: Default::default(),
    });
    let executor = Executor::new(store).with_events(bus);
    executor
        .execute(
            ToolCall::new("c1", "echo", json!({ "text": "hi" })),
            &["echo".to_string()],
        )
        .await
        .expect("ok");

    assert_eq!(
        *events.lock(),
        [
            Event::CatalogChanged {
                version: 1,
                changes: 2
            },
            Event::TurnStarted {
                turn: 1,
                message: "echo hi".into()
            },
            Event::SelectionMade {
                turn: 1,
                version: 1,
                tools: vec!["echo".into()],
                selection: Default::default(),
            },
            started("c1", "echo"),
            finished("c1", "echo"),
        ]
    );
}

#[test]
fn catalog_changes_arrive_in_version_order() {
    let store = Store::new();
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let follow = bus.follow_store(&store);

    // Several writer threads; the store serializes commits and tells listeners in order.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            thread::spawn(move || {
                for i in 0..50 {
                    store
                        .write(|tx| {
                            tx.insert(&TOOLS, Tool::new(format!("w{w}_{i}_a"), ""))?;
                            if i % 2 == 0 {
                                tx.insert(&TOOLS, Tool::new(format!("w{w}_{i}_b"), ""))?;
                            }
                            Ok::<_, capstore::StoreError>(())
                        })
                        .expect("commit");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    // A transaction that changes nothing publishes nothing, so emits nothing.
    store.begin().commit();

    let events = events.lock().clone();
    assert_eq!(events.len(), 200);
    let versions: Vec<u64> = events
        .iter()
        .map(|e| match e {
            Event::CatalogChanged { version, changes } => {
                assert!(*changes == 1 || *changes == 2);
                *version
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(versions, (1..=200).collect::<Vec<u64>>());
    let total: usize = events
        .iter()
        .map(|e| {
            if let Event::CatalogChanged { changes, .. } = e {
                *changes
            } else {
                0
            }
        })
        .sum();
    assert_eq!(total, store.snapshot().count(&TOOLS).expect("count"));

    // Dropping the store subscription stops the events.
    drop(follow);
    store
        .write(|tx| tx.insert(&TOOLS, Tool::new("late", "")))
        .expect("commit");
    assert_eq!(store.subscriber_count(), 0);
}

#[tokio::test]
async fn an_executor_without_a_bus_emits_nothing_and_works() {
    let bus = EventBus::new();
    let (events, _sub) = record(&bus);
    let executor = Executor::new(store());
    executor
        .execute(ToolCall::new("c1", "shell/run", json!({})), &[])
        .await
        .expect("ok");
    assert!(events.lock().is_empty());
}
