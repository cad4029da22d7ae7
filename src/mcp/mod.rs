//! Importing MCP servers' tool lists (`tools/list`) into the tools table, and keeping them in
//! step when a server's list changes; reading `mcpServers` configurations ([`McpConfig`]); and,
//! with the feature `mcp-live`, connecting to the servers themselves (`live::McpHub`).
//!
//! Read a list with [`McpToolList::from_json`] (a `tools/list` result, or the whole JSON-RPC
//! response), import it with [`import_server`], import it again when the server sends
//! `notifications/tools/list_changed`, and drop it with [`remove_server`].
//!
//! ```
//! use capstore::context::{ContextBuilder, Turn};
//! use capstore::mcp::{import_server, McpToolList};
//! use capstore::provider::ToolExport;
//! use capstore::Store;
//!
//! let store = Store::new();
//! let github = McpToolList::from_json(r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [
//!     {"name": "search", "description": "Search GitHub repositories", "inputSchema": {"type": "object"}},
//!     {"name": "create_issue", "description": "Open an issue in a repository", "inputSchema": {"type": "object"}}
//! ]}}"#)?;
//! let web = McpToolList::from_json(r#"{"tools": [
//!     {"name": "search", "description": "Search the web", "inputSchema": {"type": "object"}}
//! ]}"#)?;
//! import_server(&store, "github", &github)?;
//! import_server(&store, "web", &web)?;
//!
//! let snap = store.snapshot();
//! let selection = ContextBuilder::new().select(&snap, &Turn::new("open an issue about the crash"))?;
//! assert_eq!(selection.keys().next(), Some("github/create_issue"));
//! let export = ToolExport::for_snapshot(&snap)?;
//! assert_eq!(export.export_name("github/search"), Some("github__search"));
//! assert_eq!(export.export_name("web/search"), Some("web__search"));
//! assert_eq!(export.export_name("github/create_issue"), Some("create_issue"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Namespacing
//! Every imported tool gets `source` = the server's name, so its qualified name (the tools
//! table's key) is `server/name`: two servers' `search` are `github/search` and `web/search`,
//! and never collide in the store. The server name is also the tool's one tag, so a
//! [`SelectionPolicy`](crate::context::SelectionPolicy) can include or exclude a server's tools by
//! tag, and a message that names the server ranks its tools higher. Server names must be valid
//! as both ([`check_server`]): a tag ([`check_label`](crate::tools::check_label)) and a source
//! ([`check_name`](crate::tools::check_name), so no `/`). A tool's own name may contain `/`
//! and `.`, as MCP's tool-name rules allow: the qualified name splits at the first `/`, so
//! `crm/user-profile/update` is `crm`'s tool `user-profile/update`, exported as
//! `user-profile_update` and resolved back to it.
//!
//! The names the model sees come from [`export_names`](crate::tools::export_names) over the
//! whole catalog (see [`ToolExport`](crate::provider::ToolExport)): a tool keeps its own name,
//! sanitized, while no other tool of the catalog shares it; tools that share it become
//! `server__name`; a clash that remains, or a name over 64 characters, gets a hash suffix.
//! [`ToolExport::resolve`](crate::provider::ToolExport::resolve) maps the model's call back to
//! `server/name`, and from there to the server (`source`) and the name to call it by (`name`).
//!
//! # What becomes of each field
//! | MCP tool field | [`Tool`](crate::Tool) |
//! |---|---|
//! | `name` | `name` (must pass [`check_tool_name`](crate::tools::check_tool_name): MCP's `user-profile/update` and `admin.tools.list` are fine) |
//! | `description` | `description` (empty when absent) |
//! | `inputSchema` | `input_schema` (must be an object schema) |
//! | `annotations` (`title`, `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`, others) | `annotations`, key by key as given |
//! | `title` | `annotations["title"]` (it takes precedence over `annotations.title`, as MCP says for display) |
//! | `outputSchema` | `annotations["outputSchema"]` (must be an object schema) |
//! | `_meta` | `annotations["_meta"]` |
//! | (the server) | `source`, and `tags = [server]` |
//!
//! `annotations` is `null` when none of these is present. Providers are sent name, description
//! and input schema only; the rest stays in the store for your application (to ask before a
//! `destructiveHint` tool runs, for example).
//!
//! # Forward compatibility
//! MCP lets servers and later versions of the specification add fields. Fields this module
//! does not know (at the result level, such as `_meta`, and on each tool, such as `icons`) are
//! accepted and ignored: they are not stored, so a change to them alone does not count as a
//! change on re-import. `null` is read as absent for the optional fields. Known fields of the
//! wrong type are errors, named by the tool's position and name ([`McpError::InvalidTool`]).
//!
//! # Paging
//! A server may split `tools/list` into pages (`nextCursor`). Join them with
//! [`McpToolList::extend`] as they arrive, or read them all with [`McpToolList::from_pages`];
//! import the joined list once it is complete. Names must be unique across the pages.
//!
//! # Re-import
//! The tools of a server are the tools whose `source` is its name (whether imported or
//! inserted by hand). [`import_server`] makes them exactly the list, in one transaction: new
//! names are added, names no longer offered are deleted, changed definitions are replaced, and
//! [`ImportReport`] says which (qualified names, sorted) and how many stayed as they were. No
//! change, no commit. Tools of other servers are not touched. A re-import replaces the whole
//! record (a tag added by hand is dropped) but keeps [`Tool::skills`](crate::Tool::skills), the
//! skills that own the tool, which are the store's and not the server's. A removed tool's
//! handler, if you registered one (in [`HANDLERS`](crate::HANDLERS), say to forward calls to
//! the server), is removed with it, as [`remove_tool`](crate::exec::remove_tool) does; the
//! handlers of the tools that stay are kept.
//!
//! # Skills
//! The ownership rule of [`crate::skills`] holds: a tool cannot be removed while a skill lists
//! it ([`unregister_tool`](crate::skills::unregister_tool) refuses too). A re-import (or
//! [`remove_server`]) that would remove such a tool is refused whole with
//! [`McpError::ToolInUse`], naming the tool and the skills, and the store stays as it was:
//! a server dropping a tool should not silently break a skill. Unregister or change the skill,
//! then import again.
//!
//! ```
//! use capstore::mcp::{import_server, McpError, McpToolList};
//! use capstore::skills::register_skill;
//! use capstore::{Skill, Store, Tool};
//!
//! let store = Store::new();
//! let v1 = McpToolList::from_json(r#"{"tools": [{"name": "create_issue", "inputSchema": {}}]}"#)?;
//! import_server(&store, "github", &v1)?;
//! store.write(|tx| register_skill(tx, Skill::new("triage", "").with_tools(["github/create_issue"]), Vec::<Tool>::new()))?;
//! let before = store.version();
//! let err = import_server(&store, "github", &McpToolList::default()).unwrap_err();
//! assert!(matches!(err, McpError::ToolInUse { ref tool, ref skills, .. }
//!     if tool == "github/create_issue" && skills == &["triage"]));
//! assert_eq!(store.version(), before);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod error;
mod import;
mod list;
#[cfg(feature = "mcp-live")]
pub mod live;
mod parse;
mod server;
mod tool;

pub use config::{ConfigError, McpConfig, OAuthConfig, ServerConfig, ServerTransport};
pub use error::McpError;
pub use import::{ImportReport, import_server, import_server_in, remove_server, remove_server_in};
pub use list::McpToolList;
pub use server::check_server;
pub use tool::McpTool;
