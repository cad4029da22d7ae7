//! The `skills` table: bundles of tools with a category, tags, dependencies on other skills and
//! example requests.
//!
//! Register a skill with its tools in one step ([`register_skill`]), remove it with the tools
//! only it owned ([`unregister_skill`]), and resolve dependencies ([`dependency_closure`]).
//! Discovery by tag and category, and "which tools came from skill X", are index queries:
//!
//! ```
//! use capstore::skills::register_skill;
//! use capstore::{Skill, Store, Tool, SKILLS_BY_CATEGORY, SKILLS_BY_TAG, TOOLS_BY_SKILL};
//! let store = Store::new();
//! store.write(|tx| register_skill(
//!     tx,
//!     Skill::new("calendar", "Meetings").with_category("productivity").with_tags(["time"]),
//!     vec![Tool::new("list_events", "List events").with_source("gcal")],
//! ))?;
//! let snap = store.snapshot();
//! assert_eq!(snap.by(&SKILLS_BY_CATEGORY, "productivity")?.key_list().to_string(), "calendar");
//! assert_eq!(snap.by(&SKILLS_BY_TAG, "time")?.count(), 1);
//! assert_eq!(snap.by(&TOOLS_BY_SKILL, "calendar")?.key_list().to_string(), "gcal/list_events");
//! # Ok::<(), capstore::skills::SkillError>(())
//! ```

mod deps;
mod error;
mod record;
mod registry;

pub(crate) use deps::closure_of;
pub use deps::{Closure, dependency_closure};
pub use error::SkillError;
pub use record::Skill;
pub(crate) use registry::skills_listing;
pub use registry::{Unregistered, register_skill, unregister_skill, unregister_tool};

use crate::bm25::TokenizerConfig;
use crate::store::{
    BUILTIN_SCHEMA, Index, IndexSchema, Table, TableSchema, TextFields, TextSchema,
};

/// The declaration of the built-in `skills` table.
///
/// Primary key: the name. Indexes: `category`, `tags` (multi), `tool` (multi: the qualified
/// names of the tools it bundles), `dependency` (multi). Text index fields: `name`,
/// `description`, `tags`, `category`, `examples`.
pub(crate) fn schema(tokenizer: TokenizerConfig) -> TableSchema<Skill> {
    TableSchema::new("skills", |s: &Skill| s.name.clone())
        .index(IndexSchema::single("category", |s: &Skill| {
            (!s.category.is_empty()).then(|| s.category.clone())
        }))
        .index(IndexSchema::multi("tags", |s: &Skill| s.tags.clone()))
        .index(IndexSchema::multi("tool", |s: &Skill| s.tools.clone()))
        .index(IndexSchema::multi("dependency", |s: &Skill| {
            s.dependencies.clone()
        }))
        .validator(Skill::validate)
        // The tools' tokenizer: a turn's message is tokenized once for both searches, and a
        // skill's examples meet the message's words in the same form (`flights` → `flight`).
        .text_index(TextSchema::new(skill_text).tokenizer(tokenizer))
}

/// Fills a skill's text document: `name`, `description`, `tags`, `category`, `examples`.
///
/// ```
/// use capstore::bm25::Tokenizer;
/// use capstore::skills::skill_text;
/// use capstore::store::TextFields;
/// use capstore::Skill;
/// let skill = Skill::new("calendar", "Manage meetings").with_examples(["book a meeting room"]);
/// let tokenizer = Tokenizer::default();
/// let mut fields = TextFields::new(&tokenizer);
/// skill_text(&skill, &mut fields);
/// assert_eq!(fields.tokens("examples").map(|t| t.len()), Some(3));
/// ```
pub fn skill_text(skill: &Skill, fields: &mut TextFields<'_>) {
    fields.add("name", &skill.name);
    fields.add("description", &skill.description);
    for tag in &skill.tags {
        fields.add("tags", tag);
    }
    fields.add("category", &skill.category);
    for example in &skill.examples {
        fields.add("examples", example);
    }
}

// Position 1 of the built-in tables, in the order `crate::tables` declares them.
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
