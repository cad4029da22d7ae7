//! A message's asks: the separate things one message asks for.
//!
//! "Refund the last Stripe payment from customer alice@example.com and email her a receipt"
//! asks for two things; searched whole, its ranking follows whichever ask has the most words
//! the catalog shares (or the skill they match), and the other ask's tool can fall off the
//! list. So a message is cut into asks, and each is searched on its own
//! ([`ContextBuilder::ask_channel`](super::ContextBuilder)):
//!
//! - each line of a message of several lines (a list item's marker, `-`, `*`, `•`, `1.`,
//!   `2)`, is left out);
//! - each sentence of a line;
//! - each clause of a sentence, cut at a comma or a semicolon, or before a joining word that
//!   starts a new request (`and`, `then`, `and then`, `also`, `plus`, `as well as`, `after
//!   that`); never inside brackets ("(src/billing/tax.py, line 12)"), a quotation ("'Q1:
//!   $5000, Q2: $7000'") or a number ("4,200").
//!
//! A piece of fewer than [`ASK_WORDS`] words that name something ("and Lisbon", "then
//! commit", "tires"; a value such as "billing@greenleaf.co" is one such word, a number none)
//! stays with the piece before it: it names no request of its own. A piece that states rather
//! than asks ("the customer got billed twice", "I'm going to Rome 9–12 May.": it opens with a
//! subject, a possessive or "the", and is no question, no want and not addressed to the agent)
//! is an ask whose [`Ask::request`] is false: it counts, and is read, with the message, but
//! brings no tool of its own. A message that
//! comes out as one piece has one ask, itself, and no ask channel. A selection reads a
//! follow-up, and a message of more clauses than `message.max_asks`, by its sentences and
//! lines only (a follow-up's clauses point back; a query that names many tools in a few
//! sentences is better read by them). Cost: a pass over each
//! sentence's bytes (a lower-cased copy of it) and its words; a few small lists.

use crate::bm25::ascii_words::{has_word, word_count, words};
use crate::bm25::stop_words::is_stop_word_any_case;

use super::hints::quotations;
use super::policy::SelectionPolicy;
use super::sentences::sentences as line_sentences;

/// The fewest words an ask needs, its joining word, stop words (`a`, `the`, `it`, ...) and
/// numbers not counted, a value ("billing@greenleaf.co") counted once: a shorter piece of a
/// message ("and Lisbon", "and a file", "Thanks.", "555-0142") names no request of its own;
/// "format the code" does.
///
/// ```
/// assert_eq!(capstore::context::ASK_WORDS, 2);
/// ```
pub const ASK_WORDS: usize = 2;

/// The fewest words of a sentence that is an ask when clauses are not cut (a follow-up's).
const SENTENCE_WORDS: usize = 4;

/// The words that, between two clauses, start a new request; longest first, as they are
/// tried. Matched whole and case-insensitively, after a space or a comma, before a space or a
/// comma.
const JOINERS: &[&str] = &[
    "and after that",
    "and then",
    "and also",
    "as well as",
    "after that",
    "and",
    "then",
    "also",
    "plus",
];

/// The words after which the next "and" pairs two things rather than starting a request
/// ("between a rolling and a canary deploy", "both the logs and the metrics").
const PAIRS: &[&str] = &["between", "both"];

/// One ask of a message: a slice of it, and its place among the message's asks (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'m> {
    /// The ask's text, borrowed from the message, its joining word and list marker left out.
    pub text: &'m str,
    /// Its place among the message's asks, from 1.
    pub position: u32,
    /// Whether it asks for something (a question, an imperative, a want), rather than giving
    /// the asks around it their context ("the customer got billed twice", "I'm going to Rome
    /// 9–12 May."): a statement is read with the message but brings no tool of its own.
    pub request: bool,
}

