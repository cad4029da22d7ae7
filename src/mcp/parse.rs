//! Reading `tools/list` JSON: a result object or a JSON-RPC response, entry by entry, with
//! errors that name the entry.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::tools::check_tool_name;

use super::error::McpError;
use super::tool::McpTool;

pub(super) fn parse_json(text: &str) -> Result<Value, McpError> {
    serde_json::from_str(text).map_err(|e| McpError::NotJson {
        reason: e.to_string(),
    })
}

/// What a JSON value is, for messages.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn shape(reason: impl Into<String>) -> McpError {
    McpError::Shape {
        reason: reason.into(),
    }
}

/// One page of a `tools/list` result: its tools, in order, and its cursor.
pub(super) struct Page {
    pub(super) tools: Vec<McpTool>,
    pub(super) next_cursor: Option<String>,
}

/// Reads one page; `offset` is the position of its first tool in the whole list.
pub(super) fn parse_page(value: Value, offset: usize) -> Result<Page, McpError> {
    parse_page_with(value, offset, None)
}

/// What to do with a tool that cannot be read: leave it out and note why, instead of
/// refusing the page. Tools whose JSON is over `max_bytes` are left out too.
#[cfg_attr(not(feature = "mcp-live"), allow(dead_code))]
pub(super) struct Dropping<'a> {
    pub(super) max_bytes: usize,
    pub(super) dropped: &'a mut Vec<McpError>,
}

/// [`parse_page`], refusing the page on the first bad tool (`dropping: None`) or leaving bad
/// tools out one by one.
pub(super) fn parse_page_with(
    value: Value,
    offset: usize,
    mut dropping: Option<Dropping<'_>>,
) -> Result<Page, McpError> {
    let Value::Object(mut object) = value else {
        return Err(shape(format!(
            "expected an object with `tools`, or a JSON-RPC response, found {}",
            kind(&value)
        )));
    };
    if !object.contains_key("tools") {
        object = unwrap_response(object)?;
    }
    let tools = match object.remove("tools") {
        Some(Value::Array(tools)) => tools,
        Some(other) => {
            return Err(shape(format!(
                "`tools` must be an array, found {}",
                kind(&other)
            )));
        }
        None => return Err(shape("the result has no `tools` array")),
    };
    let next_cursor = match object.remove("nextCursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(cursor)) => Some(cursor),
        Some(other) => {
            return Err(shape(format!(
                "`nextCursor` must be a string, found {}",
                kind(&other)
            )));
        }
    };
    let mut list = Page {
        tools: Vec::with_capacity(tools.len()),
        next_cursor,
    };
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(tools.len());
    for (i, entry) in tools.into_iter().enumerate() {
        let index = offset + i;
        let tool = match &mut dropping {
            None => parse_tool(entry, index)?,
            Some(dropping) => {
                let size = serde_json::to_vec(&entry).map_or(usize::MAX, |bytes| bytes.len());
                let parsed = if size > dropping.max_bytes {
                    Err(McpError::InvalidTool {
                        index,
                        name: entry
                            .get("name")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        field: "tool",
                        reason: format!(
                            "its definition is {size} bytes, over the limit of {} bytes per tool",
                            dropping.max_bytes
                        ),
                    })
                } else {
                    parse_tool(entry, index)
                };
                match parsed {
                    Ok(tool) => tool,
                    Err(error) => {
                        dropping.dropped.push(error);
                        continue;
                    }
                }
            }
        };
        if let Some(first) = seen.insert(tool.name.clone(), index) {
            return Err(McpError::DuplicateName {
                name: tool.name,
                first,
                second: index,
            });
        }
        list.tools.push(tool);
    }
    Ok(list)
}

/// The `result` of a JSON-RPC response, or its `error` as [`McpError::Rpc`].
fn unwrap_response(mut object: Map<String, Value>) -> Result<Map<String, Value>, McpError> {
    match object.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return Err(shape(format!("`jsonrpc` must be \"2.0\", found {other}")));
        }
        None => {
            return Err(shape(
                "expected `tools` (a tools/list result) or `jsonrpc` (a JSON-RPC response)",
            ));
        }
    }
    match (object.remove("result"), object.remove("error")) {
        (Some(Value::Object(result)), None) => {
            if result.contains_key("tools") {
                Ok(result)
            } else {
                Err(shape("the JSON-RPC result has no `tools` array"))
            }
        }
        (Some(other), None) => Err(shape(format!(
            "the JSON-RPC `result` must be an object, found {}",
            kind(&other)
        ))),
        (None, Some(error)) => Err(rpc_error(error)),
        (Some(_), Some(_)) => Err(shape(
            "a JSON-RPC response must not carry both `result` and `error`",
        )),
        (None, None) => Err(shape(
            "the JSON-RPC response has neither `result` nor `error`",
        )),
    }
}

