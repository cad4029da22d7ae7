//! `embed::VectorCache`: texts embedded once are read back, bit for bit, on the next run; a
//! changed tool is embedded again; a file that is not this model's cache is a typed error and
//! is left alone; a failing model or an unwritable file loses nothing.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use capstore::context::{ContextBuilder, HybridPolicy, Retrieval, SelectionPolicy, Turn};
use capstore::embed::{EmbedError, Embedder, VectorCache, embed_missing};
use capstore::{Store, TOOLS, Tool, VECTORS};

/// A deterministic embedder that counts the texts it is given: each text's vector is a hash of
/// its bytes spread over eight numbers.
#[derive(Default)]
struct Hashing {
    calls: AtomicUsize,
    texts: AtomicUsize,
    fail: bool,
}

impl Hashing {
    fn texts(&self) -> usize {
        self.texts.load(Ordering::Relaxed)
    }
}

impl Embedder for Hashing {
    fn model_id(&self) -> &str {
        "hashing-v1"
    }
    fn dimensions(&self) -> usize {
        8
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.fail {
            return Err(EmbedError::Embed {
                reason: "the model fell over".into(),
            });
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.texts.fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts
            .iter()
            .map(|text| {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                (0..8)
                    .map(|i| {
                        for b in text.bytes().chain([i]) {
                            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                        }
                        (h % 2001) as f32 / 1000.0 - 1.0
                    })
                    .collect()
            })
            .collect())
    }
}

