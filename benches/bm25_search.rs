//! BM25 search and index-write benchmarks: capstore's `Bm25Index` against a flat inverted index.
//!
//! Run: `cargo bench --bench bm25_search` (results in BENCHMARKS.md, "## BM25 search").
//!
//! Corpus: `synthetic::Corpus` (Zipfian 30,000-word vocabulary, 10–100 tokens a document, 1,000
//! queries of 5–40 tokens), at N = 100, 1,000, 10,000 and 100,000 documents. Both contenders index
//! the same token lists (no tokenizer, no stop words), with k1 = 1.2, b = 0.75.
//!
//! The yardstick, [`FlatIndex`], is the plain fast design: term ids in a `HashMap`, postings as
//! `Vec<(doc, tf)>` per term, document lengths, a dense score array reused across queries, and a
//! one-pass top-k scan. The target is capstore within 1.5× of it at every N.
//!
//! What the binary does, in order:
//! 1. memory: live heap bytes per indexed document at N = 10,000 and 100,000, counted by a
//!    `stats_alloc` global allocator (each document's tokens are materialised, inserted and
//!    dropped, so what stays live is what the index itself keeps), plus allocations per query;
//! 2. sanity: capstore and the yardstick agree on the top-10 of the first 50 queries at every N
//!    (same keys up to ties, scores within 1e-4 relative), or the binary panics;
//! 3. per-query latency percentiles (each of the 1,000 queries timed on its own);
//! 4. criterion groups `search_top10/{capstore,flat}/{N}` (each iteration runs the next query of
//!    the fixed set, cycling), `index_insert_10k`, `index_remove_10k`, `index_build_10k`.
//!
//! Steps 1–3 print to stderr. Without `--bench` (as under `cargo test --benches`) the binary only
//! runs the sanity check and criterion's one-iteration test mode, at N = 100 and 1,000. With the
//! environment variable `BM25_BENCH_QUICK` set, a `--bench` run also stops at N = 1,000 and skips
//! the memory report (for iterating on the index; not for published numbers). With
//! `BM25_BENCH_SIZES` set to a comma-separated list of sizes (say `100,1000,10000,100000,1000000`,
//! issue 24's registry scale), a `--bench` run uses those sizes instead and skips the memory
//! report (the corpus is generated up to the largest; 1,000,000 documents take about 4 GB for
//! both contenders together).
//!
//! The counting allocator adds two atomic increments to every allocation and deallocation, for
//! both contenders alike; step 1 reports how many allocations a query makes.

mod synthetic;

use std::alloc::System;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstore::bm25::{Bm25Index, Bm25Params, Document, IndexConfig};
use criterion::{BatchSize, BenchmarkId, Criterion};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use synthetic::{Corpus, CorpusSpec};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
const WRITE_BASE: usize = 10_000;
const TOP_K: usize = 10;
const FIELD: &str = "text";
const SANITY_QUERIES: usize = 50;
const REL_TOL: f32 = 1e-4;

// ---------------------------------------------------------------------------------------------
// The yardstick
// ---------------------------------------------------------------------------------------------

/// A flat, immutable inverted index: the fastest simple design, used as the yardstick.
///
/// Same scoring as capstore: Okapi BM25 with Lucene's idf, summed over query-term occurrences
/// (a term repeated in the query is scored once and multiplied by its count), ties by key.
struct FlatIndex {
    k1: f32,
    b: f32,
    avgdl: f32,
    term_ids: HashMap<String, u32>,
    /// `postings[term]`: (document, term frequency), documents ascending.
    postings: Vec<Vec<(u32, f32)>>,
    /// idf · (k1 + 1), per term.
    idf_k1p1: Vec<f32>,
    doc_len: Vec<f32>,
    keys: Vec<Arc<str>>,
    /// Dense scores, all zero between queries (the top-k scan resets them).
    scores: Vec<f32>,
    /// Scratch: the query's term ids.
    query_terms: Vec<u32>,
    /// Scratch: the top-k being collected, best first.
    top: Vec<(f32, u32)>,
}

