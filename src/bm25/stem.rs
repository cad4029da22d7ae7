//! A light English suffix stemmer, used when
//! [`TokenizerConfig::stemming`](crate::bm25::TokenizerConfig::stemming) is on.
//!
//! Light on purpose: BM25 over short tool descriptions mainly needs plural/singular and verb
//! forms of one word to meet (`files`/`file`, `creating`/`created`/`create`), and a full Porter
//! stemmer is both more code and more over-stemming. The rules, in the spirit of Harman's
//! S-stemmer plus Porter's step 1b, apply in order to words made only of ASCII lower-case letters
//! (anything else, such as numbers or non-Latin text, is returned unchanged):
//!
//! 1. Plurals: `-ies` → `-y` (words of 5+ letters: `queries` → `query`); `-sses` → `-ss`;
//!    otherwise a final `-s` is dropped from words of 4+ letters unless they end in `-ss`, `-us`
//!    or `-is` (`tools` → `tool`, but `class`, `status`, `analysis` stay; so do `apis` and `uris`,
//!    which a light stemmer cannot tell from `basis`).
//! 2. Verb forms: `-ied` → `-y` (5+ letters: `copied` → `copy`); otherwise `-ing` or `-ed` is
//!    dropped when at least two letters including a vowel (`aeiouy`) remain; a doubled final
//!    consonant other than `l`, `s`, `z` is then undoubled if 4+ letters remain
//!    (`running` → `run`, but `adding` → `add`).
//! 3. A final `-e` is dropped from words of 3+ letters, so that the stem of `create` meets those of
//!    `created` and `creating` (`creat`).
//!
//! 4. Irregular forms the suffix rules cannot join: a short table maps the stem of an irregular
//!    form to its word's stem, so that `flew`, `flown`, `flying` and `flights` meet `fly`,
//!    `sent` meets `send` and `paid` meets `pay` ([`IRREGULAR`]). It holds the irregular verbs
//!    and nouns that tool texts and requests use (flights and payments, not poetry); each target
//!    is no longer than the form it replaces, so the rewrite is done in place.
//!
//! Every rule leaves at least two letters, so no token becomes empty. Stems need not be words;
//! documents and queries go through the same rules, which is all BM25 needs.

/// Stems of irregular forms and the stem of their word (rule 4 of the module docs): one entry
/// a form, as the suffix rules leave it (`wrote` → `wrot`), each target no longer than its form
/// and itself a stem the rules leave as it is.
pub const IRREGULAR: &[(&str, &str)] = &[
    ("bought", "buy"),
    ("brought", "bring"),
    ("built", "build"),
    ("flew", "fly"),
    ("flight", "fly"),
    ("flown", "fly"),
    ("found", "find"),
    ("got", "get"),
    ("gotten", "get"),
    ("held", "hold"),
    ("kept", "keep"),
    ("paid", "pay"),
    ("payment", "pay"),
    ("ran", "run"),
    ("sent", "send"),
    ("sold", "sell"),
    ("spent", "spend"),
    ("taken", "tak"),
    ("told", "tell"),
    ("took", "tak"),
    ("written", "writ"),
    ("wrot", "writ"),
];

/// `bytes` (at most 8) as one word, the first byte lowest, zeros above.
const fn pack(bytes: &[u8]) -> u64 {
    let mut word = 0u64;
    let mut i = 0;
    while i < bytes.len() && i < 8 {
        word |= (bytes[i] as u64) << (8 * i);
        i += 1;
    }
    word
}

/// The slot of a packed form in [`SLOTS`] (multiplicative hashing: one multiply and a shift).
/// The multiplier is 3 × 2⁶⁴/φ, the first odd multiple of Fibonacci hashing's constant that
/// gives every form of the table a slot of its own (the build checks it).
const fn slot(word: u64) -> usize {
    (word.wrapping_mul(0xDAA6_6D2C_7DDF_743F) >> 58) as usize
}

