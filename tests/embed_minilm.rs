//! The local embedder, `capstore::embed::MiniLm`, on the real all-MiniLM-L6-v2 weights: parity
//! with sentence-transformers and with an independent numpy implementation, batching, threads,
//! long and empty texts, and load errors. Needs the model: `bash scripts/minilm.sh` (or
//! `CAPSTORE_MINILM=DIR`); without it every test here fails, saying so.

#[path = "common/minilm_dir.rs"]
mod minilm_dir;

use std::path::Path;

use capstore::embed::{EmbedError, Embedder, MiniLm};
use minilm_dir::{model, model_dir};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm(a) * norm(b))
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn assert_cosines(texts: &[&str], expected: &[&[f32]], tolerance: f32) {
    let vectors = model().embed(texts).expect("embed");
    for (i, row) in expected.iter().enumerate() {
        for (j, &want) in row.iter().enumerate() {
            let got = cosine(&vectors[i], &vectors[j]);
            assert!(
                (got - want).abs() <= tolerance,
                "cosine({:?}, {:?}) = {got:.6}, expected {want:.6} (± {tolerance})",
                texts[i],
                texts[j]
            );
        }
    }
}

/// sentence-transformers' quickstart, with all-MiniLM-L6-v2: `model.similarity(embeddings,
/// embeddings)` for these three sentences, as its documentation prints it.
#[test]
fn parity_with_the_sentence_transformers_quickstart() {
    assert_cosines(
        &[
            "The weather is lovely today.",
            "It's so sunny outside!",
            "He drove to the stadium.",
        ],
        &[
            &[1.0000, 0.6660, 0.1046],
            &[0.6660, 1.0000, 0.1411],
            &[0.1046, 0.1411, 1.0000],
        ],
        1e-3,
    );
}

/// Tool-like texts, the kind capstore embeds, against `scripts/minilm_reference.py`: BERT
/// written out in numpy (float64) from the same safetensors, with its own WordPiece over
/// vocab.txt, sharing no code with candle or the `tokenizers` crate. The same script gives the
/// quickstart's matrix above (0.665955, 0.104584, 0.141145), which checks the reference itself.
const REFERENCE_TEXTS: [&str; 4] = [
    "read_file: Read the complete contents of a file from the file system.",
    "List all files and directories in a given path.",
    "Send an e-mail message to a recipient, with a subject and body.",
    "What's the time in Tokyo right now?",
];

#[test]
fn parity_with_an_independent_numpy_reference() {
    assert_cosines(
        &REFERENCE_TEXTS,
        &[
            &[1.000000, 0.307631, 0.132521, 0.004100],
            &[0.307631, 1.000000, -0.025556, 0.000434],
            &[0.132521, -0.025556, 1.000000, -0.022537],
            &[0.004100, 0.000434, -0.022537, 1.000000],
        ],
        1e-4,
    );
    // The vectors themselves, not only their angles: the first components of each.
    let first: [[f32; 8]; 4] = [
        [
            0.015459, 0.040351, -0.106057, -0.024345, 0.028431, -0.084258, 0.050805, 0.111001,
        ],
        [
            0.085205, 0.063049, -0.060822, 0.044080, 0.042328, 0.001782, 0.062282, 0.068849,
        ],
        [
            0.010816, 0.042096, 0.030925, 0.018072, 0.047231, -0.067905, 0.053235, -0.001876,
        ],
        [
            0.041708, -0.024157, 0.015881, 0.030913, 0.012321, 0.013005, 0.031641, 0.037526,
        ],
    ];
    let vectors = model().embed(&REFERENCE_TEXTS).expect("embed");
    for ((text, vector), want) in REFERENCE_TEXTS.iter().zip(&vectors).zip(&first) {
        let diff = max_diff(&vector[..8], want);
        assert!(
            diff < 1e-5,
            "{text:?}: {:?} vs reference {want:?}",
            &vector[..8]
        );
    }
}

#[test]
fn vectors_are_384_unit_floats_and_the_model_says_what_it_is() {
    let model = model();
    assert_eq!(model.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(model.dimensions(), 384);
    let vectors = model.embed(&REFERENCE_TEXTS).expect("embed");
    assert_eq!(vectors.len(), REFERENCE_TEXTS.len());
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        assert!((norm(vector) - 1.0).abs() < 1e-5, "norm {}", norm(vector));
        assert!(vector.iter().all(|x| x.is_finite()));
    }
}

