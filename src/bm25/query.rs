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

use std::cell::Cell;
use std::sync::Arc;

use super::hash::term_hash;
use super::idf_memo::IdfMemo;
use super::reuse::{KEEP_UP_TO, put_back, take_from};
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

/// One distinct term of a query, as [`Corpus::push_term`] scores it.
struct Term<'q> {
    hash: u64,
    text: &'q str,
    /// The index of its first token.
    token: usize,
    /// How many tokens it stands for.
    count: u32,
    /// The sum of their weights.
    weight: f64,
}

/// A query of distinct terms, hashed and put in scoring order (by hash, then text) once, so
/// that each index it runs against (a selection searches the tools' and the skills') prepares
/// it without hashing, sorting and grouping its tokens again: that was half of preparing a
/// query, and a selection prepared the same terms twice.
pub(crate) struct HashedQuery<'q> {
    /// The (text, weight) terms, as given.
    terms: &'q [(&'q str, f32)],
    /// Their [`token_key`]s, in the order [`Corpus::prepare_into`] scores terms in.
    order: Vec<u128>,
}

impl<'q> HashedQuery<'q> {
    /// The query of `terms`, which must be distinct (each term once, with the sum of its
    /// weights), as a selection's query terms are.
    pub(crate) fn new(terms: &'q [(&'q str, f32)]) -> Self {
        // The buffer of the last query on this thread, if it is free: allocating one was one
        // of a selection's dozen allocations.
        let mut order = take_from(&ORDER);
        order.clear();
        order.extend(
            terms
                .iter()
                .enumerate()
                .map(|(i, &(text, _))| token_key(term_hash(text), i)),
        );
        let text = |key: u128| terms.get(key_position(key)).map_or("", |t| t.0);
        // By hash, then position (integers sort cheaply, see [`token_key`]); by text within a
        // run of equal hashes, which the position already gives when the terms come sorted by
        // text (a selection's do).
        order.sort_unstable();
        for run in order.chunk_by_mut(|&a, &b| key_hash(a) == key_hash(b)) {
            if !run.is_sorted_by(|&a, &b| text(a) <= text(b)) {
                run.sort_by(|&a, &b| text(a).cmp(text(b)));
            }
        }
        HashedQuery { terms, order }
    }

    /// How many terms.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }
}

/// Hands the order's buffer back to the thread for the next query, unless a huge query grew it.
impl Drop for HashedQuery<'_> {
    fn drop(&mut self) {
        let order = std::mem::take(&mut self.order);
        if order.capacity() <= KEEP_UP_TO {
            put_back(&ORDER, order);
        }
    }
}

