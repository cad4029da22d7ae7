//! Model-based property test of the public API as an agent uses it: random sequences of tool,
//! skill and hook registrations, updates and removals (through `WriteTxn`, `skills::*` and
//! `exec::*`), grouped into transactions that commit or are dropped, including operations that
//! must fail. The same operations are applied to a plain model (`BTreeMap`s); after **every**
//! step, both the open transaction's view and the store's snapshot are checked against it:
//!
//! - every table's rows, and every secondary index (`by_index`, `count_by_index`,
//!   `index_values`) of `tools`, `skills` and `hooks`, and the handler tables' keys;
//! - the BM25 indexes of `tools` and `skills`: document count, keys, document frequencies and
//!   lengths, and search rankings equal to a brute-force BM25 over the model, computed with the
//!   crate's own tokenizer and `tool_text` / `skill_text` (scores within 1e-5 relative);
//! - `ContextBuilder` selections equal those made on a store rebuilt from scratch from the
//!   model (the incremental-versus-rebuilt oracle), for a few messages and two policies;
//! - a failing operation leaves the transaction as it was, and a commit publishes a new
//!   version exactly when something was written.
//!
//! Cases: 10,000 by default; set `PROPTEST_CASES` for more. A failure prints the shrunk
//! sequence of operations (their `Debug` form).

use std::collections::{BTreeMap, BTreeSet};

use capstore::bm25::{Document, Tokenizer, TokenizerConfig};
use capstore::context::{ContextBuilder, Selection, SelectionPolicy, Turn};
use capstore::skills::{SkillError, register_skill, skill_text, unregister_skill, unregister_tool};
use capstore::store::{Record, Table, TextFields};
use capstore::tools::{TOOL_TEXT_FIELDS, ToolTextOptions, tool_text};
use capstore::{
    HANDLERS, HOOK_HANDLERS, HOOKS, Hook, HookEvent, SKILLS, Skill, Snapshot, Store, StoreError,
    TOOLS, Tool, WriteTxn, exec,
};
use proptest::prelude::*;
use serde_json::json;

mod common;
use common::bm25_reference::{Reference, close};

// -------------------------------------------------------------------------------------------
// Vocabulary: small, so that keys collide and queries hit.
// -------------------------------------------------------------------------------------------

const TOOL_NAMES: [&str; 4] = ["read_file", "get_weather", "send_mail", "search_web"];
const SOURCES: [Option<&str>; 2] = [None, Some("fs")];
const WORDS: [&str; 7] = [
    "read", "file", "weather", "mail", "search", "events", "city",
];
const TOOL_TAGS: [&str; 3] = ["io", "net", "mail"];
const SKILL_NAMES: [&str; 3] = ["files", "comms", "travel"];
const CATEGORIES: [&str; 3] = ["", "dev", "ops"];
const HOOK_IDS: [&str; 3] = ["audit", "guard", "log"];
const MATCHERS: [&str; 4] = ["*", "read_file", "fs/*", ""];
const QUERIES: [&str; 4] = [
    "read the file",
    "weather in the city",
    "send mail about events",
    "search files and mail",
];
/// Messages for the selection oracle; one names a tool exactly.
const MESSAGES: [&str; 3] = [
    "please read the file",
    "what is the weather in the city, and mail it",
    "use fs/read_file then search",
];

fn all_tool_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for source in SOURCES {
        for name in TOOL_NAMES {
            keys.push(match source {
                Some(s) => format!("{s}/{name}"),
                None => name.to_string(),
            });
        }
    }
    keys
}

// -------------------------------------------------------------------------------------------
// Operations
// -------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// `tx.insert(&TOOLS, tool)`
    Insert(Tool),
    /// `tx.upsert(&TOOLS, tool)`
    Upsert(Tool),
    /// `tx.update(&TOOLS, tool)`
    Update(Tool),
    /// `skills::unregister_tool(tx, key)`
    UnregisterTool(String),
    /// `exec::register_tool(tx, tool, handler)`
    RegisterTool(Tool),
    /// `exec::remove_tool(tx, key)`
    RemoveTool(String),
    /// `skills::register_skill(tx, skill, bundled)`
    RegisterSkill(Skill, Vec<Tool>),
    /// `skills::unregister_skill(tx, name)`
    UnregisterSkill(String),
    /// `exec::register_hook(tx, hook, handler)`
    RegisterHook(Hook),
    /// `tx.update(&HOOKS, hook)`
    UpdateHook(Hook),
    /// `exec::remove_hook(tx, id)`
    RemoveHook(String),
    /// `tx.commit()`
    Commit,
    /// `drop(tx)`
    Abort,
}

