//! Tool definitions in the shapes providers take: OpenAI chat completions, OpenAI responses,
//! Anthropic messages.
//!
//! Export names follow the policy of [`crate::tools::export_names`], computed over
//! the whole catalog of a snapshot (not just the selected tools), so a tool's exported name does
//! not change from one turn to the next with what else was selected, and the request prefix
//! stays cacheable. [`ToolExport::resolve`] maps a model's tool call back to the qualified name.
//! [`ToolExport::with_deferred`] gives the complete `tools` array for a provider's hosted tool
//! search ([`ToolSearch`]): the search tool, the selected tools, and the rest of the catalog
//! marked `defer_loading`, so the model can still reach a tool the selection left out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::context::Selection;
use crate::store::{Snapshot, StoreError};
use crate::tools::{NameParts, TOOLS, Tool, export_names};

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
    /// The version at which the snapshot's `tools` table last changed: the names depend on it
    /// alone.
    tools_version: u64,
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
            tools_version: snapshot.table_version(&TOOLS)?,
            names,
            reverse,
        })
    }

    /// The export names of `snapshot` from `cache`, computed ([`for_snapshot`](Self::for_snapshot))
    /// and kept there when the cache holds none, or names computed for another state of the
    /// `tools` table: what a conversation keeps between its turns. The names depend on the
    /// tools alone, so the cache follows that table's version
    /// ([`Snapshot::table_version`]): a commit to other tables (a turn's usage, vectors) keeps
    /// it.
    ///
    /// ```
    /// use capstore::provider::ToolExport;
    /// use capstore::usage::{TurnUse, learn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
    /// let mut cache = None;
    /// let first = ToolExport::cached(&mut cache, &store.snapshot())?;
    /// store.write(|tx| learn(tx, &TurnUse::new(["get_weather"])))?; // usage only
    /// let again = ToolExport::cached(&mut cache, &store.snapshot())?;
    /// assert!(std::sync::Arc::ptr_eq(&first, &again));
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_time", "Time in a city")))?;
    /// let fresh = ToolExport::cached(&mut cache, &store.snapshot())?;
    /// assert_eq!(fresh.export_name("get_time"), Some("get_time"));
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn cached(
        cache: &mut Option<Arc<ToolExport>>,
        snapshot: &Snapshot,
    ) -> Result<Arc<ToolExport>, StoreError> {
        let tools_version = snapshot.table_version(&TOOLS)?;
        if let Some(export) = cache.as_ref().filter(|e| e.tools_version == tools_version) {
            return Ok(Arc::clone(export));
        }
        let export = Arc::new(ToolExport::for_snapshot(snapshot)?);
        *cache = Some(Arc::clone(&export));
        Ok(export)
    }

    /// The snapshot version the names were computed for. A [cached](Self::cached) export
    /// serves later snapshots too, as long as their `tools` table is the same
    /// ([`tools_version`](Self::tools_version)).
    ///
    /// ```
    /// # let export = capstore::provider::ToolExport::default();
    /// assert_eq!(export.version(), 0);
    /// ```
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The version at which the `tools` table the names were computed from last changed
    /// ([`Snapshot::table_version`]): the names hold for every snapshot whose `tools` table
    /// says the same.
    ///
    /// ```
    /// use capstore::provider::ToolExport;
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
    /// assert_eq!(ToolExport::for_snapshot(&store.snapshot())?.tools_version(), 1);
    /// # Ok::<(), capstore::StoreError>(())
    /// ```
    pub fn tools_version(&self) -> u64 {
        self.tools_version
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

    /// The name [`tool_json`](Self::tool_json) sends the tool under `key` by: its export
    /// name, or for a tool unknown to this export (added after its snapshot), its sanitized
    /// name.
    ///
    /// ```
    /// use capstore::provider::ToolExport;
    /// assert_eq!(ToolExport::default().name_to_send("a.b", &capstore::Tool::new("a.b", "")), "a_b");
    /// ```
    pub fn name_to_send(&self, key: &str, tool: &Tool) -> String {
        self.export_name(key)
            .map_or_else(|| crate::tools::sanitize(&tool.name), str::to_string)
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
    /// its snapshot) is exported under its sanitized name. Every object's keys are in sorted
    /// order, so the definition serializes to the same bytes on every turn and in every build
    /// (also where a crate turned on serde_json's `preserve_order`, as rig does): a request's
    /// tools stay a cacheable prefix.
    ///
    /// ```
    /// use capstore::provider::{Provider, ToolExport};
    /// use capstore::Tool;
    /// let json = ToolExport::default().tool_json(Provider::OpenAiChat, "a.b", &Tool::new("a.b", "d"));
    /// assert_eq!(json["function"]["name"], "a_b");
    /// assert_eq!(
    ///     json.to_string(),
    ///     r#"{"function":{"description":"d","name":"a_b","parameters":{"properties":{},"type":"object"}},"type":"function"}"#
    /// );
    /// ```
    pub fn tool_json(&self, provider: Provider, key: &str, tool: &Tool) -> Value {
        let name = self.name_to_send(key, tool);
        let mut json = match provider {
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
        };
        // Keys sorted, so that the definition writes the same bytes in every build: serde_json
        // sorts them by default, but keeps the order written where a crate in the build turned
        // on its `preserve_order` (rig does).
        json.sort_all_objects();
        json
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

    /// The complete `tools` array of a request that uses `search`, a provider's hosted tool
    /// search: the search tool first ([`ToolSearch::tool_json`]), then the selection's tools in
    /// send order as [`selection_json`](Self::selection_json) gives them, then every other tool
    /// of `snapshot` in key order, marked `"defer_loading": true`. The model sees the selected
    /// definitions at once and finds the deferred ones through the search tool; so a tool the
    /// selection missed is one search away rather than out of reach.
    ///
    /// The search tool is never deferred, so the providers' rule that at least one tool is not
    /// deferred holds even for an empty selection. The array's start (the search tool, then the
    /// selection) is the same for the same selection and catalog, so the request prefix stays
    /// cacheable. Anthropic also needs [`ToolSearch::anthropic_beta`] sent as the
    /// `anthropic-beta` header. Costs one pass over the catalog (O(n) JSON values); fails only if
    /// `snapshot` is of a store without the built-in tools table.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::provider::{Provider, ToolExport, ToolSearch};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city"))?;
    ///     tx.insert(&TOOLS, Tool::new("send_email", "Send an email"))?;
    ///     tx.insert(&TOOLS, Tool::new("read_file", "Read a file"))
    /// })?;
    /// let snap = store.snapshot();
    /// let selection = ContextBuilder::new().select(&snap, &Turn::new("weather in Oslo?"))?;
    /// let export = ToolExport::for_snapshot(&snap)?;
    ///
    /// let search = ToolSearch::for_provider(Provider::Anthropic).expect("Anthropic has one");
    /// let tools = export.with_deferred(search, &snap, &selection)?;
    /// assert_eq!(tools[0]["type"], "tool_search_tool_bm25_20251119");
    /// let names: Vec<&str> = tools[1..].iter().filter_map(|t| t["name"].as_str()).collect();
    /// assert_eq!(names, ["get_weather", "read_file", "send_email"]);
    /// assert!(tools[1].get("defer_loading").is_none());
    /// assert_eq!(tools[2]["defer_loading"], true);
    ///
    /// let tools = export.with_deferred(ToolSearch::OpenAiResponses, &snap, &selection)?;
    /// assert_eq!(tools[0], serde_json::json!({ "type": "tool_search" }));
    /// assert_eq!(tools[1]["type"], "function");
    /// assert_eq!(tools[3]["defer_loading"], true);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_deferred(
        &self,
        search: ToolSearch,
        snapshot: &Snapshot,
        selection: &Selection,
    ) -> Result<Vec<Value>, StoreError> {
        let provider = search.provider();
        let mut tools = Vec::with_capacity(1 + snapshot.count(&TOOLS)?);
        tools.push(search.tool_json());
        tools.extend(self.selection_json(provider, selection));
        let selected: HashSet<&str> = selection.keys().collect();
        for (key, tool) in snapshot.iter(&TOOLS)? {
            if selected.contains(&**key) {
                continue;
            }
            let mut json = self.tool_json(provider, key, tool);
            if let Value::Object(object) = &mut json {
                object.insert("defer_loading".into(), Value::Bool(true));
                // In its sorted place, as `tool_json` sorts the rest.
                object.sort_keys();
            }
            tools.push(json);
        }
        Ok(tools)
    }
}

/// A provider's hosted tool search: the tool, sent in the request's `tools` array, with which
/// the model searches the tools marked `defer_loading` and loads the ones it needs. Used with
/// [`ToolExport::with_deferred`]. OpenAI chat completions has none
/// ([`for_provider`](Self::for_provider) gives `None`).
///
/// ```
/// use capstore::provider::{Provider, ToolSearch};
/// assert_eq!(ToolSearch::for_provider(Provider::Anthropic), Some(ToolSearch::AnthropicBm25));
/// assert_eq!(ToolSearch::for_provider(Provider::OpenAiResponses), Some(ToolSearch::OpenAiResponses));
/// assert_eq!(ToolSearch::for_provider(Provider::OpenAiChat), None);
/// assert_eq!(ToolSearch::AnthropicRegex.provider(), Provider::Anthropic);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSearch {
    /// Anthropic's BM25 variant (`tool_search_tool_bm25_20251119`): the model searches with
    /// natural-language queries. Anthropic's default here.
    AnthropicBm25,
    /// Anthropic's regex variant (`tool_search_tool_regex_20251119`): the model searches with
    /// Python `re.search` patterns over names, descriptions and argument names.
    AnthropicRegex,
    /// OpenAI's responses API `tool_search` (gpt-5.4 and later models).
    OpenAiResponses,
}

