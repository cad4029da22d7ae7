//! Usage: what calls teach (`capstore::usage`) and the companion channel that uses it.
//! The counts against a plain model, the bounds, removed and replaced tools, the recorder, the
//! file, the executor and the agent recording, and selection: exactly today's with nothing
//! learned, the evidence in the reason, never a tool the store does not hold.

use std::collections::BTreeMap;

use capstore::agent::{Agent, Message, Model, ModelError, ModelReply, ModelRequest, ModelToolCall};
use capstore::context::{Channel, CompanionPolicy, ContextBuilder, Reason, SelectionPolicy, Turn};
use capstore::exec::register_tool;
use capstore::usage::{
    MAX_COMPANIONS, TurnUse, UsageRecorder, learn, load_file, read_file, save_file,
};
use capstore::{Executor, Store, TOOLS, Tool, ToolCall, USAGE};
use proptest::prelude::*;
use serde_json::json;

fn store_of(names: &[&str]) -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for name in names {
                tx.insert(
                    &TOOLS,
                    Tool::new(*name, format!("The {name} tool")).with_source("t"),
                )?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("tools");
    store
}

fn key(name: &str) -> String {
    format!("t/{name}")
}

/// The counts a turn sequence should give, computed the plain way.
#[derive(Default, Debug, PartialEq)]
struct Counts {
    /// tool -> (turns, calls, sent, sent and called)
    rows: BTreeMap<String, (u32, u64, u32, u32)>,
    /// (tool, companion) -> (together, before, next turn)
    pairs: BTreeMap<(String, String), (u32, u32, u32)>,
}

impl Counts {
    fn apply(&mut self, turn: &TurnUse) {
        let mut first: Vec<&String> = Vec::new();
        for t in &turn.called {
            if !first.contains(&t) {
                first.push(t);
            }
        }
        for (i, a) in first.iter().enumerate() {
            let calls = turn.called.iter().filter(|t| t == a).count() as u64;
            let row = self.rows.entry((*a).clone()).or_default();
            row.0 += 1;
            row.1 += calls;
            for (j, b) in first.iter().enumerate() {
                if a != b {
                    let pair = self.pairs.entry(((*a).clone(), (*b).clone())).or_default();
                    pair.0 += 1;
                    if j < i {
                        pair.1 += 1;
                    }
                }
            }
        }
        let mut previous: Vec<&String> = Vec::new();
        for p in &turn.previous {
            if !previous.contains(&p) {
                previous.push(p);
            }
        }
        for p in previous {
            self.rows.entry(p.clone()).or_default();
            for a in &first {
                if *a != p {
                    self.pairs.entry((p.clone(), (*a).clone())).or_default().2 += 1;
                }
            }
        }
        let mut sent: Vec<&String> = Vec::new();
        for s in &turn.sent {
            if !sent.contains(&s) {
                sent.push(s);
            }
        }
        for s in sent {
            let row = self.rows.entry(s.clone()).or_default();
            row.2 += 1;
            if first.contains(&s) {
                row.3 += 1;
            }
        }
    }

    fn of(store: &Store) -> Counts {
        let snap = store.snapshot();
        let mut model = Counts::default();
        for usage in snap.iter(&USAGE).expect("usage").records() {
            model.rows.insert(
                usage.tool.clone(),
                (usage.turns, usage.calls, usage.sent, usage.sent_and_called),
            );
            for c in &usage.companions {
                model.pairs.insert(
                    (usage.tool.clone(), c.tool.clone()),
                    (c.together, c.before, c.next_turn),
                );
            }
        }
        model
    }
}

const NAMES: [&str; 6] = ["cd", "mv", "ls", "cat", "rm", "cp"];

fn turn_strategy() -> impl Strategy<Value = TurnUse> {
    let names = || prop::sample::select(NAMES.to_vec()).prop_map(key);
    (
        prop::collection::vec(names(), 0..6),
        prop::collection::vec(names(), 0..5),
        prop::collection::vec(names(), 0..3),
    )
        .prop_map(|(called, sent, previous)| TurnUse {
            called,
            sent,
            previous,
        })
}

proptest! {
    /// Any sequence of turns counts as the plain model says (six tools: no row is full).
    #[test]
    fn counts_agree_with_a_plain_model(turns in prop::collection::vec(turn_strategy(), 1..12)) {
        let store = store_of(&NAMES);
        let mut model = Counts::default();
        for turn in &turns {
            store.write(|tx| learn(tx, turn)).expect("learned");
            model.apply(turn);
        }
        // A companion the model counts only as next-turn with zero counts in all is still a
        // companion entry (it was named); both sides keep every named pair.
        prop_assert_eq!(Counts::of(&store), model);
    }
}

