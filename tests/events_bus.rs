//! The event bus: many subscribers in order, unsubscribe, panics contained, thread safety.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use capstore::exec::register_tool;
use capstore::{Event, EventBus, EventSubscription, Executor, Store, Tool, ToolCall};
use parking_lot::Mutex;
use serde_json::json;

fn turn(n: u64) -> Event {
    Event::TurnStarted {
        turn: n,
        message: String::new(),
    }
}

fn tagged(bus: &EventBus, log: &Arc<Mutex<Vec<String>>>, tag: &'static str) -> EventSubscription {
    let log = Arc::clone(log);
    bus.subscribe(move |e| {
        if let Event::TurnStarted { turn, .. } = e {
            log.lock().push(format!("{tag}{turn}"));
        }
    })
}

#[test]
fn subscribers_are_called_in_subscription_order() {
    let bus = EventBus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let _a = tagged(&bus, &log, "a");
    let _b = tagged(&bus, &log, "b");
    let _c = tagged(&bus, &log, "c");
    bus.emit(&turn(1));
    bus.emit(&turn(2));
    assert_eq!(*log.lock(), ["a1", "b1", "c1", "a2", "b2", "c2"]);
}

#[test]
fn unsubscribe_drop_and_detach() {
    let bus = EventBus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = tagged(&bus, &log, "a");
    let b = tagged(&bus, &log, "b");
    tagged(&bus, &log, "c").detach();
    assert_eq!(bus.subscriber_count(), 3);
    bus.emit(&turn(1));
    a.unsubscribe();
    bus.emit(&turn(2));
    drop(b);
    bus.emit(&turn(3));
    assert_eq!(*log.lock(), ["a1", "b1", "c1", "b2", "c2", "c3"]);
    assert_eq!(bus.subscriber_count(), 1);
}

#[test]
fn a_subscription_outliving_its_bus_is_harmless() {
    let bus = EventBus::new();
    let sub = bus.subscribe(|_| {});
    drop(bus);
    sub.unsubscribe();
}

#[test]
fn a_panicking_subscriber_is_contained() {
    let bus = EventBus::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let _a = tagged(&bus, &log, "a");
    let _boom = bus.subscribe(|e| {
        if matches!(e, Event::TurnStarted { turn: 1, .. }) {
            panic!("subscriber bug");
        }
    });
    let _c = tagged(&bus, &log, "c");
    bus.emit(&turn(1));
    bus.emit(&turn(2));
    assert_eq!(
        *log.lock(),
        ["a1", "c1", "a2", "c2"],
        "the others still see everything"
    );
    assert_eq!(bus.subscriber_panics(), 1);
}

#[tokio::test]
async fn a_panicking_subscriber_does_not_fail_a_call() {
    let store = Store::new();
    store
        .write(|tx| register_tool(tx, Tool::new("echo", ""), |a| async move { Ok(a) }))
        .expect("register");
    let bus = EventBus::new();
    let _boom = bus.subscribe(|_| panic!("subscriber bug"));
    let executor = Executor::new(store).with_events(bus.clone());
    let out = executor
        .execute(ToolCall::new("1", "echo", json!({ "x": 1 })), &[])
        .await;
    assert_eq!(
        out.expect("the call is unaffected").output,
        json!({ "x": 1 })
    );
    assert_eq!(bus.subscriber_panics(), 2); // started and finished
}

#[test]
fn subscribers_may_subscribe_unsubscribe_and_emit_from_a_callback() {
    let bus = EventBus::new();
    let inner_subs: Arc<Mutex<Vec<EventSubscription>>> = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(AtomicUsize::new(0));
    let (bus2, subs, seen2) = (bus.clone(), Arc::clone(&inner_subs), Arc::clone(&seen));
    let _outer = bus.subscribe(move |e| {
        if let Event::TurnStarted { turn: 1, .. } = e {
            let seen = Arc::clone(&seen2);
            subs.lock().push(bus2.subscribe(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
            }));
            bus2.emit(&turn(2)); // re-entrant emit: reaches the new subscriber
        }
        if let Event::TurnStarted { turn: 3, .. } = e {
            subs.lock().clear(); // unsubscribe from inside a callback
        }
    });
    bus.emit(&turn(1));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    bus.emit(&turn(3));
    bus.emit(&turn(4));
    // The inner subscriber saw turn 2 and turn 3 (it was still in the copy turn 3 started with).
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert_eq!(bus.subscriber_count(), 1);
}

