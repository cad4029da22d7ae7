//! The tool list across turns: carried in place, new tools appended, a re-pack by staleness
//! when the tools that may make room outgrow the limits, the conversation's tail filling the
//! room left, and a needed tool never dropped for a carried one.

use capstore::context::{
    Channel, ContextBuilder, Conversation, DropReason, MessagePolicy, PreviousTool, Reason,
    Selection, SelectionPolicy, Turn,
};
use capstore::{Store, TOOLS, Tool};
use proptest::prelude::*;

/// Twelve tools, one topic word each, so that a message names exactly the tools it needs.
const TOPICS: [&str; 12] = [
    "weather",
    "flight",
    "hotel",
    "invoice",
    "calendar",
    "email",
    "github",
    "database",
    "cache",
    "pods",
    "payment",
    "translate",
];

fn store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for topic in TOPICS {
                let tool = Tool::new(
                    format!("{topic}_tool"),
                    format!("Works with {topic} things"),
                )
                .with_source(topic)
                .with_tags([if topic == "payment" { "money" } else { "plain" }]);
                tx.insert(&TOOLS, tool)?;
            }
            Ok::<(), capstore::StoreError>(())
        })
        .expect("tools");
    store
}

fn key(topic: &str) -> String {
    format!("{topic}/{topic}_tool")
}

/// The policy of these tests: the message alone makes the query (no earlier messages, no
/// names of tools used), so that a turn's own tools are exactly the ones its message names.
fn policy(max_tools: usize, max_turn_tools: usize) -> SelectionPolicy {
    SelectionPolicy {
        max_tools,
        max_turn_tools,
        history_turns: 0,
        recent_tool_weight: 0.0,
        keep_recently_used: false,
        ..SelectionPolicy::default()
    }
}

fn builder(max_tools: usize, max_turn_tools: usize) -> ContextBuilder {
    ContextBuilder::with_policy(policy(max_tools, max_turn_tools)).expect("policy")
}

fn keys(selection: &Selection) -> Vec<String> {
    selection.keys().map(str::to_string).collect()
}

fn stale(selection: &Selection) -> Vec<(String, u32)> {
    selection
        .dropped
        .iter()
        .filter_map(|d| match d.reason {
            DropReason::Stale { idle_turns } => Some((d.key.to_string(), idle_turns)),
            _ => None,
        })
        .collect()
}

#[test]
fn new_tools_are_appended_and_needed_ones_keep_their_place() {
    let store = store();
    let turn = Turn::new("weather and pods please").with_previous([
        "flight/flight_tool",
        "pods/pods_tool",
        "hotel/hotel_tool",
    ]);
    let s = builder(8, 4)
        .select(&store.snapshot(), &turn)
        .expect("select");
    assert_eq!(
        keys(&s),
        [key("flight"), key("pods"), key("hotel"), key("weather")]
    );
    // The needed tool in its old place has this turn's reasons; the others are carried.
    let pods = &s.tools[1];
    assert!(!pods.carried() && matches!(pods.reasons[0], Reason::Retrieved { .. }));
    assert!(s.tools[0].carried() && s.tools[0].reasons[..] == [Reason::KeptFromLastTurn]);
    // Ranks: the turn's own tools first, then the carried ones in list order.
    let ranked: Vec<&str> = s.ranked().map(|t| &*t.key).collect();
    assert_eq!(ranked[2..], ["flight/flight_tool", "hotel/hotel_tool"]);
    assert!(stale(&s).is_empty());
}

