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

use crate::store::{IndexSchema, TableSchema, TextSchema};

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
