//! The knobs of a selection, with defaults that suit an agent with hundreds of tools.

use serde::{Deserialize, Serialize};

use super::hints::HintPolicy;

/// What [`ContextBuilder::select`](super::ContextBuilder::select) does when nothing in the turn
/// matches any tool or skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoMatch {
    /// Send only the pinned tools (and, if any, the tools kept from the last turn).
    PinnedOnly,
    /// Send every tool that passes the tag filters, within the limits: what agent SDKs do
    /// without a selector.
    All,
}

/// How a turn's tools are retrieved.
///
/// ```
/// use capstore::context::{HybridPolicy, Retrieval};
/// assert_eq!(Retrieval::default(), Retrieval::Lexical);
/// let hybrid: Retrieval = serde_json::from_str(r#"{"hybrid": {"depth": 20}}"#)?;
/// assert_eq!(hybrid, Retrieval::Hybrid(HybridPolicy { depth: 20, ..HybridPolicy::default() }));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retrieval {
    /// BM25 over the tools' text: no model, no vectors.
    #[default]
    Lexical,
    /// BM25 and the nearest tool vectors by cosine, fused: needs a builder with an
    /// [`Embedder`](crate::embed::Embedder) and the store's tools embedded by it
    /// ([`embed_missing`](crate::embed::embed_missing)).
    Hybrid(HybridPolicy),
}

/// The knobs of hybrid retrieval ([`Retrieval::Hybrid`]); how the two rankings are fused is
/// described in the [module docs](super#hybrid-retrieval). The defaults were chosen on the
/// public sets (BENCHMARKS.md, "Hybrid retrieval").
///
/// ```
/// use capstore::context::HybridPolicy;
/// let p = HybridPolicy::default();
/// assert_eq!((p.depth, p.min_lexical_weight, p.max_lexical_weight), (40, 0.2, 0.85));
/// // A message whose words BM25 matches strongly leans on BM25; a paraphrase on the vectors.
/// assert!(p.lexical_weight(1.2, 0.03) > 0.8 && p.lexical_weight(0.1, 0.03) < 0.25);
/// // One tool's vector standing well clear of the next moves the weight towards the vectors.
/// assert!(p.lexical_weight(0.5, 0.15) < p.lexical_weight(0.5, 0.0));
/// assert_eq!(HybridPolicy::fixed(0.6).lexical_weight(3.0, 0.2), 0.6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HybridPolicy {
    /// How many of each ranking's best are fused. Default 40.
    pub depth: usize,
    /// The lexical side's share of the fused score when BM25 explains little of the message
    /// and the vectors single one tool out (0..=1); the dense side has the rest. Default 0.2.
    pub min_lexical_weight: f32,
    /// The lexical side's share when BM25 explains much of it and the vectors hesitate
    /// (`min_lexical_weight..=1`); and a message's of more than
    /// [`GIST_WORDS`](super::GIST_WORDS) words, whose vector reads only its
    /// [`gist`](super::gist()). Default 0.85.
    pub max_lexical_weight: f32,
    /// The BM25 evidence (the best tool's score per word of the message) at which the weight
    /// is halfway between the two. Default 0.5.
    pub evidence_midpoint: f32,
    /// How quickly the weight moves from one end to the other around the midpoint (> 0).
    /// Default 0.1.
    pub evidence_scale: f32,
    /// The dense evidence (how far the nearest tool's cosine stands above the second's) that
    /// leaves the weight where the BM25 evidence puts it; a wider gap moves it towards the
    /// vectors, a narrower one towards BM25. Default 0.03.
    pub separation_midpoint: f32,
    /// How many cosine units of that gap move the curve as far as `evidence_scale` of BM25
    /// evidence does (finite, > 0; a large value such as `1e9` leaves the dense evidence out).
    /// Default 0.1.
    pub separation_scale: f32,
}

impl Default for HybridPolicy {
    fn default() -> Self {
        HybridPolicy {
            depth: 40,
            min_lexical_weight: 0.2,
            max_lexical_weight: 0.85,
            evidence_midpoint: 0.5,
            evidence_scale: 0.1,
            separation_midpoint: 0.03,
            separation_scale: 0.1,
        }
    }
}

impl HybridPolicy {
    /// The default policy with one lexical weight for every message.
    ///
    /// ```
    /// let p = capstore::context::HybridPolicy::fixed(0.0); // the vectors alone
    /// assert_eq!((p.min_lexical_weight, p.max_lexical_weight), (0.0, 0.0));
    /// ```
    pub fn fixed(lexical_weight: f32) -> Self {
        HybridPolicy {
            min_lexical_weight: lexical_weight,
            max_lexical_weight: lexical_weight,
            ..HybridPolicy::default()
        }
    }