/// The asks of `message`, in the message's order. A message of one ask gives one, the message
/// itself (trimmed); an empty message none.
///
/// ```
/// use capstore::context::asks;
/// let texts: Vec<&str> = asks("refund the last payment from alice@example.com and email her a receipt")
///     .iter().map(|a| a.text).collect();
/// assert_eq!(texts, ["refund the last payment from alice@example.com", "email her a receipt"]);
/// // "and Lisbon" names no request of its own.
/// assert_eq!(asks("find flights between Berlin and Lisbon").len(), 1);
/// // A statement is an ask that asks for nothing: it brings no tool of its own.
/// let requests: Vec<bool> = asks("refund it in full, the customer got billed twice")
///     .iter().map(|a| a.request).collect();
/// assert_eq!(requests, [true, false]);
/// ```
pub fn asks(message: &str) -> Vec<Ask<'_>> {
    asks_in(message, true, usize::MAX)
}

/// The asks a selection searches in `message`, and how many the request has. A message's
/// asks are its clauses; but on a follow-up (whose clauses often point back: "and send it to
/// her", while the list it extends is carried) they are its sentences and lines, and a message
/// of more clauses than `message.max_asks` (a query that names many tools in a few sentences)
/// is searched by its sentences and lines while its clauses still size it. At most
/// [`SelectionPolicy::asks_that_count`] of either.
pub(super) fn asks_for_selection<'m>(
    message: &'m str,
    follow_up: bool,
    policy: &SelectionPolicy,
) -> (Vec<Ask<'m>>, usize) {
    let at_most = policy.asks_that_count();
    // The sentences the first reading met are kept for the second, which reads them again.
    let mut sentences = sentences(message);
    let mut met = Vec::new();
    let pieces = pieces_of(
        sentences.by_ref().inspect(|s| met.push(*s)),
        !follow_up,
        at_most,
    );
    let count = pieces.len();
    if follow_up || !policy.describes_a_task(count) {
        return (asks_from(pieces), count);
    }
    let by_sentence = pieces_of(met.into_iter().chain(sentences), false, at_most);
    (asks_from(by_sentence), count)
}

/// The sentences of `message`'s lines, in order, each line's list marker left out.
fn sentences(message: &str) -> impl Iterator<Item = &str> {
    message
        .lines()
        .flat_map(|line| line_sentences(strip_marker(line)))
}

/// The asks of `message`: its lines' sentences, cut into clauses when `split_clauses`; the
/// first `at_most` of them (a selection stops counting where more asks change nothing, so a
/// long task's description is not cut up to its end).
pub(super) fn asks_in(message: &str, split_clauses: bool, at_most: usize) -> Vec<Ask<'_>> {
    asks_from(pieces_of(sentences(message), split_clauses, at_most))
}

/// The texts of [`asks_in`] of a message whose [`sentences`] are `sentences`.
fn pieces_of<'m>(
    sentences: impl Iterator<Item = &'m str>,
    split_clauses: bool,
    at_most: usize,
) -> Vec<&'m str> {
    // A sentence or line too short to be a request of its own ("Thanks."; a follow-up's whole
    // sentence, "Sure, go ahead."), or one that introduces a list ("Two things:"), is no ask,
    // unless it is all the message has.
    let long_enough = |text: &str| {
        let words = match split_clauses {
            true => names_at_least(text, ASK_WORDS),
            false => word_count(text) >= SENTENCE_WORDS,
        };
        words && !text.ends_with(':')
    };
    let mut pieces = 0;
    let mut first = None;
    let mut texts: Vec<&str> = Vec::new();
    'sentences: for sentence in sentences {
        let cut = match split_clauses {
            true => clauses(sentence),
            false => vec![sentence],
        };
        let cut = cut
            .into_iter()
            .map(|p| p.trim_matches(|c: char| c.is_whitespace() || c == ',' || c == ';'))
            .filter(|p| has_word(p));
        for piece in cut {
            pieces += 1;
            first.get_or_insert(piece);
            if long_enough(piece) {
                texts.push(piece);
                if texts.len() >= at_most {
                    break 'sentences;
                }
            }
        }
    }
    if pieces == 1 {
        texts = first.into_iter().collect();
    }
    texts
}

