//! One writer and three readers for a bounded time (3 s by default; `CAPSTORE_STRESS_SECS` for
//! more), with subscribers attached (one counting and checking order, one panicking now and
//! then). The writer registers and removes tools, skills (with bundled tools and dependencies)
//! and hooks; every snapshot a reader takes must be internally consistent: each secondary index
//! agrees with the rows, the BM25 index holds exactly the rows (N, keys, document frequencies),
//! each tool's owning skills and each skill's tools and dependencies exist. Readers also run
//! `ContextBuilder` selections. A watchdog fails the test if anything stops making progress.
//!
//! This is not a benchmark: the counts it prints are to show the test did work, and are only
//! asserted to be above zero.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use capstore::bm25::Tokenizer;
use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use capstore::exec::{register_hook, register_tool, remove_hook, remove_tool};
use capstore::skills::{register_skill, unregister_skill};
use capstore::store::TextFields;
use capstore::tools::{TOOL_TEXT_FIELDS, ToolTextOptions, tool_text};
use capstore::{
    HOOKS, Hook, HookEvent, HookOutcome, SKILLS, Skill, Snapshot, Store, TOOLS, Tool, WriteTxn,
};

const NAMES: [&str; 6] = [
    "read_file",
    "write_file",
    "get_weather",
    "send_mail",
    "search_web",
    "list_events",
];
const SOURCES: [&str; 2] = ["fs", "web"];
const TAGS: [&str; 3] = ["io", "net", "mail"];
const SKILLS_: [&str; 4] = ["files", "comms", "travel", "ops"];
const HOOK_IDS: [&str; 2] = ["audit", "guard"];
const WORDS: [&str; 6] = ["read", "file", "weather", "mail", "search", "events"];
const MESSAGES: [&str; 3] = ["read the file", "weather and mail", "search events"];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

fn random_tool(rng: &mut Rng) -> Tool {
    let mut tool = Tool::new(
        rng.pick(&NAMES),
        format!("{} {}", rng.pick(&WORDS), rng.pick(&WORDS)),
    )
    .with_tags([rng.pick(&TAGS)]);
    if rng.next().is_multiple_of(2) {
        tool = tool.with_source(rng.pick(&SOURCES));
    }
    tool
}

/// One random write; failures (duplicates, missing dependencies, ...) are expected and are
/// all-or-nothing, so they are ignored here (tests/api_model.rs checks them).
fn random_write(tx: &mut WriteTxn, rng: &mut Rng) -> bool {
    match rng.next() % 6 {
        0 => register_tool(tx, random_tool(rng), |v| async move { Ok(v) }).is_ok(),
        1 => remove_tool(tx, &random_tool(rng).qualified_name()).is_ok(),
        2 => {
            let mut skill =
                Skill::new(rng.pick(&SKILLS_), rng.pick(&WORDS)).with_examples([rng.pick(&WORDS)]);
            if rng.next().is_multiple_of(2) {
                skill = skill.with_dependencies([rng.pick(&SKILLS_)]);
            }
            let tools: Vec<Tool> = (0..rng.next() % 3).map(|_| random_tool(rng)).collect();
            register_skill(tx, skill, tools).is_ok()
        }
        3 => unregister_skill(tx, rng.pick(&SKILLS_)).is_ok(),
        4 => {
            let hook = Hook::new(rng.pick(&HOOK_IDS), HookEvent::PreToolUse, "*");
            register_hook(tx, hook, |_| async { Ok(HookOutcome::Continue) }).is_ok()
        }
        _ => remove_hook(tx, rng.pick(&HOOK_IDS)).is_ok(),
    }
}

