//! The ContextBuilder's rules, one test each.

use capstore::context::{
    ContextBuilder, Conversation, DropReason, MAX_TOOLS_NEAR_MISSES, NoMatch, Reason,
    SelectionPolicy, Turn, all_tools, search_tools,
};
use capstore::skills::register_skill;
use capstore::{Skill, Snapshot, Store, TOOLS, Tool};
use serde_json::json;

fn catalog() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            register_skill(
                tx,
                Skill::new("auth", "Sign in and manage access tokens").with_category("infra"),
                vec![Tool::new("get_token", "Get an access token").with_source("auth")],
            )?;
            register_skill(
                tx,
                Skill::new(
                    "github",
                    "Work with GitHub repositories, issues and pull requests",
                )
                .with_dependencies(["auth"])
                .with_examples(["open an issue about the crash", "review my pull request"]),
                vec![
                    Tool::new("search_issues", "Search issues in a repository")
                        .with_source("github"),
                    Tool::new("create_issue", "Open a new issue").with_source("github"),
                    Tool::new("merge_pull_request", "Merge a pull request")
                        .with_source("github")
                        .with_tags(["dangerous"]),
                ],
            )?;
            register_skill(
                tx,
                Skill::new("weather", "Weather forecasts and alerts")
                    .with_examples(["will it rain tomorrow"]),
                vec![
                    Tool::new("get_forecast", "Weather forecast for a city").with_source("wx"),
                    Tool::new("get_alerts", "Severe weather alerts for a region").with_source("wx"),
                ],
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("read_file", "Read a file from disk")
                    .with_source("fs")
                    .with_tags(["files"]),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("write_file", "Write a file to disk")
                    .with_source("fs")
                    .with_tags(["files"]),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("send_email", "Send an email message").with_source("mail"),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("search", "Search the web").with_source("web"),
            )?;
            Ok::<_, capstore::skills::SkillError>(())
        })
        .expect("catalog");
    store
}

fn select(policy: SelectionPolicy, snap: &Snapshot, turn: &Turn) -> capstore::context::Selection {
    ContextBuilder::with_policy(policy)
        .expect("policy")
        .select(snap, turn)
        .expect("select")
}

fn keys(s: &capstore::context::Selection) -> Vec<String> {
    s.keys().map(str::to_string).collect()
}

#[test]
fn a_matched_skill_brings_its_tools_and_its_dependencies_tools() {
    let store = catalog();
    let s = select(
        SelectionPolicy::default(),
        &store.snapshot(),
        &Turn::new("review my pull request on GitHub"),
    );
    let k = keys(&s);
    assert!(
        k.contains(&"github/merge_pull_request".to_string()),
        "{k:?}"
    );
    assert!(
        k.contains(&"auth/get_token".to_string()),
        "dependency's tool: {k:?}"
    );
    let token = s
        .tools
        .iter()
        .find(|t| &*t.key == "auth/get_token")
        .expect("token tool");
    assert!(token.reasons.iter().any(|r| matches!(r, Reason::DependencyOf { skill, dependency } if &**skill == "github" && &**dependency == "auth")));
    assert!(
        s.skills
            .iter()
            .any(|m| &*m.name == "github" && m.how == capstore::context::SkillMatch::Matched)
    );
    assert!(
        s.skills
            .iter()
            .any(|m| &*m.name == "auth" && m.how == capstore::context::SkillMatch::Dependency)
    );
    assert!(!k.contains(&"fs/read_file".to_string()));
}

#[test]
fn exact_names_in_the_message_come_first() {
    let store = catalog();
    let s = select(
        SelectionPolicy::default(),
        &store.snapshot(),
        &Turn::new("use `send_email` and fs/write_file please"),
    );
    let ranked: Vec<&str> = s.ranked().map(|t| &*t.key).collect();
    assert_eq!(&ranked[..2], ["fs/write_file", "mail/send_email"]);
    assert!(matches!(s.tools[0].reasons[0], Reason::ExactName { .. }));
    // A plain English word that happens to be a tool's name is not a mention.
    let s = select(
        SelectionPolicy::default(),
        &store.snapshot(),
        &Turn::new("search for cats"),
    );
    let web = s
        .tools
        .iter()
        .find(|t| &*t.key == "web/search")
        .expect("retrieved by BM25");
    assert!(matches!(web.reasons[0], Reason::Retrieved { .. }));
}

