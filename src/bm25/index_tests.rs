//! Unit tests of [`Bm25Index`]; the model-based property test is `tests/bm25_model.rs`.

use std::time::{Duration, Instant};

use super::*;
use crate::bm25::{Bm25Params, Tokenizer};

fn doc(text: &str) -> Document {
    Document::new().with_field("body", text.split_whitespace().map(str::to_owned).collect())
}

fn index() -> Bm25Index {
    Bm25Index::new(IndexConfig::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn keys(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| &*h.key).collect()
}

/// The same small corpus, with every merge threshold worth testing.
fn corpora() -> Vec<Bm25Index> {
    [None, Some(2), Some(4)]
        .into_iter()
        .map(|factor| {
            let mut index = index();
            if let Some(f) = factor {
                index = index.with_merge_factor(f);
            }
            index.insert("weather", &doc("get weather forecast for a city weather"));
            index.insert("file", &doc("read a file from disk"));
            index.insert("mail", &doc("send an email message"));
            index.insert("calendar", &doc("list calendar events for a day"));
            index
        })
        .collect()
}

#[test]
fn index_is_send_sync_and_clone() {
    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}
    assert_send_sync::<Bm25Index>();
}

#[test]
fn stats_follow_upserts_and_removals() {
    for mut index in corpora() {
        assert_eq!(index.len(), 4);
        assert_eq!(index.stats().total_len, 7.0 + 5.0 + 4.0 + 6.0);
        assert_eq!(index.doc_freq("a"), 3);
        assert_eq!(index.doc_freq("for"), 2);
        assert_eq!(index.doc_freq("weather"), 1);

        index.insert("file", &doc("write a file to disk now"));
        assert_eq!(index.len(), 4);
        assert_eq!(index.stats().total_len, 7.0 + 6.0 + 4.0 + 6.0);
        assert_eq!(index.doc_freq("read"), 0);
        assert_eq!(index.doc_freq("write"), 1);
        assert_eq!(index.doc_len("file"), Some(6.0));

        assert!(index.remove("weather"));
        assert!(!index.remove("weather"));
        assert_eq!(index.doc_freq("for"), 1);
        assert_eq!(index.stats().n_docs, 3);
        assert_eq!(index.stats().avgdl, 16.0 / 3.0);
        assert!(index.search(&["forecast"], 10).is_empty());

        for key in index.keys() {
            assert!(index.remove(&key));
        }
        assert_eq!(
            index.stats(),
            CorpusStats {
                n_docs: 0,
                total_len: 0.0,
                avgdl: 0.0
            }
        );
        assert_eq!(index.doc_freq("a"), 0);
        assert!(index.search(&["a"], 10).is_empty());
    }
}

#[test]
fn ties_are_ordered_by_key() {
    for factor in [None, Some(2)] {
        let mut index = index();
        if let Some(f) = factor {
            index = index.with_merge_factor(f);
        }
        for key in ["d", "b", "a", "c"] {
            index.insert(key, &doc("same words here"));
        }
        index.insert("e", &doc("other words"));
        let hits = index.search(&["same"], 10);
        assert_eq!(keys(&hits), ["a", "b", "c", "d"]);
        assert!(hits.windows(2).all(|w| w[0].score == w[1].score));
        assert_eq!(keys(&index.search(&["same"], 2)), ["a", "b"]);
    }
}

#[test]
fn results_are_sorted_by_score() {
    for index in corpora() {
        let hits = index.search(&["weather", "a", "file"], 10);
        assert_eq!(keys(&hits)[0], "weather");
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(hits.iter().all(|h| h.score > 0.0));
        assert!(!keys(&hits).contains(&"mail"), "only matching documents");
    }
}

#[test]
fn empty_results() {
    for index in corpora() {
        assert!(index.search(&["weather"], 0).is_empty());
        assert!(index.search::<&str>(&[], 10).is_empty());
        assert!(index.search(&["nonexistent", "unknown"], 10).is_empty());
        assert!(index.search(&[""], 10).is_empty());
    }
    assert!(index().search(&["x"], 10).is_empty());
}

#[test]
fn repeated_query_terms_multiply() {
    for index in corpora() {
        let once = index.score("file", &["disk"]).unwrap_or_default();
        let twice = index.score("file", &["disk", "disk"]).unwrap_or_default();
        assert!(once > 0.0);
        assert!((twice - 2.0 * once).abs() <= 1e-6 * twice);
    }
}

