//! The English stop-word list.
//!
//! DESIGN.md measured that ~80% of the postings a tool-selection query touches come from ~60
//! function words; dropping them cuts a query's work about 5× and removes noise from the
//! ranking. The list holds function words only (articles, pronouns, auxiliaries, prepositions,
//! conjunctions, politeness), never domain words such as `get`, `list`, `file`, `search` or
//! `new`, which name what tools do. `s` and `t` are the pieces identifier splitting leaves of
//! English contractions and possessives (`user's`, `don't`).

/// The stop words, lower-case and sorted (so that lookups can binary-search).
///
/// ```
/// use capstore::bm25::STOP_WORDS;
///
/// assert!(STOP_WORDS.contains(&"the"));
/// assert!(!STOP_WORDS.contains(&"weather"));
/// assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
/// ```
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "please",
    "s", "should", "so", "some", "such", "t", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "where",
    "which", "who", "will", "with", "would", "you", "your",
];

/// Whether `token` (already lower-case) is in [`STOP_WORDS`].
pub(crate) fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_and_unique_so_binary_search_works() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
            assert_eq!(*w, w.to_lowercase());
        }
    }

    #[test]
    fn domain_words_are_not_stop_words() {
        for w in [
            "get", "list", "file", "search", "new", "weather", "send", "create", "us",
        ] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn about_sixty_function_words() {
        assert!(
            (55..=80).contains(&STOP_WORDS.len()),
            "{}",
            STOP_WORDS.len()
        );
    }
}
