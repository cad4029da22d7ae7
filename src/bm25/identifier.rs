//! Splitting one UAX#29 word into the parts of an identifier: `get_weather`, `getWeather`,
//! `get.weather` → `get`, `weather`; `HTTPServer` → `HTTP`, `Server`; `getPM2.5Level` → `get`,
//! `PM`, `2`, `5`, `Level`.
//!
//! One pass over the characters, remembering the classes of the previous two letters or digits:
//! linear in the word's length whatever the input.

/// What a character is, for splitting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    /// Lower-case letters, and letters without case (CJK, Arabic…), which never start a part.
    Lower,
    Digit,
    /// Punctuation that UAX#29 lets inside a word (`_`, `.`, `'`, `:`, `’`…): ends a part.
    Separator,
    /// Everything else inside a word: combining marks, joiners. Stays in the current part and
    /// is invisible to the case and digit rules (`e` + U+0301 is still a lower-case letter).
    Transparent,
}

fn classify(c: char) -> Class {
    if c.is_alphanumeric() {
        if c.is_uppercase() {
            Class::Upper
        } else if c.is_numeric() {
            Class::Digit
        } else {
            Class::Lower
        }
    } else if c.is_ascii() || is_word_punctuation(c) {
        Class::Separator
    } else {
        Class::Transparent
    }
}

/// The non-ASCII characters UAX#29 allows inside a word (MidLetter, MidNum, MidNumLet,
/// ExtendNumLet): they join words the way `.`, `:`, `'` and `_` do, so they separate parts.
fn is_word_punctuation(c: char) -> bool {
    matches!(
        c,
        '\u{00B7}'
            | '\u{037E}'
            | '\u{0387}'
            | '\u{055F}'
            | '\u{0589}'
            | '\u{05F4}'
            | '\u{060C}'
            | '\u{060D}'
            | '\u{066C}'
            | '\u{07F8}'
            | '\u{2018}'
            | '\u{2019}'
            | '\u{2024}'
            | '\u{2027}'
            | '\u{202F}'
            | '\u{203F}'
            | '\u{2040}'
            | '\u{2044}'
            | '\u{2054}'
            | '\u{FE10}'
            | '\u{FE13}'
            | '\u{FE14}'
            | '\u{FE33}'
            | '\u{FE34}'
            | '\u{FE4D}'
            ..='\u{FE50}'
                | '\u{FE52}'
                | '\u{FE54}'
                | '\u{FE55}'
                | '\u{FF07}'
                | '\u{FF0C}'
                | '\u{FF0E}'
                | '\u{FF1A}'
                | '\u{FF1B}'
                | '\u{FF3F}'
    )
}

/// Calls `emit` with each part of `word`, in order, with its original case. Parts are split at
/// separators, lower → upper (`getWeather`), the last capital of a capital run followed by a
/// lower-case letter (`HTTPServer`), and letter ↔ digit (`v2`, `JSON2XML`). A lone `s` after a
/// capital run is a plural, not a new word (`APIs`, `URLs`, `IDs` stay whole). Every part starts
/// with a letter or digit, so none is empty.
pub(crate) fn split_identifier<'w>(word: &'w str, mut emit: impl FnMut(&'w str)) {
    // Start of the current part, and the classes and position of the last two letters/digits.
    let mut start: Option<usize> = None;
    let mut prev: Option<(Class, usize)> = None;
    let mut prev2: Option<Class> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let class = classify(c);
        match class {
            Class::Separator => {
                if let Some(s) = start.take() {
                    emit(&word[s..i]);
                }
                prev = None;
                prev2 = None;
            }
            Class::Transparent => {}
            Class::Upper | Class::Lower | Class::Digit => {
                if let Some(s) = start {
                    let cut = match (prev2, prev, class) {
                        (_, Some((Class::Lower, _)), Class::Upper) => Some(i),
                        (_, Some((Class::Digit, _)), Class::Upper | Class::Lower) => Some(i),
                        (_, Some((Class::Upper | Class::Lower, _)), Class::Digit) => Some(i),
                        (Some(Class::Upper), Some((Class::Upper, at)), Class::Lower) => {
                            let plural = c == 's'
                                && chars
                                    .peek()
                                    .is_none_or(|&(_, n)| classify(n) != Class::Lower);
                            (!plural).then_some(at)
                        }
                        _ => None,
                    };
                    if let Some(cut) = cut.filter(|&cut| cut > s) {
                        emit(&word[s..cut]);
                        start = Some(cut);
                    }
                } else {
                    start = Some(i);
                }
                prev2 = prev.map(|(c, _)| c);
                prev = Some((class, i));
            }
        }
    }
    if let Some(s) = start {
        emit(&word[s..]);
    }
}

