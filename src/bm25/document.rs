//! What the index stores per key: named fields of terms, already tokenized.

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
/// assert_eq!(doc.fields().next(), Some(("name", &["get".to_string(), "weather".to_string()][..])));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    fields: Vec<(String, Vec<String>)>,
}

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
        self.fields.push((name.to_owned(), tokens));
    }

    /// The fields, in the order they were added.
    ///
    /// ```
    /// use capstore::bm25::Document;
    ///
    /// let doc = Document::new().with_field("a", vec![]).with_field("b", vec!["x".into()]);
    /// let names: Vec<&str> = doc.fields().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn fields(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.fields
            .iter()
            .map(|(name, tokens)| (name.as_str(), tokens.as_slice()))
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
        self.fields.iter().map(|(_, tokens)| tokens.len()).sum()
    }
}
