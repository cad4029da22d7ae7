//! Provider request shapes and the agent loop.

use std::sync::Arc;

use capstore::agent::{
    Agent, AgentError, Message, Model, ModelError, ModelReply, ModelRequest, ModelToolCall,
};
use capstore::context::{ContextBuilder, Turn};
use capstore::exec::register_tool;
use capstore::provider::{Provider, ToolExport};
use capstore::{Executor, Store, TOOLS, Tool, UnselectedCallPolicy};
use parking_lot::Mutex;
use serde_json::{Value, json};

fn store() -> Store {
    let store = Store::new();
    let schema =
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("search", "Search code")
                    .with_source("github")
                    .with_input_schema(schema.clone()),
                |a| async move { Ok(json!({"code": a["q"]})) },
            )?;
            register_tool(
                tx,
                Tool::new("search", "Search the web")
                    .with_source("web")
                    .with_input_schema(schema.clone()),
                |a| async move { Ok(json!({"web": a["q"]})) },
            )?;
            register_tool(
                tx,
                Tool::new("getPM2.5Level", "Air quality PM2.5 level for a city"),
                |_| async move { Ok(json!(12)) },
            )?;
            register_tool(
                tx,
                Tool::new("convert_currency", "Convert an amount between currencies"),
                |_| async move { Ok(json!(1.1)) },
            )?;
            tx.insert(&TOOLS, Tool::new("broken", "Always fails").with_source("x"))?; // no handler
            Ok::<_, capstore::StoreError>(())
        })
        .expect("store");
    store
}

#[test]
fn openai_chat_shape() {
    let store = store();
    let snap = store.snapshot();
    let s = ContextBuilder::new()
        .select(&snap, &Turn::new("search code for foo"))
        .expect("select");
    let tools = ToolExport::for_snapshot(&snap)
        .expect("export")
        .selection_json(Provider::OpenAiChat, &s);
    let first = &tools[0];
    let keys: Vec<&String> = first.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["function", "type"]);
    assert_eq!(first["type"], "function");
    let f = first["function"].as_object().expect("function");
    assert_eq!(
        f.keys().collect::<Vec<_>>(),
        ["description", "name", "parameters"]
    );
    assert_eq!(first["function"]["name"], "github__search");
    assert_eq!(first["function"]["parameters"]["required"][0], "q");
}

#[test]
fn openai_responses_and_anthropic_shapes() {
    let store = store();
    let snap = store.snapshot();
    let export = ToolExport::for_snapshot(&snap).expect("export");
    let tool = snap
        .get(&TOOLS, "getPM2.5Level")
        .expect("get")
        .expect("present");
    let r = export.tool_json(Provider::OpenAiResponses, "getPM2.5Level", tool);
    assert_eq!(
        r.as_object().expect("o").keys().collect::<Vec<_>>(),
        ["description", "name", "parameters", "type"]
    );
    assert_eq!(r["name"], "getPM2_5Level");
    let a = export.tool_json(Provider::Anthropic, "getPM2.5Level", tool);
    assert_eq!(
        a.as_object().expect("o").keys().collect::<Vec<_>>(),
        ["description", "input_schema", "name"]
    );
    // Every exported name satisfies the providers' rule and maps back.
    for key in [
        "github/search",
        "web/search",
        "getPM2.5Level",
        "convert_currency",
        "x/broken",
    ] {
        let name = export.export_name(key).expect("exported");
        assert!(capstore::tools::is_provider_safe(name), "{name}");
        assert_eq!(export.resolve(name), Some(key));
    }
}

/// A model that plays back a script of replies and records every request.
struct Scripted {
    replies: Mutex<Vec<ModelReply>>,
    seen: Arc<Mutex<Vec<ModelRequest>>>,
}

impl Scripted {
    fn new(replies: Vec<ModelReply>) -> (Self, Arc<Mutex<Vec<ModelRequest>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut replies = replies;
        replies.reverse();
        (
            Scripted {
                replies: Mutex::new(replies),
                seen: Arc::clone(&seen),
            },
            seen,
        )
    }
}

impl Model for Scripted {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.seen.lock().push(request.clone());
        self.replies
            .lock()
            .pop()
            .ok_or_else(|| ModelError::other("script exhausted"))
    }
}

