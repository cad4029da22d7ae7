//! Skills as units: the servers (and other skills with no text of their own) that a request of
//! several asks needs, found by their tools' text, sent whole when they fit the request's
//! budget.
//!
//! An MCP server publishes no description, so the skill capstore makes of it has no text for
//! the skills' search to match, and a long task ("plan a bike ride around Denver's park,
//! check the weather, find a café on the way") names its servers' work in words the tools
//! share only loosely. What does rank is the server's tools. So, for a request of at least two
//! asks ([`asks`](super::asks())), each skill with no text of its own is scored by its best
//! tool in the message's ranking (BM25, or hybrid retrieval's fused ranking, `request.depth`
//! deep), relative to the ranking's best: a large server's many middling tools do not outvote
//! a small server's one clear match. The units within `request.min_relative_score` of the
//! best come in that order, each whole when all its tools fit what is left of the request's
//! budget; one that does not fit gives its place to the next, and its best tools still come
//! by the message's own ranking (a request that needs a few tools of a large server gets
//! those few). Whole or not at all: sending a large server's top-ranked part took the budget
//! of the smaller servers a task also needed (MCP-Bench at 4,000 tokens, recall / every tool
//! sent: lexical 70.9 / 53.8 → 72.9 / 57.7, hybrid 73.8 / 57.7 → 75.8 / 59.6, both at fewer
//! tokens). The budget follows
//! the request: `request.tokens_per_ask` for each ask, at most `request.max_tokens` (the
//! caller's ceiling); pinned tools, names written in the message and a list of requests'
//! asks' best tools are never cut, and the turn's other tools fill what is left. A task's
//! description (more asks than `message.max_asks`) is searched by its sentences, and their
//! best tools come after its units, within the budget: ten sentences' bests are ~1,500
//! tokens, which at a 2,000-token ceiling left the units no room (MCP-Bench hybrid 63.1 /
//! 40.4 → 53.5 / 28.8 at 2,025 tokens, past the ceiling).
//!
//! What the units and the turn's own tools leave of the budget, the message's ranking fills,
//! best first: a task whose servers are too large to come whole (a medical calculator of 22
//! tools, a research server of 15,000 tokens) gets as many of their best tools as its budget
//! holds, where the turn's own limit (`max_turn_tools`) stopped it at 11. MCP-Bench at 4,000
//! tokens, recall / every tool sent / tokens a turn: lexical 72.9 / 57.7 / 3,288 → 76.3 /
//! 59.6 / 3,976, hybrid 75.8 / 59.6 / 2,846 → 78.1 / 59.6 / 3,979 (BENCHMARKS.md, "Whole
//! requests"). A long request's list is as long as its budget, which the caller caps.
//!
//! A skill with text of its own (a catalog's skill with a description) is matched by the
//! skills' search as before, and a message of one ask gets the list it always had: this step
//! adds nothing there. Cost: one BM25 search of the message `request.depth` deep and a pass
//! over the skills of the tools it ranks, for requests of several asks only (the fill reads the
//! same ranking).

use std::collections::HashMap;
use std::sync::Arc;

use crate::bm25::HashedQuery;
use crate::skills::{SKILLS, Skill};
use crate::store::{Entry, RowLookup, Snapshot};
use crate::tools::Tool;

use super::budget::estimate_tokens;
use super::builder::ContextBuilder;
use super::candidates::relative_score;
use super::error::SelectError;
use super::hybrid::fuse;
use super::policy::{HybridPolicy, Retrieval};
use super::query::MessageView;
use super::selection::{Channel, DropReason, Dropped, ListSize, Reason, SelectedTool};

/// A unit's tools that the message's ranking holds, with their relative scores, best first.
type Ranked<'a> = Vec<(&'a Arc<str>, f32)>;

/// What a request's budget is spent on besides the turn's own tools: what
/// [`ContextBuilder::unit_channel`] returns.
pub(super) struct RequestTools {
    /// The units' tools, unit by unit, the best unit first.
    pub units: Vec<SelectedTool>,
    /// The message's ranking's other tools, best first: they fill what the units and the
    /// turn's own tools leave of the budget.
    pub ranked: Vec<SelectedTool>,
}

/// Whether `skill` has no text of its own for the skills' search to match (an MCP server's).
fn has_no_text(skill: &Skill) -> bool {
    skill.description.trim().is_empty() && skill.examples.is_empty()
}

