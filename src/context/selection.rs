//! The result of a selection: the tools to send, in order, each with its reasons, and the near
//! misses with why they were dropped.

use std::sync::Arc;

use serde::{Serialize, Serializer};

use crate::store::Entry;
use crate::tools::Tool;

use super::query_terms::QueryTerms;
use crate::bm25::Explanation;

/// Why a tool was selected. A tool may have several reasons; the first is the strongest.
/// Displayed as the explanation says it:
///
/// ```
/// use capstore::context::Reason;
/// assert_eq!(Reason::Retrieved { score: 3.14159, explanation: None }.to_string(), "BM25 3.14");
/// let companion = Reason::Companion { of: "car/startEngine".into(), together: 23, before: 23, turns: 25 };
/// assert_eq!(companion.to_string(), "called before car/startEngine in 23 of its 25 turns");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Listed in the policy's pinned tools.
    Pinned,
    /// A tool of a pinned skill (or of its dependencies).
    PinnedSkill {
        /// The pinned skill.
        skill: Arc<str>,
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
        /// Each query term's contribution (when the policy asks for explanations, as the
        /// default does). Boxed: it is 56 bytes, where every other reason fits in 32; held
        /// inline it made each reason, selected tool and near miss larger to build, move and
        /// drop (a select on MetaTool: 1.9% fewer instructions boxed).
        #[serde(skip_serializing_if = "Option::is_none")]
        explanation: Option<Box<Explanation>>,
    },
    /// Hybrid retrieval ranked it: BM25 and the cosine of its vector with the message's,
    /// fused ([`Retrieval::Hybrid`](super::Retrieval::Hybrid)). Either side may be missing: a
    /// tool no query word matches can be found by meaning alone, and the other way round.
    Hybrid {
        /// The fused score.
        score: f32,
        /// Its BM25 score, if BM25 ranked it among the fused.
        #[serde(skip_serializing_if = "Option::is_none")]
        bm25: Option<f32>,
        /// Its cosine similarity with the message, if the dense side ranked it among the fused.
        #[serde(skip_serializing_if = "Option::is_none")]
        cosine: Option<f32>,
        /// The lexical side's share of the fused score this turn (the dense side has the rest):
        /// `score` is this times BM25 relative to its best, plus the rest times the cosine
        /// relative to the dense side's range ([hybrid retrieval](super#hybrid-retrieval)).
        lexical_weight: f32,
        /// Each query term's BM25 contribution (when the policy asks for explanations).
        #[serde(skip_serializing_if = "Option::is_none")]
        explanation: Option<Box<Explanation>>,
    },
    /// One ask of a message of several ([`asks`](super::asks())), searched alone, ranks it first
    /// (BM25, or BM25 fused with the ask's vector in hybrid retrieval): a message that asks for
    /// several things names each in a clause, a sentence or a list item of its own, and each
    /// ask gets its best tool.
    Ask {
        /// The ask's text.
        ask: Arc<str>,
        /// Its place among the message's asks, from 1.
        position: u32,
        /// Its score in the ask's ranking: BM25, or the fused score in hybrid retrieval.
        score: f32,
        /// In hybrid retrieval, the cosine of the tool's vector with the ask's (absent when
        /// the tool is not among the ask's nearest, or the ranking is BM25's).
        #[serde(skip_serializing_if = "Option::is_none")]
        cosine: Option<f32>,
    },
    /// A skill with no text of its own (an MCP server) that the request needs, found by its
    /// tools' places in the message's ranking ([units](super#servers-as-units)).
    Unit {
        /// The skill.
        skill: Arc<str>,
        /// Its score: its best tool's score relative to the best tool of the message.
        score: f32,
    },
    /// A skill it belongs to matched the message.
    Skill {
        /// The skill.
        skill: Arc<str>,
        /// The skill's BM25 score.
        score: f32,
    },
    /// A skill it belongs to is a dependency of a matched skill.
    DependencyOf {
        /// The matched skill that needs it.
        skill: Arc<str>,
        /// The dependency skill the tool belongs to.
        dependency: Arc<str>,
    },
    /// Another tool of the turn's list declares it needs this one first
    /// ([`Tool::requires`](crate::Tool::requires)).
    Required {
        /// The tool that requires it.
        by: Arc<str>,
    },
    /// The agent's own calls taught that it goes with another tool of the turn's list: called
    /// in the same turns as that tool ([`usage`](crate::usage)).
    Companion {
        /// The tool it goes with.
        of: Arc<str>,
        /// Turns in which both were called.
        together: u32,
        /// Of those, the turns in which this one was called first.
        before: u32,
        /// Turns in which `of` was called.
        turns: u32,
    },
    /// The model called it in a recent turn.
    RecentlyUsed,
    /// It was in last turn's list, and the list carries it on.
    KeptFromLastTurn,
    /// Nothing matched and the policy sends everything.
    Fallback,
}