#[test]
fn pinned_tools_and_skills_are_always_in() {
    let store = catalog();
    let policy = SelectionPolicy {
        pinned_tools: vec!["fs/read_file".into(), "nope/missing".into()],
        pinned_skills: vec!["weather".into()],
        max_tools: 1,
        ..SelectionPolicy::default()
    };
    let s = select(policy, &store.snapshot(), &Turn::new("send an email"));
    let k = keys(&s);
    for pinned in ["fs/read_file", "wx/get_forecast", "wx/get_alerts"] {
        assert!(k.contains(&pinned.to_string()), "{pinned} in {k:?}");
    }
    // Pinned tools do not count against being pinned, but the limit stops the rest.
    assert!(!k.contains(&"mail/send_email".to_string()));
    assert!(
        s.dropped
            .iter()
            .any(|d| &*d.key == "mail/send_email" && d.reason == DropReason::MaxTools { max: 1 })
    );
    assert!(
        s.dropped
            .iter()
            .any(|d| &*d.key == "nope/missing" && d.reason == DropReason::NotFound)
    );
}

#[test]
fn tag_filters_drop_tools_and_say_why() {
    let store = catalog();
    let policy = SelectionPolicy {
        exclude_tags: vec!["dangerous".into()],
        ..SelectionPolicy::default()
    };
    let s = select(
        policy,
        &store.snapshot(),
        &Turn::new("merge the pull request"),
    );
    assert!(!s.contains("github/merge_pull_request"));
    assert!(
        s.dropped
            .iter()
            .any(|d| &*d.key == "github/merge_pull_request"
                && d.reason
                    == DropReason::ExcludedTag {
                        tag: "dangerous".into()
                    })
    );

    let policy = SelectionPolicy {
        include_tags: vec!["files".into()],
        ..SelectionPolicy::default()
    };
    let s = select(
        policy,
        &store.snapshot(),
        &Turn::new("read or write a file, or send email"),
    );
    assert!(
        s.tools
            .iter()
            .all(|t| t.tool.tags.contains(&"files".to_string()))
    );
    assert!(
        s.dropped
            .iter()
            .any(|d| &*d.key == "mail/send_email" && d.reason == DropReason::MissingIncludedTag)
    );
}

#[test]
fn the_token_budget_is_enforced() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("weather forecast alerts file email issue");
    let unlimited = select(SelectionPolicy::default(), &snap, &turn);
    assert!(unlimited.tools.len() >= 4);
    let budget = unlimited.tools[0].tokens + unlimited.tools[1].tokens;
    let s = select(
        SelectionPolicy {
            token_budget: Some(budget),
            ..SelectionPolicy::default()
        },
        &snap,
        &turn,
    );
    assert!(s.tokens <= budget, "{} > {budget}", s.tokens);
    assert!(s.tools.len() >= 2);
    assert!(
        s.dropped
            .iter()
            .any(|d| matches!(d.reason, DropReason::TokenBudget { .. }))
    );
}

#[test]
fn max_tools_keeps_the_most_relevant() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("write a file to disk");
    let s = select(
        SelectionPolicy {
            max_tools: 1,
            ..SelectionPolicy::default()
        },
        &snap,
        &turn,
    );
    assert_eq!(keys(&s), ["fs/write_file"]);
}

#[test]
fn thresholds_drop_weak_matches() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("weather forecast for a city, and a file");
    let s = select(
        SelectionPolicy {
            min_relative_score: 0.9,
            max_skills: 0,
            ..SelectionPolicy::default()
        },
        &snap,
        &turn,
    );
    assert_eq!(keys(&s), ["wx/get_forecast"]);
    assert!(
        s.dropped
            .iter()
            .any(|d| matches!(d.reason, DropReason::BelowRelativeScore { .. }))
    );
    let s = select(
        SelectionPolicy {
            min_score: 1e6,
            max_skills: 0,
            ..SelectionPolicy::default()
        },
        &snap,
        &turn,
    );
    assert!(s.tools.is_empty());
    assert!(
        s.dropped
            .iter()
            .all(|d| matches!(d.reason, DropReason::BelowMinScore { .. }))
    );
}

#[test]
fn no_match_sends_pinned_only_or_everything() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("zzzz qqqq");
    let policy = SelectionPolicy {
        pinned_tools: vec!["fs/read_file".into()],
        ..SelectionPolicy::default()
    };
    let s = select(policy.clone(), &snap, &turn);
    assert!(s.no_match);
    assert_eq!(keys(&s), ["fs/read_file"]);
    let s = select(
        SelectionPolicy {
            on_no_match: NoMatch::All,
            max_tools: 100,
            ..policy
        },
        &snap,
        &turn,
    );
    assert_eq!(s.tools.len(), snap.count(&TOOLS).expect("count"));
}

