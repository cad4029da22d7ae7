//! A long message over a real catalog: MCP-Bench's task descriptions (600 to 2,200
//! characters, first turn of each task of `../shared/data/mcpbench/conversations.jsonl`) over
//! its 28 servers' 257 tools (`catalog.json`), each selected with the default policy (issue
//! 56's targets, one core: lexical ≤ 300 µs, hybrid ≤ 50 ms for a 2,000-character message).
//!
//! Groups, each over the tasks in turn (the median is of one task's selection):
//! - `long_message/lexical`: BM25 selection of the whole task (asks, units, budget).
//! - `long_message/hybrid`: the same with all-MiniLM-L6-v2 — the message's [`gist`] embedded,
//!   then fused with BM25: what a hybrid turn costs end to end.
//! - where the hybrid time goes: `long_message/embed_gist` (the model on the gist alone) and
//!   `long_message/hybrid_vector_given` (the selection with the task's vector made beforehand).
//! - `long_message/hybrid_longest`: the longest task alone (the 2,000-character case).
//!
//! Needs the model (`bash scripts/minilm.sh`, or `CAPSTORE_MINILM`) and the shared data
//! (`../shared/data/mcpbench`, or `CAPSTORE_MCPBENCH`). One core:
//! `RAYON_NUM_THREADS=1 taskset -c 0 cargo bench --bench long_message --features minilm`.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use capstore::Store;
use capstore::catalog::Catalog;
use capstore::context::{
    ContextBuilder, HybridPolicy, Retrieval, Selection, SelectionPolicy, Turn, gist,
};
use capstore::embed::{Embedder, MiniLm, embed_missing};
use criterion::{Criterion, criterion_group, criterion_main};

// Its `model()` (a shared `&'static MiniLm`) is for the tests; the builder here owns an `Arc`.
#[allow(dead_code)]
#[path = "../tests/common/minilm_dir.rs"]
mod minilm_dir;

/// MCP-Bench's shared half: `$CAPSTORE_MCPBENCH`, or `../shared/data/mcpbench` beside the
/// repository. Panics, naming the directory, when it is missing.
fn data_dir() -> PathBuf {
    let dir = match std::env::var_os("CAPSTORE_MCPBENCH") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mcpbench"),
    };
    assert!(
        dir.join("catalog.json").is_file(),
        "MCP-Bench's data is not at {} (set CAPSTORE_MCPBENCH)",
        dir.display()
    );
    dir
}

/// Each task's first message.
fn tasks(dir: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("conversations.jsonl")).expect("conversations");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let task: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            task["turns"][0]["user"]
                .as_str()
                .expect("a first turn")
                .to_string()
        })
        .collect()
}

/// One group's function over `messages` in turn.
fn over_tasks(crit: &mut Criterion, name: &str, count: usize, mut run: impl FnMut(usize) -> usize) {
    let mut group = crit.benchmark_group("long_message");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut q = 0usize;
    group.bench_function(name, |b| {
        b.iter(|| {
            q = (q + 1) % count;
            black_box(run(q))
        })
    });
    group.finish();
}

fn bench(crit: &mut Criterion) {
    let dir = data_dir();
    let store = Store::new();
    Catalog::load_file(dir.join("catalog.json"), &store).expect("the catalog loads");
    let dir_model = minilm_dir::model_dir();
    let model = Arc::new(MiniLm::load(&dir_model).expect("the model loads"));
    let report = embed_missing(&store, model.as_ref()).expect("tool vectors");
    let snapshot = store.snapshot();
    let messages = tasks(&dir);
    let chars: Vec<usize> = messages.iter().map(|m| m.chars().count()).collect();
    let longest = (0..messages.len()).max_by_key(|&i| chars[i]).unwrap_or(0);
    eprintln!(
        "long_message: {} tasks of {}-{} characters (median {}), {} tool vectors; candle on {} thread(s)",
        messages.len(),
        chars.iter().min().unwrap_or(&0),
        chars[longest],
        {
            let mut sorted = chars.clone();
            sorted.sort_unstable();
            sorted[sorted.len() / 2]
        },
        report.embedded,
        candle_core::utils::get_num_threads()
    );

    let lexical = ContextBuilder::new();
    let hybrid_policy = SelectionPolicy {
        retrieval: Retrieval::Hybrid(HybridPolicy::default()),
        ..SelectionPolicy::default()
    };
    let hybrid = ContextBuilder::with_policy(hybrid_policy.clone())
        .expect("policy")
        .with_embedder(Arc::clone(&model) as Arc<dyn Embedder>);
    let turns: Vec<Turn> = messages.iter().map(|m| Turn::new(m.as_str())).collect();
    let gists: Vec<String> = messages
        .iter()
        .map(|m| gist(m).unwrap_or_else(|| m.clone()))
        .collect();
    let vectors = model
        .embed(&gists.iter().map(String::as_str).collect::<Vec<_>>())
        .expect("task vectors");
    let with_vectors: Vec<Turn> = messages
        .iter()
        .zip(&vectors)
        .map(|(m, v)| Turn::new(m.as_str()).with_query_vector(v.clone()))
        .collect();
    let size = |s: Selection| s.tools.len();

    let count = turns.len();
    over_tasks(crit, "lexical", count, |q| {
        size(lexical.select(&snapshot, &turns[q]).expect("select"))
    });
    over_tasks(crit, "hybrid", count, |q| {
        size(hybrid.select(&snapshot, &turns[q]).expect("select"))
    });
    over_tasks(crit, "embed_gist", count, |q| {
        model.embed(&[gists[q].as_str()]).expect("embed").len()
    });
    over_tasks(crit, "hybrid_vector_given", count, |q| {
        size(hybrid.select(&snapshot, &with_vectors[q]).expect("select"))
    });
    over_tasks(crit, "hybrid_longest", 1, |_| {
        size(hybrid.select(&snapshot, &turns[longest]).expect("select"))
    });
    over_tasks(crit, "lexical_longest", 1, |_| {
        size(lexical.select(&snapshot, &turns[longest]).expect("select"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