/// The reasons of a selected or dropped tool, strongest first: a slice of [`Reason`]s (it
/// dereferences to `[Reason]`), held inline when there are one or two (nearly every tool), so
/// that a selection allocates no list per tool.
///
/// ```
/// use capstore::context::{Reason, Reasons};
/// let one = Reasons::from(vec![Reason::Pinned]);
/// assert_eq!(one.len(), 1);
/// assert!(matches!(one[0], Reason::Pinned));
/// let three: Reasons = [Reason::Pinned, Reason::Discovered, Reason::Fallback].into_iter().collect();
/// assert_eq!(three.iter().count(), 3);
/// assert_eq!(format!("{one:?}"), "[Pinned]");
/// assert_eq!(one, [Reason::Pinned][..]);
/// ```
#[derive(Clone)]
pub struct Reasons(Held);

/// Where a [`Reasons`] keeps its reasons.
#[derive(Clone)]
enum Held {
    One([Reason; 1]),
    Two([Reason; 2]),
    Many(Vec<Reason>),
}

impl Reasons {
    /// One reason.
    ///
    /// ```
    /// use capstore::context::{Reason, Reasons};
    /// assert_eq!(Reasons::one(Reason::Discovered).len(), 1);
    /// ```
    pub fn one(reason: Reason) -> Self {
        Reasons(Held::One([reason]))
    }

    /// Two reasons, the stronger first.
    ///
    /// ```
    /// use capstore::context::{Reason, Reasons};
    /// let r = Reasons::two(Reason::Pinned, Reason::Discovered);
    /// assert!(matches!(r[1], Reason::Discovered));
    /// ```
    pub fn two(first: Reason, second: Reason) -> Self {
        Reasons(Held::Two([first, second]))
    }

    /// The reasons as a slice.
    ///
    /// ```
    /// use capstore::context::{Reason, Reasons};
    /// assert!(Reasons::default().as_slice().is_empty());
    /// ```
    pub fn as_slice(&self) -> &[Reason] {
        match &self.0 {
            Held::One(r) => r,
            Held::Two(r) => r,
            Held::Many(r) => r,
        }
    }
}

impl Default for Reasons {
    /// No reasons.
    fn default() -> Self {
        Reasons(Held::Many(Vec::new()))
    }
}

impl std::ops::Deref for Reasons {
    type Target = [Reason];
    fn deref(&self) -> &[Reason] {
        self.as_slice()
    }
}

impl From<Vec<Reason>> for Reasons {
    fn from(reasons: Vec<Reason>) -> Self {
        Reasons(Held::Many(reasons))
    }
}

impl FromIterator<Reason> for Reasons {
    fn from_iter<I: IntoIterator<Item = Reason>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let (Some(first), second) = (iter.next(), iter.next()) else {
            return Reasons::default();
        };
        let Some(second) = second else {
            return Reasons::one(first);
        };
        let Some(third) = iter.next() else {
            return Reasons::two(first, second);
        };
        let mut all = vec![first, second, third];
        all.extend(iter);
        Reasons(Held::Many(all))
    }
}

