//! The companion channel: the tools a turn's tools need first, declared
//! ([`Tool::requires`](crate::Tool::requires)) or learned from the agent's calls
//! ([`usage`](crate::usage)), come with them ([the module's docs](super#companions)).

use std::collections::HashSet;
use std::sync::Arc;

use crate::store::{Entry, RowLookup, Snapshot};
use crate::tools::Tool;
use crate::usage::USAGE;

use super::budget::past_budget;
use super::builder::ContextBuilder;
use super::error::SelectError;
use super::selection::{Channel, Reason, Reasons, SelectedTool};

/// A companion found for one of the turn's tools, before the channel's limit.
struct Found<'a> {
    entry: Entry<'a, Tool>,
    /// Declared ones come first; then the learned, by share of the turns (higher first).
    declared: bool,
    share: f32,
    /// The rank of the turn's tool that brought it.
    bringer: usize,
    reason: Reason,
}

impl ContextBuilder {
    /// The companions of the turn's own tools `needed` (ranked, as
    /// [`Self::merge_channels`] gave them, `tokens` in all): for each, the tools it requires
    /// and those the agent called with it in at least `companions.min_share` of its turns
    /// (and `companions.min_turns` of them), not already among `needed`, passing the tag
    /// filters; at most `companions.max_tools`, declared first, then by share, within the
    /// token budget. Best first; labelled [`Channel::Companion`]. Empty when nothing is
    /// declared and nothing learned: then the selection is what it was without this channel.
    pub(super) fn companions<'a>(
        &self,
        snapshot: &'a Snapshot,
        needed: &[SelectedTool],
        tokens: usize,
        tools_table: RowLookup<'a, Tool>,
    ) -> Result<Vec<SelectedTool>, SelectError> {
        let p = &self.policy().companions;
        let declares = needed.iter().any(|t| !t.tool.requires.is_empty());
        if p.max_tools == 0 || needed.is_empty() || (!declares && snapshot.count(&USAGE)? == 0) {
            return Ok(Vec::new());
        }
        let usage = snapshot.lookup(&USAGE)?;
        let taken: HashSet<&str> = needed.iter().map(|t| &*t.key).collect();
        let mut found: Vec<Found<'a>> = Vec::new();
        let offer = |found: &mut Vec<Found<'a>>, candidate: Found<'a>| {
            if taken.contains(&**candidate.entry.key)
                || self.tag_filter(candidate.entry.record).is_some()
            {
                return;
            }
            match found
                .iter_mut()
                .find(|f| f.entry.key == candidate.entry.key)
            {
                // The stronger evidence speaks for it.
                Some(known) => {
                    if (candidate.declared, candidate.share) > (known.declared, known.share) {
                        *known = candidate;
                    }
                }
                None => found.push(candidate),
            }
        };
        for (bringer, tool) in needed.iter().enumerate() {
            for name in &tool.tool.requires {
                if let Some(entry) = required_entry(tools_table, &tool.tool, name) {
                    let reason = Reason::Required {
                        by: Arc::clone(&tool.key),
                    };
                    let declared = true;
                    offer(
                        &mut found,
                        Found {
                            entry,
                            declared,
                            share: 1.0,
                            bringer,
                            reason,
                        },
                    );
                }
            }
            let Some(row) = usage.entry(&tool.key) else {
                continue;
            };
            let turns = row.record.turns;
            for c in &row.record.companions {
                let share = if turns == 0 {
                    0.0
                } else {
                    c.together as f32 / turns as f32
                };
                if c.together < p.min_turns || share < p.min_share {
                    continue;
                }
                let Some(entry) = tools_table.entry(&c.tool) else {
                    continue;
                };
                let reason = Reason::Companion {
                    of: Arc::clone(&tool.key),
                    together: c.together,
                    before: c.before,
                    turns,
                };
                offer(
                    &mut found,
                    Found {
                        entry,
                        declared: false,
                        share,
                        bringer,
                        reason,
                    },
                );
            }
        }
        found.sort_by(|a, b| {
            b.declared
                .cmp(&a.declared)
                .then(b.share.total_cmp(&a.share))
                .then(a.bringer.cmp(&b.bringer))
                .then_with(|| a.entry.key.cmp(b.entry.key))
        });
        let budget = self.policy().token_budget;
        // Within the list's length too: a turn never sends more than `max_tools`.
        let limit = p
            .max_tools
            .min(self.policy().max_tools.saturating_sub(needed.len()));
        let mut used = tokens;
        let mut out = Vec::with_capacity(limit.min(found.len()));
        for f in found {
            if out.len() >= limit {
                break;
            }
            let tool_tokens = self.tokens_of(f.entry.record);
            if past_budget(budget, used, tool_tokens).is_some() {
                continue;
            }
            let Some(tool) = f.entry.shared() else {
                continue;
            };
            used += tool_tokens;
            out.push(SelectedTool {
                key: Arc::clone(f.entry.key),
                tool,
                rank: needed.len() + out.len(),
                score: f.share,
                reasons: Reasons::one(f.reason),
                channel: Channel::Companion,
                tokens: tool_tokens,
            });
        }
        Ok(out)
    }
}

/// The tool `name` that `tool` requires: the key as written, or, for a bare name, the tool of
/// that name in `tool`'s own source first.
fn required_entry<'a>(
    tools_table: RowLookup<'a, Tool>,
    tool: &Tool,
    name: &str,
) -> Option<Entry<'a, Tool>> {
    if !name.contains('/')
        && let Some(source) = &tool.source
        && let Some(entry) = tools_table.entry(&format!("{source}/{name}"))
    {
        return Some(entry);
    }
    tools_table.entry(name)
}