impl ToolSearch {
    /// The hosted tool search of `provider`, if it has one: BM25 for Anthropic, `tool_search`
    /// for OpenAI responses, `None` for OpenAI chat completions.
    ///
    /// ```
    /// use capstore::provider::{Provider, ToolSearch};
    /// assert!(ToolSearch::for_provider(Provider::OpenAiChat).is_none());
    /// ```
    pub fn for_provider(provider: Provider) -> Option<ToolSearch> {
        match provider {
            Provider::Anthropic => Some(ToolSearch::AnthropicBm25),
            Provider::OpenAiResponses => Some(ToolSearch::OpenAiResponses),
            Provider::OpenAiChat => None,
        }
    }

    /// The provider whose request shape this search belongs to.
    ///
    /// ```
    /// use capstore::provider::{Provider, ToolSearch};
    /// assert_eq!(ToolSearch::OpenAiResponses.provider(), Provider::OpenAiResponses);
    /// ```
    pub fn provider(self) -> Provider {
        match self {
            ToolSearch::AnthropicBm25 | ToolSearch::AnthropicRegex => Provider::Anthropic,
            ToolSearch::OpenAiResponses => Provider::OpenAiResponses,
        }
    }

    /// The search tool's entry in the `tools` array. Constant, so it never moves the request's
    /// cached prefix; never marked `defer_loading`.
    ///
    /// ```
    /// use capstore::provider::ToolSearch;
    /// assert_eq!(
    ///     ToolSearch::AnthropicBm25.tool_json(),
    ///     serde_json::json!({ "type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25" })
    /// );
    /// assert_eq!(
    ///     ToolSearch::AnthropicRegex.tool_json().to_string(),
    ///     r#"{"name":"tool_search_tool_regex","type":"tool_search_tool_regex_20251119"}"#
    /// );
    /// assert_eq!(ToolSearch::OpenAiResponses.tool_json(), serde_json::json!({ "type": "tool_search" }));
    /// ```
    pub fn tool_json(self) -> Value {
        let mut json = match self {
            ToolSearch::AnthropicBm25 => json!({
                "type": "tool_search_tool_bm25_20251119",
                "name": "tool_search_tool_bm25",
            }),
            ToolSearch::AnthropicRegex => json!({
                "type": "tool_search_tool_regex_20251119",
                "name": "tool_search_tool_regex",
            }),
            ToolSearch::OpenAiResponses => json!({ "type": "tool_search" }),
        };
        // Keys sorted in every build, as `ToolExport::tool_json` has them.
        json.sort_all_objects();
        json
    }

    /// The beta the request must name in its `anthropic-beta` header (the Anthropic SDKs'
    /// `betas` parameter) for the tool search to be accepted on Anthropic's own API, while
    /// Anthropic has it in beta; `None` for OpenAI. (Vertex AI and Bedrock name it
    /// `tool-search-tool-2025-10-19`.)
    ///
    /// ```
    /// use capstore::provider::ToolSearch;
    /// assert_eq!(ToolSearch::AnthropicBm25.anthropic_beta(), Some("advanced-tool-use-2025-11-20"));
    /// assert_eq!(ToolSearch::OpenAiResponses.anthropic_beta(), None);
    /// ```
    pub fn anthropic_beta(self) -> Option<&'static str> {
        match self {
            ToolSearch::AnthropicBm25 | ToolSearch::AnthropicRegex => {
                Some("advanced-tool-use-2025-11-20")
            }
            ToolSearch::OpenAiResponses => None,
        }
    }
}
