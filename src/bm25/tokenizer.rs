//! Text → terms, for documents and queries alike (a query must be tokenized exactly as the
//! documents were, or its terms will not meet theirs).

use serde::{Deserialize, Serialize};
use unicode_segmentation::UnicodeSegmentation;

use super::ascii_words::{ascii_spans, ascii_words};
use super::identifier::{ascii_identifier_parts, split_ascii_identifier, split_identifier};
use super::stem::{replace_irregular, stem_cut, stem_cut_word, stem_tail};
use super::stop_words::{is_stop_word, is_stop_word_ascii_alphanumeric, is_stop_word_lower_word};

/// The stack buffer of the ASCII path: terms gather here and reach the caller's buffer in one
/// copy (a query message fits; longer texts flush it as it fills).
const ASCII_BUFFER: usize = 256;

/// How [`Tokenizer`] turns text into terms.
///
/// The defaults split identifiers and drop stop words, and do not stem; the fields are public
/// so that applications (and the measurements that pick the defaults) can change them.
///
/// ```
/// use capstore::bm25::{Tokenizer, TokenizerConfig};
///
/// let plain = Tokenizer::new(TokenizerConfig {
///     split_identifiers: false,
///     stop_words: false,
///     stemming: false,
/// });
/// assert_eq!(plain.tokenize("the getWeather tool"), ["the", "getweather", "tool"]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerConfig {
    /// Split words into identifier parts: `get_weather`, `getWeather`, `get-weather`,
    /// `get.weather` → `get`, `weather`; `HTTPServer` → `http`, `server`; `v2` → `v`, `2`.
    /// When off, words are only split on `_`.
    pub split_identifiers: bool,
    /// Drop the function words in [`crate::bm25::STOP_WORDS`].
    pub stop_words: bool,
    /// Reduce English words to a light stem ([`crate::bm25::stem::stem`]): `files` → `fil`.
    pub stemming: bool,
}

impl Default for TokenizerConfig {
    fn default() -> Self {
        Self {
            split_identifiers: true,
            stop_words: true,
            stemming: false,
        }
    }
}

/// Splits text into lower-case terms: Unicode (UAX#29) words, then identifier parts, then stop
/// words dropped and stems taken as [`TokenizerConfig`] says.
///
/// Numbers are terms (`v2` → `v`, `2`). Scripts without spaces come out as UAX#29 segments them
/// (one term per CJK ideograph); emoji and punctuation are dropped. Linear in the text's length:
/// a megabyte of any input tokenizes in milliseconds.
///
/// ```
/// use capstore::bm25::Tokenizer;
///
/// let tokenizer = Tokenizer::default();
/// assert_eq!(
///     tokenizer.tokenize("Get the weather with getWeather or HTTPServer v2"),
///     ["get", "weather", "get", "weather", "http", "server", "v", "2"]
/// );
/// ```
#[derive(Clone, Debug, Default)]
pub struct Tokenizer {
    config: TokenizerConfig,
}

impl Tokenizer {
    /// A tokenizer with `config`.
    ///
    /// ```
    /// use capstore::bm25::{Tokenizer, TokenizerConfig};
    ///
    /// let stemming = Tokenizer::new(TokenizerConfig { stemming: true, ..TokenizerConfig::default() });
    /// assert_eq!(stemming.tokenize("listing files"), ["list", "fil"]);
    /// ```
    pub fn new(config: TokenizerConfig) -> Self {
        Self { config }
    }

    /// The configuration in force.
    ///
    /// ```
    /// use capstore::bm25::{Tokenizer, TokenizerConfig};
    ///
    /// assert_eq!(Tokenizer::default().config(), &TokenizerConfig::default());
    /// ```
    pub fn config(&self) -> &TokenizerConfig {
        &self.config
    }

