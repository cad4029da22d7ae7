//! The Okapi BM25 formula, in one place, with [`TermScorer::explain`] beside
//! [`TermScorer::score`] (modelled on tantivy's `query/bm25.rs` and Lucene's `BM25Similarity`).
//!
//! A document's score for a query is the sum, over the query's distinct terms, of
//!
//! ```text
//! query_weight · idf · (k1 + 1) · tf / (tf + k1 · (1 - b + b · dl / avgdl))
//! idf = ln(1 + (N - n + 0.5) / (n + 0.5))
//! ```
//!
//! where `query_weight` is the number of times the term occurs in the query (or the sum of its
//! weights, for a weighted query), `tf` the term's (field-weighted) frequency in the document,
//! `dl` the document's (field-weighted) length, `avgdl` the mean length over the corpus, `n` the number of documents containing the
//! term and `N` the number of documents. Nothing here is precomputed per posting: `N`, `n` and
//! `avgdl` change with every write, so the index computes the length norm inside its loop, which
//! costs no more than reading a stored one (see the module docs of [`crate::bm25`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Lucene's and tantivy's default term-saturation parameter `k1`.
pub const DEFAULT_K1: f32 = 1.2;

/// Lucene's and tantivy's default length-normalisation parameter `b`.
pub const DEFAULT_B: f32 = 0.75;

/// The two free parameters of BM25.
///
/// `k1` (≥ 0) says how quickly repeated occurrences of a term stop adding to the score: 0 counts
/// a term once however often it occurs. `b` (in [0, 1]) says how much long documents are
/// penalised: 0 ignores length, 1 divides the term frequency by the relative length in full.
/// [`crate::bm25::IndexConfig::validate`] checks both.
///
/// ```
/// use capstore::bm25::{Bm25Params, DEFAULT_B, DEFAULT_K1};
///
/// let params = Bm25Params::default();
/// assert_eq!((params.k1, params.b), (DEFAULT_K1, DEFAULT_B));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation; 1.2 by default.
    pub k1: f32,
    /// Length normalisation; 0.75 by default.
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self {
            k1: DEFAULT_K1,
            b: DEFAULT_B,
        }
    }
}

/// Lucene's inverse document frequency, `ln(1 + (N - n + 0.5) / (n + 0.5))`, computed in `f64`.
///
/// Always positive, unlike the original Robertson–Spärck Jones form that rank_bm25 uses, so a
/// term found in every document still adds a little. A `doc_freq` above `n_docs` (which an index
/// never produces) is treated as `n_docs`.
///
/// ```
/// use capstore::bm25::idf;
///
/// assert!((idf(1, 2) - std::f32::consts::LN_2).abs() < 1e-7);
/// assert!(idf(1, 1000) > idf(10, 1000));
/// ```
pub fn idf(doc_freq: u64, n_docs: u64) -> f32 {
    let big_n = n_docs as f64;
    let n = (doc_freq as f64).min(big_n);
    (1.0 + (big_n - n + 0.5) / (n + 0.5)).ln() as f32
}

/// `x` as an `f32`, with overflow saturated at `f32::MAX` and NaN mapped to 0, so that extreme but
/// finite weights and parameters can never turn a score into NaN (`inf / inf`, `0 · inf`).
pub(crate) fn saturating_f32(x: f64) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(-f64::from(f32::MAX), f64::from(f32::MAX)) as f32
    }
}

/// The score of one query term against any document: everything that depends only on the
/// query and the corpus (idf, query count, `k1`, `b`, `avgdl`) folded into three constants, so
/// that scoring a posting is one multiply-add, one add, one division and one multiply.
///
/// The index scores every posting with [`TermScorer::score`], so this is the single place where
/// the formula lives.
///
/// ```
/// use capstore::bm25::{Bm25Params, TermScorer};
///
/// // A term in 1 of 2 documents, once in the query; the document has tf 1 and average length.
/// let scorer = TermScorer::new(Bm25Params::default(), 1, 2, 10.0, 1);
/// let s = scorer.score(1.0, 10.0);
/// // idf · (k1 + 1) · 1 / (1 + k1) = idf = ln 2
/// assert!((s - std::f32::consts::LN_2).abs() < 1e-6);
/// assert_eq!(scorer.score(0.0, 10.0), 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TermScorer {
    /// `query_weight · idf · (k1 + 1)`.
    weight: f32,
    /// `k1 · (1 - b)`: the length norm's constant part.
    norm_base: f32,
    /// `k1 · b / avgdl`: the length norm's slope in `dl`.
    norm_per_len: f32,
    params: Bm25Params,
    idf: f32,
    doc_freq: u64,
    n_docs: u64,
    avgdl: f32,
    query_count: u32,
    query_weight: f32,
}

