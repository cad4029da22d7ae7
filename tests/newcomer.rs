//! A newcomer's program, step by step (issue 58's target): skills whose tools take the skill's
//! source, a plain handler and a plain hook registered with what they belong to, a dependency
//! closure, look-ups printed by the library, a conversation whose sent tools are read as typed
//! values (no JSON), each labelled by the channel that brought it, and what the store learned.

use capstore::agent::Chat;
use capstore::context::Channel;
use capstore::exec::register_sync_hook;
use capstore::skills::{dependency_closure, register_skill};
use capstore::tools::Registration;
use capstore::usage;
use capstore::{
    HANDLERS, HOOK_HANDLERS, Hook, HookEvent, HookOutcome, Skill, Store, TOOLS, TOOLS_BY_SOURCE,
    Tool,
};
use serde_json::json;

fn store() -> Store {
    let store = Store::new();
    store
        .update(|tx| {
            register_skill(
                tx,
                Skill::new("contacts", "Look up people's mail addresses"),
                [
                    Tool::new("lookup_address", "The mail address of a person, by name")
                        .with_sync_handler(|args| {
                            let name = args["name"].as_str().unwrap_or_default().to_lowercase();
                            Ok(json!(format!("{name}@example.com")))
                        }),
                ],
            )?;
            let mail: Vec<Registration> = vec![
                Tool::new("send_message", "Send a mail message to an address")
                    .with_sync_handler(|args| Ok(json!(format!("sent to {}", args["to"])))),
                Tool::new("list_messages", "List the mail messages in the inbox").into(),
                // A tool that names its own source keeps it.
                Tool::new("print", "Print a document on paper")
                    .with_source("printer")
                    .into(),
            ];
            register_skill(
                tx,
                Skill::new("mail", "Send and read mail messages").with_dependencies(["contacts"]),
                mail,
            )?;
            register_sync_hook(
                tx,
                Hook::new("mail-stays-home", HookEvent::PreToolUse, "mail/send_*"),
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
        })
        .expect("registered");
    store
}

#[test]
fn a_skills_tools_take_its_source_and_their_handlers_come_with_them() {
    let snap = store().snapshot();
    assert_eq!(
        snap.by(&TOOLS_BY_SOURCE, "mail")
            .expect("index")
            .key_list()
            .to_string(),
        "mail/list_messages, mail/send_message"
    );
    assert!(snap.contains(&TOOLS, "printer/print").expect("table"));
    assert!(
        snap.contains(&TOOLS, "contacts/lookup_address")
            .expect("table")
    );
    assert!(
        snap.contains(&HANDLERS, "mail/send_message")
            .expect("table")
    );
    assert!(
        !snap
            .contains(&HANDLERS, "mail/list_messages")
            .expect("table")
    );
    assert!(
        snap.contains(&HOOK_HANDLERS, "mail-stays-home")
            .expect("table")
    );

    let closure = dependency_closure(&snap, &["mail"]).expect("closure");
    assert_eq!(closure.to_string(), "contacts → mail");
    assert_eq!(
        closure.tools().to_string(),
        "contacts/lookup_address, mail/send_message, mail/list_messages, printer/print"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_turn_is_read_and_called_by_its_sent_tools_without_json() {
    let store = store();
    let mut chat = Chat::new(store.clone());
    let turn = chat
        .turn("look up Ana's mail address and send her the report")
        .expect("turn");
    let sent: Vec<_> = turn.sent().collect();
    assert_eq!(sent.len(), turn.tools.len());
    for s in &sent {
        // The name a model calls is the one in the definition sent.
        assert_eq!(s.definition["function"]["name"], s.name, "{s}");
        assert_eq!(s.selected.key.as_ref(), s.key);
    }
    let lookup = turn.name_of("lookup_address").expect("lookup sent");
    assert_eq!(turn.name_of("contacts/lookup_address"), Some(lookup));
    assert_eq!(turn.name_of("delete_everything"), None);

    let address = chat
        .call(lookup, json!({"name": "Ana"}))
        .await
        .expect("plain handler runs");
    assert_eq!(address.output, json!("ana@example.com"));
    let send = turn.name_of("send_message").expect("send sent");
    let refused = chat
        .call(send, json!({"to": "bob@elsewhere.org"}))
        .await
        .expect_err("the plain hook denies");
    assert!(
        refused.to_string().contains("outside example.com"),
        "{refused}"
    );
    chat.call(send, json!({"to": "ana@example.com"}))
        .await
        .expect("allowed");
    chat.finish().expect("learned");

    let snap = store.snapshot();
    let learned: Vec<String> = usage::called(&snap)
        .expect("usage")
        .map(|u| u.to_string())
        .collect();
    assert_eq!(learned.len(), 2, "{learned:?}");
    assert!(
        learned[0].starts_with("contacts/lookup_address: called in 1 turn (1 call); sent in 1"),
        "{learned:?}"
    );
    // Rows of tools only sent are in the table, not among what was learned.
    assert!(snap.iter(&capstore::USAGE).expect("usage").count() > learned.len());
}

#[test]
fn a_tool_a_matched_skill_brought_is_labelled_so() {
    let store = store();
    let mut chat = Chat::new(store);
    let turn = chat.turn("send a mail message").expect("turn");
    let channel_of = |key: &str| {
        turn.sent()
            .find(|s| s.key == key)
            .map(|s| s.selected.channel)
    };
    assert_eq!(channel_of("mail/send_message"), Some(Channel::Message));
    // No word of "Print a document on paper" is in the message: the mail skill brought it.
    let listed = turn
        .sent()
        .find(|s| s.key == "printer/print")
        .expect("the matched skill's tool is sent");
    assert_eq!(listed.selected.channel, Channel::Skill, "{listed}");
    assert!(
        listed
            .to_string()
            .contains("brought by a skill the message matched: skill mail matched"),
        "{listed}"
    );
}
