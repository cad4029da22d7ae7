//! A query's tokens → its distinct terms, each with its scorer and where its postings are.
//!
//! Tokens are aggregated first (a term repeated in the query is scored once and multiplied by
//! its count, or by the sum of its weights in a weighted query), so a 100 KB query costs one hash per token, one probe per distinct term and
//! segment, and one pass over each distinct term's postings, not one pass per token.

use std::sync::Arc;

use super::hash::term_hash;
use super::scoring::{Bm25Params, TermScorer};
use super::segment::{Segment, same_bytes};

/// One distinct query term that at least one live document contains.
pub(crate) struct QueryTerm<'a> {
    pub(crate) term: &'a str,
    pub(crate) scorer: TermScorer,
    /// `(segment index, term id)` of every segment that has the term: a range of
    /// [`Prepared::found`].
    found: std::ops::Range<usize>,
}

/// A query ready to run against one version of the index.
pub(crate) struct Prepared<'a> {
    pub(crate) terms: Vec<QueryTerm<'a>>,
    found: Vec<(usize, u32)>,
}

impl Prepared<'_> {
    /// Where term `t`'s postings are: `(segment index, term id)` pairs, oldest segment first.
    pub(crate) fn found(&self, t: &QueryTerm<'_>) -> &[(usize, u32)] {
        self.found.get(t.found.clone()).unwrap_or_default()
    }
}

/// What the scorers need of one version of the index.
pub(crate) struct Corpus<'a> {
    pub(crate) params: Bm25Params,
    pub(crate) segments: &'a [Arc<Segment>],
    pub(crate) n_docs: u64,
    pub(crate) avgdl: f32,
}

impl<'a> Corpus<'a> {
    /// The query's distinct live terms, each weighing its number of occurrences.
    pub(crate) fn prepare<S: AsRef<str>>(&self, query: &'a [S]) -> Prepared<'a> {
        self.prepare_weighted(query.iter().map(|t| (t.as_ref(), 1.0)))
    }

    /// The query's distinct live terms, each weighing the sum of its occurrences' weights;
    /// terms whose weight is not positive (or NaN) are left out. In a fixed order (by hash,
    /// then text): `search`, `score` and `explain` all sum in this order, so they agree to the
    /// bit.
    pub(crate) fn prepare_weighted(
        &self,
        query: impl ExactSizeIterator<Item = (&'a str, f32)>,
    ) -> Prepared<'a> {
        let mut tokens: Vec<(u64, &'a str, f32)> =
            query.map(|(t, w)| (term_hash(t), t, w)).collect();
        // By hash alone (integer compares; sorting by text cost a tenth of a small query), then
        // by text only within a run of equal hashes holding different terms (a collision).
        tokens.sort_unstable_by_key(|&(hash, _, _)| hash);
        for run in tokens.chunk_by_mut(|a, b| a.0 == b.0) {
            let first = run[0].1.as_bytes();
            if run.len() > 1 && run.iter().any(|t| !same_bytes(t.1.as_bytes(), first)) {
                run.sort_unstable_by(|a, b| a.1.cmp(b.1));
            }
        }
        let mut terms = Vec::with_capacity(tokens.len());
        let mut found = Vec::with_capacity(tokens.len() * self.segments.len());
        for run in tokens.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
            let (hash, term, _) = run[0];
            let weight: f64 = run.iter().map(|t| f64::from(t.2)).sum();
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            let start = found.len();
            let mut df = 0i64;
            for (i, seg) in self.segments.iter().enumerate() {
                if let Some(id) = seg.lookup(hash, term) {
                    df += seg.df(id);
                    found.push((i, id));
                }
            }
            let Some(df) = u64::try_from(df).ok().filter(|&df| df > 0) else {
                found.truncate(start);
                continue;
            };
            let count = u32::try_from(run.len()).unwrap_or(u32::MAX);
            let scorer =
                TermScorer::weighted(self.params, df, self.n_docs, self.avgdl, count, weight);
            terms.push(QueryTerm {
                term,
                scorer,
                found: start..found.len(),
            });
        }
        Prepared { terms, found }
    }

    /// The number of live documents containing `term`.
    pub(crate) fn doc_freq(&self, term: &str) -> u64 {
        let hash = term_hash(term);
        let df: i64 = self
            .segments
            .iter()
            .filter_map(|seg| seg.lookup(hash, term).map(|id| seg.df(id)))
            .sum();
        u64::try_from(df).unwrap_or(0)
    }
}
