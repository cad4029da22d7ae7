//! Turning a turn into weighted query terms, and finding tool names written in the message.

use std::cell::Cell;
use std::sync::Arc;

use crate::bm25::{KEEP_UP_TO, put_back, take_from};
use crate::store::{Entry, Record, Snapshot, StoreError, Table};
use crate::tools::{TOOLS, Tool};

use super::hints::HintMatcher;
use super::policy::SelectionPolicy;
use super::query_terms::QueryTerms;
use super::turn::Turn;

/// What a request's units are found by ([`units`](super::units)): the message's own query
/// (the message and its hints' terms), its words, and hybrid retrieval's nearest tool vectors
/// to it.
pub(super) struct MessageView<'q, 'a> {
    pub terms: &'q [(&'q str, f32)],
    /// The message's words, which only hybrid fusion reads: counted with `dense` only.
    pub words: usize,
    pub dense: Option<&'q [(&'a Arc<str>, f32)]>,
}

/// The texts that feed the query, each with its weight: the message (1) and the terms its
/// hints add ([`HintPolicy`](super::HintPolicy)), earlier user messages and their hints
/// (decaying with age), and the names of recently used tools. Also returns how many of the
/// first texts are the message's own (the message and its hints: the message channel's query).
/// `hints`: the policy's hint tables, read.
pub(crate) fn weighted_texts<'t>(
    turn: &'t Turn,
    policy: &'t SelectionPolicy,
    hints: &HintMatcher,
) -> (Vec<(&'t str, f32)>, usize) {
    let mut texts = Vec::new();
    push_with_hints(&mut texts, &turn.message, 1.0, policy, hints);
    let own = texts.len();
    let mut weight = 1.0;
    for earlier in turn.history.iter().rev().take(policy.history_turns) {
        weight *= policy.history_decay;
        if weight > 0.0 {
            push_with_hints(&mut texts, earlier, weight, policy, hints);
        }
    }
    if policy.recent_tool_weight > 0.0 {
        for tool in &turn.recent_tools {
            // The bare name carries the meaning; the source is a server's name.
            texts.push((crate::tools::bare_name(tool), policy.recent_tool_weight));
        }
    }
    (texts, own)
}

/// Pushes `text` with `weight` onto `texts`, then the terms its hints add (`weight` times the
/// hints' weight): a message, an earlier one, or one ask of a message.
pub(super) fn push_with_hints<'t>(
    texts: &mut Vec<(&'t str, f32)>,
    text: &'t str,
    weight: f32,
    policy: &'t SelectionPolicy,
    hints: &HintMatcher,
) {
    texts.push((text, weight));
    for hint in hints.hints(&policy.hints, text) {
        texts.push((hint.terms, weight * policy.hints.weight));
    }
}

/// Tokenizes weighted texts with `table`'s tokenizer and sums the weights per term, in term
/// order (so the query, and every score, is deterministic). The terms share one buffer.
pub(crate) fn weighted_terms<R: Record>(
    snapshot: &Snapshot,
    table: &Table<R>,
    texts: &[(&str, f32)],
) -> Result<QueryTerms, StoreError> {
    with_term_scratch(|TermScratch { ends, terms }| {
        weighted_terms_in(snapshot, table, texts, ends, terms)
    })
}

/// [`weighted_terms`], in the buffers of a [`TermScratch`].
fn weighted_terms_in<R: Record>(
    snapshot: &Snapshot,
    table: &Table<R>,
    texts: &[(&str, f32)],
    ends: &mut Vec<usize>,
    terms: &mut Vec<(u64, usize, usize, f32)>,
) -> Result<QueryTerms, StoreError> {
    let mut buf = String::new();
    // (the term's first 8 bytes as a big-endian integer, start, end, weight): most terms
    // differ in their first bytes, and comparing those as one integer is a fraction of
    // comparing the strings.
    for (text, weight) in texts {
        let mut start = buf.len();
        ends.clear();
        snapshot.tokenize_flat(table, text, &mut buf, ends)?;
        let bytes = buf.as_bytes();
        terms.extend(ends.iter().map(|&end| {
            let term = bytes.get(start..end).unwrap_or_default();
            let mut head = [0u8; 8];
            let n = term.len().min(8);
            head[..n].copy_from_slice(&term[..n]);
            let entry = (u64::from_be_bytes(head), start, end, *weight);
            start = end;
            entry
        }));
    }
    let bytes = buf.as_bytes();
    let text = |&(_, start, end, _): &(u64, usize, usize, f32)| bytes.get(start..end);
    // The heads order as the strings do (a string that is a prefix of another has zeros where
    // the other has bytes); equal heads fall back to the strings.
    let order = |a: &(u64, usize, usize, f32), b: &(u64, usize, usize, f32)| {
        a.0.cmp(&b.0).then_with(|| text(a).cmp(&text(b)))
    };
    // A stable sort keeps a term's occurrences in the order met, so its weights add up in that
    // order, as they did into a map. When every text weighs the same (a lone message, the
    // usual case), equal terms are equal entries and any order sums alike: an unstable sort,
    // without the stable one's set-up, will do.
    if texts
        .windows(2)
        .all(|w| w[0].1.to_bits() == w[1].1.to_bits())
    {
        terms.sort_unstable_by(order);
    } else {
        terms.sort_by(order);
    }
    terms.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && text(later) == text(kept);
        if same {
            kept.3 += later.3;
        }
        same
    });
    let terms = terms
        .iter()
        .map(|&(_, start, end, weight)| (start, end, weight))
        .collect();
    Ok(QueryTerms::from_buffer(buf, terms))
}

