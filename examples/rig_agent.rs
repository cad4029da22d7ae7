//! A rig agent whose tools capstore picks each turn (feature `rig`), over a scripted model (no
//! network): each turn prints the tools rig sent the model, with capstore's reason for each,
//! the tool the model called (run by capstore's handler, through its executor and hooks) and
//! the answer. The second turn's list starts with the first's: the list carried across turns.
//!
//! Run with `cargo run --release --features rig --example rig_agent`.

// The scripted model is shared with tests/rig_adapter.rs.
#[path = "../tests/common/rig_model.rs"]
mod rig_model;

use capstore::context::ContextBuilder;
use capstore::exec::{register_hook, register_tool};
use capstore::rig::ToolIndex;
use capstore::{Hook, HookEvent, HookOutcome, Store, Tool};
use rig::AgentBuilder;
use rig::completion::{CompletionRequest, Message};
use rig::message::UserContent;
use rig_model::{Say, ScriptedModel};
use serde_json::{Value, json};

/// A stand-in for a real model: on a prompt, it calls the offered tool whose name shares the
/// most words with the prompt, with the arguments it needs; on the tool's result, it answers.
fn think(request: &CompletionRequest) -> Vec<Say> {
    let Some(last) = request.chat_history.last() else {
        return vec![Say::Text("nothing asked".into())];
    };
    if let Message::User { content } = last {
        for part in content {
            if let UserContent::ToolResult(result) = part {
                let said = serde_json::to_string(&result.content).unwrap_or_default();
                return vec![Say::Text(format!("{} answered {said}", result.name))];
            }
        }
    }
    let prompt = last.rag_text().unwrap_or_default().to_lowercase();
    let words = |name: &str| {
        name.split(['_', '-'])
            .filter(|w| w.len() > 2 && prompt.contains(*w))
            .count()
    };
    let best = request
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .max_by_key(|name| words(name))
        .filter(|name| words(name) > 0);
    match best {
        Some(name) => {
            let arguments = match name.as_str() {
                "get_forecast" => json!({ "city": "Lisbon" }),
                "send_email" => json!({ "to": "ann@example.com", "body": "Sunny, 24°C" }),
                "create_event" => json!({ "title": "Flight", "date": "Friday" }),
                _ => json!({}),
            };
            vec![Say::Call { name, arguments }]
        }
        None => vec![Say::Text("I have no tool for that.".into())],
    }
}

fn catalog() -> Result<Store, capstore::StoreError> {
    let store = Store::new();
    let schema = |required: &[&str]| {
        let properties: serde_json::Map<String, Value> = required
            .iter()
            .map(|p| (p.to_string(), json!({ "type": "string" })))
            .collect();
        json!({ "type": "object", "properties": properties, "required": required })
    };
    store.write(|tx| {
        register_tool(
            tx,
            Tool::new("get_forecast", "Get the weather forecast for a city")
                .with_source("weather")
                .with_input_schema(schema(&["city"])),
            |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny", "high_c": 24 })) },
        )?;
        register_tool(
            tx,
            Tool::new("get_alerts", "Severe weather alerts for a region").with_source("weather"),
            |_| async { Ok(json!([])) },
        )?;
        register_tool(
            tx,
            Tool::new("send_email", "Send an email message to a recipient")
                .with_source("mail")
                .with_input_schema(schema(&["to", "body"])),
            |args| async move {
                Ok(json!(format!(
                    "sent to {}",
                    args["to"].as_str().unwrap_or("?")
                )))
            },
        )?;
        register_tool(
            tx,
            Tool::new("create_event", "Create a calendar event at a date and time")
                .with_source("calendar")
                .with_input_schema(schema(&["title", "date"])),
            |_| async { Ok(json!("created")) },
        )?;
        register_tool(
            tx,
            Tool::new("read_file", "Read a text file from disk").with_source("files"),
            |_| async { Ok(json!("")) },
        )?;
        // Hooks run around rig's calls too: every email is logged.
        register_hook(
            tx,
            Hook::new("log-mail", HookEvent::PreToolUse, "mail/*"),
            |ctx| async move {
                println!("    [hook] {} {}", ctx.tool, ctx.input);
                Ok(HookOutcome::Continue)
            },
        )
    })?;
    Ok(store)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = catalog()?;
    // One index per conversation: it keeps the conversation's tool list across turns.
    let index = ToolIndex::new(store, ContextBuilder::new());
    let model = ScriptedModel::new(think);
    let agent = AgentBuilder::new(model.model())
        .preamble("You are a helpful assistant.")
        .retrieved_tools(index.max_tools(), index.clone(), index.toolset()?)
        .build();

    let mut seen = 0;
    for message in [
        "What's the weather forecast for Lisbon on Friday?",
        "Send an email to Ann with the forecast",
    ] {
        println!("> {message}");
        let reply = agent.prompt(message).max_turns(4).await?;
        index.end_turn()?;
        let requests = model.requests();
        let sent: Vec<String> = requests[seen]
            .tools
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        let turn = &requests[seen..];
        // rig asks the index at each request of the run; the turn's requests carry one list.
        assert!(
            turn.iter()
                .all(|r| r.tools.iter().map(|t| t.name.to_string()).eq(sent.clone()))
        );
        println!(
            "  rig sent these tools on each of the turn's {} requests, with capstore's reasons:",
            turn.len()
        );
        seen = requests.len();
        if let Some(selection) = index.last_selection() {
            for (name, tool) in sent.iter().zip(&selection.tools) {
                println!("    {name:<24} {}", tool.reasons[0]);
            }
        }
        println!("  {}", reply.output());
    }
    Ok(())
}
