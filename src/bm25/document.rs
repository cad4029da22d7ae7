//! What the index stores per key: named fields of terms, already tokenized.
//!
//! Terms live back to back in one `String` (with their end offsets), not in a `String` each:
//! allocating and freeing one per term cost a fifth of registering a tool in the store.

use std::ops::Range;

/// The term bytes a document reserves when its first field is filled.
const FIRST_TEXT_BYTES: usize = 512;

/// A document: ordered, named fields, each a list of terms (see [`crate::bm25::Tokenizer`]).
///
/// The index knows nothing of tools: field names only select a weight in
/// [`crate::bm25::IndexConfig::field_weights`]. A name may repeat; each occurrence weighs the
/// same.
///
/// ```
/// use capstore::bm25::{Document, Tokenizer};
///
/// let t = Tokenizer::default();
/// let doc = Document::new()
///     .with_field("name", t.tokenize("get_weather"))
///     .with_field("description", t.tokenize("Current weather for a city"));
/// assert_eq!(doc.len_tokens(), 5);
/// let (name, terms) = doc.fields().next().unwrap();
/// assert_eq!((name, terms.collect::<Vec<_>>()), ("name", vec!["get", "weather"]));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    /// Every term's text, back to back: term `i` is `text[term_start(i)..ends[i]]`.
    text: String,
    ends: Vec<usize>,
    /// Field names, back to back; field `f`'s is `names[fields[f]]`.
    names: String,
    fields: Vec<Range<usize>>,
    /// Runs of consecutive terms of one field, in the order they were added: `(field, end)`,
    /// the run ending at term `end` (exclusive) and starting where the previous one ended.
    /// A field filled in several goes ([`crate::store::TextFields`] interleaves `params` and
    /// `param_docs`) has several runs.
    runs: Vec<(usize, usize)>,
}

/// The terms of one field of a [`Document`], in order (see [`Document::fields`]).
///
/// ```
/// use capstore::bm25::Document;
///
/// let doc = Document::new().with_field("f", vec!["x".into(), "y".into()]);
/// let (_, terms) = doc.fields().next().unwrap();
/// assert_eq!(terms.len(), 2);
/// assert_eq!(terms.collect::<Vec<_>>(), ["x", "y"]);
/// ```
#[derive(Clone, Debug)]
pub struct FieldTerms<'d> {
    doc: &'d Document,
    field: usize,
    /// The next run to look at, and the next term within the current run.
    run: usize,
    term: usize,
    left: usize,
}

impl<'d> Iterator for FieldTerms<'d> {
    type Item = &'d str;

    fn next(&mut self) -> Option<&'d str> {
        if self.left == 0 {
            return None;
        }
        loop {
            let &(field, end) = self.doc.runs.get(self.run)?;
            if field == self.field && self.term < end {
                let term = self.doc.term(self.term);
                self.term += 1;
                self.left -= 1;
                return Some(term);
            }
            self.run += 1;
            self.term = self.term.max(end);
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for FieldTerms<'_> {}

impl Document {
    /// A document without fields.
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// assert_eq!(Document::new().len_tokens(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// This document with one more field (builder style).
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// let doc = Document::new().with_field("tags", vec!["web".into()]);
    /// assert_eq!(doc.fields().count(), 1);
    /// ```
    pub fn with_field(mut self, name: &str, tokens: Vec<String>) -> Self {
        self.push_field(name, tokens);
        self
    }

    /// Appends a field.
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// let mut doc = Document::new();
    /// doc.push_field("name", vec!["read".into(), "file".into()]);
    /// assert_eq!(doc.len_tokens(), 2);
    /// ```
    pub fn push_field(&mut self, name: &str, tokens: Vec<String>) {
        let field = self.add_field(name);
        self.extend_field(field, |text, ends| {
            for token in &tokens {
                text.push_str(token);
                ends.push(text.len());
            }
        });
    }

    /// Removes every field, keeping the buffers' room for the next document.
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.names.clear();
        self.fields.clear();
        self.runs.clear();
    }

    /// Adds an empty field named `name` and returns its number.
    pub(crate) fn add_field(&mut self, name: &str) -> usize {
        let start = self.names.len();
        self.names.push_str(name);
        self.fields.push(start..self.names.len());
        self.fields.len() - 1
    }

    /// The number of the first field named `name`, if any.
    pub(crate) fn field_named(&self, name: &str) -> Option<usize> {
        self.fields
            .iter()
            .position(|range| self.names.get(range.clone()) == Some(name))
    }

    /// Appends terms to field `field`: `fill` pushes each term's text to the term text and its
    /// end offset (in that text) to the ends.
    pub(crate) fn extend_field(
        &mut self,
        field: usize,
        fill: impl FnOnce(&mut String, &mut Vec<usize>),
    ) {
        if self.text.capacity() == 0 {
            // A tool's terms run to a few hundred bytes over a dozen fields, most of them
            // short: reserving that much at once saves growing the buffers field by field
            // (five reallocations each, a twentieth of registering a tool). The document
            // only lives until the index has taken its terms.
            self.text.reserve(FIRST_TEXT_BYTES);
            self.ends.reserve(FIRST_TEXT_BYTES / 4);
        }
        let before = self.ends.len();
        fill(&mut self.text, &mut self.ends);
        let after = self.ends.len();
        if after == before {
            return;
        }
        match self.runs.last_mut() {
            Some((last, end)) if *last == field => *end = after,
            _ => self.runs.push((field, after)),
        }
    }

    /// The fields, in the order they were added, each with its terms.
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// let doc = Document::new().with_field("a", vec![]).with_field("b", vec!["x".into()]);
    /// let names: Vec<&str> = doc.fields().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = (&str, FieldTerms<'_>)> {
        (0..self.fields.len()).map(|field| (self.field_name(field), self.field_terms(field)))
    }

    /// The number of tokens over all fields, unweighted.
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// let doc = Document::new().with_field("a", vec!["x".into()]).with_field("b", vec!["y".into(), "z".into()]);
    /// assert_eq!(doc.len_tokens(), 3);
    /// ```
    pub fn len_tokens(&self) -> usize {
        self.ends.len()
    }

    fn field_name(&self, field: usize) -> &str {
        self.fields
            .get(field)
            .and_then(|range| self.names.get(range.clone()))
            .unwrap_or_default()
    }

    fn field_terms(&self, field: usize) -> FieldTerms<'_> {
        let mut left = 0;
        let mut start = 0;
        for &(f, end) in &self.runs {
            if f == field {
                left += end - start;
            }
            start = end;
        }
        FieldTerms {
            doc: self,
            field,
            run: 0,
            term: 0,
            left,
        }
    }

    fn term(&self, i: usize) -> &str {
        let start = match i.checked_sub(1) {
            Some(prev) => self.ends.get(prev).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.text.get(start..end).unwrap_or_default()
    }
}
