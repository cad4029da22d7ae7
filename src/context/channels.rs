//! A turn's channels: the message alone, the message with its history, merged into the turn's
//! own tools ([the module's docs](super#a-turns-channels)). The third channel, the list
//! carried from earlier turns, is [`carry`](super::carry)'s.

use std::collections::HashSet;
use std::sync::Arc;

use crate::bm25::HashedQuery;
use crate::bm25::ascii_words::word_count;
use crate::store::{RowLookup, Snapshot};
use crate::tools::{TOOLS, Tool};

use super::asks::Ask;
use super::budget::past_budget;
use super::builder::ContextBuilder;
use super::candidates::{Explainer, relative_score};
use super::error::SelectError;
use super::hybrid::{FusedHit, fuse};
use super::policy::{HybridPolicy, Retrieval};
use super::query::{push_with_hints, weighted_terms};
use super::selection::{Channel, DropReason, Dropped, Reason, Reasons, SelectedTool};
use super::turn::Turn;

impl ContextBuilder {
    /// Whether the turn's query reads more than its message: earlier messages or the names of
    /// tools used lately. Without, the message alone is the query, and the message channel
    /// would repeat it.
    pub(super) fn reads_history(&self, turn: &Turn) -> bool {
        let p = self.policy();
        let history = p.history_turns > 0 && p.history_decay > 0.0 && !turn.history.is_empty();
        let recent = p.recent_tool_weight > 0.0 && !turn.recent_tools.is_empty();
        history || recent
    }

