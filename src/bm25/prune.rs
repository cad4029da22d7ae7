//! Exact dynamic pruning of a top-k query on a large index: MaxScore (Turtle & Flood 1995, as
//! in Lucene's `MaxScoreBulkScorer` and PISA), term at a time over the dense score array.
//!
//! The plain path scores every posting of every query term. At a million documents most of
//! those postings belong to a few common terms (a word in most documents has an idf near 0),
//! whose whole contribution cannot lift a document that matched nothing else into the top k.
//! MaxScore skips them:
//!
//! 1. Each term's contribution is at most its **bound** `query_weight · idf · (k1 + 1)`
//!    ([`TermScorer::max_score`]). Terms are taken by bound, highest (rarest) first, and scored
//!    into the dense array as the plain path does ("essential" terms).
//! 2. Before each term, θ is estimated: the k-th best partial score among the live documents
//!    of the first (rarest) terms, at most [`WATCH`] of them. A partial score is a lower bound
//!    of the final one, so the top k scores at least θ. Once the bounds of the terms left sum
//!    to less than a share of θ ([`SPLIT_SHARE`]), a document that none of the terms so far
//!    matched cannot enter: the terms left ("non-essential", the common words with the longest
//!    postings) are only *probed* for the candidates, the documents already scored whose
//!    partial score plus the bounds left still reaches θ (one scan of the array gathers them,
//!    in slot order; probing gallops through the slot-ascending postings, or merges when the
//!    candidates are dense). After each probed term θ is raised and candidates that cannot
//!    reach it are dropped.
//! 3. The candidates left are rescored exactly, term by term in the query's order, as the plain
//!    path sums (a binary search per term): scores, ties by key and therefore the top k are
//!    the plain path's to the bit.
//!
//! Every comparison with θ allows for `f32` rounding: sums of up to q terms in another order
//! differ from the plain path's by at most a relative `γ ≈ q·ε`; a document is dropped only when
//! its bound, raised by `4γ`, is still below θ lowered by `4γ`, so it falls strictly below k
//! documents and cannot even tie. A query that pruning cannot serve (one term, a `keep`
//! filter, weights so large that the bounds overflow, a vast query) takes the plain path.

use std::sync::Arc;

use super::postings::{List, accumulate};
use super::query::Prepared;
use super::scoring::TermScorer;
use super::segment::Segment;
use super::tombstones::Tombstones;

/// Indexes with fewer slots than this take the plain path: below it the dense array and the
/// postings fit the caches and the plain scan is as fast (measured in `bm25_search`, see the
/// module docs of [`crate::bm25`]).
pub(super) const PRUNE_MIN_SLOTS: usize = 200_000;

/// [`Pruned::gather`] scans the whole score array when the slots touched (with repeats) are
/// at least one in this many of its slots, rather than reading them and sorting.
const SCAN_SHARE: usize = 8;

/// [`gallop`] merges linearly when the candidates are at least one in this many postings.
const MERGE_DENSITY: usize = 8;

/// The essential terms end once the bounds of the terms left are below this share of θ. At
/// 1 (plain MaxScore) the documents scored so far nearly all stay candidates (θ minus the
/// bounds left is small against one term's contribution) and probing them cost more than the
/// postings skipped; measured on the benches' corpus at 300,000 documents (p50 against the
/// plain path): 1.0 → 2.2×, 0.5 → 0.78×, 0.3 → 0.77×, 0.15 → 0.82×.
const SPLIT_SHARE: f64 = 0.3;

/// θ is watched on at most this many documents (those of the rarest terms).
const WATCH: usize = 4096;

/// Scores the scan tests together.
const SCAN_CHUNK: usize = 16;

/// A query's buffers for pruning, kept in the per-thread scratch (`scratch.rs`).
#[derive(Default)]
pub(crate) struct PruneScratch {
    /// (bound, index in the prepared terms), best bound first.
    order: Vec<(f32, usize)>,
    /// Σ of the bounds of `order[n..]`, in `f64`.
    rest: Vec<f64>,
    /// The candidates: (score so far, slot).
    pub(crate) candidates: Vec<(f32, u32)>,
    /// Scratch for selecting the k-th score.
    kth: Vec<f32>,
    /// The distinct slots θ is watched on.
    watch: Vec<u32>,
}

impl PruneScratch {
    pub(crate) const fn new() -> Self {
        Self {
            order: Vec::new(),
            rest: Vec::new(),
            candidates: Vec::new(),
            kth: Vec::new(),
            watch: Vec::new(),
        }
    }
}

