//! The per-turn selection: query → exact names → skills and their dependencies → BM25 over
//! tools (fused with the nearest tool vectors, in hybrid retrieval) → policy (filters,
//! thresholds, limits, budget) → the message's own channel (its asks, the whole message) → the
//! request's size (its units, within its budget) → companions → the list carried across turns
//! → a [`Selection`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use crate::bm25::ascii_words::word_count;
use crate::bm25::{HashedQuery, KeyHit};
use crate::embed::{Embedder, NearestCache};
use crate::skills::{SKILLS, closure_of};
use crate::store::{RowLookup, Snapshot};
use crate::tools::{TOOLS, Tool};

use super::asks::asks_for_selection;
use super::budget::{estimate_tokens, past_budget};
use super::candidates::{
    Candidates, Explainer, Offered, Why, class, relative_score, retrieved_only,
};
use super::error::SelectError;
use super::hints::HintMatcher;
use super::hybrid::{FusedHit, fuse, turn_vectors};
use super::policy::{NoMatch, PolicyError, Retrieval, SelectionPolicy};
use super::query::{MessageView, exact_mentions, weighted_terms, weighted_texts};
use super::query_terms::BorrowedTerms;
use super::selection::{
    Channel, DropReason, Dropped, MatchedSkill, Reason, Reasons, SelectedTool, Selection,
    SkillMatch,
};
use super::turn::Turn;

/// Chooses, for each turn, the tool definitions to send to the model.
///
/// `select` is a pure function of the snapshot and the turn: the same inputs give the same
/// selection, and a selection made while the catalog changes is consistent with the snapshot
/// version it reports. The builder is `Send + Sync` and cheap to share.
///
/// ```
/// use capstore::context::{ContextBuilder, Turn};
/// use capstore::skills::register_skill;
/// use capstore::{Skill, Store, Tool};
///
/// let store = Store::new();
/// store.write(|tx| register_skill(
///     tx,
///     Skill::new("weather", "Forecasts and current conditions").with_examples(["will it rain tomorrow"]),
///     vec![Tool::new("get_forecast", "Forecast for a city"), Tool::new("get_alerts", "Storm alerts")],
/// ))?;
/// let selection = ContextBuilder::new().select(&store.snapshot(), &Turn::new("will it rain in Oslo?"))?;
/// let keys: Vec<&str> = selection.keys().collect();
/// // The skill's tools take its name as their source.
/// assert!(keys.contains(&"weather/get_forecast") && keys.contains(&"weather/get_alerts"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct ContextBuilder {
    policy: SelectionPolicy,
    /// The policy's hint tables, read once.
    pub(super) hints: HintMatcher,
    /// The model hybrid retrieval embeds the turn's message with.
    embedder: Option<Arc<dyn Embedder>>,
    /// Hybrid retrieval's nearest-vector search, which lays out the vectors of a table state
    /// searched more than once; shared by the builder's clones.
    nearest: Arc<NearestCache>,
}

/// Hybrid retrieval's nearest tool vectors, best first: to the message, and to each ask the
/// ask channel searches (in the asks' order; empty when the asks have no vectors).
#[derive(Default)]
struct Nearest<'a> {
    message: Option<Vec<(&'a Arc<str>, f32)>>,
    asks: Vec<Vec<(&'a Arc<str>, f32)>>,
}

/// The turn's own tools by its query, ranked and cut by the policy ([`ContextBuilder::select`]'s
/// steps 2 to 4): the tools, whether any candidate matched the turn, the skills that
/// contributed and the near misses so far.
struct TurnTools {
    tools: Vec<SelectedTool>,
    matched: bool,
    skills: Vec<MatchedSkill>,
    dropped: Vec<Dropped>,
}

impl fmt::Debug for ContextBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("policy", &self.policy)
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id()))
            .finish()
    }
}

/// How many candidates cut by the turn's limit (`max_turn_tools`, within `max_tools`) are
/// reported in [`Selection::dropped`], best first.
///
/// ```
/// assert_eq!(capstore::context::MAX_TOOLS_NEAR_MISSES, 8);
/// ```
pub const MAX_TOOLS_NEAR_MISSES: usize = 8;

impl ContextBuilder {
    /// A builder with the default policy ([`SelectionPolicy::default`]).
    ///
    /// ```
    /// assert_eq!(capstore::context::ContextBuilder::new().policy().max_tools, 24);
    /// ```
    pub fn new() -> Self {
        ContextBuilder::default()
    }