    /// The message channel: the tools that the turn's message, searched alone, ranks among its
    /// best few (at most `message.max_tools`, each within `message.min_relative_score` of the
    /// best), when its evidence is clear enough (its best BM25 score per word at least
    /// `message.min_evidence`; in hybrid retrieval, or its nearest tool vector's cosine at least
    /// `message.min_cosine`). `terms` are the message's own query (the message and its
    /// hints' terms); `dense` is hybrid retrieval's nearest tool vectors to the message,
    /// best first. Best first; tag filters and score thresholds apply as to any hit.
    pub(super) fn message_channel<'a>(
        &self,
        snapshot: &'a Snapshot,
        turn: &Turn,
        terms: &[(&str, f32)],
        dense: Option<&[(&'a Arc<str>, f32)]>,
        tools_table: RowLookup<'a, Tool>,
    ) -> Result<Vec<SelectedTool>, SelectError> {
        let p = self.policy();
        let m = &p.message;
        if m.max_tools == 0 {
            return Ok(Vec::new());
        }
        let nearest = match (p.retrieval, dense) {
            (Retrieval::Hybrid(hybrid), Some(dense)) => Some((hybrid, dense)),
            _ => None,
        };
        let words = word_count(&turn.message);
        let Some(ranking) = self.evident_ranking(snapshot, terms, words, nearest, m.max_tools)?
        else {
            return Ok(Vec::new());
        };
        let explainer = Explainer::new(p.explain.then_some(snapshot.text_index(&TOOLS)?), terms);
        let best = ranking.first().map_or(0.0, |h| h.score);
        // (key, score relative to the channel's best, reason), best first.
        let mut ranked: Vec<(&'a Arc<str>, f32, Reason)> = Vec::with_capacity(ranking.len());
        for hit in ranking {
            if self.below_thresholds(hit.score, best).is_some() {
                break;
            }
            let reason = match nearest {
                Some(_) => Reason::Hybrid {
                    score: hit.score,
                    bm25: hit.bm25,
                    cosine: hit.cosine,
                    lexical_weight: hit.lexical_weight,
                    explanation: hit.bm25.and_then(|_| explainer.explain(hit.key)),
                },
                None => explainer.retrieved(hit.key, hit.score),
            };
            ranked.push((hit.key, relative_score(hit.score, best), reason));
        }
        let tools = ranked
            .into_iter()
            .filter_map(|(key, score, reason)| {
                let entry = tools_table.entry(key)?;
                let tokens = self.tokens_of(entry.record);
                SelectedTool::unranked(&entry, tokens, score, reason, Channel::Message)
            })
            .collect();
        Ok(tools)
    }

    /// Whether the ask channel searches `asks` on their own: two or more, at most
    /// `message.max_asks` (a task's description has its sentences as asks, searched when they
    /// are that few; otherwise its units say what it needs).
    pub(super) fn searches_asks(&self, asks: &[Ask<'_>]) -> bool {
        let m = &self.policy().message;
        m.per_ask > 0 && (2..=m.max_asks).contains(&asks.len())
    }

    /// What each ask the ask channel searches reads: its text, then what its hints add, each
    /// with its weight (as the message's own texts, [`push_with_hints`]); none when it searches
    /// none. Matched once for both the ask's BM25 search and, in hybrid retrieval, its
    /// embedding.
    pub(super) fn ask_texts<'m>(&'m self, asks: &[Ask<'m>]) -> Vec<Vec<(&'m str, f32)>> {
        if !self.searches_asks(asks) {
            return Vec::new();
        }
        asks.iter()
            .map(|ask| {
                let mut texts = Vec::new();
                push_with_hints(&mut texts, ask.text, 1.0, self.policy(), &self.hints);
                texts
            })
            .collect()
    }

    /// The best tools of each ask of a message of several ([`asks`]): a message that asks for
    /// two things ("refund the last payment and email her a receipt", "convert 20 liters to
    /// gallons. Then post the result on Twitter") names each in a clause, a sentence or a list
    /// item that the whole message's ranking (or a skill the message matches) outweighs. Each
    /// ask is searched alone (BM25 over its own terms; in hybrid retrieval, fused with the
    /// nearest tool vectors to the ask's, `dense`, one list an ask in the asks' order), and
    /// its best tool joins, with those after it up to `message.per_ask` that score within
    /// `message.min_relative_score` of it, if the ask's evidence is as clear as the message
    /// channel asks of a message (`message.min_evidence`, its best BM25 score per word; in
    /// hybrid retrieval, or its nearest tool's cosine `message.min_cosine`). No tool counts
    /// for two asks: an ask whose best another ask claims more strongly brings its next within
    /// that bar ([`distinct_picks`]). An ask that states rather than asks ("the customer got
    /// billed twice", [`Ask::request`]) brings nothing: its words are the others' context, in
    /// the message's search and (in hybrid retrieval) the message's vector, the mean of the
    /// asks'. In the asks' order, each tool once; empty unless
    /// [`Self::searches_asks`]. Labelled [`Channel::Message`], with a [`Reason::Ask`] that
    /// names the ask.
    pub(super) fn ask_channel<'a>(
        &self,
        snapshot: &'a Snapshot,
        asks: &[Ask<'_>],
        ask_texts: &[Vec<(&str, f32)>],
        dense: &[Vec<(&'a Arc<str>, f32)>],
        tools_table: RowLookup<'a, Tool>,
    ) -> Result<Vec<SelectedTool>, SelectError> {
        let p = self.policy();
        let m = &p.message;
        if ask_texts.len() != asks.len() {
            return Ok(Vec::new());
        }
        let hybrid = match p.retrieval {
            Retrieval::Hybrid(hybrid) if dense.len() == asks.len() => Some(hybrid),
            _ => None,
        };
        // An ask may cede its best to another ask (below): each ranks enough to go on.
        let wanted = m.per_ask * asks.len();
        let mut rankings: Vec<Vec<AskHit<'a>>> = Vec::with_capacity(asks.len());
        for (i, (ask, texts)) in asks.iter().zip(ask_texts).enumerate() {
            // A statement ("the customer got billed twice") brings no tool of its own.
            if !ask.request {
                rankings.push(Vec::new());
                continue;
            }
            let nearest = hybrid.zip(dense.get(i).map(Vec::as_slice));
            rankings.push(self.ask_ranking(snapshot, ask, texts, nearest, wanted)?);
        }
        let picks = distinct_picks(&rankings, m.per_ask);
        let mut out: Vec<SelectedTool> = Vec::new();
        for ((ask, ranked), picked) in asks.iter().zip(&rankings).zip(picks) {
            let best = ranked.first().map_or(0.0, |&(_, s, _)| s);
            let text: Arc<str> = Arc::from(ask.text);
            for at in picked {
                let Some(&(key, score, cosine)) = ranked.get(at) else {
                    continue;
                };
                let Some(entry) = tools_table.entry(key) else {
                    continue;
                };
                let why = Reason::Ask {
                    ask: Arc::clone(&text),
                    position: ask.position,
                    score,
                    cosine,
                };
                let tokens = self.tokens_of(entry.record);
                let relative = relative_score(score, best);
                out.extend(SelectedTool::unranked(
                    &entry,
                    tokens,
                    relative,
                    why,
                    Channel::Message,
                ));
            }
        }
        Ok(out)
    }

    /// One ask's ranking, (tool, score, cosine) best first, at most `wanted`: the
    /// [`Self::evident_ranking`] of its `texts` (the ask with what its hints add, "email her" a
    /// sent email, as the message) and, in hybrid retrieval, its `nearest` tool vectors.
    fn ask_ranking<'a>(
        &self,
        snapshot: &'a Snapshot,
        ask: &Ask<'_>,
        texts: &[(&str, f32)],
        nearest: Option<(HybridPolicy, &[ToolCosine<'a>])>,
        wanted: usize,
    ) -> Result<Vec<AskHit<'a>>, SelectError> {
        let query = weighted_terms(snapshot, &TOOLS, texts)?;
        let terms: Vec<(&str, f32)> = query.iter().collect();
        let words = word_count(ask.text);
        let ranking = self.evident_ranking(snapshot, &terms, words, nearest, wanted)?;
        Ok(ranking
            .unwrap_or_default()
            .into_iter()
            .map(|h| (h.key, h.score, h.cosine))
            .collect())
    }

    /// What the message channel and each ask read of a query of their own: its BM25 search
    /// over `terms` (a text of `words` words), fused in hybrid retrieval with the `nearest`
    /// tool vectors to it, at most `k`, best first, each within `message.min_relative_score`
    /// of the best. `None` when its evidence is too thin: its best BM25 score a word under
    /// `message.min_evidence` and, in hybrid retrieval, its nearest cosine under
    /// `message.min_cosine`. In lexical retrieval a hit's `bm25` is its score and its
    /// lexical weight 1.
    fn evident_ranking<'a>(
        &self,
        snapshot: &'a Snapshot,
        terms: &[(&str, f32)],
        words: usize,
        nearest: Option<(HybridPolicy, &[ToolCosine<'a>])>,
        k: usize,
    ) -> Result<Option<Vec<FusedHit<'a>>>, SelectError> {
        let m = &self.policy().message;
        let depth = nearest.map_or(k, |(h, _)| h.depth.max(k));
        let hashed = HashedQuery::new(terms);
        // The hits a tag filter turns away were reported by the conversation's search.
        let (hits, _filtered) = self.search_tools(snapshot, terms, &hashed, depth)?;
        drop(hashed);
        let words = words.max(1);
        let best_bm25 = hits.first().map_or(0.0, |h| h.score);
        let lexical_evidence = best_bm25 / words as f32 >= m.min_evidence;
        let mut ranked = match nearest {
            Some((policy, nearest)) => {
                let cosine = nearest.first().map_or(f32::NEG_INFINITY, |&(_, c)| c);
                if !lexical_evidence && cosine < m.min_cosine {
                    return Ok(None);
                }
                fuse(&hits, nearest.to_vec(), words, &policy, k)
            }
            None if lexical_evidence => hits
                .iter()
                .take(k)
                .map(|h| FusedHit {
                    key: h.key,
                    attachment: h.attachment,
                    score: h.score,
                    bm25: Some(h.score),
                    cosine: None,
                    lexical_weight: 1.0,
                })
                .collect(),
            None => return Ok(None),
        };
        let best = ranked.first().map_or(0.0, |h| h.score);
        ranked.retain(|h| h.score >= m.min_relative_score * best);
        Ok(Some(ranked))
    }

    /// The turn's own tools from its searches: the pinned ones, then the `message` channel's,
    /// then the `conversation` channel's (the message read with its history, at most
    /// `max_turn_tools` with the pinned ones, as [`Self::fill`] ranked them), within the
    /// token budget; a tool both bring is the message's, with the conversation's reasons after
    /// its own. The message's tools come on top of the conversation's: a turn selects at most
    /// [`Self::own_tools`] (`max_turn_tools + message.max_tools`, within `max_tools`). Then the
    /// `asks`' best tools that are not among them take the places of the conversation
    /// search's last ones (never a pinned tool, the message's, or one named, found or called),
    /// and rank after the rest: an ask's best never outranks the whole message's. Those the
    /// limits cut are reported in `dropped`. Each tool is labelled with
    /// the channel that brought it: without history (`reads_history` false) the conversation
    /// is the message alone. Returns the tools, ranked, and their tokens.
    pub(super) fn merge_channels(
        &self,
        message: Vec<SelectedTool>,
        asks: Vec<SelectedTool>,
        conversation: Vec<SelectedTool>,
        reads_history: bool,
        dropped: &mut Vec<Dropped>,
    ) -> (Vec<SelectedTool>, usize) {
        let p = self.policy();
        let from_message: HashSet<&str> = message.iter().map(|t| &*t.key).collect();
        let mut pinned = Vec::new();
        let mut rest = Vec::with_capacity(conversation.len());
        let mut message_reasons: Vec<(Arc<str>, Reasons)> = Vec::new();
        for mut tool in conversation {
            tool.channel = channel_of(&tool.reasons, reads_history);
            if tool.channel == Channel::Pinned {
                pinned.push(tool);
            } else if from_message.contains(&*tool.key) {
                message_reasons.push((Arc::clone(&tool.key), tool.reasons));
            } else {
                rest.push(tool);
            }
        }
        let pinned_keys: HashSet<Arc<str>> = pinned.iter().map(|t| Arc::clone(&t.key)).collect();
        // What an ask's best may take the place of: the conversation search's ranking (not
        // a name written in the message, a tool the model found or called).
        let searched: HashSet<Arc<str>> = rest
            .iter()
            .filter(|t| {
                !matches!(
                    t.reasons.first(),
                    Some(Reason::ExactName { .. } | Reason::Discovered | Reason::RecentlyUsed)
                )
            })
            .map(|t| Arc::clone(&t.key))
            .collect();
        let mut tools = pinned;
        let mut used: usize = tools.iter().map(|t| t.tokens).sum();
        let others = message
            .into_iter()
            .filter(|t| !pinned_keys.contains(&t.key))
            .map(|mut tool| {
                if let Some((_, more)) = message_reasons.iter().find(|(k, _)| *k == tool.key) {
                    // Without history both searched the message: the same reason once.
                    let mut reasons: Vec<Reason> = tool.reasons.to_vec();
                    reasons.extend(more.iter().filter(|r| !tool.reasons.contains(r)).cloned());
                    tool.reasons = Reasons::from(reasons);
                }
                tool
            })
            .chain(rest);
        let limit = self.own_tools();
        let mut cut = Vec::new();
        for tool in others {
            if tools.len() >= limit {
                cut.push((tool, DropReason::MaxTools { max: limit }));
                continue;
            }
            if let Some(reason) = past_budget(p.token_budget, used, tool.tokens) {
                cut.push((tool, reason));
                continue;
            }
            used += tool.tokens;
            tools.push(tool);
        }
        // The asks' tools not in yet take the conversation's last places.
        for ask in asks {
            if tools.iter().any(|t| t.key == ask.key) {
                continue;
            }
            while tools.len() >= limit || past_budget(p.token_budget, used, ask.tokens).is_some() {
                let Some(last) = tools.iter().rposition(|t| searched.contains(&*t.key)) else {
                    break;
                };
                let out = tools.remove(last);
                used -= out.tokens;
                cut.push((out, DropReason::MaxTools { max: limit }));
            }
            if tools.len() < limit && past_budget(p.token_budget, used, ask.tokens).is_none() {
                used += ask.tokens;
                tools.push(ask);
            }
        }
        for (tool, reason) in cut {
            // A tool the conversation's search cut and another channel brought is no near miss.
            if !tools.iter().any(|t| t.key == tool.key) {
                dropped.push(Dropped {
                    key: tool.key,
                    reason,
                    candidate: tool.reasons,
                });
            }
        }
        dropped.retain(|d| !tools.iter().any(|t| t.key == d.key));
        for (rank, tool) in tools.iter_mut().enumerate() {
            tool.rank = rank;
        }
        (tools, used)
    }
}

/// The channel a tool of the conversation's search came by, from its strongest reason.
fn channel_of(reasons: &Reasons, reads_history: bool) -> Channel {
    match reasons.first() {
        Some(Reason::Pinned | Reason::PinnedSkill { .. }) => Channel::Pinned,
        Some(Reason::ExactName { .. }) => Channel::Message,
        Some(Reason::Discovered | Reason::RecentlyUsed) => Channel::Conversation,
        Some(Reason::Fallback) => Channel::All,
        _ if reads_history => Channel::Conversation,
        Some(Reason::Skill { .. } | Reason::DependencyOf { .. }) => Channel::Skill,
        _ => Channel::Message,
    }
}

/// A tool and its vector's cosine to an ask's, from the nearest tool vectors.
type ToolCosine<'a> = (&'a Arc<str>, f32);

/// One tool of an ask's ranking: the tool, its score and (in hybrid retrieval) its cosine.
type AskHit<'a> = (&'a Arc<str>, f32, Option<f32>);

/// Which tools each ask brings, given each ask's ranking (tool first, its score second; best
/// first, all within the bar): up to `per_ask` an ask, no tool for two asks. Two asks name two
/// things, so when two rank the same tool first ("run the linter" and "commit it all as
/// 'lint + fmt'" both rank the linter first), the one that loses less by going on to its next
/// tool (the smaller drop in relative score) does. Greedy: the strongest claim first (the
/// highest relative score, then the largest drop to the ask's next free tool, then the
/// earlier ask), which leaves the result independent of the asks' order but for exact ties.
/// Returns, for each ask, the positions of its picks in its ranking, best first.
fn distinct_picks<K: PartialEq, E>(
    rankings: &[Vec<(K, f32, E)>],
    per_ask: usize,
) -> Vec<Vec<usize>> {
    let mut picks: Vec<Vec<usize>> = vec![Vec::new(); rankings.len()];
    let mut claimed: Vec<&K> = Vec::new();
    loop {
        // (ask, position, relative score, drop to the ask's next free tool)
        let mut strongest: Option<(usize, usize, f32, f32)> = None;
        for (a, ranked) in rankings.iter().enumerate() {
            if picks[a].len() >= per_ask {
                continue;
            }
            let best = ranked.first().map_or(0.0, |r| r.1);
            let mut free = (0..ranked.len()).filter(|&i| !claimed.contains(&&ranked[i].0));
            let Some(at) = free.next() else {
                continue;
            };
            let score = relative_score(ranked[at].1, best);
            let drop = score
                - free
                    .next()
                    .map_or(0.0, |i| relative_score(ranked[i].1, best));
            if strongest.is_none_or(|(_, _, s, d)| (score, drop) > (s, d)) {
                strongest = Some((a, at, score, drop));
            }
        }
        let Some((a, at, ..)) = strongest else {
            return picks;
        };
        claimed.push(&rankings[a][at].0);
        picks[a].push(at);
    }
}

#[cfg(test)]
mod tests {
    use super::distinct_picks;

    #[test]
    fn an_ask_cedes_a_shared_best_when_it_loses_less() {
        // "run the linter with autofix" / "then commit it all as 'lint + fmt'"
        let lint = vec![("linter", 17.9, ()), ("tests", 3.5, ())];
        let commit = vec![("linter", 6.2, ()), ("commit", 5.5, ())];
        assert_eq!(
            distinct_picks(&[lint.clone(), commit.clone()], 1),
            [vec![0], vec![1]]
        );
        // The asks' order does not decide it.
        assert_eq!(distinct_picks(&[commit, lint], 1), [vec![1], vec![0]]);
    }

    #[test]
    fn distinct_bests_are_kept_and_an_ask_with_nothing_free_brings_nothing() {
        let a = vec![("refund", 8.0, ()), ("charges", 7.0, ())];
        let b = vec![("send", 4.0, ())];
        let c = vec![("send", 2.0, ())];
        assert_eq!(
            distinct_picks(&[a.clone(), b.clone()], 1),
            [vec![0], vec![0]]
        );
        // b and c rank one tool each, the same: one of them has it (b, the earlier, on a tie).
        assert_eq!(distinct_picks(&[b, c], 1), [vec![0], vec![]]);
        assert_eq!(distinct_picks(&[a], 2), [vec![0, 1]]);
    }
}
