//! Which text of a tool is searched, field by field.

use serde_json::Value;

use crate::bm25::{IndexConfig, TokenizerConfig};
use crate::store::TextFields;

use super::record::Tool;
use super::schema::walk_from;

/// How the tools table's text index turns tools into terms and scores them: the tokenizer and
/// the BM25 parameters with field weights (fields: `name`, `description`, `tags`, `params`,
/// `param_docs`, `skills`; a field weighing 0 is left out of the index).
///
/// # Defaults, and why
/// Measured with `capstore eval` on three public tool-retrieval sets (MetaTool, Seal-Tools,
/// StableToolBench; `BENCHMARKS.md`, "Selection quality"), one configuration for all:
/// - the default tokenizer (identifier splitting, stop words) **plus light stemming**
///   ([`crate::bm25::stem`]): users write "papers", "translating", tools say "paper",
///   "translate" (+5.7 nDCG@10 on MetaTool, +1.6 on StableToolBench, −1.1 on Seal-Tools);
/// - field weights `name` = 2 (a tool's name is its most specific text) and `param_docs` = 0.5
///   (parameter descriptions help, but they are long and repetitive: "The type of ...");
///   every other field 1;
/// - BM25 `k1` = 1.2, `b` = 0.75 (other values moved nDCG@10 by less than a point, in no
///   consistent direction).
///
/// [`Store::new`](crate::Store::new) uses [`ToolTextOptions::default`];
/// [`Store::with_tool_text`](crate::Store::with_tool_text) takes others, which is how the
/// `capstore eval` command measures each lever.
///
/// ```
/// use capstore::tools::ToolTextOptions;
/// use capstore::{Store, Tool, TOOLS};
///
/// let mut options = ToolTextOptions::default();
/// options.index.field_weights.insert("param_docs".into(), 0.0);
/// options.tokenizer.stemming = false;
/// let store = Store::with_tool_text(options)?;
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("read_file", "Read a file")))?;
/// assert_eq!(store.snapshot().search(&TOOLS, "read files", 1)?.len(), 1);
///
/// let default = ToolTextOptions::default();
/// assert!(default.tokenizer.stemming);
/// assert_eq!(default.index.field_weight("name"), 2.0);
/// assert_eq!(default.index.field_weight("param_docs"), 0.5);
/// assert_eq!(default.index.field_weight("description"), 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ToolTextOptions {
    /// How text becomes terms (documents and queries alike). Default: the default
    /// [`TokenizerConfig`] with `stemming` on.
    pub tokenizer: TokenizerConfig,
    /// `k1`, `b` and the field weights. Default: k1 = 1.2, b = 0.75, `name` 2, `param_docs`
    /// 0.5, other fields 1.
    pub index: IndexConfig,
}

/// The default weight of the `name` field of the tools table.
pub const DEFAULT_NAME_WEIGHT: f32 = 2.0;
/// The default weight of the `param_docs` field (parameter descriptions) of the tools table.
pub const DEFAULT_PARAM_DOCS_WEIGHT: f32 = 0.5;

impl Default for ToolTextOptions {
    fn default() -> Self {
        let mut index = IndexConfig::default();
        index
            .field_weights
            .insert("name".into(), DEFAULT_NAME_WEIGHT);
        index
            .field_weights
            .insert("param_docs".into(), DEFAULT_PARAM_DOCS_WEIGHT);
        ToolTextOptions {
            tokenizer: TokenizerConfig {
                stemming: true,
                ..TokenizerConfig::default()
            },
            index,
        }
    }
}

/// The fields [`tool_text`] fills, in the order it fills them: a tool's whole text is their
/// terms in this order.
///
/// ```
/// use capstore::bm25::Tokenizer;
/// use capstore::store::TextFields;
/// use capstore::tools::{TOOL_TEXT_FIELDS, tool_text};
/// use capstore::Tool;
///
/// let tokenizer = Tokenizer::default();
/// let mut fields = TextFields::new(&tokenizer);
/// tool_text(&Tool::new("get_weather", "Current weather").with_tags(["web"]), &mut fields);
/// let all: Vec<&str> = TOOL_TEXT_FIELDS.iter().filter_map(|f| fields.tokens(f)).flatten().collect();
/// assert_eq!(all, ["get", "weather", "current", "weather", "web"]);
/// ```
pub const TOOL_TEXT_FIELDS: [&str; 6] = [
    "name",
    "description",
    "tags",
    "params",
    "param_docs",
    "skills",
];

/// Fills a tool's text document: `name`, `description`, `tags`, `params` (parameter names),
/// `param_docs` (parameter descriptions) and `skills` (names of the skills that bundle it).
///
/// ```
/// use capstore::bm25::Tokenizer;
/// use capstore::store::TextFields;
/// use capstore::{Tool, tools::tool_text};
/// use serde_json::json;
///
/// let tool = Tool::new("get_weather", "Current weather").with_input_schema(json!({
///     "type": "object",
///     "properties": { "city": { "type": "string", "description": "City name" } }
/// }));
/// let tokenizer = Tokenizer::default();
/// let mut fields = TextFields::new(&tokenizer);
/// tool_text(&tool, &mut fields);
/// assert_eq!(fields.tokens("name"), Some(vec!["get", "weather"]));
/// assert_eq!(fields.tokens("params"), Some(vec!["city"]));
/// assert_eq!(fields.tokens("param_docs"), Some(vec!["city", "name"]));
/// ```
pub fn tool_text(tool: &Tool, fields: &mut TextFields<'_>) {
    fields.add("name", &tool.name);
    fields.add("description", &tool.description);
    for tag in &tool.tags {
        fields.add("tags", tag);
    }
    tool.input_schema.walk(&mut |name, description| {
        fields.add("params", name);
        if let Some(description) = description {
            fields.add("param_docs", description);
        }
    });
    for skill in &tool.skills {
        fields.add("skills", skill);
    }
}

/// Calls `visit(name, description)` for every property of a JSON Schema, nested ones included
/// (through `properties`, `items`, `additionalProperties`, `anyOf`, `oneOf`, `allOf`), in
/// document order (a `Value`'s maps are in key order), to a bounded depth (16 levels).
/// [`InputSchema::walk`](super::InputSchema::walk) does the same on a tool's schema.
///
/// ```
/// use capstore::tools::walk_schema;
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "to": {"type": "string", "description": "Recipient"},
///     "attachments": {"type": "array", "items": {"type": "object", "properties": {
///         "path": {"type": "string"}}}}}});
/// let mut seen = Vec::new();
/// walk_schema(&schema, &mut |name, _| seen.push(name.to_string()));
/// seen.sort();
/// assert_eq!(seen, ["attachments", "path", "to"]);
/// ```
pub fn walk_schema(schema: &Value, visit: &mut dyn FnMut(&str, Option<&str>)) {
    walk_from(schema, visit);
}
