//! Choosing, each turn, the tool definitions that reach the model.
//!
//! A [`ContextBuilder`] turns a [`Turn`] (the latest message, earlier ones, what the model used
//! and was sent before) into a [`Selection`] over one [`Snapshot`](crate::Snapshot):
//!
//! 1. **Query**: the message, plus earlier user messages with a decaying weight, plus the names
//!    of tools used recently.
//! 2. **Exact names** written in the message (`github/search`, `get_weather`, `` `fetch` ``)
//!    are taken first.
//! 3. **Skills** are searched by BM25; the best (above thresholds) bring their tools and their
//!    dependencies' tools. **Tools** are searched by BM25 directly too, skill or no skill.
//!    Pinned tools and skills are always in.
//! 4. **Policy** ([`SelectionPolicy`]): tag filters, score thresholds, tool and skill limits, a
//!    token budget, what to do when nothing matches, and stability: last turn's tools stay
//!    while room remains, and keep their places at the front of the list.
//! 5. The [`Selection`] says, for each tool, why; and for near misses, why not.
//!
//! Without a builder, [`all_tools`] sends everything. [`search_tools_definition`] and
//! [`search_tools`] let the model pull in what the builder did not pick.
//!
//! # Policy knobs and defaults
//! | knob | default |
//! |---|---|
//! | `max_tools` | 16 |
//! | `max_skills` | 3 |
//! | `min_score`, `min_relative_score` | 0, 0 |
//! | `skill_min_score`, `skill_min_relative_score` | 0, 0.5 |
//! | `skill_tool_weight` | 0.9 |
//! | `pinned_tools`, `pinned_skills` | none |
//! | `include_tags`, `exclude_tags` | none |
//! | `token_budget` | none |
//! | `history_turns`, `history_decay` | 2, 0.5 |
//! | `recent_tool_weight` | 0.5 |
//! | `keep_recently_used`, `keep_previous` | true, true |
//! | `match_exact_names` | true |
//! | `on_no_match` | pinned only |
//! | `explain` | true |

mod budget;
mod builder;
mod candidates;
mod discovery;
mod error;
mod key_table;
mod policy;
mod query;
mod query_terms;
mod selection;
mod turn;

pub use budget::estimate_tokens;
pub use builder::{ContextBuilder, MAX_TOOLS_NEAR_MISSES};
pub use discovery::{FoundTool, SEARCH_TOOLS, all_tools, search_tools, search_tools_definition};
pub use error::SelectError;
pub use policy::{NoMatch, PolicyError, SelectionPolicy};
pub use query_terms::QueryTerms;
pub use selection::{DropReason, Dropped, MatchedSkill, Reason, Reasons, SelectedTool, Selection};
pub use turn::{Conversation, Turn};
