//! A turn's channels over the bundled catalog: a follow-up that plainly asks for something new
//! gets its tools from the message alone, whatever its history says; the explanation names the
//! channel of every tool.

use capstore::catalog::Catalog;
use capstore::context::{
    Channel, ContextBuilder, Conversation, HintPolicy, PreviousTool, Reason, Selection,
    SelectionPolicy, Turn,
};
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
    // (BM25 ranks the current weather and the alerts above the forecast for "going to be
    // like": the message names weather, not a time.)
    let selection = converse(&snap, &with, &messages);
    let keys: Vec<&str> = selection.keys().collect();
    // The message's own best (at least two, at most its share) are weather tools; the
    // history alone brings none.
    let weather: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| k.starts_with("weather/"))
        .collect();
    assert!(
        (2..=policy.message.max_tools).contains(&weather.len()),
        "{keys:?}"
    );
    for key in &weather {
        assert_eq!(channel_of(&selection, key), Some(Channel::Message), "{key}");
    }
    // The travel tools of the turns before stay, carried or brought by the history.
    assert!(selection.contains("travel/book_hotel"));
    // Without the message channel the history outvotes the message (issue 38's case).
    let mut off = policy;
    off.message.max_tools = 0;
    let without = ContextBuilder::with_policy(off).expect("policy");
    let selection = converse(&snap, &without, &messages);
    let keys: Vec<&str> = selection.keys().collect();
    assert!(!keys.iter().any(|k| k.starts_with("weather/")), "{keys:?}");
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
    // A first turn has one query, the message: its retrieved tools are the message's, and
    // those a matched skill brought (its strongest reason) the skill's.
    let first = builder
        .select(&snap, &conversation.next_turn(TRIP[0].0))
        .expect("select");
    conversation.record_selection(&first);
    for tool in &first.tools {
        let expected = if pinned.iter().any(|p| **p == *tool.key) {
            Channel::Pinned
        } else if matches!(
            tool.reasons.first(),
            Some(Reason::Skill { .. } | Reason::DependencyOf { .. })
        ) {
            Channel::Skill
        } else {
            Channel::Message
        };
        assert_eq!(tool.channel, expected, "{}", tool.key);
    }
    assert!(
        first.tools.iter().any(|t| t.channel == Channel::Skill),
        "a matched skill brings a tool of its own on this trip: {:?}",
        first
            .tools
            .iter()
            .map(|t| (&t.key, t.channel))
            .collect::<Vec<_>>()
    );
    // A thank-you matches no tool: nothing enters on the message alone, and the list is
    // carried on in place, each tool labelled by the channel that keeps it.
    let thanks = builder
        .select(&snap, &conversation.next_turn("thanks!"))
        .expect("select");
    assert!(thanks.tools.iter().all(|t| t.channel != Channel::Message));
    assert!(
        thanks
            .keys()
            .collect::<Vec<_>>()
            .starts_with(&first.keys().collect::<Vec<_>>())
    );
    // A tool only carried says how long ago a turn last needed it.
    let carried = builder
        .select(
            &snap,
            &Turn::new("thanks!").with_previous([PreviousTool::new("travel/search_flights", 2)]),
        )
        .expect("select");
    assert_eq!(
        channel_of(&carried, "travel/search_flights"),
        Some(Channel::Kept { idle_turns: 3 })
    );
    assert_eq!(
        Channel::Kept { idle_turns: 3 }.to_string(),
        "kept from 3 turns ago"
    );
    assert_eq!(
        Channel::Kept { idle_turns: 1 }.to_string(),
        "kept from the last turn"
    );
}