#[test]
fn a_full_list_evicts_the_stalest_carried_tools_never_a_needed_one() {
    let store = store();
    // max 5, a turn's own at most 2: a re-pack leaves 3.
    let previous = [
        PreviousTool::new(key("flight"), 0),
        PreviousTool::new(key("hotel"), 4),
        PreviousTool::new(key("invoice"), 1),
        PreviousTool::new(key("calendar"), 4),
        PreviousTool::new(key("email"), 2),
    ];
    let turn = Turn::new("the github and database ones").with_previous(previous.clone());
    let s = builder(5, 2)
        .select(&store.snapshot(), &turn)
        .expect("select");
    // Five carried + two new = 7 > 5: evict until 3 remain. Stalest first (idle 5, 5, then
    // 3: the counts include this turn); among the equally stale, the later one first.
    assert_eq!(
        stale(&s),
        [
            (key("calendar"), 5),
            (key("hotel"), 5),
            (key("email"), 3),
            (key("invoice"), 2)
        ]
    );
    // The new tools come by rank (equal scores: by key).
    assert_eq!(keys(&s), [key("flight"), key("database"), key("github")]);
    // A needed tool is never evicted, even when it was in the list and stale.
    let previous_with_needed = [
        PreviousTool::new(key("github"), 9),
        PreviousTool::new(key("hotel"), 0),
        PreviousTool::new(key("invoice"), 0),
        PreviousTool::new(key("calendar"), 0),
        PreviousTool::new(key("email"), 0),
    ];
    let turn = Turn::new("github and database").with_previous(previous_with_needed);
    let s = builder(5, 2)
        .select(&store.snapshot(), &turn)
        .expect("select");
    assert!(
        s.contains(&key("github")) && s.contains(&key("database")),
        "{:?}",
        keys(&s)
    );
    assert!(s.tools.len() <= 3, "{:?}", keys(&s));
}

#[test]
fn after_a_re_pack_the_next_turns_append_again() {
    let store = store();
    let snap = store.snapshot();
    let builder = builder(6, 2);
    let mut conversation = Conversation::new();
    let mut lists = Vec::new();
    for message in [
        "weather", "flight", "hotel", "invoice", "calendar", "email", "github",
    ] {
        let turn = conversation.next_turn(format!("the {message} one"));
        let s = builder.select(&snap, &turn).expect("select");
        conversation.record_selection(&s);
        conversation.record_tool_use(key(message));
        lists.push(keys(&s));
    }
    let prefix_stable: Vec<bool> = lists.windows(2).map(|w| w[1].starts_with(&w[0])).collect();
    // Every message brings one new tool: the list grows to 6, is re-packed once to 4 (room
    // for a whole turn's 2), then grows again.
    assert_eq!(
        lists.iter().map(Vec::len).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6, 4]
    );
    assert_eq!(prefix_stable, [true, true, true, true, true, false]);
    // The re-pack evicted the oldest (weather, flight, hotel), not the latest.
    assert_eq!(
        lists[6],
        [key("invoice"), key("calendar"), key("email"), key("github")]
    );
}

#[test]
fn carried_tools_leave_when_removed_or_filtered_out() {
    let store = store();
    store
        .write(|tx| tx.delete(&TOOLS, &key("hotel")))
        .expect("delete");
    let policy = SelectionPolicy {
        exclude_tags: vec!["money".into()],
        ..SelectionPolicy::default()
    };
    let turn = Turn::new("thanks").with_previous([key("hotel"), key("payment"), key("cache")]);
    let s = ContextBuilder::with_policy(policy)
        .expect("policy")
        .select(&store.snapshot(), &turn)
        .expect("select");
    assert_eq!(keys(&s), [key("cache")]);
    assert!(s.dropped.iter().any(|d| *d.key == *key("payment")
        && d.reason
            == DropReason::ExcludedTag {
                tag: "money".into()
            }));
}

#[test]
fn the_token_budget_bounds_the_carried_list() {
    let store = store();
    let snap = store.snapshot();
    let one = ContextBuilder::new()
        .select(&snap, &Turn::new("weather"))
        .expect("select")
        .tools[0]
        .tokens;
    let policy = SelectionPolicy {
        token_budget: Some(one * 4),
        max_turn_tools: 2,
        ..SelectionPolicy::default()
    };
    let previous: Vec<String> = ["flight", "hotel", "invoice", "calendar"].map(key).to_vec();
    let turn = Turn::new("the github one").with_previous(previous);
    let s = ContextBuilder::with_policy(policy)
        .expect("policy")
        .select(&snap, &turn)
        .expect("select");
    assert!(s.tokens <= one * 4, "{} > {}", s.tokens, one * 4);
    assert!(s.contains(&key("github")));
    assert!(!stale(&s).is_empty());
}

