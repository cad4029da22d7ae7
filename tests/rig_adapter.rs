//! capstore as a rig agent's tool index (`capstore::rig`, feature `rig`): a rig agent over a
//! scripted completion model receives exactly capstore's selection for each turn's prompt, the
//! list carried across turns included, and the model's tool calls run capstore's handlers
//! through the executor, hooks and all.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use capstore::context::{ContextBuilder, Conversation, DropReason, Reason};
use capstore::exec::{register_hook, register_tool};
use capstore::provider::ToolExport;
use capstore::rig::{CapstoreTool, ToolIndex, toolset};
use capstore::{
    ExecError, Executor, HandlerError, Hook, HookEvent, HookOutcome, Store, Tool, USAGE,
};
use common::rig_model::{Say, ScriptedModel};
use rig::AgentBuilder;
use rig::completion::{CompletionRequest, Message};
use rig::message::UserContent;
use serde_json::{Value, json};

/// A small catalog whose tools all have handlers; the forecast's output is stamped by a
/// post-tool-use hook, and every handler run is counted.
fn store(runs: Arc<AtomicUsize>) -> Store {
    let store = Store::new();
    let counted = |reply: Value| {
        let runs = Arc::clone(&runs);
        move |_args: Value| {
            let (runs, reply) = (Arc::clone(&runs), reply.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(reply)
            }
        }
    };
    let city = json!({
        "type": "object",
        "properties": { "city": { "type": "string", "description": "City name" } },
        "required": ["city"]
    });
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("get_forecast", "Get the weather forecast for a city")
                    .with_source("weather")
                    .with_input_schema(city.clone()),
                counted(json!({ "sky": "sunny", "high": 21 })),
            )?;
            register_tool(
                tx,
                Tool::new("get_alerts", "Severe weather alerts for a region")
                    .with_source("weather"),
                counted(json!([])),
            )?;
            register_tool(
                tx,
                Tool::new("send_email", "Send an email message to a recipient").with_source("mail"),
                counted(json!("sent")),
            )?;
            register_tool(
                tx,
                Tool::new("create_event", "Create a calendar event at a date and time")
                    .with_source("calendar"),
                counted(json!("created")),
            )?;
            register_tool(
                tx,
                Tool::new("read_file", "Read a text file from disk").with_source("files"),
                |_| async { Err(HandlerError::new("disk full")) },
            )?;
            register_hook(
                tx,
                Hook::new("stamp", HookEvent::PostToolUse, "weather/*"),
                |ctx| async move {
                    let mut output = ctx.output.unwrap_or(Value::Null);
                    output["checked_by"] = json!("stamp");
                    Ok(HookOutcome::RewriteOutput(output))
                },
            )
        })
        .expect("catalog");
    store
}

/// The model: on a prompt, calls the tool `pick` names for its text (if offered); on a tool
/// result, answers with it.
fn model(pick: fn(&str) -> Option<(&'static str, Value)>) -> ScriptedModel {
    ScriptedModel::new(move |request: &CompletionRequest| {
        if let Some((name, content, _)) = tool_results(request).into_iter().next() {
            return vec![Say::Text(format!("{name} said {content}"))];
        }
        let prompt = request
            .chat_history
            .iter()
            .rev()
            .find_map(Message::rag_text)
            .unwrap_or_default();
        match pick(&prompt) {
            Some((name, arguments)) if names(request).contains(&name.to_string()) => {
                vec![Say::Call {
                    name: name.into(),
                    arguments,
                }]
            }
            _ => vec![Say::Text("nothing to do".into())],
        }
    })
}

/// The tool definitions a request carried, by name, in order.
fn names(request: &CompletionRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.to_string()).collect()
}

/// The tool results a request's last message carries: name, content (as JSON text), error.
fn tool_results(request: &CompletionRequest) -> Vec<(String, String, bool)> {
    let Some(Message::User { content }) = request.chat_history.last() else {
        return Vec::new();
    };
    content
        .iter()
        .filter_map(|part| match part {
            UserContent::ToolResult(result) => Some((
                result.name.to_string(),
                serde_json::to_string(&result.content).unwrap_or_default(),
                result.is_error,
            )),
            _ => None,
        })
        .collect()
}