/// Texts of very different lengths, so one batch pads the short ones a lot.
fn mixed_texts() -> Vec<String> {
    let mut texts: Vec<String> = REFERENCE_TEXTS.iter().map(|t| t.to_string()).collect();
    texts.push("x".into());
    texts.push(String::new());
    texts.push("git_commit: Record changes to the repository with a message. ".repeat(9));
    texts.push("search_web: Search the web for a query and return the top results.".into());
    // More than one group (32 texts at most in each), with repeats in different groups.
    for i in 0..40 {
        texts.push(format!(
            "tool_{i}: does thing number {i} to {}",
            "a file ".repeat(i % 7)
        ));
    }
    texts
}

#[test]
fn a_batch_gives_the_vectors_of_one_text_at_a_time() {
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = model().embed(&refs).expect("batch");
    assert_eq!(batch.len(), texts.len());
    for (text, from_batch) in refs.iter().zip(&batch) {
        let alone = model().embed(&[text]).expect("alone");
        let diff = max_diff(&alone[0], from_batch);
        assert!(diff < 1e-5, "{text:?}: batch and alone differ by {diff}");
    }
}

#[test]
fn the_same_text_gives_the_same_vector() {
    let text = "Create a pull request on GitHub from a branch, with a title and a body.";
    let first = model().embed(&[text]).expect("first");
    for _ in 0..3 {
        assert_eq!(model().embed(&[text]).expect("again"), first);
    }
    let twice = model().embed(&[text, text]).expect("twice");
    assert_eq!(twice[0], twice[1]);
}

#[test]
fn an_empty_batch_gives_no_vectors() {
    assert_eq!(model().embed(&[]).expect("empty"), Vec::<Vec<f32>>::new());
}

#[test]
fn an_empty_text_has_a_vector() {
    let vectors = model().embed(&["", "   "]).expect("empty text");
    assert_eq!(vectors.len(), 2);
    assert_eq!(vectors[0].len(), 384);
    assert!((norm(&vectors[0]) - 1.0).abs() < 1e-5);
    // Whitespace is no token: both are [CLS] [SEP].
    assert!(max_diff(&vectors[0], &vectors[1]) < 1e-6);
}

/// Words that are one token each, so that `n` words are `n + 2` tokens with [CLS] and [SEP].
fn words(n: usize) -> String {
    const WORDS: [&str; 10] = [
        "the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far",
    ];
    (0..n)
        .map(|i| WORDS[(i * 7 + i / 10) % 10])
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_long_text_is_cut_at_256_tokens() {
    let tail = "electron quantum physics ".repeat(100);
    // 254 words then 300 of another subject: the model keeps [CLS], the 254 and [SEP].
    let kept = words(254);
    // 253 words and "electron", the 256th token: kept, so the cut is not earlier.
    let kept_253 = words(253);
    let last_kept = format!("{kept_253} electron");
    let vectors = model()
        .embed(&[
            &format!("{kept} {tail}"),
            &kept,
            &format!("{kept_253} {tail}"),
            &last_kept,
            &kept_253,
        ])
        .expect("long");
    assert!((norm(&vectors[0]) - 1.0).abs() < 1e-5);
    let diff = max_diff(&vectors[0], &vectors[1]);
    assert!(
        diff < 1e-5,
        "the long text is not its first 254 words: differ by {diff}"
    );
    let diff = max_diff(&vectors[2], &vectors[3]);
    assert!(
        diff < 1e-5,
        "the long text is not its first 254 tokens: differ by {diff}"
    );
    let diff = max_diff(&vectors[3], &vectors[4]);
    assert!(
        diff > 1e-3,
        "the 256th token changed the vector by only {diff}"
    );
    // A text far longer than BERT's 512 positions is fine too.
    let huge = "word ".repeat(20_000);
    assert_eq!(model().embed(&[&huge]).expect("huge")[0].len(), 384);
}

#[test]
fn many_threads_at_once_get_the_same_vectors() {
    let texts = mixed_texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let expected: Vec<Vec<f32>> = refs
        .iter()
        .map(|text| model().embed(&[text]).expect("alone").remove(0))
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let refs = &refs;
                scope.spawn(move || {
                    // Each thread its own mix: single texts and batches, in its own order.
                    let mut got = vec![Vec::new(); refs.len()];
                    for (i, text) in refs.iter().enumerate().skip(t % 3).step_by(3) {
                        got[i] = model().embed(&[text]).expect("thread alone").remove(0);
                    }
                    let batch = model().embed(refs).expect("thread batch");
                    for (i, vector) in batch.into_iter().enumerate() {
                        if got[i].is_empty() {
                            got[i] = vector;
                        }
                    }
                    got
                })
            })
            .collect();
        for handle in handles {
            let got = handle.join().expect("thread");
            for ((text, got), want) in refs.iter().zip(&got).zip(&expected) {
                let diff = max_diff(got, want);
                assert!(diff < 1e-5, "{text:?}: a thread's vector differs by {diff}");
            }
        }
    });
}