/// [`split_identifier`] for an ASCII `word`, over bytes: the same parts (a test checks it on
/// random words), without decoding characters or asking Unicode tables for their classes. The
/// rules are [`ascii_identifier_parts`]'s, applied to the one word.
pub(crate) fn split_ascii_identifier<'w>(word: &'w str, mut emit: impl FnMut(&'w str)) {
    ascii_identifier_parts(word.as_bytes(), |start, end| {
        if let Some(part) = word.get(start..end) {
            emit(part);
        }
    });
}

/// The identifier parts of a whole ASCII `text`, as byte ranges `start..end`, in order: what
/// splitting each of its UAX#29 words with [`split_identifier`] yields (tests check it against
/// the general path, on random text and on every short string), in one pass and without finding
/// the words.
///
/// Words need not be found because, in ASCII, every byte that is not a letter or digit ends a
/// part whether or not it ends a word: between words it is a boundary, inside one (`_ . : ' , ;`)
/// it is a separator. So the parts are the runs of letters and digits, cut by the case and digit
/// rules of [`split_identifier`]; the rules look no further than the run, since a run's
/// neighbours are never letters.
pub(crate) fn ascii_identifier_parts(text: &[u8], mut part: impl FnMut(usize, usize)) {
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        let first = ascii_class(b);
        if first == Class::Separator {
            i += 1;
            continue;
        }
        // Most words of prose are lower-case letters, or a capital and lower-case letters: no
        // rule cuts those, so the word is one part, found with one look at its letters (8 at a
        // time) and none at the rules. Any other word is cut by the rules below.
        if matches!(first, Class::Lower | Class::Upper) {
            let end = i + 1 + lower_run(text, i + 1);
            if text
                .get(end)
                .is_none_or(|&b| ascii_class(b) == Class::Separator)
            {
                part(i, end);
                i = end;
                continue;
            }
        }
        i += 1;
        let mut start = i - 1;
        let mut prev = first;
        // Only the `HTTPServer` rule looks two back, and only at a capital: a flag will do.
        let mut prev2_upper = false;
        while let Some(&b) = text.get(i) {
            if prev == Class::Lower && b.is_ascii_lowercase() {
                // Lower after lower never cuts, and leaves `prev` lower and `prev2_upper`
                // false: the bulk of prose, stepped over 8 bytes at a time. A byte loop's exit
                // mispredicted at the end of nearly every word (words differ in length).
                i += 1 + lower_run(text, i + 1);
                prev2_upper = false;
                continue;
            }
            let class = ascii_class(b);
            let cut = match (prev, class) {
                (Class::Lower, Class::Lower) | (Class::Digit, Class::Digit) => None,
                (_, Class::Separator) => break,
                (Class::Lower, Class::Upper)
                | (Class::Digit, Class::Upper | Class::Lower)
                | (Class::Upper | Class::Lower, Class::Digit) => Some(i),
                (Class::Upper, Class::Lower) if prev2_upper => {
                    let plural = b == b's'
                        && text
                            .get(i + 1)
                            .is_none_or(|&n| ascii_class(n) != Class::Lower);
                    (!plural).then(|| i - 1)
                }
                _ => None,
            };
            if let Some(cut) = cut.filter(|&cut| cut > start) {
                part(start, cut);
                start = cut;
            }
            prev2_upper = prev == Class::Upper;
            prev = class;
            i += 1;
        }
        part(start, i);
    }
}