/// [`IRREGULAR`] as 64 slots of (packed form, 1 + its index), 0 where empty: a term is looked
/// up with one multiply and one compare, where a search of the table's strings was a fifth of
/// tokenizing a query. Built at compile time; two forms in one slot fail the build.
const SLOTS: [(u64, u8); 64] = {
    let mut slots = [(0u64, 0u8); 64];
    let mut i = 0;
    while i < IRREGULAR.len() {
        let form = IRREGULAR[i].0.as_bytes();
        assert!(form.len() <= 8, "an irregular form fits in a word");
        let word = pack(form);
        assert!(slots[slot(word)].1 == 0, "two irregular forms share a slot");
        slots[slot(word)] = (word, i as u8 + 1);
        i += 1;
    }
    slots
};

/// The stem the packed term `word` of `len` bytes (a stem already) stands for, if it is an
/// irregular form ([`IRREGULAR`]).
#[inline]
fn irregular_word(word: u64, len: usize) -> Option<&'static str> {
    if !(3..=7).contains(&len) {
        return None;
    }
    let (form, index) = *SLOTS.get(slot(word))?;
    if form != word {
        return None;
    }
    IRREGULAR
        .get(usize::from(index).checked_sub(1)?)
        .map(|(_, stem)| *stem)
}

/// [`irregular_word`] of the term `term`.
#[inline]
fn irregular(term: &[u8]) -> Option<&'static str> {
    if term.len() > 8 {
        return None;
    }
    irregular_word(pack(term), term.len())
}

/// The stemmed term `out[..len]` with an irregular form replaced in place; its new length.
#[inline]
pub(crate) fn replace_irregular(out: &mut [u8], len: usize) -> usize {
    // The tokenizer's buffers have 8 bytes to read past a short term: one load.
    let word = match out.first_chunk::<8>() {
        Some(chunk) if len <= 8 => u64::from_le_bytes(*chunk) & (u64::MAX >> (64 - 8 * len.max(1))),
        _ => pack(out.get(..len).unwrap_or_default()),
    };
    let Some(stem) = irregular_word(word, len) else {
        return len;
    };
    match out.get_mut(..stem.len()) {
        Some(to) => {
            to.copy_from_slice(stem.as_bytes());
            stem.len()
        }
        None => len,
    }
}

/// The light stem of `word` (see the module docs for the rules).
///
/// ```
/// use capstore::bm25::stem::stem;
///
/// assert_eq!(stem("flying"), "fly");
/// assert_eq!(stem("flights"), "fly");
/// assert_eq!(stem("files"), "fil");
/// assert_eq!(stem("file"), "fil");
/// assert_eq!(stem("queries"), "query");
/// assert_eq!(stem("running"), "run");
/// assert_eq!(stem("status"), "status");
/// assert_eq!(stem("2024"), "2024");
/// ```
pub fn stem(word: &str) -> String {
    let mut out = word.to_owned();
    stem_in_place(&mut out);
    out
}

/// [`stem`], rewriting `word` in place (no new allocation).
pub(crate) fn stem_in_place(word: &mut String) {
    stem_tail(word, 0);
}

/// [`stem`] of `text[from..]`, rewritten in place: the tokenizer writes each term at the end of
/// one shared buffer and stems it there.
#[inline]
pub(crate) fn stem_tail(text: &mut String, from: usize) {
    // `stem_cut`'s first test, where the tokenizer's loop can see it: most terms are not cut.
    if text.as_bytes().last().is_some_and(|&b| may_cut_after(b))
        && let Some(word) = text.as_bytes().get(from..)
    {
        let (keep, add_y) = stem_cut(word);
        text.truncate(from + keep);
        if add_y {
            text.push('y');
        }
    }
    if let Some(stem) = text.as_bytes().get(from..).and_then(irregular) {
        text.truncate(from);
        text.push_str(stem);
    }
}

/// The stem of `word` as an edit of its end: keep `word[..keep]`, then append `y` if `add_y`.
/// (Every rule only cuts a suffix, and the two that replace one with `y` end the stemming.)
#[inline]
pub(crate) fn stem_cut(word: &[u8]) -> (usize, bool) {
    // Every rule cuts a suffix ending in `s`, `d`, `g` or `e` (a rule after the plural one
    // applies only to what it left, and that left the word whole unless it ended in `s`):
    // most words end otherwise and are done without looking at their letters, or a call.
    if !word.last().is_some_and(|&b| may_cut_after(b)) {
        return (word.len(), false);
    }
    stem_cut_suffix(word)
}