/// [`weighted_terms`]' working buffers, reused across selections on each thread: allocating
/// them was two of a selection's dozen allocations.
#[derive(Default)]
struct TermScratch {
    /// Each term's end in the text buffer.
    ends: Vec<usize>,
    /// Each term's sort key, place and weight.
    terms: Vec<(u64, usize, usize, f32)>,
}

thread_local! {
    static TERM_SCRATCH: Cell<TermScratch> = const {
        Cell::new(TermScratch { ends: Vec::new(), terms: Vec::new() })
    };
}

/// Runs `f` on this thread's [`TermScratch`] (or on fresh buffers, if it is in use).
fn with_term_scratch<T>(f: impl FnOnce(&mut TermScratch) -> T) -> T {
    let mut scratch = take_from(&TERM_SCRATCH);
    let result = f(&mut scratch);
    // Grown past the bound (a huge message): freed, not kept.
    if scratch.ends.capacity().max(scratch.terms.capacity()) <= KEEP_UP_TO {
        scratch.ends.clear();
        scratch.terms.clear();
        put_back(&TERM_SCRATCH, scratch);
    }
    result
}

/// Whether a byte is one of the characters that end a mention in prose but are never part of a
/// tool name's ends: quotes, brackets and sentence punctuation, all ASCII.
fn is_trim_byte(b: u8) -> bool {
    matches!(
        b,
        b'"' | b'\''
            | b'`'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'<'
            | b'>'
            | b','
            | b'.'
            | b';'
            | b':'
            | b'!'
            | b'?'
            | b'*'
    )
}

/// `raw` without the [`is_trim_byte`] characters at either end. Over bytes, which is exact for
/// any text: those characters are ASCII, and the byte at a cut (the first or last one kept) is
/// never in the middle of a character, since no byte of a multi-byte character is ASCII.
fn trim_mention(raw: &str) -> &str {
    let bytes = raw.as_bytes();
    let start = bytes
        .iter()
        .position(|&b| !is_trim_byte(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| !is_trim_byte(b))
        .map_or(start, |i| i + 1);
    raw.get(start..end).unwrap_or_default()
}

/// How a word of a message may name a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Named {
    /// A qualified name (`github/search`): looked up by key.
    Qualified,
    /// A bare name that looks like an identifier or is in backticks: looked up by tool name.
    Bare,
}

/// The word `raw` (a run of non-white-space characters of the message) may name a tool as
/// returned: trimmed of prose punctuation, then qualified if it holds a `/`, else bare if it is
/// in backticks or looks like an identifier.
fn mention_word(raw: &str) -> Option<(&str, Named)> {
    let quoted = raw.starts_with('`');
    let word = trim_mention(raw);
    if word.is_empty() {
        None
    } else if word.contains('/') {
        Some((word, Named::Qualified))
    } else if quoted || looks_like_identifier(word) {
        Some((word, Named::Bare))
    } else {
        None
    }
}