/// How many bytes from `at` on are ASCII lower-case letters: 8 at a time while 8 remain (the
/// count is the first other byte's place, found without a branch), then one at a time.
#[inline]
fn lower_run(text: &[u8], at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut n = 0;
    while let Some(chunk) = text.get(at + n..).and_then(|rest| rest.first_chunk::<8>()) {
        let word = u64::from_le_bytes(*chunk);
        // Per byte, the top bit of `x + 0x80 - c` is set when `x >= c`, for bytes below 0x80
        // (no carry into the next byte). A byte of 0x80 or more is never a letter: `& !word`
        // clears its bit, so it counts as other (a carry out of it only garbles later bytes,
        // and only the first other byte counts).
        let at_least = |c: u8| word.wrapping_add((0x80 - u64::from(c)) * ONES);
        let lower = at_least(b'a') & !at_least(b'z' + 1) & !word;
        let other = !lower & HIGH;
        if other != 0 {
            return n + (other.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + text
        .get(at + n..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| b.is_ascii_lowercase())
        .count()
}

/// [`Class`] of an ASCII byte (any other byte is a [`Class::Separator`]).
fn ascii_class(b: u8) -> Class {
    ASCII_CLASSES[usize::from(b)]
}

/// [`ascii_class`] as a table: one load per byte instead of three range tests.
const ASCII_CLASSES: [Class; 256] = {
    let mut table = [Class::Separator; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'a'..=b'z' => Class::Lower,
            b'A'..=b'Z' => Class::Upper,
            b'0'..=b'9' => Class::Digit,
            _ => Class::Separator,
        };
        b += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{lower_run, split_ascii_identifier, split_identifier};

    #[test]
    fn lower_run_counts_as_a_byte_loop_does() {
        let texts: [&[u8]; 5] = [
            b"abcdefghijklmnopqrstuvwxyz`{@[ AZaz09",
            b"getweatherforecastbycityname_and_more",
            "naïveté über straße".as_bytes(),
            &[
                b'a', b'b', 0x80, b'c', 0xff, b'd', b'e', b'f', b'g', b'h', b'i', b'j', b'k',
            ],
            b"",
        ];
        for text in texts {
            for at in 0..=text.len() + 1 {
                let want = text
                    .get(at..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|b| b.is_ascii_lowercase())
                    .count();
                assert_eq!(lower_run(text, at), want, "{text:?} at {at}");
            }
        }
    }

    fn parts(word: &str) -> Vec<&str> {
        let mut out = Vec::new();
        split_identifier(word, |p| out.push(p));
        out
    }

    #[test]
    fn separators() {
        assert_eq!(parts("get_weather"), ["get", "weather"]);
        assert_eq!(parts("get.weather"), ["get", "weather"]);
        assert_eq!(parts("don't"), ["don", "t"]);
        assert_eq!(parts("a__b_"), ["a", "b"]);
        assert_eq!(parts("___"), Vec::<&str>::new());
    }

    #[test]
    fn case_changes() {
        assert_eq!(parts("getWeather"), ["get", "Weather"]);
        assert_eq!(parts("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(parts("GetHTTP"), ["Get", "HTTP"]);
        assert_eq!(parts("ABC"), ["ABC"]);
        assert_eq!(parts("Weather"), ["Weather"]);
    }

    #[test]
    fn plural_of_an_acronym_stays_whole() {
        assert_eq!(parts("APIs"), ["APIs"]);
        assert_eq!(parts("listURLs"), ["list", "URLs"]);
        assert_eq!(parts("IDsFor"), ["IDs", "For"]);
        assert_eq!(parts("ABCsome"), ["AB", "Csome"]);
    }

    #[test]
    fn digits() {
        assert_eq!(parts("parseJSON2XML"), ["parse", "JSON", "2", "XML"]);
        assert_eq!(parts("v2"), ["v", "2"]);
        assert_eq!(parts("getPM2.5Level"), ["get", "PM", "2", "5", "Level"]);
        assert_eq!(parts("2024"), ["2024"]);
    }

    #[test]
    fn marks_stay_inside_parts() {
        // "é" as e + COMBINING ACUTE ACCENT, then a capital: the mark neither splits nor counts.
        assert_eq!(parts("cafe\u{301}Bar"), ["cafe\u{301}", "Bar"]);
        assert_eq!(parts("हिन्दी"), ["हिन्दी"]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]
        #[test]
        fn ascii_split_matches_the_general_one(word in "[aAsS09_.:'bZ]{0,16}") {
            let mut fast = Vec::new();
            split_ascii_identifier(&word, |p| fast.push(p));
            prop_assert_eq!(fast, parts(&word));
        }
    }
}