#[test]
fn score_equals_search_exactly_and_explain_sums_to_it() {
    for index in corpora() {
        let query = ["weather", "a", "for", "disk", "events", "weather", "zzz"];
        let hits = index.search(&query, 10);
        assert_eq!(hits.len(), 3);
        for hit in &hits {
            assert_eq!(index.score(&hit.key, &query), Some(hit.score));
            let e = index.explain(&hit.key, &query).unwrap_or_else(|| panic!());
            assert_eq!(e.key, hit.key);
            assert_eq!(e.score, hit.score);
            let sum: f32 = e.terms.iter().map(|t| t.score).sum();
            assert!((sum - e.score).abs() <= 1e-6 * e.score);
            for t in &e.terms {
                assert_eq!(t.n_docs, 4);
                assert_eq!(t.doc_freq, index.doc_freq(&t.term));
                assert_eq!(t.avgdl, index.stats().avgdl);
            }
        }
        let weather = index.explain("weather", &query).unwrap_or_else(|| panic!());
        let t = &weather.terms.iter().find(|t| t.term == "weather");
        assert_eq!(t.map(|t| (t.query_count, t.tf)), Some((2, 2.0)));
        assert_eq!(index.score("mail", &query), Some(0.0));
        assert_eq!(index.score("nobody", &query), None);
        assert!(index.explain("nobody", &query).is_none());
        assert!(
            index
                .explain("mail", &query)
                .is_some_and(|e| e.terms.is_empty())
        );
    }
}

#[test]
fn score_matches_the_formula_by_hand() {
    let mut index = index();
    index.insert("a", &doc("x y"));
    index.insert("b", &doc("y y y z"));
    // "y" in b: N = 2, n = 2, tf = 3, dl = 4, avgdl = 3.
    // idf = ln(1 + 0.5 / 2.5) = ln 1.2 = 0.1823215567939546
    // tf part = 3 · 2.2 / (3 + 1.2 · (0.25 + 0.75 · 4 / 3)) = 6.6 / 4.5 = 1.4666666666666666
    // score = 0.26740495063113...
    let s = index.score("b", &["y"]).unwrap_or_default();
    assert!((s - 0.267_404_95).abs() < 1e-6, "{s}");
}

#[test]
fn a_hundred_kilobyte_query_returns_promptly() {
    let tokenizer = Tokenizer::default();
    let mut index = index();
    for i in 0..2_000 {
        let text = format!("tool{i} does thing{} with item{} and more", i % 37, i % 101);
        index.insert(
            &format!("k{i}"),
            &Document::new().with_field("d", tokenizer.tokenize(&text)),
        );
    }
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 100_000 {
        text.push_str(&format!("thing{} item{} unknown{i} more ", i % 50, i % 120));
        i += 1;
    }
    let query = tokenizer.tokenize(&text);
    assert!(query.len() > 10_000, "{}", query.len());
    let started = Instant::now();
    let hits = index.search(&query, 10);
    let score = index.score("k5", &query);
    let took = started.elapsed();
    assert_eq!(hits.len(), 10);
    assert!(score.is_some_and(|s| s > 0.0));
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn never_nan_with_empty_documents_and_zero_weights() {
    let mut config = IndexConfig::default();
    config.field_weights.insert("zero".into(), 0.0);
    config.field_weights.insert("huge".into(), f32::MAX);
    for params in [
        Bm25Params::default(),
        Bm25Params { k1: 0.0, b: 1.0 },
        Bm25Params { k1: 0.0, b: 0.0 },
        Bm25Params { k1: 1e30, b: 1.0 },
    ] {
        config.params = params;
        let mut index = Bm25Index::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
        index.insert("empty", &Document::new());
        index.insert("empty_field", &Document::new().with_field("body", vec![]));
        index.insert(
            "zero",
            &doc("").with_field("zero", vec!["x".into(), "y".into()]),
        );
        let query = ["x", "y", "z"];
        assert!(index.search(&query, 10).is_empty(), "{params:?}");
        assert_eq!(index.stats().avgdl, 0.0);
        assert_eq!(index.doc_freq("x"), 0, "a zero-weight field is not indexed");
        assert_eq!(index.score("zero", &query), Some(0.0));

        index.insert("x", &doc("x"));
        index.insert(
            "huge",
            &Document::new().with_field("huge", vec!["x".into(), "x".into()]),
        );
        let hits = index.search(&query, 10);
        assert!(
            hits.iter().all(|h| !h.score.is_nan() && h.score > 0.0),
            "{params:?} {hits:?}"
        );
        for key in index.keys() {
            let s = index.score(&key, &query).unwrap_or(f32::NAN);
            assert!(!s.is_nan(), "{params:?} {key}");
        }
        assert!(!index.stats().avgdl.is_nan());
    }
}

#[test]
fn compaction_preserves_results() {
    for mut index in corpora() {
        index.insert("mail", &doc("send an email message to a friend"));
        index.remove("calendar");
        let queries: [&[&str]; 4] = [&["a"], &["weather", "for"], &["email", "disk"], &["zzz"]];
        let before: Vec<Vec<Hit>> = queries.iter().map(|q| index.search(q, 10)).collect();
        let stats = index.stats();
        index.compact();
        let after: Vec<Vec<Hit>> = queries.iter().map(|q| index.search(q, 10)).collect();
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(keys(b), keys(a));
            for (b, a) in b.iter().zip(a) {
                assert!((b.score - a.score).abs() <= 1e-6 * b.score);
            }
        }
        assert_eq!(index.stats().n_docs, stats.n_docs);
        assert!((index.stats().total_len - stats.total_len).abs() < 1e-9);
        index.compact();
        assert_eq!(index.len(), 3);
    }
}

