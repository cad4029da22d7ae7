//! Ranking metrics with binary relevance, as the shared data's peers were scored.
//!
//! Each takes a ranking (best first) and the gold ids. A ranking's repeated ids count once; a
//! query with no gold scores 0 everywhere.

use std::collections::HashSet;

use serde::Serialize;

/// The distinct ids among the first `k` of `ranked`, in order.
fn top(ranked: &[String], k: usize) -> Vec<&str> {
    let mut seen = HashSet::new();
    ranked
        .iter()
        .take(k)
        .map(String::as_str)
        .filter(|id| seen.insert(*id))
        .collect()
}

fn is_gold(gold: &[String], id: &str) -> bool {
    gold.iter().any(|g| g == id)
}

fn distinct_gold(gold: &[String]) -> usize {
    gold.iter().collect::<HashSet<_>>().len()
}

/// Recall@k: the fraction of the gold ids found in the top `k`.
///
/// ```
/// use capstore::eval::recall_at;
/// let ranked = ["a".to_string(), "b".into(), "c".into()];
/// assert_eq!(recall_at(&ranked, &["c".into(), "z".into()], 3), 0.5);
/// assert_eq!(recall_at(&ranked, &["c".into()], 2), 0.0);
/// ```
pub fn recall_at(ranked: &[String], gold: &[String], k: usize) -> f64 {
    let n = distinct_gold(gold);
    if n == 0 {
        return 0.0;
    }
    let hits = top(ranked, k).iter().filter(|id| is_gold(gold, id)).count();
    hits as f64 / n as f64
}

/// nDCG@k with binary gains: Σ over gold hits at rank r (1-based) of 1/log2(r + 1), divided by
/// the same sum for an ideal ranking of min(|gold|, k) gold ids.
///
/// ```
/// use capstore::eval::ndcg_at;
/// let ranked = ["x".to_string(), "a".into()];
/// // One gold at rank 2: (1/log2 3) / 1.
/// assert!((ndcg_at(&ranked, &["a".into()], 10) - 1.0 / 3f64.log2()).abs() < 1e-12);
/// ```
pub fn ndcg_at(ranked: &[String], gold: &[String], k: usize) -> f64 {
    let n = distinct_gold(gold);
    if n == 0 || k == 0 {
        return 0.0;
    }
    let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
    let dcg: f64 = top(ranked, k)
        .iter()
        .enumerate()
        .filter(|(_, id)| is_gold(gold, id))
        .map(|(i, _)| gain(i + 1))
        .sum();
    let ideal: f64 = (1..=n.min(k)).map(gain).sum();
    dcg / ideal
}

/// MRR@k: 1 / the rank of the first gold id in the top `k`, or 0.
///
/// ```
/// use capstore::eval::mrr_at;
/// let ranked = ["x".to_string(), "y".into(), "a".into()];
/// assert!((mrr_at(&ranked, &["a".into()], 10) - 1.0 / 3.0).abs() < 1e-12);
/// assert_eq!(mrr_at(&ranked, &["a".into()], 2), 0.0);
/// ```
pub fn mrr_at(ranked: &[String], gold: &[String], k: usize) -> f64 {
    top(ranked, k)
        .iter()
        .position(|id| is_gold(gold, id))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// C@k (completeness): 1 if every gold id is in the top `k`, else 0.
///
/// ```
/// use capstore::eval::complete_at;
/// let ranked = ["a".to_string(), "b".into()];
/// assert_eq!(complete_at(&ranked, &["a".into(), "b".into()], 2), 1.0);
/// assert_eq!(complete_at(&ranked, &["a".into(), "b".into()], 1), 0.0);
/// ```
pub fn complete_at(ranked: &[String], gold: &[String], k: usize) -> f64 {
    if distinct_gold(gold) == 0 {
        return 0.0;
    }
    let found = top(ranked, k);
    let all = gold.iter().all(|g| found.contains(&g.as_str()));
    if all { 1.0 } else { 0.0 }
}

/// The summary of a run: each metric ×100, averaged over the queries.
///
/// ```
/// use capstore::eval::Metrics;
/// let m = Metrics::of([(vec!["a".to_string()], vec!["a".to_string()])].iter().map(|(r, g)| (&r[..], &g[..])));
/// assert_eq!((m.queries, m.recall_1, m.ndcg_10, m.mrr_10, m.complete_10), (1, 100.0, 100.0, 100.0, 100.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Metrics {
    /// How many queries were scored.
    pub queries: usize,
    /// Recall@1 ×100.
    pub recall_1: f64,
    /// Recall@3 ×100.
    pub recall_3: f64,
    /// Recall@5 ×100.
    pub recall_5: f64,
    /// Recall@10 ×100.
    pub recall_10: f64,
    /// nDCG@10 ×100.
    pub ndcg_10: f64,
    /// MRR@10 ×100.
    pub mrr_10: f64,
    /// C@10 ×100.
    pub complete_10: f64,
}

impl Metrics {
    /// The mean of every metric over `(ranked, gold)` pairs, ×100 (all 0 for no pairs).
    ///
    /// ```
    /// use capstore::eval::Metrics;
    /// let pairs = [(vec!["a".to_string()], vec!["a".to_string()]), (vec![], vec!["b".to_string()])];
    /// let m = Metrics::of(pairs.iter().map(|(r, g)| (&r[..], &g[..])));
    /// assert_eq!(m.recall_10, 50.0);
    /// ```
    pub fn of<'a>(pairs: impl IntoIterator<Item = (&'a [String], &'a [String])>) -> Metrics {
        let mut sum = Metrics::default();
        for (ranked, gold) in pairs {
            sum.queries += 1;
            sum.recall_1 += recall_at(ranked, gold, 1);
            sum.recall_3 += recall_at(ranked, gold, 3);
            sum.recall_5 += recall_at(ranked, gold, 5);
            sum.recall_10 += recall_at(ranked, gold, 10);
            sum.ndcg_10 += ndcg_at(ranked, gold, 10);
            sum.mrr_10 += mrr_at(ranked, gold, 10);
            sum.complete_10 += complete_at(ranked, gold, 10);
        }
        if sum.queries == 0 {
            return sum;
        }
        let scale = 100.0 / sum.queries as f64;
        Metrics {
            queries: sum.queries,
            recall_1: sum.recall_1 * scale,
            recall_3: sum.recall_3 * scale,
            recall_5: sum.recall_5 * scale,
            recall_10: sum.recall_10 * scale,
            ndcg_10: sum.ndcg_10 * scale,
            mrr_10: sum.mrr_10 * scale,
            complete_10: sum.complete_10 * scale,
        }
    }
}
