//! Approvals: calls that wait for a person, decided from other threads, timed out, suspended
//! and resumed; under concurrency no call runs twice and none is lost.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use capstore::agent::{
    Agent, AgentError, ApprovalError, ApprovalPolicy, Approvals, Decision, Message, Model,
    ModelError, ModelReply, ModelRequest, ModelToolCall, PendingTurn, Session, Ticket, TurnStatus,
};
use capstore::exec::register_tool;
use capstore::{Event, EventBus, Executor, Store, Tool};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// Calls `delete_file` once per name in the user's message (space separated) and `read_file`
/// once, all in one step; then answers with the results, in order.
struct Deleter;

impl Model for Deleter {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let last_user = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }));
        let Some(Message::User { text }) = last_user.map(|i| &request.messages[i]) else {
            return Err(ModelError::other("no user message"));
        };
        let results: Vec<String> = request.messages[last_user.unwrap_or(0)..]
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult { content, .. } => Some(content.to_string()),
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            return Ok(ModelReply::Final(results.join(" | ")));
        }
        let mut calls: Vec<ModelToolCall> = text
            .split_whitespace()
            .map(|file| ModelToolCall {
                id: format!("del-{file}"),
                name: "delete_file".into(),
                arguments: json!({ "path": file }),
            })
            .collect();
        calls.push(ModelToolCall {
            id: "read".into(),
            name: "read_file".into(),
            arguments: json!({ "path": "notes" }),
        });
        Ok(ModelReply::ToolCalls(calls))
    }
}

/// A store with `fs/delete_file` (tagged `write`) and `fs/read_file`; counts the deletions per
/// path.
fn store(deleted: &Arc<Mutex<HashMap<String, usize>>>) -> Store {
    let store = Store::new();
    let log = Arc::clone(deleted);
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("delete_file", "Delete a file")
                    .with_source("fs")
                    .with_tags(["write"]),
                move |args: Value| {
                    let log = Arc::clone(&log);
                    async move {
                        let path = args["path"].as_str().unwrap_or("?").to_string();
                        *log.lock().entry(path.clone()).or_default() += 1;
                        Ok(json!(format!("deleted {path}")))
                    }
                },
            )?;
            register_tool(
                tx,
                Tool::new("read_file", "Read a file").with_source("fs"),
                |_| async { Ok(json!("notes read")) },
            )
        })
        .expect("store");
    store
}

fn gated_agent(store: &Store, approvals: &Approvals, bus: &EventBus) -> Agent<Deleter> {
    Agent::new(store.clone(), Deleter)
        .with_executor(Executor::new(store.clone()).with_events(bus.clone()))
        .with_events(bus.clone())
        .with_approvals(approvals.clone())
        .with_builder(None)
        .with_search_tools(false)
}