fn call(id: &str, name: &str, args: Value) -> ModelReply {
    ModelReply::ToolCalls(vec![ModelToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }])
}

fn tool_names(request: &ModelRequest) -> Vec<String> {
    request
        .tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_turn_runs_tools_until_the_model_answers() {
    let store = store();
    let (model, seen) = Scripted::new(vec![
        call("1", "github__search", json!({"q": "foo"})),
        call("2", "broken", json!({})), // no handler: reported to the model, not fatal
        ModelReply::Final("done".into()),
    ]);
    let agent = Agent::new(store, model);
    let mut session = agent.session();
    let outcome = agent
        .run_turn(&mut session, "search code for foo")
        .await
        .expect("turn");
    assert_eq!(outcome.answer, "done");
    assert_eq!(outcome.steps, 3);
    assert_eq!(
        outcome.calls,
        [
            ("github/search".to_string(), true),
            ("x/broken".to_string(), false)
        ]
    );
    let seen = seen.lock();
    // The second request carries the first tool result.
    assert!(matches!(
        seen[1].messages.last(),
        Some(Message::ToolResult {
            is_error: false,
            ..
        })
    ));
    assert!(matches!(
        seen[2].messages.last(),
        Some(Message::ToolResult { is_error: true, .. })
    ));
    assert!(tool_names(&seen[0]).contains(&"search_tools".to_string()));
    // The search tool says what it can find: the store's sources, each with its tools.
    let search = seen[0]
        .tools
        .iter()
        .find(|t| t["function"]["name"] == "search_tools")
        .expect("search_tools offered");
    let description = search["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("github (1 tool: search)")
            && description.contains("web (1 tool: search)"),
        "{description}"
    );
}

#[tokio::test]
async fn the_step_limit_ends_a_runaway_turn() {
    let store = store();
    let (model, _) = Scripted::new(vec![call("1", "github__search", json!({"q": "a"})); 5]);
    let agent = Agent::new(store, model).with_max_steps(3);
    let mut session = agent.session();
    let err = agent
        .run_turn(&mut session, "search code")
        .await
        .unwrap_err();
    assert_eq!(err, AgentError::StepLimit { steps: 3 });
}

#[tokio::test]
async fn search_tools_pulls_tools_into_the_next_turn() {
    let store = store();
    let (model, seen) = Scripted::new(vec![
        call("1", "search_tools", json!({"query": "currency exchange"})),
        ModelReply::Final("found it".into()),
        ModelReply::Final("ok".into()),
    ]);
    let agent = Agent::new(store, model);
    let mut session = agent.session();
    let first = agent
        .run_turn(&mut session, "hello there")
        .await
        .expect("turn 1");
    assert!(!first.selection.contains("convert_currency"));
    let second = agent
        .run_turn(&mut session, "thanks")
        .await
        .expect("turn 2");
    assert!(
        second.selection.contains("convert_currency"),
        "discovered tool is selected next turn"
    );
    let seen = seen.lock();
    assert!(tool_names(&seen[2]).contains(&"convert_currency".to_string()));
}

#[tokio::test]
async fn unselected_calls_follow_the_executor_policy() {
    let store = store();
    let (model, _) = Scripted::new(vec![
        call("1", "convert_currency", json!({})),
        ModelReply::Final("x".into()),
    ]);
    let agent = Agent::new(store.clone(), model)
        .with_executor(Executor::new(store).with_policy(UnselectedCallPolicy::Deny));
    let mut session = agent.session();
    let outcome = agent
        .run_turn(&mut session, "search code")
        .await
        .expect("turn");
    assert_eq!(outcome.calls, [("convert_currency".to_string(), false)]);
}

#[tokio::test]
async fn without_a_builder_every_tool_is_sent() {
    let store = store();
    let n = store.snapshot().count(&TOOLS).expect("count");
    let (model, seen) = Scripted::new(vec![ModelReply::Final("x".into())]);
    let agent = Agent::new(store, model)
        .with_builder(None)
        .with_search_tools(false);
    let mut session = agent.session();
    agent
        .run_turn(&mut session, "anything")
        .await
        .expect("turn");
    assert_eq!(seen.lock()[0].tools.len(), n);
}

#[tokio::test]
async fn the_agent_emits_turn_and_selection_events_with_the_selection() {
    let store = store();
    let bus = capstore::EventBus::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let _sub = bus.subscribe(move |e| log.lock().push(e.clone()));
    let (model, _) = Scripted::new(vec![ModelReply::Final("x".into())]);
    let agent = Agent::new(store, model).with_events(bus);
    let mut session = agent.session();
    let outcome = agent
        .run_turn(&mut session, "search code")
        .await
        .expect("turn");
    let events = seen.lock();
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[2],
        capstore::Event::TurnFinished {
            turn: 1,
            steps: 1,
            answer: "x".into()
        }
    );
    assert!(matches!(
        &events[0],
        capstore::Event::TurnStarted { turn: 1, .. }
    ));
    match &events[1] {
        capstore::Event::SelectionMade {
            turn,
            tools,
            selection,
            ..
        } => {
            assert_eq!(*turn, 1);
            assert_eq!(selection, &outcome.selection);
            assert_eq!(
                tools,
                &outcome
                    .selection
                    .keys()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            );
        }
        other => panic!("expected SelectionMade, got {other:?}"),
    }
}

