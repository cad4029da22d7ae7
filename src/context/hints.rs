//! Hints: what a message implies beyond its own words, added to its query ([`HintPolicy`],
//! which says what and why).
//!
//! Cost: a [`ContextBuilder`](super::ContextBuilder) reads its policy's phrase table once,
//! into a map from each phrase's first word ([`HintMatcher`]); a message then costs one
//! lowercased copy, a split into words, a map look-up per word and a shape check of the words
//! that hold `#`, `@`, `.`, `/`, `~` or `+`: about 1 µs for a dozen words. A turn reads its
//! message and the earlier messages of its query.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::bm25::hash::StrState;

/// The shapes of things a message names that [`HintPolicy::shapes`] can read a hint from.
/// Each is recognized in one word of the message (split at white space, with surrounding
/// punctuation such as `(`, `,` or `?` set aside).
///
/// ```
/// use capstore::context::Shape;
/// assert!(Shape::Channel.matches("#incidents") && !Shape::Channel.matches("#812"));
/// assert!(Shape::IssueNumber.matches("#812"));
/// assert!(Shape::EmailAddress.matches("legal@acme.com") && !Shape::Mention.matches("legal@acme.com"));
/// assert!(Shape::FilePath.matches("etl_daily.py") && Shape::FilePath.matches("~/Desktop"));
/// assert!(!Shape::FilePath.matches("auth.example.com") && !Shape::FilePath.matches("24/7"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// `#name`: a chat channel (a letter after the `#`).
    Channel,
    /// `#123`: an issue or pull request number.
    IssueNumber,
    /// `@name`: a person or team mentioned.
    Mention,
    /// `name@domain.tld`.
    EmailAddress,
    /// `http://…`, `https://…` or `www.…`.
    Url,
    /// A path (`~/…`, `./…`, `../…`, `/…`) or a file name with a common extension
    /// (`report.pdf`, `src/parser.rs`).
    FilePath,
    /// `+` and a digit: an international phone number.
    PhoneNumber,
}

/// File name extensions that [`Shape::FilePath`] recognizes: code, text, data, documents,
/// images, archives.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cfg", "conf", "cpp", "css", "csv", "doc", "docx", "env", "gif", "go", "gz", "h", "html",
    "ini", "ipynb", "java", "jpeg", "jpg", "js", "json", "jsx", "kt", "log", "md", "pdf", "png",
    "pptx", "py", "rb", "rs", "sh", "sql", "svg", "swift", "tar", "toml", "ts", "tsv", "tsx",
    "txt", "webp", "xls", "xlsx", "xml", "yaml", "yml", "zip",
];

impl Shape {
    /// Whether `word` (one white-space-separated word, punctuation around it allowed) has this
    /// shape.
    ///
    /// ```
    /// use capstore::context::Shape;
    /// assert!(Shape::Url.matches("(https://example.com/a)") && Shape::PhoneNumber.matches("+44"));
    /// ```
    pub fn matches(self, word: &str) -> bool {
        let word = trim(word);
        let after = |prefix: char| word.strip_prefix(prefix).unwrap_or("");
        match self {
            Shape::Channel => starts_name(after('#')),
            Shape::IssueNumber => {
                let digits = after('#');
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
            }
            Shape::Mention => starts_name(after('@')),
            Shape::EmailAddress => match word.split_once('@') {
                Some((local, domain)) => {
                    !local.is_empty()
                        && !domain.contains('@')
                        && domain.split('.').count() >= 2
                        && domain.split('.').all(|part| !part.is_empty())
                }
                None => false,
            },
            Shape::Url => ["http://", "https://", "www."]
                .iter()
                .any(|p| word.len() > p.len() && word.starts_with(p)),
            Shape::FilePath => {
                if Shape::Url.matches(word) || word.contains('@') {
                    return false;
                }
                let rooted = ["~/", "./", "../", "/"]
                    .iter()
                    .any(|p| word.strip_prefix(p).is_some_and(starts_name_or_empty));
                let extension = word.rsplit_once('.').is_some_and(|(stem, ext)| {
                    !stem.is_empty()
                        && !stem.ends_with('/')
                        && FILE_EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(ext))
                });
                rooted || extension
            }
            Shape::PhoneNumber => {
                let rest = after('+');
                rest.bytes().next().is_some_and(|b| b.is_ascii_digit())
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b"-()".contains(&b))
            }
        }
    }
}

