//! Importing a server's tool list into the tools table, and replacing it when the list changes.

use std::collections::BTreeMap;

use crate::skills::skills_listing;
use crate::store::{Store, WriteTxn};
use crate::tools::{TOOLS, Tool};

use super::error::McpError;
use super::list::McpToolList;

/// What an import changed in the tools table, by qualified name (`server/name`), each list
/// sorted.
///
/// ```
/// use capstore::mcp::{import_server, McpToolList};
/// let store = capstore::Store::new();
/// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "inputSchema": {}}]}"#)?;
/// let report = import_server(&store, "web", &list)?;
/// assert_eq!(report.added, ["web/search"]);
/// assert_eq!(report.version, Some(1));
/// let again = import_server(&store, "web", &list)?;
/// assert_eq!((again.unchanged, again.version), (1, None));
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// The server.
    pub server: String,
    /// Tools the server offers now and did not before.
    pub added: Vec<String>,
    /// Tools the server offered before and does not now; deleted from the store.
    pub removed: Vec<String>,
    /// Tools whose definition changed (description, schema, title, annotations, ...).
    pub changed: Vec<String>,
    /// How many tools are exactly as they were.
    pub unchanged: usize,
    /// The version the import was published as; `None` when nothing changed (no commit), and
    /// always `None` from the `_in` functions, whose transaction the caller commits.
    pub version: Option<u64>,
}

impl ImportReport {
    /// Whether the import changed nothing.
    ///
    /// ```
    /// assert!(capstore::mcp::ImportReport::default().is_unchanged());
    /// ```
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Makes `server`'s tools in the store exactly `list`, in one transaction, and commits it if
/// anything changed. Tools of other servers are not touched. See the [module
/// docs](crate::mcp#re-import) for what counts as the server's tools and what a re-import keeps.
///
/// Fails, changing nothing, on an invalid server name, a tool the tools table refuses, or a
/// removed tool that a skill lists ([`McpError::ToolInUse`]).
///
/// ```
/// use capstore::mcp::{import_server, McpToolList};
/// use capstore::{Store, TOOLS};
/// let store = Store::new();
/// let v1 = McpToolList::from_json(r#"{"tools": [
///     {"name": "search", "description": "Search the web", "inputSchema": {"type": "object"}},
///     {"name": "fetch", "description": "Fetch a URL", "inputSchema": {"type": "object"}}
/// ]}"#)?;
/// import_server(&store, "web", &v1)?;
/// let v2 = McpToolList::from_json(r#"{"tools": [
///     {"name": "search", "description": "Search the web and news", "inputSchema": {"type": "object"}},
///     {"name": "images", "description": "Search images", "inputSchema": {"type": "object"}}
/// ]}"#)?;
/// let report = import_server(&store, "web", &v2)?;
/// assert_eq!((report.added, report.removed, report.changed), (
///     vec!["web/images".to_string()], vec!["web/fetch".to_string()], vec!["web/search".to_string()]));
/// assert_eq!(store.snapshot().count(&TOOLS)?, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn import_server(
    store: &Store,
    server: &str,
    list: &McpToolList,
) -> Result<ImportReport, McpError> {
    let mut tx = store.begin();
    let mut report = import_server_in(&mut tx, server, list)?;
    if !report.is_unchanged() {
        report.version = Some(tx.commit().version);
    }
    Ok(report)
}

/// [`import_server`] inside a transaction the caller commits (with other writes, perhaps
/// several servers at once). All or nothing: on error, `tx` is as it was before the call.
/// The report's `version` is `None`.
///
/// ```
/// use capstore::mcp::{import_server_in, McpToolList};
/// use capstore::{Store, TOOLS};
/// let store = Store::new();
/// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "inputSchema": {}}]}"#)?;
/// let info = store.write(|tx| {
///     import_server_in(tx, "github", &list)?;
///     import_server_in(tx, "web", &list)
/// })?;
/// assert_eq!(info.version, 1);
/// assert_eq!(store.snapshot().count_by_index(&TOOLS, "name", "search")?, 2);
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
pub fn import_server_in(
    tx: &mut WriteTxn,
    server: &str,
    list: &McpToolList,
) -> Result<ImportReport, McpError> {
    let incoming = list.to_tools(server)?;
    tx.all_or_nothing(|tx| replace_server_tools(tx, server, incoming))
}