#[test]
fn minilm_is_send_and_sync() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<MiniLm>();
    let _: &dyn Embedder = model();
}

// --- Load errors: a copy of the model directory with one thing wrong. ---

/// A fresh directory holding links to (or copies of) the model's three files.
fn model_copy(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-minilm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = model_dir();
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::os::unix::fs::symlink(source.join(file), dir.join(file))
            .or_else(|_| std::fs::copy(source.join(file), dir.join(file)).map(|_| ()))
            .expect("copy model file");
    }
    dir
}

fn load_error(dir: &Path) -> (String, String) {
    match MiniLm::load(dir) {
        Err(EmbedError::Load { path, reason }) => (path, reason),
        Err(other) => panic!("expected a load error, got {other:?}"),
        Ok(_) => panic!("{} loaded", dir.display()),
    }
}

#[test]
fn the_copy_used_below_loads() {
    let dir = model_copy("whole");
    let model = MiniLm::load(&dir).expect("a whole copy loads");
    assert_eq!(model.embed(&["ok"]).expect("embed")[0].len(), 384);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_missing_directory_is_a_load_error() {
    let dir = std::env::temp_dir().join("capstore-minilm-no-such-dir");
    let (path, reason) = load_error(&dir);
    assert_eq!(path, dir.display().to_string());
    assert!(reason.contains("cannot open the directory"), "{reason}");
    let err = MiniLm::load(&dir).expect_err("missing");
    assert!(
        err.to_string().contains("capstore-minilm-no-such-dir"),
        "{err}"
    );
}

#[test]
fn a_file_for_a_directory_is_a_load_error() {
    let dir = model_copy("file-for-dir");
    let (path, reason) = load_error(&dir.join("config.json"));
    assert!(path.ends_with("config.json"), "{path}");
    assert_eq!(reason, "not a directory");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn each_missing_file_is_a_load_error_naming_it() {
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let dir = model_copy(&format!("missing-{file}"));
        std::fs::remove_file(dir.join(file)).expect("remove");
        let (path, reason) = load_error(&dir);
        assert_eq!(path, dir.join(file).display().to_string());
        assert!(reason.starts_with("cannot read it:"), "{file}: {reason}");
        std::fs::remove_dir_all(dir).ok();
    }
}

fn with_file(name: &str, file: &str, contents: &[u8]) -> (std::path::PathBuf, String, String) {
    let dir = model_copy(name);
    std::fs::remove_file(dir.join(file)).expect("remove");
    std::fs::write(dir.join(file), contents).expect("write");
    let (path, reason) = load_error(&dir);
    assert_eq!(path, dir.join(file).display().to_string());
    (dir, path, reason)
}

#[test]
fn a_corrupt_config_is_a_load_error() {
    let (dir, _, reason) = with_file("bad-config", "config.json", b"{\"hidden_size\": ");
    assert!(
        reason.starts_with("not a BERT model configuration"),
        "{reason}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn another_model_s_config_is_a_load_error() {
    let config = std::fs::read_to_string(model_dir().join("config.json")).expect("config");
    let twelve = config.replace("\"num_hidden_layers\": 6", "\"num_hidden_layers\": 12");
    assert_ne!(
        config, twelve,
        "the config's layer count is written as expected"
    );
    let (dir, _, reason) = with_file("l12-config", "config.json", twelve.as_bytes());
    assert_eq!(
        reason,
        "num_hidden_layers is 12, all-MiniLM-L6-v2 has 6: not this model"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_corrupt_tokenizer_is_a_load_error() {
    let (dir, _, reason) = with_file("bad-tokenizer", "tokenizer.json", b"{\"model\": 7}");
    assert!(reason.starts_with("not a tokenizer"), "{reason}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn corrupt_weights_are_a_load_error() {
    let (dir, _, reason) = with_file(
        "bad-weights",
        "model.safetensors",
        b"not safetensors at all",
    );
    assert!(reason.starts_with("not a safetensors file"), "{reason}");
    std::fs::remove_dir_all(&dir).ok();

    // Well-formed safetensors without the model's tensors.
    let header = br#"{"other.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header);
    file.extend_from_slice(&1.0f32.to_le_bytes());
    let (dir, _, reason) = with_file("other-weights", "model.safetensors", &file);
    assert!(
        reason.starts_with("not all-MiniLM-L6-v2's weights"),
        "{reason}"
    );
    std::fs::remove_dir_all(dir).ok();

    // The model's weights cut short.
    let weights = std::fs::read(model_dir().join("model.safetensors")).expect("weights");
    let (dir, _, reason) = with_file("cut-weights", "model.safetensors", &weights[..1 << 20]);
    assert!(reason.starts_with("not a safetensors file"), "{reason}");
    std::fs::remove_dir_all(dir).ok();
}

/// The whole path with the real model: the bundled catalog embedded, and messages that no word
/// of any tool matches (issue 20's retrieval misses) find their tools by meaning.
#[test]
fn hybrid_over_the_bundled_catalog_finds_what_bm25_misses() {
    use capstore::catalog::Catalog;
    use capstore::context::{ContextBuilder, HintPolicy, HybridPolicy, Reason, Retrieval, Turn};
    use capstore::embed::embed_missing;

    let store = capstore::Store::new();
    let catalog = Catalog::bundled().expect("bundled catalog");
    catalog.load_into(&store).expect("loads");
    let report = embed_missing(&store, model()).expect("embeds the catalog");
    assert_eq!(
        report.embedded,
        store.snapshot().count(&capstore::TOOLS).expect("count")
    );
    // Hints off on both sides: this is about what the vectors find that no word matches
    // ("welcome her in #backend" is found by BM25 with hints, checked below).
    let mut policy = catalog.policy();
    policy.hints = HintPolicy::none();
    let lexical = ContextBuilder::with_policy(policy.clone()).expect("policy");
    let hinted = ContextBuilder::with_policy(catalog.policy()).expect("policy");
    policy.retrieval = Retrieval::Hybrid(HybridPolicy::fixed(0.5));
    let embedder: std::sync::Arc<dyn capstore::embed::Embedder> =
        std::sync::Arc::new(MiniLm::load(model_dir()).expect("loads"));
    let hybrid = ContextBuilder::with_policy(policy)
        .expect("policy")
        .with_embedder(embedder);
    let snap = store.snapshot();
    for (message, tool) in [
        ("what VMs have we got in eu-west-1?", "cloud/list_instances"),
        ("welcome her in #backend", "slack/send_message"),
        (
            "site's throwing 502s, is it just me?",
            "monitoring/check_uptime",
        ),
    ] {
        let turn = Turn::new(message);
        let before = lexical.select(&snap, &turn).expect("select");
        assert!(
            before.keys().all(|k| k != tool),
            "{message}: BM25 alone sends {tool}"
        );
        let after = hybrid.select(&snap, &turn).expect("select");
        let sent = after.tools.iter().find(|t| &*t.key == tool);
        let sent = sent.unwrap_or_else(|| {
            panic!(
                "{message}: hybrid does not send {tool}: {:?}",
                after.keys().collect::<Vec<_>>()
            )
        });
        assert!(
            matches!(sent.reasons[0], Reason::Hybrid { bm25: None, cosine: Some(c), .. } if c > 0.1),
            "{message}: {:?}",
            sent.reasons
        );
    }
    // With the default hints ("welcome" sends a message, "#backend" is a channel), BM25 alone
    // sends the Slack tool.
    let hinted = hinted
        .select(&snap, &Turn::new("welcome her in #backend"))
        .expect("select");
    assert!(
        hinted.contains("slack/send_message"),
        "{:?}",
        hinted.keys().collect::<Vec<_>>()
    );
}