/// `word` without the punctuation a sentence puts around it.
fn trim(word: &str) -> &str {
    word.trim_start_matches(['(', '[', '"', '\'', '`', '<'])
        .trim_end_matches([')', ']', '"', '\'', '`', '>', ',', '.', '?', '!', ';', ':'])
}

/// Whether `s` starts with a letter and goes on with letters, digits, `-`, `_` or `.`.
fn starts_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(char::is_alphabetic)
        && chars.all(|c| c.is_alphanumeric() || "-_.".contains(c))
}

fn starts_name_or_empty(s: &str) -> bool {
    s.is_empty()
        || s.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '.')
}

/// A shape and the terms a word of that shape adds to the query.
///
/// ```
/// use capstore::context::{Shape, ShapeHint};
/// let hint = ShapeHint::new(Shape::Channel, "channel");
/// assert_eq!(hint.terms, "channel");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeHint {
    /// The shape.
    pub shape: Shape,
    /// The terms added (tokenized as any query text is).
    pub terms: String,
}

impl ShapeHint {
    /// Words of shape `shape` add `terms`.
    ///
    /// ```
    /// let hint = capstore::context::ShapeHint::new(capstore::context::Shape::Url, "web page");
    /// assert_eq!(hint.shape, capstore::context::Shape::Url);
    /// ```
    pub fn new(shape: Shape, terms: impl Into<String>) -> Self {
        ShapeHint {
            shape,
            terms: terms.into(),
        }
    }
}

/// A phrase and the terms it adds to the query when the message says it.
///
/// The phrase is lowercase words, matched against the message's words (Unicode words,
/// lowercased: `#releases` is the word `releases`, `when's` one word) in order and next to each
/// other; `*` stands for one to three words. A message that also says one of the `unless`
/// phrases gets no hint from it.
///
/// ```
/// use capstore::context::PhraseHint;
/// let hint = PhraseHint::new("let * know", "send message").unless(["let me know"]);
/// assert!(hint.matches("let #releases know") && hint.matches("Let the whole team know!"));
/// assert!(!hint.matches("check the logs and let me know"));
/// assert!(!PhraseHint::new("tell", "send message").matches("hotel"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhraseHint {
    /// The phrase: lowercase words, `*` for one to three words.
    pub phrase: String,
    /// The terms added (tokenized as any query text is).
    pub terms: String,
    /// Phrases that, said in the same message, cancel this one (same form). Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unless: Vec<String>,
}

impl PhraseHint {
    /// `phrase` adds `terms`.
    ///
    /// ```
    /// let hint = capstore::context::PhraseHint::new("ack", "acknowledge");
    /// assert_eq!((hint.phrase.as_str(), hint.terms.as_str()), ("ack", "acknowledge"));
    /// ```
    pub fn new(phrase: impl Into<String>, terms: impl Into<String>) -> Self {
        PhraseHint {
            phrase: phrase.into(),
            terms: terms.into(),
            unless: Vec::new(),
        }
    }

    /// This hint, cancelled in a message that says any of `phrases`.
    ///
    /// ```
    /// let hint = capstore::context::PhraseHint::new("tell", "send message").unless(["tell me"]);
    /// assert!(hint.matches("tell Ana") && !hint.matches("tell me what Ana said"));
    /// ```
    pub fn unless<S: Into<String>>(mut self, phrases: impl IntoIterator<Item = S>) -> Self {
        self.unless.extend(phrases.into_iter().map(Into::into));
        self
    }