fn words(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(&WORDS[..]), 0..=max).prop_map(|w| w.join(" "))
}

fn tool() -> impl Strategy<Value = Tool> {
    (
        prop::sample::select(&TOOL_NAMES[..]),
        prop::sample::select(&SOURCES[..]),
        words(3),
        prop::sample::subsequence(&TOOL_TAGS[..], 0..=2),
        prop::option::of((prop::sample::select(&["city", "path"][..]), words(2))),
        // Mostly no owners: owners normally come from skill registration.
        prop::option::weighted(0.1, prop::sample::subsequence(&SKILL_NAMES[..], 1..=2)),
        // Rarely invalid: an empty name or a non-object schema.
        prop::sample::select(&[0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2][..]),
    )
        .prop_map(|(name, source, description, tags, param, skills, bad)| {
            let mut tool = Tool::new(if bad == 1 { "" } else { name }, description).with_tags(tags);
            if let Some(source) = source {
                tool = tool.with_source(source);
            }
            if let Some((param, doc)) = param {
                tool = tool.with_input_schema(json!({
                    "type": "object",
                    "properties": { param: { "type": "string", "description": doc } }
                }));
            }
            if bad == 2 {
                tool = tool.with_input_schema(json!("not a schema"));
            }
            if let Some(skills) = skills {
                tool = tool.with_skills(skills);
            }
            tool
        })
}

fn tool_key() -> impl Strategy<Value = String> {
    prop::sample::select(all_tool_keys())
}

fn skill() -> impl Strategy<Value = (Skill, Vec<Tool>)> {
    (
        prop::sample::select(&SKILL_NAMES[..]),
        words(3),
        prop::sample::select(&CATEGORIES[..]),
        prop::sample::subsequence(&TOOL_TAGS[..], 0..=1),
        prop::collection::vec(tool_key(), 0..=1),
        prop::sample::subsequence(&SKILL_NAMES[..], 0..=1),
        words(3),
        prop::collection::vec(tool(), 0..=2),
    )
        .prop_map(
            |(name, description, category, tags, listed, deps, example, bundled)| {
                let skill = Skill::new(name, description)
                    .with_category(category)
                    .with_tags(tags)
                    .with_tools(listed)
                    .with_dependencies(deps)
                    .with_examples([example]);
                (skill, bundled)
            },
        )
}

fn hook() -> impl Strategy<Value = Hook> {
    (
        prop::sample::select(&HOOK_IDS[..]),
        prop::sample::select(&HookEvent::ALL[..]),
        prop::sample::select(&MATCHERS[..]),
        -1i32..=1,
    )
        .prop_map(|(id, event, matcher, priority)| {
            Hook::new(id, event, matcher).with_priority(priority)
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => tool().prop_map(Op::Insert),
        1 => tool().prop_map(Op::Upsert),
        1 => tool().prop_map(Op::Update),
        1 => tool_key().prop_map(Op::UnregisterTool),
        3 => tool().prop_map(Op::RegisterTool),
        1 => tool_key().prop_map(Op::RemoveTool),
        3 => skill().prop_map(|(s, t)| Op::RegisterSkill(s, t)),
        2 => prop::sample::select(&SKILL_NAMES[..]).prop_map(|s| Op::UnregisterSkill(s.into())),
        1 => hook().prop_map(Op::RegisterHook),
        1 => hook().prop_map(Op::UpdateHook),
        1 => prop::sample::select(&HOOK_IDS[..]).prop_map(|h| Op::RemoveHook(h.into())),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
    ]
}

// -------------------------------------------------------------------------------------------
// The model
// -------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq)]
struct Model {
    tools: BTreeMap<String, Tool>,
    skills: BTreeMap<String, Skill>,
    hooks: BTreeMap<String, Hook>,
    handlers: BTreeSet<String>,
    hook_handlers: BTreeSet<String>,
}

/// The kinds of failure the model predicts; actual errors are mapped onto them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    Duplicate,
    NotFound,
    Invalid,
    ToolInUse,
    UnknownTool,
    MissingDependency,
    DependencyCycle,
    SkillNotFound,
    DependedOn,
}