    /// The lexical side's share of the fused score for a message whose BM25 `evidence` (the
    /// best tool's score per word of the message) and dense `separation` (the nearest tool's
    /// cosine minus the second's) are these: a logistic curve from `min_lexical_weight` to
    /// `max_lexical_weight`, halfway where the evidence is at `evidence_midpoint` and the
    /// separation at `separation_midpoint`.
    ///
    /// ```
    /// let p = capstore::context::HybridPolicy::default();
    /// assert!((p.lexical_weight(0.5, 0.03) - 0.525).abs() < 1e-6);
    /// // A separation one scale wider shifts the curve as much as one scale less evidence.
    /// assert!((p.lexical_weight(0.5, 0.13) - p.lexical_weight(0.4, 0.03)).abs() < 1e-6);
    /// ```
    pub fn lexical_weight(&self, evidence: f32, separation: f32) -> f32 {
        let (lo, hi) = (self.min_lexical_weight, self.max_lexical_weight);
        let x = (evidence - self.evidence_midpoint) / self.evidence_scale
            - (separation - self.separation_midpoint) / self.separation_scale;
        lo + (hi - lo) / (1.0 + (-x).exp())
    }

    fn validate(&self) -> Result<(), PolicyError> {
        let fail = |field, reason| Err(PolicyError { field, reason });
        if self.depth == 0 {
            return fail("retrieval.hybrid.depth", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.min_lexical_weight) {
            return fail(
                "retrieval.hybrid.min_lexical_weight",
                "must be between 0 and 1",
            );
        }
        if !(self.min_lexical_weight..=1.0).contains(&self.max_lexical_weight) {
            return fail(
                "retrieval.hybrid.max_lexical_weight",
                "must be between min_lexical_weight and 1",
            );
        }
        // The curve's midpoints may be any number, its scales must be positive.
        let curve = [
            (
                "retrieval.hybrid.evidence_midpoint",
                self.evidence_midpoint,
                false,
            ),
            ("retrieval.hybrid.evidence_scale", self.evidence_scale, true),
            (
                "retrieval.hybrid.separation_midpoint",
                self.separation_midpoint,
                false,
            ),
            (
                "retrieval.hybrid.separation_scale",
                self.separation_scale,
                true,
            ),
        ];
        for (field, value, scale) in curve {
            if !value.is_finite() {
                return fail(field, "must be a finite number");
            }
            if scale && value <= 0.0 {
                return fail(field, "must be > 0");
            }
        }
        Ok(())
    }
}

/// The message channel's knobs: how many of the tools that the message alone ranks best enter
/// the list whatever its history says ([a turn's channels](super#a-turns-channels)). How many
/// follows how clear the message's evidence is: none when its best tool scores little for the
/// message's length (an elliptical "book that one"), up to `max_tools` when several tools
/// score close to the best.
///
/// ```
/// use capstore::context::MessagePolicy;
/// let p = MessagePolicy::default();
/// assert_eq!(p.max_tools, 4);
/// let off = MessagePolicy { max_tools: 0, ..MessagePolicy::default() };
/// # let _ = off;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MessagePolicy {
    /// At most this many tools enter on the message alone (0 turns the channel off), on top of
    /// the `max_turn_tools` that the message with its history selects (a tool both bring
    /// counts once); the list makes room for them by evicting the stalest carried tools.
    /// Default 4.
    pub max_tools: usize,
    /// A tool enters if the message alone scores it at least this fraction of its best tool's
    /// score (BM25; the fused score in hybrid retrieval). Default 0.5.
    pub min_relative_score: f32,
    /// The evidence the message must carry for the channel to open: its best tool's BM25
    /// score per word of the message. Default 0.3.
    pub min_evidence: f32,
    /// In hybrid retrieval, the channel also opens when the nearest tool vector's cosine with
    /// the message's is at least this. Default 0.5.
    pub min_cosine: f32,
    /// In a message of several asks (clauses, sentences, list items: [`asks`](super::asks())),
    /// each ask searched alone brings its best tool, and those after it up to this many in
    /// all that score within `min_relative_score` of it; a matched skill's or the
    /// conversation's other tools never push them out (0 turns it off). No tool counts for
    /// two asks: an ask whose best another ask claims more strongly brings its next. Default
    /// 1. Read from JSON under its earlier name `per_sentence` too.
    #[serde(alias = "per_sentence")]
    pub per_ask: usize,
    /// A message of more asks than this is a task's description rather than a list of
    /// requests: its sentences' best tools are too many to guarantee each a place, and what it
    /// needs is found by its units ([`RequestPolicy`]). Default 10: so many asks' bests still
    /// fit the turn's 11 places (`max_turn_tools`), one to spare; a multi-paragraph request
    /// ("book the flight … cancel it … then tweet about it") keeps each ask's tool.
    pub max_asks: usize,
}

