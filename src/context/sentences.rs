//! A line's sentences, by UAX#29's sentence rules, in one pass over its characters.
//!
//! [`asks`](super::asks) reads a message sentence by sentence. `unicode-segmentation`'s
//! sentence iterator looks up every character's class in its tables, which made finding a
//! long message's sentences a seventh of its whole selection (callgrind, MCP-Bench's tasks).
//! Only a few classes decide a sentence's end, so they are read here from the character
//! itself: ASCII characters take exactly their UAX#29 classes, other characters the class
//! Rust's character properties give them (white space, lower, upper, other letters) or a
//! short list (the quotes and brackets that close, the dashes that continue, the full stops
//! and question marks of other scripts). Tests check the sentences against
//! `unicode-segmentation`'s on random text of ASCII and such characters. Characters that
//! extend another (combining accents) are read as any other character, so a terminator
//! followed by one ends its sentence where UAX#29 would look past the accent. Cost: one pass
//! over the line's characters, a look ahead past a full stop's closing quotes and spaces.

/// The sentence-break classes that decide where a sentence ends (UAX#29's `Sentence_Break`
/// values; the rest are `Other`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sb {
    /// A full stop: `.`; it may end an abbreviation ("e.g. the") or a number ("1.5").
    ATerm,
    /// `!`, `?` and other scripts' sentence ends.
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
    /// An ASCII digit.
    Numeric,
    Other,
}

fn class(c: char) -> Sb {
    match c {
        '.' | '\u{2024}' | '\u{FE52}' | '\u{FF0E}' => Sb::ATerm,
        '!'
        | '?'
        | '\u{203C}'
        | '\u{203D}'
        | '\u{2047}'..='\u{2049}'
        | '\u{3002}'
        | '\u{FF01}'
        | '\u{FF1F}'
        | '\u{FF61}'
        | '\u{061F}'
        | '\u{0964}'
        | '\u{0965}' => Sb::STerm,
        '"'
        | '\''
        | '('
        | ')'
        | '['
        | ']'
        | '{'
        | '}'
        | '«'
        | '»'
        | '\u{2018}'..='\u{201F}'
        | '\u{2039}'
        | '\u{203A}'
        | '\u{3008}'..='\u{3011}'
        | '\u{FF08}'
        | '\u{FF09}' => Sb::Close,
        ',' | '-' | ':' | ';' | '\u{2013}' | '\u{2014}' | '\u{3001}' | '\u{FF0C}' | '\u{FF0D}'
        | '\u{FF1A}' | '\u{FF1B}' => Sb::SContinue,
        '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => Sb::Sep,
        '0'..='9' => Sb::Numeric,
        c if c.is_whitespace() => Sb::Sp,
        c if c.is_lowercase() => Sb::Lower,
        c if c.is_uppercase() => Sb::Upper,
        c if c.is_alphabetic() => Sb::OLetter,
        _ => Sb::Other,
    }
}

/// The sentences of `line`, in order, each with the spaces after it; put together, they are
/// the line. What `unicode-segmentation`'s `split_sentence_bounds` gives (see the module doc).
pub(super) fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = line;
    std::iter::from_fn(move || {
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
    let tail = text.get(next..).unwrap_or_default();
    let closing = tail
        .char_indices()
        .find(|&(_, c)| class(c) != Sb::Close)
        .map_or(tail.len(), |(i, _)| i);
    let spaced = tail.get(closing..).unwrap_or_default();
    let end = next
        + closing
        + spaced
            .char_indices()
            .find(|&(_, c)| class(c) != Sb::Sp)
            .map_or(spaced.len(), |(i, _)| i);
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

    use super::sentences;

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6_000))]
        #[test]
        fn same_sentences_as_unicode_segmentation(
            text in "([aZ09_.!?:,;'\"()\\[\\]{}\\- \t\r\n\x0B\x0C/#]|’|‘|“|”|«|»|—|–|é|É|ß|Δ|φ|天\
                     |ア|²|°|\u{2002}|\u{A0}|。|！|？|‼|．|\u{2028}|\u{85}|、|（|）){0,24}"
        ) {
            let expected: Vec<&str> = text.split_sentence_bounds().collect();
            prop_assert_eq!(split(&text), expected);
        }
    }
}
