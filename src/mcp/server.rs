//! Server names: what may name an MCP server in the store.

use crate::tools::{check_label, check_name};

use super::error::McpError;

/// Checks that `server` can name an MCP server: it becomes every imported tool's `source`
/// (the part before `/` in the qualified name) and a tag, so it must pass both
/// [`check_label`] (the tag rule: not blank, at most 128 bytes, no control characters) and
/// [`check_name`] (the source rule: no `/`, no leading or trailing white space).
///
/// ```
/// use capstore::mcp::{check_server, McpError};
/// assert!(check_server("github").is_ok());
/// assert!(check_server("my server").is_ok());
/// assert!(matches!(check_server("a/b"), Err(McpError::InvalidServer { .. })));
/// assert!(matches!(check_server(""), Err(McpError::InvalidServer { .. })));
/// assert!(matches!(check_server(&"x".repeat(129)), Err(McpError::InvalidServer { .. })));
/// ```
pub fn check_server(server: &str) -> Result<(), McpError> {
    check_label("source", server)
        .and_then(|()| check_name("source", server))
        .map_err(|e| McpError::InvalidServer {
            server: server.chars().take(80).collect(),
            reason: e.to_string(),
        })
}
