//! On-demand discovery: the built-in `search_tools` tool the model can call to pull in tools
//! the builder did not pick, the outline of what it can find (so the model knows when to
//! search), and the "no builder" baseline that sends everything.
//!
//! Cost: the outline reads the skills table and the distinct values of the tools' `source`
//! index, O(skills + sources), never every tool.

use serde::Serialize;
use serde_json::{Value, json};

use crate::skills::SKILLS;
use crate::store::{Snapshot, StoreError};
use crate::tools::{TOOLS, TOOLS_BY_SOURCE, Tool, bare_name};

use super::query_terms::QueryTerms;
use super::selection::{Channel, ListSize, Reason, Reasons, SelectedTool, Selection};

/// The name of the built-in discovery tool.
pub const SEARCH_TOOLS: &str = "search_tools";

/// How many tools `search_tools` returns when the model gives no limit, and at most.
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 20;

/// The definition of `search_tools`, to send beside the selected tools. When the model calls
/// it, run [`search_tools`] and add the found tools to the conversation
/// ([`Conversation::record_discovered`](super::Conversation::record_discovered)), so they are
/// selected from the next turn on.
///
/// ```
/// let def = capstore::context::search_tools_definition();
/// assert_eq!(def.name, "search_tools");
/// assert_eq!(def.input_schema.to_value()["required"][0], "query");
/// ```
pub fn search_tools_definition() -> Tool {
    Tool::new(SEARCH_TOOLS, SEARCH_TOOLS_PURPOSE).with_input_schema(search_tools_schema())
}

/// [`search_tools_definition`] whose description also says what the search can find: the
/// [`catalog_outline`] of `snapshot` (its skills and servers, each with a few of its tools).
/// A model that sees "payments (6 tools: refund_charge, list_charges, ...)" knows to search
/// when the task needs a refund and no refund tool was sent.
///
/// ```
/// use capstore::context::search_tools_definition_for;
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("refund_charge", "Refund a charge").with_source("payments")))?;
/// let def = search_tools_definition_for(&store.snapshot())?;
/// assert!(def.description.contains("payments (1 tool: refund_charge)"), "{}", def.description);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn search_tools_definition_for(snapshot: &Snapshot) -> Result<Tool, StoreError> {
    let outline = catalog_outline(snapshot)?;
    let description = if outline.is_empty() {
        SEARCH_TOOLS_PURPOSE.to_string()
    } else {
        let count = snapshot.count(&TOOLS)?;
        format!("{SEARCH_TOOLS_PURPOSE} Its {count} tools include those of: {outline}.")
    };
    Ok(Tool::new(SEARCH_TOOLS, description).with_input_schema(search_tools_schema()))
}

/// How many groups (skills, then sources) [`catalog_outline`] names before "and N more".
pub const OUTLINE_GROUPS: usize = 30;

/// How many of a group's tools [`catalog_outline`] names.
const OUTLINE_TOOLS: usize = 4;

/// At most this many characters of a skill's description in the outline.
const OUTLINE_DESCRIPTION_CHARS: usize = 80;

/// What a search over `snapshot`'s tools can find, in one line for a tool description: each
/// skill by its description (its first sentence) or, for a skill with no text of its own (an
/// MCP server imported as a skill), by its tools; then each tool source (an MCP server, a
/// plug-in) no skill of the same name stands for, by its tools. At most [`OUTLINE_GROUPS`] groups, in name order, then "and N more". Empty for
/// an empty store.
///
/// ```
/// use capstore::context::catalog_outline;
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool};
/// let store = Store::new();
/// store.write(|tx| {
///     register_skill(tx, Skill::new("email", "Read and send email. Drafts too."), vec![Tool::new("send_email", "Send")])?;
///     register_skill(tx, Skill::new("weather", ""), vec![Tool::new("forecast", ""), Tool::new("alerts", "")])
/// })?;
/// assert_eq!(
///     catalog_outline(&store.snapshot())?,
///     "email (Read and send email.); weather (2 tools: forecast, alerts)"
/// );
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub fn catalog_outline(snapshot: &Snapshot) -> Result<String, StoreError> {
    let mut groups: Vec<String> = Vec::new();
    let mut total = 0;
    let mut skill_names = std::collections::HashSet::new();
    for skill in snapshot.iter(&SKILLS)?.records() {
        skill_names.insert(skill.name.as_str());
        total += 1;
        if groups.len() == OUTLINE_GROUPS {
            continue;
        }
        let first_sentence = skill.description.split_inclusive(". ").next().unwrap_or("");
        let text = first_sentence.trim();
        groups.push(if text.is_empty() {
            let names = skill.tools.iter().map(|k| bare_name(k));
            format!(
                "{} ({})",
                skill.name,
                tools_phrase(skill.tools.len(), names)
            )
        } else {
            format!("{} ({})", skill.name, clip(text, OUTLINE_DESCRIPTION_CHARS))
        });
    }
    for (source, count) in snapshot.index_values(&TOOLS, "source")? {
        if skill_names.contains(&**source) {
            continue;
        }
        total += 1;
        if groups.len() == OUTLINE_GROUPS {
            continue;
        }
        let tools = snapshot.by(&TOOLS_BY_SOURCE, source)?;
        let names = tools.keys().take(OUTLINE_TOOLS).map(|k| bare_name(k));
        groups.push(format!("{source} ({})", tools_phrase(count, names)));
    }
    let more = total - groups.len();
    let mut outline = groups.join("; ");
    if more > 0 {
        outline.push_str(&format!("; and {more} more"));
    }
    Ok(outline)
}