/// The length norm's two constants, `k1 · (1 - b)` and `k1 · b / avgdl`, as `f32`: they depend on
/// the corpus only, so a query computes them once for all its terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LengthNorm {
    base: f32,
    per_len: f32,
    avgdl: f32,
}

impl LengthNorm {
    /// An `avgdl` that is zero, negative or NaN (an empty corpus) makes the norm `k1`.
    pub(crate) fn new(params: Bm25Params, avgdl: f32) -> Self {
        let k1 = f64::from(params.k1);
        let b = f64::from(params.b);
        let per_len = if avgdl > 0.0 {
            k1 * b / f64::from(avgdl)
        } else {
            0.0
        };
        let base = if avgdl > 0.0 { k1 * (1.0 - b) } else { k1 };
        Self {
            base: saturating_f32(base),
            per_len: saturating_f32(per_len),
            avgdl,
        }
    }
}

impl TermScorer {
    /// The scorer for a term found in `doc_freq` of `n_docs` documents whose mean length is
    /// `avgdl`, occurring `query_count` times in the query.
    ///
    /// An `avgdl` that is zero, negative or NaN (an empty corpus) makes the length norm `k1`, as
    /// if every document had average length.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Params, TermScorer};
    ///
    /// let once = TermScorer::new(Bm25Params::default(), 3, 100, 12.0, 1);
    /// let twice = TermScorer::new(Bm25Params::default(), 3, 100, 12.0, 2);
    /// assert!((twice.score(2.0, 8.0) - 2.0 * once.score(2.0, 8.0)).abs() < 1e-6);
    /// ```
    pub fn new(
        params: Bm25Params,
        doc_freq: u64,
        n_docs: u64,
        avgdl: f32,
        query_count: u32,
    ) -> Self {
        Self::weighted(
            params,
            doc_freq,
            n_docs,
            avgdl,
            query_count,
            f64::from(query_count),
        )
    }

    /// [`Self::new`] for a term whose `query_count` occurrences in a weighted query weigh
    /// `query_weight` in total (the contribution is multiplied by the weight instead of the
    /// count).
    pub(crate) fn weighted(
        params: Bm25Params,
        doc_freq: u64,
        n_docs: u64,
        avgdl: f32,
        query_count: u32,
        query_weight: f64,
    ) -> Self {
        let norm = LengthNorm::new(params, avgdl);
        let idf = idf(doc_freq, n_docs);
        Self::with_idf(
            params,
            norm,
            idf,
            doc_freq,
            n_docs,
            query_count,
            query_weight,
        )
    }

    /// [`Self::weighted`] given what it computes from the corpus alone: the length norm (the
    /// same for every term of a query) and `idf(doc_freq, n_docs)` (which a query may have
    /// memoised). The same arithmetic, so the same bits.
    pub(crate) fn with_idf(
        params: Bm25Params,
        norm: LengthNorm,
        idf: f32,
        doc_freq: u64,
        n_docs: u64,
        query_count: u32,
        query_weight: f64,
    ) -> Self {
        let k1 = f64::from(params.k1);
        let weight = query_weight * f64::from(idf) * (k1 + 1.0);
        Self {
            weight: saturating_f32(weight),
            norm_base: norm.base,
            norm_per_len: norm.per_len,
            params,
            idf,
            doc_freq,
            n_docs,
            avgdl: norm.avgdl,
            query_count,
            query_weight: saturating_f32(query_weight),
        }
    }

    /// This term's contribution to the score of a document where it has frequency `tf` and whose
    /// length is `dl`; 0 when `tf` is not positive. Never NaN for finite inputs.
    ///
    /// ```
    /// use capstore::bm25::{Bm25Params, TermScorer};
    ///
    /// let scorer = TermScorer::new(Bm25Params::default(), 5, 50, 20.0, 1);
    /// // Longer documents score lower for the same term frequency.
    /// assert!(scorer.score(1.0, 10.0) > scorer.score(1.0, 40.0));
    /// ```
    #[inline]
    pub fn score(&self, tf: f32, dl: f32) -> f32 {
        if tf > 0.0 {
            self.score_posting(tf, dl)
        } else {
            0.0
        }
    }

    /// [`Self::score`] without the `tf > 0` check, for postings (which always have `tf > 0`):
    /// the index's inner loop. Both paths must stay this one expression so that
    /// [`crate::bm25::Bm25Index::score`] equals the score `search` reports, bit for bit.
    #[inline(always)]
    pub(crate) fn score_posting(&self, tf: f32, dl: f32) -> f32 {
        self.weight * (tf / (tf + (self.norm_base + self.norm_per_len * dl)))
    }

