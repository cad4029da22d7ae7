//! The built-in tables, `tools`, `skills`, `hooks`, `handlers`, `hook_handlers`, `vectors` and
//! `usage`, and the stores that have them.

use crate::embed::{self, ToolVector};
use crate::exec::{self, HookHandler, ToolHandler};
use crate::hooks::{self, Hook};
use crate::skills::{self, Skill};
use crate::store::{BUILTIN_SCHEMA, Index, SchemaError, Store, StoreBuilder, Table};
use crate::tools::{self, Tool, ToolTextOptions};
use crate::usage::{self, Usage};

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

/// The built-in `skills` table (see [`Skill`]): key = name; indexes `category`, `tags`, `tool`,
/// `dependency`; BM25 text index.
///
/// ```
/// use capstore::{Skill, Store, SKILLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&SKILLS, Skill::new("files", "Work with files").with_category("fs")))?;
/// assert_eq!(store.snapshot().count_by_index(&SKILLS, "category", "fs")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const SKILLS: Table<Skill> = Table::new(1, BUILTIN_SCHEMA);

/// The built-in `hooks` table (see [`Hook`]): key = id; indexes `event`, `matcher`.
///
/// ```
/// use capstore::{Hook, HookEvent, Store, HOOKS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PostToolUse, "*")))?;
/// assert_eq!(store.snapshot().count_by_index(&HOOKS, "event", "post-tool-use")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS: Table<Hook> = Table::new(2, BUILTIN_SCHEMA);

/// The built-in `handlers` table (see [`ToolHandler`]): key = the tool's qualified name; no
/// indexes. Fill it with [`register_tool`](crate::exec::register_tool).
///
/// ```
/// use capstore::{Store, Tool, HANDLERS};
/// let store = Store::new();
/// store.write(|tx| capstore::exec::register_tool(tx, Tool::new("a", "b"), |v| async move { Ok(v) }))?;
/// assert!(store.snapshot().contains(&HANDLERS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HANDLERS: Table<ToolHandler> = Table::new(3, BUILTIN_SCHEMA);

/// The built-in `hook_handlers` table (see [`HookHandler`]): key = the hook's id; no indexes.
/// Fill it with [`register_hook`](crate::exec::register_hook).
///
/// ```
/// use capstore::{Hook, HookEvent, HookOutcome, Store, HOOK_HANDLERS};
/// let store = Store::new();
/// store.write(|tx| capstore::exec::register_hook(tx, Hook::new("a", HookEvent::PreToolUse, "*"),
///     |_| async { Ok(HookOutcome::Continue) }))?;
/// assert!(store.snapshot().contains(&HOOK_HANDLERS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOK_HANDLERS: Table<HookHandler> = Table::new(4, BUILTIN_SCHEMA);

/// The built-in `vectors` table (see [`ToolVector`](crate::embed::ToolVector)): each tool's
/// embedding, key = the tool's key; no indexes. It follows the tools table: writing or removing
/// a tool removes its vector. Fill it with [`embed_missing`](crate::embed::embed_missing).
///
/// ```
/// use capstore::{embed::ToolVector, Store, Tool, TOOLS, VECTORS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("a", "b"))?;
///     tx.insert(&VECTORS, ToolVector::new("a", "toy", vec![1.0, 0.0]))
/// })?;
/// store.write(|tx| tx.upsert(&TOOLS, Tool::new("a", "changed")))?;
/// assert!(!store.snapshot().contains(&VECTORS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const VECTORS: Table<ToolVector> = Table::new(5, BUILTIN_SCHEMA);