    /// The terms of `text`, in order, repeats kept.
    ///
    /// ```
    /// use capstore::bm25::Tokenizer;
    ///
    /// assert_eq!(Tokenizer::default().tokenize("read_file, read it"), ["read", "file", "read"]);
    /// ```
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.tokenize_into(text, &mut out);
        out
    }

    /// Appends the terms of `text` to `out` (which is not cleared), so that several texts can
    /// fill one document field without intermediate vectors.
    ///
    /// ```
    /// use capstore::bm25::Tokenizer;
    ///
    /// let tokenizer = Tokenizer::default();
    /// let mut terms = vec!["name".to_string()];
    /// tokenizer.tokenize_into("sendEmail", &mut terms);
    /// assert_eq!(terms, ["name", "send", "email"]);
    /// ```
    pub fn tokenize_into(&self, text: &str, out: &mut Vec<String>) {
        // One path for every caller: the store's flat pass (fused for ASCII), then a `String`
        // per term.
        let mut text_buf = String::new();
        let mut ends = Vec::new();
        self.tokenize_flat(text, &mut text_buf, &mut ends);
        out.reserve(ends.len());
        let mut start = 0;
        for end in ends {
            out.push(text_buf.get(start..end).unwrap_or_default().to_owned());
            start = end;
        }
    }

    /// Appends the terms of `text` to `text_buf`, back to back, pushing the end offset of each
    /// to `ends`: a document's terms without a `String` each (which cost a fifth of
    /// registering a tool).
    pub(crate) fn tokenize_flat(&self, text: &str, text_buf: &mut String, ends: &mut Vec<usize>) {
        // Terms are at most as long as the text (lower-casing ASCII keeps lengths) and at most
        // half as many as its bytes in ordinary text: reserving once saves a string of
        // reallocations, a tenth of tokenizing a tool.
        text_buf.reserve(text.len());
        ends.reserve(text.len() / 4 + 1);
        if !self.config.split_identifiers {
            self.general_terms_flat(text, text_buf, ends);
            return;
        }
        // A message's few other characters (`’`, `—`, `CO₂`) keep only their pieces off the
        // fast path.
        ascii_spans(text, |span, ascii| match ascii {
            true => self.ascii_terms_flat(span, text_buf, ends),
            false => self.general_terms_flat(span, text_buf, ends),
        });
    }

    /// [`Self::tokenize_flat`] by the general path: each identifier part found, then emitted.
    fn general_terms_flat(&self, text: &str, text_buf: &mut String, ends: &mut Vec<usize>) {
        self.for_each_part(text, &mut |part| {
            if self.emit(part, text_buf) {
                ends.push(text_buf.len());
            }
        });
    }

    /// [`Self::tokenize_flat`] of ASCII `text` with identifiers split, in one pass: each part
    /// is found over the bytes ([`ascii_identifier_parts`]), checked for a stop word before it
    /// is copied, then copied lower-cased into a small stack buffer and stemmed there; the
    /// buffer goes to `text_buf` in one copy when full and at the end. The same terms as the
    /// general path (tests check it on random text), a third of the instructions.
    fn ascii_terms_flat(&self, text: &str, text_buf: &mut String, ends: &mut Vec<usize>) {
        self.ascii_terms_buffered::<ASCII_BUFFER>(text, text_buf, ends);
    }

    /// [`Self::ascii_terms_flat`] with a buffer of `N` bytes (tests use tiny ones, so that
    /// every flush and the long-part path run on short strings).
    ///
    /// Copying each term into the `String` cost a `memcpy` call and a lower-casing pass per
    /// term; here a part (ASCII letters and digits only) is lower-cased as it is copied
    /// (`| 0x20` maps `A-Z` to `a-z` and leaves `a-z` and `0-9` as they are; a part of at most
    /// 8 bytes as one word, see [`lower_word`]), and the buffer, checked as UTF-8 once (ASCII:
    /// a word at a time), is appended in one copy.
    fn ascii_terms_buffered<const N: usize>(
        &self,
        text: &str,
        text_buf: &mut String,
        ends: &mut Vec<usize>,
    ) {
        let mut buf = [0u8; N];
        let mut n = 0;
        let bytes = text.as_bytes();
        let flush = |buf: &[u8], text_buf: &mut String| {
            // Always ASCII: letters and digits (and the `y`s the stemmer adds).
            text_buf.push_str(std::str::from_utf8(buf).unwrap_or_default());
        };
        ascii_identifier_parts(bytes, |start, end| {
            let len = end - start;
            // A part of at most 8 bytes (most are) as one word: lower-cased, checked for a stop
            // word and copied whole, where a byte loop did each (a third of tokenizing a
            // query). The copy writes 8 bytes; the next term or the flush ignores the rest.
            if len <= 8 {
                let lower = lower_word(bytes, start, len);
                if self.config.stop_words && is_stop_word_lower_word(lower, len) {
                    return;
                }
                if n + 8 > N {
                    flush(buf.get(..n).unwrap_or_default(), text_buf);
                    n = 0;
                }
                if let Some(out) = buf.get_mut(n..n + 8) {
                    out.copy_from_slice(&lower.to_le_bytes());
                    n += self.stem_buffered_word(out, lower, len);
                    ends.push(text_buf.len() + n);
                    return;
                }
            }
            let Some(part) = bytes.get(start..end) else {
                return;
            };
            if self.config.stop_words && is_stop_word_ascii_alphanumeric(part) {
                return;
            }
            if n + part.len() > N {
                flush(buf.get(..n).unwrap_or_default(), text_buf);
                n = 0;
            }
            let Some(out) = buf.get_mut(n..n + part.len()) else {
                // Longer than the whole buffer: straight into `text_buf`.
                let at = text_buf.len();
                text_buf.push_str(text.get(start..end).unwrap_or_default());
                if let Some(term) = text_buf.get_mut(at..) {
                    term.make_ascii_lowercase();
                }
                if self.config.stemming {
                    stem_tail(text_buf, at);
                }
                ends.push(text_buf.len());
                return;
            };
            for (o, &b) in out.iter_mut().zip(part) {
                *o = b | 0x20;
            }
            n += self.stem_buffered(out);
            ends.push(text_buf.len() + n);
        });
        flush(buf.get(..n).unwrap_or_default(), text_buf);
    }

    /// Stems the lower-cased term `out` in place, if so configured; its new length.
    #[inline]
    fn stem_buffered(&self, out: &mut [u8]) -> usize {
        if !self.config.stemming {
            return out.len();
        }
        let len = apply_cut(out, stem_cut(out));
        replace_irregular(out, len)
    }

    /// [`Self::stem_buffered`] of the `len`-byte term (at most 8) held in `word` and written at
    /// the start of `out`, stemmed with the word-wide [`stem_cut_word`].
    #[inline]
    fn stem_buffered_word(&self, out: &mut [u8], word: u64, len: usize) -> usize {
        if !self.config.stemming {
            return len;
        }
        let len = apply_cut(out, stem_cut_word(word, len));
        replace_irregular(out, len)
    }

    /// Calls `part` with each identifier part (or each word, when identifiers are not split)
    /// of `text`, as written: case, stop words and stems are [`Self::emit`]'s.
    fn for_each_part<'t>(&self, text: &'t str, part: &mut impl FnMut(&'t str)) {
        ascii_spans(text, |span, ascii| {
            if ascii {
                ascii_words(span, |word| {
                    if self.config.split_identifiers {
                        split_ascii_identifier(word, &mut *part);
                    } else {
                        self.word(word, part);
                    }
                });
                return;
            }
            for word in span.unicode_words() {
                // A combining mark after white space joins it in one UAX #29 segment
                // (" \u{670}"): the white space is no part of the term.
                let word = word.trim_matches(char::is_whitespace);
                if !word.is_empty() {
                    self.word(word, part);
                }
            }
        });
    }

    fn word<'t>(&self, word: &'t str, part: &mut impl FnMut(&'t str)) {
        if self.config.split_identifiers {
            split_identifier(word, &mut *part);
        } else {
            for p in word.split('_') {
                if p.chars().any(char::is_alphanumeric) {
                    part(p);
                }
            }
        }
    }

    /// Appends the term of identifier part `part` to `out` (lower-cased, stemmed if so
    /// configured) and returns true, or leaves `out` as it was and returns false when the term
    /// is a stop word to drop.
    fn emit(&self, part: &str, out: &mut String) -> bool {
        let start = out.len();
        if part.is_ascii() {
            out.push_str(part);
            if let Some(term) = out.get_mut(start..) {
                term.make_ascii_lowercase();
            }
        } else {
            // Not char by char: `str::to_lowercase` handles a final sigma.
            out.push_str(&part.to_lowercase());
        }
        if self.config.stop_words && out.get(start..).is_some_and(is_stop_word) {
            out.truncate(start);
            return false;
        }
        if self.config.stemming {
            stem_tail(out, start);
        }
        true
    }
}

