//! Skills as units: the servers (and other skills with no text of their own) that a request of
//! several asks needs, found by their tools' text, sent whole when they fit the request's
//! budget and by their best few tools when they do not.
//!
//! An MCP server publishes no description, so the skill capstore makes of it has no text for
//! the skills' search to match, and a long task ("plan a bike ride around Denver's park,
//! check the weather, find a café on the way") names its servers' work in words the tools
//! share only loosely. What does rank is the server's tools. So, for a request of at least two
//! asks ([`asks`](super::asks())), each skill with no text of its own is scored by its best
//! tool in the message's ranking (BM25, or hybrid retrieval's fused ranking, `request.depth`
//! deep), relative to the ranking's best: a large server's many middling tools do not outvote
//! a small server's one clear match. The units within `request.min_relative_score` of the
//! best come in that order: whole when all their tools fit what is left of the request's
//! budget, otherwise their tools that ranked, best first, while they fit. The budget follows
//! the request: `request.tokens_per_ask` for each ask, at most `request.max_tokens` (the
//! caller's ceiling); pinned tools, names written in the message and the asks' best tools are
//! never cut, and the turn's other tools fill what is left.
//!
//! A skill with text of its own (a catalog's skill with a description) is matched by the
//! skills' search as before, and a message of one ask gets the list it always had: this step
//! adds nothing there. Cost: one BM25 search of the message `request.depth` deep and a pass
//! over the skills of the tools it ranks, for requests of several asks only.

use std::collections::HashMap;
use std::sync::Arc;

use crate::Tool;
use crate::bm25::HashedQuery;
use crate::store::{RowLookup, Snapshot};
use crate::tables::{SKILLS, TOOLS};

use super::budget::estimate_tokens;
use super::builder::ContextBuilder;
use super::candidates::relative_score;
use super::error::SelectError;
use super::hybrid::fuse;
use super::policy::Retrieval;
use super::query::weighted_terms;
use super::selection::{Channel, DropReason, Dropped, ListSize, Reason, Reasons, SelectedTool};

/// A unit's tools that the message's ranking holds, with their relative scores, best first.
type Ranked<'a> = Vec<(&'a Arc<str>, f32)>;

/// A skill the request needs, with the tools it brings.
pub(super) struct Unit {
    /// The tools, best first: all of the skill's when it came whole.
    pub tools: Vec<SelectedTool>,
}

