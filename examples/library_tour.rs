//! The library as a Rust program meets it: three skills with ten tools (two of them with Rust
//! handlers, registered in the same call), look-ups by source and tag through typed index
//! handles, a four-turn conversation with a scripted model through `agent::Chat` (selection,
//! reasons, calls, a hook that denies one), and two snapshots compared.
//!
//! Run with `cargo run --release --example library_tour`.

use capstore::agent::Chat;
use capstore::exec::register_hook;
use capstore::skills::{register_skill, unregister_skill};
use capstore::tools::Registration;
use capstore::{
    Hook, HookEvent, HookOutcome, Skill, Snapshot, Store, TOOLS, TOOLS_BY_SKILL, TOOLS_BY_SOURCE,
    TOOLS_BY_TAG, Tool, USAGE,
};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> capstore::Result<()> {
    let store = Store::new();
    store.update(|tx| {
        register_skill(tx, weather_skill(), weather_tools())?;
        register_skill(tx, files_skill(), files_tools())?;
        register_skill(tx, mail_skill(), mail_tools())?;
        register_hook(
            tx,
            Hook::new("mail-stays-home", HookEvent::PreToolUse, "mail/send_*")
                .with_description("mail goes to example.com addresses only"),
            |ctx| async move {
                let to = ctx.input["to"].as_str().unwrap_or_default();
                Ok(if to.ends_with("@example.com") {
                    HookOutcome::Continue
                } else {
                    HookOutcome::deny(format!("{to} is outside example.com"))
                })
            },
        )?;
        Ok(())
    })?;
    let before = store.snapshot();
    println!(
        "version {}: {} tools",
        before.version(),
        before.count(&TOOLS)?
    );

    // Look-ups by index: the handles are typed constants beside the tables.
    for source in ["weather", "files", "mail"] {
        println!(
            "  source {source:<8} {}",
            keys(before.by(&TOOLS_BY_SOURCE, source)?)
        );
    }
    println!(
        "  tag read-only     {}",
        keys(before.by(&TOOLS_BY_TAG, "read-only")?)
    );
    println!(
        "  skill mail        {}",
        keys(before.by(&TOOLS_BY_SKILL, "mail")?)
    );

    // Four turns; the "model" is a script of the tools it calls each turn.
    let script: [(&str, &[(&str, Value)]); 4] = [
        (
            "what's the forecast for Lisbon tomorrow?",
            &[("get_forecast", json!({"city": "Lisbon", "days": 1}))],
        ),
        (
            "and for the three days after?",
            &[("get_forecast", json!({"city": "Lisbon", "days": 3}))],
        ),
        (
            "mail the forecast to ana@example.com",
            &[(
                "send_message",
                json!({"to": "ana@example.com", "body": "sunny, 24"}),
            )],
        ),
        (
            "forward that message to bob@elsewhere.org too",
            &[(
                "send_message",
                json!({"to": "bob@elsewhere.org", "body": "sunny, 24"}),
            )],
        ),
    ];
    let mut chat = Chat::new(store.clone());
    for (n, (message, calls)) in script.iter().enumerate() {
        let turn = chat.turn(message)?;
        println!(
            "\nturn {}: {message:?} -> {} tools, ~{} tokens",
            n + 1,
            turn.tools.len(),
            turn.selection.tokens
        );
        for tool in &turn.selection.tools {
            println!("  {:<24} {}", tool.key, tool.reasons[0]);
        }
        for (wanted, args) in calls.iter() {
            // The model calls a tool by the name it was sent under.
            let Some(name) = offered_name(&turn.tools, wanted) else {
                println!("  ! {wanted} was not offered");
                continue;
            };
            match chat.call(&name, args.clone()).await {
                Ok(out) => println!("  called {} -> {}", out.tool, out.output),
                Err(error) => println!("  refused: {error}"),
            }
        }
    }
    chat.finish()?;

    // Change the catalog: a skill goes with its tools, a tool comes, and compare.
    store.update(|tx| {
        unregister_skill(tx, "files")?;
        tx.insert(
            &TOOLS,
            Tool::new("get_air_quality", "Air quality index for a city")
                .with_source("weather")
                .with_tags(["read-only"]),
        )?;
        Ok(())
    })?;
    compare(&before, &store.snapshot())
}

/// The tool definition's name the model would call for the tool named `bare`, if it was sent.
fn offered_name(tools: &[Value], bare: &str) -> Option<String> {
    tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .find(|name| name.ends_with(bare))
        .map(str::to_string)
}

fn keys<'a, R: 'a>(rows: impl Iterator<Item = (&'a std::sync::Arc<str>, &'a R)>) -> String {
    rows.map(|(key, _)| key.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn compare(before: &Snapshot, after: &Snapshot) -> capstore::Result<()> {
    println!("\nversion {} -> {}", before.version(), after.version());
    for (key, _) in after.iter(&TOOLS)? {
        if !before.contains(&TOOLS, key)? {
            println!("  + {key}");
        }
    }
    for (key, _) in before.iter(&TOOLS)? {
        if !after.contains(&TOOLS, key)? {
            println!("  - {key}");
        }
    }
    for (tool, usage) in after.iter(&USAGE)?.filter(|(_, usage)| usage.turns > 0) {
        println!(
            "  learned: {tool} called in {} turn(s), sent in {}",
            usage.turns, usage.sent
        );
    }
    Ok(())
}

fn weather_skill() -> Skill {
    Skill::new("weather", "Forecasts, alerts and conditions for a place")
        .with_category("travel")
        .with_tags(["weather"])
}

fn weather_tools() -> Vec<Registration> {
    let city = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]});
    vec![
        Tool::new("get_forecast", "Weather forecast for a city, by day")
            .with_source("weather")
            .with_tags(["read-only"])
            .with_input_schema(city)
            .with_handler(|args| async move {
                Ok(json!({"city": args["city"], "sky": "sunny", "high_c": 24}))
            }),
        Tool::new("get_alerts", "Weather alerts and warnings for a region")
            .with_source("weather")
            .with_tags(["read-only"])
            .into(),
        Tool::new("get_conditions", "Current temperature, wind and humidity")
            .with_source("weather")
            .with_tags(["read-only"])
            .into(),
    ]
}

fn files_skill() -> Skill {
    Skill::new("files", "Read, write and organise local files").with_tags(["fs"])
}

fn files_tools() -> Vec<Tool> {
    vec![
        Tool::new("read_file", "Read the contents of a file")
            .with_source("files")
            .with_tags(["read-only"]),
        Tool::new("write_file", "Write text to a file, replacing it").with_source("files"),
        Tool::new("list_directory", "List the entries of a directory")
            .with_source("files")
            .with_tags(["read-only"]),
        Tool::new("delete_file", "Delete a file").with_source("files"),
    ]
}

fn mail_skill() -> Skill {
    Skill::new("mail", "Send, read and delete mail messages").with_tags(["mail"])
}

fn mail_tools() -> Vec<Registration> {
    vec![
        Tool::new("send_message", "Send a mail message to an address")
            .with_source("mail")
            .with_handler(|args| async move { Ok(json!(format!("sent to {}", args["to"]))) }),
        Tool::new("list_messages", "List the mail messages in the inbox")
            .with_source("mail")
            .with_tags(["read-only"])
            .into(),
        Tool::new("delete_message", "Delete a mail message")
            .with_source("mail")
            .into(),
    ]
}