impl ContextBuilder {
    /// The tools of the units (skills with no text of their own) a request needs, within
    /// `budget` tokens, unit by unit, the best unit first, and the rest of the message's
    /// ranking ([the module's docs](self)); `None` for a catalog whose skills all have text
    /// (it has no units, and no search is made).
    pub(super) fn unit_channel<'a>(
        &self,
        snapshot: &'a Snapshot,
        message: &MessageView<'_, 'a>,
        budget: usize,
        tools_table: RowLookup<'a, Tool>,
    ) -> Result<Option<RequestTools>, SelectError> {
        let p = self.policy();
        let r = &p.request;
        if !snapshot.iter(&SKILLS)?.records().any(has_no_text) {
            return Ok(None);
        }
        if budget == 0 {
            return Ok(Some(RequestTools {
                units: Vec::new(),
                ranked: Vec::new(),
            }));
        }
        // The message's ranking, `depth` deep: (tool, score relative to the best, why).
        let hashed = HashedQuery::new(message.terms);
        let (hits, _filtered) = self.search_tools(snapshot, message.terms, &hashed, r.depth)?;
        drop(hashed);
        let ranking: Vec<(&'a Arc<str>, f32, Reason)> = match (p.retrieval, message.dense) {
            (Retrieval::Hybrid(hybrid), Some(dense)) => {
                let hybrid = HybridPolicy {
                    depth: hybrid.depth.max(r.depth),
                    ..hybrid
                };
                let fused = fuse(&hits, dense.to_vec(), message.words, &hybrid, r.depth);
                let best = fused.first().map_or(0.0, |h| h.score);
                fused
                    .iter()
                    .map(|h| {
                        let why = Reason::Hybrid {
                            score: h.score,
                            bm25: h.bm25,
                            cosine: h.cosine,
                            lexical_weight: h.lexical_weight,
                            explanation: None,
                        };
                        (h.key, relative_score(h.score, best), why)
                    })
                    .collect()
            }
            _ => {
                let best = hits.first().map_or(0.0, |h| h.score);
                hits.iter()
                    .map(|h| {
                        let why = Reason::Retrieved {
                            score: h.score,
                            explanation: None,
                        };
                        (h.key, relative_score(h.score, best), why)
                    })
                    .collect()
            }
        };
        // Each textless skill's ranked tools, best first.
        let mut scored: HashMap<&'a str, Ranked<'a>> = HashMap::new();
        for &(key, score, _) in &ranking {
            let Some(entry) = tools_table.entry(key) else {
                continue;
            };
            for skill in &entry.record.skills {
                match snapshot.get(&SKILLS, skill)? {
                    Some(row) if has_no_text(row) => {
                        scored
                            .entry(row.name.as_str())
                            .or_default()
                            .push((key, score));
                    }
                    _ => {}
                }
            }
        }
        // A unit scores as its best tool: a large server's many middling tools do not outvote
        // a small server's one clear match.
        let mut ranked: Vec<(&'a str, f32, Ranked<'a>)> = scored
            .into_iter()
            .map(|(name, tools)| (name, tools.first().map_or(0.0, |&(_, s)| s), tools))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let best = ranked.first().map_or(0.0, |u| u.1);
        let mut left = budget;
        let mut units = Vec::new();
        for (name, score, ranked_tools) in ranked {
            if score < r.min_relative_score * best || left == 0 {
                break;
            }
            let Some(skill) = snapshot.get(&SKILLS, name)? else {
                continue;
            };
            // The skill's tools that pass the tag filters, each with its relative score.
            let mut all: Vec<(Entry<'a, Tool>, f32)> = skill
                .tools
                .iter()
                .filter_map(|key| tools_table.entry(key))
                .filter(|entry| self.tag_filter(entry.record).is_none())
                .map(|entry| {
                    let score = ranked_tools
                        .iter()
                        .find(|(k, _)| *k == entry.key)
                        .map_or(0.0, |&(_, s)| s);
                    (entry, score)
                })
                .collect();
            // Whole or not at all: a unit too large for what is left gives its place to the
            // next (its best tools still come by the message's own ranking).
            let tokens: usize = all.iter().map(|(e, _)| estimate_tokens(e.record)).sum();
            if tokens > left {
                continue;
            }
            left -= tokens;
            // Best-ranked first, then the rest in the skill's order.
            all.sort_by(|a, b| b.1.total_cmp(&a.1));
            let reason = Reason::Unit {
                skill: Arc::from(name),
                score,
            };
            units.extend(all.into_iter().filter_map(|(entry, score)| {
                let tokens = estimate_tokens(entry.record);
                SelectedTool::unranked(&entry, tokens, score, reason.clone(), Channel::Skill)
            }));
        }
        // The rest of the ranking, for what the units and the turn's own tools leave.
        let ranked = ranking
            .into_iter()
            .filter(|(key, _, _)| !units.iter().any(|t| t.key == **key))
            .filter_map(|(key, score, why)| {
                let entry = tools_table.entry(key)?;
                if self.tag_filter(entry.record).is_some() {
                    return None;
                }
                let tokens = estimate_tokens(entry.record);
                SelectedTool::unranked(&entry, tokens, score, why, Channel::Message)
            })
            .collect();
        Ok(Some(RequestTools { units, ranked }))
    }
}