/// What capstore selects for a conversation, turn by turn, computed with capstore's own API:
/// the names each turn's requests must carry.
struct Expected {
    builder: ContextBuilder,
    conversation: Conversation,
}

impl Expected {
    fn turn(&mut self, store: &Store, message: &str) -> Vec<String> {
        let snapshot = store.snapshot();
        let turn = self.conversation.next_turn(message);
        let selection = self.builder.select(&snapshot, &turn).expect("select");
        self.conversation.record_selection(&selection);
        let export = ToolExport::for_snapshot(&snapshot).expect("export");
        selection
            .keys()
            .map(|key| export.export_name(key).expect("named").to_string())
            .collect()
    }
}

fn pick(prompt: &str) -> Option<(&'static str, Value)> {
    if prompt.contains("forecast") {
        Some(("get_forecast", json!({ "city": "Oslo" })))
    } else if prompt.contains("email") {
        Some((
            "send_email",
            json!({ "to": "ann@example.com", "body": "sunny" }),
        ))
    } else if prompt.contains("file") {
        Some(("read_file", json!({ "path": "notes.txt" })))
    } else {
        None
    }
}

#[tokio::test]
async fn each_turn_sends_capstores_selection_and_calls_run_through_the_executor() {
    let runs = Arc::new(AtomicUsize::new(0));
    let store = store(Arc::clone(&runs));
    let index = ToolIndex::new(store.clone(), ContextBuilder::new());
    let script = model(pick);
    let agent = AgentBuilder::new(script.model())
        .retrieved_tools(
            index.max_tools(),
            index.clone(),
            index.toolset().expect("tools"),
        )
        .build();
    let mut expected = Expected {
        builder: ContextBuilder::new(),
        conversation: Conversation::new(),
    };

    // Turn 1: the forecast. Two requests (the call, then the answer), both with the turn's tools.
    let first = expected.turn(&store, "What's the weather forecast for Oslo?");
    assert!(first.contains(&"get_forecast".to_string()), "{first:?}");
    let reply = agent
        .prompt("What's the weather forecast for Oslo?")
        .max_turns(4)
        .await
        .expect("turn 1");
    index.end_turn().expect("end turn 1");
    expected
        .conversation
        .record_tool_use("weather/get_forecast");
    let requests = script.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(names(request), first);
    }
    // The call ran the handler, through the executor: the hook stamped its output.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    let (name, content, is_error) = &results[0];
    assert_eq!(name, "get_forecast");
    assert!(!is_error);
    assert!(
        content.contains("sunny") && content.contains("stamp"),
        "{content}"
    );
    assert!(reply.output().contains("sunny"), "{}", reply.output());
    // The index says why each tool was sent.
    let selection = index.last_selection().expect("selected");
    let forecast = selection
        .tools
        .iter()
        .find(|t| &*t.key == "weather/get_forecast");
    assert!(
        forecast.is_some_and(|t| matches!(t.reasons[0], Reason::Retrieved { .. })),
        "{selection:?}"
    );

    // Turn 2: an email. The list carries turn 1's tools first (the provider's cached prefix),
    // then the turn's own; exactly what capstore selects with the conversation so far.
    let second = expected.turn(&store, "Now email that to Ann");
    assert_eq!(second[..first.len()], first[..], "{second:?}");
    assert!(second.contains(&"send_email".to_string()), "{second:?}");
    agent
        .prompt("Now email that to Ann")
        .max_turns(4)
        .await
        .expect("turn 2");
    index.end_turn().expect("end turn 2");
    expected.conversation.record_tool_use("mail/send_email");
    let requests = script.requests();
    assert_eq!(requests.len(), 4);
    for request in &requests[2..] {
        assert_eq!(names(request), second);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let results = tool_results(&requests[3]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "send_email");
    assert!(
        !results[0].2 && results[0].1.contains("sent"),
        "{results:?}"
    );

    // The index's conversation is the one capstore's own API built.
    assert_eq!(index.conversation(), Some(expected.conversation.clone()));
    // Each finished turn was counted into usage: the tool called, and the turn's tools sent.
    let usage = store
        .snapshot()
        .get_arc(&USAGE, "mail/send_email")
        .expect("read");
    assert_eq!(usage.map(|u| (u.calls, u.sent)), Some((1, 1)));
}

