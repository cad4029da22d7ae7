//! `agent::Chat`: one call per turn and one per tool call do every recording a turn wired by
//! hand must do (the selection remembered, export names mapped back, calls checked against the
//! turn's selection, use remembered and learned).

use capstore::agent::Chat;
use capstore::context::{Channel, ContextBuilder, Reason, SelectionPolicy};
use capstore::exec::{register, register_hook};
use capstore::{
    Error, ExecError, Executor, Hook, HookEvent, HookOutcome, Store, Tool, USAGE,
    UnselectedCallPolicy,
};
use serde_json::json;

fn store() -> Store {
    let store = Store::new();
    store
        .update(|tx| {
            register(
                tx,
                Tool::new("login", "Log in to the mail service")
                    .with_source("mail")
                    .with_handler(|_| async { Ok(json!("logged in")) }),
            )?;
            register(
                tx,
                Tool::new("send_message", "Send a mail message to a contact")
                    .with_source("mail")
                    .with_handler(
                        |args| async move { Ok(json!(format!("sent to {}", args["to"]))) },
                    ),
            )?;
            register(
                tx,
                Tool::new("delete_message", "Delete a mail message")
                    .with_source("mail")
                    .with_handler(|_| async { Ok(json!("deleted")) }),
            )?;
            register(
                tx,
                Tool::new("search", "Search the mail messages")
                    .with_source("mail")
                    .with_handler(|_| async { Ok(json!("2 messages")) }),
            )?;
            register(
                tx,
                Tool::new("search", "Search the weather stations")
                    .with_source("weather")
                    .with_handler(|_| async { Ok(json!("3 stations")) }),
            )?;
            register(
                tx,
                Tool::new("get_forecast", "Weather forecast for a city")
                    .with_source("weather")
                    .with_handler(|_| async { Ok(json!("rain")) }),
            )?;
            register_hook(
                tx,
                Hook::new("no-deletes", HookEvent::PreToolUse, "mail/delete_*"),
                |_| async { Ok(HookOutcome::deny("deleting mail is not allowed")) },
            )?;
            Ok(())
        })
        .expect("registers");
    store
}

#[tokio::test]
async fn a_turn_sends_export_names_and_a_call_by_that_name_runs_the_tool() {
    let mut chat = Chat::new(store());
    let turn = chat
        .turn("search the mail messages from Ana")
        .expect("selects");
    assert_eq!(turn.selection.tools[0].key.as_ref(), "mail/search");
    assert_eq!(turn.tools.len(), turn.selection.tools.len());
    // Two tools are named `search`: the model sees a provider-safe name, not the qualified key.
    let name = turn.tools[0]["function"]["name"].as_str().expect("name");
    assert_eq!(name, "mail__search");
    let out = chat.call(name, json!({"from": "Ana"})).await.expect("runs");
    assert_eq!(out.tool, "mail/search");
    assert_eq!(out.output, json!("2 messages"));
    assert_eq!(out.call_id, "turn1-call1");
    // Remembered: the next turn reads it as a recent tool and the last turn's list.
    let next = chat.conversation().clone().next_turn("and from Bob?");
    assert_eq!(next.recent_tools, ["mail/search"]);
    assert_eq!(next.history, ["search the mail messages from Ana"]);
    assert!(next.previous.iter().any(|p| p.key == "mail/search"));
    // A qualified name is taken as it is.
    let out = chat
        .call("weather/search", json!({}))
        .await
        .expect("runs by its key");
    assert_eq!(out.output, json!("3 stations"));
}

#[tokio::test]
async fn the_next_turn_knows_what_was_used_and_says_why() {
    let mut chat = Chat::new(store());
    chat.turn("send a message to Ana").expect("selects");
    chat.call("send_message", json!({"to": "Ana"}))
        .await
        .expect("runs");
    let turn = chat.turn("thanks").expect("selects");
    // The follow-up names no tool: the conversation brings the one just used, and says so.
    let sent = turn
        .selection
        .get("mail/send_message")
        .expect("brought by the conversation");
    assert_eq!(sent.channel, Channel::Conversation, "{:?}", sent.reasons);
    assert!(
        sent.reasons.contains(&Reason::RecentlyUsed),
        "{:?}",
        sent.reasons
    );
}

#[tokio::test]
async fn a_denying_hook_is_an_error_and_the_call_is_not_remembered() {
    let mut chat = Chat::new(store());
    chat.turn("delete the message from Bob").expect("selects");
    let err = chat
        .call("delete_message", json!({}))
        .await
        .expect_err("denied");
    match &err {
        Error::Exec(ExecError::HookDenied { reason, .. }) => {
            assert_eq!(reason, "deleting mail is not allowed")
        }
        other => panic!("expected a denial, got {other:?}"),
    }
    assert!(
        err.to_string().contains("deleting mail is not allowed"),
        "{err}"
    );
    assert!(
        chat.conversation()
            .clone()
            .next_turn("x")
            .recent_tools
            .is_empty()
    );
}

#[tokio::test]
async fn a_call_outside_the_turns_selection_follows_the_executors_policy() {
    let store = store();
    let policy = SelectionPolicy {
        max_tools: 1,
        ..SelectionPolicy::default()
    };
    let mut chat = Chat::new(store.clone())
        .with_builder(ContextBuilder::with_policy(policy).expect("valid"))
        .with_executor(Executor::new(store).with_policy(UnselectedCallPolicy::Deny));
    let turn = chat.turn("weather forecast in Oslo").expect("selects");
    assert_eq!(
        turn.selection.keys().collect::<Vec<_>>(),
        ["weather/get_forecast"]
    );
    let err = chat
        .call("login", json!({}))
        .await
        .expect_err("not selected");
    assert!(
        matches!(err, Error::Exec(ExecError::NotSelected { .. })),
        "{err:?}"
    );
    // A name no tool has is the executor's error, typed.
    let err = chat
        .call("no_such_tool", json!({}))
        .await
        .expect_err("unknown");
    assert!(
        matches!(err, Error::Exec(ExecError::UnknownTool { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn finished_turns_are_learned_and_a_later_turn_brings_the_prerequisite() {
    let store = store();
    let mut chat = Chat::new(store.clone());
    for _ in 0..3 {
        chat.turn("send a message to Ana").expect("selects");
        chat.call("login", json!({})).await.expect("runs");
        chat.call("send_message", json!({"to": "Ana"}))
            .await
            .expect("runs");
    }
    chat.finish().expect("learns");
    chat.finish().expect("a second finish counts nothing");
    let snap = store.snapshot();
    let usage = snap
        .get(&USAGE, "mail/send_message")
        .expect("reads")
        .expect("learned");
    assert_eq!(usage.turns, 3);

    // A fresh conversation: the message names send_message only; login comes as its
    // companion, and the reason says so.
    let mut chat = Chat::new(store).with_learning(false);
    let turn = chat.turn("send a message to Bob").expect("selects");
    let login = turn.selection.get("mail/login").expect("brought along");
    assert!(
        matches!(login.reasons[0], Reason::Companion { .. }),
        "{:?}",
        login.reasons
    );
}

#[tokio::test]
async fn without_learning_the_store_keeps_no_usage() {
    let store = store();
    let mut chat = Chat::new(store.clone()).with_learning(false);
    chat.turn("send a message to Ana").expect("selects");
    chat.call("send_message", json!({"to": "Ana"}))
        .await
        .expect("runs");
    chat.finish().expect("finishes");
    assert_eq!(store.snapshot().count(&USAGE).expect("reads"), 0);
}