impl ContextBuilder {
    /// The units (skills with no text of their own) a request needs, within `budget` tokens,
    /// best first ([the module's docs](self)). `own` are the message's own weighted texts, of
    /// `words` words; `dense`, hybrid retrieval's nearest tool vectors to the message.
    pub(super) fn unit_channel<'a>(
        &self,
        snapshot: &'a Snapshot,
        own: &[(&str, f32)],
        words: usize,
        dense: Option<&[(&'a Arc<str>, f32)]>,
        budget: usize,
        tools_table: RowLookup<'a, Tool>,
    ) -> Result<Vec<Unit>, SelectError> {
        let p = self.policy();
        let r = &p.request;
        if budget == 0 || snapshot.count(&SKILLS)? == 0 {
            return Ok(Vec::new());
        }
        // The message's ranking, `depth` deep: (tool, score relative to the best).
        let query = weighted_terms(snapshot, &TOOLS, own)?;
        let terms: Vec<(&str, f32)> = query.iter().collect();
        let hashed = HashedQuery::new(&terms);
        let (hits, _filtered) = self.search_tools(snapshot, &terms, &hashed, r.depth)?;
        drop(hashed);
        let ranking: Vec<(&'a Arc<str>, f32)> = match (p.retrieval, dense) {
            (Retrieval::Hybrid(hybrid), Some(dense)) => {
                let hybrid = super::policy::HybridPolicy {
                    depth: hybrid.depth.max(r.depth),
                    ..hybrid
                };
                let fused = fuse(&hits, dense.to_vec(), words, &hybrid, r.depth);
                let best = fused.first().map_or(0.0, |h| h.score);
                fused
                    .iter()
                    .map(|h| (h.key, relative_score(h.score, best)))
                    .collect()
            }
            _ => {
                let best = hits.first().map_or(0.0, |h| h.score);
                hits.iter()
                    .map(|h| (h.key, relative_score(h.score, best)))
                    .collect()
            }
        };
        // Each textless skill's score, and its ranked tools, best first.
        let mut scored: HashMap<&'a str, Ranked<'a>> = HashMap::new();
        let textless = |name: &str| {
            snapshot
                .get(&SKILLS, name)
                .ok()
                .flatten()
                .is_some_and(|s| s.description.trim().is_empty() && s.examples.is_empty())
        };
        for &(key, score) in &ranking {
            let Some(entry) = tools_table.entry(key) else {
                continue;
            };
            for skill in &entry.record.skills {
                let Some(skill_row) = snapshot.get(&SKILLS, skill)? else {
                    continue;
                };
                if !textless(skill) {
                    continue;
                }
                scored
                    .entry(skill_row.name.as_str())
                    .or_default()
                    .push((key, score));
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
            let skill_name: Arc<str> = Arc::from(name);
            let all: Vec<SelectedTool> = skill
                .tools
                .iter()
                .filter_map(|key| {
                    let entry = tools_table.entry(key)?;
                    if self.tag_filter(entry.record).is_some() {
                        return None;
                    }
                    let ranked = ranked_tools.iter().find(|(k, _)| ***k == **key);
                    Some(SelectedTool {
                        key: Arc::clone(entry.key),
                        tokens: estimate_tokens(entry.record),
                        tool: entry.shared()?,
                        rank: 0,
                        score: ranked.map_or(0.0, |&(_, s)| s),
                        reasons: Reasons::one(Reason::Unit {
                            skill: Arc::clone(&skill_name),
                            score,
                            whole: true,
                        }),
                        channel: Channel::Message,
                    })
                })
                .collect();
            let whole: usize = all.iter().map(|t| t.tokens).sum();
            let tools = if whole <= left {
                // Best-ranked first, then the rest in the skill's order.
                let mut all = all;
                all.sort_by(|a, b| b.score.total_cmp(&a.score));
                all
            } else {
                let mut few: Vec<SelectedTool> = Vec::new();
                let mut used = 0;
                for (key, _) in &ranked_tools {
                    if let Some(t) = all.iter().find(|t| t.key == **key)
                        && used + t.tokens <= left
                    {
                        let mut t = t.clone();
                        t.reasons = Reasons::one(Reason::Unit {
                            skill: Arc::clone(&skill_name),
                            score,
                            whole: false,
                        });
                        used += t.tokens;
                        few.push(t);
                    }
                }
                few
            };
            left = left.saturating_sub(tools.iter().map(|t| t.tokens).sum());
            if !tools.is_empty() {
                units.push(Unit { tools });
            }
        }
        Ok(units)
    }
}

/// The turn's own tools, sized for the request: what [`ContextBuilder::size_for_request`]
/// returns.
pub(super) struct Sized {
    pub tools: Vec<SelectedTool>,
    pub tokens: usize,
    pub size: ListSize,
}

impl ContextBuilder {
    /// The turn's own tools (`needed`, `tokens` of them, from the merged channels) sized for a
    /// request of `asks` asks: for a message of one ask, or a request no unit fills, as they
    /// are ([`ListSize::Tools`]); otherwise the tools that are never cut (pinned, named, found,
    /// the asks' best), then the units' tools, then the rest of `needed`, within the request's
    /// budget ([`ListSize::Request`]); those the budget cuts go to `dropped`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn size_for_request<'a>(
        &self,
        snapshot: &'a Snapshot,
        own: &[(&str, f32)],
        words: usize,
        dense: Option<&[(&'a Arc<str>, f32)]>,
        asks: usize,
        needed: Vec<SelectedTool>,
        tokens: usize,
        tools_table: RowLookup<'a, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> Result<Sized, SelectError> {
        let p = self.policy();
        let by_limits = ListSize::Tools {
            asks,
            turn_tools: self.own_tools(),
            max_tools: p.max_tools,
        };
        let budget = p.request.budget(asks);
        if budget == 0 {
            return Ok(Sized {
                tools: needed,
                tokens,
                size: by_limits,
            });
        }
        let cost = |t: &SelectedTool| estimate_tokens(&t.tool);
        let kept: usize = needed.iter().filter(|t| never_cut(t)).map(cost).sum();
        let units = self.unit_channel(
            snapshot,
            own,
            words,
            dense,
            budget.saturating_sub(kept),
            tools_table,
        )?;
        if units.is_empty() {
            return Ok(Sized {
                tools: needed,
                tokens,
                size: by_limits,
            });
        }
        let (first, rest): (Vec<SelectedTool>, Vec<SelectedTool>) =
            needed.into_iter().partition(never_cut);
        let mut used = kept;
        let mut tools = first;
        for tool in units.into_iter().flat_map(|u| u.tools).chain(rest) {
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
        dropped.retain(|d| !tools.iter().any(|t| t.key == d.key));
        for (rank, tool) in tools.iter_mut().enumerate() {
            tool.rank = rank;
        }
        let tokens = tools.iter().map(|t| t.tokens).sum();
        Ok(Sized {
            tools,
            tokens,
            size: ListSize::Request {
                asks,
                budget,
                per_ask: p.request.tokens_per_ask,
                ceiling: p.request.max_tokens,
            },
        })
    }
}

/// Whether a tool of the merged channels stays whatever the request's budget: pinned, named
/// in the message, found by the model, or an ask's best.
fn never_cut(tool: &SelectedTool) -> bool {
    tool.channel == Channel::Pinned
        || matches!(
            tool.reasons.first(),
            Some(Reason::ExactName { .. } | Reason::Discovered | Reason::Ask { .. })
        )
}
