//! The English stop-word list.
//!
//! DESIGN.md measured that ~80% of the postings a tool-selection query touches come from ~60
//! function words; dropping them cuts a query's work about 5× and removes noise from the
//! ranking. The list holds function words only (articles, pronouns, auxiliaries, prepositions,
//! conjunctions, politeness), never domain words such as `get`, `list`, `file`, `search` or
//! `new`, which name what tools do. `s`, `t`, `m`, `re`, `ve`, `ll` and `d` are the pieces
//! identifier splitting leaves of English contractions and possessives (`user's`, `don't`,
//! `I'm`, `we're`, `I've`, `I'll`, `I'd`).

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
    "by", "can", "could", "d", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if",
    "in", "into", "is", "it", "its", "ll", "m", "me", "my", "no", "not", "of", "on", "or", "our",
    "please", "re", "s", "should", "so", "some", "such", "t", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "ve", "was", "we", "were",
    "what", "when", "where", "which", "who", "will", "with", "would", "you", "your",
];

/// `word`'s first 8 bytes, big-endian, zero-padded: for words of at most 8 non-zero bytes this
/// is one-to-one and keeps lexicographic order, so the sorted list packs to a sorted array.
const fn pack(word: &[u8]) -> u64 {
    let mut packed = 0u64;
    let mut i = 0;
    while i < 8 {
        packed <<= 8;
        if i < word.len() {
            packed |= word[i] as u64;
        }
        i += 1;
    }
    packed
}

/// [`STOP_WORDS`] packed (all are at most 8 bytes; a test checks it). Comparing integers
/// instead of strings made the lookup, done for every token indexed, 3× cheaper.
const PACKED: [u64; STOP_WORDS.len()] = {
    let mut out = [0; STOP_WORDS.len()];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        out[i] = pack(STOP_WORDS[i].as_bytes());
        i += 1;
    }
    out
};

/// Whether `token` (already lower-case) is in [`STOP_WORDS`].
pub(crate) fn is_stop_word(token: &str) -> bool {
    // A hit is confirmed on the string: a token with a NUL byte would pack like a shorter word.
    token.len() <= 8
        && PACKED
            .binary_search(&pack(token.as_bytes()))
            .is_ok_and(|i| STOP_WORDS.get(i) == Some(&token))
}

/// Whether `word`, in any case, is in [`STOP_WORDS`]: `is_stop_word(&word.to_lowercase())`,
/// with an ASCII word lower-cased on the stack rather than into a new string (a message's
/// asks ask this of each of their words).
pub(crate) fn is_stop_word_any_case(word: &str) -> bool {
    if !word.is_ascii() {
        return is_stop_word(&word.to_lowercase());
    }
    let mut buf = [0u8; LONGEST];
    let Some(lower) = buf.get_mut(..word.len()) else {
        return false;
    };
    lower.copy_from_slice(word.as_bytes());
    lower.make_ascii_lowercase();
    std::str::from_utf8(lower).is_ok_and(is_stop_word)
}

/// The length of the longest stop word: longer tokens need no look-up.
const LONGEST: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < STOP_WORDS.len() {
        if STOP_WORDS[i].len() > longest {
            longest = STOP_WORDS[i].len();
        }
        i += 1;
    }
    longest
};

/// Whether `part`, ASCII letters and digits in any case, lower-cases to a stop word: the
/// tokenizer asks before it copies a term, so that a dropped one costs no copy.
pub(crate) fn is_stop_word_ascii_alphanumeric(part: &[u8]) -> bool {
    debug_assert!(part.iter().all(u8::is_ascii_alphanumeric));
    if part.len() > LONGEST {
        return false;
    }
    // `| 0x20` lower-cases a letter and leaves a digit as it is; no byte is NUL, so the
    // packing is one-to-one and needs no confirmation on the string.
    let mut packed = 0u64;
    for (k, &b) in part.iter().enumerate() {
        packed |= u64::from(b | 0x20) << (56 - 8 * k);
    }
    TABLE.contains(packed)
}

/// [`is_stop_word_ascii_alphanumeric`] of a part of `len` bytes given as one word: `lower`
/// holds its bytes lower-cased, the first in the lowest byte, zeros above the part (as the
/// tokenizer loads a part of at most 8 bytes).
#[inline]
pub(crate) fn is_stop_word_lower_word(lower: u64, len: usize) -> bool {
    // Byte-swapped, the word is the part packed as [`pack`] does.
    len <= LONGEST && TABLE.contains(lower.swap_bytes())
}

/// [`PACKED`] as a perfect hash table: each stop word alone in its slot, so membership is one
/// multiply, one load and one compare instead of a binary search (which was most of the check,
/// made for every identifier part of every query and document).
struct PerfectTable {
    multiplier: u64,
    slots: [u64; TABLE_SLOTS],
}