#[test]
fn a_conversation_counts_how_long_each_tool_went_unneeded() {
    let store = store();
    let snap = store.snapshot();
    let builder = builder(10, 3);
    let mut conversation = Conversation::new();
    let idle = |turn: &Turn, topic: &str| {
        turn.previous
            .iter()
            .find(|p| p.key == key(topic))
            .map(|p| p.idle_turns)
    };
    let turn = conversation.next_turn("weather and flight");
    conversation.record_selection(&builder.select(&snap, &turn).expect("select"));
    let turn = conversation.next_turn("hotel");
    assert_eq!(
        (idle(&turn, "weather"), idle(&turn, "flight")),
        (Some(0), Some(0))
    );
    conversation.record_selection(&builder.select(&snap, &turn).expect("select"));
    conversation.record_tool_use(key("flight"));
    let turn = conversation.next_turn("ok");
    // Weather went a turn unneeded; flight was called; hotel was needed.
    assert_eq!(
        (
            idle(&turn, "weather"),
            idle(&turn, "flight"),
            idle(&turn, "hotel")
        ),
        (Some(1), Some(0), Some(0))
    );
    conversation.record_selection(&builder.select(&snap, &turn).expect("select"));
    let turn = conversation.next_turn("ok");
    assert_eq!(idle(&turn, "weather"), Some(2));
}