thread_local! {
    /// A free [`HashedQuery`] order buffer.
    static ORDER: Cell<Vec<u128>> = const { Cell::new(Vec::new()) };
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
            let count = u32::try_from(run.len()).unwrap_or(u32::MAX);
            let term = Term {
                hash,
                text: token(first).0,
                token: first,
                count,
                weight,
            };
            self.push_term(terms, found, idf, norm, term);
        }
    }

    /// Refills `out` with the live terms of `query`, whose terms are distinct and already in
    /// the order [`Self::prepare_into`] sorts into: the same terms and scorers as
    /// `prepare_into` of the query's (text, weight) list, without hashing, sorting or grouping
    /// its tokens again. A term's token is its index in the query's list.
    pub(crate) fn prepare_hashed_into(&self, out: &mut Prepared, query: &HashedQuery<'_>) {
        let Prepared {
            terms, found, idf, ..
        } = out;
        terms.clear();
        found.clear();
        let norm = LengthNorm::new(self.params, self.avgdl);
        for &key in &query.order {
            let token = key_position(key);
            let Some(&(text, weight)) = query.terms.get(token) else {
                continue;
            };
            // A lone token's weight, as `prepare_into`'s sum of one gives it.
            let term = Term {
                hash: key_hash(key),
                text,
                token,
                count: 1,
                weight: f64::from(weight),
            };
            self.push_term(terms, found, idf, norm, term);
        }
    }

    /// Appends `term`'s scorer and where its postings are, unless its weight is not positive
    /// (or NaN) or no live document contains it. Inlined into both callers: as a call (it has
    /// two), its arguments and the vectors' state went through memory for every term, about
    /// 1% of a selection on MetaTool and 1.5% at N = 100 (callgrind).
    #[inline(always)]
    fn push_term(
        &self,
        terms: &mut Vec<QueryTerm>,
        found: &mut Vec<(usize, u32)>,
        idf: &mut IdfMemo,
        norm: LengthNorm,
        term: Term<'_>,
    ) {
        let Term {
            hash,
            text,
            token,
            count,
            weight,
        } = term;
        if weight.is_nan() || weight <= 0.0 {
            return;
        }
        let start = found.len();
        let mut df = 0i64;
        for (i, seg) in self.segments.iter().enumerate() {
            if let Some(id) = seg.lookup(hash, text) {
                df += seg.df(id);
                found.push((i, id));
            }
        }
        let Some(df) = u64::try_from(df).ok().filter(|&df| df > 0) else {
            found.truncate(start);
            return;
        };
        let idf = idf.idf(df, self.n_docs);
        let scorer = TermScorer::with_idf(self.params, norm, idf, df, self.n_docs, count, weight);
        terms.push(QueryTerm {
            token,
            scorer,
            found_from: start,
            found_to: found.len(),
        });
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::bm25::{Bm25Index, Document, HashedQuery, IndexConfig};

    /// Enough distinct terms that the tests' 6-bit hash gives many of them equal hashes, in
    /// several segments.
    fn index(vocabulary: &[String]) -> Bm25Index {
        let mut index = Bm25Index::new(IndexConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        for d in 0..40 {
            let terms: Vec<String> = (0..8)
                .map(|k| vocabulary[(d * 7 + k * k * 3) % vocabulary.len()].clone())
                .collect();
            index.insert(&format!("d{d}"), &Document::new().with_field("f", terms));
        }
        index
    }

    #[test]
    fn a_hashed_query_finds_what_the_weighted_one_does_to_the_bit() {
        let vocabulary: Vec<String> = (0..150).map(|i| format!("t{i}")).collect();
        let index = index(&vocabulary);
        let weights = [1.0, 0.5, 0.25, 2.0, 0.0, -1.0, f32::NAN, 1e-8];
        for q in 0..60 {
            // Distinct terms, known and unknown, sorted by text or not.
            let mut terms: Vec<(&str, f32)> = Vec::new();
            let mut unknown = Vec::new();
            for k in 0..(q % 17 + 1) {
                let i = (q * 31 + k * 11) % 170;
                if i >= vocabulary.len() {
                    unknown.push(format!("u{i}"));
                } else if !terms.iter().any(|t| t.0 == vocabulary[i]) {
                    terms.push((&vocabulary[i], weights[(q + k) % weights.len()]));
                }
            }
            let unknown: Vec<(&str, f32)> = unknown.iter().map(|u| (u.as_str(), 1.0)).collect();
            terms.extend(
                unknown
                    .iter()
                    .filter(|u| !terms.contains(u))
                    .copied()
                    .collect::<Vec<_>>(),
            );
            if q % 2 == 0 {
                terms.sort_by(|a, b| a.0.cmp(b.0));
            }
            let hashed = HashedQuery::new(&terms);
            let hits = |k| -> Vec<(Arc<str>, f32)> {
                let hits = index.search_hashed_keys(&hashed, k, None);
                hits.iter().map(|h| (Arc::clone(h.key), h.score)).collect()
            };
            let keep = |key: &str| key.len().is_multiple_of(2);
            for k in [0, 1, 5, 100] {
                let want: Vec<(Arc<str>, f32)> = index
                    .search_weighted_all(&terms, k)
                    .into_iter()
                    .map(|h| (h.key, h.score))
                    .collect();
                assert_eq!(hits(k), want, "{terms:?}");
                let kept = index.search_hashed_keys(&hashed, k, Some(&keep));
                let want_kept = index.search_weighted(&terms, k, keep);
                assert_eq!(kept.len(), want_kept.len(), "{terms:?}");
                for (got, want) in kept.iter().zip(&want_kept) {
                    assert_eq!(
                        (&**got.key, got.score),
                        (&*want.key, want.score),
                        "{terms:?}"
                    );
                }
            }
        }
        assert!(
            index
                .search_hashed_keys(&HashedQuery::new(&[]), 5, None)
                .is_empty()
        );
    }
}
