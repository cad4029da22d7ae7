//! Multi-turn evaluation: the file format's errors, the figures, and a run over a store.

use capstore::context::{ContextBuilder, SelectionPolicy};
use capstore::eval::{
    ConversationMetrics, EvalError, TurnRun, parse_conversations, run_conversations,
};
use capstore::{Store, TOOLS, Tool};

fn turn(id: &str, turn: usize, sent: &[&str], missed: &[&str], gold: usize) -> TurnRun {
    TurnRun {
        conversation: id.into(),
        turn,
        sent: sent.iter().map(|s| s.to_string()).collect(),
        channels: Vec::new(),
        missed: missed.iter().map(|s| s.to_string()).collect(),
        unreachable: missed.iter().map(|s| s.to_string()).collect(),
        gold,
        tokens: 100 * sent.len(),
        cached_tokens: 0,
        prefix_stable: false,
        topic_switch: false,
    }
}

#[test]
fn the_figures_follow_their_definitions() {
    let mut turns = vec![
        turn("a", 0, &["x"], &[], 1),
        turn("a", 1, &["x", "y"], &["z"], 2),
        turn("a", 2, &["y"], &[], 0),
        turn("a", 3, &["y", "w"], &[], 1),
        turn("b", 0, &["q"], &["q2"], 1),
        turn("b", 1, &["r"], &[], 1),
    ];
    // a1 appends (stable, 100 cached), a2 drops x (a re-pack), a3 switches topic and appends,
    // b1 switches topic and re-packs.
    turns[1].prefix_stable = true;
    turns[1].cached_tokens = 100;
    turns[3].prefix_stable = true;
    turns[3].topic_switch = true;
    turns[3].cached_tokens = 100;
    turns[5].topic_switch = true;
    let m = ConversationMetrics::of(2, &turns);
    assert_eq!((m.conversations, m.turns, m.follow_ups), (2, 6, 4));
    // Recall over the five turns with gold tools: 1, 0.5, 1, 0, 1.
    assert!((m.recall - 70.0).abs() < 1e-9, "{}", m.recall);
    assert!((m.complete - 60.0).abs() < 1e-9, "{}", m.complete);
    // Same-topic follow-ups: a1 (stable) and a2 (not).
    assert_eq!(m.same_topic_follow_ups, 2);
    assert_eq!(m.prefix_stable_same_topic, 50.0);
    assert_eq!(m.prefix_stable, 50.0);
    // Topic runs: a0..a2 (one re-pack), a3 (none, after a switch), b0 (none), b1 (one, after a
    // switch).
    assert_eq!(m.topic_switches, 2);
    assert_eq!(m.repacks_per_switch, 0.5);
    assert_eq!(
        (m.max_repacks_after_switch, m.max_repacks_per_topic),
        (1, 1)
    );
    // Eight tools of 100 tokens over six turns.
    assert!((m.tokens_per_turn - 800.0 / 6.0).abs() < 1e-9);
    assert!((m.tools_per_turn - 8.0 / 6.0).abs() < 1e-9);
    // Follow-ups sent 200 + 100 + 200 + 100 tokens, 200 of them cached.
    assert_eq!(m.cached_tokens_per_follow_up, 50.0);
    assert!(
        (m.cached_share - 100.0 / 3.0).abs() < 1e-9,
        "{}",
        m.cached_share
    );
}

#[test]
fn file_errors_name_the_line_and_field() {
    let err = |text: &str| {
        parse_conversations("c.jsonl", text)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"{"id": "a", "turns": [{"user": "hi"}]}"#),
        "c.jsonl:1: invalid JSON: turns[0]: missing field `gold` at line 1 column 36"
    );
    assert_eq!(
        err("\n\n{\"id\": \"a\", \"turns\": [{\"user\": \"hi\", \"gold\": [3]}]}"),
        "c.jsonl:3: invalid JSON: turns[0].gold[0]: invalid type: integer `3`, expected a string at line 1 column 47"
    );
    assert!(err("[1, 2]").starts_with("c.jsonl:1: invalid JSON"));
    let two = "{\"id\": \"a\", \"turns\": []}\n{\"id\": \"a\", \"turns\": []}";
    assert!(matches!(
        parse_conversations("c.jsonl", two),
        Err(EvalError::DuplicateId { line: 2, .. })
    ));
    // Unknown fields are ignored.
    let extra = r#"{"id": "a", "note": "x", "turns": [{"user": "hi", "gold": [], "mood": 1}]}"#;
    assert_eq!(
        parse_conversations("c.jsonl", extra).expect("parses")[0]
            .turns
            .len(),
        1
    );
}

