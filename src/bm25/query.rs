//! A query's tokens → its distinct terms, each with its scorer and where its postings are.
//!
//! Tokens are aggregated first (a term repeated in the query is scored once and multiplied by
//! its count, or by the sum of its weights in a weighted query), so a 100 KB query costs one
//! hash per token, one probe per distinct term and segment, and one pass over each distinct
//! term's postings, not one pass per token.
//!
//! A [`Prepared`] query holds no borrow of the query's text (terms are named by the index of
//! one of their tokens), so its buffers can live in the per-thread scratch and be refilled by
//! the next query without allocating.

use std::sync::Arc;

use super::hash::term_hash;
use super::idf_memo::IdfMemo;
use super::scoring::{Bm25Params, LengthNorm, TermScorer};
use super::segment::{Segment, same_bytes};

/// One distinct query term that at least one live document contains.
pub(crate) struct QueryTerm {
    /// The index in the query of the term's first occurrence (its text).
    pub(crate) token: usize,
    pub(crate) scorer: TermScorer,
    /// `(segment index, term id)` of every segment that has the term: the range
    /// `found_from..found_to` of [`Prepared::found`].
    found_from: usize,
    found_to: usize,
}

/// A query ready to run against one version of the index.
#[derive(Default)]
pub(crate) struct Prepared {
    pub(crate) terms: Vec<QueryTerm>,
    found: Vec<(usize, u32)>,
    /// Scratch: every token's [`token_key`].
    tokens: Vec<u128>,
    idf: IdfMemo,
}

impl Prepared {
    pub(crate) const fn new() -> Self {
        Self {
            terms: Vec::new(),
            found: Vec::new(),
            tokens: Vec::new(),
            idf: IdfMemo::new(),
        }
    }

    /// Where term `t`'s postings are: `(segment index, term id)` pairs, oldest segment first.
    #[inline]
    pub(crate) fn found(&self, t: &QueryTerm) -> &[(usize, u32)] {
        self.found.get(t.found_from..t.found_to).unwrap_or_default()
    }
}

/// A token as one integer, its hash above its position, so that sorting tokens is sorting
/// integers: by hash, then by position. The standard sort orders integers with branch-free
/// sorting networks, half the instructions it spent on `(hash, position)` pairs (a twentieth
/// of a small query).
fn token_key(hash: u64, position: usize) -> u128 {
    u128::from(hash) << 64 | position as u128
}

fn key_hash(key: u128) -> u64 {
    (key >> 64) as u64
}

fn key_position(key: u128) -> usize {
    key as u64 as usize
}

/// What the scorers need of one version of the index.
pub(crate) struct Corpus<'a> {
    pub(crate) params: Bm25Params,
    pub(crate) segments: &'a [Arc<Segment>],
    pub(crate) n_docs: u64,
    pub(crate) avgdl: f32,
}

impl Corpus<'_> {
    /// Refills `out` with the distinct live terms of a query of `len` tokens, token `i` being
    /// `token(i)` = (text, weight): each term weighs the sum of its occurrences' weights, and
    /// terms whose weight is not positive (or NaN) are left out. In a fixed order (by hash,
    /// then text): `search`, `score` and `explain` all sum in this order, so they agree to the
    /// bit.
    pub(crate) fn prepare_into<'q>(
        &self,
        out: &mut Prepared,
        len: usize,
        token: impl Fn(usize) -> (&'q str, f32),
    ) {
        let Prepared {
            terms,
            found,
            tokens,
            idf,
        } = out;
        terms.clear();
        found.clear();
        tokens.clear();
        let text = |key: u128| token(key_position(key)).0;
        tokens.extend((0..len).map(|i| token_key(term_hash(token(i).0), i)));
        // By hash (integer compares; sorting by text cost a tenth of a small query), then by
        // position, so that a term's weights are summed in query order; by text only within a
        // run of equal hashes holding different terms (a collision), stably.
        tokens.sort_unstable();
        for run in tokens.chunk_by_mut(|&a, &b| key_hash(a) == key_hash(b)) {
            if let [first, rest @ ..] = &*run {
                let first = text(*first).as_bytes();
                if rest.iter().any(|&t| !same_bytes(text(t).as_bytes(), first)) {
                    run.sort_by(|&a, &b| text(a).cmp(text(b)));
                }
            }
        }
        let norm = LengthNorm::new(self.params, self.avgdl);
        let same_term = |&a: &u128, &b: &u128| {
            key_hash(a) == key_hash(b) && same_bytes(text(a).as_bytes(), text(b).as_bytes())
        };
        for run in tokens.chunk_by(same_term) {
            let Some(&key) = run.first() else {
                continue;
            };
            let (hash, first) = (key_hash(key), key_position(key));
            let weight: f64 = run
                .iter()
                .map(|&t| f64::from(token(key_position(t)).1))
                .sum();
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            let term = token(first).0;
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
            let idf = idf.idf(df, self.n_docs);
            let scorer =
                TermScorer::with_idf(self.params, norm, idf, df, self.n_docs, count, weight);
            terms.push(QueryTerm {
                token: first,
                scorer,
                found_from: start,
                found_to: found.len(),
            });
        }
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