/// What pruning reads of the index.
pub(super) struct Pruned<'a> {
    pub(super) segments: &'a [Arc<Segment>],
    pub(super) dead: &'a Tombstones,
}

impl Pruned<'_> {
    /// Runs `query` for the top `k` with MaxScore, leaving in `scratch.candidates` (exact score,
    /// slot) pairs of live documents, a superset of the top k (everything that could enter it,
    /// ties included). `scores` must be all zero and `touched` empty; both are left so. Returns
    /// `false` (having touched neither) when pruning cannot serve the query: the caller then
    /// takes the plain path.
    pub(super) fn candidates(
        &self,
        query: &Prepared,
        k: usize,
        scores: &mut [f32],
        touched: &mut Vec<u32>,
        scratch: &mut PruneScratch,
    ) -> bool {
        let terms = &query.terms;
        let q = terms.len();
        if q < 2 || k == 0 {
            return false;
        }
        // The relative error of a sum of up to q (+2 for the margin's own rounding) terms.
        let gamma = 1.01 * (q as f64 + 2.0) * f64::from(f32::EPSILON);
        let slack = 4.0 * gamma;
        if slack > 0.01 {
            return false;
        }
        let PruneScratch {
            order,
            rest,
            candidates,
            kth,
            watch,
        } = scratch;
        order.clear();
        let mut total = 0.0f64;
        for (i, t) in terms.iter().enumerate() {
            let bound = t.scorer.max_score();
            if !bound.is_finite() {
                return false;
            }
            total += f64::from(bound);
            order.push((bound, i));
        }
        if total >= f64::from(f32::MAX) / 4.0 {
            return false;
        }
        order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        rest.clear();
        rest.resize(q + 1, 0.0);
        for n in (0..q).rev() {
            let bound = order.get(n).map_or(0.0, |o| f64::from(o.0));
            let after = rest.get(n + 1).copied().unwrap_or(0.0);
            if let Some(r) = rest.get_mut(n) {
                *r = after + bound;
            }
        }
        let rest_at = |n: usize| rest.get(n).copied().unwrap_or(0.0);
        let below =
            |upper: f64, theta: f32| upper * (1.0 + slack) < f64::from(theta) * (1.0 - slack);
        let lists = |i: usize| {
            let term = terms.get(i);
            term.map(|t| query.found(t))
                .unwrap_or_default()
                .iter()
                .filter_map(|&(seg, id)| Some((self.segments.get(seg)?, id)))
        };
        let scorer = |i: usize| terms.get(i).map(|t| &t.scorer);

        // 1. Essential terms, best bound first, into the dense array. θ is watched on the
        // documents of the first (rarest) terms, at most `WATCH` of them: the k-th best partial
        // score of any k live documents bounds the top k from below, and those of the rarest
        // terms are where the best documents are. So a check costs a few thousand reads, not a
        // pass over everything scored so far.
        watch.clear();
        let mut watching = true;
        let mut theta = f32::NEG_INFINITY;
        let mut split = q;
        let mut enough = false;
        for (n, &(_, i)) in order.iter().enumerate() {
            // θ is at most the bounds scored so far.
            if !enough && n > 0 && !watch.is_empty() && rest_at(n) < total - rest_at(n) {
                theta = theta.max(self.watched_kth(scores, watch, k, kth));
                enough = below(rest_at(n) / SPLIT_SHARE, theta);
            }
            if enough {
                split = n;
                break;
            }
            let Some(scorer) = scorer(i) else { continue };
            let before = watch.len();
            for (seg, id) in lists(i) {
                let list = seg.postings(id);
                accumulate(scores, list, scorer);
                list.push_slots(touched);
                if watching {
                    list.push_slots(watch);
                }
            }
            if watching {
                if watch.len() > WATCH {
                    watch.truncate(before);
                    watching = false;
                } else {
                    watch.sort_unstable();
                    watch.dedup();
                }
            }
        }
        // Only documents that can still reach θ with the terms left: the array is all zero
        // again and `touched` empty, the rest works on `candidates`.
        let rest_now = rest_at(split);
        self.gather(scores, touched, candidates, least(theta, rest_now, slack));
        theta = theta.max(kth_best(candidates, k, kth));

        #[cfg(test)]
        PROBED_TERMS.with(|n| n.set(n.get() + (q - split)));

        // 2. Non-essential terms, probed for the candidates that can still reach θ.
        candidates.retain(|&(s, _)| !below(f64::from(s) + rest_now, theta));
        for n in split..q {
            let Some(&(_, i)) = order.get(n) else { break };
            let Some(scorer) = scorer(i) else { continue };
            for (seg, id) in lists(i) {
                let from = candidates.partition_point(|&(_, slot)| slot < seg.lo);
                let to = candidates.partition_point(|&(_, slot)| slot < seg.hi);
                if let Some(these) = candidates.get_mut(from..to) {
                    probe(seg.postings(id), scorer, these);
                }
            }
            theta = theta.max(kth_best(candidates, k, kth));
            let after = rest_at(n + 1);
            candidates.retain(|&(s, _)| !below(f64::from(s) + after, theta));
        }

        // 3. The finalists, rescored exactly as the plain path sums.
        theta = theta.max(kth_best(candidates, k, kth));
        candidates.retain(|&(s, _)| !below(f64::from(s), theta));
        for (score, slot) in candidates.iter_mut() {
            *score = self.exact(query, *slot);
        }
        true
    }

    /// Takes every touched slot's score (leaving the array all zero and `touched` empty) into
    /// `candidates`, once per slot, by ascending slot: live documents whose score is positive
    /// and at least `least`.
    ///
    /// When the touched slots (counted with repeats) are many against the array, the array is
    /// scanned, which yields the slots in order; otherwise only the touched slots are read and
    /// then sorted.
    fn gather(
        &self,
        scores: &mut [f32],
        touched: &mut Vec<u32>,
        candidates: &mut Vec<(f32, u32)>,
        least: f32,
    ) {
        candidates.clear();
        let check_dead = !self.dead.is_empty();
        let keep = |s: f32| (s > 0.0) & (s >= least);
        if touched.len() >= scores.len() / SCAN_SHARE {
            for (c, chunk) in scores.chunks_mut(SCAN_CHUNK).enumerate() {
                // Most chunks hold no candidate: tested without a branch per score.
                let found = chunk.iter().fold(0u32, |n, &s| n + u32::from(keep(s)));
                if found > 0 {
                    for (i, &s) in chunk.iter().enumerate() {
                        let slot = u32::try_from(c * SCAN_CHUNK + i).unwrap_or(u32::MAX);
                        if keep(s) && !(check_dead && self.dead.contains(slot)) {
                            candidates.push((s, slot));
                        }
                    }
                }
                chunk.fill(0.0);
            }
        } else {
            for &slot in touched.iter() {
                // A slot met again reads zero.
                let s = scores.get_mut(slot as usize).map_or(0.0, std::mem::take);
                if keep(s) && !(check_dead && self.dead.contains(slot)) {
                    candidates.push((s, slot));
                }
            }
            candidates.sort_unstable_by_key(|&(_, slot)| slot);
        }
        touched.clear();
    }

    /// The k-th best score of the live documents at the (distinct) `slots` (`-inf` if fewer).
    fn watched_kth(&self, scores: &[f32], slots: &[u32], k: usize, kth: &mut Vec<f32>) -> f32 {
        kth.clear();
        let check_dead = !self.dead.is_empty();
        kth.extend(slots.iter().filter_map(|&slot| {
            let s = scores.get(slot as usize).copied().unwrap_or(0.0);
            (s > 0.0 && !(check_dead && self.dead.contains(slot))).then_some(s)
        }));
        if kth.len() < k || k == 0 {
            return f32::NEG_INFINITY;
        }
        let (_, &mut nth, _) = kth.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        nth
    }

    /// The score of the document at `slot` as the plain path computes it: each term's
    /// contribution added in the query's order, starting from zero.
    fn exact(&self, query: &Prepared, slot: u32) -> f32 {
        let at = self.segments.partition_point(|s| s.hi <= slot);
        let Some(seg) = self.segments.get(at) else {
            return 0.0;
        };
        let mut total = 0.0f32;
        for t in &query.terms {
            let Some(&(_, id)) = query.found(t).iter().find(|&&(s, _)| s == at) else {
                continue;
            };
            if let Some(p) = seg.postings(id).get(slot) {
                total += t.scorer.score_posting(p.tf, p.dl);
            }
        }
        total
    }
}

