//! A turn's channels over the bundled catalog: a follow-up that plainly asks for something new
//! gets its tools from the message alone, whatever its history says; the explanation names the
//! channel of every tool.

use capstore::catalog::Catalog;
use capstore::context::{Channel, ContextBuilder, Conversation, Selection, SelectionPolicy};
use capstore::{Snapshot, Store};

fn bundled() -> (Store, SelectionPolicy) {
    let catalog = Catalog::bundled().expect("bundled catalog");
    let store = Store::new();
    catalog.load_into(&store).expect("load");
    (store, catalog.policy())
}

/// Runs `messages` as one conversation (the model calling the tools named after each), and
/// returns the last turn's selection.
fn converse(snap: &Snapshot, builder: &ContextBuilder, messages: &[(&str, &[&str])]) -> Selection {
    let mut conversation = Conversation::new();
    let mut last = None;
    for (message, used) in messages {
        let turn = conversation.next_turn(*message);
        let selection = builder.select(snap, &turn).expect("select");
        conversation.record_selection(&selection);
        for tool in *used {
            conversation.record_tool_use(*tool);
        }
        last = Some(selection);
    }
    last.expect("a turn")
}

fn channel_of(selection: &Selection, key: &str) -> Option<Channel> {
    selection
        .tools
        .iter()
        .find(|t| &*t.key == key)
        .map(|t| t.channel)
}

const TRIP: [(&str, &[&str]); 4] = [
    (
        "I need to fly from Berlin to Lisbon next Friday, back the Monday after",
        &["travel/search_flights"],
    ),
    (
        "ok book the TAP one at 18:40, just me",
        &["travel/book_flight"],
    ),
    (
        "and somewhere to stay near Alfama for those nights",
        &["travel/search_hotels"],
    ),
    ("perfect, book that one", &["travel/book_hotel"]),
];

#[test]
fn the_weather_after_a_trip_comes_from_the_message() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let mut messages = TRIP.to_vec();
    messages.push(("what's the weather going to be like there?", &[]));
    let with = ContextBuilder::with_policy(policy.clone()).expect("policy");
    let selection = converse(&snap, &with, &messages);
    assert_eq!(
        channel_of(&selection, "weather/get_forecast"),
        Some(Channel::Message),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
    // The travel tools of the turns before stay, carried or brought by the history.
    assert!(selection.contains("travel/book_hotel"));
    // Without the message channel the history outvotes the message (issue 38's case).
    let mut off = policy;
    off.message.max_tools = 0;
    let without = ContextBuilder::with_policy(off).expect("policy");
    let selection = converse(&snap, &without, &messages);
    assert!(!selection.contains("weather/get_forecast"));
}

#[test]
fn commit_that_after_refactoring_comes_from_the_message() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let builder = ContextBuilder::with_policy(policy).expect("policy");
    let selection = converse(
        &snap,
        &builder,
        &[
            (
                "open src/parser.rs and show me the tokenize function",
                &["fs/read_file"],
            ),
            (
                "rename tokenize to lex everywhere in that file",
                &["code/edit_file"],
            ),
            ("ok, commit that with a short message", &[]),
        ],
    );
    assert_eq!(
        channel_of(&selection, "git/git_commit"),
        Some(Channel::Message),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
}

#[test]
fn every_tool_says_which_channel_brought_it() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let pinned = policy.pinned_tools.clone();
    let builder = ContextBuilder::with_policy(policy).expect("policy");
    let mut conversation = Conversation::new();
    // A first turn has one query, the message: its retrieved tools are the message's.
    let first = builder
        .select(&snap, &conversation.next_turn(TRIP[0].0))
        .expect("select");
    conversation.record_selection(&first);
    for tool in &first.tools {
        let expected = if pinned.iter().any(|p| **p == *tool.key) {
            Channel::Pinned
        } else {
            Channel::Message
        };
        assert_eq!(tool.channel, expected, "{}", tool.key);
    }
    // A thank-you carries no evidence: nothing enters on the message alone, the list is kept.
    let thanks = builder
        .select(&snap, &conversation.next_turn("thanks!"))
        .expect("select");
    assert!(thanks.tools.iter().all(|t| t.channel != Channel::Message));
    let kept: Vec<&str> = thanks
        .tools
        .iter()
        .filter(|t| t.channel == (Channel::Kept { idle_turns: 1 }))
        .map(|t| &*t.key)
        .collect();
    assert!(kept.contains(&"travel/search_flights"), "{kept:?}");
    assert_eq!(
        Channel::Kept { idle_turns: 1 }.to_string(),
        "kept from the last turn"
    );
}
