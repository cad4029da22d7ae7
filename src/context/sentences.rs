//! A line's sentences, by UAX#29's sentence rules, in one pass over its characters.
//!
//! [`asks`](super::asks) reads a message sentence by sentence. `unicode-segmentation`'s
//! sentence iterator looks up every character's class in its tables, which made finding a
//! long message's sentences a seventh of its whole selection (callgrind, MCP-Bench's tasks).
//! Only a few classes decide a sentence's end, so they are read here from the character
//! itself: ASCII characters take their classes from a match, the characters of the blocks most
//! messages draw on (Latin, Greek, Cyrillic, punctuation, symbols, arrows, CJK punctuation,
//! full-width forms) from Rust's character properties (white space, lower, upper, other
//! letters) and short lists (the quotes and brackets that close, the dashes that continue,
//! the other full stops and question marks). A line that holds any other character (another
//! script, a combining accent) is split by `unicode-segmentation` itself, so the sentences
//! are UAX#29's everywhere. Tests check every character of those blocks, and random text,
//! against `unicode-segmentation`. Cost: one pass over the line's characters, and a look
//! ahead past a terminator's closing quotes and spaces.

use unicode_segmentation::UnicodeSegmentation;

/// The sentence-break classes that decide where a sentence ends (UAX#29's `Sentence_Break`
/// values; the rest are `Other`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sb {
    /// A full stop: `.`; it may end an abbreviation ("e.g. the") or a number ("1.5").
    ATerm,
    /// `!`, `?`, and their doubled and full-width forms (`‼`, `？`, `。`).
    STerm,
    /// Quotes and brackets (`"`, `'`, `)`, `’`, `»`): may follow a terminator in its sentence.
    Close,
    /// `,`, `-`, `:`, `;`, `–`, `—`: after a terminator, the sentence goes on.
    SContinue,
    /// White space that is no paragraph separator.
    Sp,
    /// A paragraph separator: CR, LF, NEL, LS, PS.
    Sep,
    Lower,
    Upper,
    /// A letter that is neither lower- nor upper-case.
    OLetter,
    /// An ASCII or full-width digit.
    Numeric,
    Other,
}

/// `c`'s class: UAX#29's for every character [`read_here`].
fn class(c: char) -> Sb {
    match c {
        '.' | '\u{2024}' | '\u{FF0E}' => Sb::ATerm,
        '!'
        | '?'
        | '\u{203C}'
        | '\u{203D}'
        | '\u{2047}'..='\u{2049}'
        | '\u{3002}'
        | '\u{FF01}'
        | '\u{FF1F}'
        | '\u{FF61}' => Sb::STerm,
        '"' | '\'' | '(' | ')' | '[' | ']' | '{' | '}' | '«' | '»' => Sb::Close,
        '\u{2018}'..='\u{201F}' | '\u{2039}' | '\u{203A}' | '\u{2045}' | '\u{2046}' => Sb::Close,
        '\u{207D}' | '\u{207E}' | '\u{208D}' | '\u{208E}' | '\u{2308}'..='\u{230B}' => Sb::Close,
        '\u{2329}' | '\u{232A}' | '\u{275B}'..='\u{2760}' | '\u{2768}'..='\u{2775}' => Sb::Close,
        '\u{27C5}' | '\u{27C6}' | '\u{27E6}'..='\u{27EF}' | '\u{2983}'..='\u{2998}' => Sb::Close,
        '\u{29D8}'..='\u{29DB}' | '\u{29FC}' | '\u{29FD}' | '\u{3008}'..='\u{3011}' => Sb::Close,
        '\u{3014}'..='\u{301B}' | '\u{301D}'..='\u{301F}' | '\u{FF08}' | '\u{FF09}' => Sb::Close,
        '\u{FF3B}' | '\u{FF3D}' | '\u{FF5B}' | '\u{FF5D}' | '\u{FF5F}' | '\u{FF60}' => Sb::Close,
        '\u{FF62}' | '\u{FF63}' => Sb::Close,
        ',' | '-' | ':' | ';' | '\u{037E}' | '\u{2013}' | '\u{2014}' | '\u{3001}' => Sb::SContinue,
        '\u{FF0C}' | '\u{FF0D}' | '\u{FF1A}' | '\u{FF1B}' | '\u{FF64}' => Sb::SContinue,
        '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => Sb::Sep,
        '0'..='9' | '\u{FF10}'..='\u{FF19}' => Sb::Numeric,
        // The title-case letters of these blocks ("ǅ").
        '\u{1C5}' | '\u{1C8}' | '\u{1CB}' | '\u{1F2}' => Sb::Upper,
        c if c.is_whitespace() => Sb::Sp,
        c if c.is_lowercase() => Sb::Lower,
        c if c.is_uppercase() => Sb::Upper,
        c if c.is_alphabetic() => Sb::OLetter,
        _ => Sb::Other,
    }
}