    /// Whether `message` says the phrase (and none of its `unless` phrases).
    ///
    /// ```
    /// let hint = capstore::context::PhraseHint::new("show me", "read get");
    /// assert!(hint.matches("ok, show me etl_daily.py") && !hint.matches("me show"));
    /// ```
    pub fn matches(&self, message: &str) -> bool {
        let text = phrase_text(message);
        let words: Vec<&str> = words_of(&text).collect();
        let compiled = Compiled::new(0, self);
        compiled.says_at_any(&words)
    }
}

/// The hint tables: what a message's shapes and phrases add to its query, and at what weight.
///
/// People ask an assistant the way they talk: "tell #status we're recovering", "text her the
/// address", "show me etl_daily.py", "ack the page". The tools they need say "Post a message to
/// a Slack channel", "Send an SMS text message", "Read a text file", "Acknowledge an alert":
/// BM25 finds none of those words in the message, and the conversation's history outvotes
/// what little it does find. Two kinds of hint close part of that gap:
///
/// - **Things the message names, by their shape** ([`Shape`]): `#status` is a channel, `#812`
///   an issue, `@lena` a mention, `legal@acme.com` an email address, `https://…` a URL,
///   `etl_daily.py` or `~/notes/` a file, `+1 415 555 0199` a phone number.
/// - **Chat phrasings of common actions** ([`PhraseHint`]): "tell", "ping", "let … know" mean
///   *send a message*; "text her" an SMS; "ack" *acknowledge*; "show me" *read, get*; "when's
///   my" a calendar's events. A phrase is not read inside a quotation: that is a value the
///   person gives (put a "Welcome Felix" lunch in my calendar), not what they ask for.
///
/// Each hint found adds its terms to the query, at [`HintPolicy::weight`] of the message's own
/// words (an earlier message's hints at that message's weight), and in hybrid retrieval to the
/// text embedded for the message ([`HintPolicy::embedding_text`]). Every channel of a turn
/// reads them: the message alone, the message with its history, and the skills' search. The
/// tables are the policy's, in JSON like the rest of it: a catalog in another language, or with
/// its own vocabulary, sets its own ([`HintPolicy::none`] turns them off). The defaults were
/// written from the development conversations' misses (BENCHMARKS.md, "Conversations") and
/// speak of actions most agents have (messages, email, files, calendars, issues), not of any
/// one catalog's tool names.
///
/// ```
/// use capstore::context::{HintPolicy, SelectionPolicy};
/// let p = HintPolicy::default();
/// assert!(p.weight > 0.0 && !p.phrases.is_empty() && !p.shapes.is_empty());
/// let found = p.hints("tell #status we're recovering");
/// let terms: Vec<&str> = found.iter().map(|h| h.terms).collect();
/// assert_eq!(terms, ["channel", "send message"]);
/// // In a policy's JSON: {"hints": {"phrases": [{"phrase": "ping", "terms": "send message"}]}}
/// let off = SelectionPolicy { hints: HintPolicy::none(), ..SelectionPolicy::default() };
/// assert!(off.hints.hints("tell #status we're recovering").is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HintPolicy {
    /// The hinted terms' weight, relative to the words of the message they were read from
    /// (0..=1; 0 turns hints off). Default 1: a hint's few terms count as the message's own
    /// words do, and BM25's rarity weighting rates them as it rates those.
    pub weight: f32,
    /// Shapes of words and the terms each adds. Default: a channel adds `channel`, an issue
    /// number `issue`, a mention `mention`, an email address `email address`, a URL `url web
    /// page`, a file `file`, a phone number `phone number`.
    pub shapes: Vec<ShapeHint>,
    /// Phrases and the terms each adds. Default: [`HintPolicy::default_phrases`].
    pub phrases: Vec<PhraseHint>,
}