/// [`stem_cut`] of a word ending in `s`, `d`, `g` or `e`.
fn stem_cut_suffix(word: &[u8]) -> (usize, bool) {
    if !word.iter().all(u8::is_ascii_lowercase) {
        return (word.len(), false);
    }
    cut_by_rules(
        word.len(),
        |n, suffix| word.get(..n).is_some_and(|w| w.ends_with(suffix)),
        |n| {
            word.get(..n)
                .is_some_and(|w| w.iter().any(|&b| is_vowel(b)))
        },
        |i| word.get(i).copied().unwrap_or(0),
    )
}

/// The rules of the module docs, applied to a word of `len` ASCII lower-case letters seen
/// through `ends(n, suffix)` (do its first `n` letters end with `suffix`), `has_vowel(n)` (is
/// one of its first `n` letters a vowel) and `byte(i)`: one statement of the rules for the
/// byte-slice and the word-wide forms.
#[inline(always)]
fn cut_by_rules(
    len: usize,
    ends: impl Fn(usize, &[u8]) -> bool,
    has_vowel: impl Fn(usize) -> bool,
    byte: impl Fn(usize) -> u8,
) -> (usize, bool) {
    let mut n = len;
    // Plurals.
    if n >= 5 && ends(n, b"ies") {
        return (n - 3, true);
    } else if ends(n, b"sses") {
        n -= 2;
    } else if n >= 4 && ends(n, b"s") && !ends(n, b"ss") && !ends(n, b"us") && !ends(n, b"is") {
        n -= 1;
    }
    // Verb forms.
    if n >= 5 && ends(n, b"ied") {
        return (n - 3, true);
    }
    let suffix = if ends(n, b"ing") {
        3
    } else if ends(n, b"ed") {
        2
    } else {
        0
    };
    if suffix > 0 {
        let stem_len = n - suffix;
        if stem_len >= 2 && has_vowel(stem_len) {
            n = stem_len;
            // Undouble a final consonant: running → run (but not fill, pass, buzz).
            let last = byte(n - 1);
            if n >= 4
                && last == byte(n - 2)
                && !is_vowel(last)
                && !matches!(last, b'l' | b's' | b'z')
            {
                n -= 1;
            }
        }
    }
    if n >= 3 && ends(n, b"e") {
        n -= 1;
    }
    (n, false)
}

/// [`stem_cut`] of a word of at most 8 bytes held in `word` (its first byte lowest, zeros
/// above its `len` bytes; ASCII, as the tokenizer's short terms are), with the byte loops
/// (are all letters lower-case, has the stem a vowel) as a few word-wide operations. Each loop's
/// exit depended on the word and mispredicted about once a term: a tenth of a MetaTool
/// selection's mispredicted branches were the stemmer's (callgrind). Tests check it against
/// `stem_cut` on every short string over the letters the rules look at.
#[inline]
pub(crate) fn stem_cut_word(word: u64, len: usize) -> (usize, bool) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let unchanged = (len, false);
    if len == 0 || len > 8 || !may_cut_after(byte_at(word, len - 1)) {
        return unchanged;
    }
    // The top bit of each of the first `n` bytes.
    let top_bits = |n: usize| HIGH & u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0);
    // Per byte (all below 0x80), the top bit of `x + 0x80 - c` is set when `x >= c`.
    let at_least = |c: u8| word.wrapping_add((0x80 - u64::from(c)) * ONES);
    let lower = at_least(b'a') & !at_least(b'z' + 1) & HIGH;
    let all = top_bits(len);
    if lower & all != all {
        return unchanged;
    }
    // Whether the first `n` bytes end with `suffix` (at most 4 bytes).
    let ends = |n: usize, suffix: &[u8]| {
        let k = suffix.len();
        n >= k && {
            let tail = word >> (8 * (n - k)) & (u64::MAX >> (64 - 8 * k as u32));
            let want = suffix
                .iter()
                .rev()
                .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
            tail == want
        }
    };
    // The top bit of each byte of `word` equal to `c`.
    let equal = |c: u8| {
        let v = word ^ (u64::from(c) * ONES);
        !(((v & !HIGH) + !HIGH) | v) & HIGH
    };
    let has_vowel = |n: usize| {
        let vowels =
            equal(b'a') | equal(b'e') | equal(b'i') | equal(b'o') | equal(b'u') | equal(b'y');
        vowels & top_bits(n) != 0
    };
    cut_by_rules(len, ends, has_vowel, |i| byte_at(word, i))
}