fn store_fail(e: &StoreError) -> Option<Fail> {
    match e {
        StoreError::DuplicateKey { .. } => Some(Fail::Duplicate),
        StoreError::NotFound { .. } => Some(Fail::NotFound),
        StoreError::InvalidRecord { .. } => Some(Fail::Invalid),
        _ => None,
    }
}

fn skill_fail(e: &SkillError) -> Option<Fail> {
    match e {
        SkillError::Store(e) => store_fail(e),
        SkillError::ToolInUse { .. } => Some(Fail::ToolInUse),
        SkillError::UnknownTool { .. } => Some(Fail::UnknownTool),
        SkillError::MissingDependency { .. } => Some(Fail::MissingDependency),
        SkillError::DependencyCycle { .. } => Some(Fail::DependencyCycle),
        SkillError::NotFound { .. } => Some(Fail::SkillNotFound),
        SkillError::DependedOn { .. } => Some(Fail::DependedOn),
    }
}

/// The model's own (independent, deliberately plain) statement of the validity rules the
/// generators can break.
fn tool_is_valid(tool: &Tool) -> bool {
    !tool.name.is_empty() && tool.input_schema.to_value().is_object()
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// Which (table, key) pairs a successful operation wrote, for the version check at commit.
type Touched = BTreeSet<(&'static str, String)>;

impl Model {
    fn write_tool(&mut self, tool: &Tool, mode: &str, touched: &mut Touched) -> Result<(), Fail> {
        if !tool_is_valid(tool) {
            return Err(Fail::Invalid);
        }
        let key = tool.qualified_name();
        match (mode, self.tools.contains_key(&key)) {
            ("insert", true) => return Err(Fail::Duplicate),
            ("update", false) => return Err(Fail::NotFound),
            _ => {}
        }
        self.tools.insert(key.clone(), tool.clone());
        touched.insert(("tools", key));
        Ok(())
    }

    fn unregister_tool(&mut self, key: &str, touched: &mut Touched) -> Result<(), Fail> {
        if self
            .skills
            .values()
            .any(|s| s.tools.iter().any(|t| t == key))
        {
            return Err(Fail::ToolInUse);
        }
        if self.tools.remove(key).is_none() {
            return Err(Fail::NotFound);
        }
        touched.insert(("tools", key.to_string()));
        // A handler belongs to its tool: it goes with it, whatever removed the tool.
        if self.handlers.remove(key) {
            touched.insert(("handlers", key.to_string()));
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op, touched: &mut Touched) -> Result<(), Fail> {
        match op {
            Op::Insert(t) => self.write_tool(t, "insert", touched),
            Op::Upsert(t) => self.write_tool(t, "upsert", touched),
            Op::Update(t) => self.write_tool(t, "update", touched),
            Op::UnregisterTool(key) => self.unregister_tool(key, touched),
            Op::RegisterTool(t) => {
                self.write_tool(t, "insert", touched)?;
                let key = t.qualified_name();
                self.handlers.insert(key.clone());
                touched.insert(("handlers", key));
                Ok(())
            }
            Op::RemoveTool(key) => self.unregister_tool(key, touched),
            Op::RegisterSkill(skill, bundled) => self.register_skill(skill, bundled, touched),
            Op::UnregisterSkill(name) => self.unregister_skill(name, touched),
            Op::RegisterHook(h) => {
                if !hook_is_valid(h) {
                    return Err(Fail::Invalid);
                }
                if self.hooks.contains_key(&h.id) {
                    return Err(Fail::Duplicate);
                }
                self.hooks.insert(h.id.clone(), h.clone());
                self.hook_handlers.insert(h.id.clone());
                touched.insert(("hooks", h.id.clone()));
                touched.insert(("hook_handlers", h.id.clone()));
                Ok(())
            }
            Op::UpdateHook(h) => {
                if !hook_is_valid(h) {
                    return Err(Fail::Invalid);
                }
                if !self.hooks.contains_key(&h.id) {
                    return Err(Fail::NotFound);
                }
                self.hooks.insert(h.id.clone(), h.clone());
                touched.insert(("hooks", h.id.clone()));
                Ok(())
            }
            Op::RemoveHook(id) => {
                if self.hooks.remove(id).is_none() {
                    return Err(Fail::NotFound);
                }
                touched.insert(("hooks", id.clone()));
                if self.hook_handlers.remove(id) {
                    touched.insert(("hook_handlers", id.clone()));
                }
                Ok(())
            }
            Op::Commit | Op::Abort => Ok(()),
        }
    }

    /// Registration as the ownership rule in `skills::registry` states it. The caller rolls
    /// the model back on error (all or nothing).
    fn register_skill(
        &mut self,
        skill: &Skill,
        bundled: &[Tool],
        touched: &mut Touched,
    ) -> Result<(), Fail> {
        if skill.dependencies.contains(&skill.name) {
            return Err(Fail::Invalid);
        }
        if self.skills.contains_key(&skill.name) {
            return Err(Fail::Duplicate);
        }
        let mut keys = Vec::new();
        for tool in bundled {
            // A tool that names no source comes from its skill.
            let mut tool = tool.clone();
            if tool.source.is_none() {
                tool.source = Some(skill.name.clone());
            }
            if !tool_is_valid(&tool) {
                return Err(Fail::Invalid);
            }
            let key = tool.qualified_name();
            let mut owners = self
                .tools
                .get(&key)
                .map(|t| t.skills.clone())
                .unwrap_or_default();
            for owner in &tool.skills {
                push_unique(&mut owners, owner);
            }
            push_unique(&mut owners, &skill.name);
            let mut stored = tool.clone();
            stored.skills = owners;
            self.tools.insert(key.clone(), stored);
            touched.insert(("tools", key.clone()));
            keys.push(key);
        }
        for listed in &skill.tools {
            if !keys.contains(listed) && !self.tools.contains_key(listed) {
                return Err(Fail::UnknownTool);
            }
        }
        let mut stored = skill.clone();
        for key in &keys {
            push_unique(&mut stored.tools, key);
        }
        self.skills.insert(skill.name.clone(), stored);
        touched.insert(("skills", skill.name.clone()));
        self.check_dependencies(&skill.name, &mut Vec::new())
    }

    fn check_dependencies(&self, name: &str, path: &mut Vec<String>) -> Result<(), Fail> {
        if path.iter().any(|p| p == name) {
            return Err(Fail::DependencyCycle);
        }
        let Some(skill) = self.skills.get(name) else {
            return Err(Fail::MissingDependency);
        };
        path.push(name.to_string());
        for dependency in &skill.dependencies {
            self.check_dependencies(dependency, path)?;
        }
        path.pop();
        Ok(())
    }

    fn unregister_skill(&mut self, name: &str, touched: &mut Touched) -> Result<(), Fail> {
        if self
            .skills
            .values()
            .any(|s| s.dependencies.iter().any(|d| d == name))
        {
            return Err(Fail::DependedOn);
        }
        if self.skills.remove(name).is_none() {
            return Err(Fail::SkillNotFound);
        }
        touched.insert(("skills", name.to_string()));
        let owned: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, t)| t.skills.iter().any(|s| s == name))
            .map(|(k, _)| k.clone())
            .collect();
        for key in owned {
            let listed = self.skills.values().any(|s| s.tools.contains(&key));
            let Some(tool) = self.tools.get_mut(&key) else {
                continue;
            };
            tool.skills.retain(|s| s != name);
            if tool.skills.is_empty() && !listed {
                self.tools.remove(&key);
                // The tool's handler goes with it.
                if self.handlers.remove(&key) {
                    touched.insert(("handlers", key.clone()));
                }
            }
            touched.insert(("tools", key));
        }
        Ok(())
    }

    fn exists(&self, table: &str, key: &str) -> bool {
        match table {
            "tools" => self.tools.contains_key(key),
            "skills" => self.skills.contains_key(key),
            "hooks" => self.hooks.contains_key(key),
            "handlers" => self.handlers.contains(key),
            "hook_handlers" => self.hook_handlers.contains(key),
            _ => false,
        }
    }
}

fn hook_is_valid(hook: &Hook) -> bool {
    !hook.id.is_empty() && !hook.matcher.is_empty()
}

// -------------------------------------------------------------------------------------------
// Applying an operation to the store
// -------------------------------------------------------------------------------------------

fn apply_store(tx: &mut WriteTxn, op: &Op) -> Result<(), Result<Fail, String>> {
    let store_err = |e: StoreError| store_fail(&e).ok_or_else(|| format!("{e:?}"));
    let skill_err = |e: SkillError| skill_fail(&e).ok_or_else(|| format!("{e:?}"));
    match op {
        Op::Insert(t) => tx.insert(&TOOLS, t.clone()).map(drop).map_err(store_err),
        Op::Upsert(t) => tx.upsert(&TOOLS, t.clone()).map(drop).map_err(store_err),
        Op::Update(t) => tx.update(&TOOLS, t.clone()).map(drop).map_err(store_err),
        Op::UnregisterTool(key) => unregister_tool(tx, key).map(drop).map_err(skill_err),
        Op::RegisterTool(t) => exec::register_tool(tx, t.clone(), |v| async move { Ok(v) })
            .map(drop)
            .map_err(store_err),
        Op::RemoveTool(key) => exec::remove_tool(tx, key).map(drop).map_err(skill_err),
        Op::RegisterSkill(s, bundled) => register_skill(tx, s.clone(), bundled.clone())
            .map(drop)
            .map_err(skill_err),
        Op::UnregisterSkill(name) => unregister_skill(tx, name).map(drop).map_err(skill_err),
        Op::RegisterHook(h) => exec::register_hook(tx, h.clone(), |_| async {
            Ok(capstore::HookOutcome::Continue)
        })
        .map(drop)
        .map_err(store_err),
        Op::UpdateHook(h) => tx.update(&HOOKS, h.clone()).map(drop).map_err(store_err),
        Op::RemoveHook(id) => exec::remove_hook(tx, id).map(drop).map_err(store_err),
        Op::Commit | Op::Abort => Ok(()),
    }
}

// -------------------------------------------------------------------------------------------
// Checks
// -------------------------------------------------------------------------------------------

type IndexModel = BTreeMap<String, BTreeSet<String>>;

fn index_of<'a, V: 'a>(
    rows: impl Iterator<Item = (&'a String, &'a V)>,
    values: impl Fn(&V) -> Vec<String>,
) -> IndexModel {
    let mut index = IndexModel::new();
    for (key, row) in rows {
        for value in values(row) {
            index.entry(value).or_default().insert(key.clone());
        }
    }
    index
}

fn check_index<R: Record>(
    snap: &Snapshot,
    table: &Table<R>,
    name: &str,
    want: &IndexModel,
) -> Result<(), TestCaseError> {
    let got: BTreeMap<String, usize> = snap
        .index_values(table, name)?
        .map(|(v, n)| (v.to_string(), n))
        .collect();
    let want_counts: BTreeMap<String, usize> = want
        .iter()
        .map(|(v, keys)| (v.clone(), keys.len()))
        .collect();
    prop_assert_eq!(got, want_counts, "index_values of `{}`", name);
    for (value, keys) in want {
        let got: BTreeSet<String> = snap
            .by_index(table, name, value)?
            .map(|(k, _)| k.to_string())
            .collect();
        prop_assert_eq!(&got, keys, "by_index `{}` = {:?}", name, value);
        prop_assert_eq!(snap.count_by_index(table, name, value)?, keys.len());
    }
    prop_assert_eq!(snap.count_by_index(table, name, "no-such-value")?, 0);
    Ok(())
}

fn check_tables(snap: &Snapshot, m: &Model) -> Result<(), TestCaseError> {
    let tools: BTreeMap<String, Tool> = snap
        .iter(&TOOLS)?
        .map(|(k, t)| (k.to_string(), t.clone()))
        .collect();
    prop_assert_eq!(&tools, &m.tools);
    prop_assert_eq!(snap.count(&TOOLS)?, m.tools.len());
    let skills: BTreeMap<String, Skill> = snap
        .iter(&SKILLS)?
        .map(|(k, s)| (k.to_string(), s.clone()))
        .collect();
    prop_assert_eq!(&skills, &m.skills);
    let hooks: BTreeMap<String, Hook> = snap
        .iter(&HOOKS)?
        .map(|(k, h)| (k.to_string(), h.clone()))
        .collect();
    prop_assert_eq!(&hooks, &m.hooks);
    let handlers: BTreeSet<String> = snap
        .iter(&HANDLERS)?
        .keys()
        .map(|k| k.to_string())
        .collect();
    prop_assert_eq!(&handlers, &m.handlers);
    let hook_handlers: BTreeSet<String> = snap
        .iter(&HOOK_HANDLERS)?
        .keys()
        .map(|k| k.to_string())
        .collect();
    prop_assert_eq!(&hook_handlers, &m.hook_handlers);

    let t = m.tools.iter();
    check_index(
        snap,
        &TOOLS,
        "name",
        &index_of(t.clone(), |t| vec![t.name.clone()]),
    )?;
    check_index(
        snap,
        &TOOLS,
        "source",
        &index_of(t.clone(), |t| t.source.iter().cloned().collect()),
    )?;
    check_index(
        snap,
        &TOOLS,
        "tags",
        &index_of(t.clone(), |t| t.tags.clone()),
    )?;
    check_index(snap, &TOOLS, "skill", &index_of(t, |t| t.skills.clone()))?;
    let s = m.skills.iter();
    let category = |s: &Skill| {
        if s.category.is_empty() {
            vec![]
        } else {
            vec![s.category.clone()]
        }
    };
    check_index(snap, &SKILLS, "category", &index_of(s.clone(), category))?;
    check_index(
        snap,
        &SKILLS,
        "tags",
        &index_of(s.clone(), |s| s.tags.clone()),
    )?;
    check_index(
        snap,
        &SKILLS,
        "tool",
        &index_of(s.clone(), |s| s.tools.clone()),
    )?;
    check_index(
        snap,
        &SKILLS,
        "dependency",
        &index_of(s, |s| s.dependencies.clone()),
    )?;
    let h = m.hooks.iter();
    check_index(
        snap,
        &HOOKS,
        "event",
        &index_of(h.clone(), |h| vec![h.event.as_str().to_string()]),
    )?;
    check_index(
        snap,
        &HOOKS,
        "matcher",
        &index_of(h, |h| vec![h.matcher.clone()]),
    )?;
    Ok(())
}

fn documents<R>(
    rows: &BTreeMap<String, R>,
    tokenizer: &TokenizerConfig,
    fields_of: impl Fn(&R, &mut TextFields<'_>),
    field_names: &[&str],
) -> BTreeMap<String, Document> {
    let tokenizer = Tokenizer::new(tokenizer.clone());
    rows.iter()
        .map(|(key, row)| {
            let mut fields = TextFields::new(&tokenizer);
            fields_of(row, &mut fields);
            let doc = field_names
                .iter()
                .fold(Document::new(), |doc, f| match fields.tokens(f) {
                    Some(tokens) => {
                        doc.with_field(f, tokens.iter().map(|t| t.to_string()).collect())
                    }
                    None => doc,
                });
            (key.clone(), doc)
        })
        .collect()
}

fn check_bm25<R: Record>(
    snap: &Snapshot,
    table: &Table<R>,
    brute: &Reference<'_>,
) -> Result<(), TestCaseError> {
    let index = snap.text_index(table)?;
    prop_assert_eq!(index.len(), brute.docs.len());
    prop_assert_eq!(index.stats().n_docs as usize, brute.docs.len());
    let keys: Vec<String> = index.keys().iter().map(|k| k.to_string()).collect();
    prop_assert_eq!(keys, brute.docs.keys().cloned().collect::<Vec<_>>());
    for (key, doc) in &brute.docs {
        let got = index.doc_len(key).map(f64::from);
        prop_assert!(
            got.is_some_and(|g| close(g, brute.dl(doc))),
            "doc_len({}) = {:?}, model {}",
            key,
            got,
            brute.dl(doc)
        );
    }
    for query in QUERIES {
        let terms = snap.tokenize(table, query)?;
        for term in &terms {
            prop_assert_eq!(index.doc_freq(term), brute.df(term), "df({})", term);
        }
        let want = brute.search(&terms);
        let hits = snap.search(table, query, 100)?;
        prop_assert_eq!(
            hits.len(),
            want.len(),
            "{:?}: hits {:?}",
            query,
            hits.iter().map(|h| &h.key).collect::<Vec<_>>()
        );
        for (rank, (hit, (want_key, want_score))) in hits.iter().zip(&want).enumerate() {
            let got = f64::from(hit.score);
            prop_assert!(hit.score.is_finite());
            prop_assert!(
                close(got, *want_score),
                "{:?} rank {}: {} scored {}, model has {} with {}",
                query,
                rank,
                hit.key,
                got,
                want_key,
                want_score
            );
            let own = brute.score(&brute.docs[&*hit.key], &terms);
            prop_assert!(
                close(got, own),
                "{:?}: {} scored {}, model {}",
                query,
                hit.key,
                got,
                own
            );
        }
        for w in hits.windows(2) {
            prop_assert!(
                w[0].score > w[1].score || (w[0].score == w[1].score && w[0].key < w[1].key),
                "{:?}: out of order: {} before {}",
                query,
                w[0].key,
                w[1].key
            );
        }
    }
    Ok(())
}

fn check_text(snap: &Snapshot, m: &Model) -> Result<(), TestCaseError> {
    let options = ToolTextOptions::default();
    let tools = Reference {
        config: &options.index,
        docs: documents(&m.tools, &options.tokenizer, tool_text, &TOOL_TEXT_FIELDS),
    };
    check_bm25(snap, &TOOLS, &tools)?;
    let skill_config = snap.text_index(&SKILLS)?.config().clone();
    let skill_fields = ["name", "description", "tags", "category", "examples"];
    let skills = Reference {
        config: &skill_config,
        // Skills are tokenized like tools (one tokenization of a turn serves both searches).
        docs: documents(&m.skills, &options.tokenizer, skill_text, &skill_fields),
    };
    check_bm25(snap, &SKILLS, &skills)
}

/// A store built from nothing with the model's records, in key order.
fn rebuilt(m: &Model) -> Result<Store, TestCaseError> {
    let store = Store::new();
    store.write(|tx| {
        for tool in m.tools.values() {
            tx.insert(&TOOLS, tool.clone())?;
        }
        for skill in m.skills.values() {
            tx.insert(&SKILLS, skill.clone())?;
        }
        Ok::<_, StoreError>(())
    })?;
    Ok(store)
}

fn policies() -> Vec<SelectionPolicy> {
    let tight = SelectionPolicy {
        max_tools: 2,
        min_relative_score: 0.3,
        pinned_skills: vec!["files".into()],
        pinned_tools: vec!["fs/get_weather".into()],
        exclude_tags: vec!["net".into()],
        token_budget: Some(400),
        ..SelectionPolicy::default()
    };
    vec![SelectionPolicy::default(), tight]
}

fn comparable(mut selection: Selection) -> Selection {
    selection.version = 0;
    selection
}

fn check_selection(snap: &Snapshot, m: &Model) -> Result<(), TestCaseError> {
    let fresh = rebuilt(m)?.snapshot();
    for policy in policies() {
        let builder = ContextBuilder::with_policy(policy.clone())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        for message in MESSAGES {
            let turn = Turn::new(message).with_recent_tools(["send_mail"]);
            let got = builder
                .select(snap, &turn)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want = builder
                .select(&fresh, &turn)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(got.tools.len() <= policy.max_tools + policy.pinned_tools.len() + 4);
            prop_assert!(got.tools.iter().all(|t| t.score.is_finite()));
            prop_assert_eq!(comparable(got), comparable(want), "message {:?}", message);
        }
    }
    Ok(())
}

fn check(snap: &Snapshot, m: &Model) -> Result<(), TestCaseError> {
    check_tables(snap, m)?;
    check_text(snap, m)?;
    check_selection(snap, m)
}

// -------------------------------------------------------------------------------------------
// The run
// -------------------------------------------------------------------------------------------

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let store = Store::new();
    let mut committed = Model::default();
    let mut working = Model::default();
    let mut touched = Touched::new();
    let mut tx: Option<WriteTxn> = None;
    let mut version = 0;

    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Commit => {
                if let Some(t) = tx.take() {
                    let changed = touched.iter().any(|(table, key)| {
                        committed.exists(table, key) || working.exists(table, key)
                    });
                    let info = t.commit();
                    if changed {
                        version += 1;
                    }
                    prop_assert_eq!(info.version, version, "step {}: commit version", step);
                    committed = working.clone();
                }
                touched.clear();
            }
            Op::Abort => {
                drop(tx.take());
                working = committed.clone();
                touched.clear();
            }
            write => {
                let t = tx.get_or_insert_with(|| store.begin());
                let mut next = working.clone();
                let mut next_touched = touched.clone();
                let expected = next.apply(write, &mut next_touched);
                let got = apply_store(t, write);
                match (expected, got) {
                    (Ok(()), Ok(())) => {
                        working = next;
                        touched = next_touched;
                    }
                    (Err(want), Err(Ok(got))) if want == got => {}
                    (want, got) => {
                        return Err(TestCaseError::fail(format!(
                            "step {step}: {write:?}: model says {want:?}, store says {got:?}"
                        )));
                    }
                }
                check(t.view(), &working)?;
            }
        }
        let snap = store.snapshot();
        prop_assert_eq!(snap.version(), version);
        check(&snap, &committed)?;
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    })]
    #[test]
    fn public_api_agrees_with_a_model(ops in prop::collection::vec(op(), 1..12)) {
        run(&ops)?;
    }
}