impl Default for HintPolicy {
    fn default() -> Self {
        HintPolicy {
            weight: 1.0,
            shapes: vec![
                ShapeHint::new(Shape::Channel, "channel"),
                ShapeHint::new(Shape::IssueNumber, "issue"),
                ShapeHint::new(Shape::Mention, "mention"),
                ShapeHint::new(Shape::EmailAddress, "email address"),
                ShapeHint::new(Shape::Url, "url web page"),
                ShapeHint::new(Shape::FilePath, "file"),
                ShapeHint::new(Shape::PhoneNumber, "phone number"),
            ],
            phrases: HintPolicy::default_phrases(),
        }
    }
}

/// A hint found in a message: what was read, and the terms it adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Hint<'a> {
    /// The phrase that matched, or for a shape the message's first word of that shape
    /// (`#status`), without the punctuation around it.
    pub read: &'a str,
    /// The shape, for a shape's hint; `None` for a phrase's.
    pub shape: Option<Shape>,
    /// The terms it adds to the query.
    pub terms: &'a str,
}

impl HintPolicy {
    /// No hints: the query is the message's own words.
    ///
    /// ```
    /// assert!(capstore::context::HintPolicy::none().hints("text her #812").is_empty());
    /// ```
    pub fn none() -> Self {
        HintPolicy {
            weight: 0.0,
            shapes: Vec::new(),
            phrases: Vec::new(),
        }
    }

    /// The default phrases: chat phrasings of sending a message ("tell", "ping", "dm",
    /// "notify", "let … know"; not "tell me", "let me know" and the like), an SMS ("text her", "by text") or an
    /// email ("email it", "email the"), of acknowledging ("ack"), showing ("show me", "pull
    /// up"), pulling data ("pull it"), moving one's own appointments ("push my", "move my"),
    /// asking when one's appointment is ("when's my") and asking where code uses something
    /// ("where do we use").
    ///
    /// ```
    /// let phrases = capstore::context::HintPolicy::default_phrases();
    /// assert!(phrases.iter().any(|p| p.phrase == "let * know" && p.terms == "send message"));
    /// ```
    pub fn default_phrases() -> Vec<PhraseHint> {
        // (phrases, the terms they add, phrases that cancel them)
        let table: &[(&[&str], &str, &[&str])] = &[
            (
                &[
                    "tell",
                    "post",
                    "ping",
                    "dm",
                    "notify",
                    "welcome",
                    "announce",
                    "let * know",
                ],
                "send message",
                &[
                    "tell me",
                    "tell us",
                    "notify me",
                    "let me know",
                    "let us know",
                ],
            ),
            (
                &[
                    "text it",
                    "text her",
                    "text him",
                    "text them",
                    "text me",
                    "text us",
                    "text this",
                    "text that",
                    "text all",
                    "by text",
                    "via text",
                ],
                "send sms text message",
                &[],
            ),
            (
                &[
                    "email it",
                    "email her",
                    "email him",
                    "email them",
                    "email me",
                    "email us",
                    "email this",
                    "email that",
                    "email all",
                    "email the",
                ],
                "send email",
                &[],
            ),
            (&["ack"], "acknowledge", &[]),
            (&["show me", "pull up"], "show read get", &[]),
            (&["pull it", "pull that", "pull them"], "query get", &[]),
            (&["push my", "move my"], "reschedule update", &[]),
            (
                &["when's my", "when is my", "what time is my", "what's on my"],
                "calendar events",
                &[],
            ),
            (
                &[
                    "who last changed",
                    "who last touched",
                    "who changed",
                    "who touched",
                ],
                "blame history",
                &[],
            ),
            (&["open a", "file a", "raise a"], "create", &[]),
            (&["pics", "photos", "pictures"], "images", &[]),
            (&["how do i say"], "translate", &[]),
            (
                &[
                    "where do we use",
                    "where else do we use",
                    "where in the code",
                ],
                "search code",
                &[],
            ),
        ];
        table
            .iter()
            .flat_map(|(phrases, terms, unless)| {
                phrases
                    .iter()
                    .map(|p| PhraseHint::new(*p, *terms).unless(unless.iter().copied()))
            })
            .collect()
    }

