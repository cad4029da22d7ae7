//! Tools given as Python dicts, in the shape of the API they were written for, read into the
//! library's `Tool` records. The shape is told per dict, by its keys:
//!
//! | shape | keys | read as |
//! |---|---|---|
//! | OpenAI chat completions | `{"type": "function", "function": {name, description, parameters}}` | an MCP tool |
//! | OpenAI responses (or a bare function) | `{name, description, parameters}` | an MCP tool |
//! | MCP (`tools/list`) | `{name, description, inputSchema, title, annotations, ...}` | an MCP tool |
//! | Anthropic messages | `{name, description, input_schema}` (and `type`, `cache_control`) | an MCP tool |
//! | capstore's own record | `{name, description, input_schema, source, tags, annotations, requires}` | a `Tool` |
//!
//! The provider shapes are read through the library's MCP reader (`mcp::McpToolList`), which
//! checks names and schemas; with a `source`, as `mcp::McpTool::to_tool` imports a server's
//! list (`source/name`, tagged with the source), otherwise under their own names.

use capstore::Tool;
use capstore::mcp::{McpError, McpToolList};
use pyo3::prelude::*;
use serde_json::{Map, Value, json};

use crate::errors;

/// Keys an Anthropic tool definition may have (client tools).
const ANTHROPIC_KEYS: [&str; 5] = [
    "name",
    "description",
    "input_schema",
    "type",
    "cache_control",
];

/// The tool the dict `object` describes (the `index`-th given: errors name it), namespaced by
/// `source` when one is given.
pub(crate) fn tool_from_py(
    object: &Bound<'_, PyAny>,
    source: Option<&str>,
    index: usize,
) -> PyResult<Tool> {
    let value: Value = pythonize::depythonize(object)
        .map_err(|e| errors::tool(format!("tools[{index}]: not a JSON-like dict: {e}")))?;
    tool_from_value(value, source, index).map_err(errors::tool)
}

/// [`tool_from_py`] on a JSON value; the error is the message.
fn tool_from_value(value: Value, source: Option<&str>, index: usize) -> Result<Tool, String> {
    let Value::Object(mut object) = value else {
        return Err(format!(
            "tools[{index}]: a tool must be a dict, not {value}"
        ));
    };
    let is_chat = object.get("type").and_then(Value::as_str) == Some("function")
        && object.get("function").is_some_and(Value::is_object);
    if is_chat {
        let Some(Value::Object(function)) = object.remove("function") else {
            return Err(format!("tools[{index}]: `function` must be a dict"));
        };
        return mcp_tool(from_function(function), source, index);
    }
    if object.contains_key("parameters") {
        object.remove("type");
        return mcp_tool(from_function(object), source, index);
    }
    if object.contains_key("inputSchema") {
        return mcp_tool(object, source, index);
    }
    let anthropic = object.contains_key("input_schema")
        && object
            .keys()
            .all(|key| ANTHROPIC_KEYS.contains(&key.as_str()));
    if anthropic {
        let mut mcp = Map::new();
        for key in ["name", "description"] {
            if let Some(value) = object.remove(key) {
                mcp.insert(key.into(), value);
            }
        }
        if let Some(schema) = object.remove("input_schema") {
            mcp.insert("inputSchema".into(), schema);
        }
        return mcp_tool(mcp, source, index);
    }
    // capstore's own record (`Tool`'s serde shape, unknown keys refused).
    let name = name_of(&object);
    let mut tool: Tool = serde_json::from_value(Value::Object(object))
        .map_err(|e| format!("tools[{index}]{name}: {e}"))?;
    if tool.source.is_none()
        && let Some(source) = source
    {
        tool.source = Some(source.to_string());
    }
    tool.validate()
        .map_err(|e| format!("tools[{index}]{name}: {e}"))?;
    Ok(tool)
}

/// An OpenAI function (`name`, `description`, `parameters`) as an MCP tool object; a function
/// without parameters takes none. `strict` (OpenAI's structured outputs) is not part of what
/// the store keeps.
fn from_function(mut function: Map<String, Value>) -> Map<String, Value> {
    let mut mcp = Map::new();
    for key in ["name", "description"] {
        if let Some(value) = function.remove(key) {
            mcp.insert(key.into(), value);
        }
    }
    let parameters = function
        .remove("parameters")
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    mcp.insert("inputSchema".into(), parameters);
    mcp
}

/// Reads one MCP tool object through the library's MCP reader.
fn mcp_tool(
    object: Map<String, Value>,
    source: Option<&str>,
    index: usize,
) -> Result<Tool, String> {
    let name = name_of(&object);
    let list = McpToolList::from_value(json!({ "tools": [object] }))
        .map_err(|e| describe(e, index, &name))?;
    match source {
        Some(source) => list
            .to_tools(source)
            .map_err(|e| describe(e, index, &name))?
            .pop()
            .ok_or_else(|| format!("tools[{index}]{name}: no tool read")),
        None => {
            let mcp = list
                .tools()
                .first()
                .ok_or_else(|| format!("tools[{index}]{name}: no tool read"))?;
            // The library's reading of an MCP tool's fields (title, outputSchema, _meta into
            // annotations), without a server's namespace: the tool keeps its own name.
            let mut tool = mcp.to_tool("tools");
            tool.source = None;
            tool.tags.clear();
            tool.validate()
                .map_err(|e| format!("tools[{index}]{name}: {e}"))?;
            Ok(tool)
        }
    }
}

/// ` ("name")` when the object has a string name, for messages.
fn name_of(object: &Map<String, Value>) -> String {
    object
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(String::new, |name| format!(" ({name:?})"))
}

/// The MCP reader's error for a list of one, said of the `index`-th tool given.
fn describe(error: McpError, index: usize, name: &str) -> String {
    match error {
        McpError::InvalidTool { field, reason, .. } => {
            format!("tools[{index}]{name}: field `{field}`: {reason}")
        }
        other => format!("tools[{index}]{name}: {other}"),
    }
}
