//! Timing, memory counting, agreement, and number formatting.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use crate::contenders::{Contender, TOP_K};
use crate::corpus::Corpus;
use crate::flat::FlatIndex;

/// The system allocator, counting live heap bytes while [`count_allocations`] is on. Off (one
/// relaxed load of a flag that never changes while queries run), it adds no shared writes, so
/// that latencies and the two-reader throughput do not pay for counting.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicI64 = AtomicI64::new(0);

fn add(bytes: usize, sign: i64) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_add(sign * bytes as i64, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        // SAFETY: the caller's contract is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size(), 1);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(layout.size(), -1);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size, 1);
        add(layout.size(), -1);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with allocation counting on; returns its result and the heap bytes it left live
/// (allocated − freed during `f`, all threads).
pub fn count_allocations<T>(f: impl FnOnce() -> T) -> (T, i64) {
    let before = LIVE.load(Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let out = f();
    COUNTING.store(false, Ordering::SeqCst);
    (out, LIVE.load(Ordering::SeqCst) - before)
}

/// How hard to measure.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Untimed queries before timing.
    pub warm: usize,
    /// At most this many timed queries (cycling through the set when it is smaller).
    pub max_queries: usize,
    /// Stop timing after this long (at least `min_queries` all the same).
    pub budget: Duration,
    pub min_queries: usize,
    /// Queries whose top 10 is checked against the yardstick (of those timed).
    pub agree_queries: usize,
    /// Single inserts timed (median reported); tantivy (a commit each) gets `inserts_slow`.
    pub inserts: usize,
    pub inserts_slow: usize,
}

/// Latencies of one contender on one corpus, and the results kept for the agreement check.
pub struct Run {
    pub latencies: Vec<Duration>,
    /// `(query, top 10)` for the first `agree_queries` timed queries.
    pub results: Vec<(usize, Vec<(u32, f32)>)>,
}

impl Run {
    pub fn percentile(&self, p: f64) -> Duration {
        let mut v = self.latencies.clone();
        v.sort_unstable();
        percentile_sorted(&v, p)
    }

    pub fn qps(&self) -> f64 {
        let total: f64 = self.latencies.iter().map(Duration::as_secs_f64).sum();
        self.latencies.len() as f64 / total.max(1e-12)
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile_sorted(v: &[Duration], p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Warm up, then time queries one at a time (single thread), in the corpus's order, until
/// `max_queries` or the time budget.
pub fn run_queries(c: &mut dyn Contender, corpus: &Corpus, effort: &Effort) -> Run {
    let nq = corpus.queries.len();
    // Warm-up: `warm` queries, or a quarter of the budget for slow contenders.
    let warm_start = Instant::now();
    for q in 0..effort.warm.min(nq) {
        std::hint::black_box(c.search(corpus, q));
        if warm_start.elapsed() > effort.budget / 4 {
            break;
        }
    }
    let mut latencies = Vec::with_capacity(effort.max_queries);
    let mut results = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while i < effort.max_queries && (i < effort.min_queries || started.elapsed() < effort.budget) {
        let q = i % nq;
        let t = Instant::now();
        let hits = c.search(corpus, q);
        latencies.push(t.elapsed());
        if i < effort.agree_queries.min(nq) {
            results.push((q, hits.into_docs()));
        } else {
            drop(std::hint::black_box(hits));
        }
        i += 1;
    }
    Run { latencies, results }
}

/// Median of `n` single inserts.
pub fn median_insert(c: &mut dyn Contender, corpus: &Corpus, n: usize) -> Duration {
    let n = n.min(corpus.extra_docs.len());
    let mut v: Vec<Duration> = (0..n).map(|j| c.insert(corpus, j)).collect();
    v.sort_unstable();
    percentile_sorted(&v, 50.0)
}

/// Relative tolerance on scores.
pub const REL_TOL: f32 = 1e-4;

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs()).max(f32::MIN_POSITIVE)
}

/// Agreement of one contender with the yardstick over the checked queries.
#[derive(Clone, Copy, Debug, Default)]
pub struct Agreement {
    pub queries: usize,
    /// The top 10 is a correct top 10 under the yardstick's scores: same length, and the
    /// yardstick's own score of the document at each rank equals (within tolerance) the
    /// yardstick's score at that rank; so the same documents, up to the order of exact ties.
    pub ranking: usize,
    /// `ranking`, and the contender's scores equal the yardstick's at every rank.
    pub scores: usize,
    /// Largest relative score difference seen at any rank.
    pub max_rel_diff: f32,
}

pub fn agreement(
    flat: &mut FlatIndex,
    corpus: &Corpus,
    results: &[(usize, Vec<(u32, f32)>)],
) -> Agreement {
    let mut a = Agreement::default();
    for (q, hits) in results {
        let query = &corpus.queries[*q];
        let expected = flat.search(query, TOP_K);
        a.queries += 1;
        let ranking = hits.len() == expected.len()
            && hits
                .iter()
                .zip(&expected)
                .all(|(&(doc, _), &(_, es))| close(flat.score(doc, query), es));
        let mut scores_ok = hits.len() == expected.len();
        for (&(_, s), &(_, es)) in hits.iter().zip(&expected) {
            let rel = (s - es).abs() / es.abs().max(f32::MIN_POSITIVE);
            a.max_rel_diff = a.max_rel_diff.max(rel);
            scores_ok &= close(s, es);
        }
        if ranking {
            a.ranking += 1;
            if scores_ok {
                a.scores += 1;
            }
        }
    }
    a
}

/// `1.23 µs`, `45.6 ms`, `7.89 s`, three significant digits.
pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "µs")
    } else {
        (s * 1e9, "ns")
    };
    if v >= 100.0 {
        format!("{v:.0} {unit}")
    } else if v >= 10.0 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.2} {unit}")
    }
}

