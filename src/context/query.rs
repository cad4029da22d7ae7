//! Turning a turn into weighted query terms, and finding tool names written in the message.

use crate::Tool;
use crate::store::{Entry, Record, Snapshot, StoreError, Table};
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
    let mut terms: Vec<(String, f32)> = Vec::new();
    for (text, weight) in texts {
        terms.extend(
            snapshot
                .tokenize(table, text)?
                .into_iter()
                .map(|t| (t, *weight)),
        );
    }
    // A stable sort keeps a term's occurrences in the order met, so its weights add up in that
    // order, as they did into a map.
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    terms.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
    Ok(terms)
}

/// Characters that end a mention in prose but are never part of a tool name's ends.
const TRIM: &[char] = &[
    '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', '.', ';', ':', '!', '?', '*',
];

/// A tool named in a message.
pub(crate) struct Mention<'a> {
    /// The words that named it.
    pub text: &'a str,
    pub entry: Entry<'a, Tool>,
}

/// Tool names written in `message`: a qualified name (`github/search`) anywhere, or a bare name
/// that looks like an identifier (`get_weather`, `getWeather`, `v2-fetch`) or is written in
/// backticks. A plain word such as `search` does not count, or every tool named like an English
/// verb would be "mentioned" by ordinary prose.
pub(crate) fn exact_mentions<'a>(
    snapshot: &'a Snapshot,
    message: &'a str,
) -> Result<Vec<Mention<'a>>, StoreError> {
    let mut found = Vec::new();
    for raw in message.split_whitespace() {
        let quoted = raw.starts_with('`');
        let word = raw.trim_matches(TRIM);
        if word.is_empty() {
            continue;
        }
        if word.contains('/') {
            if let Some(entry) = snapshot.entry(&TOOLS, word)? {
                found.push(Mention { text: word, entry });
            }
            continue;
        }
        if !(quoted || looks_like_identifier(word)) {
            continue;
        }
        for (key, _) in snapshot.by_index(&TOOLS, "name", word)? {
            if let Some(entry) = snapshot.entry(&TOOLS, key)? {
                found.push(Mention { text: word, entry });
            }
        }
    }
    Ok(found)
}

fn looks_like_identifier(word: &str) -> bool {
    // One pass: an underscore, a hyphen or a digit anywhere, or an upper-case letter after the
    // first character in a word that has lower-case letters too (`getWeather`, not `URL`).
    let mut inner_upper = false;
    let mut lower = false;
    for (i, c) in word.char_indices() {
        if c == '_' || c == '-' || c.is_ascii_digit() {
            return true;
        }
        inner_upper |= i > 0 && c.is_uppercase();
        lower |= c.is_lowercase();
    }
    inner_upper && lower
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_shapes() {
        for yes in ["get_weather", "getWeather", "v2-fetch", "s3", "xY", "éÉ"] {
            assert!(looks_like_identifier(yes), "{yes}");
        }
        for no in ["search", "Search", "URL", "weather", "Ab", "ÉTÉ", ""] {
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
