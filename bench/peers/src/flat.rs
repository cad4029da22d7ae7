//! The yardstick: a flat inverted index, the plain fast design every contender is compared with.
//!
//! Term ids in a std `HashMap`, postings `Vec<(doc, tf)>` per term (documents ascending),
//! document lengths, a dense `f32` score array reused across queries, and one pass over it that
//! resets each score and keeps the top k (a small sorted buffer, ties by document ascending).
//!
//! Scoring is capstore's: Okapi BM25 with Lucene's idf `ln(1 + (N - n + 0.5) / (n + 0.5))`,
//! k1 = 1.2, b = 0.75, a term repeated in the query scored once and multiplied by its count.
//! `idf · (k1 + 1)` is cached per term; an insert changes `N`, so it bumps an epoch and a query
//! recomputes the cached value of a term it meets from an older epoch (one compare per query
//! term otherwise). Inserts append (document ids grow), so postings stay sorted; there is no
//! removal and no snapshot: this is the fastest simple thing, not a store.

use std::collections::HashMap;

/// A flat BM25 index over documents numbered `0..len()` in insertion order.
pub struct FlatIndex {
    k1: f32,
    b: f32,
    term_ids: HashMap<String, u32>,
    /// `postings[term]`: (document, term frequency), documents ascending.
    postings: Vec<Vec<(u32, f32)>>,
    /// Cached `idf · (k1 + 1)` per term, valid when `idf_epoch[term] == epoch`.
    idf_k1p1: Vec<f32>,
    idf_epoch: Vec<u32>,
    epoch: u32,
    doc_len: Vec<f32>,
    total_len: f64,
    /// Dense scores, all zero between queries (the top-k scan resets them).
    scores: Vec<f32>,
    /// Scratch: the query's term ids.
    query_terms: Vec<u32>,
    /// Scratch: the top k being collected, best first.
    top: Vec<(f32, u32)>,
    /// Scratch for `insert`.
    doc_terms: Vec<u32>,
}

impl FlatIndex {
    /// An empty index with BM25 parameters `k1`, `b`.
    pub fn new(k1: f32, b: f32) -> Self {
        Self {
            k1,
            b,
            term_ids: HashMap::new(),
            postings: Vec::new(),
            idf_k1p1: Vec::new(),
            idf_epoch: Vec::new(),
            epoch: 0,
            doc_len: Vec::new(),
            total_len: 0.0,
            scores: Vec::new(),
            query_terms: Vec::new(),
            top: Vec::new(),
            doc_terms: Vec::new(),
        }
    }

