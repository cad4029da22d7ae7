//! The per-turn selection: query → exact names → skills and their dependencies → BM25 over
//! tools → policy (filters, thresholds, limits, budget, stability) → a [`Selection`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::bm25::hash::StrState;

use crate::Tool;
use crate::skills::dependency_closure;
use crate::store::{Snapshot, StoreError};
use crate::tables::{SKILLS, TOOLS};

use super::budget::estimate_tokens;
use super::error::SelectError;
use super::policy::{NoMatch, PolicyError, SelectionPolicy};
use super::query::{exact_mentions, weighted_terms, weighted_texts};
use super::selection::{DropReason, Dropped, MatchedSkill, Reason, SelectedTool, Selection};
use super::turn::Turn;

/// Candidates are ranked first by class (a pinned tool before a named one before a retrieved
/// one ...), then by score within the class.
mod class {
    pub const PINNED: u8 = 0;
    pub const EXACT: u8 = 1;
    pub const DISCOVERED: u8 = 2;
    pub const RELEVANT: u8 = 3;
    pub const RECENT: u8 = 4;
    pub const KEPT: u8 = 5;
    pub const FALLBACK: u8 = 6;
}

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
/// assert!(keys.contains(&"get_forecast") && keys.contains(&"get_alerts"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContextBuilder {
    policy: SelectionPolicy,
}

struct Candidate {
    key: Arc<str>,
    tool: Arc<Tool>,
    class: u8,
    score: f32,
    /// [`RETRIEVAL_TIE_BREAK`] times the tool's own relative BM25 score, if it was retrieved.
    bonus: f32,
    reasons: Vec<Reason>,
}

/// How much a tool's own BM25 relevance adds to the score it got another way. All the tools of
/// a matched skill share one score; without this, a skill's unrelated tools (`delete_event`
/// for "book a flight and put it in my calendar") tied with, and by key order beat, the tools
/// whose own text matched (`search_flights`). Small, so that it orders within a score level
/// rather than across levels.
const RETRIEVAL_TIE_BREAK: f32 = 0.1;

/// How many candidates cut by `max_tools` are reported in [`Selection::dropped`], best first.
///
/// ```
/// assert_eq!(capstore::context::MAX_TOOLS_NEAR_MISSES, 8);
/// ```
pub const MAX_TOOLS_NEAR_MISSES: usize = 8;

impl Candidate {
    fn bonus_of(reason: &Reason, score: f32) -> f32 {
        if matches!(reason, Reason::Retrieved { .. }) {
            RETRIEVAL_TIE_BREAK * score
        } else {
            0.0
        }
    }

    /// Another way the tool was found: it keeps its best class and all its reasons.
    fn merge(&mut self, class: u8, score: f32, reason: Reason) {
        self.bonus = self.bonus.max(Self::bonus_of(&reason, score));
        if class < self.class || (class == self.class && score > self.score) {
            self.class = class;
            self.score = score;
            self.reasons.insert(0, reason);
        } else {
            self.reasons.push(reason);
        }
    }

    /// The score it ranks by: the bonus only orders relevant tools (pinned and named tools keep
    /// their own order).
    fn rank_score(&self) -> f32 {
        if self.class == class::RELEVANT {
            self.score + self.bonus
        } else {
            self.score
        }
    }
}

/// The candidates gathered so far, by key; a tool found several ways keeps its best class and
/// all its reasons.
#[derive(Default)]
struct Candidates {
    by_key: HashMap<Arc<str>, Candidate, StrState>,
}

impl Candidates {
    fn add(&mut self, key: &Arc<str>, tool: &Arc<Tool>, class: u8, score: f32, reason: Reason) {
        match self.by_key.get_mut(key) {
            Some(c) => c.merge(class, score, reason),
            None => {
                let bonus = Candidate::bonus_of(&reason, score);
                self.by_key.insert(
                    Arc::clone(key),
                    Candidate {
                        key: Arc::clone(key),
                        tool: Arc::clone(tool),
                        class,
                        score,
                        bonus,
                        reasons: vec![reason],
                    },
                );
            }
        }
    }

