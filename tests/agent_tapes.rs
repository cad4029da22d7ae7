//! Tapes: model exchanges recorded and replayed (divergences named), and the event tape
//! written and read back.

use std::path::PathBuf;
use std::sync::Arc;

use capstore::agent::{
    Agent, AgentError, Message, Model, ModelError, ModelErrorKind, ModelReply, ModelRequest,
    ModelToolCall, RecordingModel, ReplayModel,
};
use capstore::events::{EventTape, read_tape};
use capstore::exec::register_tool;
use capstore::{Event, EventBus, Executor, Store, Tool};
use parking_lot::Mutex;
use serde_json::json;

fn temp(name: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("capstore-test-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// Calls `get_weather` for the user's last word, then answers with the result; fails when asked
/// about "storms".
struct Weatherman;

impl Model for Weatherman {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        match request.messages.last() {
            Some(Message::ToolResult { content, .. }) => {
                Ok(ModelReply::Final(format!("It is {content}")))
            }
            Some(Message::User { text }) if text.contains("storms") => Err(ModelError::new(
                ModelErrorKind::RateLimited { retry_after: None },
                "slow down",
            )),
            Some(Message::User { text }) => Ok(ModelReply::ToolCalls(vec![ModelToolCall {
                id: "w1".into(),
                name: "get_weather".into(),
                arguments: json!({ "city": text.split_whitespace().last().unwrap_or("") }),
            }])),
            _ => Err(ModelError::other("unexpected conversation")),
        }
    }
}

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("get_weather", "Weather for a city"),
                |a| async move {
                    Ok(json!(format!(
                        "sunny in {}",
                        a["city"].as_str().unwrap_or("?")
                    )))
                },
            )
        })
        .expect("store");
    store
}

fn agent<M: Model>(store: &Store, model: M) -> Agent<M> {
    Agent::new(store.clone(), model)
        .with_builder(None)
        .with_search_tools(false)
}

/// The model's error inside an agent's.
fn model_error(err: AgentError) -> ModelError {
    match err {
        AgentError::Model(err) => err,
        other => panic!("a model error: {other}"),
    }
}

