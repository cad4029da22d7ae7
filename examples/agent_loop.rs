//! A multi-turn conversation over a realistic catalog with a scripted model (no network):
//! each turn prints the tools sent and why, the calls the model made, and the answer.
//!
//! Run with `cargo run --release --example agent_loop`.

use capstore::agent::{Agent, Message, Model, ModelError, ModelReply, ModelRequest, ModelToolCall};
use capstore::context::Reason;
use capstore::exec::register_tool;
use capstore::skills::register_skill;
use capstore::{EventBus, Executor, Skill, Store, Tool, UnselectedCallPolicy};
use serde_json::{Value, json};

/// A stand-in for a real model: it calls the offered tool whose name and description share the
/// most words with the user's message, once, then answers with the tool's result.
struct ScriptedModel;

impl Model for ScriptedModel {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if let Some(Message::ToolResult { content, .. }) = request.messages.last() {
            return Ok(ModelReply::Final(format!("Done: {content}")));
        }
        let Some(Message::User { text }) = request.messages.last() else {
            return Err(ModelError::other("no user message"));
        };
        let words: Vec<String> = text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_string)
            .collect();
        // Score each offered tool by the message words found in its name and description.
        let best = request
            .tools
            .iter()
            .filter_map(|t| {
                let f = &t["function"];
                Some((f["name"].as_str()?, f["description"].as_str().unwrap_or("")))
            })
            .filter(|(name, _)| *name != "search_tools")
            .map(|(name, description)| {
                let text = format!("{name} {description}").to_lowercase();
                let hits = words
                    .iter()
                    .filter(|w| text.contains(w.trim_end_matches('s')))
                    .count();
                (hits, name)
            })
            .filter(|(hits, _)| *hits > 0)
            .max()
            .map(|(_, name)| name);
        match best {
            Some(name) => Ok(ModelReply::ToolCalls(vec![ModelToolCall {
                id: "call-1".into(),
                name: name.to_string(),
                arguments: json!({ "query": text }),
            }])),
            None => Ok(ModelReply::Final("I have no tool for that.".into())),
        }
    }
}

fn echo(
    tool: &'static str,
) -> impl Fn(Value) -> std::future::Ready<Result<Value, capstore::HandlerError>> + Send + Sync + 'static
{
    move |args| std::future::ready(Ok(json!({ "tool": tool, "got": args["query"] })))
}

/// (source, name, description) of a tool in the example catalog.
type ToolSpec = (&'static str, &'static str, &'static str);

fn catalog(store: &Store) -> Result<(), Box<dyn std::error::Error>> {
    let skills: Vec<(Skill, Vec<ToolSpec>)> = vec![
        (
            Skill::new("calendar", "Read and book meetings and events")
                .with_examples(["book a meeting tomorrow", "what is on my calendar"]),
            vec![
                (
                    "gcal",
                    "list_events",
                    "List calendar events in a time range",
                ),
                ("gcal", "create_event", "Create a calendar event or meeting"),
            ],
        ),
        (
            Skill::new("email", "Read, search and send email")
                .with_examples(["email the report to Ana"]),
            vec![
                ("mail", "send_email", "Send an email message"),
                ("mail", "search_email", "Search the mailbox"),
            ],
        ),
        (
            Skill::new("files", "Read and write local files")
                .with_examples(["open the notes file"]),
            vec![
                ("fs", "read_file", "Read a file"),
                ("fs", "write_file", "Write a file"),
            ],
        ),
        (
            Skill::new("weather", "Weather forecasts").with_examples(["will it rain in Oslo"]),
            vec![("wx", "get_forecast", "Weather forecast for a city")],
        ),
        (
            Skill::new("github", "GitHub issues and pull requests")
                .with_dependencies(["files"])
                .with_examples(["open an issue about the crash"]),
            vec![
                ("github", "create_issue", "Open an issue in a repository"),
                ("github", "search_issues", "Search issues"),
            ],
        ),
    ];
    store.write(|tx| {
        for (skill, tools) in skills {
            let tool_defs: Vec<Tool> = tools
                .iter()
                .map(|(src, name, desc)| Tool::new(*name, *desc).with_source(*src))
                .collect();
            register_skill(tx, skill, tool_defs)?;
            for (src, name, _) in tools {
                tx.insert(
                    &capstore::HANDLERS,
                    capstore::ToolHandler::new(format!("{src}/{name}"), echo(name)),
                )?;
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    store.write(|tx| {
        register_tool(
            tx,
            Tool::new("convert_currency", "Convert an amount between currencies").with_source("fx"),
            echo("convert_currency"),
        )
    })?;
    Ok(())
}

fn describe(reason: &Reason) -> String {
    match reason {
        Reason::Retrieved { score, .. } => format!("retrieved (BM25 {score:.2})"),
        Reason::Skill { skill, score } => format!("skill {skill} ({score:.2})"),
        Reason::DependencyOf { skill, dependency } => {
            format!("{dependency}, a dependency of {skill}")
        }
        Reason::KeptFromLastTurn => "kept from last turn".into(),
        Reason::RecentlyUsed => "used recently".into(),
        Reason::ExactName { mention } => format!("named: {mention}"),
        other => format!("{other:?}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::new();
    catalog(&store)?;
    let events = EventBus::new();
    let _log = events.subscribe(|e| eprintln!("  event: {}", e.kind()));
    let executor = Executor::new(store.clone())
        .with_policy(UnselectedCallPolicy::AllowAndKeep)
        .with_events(events.clone());
    let agent = Agent::new(store.clone(), ScriptedModel)
        .with_executor(executor)
        .with_events(events);
    let mut session = agent.session();
    for message in [
        "What's on my calendar tomorrow?",
        "Book a meeting with Ana at 10",
        "Will it rain in Oslo?",
        "Open an issue about the crash in the parser",
    ] {
        println!("\nuser: {message}");
        let outcome = agent.run_turn(&mut session, message).await?;
        println!("  tools sent (v{}):", outcome.selection.version);
        for tool in &outcome.selection.tools {
            let why: Vec<String> = tool.reasons.iter().map(describe).collect();
            println!("    {:<24} {}", tool.key, why.join("; "));
        }
        println!("  calls: {:?}", outcome.calls);
        println!("  answer: {}", outcome.answer);
    }
    Ok(())
}