/// A catalog tool named like the discovery tool is exported under another name, so the request
/// names each tool once: the model's `search_tools` call searches, and its call of the catalog
/// tool's own export name runs that tool, even one keyed `search_tools` itself.
#[tokio::test]
async fn a_catalog_tool_named_search_tools_neither_clashes_with_nor_shadows_the_discovery_tool() {
    let store = store();
    store
        .write(|tx| {
            register_tool(
                tx,
                Tool::new("search_tools", "Search the tool shed inventory").with_source("shed"),
                |_| async move { Ok(json!("shed")) },
            )?;
            register_tool(
                tx,
                Tool::new("search_tools", "Search the legacy tool registry"),
                |_| async move { Ok(json!("legacy")) },
            )?;
            Ok::<_, capstore::StoreError>(())
        })
        .expect("store");
    let export = ToolExport::for_snapshot(&store.snapshot()).expect("export");
    let shed = export
        .export_name("shed/search_tools")
        .expect("named")
        .to_string();
    let legacy = export
        .export_name("search_tools")
        .expect("named")
        .to_string();
    // The two clash, so the one with a source takes `source__name`; the other, left with the
    // reserved name, a hash suffix.
    assert_eq!(shed, "shed__search_tools");
    assert!(legacy.starts_with("search_tools_"), "{legacy}");
    assert_eq!(export.resolve("search_tools"), None);

    let (model, seen) = Scripted::new(vec![
        call("1", "search_tools", json!({"query": "tool shed inventory"})),
        call("2", &shed, json!({})),
        call("3", &legacy, json!({})),
        ModelReply::Final("done".into()),
    ]);
    let pinned = capstore::context::SelectionPolicy {
        pinned_tools: vec!["shed/search_tools".into(), "search_tools".into()],
        ..Default::default()
    };
    let agent = Agent::new(store, model)
        .with_builder(Some(ContextBuilder::with_policy(pinned).expect("policy")));
    let mut session = agent.session();
    let outcome = agent
        .run_turn(&mut session, "what is in the tool shed inventory?")
        .await
        .expect("turn");
    assert_eq!(
        outcome.calls,
        [
            ("search_tools".to_string(), true),
            ("shed/search_tools".to_string(), true),
            ("search_tools".to_string(), true)
        ]
    );
    let seen = seen.lock();
    // Each name once in the request: the discovery tool's and the two catalog tools'.
    let names = tool_names(&seen[0]);
    for name in ["search_tools", shed.as_str(), legacy.as_str()] {
        assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{names:?}");
    }
    // What each call returned: the search's findings, then each catalog tool's own result.
    let results: Vec<String> = seen[3]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { content, .. } => Some(content.to_string()),
            _ => None,
        })
        .collect();
    assert!(results[0].contains("shed/search_tools"), "{results:?}");
    assert!(
        results[1].contains("shed") && results[2].contains("legacy"),
        "{results:?}"
    );
}