/// `12.3 MB` (10^6 bytes).
pub fn fmt_bytes(b: i64) -> String {
    let v = b as f64;
    if v.abs() >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v.abs() >= 1e6 {
        format!("{:.1} MB", v / 1e6)
    } else if v.abs() >= 1e3 {
        format!("{:.1} kB", v / 1e3)
    } else {
        format!("{b} B")
    }
}

/// `12,345`.
pub fn fmt_int(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(docs: &[&str], queries: &[&str]) -> Corpus {
        let toks = |s: &&str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        Corpus {
            name: "test",
            docs: docs.iter().map(toks).collect(),
            queries: queries.iter().map(toks).collect(),
            messages: queries.iter().map(|q| q.to_string()).collect(),
            tools: Vec::new(),
            skills: false,
            extra_docs: Vec::new(),
            extra_tools: Vec::new(),
            tool_text_bytes: 0,
        }
    }

    #[test]
    fn agreement_accepts_tie_orders_and_rejects_wrong_documents_or_scores() {
        // Documents 0 and 1 are identical: tied for "a".
        let c = corpus(&["a b", "a b", "a c c", "d"], &["a"]);
        let mut flat = FlatIndex::build(1.2, 0.75, &c.docs);
        let exact = flat.search(&c.queries[0], TOP_K);
        assert_eq!(exact.len(), 3);
        let (s0, s2) = (exact[0].1, exact[2].1);

        let check = |flat: &mut FlatIndex, hits: Vec<(u32, f32)>| {
            let a = agreement(flat, &c, &[(0, hits)]);
            (a.ranking, a.scores)
        };
        assert_eq!(check(&mut flat, exact.clone()), (1, 1));
        // The tie in the other order: still a correct top 10.
        assert_eq!(check(&mut flat, vec![(1, s0), (0, s0), (2, s2)]), (1, 1));
        // A document that does not belong at rank 1.
        assert_eq!(check(&mut flat, vec![(2, s0), (0, s0), (1, s2)]), (0, 0));
        // Right documents, a score off by 1e-3 relative.
        assert_eq!(
            check(&mut flat, vec![(0, s0), (1, s0), (2, s2 * 1.001)]),
            (1, 0)
        );
        // One result missing.
        assert_eq!(check(&mut flat, exact[..2].to_vec()), (0, 0));
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile_sorted(&v, 50.0), Duration::from_micros(50));
        assert_eq!(percentile_sorted(&v, 99.0), Duration::from_micros(99));
        assert_eq!(percentile_sorted(&v[..1], 99.0), Duration::from_micros(1));
        assert_eq!(percentile_sorted(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn counts_bytes_left_live() {
        // The counter counts every thread, so the allocations of tests running beside this
        // one can fall into a window: an attempt is repeated until one is left alone.
        let alone = |check: &dyn Fn() -> bool| (0..1_000).any(|_| check());
        assert!(alone(&|| {
            let (kept, bytes) = count_allocations(|| vec![0u8; 10_000]);
            drop(kept);
            (10_000..11_000).contains(&bytes)
        }));
        assert!(alone(&|| {
            let ((), bytes) = count_allocations(|| drop(vec![0u8; 10_000]));
            bytes.abs() < 1_000
        }));
    }
}