impl<'r> IntoIterator for &'r Reasons {
    type Item = &'r Reason;
    type IntoIter = std::slice::Iter<'r, Reason>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Printed as the list it is.
impl std::fmt::Debug for Reasons {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// Equal when the reasons are, however they are held.
impl PartialEq for Reasons {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<[Reason]> for Reasons {
    fn eq(&self, other: &[Reason]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Reason>> for Reasons {
    fn eq(&self, other: &Vec<Reason>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// Serialized as a list.
impl Serialize for Reasons {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.as_slice())
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Pinned => f.write_str("pinned"),
            Reason::PinnedSkill { skill } => write!(f, "pinned skill {skill}"),
            Reason::ExactName { mention } => write!(f, "named in the message ({mention})"),
            Reason::Discovered => f.write_str("found by the model's tool search"),
            Reason::Retrieved { score, .. } => write!(f, "BM25 {score:.2}"),
            Reason::Hybrid {
                score,
                bm25,
                cosine,
                lexical_weight,
                ..
            } => {
                write!(f, "hybrid {score:.2} (BM25 ")?;
                match bm25 {
                    Some(s) => write!(f, "{s:.2}")?,
                    None => f.write_str("-")?,
                }
                f.write_str(", cosine ")?;
                match cosine {
                    Some(c) => write!(f, "{c:.3}")?,
                    None => f.write_str("-")?,
                }
                write!(f, ", lexical weight {lexical_weight:.2})")
            }
            Reason::Ask {
                ask,
                score,
                cosine: None,
                ..
            } => write!(f, "BM25 {score:.2} for '{ask}'"),
            Reason::Ask {
                ask,
                score,
                cosine: Some(cosine),
                ..
            } => write!(f, "hybrid {score:.2} (cosine {cosine:.3}) for '{ask}'"),
            Reason::Unit { skill, score } => {
                write!(f, "all of {skill}, which the request needs ({score:.2})")
            }
            Reason::Skill { skill, score } => write!(f, "skill {skill} matched ({score:.2})"),
            Reason::DependencyOf { skill, dependency } => {
                write!(f, "skill {dependency}, a dependency of {skill}")
            }
            Reason::Required { by } => write!(f, "required by {by}"),
            // Said as a prerequisite when it mostly came first.
            Reason::Companion {
                of,
                together,
                before,
                turns,
            } if before * 2 >= *together => {
                write!(f, "called before {of} in {before} of its {turns} turns")
            }
            Reason::Companion {
                of,
                together,
                turns,
                ..
            } => write!(f, "called with {of} in {together} of its {turns} turns"),
            Reason::RecentlyUsed => f.write_str("used recently"),
            Reason::KeptFromLastTurn => f.write_str("kept from last turn"),
            Reason::Fallback => f.write_str("nothing matched: sending everything"),
        }
    }
}

/// Why a candidate was not selected. Displayed as the explanation says it:
///
/// ```
/// use capstore::context::DropReason;
/// assert_eq!(
///     DropReason::MaxTools { max: 11 }.to_string(),
///     "over the turn's limit of 11 tools (the policy's max_turn_tools, message.max_tools and max_tools)"
/// );
/// assert_eq!(DropReason::Stale { idle_turns: 3 }.to_string(), "evicted from the list: unneeded for 3 turns");
/// ```
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
    /// The turn's tool limit was reached (`max_turn_tools`, within `max_tools`).
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
    /// A search hit of the message read with its history, past the best that may make room
    /// (`repack_for_conversation`), when the list carried across turns had `max_tools` tools
    /// (when the token budget is what ran out, it is dropped for [`DropReason::TokenBudget`]).
    ListFull {
        /// The list's length (`max_tools`).
        max_tools: usize,
    },
    /// Carried from earlier turns, evicted when the list was re-packed: the stalest go first.
    Stale {
        /// Turns since a turn last needed it or the model last called it.
        idle_turns: u32,
    },
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropReason::ExcludedTag { tag } => write!(f, "excluded tag {tag}"),
            DropReason::MissingIncludedTag => f.write_str("none of the included tags"),
            DropReason::BelowMinScore { score, min } => write!(f, "score {score:.2} < {min:.2}"),
            DropReason::BelowRelativeScore {
                score,
                best,
                fraction,
            } => write!(f, "score {score:.2} < {fraction} × best {best:.2}"),
            DropReason::MaxTools { max } => write!(
                f,
                "over the turn's limit of {max} tools (the policy's max_turn_tools, \
                 message.max_tools and max_tools)"
            ),
            DropReason::TokenBudget { needed, remaining } => {
                write!(f, "needs {needed} tokens, {remaining} left")
            }
            DropReason::NotFound => f.write_str("not in the store"),
            DropReason::ListFull { max_tools } => {
                write!(f, "the carried list was full ({max_tools} tools)")
            }
            DropReason::Stale { idle_turns } => {
                write!(f, "evicted from the list: unneeded for {idle_turns} turns")
            }
        }
    }
}

/// Which of a turn's channels brought a selected tool: the message alone, a skill the message
/// matched, the message read with its history, a tool it goes with, the list carried from
/// earlier turns, or the policy's pins (see [the channels](super#a-turns-channels)). Printed as the explanation says it:
///
/// ```
/// use capstore::context::Channel;
/// assert_eq!(Channel::Message.to_string(), "asked for by this message");
/// assert_eq!(Channel::Skill.to_string(), "brought by a skill the message matched");
/// assert_eq!(Channel::Conversation.to_string(), "from the conversation");
/// assert_eq!(Channel::Companion.to_string(), "brought by a tool it goes with");
/// assert_eq!(Channel::Kept { idle_turns: 1 }.to_string(), "kept from the last turn");
/// assert_eq!(Channel::Kept { idle_turns: 3 }.to_string(), "kept from 3 turns ago");
/// assert_eq!(Channel::Pinned.to_string(), "pinned");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Channel {
    /// Pinned by the policy (a pinned tool, or a tool of a pinned skill).
    Pinned,
    /// The message alone asks for it: its name is written there, or a search of the message
    /// without its history ranks it among its best few.
    Message,
    /// A skill the message matched brought it, not the tool's own text: a tool the skill
    /// bundles or lists, one of a skill it depends on ([`Reason::Skill`],
    /// [`Reason::DependencyOf`]), or one of a server the request needs ([`Reason::Unit`]).
    Skill,
    /// The message read with its history (earlier messages, tools used lately, tools found
    /// with `search_tools`) brought it.
    Conversation,
    /// Another tool of the turn brought it: that tool declares it needs it, or the agent's own
    /// calls taught that they go together ([the companion channel](super#companions)).
    Companion,
    /// Carried on from the list of an earlier turn, which last needed it this many turns ago.
    Kept {
        /// Turns since a turn needed it or the model called it (1: the last turn did).
        idle_turns: u32,
    },
    /// Every tool is sent: [`all_tools`](super::all_tools), or a turn that matched nothing
    /// under [`NoMatch::All`](super::NoMatch::All).
    All,
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Channel::Pinned => f.write_str("pinned"),
            Channel::Message => f.write_str("asked for by this message"),
            Channel::Skill => f.write_str("brought by a skill the message matched"),
            Channel::Conversation => f.write_str("from the conversation"),
            Channel::Companion => f.write_str("brought by a tool it goes with"),
            Channel::Kept { idle_turns: 0 | 1 } => f.write_str("kept from the last turn"),
            Channel::Kept { idle_turns } => write!(f, "kept from {idle_turns} turns ago"),
            Channel::All => f.write_str("every tool is sent"),
        }
    }
}