#[test]
fn a_run_carries_the_list_and_records_the_models_calls() {
    let store = Store::new();
    store
        .write(|tx| {
            for (name, text) in [
                ("search_flights", "Search flights between two airports"),
                ("search_hotels", "Search hotels in a city"),
                ("get_forecast", "Weather forecast for a place"),
                ("send_email", "Send an email"),
            ] {
                tx.insert(&TOOLS, Tool::new(name, text))?;
            }
            Ok::<(), capstore::StoreError>(())
        })
        .expect("tools");
    let conversations = parse_conversations(
        "c.jsonl",
        concat!(
            r#"{"id": "t", "turns": [{"user": "flights to Rome", "gold": ["search_flights"], "topic": "trip"}, "#,
            r#"{"user": "hotels there", "gold": ["search_hotels"], "topic": "trip"}, "#,
            r#"{"user": "ok book the first", "gold": ["search_flights"], "topic": "trip"}, "#,
            r#"{"user": "email my boss", "gold": ["send_email", "get_forecast"], "topic": "mail"}]}"#
        ),
    )
    .expect("parses");
    let builder = ContextBuilder::with_policy(SelectionPolicy {
        history_turns: 0,
        ..SelectionPolicy::default()
    })
    .expect("policy");
    let report = run_conversations(&store.snapshot(), &builder, &conversations).expect("runs");
    let sent: Vec<&[String]> = report.turns.iter().map(|t| t.sent.as_slice()).collect();
    assert_eq!(sent[0], ["search_flights"]);
    assert_eq!(sent[1], ["search_flights", "search_hotels"]);
    // "ok book the first" names nothing: the list is carried as it was.
    assert_eq!(sent[2], ["search_flights", "search_hotels"]);
    assert_eq!(sent[3], ["search_flights", "search_hotels", "send_email"]);
    assert!(report.turns[1..].iter().all(|t| t.prefix_stable));
    assert_eq!(report.turns[3].missed, ["get_forecast"]);
    assert!(report.turns[3].topic_switch && !report.turns[2].topic_switch);
    let m = &report.metrics;
    assert!((m.recall - 87.5).abs() < 1e-9, "{}", m.recall);
    assert_eq!(m.prefix_stable_same_topic, 100.0);
    assert_eq!(report.turns[3].cached_tokens, report.turns[2].tokens);
}

/// Conversations that name their kind are reported by kind too, each kind's figures from its
/// own turns; a file that names none has no figures by kind.
#[test]
fn figures_by_kind_when_conversations_name_one() {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(&TOOLS, Tool::new("send_email", "Send an email"))?;
            tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city"))
        })
        .expect("tools");
    let text = [
        r#"{"id": "a", "kind": "mail", "turns": [{"user": "send an email to Ana", "gold": ["send_email"]}]}"#,
        r#"{"id": "b", "kind": "weather", "turns": [{"user": "email me", "gold": ["get_weather"]}]}"#,
        r#"{"id": "c", "kind": "mail", "turns": [{"user": "email Bo please", "gold": ["send_email"]}]}"#,
    ]
    .join("\n");
    let conversations = parse_conversations("k.jsonl", &text).expect("parse");
    assert_eq!(conversations[0].kind.as_deref(), Some("mail"));
    let report =
        run_conversations(&store.snapshot(), &ContextBuilder::new(), &conversations).expect("run");
    let kinds: Vec<&str> = report.by_kind.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["mail", "weather"]);
    let (mail, weather) = (&report.by_kind[0].1, &report.by_kind[1].1);
    assert_eq!((mail.conversations, mail.turns), (2, 2));
    assert_eq!(mail.recall, 100.0);
    assert_eq!(weather.recall, 0.0);
    assert!(mail.tokens_per_turn > 0.0);
    let plain = r#"{"id": "a", "turns": [{"user": "send an email", "gold": ["send_email"]}]}"#;
    let none = parse_conversations("p.jsonl", plain).expect("parse");
    let report = run_conversations(&store.snapshot(), &ContextBuilder::new(), &none).expect("run");
    assert!(report.by_kind.is_empty());
}
