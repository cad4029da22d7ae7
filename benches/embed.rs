//! The local embedder (feature `minilm`) on the real all-MiniLM-L6-v2: one 20-word message (a
//! turn's query; target ≤ 5 ms p50 on one core) and a catalog of 256 tool descriptions of 15-40
//! words (throughput, texts/s). Needs the model (`bash scripts/minilm.sh`, or CAPSTORE_MINILM).
//!
//! candle runs its matrix products on `RAYON_NUM_THREADS` threads (default: the physical cores):
//! `RAYON_NUM_THREADS=1 cargo bench --bench embed --no-default-features --features minilm` for
//! one core.

use std::time::{Duration, Instant};

use capstore::embed::Embedder;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "../tests/common/minilm_dir.rs"]
mod minilm_dir;

/// A user's message of 20 words.
const MESSAGE: &str = "Could you please read the config file in my project folder and tell me which port the \
                       server listens on";

const VERBS: [&str; 12] = [
    "read",
    "write",
    "list",
    "search",
    "create",
    "delete",
    "update",
    "send",
    "fetch",
    "run",
    "move",
    "summarise",
];
const OBJECTS: [&str; 12] = [
    "file",
    "directory",
    "issue",
    "pull request",
    "message",
    "calendar event",
    "database row",
    "web page",
    "container",
    "branch",
    "spreadsheet",
    "ticket",
];
const FILLER: [&str; 16] = [
    "with", "optional", "filters", "for", "the", "given", "path", "and", "returns", "a", "list",
    "of", "matching", "results", "as", "json",
];

/// 256 tool texts, name then description, of 15 to 40 words.
fn catalog() -> Vec<String> {
    (0..256)
        .map(|i| {
            let verb = VERBS[i % VERBS.len()];
            let object = OBJECTS[(i / VERBS.len()) % OBJECTS.len()];
            let extra = 11 + (i * 7) % 26;
            let tail: Vec<&str> = (0..extra)
                .map(|j| FILLER[(i + j * 3) % FILLER.len()])
                .collect();
            format!(
                "{verb}_{}_{i}: {verb} a {object} in the workspace {}.",
                object.replace(' ', "_"),
                tail.join(" ")
            )
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let model = minilm_dir::model();
    assert_eq!(MESSAGE.split_whitespace().count(), 20);
    eprintln!(
        "embed bench: candle uses {} thread(s) (RAYON_NUM_THREADS)",
        candle_core::utils::get_num_threads()
    );

    // The p50 the target is stated in, measured directly: criterion reports means.
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            let vectors = model.embed(&[MESSAGE]).expect("embed");
            let elapsed = start.elapsed();
            assert_eq!(vectors[0].len(), 384);
            elapsed
        })
        .collect();
    times.sort();
    eprintln!(
        "embed bench: one 20-word message, 200 runs: p50 {:.2} ms, p90 {:.2} ms, min {:.2} ms",
        times[100].as_secs_f64() * 1e3,
        times[180].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3
    );

    let mut group = c.benchmark_group("embed");
    group.sample_size(50);
    group.bench_function("message_20_words", |b| {
        b.iter(|| model.embed(&[MESSAGE]).expect("embed"))
    });

    let texts = catalog();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let words: Vec<usize> = texts.iter().map(|t| t.split_whitespace().count()).collect();
    eprintln!(
        "embed bench: catalog of {} tool texts, {}-{} words",
        texts.len(),
        words.iter().min().copied().unwrap_or(0),
        words.iter().max().copied().unwrap_or(0)
    );
    group.sample_size(10);
    group.throughput(Throughput::Elements(texts.len() as u64));
    group.bench_function("catalog_256_tools", |b| {
        b.iter(|| model.embed(&refs).expect("embed"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
