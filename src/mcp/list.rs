//! A server's tool list: one `tools/list` page or several joined.

use std::collections::HashMap;

use serde_json::Value;

use crate::tools::Tool;

use super::error::McpError;
#[cfg(feature = "mcp-live")]
use super::parse::{Dropping, parse_page_with};
use super::parse::{Page, parse_json, parse_page};
use super::server::check_server;
use super::tool::McpTool;

/// A server's tool list: the tools of one `tools/list` page, or of several pages joined with
/// [`extend`](Self::extend) or [`from_pages`](Self::from_pages). Names are unique within a list
/// and every tool passed the checks of [`from_json`](Self::from_json).
///
/// ```
/// use capstore::mcp::McpToolList;
/// let page1 = McpToolList::from_json(
///     r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}"#)?;
/// assert_eq!(page1.next_cursor(), Some("p2"));
/// let both = McpToolList::from_pages([
///     r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}"#,
///     r#"{"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}"#,
/// ])?;
/// assert_eq!(both.len(), 2);
/// assert_eq!(both.next_cursor(), None);
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpToolList {
    tools: Vec<McpTool>,
    next_cursor: Option<String>,
}

impl McpToolList {
    fn from_page(page: Page) -> Self {
        McpToolList {
            tools: page.tools,
            next_cursor: page.next_cursor,
        }
    }