/// A selected tool.
///
/// ```
/// use capstore::context::{ContextBuilder, Turn};
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
/// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("weather in Oslo?"))?;
/// assert!(!s.tools[0].carried());
/// let later = ContextBuilder::new().select(&store.snapshot(), &Turn::new("thanks!").with_previous(["get_weather"]))?;
/// assert!(later.tools[0].carried());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    pub reasons: Reasons,
    /// Which channel of the turn brought it.
    pub channel: Channel,
    /// Estimated tokens of its definition.
    pub tokens: usize,
}

impl SelectedTool {
    /// The snapshot's tool `entry`, offered for the turn by one reason, not ranked yet; `None`
    /// if its row holds no tool.
    pub(super) fn unranked(
        entry: &Entry<'_, Tool>,
        tokens: usize,
        score: f32,
        why: Reason,
        channel: Channel,
    ) -> Option<SelectedTool> {
        Some(SelectedTool {
            key: Arc::clone(entry.key),
            tool: entry.shared()?,
            rank: 0,
            score,
            reasons: Reasons::one(why),
            channel,
            tokens,
        })
    }

    /// Whether it is sent only because earlier turns brought it (kept from the last turn's
    /// list, or recently used), not for anything in this turn. A
    /// [`Conversation`](super::Conversation) counts how long a tool has been carried: the
    /// stalest are evicted first when the list must be re-packed.
    pub fn carried(&self) -> bool {
        self.reasons
            .iter()
            .all(|r| matches!(r, Reason::KeptFromLastTurn | Reason::RecentlyUsed))
    }
}

