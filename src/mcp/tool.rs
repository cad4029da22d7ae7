//! One MCP tool, and the store record it becomes.

use serde_json::{Map, Value};

use crate::tools::Tool;

/// One tool as an MCP server describes it in `tools/list`.
///
/// Fields follow the MCP specification's `Tool`; fields the specification may add later are
/// tolerated and left out (see the [module docs](crate::mcp#forward-compatibility)).
///
/// ```
/// use capstore::mcp::McpToolList;
/// let list = McpToolList::from_json(r#"{"tools": [{
///     "name": "read_file",
///     "title": "Read File",
///     "description": "Read a file",
///     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
///     "annotations": {"readOnlyHint": true}
/// }]}"#)?;
/// let tool = &list.tools()[0];
/// assert_eq!((tool.name.as_str(), tool.title.as_deref()), ("read_file", Some("Read File")));
/// assert_eq!(tool.annotations.as_ref().map(|a| a["readOnlyHint"].clone()), Some(true.into()));
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model calls it by; passes
    /// [`check_tool_name`](crate::tools::check_tool_name) (it may contain `/` and `.`).
    pub name: String,
    /// A human-readable name, for display.
    pub title: Option<String>,
    /// What the tool does.
    pub description: Option<String>,
    /// JSON Schema of the arguments: an object whose `type`, if given, is `"object"`.
    pub input_schema: Value,
    /// JSON Schema of the structured result, if the server declares one.
    pub output_schema: Option<Value>,
    /// The server's hints (`title`, `readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`, and any others it sends), as given.
    pub annotations: Option<Map<String, Value>>,
    /// The server's `_meta` object, as given.
    pub meta: Option<Value>,
}

impl McpTool {
    /// The store's record of this tool, as offered by `server` (see the
    /// [module docs](crate::mcp#what-becomes-of-each-field) for where each field goes).
    /// Does not check `server`; [`McpToolList::to_tools`](super::McpToolList::to_tools) does.
    ///
    /// ```
    /// use capstore::mcp::McpToolList;
    /// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "title": "Web search",
    ///     "inputSchema": {"type": "object"}, "annotations": {"openWorldHint": true}}]}"#)?;
    /// let tool = list.tools()[0].to_tool("web");
    /// assert_eq!(tool.qualified_name(), "web/search");
    /// assert_eq!(tool.tags, ["web"]);
    /// assert_eq!(tool.annotations["title"], "Web search");
    /// assert_eq!(tool.annotations["openWorldHint"], true);
    /// # Ok::<(), capstore::mcp::McpError>(())
    /// ```
    pub fn to_tool(&self, server: &str) -> Tool {
        let mut annotations = self.annotations.clone().unwrap_or_default();
        // MCP: a tool's own `title` takes precedence over `annotations.title` for display.
        if let Some(title) = &self.title {
            annotations.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(schema) = &self.output_schema {
            annotations.insert("outputSchema".into(), schema.clone());
        }
        if let Some(meta) = &self.meta {
            annotations.insert("_meta".into(), meta.clone());
        }
        let annotations = if annotations.is_empty() {
            Value::Null
        } else {
            Value::Object(annotations)
        };
        Tool::new(
            self.name.clone(),
            self.description.clone().unwrap_or_default(),
        )
        .with_source(server)
        .with_tags([server])
        .with_input_schema(&self.input_schema)
        .with_annotations(annotations)
    }
}