#[test]
fn a_row_keeps_its_strongest_companions_and_forgets_the_weakest() {
    let names: Vec<String> = (0..(MAX_COMPANIONS + 2)).map(|i| format!("c{i}")).collect();
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    all.push("main");
    let store = store_of(&all);
    // c0 comes with `main` three times: strong. Every other once: weak.
    for _ in 0..3 {
        store
            .write(|tx| learn(tx, &TurnUse::new([key("c0"), key("main")])))
            .expect("learned");
    }
    for name in names.iter().skip(1) {
        store
            .write(|tx| learn(tx, &TurnUse::new([key(name), key("main")])))
            .expect("learned");
    }
    let main = store
        .snapshot()
        .get_arc(&USAGE, &key("main"))
        .expect("read")
        .expect("row");
    assert_eq!(main.companions.len(), MAX_COMPANIONS);
    assert_eq!(main.companions[0].tool, key("c0"));
    assert_eq!(main.companions[0].together, 3);
    assert_eq!(main.turns as usize, 3 + names.len() - 1);
}

#[test]
fn a_removed_tool_loses_its_row_and_teaches_nothing_a_replaced_one_keeps_it() {
    let store = store_of(&["cd", "mv"]);
    store
        .write(|tx| learn(tx, &TurnUse::new([key("cd"), key("mv")])))
        .expect("learned");
    // A new description: the counts stand.
    store
        .write(|tx| tx.upsert(&TOOLS, Tool::new("mv", "Move or rename").with_source("t")))
        .expect("replaced");
    assert!(store.snapshot().contains(&USAGE, &key("mv")).expect("read"));
    // Removed: its row goes, and a later turn that names it counts nothing for it.
    store
        .write(|tx| tx.delete(&TOOLS, &key("mv")).map(drop))
        .expect("deleted");
    assert!(!store.snapshot().contains(&USAGE, &key("mv")).expect("read"));
    store
        .write(|tx| learn(tx, &TurnUse::new([key("cd"), key("mv")])))
        .expect("learned");
    let snap = store.snapshot();
    assert!(!snap.contains(&USAGE, &key("mv")).expect("read"));
    assert_eq!(
        snap.get(&USAGE, &key("cd")).expect("read").map(|u| u.turns),
        Some(2)
    );
}

#[test]
fn the_recorder_hands_over_whole_turns() {
    let store = store_of(&["cd", "mv"]);
    let recorder = UsageRecorder::new();
    assert!(recorder.commit_turn(&store).expect("nothing").is_none());
    recorder.sent([key("mv"), key("cd")]);
    recorder.called(&key("cd"));
    recorder.called(&key("mv"));
    // Nothing in the store until the turn ends.
    assert_eq!(store.snapshot().count(&USAGE).expect("read"), 0);
    assert!(recorder.commit_turn(&store).expect("written").is_some());
    recorder.called(&key("mv"));
    let turn = recorder.finish_turn();
    assert_eq!(turn.previous, [key("cd"), key("mv")]);
    assert!(turn.sent.is_empty());
}

