//! Estimating how many tokens a tool definition costs in a request.

use crate::tools::Tool;

use super::selection::DropReason;

/// Bytes per token, the usual rule of thumb for English text and JSON with BPE tokenizers.
const BYTES_PER_TOKEN: usize = 4;

/// Bytes of JSON framing around name, description and schema in a provider's tool entry.
const FRAMING_BYTES: usize = 40;

/// Estimated tokens of `tool`'s definition as sent to a model: name, description and input
/// schema, at four bytes a token. An estimate, not a tokenizer: good for budgets, not billing.
///
/// ```
/// use capstore::context::estimate_tokens;
/// use capstore::Tool;
/// let small = estimate_tokens(&Tool::new("a", "b"));
/// let large = estimate_tokens(&Tool::new("a", "b".repeat(400)));
/// assert!(large >= small + 100);
/// ```
pub fn estimate_tokens(tool: &Tool) -> usize {
    let schema = tool.input_schema.as_str().len();
    (tool.name.len() + tool.description.len() + schema + FRAMING_BYTES).div_ceil(BYTES_PER_TOKEN)
}

/// Why a tool of `needed` tokens is left out when `used` tokens of the policy's `budget` are
/// spent: [`DropReason::TokenBudget`] if it would pass the budget, `None` if it fits (or there
/// is no budget).
pub(super) fn past_budget(budget: Option<usize>, used: usize, needed: usize) -> Option<DropReason> {
    let budget = budget?;
    (used + needed > budget).then(|| DropReason::TokenBudget {
        needed,
        remaining: budget.saturating_sub(used),
    })
}