/// "2 tools: forecast, alerts" (the first [`OUTLINE_TOOLS`] names, then "...").
fn tools_phrase<'a>(count: usize, names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.take(OUTLINE_TOOLS).collect();
    let noun = if count == 1 { "tool" } else { "tools" };
    let etc = if count > names.len() { ", ..." } else { "" };
    format!("{count} {noun}: {}{etc}", names.join(", "))
}

/// `text` cut to at most `max` characters, at a character boundary, with "..." when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}...", text[..end].trim_end()),
    }
}

/// What `search_tools` does, the first words of its description.
const SEARCH_TOOLS_PURPOSE: &str = "Search the catalog of available tools by what you need to \
     do. Returns matching tools' names and descriptions; they become callable from the next \
     turn on.";

/// `search_tools`' input schema: a query and an optional limit.
fn search_tools_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "What the tool should do" },
            "limit": { "type": "integer", "description": "How many tools to return (default 5, at most 20)" }
        },
        "required": ["query"]
    })
}

/// One tool found by [`search_tools`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoundTool {
    /// Qualified name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its BM25 score.
    pub score: f32,
}

/// Runs `search_tools` with the model's arguments (`{"query": "...", "limit": n}`) over
/// `snapshot`. Missing or non-string `query` gives an empty result rather than an error: the
/// model sees it found nothing and can try again.
///
/// ```
/// use capstore::context::search_tools;
/// use capstore::{Store, Tool, TOOLS};
/// use serde_json::json;
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("convert_currency", "Convert an amount between currencies")))?;
/// let found = search_tools(&store.snapshot(), &json!({"query": "currency exchange"}))?;
/// assert_eq!(found[0].name, "convert_currency");
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn search_tools(snapshot: &Snapshot, arguments: &Value) -> Result<Vec<FoundTool>, StoreError> {
    let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT));
    Ok(snapshot
        .search(&TOOLS, query, limit)?
        .into_iter()
        .map(|hit| FoundTool {
            name: hit.key.to_string(),
            description: hit.record.description.clone(),
            score: hit.score,
        })
        .collect())
}

/// Every tool, in key order, as a selection: what gets sent without a
/// [`ContextBuilder`](super::ContextBuilder) (today's behaviour of agent SDKs).
///
/// ```
/// use capstore::context::all_tools;
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| { tx.insert(&TOOLS, Tool::new("b", ""))?; tx.insert(&TOOLS, Tool::new("a", "")) })?;
/// assert_eq!(all_tools(&store.snapshot())?.keys().collect::<Vec<_>>(), ["a", "b"]);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn all_tools(snapshot: &Snapshot) -> Result<Selection, StoreError> {
    let mut tools = Vec::new();
    for (rank, key) in snapshot.iter(&TOOLS)?.keys().enumerate() {
        if let Some(tool) = snapshot.get_arc(&TOOLS, key)? {
            tools.push(SelectedTool {
                key: key.clone(),
                tokens: super::estimate_tokens(&tool),
                tool,
                rank,
                score: 0.0,
                reasons: Reasons::one(Reason::Fallback),
                channel: Channel::All,
            });
        }
    }
    let tokens = tools.iter().map(|t| t.tokens).sum();
    let size = ListSize::Tools {
        asks: 0,
        turn_tools: tools.len(),
        max_tools: tools.len(),
    };
    Ok(Selection {
        version: snapshot.version(),
        tools,
        dropped: Vec::new(),
        skills: Vec::new(),
        query: QueryTerms::default(),
        tokens,
        no_match: false,
        size,
    })
}