/// Calls `word` with each word of `message` that may name a tool ([`mention_word`]), in
/// order. Words are split at white space as `str::split_whitespace` does; an ASCII message is
/// split over its bytes in one pass that also tells which words need a look, which costs a
/// fraction of decoding characters and trimming every word.
fn mention_words<'m, E>(
    message: &'m str,
    mut word: impl FnMut(&'m str, Named) -> Result<(), E>,
) -> Result<(), E> {
    let mut take = |raw: &'m str| match mention_word(raw) {
        Some((text, named)) => word(text, named),
        None => Ok(()),
    };
    if !message.is_ascii() {
        return message.split_whitespace().try_for_each(take);
    }
    let bytes = message.as_bytes();
    let white = |b: u8| ASCII_MENTION_CLASS[usize::from(b)] & WHITE != 0;
    // A word needs a look if it holds a byte that may name a tool, or a capital after its
    // first byte (a capital first is no sign of an identifier: `What`). A word without any of
    // those holds no `/`, is not in backticks and cannot look like an identifier (no `_`, `-`
    // or digit, no capital after its first character, and punctuation trimmed off the front
    // only moves capitals further in): prose, skipped without a second look. Most words of a
    // message are, so the scan looks for those bytes, 8 at a time, and finds the words around
    // them.
    let mut at = 0;
    while let Some(p) = next_maybe_naming(bytes, at) {
        let start = bytes
            .get(..p)
            .and_then(|before| before.iter().rposition(|&b| white(b)))
            .map_or(0, |w| w + 1);
        let capital_first = start == p && bytes.get(p).is_some_and(u8::is_ascii_uppercase);
        if capital_first {
            // Most capitals of prose (`What`, `I`): the rest of the word is scanned as any.
            at = p + 1;
            continue;
        }
        let end = bytes
            .get(p..)
            .and_then(|after| after.iter().position(|&b| white(b)))
            .map_or(bytes.len(), |w| p + w);
        take(message.get(start..end).unwrap_or_default())?;
        at = end;
    }
    Ok(())
}

/// The position of the first byte at or after `at` of the ASCII `bytes` that is [`MAY_NAME`]
/// or a capital ([`INNER_CAPITAL`]), found 8 bytes at a time while 8 remain.
fn next_maybe_naming(bytes: &[u8], mut at: usize) -> Option<usize> {
    while let Some(chunk) = bytes.get(at..).and_then(|b| b.first_chunk::<8>()) {
        let found = maybe_naming_bytes(u64::from_le_bytes(*chunk));
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = bytes.get(at..)?;
    let class = |b: u8| ASCII_MENTION_CLASS[usize::from(b)];
    rest.iter()
        .position(|&b| class(b) & (MAY_NAME | INNER_CAPITAL) != 0)
        .map(|k| at + k)
}

/// The top bit of each byte of `word` (8 ASCII bytes) that is a digit, a capital, `/`, a
/// backtick, `_` or `-`; the other bits clear.
fn maybe_naming_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Per byte: the top bit of `x + 0x80 - c` is set when `x >= c` (bytes below 0x80 carry
    // into no other byte).
    let at_least = |c: u8| word.wrapping_add((0x80 - u64::from(c)) * ONES);
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let capital = at_least(b'A') & !at_least(b'Z' + 1);
    // The top bit of a byte of `v` is set when the byte is not zero.
    let nonzero = |v: u64| ((v & !HIGH) + !HIGH) | v;
    let equal = |c: u8| !nonzero(word ^ (u64::from(c) * ONES));
    (digit | capital | equal(b'/') | equal(b'`') | equal(b'_') | equal(b'-')) & HIGH
}

/// [`ASCII_MENTION_CLASS`] bit: the white space of `char::is_whitespace` (`u8::is_ascii_whitespace`
/// leaves out the vertical tab).
const WHITE: u8 = 1;
/// [`ASCII_MENTION_CLASS`] bit: a byte that may make a word name a tool: `/`, a backtick, `_`,
/// `-` or a digit.
const MAY_NAME: u8 = 2;
/// [`ASCII_MENTION_CLASS`] bit: a capital, which may make a word look like an identifier
/// when it is not the word's first character.
const INNER_CAPITAL: u8 = 4;

/// The [`WHITE`], [`MAY_NAME`] and [`INNER_CAPITAL`] bits of each ASCII byte.
const ASCII_MENTION_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_whitespace() || byte == 0x0B {
            WHITE
        } else if matches!(byte, b'/' | b'`' | b'_' | b'-' | b'0'..=b'9') {
            MAY_NAME
        } else if byte.is_ascii_uppercase() {
            INNER_CAPITAL
        } else {
            0
        };
        b += 1;
    }
    table
};

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
    mention_words(message, |word, named| {
        match named {
            Named::Qualified => {
                if let Some(entry) = snapshot.entry(&TOOLS, word)? {
                    found.push(Mention { text: word, entry });
                }
            }
            Named::Bare => {
                for (key, _) in snapshot.by_index(&TOOLS, "name", word)? {
                    if let Some(entry) = snapshot.entry(&TOOLS, key)? {
                        found.push(Mention { text: word, entry });
                    }
                }
            }
        }
        Ok::<_, StoreError>(())
    })?;
    Ok(found)
}

