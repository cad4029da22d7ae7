//! The tool list across turns: last turn's list carried on, the turn's new tools appended, and
//! a re-pack by staleness when the tools that may make room outgrow the policy's limits (the
//! cache model: [the module's docs](super#the-tool-list-across-turns)).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::store::RowLookup;
use crate::tools::Tool;

use super::budget::past_budget;
use super::builder::ContextBuilder;
use super::selection::{Channel, DropReason, Dropped, Reason, Reasons, SelectedTool};
use super::turn::PreviousTool;

/// A place in the list being built.
enum Slot {
    /// The turn's own tool: never evicted.
    Needed(SelectedTool),
    /// Carried from last turn's list, unneeded for `idle` turns counting this one.
    Carried { tool: SelectedTool, idle: u32 },
}

impl Slot {
    fn tool(&self) -> &SelectedTool {
        match self {
            Slot::Needed(tool) | Slot::Carried { tool, .. } => tool,
        }
    }
}

impl ContextBuilder {
    /// The list to send: `previous` in its order (a tool the turn needs takes its place there
    /// with this turn's reasons; one gone from the store or now turned away by the tag filters
    /// leaves), then the turn's other `needed` tools (ranked, as
    /// [`Self::merge_channels`] gave them) at the end.
    ///
    /// Only some of those new tools may make room for themselves: the pinned ones, the
    /// message's, those the model found with `search_tools` or called lately, and the best
    /// `repack_for_conversation` of the conversation channel's search hits. The conversation's
    /// other hits fill the room the list has left and are reported past it as
    /// [`DropReason::ListFull`] or [`DropReason::TokenBudget`]. When the tools that may make
    /// room do not fit, the list takes all the turn's tools and is re-packed
    /// ([`Self::repack`]). Evicted and filtered tools are reported in `dropped`. Returns the
    /// list and its tokens.
    pub(super) fn carry_over(
        &self,
        needed: Vec<SelectedTool>,
        previous: &[PreviousTool],
        tools_table: RowLookup<'_, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> (Vec<SelectedTool>, usize) {
        let p = self.policy();
        let (mut list, new) = self.carry_previous(needed, previous, tools_table, dropped);
        // The conversation's search hits past its best few only fill; what the model found
        // with `search_tools` or called lately may make room like the message's tools.
        let mut searched = 0;
        let (may_make_room, fill): (Vec<SelectedTool>, Vec<SelectedTool>) =
            new.into_iter().partition(|tool| {
                let asked = matches!(
                    tool.reasons.first(),
                    Some(Reason::Discovered | Reason::RecentlyUsed)
                );
                tool.channel != Channel::Conversation || asked || {
                    searched += 1;
                    searched <= p.repack_for_conversation
                }
            });
        list.extend(may_make_room.into_iter().map(Slot::Needed));
        let mut count = list.len();
        let mut total: usize = list.iter().map(|s| s.tool().tokens).sum();
        if count <= p.max_tools && !self.over_budget(total, 1.0) {
            for tool in fill {
                if let Some(reason) = self.full_for(&tool, count, total) {
                    dropped.push(Dropped {
                        key: tool.key,
                        reason,
                        candidate: tool.reasons,
                    });
                    continue;
                }
                count += 1;
                total += tool.tokens;
                list.push(Slot::Needed(tool));
            }
        } else {
            total += fill.iter().map(|t| t.tokens).sum::<usize>();
            list.extend(fill.into_iter().map(Slot::Needed));
            total = self.repack(&mut list, total, dropped);
        }

        // Carried tools rank after the turn's own, in list order.
        let mut next_rank = list.iter().filter(|s| matches!(s, Slot::Needed(_))).count();
        let tools: Vec<SelectedTool> = list
            .into_iter()
            .map(|slot| match slot {
                Slot::Needed(tool) => tool,
                Slot::Carried { mut tool, .. } => {
                    tool.rank = next_rank;
                    next_rank += 1;
                    tool
                }
            })
            .collect();
        (tools, total)
    }