#[test]
fn without_a_builder_every_tool_is_sent() {
    let store = catalog();
    let snap = store.snapshot();
    let all = all_tools(&snap).expect("all");
    assert_eq!(all.tools.len(), snap.count(&TOOLS).expect("count"));
}

#[test]
fn the_order_is_stable_across_turns_on_one_topic() {
    let store = catalog();
    let snap = store.snapshot();
    let builder = ContextBuilder::new();
    let mut conversation = Conversation::new();
    let mut orders = Vec::new();
    for message in [
        "will it rain in Oslo tomorrow?",
        "and what about severe weather alerts?",
        "and the forecast for Bergen?",
    ] {
        let turn = conversation.next_turn(message);
        let s = builder.select(&snap, &turn).expect("select");
        conversation.record_selection(&s);
        orders.push(keys(&s));
    }
    // Each turn's list starts with the previous turn's list, in the same order.
    for pair in orders.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        let kept: Vec<&String> = next.iter().filter(|k| prev.contains(k)).collect();
        assert_eq!(
            kept.len(),
            prev.len(),
            "a tool was pushed out: {prev:?} -> {next:?}"
        );
        assert_eq!(next[..prev.len()].to_vec(), prev.clone(), "prefix changed");
    }
}

#[test]
fn recent_and_discovered_tools_stay_selected() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("thanks")
        .with_recent_tools(["mail/send_email"])
        .with_discovered(["fs/read_file"]);
    let s = select(SelectionPolicy::default(), &snap, &turn);
    let k = keys(&s);
    assert!(k.contains(&"mail/send_email".to_string()) && k.contains(&"fs/read_file".to_string()));
    let found = search_tools(&snap, &json!({"query": "forecast", "limit": 1})).expect("search");
    assert_eq!(found[0].name, "wx/get_forecast");
}

#[test]
fn selection_is_deterministic_and_explained() {
    let store = catalog();
    let snap = store.snapshot();
    let turn = Turn::new("search issues about the crash");
    let a = select(SelectionPolicy::default(), &snap, &turn);
    let b = select(SelectionPolicy::default(), &snap, &turn);
    assert_eq!(keys(&a), keys(&b));
    let retrieved = a
        .tools
        .iter()
        .find_map(|t| {
            t.reasons.iter().find_map(|r| match r {
                Reason::Retrieved {
                    explanation: Some(e),
                    score,
                } => Some((e.clone(), *score)),
                _ => None,
            })
        })
        .expect("an explained retrieval");
    assert!((retrieved.0.score - retrieved.1).abs() < 1e-4);
    assert!(!retrieved.0.terms.is_empty());
    assert_eq!(a.version, snap.version());
}

