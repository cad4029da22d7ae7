//! `ContextBuilder::select` on a synthetic tool store with skills: the library's per-turn hot
//! path (query building, skill and tool BM25 searches, dependency closure, policy), with
//! `explain` off (what an agent runs each turn) and on (the default, with reasons and near
//! misses).
//!
//! Run: `cargo bench --bench select`.
//!
//! Store (`bench/peers/src/synthetic_store.rs`, shared with `capstore-peers`): N tools made from
//! the synthetic corpus (`benches/synthetic`), bundled ten to a skill, skills chained four deep
//! by dependencies, N = 1,000 and 10,000. Each iteration selects for the next of the corpus's
//! 1,000 queries (5–40 tokens, joined with spaces as the message), cycling; policy: default
//! with `max_tools` = 10.
//!
//! Groups: `select/{explain_off,explain_on}/{N}`. Without `--bench` (as under
//! `cargo test --benches`) or with the environment variable `SELECT_BENCH_QUICK` set, only
//! N = 1,000 runs.

mod synthetic;
#[path = "../bench/peers/src/synthetic_store.rs"]
mod synthetic_store;

use std::hint::black_box;
use std::time::{Duration, Instant};

use capstore::context::{ContextBuilder, SelectionPolicy, Turn};
use criterion::{BenchmarkId, Criterion};
use synthetic::{Corpus, CorpusSpec};
use synthetic_store::{corpus_tools, store_with_skills};

const SIZES: [usize; 2] = [1_000, 10_000];

fn builder(explain: bool) -> ContextBuilder {
    ContextBuilder::with_policy(SelectionPolicy {
        max_tools: 10,
        explain,
        ..SelectionPolicy::default()
    })
    .expect("valid policy")
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let quick = std::env::var_os("SELECT_BENCH_QUICK").is_some();
    let sizes: &[usize] = if bench_mode && !quick {
        &SIZES
    } else {
        &SIZES[..1]
    };
    let largest = *sizes.iter().max().expect("at least one size");
    let corpus = Corpus::generate(CorpusSpec::tool_like(largest));
    let messages: Vec<String> = corpus.queries.iter().map(|q| q.join(" ")).collect();

    let mut crit = Criterion::default().configure_from_args();
    for &n in sizes {
        let t = Instant::now();
        let store = store_with_skills(&corpus_tools(&corpus, n));
        let snapshot = store.snapshot();
        eprintln!("N={n}: store with skills built in {:.1?}", t.elapsed());

        for (label, explain) in [("explain_off", false), ("explain_on", true)] {
            let builder = builder(explain);
            // Every query selects something: the benchmark measures real selections.
            let first = builder
                .select(&snapshot, &Turn::new(messages[0].as_str()))
                .expect("select");
            assert!(!first.tools.is_empty(), "no tool selected for query 0");

            let mut group = crit.benchmark_group(format!("select/{label}"));
            group
                .sample_size(60)
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(4));
            let mut q = 0usize;
            group.bench_function(BenchmarkId::from_parameter(n), |b| {
                b.iter(|| {
                    q = (q + 1) % messages.len();
                    let turn = Turn::new(messages[q].as_str());
                    black_box(builder.select(&snapshot, &turn).expect("select"))
                })
            });
            group.finish();
        }
    }
    crit.final_summary();
}