impl Default for MessagePolicy {
    fn default() -> Self {
        MessagePolicy {
            max_tools: 4,
            min_relative_score: 0.5,
            min_evidence: 0.3,
            min_cosine: 0.5,
            per_ask: 1,
            max_asks: 10,
        }
    }
}

impl MessagePolicy {
    fn validate(&self) -> Result<(), PolicyError> {
        let fail = |field, reason| Err(PolicyError { field, reason });
        if !(0.0..=1.0).contains(&self.min_relative_score) {
            return fail("message.min_relative_score", "must be between 0 and 1");
        }
        if !self.min_evidence.is_finite() || self.min_evidence < 0.0 {
            return fail("message.min_evidence", "must be a finite number >= 0");
        }
        if !self.min_cosine.is_finite() {
            return fail("message.min_cosine", "must be a finite number");
        }
        Ok(())
    }
}

/// How a request of several asks sizes its list ([`asks`](super::asks())): a budget in tokens
/// that follows the request, `tokens_per_ask` for each ask, at most `max_tokens`; and the
/// skills with no text of their own (MCP servers) that it needs, found by their tools' text
/// and sent whole when they fit, then the message's ranking to the budget
/// ([units](super#servers-as-units)). A message of one ask is sized by the tool limits alone,
/// as before.
///
/// ```
/// use capstore::context::RequestPolicy;
/// let r = RequestPolicy::default();
/// assert_eq!((r.max_tokens, r.tokens_per_ask), (4000, 600));
/// assert_eq!(r.budget(1), 0);
/// assert_eq!(r.budget(3), 1800);
/// assert_eq!(r.budget(12), 4000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestPolicy {
    /// The ceiling of a request's budget, in estimated tokens of tool definitions (the
    /// caller's: a long task gets the servers it needs up to here). 0 turns units off.
    /// Default 4,000.
    pub max_tokens: usize,
    /// The budget each ask of a request adds. Default 600 (three or four tools).
    pub tokens_per_ask: usize,
    /// How deep the message's ranking is read for its units and for what fills the rest of
    /// the budget. Default 60.
    pub depth: usize,
    /// Units scoring at least this fraction of the best unit's score come. Default 0.5.
    pub min_relative_score: f32,
}

impl Default for RequestPolicy {
    fn default() -> Self {
        RequestPolicy {
            max_tokens: 4000,
            tokens_per_ask: 600,
            depth: 60,
            min_relative_score: 0.5,
        }
    }
}

impl RequestPolicy {
    /// The budget in tokens of a request of `asks` asks: `tokens_per_ask` each, at most
    /// `max_tokens`; 0 for a message of one ask, which the tool limits size.
    pub fn budget(&self, asks: usize) -> usize {
        if asks < 2 {
            return 0;
        }
        self.tokens_per_ask
            .saturating_mul(asks)
            .min(self.max_tokens)
    }

    fn validate(&self) -> Result<(), PolicyError> {
        let fail = |field, reason| Err(PolicyError { field, reason });
        if !(0.0..=1.0).contains(&self.min_relative_score) {
            return fail("request.min_relative_score", "must be between 0 and 1");
        }
        Ok(())
    }
}

/// The companion channel ([companions](super#companions)): the tools that come with a tool of
/// the turn because it declares it needs them ([`Tool::requires`](crate::Tool::requires)) or
/// because the agent's own calls taught that they go together ([`usage`](crate::usage)).
///
/// ```
/// use capstore::context::CompanionPolicy;
/// let p = CompanionPolicy::default();
/// assert_eq!((p.max_tools, p.min_turns), (4, 2));
/// let off = CompanionPolicy { max_tools: 0, ..CompanionPolicy::default() };
/// # let _ = off;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompanionPolicy {
    /// At most this many tools a turn come as companions (0 turns the channel off), appended
    /// after the turn's own within the list's limits and the token budget. Declared ones
    /// first, then the learned by how often they were called with the tool they go with.
    /// Default 4.
    pub max_tools: usize,
    /// A learned companion comes when it was called in at least this share of the turns that
    /// called the tool it goes with. Default 0.3.
    pub min_share: f32,
    /// ... and in at least this many of them: one turn is an anecdote. Default 2.
    pub min_turns: u32,
}