#[test]
fn selections_stay_consistent_while_skills_come_and_go() {
    let store = catalog();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                let builder = ContextBuilder::new();
                let mut checked = 0u64;
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    let snap = store.snapshot();
                    let s = builder
                        .select(&snap, &Turn::new("translate this text to french"))
                        .expect("select");
                    assert_eq!(s.version, snap.version());
                    for t in &s.tools {
                        assert!(
                            snap.contains(&TOOLS, &t.key).expect("lookup"),
                            "selected a tool not in its snapshot"
                        );
                    }
                    // The translate skill is either wholly there or wholly absent.
                    let has_skill = snap
                        .contains(&capstore::SKILLS, "translate")
                        .expect("lookup");
                    assert_eq!(
                        has_skill,
                        snap.contains(&TOOLS, "tr/translate").expect("lookup")
                    );
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    for _ in 0..300 {
        store
            .write(|tx| {
                register_skill(
                    tx,
                    Skill::new("translate", "Translate text"),
                    vec![
                        Tool::new("translate", "Translate text between languages")
                            .with_source("tr"),
                    ],
                )
            })
            .expect("register");
        let mut tx = store.begin();
        capstore::skills::unregister_skill(&mut tx, "translate").expect("unregister");
        tx.commit();
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    for r in readers {
        assert!(r.join().expect("reader") > 0);
    }
}

/// A skill can list a tool that a raw table write removed. That tool is skipped, and the
/// tools after it move up: the selection under a limit is the unlimited ranking's prefix.
/// (Under a limit only a prefix of the candidates is ranked; with 20 candidates, max_tools up
/// to 11 ranks fewer than all, and the missing tool, first by key among equals, falls inside it.)
#[test]
fn a_skill_tool_missing_from_the_table_is_skipped_and_the_limit_still_fills() {
    let store = Store::new();
    store
        .write(|tx| {
            let mut tools = vec![Tool::new(
                "a_rollback_release",
                "Roll back a release to the last good build",
            )];
            tools.extend(
                (0..19).map(|i| Tool::new(format!("deploy_step_{i:02}"), "A deployment step")),
            );
            register_skill(
                tx,
                Skill::new("deploy", "Deploy and roll back releases"),
                tools,
            )
        })
        .expect("catalog");
    store
        .write(|tx| tx.delete(&TOOLS, "deploy/a_rollback_release"))
        .expect("a raw delete of a skill's tool");
    let snapshot = store.snapshot();
    let turn = Turn::new("roll back the release");
    let select = |max_tools| {
        ContextBuilder::with_policy(SelectionPolicy::default().with_tool_limit(max_tools))
            .expect("policy")
            .select(&snapshot, &turn)
            .expect("select")
    };
    let unlimited = select(50);
    let all: Vec<&str> = unlimited.keys().collect();
    assert_eq!(all.len(), 19, "{all:?}");
    assert!(!all.contains(&"deploy/a_rollback_release"), "{all:?}");
    for max_tools in 1..all.len() {
        let limited = select(max_tools);
        let keys: Vec<&str> = limited.keys().collect();
        assert_eq!(keys, all[..max_tools], "max_tools {max_tools}");
        // The near misses too: the next ones in the unlimited ranking, at most eight.
        let near: Vec<&str> = limited
            .dropped
            .iter()
            .filter(|d| matches!(d.reason, DropReason::MaxTools { .. }))
            .map(|d| &*d.key)
            .collect();
        let next = &all[max_tools..all.len().min(max_tools + MAX_TOOLS_NEAR_MISSES)];
        assert_eq!(near, next, "max_tools {max_tools}");
    }
}

/// Without other sources, thresholds, tag filters or a budget, the tools' search fetches only
/// the hits that can show (the limit and its near misses); a policy that needs more (here: a
/// relative threshold so small it drops nothing) fetches twice the limit. Both must select,
/// drop and explain alike, on a catalog where many more tools match than can show.
#[test]
fn fetching_only_the_hits_that_can_show_changes_nothing() {
    let words = [
        "file", "read", "write", "search", "issue", "email", "weather", "token", "repo", "disk",
    ];
    let store = Store::new();
    store
        .write(|tx| {
            for i in 0..60usize {
                // Each tool's text: three of the words, overlapping from tool to tool, and a
                // repeat that varies the term frequencies (and so the scores and their ties).
                let text: Vec<&str> = (0..3)
                    .map(|j| words[(i * 7 + j * 3) % words.len()])
                    .chain((i % 3 == 0).then_some(words[i % words.len()]))
                    .collect();
                tx.insert(&TOOLS, Tool::new(format!("tool_{i:02}"), text.join(" ")))?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("catalog");
    let snap = store.snapshot();
    let messages = [
        "read the file",
        "search my email and the weather",
        "file issue repo disk token",
        "write to disk",
        "weather",
    ];
    for max_tools in [1, 2, 5, 10] {
        for explain in [false, true] {
            let fetch_what_shows = SelectionPolicy {
                max_tools,
                explain,
                ..SelectionPolicy::default()
            };
            let fetch_double = SelectionPolicy {
                min_relative_score: f32::MIN_POSITIVE,
                ..fetch_what_shows.clone()
            };
            for message in messages {
                let turn = Turn::new(message);
                let few = select(fetch_what_shows.clone(), &snap, &turn);
                let more = select(fetch_double.clone(), &snap, &turn);
                assert!(
                    few.dropped.len() >= MAX_TOOLS_NEAR_MISSES.min(60 - max_tools)
                        || few.tools.len() + few.dropped.len() < 60,
                    "{message}: the catalog should give near misses"
                );
                assert_eq!(
                    serde_json::to_value(&few).expect("json"),
                    serde_json::to_value(&more).expect("json"),
                    "{message}, max_tools {max_tools}, explain {explain}"
                );
            }
        }
    }
}
