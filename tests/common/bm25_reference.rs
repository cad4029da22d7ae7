//! A brute-force BM25 (f64, every document scanned for every term) that the model-based tests
//! hold the index to: `tests/bm25_model.rs` (the index alone) and `tests/api_model.rs` (the
//! store's tools and skills tables).

use std::collections::BTreeMap;

use capstore::bm25::{Bm25Params, Document, IndexConfig};

/// Relative tolerance between the index's `f32` scores and the reference.
pub const REL_TOL: f64 = 1e-5;
/// Absolute tolerance, for scores near zero.
pub const ABS_TOL: f64 = 1e-6;

/// Whether two scores agree within the tolerances.
pub fn close(a: f64, b: f64) -> bool {
    let diff = (a - b).abs();
    diff <= ABS_TOL || diff <= REL_TOL * a.abs().max(b.abs())
}

/// The documents of one index, scored with its configuration.
pub struct Reference<'c> {
    pub config: &'c IndexConfig,
    pub docs: BTreeMap<String, Document>,
}

impl Reference<'_> {
    pub fn weight(&self, field: &str) -> f64 {
        f64::from(self.config.field_weights.get(field).copied().unwrap_or(1.0))
    }

    /// Σ weight · count of `t` over the document's fields.
    pub fn tf(&self, doc: &Document, t: &str) -> f64 {
        doc.fields()
            .map(|(name, tokens)| self.weight(name) * tokens.filter(|x| *x == t).count() as f64)
            .sum()
    }

    /// Σ weight · field length.
    pub fn dl(&self, doc: &Document) -> f64 {
        doc.fields()
            .map(|(name, tokens)| self.weight(name) * tokens.len() as f64)
            .sum()
    }

    pub fn n(&self) -> u64 {
        self.docs.len() as u64
    }

    pub fn total_len(&self) -> f64 {
        self.docs.values().map(|d| self.dl(d)).sum()
    }

    pub fn avgdl(&self) -> f64 {
        if self.docs.is_empty() {
            0.0
        } else {
            self.total_len() / self.docs.len() as f64
        }
    }

    pub fn df(&self, t: &str) -> u64 {
        self.docs.values().filter(|d| self.tf(d, t) > 0.0).count() as u64
    }

    pub fn score(&self, doc: &Document, query: &[String]) -> f64 {
        let weighted: Vec<(String, f32)> = query.iter().map(|t| (t.clone(), 1.0)).collect();
        self.score_weighted(doc, &weighted)
    }

    /// Σ over distinct terms of (Σ of the term's weights) · idf · (k1 + 1) · tf / (tf + norm);
    /// terms whose total weight is not positive are left out.
    pub fn score_weighted(&self, doc: &Document, query: &[(String, f32)]) -> f64 {
        let Bm25Params { k1, b } = self.config.params;
        let (k1, b) = (f64::from(k1), f64::from(b));
        let n = self.n() as f64;
        let avgdl = self.avgdl();
        let dl = self.dl(doc);
        let mut counts: BTreeMap<&str, f64> = BTreeMap::new();
        for (t, w) in query {
            *counts.entry(t).or_default() += f64::from(*w);
        }
        counts.retain(|_, w| *w > 0.0);
        let mut score = 0.0;
        for (t, count) in counts {
            let tf = self.tf(doc, t);
            if tf <= 0.0 {
                continue;
            }
            let df = self.df(t) as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let norm = if avgdl > 0.0 {
                k1 * (1.0 - b + b * dl / avgdl)
            } else {
                k1
            };
            score += count * idf * (k1 + 1.0) * tf / (tf + norm);
        }
        score
    }

    /// Every matching document, best first, ties by key.
    pub fn search(&self, query: &[String]) -> Vec<(String, f64)> {
        let weighted: Vec<(String, f32)> = query.iter().map(|t| (t.clone(), 1.0)).collect();
        self.search_weighted(&weighted)
    }

    pub fn search_weighted(&self, query: &[(String, f32)]) -> Vec<(String, f64)> {
        let mut hits: Vec<(String, f64)> = self
            .docs
            .iter()
            .map(|(k, d)| (k.clone(), self.score_weighted(d, query)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits
    }
}