/// Byte `i` (0 = lowest) of `word`.
fn byte_at(word: u64, i: usize) -> u8 {
    word.checked_shr(8 * i as u32).unwrap_or(0) as u8
}

/// Whether a word ending in `b` may lose a suffix: every rule cuts one ending in `s`, `d`, `g`
/// or `e`.
fn may_cut_after(b: u8) -> bool {
    matches!(b, b's' | b'd' | b'g' | b'e')
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

#[cfg(test)]
mod tests {
    use super::{IRREGULAR, irregular, stem, stem_cut};

    #[test]
    fn the_word_wide_stemmer_cuts_as_stem_cut_does() {
        // Every string of up to 6 bytes over the letters the rules look at (and a digit, a
        // capital), then strings of 7 and 8 bytes from a generator: the same cut and `y`.
        let alphabet = b"aeisdgnyulzt1E";
        let check = |w: &[u8]| {
            let mut bytes = [0u8; 8];
            bytes[..w.len()].copy_from_slice(w);
            let packed = u64::from_le_bytes(bytes);
            assert_eq!(
                super::stem_cut_word(packed, w.len()),
                super::stem_cut(w),
                "{:?}",
                String::from_utf8_lossy(w)
            );
        };
        let mut word = Vec::new();
        fn all(word: &mut Vec<u8>, alphabet: &[u8], left: usize, check: &dyn Fn(&[u8])) {
            check(word);
            if left == 0 {
                return;
            }
            for &b in alphabet {
                word.push(b);
                all(word, alphabet, left - 1, check);
                word.pop();
            }
        }
        all(&mut word, alphabet, 6, &check);
        let mut state = 3u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 7 + (state >> 63) as usize;
            let w: Vec<u8> = (0..len)
                .map(|i| alphabet[((state >> (8 * i)) % alphabet.len() as u64) as usize])
                .collect();
            check(&w);
        }
    }

    /// The string-editing stemmer this module had before `stem_cut`, kept as the reference.
    mod reference {
        fn strip_plural(word: &mut String) {
            if word.len() >= 5 && word.ends_with("ies") {
                replace_suffix(word, 3, "y");
            } else if word.ends_with("sses") {
                word.truncate(word.len() - 2);
            } else if word.len() >= 4
                && word.ends_with('s')
                && !word.ends_with("ss")
                && !word.ends_with("us")
                && !word.ends_with("is")
            {
                word.pop();
            }
        }

        fn strip_verb_form(word: &mut String) {
            if word.len() >= 5 && word.ends_with("ied") {
                replace_suffix(word, 3, "y");
                return;
            }
            let suffix = if word.ends_with("ing") {
                3
            } else if word.ends_with("ed") {
                2
            } else {
                return;
            };
            let stem_len = word.len() - suffix;
            if stem_len >= 2 && word[..stem_len].bytes().any(old_is_vowel) {
                word.truncate(stem_len);
                undouble(word);
            }
        }

        /// `runn` → `run`, `stopp` → `stop`; `l`, `s` and `z` stay doubled (`call`, `pass`, `buzz`), as do
        /// three-letter stems (`add`).
        fn undouble(word: &mut String) {
            let bytes = word.as_bytes();
            let n = bytes.len();
            if n >= 4
                && bytes[n - 1] == bytes[n - 2]
                && !old_is_vowel(bytes[n - 1])
                && !matches!(bytes[n - 1], b'l' | b's' | b'z')
            {
                word.pop();
            }
        }

        fn replace_suffix(word: &mut String, cut: usize, with: &str) {
            word.truncate(word.len() - cut);
            word.push_str(with);
        }

        fn old_is_vowel(b: u8) -> bool {
            matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
        }

        pub(super) fn stem(word: &str) -> String {
            let mut word = word.to_owned();
            if word.bytes().all(|b| b.is_ascii_lowercase()) {
                strip_plural(&mut word);
                strip_verb_form(&mut word);
                if word.len() >= 3 && word.ends_with('e') {
                    word.pop();
                }
            }
            match crate::bm25::stem::IRREGULAR
                .iter()
                .find(|(form, _)| *form == word)
            {
                Some((_, stem)) => stem.to_string(),
                None => word,
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn same_stems_as_the_reference(word in "[a-z]{0,9}(s|es|ies|sses|ed|ied|ing|e|ss|us|is)?") {
            proptest::prop_assert_eq!(stem(&word), reference::stem(&word));
        }
    }

    fn same_stem(words: &[&str]) {
        let first = stem(words[0]);
        for w in words {
            assert_eq!(stem(w), first, "{w} vs {}", words[0]);
        }
    }

    #[test]
    fn plurals() {
        assert_eq!(stem("tools"), "tool");
        assert_eq!(stem("queries"), "query");
        assert_eq!(stem("addresses"), "address");
        assert_eq!(stem("urls"), "url");
        for kept in ["class", "status", "analysis", "gas", "bus"] {
            assert_eq!(stem(kept), kept);
        }
    }

    #[test]
    fn verb_forms() {
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("stopped"), "stop");
        assert_eq!(stem("adding"), "add");
        assert_eq!(stem("calling"), "call");
        assert_eq!(stem("copied"), "copy");
        assert_eq!(stem("string"), "string", "no vowel left before -ing");
        assert_eq!(stem("bed"), "bed", "too short");
        assert_eq!(stem("red"), "red", "too short");
    }

    #[test]
    fn word_families_meet() {
        same_stem(&["create", "creates", "created", "creating"]);
        same_stem(&["file", "files", "filed", "filing"]);
        same_stem(&["delete", "deleted", "deleting", "deletes"]);
        same_stem(&["use", "uses", "used", "using"]);
        same_stem(&["search", "searches", "searched", "searching"]);
        same_stem(&["add", "adds", "added", "adding"]);
        same_stem(&["box", "boxes"]);
        same_stem(&["query", "queries"]);
    }

    #[test]
    fn irregular_forms_meet_their_words() {
        same_stem(&[
            "fly", "flies", "flying", "flew", "flown", "flight", "flights",
        ]);
        same_stem(&["send", "sends", "sending", "sent"]);
        same_stem(&["pay", "pays", "paying", "paid", "payment", "payments"]);
        same_stem(&["write", "writes", "writing", "wrote", "written"]);
        same_stem(&["take", "takes", "taking", "took", "taken"]);
        same_stem(&["get", "gets", "getting", "got", "gotten"]);
        assert_eq!(stem("Flew"), "Flew", "only lower-case words, as every rule");
    }

    #[test]
    fn the_irregular_table_is_sorted_and_rewrites_in_place() {
        assert!(
            IRREGULAR.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, no repeats"
        );
        for (form, target) in IRREGULAR {
            assert!(target.len() <= form.len(), "{form} -> {target}");
            assert_eq!(
                stem_cut(form.as_bytes()),
                (form.len(), false),
                "{form} is a stem"
            );
            assert_eq!(stem(target), *target, "{target} is a fixed point");
            assert!(irregular(form.as_bytes()).is_some(), "{form} is found");
        }
    }

    #[test]
    fn never_empty_and_deterministic() {
        for w in [
            "", "a", "e", "s", "ed", "ing", "ies", "ied", "es", "ss", "sses", "eed", "ying", "bee",
        ] {
            let s = stem(w);
            assert!(!s.is_empty() || w.is_empty(), "{w:?} -> {s:?}");
            assert_eq!(s, stem(w));
        }
    }

    #[test]
    fn non_ascii_and_numbers_unchanged() {
        for w in ["2024", "v2", "café", "数据", "Files"] {
            assert_eq!(stem(w), w);
        }
    }
}