/// An incident, then "tell #status we're recovering": no word of it is in the Slack tool's
/// text ("Post a message to a Slack channel…"); its hints (`#status` a channel, "tell" send a
/// message) are, and bring the tool in. Without hints, the history's monitoring and k8s tools
/// keep it out.
#[test]
fn tell_a_channel_mid_incident_comes_from_the_hints() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let messages: [(&str, &[&str]); 8] = [
        ("site's throwing 502s, is it just me?", &[]),
        ("what alerts are firing", &["monitoring/list_alerts"]),
        ("check the ingress-nginx pods", &["k8s/list_pods"]),
        ("describe the web ingress", &["k8s/describe_resource"]),
        ("logs from the web pods, last 15 min", &["k8s/get_logs"]),
        ("bounce the web deployment", &["k8s/rollout_restart"]),
        ("is the 5xx rate back down?", &["monitoring/query"]),
        ("tell #status we're recovering", &[]),
    ];
    let with = ContextBuilder::with_policy(policy.clone()).expect("policy");
    let selection = converse(&snap, &with, &messages);
    assert_eq!(
        channel_of(&selection, "slack/send_message"),
        Some(Channel::Message),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
    // The hinted terms are in the turn's query, beside the message's own.
    let query: Vec<&str> = selection.query.iter().map(|(t, _)| t).collect();
    for term in ["channel", "send", "status"] {
        assert!(query.contains(&term), "{term} in {query:?}");
    }
    let off = SelectionPolicy {
        hints: HintPolicy::none(),
        ..policy
    };
    let without = ContextBuilder::with_policy(off).expect("policy");
    let selection = converse(&snap, &without, &messages);
    assert!(
        !selection.contains("slack/send_message"),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
}

/// A message of several asks (here two sentences): each ask's best tool is sent, in the
/// message channel's share of the list (or in the place of the ranking's last ones, when the
/// list is full), after the rest: it never outranks the whole message's best. A message of one
/// ask, or `per_ask` 0, selects as before.
#[test]
fn each_ask_of_a_message_brings_its_best_tool_at_the_tail() {
    use capstore::context::{MessagePolicy, Reason};
    use capstore::{TOOLS, Tool};
    let parts = [
        "engine", "tires", "brakes", "lights", "doors", "windows", "mirrors", "seats", "radio",
        "wipers", "horn", "battery",
    ];
    let store = Store::new();
    store
        .write(|tx| {
            for part in parts {
                let tool = Tool::new(format!("check_{part}"), format!("Check the car's {part}"));
                tx.insert(&TOOLS, tool)?;
            }
            let share = "Share a written update with a friend or a colleague, by message";
            tx.insert(&TOOLS, Tool::new("share_update", share))
        })
        .expect("tools");
    let snap = store.snapshot();
    let message = "Check the engine, tires, brakes, lights, doors, windows, mirrors, seats, radio, \
                   wipers, horn and battery. Then share it with Bob please.";
    let builder = ContextBuilder::new();
    let selection = builder.select(&snap, &Turn::new(message)).expect("select");
    let keys: Vec<&str> = selection.keys().collect();
    assert_eq!(keys.len(), 12, "{keys:?}");
    assert_eq!(keys.last(), Some(&"share_update"), "{keys:?}");
    let tweet = selection.tools.last().expect("a tool");
    assert!(
        matches!(&tweet.reasons[0], Reason::Ask { position: 2, ask, .. } if &**ask == "Then share it with Bob please."),
        "{:?}",
        tweet.reasons
    );
    assert!(
        tweet.reasons[0]
            .to_string()
            .ends_with("for 'Then share it with Bob please.'")
    );
    // Its first place is the whole message's best, as without sentences.
    let off = SelectionPolicy {
        message: MessagePolicy {
            per_ask: 0,
            ..MessagePolicy::default()
        },
        ..SelectionPolicy::default()
    };
    let without = ContextBuilder::with_policy(off)
        .expect("valid")
        .select(&snap, &Turn::new(message))
        .expect("select");
    assert!(!without.contains("share_update"));
    assert_eq!(without.tools[..], selection.tools[..11]);
    // A full list (a single message sent 11 tools at most): it takes the ranking's last place.
    let full = ContextBuilder::with_policy(SelectionPolicy::default().with_tool_limit(11))
        .expect("valid")
        .select(&snap, &Turn::new(message))
        .expect("select");
    assert_eq!(full.tools.len(), 11);
    assert_eq!(full.tools[..10], without.tools[..10]);
    assert_eq!(full.tools[10].key, tweet.key);
    // One ask ("and windows" names no request of its own): nothing changes.
    let one = "Check the engine, tires, brakes, lights, doors and windows, and share";
    let a = builder.select(&snap, &Turn::new(one)).expect("select");
    let b = ContextBuilder::with_policy(SelectionPolicy {
        message: MessagePolicy {
            per_ask: 0,
            ..MessagePolicy::default()
        },
        ..SelectionPolicy::default()
    })
    .expect("valid")
    .select(&snap, &Turn::new(one))
    .expect("select");
    assert_eq!(a.tools, b.tools);
}

/// Two asks name two things: when two asks rank one tool first ("run the linter" and "commit
/// it all as 'lint + fmt'" both rank the linter first, by "lint"), the ask that loses less by
/// going on to its next tool does, and the commit ask brings the commit.
#[test]
fn an_ask_whose_best_another_ask_has_brings_its_next() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let builder = ContextBuilder::with_policy(policy).expect("valid");
    let message =
        r#"run the linter with autofix, format everything, then commit it all as "lint + fmt""#;
    let selection = builder.select(&snap, &Turn::new(message)).expect("select");
    let commit = selection
        .tools
        .iter()
        .find(|t| &*t.key == "git/git_commit")
        .unwrap_or_else(|| panic!("{:?}", selection.keys().collect::<Vec<_>>()));
    assert!(
        matches!(&commit.reasons[0], Reason::Ask { ask, .. } if ask.starts_with("commit it all")),
        "{:?}",
        commit.reasons
    );
    assert_eq!(commit.channel, Channel::Message);
    // The commit ask alone ranks the linter first: it is the ask, not the search, that moved.
    let alone = builder
        .select(&snap, &Turn::new(r#"commit it all as "lint + fmt""#))
        .expect("select");
    let first = alone
        .tools
        .iter()
        .find(|t| !matches!(t.reasons[0], Reason::Pinned))
        .expect("a searched tool");
    assert_eq!(&*first.key, "code/run_linter");
}

/// An ask that states rather than asks brings no tool of its own: in "I need to cancel my
/// chicago trip, the conference got moved", "the conference got moved" is context, and its
/// best tool by "moved", `fs/move_path`, is not sent (it was, as that ask's best).
#[test]
fn a_statement_brings_no_tool_of_its_own() {
    let (store, policy) = bundled();
    let snap = store.snapshot();
    let builder = ContextBuilder::with_policy(policy).expect("valid");
    let message = "I need to cancel my chicago trip, the conference got moved";
    let selection = builder.select(&snap, &Turn::new(message)).expect("select");
    let keys: Vec<&str> = selection.keys().collect();
    assert!(!keys.contains(&"fs/move_path"), "{keys:?}");
    assert!(
        selection
            .tools
            .iter()
            .flat_map(|t| &t.reasons)
            .all(|r| !matches!(r, Reason::Ask { ask, .. } if ask.contains("conference"))),
        "{:?}",
        selection.tools
    );
    // Asked for, the move is the ask's best.
    let asked = builder
        .select(
            &snap,
            &Turn::new("I need to cancel my chicago trip, and move the conference files"),
        )
        .expect("select");
    assert!(
        asked.keys().any(|k| k == "fs/move_path"),
        "{:?}",
        asked.keys().collect::<Vec<_>>()
    );
}

/// Servers as units: in a request of several asks, a skill with no text of its own (an MCP
/// server) that the message's ranking needs comes whole when it fits the request's budget,
/// and the selection says why its list has the size it has; a message of one ask is sized by
/// the tool limits as before.
#[test]
fn a_request_of_several_asks_gets_the_servers_it_needs_whole() {
    use capstore::context::{ListSize, Reason};
    use capstore::skills::register_skill;
    use capstore::{Skill, Tool};
    let store = Store::new();
    store
        .write(|tx| {
            let weather = ["forecast", "alerts", "air_quality"].map(|t| {
                Tool::new(format!("get_{t}"), format!("Weather data: {t} for a city"))
                    .with_source("weather")
            });
            register_skill(tx, Skill::new("weather", ""), weather.to_vec())?;
            let parks = ["search_parks", "park_details", "park_events", "campgrounds"].map(|t| {
                Tool::new(t, format!("National parks: {t} by park code")).with_source("parks")
            });
            register_skill(tx, Skill::new("parks", ""), parks.to_vec())?;
            let maps = ["geocode", "directions"]
                .map(|t| Tool::new(t, format!("Maps: {t} between places")).with_source("maps"));
            register_skill(tx, Skill::new("maps", ""), maps.to_vec())
        })
        .expect("catalog");
    let snap = store.snapshot();
    let builder = ContextBuilder::new();
    let message = "Find national parks near Denver with campgrounds. Then check the weather \
                   forecast for the weekend there.";
    let selection = builder.select(&snap, &Turn::new(message)).expect("select");
    let keys: Vec<&str> = selection.keys().collect();
    for key in [
        "parks/search_parks",
        "parks/park_details",
        "parks/park_events",
        "parks/campgrounds",
    ] {
        assert!(keys.contains(&key), "{key} missing: {keys:?}");
    }
    assert!(keys.contains(&"weather/get_forecast"), "{keys:?}");
    assert!(!keys.contains(&"maps/directions"), "{keys:?}");
    let whole = selection.get("parks/park_events").expect("sent");
    assert!(
        selection
            .tools
            .iter()
            .any(|t| matches!(&t.reasons[0], Reason::Unit { skill, .. } if &**skill == "parks")),
        "{:?}",
        whole.reasons
    );
    assert!(
        matches!(
            selection.size,
            ListSize::Request {
                asks: 2,
                budget: 1200,
                ..
            }
        ),
        "{:?}",
        selection.size
    );
    assert!(
        selection
            .size
            .to_string()
            .starts_with("2 asks: up to 1200 tokens")
    );
    // One ask: sized by the tool limits, no unit.
    let one = builder
        .select(&snap, &Turn::new("what's the weather forecast for Denver"))
        .expect("select");
    assert!(
        matches!(one.size, ListSize::Tools { asks: 1, .. }),
        "{:?}",
        one.size
    );
    assert!(
        one.tools
            .iter()
            .all(|t| !matches!(t.reasons[0], Reason::Unit { .. }))
    );
}

/// A unit comes whole or not at all: a server too large for the request's budget gives its
/// place to the next one the request needs, and its own best tool still comes by the message's
/// ranking.
#[test]
fn a_server_too_large_for_the_budget_gives_its_place_and_keeps_its_best_tool() {
    use capstore::context::Reason;
    use capstore::skills::register_skill;
    use capstore::{Skill, Tool};
    let store = Store::new();
    let filler = "Returns the matching records with their identifiers, owners, timestamps, \
                  states, labels and links, paged, sorted as asked, with the total count. "
        .repeat(6);
    store
        .write(|tx| {
            // Twelve tools of ~250 tokens: more than the request's budget (600 an ask).
            let big = (0..12).map(|i| {
                let what = if i == 0 {
                    "search scientific papers by topic"
                } else {
                    "paper metadata"
                };
                Tool::new(format!("papers_{i}"), format!("Papers: {what}. {filler}"))
                    .with_source("papers")
            });
            register_skill(tx, Skill::new("papers", ""), big.collect::<Vec<Tool>>())?;
            let weather = ["forecast", "alerts"].map(|t| {
                Tool::new(format!("get_{t}"), format!("Weather {t} for a city"))
                    .with_source("weather")
            });
            register_skill(tx, Skill::new("weather", ""), weather.to_vec())
        })
        .expect("catalog");
    let selection = ContextBuilder::new()
        .select(
            &store.snapshot(),
            &Turn::new(
                "Search scientific papers on the topic of heat waves. Then get the weather \
                 forecast and alerts for Seville.",
            ),
        )
        .expect("select");
    let unit_of = |key: &str| {
        selection.get(key).and_then(|t| match &t.reasons[0] {
            Reason::Unit { skill, .. } => Some(skill.to_string()),
            _ => None,
        })
    };
    // The small server came whole, as a unit.
    assert_eq!(unit_of("weather/get_forecast").as_deref(), Some("weather"));
    assert_eq!(unit_of("weather/get_alerts").as_deref(), Some("weather"));
    // The large one did not fit: not sent as a unit, but its best tool is sent.
    assert!(
        selection.get("papers/papers_0").is_some(),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
    assert!(
        selection
            .tools
            .iter()
            .all(|t| !matches!(&t.reasons[0], Reason::Unit { skill, .. } if &**skill == "papers")),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
    let budget = match selection.size {
        capstore::context::ListSize::Request { budget, .. } => budget,
        other => panic!("sized by the request: {other:?}"),
    };
    assert!(
        selection.tokens <= budget,
        "{} > {budget}",
        selection.tokens
    );
}

/// The list follows the request: what the units and the turn's own tools leave of the
/// request's budget, the message's ranking fills, best first. A task whose one server is too
/// large to come whole gets as many of that server's best tools as the budget holds, not
/// only the turn's `max_turn_tools`.
#[test]
fn a_request_spends_its_budget_on_the_message_ranking_past_the_turns_own_tools() {
    use capstore::context::{Channel, DropReason, ListSize, Reason};
    use capstore::skills::register_skill;
    use capstore::{Skill, Tool};
    let store = Store::new();
    store
        .write(|tx| {
            // Forty tools of about 60 tokens: 2,400 in all, more than the budget of 1,800.
            let big = (0..40).map(|i| {
                Tool::new(
                    format!("matrix_op_{i:02}"),
                    format!(
                        "Matrix operation number {i}: computes a property of the given matrix \
                         (determinant, rank, eigenvalues, inverse or a decomposition) and \
                         returns it with the steps taken."
                    ),
                )
                .with_source("linalg")
            });
            register_skill(tx, Skill::new("linalg", ""), big.collect::<Vec<Tool>>())?;
            let other = ["forecast", "alerts"].map(|t| {
                Tool::new(format!("get_{t}"), format!("Weather {t} for a city"))
                    .with_source("weather")
            });
            register_skill(tx, Skill::new("weather", ""), other.to_vec())
        })
        .expect("catalog");
    let builder = ContextBuilder::new();
    let policy = builder.policy().clone();
    let message = "Take the matrix [[2,1],[1,3]]. Compute its determinant and its rank. \
                   Then find the eigenvalues of the matrix and its inverse.";
    let selection = builder
        .select(&store.snapshot(), &Turn::new(message))
        .expect("select");
    let budget = match selection.size {
        ListSize::Request {
            asks: 3, budget, ..
        } => budget,
        other => panic!("sized by a request of three asks: {other:?}"),
    };
    assert_eq!(budget, 3 * policy.request.tokens_per_ask);
    // The server did not come whole (it is larger than the budget) ...
    assert!(
        selection
            .tools
            .iter()
            .all(|t| !matches!(&t.reasons[0], Reason::Unit { .. })),
        "{:?}",
        selection.keys().collect::<Vec<_>>()
    );
    // ... but its best tools fill the budget, past the turn's own limit.
    let linalg = selection
        .keys()
        .filter(|k| k.starts_with("linalg/"))
        .count();
    assert!(
        linalg > policy.max_turn_tools,
        "{linalg} tools of linalg, the turn's own limit {}: {:?}",
        policy.max_turn_tools,
        selection.keys().collect::<Vec<_>>()
    );
    assert!(
        selection.tokens <= budget,
        "{} > {budget}",
        selection.tokens
    );
    let largest = selection.tools.iter().map(|t| t.tokens).max().unwrap_or(0);
    assert!(
        selection.tokens + largest > budget,
        "the budget is spent: {} of {budget}",
        selection.tokens
    );
    // Those past the turn's own tools say they came by the message's ranking.
    let last = selection.tools.last().expect("tools");
    assert_eq!(last.channel, Channel::Message);
    assert!(
        matches!(last.reasons[0], Reason::Retrieved { .. }),
        "{:?}",
        last.reasons
    );
    // What the budget could not hold is reported as the budget's.
    assert!(
        selection
            .dropped
            .iter()
            .filter(|d| d.key.starts_with("linalg/"))
            .all(|d| matches!(d.reason, DropReason::TokenBudget { .. })),
        "{:?}",
        selection.dropped
    );
}

/// A task's description (more asks than `message.max_asks`) is searched by its sentences, but
/// their best tools come after its units and within the caller's ceiling: three sentences'
/// bests (~250 tokens) went past a ceiling of 200, and left the server the task names no room.
#[test]
fn a_tasks_description_stays_within_the_callers_ceiling() {
    use capstore::context::{ListSize, Reason, RequestPolicy};
    use capstore::skills::register_skill;
    use capstore::{Skill, Tool};
    let topics = ["parks", "weather", "flights", "hotels", "recipes"];
    let store = Store::new();
    store
        .write(|tx| {
            for topic in topics {
                let tools = ["search", "details"].map(|verb| {
                    Tool::new(
                        format!("{verb}_{topic}"),
                        format!(
                            "{verb} {topic}: finds {topic} by name, place or date and returns \
                             each with its name, place, dates, prices, ratings, opening hours, \
                             contact details and a short summary written for travellers who \
                             plan a trip and compare {topic} before they choose."
                        ),
                    )
                    .with_source(topic)
                });
                register_skill(tx, Skill::new(topic, ""), tools.to_vec())?;
            }
            Ok::<(), capstore::skills::SkillError>(())
        })
        .expect("catalog");
    // A ceiling that one server (two tools of ~80 tokens) fits; a turn of two tools of its
    // own, so that the sentences' bests are the ask channel's, past the conversation's.
    let ceiling = 200;
    let policy = SelectionPolicy {
        max_turn_tools: 2,
        request: RequestPolicy {
            max_tokens: ceiling,
            ..RequestPolicy::default()
        },
        ..SelectionPolicy::default()
    };
    let builder = ContextBuilder::with_policy(policy).expect("policy");
    // Twelve clauses in four sentences: a description, whose sentences are its asks.
    let message = "Search parks near Denver, read the parks details, compare parks by rating. \
                   Check the weather there, the weather alerts, the weather for Sunday. \
                   Search flights to Denver, compare flights by price, read flights details. \
                   Search hotels near the parks, read hotels details, compare hotels prices.";
    assert!(capstore::context::asks(message).len() > builder.policy().message.max_asks);
    let selection = builder
        .select(&store.snapshot(), &Turn::new(message))
        .expect("select");
    assert!(
        matches!(selection.size, ListSize::Request { budget, .. } if budget == ceiling),
        "{:?}",
        selection.size
    );
    assert!(
        selection.tokens <= ceiling,
        "{} tokens past the ceiling of {ceiling}: {:?}",
        selection.tokens,
        selection.keys().collect::<Vec<_>>()
    );
    assert!(
        selection
            .tools
            .iter()
            .any(|t| matches!(t.reasons[0], Reason::Unit { .. })),
        "a server came whole: {:?}",
        selection.keys().collect::<Vec<_>>()
    );
}