/// The built-in `usage` table (see [`Usage`](crate::usage::Usage)): what the agent's calls
/// taught about each tool, key = the tool's key; no indexes. A row goes when its tool is removed
/// (not when it is replaced). Filled by [`learn`](crate::usage::learn), through a
/// [`UsageRecorder`](crate::usage::UsageRecorder).
///
/// ```
/// use capstore::usage::{TurnUse, learn};
/// use capstore::{Store, Tool, TOOLS, USAGE};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "b")))?;
/// store.write(|tx| learn(tx, &TurnUse::new(["a"])))?;
/// assert_eq!(store.snapshot().get(&USAGE, "a")?.map(|u| u.calls), Some(1));
/// store.write(|tx| tx.delete(&TOOLS, "a").map(drop))?;
/// assert!(!store.snapshot().contains(&USAGE, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const USAGE: Table<Usage> = Table::new(6, BUILTIN_SCHEMA);

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
/// The `skills` table's index of categories.
///
/// ```
/// use capstore::{Skill, Store, SKILLS, SKILLS_BY_CATEGORY};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&SKILLS, Skill::new("files", "Files").with_category("fs")))?;
/// assert_eq!(store.snapshot().count_by(&SKILLS_BY_CATEGORY, "fs")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const SKILLS_BY_CATEGORY: Index<Skill> = Index::new(SKILLS, "category");
/// The `skills` table's index of tags.
///
/// ```
/// # use capstore::{Skill, Store, SKILLS, SKILLS_BY_TAG};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&SKILLS, Skill::new("files", "Files").with_tags(["fs"])))?;
/// assert_eq!(store.snapshot().count_by(&SKILLS_BY_TAG, "fs")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const SKILLS_BY_TAG: Index<Skill> = Index::new(SKILLS, "tags");
/// The `skills` table's index of the tools a skill lists.
///
/// ```
/// # use capstore::skills::register_skill;
/// # use capstore::{Skill, Store, Tool, SKILLS_BY_TOOL};
/// # let store = Store::new();
/// # store.write(|tx| register_skill(tx, Skill::new("files", "Files"), [Tool::new("read_file", "Read")]))?;
/// assert_eq!(store.snapshot().count_by(&SKILLS_BY_TOOL, "files/read_file")?, 1);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub const SKILLS_BY_TOOL: Index<Skill> = Index::new(SKILLS, "tool");
/// The `skills` table's index of the skills a skill depends on.
///
/// ```
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool, SKILLS_BY_DEPENDENCY};
/// let store = Store::new();
/// store.write(|tx| {
///     register_skill(tx, Skill::new("auth", "Sign in"), Vec::<Tool>::new())?;
///     register_skill(tx, Skill::new("github", "GitHub").with_dependencies(["auth"]), Vec::<Tool>::new())
/// })?;
/// assert_eq!(store.snapshot().count_by(&SKILLS_BY_DEPENDENCY, "auth")?, 1);
/// # Ok::<(), capstore::skills::SkillError>(())
/// ```
pub const SKILLS_BY_DEPENDENCY: Index<Skill> = Index::new(SKILLS, "dependency");
/// The `hooks` table's index of events (`pre-tool-use`, `post-tool-use`).
///
/// ```
/// # use capstore::{Hook, HookEvent, Store, HOOKS, HOOKS_BY_EVENT};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PreToolUse, "*")))?;
/// assert_eq!(store.snapshot().count_by(&HOOKS_BY_EVENT, "pre-tool-use")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS_BY_EVENT: Index<Hook> = Index::new(HOOKS, "event");
/// The `hooks` table's index of matcher patterns.
///
/// ```
/// # use capstore::{Hook, HookEvent, Store, HOOKS, HOOKS_BY_MATCHER};
/// # let store = Store::new();
/// # store.write(|tx| tx.insert(&HOOKS, Hook::new("audit", HookEvent::PreToolUse, "fs/*")))?;
/// assert_eq!(store.snapshot().count_by(&HOOKS_BY_MATCHER, "fs/*")?, 1);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const HOOKS_BY_MATCHER: Index<Hook> = Index::new(HOOKS, "matcher");

/// How many built-in tables come first in every store made by [`Store::new`] or
/// [`Store::builder`]; given to the store, which knows them only by this count.
const BUILTIN_TABLES: usize = 7;

fn declare_builtins(builder: &mut StoreBuilder) -> Result<(), SchemaError> {
    declare_builtins_with(builder, ToolTextOptions::default())
}