    /// The hints `message` gives: first its shapes (each shape once, in table order), then its
    /// phrases (each once, in table order). Empty when `weight` is 0. (A
    /// [`ContextBuilder`](super::ContextBuilder) reads its policy's tables once, when it is
    /// made; this reads them at each call.)
    ///
    /// ```
    /// let p = capstore::context::HintPolicy::default();
    /// let found = p.hints("email the pdf to legal@acme.com.");
    /// assert_eq!(found.iter().map(|h| h.read).collect::<Vec<_>>(), ["legal@acme.com", "email the"]);
    /// assert_eq!(found[0].shape, Some(capstore::context::Shape::EmailAddress));
    /// ```
    pub fn hints<'a>(&'a self, message: &'a str) -> Vec<Hint<'a>> {
        HintMatcher::new(self).hints(self, message)
    }

    /// The text hybrid retrieval embeds for `message`: the message, then its hints' terms in
    /// parentheses (`tell #status we're up (channel send message)`); the message itself when
    /// it gives none. A caller that embeds messages itself
    /// ([`Turn::with_query_vector`](super::Turn::with_query_vector)) embeds this text.
    ///
    /// ```
    /// let p = capstore::context::HintPolicy::default();
    /// assert_eq!(p.embedding_text("ack the page"), "ack the page (acknowledge)");
    /// assert_eq!(p.embedding_text("weather in Oslo"), "weather in Oslo");
    /// ```
    pub fn embedding_text<'m>(&self, message: &'m str) -> Cow<'m, str> {
        HintMatcher::new(self).embedding_text(self, message)
    }

    pub(super) fn validate(&self) -> Result<(), super::PolicyError> {
        if !(0.0..=1.0).contains(&self.weight) {
            return Err(super::PolicyError {
                field: "hints.weight",
                reason: "must be between 0 and 1",
            });
        }
        Ok(())
    }
}

/// `message` lowercased, with typographic apostrophes (`’`) made plain.
fn lowercase(message: &str) -> String {
    let lower = message.to_lowercase();
    if lower.contains('’') {
        lower.replace('’', "'")
    } else {
        lower
    }
}

/// `message` as phrases read it: lowercased ([`lowercase`]), each quotation's text blanked. A
/// quotation is a value the person gives (a title, a text to send: put a "Welcome Felix"
/// lunch in my calendar), not what they ask for, so no phrase is read in it.
fn phrase_text(message: &str) -> String {
    let lower = lowercase(message);
    let spans = quotations(&lower);
    if spans.is_empty() {
        return lower;
    }
    let mut bytes = lower.into_bytes();
    for span in spans {
        // ASCII bytes only: a character of several bytes stays whole, so the text stays UTF-8.
        for byte in bytes.get_mut(span).into_iter().flatten() {
            if byte.is_ascii() {
                *byte = b' ';
            }
        }
    }
    String::from_utf8(bytes).unwrap_or_default()
}

/// The quotations of `text`, each from its opening mark up to (not including) its closing
/// one, as byte ranges. A quote mark (`"` or `'`) opens one at the start of the text or after
/// a space, an opening bracket or a colon, and the same mark closes it where it ends a word
/// (before a space, punctuation or the end). A mark that nothing closes opens nothing, nor
/// does any later mark of its kind; an apostrophe inside a word ("don't") opens nothing.
pub(super) fn quotations(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut unclosed: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let opener = match bytes.get(i) {
            Some(&q @ (b'"' | b'\''))
                if !unclosed.contains(&q)
                    && (i == 0 || matches!(bytes.get(i - 1), Some(b' ' | b'(' | b'[' | b':'))) =>
            {
                Some(q)
            }
            _ => None,
        };
        if let Some(quote) = opener {
            let closing = (i + 1..bytes.len()).find(|&j| {
                bytes.get(j) == Some(&quote)
                    && !bytes.get(j + 1).is_some_and(u8::is_ascii_alphanumeric)
            });
            match closing {
                Some(end) => {
                    spans.push(i..end);
                    i = end;
                }
                None => unclosed.push(quote),
            }
        }
        i += 1;
    }
    spans
}

