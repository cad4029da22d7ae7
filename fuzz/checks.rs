//! What each fuzz target checks, in one place: the fuzz targets call these on every input, and
//! `tests/bad_input.rs` (which includes this file) calls them on the committed regression
//! corpus, so CI replays the findings with exactly the fuzzers' checks.

use capstore::bm25::{Tokenizer, TokenizerConfig};
use capstore::catalog::Catalog;
use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use capstore::mcp::{McpToolList, import_server, remove_server};
use capstore::skills::register_skill;
use capstore::{SKILLS, Skill, Snapshot, Store, TOOLS, Tool};

fn tools(snap: &Snapshot) -> Vec<(String, Tool)> {
    let rows = snap.iter(&TOOLS).expect("tools table");
    rows.map(|(k, t)| (k.to_string(), t.clone())).collect()
}

fn skills(snap: &Snapshot) -> Vec<(String, Skill)> {
    let rows = snap.iter(&SKILLS).expect("skills table");
    rows.map(|(k, s)| (k.to_string(), s.clone())).collect()
}

/// Arbitrary text through the tokenizer configuration the first byte picks: every token
/// non-empty, lowercase and free of white space.
pub fn tokenizer(data: &[u8]) {
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let tokenizer = Tokenizer::new(TokenizerConfig {
        split_identifiers: flags & 1 != 0,
        stop_words: flags & 2 != 0,
        stemming: flags & 4 != 0,
    });
    for token in tokenizer.tokenize(&text) {
        assert!(!token.is_empty(), "empty token from {text:?}");
        assert_eq!(
            token,
            token.to_lowercase(),
            "token not lowercase from {text:?}"
        );
        assert!(
            !token.chars().any(char::is_whitespace),
            "white space in {token:?}"
        );
    }
}

/// The small store the `select` target selects from: ASCII, identifier, CJK names and a skill.
pub fn select_store() -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            tx.insert(
                &TOOLS,
                Tool::new("get_weather", "Current weather for a city").with_tags(["net"]),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("read_file", "Read a file from disk").with_source("fs"),
            )?;
            tx.insert(
                &TOOLS,
                Tool::new("getPM2.5Level", "Air quality, PM2.5 in a city"),
            )?;
            tx.insert(&TOOLS, Tool::new("天气", "查询城市天气 weather"))?;
            register_skill(
                tx,
                Skill::new("mail", "Send and read email").with_examples(["mail Ana the report"]),
                vec![Tool::new("send_mail", "Send an email").with_tags(["mail"])],
            )
        })
        .expect("fixture store");
    store
}

/// An arbitrary message through `ContextBuilder::select` on `store`: no error, finite scores,
/// at most `max_tools` (the first byte, mod 4) tools.
pub fn select(store: &Store, data: &[u8]) {
    let Some((&max, text)) = data.split_first() else {
        return;
    };
    let message = String::from_utf8_lossy(text);
    let policy = SelectionPolicy {
        max_tools: usize::from(max % 4),
        ..SelectionPolicy::default()
    };
    let builder = ContextBuilder::with_policy(policy).expect("valid policy");
    let turn = Turn::new(message.as_ref()).with_history([message.as_ref()]);
    let selection = builder
        .select(&store.snapshot(), &turn)
        .expect("select never fails here");
    assert!(selection.tools.len() <= usize::from(max % 4));
    assert!(selection.tools.iter().all(|t| t.score.is_finite()));
    assert!(selection.query.iter().all(|(_, w)| w.is_finite()));
}

/// Arbitrary bytes as a tool's JSON: a tool that validates is stored, found and round-trips
/// through JSON; one that does not is refused and the store is unchanged.
pub fn tool_json(data: &[u8]) {
    let Ok(tool) = serde_json::from_slice::<Tool>(data) else {
        return;
    };
    let valid = tool.validate().is_ok();
    let store = Store::new();
    let key = tool.qualified_name();
    let result = store.write(|tx| tx.insert(&TOOLS, tool.clone()));
    let snap = store.snapshot();
    match result {
        Ok(_) => {
            assert!(valid, "stored a tool that does not validate");
            assert_eq!(snap.get(&TOOLS, &key).expect("tools table"), Some(&tool));
            let text = format!("{} {}", tool.name, tool.description);
            let hits = snap.search(&TOOLS, &text, 3).expect("search");
            assert!(hits.iter().all(|h| h.score.is_finite()));
            let back: Tool = serde_json::from_value(serde_json::to_value(&tool).expect("to json"))
                .expect("a stored tool round-trips through JSON");
            assert_eq!(back, tool);
        }
        Err(_) => {
            assert!(!valid, "refused a tool that validates");
            assert_eq!(snap.version(), 0);
            assert_eq!(snap.count(&TOOLS).expect("tools table"), 0);
        }
    }
}

