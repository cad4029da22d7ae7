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
use crate::store::{IndexSchema, TableSchema, TextFields, TextSchema};

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