fn declare_builtins_with(
    builder: &mut StoreBuilder,
    options: ToolTextOptions,
) -> Result<(), SchemaError> {
    let tokenizer = options.tokenizer.clone();
    // The order fixes the positions that the constant handles (TOOLS, ..., USAGE) name.
    builder.table(tools::tools_schema_with(options))?;
    builder.table(skills::schema(tokenizer))?;
    builder.table(hooks::schema())?;
    builder.table(exec::handler_schema())?;
    builder.table(exec::hook_handler_schema())?;
    builder.table(embed::vectors_schema())?;
    builder.table(usage::schema())?;
    Ok(())
}

impl Store {
    /// An empty store with the built-in tables (`tools`, `skills`, `hooks`, `handlers`,
    /// `hook_handlers`, `vectors`, `usage`).
    ///
    /// ```
    /// let store = capstore::Store::new();
    /// assert_eq!(store.version(), 0);
    /// ```
    pub fn new() -> Store {
        Store::builder().build()
    }

    /// A builder that starts with the built-in tables, to which you may add your own.
    ///
    /// ```
    /// use capstore::store::TableSchema;
    /// let mut builder = capstore::Store::builder();
    /// let notes = builder.table(TableSchema::new("notes", |n: &String| n.clone()))?;
    /// let store = builder.build();
    /// store.write(|tx| tx.insert(&notes, "hello".to_string()))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> StoreBuilder {
        // The built-in declarations are constants, checked by the tests below; were one ever to
        // fail, a bare builder is returned and every built-in handle reports TableMismatch,
        // rather than the library panicking.
        StoreBuilder::with_builtins(BUILTIN_TABLES, declare_builtins).unwrap_or_default()
    }
}

impl Store {
    /// An empty store like [`Store::new`], whose tools table indexes text with `options`
    /// (tokenizer, BM25 parameters, field weights) instead of the defaults.
    ///
    /// Fails if the options are out of range (a negative `k1`, `b` above 1, a negative weight).
    ///
    /// ```
    /// use capstore::tools::ToolTextOptions;
    /// use capstore::{Store, Tool, TOOLS};
    /// let mut options = ToolTextOptions::default();
    /// options.index.params.k1 = 0.9;
    /// let store = Store::with_tool_text(options)?;
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather")))?;
    /// assert_eq!(store.snapshot().text_index(&TOOLS)?.config().params.k1, 0.9);
    ///
    /// let mut bad = ToolTextOptions::default();
    /// bad.index.params.b = 2.0;
    /// assert!(Store::with_tool_text(bad).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_tool_text(options: ToolTextOptions) -> Result<Store, SchemaError> {
        StoreBuilder::with_builtins(BUILTIN_TABLES, |b| declare_builtins_with(b, options))
            .map(StoreBuilder::build)
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_schema_is_valid_and_in_order() {
        let builder =
            StoreBuilder::with_builtins(BUILTIN_TABLES, declare_builtins).expect("valid built-ins");
        let snap = builder.build().snapshot();
        // The count the store is given must be the tables declared, or a built-in handle
        // past it would not fit.
        assert_eq!(snap.table_names().count(), BUILTIN_TABLES);
        assert_eq!(
            snap.table_names().collect::<Vec<_>>(),
            [
                "tools",
                "skills",
                "hooks",
                "handlers",
                "hook_handlers",
                "vectors",
                "usage"
            ]
        );
        assert_eq!(snap.table_name(&TOOLS).expect("tools"), "tools");
        assert_eq!(snap.table_name(&SKILLS).expect("skills"), "skills");
        assert_eq!(snap.table_name(&HOOKS).expect("hooks"), "hooks");
        assert_eq!(snap.table_name(&HANDLERS).expect("handlers"), "handlers");
        assert_eq!(
            snap.table_name(&HOOK_HANDLERS).expect("hook_handlers"),
            "hook_handlers"
        );
    }

    #[test]
    fn builtin_handles_do_not_fit_a_bare_store() {
        let bare = StoreBuilder::new().build();
        assert!(bare.snapshot().count(&TOOLS).is_err());
    }
}