/// A power of two, several times the number of stop words so that a collision-free multiplier
/// is found in a few hundred tries (at compile time).
const TABLE_SLOTS: usize = 512;
const TABLE_SHIFT: u32 = 64 - TABLE_SLOTS.trailing_zeros();

impl PerfectTable {
    const fn slot(multiplier: u64, packed: u64) -> usize {
        (packed.wrapping_mul(multiplier) >> TABLE_SHIFT) as usize
    }

    /// The first odd multiplier of a fixed sequence that sends every packed stop word to its
    /// own slot. Empty slots hold 0, which no word packs to.
    const fn build() -> Self {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut tries = 0;
        while tries < 100_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let multiplier = state | 1;
            let mut slots = [0u64; TABLE_SLOTS];
            let mut ok = true;
            let mut i = 0;
            while i < PACKED.len() {
                let at = Self::slot(multiplier, PACKED[i]);
                if slots[at] != 0 {
                    ok = false;
                    break;
                }
                slots[at] = PACKED[i];
                i += 1;
            }
            if ok {
                return Self { multiplier, slots };
            }
            tries += 1;
        }
        // Not reached (the assertion below fails the build if it were).
        Self {
            multiplier: 0,
            slots: [0; TABLE_SLOTS],
        }
    }

    #[inline]
    fn contains(&self, packed: u64) -> bool {
        packed != 0 && self.slots[Self::slot(self.multiplier, packed)] == packed
    }
}

static TABLE: PerfectTable = PerfectTable::build();

// The build found a multiplier (a multiplier is odd).
const _: () = assert!(PerfectTable::build().multiplier != 0);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_and_unique_so_binary_search_works() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(
            STOP_WORDS.iter().all(|w| w.len() <= 8),
            "packing needs <= 8 bytes"
        );
        assert!(PACKED.windows(2).all(|w| w[0] < w[1]));
        for near in [
            "",
            "aa",
            "abou",
            "abouts",
            "the\0",
            "thé",
            "shouldnt",
            "yourselves",
        ] {
            assert!(!is_stop_word(near), "{near:?}");
        }
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
            assert_eq!(*w, w.to_lowercase());
        }
    }

    /// `w` as it is, upper-cased, with a suffix and with a prefix: the near misses of a check.
    fn variants(w: &str) -> [String; 4] {
        [
            w.to_string(),
            w.to_uppercase(),
            format!("{w}s"),
            format!("x{w}"),
        ]
    }

    #[test]
    fn the_word_check_agrees_with_the_byte_check() {
        let words = STOP_WORDS.iter().map(|w| w.to_string());
        let others = ["x", "thex", "a1", "weather", "shoul", "Ab", "PLEASE", "0"].map(String::from);
        for w in words.chain(others) {
            for variant in variants(&w) {
                let bytes = variant.as_bytes();
                if bytes.len() > 8 {
                    continue;
                }
                let lower = bytes
                    .iter()
                    .rev()
                    .fold(0u64, |acc, &b| acc << 8 | u64::from(b | 0x20));
                assert_eq!(
                    is_stop_word_lower_word(lower, bytes.len()),
                    is_stop_word_ascii_alphanumeric(bytes),
                    "{variant}"
                );
            }
        }
    }

    #[test]
    fn the_ascii_check_folds_case_like_lower_casing_first() {
        for w in STOP_WORDS {
            for variant in variants(w) {
                let lower = variant.to_lowercase();
                assert_eq!(
                    is_stop_word_ascii_alphanumeric(variant.as_bytes()),
                    is_stop_word(&lower),
                    "{variant}"
                );
            }
        }
        for other in ["", "2", "0the", "The0", "shouldnt", "Yourselves", "WEATHER"] {
            assert!(
                !is_stop_word_ascii_alphanumeric(other.as_bytes()),
                "{other}"
            );
        }
    }

    #[test]
    fn the_any_case_check_is_the_check_of_the_lower_cased_word() {
        let words = STOP_WORDS.iter().map(|w| w.to_string());
        let others = [
            "",
            "Don't",
            "I'M",
            "weather",
            "THÉ",
            "Über",
            "İT",
            "\u{212A}",
            "aS.",
            "b2b",
            "Ourselves",
        ]
        .map(String::from);
        for w in words.chain(others) {
            for variant in variants(&w) {
                assert_eq!(
                    is_stop_word_any_case(&variant),
                    is_stop_word(&variant.to_lowercase()),
                    "{variant}"
                );
            }
        }
    }

    #[test]
    fn the_table_agrees_with_the_list_on_all_short_words() {
        let alphabet: Vec<char> = ('a'..='z').chain(['0', 'A', 'T']).collect();
        for len in 1..=3 {
            crate::bm25::short_strings::for_each_string(&alphabet, len, |w| {
                assert_eq!(
                    is_stop_word_ascii_alphanumeric(w.as_bytes()),
                    is_stop_word(&w.to_lowercase()),
                    "{w}"
                );
            });
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