/// The words of a lowercased text as hints read them: runs of letters, digits and
/// apostrophes (`#releases` is `releases`, `when's` one word).
fn words_of(lower: &str) -> impl Iterator<Item = &str> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
}

/// A phrase's words as [`words_of`] splits them, `*` kept.
fn phrase_words(phrase: &str) -> Vec<Box<str>> {
    let mut words = Vec::new();
    for token in phrase.split_whitespace() {
        if token == "*" {
            words.push("*".into());
        } else {
            words.extend(words_of(&lowercase(token)).map(Box::from));
        }
    }
    words
}

/// Whether `phrase` matches `words` from `at` on (`*` one to three words).
fn matches_at(phrase: &[Box<str>], words: &[&str], at: usize) -> bool {
    let Some((first, rest)) = phrase.split_first() else {
        return true;
    };
    if &**first == "*" {
        return (1..=3).any(|n| at + n <= words.len() && matches_at(rest, words, at + n));
    }
    words.get(at) == Some(&&**first) && matches_at(rest, words, at + 1)
}

/// One phrase hint, split into words.
#[derive(Debug, Clone)]
struct Compiled {
    /// Its index in the policy's `phrases`.
    index: usize,
    words: Vec<Box<str>>,
    unless: Vec<Vec<Box<str>>>,
}

impl Compiled {
    fn new(index: usize, hint: &PhraseHint) -> Self {
        Compiled {
            index,
            words: phrase_words(&hint.phrase),
            unless: hint.unless.iter().map(|u| phrase_words(u)).collect(),
        }
    }

    /// Whether the phrase is said from `at` on.
    fn says_at(&self, words: &[&str], at: usize) -> bool {
        !self.words.is_empty() && matches_at(&self.words, words, at)
    }

    /// Whether the phrase is said anywhere, and none of its `unless` phrases is.
    fn says_at_any(&self, words: &[&str]) -> bool {
        (0..words.len()).any(|at| self.says_at(words, at)) && !self.cancelled(words)
    }

    fn cancelled(&self, words: &[&str]) -> bool {
        self.unless
            .iter()
            .any(|u| !u.is_empty() && (0..words.len()).any(|at| matches_at(u, words, at)))
    }
}

/// A [`HintPolicy`]'s phrases read once, for the many messages a builder selects for: each
/// phrase split into words and found by its first word, so a message's hints cost a look-up
/// per word rather than a pass per phrase.
#[derive(Debug, Clone)]
pub(crate) struct HintMatcher {
    phrases: Vec<Compiled>,
    /// Indexes into `phrases` by their first word; `*` for phrases that start with one. Keyed
    /// by the terms' hash, where SipHash was a third of reading a long message's hints (a
    /// message's words are looked up, never added: no flooding to fear).
    by_first: HashMap<Box<str>, Vec<usize>, StrState>,
}

impl Default for HintMatcher {
    fn default() -> Self {
        HintMatcher::new(&HintPolicy::default())
    }
}

impl HintMatcher {
    pub(crate) fn new(policy: &HintPolicy) -> Self {
        let phrases: Vec<Compiled> = policy
            .phrases
            .iter()
            .enumerate()
            .map(|(i, hint)| Compiled::new(i, hint))
            .collect();
        let mut by_first: HashMap<Box<str>, Vec<usize>, StrState> = HashMap::default();
        for (i, phrase) in phrases.iter().enumerate() {
            if let Some(first) = phrase.words.first() {
                by_first.entry(first.clone()).or_default().push(i);
            }
        }
        HintMatcher { phrases, by_first }
    }