#[tokio::test]
async fn a_failing_tool_reaches_the_model_as_rigs_tool_error_with_capstores_message() {
    let store = store(Arc::new(AtomicUsize::new(0)));
    let index = ToolIndex::new(store.clone(), ContextBuilder::new());
    let script = model(pick);
    let agent = AgentBuilder::new(script.model())
        .retrieved_tools(
            index.max_tools(),
            index.clone(),
            index.toolset().expect("tools"),
        )
        .build();
    agent
        .prompt("Read the notes file")
        .max_turns(4)
        .await
        .expect("turn");
    let requests = script.requests();
    assert!(names(&requests[0]).contains(&"read_file".to_string()));
    let results = tool_results(&requests[1]);
    let (name, content, is_error) = &results[0];
    assert_eq!(name, "read_file");
    assert!(is_error);
    assert!(
        content.contains("tool `files/read_file` failed: disk full"),
        "{content}"
    );

    // The same error, called directly: rig's error, capstore's message and source.
    let tool = CapstoreTool::new(&Executor::new(store.clone()), "files/read_file").expect("tool");
    let error = tool.call(json!({})).await.expect_err("fails");
    assert_eq!(error.message(), "tool `files/read_file` failed: disk full");
    assert!(matches!(
        error.downcast_ref::<ExecError>(),
        Some(ExecError::Handler { .. })
    ));
    // Arguments the schema refuses never reach the handler.
    let forecast = CapstoreTool::new(&Executor::new(store), "weather/get_forecast").expect("tool");
    let error = forecast.call(json!({})).await.expect_err("no city");
    assert_eq!(error.kind(), rig::tool::ToolErrorKind::InvalidArgs);
    assert!(error.message().contains("city"), "{}", error.message());
}

#[test]
fn the_steps_of_one_turn_share_its_selection_and_a_new_text_is_a_new_turn() {
    let store = store(Arc::new(AtomicUsize::new(0)));
    let index = ToolIndex::new(store, ContextBuilder::new());
    let first = index
        .search("weather forecast for Oslo", 24)
        .expect("search");
    // rig asks again at each model request of the run: the same answer, no new turn.
    assert_eq!(
        index
            .search("weather forecast for Oslo", 24)
            .expect("again"),
        first
    );
    let history_len = |index: &ToolIndex| {
        let mut conversation = index.conversation().expect("kept");
        conversation.next_turn("probe").history.len()
    };
    assert_eq!(history_len(&index), 1);
    // After the turn ends, the same text is a new turn.
    index.end_turn().expect("end");
    index
        .search("weather forecast for Oslo", 24)
        .expect("search");
    assert_eq!(history_len(&index), 2);
    // Another text is a new turn at once.
    index.search("send an email to Ann", 24).expect("search");
    assert_eq!(history_len(&index), 3);
}

#[test]
fn samples_cap_the_answer_and_the_turns_own_tools_come_first() {
    let store = store(Arc::new(AtomicUsize::new(0)));
    let index = ToolIndex::new(store, ContextBuilder::new());
    let first = index
        .search("weather forecast and weather alerts", 24)
        .expect("search");
    assert!(first.len() >= 2, "{first:?}");
    index.end_turn().expect("end");
    let full: Vec<String> = {
        let probe = index.new_conversation();
        probe
            .search("weather forecast and weather alerts", 24)
            .expect("search");
        probe.end_turn().expect("end");
        probe
            .search("create a calendar event tomorrow", 24)
            .expect("search")
            .into_iter()
            .map(|t| t.id)
            .collect()
    };
    assert!(full.contains(&"create_event".to_string()), "{full:?}");
    // With room for one tool, the turn's own tool is sent, not the carried list's first.
    let capped = index
        .search("create a calendar event tomorrow", 1)
        .expect("search");
    let ids: Vec<&str> = capped.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["create_event"]);
    let selection = index.last_selection().expect("selected");
    assert!(
        selection
            .dropped
            .iter()
            .any(|d| d.reason == DropReason::MaxTools { max: 1 }),
        "{:?}",
        selection.dropped
    );
    // The conversation carries on what was sent, not what was cut.
    let mut conversation = index.conversation().expect("kept");
    let next = conversation.next_turn("x");
    assert_eq!(
        next.previous
            .iter()
            .map(|p| p.key.as_str())
            .collect::<Vec<_>>(),
        ["calendar/create_event"]
    );
}

