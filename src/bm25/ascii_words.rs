//! UAX#29 words of ASCII text, without the general Unicode segmenter.
//!
//! Tool text is almost always ASCII, and `unicode_words` (tables, state machine, a reverse
//! look-up for some rules) was the single largest cost of indexing a tool: a fifth of a
//! registration's instructions. On ASCII only a handful of the word-boundary rules can apply,
//! so they fit in one pass over the bytes. The test below checks, on random strings over every
//! class of ASCII character that matters, that this yields exactly the words `unicode_words`
//! does; non-ASCII text still goes through `unicode_words`.

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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::ascii_words;

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