    /// The most [`Self::score_posting`] can give: `query_weight · idf · (k1 + 1)`, since
    /// `tf / (tf + norm) ≤ 1` for `norm ≥ 0` (and rounds to at most 1 in `f32`). The bound
    /// dynamic pruning (`prune.rs`) skips terms by.
    #[inline]
    pub(crate) fn max_score(&self) -> f32 {
        self.weight
    }

    /// The idf this scorer uses.
    ///
    /// ```
    /// use capstore::bm25::{idf, Bm25Params, TermScorer};
    ///
    /// assert_eq!(TermScorer::new(Bm25Params::default(), 2, 9, 4.0, 1).idf(), idf(2, 9));
    /// ```
    pub fn idf(&self) -> f32 {
        self.idf
    }

    /// The contribution of `term` to a document where it has frequency `tf` and whose length is
    /// `dl`, with every input of the formula spelled out; its `score` equals [`Self::score`].
    ///
    /// ```
    /// use capstore::bm25::{Bm25Params, TermScorer};
    ///
    /// let scorer = TermScorer::new(Bm25Params::default(), 1, 2, 10.0, 1);
    /// let e = scorer.explain("weather", 1.0, 10.0);
    /// assert_eq!((e.term.as_str(), e.doc_freq, e.n_docs), ("weather", 1, 2));
    /// assert_eq!(e.score, scorer.score(1.0, 10.0));
    /// ```
    pub fn explain(&self, term: &str, tf: f32, dl: f32) -> TermExplanation {
        TermExplanation {
            term: term.to_owned(),
            query_count: self.query_count,
            query_weight: self.query_weight,
            tf,
            doc_freq: self.doc_freq,
            n_docs: self.n_docs,
            dl,
            avgdl: self.avgdl,
            idf: self.idf,
            score: self.score(tf, dl),
        }
    }
}

/// Why a document scored what it did for a query: one [`TermExplanation`] per distinct query
/// term found in the document, in the order the index sums them.
///
/// `score` equals [`crate::bm25::Bm25Index::score`] for the same key and query, and the sum of
/// the terms' scores (up to `f32` rounding). `Display` spells the formula as Lucene and tantivy do.
///
/// ```
/// use capstore::bm25::{Bm25Index, Document, IndexConfig};
///
/// let mut index = Bm25Index::new(IndexConfig::default())?;
/// index.insert("get_weather", &Document::new().with_field("name", vec!["get".into(), "weather".into()]));
/// index.insert("read_file", &Document::new().with_field("name", vec!["read".into(), "file".into()]));
/// let e = index.explain("get_weather", &["weather"]).unwrap();
/// assert_eq!(e.terms.len(), 1);
/// assert!(e.to_string().contains("idf, computed as ln(1 + (N - n + 0.5) / (n + 0.5))"));
/// # Ok::<(), capstore::bm25::Bm25Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The document explained.
    pub key: Arc<str>,
    /// Its score for the query.
    pub score: f32,
    /// The matching query terms, each with its contribution.
    pub terms: Vec<TermExplanation>,
    /// The `k1` and `b` in force.
    pub params: Bm25Params,
}

/// One query term's contribution to a document's score, with every input of the formula.
///
/// ```
/// use capstore::bm25::{Bm25Params, TermScorer};
///
/// let t = TermScorer::new(Bm25Params::default(), 1, 4, 3.0, 2).explain("file", 1.0, 3.0);
/// assert_eq!(t.query_count, 2);
/// assert!(t.score > 0.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermExplanation {
    /// The term.
    pub term: String,
    /// How many times it occurs in the query.
    pub query_count: u32,
    /// The sum of the weights of those occurrences (the contribution is multiplied by this):
    /// equal to `query_count` for an unweighted query.
    pub query_weight: f32,
    /// Its (field-weighted) frequency in the document.
    pub tf: f32,
    /// `n`: the number of documents containing it.
    pub doc_freq: u64,
    /// `N`: the number of documents.
    pub n_docs: u64,
    /// The document's (field-weighted) length.
    pub dl: f32,
    /// The mean document length.
    pub avgdl: f32,
    /// `ln(1 + (N - n + 0.5) / (n + 0.5))`.
    pub idf: f32,
    /// The contribution: `query_weight · idf · (k1 + 1) · tf / (tf + k1 · (1 - b + b · dl / avgdl))`.
    pub score: f32,
}