#[test]
fn a_stateless_index_treats_every_search_as_a_first_turn() {
    let store = store(Arc::new(AtomicUsize::new(0)));
    let index = ToolIndex::stateless(store, ContextBuilder::new());
    index
        .search("weather forecast for Oslo", 24)
        .expect("search");
    let ids: Vec<String> = index
        .search("send an email to Ann", 24)
        .expect("search")
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert!(!ids.contains(&"get_forecast".to_string()), "{ids:?}");
    assert!(ids.contains(&"send_email".to_string()), "{ids:?}");
    assert!(index.conversation().is_none());
}

#[test]
fn the_toolset_and_the_index_agree_on_provider_safe_names() {
    let store = Store::new();
    store
        .write(|tx| {
            for source in ["github", "web"] {
                register_tool(
                    tx,
                    Tool::new("search", format!("Search {source}")).with_source(source),
                    |v| async move { Ok(v) },
                )?;
            }
            register_tool(
                tx,
                Tool::new("user-profile/update", "Update the user profile").with_source("crm"),
                |v| async move { Ok(v) },
            )
        })
        .expect("catalog");
    let tools = toolset(&Executor::new(store.clone())).expect("tools");
    let names: Vec<&str> = tools.names().collect();
    let safe = |n: &str| {
        !n.is_empty()
            && n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    assert!(names.iter().all(|n| safe(n)), "{names:?}");
    assert_eq!(names.len(), 3);
    let index = ToolIndex::stateless(store, ContextBuilder::new());
    for query in ["search github", "search web", "update the user profile"] {
        for hit in index.search(query, 24).expect("search") {
            assert!(tools.contains(&hit.id), "{} is not in {names:?}", hit.id);
        }
    }
}

#[test]
fn the_index_answers_with_the_names_of_the_tool_set_it_built_until_it_builds_another() {
    let store = Store::new();
    let forecast = |source: &str| {
        Tool::new(
            "get_forecast",
            format!("Weather forecast for a city, from {source}"),
        )
        .with_source(source)
    };
    store
        .write(|tx| register_tool(tx, forecast("weather"), |v| async move { Ok(v) }))
        .expect("catalog");
    let index = ToolIndex::stateless(store.clone(), ContextBuilder::new());
    let tools = index.toolset().expect("tools");
    assert_eq!(tools.names().collect::<Vec<_>>(), ["get_forecast"]);
    // A second `get_forecast` renames both in the catalog's export names...
    store
        .write(|tx| register_tool(tx, forecast("web"), |v| async move { Ok(v) }))
        .expect("second");
    let export = ToolExport::for_snapshot(&store.snapshot()).expect("export");
    assert_eq!(
        export.export_name("weather/get_forecast"),
        Some("weather__get_forecast")
    );
    // ...but rig's tool set still knows the first by its old name, and not the second.
    let ids = |index: &ToolIndex| -> Vec<String> {
        let hits = index
            .search("weather forecast for a city", 24)
            .expect("search");
        hits.into_iter().map(|t| t.id).collect()
    };
    assert_eq!(ids(&index), ["get_forecast"]);
    // A new tool set takes both in, under their new names.
    let tools = index.toolset().expect("tools");
    let mut found = ids(&index);
    found.sort();
    assert_eq!(found, ["weather__get_forecast", "web__get_forecast"]);
    assert!(found.iter().all(|id| tools.contains(id)));
}