fn rpc_error(error: Value) -> McpError {
    let Value::Object(mut error) = error else {
        return shape(format!(
            "the JSON-RPC `error` must be an object, found {}",
            kind(&error)
        ));
    };
    let Some(code) = error.get("code").and_then(Value::as_i64) else {
        return shape("the JSON-RPC `error` has no integer `code`");
    };
    let Some(Value::String(message)) = error.remove("message") else {
        return shape("the JSON-RPC `error` has no string `message`");
    };
    McpError::Rpc {
        code,
        message,
        data: error.remove("data"),
    }
}

fn parse_tool(entry: Value, index: usize) -> Result<McpTool, McpError> {
    let Value::Object(mut object) = entry else {
        return Err(McpError::InvalidTool {
            index,
            name: None,
            field: "tool",
            reason: format!("must be an object, found {}", kind(&entry)),
        });
    };
    let name = match object.remove("name") {
        Some(Value::String(name)) => name,
        Some(other) => {
            return Err(McpError::InvalidTool {
                index,
                name: None,
                field: "name",
                reason: format!("`name` must be a string, found {}", kind(&other)),
            });
        }
        None => {
            return Err(McpError::InvalidTool {
                index,
                name: None,
                field: "name",
                reason: "`name` is missing".into(),
            });
        }
    };
    let fail = |field: &'static str, reason: String| McpError::InvalidTool {
        index,
        name: Some(name.clone()),
        field,
        reason,
    };
    // Every imported tool has a source (the server), so its name may hold `/` (SEP-986).
    check_tool_name(&name, true).map_err(|e| fail("name", e.to_string()))?;
    let title = optional_string(&mut object, "title").map_err(|r| fail("title", r))?;
    let description =
        optional_string(&mut object, "description").map_err(|r| fail("description", r))?;
    let input_schema = match object.remove("inputSchema") {
        Some(schema) => schema,
        None => return Err(fail("inputSchema", "`inputSchema` is missing".into())),
    };
    check_object_schema("inputSchema", &input_schema).map_err(|r| fail("inputSchema", r))?;
    let output_schema = match optional_object(&mut object, "outputSchema") {
        Ok(schema) => schema.map(Value::Object),
        Err(reason) => return Err(fail("outputSchema", reason)),
    };
    if let Some(schema) = &output_schema {
        check_object_schema("outputSchema", schema).map_err(|r| fail("outputSchema", r))?;
    }
    let annotations =
        optional_object(&mut object, "annotations").map_err(|r| fail("annotations", r))?;
    let meta = optional_object(&mut object, "_meta")
        .map_err(|r| fail("_meta", r))?
        .map(Value::Object);
    Ok(McpTool {
        name,
        title,
        description,
        input_schema,
        output_schema,
        annotations,
        meta,
    })
}

/// A string field that may be absent or `null` (some servers write `null` for absent).
fn optional_string(object: &mut Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "`{field}` must be a string, found {}",
            kind(&other)
        )),
    }
}

/// An object field that may be absent or `null`.
fn optional_object(
    object: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<Map<String, Value>>, String> {
    match object.remove(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(other) => Err(format!(
            "`{field}` must be an object, found {}",
            kind(&other)
        )),
    }
}

/// MCP's input and output schemas are object schemas: `{"type": "object", ...}`. A schema with
/// no `type` is accepted, as the tools table accepts it.
fn check_object_schema(field: &str, schema: &Value) -> Result<(), String> {
    let Some(object) = schema.as_object() else {
        return Err(format!(
            "`{field}` must be a JSON Schema object, found {}",
            kind(schema)
        ));
    };
    match object.get("type") {
        None => Ok(()),
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(format!(
            "`{field}` must describe an object (`\"type\": \"object\"`), not `\"type\": {other}`"
        )),
    }
}