/// The length of the term at the start of `out` once stemmed by `(keep, add_y)` (see
/// [`stem_cut`]), writing the `y` where the cut suffix was (so it fits).
fn apply_cut(out: &mut [u8], (keep, add_y): (usize, bool)) -> usize {
    if add_y && let Some(y) = out.get_mut(keep) {
        *y = b'y';
        return keep + 1;
    }
    keep
}

/// The `len` bytes (1 to 8) of the ASCII letters and digits at `bytes[start..]` lower-cased
/// (`| 0x20` maps `A-Z` to `a-z` and leaves `a-z` and `0-9` as they are) in one word, the first
/// in the lowest byte, zeros above them.
#[inline]
fn lower_word(bytes: &[u8], start: usize, len: usize) -> u64 {
    let rest = bytes.get(start..).unwrap_or_default();
    let word = match rest.first_chunk::<8>() {
        Some(chunk) => u64::from_le_bytes(*chunk),
        // Fewer than 8 bytes left in the text: gathered one at a time.
        None => rest
            .iter()
            .rev()
            .fold(0u64, |word, &b| word << 8 | u64::from(b)),
    };
    let kept = u64::MAX >> (64 - 8 * len.clamp(1, 8));
    (word | 0x2020_2020_2020_2020) & kept
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn with(split_identifiers: bool, stop_words: bool, stemming: bool) -> Tokenizer {
        Tokenizer::new(TokenizerConfig {
            split_identifiers,
            stop_words,
            stemming,
        })
    }

    /// The terms of `text` by the general path: Unicode words, then identifier parts, each
    /// lower-cased, checked and stemmed on its own, whatever the text. The reference the
    /// ASCII fast paths must match.
    fn general_terms(t: &Tokenizer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for word in text.unicode_words() {
            let word = word.trim_matches(char::is_whitespace);
            if word.is_empty() {
                continue;
            }
            t.word(word, &mut |part| {
                let mut term = String::new();
                if t.emit(part, &mut term) {
                    out.push(term);
                }
            });
        }
        out
    }

    /// The terms `tokenize_flat` (the store's path) gives for `text`.
    fn flat_terms(t: &Tokenizer, text: &str) -> Vec<String> {
        let (mut buf, mut ends) = (String::from("prefix"), vec![6]);
        t.tokenize_flat(text, &mut buf, &mut ends);
        ends.windows(2)
            .map(|w| buf[w[0]..w[1]].to_owned())
            .collect()
    }

    fn all_configs() -> Vec<Tokenizer> {
        (0..8)
            .map(|k| with(k & 1 != 0, k & 2 != 0, k & 4 != 0))
            .collect()
    }

    /// The terms of the buffered ASCII path with a buffer of `N` bytes.
    fn buffered_terms<const N: usize>(t: &Tokenizer, text: &str) -> Vec<String> {
        let (mut buf, mut ends) = (String::from("prefix"), vec![6]);
        t.ascii_terms_buffered::<N>(text, &mut buf, &mut ends);
        ends.windows(2)
            .map(|w| buf[w[0]..w[1]].to_owned())
            .collect()
    }

    fn assert_fast_paths_match(text: &str) {
        for t in all_configs() {
            let expected = general_terms(&t, text);
            assert_eq!(flat_terms(&t, text), expected, "{text:?} {:?}", t.config());
            assert_eq!(t.tokenize(text), expected, "{text:?} {:?}", t.config());
            if t.config().split_identifiers && text.is_ascii() {
                // Tiny buffers: every flush, and parts longer than the buffer.
                let c = t.config();
                assert_eq!(buffered_terms::<1>(&t, text), expected, "{text:?} {c:?}");
                assert_eq!(buffered_terms::<3>(&t, text), expected, "{text:?} {c:?}");
                assert_eq!(buffered_terms::<8>(&t, text), expected, "{text:?} {c:?}");
            }
        }
    }

    #[test]
    fn ascii_fast_paths_match_the_general_one_on_all_short_strings() {
        // Every 5-character string over one member of each class the splitting rules tell
        // apart (lower, upper, plural `s`, digit, in-word punctuation, a boundary).
        let alphabet = ['a', 'B', 's', 'S', '7', '_', '.', '\'', ',', ' '];
        crate::bm25::short_strings::for_each_string(&alphabet, 5, assert_fast_paths_match);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
        #[test]
        fn ascii_fast_paths_match_the_general_one(
            text in "([a-zA-Z0-9_.:',;!/ \t-]|the|The|IS|its|aN|APIs|getWeather|HTTPServer\
                     |parseJSON2XML|get_the_file|don't|user's|running|files|queries|copied\
                     |v2|3.14|1,000|x-ray|ABCsome|IDsFor){0,24}"
        ) {
            assert_fast_paths_match(&text);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2_000))]
        #[test]
        fn mostly_ascii_text_has_the_terms_of_the_general_path(
            text in "([a-zA-Z0-9_.:',; \t\n-]|The|getWeather|HTTPServer|don’t|’s|CO₂|°C|µg|—|é\
                     |\u{301}|\u{200D}|👍|天|ÄBC_déf|\u{2002}){0,24}"
        ) {
            assert_fast_paths_match(&text);
        }
    }

    fn tokens(text: &str) -> Vec<String> {
        with(true, false, false).tokenize(text)
    }

    #[test]
    fn identifiers_split_every_way() {
        for name in [
            "get_weather",
            "getWeather",
            "get-weather",
            "get.weather",
            "GetWeather",
        ] {
            assert_eq!(tokens(name), ["get", "weather"], "{name}");
        }
        assert_eq!(tokens("HTTPServer"), ["http", "server"]);
        assert_eq!(tokens("parseJSON2XML"), ["parse", "json", "2", "xml"]);
        assert_eq!(tokens("v2"), ["v", "2"]);
        assert_eq!(tokens("getPM2.5Level"), ["get", "pm", "2", "5", "level"]);
        assert_eq!(tokens("listAPIs"), ["list", "apis"]);
    }

    #[test]
    fn without_identifier_splitting_only_underscores_split() {
        let t = with(false, false, false);
        assert_eq!(t.tokenize("get_weather"), ["get", "weather"]);
        assert_eq!(t.tokenize("getWeather"), ["getweather"]);
        assert_eq!(t.tokenize("get.weather"), ["get.weather"]);
        assert_eq!(
            t.tokenize("get-weather"),
            ["get", "weather"],
            "UAX#29 splits on -"
        );
        assert_eq!(t.tokenize("v2 __x__"), ["v2", "x"]);
    }

    #[test]
    fn words_are_lower_cased_and_punctuation_dropped() {
        assert_eq!(
            tokens("Hello, WORLD! (Ünïcode)"),
            ["hello", "world", "ünïcode"]
        );
        assert_eq!(tokens("  ...  "), Vec::<String>::new());
        assert_eq!(tokens(""), Vec::<String>::new());
    }

    #[test]
    fn numbers_are_kept() {
        assert_eq!(tokens("top 10 in 2024"), ["top", "10", "in", "2024"]);
        assert_eq!(tokens("3.14"), ["3", "14"]);
    }

    #[test]
    fn stop_words_dropped_only_when_enabled() {
        let text = "Please get me the weather in Paris";
        assert_eq!(
            with(true, true, false).tokenize(text),
            ["get", "weather", "paris"]
        );
        assert_eq!(
            with(true, false, false).tokenize(text),
            ["please", "get", "me", "the", "weather", "in", "paris"]
        );
        // Domain words survive.
        assert_eq!(
            Tokenizer::default().tokenize("list new files search"),
            ["list", "new", "files", "search"]
        );
    }

    #[test]
    fn stop_words_apply_to_identifier_parts() {
        assert_eq!(
            Tokenizer::default().tokenize("get_the_weather"),
            ["get", "weather"]
        );
    }

    #[test]
    fn stemming_only_when_enabled() {
        assert_eq!(
            with(true, true, true).tokenize("Creating files"),
            ["creat", "fil"]
        );
        assert_eq!(
            with(true, true, false).tokenize("Creating files"),
            ["creating", "files"]
        );
    }

    #[test]
    fn other_scripts_do_not_panic() {
        let t = Tokenizer::default();
        assert_eq!(t.tokenize("天气预报"), ["天", "气", "预", "报"]);
        assert_eq!(t.tokenize("مرحبا بالعالم"), ["مرحبا", "بالعالم"]);
        assert_eq!(t.tokenize("weather ☀️🌧️ 👨‍👩‍👧 now"), ["weather", "now"]);
        assert_eq!(t.tokenize("Straße İstanbul"), ["straße", "i̇stanbul"]);
        assert!(t.tokenize("\u{0301}\u{200D}\u{FE0F}").is_empty());
        let _ = with(false, true, true).tokenize("天气 مرحبا 👍 ÄBC_déf");
    }

    #[test]
    fn tokenize_into_appends() {
        let t = Tokenizer::default();
        let mut out = vec!["x".to_string()];
        t.tokenize_into("readFile", &mut out);
        t.tokenize_into("now", &mut out);
        assert_eq!(out, ["x", "read", "file", "now"]);
    }

    #[test]
    fn a_megabyte_of_any_input_is_linear() {
        let inputs = [
            "a".repeat(1 << 20),
            "aB".repeat(1 << 19),
            "a1".repeat(1 << 19),
            "_.".repeat(1 << 19),
            "Ab_".repeat(1 << 18),
            "1.".repeat(1 << 19),
            "é\u{301}".repeat(1 << 18),
            "天".repeat(1 << 18),
            "👍".repeat(1 << 18),
            "word ".repeat(1 << 18),
        ];
        for input in &inputs {
            let started = Instant::now();
            for config in [with(true, true, true), with(false, false, false)] {
                let _ = config.tokenize(input);
            }
            let took = started.elapsed();
            assert!(
                took < Duration::from_secs(5),
                "{took:?} for {:?}…",
                &input[..8]
            );
        }
    }
}