    /// A builder with `policy`, checked first.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, SelectionPolicy};
    /// let b = ContextBuilder::with_policy(SelectionPolicy { max_tools: 5, ..SelectionPolicy::default() })?;
    /// assert_eq!(b.policy().max_tools, 5);
    /// # Ok::<(), capstore::context::PolicyError>(())
    /// ```
    pub fn with_policy(policy: SelectionPolicy) -> Result<Self, PolicyError> {
        policy.validate()?;
        Ok(ContextBuilder {
            hints: HintMatcher::new(&policy.hints),
            policy,
            ..ContextBuilder::default()
        })
    }

    /// This builder with `embedder`, the model that hybrid retrieval
    /// ([`Retrieval::Hybrid`](super::Retrieval::Hybrid)) embeds each turn's message with. The
    /// store's tools must have vectors from the same model
    /// ([`embed_missing`](crate::embed::embed_missing)); a lexical policy ignores it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use capstore::context::{ContextBuilder, HybridPolicy, Retrieval, SelectionPolicy, Turn};
    /// use capstore::embed::{embed_missing, EmbedError, Embedder};
    /// use capstore::{Store, Tool, TOOLS};
    ///
    /// /// A toy model: does the text speak of money, of places, or of neither?
    /// struct Topics;
    /// impl Embedder for Topics {
    ///     fn model_id(&self) -> &str { "topics" }
    ///     fn dimensions(&self) -> usize { 3 }
    ///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
    ///         let has = |t: &str, words: &[&str]| words.iter().any(|w| t.contains(w)) as u8 as f32;
    ///         Ok(texts.iter().map(|t| vec![has(t, &["pay", "invoice", "bill"]), has(t, &["map", "route", "city"]), 0.1]).collect())
    ///     }
    /// }
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("create_invoice", "Create an invoice for a customer"))?;
    ///     tx.insert(&TOOLS, Tool::new("route", "Directions between two places on a map"))
    /// })?;
    /// let embedder = Arc::new(Topics);
    /// embed_missing(&store, embedder.as_ref())?;
    /// let policy = SelectionPolicy { retrieval: Retrieval::Hybrid(HybridPolicy::default()), ..SelectionPolicy::default() };
    /// let builder = ContextBuilder::with_policy(policy)?.with_embedder(embedder);
    /// // No word of the message is in either tool's text; the vectors find the invoice tool.
    /// let selection = builder.select(&store.snapshot(), &Turn::new("bill the client for May"))?;
    /// assert_eq!(selection.keys().next(), Some("create_invoice"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The policy in force.
    ///
    /// ```
    /// assert!(capstore::context::ContextBuilder::new().policy().explain);
    /// ```
    pub fn policy(&self) -> &SelectionPolicy {
        &self.policy
    }

    /// Selects the tools to send for `turn`, reading only `snapshot`.
    ///
    /// ```
    /// use capstore::context::{ContextBuilder, Reason, Turn};
    /// use capstore::{Store, Tool, TOOLS};
    /// let store = Store::new();
    /// store.write(|tx| {
    ///     tx.insert(&TOOLS, Tool::new("send_email", "Send an email"))?;
    ///     tx.insert(&TOOLS, Tool::new("read_file", "Read a file"))
    /// })?;
    /// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("please email Ana"))?;
    /// assert_eq!(s.keys().collect::<Vec<_>>(), ["send_email"]);
    /// assert!(matches!(s.tools[0].reasons[0], Reason::Retrieved { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn select(&self, snapshot: &Snapshot, turn: &Turn) -> Result<Selection, SelectError> {
        let p = &self.policy;
        // 1. The query: the message, its history and what their hints add.
        let (texts, own) = weighted_texts(turn, p, &self.hints);
        let query = weighted_terms(snapshot, &TOOLS, &texts)?;
        let borrowed = BorrowedTerms::of(&query);
        let terms = borrowed.as_slice();
        // The message's asks, each with its hints when they are searched on their own; in
        // hybrid retrieval, the nearest tool vectors to the message and to each ask.
        let reads_history = self.reads_history(turn);
        let (asks, ask_count) = asks_for_selection(&turn.message, reads_history, p);
        let ask_texts = self.ask_texts(&asks);
        let Nearest {
            message: dense,
            asks: ask_dense,
        } = self.nearest_to(snapshot, turn, &texts[..own], &ask_texts)?;
        // Only hybrid fusion reads the message's words (they set its lexical weight).
        let words = dense.as_ref().map_or(0, |_| word_count(&turn.message));
        // 2–4. Exact names, skills, the tools' search and the policy: the turn's own tools.
        let TurnTools {
            tools: conversation,
            matched,
            skills,
            mut dropped,
        } = self.turns_tools(snapshot, turn, &texts, terms, dense.as_deref(), words)?;
        // 5. The message alone: (on a follow-up, whose query read more than the message) the
        // whole message's best few, and each of its asks' best. Its own query (its text and its
        // hints' terms) serves the units too: the turn's query itself when the turn reads
        // nothing else.
        let tools_table = snapshot.lookup(&TOOLS)?;
        let own_query = match texts.len() > own {
            true => Some(weighted_terms(snapshot, &TOOLS, &texts[..own])?),
            false => None,
        };
        let own_terms: Cow<'_, [(&str, f32)]> = match &own_query {
            Some(own_query) => Cow::Owned(own_query.iter().collect()),
            None => Cow::Borrowed(terms),
        };
        let message = if reads_history {
            self.message_channel(snapshot, turn, &own_terms, dense.as_deref(), tools_table)?
        } else {
            Vec::new()
        };
        let ask_tools = self.ask_channel(snapshot, &asks, &ask_texts, &ask_dense, tools_table)?;
        let (needed, _) = self.merge_channels(
            message,
            ask_tools,
            conversation,
            reads_history,
            &mut dropped,
        );
        // 6. A request of several asks: its units, within a budget that follows it.
        let view = MessageView {
            terms: &own_terms,
            words,
            dense: dense.as_deref(),
        };
        let (tools, size) = self.size_for_request(
            snapshot,
            &view,
            ask_count,
            needed,
            tools_table,
            &mut dropped,
        )?;
        // 7. Companions; 8. the list carried across turns.
        let (needed, tokens) = self.with_companions(snapshot, tools, tools_table, &mut dropped)?;
        let (tools, tokens) = if p.keep_previous && !turn.previous.is_empty() {
            self.carry_over(needed, &turn.previous, tools_table, &mut dropped)
        } else {
            (needed, tokens)
        };
        Ok(Selection {
            version: snapshot.version(),
            tools,
            dropped,
            skills,
            query,
            tokens,
            no_match: !matched,
            size,
        })
    }

    /// The turn's own tools by its query (`texts`, read as `terms`), before the message's own
    /// channels: the pinned tools and skills, the tools named in the message, the matched
    /// skills' tools and the tools' search (fused with the message's nearest tool vectors
    /// `dense` in hybrid retrieval, its `words` setting the lexical weight), ranked and cut by
    /// the policy; with the skills that contributed and the near misses.
    fn turns_tools(
        &self,
        snapshot: &Snapshot,
        turn: &Turn,
        texts: &[(&str, f32)],
        terms: &[(&str, f32)],
        dense: Option<&[(&Arc<str>, f32)]>,
        words: usize,
    ) -> Result<TurnTools, SelectError> {
        let p = &self.policy;
        // Hashed and ordered once for both searches (tools and skills).
        let hashed = HashedQuery::new(terms);
        let mut candidates = Candidates::new(snapshot)?;
        // Room for the usual near misses and skills: growing these lists one push at a time
        // was a few hundred instructions a turn.
        let mut dropped = Vec::with_capacity(MAX_TOOLS_NEAR_MISSES);
        let mut skills = Vec::with_capacity(p.max_skills.saturating_mul(2).min(16));
        self.add_unsearched(snapshot, turn, &mut candidates, &mut skills, &mut dropped)?;
        self.add_matched_skills(snapshot, texts, &hashed, &mut candidates, &mut skills)?;
        // The hits borrow their keys from the snapshot's index; added in turn below.
        let k = self.tools_search_k(!candidates.is_empty(), turn);
        let hybrid = match p.retrieval {
            Retrieval::Hybrid(hybrid) => Some(hybrid),
            Retrieval::Lexical => None,
        };
        let search_k = hybrid.map_or(k, |h| k.max(h.depth));
        let (hits, filtered) = self.search_tools(snapshot, terms, &hashed, search_k)?;
        let fused = hybrid
            .zip(dense)
            .map(|(hybrid, dense)| fuse(&hits, dense.to_vec(), words, &hybrid, k));
        // Its buffer goes back to the thread for the next turn.
        drop(hashed);
        let explainer = Explainer::new(p.explain.then_some(snapshot.text_index(&TOOLS)?), terms);
        dropped.extend(filtered);
        // A turn whose only candidates are the search's hits is filled from them directly.
        let only_hits = fused.is_none() && candidates.is_empty() && !self.adds_after_search(turn);
        let direct = if only_hits && !direct_path::always_gather() {
            self.fill_retrieved_only(&hits, &explainer, candidates.tools(), &mut dropped)
        } else {
            None
        };
        let (tools, _, matched) = match direct {
            Some(filled) => filled,
            None => {
                let retrieved = match &fused {
                    Some(fused) => Retrieved::Hybrid(fused),
                    None => Retrieved::Lexical(&hits),
                };
                self.fill_candidates(
                    snapshot,
                    turn,
                    retrieved,
                    &explainer,
                    candidates,
                    &mut dropped,
                )?
            }
        };
        Ok(TurnTools {
            tools,
            matched,
            skills,
            dropped,
        })
    }

    /// The turn's own tools and their tokens, and whether any candidate matched the turn, from
    /// the `candidates` gathered so far, the tools the search `retrieved` and the turn's
    /// recently used tools, ranked.
    fn fill_candidates<'a>(
        &self,
        snapshot: &'a Snapshot,
        turn: &'a Turn,
        retrieved: Retrieved<'_, 'a>,
        explainer: &Explainer<'_>,
        mut candidates: Candidates<'a>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(Vec<SelectedTool>, usize, bool), SelectError> {
        let p = &self.policy;
        match retrieved {
            Retrieved::Lexical(hits) => {
                self.add_retrieved(hits, explainer, &mut candidates, dropped)
            }
            Retrieved::Hybrid(fused) => self.add_fused(fused, explainer, &mut candidates, dropped),
        }
        if p.keep_recently_used {
            for key in turn.recent_tools.iter().rev() {
                candidates.add_key(key, class::RECENT, 0.0, Why::RecentlyUsed);
            }
        }
        let matched = candidates.any_matched();
        if !matched && p.on_no_match == NoMatch::All {
            for key in snapshot.iter(&TOOLS)?.keys() {
                candidates.add_key(key, class::FALLBACK, 0.0, Why::Fallback);
            }
        }

        // Without tag filters or a token budget, `fill` takes the pinned tools, then at most
        // `turn_tools` others and the near misses, strictly in rank order: nothing past that
        // prefix can reach the selection, so only the prefix is ranked.
        let needed = self.fills_in_rank_order().then(|| {
            candidates
                .pinned()
                .saturating_add(self.turn_tools())
                .saturating_add(MAX_TOOLS_NEAR_MISSES)
        });
        let tools_table = candidates.tools();
        let ordered = candidates.ranked(needed);
        let (tools, tokens) = self.fill(tools_table, ordered, explainer, dropped);
        Ok((tools, tokens, matched))
    }

    /// [`Self::fill_candidates`] of a turn whose only candidates are the tools' search `hits`
    /// (the caller checked that nothing came before them and nothing comes after), without
    /// gathering them: when at least one passes the score thresholds (else the turn matched
    /// nothing, and the policy says what then) and they come in rank order. `None` otherwise,
    /// having changed nothing.
    fn fill_retrieved_only<'a>(
        &self,
        hits: &[KeyHit<'a>],
        explainer: &Explainer<'_>,
        tools_table: RowLookup<'a, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> Option<(Vec<SelectedTool>, usize, bool)> {
        let best = hits.first().map_or(0.0, |h| h.score);
        // Best first: those the thresholds drop come after those they keep.
        let kept = hits
            .iter()
            .take_while(|h| self.below_thresholds(h.score, best).is_none())
            .count();
        let (kept, below) = hits.split_at(kept);
        if kept.is_empty()
            || below
                .iter()
                .any(|h| self.below_thresholds(h.score, best).is_none())
        {
            return None;
        }
        let ordered = retrieved_only(kept, best)?;
        for hit in below {
            if let Some(reason) = self.below_thresholds(hit.score, best) {
                dropped.push(Dropped {
                    key: Arc::clone(hit.key),
                    reason,
                    candidate: Reasons::one(explainer.retrieved(hit.key, hit.score)),
                });
            }
        }
        let (tools, tokens) = self.fill(tools_table, ordered, explainer, dropped);
        direct_path::filled_directly();
        Some((tools, tokens, true))
    }

    /// The candidates that need no search: the pinned tools and skills, the tools named in the
    /// message (when the policy matches exact names) and those the model found with
    /// `search_tools`. A pinned tool or skill the snapshot lacks goes to `dropped`.
    fn add_unsearched<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        turn: &'a Turn,
        candidates: &mut Candidates<'a>,
        skills: &mut Vec<MatchedSkill>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(), SelectError> {
        let p = &self.policy;
        for key in &p.pinned_tools {
            if !candidates.add_checked(key, class::PINNED, 0.0, Why::Pinned) {
                dropped.push(not_found(key, Reason::Pinned));
            }
        }
        self.add_pinned_skills(snapshot, candidates, skills, dropped)?;
        if p.match_exact_names {
            for m in exact_mentions(snapshot, &turn.message)? {
                let why = Why::ExactName { mention: m.text };
                candidates.add(m.entry, class::EXACT, 0.0, why);
            }
        }
        for key in &turn.discovered {
            candidates.add_key(key, class::DISCOVERED, 0.0, Why::Discovered);
        }
        Ok(())
    }

    /// The turn's own tools (`needed`) with their companions appended
    /// ([`Self::companions`]), and the tokens of all; a companion leaves `dropped`.
    fn with_companions(
        &self,
        snapshot: &Snapshot,
        mut needed: Vec<SelectedTool>,
        tools_table: RowLookup<'_, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(Vec<SelectedTool>, usize), SelectError> {
        let mut tokens: usize = needed.iter().map(|t| t.tokens).sum();
        let companions = self.companions(snapshot, &needed, tokens, tools_table)?;
        tokens += companions.iter().map(|t| t.tokens).sum::<usize>();
        dropped.retain(|d| !companions.iter().any(|t| t.key == d.key));
        needed.extend(companions);
        Ok((needed, tokens))
    }

    fn add_pinned_skills<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        candidates: &mut Candidates<'a>,
        skills: &mut Vec<MatchedSkill>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(), SelectError> {
        for pinned in &self.policy.pinned_skills {
            if !snapshot.contains(&SKILLS, pinned)? {
                dropped.push(not_found(
                    pinned,
                    Reason::PinnedSkill {
                        skill: Arc::from(pinned.as_str()),
                    },
                ));
                continue;
            }
            let closure = closure_of(snapshot, pinned)?;
            // The root comes last; its stored name is shared by the reasons.
            let Some(&(root, _)) = closure.last() else {
                continue;
            };
            for (name, skill) in closure {
                let how = if **name == **pinned {
                    SkillMatch::Pinned
                } else {
                    SkillMatch::Dependency
                };
                push_skill(skills, name, 0.0, how);
                for key in &skill.tools {
                    let why = Why::PinnedSkill { skill: root };
                    candidates.add_lazy(key, class::PINNED, 0.0, why);
                }
            }
        }
        Ok(())
    }

    /// The skills the turn's `texts` match, with their tools; `tools_query` is the texts'
    /// query for the tools table, hashed.
    fn add_matched_skills<'a>(
        &self,
        snapshot: &'a Snapshot,
        texts: &[(&str, f32)],
        tools_query: &HashedQuery<'_>,
        candidates: &mut Candidates<'a>,
        skills: &mut Vec<MatchedSkill>,
    ) -> Result<(), SelectError> {
        let p = &self.policy;
        if p.max_skills == 0 || snapshot.count(&SKILLS)? == 0 {
            return Ok(());
        }
        // The message is tokenized once when both indexes tokenize alike (the default).
        let own_query = if snapshot.same_tokenizer(&TOOLS, &SKILLS) {
            None
        } else {
            Some(weighted_terms(snapshot, &SKILLS, texts)?)
        };
        let own_terms: Option<Vec<(&str, f32)>> = own_query.as_ref().map(|q| q.iter().collect());
        let own_hashed = own_terms.as_deref().map(HashedQuery::new);
        let query = own_hashed.as_ref().unwrap_or(tools_query);
        let hits = snapshot
            .text_index(&SKILLS)?
            .search_hashed_keys(query, p.max_skills, None);
        let best = hits.first().map_or(0.0, |h| h.score);
        for hit in hits {
            if hit.score < p.skill_min_score || hit.score < p.skill_min_relative_score * best {
                continue;
            }
            let relative = if best > 0.0 { hit.score / best } else { 0.0 };
            let score = p.skill_tool_weight * relative;
            push_skill(skills, hit.key, hit.score, SkillMatch::Matched);
            let closure = closure_of(snapshot, hit.key)?;
            // The root comes last, after the dependencies it needs; its stored name is
            // borrowed for the reasons, which outlive `hit`.
            let Some(&(root, _)) = closure.last() else {
                continue;
            };
            for (name, skill) in closure {
                let (why, tool_score) = if Arc::ptr_eq(name, root) {
                    let why = Why::Skill {
                        skill: name,
                        score: hit.score,
                    };
                    (why, score)
                } else {
                    push_skill(skills, name, 0.0, SkillMatch::Dependency);
                    let why = Why::DependencyOf {
                        skill: root,
                        dependency: name,
                    };
                    // Dependencies' tools rank after the matched skill's own.
                    (why, score * 0.5)
                };
                for key in &skill.tools {
                    candidates.add_lazy(key, class::RELEVANT, tool_score, why);
                }
            }
        }
        Ok(())
    }

    /// Whether the policy filters tools by tag (without, [`Self::tag_filter`] passes every
    /// tool, and no tool needs looking up for it).
    fn filters_tags(&self) -> bool {
        !self.policy.include_tags.is_empty() || !self.policy.exclude_tags.is_empty()
    }

    /// Whether `fill` takes the candidates strictly in rank order: without tag filters, which
    /// drop some, or a token budget, which skips those that do not fit.
    fn fills_in_rank_order(&self) -> bool {
        !self.filters_tags() && self.policy.token_budget.is_none()
    }

    /// Whether `turn` brings candidates after the tools' search: its recently used tools,
    /// when the policy keeps them.
    fn adds_after_search(&self, turn: &Turn) -> bool {
        self.policy.keep_recently_used && !turn.recent_tools.is_empty()
    }

    /// How many tools a turn selects for itself (pinned ones count, and always get in):
    /// `max_turn_tools`, within `max_tools`.
    pub(super) fn turn_tools(&self) -> usize {
        self.policy.max_turn_tools.min(self.policy.max_tools)
    }

    /// How many tools a turn may select in all, its message channel's share included:
    /// `max_turn_tools` plus `message.max_tools` when the policy reads a turn's history (else
    /// the message alone is the query, and there is no second channel), within `max_tools`.
    pub(super) fn own_tools(&self) -> usize {
        let p = &self.policy;
        let reads_history =
            (p.history_turns > 0 && p.history_decay > 0.0) || p.recent_tool_weight > 0.0;
        let share = if reads_history {
            p.message.max_tools
        } else {
            0
        };
        self.turn_tools().saturating_add(share).min(p.max_tools)
    }

    /// How many hits the tools' search fetches. Only the first `turn_tools` and the near misses
    /// after them can show, unless a hit further down can: as a drop below a score threshold,
    /// in the place of a tool that a tag filter or the token budget turns away, or as a reason
    /// of a tool that another source brought (`other_candidates`: pinned, named, discovered,
    /// a skill's; or recently used ones, added later). Then twice the limit and a few
    /// more, as always; otherwise only what can show, and never more than that double limit:
    /// sorting and handing out hits that could not show was 2.6% of a select on MetaTool.
    fn tools_search_k(&self, other_candidates: bool, turn: &Turn) -> usize {
        let p = &self.policy;
        let beyond_shown = other_candidates
            || p.min_score > 0.0
            || p.min_relative_score > 0.0
            || !self.fills_in_rank_order()
            || self.adds_after_search(turn);
        let limit = self.turn_tools();
        let double = limit.saturating_mul(2).saturating_add(4);
        if beyond_shown {
            double
        } else {
            // Below 5 tools the double limit is the smaller: it has always capped the near
            // misses there.
            double.min(limit.saturating_add(MAX_TOOLS_NEAR_MISSES))
        }
    }

    /// Hybrid retrieval's nearest tool vectors (`hybrid.depth` of them) to the turn's message,
    /// for both channels' fusion, and to each ask the ask channel searches
    /// ([`turn_vectors`] says which get a vector); nothing in lexical retrieval. `own`: the
    /// message's own weighted texts; `asks`: those of each ask searched on its own.
    fn nearest_to<'a>(
        &self,
        snapshot: &'a Snapshot,
        turn: &Turn,
        own: &[(&str, f32)],
        asks: &[Vec<(&str, f32)>],
    ) -> Result<Nearest<'a>, SelectError> {
        let Retrieval::Hybrid(hybrid) = self.policy.retrieval else {
            return Ok(Nearest::default());
        };
        let embedder = self.embedder.as_deref().ok_or(SelectError::NoEmbedder)?;
        let vectors = turn_vectors(embedder, turn, own, asks)?;
        let nearest = |vector: &[f32]| {
            self.nearest
                .nearest_keys(snapshot, embedder.model_id(), vector, hybrid.depth)
        };
        Ok(Nearest {
            message: Some(nearest(&vectors.message)?),
            asks: vectors
                .asks
                .iter()
                .map(|v| nearest(v))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The tools' BM25 search for the top `k`: the hits that pass the tag filters, and those
    /// the filters cut, as dropped entries. `hashed` is `query`, hashed.
    pub(super) fn search_tools<'a>(
        &self,
        snapshot: &'a Snapshot,
        query: &[(&str, f32)],
        hashed: &HashedQuery<'_>,
        k: usize,
    ) -> Result<(Vec<KeyHit<'a>>, Vec<Dropped>), SelectError> {
        let filtered: RefCell<Vec<(String, DropReason)>> = RefCell::new(Vec::new());
        let index = snapshot.text_index(&TOOLS)?;
        let filtering = self.filters_tags();
        // Without tag filters every indexed tool passes: no table lookup or filter call per hit.
        let keep = |key: &str| match snapshot.get(&TOOLS, key) {
            Ok(Some(tool)) => match self.tag_filter(tool) {
                None => true,
                Some(reason) => {
                    filtered.borrow_mut().push((key.to_string(), reason));
                    false
                }
            },
            _ => false,
        };
        let keep: Option<&dyn Fn(&str) -> bool> = if filtering { Some(&keep) } else { None };
        let hits = index.search_hashed_keys(hashed, k, keep);
        // The filter sees keys in the index's internal order, which depends on the store's
        // history; report them best first, ties by key, so equal stores explain alike.
        let mut filtered: Vec<(String, DropReason, f32)> = filtered
            .into_inner()
            .into_iter()
            .map(|(key, reason)| {
                let score = index.score_weighted(&key, query).unwrap_or(0.0);
                (key, reason, score)
            })
            .collect();
        filtered.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        let filtered = filtered
            .into_iter()
            .map(|(key, reason, score)| Dropped {
                key: Arc::from(key),
                reason,
                candidate: Reasons::one(Reason::Retrieved {
                    score,
                    explanation: None,
                }),
            })
            .collect();
        Ok((hits, filtered))
    }

    /// The tools' own BM25 hits, as candidates or as dropped below the score thresholds.
    fn add_retrieved<'a>(
        &self,
        hits: &[KeyHit<'a>],
        explainer: &Explainer<'_>,
        candidates: &mut Candidates<'a>,
        dropped: &mut Vec<Dropped>,
    ) {
        let best = hits.first().map_or(0.0, |h| h.score);
        let mut retrieved = candidates.retrieved();
        for hit in hits {
            match self.below_thresholds(hit.score, best) {
                Some(reason_dropped) => dropped.push(Dropped {
                    key: Arc::clone(hit.key),
                    reason: reason_dropped,
                    candidate: Reasons::one(explainer.retrieved(hit.key, hit.score)),
                }),
                None => {
                    let relative = relative_score(hit.score, best);
                    retrieved.add(hit.key, hit.attachment, relative, hit.score);
                }
            }
        }
    }

    /// The fused ranking of hybrid retrieval, as candidates or as dropped below the score
    /// thresholds (which then apply to the fused score).
    fn add_fused<'a>(
        &self,
        fused: &[FusedHit<'a>],
        explainer: &Explainer<'_>,
        candidates: &mut Candidates<'a>,
        dropped: &mut Vec<Dropped>,
    ) {
        let best = fused.first().map_or(0.0, |h| h.score);
        let mut retrieved = candidates.retrieved();
        for hit in fused {
            let why = Why::Hybrid {
                score: hit.score,
                bm25: hit.bm25,
                cosine: hit.cosine,
                lexical_weight: hit.lexical_weight,
            };
            match self.below_thresholds(hit.score, best) {
                Some(reason) => dropped.push(Dropped {
                    key: Arc::clone(hit.key),
                    reason,
                    candidate: Reasons::one(why.reason(hit.key, explainer)),
                }),
                None => {
                    let relative = relative_score(hit.score, best);
                    retrieved.add_why(hit.key, hit.attachment, relative, why);
                }
            }
        }
    }

    /// Why a hit scoring `score` is dropped by the score thresholds (the best hit scoring
    /// `best`), if it is.
    #[inline]
    pub(super) fn below_thresholds(&self, score: f32, best: f32) -> Option<DropReason> {
        let p = &self.policy;
        if score < p.min_score {
            Some(DropReason::BelowMinScore {
                score,
                min: p.min_score,
            })
        } else if score < p.min_relative_score * best {
            Some(DropReason::BelowRelativeScore {
                score,
                best,
                fraction: p.min_relative_score,
            })
        } else {
            None
        }
    }

    /// The estimated tokens of `tool`'s definition, when the selection reports them (a token
    /// budget, or explanations); 0 otherwise, where estimating was work nobody reads.
    #[inline]
    pub(super) fn tokens_of(&self, tool: &Tool) -> usize {
        if self.policy.token_budget.is_some() || self.policy.explain {
            estimate_tokens(tool)
        } else {
            0
        }
    }

    /// Why the tag policy excludes `tool`, if it does.
    pub(super) fn tag_filter(&self, tool: &Tool) -> Option<DropReason> {
        let p = &self.policy;
        if let Some(tag) = tool.tags.iter().find(|t| p.exclude_tags.contains(t)) {
            return Some(DropReason::ExcludedTag { tag: tag.clone() });
        }
        if !p.include_tags.is_empty() && !tool.tags.iter().any(|t| p.include_tags.contains(t)) {
            return Some(DropReason::MissingIncludedTag);
        }
        None
    }

    /// Takes candidates in rank order while the limits allow (`turn_tools`, the token budget);
    /// pinned tools always get in. A candidate's tool is looked up only when it is sent or its
    /// tags are checked.
    fn fill<'a, C: Offered<'a>>(
        &self,
        tools_table: RowLookup<'a, Tool>,
        ordered: impl Iterator<Item = C>,
        explainer: &Explainer<'_>,
        dropped: &mut Vec<Dropped>,
    ) -> (Vec<SelectedTool>, usize) {
        let p = &self.policy;
        let limit = self.turn_tools();
        let filtering = self.filters_tags();
        let mut selected: Vec<SelectedTool> =
            Vec::with_capacity(limit.min(ordered.size_hint().1.unwrap_or(0)));
        let mut used = 0usize;
        let mut over_limit = 0usize;
        for c in ordered {
            let pinned = c.is_pinned();
            let mut entry = None;
            if !pinned {
                // Without tag filters, `tag_filter` passes every tool: no look-up for it.
                if filtering {
                    entry = c.entry(tools_table);
                }
                if let Some(reason) = entry.and_then(|e| self.tag_filter(e.record)) {
                    dropped.push(Dropped {
                        key: c.shared_key(),
                        reason,
                        candidate: c.reasons(explainer),
                    });
                    continue;
                }
                if selected.len() >= limit {
                    // The best few over the limit are near misses; a matched skill can bring
                    // dozens more, and listing them all was a tenth of a selection.
                    if over_limit < MAX_TOOLS_NEAR_MISSES {
                        over_limit += 1;
                        dropped.push(Dropped {
                            key: c.shared_key(),
                            reason: DropReason::MaxTools { max: limit },
                            candidate: c.reasons(explainer),
                        });
                    }
                    continue;
                }
            }
            // Always there: `ranked` gives only candidates whose tool is in the snapshot.
            let Some(entry) = entry.or_else(|| c.entry(tools_table)) else {
                continue;
            };
            let tokens = self.tokens_of(entry.record);
            if !pinned && let Some(reason) = past_budget(p.token_budget, used, tokens) {
                dropped.push(Dropped {
                    key: Arc::clone(entry.key),
                    reason,
                    candidate: c.reasons(explainer),
                });
                continue;
            }
            // Always there: the entry was made for a tool's row.
            let Some(tool) = entry.shared() else {
                continue;
            };
            used += tokens;
            selected.push(SelectedTool {
                rank: selected.len(),
                key: Arc::clone(entry.key),
                tool,
                score: c.rank_score(),
                reasons: c.reasons(explainer),
                // Labelled by `merge_channels`, which knows the turn.
                channel: Channel::Conversation,
                tokens,
            });
        }
        (selected, used)
    }
}