    /// [`HintPolicy::hints`], with `policy` the policy this matcher was made from.
    pub(crate) fn hints<'a>(&self, policy: &'a HintPolicy, message: &'a str) -> Vec<Hint<'a>> {
        let mut found = Vec::new();
        if policy.weight <= 0.0 {
            return found;
        }
        // Every shape has one of these characters; most words have none.
        let marked: Vec<&str> = message
            .split_whitespace()
            .filter(|w| w.contains(['#', '@', '.', '/', '~', '+']))
            .collect();
        if !marked.is_empty() {
            for hint in &policy.shapes {
                if let Some(word) = marked.iter().find(|w| hint.shape.matches(w)) {
                    found.push(Hint {
                        read: trim(word),
                        shape: Some(hint.shape),
                        terms: &hint.terms,
                    });
                }
            }
        }
        if self.phrases.is_empty() {
            return found;
        }
        let text = phrase_text(message);
        let words: Vec<&str> = words_of(&text).collect();
        let wild = self.by_first.get("*").map_or(&[][..], Vec::as_slice);
        let mut said: Vec<usize> = Vec::new();
        for (at, word) in words.iter().enumerate() {
            let named = self.by_first.get(*word).map_or(&[][..], Vec::as_slice);
            for &i in named.iter().chain(wild) {
                if let Some(phrase) = self.phrases.get(i)
                    && !said.contains(&i)
                    && phrase.says_at(&words, at)
                {
                    said.push(i);
                }
            }
        }
        said.sort_unstable();
        for i in said {
            let Some(phrase) = self.phrases.get(i) else {
                continue;
            };
            if phrase.cancelled(&words) {
                continue;
            }
            if let Some(hint) = policy.phrases.get(phrase.index) {
                found.push(Hint {
                    read: &hint.phrase,
                    shape: None,
                    terms: &hint.terms,
                });
            }
        }
        found
    }

    /// [`HintPolicy::embedding_text`], with `policy` the policy this matcher was made from.
    pub(crate) fn embedding_text<'m>(&self, policy: &HintPolicy, message: &'m str) -> Cow<'m, str> {
        let hints = self.hints(policy, message);
        with_terms(message, hints.iter().map(|h| h.terms))
    }
}