/// A fixed sequence through every kind of operation, so the checks run even before proptest
/// finds anything, and so a reader sees what a case looks like.
#[test]
fn a_fixed_sequence_agrees_with_the_model() {
    let weather = Tool::new("get_weather", "weather in a city").with_tags(["net"]);
    let read = Tool::new("read_file", "read a file").with_source("fs");
    let ops = vec![
        Op::RegisterTool(weather.clone()),
        Op::Insert(weather.clone()),
        Op::RegisterSkill(
            Skill::new("files", "file work").with_tools(["get_weather"]),
            vec![read.clone()],
        ),
        Op::RegisterSkill(
            Skill::new("travel", "trips").with_dependencies(["files"]),
            vec![],
        ),
        Op::Commit,
        Op::UnregisterSkill("files".into()),
        Op::UnregisterTool("get_weather".into()),
        Op::RegisterHook(Hook::new("audit", HookEvent::PreToolUse, "*")),
        Op::UpdateHook(Hook::new("audit", HookEvent::PostToolUse, "fs/*")),
        Op::Commit,
        Op::UnregisterSkill("travel".into()),
        Op::UnregisterSkill("files".into()),
        Op::RemoveTool("get_weather".into()),
        Op::RemoveHook("audit".into()),
        Op::Abort,
        Op::Commit,
    ];
    run(&ops).expect("the fixed sequence agrees with the model");
}

/// The case proptest shrank the `dropped`-order bug to: two tools dropped by a tag filter were
/// reported in the index's internal order, which differed from a rebuilt store's.
#[test]
fn tag_filtered_near_misses_are_reported_alike_on_equal_stores() {
    let weather = Tool::new("get_weather", "").with_tags(["net"]);
    let read = Tool::new("read_file", "")
        .with_source("fs")
        .with_tags(["net"])
        .with_input_schema(json!({
            "type": "object",
            "properties": { "city": { "type": "string", "description": "" } }
        }));
    let ops = vec![
        Op::Insert(weather),
        Op::RegisterSkill(Skill::new("files", "").with_examples([""]), vec![read]),
    ];
    run(&ops).expect("equal stores select and explain alike");
}