/// Records a skill once; a skill met first as a dependency and then matched by the message
/// is reported as matched, with its score.
fn push_skill(skills: &mut Vec<MatchedSkill>, name: &Arc<str>, score: f32, how: SkillMatch) {
    match skills.iter_mut().find(|s| s.name == *name) {
        Some(known) => {
            if known.how == SkillMatch::Dependency && how == SkillMatch::Matched {
                known.how = how;
                known.score = score;
            }
        }
        None => skills.push(MatchedSkill {
            name: Arc::clone(name),
            score,
            how,
        }),
    }
}

/// What the tools' search retrieved: BM25 hits, or hybrid retrieval's fused ranking.
#[derive(Clone, Copy)]
enum Retrieved<'h, 'a> {
    Lexical(&'h [KeyHit<'a>]),
    Hybrid(&'h [FusedHit<'a>]),
}

fn not_found(key: &str, why: Reason) -> Dropped {
    Dropped {
        key: Arc::from(key),
        reason: DropReason::NotFound,
        candidate: Reasons::one(why),
    }
}

/// The direct path's test hooks ([`ContextBuilder::fill_retrieved_only`]): in tests, the
/// module of its tests (`retrieved_only_tests.rs`), which can turn it off and count its fills;
/// otherwise, hooks that do nothing.
#[cfg(not(test))]
mod direct_path {
    /// Whether to gather the candidates even when the direct path could fill.
    #[inline(always)]
    pub(super) fn always_gather() -> bool {
        false
    }

    /// Counts a selection the direct path filled.
    #[inline(always)]
    pub(super) fn filled_directly() {}
}

#[cfg(test)]
#[path = "retrieved_only_tests.rs"]
mod direct_path;
