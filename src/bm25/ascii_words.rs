//! UAX#29 words of ASCII text, without the general Unicode segmenter.
//!
//! Tool text is almost always ASCII, and `unicode_words` (tables, state machine, a reverse
//! look-up for some rules) was the single largest cost of indexing a tool: a fifth of a
//! registration's instructions. On ASCII only a handful of the word-boundary rules can apply,
//! so they fit in one pass over the bytes. The test below checks, on random strings over every
//! class of ASCII character that matters, that this yields exactly the words `unicode_words`
//! does.
//!
//! Messages are mostly ASCII with a few other characters (`’`, `—`, `°`, `CO₂`): every
//! MCP-Bench task has some. [`ascii_spans`] cuts such a text at white space into its ASCII
//! stretches and the pieces that hold the other characters, so that only those pieces go
//! through `unicode_words` ([`words`]): one pass over the bytes, then each piece's few
//! characters.

use unicode_segmentation::UnicodeSegmentation;

/// The word-break classes ASCII characters have in UAX#29 (WB property values).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wb {
    /// `A-Z a-z` (ALetter).
    Letter,
    /// `0-9` (Numeric).
    Numeric,
    /// `_` (ExtendNumLet).
    ExtendNumLet,
    /// `:` (MidLetter).
    MidLetter,
    /// `.` (MidNumLet) and `'` (Single_Quote): both join letters and digits alike.
    MidNumLetQ,
    /// `,` `;` (MidNum).
    MidNum,
    /// Everything else: spaces, controls, other punctuation. Always a boundary on both sides.
    Other,
}

fn class(byte: u8) -> Wb {
    match byte {
        b'A'..=b'Z' | b'a'..=b'z' => Wb::Letter,
        b'0'..=b'9' => Wb::Numeric,
        b'_' => Wb::ExtendNumLet,
        b':' => Wb::MidLetter,
        b'.' | b'\'' => Wb::MidNumLetQ,
        b',' | b';' => Wb::MidNum,
        _ => Wb::Other,
    }
}

/// Whether UAX#29 keeps `mid` inside a word between `left` and `right` (WB6/WB7 for letters,
/// WB11/WB12 for digits).
fn joins(left: Wb, mid: Wb, right: Wb) -> bool {
    use Wb::*;
    matches!(
        (left, mid, right),
        (Letter, MidLetter | MidNumLetQ, Letter) | (Numeric, MidNum | MidNumLetQ, Numeric)
    )
}

/// Calls `word` with each UAX#29 word of the ASCII `text` that holds a letter or digit, in
/// order: what `text.unicode_words()` yields.
///
/// A word is a run of letters, digits and `_` (WB5, WB8–WB10, WB13a/b never break inside one),
/// continued across a single `:`, `.`, `'`, `,` or `;` where the rules above allow it.
pub(crate) fn ascii_words<'t>(text: &'t str, mut word: impl FnMut(&'t str)) {
    debug_assert!(text.is_ascii());
    let bytes = text.as_bytes();
    let class_at = |i: usize| bytes.get(i).map_or(Wb::Other, |&b| class(b));
    let in_run = |c: Wb| matches!(c, Wb::Letter | Wb::Numeric | Wb::ExtendNumLet);
    let mut i = 0;
    while i < bytes.len() {
        if !in_run(class_at(i)) {
            i += 1;
            continue;
        }
        let start = i;
        loop {
            while i < bytes.len() && in_run(class_at(i)) {
                i += 1;
            }
            // `bytes[i]` ends the run; step over it if it joins the run to the next one.
            if i > start && joins(class_at(i - 1), class_at(i), class_at(i + 1)) {
                i += 1;
            } else {
                break;
            }
        }
        if let Some(segment) = text.get(start..i)
            && segment.bytes().any(|b| b.is_ascii_alphanumeric())
        {
            word(segment);
        }
    }
}

/// The ASCII characters of `char::is_whitespace`.
const WHITE_SPACE: &[u8] = b" \t\n\x0B\x0C\r";

/// Calls `span` with each stretch of `text` in order, and whether it is ASCII: the ASCII
/// stretches, and between them the pieces that hold other characters, each cut at white space
/// followed by an ASCII character (or the end), that white space going to the ASCII stretches
/// around it. The spans, put together, are the text.
///
/// The text's UAX#29 words are its spans' words, in order: such white space (space, tab,
/// CR, LF, vertical tab, form feed) breaks words on both sides and is in no word (at most it
/// joins the white space beside it, WB3 and WB3d). No rule
/// joins a character to it (WB4 attaches `Extend`, `Format` and `ZWJ` characters, and WB3c
/// an emoji, only to what comes before them, and an ASCII character is none of those), and
/// the rules that look past a neighbour (WB6, WB7, WB11, WB12, WB15, WB16) see white space
/// there as they see the text's start or end. Tests check it on random strings against
/// `unicode_words`.
pub(crate) fn ascii_spans<'t>(text: &'t str, mut span: impl FnMut(&'t str, bool)) {
    let bytes = text.as_bytes();
    let cut = |i: usize| {
        bytes.get(i).is_some_and(|&b| WHITE_SPACE.contains(&b))
            && bytes.get(i + 1).is_none_or(u8::is_ascii)
    };
    let mut ascii_from = 0;
    let mut at = 0;
    while let Some(other) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|b| !b.is_ascii()))
        .map(|k| at + k)
    {
        // The piece runs from after the last cut before `other` to the next cut after it.
        let start = (ascii_from..other)
            .rev()
            .find(|&i| cut(i))
            .map_or(ascii_from, |i| i + 1);
        let end = (other..bytes.len())
            .find(|&i| cut(i))
            .unwrap_or(bytes.len());
        if let Some(ascii) = text.get(ascii_from..start)
            && !ascii.is_empty()
        {
            span(ascii, true);
        }
        span(text.get(start..end).unwrap_or_default(), false);
        ascii_from = end;
        at = end;
    }
    if let Some(ascii) = text.get(ascii_from..)
        && !ascii.is_empty()
    {
        span(ascii, true);
    }
}