/// Removes every tool of `server` from the store, in one transaction (committed if there were
/// any). Fails, changing nothing, if a skill lists one of them.
///
/// ```
/// use capstore::mcp::{import_server, remove_server, McpToolList};
/// use capstore::{Store, TOOLS};
/// let store = Store::new();
/// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "inputSchema": {}}]}"#)?;
/// import_server(&store, "web", &list)?;
/// import_server(&store, "github", &list)?;
/// let report = remove_server(&store, "web")?;
/// assert_eq!(report.removed, ["web/search"]);
/// assert_eq!(store.snapshot().count(&TOOLS)?, 1);
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
pub fn remove_server(store: &Store, server: &str) -> Result<ImportReport, McpError> {
    import_server(store, server, &McpToolList::default())
}

/// [`remove_server`] inside a transaction the caller commits.
///
/// ```
/// use capstore::mcp::{import_server, remove_server_in, McpToolList};
/// use capstore::{Store, TOOLS};
/// let store = Store::new();
/// let list = McpToolList::from_json(r#"{"tools": [{"name": "search", "inputSchema": {}}]}"#)?;
/// import_server(&store, "web", &list)?;
/// store.write(|tx| remove_server_in(tx, "web"))?;
/// assert_eq!(store.snapshot().count(&TOOLS)?, 0);
/// # Ok::<(), capstore::mcp::McpError>(())
/// ```
pub fn remove_server_in(tx: &mut WriteTxn, server: &str) -> Result<ImportReport, McpError> {
    import_server_in(tx, server, &McpToolList::default())
}

/// The diff and the writes. Checks every removal before writing, so the common refusal
/// (a skill lists a removed tool) writes nothing; `all_or_nothing` covers the rest.
fn replace_server_tools(
    tx: &mut WriteTxn,
    server: &str,
    incoming: Vec<Tool>,
) -> Result<ImportReport, McpError> {
    let mut current: BTreeMap<String, Tool> = tx
        .view()
        .by_index(&TOOLS, "source", server)?
        .map(|(key, tool)| (key.to_string(), tool.clone()))
        .collect();
    let mut report = ImportReport {
        server: server.to_string(),
        ..ImportReport::default()
    };
    let mut writes = Vec::new();
    for mut tool in incoming {
        let key = tool.qualified_name();
        match current.remove(&key) {
            None => {
                report.added.push(key);
                writes.push(tool);
            }
            Some(old) => {
                // Skill ownership is the store's, not the server's: keep it.
                tool.skills = old.skills.clone();
                if tool == old {
                    report.unchanged += 1;
                } else {
                    report.changed.push(key);
                    writes.push(tool);
                }
            }
        }
    }
    // What is left in `current` the server no longer offers (BTreeMap: in key order).
    for key in current.keys() {
        let listed_by = skills_listing(tx.view(), key)?;
        if !listed_by.is_empty() {
            return Err(McpError::ToolInUse {
                server: server.to_string(),
                tool: key.clone(),
                skills: listed_by,
            });
        }
    }
    for key in current.into_keys() {
        // As `exec::remove_tool` does: the ownership rule (checked for all removals above);
        // the tool's handler goes with it (the `handlers` table's rule).
        tx.delete(&TOOLS, &key)?;
        report.removed.push(key);
    }
    // A first import (or one that only adds, each name once) is one bulk insert: the same
    // writes and change set as the upserts, without a text segment and merges per tool.
    let distinct = || {
        let mut seen = std::collections::HashSet::new();
        report.added.iter().all(|key| seen.insert(key))
    };
    if report.changed.is_empty() && distinct() {
        tx.insert_many(&TOOLS, writes)?;
    } else {
        for tool in writes {
            tx.upsert(&TOOLS, tool)?;
        }
    }
    report.added.sort();
    report.changed.sort();
    Ok(report)
}