/// The text embedded for `message` whose hints add `terms`: the message, then the terms in
/// parentheses; the message itself when there are none.
pub(crate) fn with_terms<'m, 't>(
    message: &'m str,
    terms: impl IntoIterator<Item = &'t str>,
) -> Cow<'m, str> {
    let terms: Vec<&str> = terms.into_iter().collect();
    if terms.is_empty() {
        return message.into();
    }
    format!("{message} ({})", terms.join(" ")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_read_the_words_they_name() {
        let cases: &[(Shape, &str, bool)] = &[
            (Shape::Channel, "#sales-ops", true),
            (Shape::Channel, "#", false),
            (Shape::Channel, "C#", false),
            (Shape::IssueNumber, "(#233)", true),
            (Shape::IssueNumber, "#233a", false),
            (Shape::Mention, "@lena,", true),
            (Shape::Mention, "@", false),
            (Shape::EmailAddress, "partners@rivetstudio.ca.", true),
            (Shape::EmailAddress, "a@b", false),
            (Shape::EmailAddress, "@lena", false),
            (Shape::Url, "https://x.io", true),
            (Shape::Url, "https://", false),
            (Shape::FilePath, "deploy/k8s/checkout-api.yaml", true),
            (Shape::FilePath, "~/Desktop/screenshot_1422.png", true),
            (Shape::FilePath, "reports/churn_2024.csv", true),
            (Shape::FilePath, "staging.orders", false),
            (Shape::FilePath, "$0.34/h", false),
            (Shape::FilePath, "e.g.", false),
            (Shape::FilePath, "legal@acme.com", false),
            (Shape::FilePath, "https://x.io/a.pdf", false),
            (Shape::PhoneNumber, "+1", true),
            (Shape::PhoneNumber, "+", false),
            (Shape::PhoneNumber, "+x1", false),
        ];
        for &(shape, word, expected) in cases {
            assert_eq!(shape.matches(word), expected, "{shape:?} on {word:?}");
        }
    }

    #[test]
    fn a_wildcard_takes_one_to_three_words() {
        let hint = PhraseHint::new("let * know", "send message");
        assert!(hint.matches("let Tom know"));
        assert!(hint.matches("let the whole team know"));
        assert!(!hint.matches("let know"));
        assert!(!hint.matches("let the whole sales team know"));
        assert!(PhraseHint::new("when's my", "x").matches("When's my 1:1?"));
        assert!(!PhraseHint::new("", "x").matches("anything"));
    }

    #[test]
    fn no_phrase_is_read_inside_a_quotation() {
        let p = HintPolicy::default();
        let read = |message| -> Vec<&str> { p.hints(message).iter().map(|h| h.read).collect() };
        // The event's title says "welcome"; the person asks for a calendar entry.
        assert!(read("put a \"Welcome Felix\" lunch in my calendar").is_empty());
        assert_eq!(read("welcome Felix in #general"), ["#general", "welcome"]);
        // Outside the quotation the phrase is read as ever; inside, no.
        assert_eq!(read("text him 'see you at 5'"), ["text him"]);
        assert!(read("the note 'text him later' is done").is_empty());
        let hint = PhraseHint::new("text him", "sms");
        assert!(hint.matches("text him now") && !hint.matches("save the note 'text him'"));
    }

    #[test]
    fn quotations_open_after_a_space_and_close_at_a_words_end() {
        let spans = |text| -> Vec<(usize, usize)> {
            quotations(text)
                .into_iter()
                .map(|r| (r.start, r.end))
                .collect()
        };
        assert_eq!(spans("say \"hi, Bo\" to him"), [(4, 11)]);
        assert_eq!(spans("'a' and \"b\""), [(0, 2), (8, 10)]);
        // An apostrophe inside a word opens nothing, nor a mark that nothing closes, nor any
        // later mark of its kind.
        assert!(spans("don't restart it").is_empty());
        assert!(spans("rename the 'draft folder, then 'x").is_empty());
        // A mark of the other kind inside a quotation is part of it.
        assert_eq!(spans("note \"it's 'fine'\" now"), [(5, 17)]);
    }

    #[test]
    fn hints_come_once_each_in_table_order() {
        let p = HintPolicy::default();
        let found = p.hints("tell #a and tell #b, then ping @c");
        let read: Vec<&str> = found.iter().map(|h| h.read).collect();
        assert_eq!(read, ["#a", "@c", "tell", "ping"]);
        let off = HintPolicy {
            weight: 0.0,
            ..HintPolicy::default()
        };
        assert!(off.hints("tell #a").is_empty());
    }

    #[test]
    fn the_policy_reads_and_checks_its_json() {
        let p: HintPolicy = serde_json::from_str(
            r#"{"weight": 0.3, "shapes": [{"shape": "file_path", "terms": "datei"}],
                "phrases": [{"phrase": "schick * an", "terms": "senden"}]}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let found = p.hints("schick die notes.md an Anna");
        assert_eq!(
            found,
            [
                Hint {
                    read: "notes.md",
                    shape: Some(Shape::FilePath),
                    terms: "datei"
                },
                Hint {
                    read: "schick * an",
                    shape: None,
                    terms: "senden"
                }
            ]
        );
        let bad = HintPolicy {
            weight: 1.5,
            ..HintPolicy::none()
        };
        assert_eq!(bad.validate().map_err(|e| e.field), Err("hints.weight"));
    }
}