#[test]
fn clones_are_independent() {
    for original in corpora() {
        let query = ["weather", "file", "a", "new"];
        let hits = original.search(&query, 10);
        let stats = original.stats();

        let mut clone = original.clone();
        clone.remove("weather");
        clone.insert("file", &doc("new new new file"));
        clone.insert("extra", &doc("a new tool"));
        clone.compact();
        clone.insert("more", &doc("weather again"));

        assert_eq!(original.search(&query, 10), hits);
        assert_eq!(original.stats(), stats);
        assert_eq!(original.doc_freq("new"), 0);
        assert!(original.contains("weather") && !original.contains("extra"));
        assert_ne!(clone.search(&query, 10), hits);
        assert_eq!(clone.doc_freq("new"), 2);
    }
}

#[test]
fn filtered_search_and_reentrant_filters() {
    for index in corpora() {
        let all = index.search(&["a"], 10);
        assert_eq!(all.len(), 3);
        let kept = index.search_filtered(&["a"], 10, |key| key != &*all[0].key);
        assert_eq!(kept, all[1..]);
        // A filter that itself searches must neither panic nor disturb the outer query.
        let nested = index.search_filtered(&["a"], 10, |key| {
            !index.search(&["weather"], 1).is_empty() && !key.is_empty()
        });
        assert_eq!(nested, all);
        assert!(index.search_filtered(&["a"], 10, |_| false).is_empty());
    }
}

#[test]
fn default_policy_merges_and_stays_exact() {
    let mut index = index();
    for i in 0..1_000 {
        index.insert(
            &format!("k{i:04}"),
            &doc(&format!("w{} w{} common", i % 7, i % 13)),
        );
        if i % 3 == 0 {
            index.remove(&format!("k{:04}", i / 2));
        }
    }
    assert!(index.segments.len() < 20, "merges happened: {index:?}");
    let live = index.len() as u64;
    assert_eq!(index.doc_freq("common"), live);
    let expected_w3 = index
        .keys()
        .iter()
        .filter(|k| {
            k[1..]
                .parse::<usize>()
                .is_ok_and(|i| i % 7 == 3 || i % 13 == 3)
        })
        .count() as u64;
    assert_eq!(index.doc_freq("w3"), expected_w3);
    assert_eq!(index.stats().total_len, 3.0 * live as f64);
}

