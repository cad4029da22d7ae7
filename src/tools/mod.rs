//! The `tools` table: what a tool is, how it is named, and which of its text is searched.
//!
//! A [`Tool`] is a plain, serde-serializable record (JSON in and out, in the shape of an MCP
//! `tools/list` entry, with `inputSchema` accepted for `input_schema`). Its primary key is its
//! [qualified name](Tool::qualified_name), `source/name`. Naming rules and the export policy for
//! provider-safe names are described at [`check_name`] and [`export_names`].
//!
//! # Naming policy
//! - **Stored names** are accepted as users and MCP servers write them, within limits that keep
//!   keys unambiguous and printable ([`check_tool_name`]): not empty, at most [`MAX_NAME_LEN`]
//!   bytes, no control characters, no leading or trailing white space. `getPM2.5Level` or
//!   `PDF&URLTool` are stored as they are. A source never contains `/` ([`check_name`]); a
//!   tool's name may, when the tool has a source, as MCP allows (`user-profile/update`,
//!   `admin.tools.list`).
//! - **Qualified names** (the tools table's primary key) are `source/name`, or just `name` for a
//!   tool without a source, so two MCP servers may both offer `search`. The source is what
//!   precedes the first `/` and the name all that follows it ([`bare_name`]), so
//!   `crm/user-profile/update` is the tool `user-profile/update` of `crm`.
//! - **Export names** must match the providers' rule `^[a-zA-Z0-9_-]{1,64}$`. [`export_names`]
//!   maps every tool of a set to a distinct export name, deterministically (the result does not
//!   depend on the order the tools come in):
//!   1. the name with every other character replaced by `_` ([`sanitize`]);
//!   2. where two tools of the set would share that, each takes `source__name`, sanitized;
//!   3. where they still clash, a name is over 64 characters or it is one a request's own tool
//!      takes ([`RESERVED_EXPORT_NAMES`]: `search_tools`, `call_tool`, Anthropic's tool
//!      searches), a `_` and 8 hex digits of a hash of the qualified name replace the tail.

mod compact;
mod names;
mod record;
mod registration;
mod schema;
mod text;
mod visit;

pub(crate) use compact::canonical_json;
pub(crate) use names::refuse;
pub use names::{
    MAX_EXPORT_LEN, MAX_NAME_LEN, NameParts, RESERVED_EXPORT_NAMES, bare_name, check_name,
    check_tool_name, export_names, is_provider_safe, name_counts, sanitize,
};
pub use record::{Tool, check_label};
pub use registration::Registration;
pub(crate) use registration::Then;
pub use schema::InputSchema;
pub use text::{
    DEFAULT_NAME_WEIGHT, DEFAULT_PARAM_DOCS_WEIGHT, TOOL_TEXT_FIELDS, ToolTextOptions, tool_text,
    walk_schema,
};

use crate::store::{BUILTIN_SCHEMA, Index, IndexSchema, Table, TableSchema, TextSchema};

/// The declaration of the `tools` table with its text index configured by `options` (the
/// built-in table uses [`ToolTextOptions::default`]); see [`Store::with_tool_text`](crate::Store::with_tool_text).
///
/// ```
/// use capstore::tools::{ToolTextOptions, tools_schema_with};
/// let schema = tools_schema_with(ToolTextOptions::default());
/// assert!(format!("{schema:?}").contains("text_index: true"));
/// ```
pub fn tools_schema_with(options: ToolTextOptions) -> TableSchema<Tool> {
    TableSchema::new("tools", |t: &Tool| t.qualified_name())
        .index(IndexSchema::single("name", |t: &Tool| Some(t.name.clone())))
        .index(IndexSchema::single("source", |t: &Tool| t.source.clone()))
        .index(IndexSchema::multi("tags", |t: &Tool| t.tags.clone()))
        .index(IndexSchema::multi("skill", |t: &Tool| t.skills.clone()))
        .validator(Tool::validate)
        .text_index(
            TextSchema::new(tool_text)
                .tokenizer(options.tokenizer)
                .config(options.index),
        )
}

// Position 0 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `tools` table (see [`Tool`]): key = qualified name; indexes `name`, `source`,
/// `tags`, `skill`; BM25 text index.
///
/// ```
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// assert_eq!(store.snapshot().count(&TOOLS)?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const TOOLS: Table<Tool> = Table::new(0, BUILTIN_SCHEMA);

/// The `tools` table's index of tool names (the bare name, without the source).
///
/// ```
/// use capstore::{Store, Tool, TOOLS, TOOLS_BY_NAME};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("search", "Search code").with_source("github"))?;
///     tx.insert(&TOOLS, Tool::new("search", "Search the web").with_source("web"))
/// })?;
/// assert_eq!(store.snapshot().count_by(&TOOLS_BY_NAME, "search")?, 2);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const TOOLS_BY_NAME: Index<Tool> = Index::new(TOOLS, "name");

/// The `tools` table's index of sources (an MCP server's name, a plug-in).
///
/// ```
/// # use capstore::{Store, Tool, TOOLS, TOOLS_BY_SOURCE};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&TOOLS, Tool::new("search", "Search").with_source("github")))?;
/// assert_eq!(store.snapshot().count_by(&TOOLS_BY_SOURCE, "github")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const TOOLS_BY_SOURCE: Index<Tool> = Index::new(TOOLS, "source");

/// The `tools` table's index of tags (a tool carries several).
///
/// ```
/// # use capstore::{Store, Tool, TOOLS, TOOLS_BY_TAG};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&TOOLS, Tool::new("fetch", "Fetch").with_tags(["web", "http"])))?;
/// assert_eq!(store.snapshot().count_by(&TOOLS_BY_TAG, "http")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const TOOLS_BY_TAG: Index<Tool> = Index::new(TOOLS, "tags");

/// The `tools` table's index of the skills that bundle a tool.
///
/// ```
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool, TOOLS_BY_SKILL};
/// let store = Store::new();
/// store.write(|tx| register_skill(tx, Skill::new("files", "Files"), [Tool::new("read_file", "Read")]))?;
/// assert_eq!(store.snapshot().count_by(&TOOLS_BY_SKILL, "files")?, 1);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub const TOOLS_BY_SKILL: Index<Tool> = Index::new(TOOLS, "skill");