async fn record(path: &PathBuf) {
    let store = store();
    let recorder = agent(
        &store,
        RecordingModel::create(Weatherman, path).expect("tape"),
    );
    let mut session = recorder.session();
    let first = recorder
        .run_turn(&mut session, "weather in Oslo")
        .await
        .expect("turn 1");
    assert_eq!(first.answer, "It is \"sunny in Oslo\"");
    recorder
        .run_turn(&mut session, "and in Rome")
        .await
        .expect("turn 2");
    let err = recorder
        .run_turn(&mut session, "any storms")
        .await
        .expect_err("turn 3");
    assert!(matches!(
        err,
        AgentError::Model(ModelError {
            kind: ModelErrorKind::RateLimited { .. },
            ..
        })
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn a_recorded_conversation_replays_without_the_model() {
    let path = temp("replay-same");
    record(&path).await;
    let replay = ReplayModel::open(&path).expect("open");
    assert_eq!(replay.len(), 5);
    let store = store();
    let player = agent(&store, replay);
    let mut session = player.session();
    let first = player
        .run_turn(&mut session, "weather in Oslo")
        .await
        .expect("turn 1");
    assert_eq!(first.answer, "It is \"sunny in Oslo\"");
    let second = player
        .run_turn(&mut session, "and in Rome")
        .await
        .expect("turn 2");
    assert_eq!(second.answer, "It is \"sunny in Rome\"");
    let err = player
        .run_turn(&mut session, "any storms")
        .await
        .expect_err("turn 3");
    assert_eq!(
        err,
        AgentError::Model(ModelError::new(
            ModelErrorKind::RateLimited { retry_after: None },
            "slow down"
        ))
    );
    std::fs::remove_file(&path).ok();
}

#[tokio::test(flavor = "current_thread")]
async fn a_different_message_is_a_divergence_naming_the_request_and_turn() {
    let path = temp("replay-message");
    record(&path).await;
    let store = store();
    let player = agent(&store, ReplayModel::open(&path).expect("open"));
    let mut session = player.session();
    player
        .run_turn(&mut session, "weather in Oslo")
        .await
        .expect("turn 1");
    let err = player
        .run_turn(&mut session, "and in Paris")
        .await
        .expect_err("diverges");
    let err = model_error(err);
    assert_eq!(
        err.kind,
        ModelErrorKind::ReplayDiverged {
            request: 3,
            turn: 2
        }
    );
    assert!(
        err.message
            .contains("at request 3 (user turn 2): message 5 differs")
            && err.message.contains("and in Rome")
            && err.message.contains("and in Paris"),
        "{}",
        err.message
    );
    std::fs::remove_file(&path).ok();
}

#[tokio::test(flavor = "current_thread")]
async fn a_selection_change_is_a_divergence_naming_the_tools() {
    let path = temp("replay-tools");
    record(&path).await;
    let store = store();
    store
        .write(|tx| {
            register_tool(tx, Tool::new("get_tides", "Tides"), |_| async {
                Ok(json!(1))
            })
        })
        .expect("write");
    let player = agent(&store, ReplayModel::open(&path).expect("open"));
    let mut session = player.session();
    let err = player
        .run_turn(&mut session, "weather in Oslo")
        .await
        .expect_err("diverges");
    let err = model_error(err);
    assert_eq!(
        err.kind,
        ModelErrorKind::ReplayDiverged {
            request: 1,
            turn: 1
        }
    );
    assert!(
        err.message.contains(
            "the tools offered differ (added [\"get_tides\"], removed []; tape [\"get_weather\"]"
        ),
        "{}",
        err.message
    );
    assert!(!err.message.contains("message"), "{}", err.message);
    std::fs::remove_file(&path).ok();
}

#[tokio::test(flavor = "current_thread")]
async fn a_tape_played_to_its_end_says_so() {
    let path = temp("replay-end");
    record(&path).await;
    let store = store();
    let replay = ReplayModel::open(&path).expect("open");
    let player = agent(&store, replay);
    let mut session = player.session();
    for message in ["weather in Oslo", "and in Rome"] {
        player.run_turn(&mut session, message).await.expect("turn");
    }
    player
        .run_turn(&mut session, "any storms")
        .await
        .expect_err("recorded error");
    let err = player
        .run_turn(&mut session, "and now?")
        .await
        .expect_err("past the end");
    assert!(
        err.to_string()
            .contains("past the end of the tape (5 requests)"),
        "{err}"
    );
    std::fs::remove_file(&path).ok();
}

#[tokio::test(flavor = "current_thread")]
async fn the_event_tape_reads_back_as_the_events_emitted() {
    let path = temp("events");
    let store = store();
    let bus = EventBus::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let _log = bus.subscribe(move |e| log.lock().push(e.clone()));
    let tape = EventTape::append_to(&path).expect("tape");
    let _tape = tape.record(&bus);
    let player = agent(&store, Weatherman)
        .with_executor(Executor::new(store.clone()).with_events(bus.clone()))
        .with_events(bus.clone());
    let mut session = player.session();
    player
        .run_turn(&mut session, "weather in Oslo")
        .await
        .expect("turn");

    let read = read_tape(&path).expect("read");
    let kinds: Vec<&str> = read.iter().map(Event::kind).collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "selection_made",
            "tool_call_started",
            "tool_call_finished",
            "turn_finished"
        ]
    );
    assert_eq!(tape.written(), 5);
    assert_eq!(tape.failed(), 0);
    // Equal as JSON (the selection's details are not on the tape).
    let as_json = |events: &[Event]| serde_json::to_value(events).expect("json");
    assert_eq!(as_json(&read), as_json(&seen.lock()));
    std::fs::remove_file(&path).ok();
}

#[test]
fn concurrent_emitters_write_whole_lines() {
    let path = temp("events-concurrent");
    let bus = EventBus::new();
    let tape = EventTape::append_to(&path).expect("tape");
    let _tape = tape.record(&bus);
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let bus = bus.clone();
            std::thread::spawn(move || {
                for i in 0..250u64 {
                    bus.emit(&Event::TurnStarted {
                        turn: t * 1000 + i,
                        message: "x".repeat((i % 7) as usize * 100),
                    });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let read = read_tape(&path).expect("every line parses");
    assert_eq!(read.len(), 2000);
    let mut turns: Vec<u64> = read
        .iter()
        .filter_map(|e| match e {
            Event::TurnStarted { turn, .. } => Some(*turn),
            _ => None,
        })
        .collect();
    turns.sort_unstable();
    turns.dedup();
    assert_eq!(turns.len(), 2000);
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_line_that_is_not_an_event_is_named() {
    let path = temp("events-bad");
    std::fs::write(
        &path,
        "{\"type\":\"turn_started\",\"turn\":1,\"message\":\"a\"}\n{\"type\":\"nope\"}\n",
    )
    .expect("write");
    let err = read_tape(&path).expect_err("bad line");
    assert!(
        err.to_string().contains(":2: unknown variant `nope`"),
        "{err}"
    );
    std::fs::remove_file(&path).ok();
}