/// A score below which a document cannot reach `theta` with `rest` more, allowing for
/// rounding as [`Pruned::candidates`] does (`upper · (1 + slack) < theta · (1 - slack)`), and
/// lowered a little further so that rounding it to `f32` keeps it on the safe side.
fn least(theta: f32, rest: f64, slack: f64) -> f32 {
    let at_least = f64::from(theta) * (1.0 - slack) / (1.0 + slack) - rest;
    (at_least - at_least.abs() * 1e-6) as f32
}

/// The k-th best score of `candidates` (`-inf` if there are fewer), selected in `kth`.
fn kth_best(candidates: &[(f32, u32)], k: usize, kth: &mut Vec<f32>) -> f32 {
    if candidates.len() < k || k == 0 {
        return f32::NEG_INFINITY;
    }
    kth.clear();
    kth.extend(candidates.iter().map(|&(s, _)| s));
    let (_, &mut nth, _) = kth.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    nth
}

/// Adds `scorer`'s contribution to each candidate (sorted by slot, all within the list's
/// segment) that `list` holds.
fn probe(list: List<'_>, scorer: &TermScorer, candidates: &mut [(f32, u32)]) {
    match list {
        List::Long(postings) => gallop(postings, candidates, scorer, |p| (p.slot, p.tf, p.dl)),
        List::Short { lo, postings, .. } => gallop(postings, candidates, scorer, |p| {
            let p = p.long(lo);
            (p.slot, p.tf, p.dl)
        }),
    }
}