/// Arbitrary bytes as a catalog file: a refused load changes nothing; a loaded catalog
/// exports, re-parses and loads into an empty store with the same tools and skills, and
/// exports the same again.
pub fn catalog(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(catalog) = Catalog::from_json_str(text) else {
        return;
    };
    let store = Store::new();
    let report = match catalog.load_into(&store) {
        Ok(report) => report,
        Err(_) => {
            let snap = store.snapshot();
            assert_eq!(snap.version(), 0, "a refused load published a version");
            assert!(tools(&snap).is_empty() && skills(&snap).is_empty());
            return;
        }
    };
    let snap = store.snapshot();
    let exported = Catalog::from_snapshot(&snap, &report.pinned).expect("export a loaded store");
    let json = exported.to_json_pretty().expect("export as JSON");
    let reparsed = Catalog::from_json_str(&json).expect("an export parses");
    let second = Store::new();
    reparsed
        .load_into(&second)
        .expect("an export loads into an empty store");
    let snap2 = second.snapshot();
    assert_eq!(
        tools(&snap),
        tools(&snap2),
        "tools differ after the round trip"
    );
    assert_eq!(
        skills(&snap),
        skills(&snap2),
        "skills differ after the round trip"
    );
    let again = Catalog::from_snapshot(&snap2, &report.pinned).expect("export again");
    assert_eq!(
        again.to_json_pretty().expect("JSON"),
        json,
        "export not stable"
    );
}

/// Arbitrary bytes as an MCP `tools/list` result imported under server "s": a refused import
/// changes nothing; the same list imported again changes and commits nothing; removing the
/// server leaves no tool.
pub fn mcp_list(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(list) = McpToolList::from_json(text) else {
        return;
    };
    let store = Store::new();
    let first = match import_server(&store, "s", &list) {
        Ok(report) => report,
        Err(_) => {
            let snap = store.snapshot();
            assert_eq!(snap.version(), 0, "a refused import published a version");
            assert!(tools(&snap).is_empty(), "a refused import wrote tools");
            return;
        }
    };
    assert_eq!(
        first.added.len(),
        list.len(),
        "every tool of the list is added"
    );
    assert_eq!(first.version, (!list.is_empty()).then_some(1));
    let before = store.snapshot();
    let again = import_server(&store, "s", &list).expect("the same list imports again");
    assert!(again.added.is_empty() && again.removed.is_empty() && again.changed.is_empty());
    assert_eq!((again.unchanged, again.version), (list.len(), None));
    let after = store.snapshot();
    assert_eq!(
        after.version(),
        before.version(),
        "a no-op re-import committed"
    );
    assert_eq!(tools(&after), tools(&before));
    let removed = remove_server(&store, "s").expect("remove the server");
    assert_eq!(removed.removed.len(), list.len());
    assert!(
        tools(&store.snapshot()).is_empty(),
        "tools left after remove_server"
    );
}

/// The embedder a fuzzed vector cache file is opened for: model `fuzz`, two numbers a text.
pub struct TwoNumbers;

impl capstore::embed::Embedder for TwoNumbers {
    fn model_id(&self) -> &str {
        "fuzz"
    }
    fn dimensions(&self) -> usize {
        2
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, capstore::embed::EmbedError> {
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

/// Arbitrary bytes as a vector cache file (`embed::VectorCache`) for [`TwoNumbers`]: opening
/// it gives the cache or `EmbedError::Cache`, no panic and no other error, and a refused file
/// is left as it was; a file that opens takes a new text, saves, and opens again holding it
/// and nothing else new (what the cache writes, it reads).
pub fn vector_cache(data: &[u8]) {
    use capstore::embed::{EmbedError, Embedder, VectorCache};
    use std::sync::Arc;

    let dir = std::env::temp_dir().join(format!("capstore-fuzz-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file =
        dir.join(format!("{:?}.vectors", std::thread::current().id()).replace(['(', ')'], ""));
    std::fs::write(&file, data).expect("write the input");
    let cache = match VectorCache::open(Arc::new(TwoNumbers), &file) {
        Ok(cache) => cache,
        Err(EmbedError::Cache { .. }) => {
            assert_eq!(
                std::fs::read(&file).expect("read"),
                data,
                "a refused file changed"
            );
            return;
        }
        Err(other) => panic!("not a cache error: {other:?}"),
    };
    let held = cache.len();
    // A text a fuzzed file is unlikely to hold; if it does, its numbers are the file's.
    let new = "\u{0}a text no fuzzed file holds\u{0}";
    let known = cache.embed(&[new]).expect("embed");
    let added = cache.len() - held;
    if added == 1 {
        assert_eq!(known, [vec![new.len() as f32, 1.0]], "the model's vector");
    }
    cache.save().expect("save");
    let again = VectorCache::open(Arc::new(TwoNumbers), &file).expect("what was saved opens");
    assert_eq!(
        again.len(),
        held + added,
        "the new text, and nothing else, added"
    );
    assert_eq!(again.embed(&[new]).expect("cached"), known);
    let _ = std::fs::remove_file(&file);
}