#[test]
fn a_usage_file_round_trips_and_a_bad_one_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("capstore-usage-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let store = store_of(&["cd", "mv"]);
    store
        .write(|tx| {
            learn(
                tx,
                &TurnUse::new([key("cd"), key("mv")]).with_sent([key("mv")]),
            )
        })
        .expect("learned");
    let path = dir.join("usage.json");
    assert_eq!(save_file(&store.snapshot(), &path).expect("saved"), 2);
    let other = store_of(&["cd"]);
    let loaded = load_file(&other, &path).expect("loaded");
    assert_eq!((loaded.rows, loaded.skipped), (1, 1));
    assert_eq!(read_file(&path).expect("read").len(), 2);
    for (text, says) in [
        ("{", "not a usage file: "),
        (
            r#"{"format": "capstore.usage/v1", "usage": [{"tool": 3}]}"#,
            "usage[0].tool",
        ),
        (
            r#"{"format": "capstore.usage/v1", "usage": [], "x": 1}"#,
            "unknown field `x`",
        ),
    ] {
        std::fs::write(&path, text).expect("written");
        let version = other.version();
        let err = load_file(&other, &path).expect_err(text).to_string();
        assert!(err.contains(says), "{err}");
        assert_eq!(other.version(), version);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn car() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for (name, description) in [
                ("startEngine", "Start the car's engine"),
                ("pressBrakePedal", "Press the brake pedal"),
                ("lockDoors", "Lock the car's doors"),
                ("setHeadlights", "Turn the headlights on or off"),
                ("honk", "Sound the horn"),
            ] {
                tx.insert(&TOOLS, Tool::new(name, description).with_source("car"))?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("tools");
    store
}

fn brake_then_start(store: &Store, turns: usize) {
    for _ in 0..turns {
        store
            .write(|tx| {
                learn(
                    tx,
                    &TurnUse::new(["car/pressBrakePedal", "car/startEngine"]),
                )
            })
            .expect("learned");
    }
}

#[test]
fn nothing_learned_nothing_declared_selects_exactly_as_before() {
    let plain = car();
    let weak = car();
    // One turn of evidence: under `min_turns`, so nothing comes; the table is not empty.
    brake_then_start(&weak, 1);
    let builder = ContextBuilder::new();
    for message in [
        "start the engine",
        "lock the doors and honk",
        "headlights on",
        "x",
    ] {
        let turn = Turn::new(message).with_previous(["car/honk"]);
        let a = builder.select(&plain.snapshot(), &turn).expect("selects");
        let b = builder.select(&weak.snapshot(), &turn).expect("selects");
        assert_eq!((a.tools, a.dropped), (b.tools, b.dropped), "{message}");
    }
}

#[test]
fn a_learned_prerequisite_comes_with_its_tool_and_says_why() {
    let store = car();
    brake_then_start(&store, 3);
    let selection = ContextBuilder::new()
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    let brake = selection
        .tools
        .iter()
        .find(|t| &*t.key == "car/pressBrakePedal")
        .expect("brought along");
    assert_eq!(brake.channel, Channel::Companion);
    assert_eq!(
        brake.reasons[0],
        Reason::Companion {
            of: "car/startEngine".into(),
            together: 3,
            before: 3,
            turns: 3
        }
    );
    assert_eq!(
        brake.reasons[0].to_string(),
        "called before car/startEngine in 3 of its 3 turns"
    );
    // Appended after the turn's own tools: the prefix a cache keeps is theirs.
    assert_eq!(
        selection.tools.last().map(|t| &*t.key),
        Some("car/pressBrakePedal")
    );
    // Off: not brought.
    let off = SelectionPolicy {
        companions: CompanionPolicy {
            max_tools: 0,
            ..CompanionPolicy::default()
        },
        ..SelectionPolicy::default()
    };
    let selection = ContextBuilder::with_policy(off)
        .expect("valid")
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    assert!(!selection.contains("car/pressBrakePedal"));
}

#[test]
fn a_declared_requirement_comes_whatever_was_learned_and_a_missing_one_never() {
    let store = car();
    store
        .write(|tx| {
            tx.upsert(
                &TOOLS,
                Tool::new("startEngine", "Start the car's engine")
                    .with_source("car")
                    .with_requires(["lockDoors", "car/not_there"]),
            )
        })
        .expect("declared");
    let selection = ContextBuilder::new()
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    let locks = selection
        .tools
        .iter()
        .find(|t| &*t.key == "car/lockDoors")
        .expect("required");
    assert_eq!(locks.reasons[0].to_string(), "required by car/startEngine");
    assert!(!selection.contains("car/not_there"));
}

#[test]
fn a_companion_gone_from_the_store_or_filtered_out_never_comes() {
    let store = car();
    brake_then_start(&store, 3);
    // Held back (the gateway's quarantine keeps a held tool out of the store) or removed: the
    // counts are in the other tool's row, but the tool is not here.
    store
        .write(|tx| tx.delete(&TOOLS, "car/pressBrakePedal").map(drop))
        .expect("removed");
    let selection = ContextBuilder::new()
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    assert!(!selection.contains("car/pressBrakePedal"));
    // Excluded by a tag filter: not brought either.
    let store = car();
    store
        .write(|tx| {
            tx.upsert(
                &TOOLS,
                Tool::new("pressBrakePedal", "Press the brake pedal")
                    .with_source("car")
                    .with_tags(["dangerous"]),
            )
        })
        .expect("tagged");
    brake_then_start(&store, 3);
    let policy = SelectionPolicy {
        exclude_tags: vec!["dangerous".into()],
        ..SelectionPolicy::default()
    };
    let selection = ContextBuilder::with_policy(policy)
        .expect("valid")
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    assert!(!selection.contains("car/pressBrakePedal"));
}

#[test]
fn companions_stay_within_the_list_and_the_token_budget() {
    let store = car();
    brake_then_start(&store, 3);
    // A list of one: the engine fills it.
    let one = SelectionPolicy::default().with_tool_limit(1);
    let selection = ContextBuilder::with_policy(one)
        .expect("valid")
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    assert_eq!(selection.keys().collect::<Vec<_>>(), ["car/startEngine"]);
    // A budget the engine alone fits in.
    let engine =
        capstore::context::estimate_tokens(&Tool::new("startEngine", "Start the car's engine"));
    let tight = SelectionPolicy {
        token_budget: Some(engine + 2),
        ..SelectionPolicy::default()
    };
    let selection = ContextBuilder::with_policy(tight)
        .expect("valid")
        .select(&store.snapshot(), &Turn::new("start the engine"))
        .expect("selects");
    assert!(!selection.contains("car/pressBrakePedal"));
    assert!(selection.tokens <= engine + 2);
}

#[tokio::test(flavor = "current_thread")]
async fn the_executor_records_the_calls_that_succeed() {
    let store = Store::new();
    store
        .write(|tx| {
            register_tool(tx, Tool::new("ok", "Works"), |v| async move { Ok(v) })?;
            register_tool(tx, Tool::new("bad", "Fails"), |_| async move {
                Err(capstore::HandlerError::new("no"))
            })
        })
        .expect("registered");
    let recorder = UsageRecorder::new();
    let executor = Executor::new(store.clone()).with_usage(recorder.clone());
    executor
        .execute(ToolCall::new("1", "ok", json!({})), &[])
        .await
        .expect("runs");
    assert!(
        executor
            .execute(ToolCall::new("2", "bad", json!({})), &[])
            .await
            .is_err()
    );
    assert!(
        executor
            .execute(ToolCall::new("3", "none", json!({})), &[])
            .await
            .is_err()
    );
    assert_eq!(recorder.peek().called, ["ok"]);
}

/// Calls `pressBrakePedal` then `startEngine` (by the names it was offered), then answers.
struct Driver;

impl Model for Driver {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let offered = |part: &str| {
            request
                .tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .find(|name| name.contains(part))
                .unwrap_or(part)
                .to_string()
        };
        let call = |name: String, id: &str| {
            ModelReply::ToolCalls(vec![ModelToolCall {
                id: id.into(),
                name,
                arguments: json!({}),
            }])
        };
        // This turn's tool results so far.
        let results = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::ToolResult { .. }))
            .count();
        Ok(match results {
            0 => call(offered("pressBrakePedal"), "b"),
            1 => call(offered("startEngine"), "s"),
            _ => ModelReply::Final("started".into()),
        })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_agent_loop_learns_each_finished_turn() {
    let store = Store::new();
    store
        .write(|tx| {
            for name in ["pressBrakePedal", "startEngine"] {
                register_tool(
                    tx,
                    Tool::new(name, format!("{name} of the car")).with_source("car"),
                    |v| async move { Ok(v) },
                )?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("registered");
    let agent = Agent::new(store.clone(), Driver);
    let mut session = agent.session();
    for _ in 0..2 {
        let outcome = agent
            .run_turn(&mut session, "start the engine")
            .await
            .expect("turn");
        assert_eq!(outcome.answer, "started");
    }
    // Queued, not written: the turns cost no transaction; stopping the agent writes them.
    assert_eq!(store.snapshot().count(&USAGE).expect("read"), 0);
    let version = store.version();
    agent.flush_usage().expect("written");
    assert_eq!(
        store.version(),
        version + 1,
        "the two turns in one transaction"
    );
    let snap = store.snapshot();
    let start = snap
        .get(&USAGE, "car/startEngine")
        .expect("read")
        .expect("learned");
    let brake = start.companion("car/pressBrakePedal").expect("companion");
    assert_eq!((start.turns, brake.together, brake.before), (2, 2, 2));
    // Without learning, the store is left alone.
    let quiet = Store::new();
    quiet
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("pressBrakePedal", "b").with_source("car"),
                |v| async move { Ok(v) },
            )?;
            register_tool(
                tx,
                Tool::new("startEngine", "s").with_source("car"),
                |v| async move { Ok(v) },
            )
        })
        .expect("registered");
    let agent = Agent::new(quiet.clone(), Driver).with_learning(false);
    let mut session = agent.session();
    agent
        .run_turn(&mut session, "start the engine")
        .await
        .expect("turn");
    agent.flush_usage().expect("nothing to write");
    assert_eq!(quiet.snapshot().count(&USAGE).expect("read"), 0);
}