#[test]
fn churn_renumbers_slots_and_stays_exact() {
    let mut index = index();
    let mut fresh = Bm25Index::new(IndexConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    for round in 0..40 {
        for key in 0..20 {
            let text = format!("w{} w{} shared", (key + round) % 9, key % 5);
            index.insert(&format!("k{key:02}"), &doc(&text));
            if round == 39 {
                fresh.insert(&format!("k{key:02}"), &doc(&text));
            }
        }
        index.remove("k03");
    }
    // 800 writes on 19 live documents: slots were renumbered on the way.
    assert!(!index.renumber_due());
    assert!((index.next_slot as usize) <= index.len() + index.len() / DEAD_SHARE + SLOT_SLACK);
    fresh.remove("k03");
    assert_eq!(index.keys(), fresh.keys());
    assert_eq!(index.stats(), fresh.stats());
    for term in ["w0", "w4", "shared", "nothing"] {
        assert_eq!(index.doc_freq(term), fresh.doc_freq(term), "{term}");
    }
    let query = ["w1", "w2", "shared"];
    let (got, want) = (index.search(&query, 5), fresh.search(&query, 5));
    assert_eq!(keys(&got), keys(&want));
    for (g, w) in got.iter().zip(&want) {
        assert!((g.score - w.score).abs() <= 1e-6 * w.score);
    }
}

#[test]
fn weighted_queries_scale_each_term() {
    for index in corpora() {
        let plain = index.search(&["disk", "events", "events"], 10);
        let weighted = index.search_weighted(&[("disk", 1.0), ("events", 2.0)], 10, |_| true);
        assert_eq!(
            plain, weighted,
            "weights of 1 per occurrence are the plain query"
        );
        for hit in &weighted {
            let weights = [("disk", 1.0), ("events", 2.0)];
            assert_eq!(index.score_weighted(&hit.key, &weights), Some(hit.score));
            let e = index.explain_weighted(&hit.key, &weights);
            assert_eq!(e.map(|e| e.score), Some(hit.score));
        }
        // Zero, negative and NaN weights leave a term out; the rest still scores.
        let odd = [
            ("disk", 0.0),
            ("events", -1.0),
            ("email", f32::NAN),
            ("a", 0.5),
        ];
        let hits = index.search_weighted(&odd, 10, |_| true);
        assert_eq!(keys(&hits), keys(&index.search(&["a"], 10)));
        let half = index.score("file", &["a"]).unwrap_or_default() / 2.0;
        assert!(
            (hits
                .iter()
                .find(|h| &*h.key == "file")
                .map_or(0.0, |h| h.score)
                - half)
                .abs()
                < 1e-6
        );
        assert!(
            index
                .search_weighted(&[("a", 0.0)], 10, |_| true)
                .is_empty()
        );
        let huge = index.search_weighted(&[("a", f32::INFINITY)], 10, |_| true);
        assert!(huge.iter().all(|h| !h.score.is_nan() && h.score > 0.0));
    }
}

#[test]
fn insert_remove_churn_keeps_the_dictionaries_bounded() {
    // Registering and removing the same tool over and over (a re-imported MCP server, a test
    // harness) once left every cancelled document's terms in the trailing segment's
    // dictionary, so each removal copied a larger dictionary than the last.
    // 3,000 documents, so that 600 churn pairs stay below the slot renumbering (which
    // rebuilds everything and would hide the growth).
    let mut index = index();
    for i in 0..3000 {
        index.insert(
            &format!("k{i}"),
            &doc(&format!("base{} common words here", i % 7)),
        );
    }
    let terms = |ix: &Bm25Index| ix.segments.iter().map(|s| s.n_terms()).sum::<usize>();
    let before = terms(&index);
    for r in 0..600 {
        let text = format!("u{r}a u{r}b u{r}c u{r}d u{r}e common");
        index.insert("churn", &doc(&text));
        index.remove("churn");
    }
    let after = terms(&index);
    assert!(
        after <= before + 40,
        "{before} terms before churn, {after} after"
    );
    assert_eq!(index.len(), 3000);
    assert!(index.next_slot > 3000 + 600 - 1, "no renumbering happened");
    assert_eq!(index.doc_freq("u5a"), 0);
    assert_eq!(index.doc_freq("common"), 3000);
    assert_eq!(keys(&index.search(&["common"], 3)).len(), 3);
}

#[test]
fn steady_upserts_keep_dead_documents_to_one_in_eight() {
    // Replacing every document in turn, over and over (a tool catalog under hot reloads): dead
    // documents' postings stay until a merge drops them, and queries walk them, so the index
    // must not let them pile up to as many as there are live ones.
    let mut index = index();
    let n = 2000;
    for i in 0..n {
        index.insert(&format!("k{i}"), &doc(&format!("w{} shared", i % 13)));
    }
    let text = |r: usize| format!("w{} shared r{}", r % 11, r % 5);
    let mut most_dead = 0;
    for r in 0..3 * n {
        index.insert(&format!("k{}", r % n), &doc(&text(r)));
        let dead = index.next_slot as usize - index.len();
        most_dead = most_dead.max(dead);
        assert!(
            dead <= n / DEAD_SHARE + SLOT_SLACK,
            "{dead} dead slots at write {r}"
        );
    }
    // The bound was reached (so it renumbered on the way) and nothing was lost.
    assert_eq!(most_dead, n / DEAD_SHARE + SLOT_SLACK);
    let mut fresh = Bm25Index::new(IndexConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..n {
        fresh.insert(&format!("k{i}"), &doc(&text(2 * n + i)));
    }
    assert_eq!(index.len(), n);
    assert_eq!(index.keys(), fresh.keys());
    assert_eq!(index.stats(), fresh.stats());
    for term in ["w3", "shared", "r4", "absent"] {
        assert_eq!(index.doc_freq(term), fresh.doc_freq(term), "{term}");
        assert_eq!(
            index.search(&[term], 10),
            fresh.search(&[term], 10),
            "{term}"
        );
    }
}

/// Attachments follow their documents through replacements, removals, merges (at every merge
/// factor worth testing), renumberings and compaction, in documents inserted with and without
/// one side by side (so segments and merges meet both), and hits carry them.
#[test]
fn attachments_follow_their_documents() {
    use std::collections::BTreeMap;
    for factor in [2, 3, 4] {
        let mut index = index().with_merge_factor(factor);
        let mut model: BTreeMap<String, Option<Attachment>> = BTreeMap::new();
        // A fixed pseudo-random walk: 0..24 keys, a third without attachments.
        let mut state = 0x2545_f491_u64;
        for step in 0..3000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = format!("k{}", state % 24);
            match (state >> 8) % 8 {
                0 | 1 => {
                    index.remove(&key);
                    model.remove(&key);
                }
                2 => {
                    index.insert(&key, &doc("common plain"));
                    model.insert(key, None);
                }
                _ => {
                    let attachment: Attachment = Arc::new(step);
                    let text = if step % 2 == 0 {
                        "common even"
                    } else {
                        "common odd"
                    };
                    index.insert_attached(&key, &doc(text), Some(Arc::clone(&attachment)));
                    model.insert(key, Some(attachment));
                }
            }
            if step % 500 == 499 {
                index.compact();
            }
            let same = |a: Option<&Attachment>, b: Option<&Attachment>| match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            for (key, attachment) in &model {
                assert!(
                    same(index.attachment(key), attachment.as_ref()),
                    "factor {factor}, step {step}, {key}"
                );
            }
            let terms = [("common", 1.0f32)];
            let hits = index.search_hashed_keys(&HashedQuery::new(&terms), 32, None);
            assert_eq!(hits.len(), model.len());
            for hit in hits {
                let expected = model.get(&**hit.key).and_then(Option::as_ref);
                assert!(
                    same(hit.attachment, expected),
                    "factor {factor}, step {step}"
                );
            }
        }
    }
}

/// A query with few postings against the slots offers only the slots it touched
/// (`select_touched`); under a `keep` filter every query scans all the slots. Both must find
/// the same hits: with ties (documents of the same text), dead slots (replaced and removed
/// documents not merged away yet), every layout the merge factors make, and k below, at and
/// above the sorted top k's limit.
#[test]
fn sparse_queries_find_what_the_scan_finds() {
    for factor in [None, Some(2), Some(3)] {
        let mut index = index();
        if let Some(f) = factor {
            index = index.with_merge_factor(f);
        }
        // 400 documents; rare term `r{j}` in the documents i with i % 97 == j (4 or 5 of
        // them), so a query of a few rare terms has a few dozen postings at most: sparse by
        // construction. Every 7th document repeats its neighbour's text (ties by key).
        let text = |i: usize| {
            let j = if i.is_multiple_of(7) {
                i.saturating_sub(1)
            } else {
                i
            };
            format!(
                "common r{} r{} w{} pad{}",
                j % 97,
                (j * 5) % 97,
                j % 3,
                j % 11
            )
        };
        for i in 0..400 {
            index.insert(&format!("k{i:03}"), &doc(&text(i)));
        }
        // Dead slots: replaced documents (new text) and removed ones.
        for i in (0..400).step_by(9) {
            index.insert(&format!("k{i:03}"), &doc(&text(i + 1)));
        }
        for i in (5..400).step_by(13) {
            index.remove(&format!("k{i:03}"));
        }
        let queries: [&[&str]; 6] = [
            &["r3"],
            &["r3", "r50", "r3"],
            &["r1", "r2", "w1"],
            &["pad4", "r10"],
            &["common"],
            &["absent", "r96"],
        ];
        for query in queries {
            for k in [1, 3, 10, 18, 70, 500] {
                let scanned = index.search_weighted(
                    &query.iter().map(|t| (*t, 1.0)).collect::<Vec<_>>(),
                    k,
                    |_| true,
                );
                assert_eq!(
                    index.search(query, k),
                    scanned,
                    "{query:?} k={k} {factor:?}"
                );
            }
        }
        // The score array is left all zero: a query after them all scores as on a fresh thread.
        let after = index.search(&["r3", "w2"], 10);
        let fresh = std::thread::scope(|s| {
            s.spawn(|| index.search(&["r3", "w2"], 10))
                .join()
                .unwrap_or_else(|_| panic!("query thread"))
        });
        assert_eq!(after, fresh);
    }
}