impl ContextBuilder {
    /// The turn's own tools (`needed`, from the merged channels) sized for a request of `asks`
    /// asks: for a message of one ask, or over a catalog with no units (every skill has
    /// text), as they are ([`ListSize::Tools`]); otherwise the tools that are never cut
    /// (pinned, named, found, a list of requests' asks' best), then the units' tools, then the
    /// rest of `needed`, within the request's budget ([`ListSize::Request`]), those the budget
    /// cuts going to `dropped`; and what is left of the budget, the message's ranking fills,
    /// best first. Returns the tools and why the list has that size.
    pub(super) fn size_for_request<'a>(
        &self,
        snapshot: &'a Snapshot,
        message: &MessageView<'_, 'a>,
        asks: usize,
        needed: Vec<SelectedTool>,
        tools_table: RowLookup<'a, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<(Vec<SelectedTool>, ListSize), SelectError> {
        let p = self.policy();
        let as_they_are = |tools| {
            let size = ListSize::Tools {
                asks,
                turn_tools: self.own_tools(),
                max_tools: p.max_tools,
            };
            (tools, size)
        };
        let budget = p.request.budget(asks);
        if budget == 0 {
            return Ok(as_they_are(needed));
        }
        let cost = |t: &SelectedTool| estimate_tokens(&t.tool);
        // A task's description: its asks are its sentences, whose bests come after its units.
        let description = p.describes_a_task(asks);
        let stays = |t: &SelectedTool| never_cut(t, description);
        let kept: usize = needed.iter().filter(|t| stays(t)).map(cost).sum();
        let units =
            self.unit_channel(snapshot, message, budget.saturating_sub(kept), tools_table)?;
        let Some(RequestTools { units, ranked }) = units else {
            return Ok(as_they_are(needed));
        };
        let (mut tools, rest): (Vec<SelectedTool>, Vec<SelectedTool>) =
            needed.into_iter().partition(|t| stays(t));
        let mut used = kept;
        for tool in units.into_iter().chain(rest) {
            if tools.iter().any(|t| t.key == tool.key) {
                continue;
            }
            let needs = cost(&tool);
            if used + needs > budget {
                dropped.push(Dropped {
                    key: Arc::clone(&tool.key),
                    reason: DropReason::TokenBudget {
                        needed: needs,
                        remaining: budget.saturating_sub(used),
                    },
                    candidate: tool.reasons,
                });
                continue;
            }
            used += needs;
            tools.push(tool);
        }
        // A request whose servers are too large to come whole gets as many of its best tools
        // as its budget holds, not only the turn's own few.
        for tool in ranked {
            if tools.iter().any(|t| t.key == tool.key) {
                continue;
            }
            let needs = cost(&tool);
            if used + needs > budget {
                // A near miss of the turn's limit that the budget would not hold either.
                if let Some(near) = dropped.iter_mut().find(|d| d.key == tool.key) {
                    near.reason = DropReason::TokenBudget {
                        needed: needs,
                        remaining: budget - used,
                    };
                }
                continue;
            }
            used += needs;
            tools.push(tool);
        }
        dropped.retain(|d| !tools.iter().any(|t| t.key == d.key));
        for (rank, tool) in tools.iter_mut().enumerate() {
            tool.rank = rank;
        }
        let size = ListSize::Request {
            asks,
            budget,
            per_ask: p.request.tokens_per_ask,
            ceiling: p.request.max_tokens,
        };
        Ok((tools, size))
    }
}

/// Whether a tool of the merged channels stays whatever the request's budget: pinned, named
/// in the message, found by the model, or an ask's best, unless the request is a task's
/// `description` (its asks are sentences, whose bests come after its units).
fn never_cut(tool: &SelectedTool, description: bool) -> bool {
    tool.channel == Channel::Pinned
        || match tool.reasons.first() {
            Some(Reason::ExactName { .. } | Reason::Discovered) => true,
            Some(Reason::Ask { .. }) => !description,
            _ => false,
        }
}