/// [`probe`] on postings of either layout, `read` giving a posting's (slot, tf, dl): for each
/// candidate in turn, a galloping search forward from the last one's place (steps 1, 2, 4, …,
/// then a binary search in the last step), so a pass costs O(c log(P / c)) for c candidates
/// and P postings instead of O(P).
fn gallop<P: Copy>(
    postings: &[P],
    candidates: &mut [(f32, u32)],
    scorer: &TermScorer,
    read: impl Fn(P) -> (u32, f32, f32),
) {
    let slot_at = |i: usize| postings.get(i).map(|&p| read(p).0);
    if candidates.len().saturating_mul(MERGE_DENSITY) >= postings.len() {
        // Candidates about as dense as the postings: a plain merge of the two.
        let mut postings = postings.iter().map(|&p| read(p)).peekable();
        for (score, slot) in candidates.iter_mut() {
            while postings.next_if(|p| p.0 < *slot).is_some() {}
            if let Some(&(s, tf, dl)) = postings.peek()
                && s == *slot
            {
                *score += scorer.score_posting(tf, dl);
            }
        }
        return;
    }
    let mut at = 0usize;
    for (score, slot) in candidates.iter_mut() {
        let target = *slot;
        // Every posting before `lo` is below the target; `hi` is past the end or at a posting
        // not below it.
        let (mut lo, mut hi, mut step) = (at, at, 1usize);
        while let Some(s) = slot_at(hi)
            && s < target
        {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        let end = hi.min(postings.len());
        at = lo
            + postings
                .get(lo..end)
                .map_or(0, |w| w.partition_point(|&p| read(p).0 < target));
        if let Some(&p) = postings.get(at) {
            let (s, tf, dl) = read(p);
            if s == target {
                *score += scorer.score_posting(tf, dl);
            }
        }
    }
}

#[cfg(test)]
thread_local! {
    /// How many terms this thread's pruned queries probed instead of scoring in full.
    static PROBED_TERMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::PROBED_TERMS;
    use crate::bm25::{Bm25Index, Document, IndexConfig};

    /// A corpus where pruning has work: terms 0..4 in nearly every document, a long tail of
    /// rare ones.
    fn skewed_index() -> Bm25Index {
        let mut index = Bm25Index::new(IndexConfig::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .with_pruning_from(usize::MAX);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for d in 0..5000 {
            let len = 5 + next() % 30;
            let terms: Vec<String> = (0..len)
                .map(|_| {
                    let (a, b) = (next() % 2000, next() % 2000);
                    format!("w{}", a * b / 2000 / 8)
                })
                .collect();
            index.insert(&format!("d{d}"), &Document::new().with_field("f", terms));
            if d % 17 == 0 {
                index.remove(&format!("d{}", d / 3));
            }
        }
        index
    }

    #[test]
    fn pruned_queries_skip_terms_and_agree_to_the_bit() {
        let plain = skewed_index();
        let pruned = plain.clone().with_pruning_from(0);
        PROBED_TERMS.with(|n| n.set(0));
        let mut state = 7u64;
        for q in 0..200 {
            let terms: Vec<String> = (0..2 + q % 20)
                .map(|i| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let (a, b) = ((state >> 33) % 2000, (state >> 13) % 2000);
                    format!("w{}", if i % 3 == 0 { i } else { a * b / 2000 / 8 })
                })
                .collect();
            for k in [1, 10, 100] {
                assert_eq!(
                    pruned.search(&terms, k),
                    plain.search(&terms, k),
                    "{terms:?} k={k}"
                );
            }
        }
        let probed = PROBED_TERMS.with(std::cell::Cell::get);
        assert!(probed > 100, "only {probed} terms probed");
    }
}