/// Another model's id over the same numbers, or another length of vector.
struct Other(&'static str, usize);

impl Embedder for Other {
    fn model_id(&self) -> &str {
        self.0
    }
    fn dimensions(&self) -> usize {
        self.1
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(vec![vec![0.5; self.1]; texts.len()])
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capstore-vector-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn tools() -> Vec<Tool> {
    [
        ("create_invoice", "Create an invoice for a customer"),
        ("get_forecast", "Weather forecast for a city"),
        ("send_email", "Send an email to someone"),
        ("get_route", "Directions between two places"),
        (
            "list_instances",
            "List the virtual machines of a cloud region",
        ),
    ]
    .into_iter()
    .map(|(name, description)| Tool::new(name, description))
    .collect()
}

fn store_of(tools: Vec<Tool>) -> Store {
    let store = Store::new();
    store
        .write(|tx| tx.insert_many(&TOOLS, tools))
        .expect("tools");
    store
}

fn hybrid(embedder: Arc<dyn Embedder>) -> ContextBuilder {
    let policy = SelectionPolicy {
        retrieval: Retrieval::Hybrid(HybridPolicy::fixed(0.3)),
        ..SelectionPolicy::default()
    };
    ContextBuilder::with_policy(policy)
        .expect("policy")
        .with_embedder(embedder)
}

#[test]
fn a_second_run_reads_every_vector_back_and_selects_the_same() {
    let path = temp("second-run.vectors");
    let model = Arc::new(Hashing::default());

    // A run without a cache: what the cached runs must match.
    let plain = store_of(tools());
    embed_missing(&plain, model.as_ref()).expect("embed");
    assert_eq!(model.texts(), 5);

    let first = store_of(tools());
    let cache = VectorCache::open(model.clone(), &path).expect("open");
    assert!(cache.is_empty());
    assert_eq!(embed_missing(&first, &cache).expect("embed").embedded, 5);
    assert_eq!(model.texts(), 10, "the first run embeds every tool");
    cache.save().expect("save");
    let bytes = std::fs::read(&path).expect("written");

    let second = store_of(tools());
    let cache = VectorCache::open(model.clone(), &path).expect("reopen");
    assert_eq!(cache.len(), 5);
    assert_eq!(embed_missing(&second, &cache).expect("embed").embedded, 5);
    assert_eq!(model.texts(), 10, "the second run embeds nothing");
    cache.save().expect("nothing to save");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "file unchanged");

    let (p, s) = (plain.snapshot(), second.snapshot());
    for tool in tools() {
        let key = tool.qualified_name();
        let (a, b) = (p.get(&VECTORS, &key), s.get(&VECTORS, &key));
        let (a, b) = (
            a.expect("get").expect("plain"),
            b.expect("get").expect("cached"),
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.vector), bits(&b.vector), "{key}");
    }
    for message in [
        "bill the customer",
        "will it rain in Oslo",
        "VMs in eu-west-1",
    ] {
        let turn = Turn::new(message);
        let want = hybrid(model.clone()).select(&p, &turn).expect("plain");
        let got = hybrid(model.clone()).select(&s, &turn).expect("cached");
        assert_eq!(got, want, "{message}");
    }
}

#[test]
fn only_a_changed_tool_is_embedded_again_and_the_file_grows_by_it() {
    let path = temp("changed.vectors");
    let model = Arc::new(Hashing::default());
    let cache = VectorCache::open(model.clone(), &path).expect("open");
    embed_missing(&store_of(tools()), &cache).expect("embed");
    cache.save().expect("save");

    let mut changed = tools();
    changed[1].description = "Hourly weather forecast for a city".into();
    let store = store_of(changed);
    let cache = VectorCache::open(model.clone(), &path).expect("reopen");
    let before = model.texts();
    assert_eq!(embed_missing(&store, &cache).expect("embed").embedded, 5);
    assert_eq!(model.texts() - before, 1, "only the changed tool");
    cache.save().expect("save");
    // The old text stays (another catalog may still have it): six texts now.
    assert_eq!(VectorCache::open(model, &path).expect("open").len(), 6);
}

#[test]
fn a_batch_embeds_each_new_text_once_in_one_call() {
    let model = Arc::new(Hashing::default());
    let cache = VectorCache::open(model.clone(), temp("never-saved.vectors")).expect("open");
    let vectors = cache.embed(&["b", "a", "b", "c"]).expect("embed");
    assert_eq!(vectors.len(), 4);
    assert_eq!(vectors[0], vectors[2]);
    assert_eq!(vectors[1], model.embed(&["a"]).expect("a")[0]);
    assert_eq!(
        model.calls.load(Ordering::Relaxed),
        2,
        "one call, plus ours"
    );
    assert_eq!(model.texts(), 4, "b, a, c; then our a");
    assert!(cache.embed(&[]).expect("empty").is_empty());
    assert_eq!(
        cache.embed(&["a", "c"]).expect("known"),
        [vectors[1].clone(), vectors[3].clone()]
    );
    assert_eq!(model.texts(), 4, "nothing new");
}

#[test]
fn a_file_that_is_not_this_models_cache_is_refused_and_left_alone() {
    let path = temp("refused.vectors");
    let model = Arc::new(Hashing::default());
    let cache = VectorCache::open(model.clone(), &path).expect("open");
    cache.embed(&["a text", "another"]).expect("embed");
    cache.save().expect("save");
    let good = std::fs::read(&path).expect("read");

    let refused = |embedder: Arc<dyn Embedder>, says: &str| {
        let err = VectorCache::open(embedder, &path).expect_err(says);
        let EmbedError::Cache {
            path: named,
            reason,
        } = &err
        else {
            panic!("not a cache error: {err:?}");
        };
        assert_eq!(named, &path.display().to_string());
        assert!(reason.contains(says), "{says}: {reason}");
        assert!(err.to_string().starts_with("the vector cache "), "{err}");
    };
    refused(
        Arc::new(Other("another-model", 8)),
        "made by the model `hashing-v1`, not `another-model`",
    );
    refused(
        Arc::new(Other("hashing-v1", 4)),
        "holds vectors of 8 numbers, the model makes 4",
    );
    for (bytes, says) in [
        (
            &good[..good.len() - 1],
            "damaged: its checksum does not match",
        ),
        (&good[..10], "not a capstore vector cache"),
        (
            &b"capstore-vectors 1\nhashing-v1"[..],
            "cut short in its header",
        ),
        (
            &b"capstore-vectors 1\nhashing-v1\neight\n"[..],
            "`eight` is not a number",
        ),
        (&b"{\"vectors\": []}"[..], "not a capstore vector cache"),
    ] {
        std::fs::write(&path, bytes).expect("write");
        refused(model.clone(), says);
        assert_eq!(std::fs::read(&path).expect("read"), bytes, "left as it was");
    }
    let mut changed = good.clone();
    let last = changed.len() - 9; // a byte of the last number, before the checksum
    changed[last] ^= 1;
    std::fs::write(&path, &changed).expect("write");
    refused(model.clone(), "damaged");

    let dir = temp("a-directory");
    std::fs::create_dir_all(&dir).expect("dir");
    let err = VectorCache::open(model, &dir).expect_err("a directory");
    assert!(matches!(err, EmbedError::Cache { .. }), "{err:?}");
}

#[test]
fn a_failing_model_or_an_unwritable_file_loses_nothing() {
    let path = temp("failing.vectors");
    let model = Arc::new(Hashing::default());
    let cache = VectorCache::open(model.clone(), &path).expect("open");
    cache.embed(&["kept"]).expect("embed");
    cache.save().expect("save");
    let saved = std::fs::read(&path).expect("read");

    // The model fails: the error is the model's, and nothing new is cached.
    let failing: Arc<dyn Embedder> = Arc::new(Hashing {
        fail: true,
        ..Hashing::default()
    });
    let cache = VectorCache::open(failing, &path).expect("open");
    let err = cache.embed(&["kept", "new"]).expect_err("fails");
    assert_eq!(
        err,
        EmbedError::Embed {
            reason: "the model fell over".into()
        }
    );
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.embed(&["kept"]).expect("cached").len(), 1);
    let store = store_of(tools());
    let version = store.version();
    assert!(embed_missing(&store, &cache).is_err());
    assert_eq!(store.version(), version, "nothing stored");

    // The file cannot be written: a typed error; the vectors stay in memory, the old file and
    // its directory are as they were.
    let dir = temp("read-only-dir");
    let nowhere = dir.join("missing").join("cache.vectors");
    let cache = VectorCache::open(model, &nowhere).expect("open");
    cache.embed(&["a"]).expect("embed");
    let err = cache.save().expect_err("no directory");
    assert!(matches!(err, EmbedError::Cache { .. }), "{err:?}");
    assert_eq!(cache.len(), 1);
    assert!(!dir.join("missing").exists());
    assert_eq!(std::fs::read(&path).expect("read"), saved);
}