/// The asks whose texts are `texts`, in order: each numbered, and judged a request or not
/// ([`is_request`]; only for the asks a selection keeps, as that reads their words).
fn asks_from(texts: Vec<&str>) -> Vec<Ask<'_>> {
    texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| Ask {
            text,
            position: u32::try_from(i + 1).unwrap_or(u32::MAX),
            request: is_request(text),
        })
        .collect()
}

/// The words a statement opens with: a subject ("I'm going to Rome 9–12 May", "it's likely a
/// JSON file", "there is a file called notes.txt"), a possessive ("my disk is nearly full") or
/// the definite article ("the customer got billed twice"). Not "a" or "an": "a hotel near
/// Termini" names a thing wanted.
const STATEMENT_OPENERS: &[&str] = &[
    "i", "i'm", "im", "i've", "ive", "i'll", "we", "we're", "we've", "we'll", "you're", "you've",
    "he", "she", "it", "it's", "they", "they're", "there", "there's", "that", "my", "our", "your",
    "his", "her", "its", "their", "the",
];

/// The words that, soon after a subject, make a statement a request ("I need to cancel my
/// trip", "I would like to discuss it", "we want the cheapest"); not "like" alone: "I like
/// aisle seats" states. ("I'd" opens no statement: "I'd like …", "I'd be grateful …".)
const WANTS: &[&str] = &["need", "needs", "want", "wants", "would", "require"];

/// How many words after a statement's first a want may come ("I would really like").
const WANT_WITHIN: usize = 3;

/// The words that make a clause a request however it opens: "please", "kindly", and "you"
/// ("I'd be grateful if you could verify the order").
const ADDRESSED: &[&str] = &["please", "pls", "kindly", "you", "u"];

/// Whether `text` (a clause or a sentence) asks for something: a question, an imperative
/// ("email her a receipt"), a request's fragment ("hotels in Florence June 3-6"), a want ("I
/// need to fly to Lisbon") or words addressed to the agent ("I'd be grateful if you could
/// …"), rather than a statement that gives the asks around it their context ("the customer
/// got billed twice", "I'm going to Rome 9–12 May."). A statement's words still count in the
/// whole message's search and its vector; it only brings no tool of its own. Cost: a look at
/// the first word; the whole text's words only for a text that opens as a statement.
fn is_request(text: &str) -> bool {
    // "the redis container keeps dying. show me its logs", "the release looks off — check it":
    // a statement may run on into a request where the sentence breaks did not part them.
    let mut rest = text;
    loop {
        if !opens_statement(rest) {
            return true;
        }
        let cut = [". ", " — ", " – ", " - "]
            .iter()
            .filter_map(|sep| rest.find(sep).map(|at| (at, sep.len())))
            .min();
        let Some((at, len)) = cut else {
            return still_asks(rest);
        };
        if still_asks(rest.get(..at).unwrap_or_default()) {
            return true;
        }
        rest = rest.get(at + len..).unwrap_or_default();
    }
}

/// Whether `text`'s first word is one a statement opens with ([`STATEMENT_OPENERS`]).
fn opens_statement(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or_default();
    let first = first.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’');
    is_one_of(first, STATEMENT_OPENERS)
}

/// Whether a text that opens as a statement, with no sentence break inside, asks all the
/// same: a question, a want soon after its subject, or words addressed to the agent.
fn still_asks(text: &str) -> bool {
    if text.trim_end_matches(['"', '\'', ')', ' ']).ends_with('?') {
        return true;
    }
    let (mut wants, mut addressed) = (false, false);
    let mut at = 0;
    words(text, |w| {
        if (1..=WANT_WITHIN).contains(&at) {
            wants |= is_one_of(w, WANTS);
        }
        addressed |= is_one_of(w, ADDRESSED);
        at += 1;
    });
    wants || addressed
}