    fn add_key(
        &mut self,
        snapshot: &Snapshot,
        key: &str,
        class: u8,
        score: f32,
        reason: Reason,
    ) -> Result<bool, StoreError> {
        // A tool found again (a skill's tool also retrieved, a shared dependency) needs no
        // second lookup in the table nor a new key.
        if let Some(c) = self.by_key.get_mut(key) {
            c.merge(class, score, reason);
            return Ok(true);
        }
        let Some(tool) = snapshot.get_arc(&TOOLS, key)? else {
            return Ok(false);
        };
        let stored_key: Arc<str> = Arc::from(key);
        self.add(&stored_key, &tool, class, score, reason);
        Ok(true)
    }
}

impl ContextBuilder {
    /// A builder with the default policy ([`SelectionPolicy::default`]).
    ///
    /// ```
    /// assert_eq!(capstore::context::ContextBuilder::new().policy().max_tools, 16);
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
        Ok(ContextBuilder { policy })
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
        let mut candidates = Candidates {
            // Pinned tools, a few skills' tools and the retrieved ones: rarely more.
            by_key: HashMap::with_capacity_and_hasher(64, StrState::default()),
        };
        let mut dropped = Vec::new();
        let mut skills = Vec::new();
        let texts = weighted_texts(turn, p);

        for key in &p.pinned_tools {
            if !candidates.add_key(snapshot, key, class::PINNED, 0.0, Reason::Pinned)? {
                dropped.push(not_found(key, Reason::Pinned));
            }
        }
        self.add_pinned_skills(snapshot, &mut candidates, &mut skills, &mut dropped)?;
        if p.match_exact_names {
            for m in exact_mentions(snapshot, &turn.message)? {
                let reason = Reason::ExactName { mention: m.text };
                candidates.add(&m.key, &m.tool, class::EXACT, 0.0, reason);
            }
        }
        for key in &turn.discovered {
            candidates.add_key(snapshot, key, class::DISCOVERED, 0.0, Reason::Discovered)?;
        }
        let query = weighted_terms(snapshot, &TOOLS, &texts)?;
        // The message is tokenized once when both indexes tokenize alike (the default).
        let skill_query = if snapshot.same_tokenizer(&TOOLS, &SKILLS) {
            None
        } else {
            Some(weighted_terms(snapshot, &SKILLS, &texts)?)
        };
        let skill_query = skill_query.as_deref().unwrap_or(&query);
        self.add_matched_skills(snapshot, skill_query, &mut candidates, &mut skills)?;
        self.add_retrieved(snapshot, &query, &mut candidates, &mut dropped)?;
        if p.keep_recently_used {
            for key in turn.recent_tools.iter().rev() {
                candidates.add_key(snapshot, key, class::RECENT, 0.0, Reason::RecentlyUsed)?;
            }
        }
        if p.keep_previous {
            for key in &turn.previous {
                candidates.add_key(snapshot, key, class::KEPT, 0.0, Reason::KeptFromLastTurn)?;
            }
        }
        let matched = candidates
            .by_key
            .values()
            .any(|c| (class::EXACT..=class::RELEVANT).contains(&c.class));
        if !matched && p.on_no_match == NoMatch::All {
            let keys: Vec<Arc<str>> = snapshot.iter(&TOOLS)?.keys().cloned().collect();
            for key in keys {
                candidates.add_key(snapshot, &key, class::FALLBACK, 0.0, Reason::Fallback)?;
            }
        }