/// Checks everything a snapshot says about itself agrees.
fn check_snapshot(snap: &Snapshot, tokenizer: &Tokenizer) {
    let v = snap.version();
    let tools: BTreeMap<String, Tool> = snap
        .iter(&TOOLS)
        .expect("tools")
        .map(|(k, t)| (k.to_string(), t.clone()))
        .collect();
    // Secondary indexes ⇔ rows.
    let mut expected: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for tool in tools.values() {
        *expected.entry(("name", tool.name.clone())).or_default() += 1;
        if let Some(s) = &tool.source {
            *expected.entry(("source", s.clone())).or_default() += 1;
        }
        for t in &tool.tags {
            *expected.entry(("tags", t.clone())).or_default() += 1;
        }
        for s in &tool.skills {
            *expected.entry(("skill", s.clone())).or_default() += 1;
            assert!(
                snap.contains(&SKILLS, s).expect("skills"),
                "v{v}: owner {s} of a tool is missing"
            );
        }
    }
    let mut got: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for index in ["name", "source", "tags", "skill"] {
        for (value, n) in snap.index_values(&TOOLS, index).expect("index") {
            got.insert((index, value.to_string()), n);
            for (key, _) in snap.by_index(&TOOLS, index, value).expect("by_index") {
                assert!(
                    tools.contains_key(&**key),
                    "v{v}: {index}={value} points at missing {key}"
                );
            }
        }
    }
    assert_eq!(got, expected, "v{v}: tools indexes disagree with rows");
    // BM25 ⇔ rows.
    let index = snap.text_index(&TOOLS).expect("text");
    assert_eq!(index.len(), tools.len(), "v{v}: BM25 N");
    assert_eq!(index.stats().n_docs as usize, tools.len());
    let keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(
        keys,
        tools.keys().cloned().collect::<Vec<_>>(),
        "v{v}: BM25 keys"
    );
    let mut df: BTreeMap<String, u64> = BTreeMap::new();
    for tool in tools.values() {
        let mut fields = TextFields::new(tokenizer);
        tool_text(tool, &mut fields);
        let mut terms: Vec<String> = TOOL_TEXT_FIELDS
            .iter()
            .filter_map(|f| fields.tokens(f))
            .flatten()
            .map(str::to_owned)
            .collect();
        terms.sort();
        terms.dedup();
        for t in terms {
            *df.entry(t).or_default() += 1;
        }
    }
    for (term, n) in &df {
        assert_eq!(index.doc_freq(term), *n, "v{v}: df({term})");
    }
    // Skills ⇔ tools and each other.
    let n_skills = snap.count(&SKILLS).expect("skills");
    assert_eq!(snap.text_index(&SKILLS).expect("text").len(), n_skills);
    for (name, skill) in snap.iter(&SKILLS).expect("skills") {
        for t in &skill.tools {
            assert!(
                tools.contains_key(t),
                "v{v}: skill {name} lists missing tool {t}"
            );
            assert!(
                snap.by_index(&SKILLS, "tool", t)
                    .expect("idx")
                    .any(|(k, _)| k == name)
            );
        }
        for d in &skill.dependencies {
            assert!(
                snap.contains(&SKILLS, d).expect("skills"),
                "v{v}: {name} needs missing {d}"
            );
        }
    }
    let hooks = snap.count(&HOOKS).expect("hooks");
    let by_event: usize = snap
        .index_values(&HOOKS, "event")
        .expect("event")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(hooks, by_event, "v{v}: hook event index");
}