#[test]
fn concurrent_emitters_and_subscribers() {
    const THREADS: u64 = 4;
    const EVENTS: u64 = 2_000;
    let bus = EventBus::new();
    let received: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    let _steady = bus.subscribe(move |e| {
        if let Event::SelectionMade { turn, version, .. } = e {
            log.lock().push((*turn, *version));
        }
    });

    let churn = {
        let bus = bus.clone();
        thread::spawn(move || {
            for _ in 0..2_000 {
                let sub = bus.subscribe(|_| {});
                thread::yield_now();
                drop(sub);
            }
        })
    };
    let emitters: Vec<_> = (0..THREADS)
        .map(|t| {
            let bus = bus.clone();
            thread::spawn(move || {
                for i in 0..EVENTS {
                    bus.emit(&Event::SelectionMade {
                        turn: t,
                        version: i,
                        tools: Vec::new(),
                        selection: Default::default(),
                    });
                }
            })
        })
        .collect();
    for e in emitters {
        e.join().expect("emitter");
    }
    churn.join().expect("churn");

    let received = received.lock();
    assert_eq!(
        received.len() as u64,
        THREADS * EVENTS,
        "nothing lost or doubled"
    );
    for t in 0..THREADS {
        let from_t: Vec<u64> = received
            .iter()
            .filter(|(tt, _)| *tt == t)
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(
            from_t,
            (0..EVENTS).collect::<Vec<_>>(),
            "one thread's events stay in order"
        );
    }
    assert_eq!(bus.subscriber_count(), 1);
}

#[test]
fn events_serialize_with_a_type_tag() {
    let cases = [
        (
            turn(1),
            json!({ "type": "turn_started", "turn": 1, "message": "" }),
        ),
        (
            Event::SelectionMade {
                turn: 1,
                version: 4,
                tools: vec!["a".into()],
                selection: Default::default(),
            },
            json!({ "type": "selection_made", "turn": 1, "version": 4, "tools": ["a"] }),
        ),
        (
            Event::ToolCallFinished {
                call_id: "c".into(),
                tool: "t".into(),
                elapsed: std::time::Duration::from_millis(1500),
            },
            json!({ "type": "tool_call_finished", "call_id": "c", "tool": "t",
                    "elapsed": { "secs": 1, "nanos": 500_000_000 } }),
        ),
        (
            Event::HookDenied {
                call_id: "c".into(),
                hook: "h".into(),
                tool: "t".into(),
                reason: "r".into(),
            },
            json!({ "type": "hook_denied", "call_id": "c", "hook": "h", "tool": "t", "reason": "r" }),
        ),
        (
            Event::CatalogChanged {
                version: 2,
                changes: 3,
            },
            json!({ "type": "catalog_changed", "version": 2, "changes": 3 }),
        ),
        (
            Event::GatewayCall {
                client: "ci".into(),
                call_id: "c".into(),
                tool: "fs/write".into(),
                outcome: "refused".into(),
                arguments: None,
            },
            json!({ "type": "gateway_call", "client": "ci", "call_id": "c", "tool": "fs/write",
                    "outcome": "refused" }),
        ),
        (
            Event::GatewayCall {
                client: "ci".into(),
                call_id: "d".into(),
                tool: "fs/read".into(),
                outcome: "ok".into(),
                arguments: Some(json!({"path": "a.txt"})),
            },
            json!({ "type": "gateway_call", "client": "ci", "call_id": "d", "tool": "fs/read",
                    "outcome": "ok", "arguments": {"path": "a.txt"} }),
        ),
    ];
    for (event, expected) in cases {
        assert_eq!(serde_json::to_value(&event).expect("serialize"), expected);
        assert_eq!(expected["type"], event.kind());
    }
}

#[test]
fn the_bus_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<EventBus>();
    send_sync::<EventSubscription>();
    send_sync::<Event>();
}
