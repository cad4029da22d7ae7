//! On-demand discovery: the built-in `search_tools` tool the model can call to pull in tools
//! the builder did not pick, and the "no builder" baseline that sends everything.

use serde::Serialize;
use serde_json::{Value, json};

use crate::Tool;
use crate::store::{Snapshot, StoreError};
use crate::tables::TOOLS;

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
    Tool::new(
        SEARCH_TOOLS,
        "Search the catalog of available tools by what you need to do. Returns matching tools' \
         names and descriptions; they become callable from the next turn on.",
    )
    .with_input_schema(json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "description": "What the tool should do" },
            "limit": { "type": "integer", "description": "How many tools to return (default 5, at most 20)" }
        },
        "required": ["query"]
    }))
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
