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
//! Hybrid (`select/hybrid/{N}`): the same stores, each tool with a 384-float vector in the
//! `vectors` table (pseudo-random, fixed seed: the scan costs the same whatever the values), each
//! message with its vector made beforehand (`Turn::with_query_vector`), hybrid with a fixed
//! lexical weight of 0.5, explain off: what hybrid retrieval adds to a selection, the model's
//! time apart (that is `benches/embed.rs`). The embedder is never asked to embed; it panics if
//! it is.
//!
//! Conversations (`select/conversation/222`): the bundled catalog (`catalog/default.json`,
//! 222 tools, its pinned tools), the default policy, lexical, explain on: each iteration
//! selects for the next turn of the development conversations (`bench/conversations/dev.jsonl`,
//! 384 turns), each turn as a `Conversation` made it when the conversations were run through
//! the same builder beforehand (history, tools used, the list carried): the follow-ups' second
//! search of the message alone and the carried list included.
//!
//! Groups: `select/{explain_off,explain_on,hybrid}/{N}`, `select/conversation/222`. Without
//! `--bench` (as under `cargo test --benches`) or with the environment variable
//! `SELECT_BENCH_QUICK` set, only N = 1,000 runs.

mod synthetic;
#[path = "../bench/peers/src/synthetic_store.rs"]
mod synthetic_store;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capstore::context::{
    ContextBuilder, HybridPolicy, Reason, Retrieval, Selection, SelectionPolicy, Turn,
};
use capstore::embed::{EmbedError, Embedder, ToolVector};
use capstore::{TOOLS, VECTORS};
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

            time_selections(
                &mut crit,
                &format!("select/{label}"),
                n,
                messages.len(),
                |q| {
                    let turn = Turn::new(messages[q].as_str());
                    builder.select(&snapshot, &turn).expect("select")
                },
            );
        }

        let t = Instant::now();
        store
            .write(|tx| {
                let keys: Vec<_> = snapshot.iter(&TOOLS)?.keys().cloned().collect();
                for (i, key) in keys.into_iter().enumerate() {
                    let vector = pseudo_random_vector(i as u64);
                    tx.insert(
                        &VECTORS,
                        ToolVector::new(key, Precomputed.model_id(), vector),
                    )?;
                }
                Ok::<(), capstore::StoreError>(())
            })
            .expect("vectors");
        let snapshot = store.snapshot();
        eprintln!("N={n}: {n} vectors stored in {:.1?}", t.elapsed());
        let turns: Vec<Turn> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Turn::new(m.as_str()).with_query_vector(pseudo_random_vector(1 << 32 | i as u64))
            })
            .collect();
        let hybrid = ContextBuilder::with_policy(SelectionPolicy {
            max_tools: 10,
            explain: false,
            // One weight for every message: the synthetic messages' BM25 evidence is high, and
            // with random vectors the default curve would leave no dense hit in the selection
            // (the scan, which is the cost, runs all the same).
            retrieval: Retrieval::Hybrid(HybridPolicy::fixed(0.5)),
            ..SelectionPolicy::default()
        })
        .expect("valid policy")
        .with_embedder(Arc::new(Precomputed));
        let first = hybrid.select(&snapshot, &turns[0]).expect("select");
        // The dense side takes part: some candidate, sent or near miss, has a cosine.
        let reasons = first.tools.iter().flat_map(|t| t.reasons.iter());
        let near = first.dropped.iter().flat_map(|d| d.candidate.iter());
        let dense = |r: &Reason| {
            matches!(
                r,
                Reason::Hybrid {
                    cosine: Some(_),
                    ..
                }
            )
        };
        assert!(
            reasons.chain(near).any(dense),
            "no candidate came from the vectors"
        );

        time_selections(&mut crit, "select/hybrid", n, turns.len(), |q| {
            hybrid.select(&snapshot, &turns[q]).expect("select")
        });
    }
    conversation_turns(&mut crit);
    crit.final_summary();
}

/// `select/conversation/222`: the development conversations' turns over the bundled
/// catalog, each as its conversation made it.
fn conversation_turns(crit: &mut Criterion) {
    let catalog = capstore::catalog::Catalog::bundled().expect("bundled catalog");
    let store = capstore::Store::new();
    catalog.load_into(&store).expect("load");
    let snapshot = store.snapshot();
    let builder = ContextBuilder::with_policy(catalog.policy()).expect("policy");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/conversations/dev.jsonl");
    let conversations = capstore::eval::load_conversations(file).expect("conversations");
    let mut turns = Vec::new();
    for scripted in &conversations {
        let mut conversation = capstore::context::Conversation::new();
        for t in &scripted.turns {
            let turn = conversation.next_turn(t.user.as_str());
            let selection = builder.select(&snapshot, &turn).expect("select");
            conversation.record_selection(&selection);
            for used in t.used.as_ref().unwrap_or(&t.gold) {
                if selection.contains(used) {
                    conversation.record_tool_use(used.as_str());
                }
            }
            turns.push(turn);
        }
    }
    let follow_ups = turns.iter().filter(|t| !t.history.is_empty()).count();
    assert!(
        follow_ups > turns.len() / 2,
        "the turns are a conversation's"
    );
    time_selections(crit, "select/conversation", 222, turns.len(), |q| {
        builder.select(&snapshot, &turns[q]).expect("select")
    });
}

/// Times `select(q)` in criterion group `name` at size `n`, `q` cycling over `0..count`.
fn time_selections(
    crit: &mut Criterion,
    name: &str,
    n: usize,
    count: usize,
    mut select: impl FnMut(usize) -> Selection,
) {
    let mut group = crit.benchmark_group(name);
    group
        .sample_size(60)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut q = 0usize;
    group.bench_function(BenchmarkId::from_parameter(n), |b| {
        b.iter(|| {
            q = (q + 1) % count;
            black_box(select(q))
        })
    });
    group.finish();
}

const DIMENSIONS: usize = 384;

/// The model id of the bench's vectors; every turn brings its own vector, so it never embeds.
struct Precomputed;

impl Embedder for Precomputed {
    fn model_id(&self) -> &str {
        "bench-precomputed"
    }
    fn dimensions(&self) -> usize {
        DIMENSIONS
    }
    fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        panic!("the bench's turns bring their vectors: nothing should be embedded")
    }
}

/// A deterministic vector of `DIMENSIONS` numbers in -1..1 for `seed` (xorshift64*).
fn pseudo_random_vector(seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..DIMENSIONS)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
            r as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}
