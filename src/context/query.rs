//! Turning a turn into weighted query terms, and finding tool names written in the message.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::Tool;
use crate::store::{Record, Snapshot, StoreError, Table};
use crate::tables::TOOLS;

use super::policy::SelectionPolicy;
use super::turn::Turn;

/// The texts that feed the query, each with its weight: the message (1), earlier user messages
/// (decaying with age) and the names of recently used tools.
pub(crate) fn weighted_texts<'t>(turn: &'t Turn, policy: &SelectionPolicy) -> Vec<(&'t str, f32)> {
    let mut texts = vec![(turn.message.as_str(), 1.0)];
    let mut weight = 1.0;
    for earlier in turn.history.iter().rev().take(policy.history_turns) {
        weight *= policy.history_decay;
        if weight > 0.0 {
            texts.push((earlier.as_str(), weight));
        }
    }
    if policy.recent_tool_weight > 0.0 {
        for tool in &turn.recent_tools {
            // The bare name carries the meaning; the source is a server's name.
            let name = tool.rsplit('/').next().unwrap_or(tool);
            texts.push((name, policy.recent_tool_weight));
        }
    }
    texts
}

/// Tokenizes weighted texts with `table`'s tokenizer and sums the weights per term, in term
/// order (so the query, and every score, is deterministic).
pub(crate) fn weighted_terms<R: Record>(
    snapshot: &Snapshot,
    table: &Table<R>,
    texts: &[(&str, f32)],
) -> Result<Vec<(String, f32)>, StoreError> {
    let mut terms: BTreeMap<String, f32> = BTreeMap::new();
    for (text, weight) in texts {
        for term in snapshot.tokenize(table, text)? {
            *terms.entry(term).or_default() += weight;
        }
    }
    Ok(terms.into_iter().collect())
}

/// Characters that end a mention in prose but are never part of a tool name's ends.
const TRIM: &[char] = &[
    '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', '.', ';', ':', '!', '?', '*',
];

/// A tool named in a message.
pub(crate) struct Mention {
    /// The words that named it.
    pub text: String,
    pub key: Arc<str>,
    pub tool: Arc<Tool>,
}

/// Tool names written in `message`: a qualified name (`github/search`) anywhere, or a bare name
/// that looks like an identifier (`get_weather`, `getWeather`, `v2-fetch`) or is written in
/// backticks. A plain word such as `search` does not count, or every tool named like an English
/// verb would be "mentioned" by ordinary prose.
pub(crate) fn exact_mentions(
    snapshot: &Snapshot,
    message: &str,
) -> Result<Vec<Mention>, StoreError> {
    let mut found = Vec::new();
    for raw in message.split_whitespace() {
        let quoted = raw.starts_with('`');
        let word = raw.trim_matches(TRIM);
        if word.is_empty() {
            continue;
        }
        if word.contains('/') {
            if let Some(tool) = snapshot.get_arc(&TOOLS, word)? {
                found.push(Mention {
                    text: word.to_string(),
                    key: Arc::from(word),
                    tool,
                });
            }
            continue;
        }
        if !(quoted || looks_like_identifier(word)) {
            continue;
        }
        for (key, _) in snapshot.by_index(&TOOLS, "name", word)? {
            if let Some(tool) = snapshot.get_arc(&TOOLS, key)? {
                found.push(Mention {
                    text: word.to_string(),
                    key: Arc::clone(key),
                    tool,
                });
            }
        }
    }
    Ok(found)
}

fn looks_like_identifier(word: &str) -> bool {
    let inner_upper =
        word.chars().skip(1).any(char::is_uppercase) && word.chars().any(char::is_lowercase);
    word.contains('_')
        || word.contains('-')
        || word.chars().any(|c| c.is_ascii_digit())
        || inner_upper
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_shapes() {
        for yes in ["get_weather", "getWeather", "v2-fetch", "s3"] {
            assert!(looks_like_identifier(yes), "{yes}");
        }
        for no in ["search", "Search", "URL", "weather"] {
            assert!(!looks_like_identifier(no), "{no}");
        }
    }

    #[test]
    fn history_decays_and_is_bounded() {
        let policy = SelectionPolicy {
            history_turns: 2,
            history_decay: 0.5,
            recent_tool_weight: 0.25,
            ..SelectionPolicy::default()
        };
        let turn = Turn::new("c")
            .with_history(["a", "b", "b2"])
            .with_recent_tools(["fs/read_file"]);
        assert_eq!(
            weighted_texts(&turn, &policy),
            [("c", 1.0), ("b2", 0.5), ("b", 0.25), ("read_file", 0.25)]
        );
    }
}
