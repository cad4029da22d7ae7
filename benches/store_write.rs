//! The store's write and read paths at 10,000 tools: registering one tool (commit included;
//! alternating with an untimed delete, and as a run of inserts that pays every merge),
//! deleting one, upserting changed definitions in turn (a steady writer), registering 10,000 in
//! one transaction (insert by insert, and in bulk with `insert_many`), taking a snapshot, and a full-store search (tokenize + BM25 + record
//! lookup).
//!
//! Run: `cargo bench --bench store_write`.

mod synthetic;
#[path = "../bench/peers/src/synthetic_store.rs"]
mod synthetic_store;

use std::hint::black_box;
use std::time::{Duration, Instant};

use capstore::{Store, TOOLS, Tool};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use synthetic::{Corpus, CorpusSpec};
use synthetic_store::{corpus_tools, tool_from};

const N: usize = 10_000;

/// A store holding `tools`, written in one transaction.
fn filled_store(tools: &[Tool]) -> Store {
    let store = Store::new();
    store
        .write(|tx| {
            for tool in tools {
                tx.insert(&TOOLS, tool.clone())?;
            }
            Ok::<_, capstore::StoreError>(())
        })
        .expect("fill");
    store
}

fn bench_store(c: &mut Criterion) {
    let corpus = Corpus::generate(CorpusSpec::tool_like(N));
    let tools = corpus_tools(&corpus, corpus.len());
    let extra: Vec<Tool> = corpus
        .extra_docs(1_000)
        .iter()
        .enumerate()
        .map(|(j, ids)| tool_from(&corpus, N + j, &corpus.tokens(ids)))
        .collect();

    let mut group = c.benchmark_group("store");
    group.measurement_time(Duration::from_secs(5));

    // One tool into a 10k-tool store, commit included. The store is kept at 10k: each timed
    // insert+commit is followed by an untimed delete+commit of the same tool.
    let store = filled_store(&tools);
    group.bench_function("register_one_into_10k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let tool = extra[(i % extra.len() as u64) as usize].clone();
                let key = tool.qualified_name();
                let start = Instant::now();
                let info = store.write(|tx| tx.insert(&TOOLS, tool)).expect("insert");
                total += start.elapsed();
                black_box(info.version);
                store
                    .write(|tx| tx.delete(&TOOLS, &key).map(|_| ()))
                    .expect("delete");
            }
            total
        })
    });

    // Only inserts, each a new tool, so every merge the index's policy schedules is paid by
    // an insert (in the pairs above, the untimed delete pays some of them): the store grows
    // from 10,000 by the 1,000 extra tools, then is rebuilt from the 10k (untimed). Criterion's
    // figure for this one is the mean per insert, merges included.
    let mut growing = filled_store(&tools);
    let mut next = 0usize;
    group.bench_function("register_new_into_10k_amortised", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if next == extra.len() {
                    growing = filled_store(&tools);
                    next = 0;
                }
                let tool = extra[next].clone();
                next += 1;
                let start = Instant::now();
                let info = growing.write(|tx| tx.insert(&TOOLS, tool)).expect("insert");
                total += start.elapsed();
                black_box(info.version);
            }
            total
        })
    });

    // The mirror image: time the delete+commit, restore untimed.
    group.bench_function("delete_one_from_10k", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let tool = tools[(i as usize * 7919) % tools.len()].clone();
                let key = tool.qualified_name();
                let start = Instant::now();
                let info = store
                    .write(|tx| tx.delete(&TOOLS, &key).map(|_| ()))
                    .expect("delete");
                total += start.elapsed();
                black_box(info.version);
                store.write(|tx| tx.insert(&TOOLS, tool)).expect("restore");
            }
            total
        })
    });

    // Steady revisions: upsert a changed definition of each tool in turn, as a writer revising
    // tools does (the concurrency test of `bench/peers` commits these every millisecond). Each
    // upsert leaves a dead document in the text index until a merge drops it, and the write
    // that leaves one per 8 live ones merges everything, so this figure's mean (merges
    // included) is the cost a steady writer pays. 2,500 untimed upserts first: past the first
    // merge of everything, into the steady state.
    let revised = filled_store(&tools);
    let mut revision = 0usize;
    let mut upsert_next = |store: &Store| {
        let mut tool = tools[revision % tools.len()].clone();
        tool.description = format!("{} revision {revision}", tool.description);
        revision += 1;
        store
            .write(|tx| tx.upsert(&TOOLS, tool).map(|_| ()))
            .expect("upsert")
    };
    for _ in 0..2_500 {
        upsert_next(&revised);
    }
    group.bench_function("upsert_changed_into_10k_steady", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(upsert_next(&revised));
            }
            start.elapsed()
        })
    });

    group.bench_function("snapshot", |b| b.iter(|| black_box(store.snapshot())));

    let queries: Vec<String> = corpus.queries.iter().map(|q| q.join(" ")).collect();
    let snap = store.snapshot();
    let mut q = 0;
    group.bench_function("search_top10_10k", |b| {
        b.iter(|| {
            q = (q + 1) % queries.len();
            black_box(snap.search(&TOOLS, &queries[q], 10).expect("search").len())
        })
    });

    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("register_10k_one_txn", |b| {
        b.iter_batched(
            || tools.clone(),
            |batch| {
                let store = Store::new();
                store
                    .write(|tx| {
                        for tool in batch {
                            tx.insert(&TOOLS, tool)?;
                        }
                        Ok::<_, capstore::StoreError>(())
                    })
                    .expect("fill");
                store
            },
            BatchSize::PerIteration,
        )
    });
    // The same 10,000 tools through the bulk path (`WriteTxn::insert_many`, issue 24).
    group.bench_function("register_10k_insert_many", |b| {
        b.iter_batched(
            || tools.clone(),
            |batch| {
                let store = Store::new();
                store
                    .write(|tx| tx.insert_many(&TOOLS, batch))
                    .expect("fill");
                store
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_store);
criterion_main!(benches);