/// Whether [`class`] gives `c` its UAX#29 class: an ASCII character, or one of the blocks most
/// messages draw on (Latin, Greek, Cyrillic, general punctuation, symbols and arrows, CJK
/// punctuation, full-width forms) that extends no other character (SB5: a combining accent, a
/// soft hyphen, a joiner). A test checks every such character against `unicode-segmentation`.
fn read_here(c: char) -> bool {
    c.is_ascii()
        || (matches!(
            c,
            '\u{80}'..='\u{2FF}'
                | '\u{370}'..='\u{52F}'
                | '\u{2000}'..='\u{2BFF}'
                | '\u{3000}'..='\u{303F}'
                | '\u{FF00}'..='\u{FFEF}'
        ) && !matches!(
            c,
            '\u{AD}'
                | '\u{483}'..='\u{489}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{20D0}'..='\u{20F0}'
                | '\u{302A}'..='\u{302F}'
                | '\u{FF9E}'
                | '\u{FF9F}'
        ))
}

/// The sentences of `line`, in order, each with the spaces after it; put together, they are
/// the line: what `unicode-segmentation`'s `split_sentence_bounds` gives, and what it finds
/// itself for a line that holds a character [`class`] does not know (see the module doc).
pub(super) fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let known = line.is_ascii() || line.chars().all(read_here);
    let mut elsewhere = (!known).then(|| line.split_sentence_bounds());
    let mut rest = line;
    std::iter::from_fn(move || {
        if let Some(sentences) = elsewhere.as_mut() {
            return sentences.next();
        }
        if rest.is_empty() {
            return None;
        }
        let (sentence, after) = rest.split_at(sentence_end(rest));
        rest = after;
        Some(sentence)
    })
}

