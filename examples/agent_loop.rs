//! A multi-turn conversation over a realistic catalog with a scripted model (no network):
//! each turn prints the tools sent and why, the calls the model made, and the answer.
//!
//! Tools tagged `write` need approval: a stand-in approver (an event subscriber) approves
//! sending email and rejects writing files, and the model is told. The model's replies are
//! recorded to a tape, and the conversation is then replayed from the tape alone.
//!
//! Run with `cargo run --release --example agent_loop`.

use capstore::agent::{
    Agent, ApprovalPolicy, Approvals, Message, Model, ModelError, ModelReply, ModelRequest,
    ModelToolCall, RecordingModel, ReplayModel,
};
use capstore::exec::register_tool;
use capstore::skills::register_skill;
use capstore::{Event, EventBus, Executor, Skill, Store, Tool, UnselectedCallPolicy};
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
            .filter(|w| w.len() > 3)
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
                ("mail", "send_email", "Send an email message: write"),
                ("mail", "search_email", "Search the mailbox"),
            ],
        ),
        (
            Skill::new("files", "Read and write local files")
                .with_examples(["open the notes file"]),
            vec![
                ("fs", "read_file", "Read a file"),
                ("fs", "write_file", "Write a file: write"),
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
                .map(|(src, name, desc)| match desc.strip_suffix(": write") {
                    // Tools that change things are tagged `write`: they need approval.
                    Some(desc) => Tool::new(*name, desc)
                        .with_source(*src)
                        .with_tags(["write"]),
                    None => Tool::new(*name, *desc).with_source(*src),
                })
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

const MESSAGES: [&str; 6] = [
    "What's on my calendar tomorrow?",
    "Book a meeting with Ana at 10",
    "What is the weather forecast for Oslo?",
    "Send an email to Ana with the agenda",
    "Write the notes file",
    "Open an issue about the crash in the parser",
];

/// Approves every pending call except writes to files, from another thread, as a person
/// answering in a UI would.
fn approver(events: &EventBus, approvals: &Approvals) -> capstore::EventSubscription {
    let desk = approvals.clone();
    events.subscribe(move |event| {
        if let Event::ToolCallPending { ticket, tool, .. } = event {
            let (desk, ticket, tool) = (desk.clone(), *ticket, tool.clone());
            std::thread::spawn(move || {
                let (verb, decided) = if tool == "fs/write_file" {
                    (
                        "rejects",
                        desk.reject(ticket, "files stay as they are today"),
                    )
                } else {
                    ("approves", desk.approve(ticket))
                };
                match decided {
                    Ok(()) => println!("  approver {verb} {tool} (ticket {ticket})"),
                    Err(e) => println!("  approver: {e}"),
                }
            });
        }
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::new();
    catalog(&store)?;
    let events = EventBus::new();
    let _log = events.subscribe(|e| eprintln!("  event: {}", e.kind()));
    let approvals = Approvals::new(ApprovalPolicy::destructive());
    let _approver = approver(&events, &approvals);
    let executor = Executor::new(store.clone())
        .with_policy(UnselectedCallPolicy::AllowAndKeep)
        .with_events(events.clone());
    let tape =
        std::env::temp_dir().join(format!("capstore-agent-loop-{}.jsonl", std::process::id()));
    let agent = Agent::new(store.clone(), RecordingModel::create(ScriptedModel, &tape)?)
        .with_executor(executor)
        .with_events(events)
        .with_approvals(approvals.clone());
    let mut session = agent.session();
    let mut answers = Vec::new();
    for message in MESSAGES {
        println!("\nuser: {message}");
        let outcome = agent.run_turn(&mut session, message).await?;
        println!("  tools sent (v{}):", outcome.selection.version);
        for tool in &outcome.selection.tools {
            let why: Vec<String> = tool.reasons.iter().map(ToString::to_string).collect();
            println!("    {:<24} {}", tool.key, why.join("; "));
        }
        println!("  calls: {:?}", outcome.calls);
        println!("  answer: {}", outcome.answer);
        answers.push(outcome.answer);
    }

    // The same conversation from the tape alone: no model runs. Any change to the selection or
    // the messages would fail here, naming the request and what differed.
    let replay = ReplayModel::open(&tape)?;
    let requests = replay.len();
    let replay_events = EventBus::new();
    let _replay_approver = approver(&replay_events, &approvals);
    let player = Agent::new(store.clone(), replay)
        .with_executor(Executor::new(store.clone()).with_policy(UnselectedCallPolicy::AllowAndKeep))
        .with_events(replay_events)
        .with_approvals(approvals.clone());
    let mut session = player.session();
    for (message, recorded) in MESSAGES.iter().zip(&answers) {
        let outcome = player.run_turn(&mut session, message).await?;
        assert_eq!(&outcome.answer, recorded, "the replay answers as recorded");
    }
    println!(
        "\nreplayed {requests} model requests from {}: same answers",
        tape.display()
    );
    std::fs::remove_file(&tape).ok();
    Ok(())
}