/// A candidate that was not selected, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Qualified name.
    pub key: Arc<str>,
    /// Why it was dropped.
    pub reason: DropReason,
    /// What had made it a candidate.
    pub candidate: Reasons,
}

/// A skill matched for the turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchedSkill {
    /// The skill.
    pub name: Arc<str>,
    /// Its BM25 score (0 for pinned skills and dependencies).
    pub score: f32,
    /// Why it is in.
    pub how: SkillMatch,
}

/// Why a skill contributed to a selection ([`MatchedSkill::how`]). Serialized and displayed in
/// snake case: `"matched"`, `"pinned"`, `"dependency"`.
///
/// ```
/// use capstore::context::SkillMatch;
/// assert_eq!(SkillMatch::Dependency.to_string(), "dependency");
/// assert_eq!(serde_json::to_value(SkillMatch::Matched)?, "matched");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillMatch {
    /// The turn's query matched it (BM25 over the skills).
    Matched,
    /// The policy pins it.
    Pinned,
    /// A matched or pinned skill depends on it.
    Dependency,
}

impl std::fmt::Display for SkillMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SkillMatch::Matched => "matched",
            SkillMatch::Pinned => "pinned",
            SkillMatch::Dependency => "dependency",
        })
    }
}

/// What [`ContextBuilder::select`](super::ContextBuilder::select) returns: the snapshot version
/// it read, the tools to send in a stable order, and the explanation.
///
/// The send order carries last turn's list on and appends the turn's new tools by relevance,
/// so that the request prefix (and a provider's prompt cache) survives; see [the cache
/// model](super#the-tool-list-across-turns). [`ranked`](Self::ranked) gives relevance order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// The snapshot version the selection was made from.
    pub version: u64,
    /// The tools to send, in send order.
    pub tools: Vec<SelectedTool>,
    /// Near misses: candidates that were dropped, with why: all those cut by tag filters or
    /// the token budget, and the best [`MAX_TOOLS_NEAR_MISSES`](super::MAX_TOOLS_NEAR_MISSES)
    /// of those cut by the turn's limit; and the tools evicted from the carried list
    /// ([`DropReason::Stale`]).
    pub dropped: Vec<Dropped>,
    /// The skills that contributed.
    pub skills: Vec<MatchedSkill>,
    /// The weighted query terms built from the turn.
    pub query: QueryTerms,
    /// Estimated tokens of all selected definitions.
    pub tokens: usize,
    /// True when nothing matched and the no-match policy applied.
    pub no_match: bool,
    /// Why the list has the size it has: the tool limits of a message of one ask, or the
    /// budget of a request of several.
    pub size: ListSize,
}