#[test]
fn without_keep_previous_the_list_is_the_turns_own() {
    let store = store();
    let policy = SelectionPolicy {
        keep_previous: false,
        ..SelectionPolicy::default()
    };
    let turn = Turn::new("weather").with_previous([key("flight")]);
    let s = ContextBuilder::with_policy(policy)
        .expect("policy")
        .select(&store.snapshot(), &turn)
        .expect("select");
    assert_eq!(keys(&s), [key("weather")]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Over random conversations: every tool a turn selects for itself is sent, but for the
    /// conversation's tail when the list is full (`ListFull`); the list never exceeds
    /// `max_tools`; a list that is not the last one plus appended tools says why (stale
    /// evictions); selection is deterministic.
    #[test]
    fn the_list_keeps_its_rules(
        turns in prop::collection::vec(prop::collection::vec(0..TOPICS.len(), 0..4), 1..12),
        max_tools in 2usize..8,
        max_turn_tools in 1usize..5,
        repack_for_conversation in 0usize..4,
        message_tools in 0usize..5,
    ) {
        let store = store();
        let snap = store.snapshot();
        // The same policy with earlier messages in the query, and without the list.
        let with_history = SelectionPolicy {
            history_turns: 2,
            recent_tool_weight: 0.5,
            keep_recently_used: true,
            repack_for_conversation,
            message: MessagePolicy { max_tools: message_tools, ..MessagePolicy::default() },
            ..policy(max_tools, max_turn_tools)
        };
        let carrying = ContextBuilder::with_policy(with_history.clone()).expect("policy");
        let alone = ContextBuilder::with_policy(SelectionPolicy { keep_previous: false, ..with_history })
            .expect("policy");
        let mut conversation = Conversation::new();
        let mut last: Vec<String> = Vec::new();
        for topics in turns {
            let message: Vec<&str> = topics.iter().map(|&t| TOPICS[t]).collect();
            let turn = conversation.next_turn(message.join(" and "));
            let s = carrying.select(&snap, &turn).expect("select");
            prop_assert_eq!(&s, &carrying.select(&snap, &turn).expect("select"));
            let own = alone.select(&snap, &turn).expect("select");
            // The tools the message names (each scores the same) enter whatever the history
            // says: the message channel's share, within the turn's limit and the list's.
            let named: std::collections::BTreeSet<String> =
                topics.iter().map(|&t| key(TOPICS[t])).collect();
            let own_keys = keys(&own);
            let entered = named.iter().filter(|k| own_keys.contains(k)).count();
            let share = named.len().min(message_tools);
            prop_assert!(
                entered >= share.min(max_turn_tools).min(max_tools),
                "{:?} of {:?}",
                own_keys,
                named
            );
            let list = keys(&s);
            for tool in &own.tools {
                if list.iter().any(|k| **k == *tool.key) {
                    continue;
                }
                let full = s.dropped.iter().any(|d| {
                    d.key == tool.key && d.reason == DropReason::ListFull { max_tools }
                });
                prop_assert!(
                    full && tool.channel == Channel::Conversation && list.len() == max_tools,
                    "{} missing from {:?}",
                    tool.key,
                    list
                );
            }
            prop_assert!(list.len() <= max_tools, "{:?}", list);
            if !list.starts_with(&last) {
                let evicted = stale(&s);
                prop_assert!(!evicted.is_empty(), "{:?} -> {:?}", last, list);
                for (key, _) in evicted {
                    prop_assert!(last.contains(&key) && !list.contains(&key));
                }
            }
            conversation.record_selection(&s);
            last = list;
        }
    }
}

#[test]
fn a_tool_listed_twice_is_carried_once_in_its_first_place() {
    let store = store();
    let turn = Turn::new("weather").with_previous([
        key("cache"),
        key("weather"),
        key("cache"),
        key("weather"),
        key("pods"),
    ]);
    let s = builder(10, 3)
        .select(&store.snapshot(), &turn)
        .expect("select");
    assert_eq!(keys(&s), [key("cache"), key("weather"), key("pods")]);
}

/// A follow-up's history-read search hits past `repack_for_conversation` only fill the room a
/// full list has left: the list stays a prefix-stable extension, and they are reported as
/// `ListFull`. The tools that may make room (and those the model found), once they do not fit,
/// re-pack the list with the whole turn's tools.
#[test]
fn the_conversations_tail_fills_room_and_only_its_best_may_re_pack() {
    let store = store();
    let snap = store.snapshot();
    // History read (so the retrieved tools are the conversation channel's), the message
    // channel off: the turn's own tools are the conversation's three.
    let policy = |repack_for_conversation| SelectionPolicy {
        history_turns: 2,
        message: MessagePolicy {
            max_tools: 0,
            ..MessagePolicy::default()
        },
        repack_for_conversation,
        ..policy(5, 3)
    };
    let previous = ["flight", "hotel", "invoice", "calendar"].map(|t| PreviousTool::new(key(t), 0));
    let turn = Turn::new("the weather pods cache")
        .with_history(["anything else?"])
        .with_previous(previous);
    let select = |repack| {
        ContextBuilder::with_policy(policy(repack))
            .expect("policy")
            .select(&snap, &turn)
            .expect("select")
    };

    // One may make room: the best (equal scores: by key) fits in the list's last place; the
    // others wait for room.
    let s = select(1);
    assert_eq!(
        keys(&s),
        [
            key("flight"),
            key("hotel"),
            key("invoice"),
            key("calendar"),
            key("cache")
        ]
    );
    assert_eq!(s.tools[4].channel, Channel::Conversation);
    let full: Vec<&str> = s
        .dropped
        .iter()
        .filter(|d| d.reason == DropReason::ListFull { max_tools: 5 })
        .map(|d| &*d.key)
        .collect();
    assert_eq!(full, [key("pods"), key("weather")]);
    assert!(stale(&s).is_empty());

    // Two may make room and do not fit: a re-pack, after which the whole turn's tools are in.
    for repack in [2, usize::MAX] {
        let s = select(repack);
        assert_eq!(keys(&s), [key("cache"), key("pods"), key("weather")]);
        assert_eq!(stale(&s).len(), 4);
        assert!(
            !s.dropped
                .iter()
                .any(|d| matches!(d.reason, DropReason::ListFull { .. }))
        );
    }

    // None may: a list already full stays as it was.
    let previous =
        ["flight", "hotel", "invoice", "calendar", "email"].map(|t| PreviousTool::new(key(t), 0));
    let full = Turn::new("the weather pods cache")
        .with_history(["anything else?"])
        .with_previous(previous);
    let s = ContextBuilder::with_policy(policy(0))
        .expect("policy")
        .select(&snap, &full)
        .expect("select");
    assert_eq!(
        keys(&s),
        ["flight", "hotel", "invoice", "calendar", "email"].map(key)
    );
    assert_eq!(
        s.dropped
            .iter()
            .filter(|d| matches!(d.reason, DropReason::ListFull { .. }))
            .count(),
        3
    );
    assert!(stale(&s).is_empty());

    // A tool the model found with `search_tools` is asked for, not a ranking's tail: it makes
    // room even so.
    let previous =
        ["flight", "hotel", "invoice", "calendar", "email"].map(|t| PreviousTool::new(key(t), 0));
    let found = Turn::new("the weather pods cache")
        .with_history(["anything else?"])
        .with_previous(previous)
        .with_discovered([key("translate")]);
    let s = ContextBuilder::with_policy(policy(0))
        .expect("policy")
        .select(&snap, &found)
        .expect("select");
    assert!(s.contains(&key("translate")), "{:?}", keys(&s));
    assert!(!stale(&s).is_empty());
}

/// When the token budget, not `max_tools`, stops the conversation's tail from filling, the
/// dropped tools say so (`TokenBudget`, with the tokens each needs and those left), rather than
/// blaming a full list.
#[test]
fn a_fill_stopped_by_the_token_budget_says_so() {
    let store = store();
    let snap = store.snapshot();
    let previous = ["flight", "hotel", "invoice"].map(|t| PreviousTool::new(key(t), 0));
    let turn = Turn::new("the weather pods cache")
        .with_history(["anything else?"])
        .with_previous(previous);
    // History read, the message channel off, one conversation hit may make room, and room for
    // 20 tools: only a budget can stop the fill.
    let policy = |token_budget| SelectionPolicy {
        history_turns: 2,
        message: MessagePolicy {
            max_tools: 0,
            ..MessagePolicy::default()
        },
        repack_for_conversation: 1,
        token_budget,
        ..policy(20, 3)
    };
    let select = |budget| {
        ContextBuilder::with_policy(policy(budget))
            .expect("policy")
            .select(&snap, &turn)
            .expect("select")
    };

    let unbounded = select(None);
    assert_eq!(
        keys(&unbounded),
        ["flight", "hotel", "invoice", "cache", "pods", "weather"].map(key)
    );
    let tokens = |n: usize| unbounded.tools[..n].iter().map(|t| t.tokens).sum::<usize>();
    // A budget that holds the carried three and the best hit, one token short of the fifth.
    let budget = tokens(5) - 1;
    let s = select(Some(budget));
    assert_eq!(keys(&s), ["flight", "hotel", "invoice", "cache"].map(key));
    let reasons: Vec<(&str, &DropReason)> = s
        .dropped
        .iter()
        .filter(|d| !matches!(d.reason, DropReason::BelowRelativeScore { .. }))
        .map(|d| (&*d.key, &d.reason))
        .collect();
    let left = budget - tokens(4);
    assert_eq!(
        reasons,
        [
            (
                key("pods").as_str(),
                &DropReason::TokenBudget {
                    needed: unbounded.tools[4].tokens,
                    remaining: left,
                }
            ),
            (
                key("weather").as_str(),
                &DropReason::TokenBudget {
                    needed: unbounded.tools[5].tokens,
                    remaining: left,
                }
            ),
        ]
    );
}