impl FlatIndex {
    fn build(params: Bm25Params, docs: impl IntoIterator<Item = (String, Vec<String>)>) -> Self {
        let mut term_ids: HashMap<String, u32> = HashMap::new();
        let mut postings: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut doc_len = Vec::new();
        let mut keys = Vec::new();
        let mut ids = Vec::new();
        for (doc, (key, tokens)) in docs.into_iter().enumerate() {
            let doc = u32::try_from(doc).expect("fewer than 2^32 documents");
            ids.clear();
            for t in tokens.iter() {
                let next = term_ids.len() as u32;
                let id = *term_ids.entry(t.clone()).or_insert(next);
                if id == next {
                    postings.push(Vec::new());
                }
                ids.push(id);
            }
            ids.sort_unstable();
            for run in ids.chunk_by(|a, b| a == b) {
                postings[run[0] as usize].push((doc, run.len() as f32));
            }
            doc_len.push(tokens.len() as f32);
            keys.push(Arc::from(key));
        }
        let n = doc_len.len() as f64;
        let total: f64 = doc_len.iter().map(|&l| f64::from(l)).sum();
        let k1 = params.k1;
        let idf_k1p1 = postings
            .iter()
            .map(|p| {
                let df = p.len() as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                (idf * (f64::from(k1) + 1.0)) as f32
            })
            .collect();
        Self {
            k1,
            b: params.b,
            avgdl: (total / n.max(1.0)) as f32,
            term_ids,
            postings,
            idf_k1p1,
            scores: vec![0.0; doc_len.len()],
            doc_len,
            keys,
            query_terms: Vec::new(),
            top: Vec::with_capacity(TOP_K + 1),
        }
    }

    /// Mean distinct indexed terms per query and postings a query touches.
    fn query_work(&self, queries: &[Vec<String>]) -> (f64, f64) {
        let (mut terms, mut postings) = (0usize, 0usize);
        for q in queries {
            let mut ids: Vec<u32> = q
                .iter()
                .filter_map(|t| self.term_ids.get(t).copied())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            terms += ids.len();
            postings += ids
                .iter()
                .map(|&t| self.postings[t as usize].len())
                .sum::<usize>();
        }
        let n = queries.len().max(1) as f64;
        (terms as f64 / n, postings as f64 / n)
    }

    /// (a, b) ranks before (c, d): higher score first, then smaller key.
    fn better(&self, (sa, da): (f32, u32), (sb, db): (f32, u32)) -> bool {
        sa > sb || (sa == sb && self.keys[da as usize] < self.keys[db as usize])
    }

    fn search<S: AsRef<str>>(&mut self, query: &[S], k: usize) -> Vec<(Arc<str>, f32)> {
        if k == 0 {
            return Vec::new();
        }
        self.query_terms.clear();
        self.query_terms.extend(
            query
                .iter()
                .filter_map(|t| self.term_ids.get(t.as_ref()).copied()),
        );
        self.query_terms.sort_unstable();
        // Length norm k1·(1 − b + b·dl/avgdl) = c0 + c1·dl, computed in the loop.
        let c0 = self.k1 * (1.0 - self.b);
        let c1 = self.k1 * self.b / self.avgdl;
        let scores = &mut self.scores[..];
        let doc_len = &self.doc_len[..];
        for run in self.query_terms.chunk_by(|a, b| a == b) {
            let term = run[0] as usize;
            let w = self.idf_k1p1[term] * run.len() as f32;
            for &(doc, tf) in &self.postings[term] {
                let d = doc as usize;
                scores[d] += w * tf / (tf + c0 + c1 * doc_len[d]);
            }
        }
        // One pass over the dense scores: reset each to zero and keep the k best in `top`.
        let mut top = std::mem::take(&mut self.top);
        top.clear();
        let mut threshold = 0.0f32; // only matching documents (score > 0) qualify
        for d in 0..self.scores.len() {
            let s = std::mem::take(&mut self.scores[d]);
            if s > threshold || (s == threshold && s > 0.0) {
                let cand = (s, d as u32);
                if top.len() == k && !self.better(cand, top[k - 1]) {
                    continue;
                }
                let pos = top.partition_point(|&t| self.better(t, cand));
                top.insert(pos, cand);
                top.truncate(k);
                if top.len() == k {
                    threshold = top[k - 1].0;
                }
            }
        }
        let hits = top
            .iter()
            .map(|&(s, d)| (Arc::clone(&self.keys[d as usize]), s))
            .collect();
        self.top = top;
        hits
    }
}