/// Where the first sentence of the non-empty `text` ends: after a paragraph separator (SB4;
/// CR LF as one, SB3), or after a terminator, its closing quotes and its spaces (SB9–SB11),
/// unless what comes next continues the sentence (SB6–SB8a).
fn sentence_end(text: &str) -> usize {
    for (i, c) in text.char_indices() {
        // Most characters end nothing: any ASCII one but these.
        if c.is_ascii() && !matches!(c, '.' | '!' | '?' | '\r' | '\n') {
            continue;
        }
        let next = i + c.len_utf8();
        match class(c) {
            Sb::Sep if c == '\r' && text.get(next..).is_some_and(|s| s.starts_with('\n')) => {}
            Sb::Sep => return next,
            term @ (Sb::ATerm | Sb::STerm) => {
                let before = text.get(..i).and_then(|s| s.chars().next_back()).map(class);
                if let Some(end) = terminator_end(text, term, before, next) {
                    return end;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Where the sentence whose terminator (of class `term`, after a character of class `before`)
/// ends at `next` ends, if it ends there: after its closing quotes and spaces.
fn terminator_end(text: &str, term: Sb, before: Option<Sb>, next: usize) -> Option<usize> {
    let class_at = |i: usize| text.get(i..).and_then(|s| s.chars().next()).map(class);
    let after = class_at(next);
    let letter = |c: Option<Sb>| matches!(c, Some(Sb::Upper | Sb::Lower));
    // SB6 "1.5", SB7 "U.S.".
    if term == Sb::ATerm
        && (after == Some(Sb::Numeric) || (letter(before) && after == Some(Sb::Upper)))
    {
        return None;
    }
    // Where the run of characters of class `of` that starts at `at` ends.
    let run_end = |at: usize, of: Sb| {
        let tail = text.get(at..).unwrap_or_default();
        at + tail
            .char_indices()
            .find(|&(_, c)| class(c) != of)
            .map_or(tail.len(), |(i, _)| i)
    };
    // The closing quotes, then the spaces (SB9, SB10).
    let end = run_end(run_end(next, Sb::Close), Sb::Sp);
    let Some(first) = class_at(end) else {
        return Some(end);
    };
    // SB8 "e.g. the", "approx. 5 km": after a full stop, the next letter is lower-case.
    let lower_follows = || {
        text.get(end..)
            .unwrap_or_default()
            .chars()
            .map(class)
            .find(|c| {
                matches!(
                    c,
                    Sb::OLetter | Sb::Upper | Sb::Lower | Sb::Sep | Sb::ATerm | Sb::STerm
                )
            })
            == Some(Sb::Lower)
    };
    // SB8a "Really?!", "Done!, then"; a separator ends the sentence after itself (SB11).
    let goes_on = matches!(first, Sb::SContinue | Sb::ATerm | Sb::STerm | Sb::Sep)
        || (term == Sb::ATerm && lower_follows());
    (!goes_on).then_some(end)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::{read_here, sentences};

    fn split(text: &str) -> Vec<&str> {
        sentences(text).collect()
    }

    #[test]
    fn a_sentence_ends_after_its_terminator_quotes_and_spaces() {
        assert_eq!(
            split("Find it. Then \"book it.\" Done?! Yes"),
            ["Find it. ", "Then \"book it.\" ", "Done?! ", "Yes"]
        );
        assert_eq!(
            split("e.g. the U.S. office costs approx. 5 km, v1.2 here."),
            ["e.g. the U.S. office costs approx. 5 km, v1.2 here."]
        );
        assert_eq!(
            split("Wait… what’s “this”? Go — now."),
            ["Wait… what’s “this”? ", "Go — now."]
        );
        assert_eq!(split("a\r\nb"), ["a\r\n", "b"]);
        assert_eq!(split(""), Vec::<&str>::new());
    }

    /// Each character [`read_here`], after and between terminators, letters and spaces, is
    /// split as `unicode-segmentation` splits it.
    #[test]
    fn every_character_read_here_splits_as_unicode_segmentation() {
        let mut differ = Vec::new();
        for c in (0x80..=0xFFFF)
            .filter_map(char::from_u32)
            .filter(|&c| read_here(c))
        {
            let texts = [
                format!("a{c} B"),
                format!("a.{c} B"),
                format!("a. {c}b"),
                format!("a.{c}"),
                format!("a{c}b. C d"),
                format!("A{c}. B"),
                format!("a. {c} B"),
                format!("a.{c}1"),
                format!("a!{c} b"),
                format!("a. {c} b"),
            ];
            if texts
                .iter()
                .any(|t| split(t) != t.split_sentence_bounds().collect::<Vec<_>>())
            {
                differ.push(c);
            }
        }
        assert!(differ.is_empty(), "split otherwise: {differ:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6_000))]
        #[test]
        fn same_sentences_as_unicode_segmentation(
            text in "([aZ09_.!?:,;'\"()\\[\\]{}\\- \t\r\n\x0B\x0C/#]|’|‘|“|”|«|»|—|–|é|É|ß|Δ|φ|天\
                     |ア|²|°|\u{2002}|\u{A0}|。|！|？|‼|．|\u{2028}|\u{85}|、|（|）|۔|।|\u{301}|\u{AD}|ǅ|０){0,24}"
        ) {
            let expected: Vec<&str> = text.split_sentence_bounds().collect();
            prop_assert_eq!(split(&text), expected);
        }
    }
}