#[test]
fn many_threads_share_one_cache() {
    let path = temp("threads.vectors");
    let model = Arc::new(Hashing::default());
    let cache = Arc::new(VectorCache::open(model.clone(), &path).expect("open"));
    let texts: Vec<String> = (0..64).map(|i| format!("text {i}")).collect();
    let want = model
        .embed(&texts.iter().map(String::as_str).collect::<Vec<_>>())
        .expect("embed");
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (cache, texts, want) = (Arc::clone(&cache), &texts, &want);
            scope.spawn(move || {
                for i in (0..64).map(|i| (i * 7 + t * 13) % 64) {
                    let got = cache.embed(&[texts[i].as_str()]).expect("embed");
                    assert_eq!(got[0], want[i]);
                }
            });
        }
    });
    assert_eq!(cache.len(), 64);
    cache.save().expect("save");
    assert_eq!(VectorCache::open(model, &path).expect("open").len(), 64);
}

/// The `vector_cache` fuzz target's check (`fuzz/checks.rs`), shared with the fuzzer.
#[allow(dead_code)]
#[path = "../fuzz/checks.rs"]
mod fuzz_checks;

mod mutated_files {
    use super::fuzz_checks;
    use capstore::embed::{Embedder, VectorCache};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A valid cache file for the fuzz check's model, holding `texts`.
    fn file_of(texts: &[String]) -> Vec<u8> {
        let path = super::temp(&format!("seed-{:?}.vectors", std::thread::current().id()));
        let cache = VectorCache::open(Arc::new(fuzz_checks::TwoNumbers), &path).expect("open");
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        cache.embed(&texts).expect("embed");
        cache.save().expect("save");
        let bytes = std::fs::read(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        bytes
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A valid file with bytes overwritten, cut, or inserted: refused with
        /// `EmbedError::Cache` (its checksum), or, if it opens, saved and reopened; never a
        /// panic.
        #[test]
        fn a_damaged_file_opens_or_is_refused(
            texts in proptest::collection::vec(".{0,12}", 0..6),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        ) {
            let mut bytes = file_of(&texts);
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i, byte),
                }
            }
            fuzz_checks::vector_cache(&bytes);
        }

        /// An undamaged file opens holding each distinct text once.
        #[test]
        fn a_saved_file_opens_with_every_text(texts in proptest::collection::vec(".{0,12}", 0..6)) {
            let bytes = file_of(&texts);
            let path = super::temp(&format!("whole-{:?}.vectors", std::thread::current().id()));
            std::fs::write(&path, &bytes).expect("write");
            let cache = VectorCache::open(Arc::new(fuzz_checks::TwoNumbers), &path).expect("opens");
            let mut distinct = texts.clone();
            distinct.sort();
            distinct.dedup();
            prop_assert_eq!(cache.len(), distinct.len());
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            prop_assert_eq!(cache.embed(&refs).expect("cached"), fuzz_checks::TwoNumbers.embed(&refs).expect("model"));
            let _ = std::fs::remove_file(&path);
        }
    }
}