impl fmt::Display for Explanation {
    /// A Lucene-style tree: the total, then each term's product of factors, then their inputs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Bm25Params { k1, b } = self.params;
        writeln!(f, "{} = score of {:?}, sum of:", self.score, &*self.key)?;
        for t in &self.terms {
            let norm = if t.avgdl > 0.0 {
                k1 * (1.0 - b + b * t.dl / t.avgdl)
            } else {
                k1
            };
            let tf_part = if t.tf > 0.0 {
                t.tf / (t.tf + norm)
            } else {
                0.0
            };
            writeln!(f, "  {} = weight({:?}), product of:", t.score, t.term)?;
            writeln!(
                f,
                "    {} = query count, occurrences of term in query",
                t.query_count
            )?;
            writeln!(f, "    {} = (k1 + 1)", k1 + 1.0)?;
            writeln!(
                f,
                "    {} = idf, computed as ln(1 + (N - n + 0.5) / (n + 0.5)) from:",
                t.idf
            )?;
            writeln!(
                f,
                "      {} = n, number of docs containing this term",
                t.doc_freq
            )?;
            writeln!(f, "      {} = N, total number of docs", t.n_docs)?;
            writeln!(
                f,
                "    {tf_part} = tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:"
            )?;
            writeln!(
                f,
                "      {} = freq, occurrences of term within document (field-weighted)",
                t.tf
            )?;
            writeln!(f, "      {k1} = k1, term saturation parameter")?;
            writeln!(f, "      {b} = b, length normalization parameter")?;
            writeln!(
                f,
                "      {} = dl, length of document (field-weighted)",
                t.dl
            )?;
            writeln!(f, "      {} = avgdl, average length of documents", t.avgdl)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_matches_lucene_literal() {
        // ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2, as tantivy's test pins.
        assert!((idf(1, 2) - std::f32::consts::LN_2).abs() < 1e-7);
    }

    #[test]
    fn idf_is_positive_even_for_a_term_in_every_document() {
        assert!(idf(1000, 1000) > 0.0);
        assert!(idf(5000, 1000) > 0.0, "doc_freq above n_docs is clamped");
        assert!(idf(0, 0).is_finite());
    }

    #[test]
    fn full_term_score_matches_a_hand_computed_literal() {
        // N = 10, n = 2, tf = 3, dl = 20, avgdl = 10, k1 = 1.2, b = 0.75, query count 1:
        // idf  = ln(1 + 8.5 / 2.5) = ln 4.4 = 1.4816045409242156
        // norm = 1.2 · (0.25 + 0.75 · 2) = 2.1
        // tf part = 3 · 2.2 / (3 + 2.1) = 6.6 / 5.1 = 1.2941176470588236
        // score = 1.4816045409242156 · 1.2941176470588236 = 1.9173705823725143
        let s = TermScorer::new(Bm25Params::default(), 2, 10, 10.0, 1).score(3.0, 20.0);
        assert!((s - 1.917_370_6).abs() < 1e-6, "{s}");
    }

    #[test]
    fn scores_are_never_nan() {
        let extreme = Bm25Params {
            k1: f32::MAX,
            b: 1.0,
        };
        for params in [
            Bm25Params::default(),
            Bm25Params { k1: 0.0, b: 0.0 },
            Bm25Params { k1: 0.0, b: 1.0 },
            extreme,
        ] {
            for avgdl in [0.0, f32::MIN_POSITIVE, 1.0, f32::MAX] {
                let scorer = TermScorer::new(params, 1, 3, avgdl, u32::MAX);
                for tf in [0.0, f32::MIN_POSITIVE, 1.0, f32::MAX] {
                    for dl in [0.0, 1.0, f32::MAX] {
                        let s = scorer.score(tf, dl);
                        assert!(!s.is_nan(), "{params:?} avgdl {avgdl} tf {tf} dl {dl}");
                        assert!(s >= 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn explanation_reports_the_same_score() {
        let scorer = TermScorer::new(Bm25Params::default(), 4, 40, 7.5, 3);
        let e = scorer.explain("file", 2.0, 5.0);
        assert_eq!(e.score, scorer.score(2.0, 5.0));
        assert_eq!(e.idf, idf(4, 40));
        assert_eq!((e.query_count, e.query_weight), (3, 3.0));
        assert_eq!((e.tf, e.dl, e.avgdl), (2.0, 5.0, 7.5));
    }

    #[test]
    fn display_spells_the_formula() {
        let scorer = TermScorer::new(Bm25Params::default(), 1, 2, 10.0, 1);
        let e = Explanation {
            key: Arc::from("k"),
            score: scorer.score(1.0, 10.0),
            terms: vec![scorer.explain("weather", 1.0, 10.0)],
            params: Bm25Params::default(),
        };
        let text = e.to_string();
        assert!(text.contains("freq / (freq + k1 * (1 - b + b * dl / avgdl))"));
        assert!(text.contains("n, number of docs containing this term"));
        assert!(text.contains("\"weather\""));
    }
}