    /// Last turn's list in its order, a tool the turn needs in its place there, and the turn's
    /// other `needed` tools, in their order: what [`Self::carry_over`] appends.
    fn carry_previous(
        &self,
        needed: Vec<SelectedTool>,
        previous: &[PreviousTool],
        tools_table: RowLookup<'_, Tool>,
        dropped: &mut Vec<Dropped>,
    ) -> (Vec<Slot>, Vec<SelectedTool>) {
        let mut needed: Vec<Option<SelectedTool>> = needed.into_iter().map(Some).collect();
        let position: HashMap<Arc<str>, usize> = needed
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (Arc::clone(&t.key), i)))
            .collect();
        let mut list: Vec<Slot> = Vec::with_capacity(previous.len() + needed.len());
        // A name listed twice is carried once, in its first place.
        let mut carried: HashSet<&str> = HashSet::with_capacity(previous.len());
        for kept in previous {
            if let Some(&i) = position.get(kept.key.as_str()) {
                if let Some(tool) = needed.get_mut(i).and_then(Option::take) {
                    list.push(Slot::Needed(tool));
                }
                continue;
            }
            if !carried.insert(kept.key.as_str()) {
                continue;
            }
            let Some(entry) = tools_table.entry(&kept.key) else {
                continue;
            };
            if let Some(reason) = self.tag_filter(entry.record) {
                dropped.push(Dropped {
                    key: Arc::clone(entry.key),
                    reason,
                    candidate: Reasons::one(Reason::KeptFromLastTurn),
                });
                continue;
            }
            let Some(tool) = entry.shared() else {
                continue;
            };
            let tokens = self.tokens_of(entry.record);
            let idle = kept.idle_turns.saturating_add(1);
            list.push(Slot::Carried {
                tool: SelectedTool {
                    key: Arc::clone(entry.key),
                    tool,
                    rank: 0,
                    score: 0.0,
                    reasons: Reasons::one(Reason::KeptFromLastTurn),
                    channel: Channel::Kept { idle_turns: idle },
                    tokens,
                },
                idle,
            });
        }
        (list, needed.into_iter().flatten().collect())
    }

    /// Re-packs a `list` of `total` tokens grown past `max_tools` or the token budget: carried
    /// tools are evicted, stalest first (ties: the later in the list first, which keeps more
    /// of the prefix), until a whole turn's tools ([`Self::own_tools`], and the same share of
    /// the token budget) fit again, so that the next turns can append without another
    /// re-pack. The turn's own tools stay. Returns the tokens left.
    fn repack(&self, list: &mut Vec<Slot>, mut total: usize, dropped: &mut Vec<Dropped>) -> usize {
        let p = self.policy();
        let room = p.max_tools.saturating_sub(self.own_tools());
        let share = room as f64 / p.max_tools.max(1) as f64;
        let mut count = list.len();
        // Stalest first; among equally stale, the later in the list first.
        let mut order: Vec<(u32, usize)> = list
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Slot::Carried { idle, .. } => Some((*idle, i)),
                Slot::Needed(_) => None,
            })
            .collect();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut evicted = vec![false; list.len()];
        for (idle, i) in order {
            if count <= room && !self.over_budget(total, share) {
                break;
            }
            let (Some(slot), Some(out)) = (list.get(i), evicted.get_mut(i)) else {
                continue;
            };
            let tool = slot.tool();
            *out = true;
            count -= 1;
            total -= tool.tokens;
            dropped.push(Dropped {
                key: Arc::clone(&tool.key),
                reason: DropReason::Stale { idle_turns: idle },
                candidate: Reasons::one(Reason::KeptFromLastTurn),
            });
        }
        let mut evicted = evicted.into_iter();
        list.retain(|_| !evicted.next().unwrap_or(false));
        total
    }

    /// Why a list of `count` tools and `total` tokens has no room for `tool`, the limit it
    /// would pass (`max_tools` first, then the token budget); `None` if it fits.
    fn full_for(&self, tool: &SelectedTool, count: usize, total: usize) -> Option<DropReason> {
        let p = self.policy();
        if count >= p.max_tools {
            return Some(DropReason::ListFull {
                max_tools: p.max_tools,
            });
        }
        past_budget(p.token_budget, total, tool.tokens)
    }

    /// Whether `total` tokens are over `share` of the policy's token budget (never without one).
    fn over_budget(&self, total: usize, share: f64) -> bool {
        self.policy()
            .token_budget
            .is_some_and(|budget| total as f64 > budget as f64 * share)
    }
}
