//! The library as a Rust program meets it: four skills with eleven tools (three of them with Rust
//! handlers, async and plain, registered in the same call; each skill's tools take its name as
//! their source), a skill that depends on another and its closure, look-ups by source and tag
//! through typed index handles, a four-turn conversation with a scripted model through
//! `agent::Chat` (selection, reasons, calls by the names sent, a hook that denies one), what
//! the store learned, and two snapshots compared. No key is written twice, no definition is
//! read as JSON, and every row prints through the library's own `Display`s.
//!
//! Run with `cargo run --release --example library_tour`.

use capstore::agent::Chat;
use capstore::exec::register_sync_hook;
use capstore::skills::{dependency_closure, register_skill, unregister_skill};
use capstore::tools::Registration;
use capstore::usage;
use capstore::{
    Hook, HookEvent, HookOutcome, Skill, Snapshot, Store, TOOLS, TOOLS_BY_SKILL, TOOLS_BY_SOURCE,
    TOOLS_BY_TAG, Tool,
};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> capstore::Result<()> {
    let store = Store::new();
    store.update(|tx| {
        register_skill(tx, weather_skill(), weather_tools())?;
        register_skill(tx, files_skill(), files_tools())?;
        register_skill(tx, contacts_skill(), contacts_tools())?;
        register_skill(tx, mail_skill(), mail_tools())?;
        // A plain function as the hook's handler, registered with the hook.
        register_sync_hook(
            tx,
            Hook::new("mail-stays-home", HookEvent::PreToolUse, "mail/send_*")
                .with_description("mail goes to example.com addresses only"),
            |ctx| {
                let to = ctx.input["to"].as_str().unwrap_or_default();
                if to.ends_with("@example.com") {
                    HookOutcome::Continue
                } else {
                    HookOutcome::deny(format!("{to} is outside example.com"))
                }
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
            before.by(&TOOLS_BY_SOURCE, source)?.key_list()
        );
    }
    println!(
        "  tag read-only     {}",
        before.by(&TOOLS_BY_TAG, "read-only")?.key_list()
    );
    println!(
        "  skill mail        {}",
        before.by(&TOOLS_BY_SKILL, "mail")?.key_list()
    );
    // What the mail skill needs, dependencies first, and their tools.
    let closure = dependency_closure(&before, &["mail"])?;
    println!("  mail needs        {closure}: {}", closure.tools());

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
            "look up Ana's mail address and send her the forecast",
            &[
                ("lookup_address", json!({"name": "Ana"})),
                (
                    "send_message",
                    json!({"to": "ana@example.com", "body": "sunny, 24"}),
                ),
            ],
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
        for sent in turn.sent() {
            println!("  {sent}");
        }
        for (wanted, args) in calls.iter() {
            // The model calls a tool by the name it was sent under.
            let Some(name) = turn.name_of(wanted) else {
                println!("  ! {wanted} was not offered");
                continue;
            };
            match chat.call(name, args.clone()).await {
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
    for learned in usage::called(after)? {
        println!("  learned: {learned}");
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
            .with_tags(["read-only"])
            .with_input_schema(city)
            .with_handler(|args| async move {
                Ok(json!({"city": args["city"], "sky": "sunny", "high_c": 24}))
            }),
        Tool::new("get_alerts", "Weather alerts and warnings for a region")
            .with_tags(["read-only"])
            .into(),
        Tool::new("get_conditions", "Current temperature, wind and humidity")
            .with_tags(["read-only"])
            .into(),
    ]
}

fn files_skill() -> Skill {
    Skill::new("files", "Read, write and organise local files").with_tags(["fs"])
}

fn files_tools() -> Vec<Tool> {
    vec![
        Tool::new("read_file", "Read the contents of a file").with_tags(["read-only"]),
        Tool::new("write_file", "Write text to a file, replacing it"),
        Tool::new("list_directory", "List the entries of a directory").with_tags(["read-only"]),
        Tool::new("delete_file", "Delete a file"),
    ]
}

fn contacts_skill() -> Skill {
    Skill::new("contacts", "Look up people's addresses")
}

fn contacts_tools() -> Vec<Registration> {
    // A plain function as the handler, registered with its tool.
    vec![
        Tool::new("lookup_address", "The mail address of a person, by name")
            .with_tags(["read-only"])
            .with_sync_handler(|args| {
                let name = args["name"].as_str().unwrap_or_default().to_lowercase();
                Ok(json!(format!("{name}@example.com")))
            }),
    ]
}

fn mail_skill() -> Skill {
    // Mail needs the address book: its closure brings the contacts skill first.
    Skill::new("mail", "Send, read and delete mail messages")
        .with_tags(["mail"])
        .with_dependencies(["contacts"])
}

fn mail_tools() -> Vec<Registration> {
    vec![
        Tool::new("send_message", "Send a mail message to an address")
            .with_handler(|args| async move { Ok(json!(format!("sent to {}", args["to"]))) }),
        Tool::new("list_messages", "List the mail messages in the inbox")
            .with_tags(["read-only"])
            .into(),
        Tool::new("delete_message", "Delete a mail message").into(),
    ]
}