// ---------------------------------------------------------------------------------------------
// Building both contenders from the corpus
// ---------------------------------------------------------------------------------------------

fn document(tokens: Vec<String>) -> Document {
    Document::new().with_field(FIELD, tokens)
}

fn build_capstore(corpus: &Corpus, n: usize) -> Bm25Index {
    let mut index = Bm25Index::new(IndexConfig::default()).expect("default IndexConfig is valid");
    for i in 0..n {
        index.insert(&Corpus::key(i), &document(corpus.doc_tokens(i)));
    }
    index
}

fn build_flat(corpus: &Corpus, n: usize) -> FlatIndex {
    FlatIndex::build(
        Bm25Params::default(),
        (0..n).map(|i| (Corpus::key(i), corpus.doc_tokens(i))),
    )
}

struct Contenders {
    n: usize,
    capstore: Bm25Index,
    flat: FlatIndex,
}

// ---------------------------------------------------------------------------------------------
// 1. Memory
// ---------------------------------------------------------------------------------------------

/// Heap bytes allocated and not yet freed since `region` started.
fn live_bytes(region: &Region<'_, System>) -> i64 {
    let c = region.change();
    c.bytes_allocated as i64 - c.bytes_deallocated as i64
}

fn memory_report(corpus: &Corpus) {
    eprintln!("== memory: live heap bytes per indexed document (stats_alloc) ==");
    for n in [10_000, 100_000].into_iter().filter(|&n| n <= corpus.len()) {
        let tokens: usize = corpus.docs[..n].iter().map(Vec::len).sum();
        let text: usize = corpus.docs[..n]
            .iter()
            .flatten()
            .map(|&w| corpus.vocab[w as usize].len())
            .sum();
        let distinct: usize = corpus.docs[..n]
            .iter()
            .map(|d| {
                let mut d = d.clone();
                d.sort_unstable();
                d.dedup();
                d.len()
            })
            .sum();
        let per_doc = |bytes: i64| bytes as f64 / n as f64;

        let region = Region::new(GLOBAL);
        let mut capstore = build_capstore(corpus, n);
        let cap_built = live_bytes(&region);
        capstore.compact();
        let cap_compacted = live_bytes(&region);
        drop(capstore);

        let region = Region::new(GLOBAL);
        let flat = build_flat(corpus, n);
        let flat_bytes = live_bytes(&region);
        drop(flat);

        eprintln!(
            "N={n}: tokens/doc {:.1}, distinct terms/doc {:.1}, token text {:.0} B/doc \
             (sum of token lengths)",
            tokens as f64 / n as f64,
            distinct as f64 / n as f64,
            per_doc(text as i64),
        );
        eprintln!(
            "N={n}: capstore {:.0} B/doc after inserts, {:.0} B/doc after compact(); \
             flat yardstick {:.0} B/doc",
            per_doc(cap_built),
            per_doc(cap_compacted),
            per_doc(flat_bytes),
        );
    }
}

