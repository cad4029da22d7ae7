//! The result of a selection: the tools to send, in order, each with its reasons, and the near
//! misses with why they were dropped.

use std::sync::Arc;

use serde::Serialize;

use crate::Tool;
use crate::bm25::Explanation;

/// Why a tool was selected. A tool may have several reasons; the first is the strongest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Listed in the policy's pinned tools.
    Pinned,
    /// A tool of a pinned skill (or of its dependencies).
    PinnedSkill {
        /// The pinned skill.
        skill: String,
    },
    /// Its name was written in the message.
    ExactName {
        /// The text that named it.
        mention: String,
    },
    /// The model found it with `search_tools` earlier.
    Discovered,
    /// BM25 over tool text ranked it.
    Retrieved {
        /// Its BM25 score.
        score: f32,
        /// Each query term's contribution (when the policy asks for explanations).
        #[serde(skip_serializing_if = "Option::is_none")]
        explanation: Option<Explanation>,
    },
    /// A skill it belongs to matched the message.
    Skill {
        /// The skill.
        skill: String,
        /// The skill's BM25 score.
        score: f32,
    },
    /// A skill it belongs to is a dependency of a matched skill.
    DependencyOf {
        /// The matched skill that needs it.
        skill: String,
        /// The dependency skill the tool belongs to.
        dependency: String,
    },
    /// The model called it in a recent turn.
    RecentlyUsed,
    /// It was selected last turn and there was room to keep it.
    KeptFromLastTurn,
    /// Nothing matched and the policy sends everything.
    Fallback,
}

/// Why a candidate was not selected.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DropReason {
    /// It carries an excluded tag.
    ExcludedTag {
        /// The tag.
        tag: String,
    },
    /// It carries none of the included tags.
    MissingIncludedTag,
    /// Its BM25 score is under the policy's minimum.
    BelowMinScore {
        /// Its score.
        score: f32,
        /// The minimum.
        min: f32,
    },
    /// Its BM25 score is under the minimum fraction of the best score.
    BelowRelativeScore {
        /// Its score.
        score: f32,
        /// The best score of the turn.
        best: f32,
        /// The minimum fraction.
        fraction: f32,
    },
    /// The tool limit was reached.
    MaxTools {
        /// The limit.
        max: usize,
    },
    /// Its definition did not fit in the remaining token budget.
    TokenBudget {
        /// Its estimated tokens.
        needed: usize,
        /// Tokens left when it came up.
        remaining: usize,
    },
    /// Pinned or named, but not in the store.
    NotFound,
}

/// A selected tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectedTool {
    /// Qualified name (the tools table's key).
    pub key: Arc<str>,
    /// The tool's definition, as of the selection's snapshot.
    #[serde(skip)]
    pub tool: Arc<Tool>,
    /// Position by relevance (0 = most relevant), whatever the send order.
    pub rank: usize,
    /// Relevance used for ranking within its class: its BM25 score relative to the turn's best,
    /// or its skill's relative score scaled by the policy's `skill_tool_weight` (half that for
    /// a dependency's tools), whichever is higher, plus a tenth of its own relative BM25 score
    /// when it was retrieved, so that a skill's tools whose own text matches come first.
    pub score: f32,
    /// Why it was selected, strongest first.
    pub reasons: Vec<Reason>,
    /// Estimated tokens of its definition.
    pub tokens: usize,
}

/// A candidate that was not selected, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Qualified name.
    pub key: String,
    /// Why it was dropped.
    pub reason: DropReason,
    /// What had made it a candidate.
    pub candidate: Vec<Reason>,
}

/// A skill matched for the turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchedSkill {
    /// The skill.
    pub name: String,
    /// Its BM25 score (0 for pinned skills and dependencies).
    pub score: f32,
    /// Why it is in: `"matched"`, `"pinned"` or `"dependency"`.
    pub how: &'static str,
}

/// What [`ContextBuilder::select`](super::ContextBuilder::select) returns: the snapshot version
/// it read, the tools to send in a stable order, and the explanation.
///
/// The send order keeps last turn's tools first, in last turn's order, then adds new ones by
/// relevance, so that the request prefix (and a provider's prompt cache) survives while the
/// topic stays the same. [`ranked`](Self::ranked) gives relevance order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// The snapshot version the selection was made from.
    pub version: u64,
    /// The tools to send, in send order.
    pub tools: Vec<SelectedTool>,
    /// Near misses: candidates that were dropped, with why: all those cut by tag filters or
    /// the token budget, and the best [`MAX_TOOLS_NEAR_MISSES`](super::MAX_TOOLS_NEAR_MISSES)
    /// of those cut by `max_tools`.
    pub dropped: Vec<Dropped>,
    /// The skills that contributed.
    pub skills: Vec<MatchedSkill>,
    /// The weighted query terms built from the turn.
    pub query: Vec<(String, f32)>,
    /// Estimated tokens of all selected definitions.
    pub tokens: usize,
    /// True when nothing matched and the no-match policy applied.
    pub no_match: bool,
}

impl Selection {
    /// The selected tools' qualified names, in send order.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
    /// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("weather?"))?;
    /// assert_eq!(s.keys().collect::<Vec<_>>(), ["get_weather"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| &*t.key)
    }

    /// The selected tools by relevance, most relevant first.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city"))?;
    ///     tx.insert(&TOOLS, Tool::new("get_forecast", "Weather forecast for the week"))
    /// })?;
    /// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("weather forecast"))?;
    /// assert_eq!(s.ranked().next().map(|t| &*t.key), Some("get_forecast"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ranked(&self) -> impl Iterator<Item = &SelectedTool> {
        let mut by_rank: Vec<&SelectedTool> = self.tools.iter().collect();
        by_rank.sort_by_key(|t| t.rank);
        by_rank.into_iter()
    }

    /// Whether a tool (qualified name) was selected.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// let s = ContextBuilder::new().select(&capstore::Store::new().snapshot(), &Turn::new("x"))?;
    /// assert!(!s.contains("anything"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, key: &str) -> bool {
        self.tools.iter().any(|t| &*t.key == key)
    }
}