        let mut ordered: Vec<(f32, Candidate)> = candidates
            .by_key
            .into_values()
            .map(|c| (c.rank_score(), c))
            .collect();
        // Keys are unique, so the order is total and an unstable sort is deterministic.
        ordered.sort_unstable_by(|(sa, a), (sb, b)| {
            a.class
                .cmp(&b.class)
                .then(sb.total_cmp(sa))
                .then_with(|| a.key.cmp(&b.key))
        });
        let ordered: Vec<Candidate> = ordered.into_iter().map(|(_, c)| c).collect();
        let (mut tools, tokens) = self.fill(ordered, &mut dropped);
        if p.keep_previous {
            stable_order(&mut tools, &turn.previous);
        }
        Ok(Selection {
            version: snapshot.version(),
            tools,
            dropped,
            skills,
            query,
            tokens,
            no_match: !matched,
        })
    }

    fn add_pinned_skills(
        &self,
        snapshot: &Snapshot,
        candidates: &mut Candidates,
        skills: &mut Vec<MatchedSkill>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(), SelectError> {
        for pinned in &self.policy.pinned_skills {
            if !snapshot.contains(&SKILLS, pinned)? {
                dropped.push(not_found(
                    pinned,
                    Reason::PinnedSkill {
                        skill: pinned.clone(),
                    },
                ));
                continue;
            }
            for name in dependency_closure(snapshot, &[pinned])? {
                let Some(skill) = snapshot.get(&SKILLS, &name)? else {
                    continue;
                };
                let how = if name == *pinned {
                    "pinned"
                } else {
                    "dependency"
                };
                push_skill(skills, &name, 0.0, how);
                for key in &skill.tools {
                    let reason = Reason::PinnedSkill {
                        skill: pinned.clone(),
                    };
                    candidates.add_key(snapshot, key, class::PINNED, 0.0, reason)?;
                }
            }
        }
        Ok(())
    }

    fn add_matched_skills(
        &self,
        snapshot: &Snapshot,
        query: &[(String, f32)],
        candidates: &mut Candidates,
        skills: &mut Vec<MatchedSkill>,
    ) -> Result<(), SelectError> {
        let p = &self.policy;
        if p.max_skills == 0 || snapshot.count(&SKILLS)? == 0 {
            return Ok(());
        }
        let hits = snapshot
            .text_index(&SKILLS)?
            .search_weighted(query, p.max_skills, |_| true);
        let best = hits.first().map_or(0.0, |h| h.score);
        for hit in hits {
            if hit.score < p.skill_min_score || hit.score < p.skill_min_relative_score * best {
                continue;
            }
            let relative = if best > 0.0 { hit.score / best } else { 0.0 };
            let score = p.skill_tool_weight * relative;
            push_skill(skills, &hit.key, hit.score, "matched");
            for name in dependency_closure(snapshot, &[&*hit.key])? {
                let Some(skill) = snapshot.get(&SKILLS, &name)? else {
                    continue;
                };
                let (reason, tool_score) = if *name == *hit.key {
                    let reason = Reason::Skill {
                        skill: name.clone(),
                        score: hit.score,
                    };
                    (reason, score)
                } else {
                    push_skill(skills, &name, 0.0, "dependency");
                    let reason = Reason::DependencyOf {
                        skill: hit.key.to_string(),
                        dependency: name.clone(),
                    };
                    // Dependencies' tools rank after the matched skill's own.
                    (reason, score * 0.5)
                };
                for key in &skill.tools {
                    candidates.add_key(
                        snapshot,
                        key,
                        class::RELEVANT,
                        tool_score,
                        reason.clone(),
                    )?;
                }
            }
        }
        Ok(())
    }

    fn add_retrieved(
        &self,
        snapshot: &Snapshot,
        query: &[(String, f32)],
        candidates: &mut Candidates,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(), SelectError> {
        let p = &self.policy;
        // Enough beyond the limit to report the near misses.
        let k = p.max_tools.saturating_mul(2).saturating_add(4);
        let filtered: RefCell<Vec<(String, DropReason)>> = RefCell::new(Vec::new());
        let index = snapshot.text_index(&TOOLS)?;
        let filtering = !p.include_tags.is_empty() || !p.exclude_tags.is_empty();
        let hits = index.search_weighted(query, k, |key| {
            // Without tag filters every indexed tool passes: no table lookup per hit.
            if !filtering {
                return true;
            }
            match snapshot.get(&TOOLS, key) {
                Ok(Some(tool)) => match self.tag_filter(tool) {
                    None => true,
                    Some(reason) => {
                        filtered.borrow_mut().push((key.to_string(), reason));
                        false
                    }
                },
                _ => false,
            }
        });
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
        for (key, reason, score) in filtered {
            dropped.push(Dropped {
                key,
                reason,
                candidate: vec![Reason::Retrieved {
                    score,
                    explanation: None,
                }],
            });
        }
        let best = hits.first().map_or(0.0, |h| h.score);
        for hit in hits {
            let explanation = if p.explain {
                index.explain_weighted(&hit.key, query)
            } else {
                None
            };
            let reason = Reason::Retrieved {
                score: hit.score,
                explanation,
            };
            let drop = if hit.score < p.min_score {
                Some(DropReason::BelowMinScore {
                    score: hit.score,
                    min: p.min_score,
                })
            } else if hit.score < p.min_relative_score * best {
                Some(DropReason::BelowRelativeScore {
                    score: hit.score,
                    best,
                    fraction: p.min_relative_score,
                })
            } else {
                None
            };
            match drop {
                Some(reason_dropped) => dropped.push(Dropped {
                    key: hit.key.to_string(),
                    reason: reason_dropped,
                    candidate: vec![reason],
                }),
                None => {
                    let relative = if best > 0.0 { hit.score / best } else { 0.0 };
                    candidates.add_key(snapshot, &hit.key, class::RELEVANT, relative, reason)?;
                }
            }
        }
        Ok(())
    }

    /// Why the tag policy excludes `tool`, if it does.
    fn tag_filter(&self, tool: &Tool) -> Option<DropReason> {
        let p = &self.policy;
        if let Some(tag) = tool.tags.iter().find(|t| p.exclude_tags.contains(t)) {
            return Some(DropReason::ExcludedTag { tag: tag.clone() });
        }
        if !p.include_tags.is_empty() && !tool.tags.iter().any(|t| p.include_tags.contains(t)) {
            return Some(DropReason::MissingIncludedTag);
        }
        None
    }

    /// Takes candidates in rank order while the limits allow; pinned tools always get in.
    fn fill(
        &self,
        ordered: Vec<Candidate>,
        dropped: &mut Vec<Dropped>,
    ) -> (Vec<SelectedTool>, usize) {
        let p = &self.policy;
        let count_tokens = p.token_budget.is_some() || p.explain;
        let mut selected: Vec<SelectedTool> = Vec::with_capacity(p.max_tools.min(ordered.len()));
        let mut used = 0usize;
        let mut over_limit = 0usize;
        for c in ordered {
            let pinned = c.class == class::PINNED;
            if !pinned {
                if let Some(reason) = self.tag_filter(&c.tool) {
                    dropped.push(Dropped {
                        key: c.key.to_string(),
                        reason,
                        candidate: c.reasons,
                    });
                    continue;
                }
                if selected.len() >= p.max_tools {
                    // The best few over the limit are near misses; a matched skill can bring
                    // dozens more, and listing them all was a tenth of a selection.
                    if over_limit < MAX_TOOLS_NEAR_MISSES {
                        over_limit += 1;
                        dropped.push(Dropped {
                            key: c.key.to_string(),
                            reason: DropReason::MaxTools { max: p.max_tools },
                            candidate: c.reasons,
                        });
                    }
                    continue;
                }
            }
            let tokens = if count_tokens {
                estimate_tokens(&c.tool)
            } else {
                0
            };
            if let Some(budget) = p.token_budget {
                if !pinned && used + tokens > budget {
                    dropped.push(Dropped {
                        key: c.key.to_string(),
                        reason: DropReason::TokenBudget {
                            needed: tokens,
                            remaining: budget.saturating_sub(used),
                        },
                        candidate: c.reasons,
                    });
                    continue;
                }
            }
            used += tokens;
            let score = c.rank_score();
            selected.push(SelectedTool {
                rank: selected.len(),
                key: c.key,
                tool: c.tool,
                score,
                reasons: c.reasons,
                tokens,
            });
        }
        (selected, used)
    }
}

/// Records a skill once; a skill met first as a dependency and then matched by the message
/// is reported as matched, with its score.
fn push_skill(skills: &mut Vec<MatchedSkill>, name: &str, score: f32, how: &'static str) {
    match skills.iter_mut().find(|s| s.name == name) {
        Some(known) => {
            if known.how == "dependency" && how == "matched" {
                known.how = how;
                known.score = score;
            }
        }
        None => skills.push(MatchedSkill {
            name: name.to_string(),
            score,
            how,
        }),
    }
}

fn not_found(key: &str, why: Reason) -> Dropped {
    Dropped {
        key: key.to_string(),
        reason: DropReason::NotFound,
        candidate: vec![why],
    }
}

/// Puts last turn's tools first, in last turn's order, then the new ones by rank: the request
/// prefix stays the same while the topic does.
fn stable_order(tools: &mut [SelectedTool], previous: &[String]) {
    let position: HashMap<&str, usize> = previous
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    tools.sort_by_key(|t| match position.get(&*t.key) {
        Some(&i) => (0, i),
        None => (1, t.rank),
    });
}