impl Default for CompanionPolicy {
    fn default() -> Self {
        CompanionPolicy {
            max_tools: 4,
            min_share: 0.3,
            min_turns: 2,
        }
    }
}

impl CompanionPolicy {
    fn validate(&self) -> Result<(), PolicyError> {
        if !(0.0..=1.0).contains(&self.min_share) {
            return Err(PolicyError {
                field: "companions.min_share",
                reason: "must be between 0 and 1",
            });
        }
        Ok(())
    }
}

/// The selection policy. Every field has a default ([`SelectionPolicy::default`]); build on it
/// with struct update syntax.
///
/// ```
/// use capstore::context::SelectionPolicy;
/// let policy = SelectionPolicy {
///     max_tools: 8,
///     pinned_tools: vec!["fs/read_file".into()],
///     exclude_tags: vec!["dangerous".into()],
///     token_budget: Some(4_000),
///     ..SelectionPolicy::default()
/// };
/// assert!(policy.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelectionPolicy {
    /// At most this many tools are sent (pinned ones count, and always get in): the length of
    /// the list carried across turns. Default 24.
    pub max_tools: usize,
    /// At most this many tools are selected for the turn itself (pinned ones count); within a
    /// conversation the rest of the list is the earlier turns' tools, carried while they fit.
    /// A selection without earlier turns sends at most this many. Default 11.
    pub max_turn_tools: usize,
    /// At most this many skills are matched by search per turn (pinned skills come on top).
    /// Default 3.
    pub max_skills: usize,
    /// A retrieved tool needs at least this BM25 score. Default 0 (any match).
    pub min_score: f32,
    /// A retrieved tool needs at least this fraction of the best tool's score. Default 0.
    pub min_relative_score: f32,
    /// A skill needs at least this BM25 score to be matched. Default 0 (any match).
    pub skill_min_score: f32,
    /// A skill needs at least this fraction of the best skill's score. Default 0.5.
    pub skill_min_relative_score: f32,
    /// How a matched skill's tools rank against tools retrieved on their own: their score is
    /// this times the skill's score relative to the best skill. Default 0.9.
    pub skill_tool_weight: f32,
    /// Tools always sent, by qualified name.
    pub pinned_tools: Vec<String>,
    /// Skills whose tools (and dependencies' tools) are always sent.
    pub pinned_skills: Vec<String>,
    /// If not empty, a tool must carry one of these tags (pinned tools excepted).
    pub include_tags: Vec<String>,
    /// A tool carrying any of these tags is never sent (pinned tools excepted).
    pub exclude_tags: Vec<String>,
    /// Estimated tokens the tool definitions may take in all; `None` for no limit.
    pub token_budget: Option<usize>,
    /// How many earlier user turns feed the query. Default 2.
    pub history_turns: usize,
    /// Weight of each earlier turn relative to the next newer one (0..=1). Default 0.5.
    pub history_decay: f32,
    /// Weight of the names of tools the model used recently, in the query. Default 0.5.
    pub recent_tool_weight: f32,
    /// Keep tools the model called in recent turns selected, while room remains. Default true.
    pub keep_recently_used: bool,
    /// Carry last turn's list on: its tools stay in place and the turn's new tools are
    /// appended, until the list must be re-packed. Default true.
    pub keep_previous: bool,
    /// Of the tools new to the list that the search of the message read with its history
    /// brings (the conversation channel), how many, its best, may make room for themselves in
    /// a full list by a re-pack; the others enter only into the room left (`max_tools`, the
    /// token budget), so that a follow-up re-packs for what its message asks rather than for
    /// the tail of its history's ranking. The message channel's tools, named and pinned ones,
    /// and those the model found with `search_tools` or called lately may always make room.
    /// Default 1; `max_turn_tools` or more lets every tool of the turn make room.
    pub repack_for_conversation: usize,
    /// Match tool names written in the message (`get_weather`, `github/search`) first.
    /// Default true.
    pub match_exact_names: bool,
    /// What to send when nothing matches. Default [`NoMatch::PinnedOnly`].
    pub on_no_match: NoMatch,
    /// Attach each retrieved tool's per-term BM25 explanation to its reason. Default true.
    pub explain: bool,
    /// Lexical (BM25, the default) or hybrid (BM25 and a sentence embedder, fused).
    pub retrieval: Retrieval,
    /// The message channel: how many tools the message alone brings in, whatever its history
    /// says.
    pub message: MessagePolicy,
    /// The companion channel: the tools a turn's tools need first (declared, or learned from
    /// the agent's calls) come with them.
    pub companions: CompanionPolicy,
    /// What a message's shapes and phrases add to its query (`#status` a channel, "text her"
    /// an SMS): [`HintPolicy`]; [`HintPolicy::none`] for the message's own words only.
    pub hints: HintPolicy,
    /// How a request of several asks sizes its list, and the units (skills with no text of
    /// their own) it brings: [`RequestPolicy`].
    pub request: RequestPolicy,
}