fn stress_secs() -> f64 {
    std::env::var("CAPSTORE_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0)
}

#[test]
fn one_writer_three_readers_with_subscribers() {
    let secs = stress_secs();
    let store = Store::new();
    let stop = Arc::new(AtomicBool::new(false));
    let commits = Arc::new(AtomicU64::new(0));
    let checked = Arc::new(AtomicU64::new(0));
    let selects = Arc::new(AtomicU64::new(0));
    let notified = Arc::new(AtomicU64::new(0));

    // Subscribers: one checks versions arrive strictly in order; one panics every 7th commit.
    let last = Arc::new(AtomicU64::new(0));
    let (n, l) = (Arc::clone(&notified), Arc::clone(&last));
    let _ordered = store.subscribe(move |changes| {
        let previous = l.swap(changes.version, Ordering::SeqCst);
        assert!(changes.version > previous, "change sets out of order");
        n.fetch_add(1, Ordering::Relaxed);
    });
    // The deliberate faults would print a backtrace each; keep other panics loud.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.starts_with("subscriber fault"));
        if !deliberate {
            default_hook(info);
        }
    }));
    let _panicky = store.subscribe(|changes| {
        if changes.version % 7 == 0 {
            panic!("subscriber fault at v{}", changes.version);
        }
    });

    let mut handles = Vec::new();
    {
        let (store, stop, commits) = (store.clone(), Arc::clone(&stop), Arc::clone(&commits));
        handles.push(thread::spawn(move || {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            while !stop.load(Ordering::Relaxed) {
                let mut tx = store.begin();
                let writes = 1 + rng.next() % 4;
                for _ in 0..writes {
                    random_write(&mut tx, &mut rng);
                }
                if rng.next().is_multiple_of(8) {
                    drop(tx); // an aborted transaction now and then
                } else if tx.commit().changes.changes.is_empty() {
                    continue;
                } else {
                    commits.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for _ in 0..3 {
        let (store, stop, checked, selects) = (
            store.clone(),
            Arc::clone(&stop),
            Arc::clone(&checked),
            Arc::clone(&selects),
        );
        handles.push(thread::spawn(move || {
            let tokenizer = Tokenizer::new(ToolTextOptions::default().tokenizer);
            let builder = ContextBuilder::with_policy(SelectionPolicy {
                max_tools: 3,
                pinned_skills: vec!["files".into()],
                ..SelectionPolicy::default()
            })
            .expect("policy");
            let mut last_version = 0;
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let snap = store.snapshot();
                assert!(snap.version() >= last_version, "versions went backwards");
                last_version = snap.version();
                check_snapshot(&snap, &tokenizer);
                checked.fetch_add(1, Ordering::Relaxed);
                let selection = builder
                    .select(&snap, &Turn::new(MESSAGES[i % MESSAGES.len()]))
                    .expect("select");
                i += 1;
                for key in selection.keys() {
                    assert!(
                        snap.contains(&TOOLS, key).expect("tools"),
                        "selected {key} is not in the snapshot"
                    );
                }
                assert!(selection.tools.iter().all(|t| t.score.is_finite()));
                selects.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }

    let start = Instant::now();
    while start.elapsed() < Duration::from_secs_f64(secs) {
        thread::sleep(Duration::from_millis(20));
        // A thread that ended early has failed: stop at once and report it below.
        if handles.iter().any(|h| h.is_finished()) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    // Watchdog: every worker must notice `stop` and end; one that does not is stuck.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !handles.iter().all(|h| h.is_finished()) {
        assert!(
            Instant::now() < deadline,
            "deadlock: a worker did not stop within 60 s"
        );
        thread::sleep(Duration::from_millis(10));
    }
    for h in handles {
        if let Err(panic) = h.join() {
            std::panic::resume_unwind(panic);
        }
    }
    let (c, k, s, n) = (
        commits.load(Ordering::Relaxed),
        checked.load(Ordering::Relaxed),
        selects.load(Ordering::Relaxed),
        notified.load(Ordering::Relaxed),
    );
    eprintln!(
        "stress: {secs} s, {c} commits, {k} snapshots checked, {s} selections, {n} notifications, {} subscriber panics",
        store.listener_panics()
    );
    assert!(c > 0 && k > 0 && s > 0, "no work done");
    assert_eq!(n, store.version(), "every commit reached the subscriber");
    assert!(store.version() < 7 || store.listener_panics() > 0);
    check_snapshot(
        &store.snapshot(),
        &Tokenizer::new(ToolTextOptions::default().tokenizer),
    );
}