/// Calls `word` with each UAX#29 word of `text` that holds a letter or digit, in order:
/// what `text.unicode_words()` yields, found by [`ascii_words`] in the text's ASCII
/// stretches ([`ascii_spans`]).
pub(crate) fn words<'t>(text: &'t str, mut word: impl FnMut(&'t str)) {
    ascii_spans(text, |span, ascii| match ascii {
        true => ascii_words(span, &mut word),
        false => span.unicode_words().for_each(&mut word),
    });
}

/// How many UAX#29 words of `text` hold a letter or digit: `text.unicode_words().count()`.
pub(crate) fn word_count(text: &str) -> usize {
    let mut count = 0;
    words(text, |_| count += 1);
    count
}

/// Whether `text` has a UAX#29 word that holds a letter or digit:
/// `text.unicode_words().next().is_some()`. An ASCII letter or digit is in such a word,
/// whatever is around it, so most texts answer at their first one.
pub(crate) fn has_word(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_alphanumeric())
        || (!text.is_ascii() && text.unicode_words().next().is_some())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::{ascii_spans, ascii_words};

    fn words(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        ascii_words(text, |w| out.push(w));
        out
    }

    #[test]
    fn the_rules_that_apply_to_ascii() {
        assert_eq!(words("get_weather now"), ["get_weather", "now"]);
        assert_eq!(
            words("don't a.b.c a:b a..b"),
            ["don't", "a.b.c", "a:b", "a", "b"]
        );
        assert_eq!(
            words("1,000.5 3;4 1.a a.1"),
            ["1,000.5", "3;4", "1", "a", "a", "1"]
        );
        assert_eq!(words("_x_ ___ a_.b"), ["_x_", "a_", "b"]);
        assert_eq!(
            words("get-weather, HTTPServer!"),
            ["get", "weather", "HTTPServer"]
        );
        assert_eq!(words(""), Vec::<&str>::new());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]
        #[test]
        fn same_words_as_unicode_segmentation(text in "[aZ09_.:',; \\-!\t\r\n/]{0,24}") {
            let expected: Vec<&str> = text.unicode_words().collect();
            prop_assert_eq!(words(&text), expected);
        }
    }

    /// Its words, by [`words`], after checking that its spans are it, in order.
    fn mixed_words(text: &str) -> Vec<&str> {
        let mut joined = String::new();
        ascii_spans(text, |span, ascii| {
            assert_eq!(span.is_ascii(), ascii, "{span:?} of {text:?}");
            joined.push_str(span);
        });
        assert_eq!(joined, text);
        let mut out = Vec::new();
        super::words(text, |w| out.push(w));
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6_000))]
        #[test]
        fn mixed_text_has_the_words_of_unicode_segmentation(
            text in "([aZ09_.:',;\\\"\\- !\t\r\n\x0B\x0C/]|’|—|é|₂|²|µ|·|\u{301}|\u{200D}|\u{200B}\
                     |\u{2002}|\u{A0}|👍|🇫🇷|ア|א|天|\u{2028}|\u{85}){0,24}"
        ) {
            let expected: Vec<&str> = text.unicode_words().collect();
            prop_assert_eq!(super::has_word(&text), !expected.is_empty());
            prop_assert_eq!(mixed_words(&text), expected);
        }
    }

    #[test]
    fn mixed_text_cut_at_white_space_before_ascii() {
        let mut spans = Vec::new();
        let text = "the CO₂ level is 5 µg—don’t worry \u{301}x ok";
        ascii_spans(text, |span, ascii| spans.push((span, ascii)));
        assert_eq!(
            spans,
            [
                ("the ", true),
                ("CO₂", false),
                (" level is ", true),
                ("5 µg—don’t", false),
                (" ", true),
                ("worry \u{301}x", false),
                (" ok", true)
            ]
        );
        assert_eq!(mixed_words(text), text.unicode_words().collect::<Vec<_>>());
        let mut all = Vec::new();
        ascii_spans("plain", |span, ascii| all.push((span, ascii)));
        assert_eq!(all, [("plain", true)]);
        ascii_spans("", |_, _| panic!("no span"));
    }

    #[test]
    fn same_words_on_all_short_strings_of_the_interesting_classes() {
        // Exhaustive over 5-character strings of one member of each class: every context the
        // rules look at (two characters either side of a boundary) appears.
        let alphabet = ['a', '7', '_', ':', '.', '\'', ',', ' '];
        crate::bm25::short_strings::for_each_string(&alphabet, 5, |text| {
            let expected: Vec<&str> = text.unicode_words().collect();
            assert_eq!(words(text), expected, "{text:?}");
        });
    }
}