/// Why a [`Selection`]'s list has the size it has. Displayed as the explanation says it:
///
/// ```
/// use capstore::context::ListSize;
/// let one = ListSize::Tools { asks: 1, turn_tools: 11, max_tools: 24 };
/// assert_eq!(one.to_string(), "1 ask: up to 11 tools of its own, 24 in the list");
/// let three = ListSize::Request { asks: 3, budget: 1800, per_ask: 600, ceiling: 4000 };
/// assert_eq!(three.to_string(), "3 asks: up to 1800 tokens of tools (600 an ask, at most 4000)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ListSize {
    /// Sized by the tool limits: a message of one ask, or a request that no unit fills.
    Tools {
        /// The message's asks.
        asks: usize,
        /// The turn's own tools at most (`max_turn_tools`, and the message channel's share).
        turn_tools: usize,
        /// The list's tools at most (`max_tools`).
        max_tools: usize,
    },
    /// Sized by the request: its units, its own tools and then the message's ranking fill a
    /// budget of `per_ask` tokens an ask, at most `ceiling`
    /// ([`RequestPolicy`](super::RequestPolicy)).
    Request {
        /// The request's asks.
        asks: usize,
        /// The budget in estimated tokens.
        budget: usize,
        /// The budget an ask adds.
        per_ask: usize,
        /// The caller's ceiling.
        ceiling: usize,
    },
}

impl Default for ListSize {
    fn default() -> Self {
        ListSize::Tools {
            asks: 0,
            turn_tools: 0,
            max_tools: 0,
        }
    }
}

impl std::fmt::Display for ListSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        match *self {
            ListSize::Tools {
                asks,
                turn_tools,
                max_tools,
            } => write!(
                f,
                "{asks} ask{}: up to {turn_tools} tools of its own, {max_tools} in the list",
                plural(asks)
            ),
            ListSize::Request {
                asks,
                budget,
                per_ask,
                ceiling,
            } => write!(
                f,
                "{asks} ask{}: up to {budget} tokens of tools ({per_ask} an ask, at most {ceiling})",
                plural(asks)
            ),
        }
    }
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

    /// The tools selected for the turn's own reasons, in send order: every tool but those only
    /// [carried](SelectedTool::carried) on from an earlier turn's list. What the turn offered,
    /// and what its calls are read against when usage is counted
    /// ([`UsageRecorder::sent`](crate::usage::UsageRecorder::sent)).
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city"))?;
    ///     tx.insert(&TOOLS, Tool::new("send_email", "Send an email to an address"))
    /// })?;
    /// // The last turn sent get_weather; this one asks for an email.
    /// let turn = Turn::new("send an email to Ana").with_previous(["get_weather"]);
    /// let s = ContextBuilder::new().select(&store.snapshot(), &turn)?;
    /// assert_eq!(s.keys().collect::<Vec<_>>(), ["get_weather", "send_email"]);
    /// assert_eq!(s.offered().collect::<Vec<_>>(), ["send_email"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offered(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().filter(|t| !t.carried()).map(|t| &*t.key)
    }

    /// The selected tool with this qualified name, if it was selected.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Turn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
    /// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("weather?"))?;
    /// assert!(s.get("get_weather").is_some_and(|t| !t.carried()));
    /// assert!(s.get("nope").is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: &str) -> Option<&SelectedTool> {
        self.tools.iter().find(|t| &*t.key == key)
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
