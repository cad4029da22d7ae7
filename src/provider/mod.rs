//! Tool definitions in the shapes providers take: OpenAI chat completions, OpenAI responses,
//! Anthropic messages.
//!
//! Export names follow the policy of [`crate::tools::export_names`], computed over
//! the whole catalog of a snapshot (not just the selected tools), so a tool's exported name does
//! not change from one turn to the next with what else was selected, and the request prefix
//! stays cacheable. [`ToolExport::resolve`] maps a model's tool call back to the qualified name.
//! [`ToolExport::anthropic_with_deferred`] sends the whole catalog to Anthropic with the tools
//! the selection did not choose marked `defer_loading`, for Anthropic's hosted tool search.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};

use crate::Tool;
use crate::context::Selection;
use crate::store::{Snapshot, StoreError};
use crate::tables::TOOLS;
use crate::tools::{NameParts, export_names};

/// A provider's request shape for tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// OpenAI chat completions: `{"type": "function", "function": {name, description, parameters}}`.
    OpenAiChat,
    /// OpenAI responses: `{"type": "function", name, description, parameters}`.
    OpenAiResponses,
    /// Anthropic messages: `{name, description, input_schema}`.
    Anthropic,
}

/// The export names of one snapshot's tools, and the conversion of definitions to JSON.
///
/// ```
/// use capstore::provider::{Provider, ToolExport};
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("search", "Search code").with_source("github"))?;
///     tx.insert(&TOOLS, Tool::new("search", "Search the web").with_source("web"))
/// })?;
/// let snap = store.snapshot();
/// let export = ToolExport::for_snapshot(&snap)?;
/// assert_eq!(export.export_name("github/search"), Some("github__search"));
/// assert_eq!(export.resolve("web__search"), Some("web/search"));
/// let tool = snap.get(&TOOLS, "web/search")?.expect("present");
/// let json = export.tool_json(Provider::Anthropic, "web/search", tool);
/// assert_eq!(json["name"], "web__search");
/// # Ok::<(), capstore::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolExport {
    version: u64,
    names: BTreeMap<String, String>,
    reverse: HashMap<String, String>,
}

impl ToolExport {
    /// Export names for every tool of `snapshot`. O(n); compute once per snapshot version.
    ///
    /// ```
    /// let export = capstore::provider::ToolExport::for_snapshot(&capstore::Store::new().snapshot())?;
    /// assert_eq!(export.version(), 0);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn for_snapshot(snapshot: &Snapshot) -> Result<Self, StoreError> {
        let names = export_names(snapshot.iter(&TOOLS)?.map(|(key, tool)| NameParts {
            qualified: key,
            name: &tool.name,
            source: tool.source.as_deref(),
        }));
        let reverse = names.iter().map(|(k, v)| (v.clone(), k.clone())).collect();
        Ok(ToolExport {
            version: snapshot.version(),
            names,
            reverse,
        })
    }

    /// The snapshot version the names were computed for.
    ///
    /// ```
    /// # let export = capstore::provider::ToolExport::default();
    /// assert_eq!(export.version(), 0);
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The provider-safe name of a tool (by qualified name).
    ///
    /// ```
    /// # let export = capstore::provider::ToolExport::default();
    /// assert_eq!(export.export_name("missing"), None);
    /// ```
    pub fn export_name(&self, key: &str) -> Option<&str> {
        self.names.get(key).map(String::as_str)
    }

    /// The qualified name behind an exported name, as the model calls it.
    ///
    /// ```
    /// # let export = capstore::provider::ToolExport::default();
    /// assert_eq!(export.resolve("missing"), None);
    /// ```
    pub fn resolve(&self, exported: &str) -> Option<&str> {
        self.reverse.get(exported).map(String::as_str)
    }

    /// One tool's definition in `provider`'s shape. A tool unknown to this export (added after
    /// its snapshot) is exported under its sanitized name.
    ///
    /// ```
    /// use capstore::provider::{Provider, ToolExport};
    /// use capstore::Tool;
    /// let json = ToolExport::default().tool_json(Provider::OpenAiChat, "a.b", &Tool::new("a.b", "d"));
    /// assert_eq!(json["function"]["name"], "a_b");
    /// ```
    pub fn tool_json(&self, provider: Provider, key: &str, tool: &Tool) -> Value {
        let name = self
            .export_name(key)
            .map_or_else(|| crate::tools::sanitize(&tool.name), str::to_string);
        match provider {
            Provider::OpenAiChat => json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": tool.description,
                    "parameters": tool.input_schema.to_value(),
                }
            }),
            Provider::OpenAiResponses => json!({
                "type": "function",
                "name": name,
                "description": tool.description,
                "parameters": tool.input_schema.to_value(),
            }),
            Provider::Anthropic => json!({
                "name": name,
                "description": tool.description,
                "input_schema": tool.input_schema.to_value(),
            }),
        }
    }

    /// A selection's tools, in send order, in `provider`'s shape: the `tools` array of a request.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::provider::{Provider, ToolExport};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
    /// let snap = store.snapshot();
    /// let selection = ContextBuilder::new().select(&snap, &Turn::new("weather?"))?;
    /// let tools = ToolExport::for_snapshot(&snap)?.selection_json(Provider::OpenAiResponses, &selection);
    /// assert_eq!(tools[0]["name"], "get_weather");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn selection_json(&self, provider: Provider, selection: &Selection) -> Vec<Value> {
        selection
            .tools
            .iter()
            .map(|t| self.tool_json(provider, &t.key, &t.tool))
            .collect()
    }

    /// The whole catalog of `snapshot` for Anthropic's messages API, for use with Anthropic's
    /// hosted tool search: the selection's tools first, in send order, as
    /// [`selection_json`](Self::selection_json) gives them, then every other tool of the
    /// snapshot in key order, marked `"defer_loading": true`. The model sees the selected
    /// definitions at once and can find the deferred ones with the tool search tool, which
    /// you add to the request yourself (e.g. `{"type": "tool_search_tool_bm25_20251119", "name":
    /// "tool_search_tool_bm25"}`); Anthropic requires at least one tool not to be deferred.
    ///
    /// The order is stable for a given selection and catalog, so the request prefix stays
    /// cacheable. Fails only if `snapshot` is of a store without the built-in tools table.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::provider::ToolExport;
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city"))?;
    ///     tx.insert(&TOOLS, Tool::new("send_email", "Send an email"))?;
    ///     tx.insert(&TOOLS, Tool::new("read_file", "Read a file"))
    /// })?;
    /// let snap = store.snapshot();
    /// let selection = ContextBuilder::new().select(&snap, &Turn::new("weather in Oslo?"))?;
    /// let tools = ToolExport::for_snapshot(&snap)?.anthropic_with_deferred(&snap, &selection)?;
    /// let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    /// assert_eq!(names, ["get_weather", "read_file", "send_email"]);
    /// assert!(tools[0].get("defer_loading").is_none());
    /// assert_eq!(tools[1]["defer_loading"], true);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn anthropic_with_deferred(
        &self,
        snapshot: &Snapshot,
        selection: &Selection,
    ) -> Result<Vec<Value>, StoreError> {
        let mut tools = self.selection_json(Provider::Anthropic, selection);
        let selected: HashSet<&str> = selection.keys().collect();
        for (key, tool) in snapshot.iter(&TOOLS)? {
            if selected.contains(&**key) {
                continue;
            }
            let mut json = self.tool_json(Provider::Anthropic, key, tool);
            if let Value::Object(object) = &mut json {
                object.insert("defer_loading".into(), Value::Bool(true));
            }
            tools.push(json);
        }
        Ok(tools)
    }
}