fn looks_like_identifier(word: &str) -> bool {
    // One pass: an underscore, a hyphen or a digit anywhere, or an upper-case letter after the
    // first character in a word that has lower-case letters too (`getWeather`, not `URL`).
    // Over bytes when the word is ASCII: the same tests without decoding characters.
    if word.is_ascii() {
        let mut inner_upper = false;
        let mut lower = false;
        for (i, &b) in word.as_bytes().iter().enumerate() {
            if b == b'_' || b == b'-' || b.is_ascii_digit() {
                return true;
            }
            inner_upper |= i > 0 && b.is_ascii_uppercase();
            lower |= b.is_ascii_lowercase();
        }
        return inner_upper && lower;
    }
    looks_like_identifier_by_chars(word)
}

/// [`looks_like_identifier`] over characters: the definition, which the byte-wise pass for
/// ASCII words must match (the tests check it does).
fn looks_like_identifier_by_chars(word: &str) -> bool {
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

    /// The words that may name a tool as the first version found them: `split_whitespace`,
    /// `trim_matches` over the characters, and the character-wise identifier test (still the
    /// definition, [`looks_like_identifier_by_chars`]). The reference the byte-wise passes must
    /// match.
    fn reference_mention_words(message: &str) -> Vec<(&str, Named)> {
        const TRIM: &[char] = &[
            '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', '.', ';', ':', '!', '?',
            '*',
        ];
        let mut out = Vec::new();
        for raw in message.split_whitespace() {
            let quoted = raw.starts_with('`');
            let word = raw.trim_matches(TRIM);
            if word.is_empty() {
                continue;
            }
            if word.contains('/') {
                out.push((word, Named::Qualified));
            } else if quoted || looks_like_identifier_by_chars(word) {
                out.push((word, Named::Bare));
            }
        }
        out
    }

    fn words_of(message: &str) -> Vec<(&str, Named)> {
        let mut out = Vec::new();
        mention_words(message, |w, named| {
            out.push((w, named));
            Ok::<_, ()>(())
        })
        .unwrap_or_default();
        out
    }

    #[test]
    fn the_word_scan_marks_the_bytes_the_table_does() {
        for b in 0u8..128 {
            for k in 0..8 {
                let mut chunk = *b"ab cd ef";
                chunk[k] = b;
                let marks = maybe_naming_bytes(u64::from_le_bytes(chunk));
                for (j, &c) in chunk.iter().enumerate() {
                    let want = ASCII_MENTION_CLASS[usize::from(c)] & (MAY_NAME | INNER_CAPITAL);
                    assert_eq!(marks >> (8 * j + 7) & 1 == 1, want != 0, "{chunk:?} {j}");
                }
            }
        }
    }

    #[test]
    fn long_messages_split_as_the_reference_does() {
        let words = [
            "get_weather",
            "What",
            "the",
            "`x`",
            "a/b",
            "URL",
            "getX",
            "s3,",
            "(Ab)",
        ];
        let spaces = [" ", "  ", "\t", "\n\u{0B}"];
        for n in 0..200 {
            let mut text = String::new();
            for k in 0..(n % 23) {
                text.push_str(words[(n * 7 + k * 3) % words.len()]);
                text.push_str(spaces[(n + k) % spaces.len()]);
            }
            assert_eq!(words_of(&text), reference_mention_words(&text), "{text:?}");
        }
    }

    #[test]
    fn mention_words_match_the_reference_on_all_short_strings() {
        // Every class the rules tell apart: lower, upper, digit, `_`, `-`, `/`, a backtick,
        // trimmed punctuation, ASCII white space (the vertical tab among it), non-ASCII white
        // space, non-ASCII letters of either case.
        let alphabet = [
            'a', 'B', '7', '_', '-', '/', '`', '.', '(', ' ', '\u{0B}', '\u{A0}', 'é', 'É',
        ];
        for len in 0..=5 {
            crate::bm25::short_strings::for_each_string(&alphabet, len, |text| {
                assert_eq!(words_of(text), reference_mention_words(text), "{text:?}");
            });
        }
    }

    #[test]
    fn every_ascii_byte_splits_and_trims_as_the_reference_does() {
        for b in 0u8..128 {
            let c = char::from(b);
            for text in [
                format!("a{c}b"),
                format!("{c}x_y{c}"),
                format!("`{c}getX{c}"),
                format!("{c}"),
            ] {
                assert_eq!(words_of(&text), reference_mention_words(&text), "{text:?}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
        #[test]
        fn mention_words_match_the_reference(
            text in "([a-zA-Z0-9_/`.,;:!?*()<>{}\\[\\]\"' \t\n\r\u{0B}\u{0C}-]|get_weather|github/search\
                     |getWeather|URL|v2-fetch|\u{A0}|\u{85}|\u{2003}|é|É|ß){0,24}"
        ) {
            proptest::prop_assert_eq!(words_of(&text), reference_mention_words(&text));
        }
    }

    #[test]
    fn weighted_terms_sum_as_a_stable_sort_does() {
        // The first version: a stable sort always, then weights summed in the order met.
        fn reference(snapshot: &Snapshot, texts: &[(&str, f32)]) -> Vec<(String, f32)> {
            let mut terms: Vec<(String, f32)> = Vec::new();
            for (text, weight) in texts {
                let tokens = snapshot.tokenize(&TOOLS, text).unwrap_or_default();
                terms.extend(tokens.into_iter().map(|t| (t, *weight)));
            }
            terms.sort_by(|a, b| a.0.cmp(&b.0));
            terms.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.1 += later.1;
                }
                same
            });
            terms
        }
        let snapshot = crate::store::Store::new().snapshot();
        let message = "zeta file read_file File alpha zeta readFile files zeta beta alpha";
        // Terms that share their first 8 bytes, or are prefixes of each other, order by
        // their full text.
        let long = "readfilesystem readfileserver readfiles readfile readfil readfilesystem";
        let cases: [&[(&str, f32)]; 6] = [
            &[(long, 1.0)],
            &[(long, 1.0), ("readfileserver readfiles", 0.5)],
            &[(message, 1.0)],
            &[(message, 1.0), ("file zeta beta", 0.3), ("zeta file", 0.09)],
            &[
                (message, 0.1),
                ("zeta alpha", 0.1),
                ("zeta", 0.1),
                ("zeta", 0.1),
            ],
            &[("zeta zeta", 1e-8), ("zeta", 1.0), ("zeta", 1e-8)],
        ];
        for texts in cases {
            let got = weighted_terms(&snapshot, &TOOLS, texts).unwrap_or_default();
            let want = reference(&snapshot, texts);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (g.0, g.1.to_bits()),
                    (w.0.as_str(), w.1.to_bits()),
                    "{texts:?}"
                );
            }
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
            weighted_texts(&turn, &policy, &HintMatcher::new(&policy.hints)).0,
            [("c", 1.0), ("b2", 0.5), ("b", 0.25), ("read_file", 0.25)]
        );
    }
}
