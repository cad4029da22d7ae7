//! A turn's weighted query terms, held in one buffer.

use serde::{Serialize, Serializer};

/// The weighted query terms a selection built from its turn, in term order: each distinct term
/// once, with the sum of the weights of the texts it came from. The terms share one buffer, so
/// a selection allocates no string per term.
///
/// ```
/// use capstore::context::{ContextBuilder, Turn};
/// use capstore::{Store, Tool, TOOLS};
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("get_weather", "Weather for a city")))?;
/// let s = ContextBuilder::new().select(&store.snapshot(), &Turn::new("weather in Oslo"))?;
/// let terms: Vec<&str> = s.query.iter().map(|(term, _)| term).collect();
/// assert_eq!(terms, ["oslo", "weather"]);
/// assert_eq!(s.query.get(1), Some(("weather", 1.0)));
/// assert_eq!(s.query.len(), 2);
/// assert_eq!(format!("{:?}", s.query), r#"[("oslo", 1.0), ("weather", 1.0)]"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct QueryTerms {
    /// The terms' text, back to back (a merged duplicate's text stays, unused).
    text: String,
    /// Each term's start and end in `text`, and its weight.
    terms: Vec<(usize, usize, f32)>,
}

impl QueryTerms {
    /// The terms `terms` (start, end, weight) of `text`, in term order, each once.
    pub(super) fn from_buffer(text: String, terms: Vec<(usize, usize, f32)>) -> Self {
        QueryTerms { text, terms }
    }

    /// How many terms.
    ///
    /// ```
    /// assert_eq!(capstore::context::QueryTerms::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// Whether there are no terms.
    ///
    /// ```
    /// assert!(capstore::context::QueryTerms::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The `i`th term and its weight.
    ///
    /// ```
    /// assert_eq!(capstore::context::QueryTerms::default().get(0), None);
    /// ```
    pub fn get(&self, i: usize) -> Option<(&str, f32)> {
        let &(start, end, weight) = self.terms.get(i)?;
        Some((self.text.get(start..end)?, weight))
    }

    /// The terms and their weights, in term order.
    ///
    /// ```
    /// assert_eq!(capstore::context::QueryTerms::default().iter().count(), 0);
    /// ```
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, f32)> + '_ {
        self.terms
            .iter()
            .map(|&(start, end, weight)| (self.text.get(start..end).unwrap_or_default(), weight))
    }

    /// The terms as owned strings, as a `Vec`.
    ///
    /// ```
    /// assert!(capstore::context::QueryTerms::default().to_vec().is_empty());
    /// ```
    pub fn to_vec(&self) -> Vec<(String, f32)> {
        self.iter().map(|(t, w)| (t.to_string(), w)).collect()
    }
}

/// Up to this many query terms, [`BorrowedTerms`] keeps them on the stack.
const TERMS_ON_STACK: usize = 32;

/// A [`QueryTerms`]' terms borrowed as the searches take them (`&[(&str, f32)]`): on the stack
/// up to `TERMS_ON_STACK` (a message's usual dozen), where a vector was one of a selection's
/// handful of allocations.
pub(super) struct BorrowedTerms<'q> {
    on_stack: [(&'q str, f32); TERMS_ON_STACK],
    on_heap: Vec<(&'q str, f32)>,
    len: usize,
}

impl<'q> BorrowedTerms<'q> {
    /// `query`'s terms, borrowed.
    pub(super) fn of(query: &'q QueryTerms) -> Self {
        let mut terms = BorrowedTerms {
            on_stack: [("", 0.0); TERMS_ON_STACK],
            on_heap: Vec::new(),
            len: query.len(),
        };
        if query.len() <= TERMS_ON_STACK {
            for (slot, term) in terms.on_stack.iter_mut().zip(query.iter()) {
                *slot = term;
            }
        } else {
            terms.on_heap = query.iter().collect();
        }
        terms
    }

    /// The terms and their weights, in term order.
    pub(super) fn as_slice(&self) -> &[(&'q str, f32)] {
        match self.len <= TERMS_ON_STACK {
            true => self.on_stack.get(..self.len).unwrap_or_default(),
            false => &self.on_heap,
        }
    }
}

/// Equal when the terms and weights are.
impl PartialEq for QueryTerms {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

/// Printed as the list of `(term, weight)` pairs it is.
impl std::fmt::Debug for QueryTerms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Serialized as a list of `[term, weight]` pairs.
impl Serialize for QueryTerms {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}