    /// Builds from every document, then fills the idf cache.
    pub fn build<S: AsRef<str>>(k1: f32, b: f32, docs: &[Vec<S>]) -> Self {
        let mut index = Self::new(k1, b);
        for doc in docs {
            index.insert(doc);
        }
        index.epoch = 1;
        for t in 0..index.postings.len() {
            index.refresh_idf(t);
        }
        index
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// Appends a document (id `len()`); returns its id.
    pub fn insert<S: AsRef<str>>(&mut self, tokens: &[S]) -> u32 {
        let doc = u32::try_from(self.doc_len.len()).expect("fewer than 2^32 documents");
        self.doc_terms.clear();
        for t in tokens {
            let t = t.as_ref();
            let id = match self.term_ids.get(t) {
                Some(&id) => id,
                None => {
                    let id = self.postings.len() as u32;
                    self.term_ids.insert(t.to_owned(), id);
                    self.postings.push(Vec::new());
                    self.idf_k1p1.push(0.0);
                    self.idf_epoch.push(0);
                    id
                }
            };
            self.doc_terms.push(id);
        }
        self.doc_terms.sort_unstable();
        for run in self.doc_terms.chunk_by(|a, b| a == b) {
            self.postings[run[0] as usize].push((doc, run.len() as f32));
        }
        self.doc_len.push(tokens.len() as f32);
        self.total_len += tokens.len() as f64;
        self.scores.push(0.0);
        self.epoch = self.epoch.wrapping_add(1);
        doc
    }

    fn refresh_idf(&mut self, term: usize) {
        let n = self.doc_len.len() as f64;
        let df = self.postings[term].len() as f64;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        self.idf_k1p1[term] = (idf * (f64::from(self.k1) + 1.0)) as f32;
        self.idf_epoch[term] = self.epoch;
    }

    fn length_norm(&self) -> (f32, f32) {
        let avgdl = (self.total_len / self.len().max(1) as f64) as f32;
        (self.k1 * (1.0 - self.b), self.k1 * self.b / avgdl)
    }

    /// The top `k` documents for `query` (tokens), best first: `(document, score)`.
    pub fn search<S: AsRef<str>>(&mut self, query: &[S], k: usize) -> Vec<(u32, f32)> {
        if k == 0 {
            return Vec::new();
        }
        self.query_terms.clear();
        for t in query {
            if let Some(&id) = self.term_ids.get(t.as_ref()) {
                self.query_terms.push(id);
            }
        }
        self.query_terms.sort_unstable();
        let (c0, c1) = self.length_norm();
        let mut terms = std::mem::take(&mut self.query_terms);
        for run in terms.chunk_by(|a, b| a == b) {
            let term = run[0] as usize;
            if self.idf_epoch[term] != self.epoch {
                self.refresh_idf(term);
            }
            let w = self.idf_k1p1[term] * run.len() as f32;
            let scores = &mut self.scores[..];
            let doc_len = &self.doc_len[..];
            for &(doc, tf) in &self.postings[term] {
                let d = doc as usize;
                scores[d] += w * tf / (tf + c0 + c1 * doc_len[d]);
            }
        }
        terms.clear();
        self.query_terms = terms;

        // One pass: reset every score to zero and keep the k best (ties: smaller document).
        let top = &mut self.top;
        top.clear();
        let mut threshold = 0.0f32; // only matching documents (score > 0) qualify
        for (d, slot) in self.scores.iter_mut().enumerate() {
            let s = std::mem::take(slot);
            // Equal scores: the earlier document is already in, so only a better one enters.
            if s > threshold || (top.len() < k && s > 0.0) {
                let pos = top.partition_point(|&(ts, _)| ts >= s);
                top.insert(pos, (s, d as u32));
                top.truncate(k);
                if top.len() == k {
                    threshold = top[k - 1].0;
                }
            }
        }
        top.iter().map(|&(s, d)| (d, s)).collect()
    }

    /// `doc`'s score for `query` (0 when no term matches), computed from the postings: how the
    /// agreement check knows where any document belongs.
    pub fn score<S: AsRef<str>>(&mut self, doc: u32, query: &[S]) -> f32 {
        let mut terms: Vec<u32> = query
            .iter()
            .filter_map(|t| self.term_ids.get(t.as_ref()).copied())
            .collect();
        terms.sort_unstable();
        let (c0, c1) = self.length_norm();
        let mut score = 0.0f32;
        for run in terms.chunk_by(|a, b| a == b) {
            let term = run[0] as usize;
            if self.idf_epoch[term] != self.epoch {
                self.refresh_idf(term);
            }
            let postings = &self.postings[term];
            if let Ok(i) = postings.binary_search_by_key(&doc, |&(d, _)| d) {
                let tf = postings[i].1;
                let w = self.idf_k1p1[term] * run.len() as f32;
                score += w * tf / (tf + c0 + c1 * self.doc_len[doc as usize]);
            }
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn ranks_like_a_brute_force_scorer() {
        let docs: Vec<Vec<String>> = [
            "get weather city",
            "read file path",
            "weather weather forecast",
            "send email",
            "city map weather",
        ]
        .iter()
        .map(|d| toks(d))
        .collect();
        let mut index = FlatIndex::build(1.2, 0.75, &docs);
        let query = toks("weather city city");
        let hits = index.search(&query, 3);
        // Brute force with the same formula.
        let n = docs.len() as f64;
        let avgdl = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
        let brute = |d: &[String]| -> f64 {
            let mut s = 0.0;
            for (term, qtf) in [("weather", 1.0), ("city", 2.0)] {
                let df = docs.iter().filter(|x| x.iter().any(|t| t == term)).count() as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                let tf = d.iter().filter(|t| *t == term).count() as f64;
                s += qtf * idf * 2.2 * tf / (tf + 1.2 * (0.25 + 0.75 * d.len() as f64 / avgdl));
            }
            s
        };
        let mut expected: Vec<(u32, f64)> = (0..docs.len())
            .map(|i| (i as u32, brute(&docs[i])))
            .filter(|&(_, s)| s > 0.0)
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        expected.truncate(3);
        assert_eq!(hits.len(), expected.len());
        for ((d, s), (ed, es)) in hits.iter().zip(&expected) {
            assert_eq!(d, ed);
            assert!((f64::from(*s) - es).abs() < 1e-5 * es, "{s} vs {es}");
            assert_eq!(index.score(*d, &query), *s);
        }
        // The scores were reset: a second run gives the same.
        assert_eq!(index.search(&query, 3), hits);
    }

    #[test]
    fn insert_updates_idf() {
        let mut index = FlatIndex::build(1.2, 0.75, &[toks("a b"), toks("b c")]);
        let before = index.search(&toks("a"), 1)[0].1;
        index.insert(&toks("d e"));
        let after = index.search(&toks("a"), 1)[0].1;
        assert!(
            after > before,
            "a rarer term weighs more: {before} -> {after}"
        );
        let rebuilt = FlatIndex::build(1.2, 0.75, &[toks("a b"), toks("b c"), toks("d e")])
            .search(&toks("a"), 1)[0]
            .1;
        assert_eq!(after, rebuilt);
    }
}