    /// Reads one page from JSON text: a `tools/list` result object
    /// (`{"tools": [...], "nextCursor"?: "..."}`) or a whole JSON-RPC response
    /// (`{"jsonrpc": "2.0", "id": 1, "result": {...}}`). A JSON-RPC `error` response becomes
    /// [`McpError::Rpc`].
    ///
    /// ```
    /// use capstore::mcp::{McpError, McpToolList};
    /// let list = McpToolList::from_json(r#"{"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}"#)?;
    /// assert!(list.is_empty());
    /// let err = McpToolList::from_json(
    ///     r#"{"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}}"#,
    /// ).unwrap_err();
    /// assert!(matches!(err, McpError::Rpc { code: -32601, .. }));
    /// assert!(matches!(McpToolList::from_json("tools:"), Err(McpError::NotJson { .. })));
    /// # Ok::<(), McpError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, McpError> {
        Self::from_value(parse_json(text)?)
    }

    /// Reads one page from a JSON value, as [`from_json`](Self::from_json) does from text.
    ///
    /// ```
    /// use capstore::mcp::{McpError, McpToolList};
    /// use serde_json::json;
    /// let list = McpToolList::from_value(json!({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]}))?;
    /// assert_eq!(list.tools()[0].name, "x");
    /// assert!(matches!(McpToolList::from_value(json!([1, 2])), Err(McpError::Shape { .. })));
    /// # Ok::<(), McpError>(())
    /// ```
    pub fn from_value(value: Value) -> Result<Self, McpError> {
        parse_page(value, 0).map(McpToolList::from_page)
    }

    /// [`from_value`](Self::from_value) for a live server's page: a tool that cannot be read,
    /// or whose JSON is over `max_tool_bytes`, is left out alone and returned as an
    /// [`McpError::InvalidTool`] naming it and its field; the page's other tools are kept.
    /// `offset` is the position of the page's first tool in the whole list. A page that is not
    /// a tool list at all, or repeats a name, is still an error.
    #[cfg(feature = "mcp-live")]
    pub(crate) fn from_value_dropping(
        value: Value,
        offset: usize,
        max_tool_bytes: usize,
    ) -> Result<(Self, Vec<McpError>), McpError> {
        let mut dropped = Vec::new();
        let dropping = Dropping {
            max_bytes: max_tool_bytes,
            dropped: &mut dropped,
        };
        let page = parse_page_with(value, offset, Some(dropping))?;
        Ok((McpToolList::from_page(page), dropped))
    }

    /// Reads every page of a paged `tools/list` (each as [`from_json`](Self::from_json) takes
    /// it) into one list. Positions in errors count across pages; a name repeated on two pages
    /// is a [`McpError::DuplicateName`]. The cursor is the last page's.
    ///
    /// ```
    /// use capstore::mcp::{McpError, McpToolList};
    /// let tool = r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}"#;
    /// let err = McpToolList::from_pages([tool, tool]).unwrap_err();
    /// assert_eq!(err, McpError::DuplicateName { name: "a".into(), first: 0, second: 1 });
    /// ```
    pub fn from_pages<'a>(pages: impl IntoIterator<Item = &'a str>) -> Result<Self, McpError> {
        let mut list = McpToolList::default();
        for page in pages {
            let page = parse_page(parse_json(page)?, list.len())?;
            list.extend(McpToolList::from_page(page))?;
        }
        Ok(list)
    }

    /// Appends the next page's tools (as when following `nextCursor`) and takes its cursor.
    /// Fails, leaving `self` as it was, if a name of `page` is already in the list.
    ///
    /// ```
    /// use capstore::mcp::McpToolList;
    /// let mut list = McpToolList::from_json(
    ///     r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "2"}"#)?;
    /// list.extend(McpToolList::from_json(r#"{"tools": [{"name": "b", "inputSchema": {}}]}"#)?)?;
    /// assert_eq!(list.tools().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    /// assert!(list.extend(McpToolList::from_json(r#"{"tools": [{"name": "a", "inputSchema": {}}]}"#)?).is_err());
    /// assert_eq!(list.len(), 2);
    /// # Ok::<(), capstore::mcp::McpError>(())
    /// ```
    pub fn extend(&mut self, page: McpToolList) -> Result<(), McpError> {
        let mut seen: HashMap<&str, usize> = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        for (offset, tool) in page.tools.iter().enumerate() {
            let second = self.tools.len() + offset;
            if let Some(first) = seen.insert(tool.name.as_str(), second) {
                return Err(McpError::DuplicateName {
                    name: tool.name.clone(),
                    first,
                    second,
                });
            }
        }
        self.tools.extend(page.tools);
        self.next_cursor = page.next_cursor;
        Ok(())
    }

    /// Keeps the tools for which `keep` is true (called once per tool, in order).
    #[cfg(feature = "mcp-live")]
    pub(crate) fn retain(&mut self, keep: impl FnMut(&McpTool) -> bool) {
        self.tools.retain(keep);
    }

    /// The tools, in the server's order.
    ///
    /// ```
    /// assert!(capstore::mcp::McpToolList::default().tools().is_empty());
    /// ```
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// How many tools the list holds.
    ///
    /// ```
    /// assert_eq!(capstore::mcp::McpToolList::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the list holds no tools.
    ///
    /// ```
    /// assert!(capstore::mcp::McpToolList::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The cursor of the next page, if the server said there is one.
    ///
    /// ```
    /// let list = capstore::mcp::McpToolList::from_json(r#"{"tools": [], "nextCursor": "abc"}"#)?;
    /// assert_eq!(list.next_cursor(), Some("abc"));
    /// # Ok::<(), capstore::mcp::McpError>(())
    /// ```
    pub fn next_cursor(&self) -> Option<&str> {
        self.next_cursor.as_deref()
    }

    /// The store's records of these tools as offered by `server` ([`McpTool::to_tool`]), after
    /// checking the server name (see the [module docs](crate::mcp#namespacing)) and each
    /// record against the tools table's rules.
    ///
    /// ```
    /// use capstore::mcp::{McpError, McpToolList};
    /// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "inputSchema": {}}]}"#)?;
    /// assert_eq!(list.to_tools("github")?[0].qualified_name(), "github/search");
    /// assert!(matches!(list.to_tools("git/hub"), Err(McpError::InvalidServer { .. })));
    /// # Ok::<(), McpError>(())
    /// ```
    pub fn to_tools(&self, server: &str) -> Result<Vec<Tool>, McpError> {
        check_server(server)?;
        self.tools
            .iter()
            .enumerate()
            .map(|(index, mcp)| {
                let tool = mcp.to_tool(server);
                // The parse checks make this hold already; checked again so that a rule
                // added to the tools table later is reported here, with the tool's position.
                tool.validate().map_err(|e| McpError::InvalidTool {
                    index,
                    name: Some(mcp.name.clone()),
                    field: "tool",
                    reason: e.to_string(),
                })?;
                Ok(tool)
            })
            .collect()
    }
}