fn results(session: &Session) -> Vec<(String, String, bool)> {
    session
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id,
                content,
                is_error,
            } => Some((
                call_id.clone(),
                content.as_str().unwrap_or("").to_string(),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

/// Sends each pending ticket to `decide`, on a thread of its own.
fn approver(
    bus: &EventBus,
    decide: impl Fn(Ticket, String) + Send + Sync + 'static,
) -> capstore::EventSubscription {
    let decide = Arc::new(decide);
    bus.subscribe(move |event| {
        if let Event::ToolCallPending {
            ticket, call_id, ..
        } = event
        {
            let (decide, ticket, call_id) = (Arc::clone(&decide), *ticket, call_id.clone());
            std::thread::spawn(move || decide(ticket, call_id));
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_calls_run_rejected_ones_reach_the_model_as_rejections() {
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let approvals = Approvals::new(ApprovalPolicy::destructive());
    let bus = EventBus::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let _log = bus.subscribe(move |e| log.lock().push(e.clone()));
    let desk = approvals.clone();
    let _approver = approver(&bus, move |ticket, call_id| {
        let result = if call_id == "del-a" {
            desk.approve(ticket)
        } else {
            desk.reject(ticket, "keep b")
        };
        result.expect("the ticket is pending");
    });
    let agent = gated_agent(&store, &approvals, &bus);
    let mut session = agent.session();
    let outcome = agent.run_turn(&mut session, "a b").await.expect("turn");

    assert_eq!(*deleted.lock(), HashMap::from([("a".to_string(), 1)]));
    assert_eq!(
        results(&session),
        [
            ("del-a".into(), "deleted a".into(), false),
            ("del-b".into(), "rejected by a person: keep b".into(), true),
            ("read".into(), "notes read".into(), false),
        ]
    );
    assert_eq!(
        outcome.calls,
        [
            ("fs/delete_file".to_string(), true),
            ("fs/delete_file".to_string(), false),
            ("fs/read_file".to_string(), true),
        ]
    );
    assert!(approvals.pending().is_empty());
    // Both tickets were opened before either call ran; a rejected call has no executor events.
    let names: Vec<String> = events
        .lock()
        .iter()
        .filter_map(|e| Some(format!("{}:{}", e.kind(), e.call_id()?)))
        .collect();
    assert_eq!(
        names,
        [
            "tool_call_pending:del-a",
            "tool_call_pending:del-b",
            "tool_call_approved:del-a",
            "tool_call_started:del-a",
            "tool_call_finished:del-a",
            "tool_call_rejected:del-b",
            "tool_call_started:read",
            "tool_call_finished:read",
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_undecided_call_times_out_and_a_late_decision_is_refused() {
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let approvals = Approvals::new(ApprovalPolicy::default().with_key("fs/delete_file"))
        .with_timeout(Duration::from_millis(50));
    let bus = EventBus::new();
    let tickets = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&tickets);
    let _seen = bus.subscribe(move |e| {
        if let Event::ToolCallPending { ticket, .. } = e {
            seen.lock().push(*ticket);
        }
    });
    let agent = gated_agent(&store, &approvals, &bus);
    let mut session = agent.session();
    agent.run_turn(&mut session, "a").await.expect("turn");
    assert!(deleted.lock().is_empty());
    let (_, content, is_error) = &results(&session)[0];
    assert!(is_error);
    assert_eq!(content, "not approved within 50ms: the call did not run");
    let ticket = tickets.lock()[0];
    assert_eq!(
        approvals.approve(ticket),
        Err(ApprovalError::NotPending { ticket })
    );
    assert!(deleted.lock().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_turn_withdraws_its_tickets() {
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let approvals = Approvals::new(ApprovalPolicy::destructive());
    let bus = EventBus::new();
    let agent = gated_agent(&store, &approvals, &bus);
    let mut session = agent.session();
    let turn = agent.run_turn(&mut session, "a b");
    let cut = tokio::time::timeout(Duration::from_millis(30), turn).await;
    assert!(cut.is_err(), "the turn waits for approval");
    assert!(approvals.pending().is_empty());
    assert_eq!(
        approvals.approve(Ticket(1)),
        Err(ApprovalError::NotPending { ticket: Ticket(1) })
    );
    assert!(deleted.lock().is_empty());
}

/// Many turns at once, each with calls needing approval; every ticket is approved and rejected
/// at the same time from two threads. Exactly one decision wins per ticket, and the winner is
/// what happened: approved calls ran once, rejected ones never, and every call has one result.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_approvals_and_rejections_run_each_call_at_most_once() {
    const TURNS: usize = 32;
    const FILES: usize = 4;
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let approvals =
        Approvals::new(ApprovalPolicy::destructive()).with_timeout(Duration::from_secs(30));
    let bus = EventBus::new();
    let (approved, rejected) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (yes, no, desk) = (
        Arc::clone(&approved),
        Arc::clone(&rejected),
        approvals.clone(),
    );
    let _approver = approver(&bus, move |ticket, _| {
        let (a, r) = (desk.clone(), desk.clone());
        let approve = std::thread::spawn(move || a.approve(ticket));
        let reject = std::thread::spawn(move || r.reject(ticket, "raced"));
        let approve = approve.join().expect("approver");
        let reject = reject.join().expect("rejecter");
        assert!(
            approve.is_ok() != reject.is_ok(),
            "exactly one decision wins"
        );
        if approve.is_ok() {
            yes.fetch_add(1, Ordering::SeqCst);
        } else {
            no.fetch_add(1, Ordering::SeqCst);
        }
    });
    let agent = Arc::new(gated_agent(&store, &approvals, &bus));
    let mut tasks = Vec::new();
    for t in 0..TURNS {
        let agent = Arc::clone(&agent);
        tasks.push(tokio::spawn(async move {
            let files: Vec<String> = (0..FILES).map(|f| format!("t{t}f{f}")).collect();
            let mut session = agent.session();
            agent
                .run_turn(&mut session, &files.join(" "))
                .await
                .expect("turn");
            results(&session)
        }));
    }
    let mut ran = 0;
    let mut refused = 0;
    for task in tasks {
        let results = task.await.expect("task");
        assert_eq!(results.len(), FILES + 1, "one result per call");
        for (call_id, content, is_error) in results {
            match (call_id.as_str(), is_error) {
                ("read", false) => {}
                (_, false) => ran += 1,
                (_, true) => {
                    assert_eq!(content, "rejected by a person: raced");
                    refused += 1;
                }
            }
        }
    }
    let deleted = deleted.lock();
    assert!(deleted.values().all(|&n| n == 1), "no call ran twice");
    assert_eq!(deleted.len(), ran);
    assert_eq!(ran + refused, TURNS * FILES, "no call was lost");
    // The approver threads count after their decision was delivered: wait for the last ones.
    let decided = || approved.load(Ordering::SeqCst) + rejected.load(Ordering::SeqCst);
    for _ in 0..500 {
        if decided() == TURNS * FILES {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(approved.load(Ordering::SeqCst), ran);
    assert_eq!(rejected.load(Ordering::SeqCst), refused);
    assert!(approvals.pending().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_suspended_turn_resumes_once_from_its_serialized_form() {
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let approvals = Approvals::new(ApprovalPolicy::destructive());
    let bus = EventBus::new();
    let pending_events = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&pending_events);
    let _count = bus.subscribe(move |e| {
        if e.kind() == "tool_call_pending" {
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    let agent = gated_agent(&store, &approvals, &bus);
    let mut session = agent.session();
    let TurnStatus::Suspended(pending) = agent.start_turn(&mut session, "a b").await.expect("turn")
    else {
        panic!("two calls need approval");
    };
    assert!(session.is_suspended());
    assert_eq!(pending_events.load(Ordering::SeqCst), 2);
    assert!(
        approvals.pending().is_empty(),
        "a suspended turn waits on nothing"
    );
    let tickets = pending.tickets();
    assert_eq!(tickets.len(), 2);
    assert_eq!(pending.calls.len(), 3);
    assert!(
        deleted.lock().is_empty(),
        "nothing ran before the decisions"
    );

    let text = serde_json::to_string(&pending).expect("serialize");
    let pending: PendingTurn = serde_json::from_str(&text).expect("deserialize");

    // A missing decision runs nothing and keeps the session suspended.
    let partial = HashMap::from([(tickets[0], Decision::Approve)]);
    let err = agent
        .resume_turn(&mut session, &pending, &partial)
        .await
        .expect_err("undecided");
    assert_eq!(
        err,
        AgentError::Undecided {
            tickets: vec![tickets[1]]
        }
    );
    assert!(deleted.lock().is_empty());
    assert!(session.is_suspended());

    let decisions = HashMap::from([
        (tickets[0], Decision::Approve),
        (
            tickets[1],
            Decision::Reject {
                reason: "b stays".into(),
            },
        ),
    ]);
    let TurnStatus::Finished(outcome) = agent
        .resume_turn(&mut session, &pending, &decisions)
        .await
        .expect("resume")
    else {
        panic!("nothing more to approve");
    };
    assert_eq!(
        outcome.answer,
        "\"deleted a\" | \"rejected by a person: b stays\" | \"notes read\""
    );
    assert_eq!(outcome.steps, 2);
    assert_eq!(*deleted.lock(), HashMap::from([("a".to_string(), 1)]));

    // Resuming again runs nothing.
    let again = agent.resume_turn(&mut session, &pending, &decisions).await;
    assert_eq!(again.err(), Some(AgentError::NotSuspended { turn: 1 }));
    assert_eq!(*deleted.lock(), HashMap::from([("a".to_string(), 1)]));

    // In another process: a session rebuilt from the pending turn resumes it.
    let TurnStatus::Suspended(pending) = agent.start_turn(&mut session, "c").await.expect("turn")
    else {
        panic!("c needs approval");
    };
    let other = gated_agent(
        &store,
        &Approvals::new(ApprovalPolicy::destructive()),
        &EventBus::new(),
    );
    // Kept as JSON meanwhile: the rebuilt session selects as the suspended one would.
    let kept = serde_json::to_string(&pending).expect("serializes");
    let pending: capstore::agent::PendingTurn = serde_json::from_str(&kept).expect("reads back");
    let mut restored = Session::resuming(&pending);
    assert_eq!(restored.conversation, session.conversation);
    assert!(
        !restored
            .conversation
            .clone()
            .next_turn("x")
            .history
            .is_empty()
    );
    let decisions = HashMap::from([(pending.tickets()[0], Decision::Approve)]);
    let TurnStatus::Finished(outcome) = other
        .resume_turn(&mut restored, &pending, &decisions)
        .await
        .expect("resume")
    else {
        panic!("finished");
    };
    assert_eq!(outcome.answer, "\"deleted c\" | \"notes read\"");
    assert_eq!(deleted.lock().get("c"), Some(&1));
}

#[tokio::test(flavor = "current_thread")]
async fn without_approvals_nothing_waits() {
    let deleted = Arc::new(Mutex::new(HashMap::new()));
    let store = store(&deleted);
    let agent = Agent::new(store.clone(), Deleter).with_builder(None);
    let mut session = agent.session();
    let status = agent.start_turn(&mut session, "a").await.expect("turn");
    assert!(matches!(status, TurnStatus::Finished(_)));
    assert_eq!(deleted.lock().get("a"), Some(&1));
}
