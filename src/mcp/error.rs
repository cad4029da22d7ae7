//! Errors of reading an MCP `tools/list` result and importing it into a store.

use std::fmt;

use serde_json::Value;

use crate::store::StoreError;

/// An MCP tool list that could not be read, or an import that could not be carried out. The
/// store (or the transaction) is left exactly as it was before the call.
///
/// Every variant names its offender: the tool's position in the list and its name, both
/// positions of a duplicate name, the server, or the skill that holds on to a tool.
///
/// ```
/// use capstore::mcp::{McpError, McpToolList};
/// let err = McpToolList::from_json(r#"{"tools": [{"name": " padded", "inputSchema": {"type": "object"}}]}"#)
///     .unwrap_err();
/// assert!(matches!(err, McpError::InvalidTool { index: 0, .. }));
/// assert_eq!(
///     err.to_string(),
///     "MCP tool #0 (` padded`): invalid name \" padded\": must not start or end with white space"
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum McpError {
    /// The text is not JSON at all.
    NotJson {
        /// The parser's message, with line and column.
        reason: String,
    },
    /// The JSON is neither a `tools/list` result (`{"tools": [...]}`) nor a JSON-RPC response
    /// that carries one.
    Shape {
        /// What was expected and what was found.
        reason: String,
    },
    /// The server answered `tools/list` with a JSON-RPC `error` object.
    Rpc {
        /// The JSON-RPC error code (e.g. -32601, method not found).
        code: i64,
        /// The server's message.
        message: String,
        /// The server's `data`, if it sent any.
        data: Option<Value>,
    },
    /// One entry of the `tools` array is not a usable tool.
    InvalidTool {
        /// Its position in the list (0-based; across all pages for a paged list).
        index: usize,
        /// Its name, when it has one that is a string.
        name: Option<String>,
        /// The MCP field at fault (`name`, `inputSchema`, `annotations`, ...).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Two entries of one list share a name.
    DuplicateName {
        /// The name.
        name: String,
        /// Position of the first entry (0-based, across pages).
        first: usize,
        /// Position of the second.
        second: usize,
    },
    /// The server name cannot be a tool source.
    InvalidServer {
        /// The name given.
        server: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A re-import would remove a tool that skills still list (see the ownership rule in
    /// [`crate::skills`]); nothing was imported.
    ToolInUse {
        /// The server being imported.
        server: String,
        /// The qualified name of the tool the server no longer offers.
        tool: String,
        /// The skills that list it.
        skills: Vec<String>,
    },
    /// The store refused a read or write.
    Store(StoreError),
}

impl From<StoreError> for McpError {
    fn from(e: StoreError) -> Self {
        McpError::Store(e)
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::NotJson { reason } => write!(f, "MCP tool list is not JSON: {reason}"),
            McpError::Shape { reason } => write!(f, "not an MCP tools/list result: {reason}"),
            McpError::Rpc {
                code,
                message,
                data,
            } => {
                write!(
                    f,
                    "MCP server answered tools/list with error {code}: {message}"
                )?;
                match data {
                    Some(data) => write!(f, " ({data})"),
                    None => Ok(()),
                }
            }
            McpError::InvalidTool {
                index,
                name: Some(name),
                reason,
                ..
            } => write!(f, "MCP tool #{index} (`{name}`): {reason}"),
            McpError::InvalidTool {
                index,
                name: None,
                reason,
                ..
            } => write!(f, "MCP tool #{index}: {reason}"),
            McpError::DuplicateName {
                name,
                first,
                second,
            } => write!(
                f,
                "MCP tools #{first} and #{second} are both named `{name}`"
            ),
            McpError::InvalidServer { server, reason } => {
                write!(f, "invalid MCP server name {server:?}: {reason}")
            }
            McpError::ToolInUse {
                server,
                tool,
                skills,
            } => write!(
                f,
                "server `{server}` no longer offers `{tool}`, but skill(s) {} list it; \
                 unregister or change them first",
                skills
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            McpError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpError::Store(e) => Some(e),
            _ => None,
        }
    }
}