/// Whether `word` is one of `known` (lower-case words), ignoring ASCII case and reading a
/// typographic apostrophe as `'`.
fn is_one_of(word: &str, known: &[&str]) -> bool {
    let folded = || {
        word.chars().map(|c| match c {
            '’' => '\'',
            c => c.to_ascii_lowercase(),
        })
    };
    known.iter().any(|k| folded().eq(k.chars()))
}

/// `line` without a list item's marker (`-`, `*`, `•`, `1.`, `2)`, `a)`).
fn strip_marker(line: &str) -> &str {
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix(['-', '*', '•']) {
        return rest;
    }
    let marker_end = trimmed
        .char_indices()
        .find(|&(_, c)| !c.is_ascii_alphanumeric())
        .map(|(i, _)| i);
    match marker_end {
        Some(end @ 1..=2) => {
            let (marker, rest) = trimmed.split_at(end);
            let numbered = marker.chars().all(|c| c.is_ascii_digit())
                || (marker.len() == 1 && marker.chars().all(|c| c.is_ascii_lowercase()));
            match rest.strip_prefix(['.', ')']) {
                Some(rest) if numbered && rest.starts_with(' ') => rest,
                _ => trimmed,
            }
        }
        _ => trimmed,
    }
}

/// The clauses of `sentence`: cut at semicolons, at commas, and before each joining word
/// (after a space or a comma), the joining words left out, but not inside brackets or a
/// quotation or at a comma between digits; then a piece of fewer than
/// [`ASK_WORDS`] words joins the piece before it (the first, the piece after it), so that "the
/// engine, tires and brakes" or "between Berlin and Lisbon" stay whole.
fn clauses(sentence: &str) -> Vec<&str> {
    let lower = sentence.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    // Each piece as (start, end) byte offsets: a boundary at `i` ends one piece there and
    // starts the next after the comma, semicolon or joining word.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    let mut i = 0;
    // An aside in brackets ("rename calc_vat (src/billing/tax.py, line 12) to compute_vat") is
    // never cut, nor a number's thousands ("4,200 CHF").
    // (A bracket that no later one closes, as in "sorry :(", opens no aside.)
    let mut depth = 0usize;
    let last_close = bytes.iter().rposition(|b| matches!(b, b')' | b']' | b'}'));
    let digit = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_digit);
    // Nor a quotation ('Q1: $5000, Q2: $7000'; [`quotations`] says where one opens and ends).
    let quoted = quotations(&lower);
    let in_quotation = |at: usize| quoted.iter().any(|span| span.contains(&at));
    // Nor at the "and" that pairs two things after "between" or "both" ("the difference
    // between a rolling and a canary deploy").
    let mut pairing = false;
    while i < bytes.len() {
        match bytes.get(i) {
            Some(b'(' | b'[' | b'{') if last_close.is_some_and(|c| i < c) => depth += 1,
            Some(b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
        let boundary = match bytes.get(i) {
            _ if depth > 0 || in_quotation(i) => None,
            Some(b',') if i > 0 && digit(i - 1) && digit(i + 1) => None,
            Some(b';' | b',') => Some(i + 1),
            _ if i > 0
                && matches!(bytes.get(i - 1), Some(b' ' | b','))
                && bytes.get(i).is_some_and(u8::is_ascii_alphabetic) =>
            {
                pairing |= PAIRS.iter().any(|w| word_at(&lower, i, w));
                match JOINERS.iter().find(|j| word_at(&lower, i, j)) {
                    Some(&"and") if pairing => {
                        pairing = false;
                        None
                    }
                    joiner => joiner.map(|j| i + j.len()),
                }
            }
            _ => None,
        };
        match boundary {
            Some(next) => {
                pairing = false;
                pieces.push((from, i));
                from = next;
                i = next;
            }
            None => i += 1,
        }
    }
    pieces.push((from, bytes.len()));
    let names = |&(start, end): &(usize, usize)| {
        sentence
            .get(start..end)
            .is_some_and(|piece| names_at_least(piece, ASK_WORDS))
    };
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(pieces.len());
    let mut pending: Option<usize> = None;
    for piece in pieces {
        if names(&piece) {
            merged.push((pending.take().unwrap_or(piece.0), piece.1));
        } else if let Some(last) = merged.last_mut() {
            last.1 = piece.1;
        } else {
            pending.get_or_insert(piece.0);
        }
    }
    if let Some(start) = pending {
        merged.push((start, bytes.len()));
    }
    merged
        .into_iter()
        .filter_map(|(start, end)| sentence.get(start..end))
        .collect()
}

/// Whether at least `n` of `text`'s words name something: a stretch between spaces that
/// holds a word with a letter that is no stop word. A value is one word, however many parts
/// it has ("billing@greenleaf.co", "receipts/lunch_0412.jpg"), and a number none ("555-0142",
/// "12"). Reads `text` only as far as its `n`th such word.
fn names_at_least(text: &str, n: usize) -> bool {
    let names = |token: &&str| {
        let mut named = false;
        words(token, |w| {
            named = named || (w.chars().any(char::is_alphabetic) && !is_stop_word_any_case(w));
        });
        named
    };
    n == 0 || text.split_whitespace().filter(names).nth(n - 1).is_some()
}

/// Whether `word` (a joining word, or one that pairs) starts at byte `i` of `lower` as a
/// whole word (followed by a space or a comma).
fn word_at(lower: &str, i: usize, word: &str) -> bool {
    lower.get(i..).is_some_and(|rest| {
        rest.starts_with(word) && matches!(rest.as_bytes().get(word.len()), Some(b' ' | b','))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(message: &str) -> Vec<&str> {
        asks(message).into_iter().map(|a| a.text).collect()
    }

    #[test]
    fn counting_stops_at_most_where_asked_and_keeps_the_first_asks() {
        let messages = [
            "Thanks. Book a table for two, then text Ana the time, and add it to my calendar.",
            "find the weather in Oslo; convert 20 EUR to NOK, email the result to Bo, then \
             archive the thread and also open a ticket about it",
            "- list the pods\n- restart the api deployment\n- check the error rate",
            "Sure, go ahead.",
            "",
        ];
        for message in messages {
            let all = asks(message);
            for at_most in 1..=all.len() + 1 {
                let first = asks_in(message, true, at_most);
                assert_eq!(
                    first,
                    all[..at_most.min(all.len())],
                    "{message:?}, {at_most}"
                );
            }
        }
        assert_eq!(asks_in(messages[1], true, 2).len(), 2);
    }

    #[test]
    fn a_message_of_more_clauses_than_max_asks_is_searched_by_its_sentences_and_sized_by_its_clauses()
     {
        let policy = SelectionPolicy::default();
        let message = "Find flights to Rome, book a hotel near Termini, check the weather, \
                       convert 300 euros to dollars, text Ana the dates, add the trip to my \
                       calendar, rent a car at the airport, reserve a table at Roscioli, \
                       renew my passport, set an out-of-office reply, and email the itinerary \
                       to Bo. Then open a ticket about the expense report.";
        assert!(asks(message).len() > policy.message.max_asks);
        let (searched, count) = asks_for_selection(message, false, &policy);
        let read: Vec<&str> = searched.into_iter().map(|a| a.text).collect();
        assert_eq!(read.len(), 2, "{read:?}");
        assert!(read[1].starts_with("Then open a ticket"), "{read:?}");
        // Its clauses still size the request.
        assert_eq!(count, asks(message).len().min(policy.asks_that_count()));
        // A message of few clauses is read by them; a follow-up by its sentences.
        let two = "refund the last payment and email her a receipt";
        assert_eq!(asks_for_selection(two, false, &policy).0.len(), 2);
        assert_eq!(
            asks_for_selection(two, true, &policy),
            (asks_in(two, false, 7), 1)
        );
    }

    #[test]
    fn clauses_joined_by_and_or_then_are_asks() {
        assert_eq!(
            texts(
                "refund the last Stripe payment from customer alice@example.com and email her a receipt"
            ),
            [
                "refund the last Stripe payment from customer alice@example.com",
                "email her a receipt"
            ]
        );
        assert_eq!(
            texts("merge the open pull request for the login fix, then deploy it to production"),
            [
                "merge the open pull request for the login fix",
                "deploy it to production"
            ]
        );
        assert_eq!(
            texts(
                "roll back the payments service to the previous release and silence the latency alert for an hour"
            ),
            [
                "roll back the payments service to the previous release",
                "silence the latency alert for an hour"
            ]
        );
    }

    #[test]
    fn short_pieces_stay_with_the_clause_before() {
        assert_eq!(
            texts("find flights between Berlin and Lisbon"),
            ["find flights between Berlin and Lisbon"]
        );
        assert_eq!(
            texts("rerun the tests and then commit"),
            ["rerun the tests and then commit"]
        );
        assert_eq!(texts("salt and pepper"), ["salt and pepper"]);
        assert_eq!(
            texts("Check the engine, tires, brakes and lights"),
            ["Check the engine, tires, brakes and lights"]
        );
        // A joining word inside a word is no joining word.
        assert_eq!(
            texts("expand the standard header"),
            ["expand the standard header"]
        );
    }

    #[test]
    fn a_statement_is_an_ask_that_asks_for_nothing() {
        let requests = |message| -> Vec<(&str, bool)> {
            asks(message)
                .into_iter()
                .map(|a| (a.text, a.request))
                .collect()
        };
        assert_eq!(
            requests("I need to cancel my chicago trip, the conference got moved"),
            [
                ("I need to cancel my chicago trip", true),
                ("the conference got moved", false)
            ]
        );
        assert_eq!(
            requests(
                "I'm going to Rome 9–12 May. Can you find me flights from Amsterdam, a hotel near Termini"
            ),
            [
                ("I'm going to Rome 9–12 May.", false),
                ("Can you find me flights from Amsterdam", true),
                ("a hotel near Termini", true)
            ]
        );
        // A question, a want, words addressed to the agent, a statement that runs on into a
        // request: all requests.
        for request in [
            "my card got declined, why?",
            "I'd like to discuss the rent",
            "I would love a window seat",
            "I’d be grateful if you could verify the order",
            "the redis container keeps dying. show me its logs",
            "the release looks off — check how the deployment is doing",
            "hotels in Florence June 3-6",
        ] {
            assert!(is_request(request), "{request:?}");
        }
        for statement in [
            "The Halvorsen deal fell through.",
            "It's likely a JSON file.",
            "there is a file called notes.txt",
            "my disk is nearly full",
            "I like aisle seats",
        ] {
            assert!(!is_request(statement), "{statement:?}");
        }
    }

    #[test]
    fn no_cut_inside_brackets_or_a_number() {
        assert_eq!(
            texts(
                "rename calc_vat (src/billing/tax.py, line 12) to compute_vat, then run the tests"
            ),
            [
                "rename calc_vat (src/billing/tax.py, line 12) to compute_vat",
                "run the tests"
            ]
        );
        assert_eq!(
            texts("record the transfer of 4,200 CHF as paid and convert it to euros"),
            [
                "record the transfer of 4,200 CHF as paid",
                "convert it to euros"
            ]
        );
        // A bracket no later one closes opens no aside.
        assert_eq!(
            texts("the build broke again :( so rerun the pipeline, then page the on-call"),
            [
                "the build broke again :( so rerun the pipeline",
                "page the on-call"
            ]
        );
    }

    #[test]
    fn no_cut_inside_a_quotation() {
        assert_eq!(
            texts("write 'Q1: $5000, Q2: $7000, Q3: $6000' into report.txt, then email it to Bo"),
            [
                "write 'Q1: $5000, Q2: $7000, Q3: $6000' into report.txt",
                "email it to Bo"
            ]
        );
        assert_eq!(
            texts("translate \"Thanks for your patience, the part ships Monday\" to Spanish"),
            ["translate \"Thanks for your patience, the part ships Monday\" to Spanish"]
        );
        // A mark that nothing closes opens no quotation.
        assert_eq!(
            texts("rename the 'draft folder to archive, then delete old_drafts"),
            ["rename the 'draft folder to archive", "delete old_drafts"]
        );
        // An apostrophe inside a word opens no quotation.
        assert_eq!(
            texts("don't restart the api, just scale the workers up"),
            ["don't restart the api", "just scale the workers up"]
        );
    }

    #[test]
    fn the_and_after_between_or_both_pairs_two_things() {
        assert_eq!(
            texts("what's the difference between a rolling and a canary deploy?"),
            ["what's the difference between a rolling and a canary deploy?"]
        );
        assert_eq!(
            texts("pull both the api logs and the worker logs, and then restart the api"),
            [
                "pull both the api logs and the worker logs",
                "restart the api"
            ]
        );
        // Only the first "and" pairs.
        assert_eq!(
            texts("find flights between Berlin and Lisbon and book the cheapest one"),
            [
                "find flights between Berlin and Lisbon",
                "book the cheapest one"
            ]
        );
    }

    #[test]
    fn a_value_or_a_number_names_no_ask_of_its_own() {
        for message in [
            "add Greenleaf Market as a customer in stripe, billing@greenleaf.co",
            "what's the total on this receipt? receipts/lunch_0412.jpg",
            "add my new neighbour Hiro Tanaka, 555-0142",
        ] {
            assert_eq!(texts(message).len(), 1, "{message:?}: {:?}", texts(message));
        }
        // Two words that name something are an ask, numbers or not.
        assert_eq!(
            texts("flights from manchester on apr 3, 2 adults 2 kids"),
            ["flights from manchester on apr 3", "2 adults 2 kids"]
        );
    }

    #[test]
    fn a_list_of_requests_between_commas_is_asks() {
        assert_eq!(
            texts("run the linter with autofix, format the code, then commit the changes"),
            [
                "run the linter with autofix",
                "format the code",
                "commit the changes"
            ]
        );
        assert_eq!(
            texts("Sure, find me a hotel near Termini"),
            ["Sure, find me a hotel near Termini"]
        );
    }

    #[test]
    fn sentences_lines_and_list_items_are_asks() {
        assert_eq!(
            texts("Two things:\n1. archive the newsletters\n2) draft a reply to my landlord"),
            ["archive the newsletters", "draft a reply to my landlord"]
        );
        assert_eq!(
            texts("- book a table for four\n* text Ana the address"),
            ["book a table for four", "text Ana the address"]
        );
        assert_eq!(
            texts("Convert 20 liters to gallons. Afterwards, post the result on Twitter. Thanks!"),
            [
                "Convert 20 liters to gallons.",
                "Afterwards, post the result on Twitter."
            ]
        );
        // "fix it" is too short to be an ask of its own.
        assert_eq!(
            texts("undo the last commit; then push the branch upstream"),
            ["undo the last commit", "push the branch upstream"]
        );
    }

    #[test]
    fn a_message_of_one_ask_is_its_own_ask() {
        let one = asks("  what's the weather in Oslo?  ");
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].text, "what's the weather in Oslo?");
        assert_eq!(one[0].position, 1);
        assert!(asks("").is_empty());
        assert_eq!(texts("ok"), ["ok"]);
        let numbered =
            asks("check disk usage on db-1 and restart the api pods, then page the on-call");
        assert_eq!(
            numbered.iter().map(|a| a.position).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }
}