/// Allocations and bytes allocated per query, averaged over the first 100 queries.
fn allocation_report(c: &mut Contenders, corpus: &Corpus) {
    let queries = &corpus.queries[..100.min(corpus.queries.len())];
    let region = Region::new(GLOBAL);
    for q in queries {
        black_box(c.capstore.search(q, TOP_K));
    }
    let cap = region.change();
    let region = Region::new(GLOBAL);
    for q in queries {
        black_box(c.flat.search(q, TOP_K));
    }
    let flat = region.change();
    let nq = queries.len() as f64;
    eprintln!(
        "N={}: allocations/query capstore {:.1} ({:.0} B), flat {:.1} ({:.0} B)",
        c.n,
        cap.allocations as f64 / nq,
        cap.bytes_allocated as f64 / nq,
        flat.allocations as f64 / nq,
        flat.bytes_allocated as f64 / nq,
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Sanity: a yardstick that disagrees is not a yardstick
// ---------------------------------------------------------------------------------------------

fn ties(a: f32, b: f32) -> bool {
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs())
}

fn sanity_check(c: &mut Contenders, corpus: &Corpus) {
    for (qi, q) in corpus.queries.iter().take(SANITY_QUERIES).enumerate() {
        let cap: Vec<(Arc<str>, f32)> = c
            .capstore
            .search(q, TOP_K)
            .into_iter()
            .map(|h| (h.key, h.score))
            .collect();
        let flat = c.flat.search(q, TOP_K);
        let fail = |why: String| -> ! {
            panic!(
                "N={} query #{qi} {q:?}: capstore and the flat yardstick disagree: {why}\n\
                 capstore: {cap:?}\nflat:     {flat:?}",
                c.n
            )
        };
        if cap.len() != flat.len() {
            fail(format!("{} vs {} hits", cap.len(), flat.len()));
        }
        for (rank, ((ck, cs), (fk, fs))) in cap.iter().zip(&flat).enumerate() {
            if !ties(*cs, *fs) {
                fail(format!("rank {}: score {cs} vs {fs}", rank + 1));
            }
            // Keys may differ only among scores that tie within the tolerance (f32 sums in a
            // different order can swap near-equal scores): capstore's key must then be in the
            // flat top-k with a tying score, or tie the flat k-th score (the cut).
            let explained = ck == fk
                || flat.iter().any(|(k, s)| k == ck && ties(*s, *cs))
                || flat.last().is_some_and(|(_, s)| ties(*s, *cs));
            if !explained {
                fail(format!("rank {}: key {ck} vs {fk}", rank + 1));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Per-query latency percentiles
// ---------------------------------------------------------------------------------------------

fn percentiles(mut ns: Vec<u64>) -> String {
    ns.sort_unstable();
    let at = |p: f64| ns[((ns.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0;
    format!(
        "p50 {:.2} µs, p90 {:.2} µs, p99 {:.2} µs",
        at(0.5),
        at(0.9),
        at(0.99)
    )
}

fn latency_report(c: &mut Contenders, corpus: &Corpus) {
    let queries = &corpus.queries;
    let mut cap_ns = Vec::with_capacity(queries.len());
    let mut flat_ns = Vec::with_capacity(queries.len());
    for pass in 0..2 {
        for q in queries {
            let t = Instant::now();
            black_box(c.capstore.search(black_box(q), TOP_K));
            let cap = t.elapsed().as_nanos() as u64;
            let t = Instant::now();
            black_box(c.flat.search(black_box(q), TOP_K));
            let flat = t.elapsed().as_nanos() as u64;
            if pass == 1 {
                cap_ns.push(cap);
                flat_ns.push(flat);
            }
        }
    }
    eprintln!(
        "N={}: per-query latency over {} queries: capstore {}; flat {}",
        c.n,
        queries.len(),
        percentiles(cap_ns),
        percentiles(flat_ns)
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Criterion groups
// ---------------------------------------------------------------------------------------------

fn bench_search(crit: &mut Criterion, contenders: &mut [Contenders], corpus: &Corpus) {
    let queries = &corpus.queries;
    let mut group = crit.benchmark_group("search_top10");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for c in contenders.iter_mut() {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new("capstore", c.n), |b| {
            b.iter(|| {
                let q = &queries[next % queries.len()];
                next += 1;
                c.capstore.search(black_box(q), TOP_K)
            })
        });
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new("flat", c.n), |b| {
            b.iter(|| {
                let q = &queries[next % queries.len()];
                next += 1;
                c.flat.search(black_box(q), TOP_K)
            })
        });
    }
    group.finish();
}

fn bench_writes(crit: &mut Criterion, base: &Bm25Index, corpus: &Corpus) {
    assert_eq!(base.len(), WRITE_BASE);
    // New tools: keys past every corpus key, content from the same distribution.
    let new_docs: Vec<(String, Document)> = corpus
        .extra_docs(256)
        .iter()
        .enumerate()
        .map(|(j, ids)| (Corpus::key(corpus.len() + j), document(corpus.tokens(ids))))
        .collect();
    let base_docs: Vec<(String, Document)> = (0..WRITE_BASE)
        .map(|i| (Corpus::key(i), document(corpus.doc_tokens(i))))
        .collect();

    let mut group = crit.benchmark_group("index_insert_10k");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut next = 0usize;
    group.bench_function("capstore", |b| {
        b.iter_batched(
            || base.clone(),
            |mut index| {
                let (key, doc) = &new_docs[next % new_docs.len()];
                next += 1;
                index.insert(key, doc);
                index
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = crit.benchmark_group("index_remove_10k");
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut next = 0usize;
    group.bench_function("capstore", |b| {
        b.iter_batched(
            || base.clone(),
            |mut index| {
                // Spread over the corpus: 7919 is prime, so this visits every document.
                let key = &base_docs[(next * 7919) % base_docs.len()].0;
                next += 1;
                assert!(index.remove(key));
                index
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();

    let mut group = crit.benchmark_group("index_build_10k");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("capstore", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut index =
                    Bm25Index::new(IndexConfig::default()).expect("default IndexConfig is valid");
                for (key, doc) in &base_docs {
                    index.insert(key, doc);
                }
                index
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not (criterion's test mode).
    let bench_mode = std::env::args().any(|a| a == "--bench");
    // `BM25_BENCH_QUICK=1` (for iterating on the index): N = 100 and 1,000 only, no memory
    // report. Published numbers come from full runs without it.
    let quick = std::env::var_os("BM25_BENCH_QUICK").is_some();
    // `BM25_BENCH_SIZES=100,1000000` (issue 24's registry scale): those sizes instead.
    let custom: Option<Vec<usize>> = std::env::var("BM25_BENCH_SIZES").ok().map(|list| {
        list.split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("BM25_BENCH_SIZES: comma-separated sizes")
            })
            .collect()
    });
    let sizes: &[usize] = match &custom {
        Some(custom) if bench_mode => custom,
        _ if bench_mode && !quick => &SIZES,
        _ => &SIZES[..2],
    };
    let largest = *sizes.iter().max().expect("at least one size");

    let t = Instant::now();
    let corpus = Corpus::generate(CorpusSpec::tool_like(largest.max(WRITE_BASE)));
    eprintln!(
        "corpus: {} docs, {} tokens ({:.1}/doc), vocabulary {}, {} queries ({:.1} tokens/query), \
         generated in {:.1?}",
        corpus.len(),
        corpus.total_tokens(),
        corpus.total_tokens() as f64 / corpus.len() as f64,
        corpus.vocab.len(),
        corpus.queries.len(),
        corpus.queries.iter().map(Vec::len).sum::<usize>() as f64 / corpus.queries.len() as f64,
        t.elapsed()
    );
    let small = Corpus::generate(CorpusSpec::tool_like(50));
    assert!(
        small.docs[..] == corpus.docs[..50] && small.queries == corpus.queries,
        "the synthetic corpus is not prefix-stable"
    );

    if bench_mode && !quick && custom.is_none() {
        memory_report(&corpus);
    }

    let mut contenders: Vec<Contenders> = sizes
        .iter()
        .map(|&n| {
            let t = Instant::now();
            let capstore = build_capstore(&corpus, n);
            let cap_time = t.elapsed();
            let t = Instant::now();
            let flat = build_flat(&corpus, n);
            eprintln!(
                "N={n}: built capstore in {cap_time:.1?}, flat in {:.1?}",
                t.elapsed()
            );
            Contenders { n, capstore, flat }
        })
        .collect();

    for c in &contenders {
        let (terms, postings) = c.flat.query_work(&corpus.queries);
        eprintln!(
            "N={}: a query has {terms:.1} distinct indexed terms and touches {postings:.0} \
             postings ({:.2} x N); capstore index: {:?}",
            c.n,
            postings / c.n as f64,
            c.capstore
        );
    }
    for c in &mut contenders {
        sanity_check(c, &corpus);
    }
    eprintln!(
        "sanity: capstore and flat agree on the top-{TOP_K} of the first {SANITY_QUERIES} \
         queries at N = {sizes:?}"
    );
    if bench_mode {
        for c in &mut contenders {
            allocation_report(c, &corpus);
        }
        for c in &mut contenders {
            latency_report(c, &corpus);
        }
    }

    let mut crit = Criterion::default().configure_from_args();
    bench_search(&mut crit, &mut contenders, &corpus);
    let base = match contenders.iter().find(|c| c.n == WRITE_BASE) {
        Some(c) => c.capstore.clone(),
        None => build_capstore(&corpus, WRITE_BASE),
    };
    drop(contenders);
    bench_writes(&mut crit, &base, &corpus);
    crit.final_summary();
}