impl Default for SelectionPolicy {
    fn default() -> Self {
        SelectionPolicy {
            max_tools: 24,
            max_turn_tools: 11,
            max_skills: 3,
            min_score: 0.0,
            min_relative_score: 0.0,
            skill_min_score: 0.0,
            skill_min_relative_score: 0.5,
            skill_tool_weight: 0.9,
            pinned_tools: Vec::new(),
            pinned_skills: Vec::new(),
            include_tags: Vec::new(),
            exclude_tags: Vec::new(),
            token_budget: None,
            history_turns: 2,
            history_decay: 0.5,
            recent_tool_weight: 0.5,
            keep_recently_used: true,
            keep_previous: true,
            repack_for_conversation: 1,
            match_exact_names: true,
            on_no_match: NoMatch::PinnedOnly,
            explain: true,
            retrieval: Retrieval::Lexical,
            message: MessagePolicy::default(),
            companions: CompanionPolicy::default(),
            hints: HintPolicy::default(),
            request: RequestPolicy::default(),
        }
    }
}

/// A policy value out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyError {
    /// The field.
    pub field: &'static str,
    /// Why.
    pub reason: &'static str,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "selection policy: `{}` {}", self.field, self.reason)
    }
}

impl std::error::Error for PolicyError {}

impl SelectionPolicy {
    /// Whether a message of `asks` asks is a task's description rather than a list of
    /// requests: more asks than `message.max_asks`. It is read by its sentences, and their best
    /// tools come after its units, within the request's budget.
    pub(super) fn describes_a_task(&self, asks: usize) -> bool {
        asks > self.message.max_asks
    }

    /// How many of a message's asks can change its selection: one more than `message.max_asks`
    /// (a message of more asks is a task's description, searched by its sentences if at all),
    /// or as many as fill `request.max_tokens` at `request.tokens_per_ask`, whichever is more.
    /// Counting a message's asks stops there.
    pub(super) fn asks_that_count(&self) -> usize {
        let r = &self.request;
        let to_ceiling = match r.tokens_per_ask {
            0 => 0,
            per_ask => r.max_tokens.div_ceil(per_ask),
        };
        (self.message.max_asks + 1).max(to_ceiling).max(2)
    }

    /// This policy sending `n` tools for one message, with no list carried from earlier turns
    /// to make room for: `max_tools` and `max_turn_tools` both `n`. (`max_tools` alone would
    /// leave a turn at `max_turn_tools`.)
    ///
    /// ```
    /// use capstore::context::SelectionPolicy;
    /// let policy = SelectionPolicy::default().with_tool_limit(30);
    /// assert_eq!((policy.max_tools, policy.max_turn_tools), (30, 30));
    /// ```
    pub fn with_tool_limit(mut self, n: usize) -> Self {
        self.max_tools = n;
        self.max_turn_tools = n;
        self
    }

    /// Checks that scores and weights are finite and in range.
    ///
    /// ```
    /// use capstore::context::SelectionPolicy;
    /// let bad = SelectionPolicy { history_decay: 2.0, ..SelectionPolicy::default() };
    /// assert_eq!(bad.validate().unwrap_err().field, "history_decay");
    /// ```
    pub fn validate(&self) -> Result<(), PolicyError> {
        let non_negative = [
            ("min_score", self.min_score),
            ("skill_min_score", self.skill_min_score),
            ("skill_tool_weight", self.skill_tool_weight),
            ("recent_tool_weight", self.recent_tool_weight),
        ];
        for (field, value) in non_negative {
            if !value.is_finite() || value < 0.0 {
                return Err(PolicyError {
                    field,
                    reason: "must be a finite number >= 0",
                });
            }
        }
        if let Retrieval::Hybrid(hybrid) = &self.retrieval {
            hybrid.validate()?;
        }
        self.message.validate()?;
        self.companions.validate()?;
        self.request.validate()?;
        self.hints.validate()?;
        let fractions = [
            ("min_relative_score", self.min_relative_score),
            ("skill_min_relative_score", self.skill_min_relative_score),
            ("history_decay", self.history_decay),
        ];
        for (field, value) in fractions {
            if !(0.0..=1.0).contains(&value) {
                return Err(PolicyError {
                    field,
                    reason: "must be between 0 and 1",
                });
            }
        }
        Ok(())
    }
}
